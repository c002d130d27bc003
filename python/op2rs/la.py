"""Linear algebra (op2-la): ``Sparsity``, ``Mat`` (with its blocks on mixed spaces),
``Solver`` and ``solve``."""

import numbers
import warnings

import numpy as np

from . import _op2
from . import petsc as _petsc
from .access import MAT_MODES
from .data import Dat, MixedDat
from .exceptions import (DataSetTypeError, DatTypeError, IndexValueError, MapTypeError,
                         MapValueError, MatTypeError, ModeValueError, NameTypeError,
                         SparsityTypeError, call, translate)
from .maps import Map, MapPath, MixedMap, component_native
from .parloop import Arg
from .runtime import current, fresh_name, on_exit
from .sets import DataSet, MixedDataSet, MixedSet, Set, mixed_native

__all__ = ["Sparsity", "Mat", "Solver", "solve", "DEFAULT_SOLVER_PARAMETERS"]


def _as_dataset(d):
    if isinstance(d, Set):
        return d ** 1
    if not isinstance(d, DataSet):
        raise DataSetTypeError("Sparsity dsets must be Sets or DataSets")
    return d


_sparsities = on_exit({})


def _pairs(maps):
    """A Sparsity's ``maps`` argument as a list of (row map, column map) pairs."""
    if isinstance(maps, Map):
        return [(maps, maps)]
    if isinstance(maps, (tuple, list)) and len(maps) == 2 and all(
            isinstance(m, Map) for m in maps):
        return [tuple(maps)]
    if isinstance(maps, (tuple, list)):
        pairs = []
        for p in maps:
            if not (isinstance(p, (tuple, list)) and len(p) == 2
                    and all(isinstance(m, Map) for m in p)):
                raise MapTypeError("Sparsity maps must be Maps or (row map, column map) pairs")
            pairs.append(tuple(p))
        return pairs
    raise MapTypeError("Sparsity maps must be a Map, a pair of Maps or a list of pairs")


