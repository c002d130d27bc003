"""Sets and data sets: ``Set``, ``ExtrudedSet``, ``Subset``, ``DataSet``, the mixed ones
(``MixedSet``, ``MixedDataSet``) and ``Halo``, as PyOP2 0.8 to 0.10 defined them."""

import numpy as np

from . import _op2
from .exceptions import (DimTypeError, SetTypeError, SizeTypeError, SubsetIndexOutOfBounds,
                         call)
from .runtime import current, fresh_name, on_exit

__all__ = ["Set", "ExtrudedSet", "Subset", "DataSet", "MixedSet", "MixedDataSet", "Halo"]


def _is_int(x):
    return isinstance(x, (int, np.integer)) and not isinstance(x, bool)


def _layers_key(s):
    """A set's layers as something comparable: None, an int, or per entity a tuple of rows."""
    layers = getattr(s, "_layers", None)
    if layers is None or _is_int(layers):
        return layers
    return tuple(map(tuple, np.asarray(layers).tolist()))


class Set:
    """A set of mesh entities: ``Set(size)`` or ``Set([core, owned, exec_halo, total])``.
    ``layers=L > 1`` (PyOP2 up to 0.9.1) makes it an extruded iteration set: ``L - 1`` cells
    over each element (see :class:`ExtrudedSet`)."""

    # The native set loops over it run: the extruded cells for an extruded set, else `_native`.
    _native_iter = None
    # Whether a loop of direct args only over an extruded set runs every layer (today's
    # pyop2) rather than once per column (PyOP2 0.8-0.10).
    _direct_per_layer = False

    def __init__(self, size=None, name=None, halo=None, layers=None):
        rt = current()
        if _is_int(size):
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
        if layers is not None and (not _is_int(layers) or layers < 1):
            raise SizeTypeError("layers must be a positive int")
        if any(b < a for a, b in zip(sizes, sizes[1:])) or sizes[0] < 0:
            raise SizeTypeError("Set sizes must be non-decreasing and non-negative")
        self._name = fresh_name("set", name)
        core, owned, exech, total = sizes
        if halo is not None and not isinstance(halo, Halo):
            raise TypeError("halo must be a Halo")
        if halo is not None:
            from types import SimpleNamespace
            halo.verify(SimpleNamespace(size=owned, total_size=total))
        exchanges = None if halo is None else (
            [(r, [int(e) for e in v]) for r, v in sorted(halo.sends.items())],
            [(r, [int(e) for e in v]) for r, v in sorted(halo.receives.items())])
        self._native = call(rt.decl_set, (core, owned - core, exech - owned, total - exech),
                            self._name, exchanges)
        self._halo = halo
        self._layers = layers
        if layers is not None and layers > 1:
            self._native_iter = call(rt.decl_extruded_set, self._native, int(layers),
                                     "%s_layers" % self._name)

    def _cells_per_column(self):
        """How many cells each column holds (a Set extruded with ``layers=``)."""
        return np.full(self.total_size, (self._layers or 1) - 1, dtype=np.int64)

    def _columns(self):
        """Each column's cell count and first cell (cells numbered column by column)."""
        per = self._cells_per_column()
        return per, np.concatenate(([0], np.cumsum(per)[:-1]))

    core_size = property(lambda self: self._native.sizes[0])
    size = property(lambda self: self._native.size)
    exec_size = property(lambda self: self._native.exec_size)
    total_size = property(lambda self: self._native.total_size)
    name = property(lambda self: self._name)
    halo = property(lambda self: self._halo)
    layers = property(lambda self: self._layers)
    # PyOP2's device backends' partition size; op2-rs chooses its own, so it is only kept.
    partition_size = 1024

    @property
    def sizes(self):
        return (self.core_size, self.size, self.exec_size, self.total_size)

    def __setattr__(self, name, value):
        # An attribute PyOP2's releases did not have is refused rather than kept and ignored: a
        # program that sets one (its development branch's `horizontal_interior_facets`, say)
        # would otherwise run a loop other than the one it means.
        if not name.startswith("_") and not hasattr(type(self), name):
            raise AttributeError("op2rs sets have no attribute %r (PyOP2 0.8-0.10's had none "
                                 "either)" % name)
        object.__setattr__(self, name, value)

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

    def __str__(self):
        return "OP2 Set: %s with size %s" % (self._name, self.size)

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
        if not _is_int(layers) or layers < 2:
            raise SizeTypeError("Number of layers must be > 1 (not %r)" % (layers,))
        self._declare(parent, int(layers), int(layers))

    def _declare(self, parent, layers, column_layers):
        """Declares the set: ``layers`` as the program gave them, ``column_layers`` the node
        layers of every column (one int) or of each (an array over the parent's elements,
        halos included)."""
        rt = current()
        if not isinstance(parent, Set) or isinstance(parent, ExtrudedSet):
            raise TypeError("Parent must be a Set")
        self._parent = parent
        self._native = parent._native
        self._name = parent.name
        self._halo = parent.halo
        self._layers = layers
        per_column = not _is_int(column_layers)
        self._column_layers = (np.asarray(column_layers, dtype=np.int64) if per_column
                               else np.full(parent.total_size, column_layers, dtype=np.int64))
        shown = ([int(v) for v in self._column_layers] if per_column else column_layers)
        self._native_iter = call(rt.decl_extruded_set, parent._native, shown,
                                 "%s_layers" % parent.name)

    def _cells_per_column(self):
        """How many cells each column of the parent (halos included) holds."""
        return self._column_layers - 1

    parent = property(lambda self: self._parent)

    def __getattr__(self, name):
        if name == "_parent" or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._parent, name)

    def __contains__(self, s):
        return s is self._parent

    def __str__(self):
        return "OP2 ExtrudedSet: %s with size %s and %s layers" % (
            self._name, self.size, self._layers)

    def __repr__(self):
        return "ExtrudedSet(%r, %r)" % (self._parent, self._layers)


