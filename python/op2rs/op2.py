"""PyOP2's ``op2`` module over op2-rs: the lifecycle, sets, maps, data, kernels and loops as
PyOP2 0.8 to 0.10 documented them. Argument forms and PyOP2's exceptions live here; the runtime,
the generated code and the data are op2-rs's (``op2rs._op2``)."""

import atexit
import logging
import os
import sys
import tempfile
import weakref

import numpy as np

from . import _op2

__all__ = [
    "configuration", "READ", "WRITE", "RW", "INC", "MIN", "MAX", "i",
    "debug", "info", "warning", "error", "critical", "set_log_level", "Halo",
    "init", "exit", "initialised",
    "Set", "DataSet", "Map", "Dat", "Global", "Const", "Kernel", "par_loop",
    "Sparsity", "Mat", "Solver", "solve", "Subset", "ExtrudedSet", "MPI", "DistributedMesh",
    "MixedSet", "MixedDataSet", "MixedMap", "MixedDat",
    "MatTypeError", "DatTypeError",
]


# --- Exceptions (pyop2.exceptions) -----------------------------------------------------------

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


class Op2Error(RuntimeError):
    """Any other error op2-rs reports."""


# op2-rs's error kinds and the PyOP2 exception of the same meaning.
_KINDS = {
    "MapValueOutOfRange": MapValueError,
    "MapFromMismatch": MapValueError,
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
}


def _raise(e):
    """Re-raises op2-rs's error ``e`` as PyOP2's exception of that meaning."""
    kind, message = e.args
    if kind == "DuplicateConst":
        raise Const.NonUniqueNameError(message) from None
    raise _KINDS.get(kind, Op2Error)(message) from None


def _call(f, *args, **kwargs):
    try:
        return f(*args, **kwargs)
    except _op2.Op2Failure as e:
        _raise(e)


# --- Access descriptors and op2.i ------------------------------------------------------------

class Access:
    """An access descriptor (READ, WRITE, RW, INC, MIN, MAX)."""

    _MODES = ["READ", "WRITE", "RW", "INC", "MIN", "MAX"]

    def __init__(self, mode):
        if mode not in Access._MODES:
            raise ModeValueError("Mode needs to be one of %s" % Access._MODES)
        self._mode = mode
        self._code = Access._MODES.index(mode)

    def __str__(self):
        return "OP2 Access: %s" % self._mode

    def __repr__(self):
        return "Access(%r)" % self._mode


READ = Access("READ")
WRITE = Access("WRITE")
RW = Access("RW")
INC = Access("INC")
MIN = Access("MIN")
MAX = Access("MAX")


class IterationIndex:
    """``op2.i``: ``op2.i[n]`` marks map entry ``n`` of a local iteration space."""

    def __init__(self, index=None):
        assert index is None or isinstance(index, int), "i must be an int"
        self._index = index

    def __getitem__(self, idx):
        return IterationIndex(idx)

    @property
    def index(self):
        return self._index


i = IterationIndex()


# --- Lifecycle -------------------------------------------------------------------------------

_BACKENDS = {"sequential": "seq", "openmp": "openmp", "opencl": "opencl", "cuda": "cuda"}
_state = {"runtime": None, "backend": None, "finalised": False}


class _Configuration:
    """PyOP2's ``op2.configuration``: known keys with defaults from the environment
    (``PYOP2_BACKEND``, ``PYOP2_LAZY``, ...), type-checked when set; unknown keys are kept."""

    # key: (environment variable, type, default)
    _KEYS = {
        "backend": ("PYOP2_BACKEND", str, "sequential"),
        "debug": ("PYOP2_DEBUG", int, 0),
        "log_level": ("PYOP2_LOG_LEVEL", (str, int), "WARNING"),
        "lazy_evaluation": ("PYOP2_LAZY", bool, True),
        "lazy_max_trace_length": ("PYOP2_MAX_TRACE_LENGTH", int, 0),
        "dump_gencode": ("PYOP2_DUMP_GENCODE", bool, False),
        "dump_gencode_path": ("PYOP2_DUMP_GENCODE_PATH", str,
                              os.path.join(tempfile.gettempdir(), "pyop2-gencode")),
        "compiler": ("PYOP2_BACKEND_COMPILER", str, ""),
        "simd_isa": ("PYOP2_SIMD_ISA", str, ""),
    }

    def __init__(self):
        self._set = set()
        self.reset()

    def reset(self):
        """Back to the defaults (read from the environment)."""
        self._values = {}
        self._set = set()
        for key, (env, typ, default) in self._KEYS.items():
            raw = os.environ.get(env)
            conv = typ[0] if isinstance(typ, tuple) else typ
            # As PyOP2 did: the type's constructor (so a bool is True for any non-empty string).
            self._values[key] = default if raw is None else conv(raw)

    def reconfigure(self, **kwargs):
        for k, v in kwargs.items():
            self[k] = v

    def __getitem__(self, key):
        return self._values[key]

    def __setitem__(self, key, value):
        known = self._KEYS.get(key)
        if known is not None:
            if not isinstance(value, known[1]) or (known[1] is int and isinstance(value, bool)):
                raise ConfigurationError("Values for configuration key %s must be of type %r"
                                         % (key, known[1]))
            if key == "backend" and "backend" in self._set and value != self._values[key]:
                raise ConfigurationError("The backend is already set")
            self._set.add(key)
        self._values[key] = value

    def __contains__(self, key):
        return key in self._values

    def __repr__(self):
        return "Configuration(%r)" % (self._values,)


configuration = _Configuration()


def init(**kwargs):
    """Starts op2-rs with ``backend`` (``sequential``, ``openmp``, ``opencl``, ``cuda``, or an
    op2-rs name such as ``cuda-emulator``) and ``lazy_evaluation``; every keyword goes into
    ``configuration`` (unknown ones are kept, as PyOP2 kept them)."""
    if _state["finalised"]:
        raise RuntimeError("op2.exit has been called")
    backend = kwargs.get("backend")
    if _state["runtime"] is not None:
        if backend is not None and backend != _state["backend"]:
            raise RuntimeError("Changing the backend is not possible once set.")
        configuration.reconfigure(**{k: v for k, v in kwargs.items() if k != "backend"})
        set_log_level(configuration["log_level"])
        return
    old = (dict(configuration._values), set(configuration._set))
    try:
        configuration.reconfigure(**kwargs)
        name = configuration["backend"]
        rs_name = _BACKENDS.get(name, name)
        # A backend that cannot start is PyOP2's ImportError, and leaves the configuration as
        # it was.
        _state["runtime"] = _call(_op2.PyRuntime, rs_name, configuration["lazy_evaluation"])
    except Exception:
        configuration._values, configuration._set = old
        raise
    set_log_level(configuration["log_level"])
    _state["backend"] = name
    if getattr(_op2, "HAS_MPI", False) and not _state.get("atexit"):
        # MPI (started under any mpirun, one rank too) finishes at exit, after what is
        # pending ran on every rank; nothing happens when it never started.
        atexit.register(_finish_mpi)
        _state["atexit"] = True


def _finish_mpi():
    exit()
    _op2.finalize_mpi()


def exit():
    """Finalises op2. Unlike PyOP2, which dropped them, loops still pending run first (op2-rs
    finishes what was recorded when its runtime goes)."""
    rt = _state["runtime"]
    try:
        if rt is not None:
            _state["finalised"] = True
            # Loops still pending run now, on every rank together (not when the last object
            # holding the runtime goes, which ranks might reach at different times).
            _call(rt.flush)
    finally:
        _state["runtime"] = None
        configuration.reset()
    _sparsities.clear()
    _mixed_sets.clear()


def initialised():
    """Whether ``init`` ran and ``exit`` did not."""
    return _state["runtime"] is not None


def _rt():
    rt = _state["runtime"]
    if rt is None:
        if _state["finalised"]:
            raise RuntimeError("op2.exit has been called")
        raise RuntimeError("You must call op2.init() before using op2")
    return rt


_counters = {}


def _name(kind, name):
    if name is None:
        n = _counters.get(kind, 0)
        _counters[kind] = n + 1
        return "%s_%d" % (kind, n)
    if not isinstance(name, str):
        raise NameTypeError("name must be of type str")
    return name


# --- Sets ------------------------------------------------------------------------------------