class Sparsity:
    """The pattern of a matrix: ``Sparsity(dsets, maps, name=None)`` with ``dsets`` one
    (Data)Set or a (rows, columns) pair, and ``maps`` one Map (rows and columns), a (row map,
    column map) pair, or a list of pairs whose patterns are joined. Asking again with the same
    objects gives the same Sparsity, whatever the order of the pairs or their repeats."""

    def __new__(cls, dsets, maps, name=None):
        current()
        key = _cache_key(dsets, maps)
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
                isinstance(dsets, (tuple, list))
                and any(isinstance(d, (MixedSet, MixedDataSet)) for d in dsets)):
            return self._build_mixed(dsets, maps, name)
        if isinstance(dsets, (Set, DataSet)):
            dsets = (dsets, dsets)
        if not isinstance(dsets, (tuple, list)) or len(dsets) != 2:
            raise DataSetTypeError("dsets must be a Set, a DataSet or a (rows, columns) pair")
        rows, cols = (_as_dataset(d) for d in dsets)
        pairs = _pairs(maps)
        if name is not None and not isinstance(name, str):
            raise NameTypeError("name must be of type str")
        for r, c in pairs:
            if r._values is None or c._values is None:
                raise MapValueError("Unpopulated map values when trying to build sparsity.")
            if r.toset is not rows.set:
                raise RuntimeError("Row map %s goes to %s, not the row set %s"
                                   % (r.name, r.toset.name, rows.set.name))
            if c.toset is not cols.set:
                raise RuntimeError("Column map %s goes to %s, not the column set %s"
                                   % (c.name, c.toset.name, cols.set.name))
            if r.iterset is not c.iterset:
                raise RuntimeError("Iterset of both maps in a pair must be the same")
        self._dsets = (rows, cols)
        # PyOP2 de-duplicates and sorts the pairs.
        self._maps = _unique_sorted(pairs)
        self._name = fresh_name("sparsity", name)
        self._block_cache = None
        self._built = None

    def _build_mixed(self, dsets, maps, name):
        if not isinstance(dsets, (tuple, list)):
            dsets = (dsets, dsets)
        if len(dsets) != 2:
            raise DataSetTypeError("dsets must be a (rows, columns) pair")
        # One side may be plain (PyOP2's blocks of one row or one column): it is taken as a
        # mixed space of one component.
        as_mixed = [d if isinstance(d, MixedDataSet) else
                    MixedDataSet(d) if isinstance(d, MixedSet) else
                    MixedDataSet([d]) if isinstance(d, (Set, DataSet)) else None for d in dsets]
        if None in as_mixed:
            raise DataSetTypeError("Sparsity dsets must be Sets, DataSets or mixed ones")
        rows, cols = as_mixed
        if isinstance(maps, dict):
            mixed_maps, blocks = None, _block_pairs(maps, rows, cols)
        else:
            if isinstance(maps, (Map, MixedMap)):
                maps = (maps, maps)
            if not (isinstance(maps, (tuple, list)) and len(maps) == 2
                    and all(isinstance(m, (Map, MixedMap)) for m in maps)):
                raise MapTypeError("a mixed Sparsity needs a MixedMap, a (rows, columns) pair "
                                   "or a dict of (row map, column map) pairs by block")
            mixed_maps = tuple(_as_mixed_map(m) for m in maps)
            if mixed_maps[0].iterset is not mixed_maps[1].iterset:
                raise RuntimeError("Iterset of both maps in a pair must be the same")
            if mixed_maps[0].toset != rows.set or mixed_maps[1].toset != cols.set:
                raise RuntimeError("the MixedMaps do not go to the Sparsity's MixedDataSets")
            blocks = {(i, j): [(r, c)] for i, r in enumerate(mixed_maps[0].split)
                      for j, c in enumerate(mixed_maps[1].split)}
        rdims, cdims = tuple(d.cdim for d in rows), tuple(d.cdim for d in cols)
        if len(set(rdims)) > 1 or len(set(cdims)) > 1:
            # One block shape is what op2-la's block matrices and the flat Dats of mixed
            # solves have; PyOP2's nest gave each block its own.
            raise NotImplementedError(
                "mixed sparsities whose components have different dims (%s by %s) are not in "
                "op2rs; components of one dim are" % (rdims, cdims))
        if name is not None and not isinstance(name, str):
            raise NameTypeError("name must be of type str")
        self._dsets = tuple(d if isinstance(d, (MixedDataSet, DataSet)) else
                            _as_dataset(d) if isinstance(d, Set) else MixedDataSet(d)
                            for d in dsets)
        self._maps = [] if mixed_maps is None else [tuple(maps)]
        self._mixed_maps = mixed_maps
        # Each block's (row map, column map) pairs: loops assemble a block through them.
        self._block_pairs = blocks
        self._component_sets = (tuple(d.set for d in rows), tuple(d.set for d in cols))
        self._mixed_cdims = (rdims[0], cdims[0])
        self._name = fresh_name("sparsity", name)
        self._block_cache = None
        self._built = None

    @property
    def _native(self):
        """The runtime's pattern, built on first use (a Mat, ``rowptr``, ``nnz``...): the maps'
        values are checked against their target sets then, as a Map's are where first used, so
        that a Sparsity PyOP2 could describe but never fill still describes itself."""
        if self._built is None:
            if self.mixed:
                # Over the mixed sets' flat numbering: the MixedMaps' pair (loops through
                # them), and each block's pairs lifted there (loops over one block), the
                # latter in the pattern already when there are MixedMaps.
                pairs = []
                if self._mixed_maps is not None:
                    pairs.append(tuple(_op2.mixed_map_flat(m._mixed_native())
                                       for m in self._mixed_maps))
                rsets, csets = self._component_sets
                for (i, j), entries in sorted(self._block_pairs.items()):
                    pairs.extend((component_native(r, rsets, i), component_native(c, csets, j))
                                 for r, c in entries)
                self._built = call(_op2.Sparsity, pairs, self._pair_dims, self._name)
            else:
                self._built = call(_op2.Sparsity,
                                   [(r._native, c._native) for r, c in self._maps],
                                   (self._dsets[0].cdim, self._dsets[1].cdim), self._name)
        return self._built

    mixed = property(lambda self: hasattr(self, "_mixed_maps"))
    dsets = property(lambda self: self._dsets)
    maps = property(lambda self: list(self._maps))
    rmaps = property(lambda self: [r for r, _ in self._maps])
    cmaps = property(lambda self: [c for _, c in self._maps])
    # The (rows, columns) values per entry; `dims` is this in PyOP2 0.8-0.10 (today's pyop2
    # nests it per block), so op2rs itself reads `_pair_dims`.
    _pair_dims = property(lambda self: self._mixed_cdims if self.mixed
                          else (self._dsets[0].cdim, self._dsets[1].cdim))
    dims = property(lambda self: self._pair_dims)
    shape = property(lambda self: (len(self._dsets[0]), len(self._dsets[1])) if self.mixed
                     else (1, 1))
    nrows = property(lambda self: _owned(self._dsets[0]))
    ncols = property(lambda self: _owned(self._dsets[1]))
    name = property(lambda self: self._name)
    rowptr = property(lambda self: self._pattern().rowptr())
    colidx = property(lambda self: self._pattern().colidx())
    nnz = property(lambda self: self._pattern().row_counts())
    onnz = property(lambda self: np.zeros_like(self._pattern().row_counts()))
    nz = property(lambda self: self._pattern().nnz)

    def _pattern(self):
        """The runtime's pattern, or for a Sparsity of no pairs (a block of a mixed one whose
        dict gave it no maps) the pattern PETSc gives such a block: the diagonal when square,
        else nothing. (A matrix needs maps: ``Mat`` of such a Sparsity is op2-rs's error.)"""
        if self.mixed or self._maps:
            return self._native
        rows, cols = self._dsets
        n = _owned(rows) * rows.cdim
        square = self.__dict__.get("_no_maps_diagonal")
        if square is None:
            square = rows.set is cols.set and rows.cdim == cols.cdim
        return _NoMapsPattern(n, square)
    onz = property(lambda self: 0)

    def _block_rows(self):
        """The blocks, row by row: the Sparsity itself, or on mixed spaces one Sparsity per
        pair of components (made when first asked for)."""
        if self._block_cache is None:
            if not self.mixed:
                self._block_cache = [[self]]
            else:
                rows, cols = (list(d) if isinstance(d, MixedDataSet) else [d]
                              for d in self._dsets)
                # PETSc's diagonal blocks of a square matrix hold the diagonal, its others
                # do not, even between the same sets.
                square = (self._component_sets[0] == self._component_sets[1]
                          and self._pair_dims[0] == self._pair_dims[1])
                self._block_cache = [
                    [self._block(r, c, self._block_pairs[i, j]) if (i, j) in self._block_pairs
                     else self._empty_block(r, c, square and i == j)
                     for j, c in enumerate(cols)] for i, r in enumerate(rows)]
        return self._block_cache

    # Today's pyop2 keeps the blocks, row by row, here.
    _blocks = property(_block_rows)

    @staticmethod
    def _block(rows, cols, pairs):
        """The Sparsity of one block from its (row map, column map) pairs (today's pyop2 spells
        its maps otherwise)."""
        return Sparsity((rows, cols), pairs)

    @classmethod
    def _empty_block(cls, rows, cols, diagonal):
        """The Sparsity of a block without maps: its diagonal (``diagonal``) or nothing. Not
        cached: two such blocks between the same sets may differ in their diagonal."""
        sp = object.__new__(cls)
        Sparsity._build(sp, (rows, cols), [], None)
        sp._no_maps_diagonal = diagonal
        return sp

    def __getitem__(self, idx):
        """``sp[i, j]``: block (i, j); ``sp[i]``: block row i."""
        if isinstance(idx, tuple):
            i, j = idx
            return self._block_rows()[i][j]
        return self._block_rows()[idx]

    def __iter__(self):
        """The blocks, row by row."""
        for row in self._block_rows():
            yield from row

    def __len__(self):
        r, c = self.shape
        return r * c

    def __contains__(self, pair):
        return any(r is pair[0] and c is pair[1] for r, c in self._maps)

    def __str__(self):
        return "OP2 Sparsity: dsets %s, rmaps %s, cmaps %s, name %s" % (
            self.dsets, self.rmaps, self.cmaps, self.name)

    def __repr__(self):
        return "Sparsity(%r, %r, %r)" % (self.dsets, self.maps, self.name)


