"""Today's ``pyop2.op2`` over op2-rs: the names today's PyOP2 programs use, as its code defines
them. They are op2rs's classes where the two eras agree, and subclasses where they differ:

- ``Set(size)`` or ``Set((core, owned, total))`` (three sizes; 0.8-0.10 had four), ``comm=``;
  ``set ** dim`` is one DataSet per dim (``s ** 2 is s ** 2``);
- ``Global(dim, data, dtype, name, comm=)`` and the read-only ``Constant``;
- ``dat(access, map)``: the map row's values packed into one array (``double *x`` holding
  arity x dim values, node by node), gathered before the kernel and scattered after it, as
  today's PyOP2 hands indirect data over (0.8-0.10's ``dat(access, map)`` was an array of
  pointers);
- ``Sparsity(dsets, [(rmap, cmap, regions), ...])`` and ``mat(access, (rmap, cmap))`` with the
  element matrix packed likewise;
- ``Kernel(code, name, ...)`` with today's keywords; ``par_loop(kernel, iterset, *args,
  iteration_region=, pass_layer_arg=)``.

No ``op2.init`` is needed: the first object starts op2-rs on ``PYOP2_BACKEND`` (``sequential``
by default), or on the backend an earlier ``op2.init(backend=...)`` chose."""

import numbers

import numpy as np

from op2rs import _op2
from op2rs import lifecycle as _lifecycle
from op2rs import access as _access
from op2rs.configuration import configuration  # noqa: F401
from op2rs.data import Dat as _Dat
from op2rs.data import Global as _Global
from op2rs.data import MixedDat  # noqa: F401
from op2rs.exceptions import (MapValueError, ModeValueError, NameTypeError,  # noqa: F401
                              SizeTypeError, SparsityTypeError)
from op2rs.exceptions import call as _call
from op2rs.kernels import Kernel as _Kernel
from op2rs.la import Mat as _Mat
from op2rs.la import _boundary, _same_map
from op2rs.la import Sparsity as _Sparsity
from op2rs.logger import critical, debug, error, info, set_log_level, warning  # noqa: F401
from op2rs.maps import Map as _Map
from op2rs.maps import MixedMap  # noqa: F401
from op2rs.parloop import Arg as _Arg
from op2rs.parloop import par_loop as _par_loop
from op2rs.sets import DataSet, MixedDataSet, MixedSet  # noqa: F401
from op2rs.sets import ExtrudedSet as _ExtrudedSet
from op2rs.sets import Halo  # noqa: F401
from op2rs.sets import Set as _Set
from op2rs.sets import Subset as _Subset

from . import mpi as _mpi
from .datatypes import OpaqueType  # noqa: F401
from .mpi import COMM_WORLD, MPI  # noqa: F401

READ, WRITE, RW, INC, MIN, MAX = (_access.READ, _access.WRITE, _access.RW, _access.INC,
                                  _access.MIN, _access.MAX)

# Today's iteration regions of extruded loops (op2rs's names for them are the same).
ON_BOTTOM, ON_TOP, ON_INTERIOR_FACETS, ALL = "ON_BOTTOM", "ON_TOP", "ON_INTERIOR_FACETS", "ALL"

__all__ = ["configuration", "READ", "WRITE", "RW", "INC", "MIN", "MAX",
           "ON_BOTTOM", "ON_TOP", "ON_INTERIOR_FACETS", "ALL",
           "debug", "info", "warning", "error", "critical", "initialised",
           "set_log_level", "MPI", "init", "exit", "Kernel", "Set", "ExtrudedSet",
           "MixedSet", "Subset", "DataSet", "MixedDataSet", "Halo", "Dat", "MixedDat", "Mat",
           "Global", "Constant", "Map", "MixedMap", "Sparsity", "par_loop"]


def init(**kwargs):
    """Sets the configuration (``backend=`` chooses op2-rs's backend before the first object is
    made); today's PyOP2 needs no call to it."""
    _lifecycle.init(**kwargs)


def exit():
    """Runs what is pending and finishes op2-rs."""
    _lifecycle.exit()


def initialised():
    """Whether op2-rs is running."""
    return _lifecycle.initialised()


def _started():
    """Starts op2-rs on the configured backend the first time an object needs it."""
    if not _lifecycle.initialised():
        _lifecycle.init()