class Set:
    """A set of mesh entities: ``Set(size)`` or ``Set([core, owned, exec_halo, total])``.
    ``layers=L > 1`` (PyOP2 up to 0.9.1) makes it an extruded iteration set: ``L - 1`` cells
    over each element (see :class:`ExtrudedSet`)."""

    # The native set loops over it run: the extruded cells for an extruded set, else `_native`.
    _native_iter = None

    def __init__(self, size=None, name=None, halo=None, layers=None):
        rt = _rt()
        if isinstance(size, (int, np.integer)) and not isinstance(size, bool):
            sizes = [int(size)] * 4
        elif isinstance(size, (list, tuple)):
            if len(size) != 4:
                raise ValueError("Set sizes are four ints: core, owned, exec halo, total")
            if not all(isinstance(s, (int, np.integer)) for s in size):
                raise TypeError("Set sizes must be ints")
            sizes = [int(s) for s in size]
        elif size is None:
            raise ValueError("Set needs a size: an int or four ints")
        else:
            raise SizeTypeError("size must be int or a list of four ints")
        if layers is not None and (not isinstance(layers, (int, np.integer))
                                   or isinstance(layers, bool) or layers < 1):
            raise SizeTypeError("layers must be a positive int")
        if any(b < a for a, b in zip(sizes, sizes[1:])) or sizes[0] < 0:
            raise SizeTypeError("Set sizes must be non-decreasing and non-negative")
        self._name = _name("set", name)
        core, owned, exech, total = sizes
        self._native = _call(
            rt.decl_set, (core, owned - core, exech - owned, total - exech), self._name
        )
        self._halo = halo
        self._layers = layers
        if layers is not None and layers > 1:
            self._native_iter = _call(rt.decl_extruded_set, self._native, int(layers),
                                      "%s_layers" % self._name)

    core_size = property(lambda self: self._native.sizes[0])
    size = property(lambda self: self._native.size)
    exec_size = property(lambda self: self._native.exec_size)
    total_size = property(lambda self: self._native.total_size)
    name = property(lambda self: self._name)
    halo = property(lambda self: self._halo)
    layers = property(lambda self: self._layers)

    @property
    def sizes(self):
        return (self.core_size, self.size, self.exec_size, self.total_size)

    def __pow__(self, dim):
        return DataSet(self, dim)

    def __call__(self, *indices):
        """``set(i0, i1, ...)`` or ``set(list)``: the Subset of those elements."""
        if len(indices) == 1:
            indices = indices[0]
        if np.isscalar(indices):
            indices = [indices]
        return Subset(self, indices)

    def __len__(self):
        return 1

    def __iter__(self):
        yield self

    def __contains__(self, dset):
        return getattr(dset, "set", None) is self

    def __repr__(self):
        return "Set(%r, %r)" % (self.sizes, self._name)

    @classmethod
    def fromhdf5(cls, f, name):
        """The Set ``name`` of the open h5py file or group ``f``: a dataset of shape ``(1,)``
        holding the size (as OP2's ``op_decl_set_hdf5`` and the Airfoil example write it)."""
        slot = f[name]
        if slot.shape != (1,):
            raise SizeTypeError("Shape of %s is incorrect" % name)
        return cls(int(slot[()][0]), name)


class ExtrudedSet(Set):
    """PyOP2 0.10's extruded iteration set: ``ExtrudedSet(parent, layers)``, ``layers - 1``
    cells over each element of ``parent``. Dats on it (or on ``parent``) hold one row per
    column; maps from it with ``offset=`` step up the columns; maps from ``parent`` give the
    same row in every layer. A loop whose args are all direct runs once per column, as
    PyOP2's did."""

    def __init__(self, parent, layers):
        rt = _rt()
        if not isinstance(parent, Set) or isinstance(parent, ExtrudedSet):
            raise TypeError("Parent must be a Set")
        if not isinstance(layers, (int, np.integer)) or isinstance(layers, bool) or layers < 2:
            raise SizeTypeError("Number of layers must be > 1 (not %r)" % (layers,))
        self._parent = parent
        self._native = parent._native
        self._name = parent.name
        self._halo = parent.halo
        self._layers = int(layers)
        self._native_iter = _call(rt.decl_extruded_set, parent._native, int(layers),
                                  "%s_layers" % parent.name)

    parent = property(lambda self: self._parent)

    def __getattr__(self, name):
        return getattr(self._parent, name)

    def __repr__(self):
        return "ExtrudedSet(%r, %r)" % (self._parent, self._layers)


class Subset(Set):
    """Some elements of a Set: ``Subset(superset, indices)``. A loop over it runs only those
    elements; Dats and Maps stay on the superset. A Subset of a Subset selects from the first
    one's elements (its indices are composed into the original superset)."""

    def __init__(self, superset, indices):
        rt = _rt()
        if not isinstance(superset, Set):
            raise TypeError("Superset must be a Set")
        if not isinstance(indices, (list, tuple, np.ndarray)):
            raise TypeError("Subset indices must be a list, tuple or ndarray")
        idx = np.unique(np.asarray(indices))
        if idx.size and not np.issubdtype(idx.dtype, np.integer):
            raise TypeError("Subset indices must be ints")
        if idx.size and (idx[0] < 0 or idx[-1] >= superset.total_size):
            raise SubsetIndexOutOfBounds(
                "Out of bounds indices in Subset construction: [%d, %d) not [0, %d)"
                % (idx[0], idx[-1] + 1, superset.total_size))
        if isinstance(superset, Subset):
            idx = superset._indices[idx]
            superset = superset._superset
        if idx.size and idx[-1] >= superset.exec_size:
            raise SubsetIndexOutOfBounds(
                "op2rs subsets hold elements a loop runs (below exec_size %d), not %d"
                % (superset.exec_size, idx[-1]))
        self._superset = superset
        self._indices = idx.astype(np.int32)
        self._name = superset.name
        self._native = _call(rt.decl_subset, superset._native, self._indices,
                             "%s_subset" % superset.name)
        self._halo = superset.halo
        self._layers = superset.layers
        if superset._native_iter is not None:
            # Of an extruded set: every layer's cell of the chosen columns (numbered column by
            # column), for loops that go up the columns.
            per = superset.layers - 1
            cells = (self._indices[:, None] * per + np.arange(per)[None, :]).ravel()
            self._native_iter = _call(rt.decl_subset, superset._native_iter,
                                      cells.astype(np.int32), "%s_subset_layers" % superset.name)

    superset = property(lambda self: self._superset)
    indices = property(lambda self: self._indices)

    def __pow__(self, dim):
        raise NotImplementedError("Deriving a DataSet from a Subset is unsupported")

    def __getattr__(self, name):
        # PyOP2: any other attribute falls through to the superset.
        return getattr(self._superset, name)

    def __repr__(self):
        return "Subset(%r, %r)" % (self._superset, self._indices)


class DataSet:
    """A set with ``dim`` values per element (``set ** dim``)."""

    def __init__(self, iter_set, dim=1, name=None):
        if not isinstance(iter_set, Set):
            raise SetTypeError("iter_set must be a Set")
        if isinstance(iter_set, Subset):
            raise NotImplementedError("Deriving a DataSet from a Subset is unsupported")
        if isinstance(dim, (int, np.integer)):
            dim = (int(dim),)
        elif isinstance(dim, (tuple, list)) and all(
                isinstance(d, (int, np.integer)) for d in dim):
            dim = tuple(int(d) for d in dim)
        else:
            raise DimTypeError("dim must be an int, tuple or list")
        self._set = iter_set
        self._dim = dim
        self._name = _name("dset", name)

    set = property(lambda self: self._set)
    dim = property(lambda self: self._dim)
    cdim = property(lambda self: int(np.prod(self._dim)))
    name = property(lambda self: self._name)

    def __getattr__(self, name):
        return getattr(self._set, name)

    def __eq__(self, other):
        return isinstance(other, DataSet) and self._set is other._set and self._dim == other._dim

    __hash__ = object.__hash__

    def __len__(self):
        return 1

    def __iter__(self):
        yield self

    def __contains__(self, dat):
        return getattr(dat, "dataset", None) == self


# --- Maps ------------------------------------------------------------------------------------

class _MapPath:
    """``map[k]`` or ``map[op2.i[n]]``: the path of a data argument."""

    __slots__ = ("map", "index")

    def __init__(self, map, index):
        self.map = map
        self.index = index


class Map:
    """A map from ``iterset`` to ``toset``, ``arity`` entries per element."""

    def __init__(self, iterset, toset, arity, values=None, name=None, offset=None, parent=None,
                 bt_masks=None):
        rt = _rt()
        if not isinstance(iterset, Set) or not isinstance(toset, Set):
            raise SetTypeError("iterset and toset must be Sets")
        if not isinstance(arity, (int, np.integer)) or isinstance(arity, bool):
            raise ArityTypeError("arity must be an int")
        self._iterset, self._toset, self._arity = iterset, toset, int(arity)
        self._name = _name("map", name)
        if bt_masks is not None:
            raise NotImplementedError(
                "boundary masks (bt_masks=) of extruded maps are not in op2rs's Python API yet")
        if offset is not None:
            if iterset._native_iter is None:
                raise MapTypeError("offset= needs an extruded iterset (Set(layers=) or "
                                   "ExtrudedSet)")
            try:
                offset = np.asarray(offset, dtype=np.int32).ravel()
            except (TypeError, ValueError, OverflowError):
                raise DataValueError("Map offsets must be ints") from None
            if offset.size != self._arity:
                raise DataValueError("Map %s: %d offsets for arity %d"
                                     % (self._name, offset.size, self._arity))
        self._offset = offset
        self._parent = parent
        if values is None:
            self._native = None
            return
        try:
            v = np.asarray(values, dtype=np.int32)
        except (TypeError, ValueError, OverflowError):
            raise DataValueError("Map values must be ints") from None
        if v.size != iterset.total_size * self._arity:
            raise DataValueError(
                "Map %s: %d values, but %d rows x arity %d are needed"
                % (self._name, v.size, iterset.total_size, self._arity))
        # op2-rs keeps the rows a loop runs (owned and exec halo); PyOP2 keeps every row.
        self._values = v.reshape(-1, self._arity)
        rows = np.ascontiguousarray(self._values[: iterset.exec_size]).ravel()
        if offset is None:
            self._native = _call(rt.decl_map, iterset._native, toset._native, self._arity, rows,
                                 self._name)
        else:
            self._native = _call(rt.decl_map, iterset._native_iter, toset._native, self._arity,
                                 rows, self._name, [int(o) for o in offset])

    iterset = property(lambda self: self._iterset)
    toset = property(lambda self: self._toset)
    arity = property(lambda self: self._arity)
    arities = property(lambda self: (self._arity,))
    arange = property(lambda self: (0, self._arity))
    name = property(lambda self: self._name)
    offset = property(lambda self: self._offset)
    split = property(lambda self: (self,))

    @property
    def values(self):
        return self._values_all()[: self._iterset.size]

    @classmethod
    def fromhdf5(cls, iterset, toset, f, name):
        """The Map ``name`` of the open h5py file or group ``f``: a 2-D integer array, one row
        per element of ``iterset``."""
        slot = f[name]
        arity = slot.shape[1:]
        if len(arity) != 1:
            raise ArityTypeError("Unrecognised arity value %s" % (arity,))
        return cls(iterset, toset, arity[0], slot[()], name)

    @property
    def values_with_halo(self):
        return self._values_all()

    def _values_all(self):
        if self._native is None:
            raise MapValueError("Map %s has no values" % self._name)
        return self._values

    def __getitem__(self, index):
        # The common case first: par_loop calls are on the hot path of every time step.
        if type(index) is int and 0 <= index < self._arity:
            paths = self.__dict__.get("_paths")
            if paths is None:
                paths = self._paths = [_MapPath(self, k) for k in range(self._arity)]
            return paths[index]
        if isinstance(index, IterationIndex):
            if index.index not in (0, 1):
                raise IndexValueError("op2.i[n] with n 0 or 1")
            # Kept, like map[k], so that a Dat's argument cache hits.
            lis = self.__dict__.setdefault("_lis_paths", {})
            p = lis.get(index.index)
            if p is None:
                p = lis[index.index] = _MapPath(self, i[index.index])
            return p
        if isinstance(index, slice):
            raise NotImplementedError("Slicing a Map is not supported")
        if not isinstance(index, (int, np.integer)):
            raise IndexTypeError("Map index must be an int or op2.i[n]")
        if not 0 <= index < self._arity:
            raise IndexValueError("Map index %d out of range 0..%d" % (index, self._arity))
        return _MapPath(self, int(index))

    def __len__(self):
        return 1

    def __iter__(self):
        yield self