class _NoMapsPattern:
    """The pattern of a Sparsity of no pairs, shaped as the runtime's: ``n`` scalar rows,
    each with its diagonal (``square``) or nothing."""

    def __init__(self, n, square):
        self._n, self._square = n, square

    def rowptr(self):
        return np.arange(self._n + 1, dtype=np.int64) * int(self._square)

    def colidx(self):
        return np.arange(self._n if self._square else 0, dtype=np.int32)

    def row_counts(self):
        return np.full(self._n, int(self._square), dtype=np.int32)

    nnz = property(lambda self: self._n if self._square else 0)


def _block_key(key):
    """A block's key ``(i, j)`` as two ints (``MapTypeError`` for anything else)."""
    if not (isinstance(key, tuple) and len(key) == 2
            and all(isinstance(k, numbers.Integral) for k in key)):
        raise MapTypeError("a mixed Sparsity's blocks are keyed (i, j), not %r" % (key,))
    return int(key[0]), int(key[1])


def _block_pairs(blocks, rows, cols):
    """``{(i, j): [(row map, column map), ...]}`` checked against the mixed (rows, columns):
    each block's maps go to its components and start from one iteration set per pair."""
    out = {}
    for key, entries in blocks.items():
        i, j = _block_key(key)
        if not (0 <= i < len(rows) and 0 <= j < len(cols)):
            raise IndexValueError("block (%d, %d) of a %d by %d mixed Sparsity"
                                  % (i, j, len(rows), len(cols)))
        pairs = _pairs(entries) if entries else []
        for r, c in pairs:
            if r._values is None or c._values is None:
                raise MapValueError("Unpopulated map values when trying to build sparsity.")
            if r.toset is not rows[i].set or c.toset is not cols[j].set:
                raise RuntimeError("block (%d, %d): maps %s and %s do not go to %s and %s"
                                   % (i, j, r.name, c.name, rows[i].set.name, cols[j].set.name))
            if r.iterset is not c.iterset:
                raise RuntimeError("Iterset of both maps in a pair must be the same")
            if r.offset is not None or c.offset is not None:
                raise NotImplementedError("block (%d, %d): extruded maps in a mixed Sparsity "
                                          "are not supported by op2rs" % (i, j))
        out.setdefault((i, j), []).extend(pairs)
    return {k: _unique_sorted(v) for k, v in out.items() if v}