class Subset(Set):
    """Some elements of a Set: ``Subset(superset, indices)``. A loop over it runs only those
    elements; Dats and Maps stay on the superset. A Subset of a Subset selects from the first
    one's elements (its indices are composed into the original superset)."""

    def __init__(self, superset, indices):
        rt = current()
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
        self._native = call(rt.decl_subset, superset._native, self._indices,
                            "%s_subset" % superset.name)
        self._halo = superset.halo
        self._layers = superset._layers
        if superset._native_iter is not None:
            # Of an extruded set: every layer's cell of the chosen columns (numbered column by
            # column), for loops that go up the columns.
            per, first = superset._columns()
            # Each chosen column's cells: its first cell, then one after another.
            counts = per[self._indices]
            starts = np.repeat(first[self._indices], counts)
            steps = np.arange(counts.sum()) - np.repeat(np.cumsum(counts) - counts, counts)
            cells = starts + steps
            self._native_iter = call(rt.decl_subset, superset._native_iter,
                                     cells.astype(np.int32), "%s_subset_layers" % superset.name)

    superset = property(lambda self: self._superset)
    indices = property(lambda self: self._indices)

    def _region_cells(self, region):
        """Of a subset of an extruded set's columns: the runtime's subset of the bottom
        (``region`` "bottom") or top ("top") cell of each chosen column that has cells, made
        once, for loops over those cells alone."""
        made = self.__dict__.setdefault("_regions", {})
        if region not in made:
            per, first = self._superset._columns()
            chosen = self._indices[per[self._indices] > 0]
            cells = first[chosen] + (per[chosen] - 1 if region == "top" else 0)
            made[region] = call(current().decl_subset, self._superset._native_iter,
                                cells.astype(np.int32),
                                "%s_subset_%s" % (self._superset.name, region))
        return made[region]

    def __pow__(self, dim):
        raise NotImplementedError("Deriving a DataSet from a Subset is unsupported")

    def __getattr__(self, name):
        # PyOP2: any other attribute falls through to the superset (none before it is set:
        # a half-made Subset, whose constructor raised, then has no attributes to recurse on).
        if name == "_superset" or name.startswith("__"):
            raise AttributeError(name)
        return getattr(self._superset, name)

    def __str__(self):
        return "OP2 Subset: %s with sizes %s" % (self._name, self.sizes)

    def __repr__(self):
        return "Subset(%r, %r)" % (self._superset, self._indices.tolist())


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
        self._name = fresh_name("dset", name)

    set = property(lambda self: self._set)
    dim = property(lambda self: self._dim)
    cdim = property(lambda self: int(np.prod(self._dim)))
    name = property(lambda self: self._name)

    def __getattr__(self, name):
        if name == "_set" or name.startswith("__"):
            raise AttributeError(name)
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

    def __str__(self):
        return "OP2 DataSet: %s on set %s, with dim %s" % (self._name, self._set, self._dim)

    def __repr__(self):
        return "DataSet(%r, %r, %r)" % (self._set, self._dim, self._name)


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
        # Of one class (or one a subclass of the other: today's pyop2 subclasses these).
        return (isinstance(other, type(self)) or isinstance(self, type(other))) and \
            self._parts == other._parts

    def __ne__(self, other):
        return not self == other

    def __hash__(self):
        return hash(tuple(id(p) for p in self._parts))


