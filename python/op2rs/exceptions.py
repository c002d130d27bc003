"""PyOP2's exceptions (``pyop2.exceptions``) and the translation of op2-rs's errors into them.

op2-rs reports an error as ``Op2Failure(kind, message)``, ``kind`` being the name of the Rust
error's variant; :func:`translate` turns it into the PyOP2 exception of that meaning."""

from . import _op2

__all__ = [
    "DataTypeError", "DimTypeError", "ArityTypeError", "IndexTypeError", "NameTypeError",
    "SetTypeError", "SizeTypeError", "SubsetIndexOutOfBounds", "SparsityTypeError",
    "MapTypeError", "DataSetTypeError", "MatTypeError", "DatTypeError", "KernelTypeError",
    "DataValueError", "IndexValueError", "ModeValueError", "SetValueError", "MapValueError",
    "ConfigurationError", "CompilationError", "NonUniqueNameError", "Op2Error",
]


class DataTypeError(TypeError):
    """Invalid type for data."""


class DimTypeError(TypeError):
    """Invalid type for dimension."""


class ArityTypeError(TypeError):
    """Invalid type for arity."""


class IndexTypeError(TypeError):
    """Invalid type for index."""


class NameTypeError(TypeError):
    """Invalid type for name."""


class SetTypeError(TypeError):
    """Invalid type for Set."""


class SizeTypeError(TypeError):
    """Invalid type for size."""


class SubsetIndexOutOfBounds(TypeError):
    """Index out of bounds."""


class SparsityTypeError(TypeError):
    """Invalid type for Sparsity."""


class MapTypeError(TypeError):
    """Invalid type for Map."""


class DataSetTypeError(TypeError):
    """Invalid type for DataSet."""


class MatTypeError(TypeError):
    """Invalid type for Mat."""


class DatTypeError(TypeError):
    """Invalid type for Dat."""


class KernelTypeError(TypeError):
    """Invalid type for Kernel."""


class DataValueError(ValueError):
    """Illegal value for data."""


class IndexValueError(ValueError):
    """Illegal value for index."""


class ModeValueError(ValueError):
    """Illegal value for mode."""


class SetValueError(ValueError):
    """Illegal value for Set."""


class MapValueError(ValueError):
    """Illegal value for Map."""


class ConfigurationError(RuntimeError):
    """Illegal configuration value or type."""


class CompilationError(RuntimeError):
    """A kernel that did not compile: the message has the compiler's output and the path of
    the generated source."""


class NonUniqueNameError(ValueError):
    """The name is used by another Const (PyOP2's ``Const.NonUniqueNameError``)."""


class Op2Error(RuntimeError):
    """Any other error op2-rs reports."""


# op2-rs's error kinds and the PyOP2 exception of the same meaning.
_KINDS = {
    "MapValueOutOfRange": MapValueError,
    "MapFromMismatch": MapValueError,
    "MapWithGaps": MapValueError,
    "DatSetMismatch": MapValueError,
    "DirectSetMismatch": MapValueError,
    "MapIndexOutOfRange": IndexValueError,
    "DataLength": DataValueError,
    "ZeroDimension": DimTypeError,
    "BadSubset": SubsetIndexOutOfBounds,
    "Compile": CompilationError,
    "IterationSpace": IndexValueError,
    "GlobalAccess": ModeValueError,
    "ReductionOnDat": ModeValueError,
    "UnorderedReduction": ModeValueError,
    "KernelNotFound": KernelTypeError,
    "KernelParamCount": KernelTypeError,
    "KernelParamShape": KernelTypeError,
    "KernelParamBound": KernelTypeError,
    "TypeMismatch": KernelTypeError,
    "InvalidIdentifier": NameTypeError,
    "ReservedIdentifier": NameTypeError,
    "NameClash": NameTypeError,
    "DimMismatch": DataValueError,
    "InvalidArg": MapValueError,
    "UnknownBackend": ImportError,
    "BackendUnavailable": ImportError,
    "BackendNotEnabled": ImportError,
    "DuplicateConst": NonUniqueNameError,
    "AlgebraMismatch": DataValueError,
    "ScalarKind": DataTypeError,
    "Complex": NotImplementedError,
}


def translate(e):
    """PyOP2's exception for op2-rs's failure ``e`` (an ``_op2.Op2Failure``)."""
    kind, message = e.args
    return _KINDS.get(kind, Op2Error)(message)


def call(f, *args, **kwargs):
    """``f(*args, **kwargs)``, op2-rs's failures raised as PyOP2's exceptions."""
    try:
        return f(*args, **kwargs)
    except _op2.Op2Failure as e:
        raise translate(e) from None