# --- Data ------------------------------------------------------------------------------------

_DTYPES = {"float64", "float32", "int32", "uint32", "int64", "uint64"}


def _dtype(dtype, data, default=np.float64):
    if dtype is None:
        dtype = np.asarray(data).dtype if data is not None else default
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise DataTypeError("Invalid data type: %r" % (dtype,)) from None
    if dt.name not in _DTYPES:
        raise DataTypeError("op2-rs holds %s, not %s" % (sorted(_DTYPES), dt.name))
    return dt


def _values(data, dtype, count, what):
    try:
        a = np.asarray(data, dtype=dtype)
    except (TypeError, ValueError):
        raise DataValueError("Invalid data for %s" % what) from None
    if a.size != count:
        raise DataValueError("%s needs %d values, got %d" % (what, count, a.size))
    return np.ascontiguousarray(a).ravel()


# How an argument reaches its kernel, as the native module numbers them.
_DIRECT, _ENTRY, _ROW, _ENTRIES, _BUFFER, _BUFFER_FLAT, _ROW_FLAT = range(7)
_KIND_DAT, _KIND_GLOBAL, _KIND_MAT, _KIND_MIXED_DAT, _KIND_MIXED_MAT = range(5)


class _Arg:
    """A ``par_loop`` argument: the data, its access and its path.

    ``native`` is the tuple the native module takes, made once here so that ``par_loop`` only
    passes it on; ``iterset`` is the set the loop must run over (``None``: any); ``lis`` marks
    ``map[op2.i[n]]``, whose form depends on the kernel (per point or once per element).
    """

    __slots__ = ("data", "access", "path", "flatten", "native", "iterset", "lis")

    def __init__(self, data, access, path=None, flatten=False, native=None, iterset=None,
                 lis=False):
        self.data, self.access, self.path, self.flatten = data, access, path, flatten
        self.native, self.iterset, self.lis = native, iterset, lis


class Dat:
    """Data on a set: ``Dat(dataset, data=None, dtype=None, name=None)``."""

    def __init__(self, dataset, data=None, dtype=None, name=None, soa=None, uid=None):
        rt = _rt()
        if isinstance(dataset, Dat):
            other = dataset
            Dat.__init__(self, other._dataset, None, other.dtype, "copy_of_%s" % other.name)
            other.copy(self)
            return
        if soa:
            raise NotImplementedError(
                "soa=True (PyOP2's component-major layout, OP2_STRIDE) is not in op2rs")
        if isinstance(dataset, Set):
            dataset = dataset ** 1
        if not isinstance(dataset, DataSet):
            raise DataSetTypeError("dataset must be a DataSet or a Set")
        self._dataset = dataset
        self._name = _name("dat", name)
        self._dtype = _dtype(dtype, data)
        count = dataset.total_size * dataset.cdim
        vals = None if data is None else _values(data, self._dtype, count, "Dat %s" % self._name)
        self._native = _call(rt.decl_dat, dataset.set._native, dataset.cdim, self._dtype.name,
                             vals, self._name)
        self._views = []
        self._args = {}

    dataset = property(lambda self: self._dataset)
    dim = property(lambda self: self._dataset.dim)
    cdim = property(lambda self: self._dataset.cdim)
    dtype = property(lambda self: self._dtype)
    name = property(lambda self: self._name)
    soa = property(lambda self: False)
    split = property(lambda self: (self,))

    @property
    def shape(self):
        n = self._dataset.total_size
        return (n,) if self.cdim == 1 else (n,) + tuple(self.dim)

    def __call__(self, access, path=None, flatten=False):
        # The same argument is made every time step: it is made once and kept on the Dat.
        key = (access, path, flatten)
        try:
            a = self._args.get(key)
        except TypeError:  # an unhashable path: not an argument, _arg says why
            a = None
        if a is None:
            a = self._arg(access, path, flatten)
            if len(self._args) < 64:
                self._args[key] = a
        return a

    def _arg(self, access, path, flatten):
        if access is not READ and access is not WRITE and access is not RW and access is not INC:
            raise ModeValueError("Dat access must be READ, WRITE, RW or INC")
        if path is None:
            return _Arg(self, access, None, flatten,
                        (_KIND_DAT, self._native, access._code, _DIRECT, None, 0),
                        self._dataset.set)
        m = path.map if type(path) is _MapPath else path
        if m is not None:
            if not isinstance(m, Map):
                raise MapTypeError("the path must be a Map, map[k] or map[op2.i[n]]")
            if m.toset is not self._dataset.set:
                raise MapValueError("To Set of Map does not match Set of Dat.")
            if m._native is None and m.iterset.total_size > 0:
                raise MapValueError("Map %s has no values" % m.name)
        # flatten=True changes nothing for map[k]: PyOP2 flattened only whole rows and local
        # iteration spaces, and handed a map entry's row as one pointer either way.
        if type(path) is _MapPath:
            if isinstance(path.index, IterationIndex):
                # Its form depends on the kernel: par_loop decides.
                return _Arg(self, access, path, flatten, None, m.iterset, True)
            native = (_KIND_DAT, self._native, access._code, _ENTRY, m._native, path.index)
        else:
            # flatten=True: one pointer per value, component-major (a row, for dim 1).
            how = _ROW_FLAT if flatten and self.cdim > 1 else _ROW
            native = (_KIND_DAT, self._native, access._code, how, m._native, 0)
        return _Arg(self, access, path, flatten, native, m.iterset)

    def _view(self, writable, halos):
        a = _call(self._native.view, writable)
        if not halos:
            a = a[: self._dataset.size]
        a = a.reshape(a.shape[:1]) if self.cdim == 1 else a.reshape((a.shape[0],) + self.dim)
        if writable:
            self._views = [w for w in self._views if w() is not None]
            self._views.append(weakref.ref(a))
        return a

    @property
    def data(self):
        """A writable view of the owned rows over op2-rs's memory (runs what it depends on)."""
        return self._view(True, False)

    @property
    def data_ro(self):
        """A read-only view of the owned rows (runs the loops writing the Dat)."""
        return self._view(False, False)

    @property
    def data_with_halos(self):
        return self._view(True, True)

    @property
    def data_ro_with_halos(self):
        return self._view(False, True)

    def _used(self):
        # PyOP2's rule: a loop using the Dat makes arrays handed out before it read-only (ask
        # `data` again to write), so a write cannot slip past a queued loop unseen.
        if not self._views:
            return
        for w in self._views:
            a = w()
            if a is not None:
                a.flags.writeable = False
        self._views = []

    def zero(self):
        _call(self._native.zero)
        self._used()

    def copy(self, other):
        par_loop(_copy_kernel(self), self._dataset.set, self(READ), other(WRITE))

    def __len__(self):
        return 1

    def __iter__(self):
        yield self

    def __repr__(self):
        return "Dat(%r, %r, %r)" % (self._dataset.set, self.cdim, self._name)

    # --- Arithmetic: each is a loop over the Dat's set (recorded, like par_loop) ---------
    # As PyOP2 wrote them: C expressions, so C's conversions apply (an int Dat times 0.5 is
    # computed in double and stored back truncated), a scalar a Global of NumPy's type for it.

    def _operand(self, other):
        """(the operand's arg, its C type, whether a scalar), or None for an unknown type."""
        if isinstance(other, Dat):
            if other._dataset is not self._dataset and (
                    other._dataset.set is not self._dataset.set
                    or other._dataset.dim != self._dataset.dim):
                raise ValueError("Dats %s and %s are on different DataSets"
                                 % (self.name, other.name))
            return other(READ), _CTYPES[other.dtype.name], False
        if np.ndim(other) != 0 or isinstance(other, (str, bytes)):
            return None
        g = Global(1, other, _dtype(None, other))
        return g(READ), _CTYPES[g.dtype.name], True

    def _op(self, code, other):
        o = self._operand(other)
        if o is None:
            return NotImplemented
        arg, ctype, scalar = o
        new = Dat(self._dataset, None, self.dtype)
        par_loop(_arith_kernel(code, self.dtype.name, ctype, self.cdim, scalar, False),
                 self._dataset.set, self(READ), arg, new(WRITE))
        return new

    def _iop(self, code, other):
        o = self._operand(other)
        if o is None:
            return NotImplemented
        arg, ctype, scalar = o
        par_loop(_arith_kernel(code, self.dtype.name, ctype, self.cdim, scalar, True),
                 self._dataset.set, self(RW), arg)
        return self

    def __add__(self, other):
        return self._op(0, other)

    def __sub__(self, other):
        return self._op(1, other)

    def __mul__(self, other):
        return self._op(2, other)

    def __truediv__(self, other):
        return self._op(3, other)

    __div__ = __truediv__

    def __radd__(self, other):
        return self._op(0, other)

    def __rmul__(self, other):
        return self._op(2, other)

    def __rsub__(self, other):
        # scalar - a = (-a) + scalar
        neg = -self
        return neg._iop(0, other) if neg is not NotImplemented else NotImplemented

    def __neg__(self):
        return self._op(2, -1)

    def __pos__(self):
        return Dat(self)

    def __iadd__(self, other):
        return self._iop(0, other)

    def __isub__(self, other):
        return self._iop(1, other)

    def __imul__(self, other):
        return self._iop(2, other)

    def __itruediv__(self, other):
        return self._iop(3, other)

    __idiv__ = __itruediv__

    @property
    def norm(self):
        """The L2 norm of every value."""
        return _call(self._native.norm)

    def __eq__(self, other):
        return (isinstance(other, Dat) and self._dataset == other._dataset
                and self.dtype == other.dtype
                and np.array_equal(self.data_ro_with_halos, other.data_ro_with_halos))

    def __ne__(self, other):
        return not self == other

    __hash__ = object.__hash__

    @classmethod
    def fromhdf5(cls, dataset, f, name):
        """The Dat ``name`` of the open h5py file or group ``f``: ``total_size * cdim`` values
        of the file's type, with OP2's string attribute ``type`` (``KeyError`` without it)."""
        slot = f[name]
        kind = slot.attrs["type"]
        if isinstance(kind, bytes):
            kind = kind.decode()
        soa = str(kind).find(":soa") > 0
        return cls(dataset, slot[()], name=name, soa=soa)