class Set(_Set):
    """A set: ``Set(size)`` or ``Set((core, owned, total))``, on ``comm`` (``COMM_WORLD`` by
    default). Elements ``[owned, total)`` are ghosts: loops run over the owned ones."""

    comm = None

    def __init__(self, size, name=None, halo=None, comm=None, constrained_nodes=0):
        _started()
        if isinstance(size, numbers.Integral) and not isinstance(size, bool):
            sizes = (int(size),) * 3
        elif isinstance(size, (tuple, list, np.ndarray)):
            sizes = tuple(size)
            if len(sizes) != 3 or not all(isinstance(s, numbers.Integral) for s in sizes):
                raise SizeTypeError("Set sizes are an int or three ints: core, owned, total")
            sizes = tuple(int(s) for s in sizes)
        else:
            raise SizeTypeError("size must be an int or three ints (core, owned, total)")
        if name is not None and not isinstance(name, str):
            raise NameTypeError("name must be of type str")
        if not (0 <= sizes[0] <= sizes[1] <= sizes[2]):
            raise SizeTypeError("Set received invalid sizes: %s" % (sizes,))
        if constrained_nodes:
            raise NotImplementedError("constrained_nodes (Firedrake's constrained function "
                                      "spaces) are not supported by op2rs")
        self.comm = _mpi.internal_comm(comm, self)
        core, owned, total = sizes
        # The ghosts are a halo no loop runs over (op2-rs's non-exec halo).
        super().__init__([core, owned, owned, total], name, halo)
        self._today = sizes
        self._powers = {}

    @property
    def sizes(self):
        """``(core, owned, total)``."""
        return self._today

    def __pow__(self, dim):
        key = tuple(dim) if isinstance(dim, (tuple, list)) else dim
        ds = self._powers.get(key)
        if ds is None:
            ds = self._powers[key] = DataSet(self, dim)
        return ds

    def __repr__(self):
        return "Set(%r, %r)" % (self._today, self._name)

    def __str__(self):
        return "OP2 Set: %s with size %s" % (self._name, self.size)


class ExtrudedSet(_ExtrudedSet):
    """``ExtrudedSet(parent, layers)``: ``layers - 1`` cells over each element of ``parent``
    (``layers`` one int; layers per entity are not supported)."""

    def __init__(self, parent, layers, extruded_periodic=False):
        _started()
        if extruded_periodic:
            raise NotImplementedError("periodic extrusion is not supported by op2rs")
        if isinstance(layers, np.ndarray) and layers.ndim > 0:
            raise NotImplementedError("layers per entity are not supported by op2rs; give one "
                                      "number of layers")
        super().__init__(parent, layers)

    comm = property(lambda self: self._parent.comm)


class Subset(_Subset):
    """``Subset(superset, indices)``."""

    comm = property(lambda self: self.superset.comm)


def _check_map_args(offset_quotient):
    if offset_quotient is not None:
        raise NotImplementedError("Map(offset_quotient=) (periodic extrusion) is not supported "
                                  "by op2rs")


class Map(_Map):
    """``Map(iterset, toset, arity, values=None, name=None, offset=None)``."""

    def __init__(self, iterset, toset, arity, values=None, name=None, offset=None,
                 offset_quotient=None):
        _started()
        _check_map_args(offset_quotient)
        super().__init__(iterset, toset, arity, values, name, offset)

    comm = property(lambda self: self.iterset.comm)


class Dat(_Dat):
    """``Dat(dataset, data=None, dtype=None, name=None)``; ``dat(access, map)`` hands the kernel
    the map row's values packed into one array."""

    def __init__(self, dataset, data=None, dtype=None, name=None):
        _started()
        super().__init__(dataset, data, dtype, name)

    comm = property(lambda self: self.dataset.set.comm)

    def __call__(self, access, path=None):
        if not isinstance(path, _Map):
            return super().__call__(access, path)
        key = (access, path)
        a = self._packed.get(key) if hasattr(self, "_packed") else None
        if a is not None:
            return a
        if access not in (READ, WRITE, RW, INC):
            raise ModeValueError("Dat access must be READ, WRITE, RW or INC")
        if path.toset is not self.dataset.set:
            raise MapValueError("To Set of Map does not match Set of Dat.")
        if path._native is None and path.iterset.total_size > 0:
            raise MapValueError("Map %s has no values" % path.name)
        # Today's packed array is the native local buffer: the row's values node by node.
        native = self._native.arg(access._native, _op2.ArgForm.Buffer, path._native)
        a = _Arg(self, access, path, False, native, path.iterset,
                 after=None if access is READ else _Dat._after_write)
        if not hasattr(self, "_packed"):
            self._packed = {}
        self._packed[key] = a
        return a


class Global(_Global):
    """``Global(dim, data=None, dtype=None, name=None, comm=None)``."""

    def __init__(self, dim, data=None, dtype=None, name=None, comm=None):
        _started()
        self.comm = _mpi.internal_comm(comm, self)
        super().__init__(dim, data, dtype, name)


class Constant(Global):
    """A value every rank holds alike, read by loops (``Constant(dim, data, dtype, name,
    comm)``); a loop may only READ it."""

    def __call__(self, access, path=None):
        if access is not READ:
            raise ModeValueError("Constants can only be READ")
        return super().__call__(access, path)


