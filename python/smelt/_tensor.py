"""NumPy arrays <-> smelt_tensor (and lists / None <-> sequences / optionals)."""
import ctypes
import weakref

import numpy as np

from ._lib import MAX_RANK, Tensor, lib, text
from .errors import ArgumentError, UnsupportedError

# smelt_dtype (= ONNX TensorProto.DataType) -> NumPy dtype
_NUMPY = {1: np.float32, 2: np.uint8, 3: np.int8, 4: np.uint16, 5: np.int16, 6: np.int32,
          7: np.int64, 9: np.bool_, 10: np.float16, 11: np.float64, 12: np.uint32,
          13: np.uint64}
_SMELT = {np.dtype(v): k for k, v in _NUMPY.items()}
_NAMES = {8: "string", 14: "complex64", 15: "complex128", 16: "bfloat16",
          17: "float8e4m3fn", 18: "float8e4m3fnuz", 19: "float8e5m2", 20: "float8e5m2fnuz",
          21: "uint4", 22: "int4", 23: "float4e2m1", 24: "float8e8m0", 25: "uint2", 26: "int2"}


SEQUENCE_BIT, OPTIONAL_BIT = 0x100, 0x200  # smelt.h's container dtype bits


def kind(code):
    """'tensor', 'sequence', 'optional' or 'optional sequence' for a smelt_dtype code."""
    if code & OPTIONAL_BIT:
        return "optional sequence" if code & SEQUENCE_BIT else "optional"
    return "sequence" if code & SEQUENCE_BIT else "tensor"


def element_code(code):
    """The code inside one container level (optional first)."""
    return code & ~OPTIONAL_BIT if code & OPTIONAL_BIT else code & ~SEQUENCE_BIT


def numpy_dtype(code):
    """The NumPy dtype of a smelt_dtype code."""
    if code not in _NUMPY:
        raise UnsupportedError(f"element type {_NAMES.get(code, code)} has no NumPy equivalent")
    return np.dtype(_NUMPY[code])


def smelt_dtype(dtype):
    """The smelt_dtype code of a NumPy dtype."""
    code = _SMELT.get(np.dtype(dtype))
    if code is None:
        raise ArgumentError(f"NumPy dtype {np.dtype(dtype)} has no smelt equivalent")
    return code


def as_input_array(value, name, dtype):
    """value as a C-contiguous ndarray: the array itself when it already is
    one (zero-copy), else a copy.  A wrong dtype is kept so the library
    reports it; non-arrays are converted to the input's dtype."""
    if not isinstance(value, np.ndarray):
        value = np.asarray(value, dtype=dtype)
    if value.ndim > MAX_RANK:
        raise ArgumentError(f"input '{name}': rank {value.ndim} exceeds {MAX_RANK}")
    return np.ascontiguousarray(value)


def view(array):
    """A smelt_tensor over array's memory (array must outlive it)."""
    t = Tensor()
    t.dtype = smelt_dtype(array.dtype)
    t.rank = array.ndim
    for i, d in enumerate(array.shape):
        t.dims[i] = d
    t.data = array.ctypes.data if array.size else None
    return t


def take(t):
    """An ndarray over the memory of a tensor smelt allocated (no copy); the
    tensor is released when the array and every view of it are gone.  On an
    error the tensor is released at once."""
    try:
        shape = tuple(t.dims[i] for i in range(t.rank))
        dtype = np.dtype(numpy_dtype(t.dtype))
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if nbytes == 0 or not t.data:
            out = np.empty(shape, dtype=dtype)
            lib().smelt_tensor_release(ctypes.byref(t))
            return out
        owner = (ctypes.c_char * nbytes).from_address(t.data)
        out = np.frombuffer(owner, dtype=dtype).reshape(shape)
    except BaseException:
        lib().smelt_tensor_release(ctypes.byref(t))
        raise
    weakref.finalize(owner, _release, Tensor.from_buffer_copy(t))
    return out


def _release(tensor):
    """Frees what smelt allocated for an output (finalizer of its array)."""
    try:
        lib().smelt_tensor_release(ctypes.byref(tensor))
    except Exception:  # noqa: BLE001  the interpreter is shutting down
        pass


def tensor_name(t):
    return text(ctypes.cast(t.name, ctypes.c_char_p).value) if t.name else ""


class ContainerInput:
    """A sequence (a list or tuple of arrays) or an optional (None, or its
    value) as a smelt_tensor whose element array lives as long as this."""

    def __init__(self, value, name, code):
        self._keep = []
        self.tensor = self._build(value, name, code)

    def _build(self, value, name, code):
        if not code & (SEQUENCE_BIT | OPTIONAL_BIT):
            array = as_input_array(value, name, numpy_dtype(code))
            self._keep.append(array)
            return view(array)
        if code & OPTIONAL_BIT:
            items = [] if value is None else [value]
        elif isinstance(value, (list, tuple)):
            items = list(value)
        else:
            raise ArgumentError(f"input '{name}' is a {kind(code)}: give a list of arrays")
        inner = element_code(code)
        elems = (Tensor * max(len(items), 1))(*[self._build(v, name, inner) for v in items])
        self._keep.append(elems)
        t = Tensor()
        t.dtype, t.rank, t.dims[0], t.data = code, 1, len(items), ctypes.addressof(elems)
        return t


def take_value(t):
    """An output: an ndarray over smelt's memory (take), or for a sequence a
    list of arrays and for an optional None or its value (copies; the
    container is released at once)."""
    if not t.dtype & (SEQUENCE_BIT | OPTIONAL_BIT):
        return take(t)
    try:
        return _copy_value(t)
    finally:
        lib().smelt_tensor_release(ctypes.byref(t))


def _copy_value(t):
    if not t.dtype & (SEQUENCE_BIT | OPTIONAL_BIT):
        shape = tuple(t.dims[i] for i in range(t.rank))
        dtype = np.dtype(numpy_dtype(t.dtype))
        nbytes = int(np.prod(shape, dtype=np.int64)) * dtype.itemsize
        if nbytes == 0 or not t.data:
            return np.empty(shape, dtype=dtype)
        return np.frombuffer((ctypes.c_char * nbytes).from_address(t.data), dtype=dtype).reshape(shape).copy()
    n = t.dims[0]
    items = (Tensor * n).from_address(t.data) if n else []
    values = [_copy_value(items[i]) for i in range(n)]
    if t.dtype & OPTIONAL_BIT:
        return values[0] if values else None
    return values