def _unique_sorted(pairs):
    """``pairs`` without repeats, in one order whatever the order given (PyOP2 sorted them)."""
    seen = {}
    for p in pairs:
        seen.setdefault((id(p[0]), id(p[1])), p)
    return [seen[k] for k in sorted(seen, key=lambda k: (seen[k][0].name, seen[k][1].name, k))]


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


def _cache_key(dsets, maps):
    """The cache key of ``Sparsity(dsets, maps)``: the (rows, columns) pair and the sorted
    unique map pairs, so that every spelling of one sparsity finds it."""
    if isinstance(dsets, (Set, DataSet, MixedSet, MixedDataSet)):
        dsets = (dsets, dsets)
    if isinstance(maps, dict):
        # (Keys and pairs that are not such raise here what building would.)
        blocks = tuple(sorted((_block_key(k), tuple(sorted(set(_key(p) for p in _pairs(v)))))
                              for k, v in maps.items() if v))
        return (_key(dsets), ("blocks",) + blocks)
    try:
        if isinstance(maps, MixedMap):
            maps = (maps, maps)
        pairs = [tuple(maps)] if (isinstance(maps, (tuple, list)) and len(maps) == 2 and all(
            isinstance(m, MixedMap) for m in maps)) else _pairs(maps)
    except MapTypeError:
        return (_key(dsets), _key(maps))
    return (_key(dsets), tuple(sorted(set(_key(p) for p in pairs))))


def _vector_values(v):
    """A copy of the values of a petsc4py ``Vec``, or of the Vec a ``vec``/``vec_ro`` context
    yields (PyOP2's early ``dat.vec_ro`` was the Vec itself); None for anything else."""
    # A Vec first: petsc4py's Vecs are contexts too (yielding their arrays).
    if hasattr(v, "array_r") and hasattr(v, "getSize"):
        return np.array(v.array_r)
    if hasattr(v, "__enter__") and hasattr(v, "__exit__"):
        with v as vec:
            if hasattr(vec, "array_r") and hasattr(vec, "getSize"):
                return np.array(vec.array_r)
    return None


