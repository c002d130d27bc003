"""Element types: which NumPy dtypes op2-rs holds, their C names (the one table of them), and
the conversions of user data that every constructor shares (PyOP2's ``verify_reshape``)."""

import numpy as np

from .exceptions import DataTypeError, DataValueError, DimTypeError

__all__ = ["SUPPORTED", "as_cstr", "as_dtype", "as_values", "as_dim"]

# PyOP2's ``ctype`` of every NumPy type it named (``Dat.ctype``, ``Global.ctype``, ...).
_CTYPES = {
    "bool": "unsigned char", "int8": "char", "int16": "short", "int32": "int",
    "int64": "long long", "uint8": "unsigned char", "uint16": "unsigned short",
    "uint32": "unsigned int", "uint64": "unsigned long", "float32": "float",
    "float64": "double", "complex64": "float complex", "complex128": "double complex",
}

# The types op2-rs's Dats, Globals and Consts hold (its ``DType``). Complex values run on the
# host backends (seq, openmp); device backends refuse their loops.
SUPPORTED = ("float64", "float32", "int32", "uint32", "int64", "uint64", "complex64",
             "complex128")


def as_cstr(dtype):
    """The C name of ``dtype`` as PyOP2 spelled it (``KeyError`` for a type it had none for)."""
    return _CTYPES[np.dtype(dtype).name]


def as_dtype(dtype, data=None, default=np.float64):
    """``dtype``, or NumPy's inference from ``data`` (else ``default``), checked to be one op2-rs
    holds (``DataTypeError`` otherwise)."""
    if dtype is None:
        dtype = np.asarray(data).dtype if data is not None else default
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise DataTypeError("Invalid data type: %r" % (dtype,)) from None
    if dt.name not in SUPPORTED:
        raise DataTypeError("op2-rs holds %s, not %s" % (sorted(SUPPORTED), dt.name))
    return dt


def as_values(data, dtype, count, what):
    """``data`` as a flat contiguous array of ``count`` values of ``dtype`` (``DataValueError``
    when it cannot be converted or has another length)."""
    try:
        a = np.asarray(data, dtype=dtype)
    except (TypeError, ValueError, OverflowError):
        raise DataValueError("Invalid data for %s" % what) from None
    if a.size != count:
        raise DataValueError("%s needs %d values, got %d" % (what, count, a.size))
    return np.ascontiguousarray(a).ravel()


def as_dim(dim):
    """A Global's or Const's ``dim`` as a tuple of ints (``DimTypeError`` otherwise)."""
    if isinstance(dim, (int, np.integer)) and not isinstance(dim, bool):
        return (int(dim),)
    if isinstance(dim, (tuple, list)) and dim and all(
            isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in dim):
        return tuple(int(d) for d in dim)
    raise DimTypeError("dim must be an int or a tuple of ints, not %r" % (dim,))