_arith_kernels = {}


def _arith_kernel(code, dtype, other_ctype, cdim, scalar, in_place):
    """The kernel of Dat arithmetic ``code`` (0 + 1 - 2 * 3 /) on Dats of ``dtype`` and
    ``cdim`` with an operand of C type ``other_ctype`` (a one-value Global when ``scalar``)."""
    key = (code, dtype, other_ctype, cdim, scalar, in_place)
    k = _arith_kernels.get(key)
    if k is None:
        op = "+-*/"[code]
        c = _CTYPES[dtype]
        b = "b[0]" if scalar else "b[k]"
        name = "op2rs_%s_%s_%s_%d%s%s" % (["add", "sub", "mul", "div"][code], dtype,
                                          other_ctype.replace(" ", "_"), cdim,
                                          "_s" if scalar else "", "_i" if in_place else "")
        if in_place:
            src = ("void %s(%s *a, const %s *b) { for (int k = 0; k < %d; k++)"
                   " a[k] = (%s)(a[k] %s %s); }" % (name, c, other_ctype, cdim, c, op, b))
        else:
            src = ("void %s(const %s *a, const %s *b, %s *r) { for (int k = 0; k < %d; k++)"
                   " r[k] = (%s)(a[k] %s %s); }" % (name, c, other_ctype, c, cdim, c, op, b))
        k = _arith_kernels[key] = Kernel(src, name)
    return k


_copy_kernels = {}


def _copy_kernel(dat):
    key = (dat.cdim, dat.dtype.name)
    if key not in _copy_kernels:
        c = _CTYPES[dat.dtype.name]
        name = "op2rs_copy_%s_%d" % (dat.dtype.name, dat.cdim)
        _copy_kernels[key] = Kernel(
            "void %s(const %s *a, %s *b) { for (int k = 0; k < %d; k++) b[k] = a[k]; }"
            % (name, c, c, dat.cdim), name)
    return _copy_kernels[key]


_CTYPES = {"float64": "double", "float32": "float", "int32": "int", "uint32": "unsigned int",
           "int64": "long long", "uint64": "unsigned long"}


class _GlobalValues(np.ndarray):
    """``Global.data``: a copy of the values whose item assignments write the Global."""

    _global = None

    def __repr__(self):
        return repr(np.asarray(self))

    def __array_finalize__(self, obj):
        # Views and results are not the Global's: only the array `data` returned writes back.
        self._global = None

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        if self._global is not None:
            self._global.data = np.asarray(self)


def _dim(dim):
    """A Global's or Const's ``dim`` as a tuple of ints (``DimTypeError`` otherwise)."""
    if isinstance(dim, (int, np.integer)) and not isinstance(dim, bool):
        return (int(dim),)
    if isinstance(dim, (tuple, list)) and dim and all(
            isinstance(d, (int, np.integer)) and not isinstance(d, bool) for d in dim):
        return tuple(int(d) for d in dim)
    raise DimTypeError("dim must be an int or a tuple of ints, not %r" % (dim,))


class Global:
    """A value not tied to a set: ``Global(dim, data=None, dtype=None, name=None)``."""

    def __init__(self, dim, data=None, dtype=None, name=None):
        rt = _rt()
        self._dim = _dim(dim)
        self._name = _name("global", name)
        self._dtype = _dtype(dtype, data)
        cdim = int(np.prod(self._dim))
        vals = np.zeros(cdim, self._dtype) if data is None else _values(
            data, self._dtype, cdim, "Global %s" % self._name)
        self._native = _call(rt.decl_global, cdim, self._dtype.name, vals, self._name)

    dim = property(lambda self: self._dim)
    cdim = property(lambda self: int(np.prod(self._dim)))
    dtype = property(lambda self: self._dtype)
    name = property(lambda self: self._name)
    shape = property(lambda self: self._dim)

    def __call__(self, access, path=None, flatten=False):
        if access not in (READ, INC, MIN, MAX):
            raise ModeValueError("Global access must be READ, INC, MIN or MAX")
        return _Arg(self, access, None, False, (_KIND_GLOBAL, self._native, access._code))

    @property
    def data(self):
        """The values, after the loops writing them ran: an array whose item assignments
        (``g.data[0] = 1``, ``g.data[:] = 0``) go to the Global at once, as writes to PyOP2's
        own array did. Arrays derived from it (slices, results) are plain copies."""
        a = _call(self._native.value).reshape(self._dim).view(_GlobalValues)
        a._global = self
        return a

    @data.setter
    def data(self, value):
        _call(self._native.set_value, _values(value, self._dtype, self.cdim, "Global"))

    @property
    def data_ro(self):
        """The values, after the loops writing them ran (a read-only copy)."""
        a = _call(self._native.value).reshape(self._dim)
        a.flags.writeable = False
        return a

    def __repr__(self):
        return "Global(%r, %r)" % (self._dim, self._name)


class Const:
    """Data every kernel reads by name: ``Const(dim, data, name, dtype=None)``."""

    class NonUniqueNameError(ValueError):
        """The name is used by another Const."""

    def __init__(self, dim, data=None, name=None, dtype=None):
        rt = _rt()
        self._dim = _dim(dim)
        if name is not None and not isinstance(name, str):
            raise NameTypeError("name must be of type str")
        self._name = _name("const", name)
        self._dtype = _dtype(dtype, data)
        cdim = int(np.prod(self._dim))
        self._has_data = data is not None
        vals = np.zeros(cdim, self._dtype) if data is None else _values(
            data, self._dtype, cdim, "Const %s" % self._name)
        self._native = _call(rt.decl_const, cdim, self._dtype.name, vals, self._name)

    dim = property(lambda self: self._dim)
    cdim = property(lambda self: int(np.prod(self._dim)))
    dtype = property(lambda self: self._dtype)
    name = property(lambda self: self._name)

    @property
    def data(self):
        if not self._has_data:
            raise RuntimeError("Illegal access: no data associated with Const %s" % self._name)
        return _call(self._native.value).reshape(self._dim)

    @data.setter
    def data(self, value):
        # Unlike PyOP2, loops recorded before this still see the old values (op2-rs runs them
        # first, as if they had run at their call).
        _call(self._native.set_value, _values(value, self._dtype, self.cdim, "Const"))
        self._has_data = True

    def remove_from_namespace(self):
        """Frees the name (loops recorded before run first, with these values), so that a
        Const of that name may be declared again."""
        _call(_rt().remove_const, self._native)

    @classmethod
    def fromhdf5(cls, f, name):
        """The Const ``name`` of the open h5py file or group ``f``: an array whose shape is
        the Const's ``dim``."""
        slot = f[name]
        dim = slot.shape
        if len(dim) < 1:
            raise DimTypeError("Invalid dimension value %s" % (dim,))
        return cls(dim, slot[()], name)


# --- Kernels and loops -----------------------------------------------------------------------

_kernels = {}