class Mat:
    """A matrix on a Sparsity: ``Mat(sparsity, dtype=None, name=None)``, float64 values, or
    complex128 ones (``dtype=numpy.complex128``: kernels write ``double complex`` element
    matrices; op2rs's solvers and PETSc handles are for real matrices)."""

    def __init__(self, sparsity, dtype=None, name=None):
        current()
        if not isinstance(sparsity, Sparsity):
            raise SparsityTypeError("sparsity must be a Sparsity")
        if name is not None and not isinstance(name, str):
            raise NameTypeError("name must be of type str")
        dt = np.dtype(np.float64 if dtype is None else dtype)
        if dt not in (np.float64, np.complex128):
            raise RuntimeError("op2rs matrices hold float64 or complex128 values, not %s" % dt)
        self._sparsity = sparsity
        self._name = fresh_name("mat", name)
        self._native = call(_op2.Mat, sparsity._native, self._name, dt == np.complex128)
        self._dtype = dt
        self._blocks = None

    sparsity = property(lambda self: self._sparsity)
    dims = property(lambda self: self._sparsity._pair_dims)
    dtype = property(lambda self: self._dtype)
    ctype = property(lambda self: "double complex" if self._complex else "double")
    name = property(lambda self: self._name)
    _complex = property(lambda self: self._dtype == np.complex128)

    def __call__(self, access, path, flatten=False):
        if access not in MAT_MODES:
            raise ModeValueError("Mat access must be INC or WRITE")
        self._shared()
        if not isinstance(path, (tuple, list)) or len(path) != 2:
            raise ValueError("A Mat arg needs a (row map[op2.i[0]], column map[op2.i[1]]) path")
        if not all(type(p) is MapPath for p in path):
            raise TypeError("A Mat arg's path is two map[op2.i[n]] items")
        rmap, cmap = path[0].map, path[1].map
        if not any(_same_map(r, rmap) and _same_map(c, cmap) for r, c in self._sparsity._maps):
            raise MapValueError("Path maps not in sparsity maps")
        if self._sparsity.mixed and flatten:
            raise MatTypeError("Mats on mixed spaces cannot be flattened")
        rdim, cdim = (self._sparsity._pair_dims if flatten else (1, 1))
        return Arg(self, access, tuple(path), flatten, None, rmap.iterset, True,
                   (rmap.arity * rdim, cmap.arity * cdim))

    def _lis_native(self, arg, per_point):
        """The argument as the native module takes it for a per-point (0.8.2) or a
        once-per-element kernel."""
        rpath, cpath = arg.path
        if self._sparsity.mixed:
            if not per_point and self._sparsity._pair_dims != (1, 1):
                # PyOP2's buffer had one value per entry ([sum Ar][sum Ac]) whatever the
                # dims, and mixed Mats cannot be flattened.
                raise NotImplementedError(
                    "once-per-element kernels on mixed matrices of vector components (dims %s);"
                    " per-point (0.8.2) ones are" % (self._sparsity._pair_dims,))
            # 0.8.2 called per block and per point, the indices offset by the block starts:
            # the entries of the mixed maps' rows in turn.
            return self._native.arg_mixed(
                arg.access._native, _as_mixed_map(rpath.map)._mixed_native(),
                _as_mixed_map(cpath.map)._mixed_native(),
                _op2.MatForm.Entries if per_point else _op2.MatForm.Element)
        dims = self._sparsity._pair_dims
        boundary = None if arg.flatten else _boundary(rpath.map, cpath.map)
        if per_point:
            # 0.8.2 called flattened ones once per scalar entry (Ar*r by Ac*c points).
            form = (_op2.MatForm.EntriesFlattened if arg.flatten and dims != (1, 1)
                    else _op2.MatForm.Entries)
            return call(self._native.arg, arg.access._native, rpath.map._native,
                        cpath.map._native, form, boundary)
        form = _op2.MatForm.Element
        if dims != (1, 1):
            if not arg.flatten:
                # PyOP2 0.8.3 to 0.10 assembled these wrongly (overlapping blocks); its
                # programs pass flatten=True.
                raise NotImplementedError(
                    "once-per-element kernels on block matrices need flatten=True (the "
                    "element matrix component by component)")
            form = _op2.MatForm.Flattened
        return call(self._native.arg, arg.access._native, rpath.map._native, cpath.map._native,
                    form, boundary)

    def _split_arg(self, arg):
        """One argument per block of a mixed matrix (for reading a loop's arguments)."""
        if not self._sparsity.mixed:
            return (arg,)
        rmap, cmap = arg.path[0].map, arg.path[1].map
        r, c = arg.path[0].index, arg.path[1].index
        return tuple(
            Arg(self[i, j], arg.access, (rm[r], cm[c]), False, None, rm.iterset, True,
                (rm.arity, cm.arity))
            for i, rm in enumerate(rmap.split) for j, cm in enumerate(cmap.split))

    def zero(self):
        """Sets every entry to zero (the pattern stays)."""
        self._shared()
        self._native.zero()
        self._wrote()

    def assemble(self):
        """Finishes pending insertions (loops assemble the matrices they fill: this is for
        programs that call it themselves, as PyOP2's did)."""
        self._shared()
        self._native.assemble()
        self._wrote()

    def zero_rows(self, rows, diag_val=1.0):
        """Zeroes scalar ``rows`` (a Subset's indices or an iterable of row numbers) and puts
        ``diag_val`` on their diagonal."""
        if hasattr(rows, "indices"):
            rows = rows.indices
        rows = [int(r) for r in np.asarray(rows).ravel()]
        self._shared()
        d = complex(diag_val) if self._complex else float(diag_val)
        call(self._native.zero_rows, rows, d.real)
        if d.imag:
            self._diagonal_values(rows, d, False)
        self._wrote()

    def _diagonal_values(self, rows, value, add):
        """Adds (``add``) or sets ``value`` on the diagonal of scalar ``rows``: a complex
        matrix's through its entries, as real and imaginary parts."""
        self._shared()
        if self._complex:
            v = complex(value)
            for r in rows:
                call(self._native.entries, [r], [r], [v.real, v.imag], add)
        else:
            call(self._native.diagonal_entries, rows, [float(value)] * len(rows), add)

    def set_diagonal(self, vec):
        """Sets the diagonal from a Dat on the rows (a MixedDat for a matrix of mixed
        spaces)."""
        r, c = self._sparsity.dsets
        if self._sparsity.mixed:
            if r != c:
                raise MatTypeError("Cannot set diagonal of non-square matrix")
            if not isinstance(vec, MixedDat):
                raise TypeError("Can only set the diagonal of a mixed matrix from a MixedDat")
            if vec.dataset.set != r.set:
                raise ValueError("%s does not live on the matrix's rows" % (vec.name,))
            if self._complex:
                raise NotImplementedError("set_diagonal of a complex matrix of mixed spaces; "
                                          "set each block's diagonal")
            v = np.asarray(call(_as_f64(vec)._mixed_native().flat_values), np.float64)
            # The flat numbering has every component's owned rows before any halo's.
            v = v[: self._sparsity._native.shape[0]]
        else:
            if r is not c and (r.set is not c.set or r.cdim != c.cdim):
                raise MatTypeError("Cannot set diagonal of non-square matrix")
            if isinstance(vec, Dat):
                v = np.asarray(vec.data_ro, dtype=self._dtype).ravel()
            else:
                v = _vector_values(vec)
                if v is None:
                    raise TypeError("Can only set diagonal from a Dat or a PETSc Vec")
                v = v.astype(self._dtype)
        rows = self._sparsity._native.shape[0]
        if len(v) != rows:
            raise ValueError("set_diagonal needs %d values (one per row), %s has %d"
                             % (rows, getattr(vec, "name", "the Vec"), len(v)))
        self._shared()
        if self._complex:
            for r, value in enumerate(v):
                call(self._native.entries, [r], [r], [value.real, value.imag], False)
        else:
            call(self._native.diagonal_entries, list(range(len(v))), v.tolist(), False)
        self._wrote()

    def inc_local_diagonal_entries(self, rows, diag_val=1.0):
        """Adds ``diag_val`` to the diagonal entries of scalar ``rows``."""
        rows = [int(r) for r in np.asarray(rows).ravel()]
        self._shared()
        self._diagonal_values(rows, diag_val, True)
        self._wrote(False)

    @property
    def values(self):
        """The whole matrix as a dense NumPy array (a copy)."""
        self._shared()
        return self._of_dtype(self._native.dense())

    @property
    def array(self):
        """The stored values in CSR order (a copy; see the sparsity's rowptr and colidx)."""
        self._shared()
        return self._of_dtype(self._native.array())

    def _of_dtype(self, parts):
        """The native values (a complex matrix's real and imaginary parts in turn) as the
        matrix's dtype."""
        return parts.view(np.complex128) if self._complex else parts

    @property
    def handle(self):
        """The petsc4py ``Mat`` over this matrix's own values (made on first use; needs
        petsc4py): PETSc's calls on it read and write the matrix. Sequential programs only;
        entries outside the sparsity are refused, as PyOP2's matrices refused them."""
        h = self.__dict__.get("_handle")
        if h is None:
            if self._complex:
                raise NotImplementedError(
                    "Mat %s holds complex values: op2rs shares a matrix's values with a PETSc "
                    "of real scalars only" % self._name)
            h = self.__dict__["_handle"] = _petsc.mat_handle(self)
        return h

    def _native_entries(self, rows, cols, values, add):
        """Adds (``add``) or inserts the dense block ``values`` (float64s; a complex matrix's
        real and imaginary parts in turn) at scalar ``rows`` and ``cols``. Entries outside the
        pattern are PETSc's to allow, as on PyOP2's matrices: with a handle whose
        NEW_NONZERO_ALLOCATION_ERR the program turned off they go in and the matrix grows;
        otherwise they are an error."""
        # What PETSc wrote through the handle first (and its pattern, if it grew).
        self._shared()
        try:
            self._native.entries(rows, cols, values, add)
        except _op2.Op2Failure as e:
            if e.args[0] != "NotInPattern" or not _petsc.grow_through_handle(self, rows, cols):
                raise translate(e) from None
            # The pattern now has room for every entry.
            call(self._native.entries, rows, cols, values, add)

    def _storage(self):
        """The native matrix holding the values now (a new one once a PETSc handle grew)."""
        return self._native

    def _shared(self):
        """Checks that a PETSc handle, if made, still works on this matrix's values."""
        _petsc.check_shared(self, self.__dict__.get("_handle"))

    def _wrote(self, collective=True):
        """op2 wrote the values: a PETSc handle, if made, learns so (a parallel one gets them
        at the next write every rank makes, ``collective``, as PETSc's assembly is)."""
        _petsc.changed(self.__dict__.get("_handle"), self, collective)

    def _loop_wrote(self, access):
        """A loop assembled into the matrix (called once it is recorded)."""
        self._wrote()

    @property
    def blocks(self):
        """The blocks, a list of rows: ``[[self]]``, or on mixed spaces one :class:`MatBlock`
        per pair of components."""
        if self._blocks is None:
            if not self._sparsity.mixed:
                self._blocks = [[self]]
            else:
                sp = self._sparsity
                rows, cols = (
                    [_flat_scalars(sets, c, dim) for c in range(len(sets))]
                    for sets, dim in zip(sp._component_sets, sp._pair_dims))
                self._blocks = [
                    [self._block_class(self, sp[i, j], rows[i], cols[j])
                     for j in range(len(cols))] for i in range(len(rows))]
                for i, row in enumerate(self._blocks):
                    for j, b in enumerate(row):
                        b._index = (i, j)
        return self._blocks

    def __getitem__(self, idx):
        """``mat[i, j]``: block (i, j); ``mat[i]``: block row i."""
        if isinstance(idx, tuple):
            i, j = idx
            return self.blocks[i][j]
        return self.blocks[idx]

    def __iter__(self):
        """The blocks, row by row."""
        for row in self.blocks:
            yield from row

    def __len__(self):
        return len(self._sparsity)

    def __mul__(self, v):
        """``mat * dat``: a new Dat on the row data set (a Dat of another type is read as
        float64 values); a new MixedDat for a matrix of mixed spaces and a MixedDat."""
        if self._sparsity.mixed:
            if not isinstance(v, MixedDat):
                raise TypeError("Can only multiply a Mat of mixed spaces by a MixedDat")
            self._shared()
            y = MixedDat(self._sparsity.dsets[0])
            call(self._native.mult_mixed, _as_f64(v)._mixed_native(), y._mixed_native())
            return y
        if not isinstance(v, Dat):
            values = _vector_values(v)
            if values is None:
                raise TypeError("Can only multiply a Mat by a Dat or a PETSc Vec")
            # Early PyOP2 multiplied by a Dat's PETSc Vec (``dat.vec_ro``) too: its values,
            # as a Dat on the columns.
            cols = self._sparsity.dsets[1]
            if values.size != cols.size * cols.cdim:
                raise ValueError("a Vec of %d values for a matrix of %d columns"
                                 % (values.size, cols.size * cols.cdim))
            v = Dat(cols)
            # The Vec holds the owned values; halos are the Dat's to fill.
            v.data[:] = values.reshape(v.data.shape)
        self._shared()
        if self._complex or v.dtype == np.complex128:
            # Complex: a complex product (in one process).
            if v.dtype != np.complex128:
                v = Dat(v.dataset, v.data_ro_with_halos.astype(np.complex128), np.complex128)
            y = Dat(self._sparsity.dsets[0], dtype=np.complex128)
            call(self._native.mult_complex, v._native, y._native)
            return y
        if v.dtype != np.float64:
            v = Dat(v.dataset, v.data_ro_with_halos.astype(np.float64), np.float64)
        y = Dat(self._sparsity.dsets[0])
        call(self._native.mult, v._native, y._native)
        return y

    def __str__(self):
        return "OP2 Mat: %s, sparsity (%s), datatype %s" % (self._name, self._sparsity,
                                                             self._dtype.name)

    def __repr__(self):
        return "Mat(%r, %r, %r)" % (self._sparsity, self._dtype, self._name)


