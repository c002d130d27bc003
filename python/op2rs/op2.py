"""PyOP2's ``op2`` module over op2-rs: the lifecycle, sets, maps, data, kernels and loops as
PyOP2 0.8 to 0.10 documented them. Argument forms and PyOP2's exceptions live here; the runtime,
the generated code and the data are op2-rs's (``op2rs._op2``)."""

import weakref

import numpy as np

from . import _op2

__all__ = [
    "READ", "WRITE", "RW", "INC", "MIN", "MAX", "i",
    "init", "exit", "initialised",
    "Set", "DataSet", "Map", "Dat", "Global", "Const", "Kernel", "par_loop",
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
_state = {"runtime": None, "backend": None, "finalised": False, "config": {}}


def init(**kwargs):
    """Starts op2-rs with ``backend`` (``sequential``, ``openmp``, ``opencl``, ``cuda``, or an
    op2-rs name such as ``cuda-emulator``) and ``lazy_evaluation``; other keywords are kept."""
    if _state["finalised"]:
        raise RuntimeError("op2.exit has been called")
    backend = kwargs.get("backend")
    if "lazy_evaluation" in kwargs and not isinstance(kwargs["lazy_evaluation"], bool):
        raise ConfigurationError("lazy_evaluation must be a bool")
    if _state["runtime"] is not None:
        if backend is not None and backend != _state["backend"]:
            raise RuntimeError("Changing the backend is not possible once set.")
        _state["config"].update(kwargs)
        return
    name = backend or "sequential"
    rs_name = _BACKENDS.get(name, name)
    # A backend that cannot start is PyOP2's ImportError, and leaves the configuration as it was.
    _state["runtime"] = _call(_op2.PyRuntime, rs_name, kwargs.get("lazy_evaluation", True))
    _state["config"].update(kwargs)
    _state["backend"] = name


def exit():
    """Finalises op2. Unlike PyOP2, which dropped them, loops still pending run first (op2-rs
    finishes what was recorded when its runtime goes)."""
    if _state["runtime"] is not None:
        _state["finalised"] = True
    _state["runtime"] = None
    _state["config"] = {}


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
    """A set of mesh entities: ``Set(size)`` or ``Set([core, owned, exec_halo, total])``."""

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
        if layers is not None and layers != 1:
            raise NotImplementedError(
                "extruded sets (Set(..., layers=)) are not in op2rs's Python API yet")
        if any(b < a for a, b in zip(sizes, sizes[1:])) or sizes[0] < 0:
            raise SizeTypeError("Set sizes must be non-decreasing and non-negative")
        self._name = _name("set", name)
        core, owned, exech, total = sizes
        self._native = _call(
            rt.decl_set, (core, owned - core, exech - owned, total - exech), self._name
        )
        self._halo = halo
        self._layers = layers

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

    def __len__(self):
        return 1

    def __iter__(self):
        yield self

    def __contains__(self, dset):
        return getattr(dset, "set", None) is self

    def __repr__(self):
        return "Set(%r, %r)" % (self.sizes, self._name)


class DataSet:
    """A set with ``dim`` values per element (``set ** dim``)."""

    def __init__(self, iter_set, dim=1, name=None):
        if not isinstance(iter_set, Set):
            raise SetTypeError("iter_set must be a Set")
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
        if offset is not None or bt_masks is not None:
            raise NotImplementedError("extruded maps (offset=) are not in op2rs's Python API yet")
        self._offset = None
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
        self._native = _call(rt.decl_map, iterset._native, toset._native, self._arity, rows,
                             self._name)

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

    @property
    def values_with_halo(self):
        return self._values_all()

    def _values_all(self):
        if self._native is None:
            raise MapValueError("Map %s has no values" % self._name)
        return self._values

    def __getitem__(self, index):
        if isinstance(index, IterationIndex):
            if index.index not in (0, 1):
                raise IndexValueError("op2.i[n] with n 0 or 1")
            return _MapPath(self, index)
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


class _Arg:
    """A ``par_loop`` argument: the data, its access and its path."""

    def __init__(self, data, access, path=None, flatten=False):
        self.data, self.access, self.path, self.flatten = data, access, path, flatten


class Dat:
    """Data on a set: ``Dat(dataset, data=None, dtype=None, name=None)``."""

    def __init__(self, dataset, data=None, dtype=None, name=None, soa=None, uid=None):
        rt = _rt()
        if isinstance(dataset, Dat):
            other = dataset
            Dat.__init__(self, other._dataset, None, other.dtype, "copy_of_%s" % other.name)
            other.copy(self)
            return
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
        if access not in (READ, WRITE, RW, INC):
            raise ModeValueError("Dat access must be READ, WRITE, RW or INC")
        m = path.map if isinstance(path, _MapPath) else path
        if m is not None:
            if not isinstance(m, Map):
                raise MapTypeError("the path must be a Map, map[k] or map[op2.i[n]]")
            if m.toset is not self._dataset.set:
                raise MapValueError("To Set of Map does not match Set of Dat.")
            if m._native is None and m.iterset.total_size > 0:
                raise MapValueError("Map %s has no values" % m.name)
        if flatten and self.cdim > 1 and isinstance(path, _MapPath) and isinstance(
                path.index, int):
            raise NotImplementedError(
                "flatten=True on a map[k] arg of a Dat of dim > 1 is not in op2rs yet")
        return _Arg(self, access, path, flatten)

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


class Global:
    """A value not tied to a set: ``Global(dim, data=None, dtype=None, name=None)``."""

    def __init__(self, dim, data=None, dtype=None, name=None):
        rt = _rt()
        self._dim = (int(dim),) if isinstance(dim, (int, np.integer)) else tuple(dim)
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
        return _Arg(self, access)

    @property
    def data(self):
        """The values, after the loops writing them ran (a copy: set ``data`` to change them)."""
        a = _call(self._native.value).reshape(self._dim)
        # A copy: read-only, so that a write meant for the Global raises instead of vanishing
        # (assign `data` to change the values).
        a.flags.writeable = False
        return a

    @data.setter
    def data(self, value):
        _call(self._native.set_value, _values(value, self._dtype, self.cdim, "Global"))

    data_ro = data

    def __repr__(self):
        return "Global(%r, %r)" % (self._dim, self._name)


class Const:
    """Data every kernel reads by name: ``Const(dim, data, name, dtype=None)``."""

    class NonUniqueNameError(ValueError):
        """The name is used by another Const."""

    def __init__(self, dim, data=None, name=None, dtype=None):
        rt = _rt()
        self._dim = (int(dim),) if isinstance(dim, (int, np.integer)) else tuple(dim)
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


# --- Kernels and loops -----------------------------------------------------------------------

_kernels = {}


class Kernel:
    """A C kernel ``name`` defined in ``code``; identical kernels are one object."""

    def __new__(cls, code, name, opts=None, include_dirs=None):
        if not isinstance(name, str):
            raise NameTypeError("name must be of type str")
        _rt()
        key = (code, name)
        k = _kernels.get(key)
        if k is None:
            k = object.__new__(cls)
            k._code, k._name = code, name
            k._native = _call(_op2.Kernel, code, name)
            _kernels[key] = k
        return k

    def __init__(self, code, name, opts=None, include_dirs=None):
        pass

    name = property(lambda self: self._name)
    code = property(lambda self: self._code)


def _native_arg(a, per_point):
    """One argument as the native module takes it."""
    if isinstance(a.data, Global):
        return ("global", a.data._native, a.access._code)
    if isinstance(a.data, Const):
        return ("const", a.data._native)
    dat = a.data
    path = a.path
    if path is None:
        return ("dat", dat._native, a.access._code, "direct", None, 0)
    m = path.map if isinstance(path, _MapPath) else path
    if isinstance(path, _MapPath) and isinstance(path.index, IterationIndex):
        # PyOP2 0.8.2 called per point with trailing int indices; 0.8.3 to 0.10 once per
        # element with a local buffer. The kernel's parameters say which.
        if per_point:
            if a.flatten and dat.cdim > 1:
                raise NotImplementedError(
                    "per-point (0.8.2) kernels over flattened Dats of dim > 1 are not in op2rs yet")
            return ("dat", dat._native, a.access._code, "entries", m._native, 0)
        how = "buffer_flat" if a.flatten else "buffer"
        return ("dat", dat._native, a.access._code, how, m._native, 0)
    if isinstance(path, _MapPath):
        return ("dat", dat._native, a.access._code, "entry", m._native, path.index)
    # flatten=True: one pointer per value, component-major (the same as a row for dim 1).
    how = "row_flat" if a.flatten and dat.cdim > 1 else "row"
    return ("dat", dat._native, a.access._code, how, m._native, 0)


def par_loop(kernel, iterset, *args):
    """Runs ``kernel`` over ``iterset`` with ``args`` (lazily, like PyOP2)."""
    rt = _rt()
    if not isinstance(kernel, Kernel):
        raise KernelTypeError("kernel must be a Kernel")
    if not isinstance(iterset, Set):
        raise SetTypeError("iterset must be a Set")
    for a in args:
        if not isinstance(a, _Arg):
            raise TypeError("par_loop args are built by calling a Dat or Global with an access")
        if isinstance(a.data, Dat):
            m = a.path.map if isinstance(a.path, _MapPath) else a.path
            if m is None and a.data.dataset.set is not iterset:
                raise MapValueError("Iterset of direct arg does not match par_loop iterset.")
            if m is not None and m.iterset is not iterset:
                raise MapValueError("Iterset of arg map does not match par_loop iterset.")
    per_point = kernel._native.trailing_ints() > 0 and any(
        isinstance(a.path, _MapPath) and isinstance(a.path.index, IterationIndex) for a in args)
    native = [_native_arg(a, per_point) for a in args]
    pending = _call(rt.par_loop, kernel._native, iterset._native, native)
    for a in args:
        if isinstance(a.data, Dat):
            a.data._used()
    return pending
