"""A smelt_ctx per call: turns a failed status into the matching smelt.Error."""
from ._lib import lib, text
from .errors import error_for_status


class Context:
    """Owns one smelt_ctx; use as a context manager."""

    def __init__(self):
        self.handle = lib().smelt_ctx_new()
        if not self.handle:
            raise MemoryError("smelt_ctx_new failed")

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        lib().smelt_ctx_free(self.handle)
        self.handle = None

    def error(self):
        """The recorded error as an exception."""
        L = lib()
        return error_for_status(L.smelt_ctx_status(self.handle),
                                text(L.smelt_ctx_message(self.handle)),
                                text(L.smelt_ctx_node(self.handle)),
                                text(L.smelt_ctx_op(self.handle)))

    def check(self, status):
        """Raise the recorded error when status is not SMELT_OK."""
        if status != 0:
            raise self.error()