def _flat_scalars(sets, c, dim):
    """The whole matrix's scalar rows (columns) of component ``c``'s owned elements, ``dim``
    per element: the mixed sets' flat numbering puts every component's core elements first,
    so a component's rows need not be together."""
    flat = np.asarray(call(_op2.mixed_flat_indices, mixed_native(sets), c, sets[c].size),
                      dtype=np.int64)
    return (flat[:, None] * dim + np.arange(dim)).ravel()


class MatBlock(Mat):
    """Block (i, j) of a matrix on mixed spaces: the entries of the component pair, read from
    the whole matrix (its ``values``), on the block's Sparsity. ``rows`` and ``cols`` are the
    whole matrix's scalar rows and columns of the block's, in the block's order."""

    def __init__(self, parent, sparsity, rows, cols):
        self._parent, self._rows, self._cols = parent, rows, cols
        self._sparsity = sparsity
        self._name = "%s_block_%d_%d" % (parent.name, rows[0] if len(rows) else 0,
                                         cols[0] if len(cols) else 0)
        self._dtype = parent.dtype
        self._blocks = [[self]]

    def __call__(self, access, path, flatten=False):
        raise NotImplementedError("a loop assembles a mixed matrix through its MixedMaps, not "
                                  "block by block")

    def _component_arg(self, access, rmap, cmap):
        """The native arg assembling this block's element matrices through ``rmap`` and
        ``cmap`` (a pair of this block's in the Sparsity), placed in the parent's flat
        numbering."""
        i, j = self._index
        sp = self._parent.sparsity
        found = next(((r, c) for r, c in sp._block_pairs.get((i, j), ())
                      if _same_map(r, rmap) and _same_map(c, cmap)), None)
        if found is None:
            raise MapValueError("Path maps not in sparsity maps")
        rsets, csets = sp._component_sets
        return call(self._parent._native.arg, access._native,
                    component_native(found[0], rsets, i), component_native(found[1], csets, j),
                    _op2.MatForm.Element, None)

    @property
    def values(self):
        return self._parent.values[np.ix_(self._rows, self._cols)]

    def _shared(self):
        self._parent._shared()

    def _storage(self):
        return self._parent._native

    def _wrote(self, collective=True):
        self._parent._wrote(collective)

    @property
    def array(self):
        raise NotImplementedError("the blocks of a mixed matrix are stored as one matrix; "
                                  "read the block's values")

    @property
    def handle(self):
        """The block of the parent's handle: PETSc's local submatrix of the block's rows and
        columns, which writes into the parent in the block's own numbers."""
        h = self.__dict__.get("_handle")
        if h is None:
            h = self.__dict__["_handle"] = _petsc.block_handle(self._parent, self._rows,
                                                               self._cols)
        return h

    def zero(self):
        raise NotImplementedError("zero the whole mixed matrix")

    def zero_rows(self, rows, diag_val=1.0):
        raise NotImplementedError("zero rows of the whole mixed matrix")

    def set_diagonal(self, vec):
        raise NotImplementedError("set the diagonal of the whole mixed matrix")

    def inc_local_diagonal_entries(self, rows, diag_val=1.0):
        raise NotImplementedError("add to the diagonal of the whole mixed matrix")

    def __mul__(self, v):
        raise NotImplementedError("multiply by the whole mixed matrix")


