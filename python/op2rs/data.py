"""Data: ``Dat`` (values on a set), ``MixedDat`` (one Dat per component of a mixed set),
``Global`` (values on no set, a loop's reductions) and ``Const`` (values every kernel reads by
name), with their loop arguments, views and arithmetic."""

import weakref

import numpy as np

from . import _op2
from . import petsc as _petsc
from .access import DAT_MODES, GLOBAL_MODES, READ, RW, WRITE, INC, IterationIndex
from .datatypes import as_cstr, as_dim, as_dtype, as_values
from .exceptions import (DataSetTypeError, DataValueError, DatTypeError, DimTypeError,
                         IndexValueError, MapTypeError, MapValueError, ModeValueError, NameTypeError, NonUniqueNameError, call)
from .maps import Map, MapPath, MixedMap
from .parloop import Arg
from .runtime import current, fresh_name, viewed
from .sets import DataSet, MixedDataSet, MixedSet, Set, _Parts, mixed_native

__all__ = ["Dat", "MixedDat", "Global", "Const"]


def _vec_contexts(what):
    """The ``vec``, ``vec_ro`` and ``vec_wo`` properties of a class with ``vec_context``: the
    contexts reading and writing, reading, and writing ``what``."""
    return tuple(property(lambda self, access=access: self.vec_context(access),
                          doc="A context yielding a PETSc Vec to %s %s." % (verb, what))
                 for access, verb in ((RW, "read and write"), (READ, "read"), (WRITE, "write")))


