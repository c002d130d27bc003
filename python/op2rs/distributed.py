"""Meshes declared in global numbering and partitioned across MPI ranks (op2-mpi), an op2rs
extension: PyOP2 programs built their halos themselves, op2rs partitions a mesh and builds
each rank's halos."""

import numpy as np

from . import _op2
from .data import Dat
from .datatypes import as_dtype, as_values
from .exceptions import call
from .maps import Map
from .mpi import MPI
from .runtime import current, fresh_name
from .sets import DataSet, Set

__all__ = ["DistributedMesh", "LocalMesh"]


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
    in the values: ``"everywhere"`` (every rank, the same values), ``"root"`` (rank 0; the
    others pass ``None``) or ``"slices"`` (each rank its block of every set's rows,
    ``mesh.rows(set)``, as a parallel file read gives them: no rank ever holds the whole mesh).

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

    def rows(self, set):
        """The rows ``(start, stop)`` of ``set`` this rank hands in with ``input="slices"``
        (every set's rows in blocks over the ranks, sizes differing by at most one)."""
        # The runtime's own rank in MPI's world (a communicator set on op2.MPI may number the
        # ranks otherwise).
        size, ranks, rank = set.size, MPI._own.size, MPI._own.rank
        return size * rank // ranks, size * (rank + 1) // ranks

    def _count(self, set, per_row):
        """How many values this rank hands in for ``set`` (``per_row`` per element)."""
        if self._root and MPI._own.rank != 0:
            return 0
        if self._input == "slices":
            lo, hi = self.rows(set)
            return (hi - lo) * per_row
        return set.size * per_row

    def _values_here(self, values, dtype, set, per_row, what):
        count = self._count(set, per_row)
        if self._root and MPI._own.rank != 0:
            return np.zeros(0, dtype)
        return as_values(values, dtype, count, what)

    def Set(self, size, name=None):
        """A set of ``size`` elements in global numbering."""
        name = fresh_name("set", name)
        return _GlobalSet(self, call(self._native.decl_set, int(size), name), int(size), name)

    def Map(self, iterset, toset, arity, values, name=None):
        """A map in global numbering: ``arity`` global ids of ``toset`` per element of
        ``iterset`` (handed in as ``input`` says)."""
        name = fresh_name("map", name)
        v = self._values_here(values, np.int32, iterset, int(arity), "Map %s" % name)
        i = call(self._native.decl_map, iterset._index, toset._index, int(arity), v, name)
        return _GlobalMap(self, i, iterset, toset, int(arity), name)

    def Dat(self, dataset, data=None, dtype=None, name=None):
        """Data on a set of the mesh, in global order (zeros without ``data``)."""
        if isinstance(dataset, _GlobalSet):
            dataset = dataset ** 1
        name = fresh_name("dat", name)
        dt = as_dtype(dtype, data)
        v = (np.zeros(self._count(dataset.set, dataset.cdim), dt) if data is None
             else self._values_here(data, dt, dataset.set, dataset.cdim, "Dat %s" % name))
        i = call(self._native.decl_dat, dataset.set._index, dataset.cdim, dt.name, v, name)
        return _GlobalDat(self, i, dataset, dt, name)

    def partition(self, partitioner="metis", map=None, coords=None, renumber=False):
        """Collective: partitions with ``metis`` (the graph ``map`` induces on its target
        set: ParMETIS's call on the graph where it lies in a package built with its
        ``parmetis`` feature, else METIS on the graph gathered on rank 0, for meshes that fit
        one rank), ``ptscotch`` (the same graph, partitioned where it lies by PT-Scotch; a
        package built with its ``ptscotch`` feature), ``geometric`` (recursive coordinate bisection of ``coords``' set) or
        ``blocks``, and declares each rank's part."""
        by = map._index if map is not None else (coords._index if coords is not None else None)
        local = call(self._native.partition, current(), partitioner, by, bool(renumber))
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
            o._views, o._args, o._needs_halo, o._soa = [], {}, False, False
        else:
            raise TypeError("a LocalMesh holds the sets, maps and Dats of its DistributedMesh")
        self._objects[id(x)] = (x, o)
        return o

    def gather(self, dat):
        """Collective: the owned values of every rank in global order on rank 0 (``None``
        elsewhere)."""
        v = call(self._native.gather, dat._native)
        if v is None:
            return None
        return v.reshape(-1) if dat.cdim == 1 else v.reshape((-1,) + dat.dim)

    def global_ids(self, set):
        """The global id of each of this rank's elements of ``set``, in local order."""
        for x, o in self._objects.values():
            if o is set:
                return self._native.global_ids(x._index)
        raise ValueError("not a set of this mesh")

    @property
    def report(self):
        return self._native.report()