# The class of a mixed matrix's blocks (today's pyop2 has its own).
Mat._block_class = MatBlock


def _boundary(rmap, cmap):
    """The entries a loop leaves out of a matrix at extruded boundaries (PyOP2's boundary
    masks): where the maps' iteration set has ``_extruded_bcs = (bottom, top)``, the columns
    masked in the row map's and the column map's ``bottom_mask`` (``top_mask``); else None."""
    bcs = getattr(rmap.iterset, "_extruded_bcs", None)
    if not bcs or rmap.offset is None or cmap.offset is None:
        return None

    def masked(m, mask):
        return [int(k) for k in np.flatnonzero(np.asarray(getattr(m, mask)) < 0)]

    ends = tuple((masked(rmap, mask), masked(cmap, mask)) if on else None
                 for on, mask in zip(bcs, ("bottom_mask", "top_mask")))
    return ends if any(e is not None and (e[0] or e[1]) for e in ends) else None


def _as_mixed_map(m):
    """``m``, or for a plain Map a MixedMap of it alone (one per Map, so that a Sparsity and
    the loops filling its matrix share its native map)."""
    if isinstance(m, MixedMap):
        return m
    got = m.__dict__.get("_as_mixed")
    if got is None:
        got = m.__dict__["_as_mixed"] = MixedMap([m])
    return got