class Dat:
    """Data on a set: ``Dat(dataset, data=None, dtype=None, name=None)``; ``dataset`` a
    DataSet, a Set (``set ** 1``) or a Dat (a copy of it)."""

    def __init__(self, dataset, data=None, dtype=None, name=None, soa=None, uid=None):
        rt = current()
        if isinstance(dataset, Dat):
            other = dataset
            Dat.__init__(self, other._dataset, None, other.dtype, "copy_of_%s" % other.name,
                         other.soa)
            other.copy(self)
            return
        if isinstance(dataset, Set):
            dataset = dataset ** 1
        if not isinstance(dataset, DataSet):
            raise DataSetTypeError("dataset must be a DataSet or a Set")
        self._dataset = dataset
        self._name = fresh_name("dat", name)
        self._dtype = as_dtype(dtype, data)
        count = dataset.total_size * dataset.cdim
        vals = None if data is None else as_values(data, self._dtype, count,
                                                   "Dat %s" % self._name)
        # A DataSet of dim 0 (``set ** 0``, today's pyop2) has no values: op2-rs's Dats hold
        # at least one per element, so its Dat keeps one no view shows (kernels given it
        # have nothing to read, as in PyOP2).
        if dataset.cdim == 0:
            vals = None
        self._native = call(rt.decl_dat, dataset.set._native, max(dataset.cdim, 1),
                            self._dtype.name, vals, self._name)
        self._views = []
        self._args = {}
        self._needs_halo = False
        # PyOP2's structure-of-arrays request: its layout was a device one, and kernels read
        # such a Dat through OP2_STRIDE(a, idx), which op2rs writes out as a[idx] on every
        # backend (see kernels.expand_stride). The values are the same either way.
        self._soa = bool(soa)

    dataset = property(lambda self: self._dataset)
    dim = property(lambda self: self._dataset.dim)
    cdim = property(lambda self: self._dataset.cdim)
    nbytes = property(lambda self: self.dtype.itemsize * self._dataset.total_size
                      * self._dataset.cdim,
                      doc="Bytes of the values on this process, halos included.")
    dtype = property(lambda self: self._dtype)
    ctype = property(lambda self: as_cstr(self._dtype))
    name = property(lambda self: self._name)
    soa = property(lambda self: self._soa)
    split = property(lambda self: (self,))

    @property
    def shape(self):
        n = self._dataset.total_size
        return (n,) if self.cdim == 1 else (n,) + tuple(self.dim)

    @property
    def needs_halo_update(self):
        """Whether a loop or a writable view changed the owned values since the halo was
        last read. op2-rs exchanges halos itself when a loop needs them; the flag is kept
        for programs that look at it."""
        return self._needs_halo

    @needs_halo_update.setter
    def needs_halo_update(self, value):
        self._needs_halo = bool(value)

    def __call__(self, access, path=None, flatten=False):
        # The same argument is made every time step: it is made once and kept on the Dat, by
        # access, then path (two lookups of objects hashed by identity, no key to build).
        try:
            return (self._args[access] if not flatten else self._args[access, True])[path]
        except (KeyError, TypeError):  # not made yet, or not an argument (_arg says why)
            pass
        a = self._arg(access, path, flatten)
        by_path = self._args.setdefault(access if not flatten else (access, True), {})
        if len(by_path) < 64:
            try:
                by_path[path] = a
            except TypeError:
                pass
        return a

    # How a whole map row reaches the kernel, and the reductions it may take: PyOP2 0.8-0.10
    # passed an array of pointers; today's pyop2 packs the values (and allows MIN and MAX).
    _row_form = _op2.ArgForm.Row
    _row_reductions = ()

    def _arg(self, access, path, flatten):
        whole_row = path is not None and type(path) is not MapPath
        if access not in (READ, WRITE, RW, INC) and not (
                whole_row and access in self._row_reductions):
            raise ModeValueError("Dat access must be READ, WRITE, RW or INC")
        # A loop writing the Dat flags its halo; views handed out are seen to by par_loop.
        after = None if access is READ else type(self)._after_write
        if path is None:
            return Arg(self, access, None, flatten,
                       self._native.arg(access._native, _op2.ArgForm.Direct),
                       self._dataset.set, after=after)
        m = path.map if type(path) is MapPath else path
        if not isinstance(m, Map):
            raise MapTypeError("the path must be a Map, map[k] or map[op2.i[n]]")
        if m.toset is not self._dataset.set:
            raise MapValueError("To Set of Map does not match Set of Dat.")
        if m._native is None and m.iterset.total_size > 0:
            raise MapValueError("Map %s has no values" % m.name)
        # flatten=True changes nothing for map[k]: PyOP2 flattened only whole rows and local
        # iteration spaces, and handed a map entry's row as one pointer either way.
        if type(path) is MapPath:
            if isinstance(path.index, IterationIndex):
                # Its form depends on the kernel: par_loop asks Arg.lis_native.
                extent = (m.arity * (self.cdim if flatten else 1),)
                return Arg(self, access, path, flatten, None, m.iterset, True, extent, after)
            native = self._native.arg(access._native, _op2.ArgForm.Entry, m._native, path.index)
        else:
            # flatten=True: one pointer per value, component-major (a row, for dim 1).
            form = _op2.ArgForm.RowFlattened if flatten and self.cdim > 1 else self._row_form
            native = self._native.arg(access._native, form, m._native)
        return Arg(self, access, path, flatten, native, m.iterset, after=after)

    def _lis_native(self, arg, per_point):
        """``dat(access, map[op2.i[n]])`` as the native module takes it for a per-point
        (0.8.2) or a once-per-element kernel."""
        if per_point:
            # flatten=True: arity * cdim calls, each with one value, component-major.
            form = (_op2.ArgForm.EntriesFlattened if arg.flatten and self.cdim > 1
                    else _op2.ArgForm.Entries)
        else:
            form = _op2.ArgForm.BufferFlattened if arg.flatten else _op2.ArgForm.Buffer
        return self._native.arg(arg.access._native, form, arg.path.map._native)

    def _after_write(self, arg):
        self._needs_halo = True

    def _view(self, writable, halos):
        a = call(self._native.view, writable)
        if not halos:
            a = a[: self._dataset.size]
        if self.cdim == 0:
            a = a.reshape(-1, 1)[:, :0]
        a = a.reshape(a.shape[:1]) if self.cdim == 1 else a.reshape((a.shape[0],) + self.dim)
        if writable:
            self._views = [w for w in self._views if w() is not None]
            self._views.append(weakref.ref(a))
            viewed.add(self)
        return a

    @property
    def data(self):
        """A writable view of the owned rows over op2-rs's memory (runs what it depends on)."""
        a = self._view(True, False)
        self._needs_halo = True
        return a

    @property
    def data_ro(self):
        """A read-only view of the owned rows (runs the loops writing the Dat)."""
        return self._view(False, False)

    @property
    def data_with_halos(self):
        """A writable view of every row, halo included (brought up to date first: across
        ranks every rank asks together, as PyOP2's halo exchange)."""
        self._refresh_halo()
        a = self._view(True, True)
        self._needs_halo = True
        return a

    @property
    def data_ro_with_halos(self):
        """A read-only view of every row, halo included (brought up to date: across ranks
        every rank asks together)."""
        self._refresh_halo()
        a = self._view(False, True)
        self._needs_halo = False
        return a

    def _refresh_halo(self):
        # op2-rs brings halos up for loops; host views need their own exchange (which does
        # nothing in one process).
        rt = current()
        if rt.ranks > 1:
            call(rt.refresh_halo, self._native)

    def vec_context(self, access=True, readonly=None):
        """A context yielding a petsc4py ``Vec`` over the owned values (needs petsc4py):
        ``access`` an op2 access (today's PyOP2: READ, WRITE or RW) or PyOP2 0.10's
        ``readonly`` flag (also by name). Writable ones are the Dat's own memory; read ones a
        copy."""
        return _petsc.dat_vec(self, access if readonly is None else bool(readonly))

    def _vec_changed(self):
        """PETSc wrote through a ``vec`` context (today's pyop2 counts a version)."""

    vec, vec_ro, vec_wo = _vec_contexts("the owned values")

    def halo_exchange_begin(self):
        """PyOP2's manual halo exchange: op2-rs exchanges halos when a loop or a view with
        halos needs them, so there is nothing to start."""

    def halo_exchange_end(self):
        """See :meth:`halo_exchange_begin`."""

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
        viewed.discard(self)

    def zero(self):
        """Sets every value to zero (recorded, like a loop)."""
        call(self._native.zero)
        self._needs_halo = True
        self._used()

    def copy(self, other):
        """Copies the values into the Dat ``other`` on the same set with the same dim
        (recorded, like a loop; converted as C converts when it holds another type)."""
        if not isinstance(other, Dat):
            raise DatTypeError("Dat.copy copies into a Dat")
        call(self._native.copy, other._native)
        self._used()
        other._needs_halo = True
        other._used()

    def save(self, filename):
        """``numpy.save`` of the owned values."""
        np.save(filename, self.data_ro)

    def __len__(self):
        return 1

    def __iter__(self):
        yield self

    def __getitem__(self, idx):
        """Component ``idx`` of a Dat seen as a mixed Dat of one: ``dat[0] is dat``."""
        if idx != 0:
            raise IndexValueError("Can only extract component 0 from %r" % (self,))
        return self

    def __str__(self):
        return "OP2 Dat: %s on (%s) with datatype %s" % (self._name, self._dataset,
                                                         self._dtype.name)

    def __repr__(self):
        return "Dat(%r, None, %r, %r)" % (self._dataset, self._dtype, self._name)

    # --- Arithmetic: each is a loop of op2-rs's Dat algebra (recorded, like par_loop) ---------
    # As PyOP2 wrote them: C's conversions apply (an int Dat times 0.5 is computed in double and
    # stored back truncated), a scalar has NumPy's type for it, the result the left Dat's type.

    _ARITH = (_op2.Arith.Add, _op2.Arith.Sub, _op2.Arith.Mul, _op2.Arith.Div)

    def _operand(self, other):
        """A Dat operand checked against this one, or a scalar as (value, dtype name); None for
        anything else."""
        if isinstance(other, Dat):
            if other._dataset is not self._dataset and (
                    other._dataset.set is not self._dataset.set
                    or other._dataset.dim != self._dataset.dim):
                raise ValueError("Dats %s and %s are on different DataSets"
                                 % (self.name, other.name))
            return other
        if np.ndim(other) != 0 or isinstance(other, (str, bytes)):
            return None
        dt = as_dtype(None, other)
        return (np.asarray(other, dt).item(), dt.name)

    def _apply(self, code, o, out):
        if isinstance(o, Dat):
            call(self._native.arith, Dat._ARITH[code], o._native, out)
            o._used()
        else:
            call(self._native.arith_scalar, Dat._ARITH[code], o[0], o[1], out)

    def _op(self, code, other):
        o = self._operand(other)
        if o is None:
            return NotImplemented
        new = type(self)(self._dataset, None, self.dtype)
        self._apply(code, o, new._native)
        # Computed on the owned rows only: the ghosts are not the result's.
        new._needs_halo = True
        self._used()
        return new

    def _iop(self, code, other):
        o = self._operand(other)
        if o is None:
            return NotImplemented
        self._apply(code, o, None)
        self._needs_halo = True
        self._used()
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
        if self.cdim == 0:
            return 0.0
        return call(self._native.norm)

    def __eq__(self, other):
        """Dats are equal on equal DataSets with the same dtype and values."""
        if other is self:
            # (No value read: the set of viewed Dats compares its members so.)
            return True
        # The values as they are: a comparison is no exchange (which every rank would have
        # to join), as PyOP2 compared its arrays.
        return (isinstance(other, Dat) and self._dataset == other._dataset
                and self.dtype == other.dtype
                and np.array_equal(self._view(False, True), other._view(False, True)))

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


