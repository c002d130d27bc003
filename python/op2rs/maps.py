"""Maps between sets: ``Map`` (with ``offset=`` for extruded sets), ``MixedMap``, and the
paths a data argument takes through them (``map[k]``, ``map[op2.i[n]]``)."""

import numpy as np

from . import _op2
from .access import IterationIndex, i
from .exceptions import (ArityTypeError, DataValueError, IndexTypeError, IndexValueError,
                         MapTypeError, MapValueError, SetTypeError, call)
from .runtime import current, fresh_name, on_exit
from .sets import MixedSet, Set, _Parts, mixed_native

__all__ = ["Map", "MixedMap", "MapPath"]


class MapPath:
    """``map[k]`` or ``map[op2.i[n]]``: the path of a data argument (``index`` is ``k`` or the
    ``IterationIndex``). A Map keeps its paths, so one path is one object (compared and hashed
    by identity)."""

    __slots__ = ("map", "index")

    def __init__(self, map, index):
        self.map = map
        self.index = index

    @property
    def idx(self):
        """The index, as PyOP2's indexed map arguments named it."""
        return self.index

    def __repr__(self):
        return "%r[%r]" % (self.map, self.index)


class Map:
    """A map from ``iterset`` to ``toset``, ``arity`` entries per element."""

    def __init__(self, iterset, toset, arity, values=None, name=None, offset=None, parent=None,
                 bt_masks=None):
        self._rt = current()
        if not isinstance(iterset, Set) or not isinstance(toset, Set):
            raise SetTypeError("iterset and toset must be Sets")
        if not isinstance(arity, (int, np.integer)) or isinstance(arity, bool):
            raise ArityTypeError("arity must be an int")
        self._iterset, self._toset, self._arity = iterset, toset, int(arity)
        self._name = fresh_name("map", name)
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
        # Boundary masks: -1 at the columns an extruded loop's bottom (top) cells leave out of
        # a matrix when its iteration set's `_extruded_bcs` asks (PyOP2 0.9+ ignored masks on
        # a map without offsets, as op2rs does; 0.8 refused them, so no 0.8 program has one).
        self._bottom_mask = np.zeros(len(offset)) if offset is not None else []
        self._top_mask = np.zeros(len(offset)) if offset is not None else []
        if offset is not None and bt_masks is not None:
            try:
                bottom, top = bt_masks
                for mask, cols in ((self._bottom_mask, bottom), (self._top_mask, top)):
                    cols = np.asarray(cols, dtype=np.int64).ravel()
                    if cols.size and (cols.min() < 0 or cols.max() >= self._arity):
                        raise IndexError(cols)
                    mask[cols] = -1
            except (TypeError, ValueError, IndexError):
                raise DataValueError("Map %s: bt_masks must be two lists of columns below the "
                                     "arity %d" % (self._name, self._arity)) from None
        self._parent = parent
        self._values = None
        if values is None and iterset.total_size == 0:
            # Nothing to map from: PyOP2 let such a map go without values.
            values = np.zeros((0, self._arity), np.int32)
        if values is None:
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

    def __getattr__(self, name):
        """The runtime's map (``_native``), declared on first use. PyOP2 accepted any values at
        construction and only a loop or sparsity reading them past the target set went wrong;
        op2-rs checks them here, when an argument, a sparsity or a mixed map first needs the map,
        so that a program that builds such a map and never uses it runs as it did, and one that
        uses it gets MapValueError instead of reading out of bounds. Once made it is a plain
        attribute (a loop's arguments read it on every call)."""
        if name != "_native":
            raise AttributeError(name)
        if self._values is None:
            return None
        rows = np.ascontiguousarray(self._values[: self._iterset.exec_size]).ravel()
        if self._offset is None:
            # Negative values are PyOP2's "no element": matrices leave those entries out of
            # their patterns and assembly; loops refuse the map for data (MapValueError).
            native = call(self._rt.decl_map, self._iterset._native, self._toset._native,
                          self._arity, rows, self._name, None,
                          bool(rows.size) and bool(rows.min() < 0))
        else:
            native = call(self._rt.decl_map, self._iterset._native_iter, self._toset._native,
                          self._arity, rows, self._name, [int(o) for o in self._offset])
        self._native = native
        return native

    iterset = property(lambda self: self._iterset)
    toset = property(lambda self: self._toset)
    arity = property(lambda self: self._arity)
    arities = property(lambda self: (self._arity,))
    arange = property(lambda self: (0, self._arity))
    name = property(lambda self: self._name)
    offset = property(lambda self: self._offset)
    bottom_mask = property(lambda self: self._bottom_mask)
    top_mask = property(lambda self: self._top_mask)
    split = property(lambda self: (self,))

    @property
    def values(self):
        return self._values_all()[: self._iterset.size]

    @property
    def values_with_halo(self):
        return self._values_all()

    def _values_all(self):
        if self._values is None:
            raise MapValueError("Map %s has no values" % self._name)
        return self._values

    @classmethod
    def fromhdf5(cls, iterset, toset, f, name):
        """The Map ``name`` of the open h5py file or group ``f``: a 2-D integer array, one row
        per element of ``iterset``."""
        slot = f[name]
        arity = slot.shape[1:]
        if len(arity) != 1:
            raise ArityTypeError("Unrecognised arity value %s" % (arity,))
        return cls(iterset, toset, arity[0], slot[()], name)

    def __getitem__(self, index):
        # The common case first: par_loop calls are on the hot path of every time step.
        if type(index) is int and 0 <= index < self._arity:
            paths = self.__dict__.get("_paths")
            if paths is None:
                paths = self._paths = [MapPath(self, k) for k in range(self._arity)]
            return paths[index]
        if isinstance(index, IterationIndex):
            if index.index not in (0, 1):
                raise IndexValueError("op2.i[n] with n 0 or 1")
            # Kept, like map[k], so that a Dat's argument cache hits.
            lis = self.__dict__.setdefault("_lis_paths", {})
            p = lis.get(index.index)
            if p is None:
                p = lis[index.index] = MapPath(self, i[index.index])
            return p
        if isinstance(index, slice):
            raise NotImplementedError("Slicing a Map is not supported")
        if not isinstance(index, (int, np.integer)) or isinstance(index, bool):
            raise IndexTypeError("Map index must be an int or op2.i[n]")
        if not 0 <= index < self._arity:
            raise IndexValueError("Map index %d out of range 0..%d" % (index, self._arity))
        return MapPath(self, int(index))

    def __len__(self):
        return 1

    def __iter__(self):
        yield self

    def __eq__(self, other):
        """Maps are equal with the same iteration and target sets, arity and values."""
        if self is other:
            return True
        if not isinstance(other, Map):
            return False
        return (self._iterset is other._iterset and self._toset is other._toset
                and self._arity == other._arity
                and np.array_equal(self._values, other._values))

    def __ne__(self, other):
        return not self == other

    # Maps are dictionary keys by identity (sparsity caches), as in PyOP2.
    __hash__ = object.__hash__

    def __le__(self, other):
        """Whether this map is ``other`` or derives from it (through ``parent=``)."""
        m = self
        while m is not None:
            if m == other:
                return True
            m = m._parent
        return False

    def __str__(self):
        return "OP2 Map: %s from (%s) to (%s) with arity %s" % (
            self._name, self._iterset, self._toset, self._arity)

    def __repr__(self):
        return "Map(%r, %r, %r, None, %r)" % (self._iterset, self._toset, self._arity,
                                              self._name)