def _as_f64(v):
    """A MixedDat of float64 values: ``v``, or a copy of it (PyOP2's matrices took any
    vector PETSc could read)."""
    if v.dtype == np.float64:
        return v
    return MixedDat([Dat(d.dataset, d.data_ro_with_halos.astype(np.float64), np.float64)
                     for d in v.split])


def _same_map(a, b):
    """PyOP2 accepts value-equal maps in a Mat arg, not only the sparsity's own objects."""
    if a is b:
        return True
    if isinstance(a, MixedMap) or isinstance(b, MixedMap):
        return a == b
    return a == b and a._native is not None and b._native is not None


DEFAULT_SOLVER_PARAMETERS = {
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
        self.parameters = dict(DEFAULT_SOLVER_PARAMETERS)
        self.parameters.update(parameters or kwargs)
        Solver._count += 1
        self.reason = None
        self.iterations = 0
        self.residual = None

    def update_parameters(self, parameters):
        """Merges ``parameters`` (a dict of PyOP2's keys) into the solver's."""
        self.parameters.update(parameters)

    def solve(self, A, x, b):
        """Solves ``A x = b`` into ``x``."""
        if not isinstance(A, Mat):
            raise MatTypeError("A must be a Mat")
        if not isinstance(x, (Dat, MixedDat)) or not isinstance(b, (Dat, MixedDat)):
            raise DatTypeError("x and b must be Dats")
        if A._complex:
            raise NotImplementedError("Mat %s holds complex values: op2rs's solvers are for "
                                      "real matrices" % A.name)
        A._shared()
        p = self.parameters
        options = call(_op2.SolverOptions, str(p["ksp_type"]), str(p["pc_type"]),
                       float(p["ksp_rtol"]), float(p["ksp_atol"]), float(p["ksp_divtol"]),
                       int(p["ksp_max_it"]), int(p["ksp_gmres_restart"]),
                       bool(p.get("ksp_initial_guess_nonzero", False)))
        if isinstance(x, MixedDat) or isinstance(b, MixedDat):
            if not (isinstance(x, MixedDat) and isinstance(b, MixedDat)):
                raise DatTypeError("a mixed solve needs MixedDats for x and b")
            outcome = call(_op2.solve_mixed, A._native, x._mixed_native(), b._mixed_native(),
                           options)
        else:
            outcome = call(A._native.solve, x._native, b._native, options)
        for d in x:
            d._used()
            d._needs_halo = True
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
            warnings.warn(msg)


def solve(M, x, b):
    """Solves ``M x = b`` into ``x`` with a default Solver."""
    if not isinstance(M, Mat):
        raise MatTypeError("M must be a Mat")
    if not isinstance(x, (Dat, MixedDat)) or not isinstance(b, (Dat, MixedDat)):
        raise DatTypeError("x and b must be Dats")
    Solver().solve(M, x, b)