class _GlobalValues(np.ndarray):
    """``Global.data``: a copy of the values whose item assignments write the Global."""

    _global = None

    def __repr__(self):
        return repr(np.asarray(self))

    def __str__(self):
        return str(np.asarray(self))

    def __array_finalize__(self, obj):
        # Views and results are not the Global's: only the array `data` returned writes back.
        self._global = None

    def __setitem__(self, key, value):
        super().__setitem__(key, value)
        if self._global is not None:
            self._global.data = np.asarray(self)


class Global:
    """A value not tied to a set: ``Global(dim, data=None, dtype=None, name=None)``."""

    def __init__(self, dim, data=None, dtype=None, name=None):
        rt = current()
        self._dim = as_dim(dim)
        self._name = fresh_name("global", name)
        self._dtype = as_dtype(dtype, data)
        cdim = int(np.prod(self._dim))
        vals = np.zeros(cdim, self._dtype) if data is None else as_values(
            data, self._dtype, cdim, "Global %s" % self._name)
        self._native = call(rt.decl_global, cdim, self._dtype.name, vals, self._name)
        self._args = {}

    dim = property(lambda self: self._dim)
    cdim = property(lambda self: int(np.prod(self._dim)))
    dtype = property(lambda self: self._dtype)
    ctype = property(lambda self: as_cstr(self._dtype))
    name = property(lambda self: self._name)
    shape = property(lambda self: self._dim)
    soa = property(lambda self: False)
    split = property(lambda self: (self,))

    def __call__(self, access, path=None, flatten=False):
        """A loop argument; a Global takes no map (``path`` and ``flatten`` are ignored)."""
        if access not in GLOBAL_MODES:
            raise ModeValueError("Global access must be READ, INC, MIN or MAX")
        a = self._args.get(access)
        if a is None:
            a = self._args[access] = Arg(self, access, None, False,
                                         self._native.arg(access._native))
        return a

    @property
    def data(self):
        """The values, after the loops writing them ran: an array whose item assignments
        (``g.data[0] = 1``, ``g.data[:] = 0``) go to the Global at once, as writes to PyOP2's
        own array did. Arrays derived from it (slices, results) are plain copies."""
        a = call(self._native.value).reshape(self._dim).view(_GlobalValues)
        a._global = self
        return a

    @data.setter
    def data(self, value):
        call(self._native.set_value, as_values(value, self._dtype, self.cdim, "Global"))

    @property
    def data_ro(self):
        """The values, after the loops writing them ran (a read-only copy)."""
        a = call(self._native.value).reshape(self._dim)
        a.flags.writeable = False
        return a

    def vec_context(self, access=True, readonly=None):
        """A context yielding a petsc4py ``Vec`` of the values (one rank; needs petsc4py),
        written back unless ``access`` is READ (or ``readonly`` is true)."""
        return _petsc.global_vec(self, access if readonly is None else bool(readonly))

    vec, vec_ro, vec_wo = _vec_contexts("the values")

    def __len__(self):
        return 1

    def __iter__(self):
        yield self

    def __eq__(self, other):
        """Globals are equal with the same dim and values."""
        return (isinstance(other, Global) and self._dim == other._dim
                and np.array_equal(self.data_ro, other.data_ro))

    def __ne__(self, other):
        return not self == other

    __hash__ = object.__hash__

    def __str__(self):
        return "OP2 Global Argument: %s with dim %s and value %s" % (
            self._name, self._dim, self.data_ro)

    def __repr__(self):
        return "Global(%r, %r, %r, %r)" % (self._dim, self.data_ro, self._dtype, self._name)


