"""smelt.Error and one subclass per smelt_status."""


class Error(Exception):
    """A failure reported by the smelt library.

    `message` is the library's message (it names the node and op when one is
    to blame); `node` and `op` are those names, or None when the error is not
    about one node; `status` is the smelt_status code.
    """
    status = None

    def __init__(self, message, node=None, op=None):
        super().__init__(message)
        self.message = message
        self.node = node or None
        self.op = op or None


class FileError(Error):
    """SMELT_ERR_IO: a file could not be read or written."""
    status = 1


class ParseError(Error):
    """SMELT_ERR_PARSE: malformed protobuf / npy / text."""
    status = 2


class InvalidModelError(Error):
    """SMELT_ERR_MODEL: a well-formed file holding an invalid model."""
    status = 3


class UnsupportedError(Error):
    """SMELT_ERR_UNSUPPORTED: a valid model using something smelt lacks."""
    status = 4


class ShapeError(Error):
    """SMELT_ERR_SHAPE: shapes or dtypes that do not fit an op."""
    status = 5


class ModelAttributeError(Error):
    """SMELT_ERR_ATTR: a bad or missing node attribute."""
    status = 6


class LimitError(Error):
    """SMELT_ERR_LIMIT: a size or count cap was hit."""
    status = 7


class OutOfMemoryError(Error):
    """SMELT_ERR_NOMEM: an allocation failed."""
    status = 8


class ArgumentError(Error, ValueError):
    """SMELT_ERR_ARG: a bad argument (wrong input name, dtype, shape, option)."""
    status = 9


class ExecutionError(Error):
    """SMELT_ERR_RUNTIME: a failure while executing (e.g. index out of range)."""
    status = 10


class InternalError(Error):
    """SMELT_ERR_INTERNAL: a compiler bug."""
    status = 11


_BY_STATUS = {cls.status: cls for cls in (
    FileError, ParseError, InvalidModelError, UnsupportedError, ShapeError,
    ModelAttributeError, LimitError, OutOfMemoryError, ArgumentError, ExecutionError,
    InternalError)}


def error_for_status(status, message, node=None, op=None):
    """The exception for a failed call's status."""
    cls = _BY_STATUS.get(status, Error)
    return cls(message, node, op)
