"""Today's ``pyop2.datatypes``: the index and scalar types (PETSc's, in a real-valued build:
32-bit ints, doubles), the C name of a NumPy type, and ``OpaqueType`` for pass-through
arguments."""

import numpy as np

from op2rs.datatypes import as_cstr  # noqa: F401

__all__ = ["IntType", "RealType", "ScalarType", "IntType_c", "RealType_c", "ScalarType_c",
           "as_cstr", "as_ctypes", "as_numpy_dtype", "dtype_limits", "OpaqueType"]

IntType = np.dtype(np.int32)
RealType = np.dtype(np.float64)
ScalarType = np.dtype(np.float64)
IntType_c = as_cstr(IntType)
RealType_c = as_cstr(RealType)
ScalarType_c = as_cstr(ScalarType)


def as_ctypes(dtype):
    """The ctypes type of ``dtype``."""
    import ctypes
    return {"bool": ctypes.c_bool, "int8": ctypes.c_int8, "int16": ctypes.c_int16,
            "int32": ctypes.c_int32, "int64": ctypes.c_int64, "uint8": ctypes.c_uint8,
            "uint16": ctypes.c_uint16, "uint32": ctypes.c_uint32, "uint64": ctypes.c_uint64,
            "float32": ctypes.c_float, "float64": ctypes.c_double}[np.dtype(dtype).name]


def as_numpy_dtype(dtype):
    """``dtype`` as a NumPy dtype."""
    return np.dtype(dtype)


def dtype_limits(dtype):
    """``(min, max)`` of ``dtype`` (``ValueError`` for a type without limits)."""
    dtype = np.dtype(dtype)
    try:
        info = np.finfo(dtype)
    except ValueError:
        try:
            info = np.iinfo(dtype)
        except ValueError as e:
            raise ValueError("Unable to determine numeric limits from %s" % dtype) from e
    return info.min, info.max


class OpaqueType:
    """A C type the generated code passes through untouched (today's ``PassthroughArg``)."""

    def __init__(self, name):
        self.name = name

    def __repr__(self):
        return "OpaqueType(%r)" % (self.name,)