# op2-rs's mixed set of each tuple of sets: MixedSets are equal by their components (PyOP2 made
# new ones freely: a MixedMap's toset, a MixedDataSet's set), and a mixed Dat must live on the
# very mixed set its map goes to.
_mixed_sets = on_exit({})


def mixed_native(sets):
    """op2-rs's mixed set of ``sets`` (one per tuple of set objects)."""
    key = tuple(id(s) for s in sets)
    got = _mixed_sets.get(key)
    if got is None:
        name = "mixed_%s" % "_".join(s.name for s in sets)
        got = (tuple(sets), call(_op2.decl_mixed_set, current(), [s._native for s in sets], name))
        _mixed_sets[key] = got
    return got[1]


class MixedSet(_Parts):
    """An ordered tuple of Sets: ``MixedSet(sets)``."""

    def __init__(self, sets):
        current()
        sets = tuple(sets)
        if not sets or not all(isinstance(s, Set) for s in sets):
            raise TypeError("All components of a MixedSet must be Sets")
        if len({_layers_key(s) for s in sets}) > 1:
            raise AssertionError("All components of a MixedSet must have the same layers")
        self._parts = self._sets = sets

    def _mixed_native(self):
        return mixed_native(self._sets)

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

    def __str__(self):
        return "OP2 MixedSet composed of Sets: %s" % (self._sets,)

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

    def __str__(self):
        return "OP2 MixedDataSet composed of DataSets: %s" % (self._dsets,)

    def __repr__(self):
        return "MixedDataSet(%r)" % (self._dsets,)


class Halo:
    """PyOP2's hand-built halo: ``Halo(sends, receives, comm=None, gnn2unn=None)``, ``sends``
    (``receives``) a dict from rank to the local numbers of the owned (halo) elements sent to
    (received from) it, in matching order on the two ranks, or a list of arrays, one per rank.
    A Set declared with it exchanges its Dats' halos through them (the ranks agree on the
    order once, when the Set is declared); ``op2.DistributedMesh`` builds halos itself."""

    def __init__(self, sends, receives, comm=None, gnn2unn=None):
        from .mpi import MPI
        current()
        self._sends, self._receives = _per_rank(sends), _per_rank(receives)
        if comm is not None and getattr(comm, "size", None) != MPI.comm.size:
            raise ValueError("Halo communicator not MPI.comm (op2rs runs on MPI's world)")
        self._comm = MPI.comm
        rank = self._comm.rank
        assert rank not in self._sends, "Halo was specified with self-sends on rank %d" % rank
        assert rank not in self._receives, \
            "Halo was specified with self-receives on rank %d" % rank
        self._global_to_petsc_numbering = gnn2unn

    sends = property(lambda self: self._sends)
    receives = property(lambda self: self._receives)
    comm = property(lambda self: self._comm)
    global_to_petsc_numbering = property(lambda self: self._global_to_petsc_numbering)

    def verify(self, s):
        """Asserts that the sends are owned elements of ``s`` and the receives halo ones."""
        for dest, sends in self._sends.items():
            assert (sends >= 0).all() and (sends < s.size).all(), \
                "Halo send to %d is invalid (outside owned elements)" % dest
        for source, receives in self._receives.items():
            assert (receives >= s.size).all() and (receives < s.total_size).all(), \
                "Halo receive from %d is invalid (not in halo elements)" % source


def _per_rank(lists):
    """A dict from rank to an int32 array: a dict as it is, a list of per-rank arrays without
    its empty ones."""
    if isinstance(lists, dict):
        items = lists.items()
    else:
        items = enumerate(lists)
    return {int(r): np.asarray(v, dtype=np.int32).ravel() for r, v in items
            if isinstance(lists, dict) or len(v) > 0}