class Kernel:
    """A C kernel ``name`` defined in ``code``; identical kernels are one object.
    ``include_dirs`` (PyOP2 0.10): the source is run through the C preprocessor with them at
    construction, as PyOP2 did, so ``#include "header.h"`` from those directories works on
    every backend. ``opts`` (PyOP2's COFFEE transformations) are accepted and not applied."""

    def __new__(cls, code, name, opts=None, include_dirs=None):
        if not isinstance(name, str):
            raise NameTypeError("name must be of type str")
        if not isinstance(code, str):
            raise KernelTypeError("op2rs kernels are C source strings (not pyop2.ir trees)")
        _rt()
        dirs = tuple(include_dirs or ())
        key = (code, name, dirs)
        k = _kernels.get(key)
        if k is None:
            k = object.__new__(cls)
            k._code, k._name = (_preprocess(code, dirs) if dirs else code), name
            k._native = _call(_op2.Kernel, k._code, name)
            k._per_point = k._native.trailing_ints() > 0
            _kernels[key] = k
        return k

    def __init__(self, code, name, opts=None, include_dirs=None):
        pass

    name = property(lambda self: self._name)
    code = property(lambda self: self._code)


def _preprocess(code, include_dirs):
    """``code`` through ``cpp -P`` with ``include_dirs``, as PyOP2 ran its kernels through cpp."""
    import subprocess
    cmd = [os.environ.get("CPP", "cpp"), "-P"] + ["-I%s" % d for d in include_dirs]
    try:
        r = subprocess.run(cmd, input=code, capture_output=True, text=True)
    except OSError as e:
        raise CompilationError("could not run the C preprocessor %r: %s" % (cmd[0], e)) from None
    if r.returncode != 0:
        raise CompilationError("the C preprocessor failed on the kernel:\n%s" % r.stderr)
    return r.stdout


def _lis_arg(a, per_point):
    """``dat(access, map[op2.i[n]])`` (or a Mat's pair of those) as the native module takes
    it, for this kernel."""
    if type(a.data) is Mat and a.data._sparsity.mixed:
        if per_point:
            raise NotImplementedError("per-point (0.8.2) kernels on mixed matrices are not in "
                                      "op2rs yet; once-per-element ones are")
        return (_KIND_MIXED_MAT, a.data._native, a.access._code,
                a.path[0].map._mixed_native(), a.path[1].map._mixed_native())
    if type(a.data) is Mat:
        rmap, cmap = a.path[0].map, a.path[1].map
        if per_point and a.flatten and a.data.sparsity.dims != (1, 1):
            # 0.8.2 called such kernels once per scalar entry (Ar*r by Ac*c points).
            raise NotImplementedError(
                "per-point (0.8.2) kernels on flattened block matrices (dims > 1) are not in "
                "op2rs yet")
        form = 1 if per_point else 0
        if not per_point and a.data.sparsity.dims != (1, 1):
            if not a.flatten:
                # PyOP2 0.8.3 to 0.10 assembled these wrongly (overlapping blocks); its
                # programs pass flatten=True.
                raise NotImplementedError(
                    "once-per-element kernels on block matrices need flatten=True (the "
                    "element matrix component by component)")
            form = 2
        return (_KIND_MAT, a.data._native, a.access._code, rmap._native, cmap._native, form)
    dat, m = a.data, a.path.map
    # PyOP2 0.8.2 called per point with trailing int indices; 0.8.3 to 0.10 once per element
    # with a local buffer. The kernel's parameters say which.
    if per_point:
        if a.flatten and dat.cdim > 1:
            raise NotImplementedError(
                "per-point (0.8.2) kernels over flattened Dats of dim > 1 are not in op2rs yet")
        how = _ENTRIES
    else:
        how = _BUFFER_FLAT if a.flatten else _BUFFER
    return (_KIND_DAT, dat._native, a.access._code, how, m._native, 0)


def par_loop(kernel, iterset, *args):
    """Runs ``kernel`` over ``iterset`` with ``args`` (lazily, like PyOP2)."""
    rt = _state["runtime"] or _rt()
    if type(kernel) is not Kernel:
        raise KernelTypeError("kernel must be a Kernel")
    if not isinstance(iterset, Set):
        raise SetTypeError("iterset must be a Set")
    native = []
    per_point = None
    shape = None
    # Over a Subset, args are on (and maps from) its superset; over an ExtrudedSet (or a Subset
    # of one), on it or its parent.
    whole = iterset._superset if type(iterset) is Subset else iterset
    parent = whole._parent if type(whole) is ExtrudedSet else whole
    for a in args:
        if type(a) is not _Arg:
            raise TypeError("par_loop args are built by calling a Dat or Global with an access")
        s = a.iterset
        if s is not None and s is not whole and s is not parent and s is not iterset:
            if a.path is None:
                raise MapValueError("Iterset of direct arg does not match par_loop iterset.")
            raise MapValueError("Iterset of arg map does not match par_loop iterset.")
        if a.lis:
            if per_point is None:
                per_point = kernel._per_point
            # Every local iteration space arg of a loop has one shape (PyOP2's extents).
            if type(a.data) is Mat:
                ext = (a.path[0].map.arity, a.path[1].map.arity)
            else:
                ext = (a.path.map.arity * (a.data.cdim if a.flatten else 1),)
            if shape is None:
                shape = ext
            elif shape != ext:
                raise IndexValueError(
                    "Mismatching iteration space size for argument %s" % (a.data.name,))
            native.append(_lis_arg(a, per_point))
        else:
            native.append(a.native)
    target = iterset._native
    if iterset._native_iter is not None and any(a.path is not None for a in args):
        # Extruded: layer by layer. PyOP2 ran a loop of direct args once per column.
        target = iterset._native_iter
    try:
        pending = rt.par_loop(kernel._native, target, native)
    except _op2.Op2Failure as e:
        _raise(e)
    for a in args:
        d = a.data
        if type(d) is Dat and d._views:
            d._used()
        elif type(d) is MixedDat:
            for c in d._dats:
                c._used()
    limit = configuration._values["lazy_max_trace_length"]
    if pending and limit > 0 and rt.pending() >= limit:
        # PyOP2's bound on the queue: past it, loops run as they come.
        rt.flush()
    return ParLoop(kernel, iterset, args)


class ParLoop:
    """What ``par_loop`` returns, as in PyOP2: the loop's ``kernel``, ``iterset`` and
    ``args``; ``compute()`` runs it now (with what is pending before it)."""

    __slots__ = ("kernel", "iterset", "args")

    def __init__(self, kernel, iterset, args):
        self.kernel, self.iterset, self.args = kernel, iterset, args

    it_space = property(lambda self: self.iterset)

    def compute(self):
        _call(_rt().flush)


# --- Sparsities, matrices and solvers (op2-la) -------------------------------------------

def _as_dataset(d):
    if isinstance(d, Set):
        return d ** 1
    if not isinstance(d, DataSet):
        raise DataSetTypeError("Sparsity dsets must be Sets or DataSets")
    return d


_sparsities = {}


