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
  element matrix packed likewise (rows and columns node by node, components within);
- ``Kernel(code, name, ...)`` with today's keywords; ``par_loop(kernel, iterset, *args,
  iteration_region=, pass_layer_arg=)``.

No ``op2.init`` is needed: the first object starts op2-rs on ``PYOP2_BACKEND`` (``sequential``
by default), or on the backend an earlier ``op2.init(backend=...)`` chose."""

import contextlib
import copy
import numbers
import re

import numpy as np

from op2rs import _op2
from op2rs import lifecycle as _lifecycle
from op2rs import access as _access
from op2rs.data import Dat as _Dat
from op2rs.data import Global as _Global
from op2rs.data import MixedDat as _MixedDat
from op2rs.exceptions import (DataValueError, IndexValueError,  # noqa: F401
                              MapTypeError, MapValueError, MatTypeError, ModeValueError,
                              NameTypeError, SizeTypeError, SparsityTypeError)
from op2rs.exceptions import call as _call
from op2rs.kernels import Kernel as _Kernel
from op2rs.la import Mat as _Mat
from op2rs.la import MatBlock as _MatBlock
from op2rs.la import _boundary, _same_map
from op2rs.la import Sparsity as _Sparsity
from op2rs.logger import critical, debug, error, info, set_log_level, warning  # noqa: F401
from op2rs.maps import Map as _Map
from op2rs.maps import MixedMap as _MixedMap
from op2rs.runtime import on_exit as _on_exit
from op2rs.parloop import Arg as _Arg
from op2rs.parloop import ParLoop
from op2rs.parloop import _checked, _record
from op2rs.sets import DataSet  # noqa: F401
from op2rs.sets import MixedDataSet as _MixedDataSet
from op2rs.sets import MixedSet as _MixedSet
from op2rs.sets import ExtrudedSet as _ExtrudedSet
from op2rs.sets import Halo  # noqa: F401
from op2rs.sets import Set as _Set
from op2rs.sets import Subset as _Subset

from . import mpi as _mpi
from . import datatypes as _datatypes
from .datatypes import IntType, OpaqueType  # noqa: F401
from . import passthrough as _passthrough
from .configuration import Configuration as _Configuration
from .configuration import configuration  # noqa: F401
from . import wrappers as _wrappers
from .passthrough import PassthroughArg  # noqa: F401
from .mpi import COMM_WORLD, MPI  # noqa: F401

READ, WRITE, RW, INC, MIN, MAX = (_access.READ, _access.WRITE, _access.RW, _access.INC,
                                  _access.MIN, _access.MAX)

# Today's iteration regions of extruded loops (op2rs's names for them are the same).
ON_BOTTOM, ON_TOP, ON_INTERIOR_FACETS, ALL = "ON_BOTTOM", "ON_TOP", "ON_INTERIOR_FACETS", "ALL"

__all__ = ["configuration", "READ", "WRITE", "RW", "INC", "MIN", "MAX",
           "ON_BOTTOM", "ON_TOP", "ON_INTERIOR_FACETS", "ALL",
           "debug", "info", "warning", "error", "critical", "initialised",
           "set_log_level", "MPI", "init", "exit", "Kernel", "Set", "ExtrudedSet",
           "MixedSet", "Subset", "DataSet", "MixedDataSet", "Halo", "Dat", "DatView", "MixedDat", "Mat",
           "Global", "Constant", "Map", "MixedMap", "Sparsity", "par_loop", "ParLoop",
           "LegacyParloop", "PermutedMap", "ComposedMap", "PassthroughArg", "OpaqueType",
           "CStringLocalKernel", "LoopyLocalKernel", "LocalKernel", "GlobalKernel",
           "GlobalKernelArg", "DatKernelArg", "MixedDatKernelArg", "MatKernelArg",
           "MixedMatKernelArg", "MapKernelArg", "PassthroughKernelArg", "Parloop", "parloop",
           "GlobalParloopArg", "DatParloopArg", "MixedDatParloopArg", "MatParloopArg",
           "MixedMatParloopArg", "PassthroughParloopArg"]

# Today's name of the loop object a program makes and runs itself.
LegacyParloop = ParLoop


def init(**kwargs):
    """Sets the configuration: today's keys (``pyop2.configuration``) there, the others
    (``backend=`` chooses op2-rs's backend before the first object is made) in op2rs's.
    Today's PyOP2 needs no call to it."""
    today = {k: v for k, v in kwargs.items() if k in _Configuration.DEFAULTS}
    configuration.reconfigure(**today)
    # op2rs's logger follows the level too.
    ours = {k: v for k, v in kwargs.items() if k not in today or k == "log_level"}
    _lifecycle.init(**ours)


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


def _load(filename):
    """The array ``numpy.save`` wrote to ``filename`` (``.npy`` added as NumPy adds it)."""
    try:
        return np.load(filename)
    except FileNotFoundError:
        return np.load(filename + ".npy")


class Set(_Set):
    """A set: ``Set(size)`` or ``Set((core, owned, total))``, on ``comm`` (``COMM_WORLD`` by
    default). Elements ``[owned, total)`` are ghosts: loops run over the owned ones. ``halo``:
    today's ``pyop2.types.halo.Halo`` (an object with ``global_to_local_begin/end(dat,
    insert_mode)`` and ``local_to_global_begin/end(dat, insert_mode)``), which fills the ghosts
    of Dats on the set before loops read them through maps and sends the ghosts' increments to
    their owners after loops increment them, as today's pyop2 does."""

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
        if halo is not None and not all(callable(getattr(halo, f, None)) for f in _HALO_CALLS):
            raise TypeError("halo must be a pyop2 Halo (with %s)" % ", ".join(_HALO_CALLS))
        if constrained_nodes:
            raise NotImplementedError("constrained_nodes (Firedrake's constrained function "
                                      "spaces) are not supported by op2rs")
        self.comm = _mpi.internal_comm(comm, self)
        core, owned, total = sizes
        # The ghosts are a halo no loop runs over (op2-rs's non-exec halo); today's halo object
        # moves their values (see _halo_exchanges), op2-rs's own exchanges have nothing to do.
        super().__init__([core, owned, owned, total], name, None)
        self._halo = halo
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


_HALO_CALLS = ("global_to_local_begin", "global_to_local_end", "local_to_global_begin",
               "local_to_global_end")


class ExtrudedSet(_ExtrudedSet):
    """``ExtrudedSet(parent, layers)``: ``layers - 1`` cells over each element of ``parent``,
    or layers per entity: an ``(n, 2)`` array (``n``: the parent's total size) whose row
    ``[start, stop]`` puts ``stop - start - 1`` cells over the entity, layers ``start`` to
    ``stop - 2`` (maps' values are those of the column's first cell; ``pass_layer_arg`` hands
    the kernel the layer itself)."""

    def __init__(self, parent, layers, extruded_periodic=False):
        _started()
        if extruded_periodic:
            raise NotImplementedError("periodic extrusion is not supported by op2rs")
        if isinstance(layers, (list, tuple, np.ndarray)) and np.ndim(layers) > 0:
            self._declare_per_entity(parent, layers)
        else:
            super().__init__(parent, layers)

    def _declare_per_entity(self, parent, layers):
        if not isinstance(parent, _Set) or isinstance(parent, _ExtrudedSet):
            raise TypeError("Parent must be a Set")
        given = np.asarray(layers)
        if given.size and not np.issubdtype(given.dtype, np.integer):
            raise SizeTypeError("layers per entity are ints, not %s" % given.dtype)
        if given.shape != (parent.total_size, 2):
            raise SizeTypeError("layers per entity: %d rows of [start, stop] for %d entities, "
                                "not shape %s" % (parent.total_size, parent.total_size,
                                                  given.shape))
        extents = given.astype(IntType)
        if len(extents) and (extents[:, 0].min() < 0 or (extents[:, 1] - extents[:, 0]).min() < 1):
            raise SizeTypeError("layers per entity: each [start, stop] needs 0 <= start < stop "
                                "(stop - start - 1 cells)")
        self._declare(parent, extents, extents[:, 1] - extents[:, 0])

    @property
    def constant_layers(self):
        """Whether every column has the same layers."""
        return np.ndim(self._layers) == 0

    @property
    def layers_array(self):
        """Each entity's ``[start, stop]`` (one row for every entity when constant)."""
        if self.constant_layers:
            return np.array([[0, self._layers]], dtype=IntType)
        return self._layers

    @property
    def layers(self):
        """The number of layers (constant layers only, as today's)."""
        if not self.constant_layers:
            raise ValueError("an ExtrudedSet with layers per entity has no one number of "
                             "layers: see layers_array")
        return self._layers

    def __str__(self):
        if self.constant_layers:
            return super().__str__()
        return "OP2 ExtrudedSet: %s with size %s and layers per entity" % (self._name, self.size)

    def _layer_starts(self):
        """Each entity's first layer (None when every column starts at 0)."""
        if self.constant_layers or not self._layers[:, 0].any():
            return None
        return self._layers[:, 0]

    comm = property(lambda self: self._parent.comm)
    # A loop of direct args runs every layer: today's kernels see each cell.
    _direct_per_layer = True


class Subset(_Subset):
    """``Subset(superset, indices)``."""

    comm = property(lambda self: self.superset.comm)


def _check_map_args(offset_quotient):
    if offset_quotient is not None:
        raise NotImplementedError("Map(offset_quotient=) (periodic extrusion) is not supported "
                                  "by op2rs")


class Map(_Map):
    """``Map(iterset, toset, arity, values=None, name=None, offset=None)``. Maps are equal only
    to themselves (today's rule; 0.8-0.10 compared values)."""

    def __init__(self, iterset, toset, arity, values=None, name=None, offset=None,
                 offset_quotient=None):
        _started()
        _check_map_args(offset_quotient)
        super().__init__(iterset, toset, arity, values, name, offset)
        self._offset_quotient = offset_quotient

    comm = property(lambda self: self.iterset.comm)
    offset_quotient = property(lambda self: self._offset_quotient)

    def __repr__(self):
        return "Map(%r, %r, %r, None, %r, %r, %r)" % (
            self.iterset, self.toset, self.arity, self.name, self.offset, self._offset_quotient)

    __eq__ = object.__eq__
    __ne__ = object.__ne__
    __hash__ = object.__hash__


def _plain(m):
    if m.offset is not None:
        raise NotImplementedError("a ComposedMap through an extruded map (one with offsets) "
                                  "is not supported by op2rs: only its first map may be one")
    return m


class PermutedMap(Map):
    """``PermutedMap(map_, permutation)``: ``map_`` with each row's entries reordered,
    ``values[:, k] = map_.values[:, permutation[k]]``."""

    def __init__(self, map_, permutation):
        perm = np.asarray(permutation, dtype=np.int64).ravel()
        if sorted(perm.tolist()) != list(range(map_.arity)):
            raise ValueError("permutation must reorder the %d entries of a row" % map_.arity)
        values = np.asarray(map_.values_with_halo)[:, perm] if map_.iterset.total_size else None
        # An extruded map's offsets go with their entries.
        offset = None if map_.offset is None else np.asarray(map_.offset)[perm]
        super().__init__(map_.iterset, map_.toset, map_.arity, values,
                         "%s_permuted" % map_.name, offset)
        self.map_, self.permutation = map_, perm


def _extents(s):
    """Each column's ``[start, stop]`` layers of an extruded set."""
    layers = s._layers
    if np.ndim(layers) == 0:
        return np.tile(np.array([0, layers]), (s.total_size, 1))
    return np.asarray(layers)


class ComposedMap(Map):
    """``ComposedMap(map_0, map_1, ..., map_n)``: ``map_0`` taken at the element that
    ``map_n``, then ``map_n-1``, ..., reach from each element of ``map_n``'s iteration set
    (every map but the first of arity 1)."""

    def __init__(self, *maps_, name=None):
        if len(maps_) < 2:
            raise ValueError("ComposedMap composes two maps or more")
        # The first map may be extruded (offsets per entry): the composition walks the columns
        # of the last map's iteration set with the first's offsets, which needs columns of the
        # same layers. The others map base elements.
        for m in maps_[1:]:
            _plain(m)
        first, last = maps_[0], maps_[-1]
        extruded = first.offset is not None
        if extruded and not (isinstance(last.iterset, _ExtrudedSet)
                             and isinstance(first.iterset, _ExtrudedSet)):
            raise NotImplementedError(
                "ComposedMap of the extruded map %s: the composition's iteration set must be "
                "extruded too" % first.name)
        for outer, inner in zip(maps_, maps_[1:]):
            if inner.toset is not outer.iterset:
                raise MapTypeError("%s goes to %s, not to %s's iteration set"
                                   % (inner.name, inner.toset.name, outer.name))
        if any(m.arity != 1 for m in maps_[1:]):
            raise NotImplementedError("ComposedMap: every map but the first must have arity 1")
        last = maps_[-1]
        at = np.arange(last.iterset.total_size)
        for m in reversed(maps_[1:]):
            # A negative value (today's "no element") stays one through the composition,
            # rather than reaching the last element as NumPy's index -1 would.
            at = np.where(at >= 0, np.asarray(m.values_with_halo)[np.maximum(at, 0), 0], -1) \
                if len(at) else at
        reached = at >= 0
        if extruded and np.any(_extents(last.iterset)[reached]
                               != _extents(first.iterset)[at[reached]]):
            # Each column walks the column it reaches with the first map's offsets: their
            # layers must be the same.
            raise NotImplementedError(
                "ComposedMap of the extruded map %s: a column of %s reaches a column of %s "
                "with other layers" % (first.name, last.iterset.name, first.iterset.name))
        values = (np.where((at >= 0)[:, None], np.asarray(first.values_with_halo)[
            np.maximum(at, 0)], -1) if len(at) else None)
        super().__init__(last.iterset, first.toset, first.arity, values,
                         name or "_".join(m.name for m in maps_), first.offset)
        self.maps_ = tuple(maps_)


class Dat(_Dat):
    """``Dat(dataset, data=None, dtype=None, name=None)``; ``dat(access, map)`` hands the kernel
    the map row's values packed into one array (``MIN`` and ``MAX`` too: the kernel sees the
    current values, and each value it leaves is combined back with the Dat's)."""

    def __init__(self, dataset, data=None, dtype=None, name=None):
        _started()
        self._version = 0
        self._allocated = data is not None
        super().__init__(dataset, data, dtype, name)

    @property
    def _is_allocated(self):
        """Whether today's pyop2 would hold the values by now: given, viewed, an argument of a
        loop, or used by an operation. (op2rs allocates a Dat's memory when it is declared.)"""
        return self._allocated

    def _view(self, writable, halos):
        self._allocated = True
        return _Dat._view(self, writable, halos)

    def _used(self):
        self._allocated = True
        _Dat._used(self)

    # -- versions: every write through the host, a loop or a copy counts one.

    @property
    def dat_version(self):
        """How many times the values may have changed (writable host access, loops writing
        the Dat, ``zero``, copies into it)."""
        return self._version

    def _after_write(self, arg):
        _Dat._after_write(self, arg)
        self._version += 1

    def _vec_changed(self):
        self._version += 1

    @property
    def data(self):
        self._version += 1
        return _Dat.data.fget(self)

    @property
    def data_with_halos(self):
        # Today's: the ghosts brought from their owners first (a set with today's halo).
        self.global_to_local_begin(RW)
        self.global_to_local_end(RW)
        self._version += 1
        return _Dat.data_with_halos.fget(self)

    @property
    def data_ro_with_halos(self):
        self.global_to_local_begin(READ)
        self.global_to_local_end(READ)
        return _Dat.data_ro_with_halos.fget(self)

    data_wo = data
    data_wo_with_halos = data_with_halos

    @property
    def _data(self):
        """The values with halos as they are (today's pyop2 keeps its NumPy array here; its
        halos, programs and its own tests read and assign to it): no exchange, no version."""
        a = self._view(True, True)
        self._needs_halo = True
        return a

    @_data.setter
    def _data(self, value):
        values = np.asarray(value, dtype=self.dtype).reshape(-1)
        target = self._data.reshape(-1)
        if values.size > target.size:
            raise DataValueError("Dat %s holds %d values, not %d"
                                 % (self.name, target.size, values.size))
        target[:values.size] = values

    def inner(self, other):
        """The inner product with ``other``, which is conjugated (a Dat of the same type on the
        same DataSet): a value of the Dats' type, summed over ranks."""
        if not isinstance(other, _Dat) or other.dataset != self.dataset:
            raise ValueError("inner needs a Dat on %s" % (self.dataset,))
        if self.cdim == 0:
            return self.dtype.type(0)
        self._used()
        other._used()
        return _call(self._native.inner, other._native)[0]

    def zero(self, subset=None):
        """Sets the values to zero (those of ``subset``'s elements only, when given)."""
        self._version += 1
        if subset is None:
            return _Dat.zero(self)
        self.data_with_halos[np.asarray(subset.indices, dtype=np.int64)] = 0

    def copy(self, other, subset=None):
        """Copies the values into ``other`` (those of ``subset``'s elements only)."""
        if subset is None:
            _Dat.copy(self, other)
        else:
            idx = np.asarray(subset.indices, dtype=np.int64)
            other.data_with_halos[idx] = self.data_ro_with_halos[idx]
        if isinstance(other, Dat):
            other._version += 1

    @property
    def halo_valid(self):
        """Whether the halo holds the owners' current values."""
        return not self.needs_halo_update

    @halo_valid.setter
    def halo_valid(self, value):
        self.needs_halo_update = not value

    @property
    def nbytes(self):
        """Bytes of the values, halos included."""
        return self.dtype.itemsize * self.dataset.total_size * self.dataset.cdim

    def axpy(self, alpha, other):
        """``self += alpha * other``."""
        self += other * alpha

    def maxpy(self, alphas, others):
        """``self += sum(alpha * other)`` over the pairs."""
        for a, o in zip(alphas, others):
            self.axpy(a, o)

    def load(self, filename):
        """Reads the owned values ``save`` wrote (``.npy`` added as NumPy adds it)."""
        self.data[:] = _load(filename).reshape(self.data_ro.shape)

    comm = property(lambda self: self.dataset.set.comm)

    _frozen = None

    # -- today's halos: the set's Halo object moves the ghosts' values (see Set).

    def _today_halo(self):
        """The set's today's halo, unless there is none or it is frozen."""
        return None if self._frozen is not None else getattr(self.dataset.set, "halo", None)

    def global_to_local_begin(self, access_mode):
        """Before a loop reading the Dat through a map (``READ``, ``RW``): the halo starts
        filling stale ghosts with their owners' values. Before one reducing into it (``INC``,
        ``MIN``, ``MAX``): the ghosts start from the reduction's identity."""
        halo = self._today_halo()
        if halo is None:
            return
        if access_mode in (READ, RW) and not self.halo_valid:
            halo.global_to_local_begin(self, WRITE)
        elif access_mode in (INC, MIN, MAX):
            lo, hi = _datatypes.dtype_limits(self.dtype)
            ghosts = self._data[self.dataset.size:]
            ghosts[...] = {INC: 0, MIN: hi, MAX: lo}[access_mode]

    def global_to_local_end(self, access_mode):
        """Finishes :meth:`global_to_local_begin`; the ghosts are then current."""
        halo = self._today_halo()
        if halo is None:
            return
        if access_mode in (READ, RW) and not self.halo_valid:
            halo.global_to_local_end(self, WRITE)
            self.halo_valid = True

    def local_to_global_begin(self, insert_mode):
        """After a loop reducing into the Dat through a map: the halo starts sending the
        ghosts' values to their owners, combined by ``insert_mode``."""
        halo = self._today_halo()
        if halo is not None:
            halo.local_to_global_begin(self, insert_mode)

    def local_to_global_end(self, insert_mode):
        """Finishes :meth:`local_to_global_begin`; the ghosts are then stale."""
        halo = self._today_halo()
        if halo is not None:
            halo.local_to_global_end(self, insert_mode)
            self.halo_valid = False

    @contextlib.contextmanager
    def frozen_halo(self, access_mode):
        """Within it, loops may use the Dat with ``access_mode`` only (``RuntimeError``
        otherwise). With a set's today's halo, as today's pyop2: the ghosts are brought up (or
        set to the reduction's identity) on entry, loops inside exchange nothing, and the
        ghosts' reductions go to their owners on exit. op2-rs's own halos are brought up to
        date per loop whatever the freezing."""
        self.freeze_halo(access_mode)
        try:
            yield
        except BaseException:
            # Unwinding (maybe on this rank only): no exchange the others would not join.
            self._frozen = None
            raise
        self.unfreeze_halo()

    def freeze_halo(self, access_mode):
        """Brings the ghosts up (or to the reduction's identity) for ``access_mode``, then
        holds exchanges back until :meth:`unfreeze_halo`."""
        if access_mode not in (READ, WRITE, RW, INC, MIN, MAX):
            raise ModeValueError("frozen_halo takes an access mode")
        if self._frozen is not None:
            raise RuntimeError("Dat %s's halo is frozen already" % self.name)
        self.global_to_local_begin(access_mode)
        self.global_to_local_end(access_mode)
        self._frozen = access_mode

    def unfreeze_halo(self):
        """Lets exchanges run again, sending the ghosts' reductions (the frozen mode's) to
        their owners."""
        mode, self._frozen = self._frozen, None
        if mode in (INC, MIN, MAX):
            self.local_to_global_begin(mode)
            self.local_to_global_end(mode)

    # Today's packed rows: the native local buffer, the row's values node by node.
    _row_form = _op2.ArgForm.Buffer
    _row_reductions = (MIN, MAX)

    def __call__(self, access, path=None):
        if self._frozen is not None and access is not self._frozen:
            raise RuntimeError("Dat %s has a frozen halo (%s): it cannot be used with %s"
                               % (self.name, self._frozen, access))
        self._allocated = True
        return super().__call__(access, path)


class DatView:
    """``DatView(dat, index)``: component ``index`` of each of ``dat``'s rows, used like a Dat
    of dim 1. Its data are views of the parent's, its halo and version the parent's; in a loop
    the kernel sees that component only (directly, or packed through a map), the other
    components untouched."""

    def __init__(self, dat, index):
        index = tuple(index) if isinstance(index, (tuple, list)) else (index,)
        if len(index) != len(dat.dim) or not all(
                isinstance(i, (int, np.integer)) and 0 <= i < d for i, d in zip(index, dat.dim)):
            raise IndexValueError("Can't create DatView with index %s for Dat with shape %s"
                                  % (index, dat.dim))
        self.index = index
        self._parent = dat
        self._component = int(np.ravel_multi_index(index, dat.dim))
        self.name = "view[%s](%s)" % (index, dat.name)

    dataset = property(lambda self: self._parent.dataset)
    dtype = property(lambda self: self._parent.dtype)
    ctype = property(lambda self: self._parent.ctype)
    comm = property(lambda self: self._parent.comm)
    cdim = 1
    dim = (1,)
    shape = property(lambda self: (self.dataset.total_size,))
    dat_version = property(lambda self: self._parent.dat_version)

    @property
    def halo_valid(self):
        return self._parent.halo_valid

    @halo_valid.setter
    def halo_valid(self, value):
        self._parent.halo_valid = value

    def _of(self, values):
        # The parent's rows are (n,) for one value each, else (n, *dim).
        if self._parent.cdim == 1:
            return values
        return values.reshape(values.shape[0], -1)[:, self._component]

    data = property(lambda self: self._of(self._parent.data))
    data_ro = property(lambda self: self._of(self._parent.data_ro))
    data_wo = property(lambda self: self._of(self._parent.data_wo))
    data_with_halos = property(lambda self: self._of(self._parent.data_with_halos))
    data_ro_with_halos = property(lambda self: self._of(self._parent.data_ro_with_halos))
    data_wo_with_halos = property(lambda self: self._of(self._parent.data_wo_with_halos))

    def zero(self, subset=None):
        """Sets the component to zero on every row, halos included, or on ``subset``'s
        elements only. The halo stays as valid as it was (the other components' ghosts are not
        refreshed); a set without ghosts has a valid one."""
        s = self.dataset.set
        valid = self._parent.halo_valid or s.total_size == s.size
        rows = self.data_with_halos
        if subset is None:
            rows[:] = 0
            self._parent.halo_valid = valid
        else:
            rows[np.asarray(subset.indices, dtype=np.int64)] = 0

    def __call__(self, access, path=None):
        # A copy: the parent keeps its own arg for the same access and path.
        arg = copy.copy(self._parent(access, path))
        if arg.native is None:
            raise NotImplementedError("a DatView through a local iteration space")
        arg.native = arg.native.component(self._component)
        return arg

    def __repr__(self):
        return "DatView(%r, %r)" % (self._parent, self.index)


# Today's MixedMaps are one object per tuple of maps (kept until op2 exits).
_mixed_maps = _on_exit({})


class MixedMap(_MixedMap):
    """``MixedMap(maps)``: one object for the same maps in the same order, as today's pyop2
    caches it (so a Sparsity and a loop naming the maps alike meet the same MixedMap)."""

    def __new__(cls, maps):
        maps = tuple(maps)
        m = _mixed_maps.get(maps)
        if m is None:
            m = object.__new__(cls)
            _MixedMap.__init__(m, maps)
            _mixed_maps[maps] = m
        return m

    def __init__(self, maps):
        pass


class MixedDat(_MixedDat):
    """``MixedDat(mixed_dataset_or_dats)``, with today's versions and halo flags (the sums and
    conjunctions of its components')."""

    _dat_class = Dat

    def __init__(self, mdset_or_dats):
        if isinstance(mdset_or_dats, _MixedDat):
            # Today's copy constructor: new Dats holding copies of the components' values.
            mdset_or_dats = [Dat(d) for d in mdset_or_dats]
        super().__init__(mdset_or_dats)

    @property
    def _is_allocated(self):
        """Whether every component is (see ``Dat._is_allocated``)."""
        return all(getattr(d, "_is_allocated", True) for d in self.split)

    # Today's halo exchanges and freezing, component by component.
    def global_to_local_begin(self, access_mode):
        for d in self.split:
            d.global_to_local_begin(access_mode)

    def global_to_local_end(self, access_mode):
        for d in self.split:
            d.global_to_local_end(access_mode)

    def local_to_global_begin(self, insert_mode):
        for d in self.split:
            d.local_to_global_begin(insert_mode)

    def local_to_global_end(self, insert_mode):
        for d in self.split:
            d.local_to_global_end(insert_mode)

    def freeze_halo(self, access_mode):
        for d in self.split:
            d.freeze_halo(access_mode)

    def unfreeze_halo(self):
        for d in self.split:
            d.unfreeze_halo()

    @contextlib.contextmanager
    def frozen_halo(self, access_mode):
        """Every component's :meth:`Dat.frozen_halo`."""
        self.freeze_halo(access_mode)
        try:
            yield
        finally:
            self.unfreeze_halo()

    def __call__(self, access, path=None):
        if not isinstance(path, _MixedMap):
            return super().__call__(access, path)
        path = self._onto_own_sets(path)
        # Today's packed array: every component's rows in turn, once per element.
        a = super().__call__(access, path[_access.i[0]])
        return _Arg(self, access, path, False, a.data._lis_native(a, False), a.iterset,
                    after=a.after)

    def _onto_own_sets(self, mmap):
        """``mmap``, or the same values onto this MixedDat's sets. Today's MixedDat takes any
        MixedMap (its tosets unchecked); op2rs reaches a component's Dat only through a map
        into its set, so a component map into another set of the same sizes (core, owned,
        total) is declared again onto the Dat's set, once per map and set. Other sizes would
        reach elements the Dat does not have: ``MapValueError``."""
        maps = mmap.split
        sets = [d.dataset.set for d in self._dats]
        if len(maps) != len(sets) or all(m.toset == t for m, t in zip(maps, sets)):
            return mmap
        own = []
        for m, t in zip(maps, sets):
            if m.toset == t:
                own.append(m)
                continue
            if _mpi._MPI.comm.size > 1:
                # Each rank's sizes are its own: ranks could decide differently, and declaring
                # a map is something every rank does together.
                raise MapValueError("To Set of MixedMap does not match Set of MixedDat: map %s "
                                    "goes to %s, the Dat is on %s (across ranks the sets "
                                    "must be the same)" % (m.name, m.toset.name, t.name))
            if tuple(m.toset.sizes) != tuple(t.sizes):
                raise MapValueError("To Set of MixedMap does not match Set of MixedDat: map "
                                    "%s goes to %s (sizes %s), the Dat is on %s (sizes %s)"
                                    % (m.name, m.toset.name, tuple(m.toset.sizes), t.name,
                                       tuple(t.sizes)))
            copies = m.__dict__.setdefault("_onto_sets", [])
            found = next((c for s_, c in copies if s_ is t), None)
            if found is None:
                found = Map(m.iterset, t, m.arity, m.values_with_halo, m.name, m.offset)
                copies.append((t, found))
            own.append(found)
        return MixedMap(own)

    dat_version = property(lambda self: sum(d.dat_version for d in self._dats))
    dataset = property(lambda self: MixedDataSet([d.dataset for d in self._dats]))
    cdim = property(lambda self: sum(d.cdim for d in self._dats))

    @property
    def halo_valid(self):
        return all(d.halo_valid for d in self._dats)

    @halo_valid.setter
    def halo_valid(self, value):
        for d in self._dats:
            d.halo_valid = value

    def copy(self, other, subset=None):
        """Copies each component into ``other``'s (no ``subset``: not for mixed data)."""
        if subset is not None:
            raise NotImplementedError("MixedDat.copy with a subset is not supported")
        for a, b in zip(self._dats, other):
            a.copy(b)

    def inner(self, other):
        """The sum of the components' inner products with ``other``'s (conjugated)."""
        if not isinstance(other, _MixedDat) or len(other) != len(self):
            raise TypeError("inner needs a MixedDat of as many components")
        return sum(a.inner(b) for a, b in zip(self, other))

    @property
    def norm(self):
        """The 2-norm of every value of every component (a float, complex values too)."""
        return float(np.sqrt(abs(self.inner(self))))

    def save(self, filename):
        """``numpy.save`` of every component's owned values, one after another."""
        np.save(filename, np.concatenate([d.data_ro.ravel() for d in self._dats]))

    def load(self, filename):
        """Reads what ``save`` wrote back into the components, in order."""
        values = _load(filename)
        at = 0
        for d in self._dats:
            n = d.data_ro.size
            d.data[:] = values[at:at + n].reshape(d.data_ro.shape)
            at += n


class MixedDataSet(_MixedDataSet):
    """``MixedDataSet(sets_or_datasets, dims=None)``; ``cdim`` is the sum of the components'
    (0.8-0.10 gave a tuple)."""

    cdim = property(lambda self: sum(d.cdim for d in self))


class MixedSet(_MixedSet):
    """``MixedSet(sets)``; ``sizes`` is ``(core_size, size, total_size)``; ``mset ** dim`` is a
    MixedDataSet."""

    def __pow__(self, dims):
        return MixedDataSet(self._sets, dims)

    sizes = property(lambda self: (self.core_size, self.size, self.total_size))

    def __eq__(self, other):
        """MixedSets of the same Sets are equal."""
        return isinstance(other, _MixedSet) and len(self) == len(other) and all(
            a is b for a, b in zip(self, other))

    __hash__ = _MixedSet.__hash__


class Global(_Global):
    """``Global(dim, data=None, dtype=None, name=None, comm=None)``, with today's arithmetic:
    ``+ - * /`` with another Global or a number give a new Global (``+= ...`` changes this
    one), ``-g``, ``inner``, ``zero``, ``copy``."""

    def __init__(self, dim, data=None, dtype=None, name=None, comm=None):
        _started()
        self.comm = _mpi.internal_comm(comm, self)
        super().__init__(dim, data, dtype, name)

    def _operand(self, other):
        if isinstance(other, _Global):
            if other.cdim != self.cdim:
                raise ValueError("Globals of %d and %d values" % (self.cdim, other.cdim))
            return other.data_ro
        return np.asarray(other)

    def _op(self, other, op):
        return type(self)(self.dim, op(self.data_ro, self._operand(other)), self.dtype,
                          comm=self.comm)

    def _iop(self, other, op):
        self.data = op(self.data_ro, self._operand(other)).astype(self.dtype)
        return self

    def __add__(self, other):
        return self._op(other, np.add)

    __radd__ = __add__

    def __sub__(self, other):
        return self._op(other, np.subtract)

    def __rsub__(self, other):
        return self._op(other, lambda a, b: b - a)

    def __mul__(self, other):
        return self._op(other, np.multiply)

    __rmul__ = __mul__

    def __truediv__(self, other):
        return self._op(other, np.true_divide)

    def __iadd__(self, other):
        return self._iop(other, np.add)

    def __isub__(self, other):
        return self._iop(other, np.subtract)

    def __imul__(self, other):
        return self._iop(other, np.multiply)

    def __itruediv__(self, other):
        return self._iop(other, np.true_divide)

    def __neg__(self):
        return type(self)(self.dim, -self.data_ro, self.dtype, comm=self.comm)

    def __pos__(self):
        return type(self)(self.dim, self.data_ro, self.dtype, comm=self.comm)

    __hash__ = _Global.__hash__

    def inner(self, other):
        """The dot product of the values with ``other``'s."""
        return np.dot(self.data_ro, np.conj(self._operand(other)))

    def zero(self):
        """Sets the values to zero."""
        self.data = np.zeros(self.cdim, self.dtype)

    def copy(self, other, subset=None):
        """Copies the values into the Global ``other``."""
        other.data = self.data_ro


class Constant(Global):
    """A value every rank holds alike, read by loops (``Constant(dim, data, dtype, name,
    comm)``); a loop may only READ it."""

    def __call__(self, access, path=None):
        if access is not READ:
            raise ModeValueError("Constants can only be READ")
        return super().__call__(access, path)


# PETSc's scalar and index types as today's kernels name them (a real-valued PETSc build).
_PETSC_TYPES = {"PetscScalar": "double", "PetscReal": "double", "PetscInt": "int",
                "PetscBool": "int"}
_PETSC_NAME = re.compile(r"\b(%s)\b" % "|".join(_PETSC_TYPES))


def _petsc_types(code):
    """``code`` with PETSc's type names written as the C types they stand for."""
    return _PETSC_NAME.sub(lambda m: _PETSC_TYPES[m.group(1)], code)


class Kernel(_Kernel):
    """``Kernel(code, name, opts=None, include_dirs=(), headers=(), user_code="", ldargs=None,
    cpp=False, requires_zeroed_output_arguments=False, flop_count=None, events=())``.
    ``headers`` and ``user_code`` go before the code; ``cpp=True`` compiles the loops as C++
    and ``ldargs`` (e.g. ``["-L/opt/lib", "-lfoo"]``) links them with other libraries, each
    ``-L`` folder also searched when the loop's code is loaded (the host backends; the device
    backends refuse such loops)."""

    def __new__(cls, code, name, opts=None, include_dirs=(), headers=(), user_code="",
                ldargs=None, cpp=False, requires_zeroed_output_arguments=False,
                flop_count=None, events=(), accesses=None, dtypes=None):
        _started()
        if isinstance(ldargs, str):
            ldargs = ldargs.split()
        if _is_loopy(code):
            code = _loopy_c(code)
        if isinstance(code, str) and (headers or user_code):
            code = "\n".join(list(headers) + [user_code or "", code])
        written = code
        if isinstance(code, str):
            code = _petsc_types(code)
        tag = (tuple(accesses) if accesses is not None else None,
               tuple(dtypes) if dtypes is not None else None)
        k = super().__new__(cls, code, name, opts, list(include_dirs) or None, _cpp=cpp,
                            _ldargs=tuple(ldargs or ()), _tag=tag)
        k._flop_count = flop_count
        # Today's local kernels state each argument's access and type beside the code
        # (GlobalKernel reads the accesses; op2-rs reads types from the source).
        if accesses is not None:
            k.accesses = tuple(accesses)
        if dtypes is not None:
            k.dtypes = tuple(dtypes)
        # As written, for a wrapper compiled with PETSc's headers (passthrough.py), where
        # PETSc's type names are PETSc's; not when include_dirs were expanded into the code.
        k._written_code = None if include_dirs else written
        return k

    @classmethod
    def _wrapping(cls, source, name, kernel, ldargs, cflags, effects):
        """A kernel the package writes around ``kernel`` (C or C++ as it is), compiled with
        ``cflags`` and linked with ``ldargs``; with ``effects`` it acts on state outside its
        args (op2-rs runs its loops element after element, on one thread, when they are
        made)."""
        k = _Kernel.__new__(cls, source, name, None, None, _cpp=kernel._cpp, _ldargs=ldargs,
                            _cflags=cflags, _effects=effects)
        k._flop_count = getattr(kernel, "_flop_count", None)
        k._written_code = None
        return k

    def __init__(self, *args, **kwargs):
        pass

    @property
    def num_flops(self):
        """The flop count given (0 when none was)."""
        return self._flop_count or 0


class CStringLocalKernel(Kernel):
    """Today's ``CStringLocalKernel(code, name, accesses=None, dtypes=None, **kwargs)``: a
    kernel of C source with the access of each argument and its element type stated beside it
    (``accesses``, ``dtypes``: kept; ``GlobalKernel`` reads the accesses, op2-rs reads the
    types from the source and ``par_loop`` the accesses from its args). Other keywords are
    ``Kernel``'s."""

    def __new__(cls, code, name, accesses=None, dtypes=None, **kwargs):
        if not isinstance(code, str):
            raise TypeError("CStringLocalKernel's code is a string")
        k = super().__new__(cls, code, name, accesses=accesses, dtypes=dtypes, **kwargs)
        k.accesses = tuple(accesses) if accesses is not None else None
        k.dtypes = tuple(dtypes) if dtypes is not None else None
        return k


class LoopyLocalKernel(Kernel):
    """Today's ``LoopyLocalKernel(code, name, accesses=None, **kwargs)``: a kernel written with
    loopy (a ``LoopKernel`` or ``TranslationUnit``), turned into C by loopy itself (its C target
    when the kernel was made for another) and run as any C kernel; ``dtypes`` are its array
    arguments' types."""

    def __new__(cls, code, name, accesses=None, **kwargs):
        if not _is_loopy(code):
            raise TypeError("LoopyLocalKernel's code is a loopy kernel")
        k = super().__new__(cls, code, name, accesses=accesses, **kwargs)
        k.dtypes = _loopy_dtypes(code, name)
        return k


# Today's name for the kernel classes' common base.
LocalKernel = Kernel


def _is_loopy(code):
    """Whether ``code`` is a loopy kernel (``LoopKernel`` or ``TranslationUnit``)."""
    return not isinstance(code, str) and type(code).__module__.split(".")[0] == "loopy"


def _loopy_c(code):
    """The C source loopy generates for ``code`` (retargeted to C when it was made for another
    target, such as loopy's default OpenCL)."""
    import loopy
    if not isinstance(code.target, loopy.CTarget):
        code = code.copy(target=loopy.CTarget())
    return loopy.generate_code_v2(code).device_code()


def _loopy_dtypes(code, name):
    import loopy
    kernel = code[name] if isinstance(code, loopy.TranslationUnit) else code
    return tuple(a.dtype.numpy_dtype for a in kernel.args if isinstance(a, loopy.ArrayArg))


def _layers_from_starts(kernel, iterset, args):
    """``(kernel, args)`` of a loop handing its kernel the layer over an ExtrudedSet (or a
    Subset of one) with layers per entity not all starting at 0: op2-rs counts each column's
    layers from 0, so a kernel written around the user's adds the column's start, read from an
    int Dat of the starts passed directly (one row per column). Other loops as they are."""
    extruded = iterset if isinstance(iterset, ExtrudedSet) else getattr(iterset, "superset", None)
    starts = extruded._layer_starts() if isinstance(extruded, ExtrudedSet) else None
    if starts is None:
        return kernel, args
    declared = _wrappers.params_of(kernel, "pass_layer_arg over layers per entity")
    if len(declared) != len(args) + 1:
        return kernel, args  # the loop's own checks say what is wrong
    dat = extruded.__dict__.get("_starts_dat")
    if dat is None:
        dat = extruded._starts_dat = Dat(extruded ** 1, starts.astype(IntType), IntType,
                                         "%s_layer_starts" % extruded.name)
    (layer_text, layer), own = declared[-1], declared[:-1]
    wrapped = _wrappers.write(
        kernel, Kernel, "pyop2_from_start_%s" % kernel.name,
        [t for t, _ in own] + ["const int *pyop2_start", layer_text],
        [n for _, n in own] + ["%s + *pyop2_start" % layer])
    return wrapped, tuple(args) + (dat(READ),)


def _unspecified_params(kernel, args, layer):
    """A kernel defined ``k()`` (C's unspecified parameters, which today's pyop2 calls with the
    loop's args as C compilers allow) in a loop with args: op2-rs matches a kernel's parameters
    to the args, so a kernel written around it takes them and calls ``k()`` (a kernel so defined
    cannot name its args). Other kernels (``k(void)`` too: the loop says what is wrong) as
    they are."""
    if (not args and not layer) or kernel._cpp or kernel._native.param_texts() != []:
        return kernel  # (in C++, `k()` takes no parameters)
    if not re.search(r"\b%s\s*\(\s*\)\s*\{" % re.escape(kernel.name), kernel.code):
        return kernel
    params = ["void *pyop2_p%d" % i for i in range(len(args))]
    if layer:
        params.append("int pyop2_layer")
    wrapped = _wrappers.write(kernel, Kernel, "pyop2_args_to_%s" % kernel.name, params, [])
    wrapped._parse()
    return wrapped


_REGIONS = {None: "all", ALL: "all", ON_BOTTOM: "bottom", ON_TOP: "top",
            ON_INTERIOR_FACETS: "facets"}


def _halo_dats(args, accesses):
    """``(dat, access)`` for each Dat a loop reaches through a map with an access among
    ``accesses`` and whose set has today's halo: each Dat once, with its first such arg's
    access (components of MixedDats in turn), as today's pyop2 chooses what it exchanges."""
    seen, out = set(), []
    for a in args:
        if a.path is None or a.access not in accesses:
            continue
        # (A DatView's arg is its parent's: the whole rows' ghosts go to the identity and
        # back, the other components' adding nothing to their owners.)
        data = a.data
        if not isinstance(data, (_Dat, _MixedDat)):
            continue
        for d in (data.split if isinstance(data, _MixedDat) else (data,)):
            if id(d) not in seen and isinstance(d, Dat) and d._today_halo() is not None:
                seen.add(id(d))
                out.append((d, a.access))
    return out


def par_loop(kernel, iterset, *args, iteration_region=None, pass_layer_arg=False):
    """Records ``kernel`` over ``iterset`` with ``args``; over an ExtrudedSet,
    ``iteration_region`` chooses the layers: ``ON_BOTTOM`` (the bottom cell of each column),
    ``ON_TOP``, ``ON_INTERIOR_FACETS`` (each facet between two cells, the maps' rows of the
    cell below then the cell above packed one after the other) or ``ALL``.
    ``pass_layer_arg=True`` hands the kernel each cell's layer as an ``int`` after the args (0
    at the bottom of a column of constant layers; ``start`` to ``stop - 2`` for layers per
    entity)."""
    region = _REGIONS.get(iteration_region)
    if region is None:
        raise ValueError("iteration_region must be ON_BOTTOM, ON_TOP, ON_INTERIOR_FACETS or ALL")
    if region != "all" and getattr(iterset, "_native_iter", None) is None:
        raise ValueError("iteration_region %s needs an ExtrudedSet" % (iteration_region,))
    if pass_layer_arg and getattr(iterset, "_native_iter", None) is None:
        raise ValueError("pass_layer_arg needs an ExtrudedSet")
    kernel, args = _passthrough.lower(kernel, args, Kernel)
    if pass_layer_arg:
        kernel, args = _layers_from_starts(kernel, iterset, args)
    native, target = _checked(kernel, iterset, args)
    kernel = _unspecified_params(kernel, args, pass_layer_arg)
    # Today's halos: ghosts filled (or set to the reduction's identity) before the loop.
    read = _halo_dats(args, (READ, RW, INC, MIN, MAX))
    reduced = _halo_dats(args, (INC, MIN, MAX))
    for d, acc in read:
        d.global_to_local_begin(acc)
    for d, acc in read:
        d.global_to_local_end(acc)
    if region != "all" or pass_layer_arg:
        # Every region runs layer by layer, whatever the args; so does a loop given the layer.
        target = iterset._native_iter
    if region in ("bottom", "top") and isinstance(iterset, Subset) and not any(
            isinstance(a.data, _Mat) for a in args):
        # Over some columns, the bottom (top) region is those columns' bottom (top) cells:
        # op2-rs's regions take the extruded set itself, a loop over chosen cells does this.
        # (Matrices' boundary masks apply to a region itself, so those loops keep it.)
        target, region = iterset._region_cells(region), "all"
    _record(kernel, args, native, target, region, bool(pass_layer_arg))
    # ... and the ghosts' increments sent to their owners after it (their values are read
    # through the Dat's views, which run the loop first).
    for d, acc in reduced:
        d.local_to_global_begin(acc)
    for d, acc in reduced:
        d.local_to_global_end(acc)
    loop = ParLoop.__new__(ParLoop)
    loop.kernel, loop.iterset, loop.args, loop._ready = kernel, iterset, args, None
    return loop


def _blocks(maps_and_regions):
    """``{(i, j): [(rmap, cmap, regions), ...]}`` from today's list (block (0, 0)) or dict."""
    if isinstance(maps_and_regions, dict):
        items = maps_and_regions.items()
    else:
        items = [((0, 0), maps_and_regions)]
    out = {}
    for key, entries in items:
        block = []
        for item in entries:
            if not isinstance(item, (tuple, list)) or len(item) < 2:
                raise SparsityTypeError("Sparsity maps are (row map, column map, iteration "
                                        "regions) triples")
            rmap, cmap = item[0], item[1]
            if not isinstance(rmap, _Map) or not isinstance(cmap, _Map):
                raise MapTypeError("Sparsity maps must be Maps")
            regions = item[2] if len(item) > 2 else None
            if regions not in (None, (), [], ALL, (ALL,), [ALL]):
                raise NotImplementedError("Sparsity iteration regions %r are not supported by "
                                          "op2rs yet" % (regions,))
            block.append((rmap, cmap))
        out[tuple(key)] = block
    return out


def _as_mixed_maps(blocks, nrows, ncols, dsets):
    """The (row, column) MixedMaps of a mixed Sparsity's blocks when they are one: a pair in
    every block, the same row map along a block row and column map down a block column, all
    from one iteration set; else None."""
    rmaps, cmaps = {}, {}
    if sorted(blocks) != [(i, j) for i in range(nrows) for j in range(ncols)]:
        return None
    for (i, j), entries in blocks.items():
        if len(entries) != 1:
            return None
        r, c = entries[0]
        if rmaps.setdefault(i, r) is not r or cmaps.setdefault(j, c) is not c:
            return None
    maps = [rmaps[i] for i in range(nrows)] + [cmaps[j] for j in range(ncols)]
    if len({id(m.iterset) for m in maps}) != 1:
        return None
    rm = [rmaps[i] for i in range(nrows)]
    cm = [cmaps[j] for j in range(ncols)]
    rm = MixedMap(rm) if nrows > 1 or isinstance(dsets[0], _MixedDataSet) else rm[0]
    cm = MixedMap(cm) if ncols > 1 or isinstance(dsets[1], _MixedDataSet) else cm[0]
    return (rm, cm)


class Sparsity(_Sparsity):
    """``Sparsity(dsets, maps_and_regions, name=None, nest=None, block_sparse=None,
    diagonal_block=True)``: ``dsets`` a (rows, columns) pair of DataSets, ``maps_and_regions``
    a list of ``(row map, column map, iteration regions)`` or, between mixed spaces, a dict of
    such lists by block ``(i, j)``: each block's pairs may start from iteration sets of their
    own, and a block may have none (a loop assembles one block through ``mat[i, j]``)."""

    def __new__(cls, dsets, maps_and_regions, name=None, nest=None, block_sparse=None,
                diagonal_block=True):
        _started()
        if name is not None and not isinstance(name, str):
            raise NameTypeError("name must be of type str")
        blocks = _blocks(maps_and_regions)
        pair = tuple(dsets) if isinstance(dsets, (tuple, list)) else (dsets, dsets)
        mixed = any(isinstance(d, (_MixedDataSet, _MixedSet)) for d in pair)
        if not mixed:
            if set(blocks) != {(0, 0)}:
                raise ValueError("a Sparsity between plain DataSets has one block, (0, 0)")
            sp = super().__new__(cls, dsets, blocks[(0, 0)], name)
            table = {(0, 0): [(r, c, None) for r, c in sp._maps]}
        else:
            nrows = len(pair[0]) if isinstance(pair[0], (_MixedDataSet, _MixedSet)) else 1
            ncols = len(pair[1]) if isinstance(pair[1], (_MixedDataSet, _MixedSet)) else 1
            mixed_maps = _as_mixed_maps(blocks, nrows, ncols, pair)
            if mixed_maps is not None:
                sp = super().__new__(cls, dsets, mixed_maps, name)
            else:
                # Blocks of their own maps (other iteration sets, several pairs, some blocks
                # empty): op2rs builds each block's pairs into the one pattern.
                sp = super().__new__(cls, dsets, {k: [(r, c) for r, c in v]
                                                  for k, v in blocks.items()}, name)
            table = {k: [(r, c, None) for r, c in sp._block_pairs.get(k, [])] for k in blocks}
        # Today's PyOP2 nests mixed matrices unless told not to. op2rs stores both as one
        # matrix; nesting decides whether the blocks keep their own assembly states.
        nested = bool(mixed if nest is None else nest) and mixed
        if sp.__dict__.setdefault("_nested", nested) != nested:
            sp = sp.__dict__.setdefault("_other_nesting", copy.copy(sp))
            sp._nested = nested
        sp._maps_and_regions = table
        sp._block_sparse = block_sparse
        sp._diagonal_block = diagonal_block
        return sp

    def __init__(self, *args, **kwargs):
        pass

    @staticmethod
    def _block(rows, cols, pairs):
        return Sparsity((rows, cols), [(r, c, None) for r, c in pairs])

    @classmethod
    def _empty_block(cls, rows, cols, diagonal):
        sp = super()._empty_block(rows, cols, diagonal)
        sp._nested, sp._maps_and_regions = False, {(0, 0): []}
        sp._block_sparse, sp._diagonal_block = None, True
        return sp

    @property
    def rcmaps(self):
        """``{(i, j): [(row map, column map), ...]}`` by block."""
        return {k: [(r, c) for r, c, _ in v] for k, v in self._maps_and_regions.items()}

    @property
    def iteration_regions(self):
        """``{(i, j): [regions, ...]}`` by block."""
        return {k: [g for _, _, g in v] for k, v in self._maps_and_regions.items()}

    @property
    def dims(self):
        """``dims[i][j]``: block ``(i, j)``'s (rows, columns) values per entry."""
        rows, cols = self.dsets
        rows = list(rows) if isinstance(rows, _MixedDataSet) else [rows]
        cols = list(cols) if isinstance(cols, _MixedDataSet) else [cols]
        return tuple(tuple((r.cdim, c.cdim) for c in cols) for r in rows)

    nested = property(lambda self: self._nested)

    def __repr__(self):
        return "Sparsity(%r, %r, name=%r, nested=%r, block_sparse=%r, diagonal_block=%r)" % (
            self.dsets, self._maps_and_regions, self.name, self._nested, self._block_sparse,
            self._diagonal_block)

    def __str__(self):
        return ("OP2 Sparsity: dsets %s, maps_and_regions %s, name %s, nested %s, "
                "block_sparse %s, diagonal_block %s" % (
                    self.dsets, self._maps_and_regions, self.name, self._nested,
                    self._block_sparse, self._diagonal_block))


class Mat(_Mat):
    """``Mat(sparsity, dtype=None, name=None)``; ``mat(access, (rmap, cmap))`` hands the kernel
    the element matrix packed: ``double A[Ar * r][Ac * c]`` (``Ar``, ``Ac`` the arities, ``(r,
    c)`` the block dims), row ``i * r + a`` being row node ``i``'s component ``a``, and likewise
    across (today's PyOP2's layout)."""

    ASSEMBLED = "ASSEMBLED"
    INSERT_VALUES = "INSERT_VALUES"
    ADD_VALUES = "ADD_VALUES"

    def __init__(self, sparsity, dtype=None, name=None):
        _started()
        super().__init__(sparsity, dtype, name)
        self.assembly_state = Mat.ASSEMBLED

    def change_assembly_state(self, new_state):
        """Moves to ``new_state`` (ASSEMBLED, INSERT_VALUES or ADD_VALUES), flushing what is
        pending when a program switches between inserting and adding."""
        if new_state != Mat.ASSEMBLED and self.assembly_state not in (Mat.ASSEMBLED,
                                                                       new_state):
            self._flush_assembly()
        self.assembly_state = new_state

    def _flush_assembly(self):
        """Finishes pending insertions or additions (between the two kinds)."""
        self._native.assemble()

    def _loop_wrote(self, access):
        # As today's loops: the matrix is left adding (INC) or inserting (WRITE) until
        # assembled (op2-la's loops assemble it themselves; the state is what programs read).
        super()._loop_wrote(access)
        new = Mat.ADD_VALUES if access is INC else Mat.INSERT_VALUES
        self.change_assembly_state(new)
        if self.sparsity.mixed and self.sparsity.nested:
            for m in self:
                m.change_assembly_state(new)

    @property
    def values(self):
        """The whole matrix, dense (assembled first, as today's)."""
        self.assemble()
        return _Mat.values.fget(self)

    def zero(self):
        """Assembles, then sets every entry to zero."""
        self.assemble()
        super().zero()

    def zero_rows(self, rows, diag_val=1.0):
        """Assembles, then zeroes scalar ``rows`` with ``diag_val`` on their diagonal."""
        self.assemble()
        super().zero_rows(rows, diag_val)

    def assemble(self):
        """Finishes pending insertions; the matrix (and, nested, each block) is ASSEMBLED. A
        PETSc handle gets them (across ranks every rank assembles together, as PETSc's)."""
        self._shared()
        self._native.assemble()
        self._wrote()
        if self.sparsity.mixed and self.sparsity.nested:
            for m in self:
                m.change_assembly_state(Mat.ASSEMBLED)
        else:
            self.change_assembly_state(Mat.ASSEMBLED)

    dims = property(lambda self: self.sparsity.dims)
    nblock_rows = property(lambda self: self.sparsity.dsets[0].size)
    nblock_cols = property(lambda self: self.sparsity.dsets[1].size)
    nbytes = property(lambda self: 8 * len(self._native.array()),
                      doc="Bytes of the stored values (8 per entry of the pattern).")

    def _scalar(self, index, side):
        """Scalar rows (columns) of block rows (columns) ``index``."""
        d = self.sparsity._pair_dims[side]
        return [int(i) * d + a for i in np.asarray(index).ravel() for a in range(d)]

    def _entries(self, rows, cols, values, add):
        r, c = self._scalar(rows, 0), self._scalar(cols, 1)
        v = np.asarray(values, dtype=self.dtype).ravel()
        if v.size != len(r) * len(c):
            raise ValueError("%d values for a %d x %d block" % (v.size, len(r), len(c)))
        # A complex matrix's values go as real and imaginary parts in turn.
        self._native_entries(r, c, v.view(np.float64).tolist(), add)
        self._wrote(False)

    def addto_values(self, rows, cols, values):
        """Adds the dense block ``values`` at block rows ``rows`` and block columns ``cols``
        (PETSc's ``MatSetValuesBlockedLocal`` with ``ADD_VALUES``)."""
        self.change_assembly_state(Mat.ADD_VALUES)
        self._entries(rows, cols, values, True)

    def set_values(self, rows, cols, values):
        """Inserts the dense block ``values`` at block rows ``rows``, block columns ``cols``."""
        self.change_assembly_state(Mat.INSERT_VALUES)
        self._entries(rows, cols, values, False)

    def set_local_diagonal_entries(self, rows, diag_val=1.0, idx=None):
        """Sets the diagonal of block rows ``rows`` to ``diag_val``: every component, or
        component ``idx`` only."""
        self.change_assembly_state(Mat.INSERT_VALUES)
        d = self.sparsity._pair_dims[0]
        comps = range(d) if idx is None else [idx]
        scalar = [int(r) * d + a for r in np.asarray(rows).ravel() for a in comps]
        self._diagonal(scalar, diag_val)

    def _diagonal(self, scalar, diag_val):
        self._diagonal_values(scalar, diag_val, False)
        self._wrote(False)

    def __call__(self, access, path, lgmaps=None, unroll_map=False):
        if lgmaps is not None:
            raise NotImplementedError("Mat args with lgmaps (PETSc's local-to-global maps) are "
                                      "not supported by op2rs")
        if not (isinstance(path, (tuple, list)) and len(path) == 2
                and all(isinstance(m, (_Map, _MixedMap)) for m in path)):
            return super().__call__(access, path)
        if access not in (WRITE, INC):
            raise ModeValueError("Mat access must be INC or WRITE")
        self._shared()
        rmap, cmap = path
        if not any(_same_map(r, rmap) and _same_map(c, cmap) for r, c in self.sparsity._maps):
            raise MapValueError("Path maps not in sparsity maps")
        if self.sparsity.mixed:
            # The element matrix of every block pair, blocks in turn along rows and columns.
            a = super().__call__(access, (rmap[_access.i[0]], cmap[_access.i[1]]))
            return _Arg(self, access, (rmap, cmap), False, self._lis_native(a, False),
                        a.iterset)
        native = _call(self._native.arg, access._native, rmap._native, cmap._native,
                       _op2.MatForm.Element, _boundary(rmap, cmap))
        return _Arg(self, access, (rmap, cmap), False, native, rmap.iterset)


class MatBlock(_MatBlock, Mat):
    """Block (i, j) of a Mat on mixed spaces. Its ``addto_values``, ``set_values`` and
    ``set_local_diagonal_entries`` take the block's own (block) rows and columns. In a nested
    matrix each block has its own assembly state; in a monolithic one (``nest=False``) the
    blocks share the parent's, and only the parent assembles."""

    def __init__(self, parent, sparsity, rows, cols):
        _MatBlock.__init__(self, parent, sparsity, rows, cols)
        self._state = Mat.ASSEMBLED

    @property
    def _nested(self):
        return self._parent.sparsity.nested

    @property
    def assembly_state(self):
        return self._state if self._nested else self._parent.assembly_state

    @assembly_state.setter
    def assembly_state(self, value):
        if self._nested:
            self._state = value
        else:
            self._parent.assembly_state = value

    def _flush_assembly(self):
        if self._nested:
            self._parent._native.assemble()
        else:
            self._parent._flush_assembly()

    def assemble(self):
        if not self._nested:
            raise RuntimeError("Should never call assemble on MatBlock")
        self._parent._shared()
        self._parent._native.assemble()
        self._parent._wrote()
        self.change_assembly_state(Mat.ASSEMBLED)

    def _entries(self, rows, cols, values, add):
        r = [int(self._rows[x]) for x in self._scalar(rows, 0)]
        c = [int(self._cols[x]) for x in self._scalar(cols, 1)]
        v = np.asarray(values, dtype=self.dtype).ravel()
        if v.size != len(r) * len(c):
            raise ValueError("%d values for a %d x %d block" % (v.size, len(r), len(c)))
        self._parent._native_entries(r, c, v.view(np.float64).tolist(), add)
        self._wrote(False)

    def __call__(self, access, path, lgmaps=None, unroll_map=False):
        """``mat[i, j](access, (rmap, cmap))``: a loop adding (inserting) this block's element
        matrices, ``double A[Ar * r][Ac * c]`` as for a Mat, through a pair of the block's own
        maps in the Sparsity (whatever the other blocks' iteration sets)."""
        if lgmaps is not None:
            raise NotImplementedError("Mat args with lgmaps (PETSc's local-to-global maps) are "
                                      "not supported by op2rs")
        if not (isinstance(path, (tuple, list)) and len(path) == 2
                and all(isinstance(m, _Map) for m in path)):
            raise MapTypeError("a block of a mixed Mat is reached through a (row map, column "
                               "map) pair of the block's own maps")
        if access not in (WRITE, INC):
            raise ModeValueError("Mat access must be INC or WRITE")
        self._shared()
        rmap, cmap = path
        return _Arg(self, access, (rmap, cmap), False,
                    self._component_arg(access, rmap, cmap), rmap.iterset)

    def _diagonal(self, scalar, diag_val):
        if self._index[0] != self._index[1]:
            raise MatTypeError("an off-diagonal block has no diagonal entries")
        rows = [int(self._rows[x]) for x in scalar]
        self._parent._diagonal_values(rows, diag_val, False)
        self._wrote(False)


Mat._block_class = MatBlock


# Today's loops built from a GlobalKernel and ParloopArgs (pyop2.global_kernel, pyop2.parloop).
from .global_kernel import (DatKernelArg, GlobalKernel, GlobalKernelArg,  # noqa: E402,F401
                            MapKernelArg, MatKernelArg, MixedDatKernelArg, MixedMatKernelArg,
                            PassthroughKernelArg)
from .parloop import (DatParloopArg, GlobalParloopArg, MatParloopArg,  # noqa: E402,F401
                      MixedDatParloopArg, MixedMatParloopArg, Parloop, PassthroughParloopArg,
                      parloop)