class Kernel(_Kernel):
    """``Kernel(code, name, opts=None, include_dirs=(), headers=(), user_code="", ldargs=None,
    cpp=False, requires_zeroed_output_arguments=False, flop_count=None, events=())``.
    ``headers`` and ``user_code`` go before the code; ``ldargs`` and ``cpp=True`` are refused
    with the reason (op2-rs compiles C for every backend)."""

    def __new__(cls, code, name, opts=None, include_dirs=(), headers=(), user_code="",
                ldargs=None, cpp=False, requires_zeroed_output_arguments=False,
                flop_count=None, events=()):
        _started()
        if cpp:
            raise NotImplementedError("Kernel(cpp=True): op2-rs compiles kernels as C on every "
                                      "backend; C++ kernels are not supported yet")
        if ldargs:
            raise NotImplementedError("Kernel(ldargs=...): op2-rs does not link kernels against "
                                      "other libraries")
        if isinstance(code, str) and (headers or user_code):
            code = "\n".join(list(headers) + [user_code or "", code])
        k = super().__new__(cls, code, name, opts, list(include_dirs) or None)
        k._flop_count = flop_count
        return k

    def __init__(self, *args, **kwargs):
        pass

    @property
    def num_flops(self):
        """The flop count given (0 when none was)."""
        return self._flop_count or 0


def par_loop(kernel, iterset, *args, iteration_region=None, pass_layer_arg=False):
    """Records ``kernel`` over ``iterset`` with ``args``; ``iteration_region`` (ON_BOTTOM,
    ON_TOP, ON_INTERIOR_FACETS, ALL) on an extruded set."""
    if pass_layer_arg:
        raise NotImplementedError("par_loop(pass_layer_arg=True) is not supported by op2rs yet")
    if iteration_region not in (None, ALL):
        from op2rs.sets import Subset as _S  # noqa: F401
        raise NotImplementedError("par_loop(iteration_region=%s) is not supported through "
                                  "pyop2 yet" % (iteration_region,))
    return _par_loop(kernel, iterset, *args)


def _pairs(maps_and_regions):
    """``[(rmap, cmap), ...]`` from today's list (or dict) of ``(rmap, cmap, regions)``."""
    if isinstance(maps_and_regions, dict):
        raise NotImplementedError("Sparsity maps given per block (a dict) are not supported "
                                  "by op2rs yet")
    out = []
    for item in maps_and_regions:
        if not isinstance(item, (tuple, list)) or len(item) not in (2, 3):
            raise SparsityTypeError("Sparsity maps are (row map, column map, iteration regions) "
                                    "triples")
        rmap, cmap = item[0], item[1]
        regions = item[2] if len(item) == 3 else None
        if regions not in (None, (), [], (ALL,), [ALL]) and regions is not ALL:
            raise NotImplementedError("Sparsity iteration regions %r are not supported by op2rs "
                                      "yet" % (regions,))
        out.append((rmap, cmap))
    return out


class Sparsity(_Sparsity):
    """``Sparsity(dsets, maps_and_regions, name=None, nest=None, block_sparse=None,
    diagonal_block=True)``: ``dsets`` a (rows, columns) pair of DataSets, ``maps_and_regions``
    a list of ``(row map, column map, iteration regions)``."""

    def __new__(cls, dsets, maps_and_regions, name=None, nest=None, block_sparse=None,
                diagonal_block=True):
        _started()
        if nest:
            raise NotImplementedError("nested (MatNest) sparsities are not supported by op2rs")
        return super().__new__(cls, dsets, _pairs(maps_and_regions), name)

    def __init__(self, *args, **kwargs):
        pass


class Mat(_Mat):
    """``Mat(sparsity, dtype=None, name=None)``; ``mat(access, (rmap, cmap))`` hands the kernel
    the element matrix (``double A[r][c]``, rows and columns node by node)."""

    def __init__(self, sparsity, dtype=None, name=None):
        _started()
        super().__init__(sparsity, dtype, name)

    def __call__(self, access, path, lgmaps=None, unroll_map=False):
        if lgmaps is not None:
            raise NotImplementedError("Mat args with lgmaps (PETSc's local-to-global maps) are "
                                      "not supported by op2rs")
        if not (isinstance(path, (tuple, list)) and len(path) == 2
                and all(isinstance(m, _Map) for m in path)):
            return super().__call__(access, path)
        if access not in (WRITE, INC):
            raise ModeValueError("Mat access must be INC or WRITE")
        rmap, cmap = path
        if not any(_same_map(r, rmap) and _same_map(c, cmap) for r, c in self.sparsity._maps):
            raise MapValueError("Path maps not in sparsity maps")
        if self.sparsity.dims != (1, 1):
            raise NotImplementedError("packed element matrices of vector spaces (dims %s) are "
                                      "not supported by op2rs yet" % (self.sparsity.dims,))
        native = _call(self._native.arg, access._native, rmap._native, cmap._native,
                       _op2.MatForm.Element, _boundary(rmap, cmap))
        return _Arg(self, access, (rmap, cmap), False, native, rmap.iterset)