class Sparsity:
    """The pattern of a matrix: ``Sparsity(dsets, maps, name=None)`` with ``dsets`` one
    (Data)Set or a (rows, columns) pair, and ``maps`` one Map (rows and columns), a (row map,
    column map) pair, or a list of pairs whose patterns are joined. Asking again with the same
    objects gives the same Sparsity."""

    def __new__(cls, dsets, maps, name=None):
        _rt()
        key = (_key(dsets), _key(maps))
        sp = _sparsities.get(key)
        if sp is not None:
            return sp
        sp = object.__new__(cls)
        sp._build(dsets, maps, name)
        _sparsities[key] = sp
        return sp

    def __init__(self, dsets, maps, name=None):
        pass

    def _build(self, dsets, maps, name):
        if isinstance(dsets, (MixedSet, MixedDataSet)) or (
                isinstance(dsets, (tuple, list)) and dsets
                and isinstance(dsets[0], (MixedSet, MixedDataSet))):
            return self._build_mixed(dsets, maps, name)
        if isinstance(dsets, (Set, DataSet)):
            dsets = (dsets, dsets)
        if not isinstance(dsets, (tuple, list)) or len(dsets) != 2:
            raise DataSetTypeError("dsets must be a Set, a DataSet or a (rows, columns) pair")
        rows, cols = (_as_dataset(d) for d in dsets)
        if isinstance(maps, Map):
            pairs = [(maps, maps)]
        elif isinstance(maps, (tuple, list)) and len(maps) == 2 and all(
                isinstance(m, Map) for m in maps):
            pairs = [tuple(maps)]
        elif isinstance(maps, (tuple, list)):
            pairs = []
            for p in maps:
                if not (isinstance(p, (tuple, list)) and len(p) == 2
                        and all(isinstance(m, Map) for m in p)):
                    raise MapTypeError("Sparsity maps must be Maps or (row map, column map) pairs")
                pairs.append(tuple(p))
        else:
            raise MapTypeError("Sparsity maps must be a Map, a pair of Maps or a list of pairs")
        if name is not None and not isinstance(name, str):
            raise NameTypeError("name must be of type str")
        for r, c in pairs:
            if r._native is None or c._native is None:
                raise MapValueError("Unpopulated map values when trying to build sparsity.")
            if r.toset is not rows.set:
                raise RuntimeError("Row map %s goes to %s, not the row set %s"
                                   % (r.name, r.toset.name, rows.set.name))
            if c.toset is not cols.set:
                raise RuntimeError("Column map %s goes to %s, not the column set %s"
                                   % (c.name, c.toset.name, cols.set.name))
            if r.iterset is not c.iterset:
                raise RuntimeError("Iterset of both maps in a pair must be the same")
        # PyOP2 de-duplicates and sorts the pairs.
        seen, unique = set(), []
        for p in pairs:
            if (id(p[0]), id(p[1])) not in seen:
                seen.add((id(p[0]), id(p[1])))
                unique.append(p)
        self._dsets = (rows, cols)
        self._maps = unique
        self._name = _name("sparsity", name)
        self._native = _call(_op2.Sparsity, [(r._native, c._native) for r, c in unique],
                             (rows.cdim, cols.cdim), self._name)

    def _build_mixed(self, dsets, maps, name):
        if not isinstance(dsets, (tuple, list)):
            dsets = (dsets, dsets)
        rows, cols = (d if isinstance(d, MixedDataSet) else MixedDataSet(d) for d in dsets)
        if isinstance(maps, MixedMap):
            maps = (maps, maps)
        if not (isinstance(maps, (tuple, list)) and len(maps) == 2
                and all(isinstance(m, MixedMap) for m in maps)):
            raise MapTypeError("a mixed Sparsity needs a MixedMap or a (rows, columns) pair")
        if any(c != 1 for c in rows.cdim + cols.cdim):
            raise NotImplementedError("mixed sparsities of components with dim > 1 are not in "
                                      "op2rs yet")
        if maps[0].toset != rows.set or maps[1].toset != cols.set:
            raise RuntimeError("the MixedMaps do not go to the Sparsity's MixedDataSets")
        if name is not None and not isinstance(name, str):
            raise NameTypeError("name must be of type str")
        self._dsets = (rows, cols)
        self._maps = [tuple(maps)]
        self._name = _name("sparsity", name)
        self._native = _call(_op2.mixed_sparsity, maps[0]._mixed_native(),
                             maps[1]._mixed_native(), self._name)

    mixed = property(lambda self: isinstance(self._dsets[0], MixedDataSet))
    dsets = property(lambda self: self._dsets)
    maps = property(lambda self: list(self._maps))
    rmaps = property(lambda self: [r for r, _ in self._maps])
    cmaps = property(lambda self: [c for _, c in self._maps])
    dims = property(lambda self: (1, 1) if self.mixed
                    else (self._dsets[0].cdim, self._dsets[1].cdim))
    shape = property(lambda self: (len(self._dsets[0]), len(self._dsets[1])) if self.mixed
                     else (1, 1))
    nrows = property(lambda self: _owned(self._dsets[0]))
    ncols = property(lambda self: _owned(self._dsets[1]))
    name = property(lambda self: self._name)
    rowptr = property(lambda self: self._native.rowptr())
    colidx = property(lambda self: self._native.colidx())
    nnz = property(lambda self: self._native.row_counts())
    onnz = property(lambda self: np.zeros_like(self._native.row_counts()))
    nz = property(lambda self: self._native.nnz)
    onz = property(lambda self: 0)

    def __contains__(self, pair):
        return any(r is pair[0] and c is pair[1] for r, c in self._maps)

    def __repr__(self):
        return "Sparsity(%r, %r, %r)" % (self._dsets, self._maps, self._name)


def _owned(dset):
    """A (Mixed)DataSet's owned elements."""
    if isinstance(dset, MixedDataSet):
        return sum(d.set.size for d in dset.split)
    return dset.set.size


def _key(x):
    """Identity of the objects a Sparsity is made from (PyOP2 hashed them by identity). Every
    object named here is kept alive by the Sparsity, so its id cannot be reused: a MixedSet is
    named by its sets (the Sparsity keeps those, not the MixedSet)."""
    if isinstance(x, (tuple, list)):
        return tuple(_key(y) for y in x)
    if isinstance(x, MixedSet):
        return ("mixed set",) + tuple(id(s) for s in x.split)
    return id(x)


class Mat:
    """A matrix on a Sparsity: ``Mat(sparsity, dtype=None, name=None)``, float64 values."""

    def __init__(self, sparsity, dtype=None, name=None):
        _rt()
        if not isinstance(sparsity, Sparsity):
            raise SparsityTypeError("sparsity must be a Sparsity")
        if name is not None and not isinstance(name, str):
            raise NameTypeError("name must be of type str")
        dt = np.dtype(np.float64 if dtype is None else dtype)
        if dt != np.float64:
            raise RuntimeError("op2rs matrices hold float64 values, not %s" % dt)
        self._sparsity = sparsity
        self._name = _name("mat", name)
        self._native = _op2.Mat(sparsity._native, self._name)
        self._dtype = dt

    sparsity = property(lambda self: self._sparsity)
    dims = property(lambda self: self._sparsity.dims)
    dtype = property(lambda self: self._dtype)
    name = property(lambda self: self._name)

    def __call__(self, access, path, flatten=False):
        if access is not INC and access is not WRITE:
            raise ModeValueError("Mat access must be INC or WRITE")
        if not isinstance(path, (tuple, list)) or len(path) != 2:
            raise ValueError("A Mat arg needs a (row map[op2.i[0]], column map[op2.i[1]]) path")
        if not all(type(p) is _MapPath for p in path):
            raise TypeError("A Mat arg's path is two map[op2.i[n]] items")
        rmap, cmap = path[0].map, path[1].map
        if not any(_same_map(r, rmap) and _same_map(c, cmap) for r, c in self._sparsity._maps):
            raise MapValueError("Path maps not in sparsity maps")
        if self._sparsity.mixed and flatten:
            raise MatTypeError("Mats on mixed spaces cannot be flattened")
        return _Arg(self, access, tuple(path), flatten, None, rmap.iterset, True)

    def zero(self):
        """Sets every entry to zero (the pattern stays)."""
        self._native.zero()

    def zero_rows(self, rows, diag_val=1.0):
        """Zeroes scalar ``rows`` (a Subset's indices or an iterable of row numbers) and puts
        ``diag_val`` on their diagonal."""
        if hasattr(rows, "indices"):
            rows = rows.indices
        _call(self._native.zero_rows, [int(r) for r in np.asarray(rows).ravel()],
                 float(diag_val))

    def set_diagonal(self, vec):
        """Sets the diagonal from a Dat on the rows."""
        r, c = self._sparsity.dsets
        if r is not c and (r.set is not c.set or r.cdim != c.cdim):
            raise MatTypeError("Cannot set diagonal of non-square matrix")
        if not isinstance(vec, Dat):
            raise TypeError("Can only set diagonal from a Dat")
        v = np.asarray(vec.data_ro, dtype=np.float64).ravel()
        rows = self._native_rows()
        if len(v) != rows:
            raise ValueError("set_diagonal needs %d values (one per row), %s has %d"
                             % (rows, vec.name, len(v)))
        _call(self._native.diagonal_entries, list(range(len(v))), v.tolist(), False)

    def _native_rows(self):
        return self._sparsity._native.shape[0]

    def inc_local_diagonal_entries(self, rows, diag_val=1.0):
        """Adds ``diag_val`` to the diagonal entries of scalar ``rows``."""
        rows = [int(r) for r in np.asarray(rows).ravel()]
        _call(self._native.diagonal_entries, rows, [float(diag_val)] * len(rows), True)

    @property
    def values(self):
        """The whole matrix as a dense NumPy array (a copy)."""
        return self._native.dense()

    @property
    def array(self):
        """The stored values in CSR order (a copy; see the sparsity's rowptr and colidx)."""
        return self._native.array()

    @property
    def handle(self):
        raise NotImplementedError("op2rs matrices are op2-la's, not PETSc's: no petsc4py handle")

    def __mul__(self, v):
        if not isinstance(v, Dat):
            raise TypeError("Can only multiply a Mat by a Dat")
        y = Dat(self._sparsity.dsets[0])
        _call(self._native.mult, v._native, y._native)
        return y

    def __repr__(self):
        return "Mat(%r, %r)" % (self._sparsity, self._name)


def _same_map(a, b):
    """PyOP2 accepts value-equal maps in a Mat arg, not only the sparsity's own objects."""
    if a is b:
        return True
    if isinstance(a, MixedMap) or isinstance(b, MixedMap):
        return a == b
    return (a.iterset is b.iterset and a.toset is b.toset and a.arity == b.arity
            and a._native is not None and b._native is not None
            and np.array_equal(a._values, b._values))


_SOLVER_DEFAULTS = {
    "ksp_type": "cg",
    "pc_type": "jacobi",
    "ksp_rtol": 1.0e-7,
    "ksp_atol": 1.0e-50,
    "ksp_divtol": 1.0e+4,
    "ksp_max_it": 10000,
    "ksp_monitor": False,
    "ksp_gmres_restart": 30,
    "plot_convergence": False,
    "plot_prefix": "",
    "error_on_nonconvergence": True,
}