class MixedMap(_Parts):
    """One Map per component of a MixedSet, from one iteration set: ``MixedMap(maps)``."""

    def __init__(self, maps):
        current()
        maps = tuple(maps)
        if not maps or not all(isinstance(m, Map) for m in maps):
            raise TypeError("All components of a MixedMap must be Maps")
        if len({id(m.iterset) for m in maps}) > 1:
            raise MapTypeError("All maps in a MixedMap need to share the same iterset")
        self._parts = self._maps = maps
        self._native = None
        self._paths = {}

    def _mixed_native(self):
        if self._native is None:
            to = mixed_native([m.toset for m in self._maps])
            name = "mixed_%s" % "_".join(m.name for m in self._maps)
            self._native = call(_op2.decl_mixed_map, current(), to,
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
            p = self._paths.get(index.index)
            if p is None:
                p = self._paths[index.index] = MapPath(self, i[index.index])
            return p
        if isinstance(index, (int, np.integer)) and not isinstance(index, bool):
            # As a tuple of components (the mixed classes index their parts).
            return self._maps[index]
        raise IndexTypeError("MixedMap index must be an int or op2.i[n]")

    def __str__(self):
        return "OP2 MixedMap composed of Maps: %s" % (self._maps,)

    def __repr__(self):
        return "MixedMap(%r)" % (self._maps,)


# Component maps lifted into mixed sets' flat numbering, one per (map, mixed set, component),
# each kept with the objects its key names (so that no id in a key is reused).
_component_maps = on_exit({})


def component_native(map_, sets, c):
    """op2-rs's map of ``map_`` (into ``sets[c]``) into the flat set of the mixed set of
    ``sets``: how a loop reaches block row (column) ``c`` of a matrix on mixed spaces. Made once
    per map, tuple of sets and component, so that a Sparsity and the loops meet the same map."""
    key = (id(map_), tuple(id(s) for s in sets), c)
    got = _component_maps.get(key)
    if got is None:
        native = call(_op2.decl_component_map, current(), mixed_native(sets), c, map_._native,
                      "%s@component_%d" % (map_.name, c))
        got = _component_maps[key] = (map_, tuple(sets), native)
    return got[2]