class Const:
    """Data every kernel reads by name: ``Const(dim, data, name, dtype=None)``."""

    NonUniqueNameError = NonUniqueNameError

    def __init__(self, dim, data=None, name=None, dtype=None):
        rt = current()
        self._dim = as_dim(dim)
        if name is not None and not isinstance(name, str):
            raise NameTypeError("name must be of type str")
        self._name = fresh_name("const", name)
        self._dtype = as_dtype(dtype, data)
        cdim = int(np.prod(self._dim))
        self._has_data = data is not None
        vals = np.zeros(cdim, self._dtype) if data is None else as_values(
            data, self._dtype, cdim, "Const %s" % self._name)
        self._native = call(rt.decl_const, cdim, self._dtype.name, vals, self._name)
        self._removed = False

    dim = property(lambda self: self._dim)
    cdim = property(lambda self: int(np.prod(self._dim)))
    dtype = property(lambda self: self._dtype)
    ctype = property(lambda self: as_cstr(self._dtype))
    name = property(lambda self: self._name)
    split = property(lambda self: (self,))

    def _values(self):
        return call(self._native.value).reshape(self._dim)

    @property
    def data(self):
        if not self._has_data:
            raise RuntimeError("Illegal access: no data associated with Const %s" % self._name)
        return self._values()

    @data.setter
    def data(self, value):
        # Unlike PyOP2, loops recorded before this still see the old values (op2-rs runs them
        # first, as if they had run at their call).
        call(self._native.set_value, as_values(value, self._dtype, self.cdim, "Const"))
        self._has_data = True

    def remove_from_namespace(self):
        """Frees the name (loops recorded before run first, with these values), so that a
        Const of that name may be declared again; nothing when it was freed already."""
        if not self._removed:
            call(current().remove_const, self._native)
            self._removed = True

    @classmethod
    def fromhdf5(cls, f, name):
        """The Const ``name`` of the open h5py file or group ``f``: an array whose shape is
        the Const's ``dim``."""
        slot = f[name]
        dim = slot.shape
        if len(dim) < 1:
            raise DimTypeError("Invalid dimension value %s" % (dim,))
        return cls(dim, slot[()], name)

    def __len__(self):
        return 1

    def __iter__(self):
        yield self

    def __eq__(self, other):
        """Consts are equal with the same dim and values."""
        return (isinstance(other, Const) and self._dim == other._dim
                and np.array_equal(self._values(), other._values()))

    def __ne__(self, other):
        return not self == other

    __hash__ = object.__hash__

    def __str__(self):
        return "OP2 Const: %s of dim %s and type %s with value %s" % (
            self._name, self._dim, self._dtype.name, self._values())

    def __repr__(self):
        return "Const(%r, %r, %r)" % (self._dim, self._values(), self._name)