class Solver:
    """A Krylov solver: ``Solver(parameters=None, **kwargs)`` with PyOP2's parameter names
    (``ksp_type``, ``pc_type``, ``ksp_rtol``, ...), solving with op2-la."""

    _count = 0

    def __init__(self, parameters=None, **kwargs):
        if parameters and kwargs:
            raise RuntimeError("Solver options are set either by parameters or kwargs")
        self.parameters = dict(_SOLVER_DEFAULTS)
        self.parameters.update(parameters or kwargs)
        Solver._count += 1
        self.reason = None
        self.iterations = 0
        self.residual = None

    def update_parameters(self, parameters):
        self.parameters.update(parameters)

    def solve(self, A, x, b):
        """Solves ``A x = b`` into ``x``."""
        if not isinstance(A, Mat):
            raise MatTypeError("A must be a Mat")
        if not isinstance(x, (Dat, MixedDat)) or not isinstance(b, (Dat, MixedDat)):
            raise DatTypeError("x and b must be Dats")
        p = self.parameters
        options = _call(_op2.SolverOptions, str(p["ksp_type"]), str(p["pc_type"]),
                        float(p["ksp_rtol"]), float(p["ksp_atol"]), float(p["ksp_divtol"]),
                        int(p["ksp_max_it"]), int(p["ksp_gmres_restart"]),
                        bool(p.get("ksp_initial_guess_nonzero", False)))
        if isinstance(x, MixedDat) or isinstance(b, MixedDat):
            if not (isinstance(x, MixedDat) and isinstance(b, MixedDat)):
                raise DatTypeError("a mixed solve needs MixedDats for x and b")
            outcome = _call(_op2.solve_mixed, A._native, x._mixed_native(), b._mixed_native(),
                            options)
        else:
            outcome = _call(A._native.solve, x._native, b._native, options)
        for d in x:
            d._used()
        self._report(p, *outcome)

    def _report(self, p, converged, reason, its, res):
        self.reason, self.iterations, self.residual = reason, its, res
        if p.get("ksp_monitor"):
            print("  %s: %d iterations, residual %g" % (reason, its, res))
        if not converged:
            msg = "KSP Solver failed to converge in %d iterations: %s (residual %g)" % (
                its, reason, res)
            if p.get("error_on_nonconvergence", True):
                raise RuntimeError(msg)
            import warnings
            warnings.warn(msg)


def solve(M, x, b):
    """Solves ``M x = b`` into ``x`` with a default Solver."""
    if not isinstance(M, Mat):
        raise MatTypeError("M must be a Mat")
    if not isinstance(x, (Dat, MixedDat)) or not isinstance(b, (Dat, MixedDat)):
        raise DatTypeError("x and b must be Dats")
    Solver().solve(M, x, b)


# --- Across MPI ranks (op2rs's own: PyOP2 left partitioning to its callers) -----------------

class _Comm:
    """The ranks the runtime spans: ``rank`` and ``size`` (1 process before ``init``)."""

    @property
    def rank(self):
        rt = _state["runtime"]
        return rt.rank if rt is not None else 0

    @property
    def size(self):
        rt = _state["runtime"]
        return rt.ranks if rt is not None else 1


class _MPI:
    """PyOP2's ``op2.MPI``: ``comm`` (with ``rank`` and ``size``), ``parallel`` and
    ``rank_zero``. op2 runs on MPI's world under ``mpirun``. A program that imported mpi4py
    gets mpi4py's ``COMM_WORLD`` as ``comm`` (op2 then shares the MPI mpi4py started);
    otherwise ``comm`` is op2rs's own, with ``rank`` and ``size``."""

    _own = _Comm()

    @property
    def comm(self):
        m = sys.modules.get("mpi4py.MPI")
        return m.COMM_WORLD if m is not None else self._own

    @comm.setter
    def comm(self, comm):
        # PyOP2 took any communicator; op2rs runs on the world only.
        size = getattr(comm, "size", None)
        if size is None and hasattr(comm, "tompi4py"):
            size = comm.tompi4py().size
        if size is None:
            raise TypeError("MPI.comm needs an mpi4py communicator")
        if size != self._own.size:
            raise NotImplementedError("op2rs runs on MPI's world; a communicator of %d of its "
                                      "%d ranks is not supported" % (size, self._own.size))

    @property
    def parallel(self):
        return self.comm.size > 1

    def rank_zero(self, f):
        def on_rank_zero(*args, **kwargs):
            if self.comm.rank == 0:
                return f(*args, **kwargs)
        return on_rank_zero


MPI = _MPI()


class _GlobalSet:
    """A set of a DistributedMesh (global numbering), before partitioning."""

    def __init__(self, mesh, index, size, name):
        self._mesh, self._index, self.size, self.name = mesh, index, size, name

    def __pow__(self, dim):
        return _GlobalDataSet(self, dim)


class _GlobalDataSet:
    def __init__(self, set, dim):
        self.set = set
        self.dim = (int(dim),) if isinstance(dim, (int, np.integer)) else tuple(dim)
        self.cdim = int(np.prod(self.dim))


class _GlobalMap:
    def __init__(self, mesh, index, iterset, toset, arity, name):
        self._mesh, self._index = mesh, index
        self.iterset, self.toset, self.arity, self.name = iterset, toset, arity, name


class _GlobalDat:
    def __init__(self, mesh, index, dataset, dtype, name):
        self._mesh, self._index = mesh, index
        self.dataset, self.dtype, self.name = dataset, dtype, name


class DistributedMesh:
    """A mesh declared in global numbering on every rank and partitioned across them (op2-mpi;
    an op2rs extension: PyOP2 programs built their halos themselves). ``input`` says who hands
    in the values: ``"everywhere"`` (every rank, the same values) or ``"root"`` (rank 0; the
    others pass ``None``).

    ``Set(size, name)``, ``Map(iterset, toset, arity, values, name)`` and ``Dat(set ** dim,
    data, dtype, name)`` declare; ``partition(...)`` returns a :class:`LocalMesh` whose
    ``mesh[x]`` is this rank's ``op2.Set``, ``op2.Map`` or ``op2.Dat`` for ``x``. Outside
    ``mpirun`` it is one rank holding everything."""

    def __init__(self, input="everywhere"):
        if not getattr(_op2, "HAS_MPI", False):
            raise NotImplementedError(
                "this op2rs was built without MPI: MATURIN_PEP517_ARGS='--features mpi' "
                "pip install ./python")
        self._native = _op2.MeshBuilder(input)
        self._input = input
        self._root = input == "root"

    def _values_here(self, values, dtype, count, what):
        if self._root and MPI.comm.rank != 0:
            return np.zeros(0, dtype)
        return _values(values, dtype, count, what)

    def Set(self, size, name=None):
        name = _name("set", name)
        return _GlobalSet(self, _call(self._native.decl_set, int(size), name), int(size), name)

    def Map(self, iterset, toset, arity, values, name=None):
        name = _name("map", name)
        v = self._values_here(values, np.int32, iterset.size * arity, "Map %s" % name)
        i = _call(self._native.decl_map, iterset._index, toset._index, int(arity), v, name)
        return _GlobalMap(self, i, iterset, toset, int(arity), name)

    def Dat(self, dataset, data=None, dtype=None, name=None):
        if isinstance(dataset, _GlobalSet):
            dataset = dataset ** 1
        name = _name("dat", name)
        dt = _dtype(dtype, data)
        count = dataset.set.size * dataset.cdim
        v = (np.zeros(count if not (self._root and MPI.comm.rank != 0) else 0, dt)
             if data is None else self._values_here(data, dt, count, "Dat %s" % name))
        i = _call(self._native.decl_dat, dataset.set._index, dataset.cdim, dt.name, v, name)
        return _GlobalDat(self, i, dataset, dt, name)

    def partition(self, partitioner="metis", map=None, coords=None, renumber=False):
        """Collective: partitions with ``metis`` (the graph ``map`` induces on its target
        set), ``geometric`` (recursive coordinate bisection of ``coords``' set) or
        ``blocks``, and declares each rank's part."""
        by = map._index if map is not None else (coords._index if coords is not None else None)
        local = _call(self._native.partition, _rt(), partitioner, by, bool(renumber))
        return LocalMesh(local)


class LocalMesh:
    """This rank's part of a partitioned DistributedMesh: ``mesh[x]`` for a set, map or Dat
    of it; ``gather(dat)`` (collective) the owned values of every rank in global order on
    rank 0 (``None`` elsewhere); ``global_ids(set)``; ``report``."""

    def __init__(self, native):
        self._native = native
        self._objects = {}

    def __getitem__(self, x):
        got = self._objects.get(id(x))
        if got is not None:
            return got[1]
        if isinstance(x, _GlobalSet):
            o = Set.__new__(Set)
            o._native, o._name, o._halo, o._layers = self._native.set(x._index), x.name, None, None
        elif isinstance(x, _GlobalMap):
            o = Map.__new__(Map)
            o._iterset, o._toset = self[x.iterset], self[x.toset]
            o._arity, o._name, o._offset, o._parent = x.arity, x.name, None, None
            o._native = self._native.map(x._index)
            o._values = o._native.values()
        elif isinstance(x, _GlobalDat):
            o = Dat.__new__(Dat)
            o._dataset = DataSet(self[x.dataset.set], x.dataset.dim)
            o._name, o._dtype = x.name, x.dtype
            o._native = self._native.dat(x._index)
            o._views, o._args = [], {}
        else:
            raise TypeError("a LocalMesh holds the sets, maps and Dats of its DistributedMesh")
        self._objects[id(x)] = (x, o)
        return o

    def gather(self, dat):
        v = _call(self._native.gather, dat._native)
        if v is None:
            return None
        return v.reshape(-1) if dat.cdim == 1 else v.reshape((-1,) + dat.dim)

    def global_ids(self, set):
        for x, o in self._objects.values():
            if o is set:
                return self._native.global_ids(x._index)
        raise ValueError("not a set of this mesh")

    @property
    def report(self):
        return self._native.report()


# --- Mixed spaces -----------------------------------------------------------------------------

# op2-rs's mixed set of each tuple of sets: MixedSets are equal by their components (PyOP2 made
# new ones freely: a MixedMap's toset, a MixedDataSet's set), and a mixed Dat must live on the
# very mixed set its map goes to.
_mixed_sets = {}


def _mixed_native(sets):
    key = tuple(id(s) for s in sets)
    got = _mixed_sets.get(key)
    if got is None:
        name = "mixed_%s" % "_".join(s.name for s in sets)
        got = (tuple(sets), _call(_op2.decl_mixed_set, _rt(), [s._native for s in sets], name))
        _mixed_sets[key] = got
    return got[1]


class _Parts:
    """What the mixed classes share: components (``_parts``) that index, count, iterate and
    compare as a tuple (PyOP2: equality by components)."""

    _parts = ()

    split = property(lambda self: self._parts)

    def __getitem__(self, i):
        return self._parts[i]

    def __len__(self):
        return len(self._parts)

    def __iter__(self):
        return iter(self._parts)

    def __eq__(self, other):
        return type(other) is type(self) and self._parts == other._parts

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(tuple(id(p) for p in self._parts))


class MixedSet(_Parts):
    """An ordered tuple of Sets: ``MixedSet(sets)``."""

    def __init__(self, sets):
        _rt()
        sets = tuple(sets)
        if not sets or not all(isinstance(s, Set) for s in sets):
            raise TypeError("All components of a MixedSet must be Sets")
        if len({s.layers for s in sets}) > 1:
            raise AssertionError("All components of a MixedSet must have the same layers")
        self._parts = self._sets = sets

    def _mixed_native(self):
        return _mixed_native(self._sets)

    core_size = property(lambda self: sum(s.core_size for s in self._sets))
    size = property(lambda self: sum(s.size for s in self._sets))
    exec_size = property(lambda self: sum(s.exec_size for s in self._sets))
    total_size = property(lambda self: sum(s.total_size for s in self._sets))
    sizes = property(lambda self: (self.core_size, self.size, self.exec_size, self.total_size))
    name = property(lambda self: tuple(s.name for s in self._sets))
    layers = property(lambda self: self._sets[0].layers)

    @property
    def halo(self):
        h = tuple(s.halo for s in self._sets)
        return None if all(x is None for x in h) else h

    def __pow__(self, dims):
        return MixedDataSet(self._sets, dims)

    def __repr__(self):
        return "MixedSet(%r)" % (self._sets,)


class MixedDataSet(_Parts):
    """A DataSet per component: ``MixedDataSet(mixed_set)``, ``(sets, [d1, ..., dn])``,
    ``(sets, d)`` or ``([dataset_or_set, ...])``."""

    def __init__(self, arg, dims=None):
        if isinstance(arg, MixedSet):
            arg = arg.split
        arg = tuple(arg)
        if dims is None:
            dsets = tuple(a ** 1 if isinstance(a, Set) else a for a in arg)
        else:
            if isinstance(dims, (int, np.integer)):
                dims = [dims] * len(arg)
            dims = list(dims)
            if len(dims) != len(arg):
                raise ValueError("Got MixedSet of %d Sets but %d dims" % (len(arg), len(dims)))
            dsets = tuple(s ** d for s, d in zip(arg, dims))
        if not all(isinstance(d, DataSet) for d in dsets):
            raise TypeError("All components of a MixedDataSet must be DataSets")
        self._parts = self._dsets = dsets
    dim = property(lambda self: tuple(d.dim for d in self._dsets))
    cdim = property(lambda self: tuple(d.cdim for d in self._dsets))
    name = property(lambda self: tuple(d.name for d in self._dsets))
    set = property(lambda self: MixedSet(d.set for d in self._dsets))


class MixedMap(_Parts):
    """One Map per component of a MixedSet, from one iteration set: ``MixedMap(maps)``."""

    def __init__(self, maps):
        _rt()
        maps = tuple(maps)
        if not maps or not all(isinstance(m, Map) for m in maps):
            raise TypeError("All components of a MixedMap must be Maps")
        if len({id(m.iterset) for m in maps}) > 1:
            raise MapTypeError("All maps in a MixedMap need to share the same iterset")
        self._parts = self._maps = maps
        self._native = None
        self._paths = None

    def _mixed_native(self):
        if self._native is None:
            to = _mixed_native([m.toset for m in self._maps])
            name = "mixed_%s" % "_".join(m.name for m in self._maps)
            self._native = _call(_op2.decl_mixed_map, _rt(), to,
                                 [m._native for m in self._maps], name)
        return self._native

    iterset = property(lambda self: self._maps[0].iterset)
    toset = property(lambda self: MixedSet(m.toset for m in self._maps))
    arity = property(lambda self: sum(m.arity for m in self._maps))
    arities = property(lambda self: tuple(m.arity for m in self._maps))
    arange = property(lambda self: tuple(np.cumsum((0,) + self.arities).tolist()))
    values = property(lambda self: tuple(m.values for m in self._maps))
    values_with_halo = property(lambda self: tuple(m.values_with_halo for m in self._maps))
    name = property(lambda self: tuple(m.name for m in self._maps))
    offset = property(lambda self: tuple(m.offset for m in self._maps))

    def __getitem__(self, index):
        if isinstance(index, IterationIndex):
            if index.index not in (0, 1):
                raise IndexValueError("op2.i[n] with n 0 or 1")
            return _MapPath(self, index)
        raise NotImplementedError("MixedMap[k] with an int k is not in op2rs; use op2.i")


class MixedDat(_Parts):
    """One Dat per component: ``MixedDat(mixed_dataset_or_dats)``; items that are Dats are used
    as they are, Sets and DataSets get a new Dat."""

    def __init__(self, mdset_or_dats):
        _rt()
        if isinstance(mdset_or_dats, MixedDataSet):
            mdset_or_dats = mdset_or_dats.split
        dats = tuple(d if isinstance(d, Dat) else Dat(d) for d in mdset_or_dats)
        if len({d.dtype for d in dats}) > 1:
            raise DataValueError("MixedDat with different dtypes is not supported")
        self._parts = self._dats = dats
        self._native = None

    def _mixed_native(self):
        if self._native is None:
            to = _mixed_native([d.dataset.set for d in self._dats])
            self._native = _call(_op2.MixedDat, to, [d._native for d in self._dats])
        return self._native

    def __call__(self, access, path=None, flatten=False):
        if access is not READ and access is not WRITE and access is not RW and access is not INC:
            raise ModeValueError("Dat access must be READ, WRITE, RW or INC")
        if flatten:
            raise DatTypeError("MixedDats cannot be flattened")
        if type(path) is _MapPath:
            raise NotImplementedError("mixed_dat(access, mixed_map[op2.i[0]]) is not in op2rs "
                                      "yet; pass the MixedMap for one pointer array")
        if not isinstance(path, MixedMap):
            raise MapTypeError("a MixedDat is used through a MixedMap")
        if path.toset != MixedSet(d.dataset.set for d in self._dats):
            raise MapValueError("To Set of MixedMap does not match Set of MixedDat.")
        native = (_KIND_MIXED_DAT, self._mixed_native(), access._code, path._mixed_native())
        return _Arg(self, access, path, False, native, path.iterset)

    dtype = property(lambda self: self._dats[0].dtype)
    dataset = property(lambda self: MixedDataSet(d.dataset for d in self._dats))
    soa = property(lambda self: tuple(False for _ in self._dats))
    data = property(lambda self: tuple(d.data for d in self._dats))
    data_ro = property(lambda self: tuple(d.data_ro for d in self._dats))
    data_with_halos = property(lambda self: tuple(d.data_with_halos for d in self._dats))
    data_ro_with_halos = property(lambda self: tuple(d.data_ro_with_halos for d in self._dats))
    name = property(lambda self: tuple(d.name for d in self._dats))

    def zero(self):
        for d in self._dats:
            d.zero()

    def __eq__(self, other):
        # By values, as Dats compare.
        return isinstance(other, MixedDat) and len(self) == len(other) and all(
            a == b for a, b in zip(self._dats, other._dats))

    __hash__ = object.__hash__


# --- Logging (PyOP2's logger "pyop2") ---------------------------------------------------------

_logger = logging.getLogger("pyop2")
_handler = logging.StreamHandler()
_logger.addHandler(_handler)


def set_log_level(level):
    """The ``pyop2`` logger's level: a name (``"WARN"``, ``"INFO"``, ...) or a number."""
    if isinstance(level, str) and level.upper() == "WARN":
        level = "WARNING"
    _logger.setLevel(level.upper() if isinstance(level, str) else level)
    prefix = "[%d] " % MPI.comm.rank if MPI.comm.size > 1 else ""
    _handler.setFormatter(logging.Formatter(prefix + "%(name)s:%(levelname)s %(message)s"))


def debug(msg, *args, **kwargs):
    _logger.debug(msg, *args, **kwargs)


def info(msg, *args, **kwargs):
    _logger.info(msg, *args, **kwargs)


def warning(msg, *args, **kwargs):
    _logger.warning(msg, *args, **kwargs)


def error(msg, *args, **kwargs):
    _logger.error(msg, *args, **kwargs)


def critical(msg, *args, **kwargs):
    _logger.critical(msg, *args, **kwargs)


class Halo:
    """PyOP2's hand-built halo (``Halo(sends, receives, comm=None, gnn2unn=None)``). op2rs
    builds halos itself: declare the mesh in global numbering with :class:`DistributedMesh`
    and partition it."""

    def __init__(self, sends, receives, comm=None, gnn2unn=None):
        raise NotImplementedError(
            "hand-built halos are not in op2rs; use op2.DistributedMesh, which partitions a "
            "mesh and builds each rank's halos")