class MixedDat(_Parts):
    """One Dat per component: ``MixedDat(mixed_dataset_or_dats)``; items that are Dats are used
    as they are, Sets and DataSets get a new Dat."""

    # The class of the Dats it makes for Sets and DataSets (today's pyop2 makes its own).
    _dat_class = Dat

    def __init__(self, mdset_or_dats):
        current()
        if isinstance(mdset_or_dats, MixedDataSet):
            mdset_or_dats = mdset_or_dats.split
        dats = tuple(d if isinstance(d, Dat) else self._dat_class(d) for d in mdset_or_dats)
        if len({d.dtype for d in dats}) > 1:
            raise DataValueError("MixedDat with different dtypes is not supported")
        self._parts = self._dats = dats
        self._native = None

    def _mixed_native(self):
        if self._native is None:
            if any(d.cdim == 0 for d in self._dats):
                # Such a component's Dat keeps a value no view shows: packed with the others,
                # it would shift theirs.
                raise NotImplementedError("a MixedDat with a component of dim 0 in loops or "
                                          "solves is not supported by op2rs")
            to = mixed_native([d.dataset.set for d in self._dats])
            self._native = call(_op2.MixedDat, to, [d._native for d in self._dats])
        return self._native

    def __call__(self, access, path=None, flatten=False):
        if access not in DAT_MODES:
            raise ModeValueError("Dat access must be READ, WRITE, RW or INC")
        if flatten:
            raise DatTypeError("MixedDats cannot be flattened")
        mmap = path.map if type(path) is MapPath else path
        if not isinstance(mmap, MixedMap):
            raise MapTypeError("a MixedDat is used through a MixedMap")
        if mmap.toset != MixedSet(d.dataset.set for d in self._dats):
            raise MapValueError("To Set of MixedMap does not match Set of MixedDat.")
        after = MixedDat._after_read if access is READ else MixedDat._after_write
        if type(path) is MapPath:
            # mixed_map[op2.i[n]]: a local iteration space over every component's entries.
            return Arg(self, access, path, False, None, mmap.iterset, True, (mmap.arity,), after)
        native = self._mixed_native().arg(access._native, mmap._mixed_native())
        return Arg(self, access, path, False, native, mmap.iterset, after=after)

    def _lis_native(self, arg, per_point):
        """``mixed_dat(access, mixed_map[op2.i[0]])``: for a once-per-element kernel one buffer
        of the element's values, component after component; for a per-point (0.8.2) kernel one
        call per entry of the components' entries in turn."""
        form = _op2.ArgForm.Entries if per_point else _op2.ArgForm.Buffer
        return self._mixed_native().arg(arg.access._native, arg.path.map._mixed_native(), form)

    def _after_read(self, arg):
        for d in self._dats:
            d._used()

    def _after_write(self, arg):
        for d in self._dats:
            d._after_write(arg)
            d._used()

    def _split_arg(self, arg):
        """One argument per component: each Dat through its component of the MixedMap."""
        if type(arg.path) is MapPath:
            return tuple(d(arg.access, m[arg.path.index])
                         for d, m in zip(self._dats, arg.path.map.split))
        return tuple(d(arg.access, m) for d, m in zip(self._dats, arg.path.split))

    dtype = property(lambda self: self._dats[0].dtype)
    ctype = property(lambda self: self._dats[0].ctype)
    dataset = property(lambda self: MixedDataSet(d.dataset for d in self._dats))
    dim = property(lambda self: tuple(d.dim for d in self._dats))
    cdim = property(lambda self: tuple(d.cdim for d in self._dats))
    soa = property(lambda self: tuple(d.soa for d in self._dats))
    data = property(lambda self: tuple(d.data for d in self._dats))
    data_ro = property(lambda self: tuple(d.data_ro for d in self._dats))
    data_with_halos = property(lambda self: tuple(d.data_with_halos for d in self._dats))
    data_ro_with_halos = property(lambda self: tuple(d.data_ro_with_halos for d in self._dats))
    name = property(lambda self: tuple(d.name for d in self._dats))

    @property
    def needs_halo_update(self):
        """Whether any component needs a halo update (setting it sets every component's)."""
        return any(d.needs_halo_update for d in self._dats)

    @needs_halo_update.setter
    def needs_halo_update(self, value):
        for d in self._dats:
            d.needs_halo_update = value

    def halo_exchange_begin(self):
        """Each component's :meth:`Dat.halo_exchange_begin` (op2-rs exchanges by itself)."""
        for d in self._dats:
            d.halo_exchange_begin()

    def halo_exchange_end(self):
        """Each component's :meth:`Dat.halo_exchange_end`."""
        for d in self._dats:
            d.halo_exchange_end()

    def vec_context(self, access=True, readonly=None):
        """A context yielding one petsc4py ``Vec`` of every component's owned values in turn
        (needs petsc4py), filled from the components unless ``access`` is WRITE and copied back
        to them unless it is READ (or PyOP2 0.10's ``readonly`` flag is true)."""
        return _petsc.mixed_vec(self, access if readonly is None else bool(readonly))

    vecscatter = vec_context
    vec, vec_ro, vec_wo = _vec_contexts("every component")

    def zero(self):
        """Sets every component's values to zero (recorded, like loops)."""
        for d in self._dats:
            d.zero()

    def __eq__(self, other):
        """MixedDats are equal when their components are (by values, as Dats compare)."""
        return isinstance(other, MixedDat) and len(self) == len(other) and all(
            a == b for a, b in zip(self._dats, other._dats))

    __hash__ = object.__hash__

    def __str__(self):
        return "OP2 MixedDat composed of Dats: %s" % (self._dats,)

    def __repr__(self):
        return "MixedDat(%r)" % (self._dats,)
