"""PETSc views of op2rs objects, through petsc4py when it is installed: a Mat's ``handle`` is a
PETSc matrix over the matrix's own values, a Dat's ``vec`` contexts a PETSc vector over its
data. Without petsc4py these raise ImportError naming it."""

from contextlib import contextmanager

import numpy as np

from .access import READ, RW, WRITE
from .exceptions import ModeValueError
from .runtime import state

__all__ = ["petsc", "mat_handle", "block_handle", "dat_vec", "mixed_vec", "global_vec",
           "changed", "check_shared"]


def petsc(what):
    """petsc4py's ``PETSc`` module, for ``what`` (named in the error when it is missing)."""
    try:
        from petsc4py import PETSc
    except ImportError as e:
        raise ImportError("%s is a petsc4py object, and petsc4py (PETSc's Python bindings) is "
                          "not installed: pip install petsc4py" % what) from e
    return PETSc


def _ranks():
    rt = state["runtime"]
    return rt.ranks if rt is not None else 1


def _comm(PETSc):
    """The communicator the runtime spans (op2rs runs on MPI's world)."""
    return PETSc.COMM_WORLD if _ranks() > 1 else PETSc.COMM_SELF


def mat_handle(mat):
    """A PETSc AIJ matrix sharing ``mat``'s values (an op2rs ``Mat``, mixed ones as one
    monolithic matrix with the components' rows and columns in turn): what the matrix holds the
    handle sees, and what PETSc writes the matrix holds. Local numbers are the matrix's own
    (identity local-to-global maps), so ``setValuesLocal``, ``zeroRowsLocal`` and
    ``getLocalSubMatrix`` work as on PyOP2's."""
    PETSc = petsc("Mat.handle")
    if _ranks() > 1:
        # PETSc's parallel matrices copy the arrays handed in: a handle would be a snapshot
        # the matrix never sees written, so none is made.
        raise NotImplementedError("Mat.handle across ranks is not supported by op2rs: PETSc "
                                  "would hold a copy of the values, not the matrix's own")
    if np.dtype(PETSc.ScalarType) != np.float64:
        raise RuntimeError("this petsc4py is built for %s values; op2rs matrices hold "
                           "float64" % np.dtype(PETSc.ScalarType))
    native = mat._native
    sp = mat._sparsity._native
    rows, cols = sp.shape
    rowptr = sp.rowptr()
    if rowptr[-1] > np.iinfo(PETSc.IntType).max:
        raise RuntimeError("%s has %d entries, past this PETSc's %d-bit indices" % (
            mat.name, rowptr[-1], 8 * np.dtype(PETSc.IntType).itemsize))
    rowptr = np.asarray(rowptr, dtype=PETSc.IntType)
    colidx = np.asarray(sp.colidx(), dtype=PETSc.IntType)
    values = native.values_view()
    # Sequential AIJ matrices made from arrays use them in place (petsc4py keeps them alive
    # with the Mat): the values array is the matrix's own memory.
    handle = PETSc.Mat().createAIJWithArrays((rows, cols), (rowptr, colidx, values),
                                             comm=PETSc.COMM_SELF)
    rdim, cdim = mat._sparsity._pair_dims
    if (rdim, cdim) != (1, 1) and rows % rdim == 0 and cols % cdim == 0:
        try:
            handle.setBlockSizes(rdim, cdim)
        except PETSc.Error:
            pass  # the block sizes only help PETSc's blocked calls; the values are the same
    handle.setLGMap(_identity(PETSc, rows), _identity(PETSc, cols))
    # A new entry would make PETSc move its values out of the matrix's memory: refuse it, as
    # PyOP2's matrices (whose pattern is the sparsity's) did.
    handle.setOption(PETSc.Mat.Option.NEW_NONZERO_LOCATION_ERR, True)
    handle.setOption(PETSc.Mat.Option.KEEP_NONZERO_PATTERN, True)
    handle.setName(mat.name)
    return handle


def _identity(PETSc, n):
    return PETSc.LGMap().create(np.arange(n, dtype=PETSc.IntType), bsize=1,
                                comm=PETSc.COMM_SELF)


def block_handle(parent, rows, cols):
    """The block of ``parent``'s handle at scalar ``rows`` and ``cols`` (index arrays), as
    PETSc's local submatrix (it writes into the parent in the block's local numbers)."""
    PETSc = petsc("Mat.handle")
    h = parent.handle
    isrow = PETSc.IS().createGeneral(np.asarray(rows, dtype=PETSc.IntType), comm=PETSc.COMM_SELF)
    iscol = PETSc.IS().createGeneral(np.asarray(cols, dtype=PETSc.IntType), comm=PETSc.COMM_SELF)
    return h.getLocalSubMatrix(isrow, iscol)


def _mode(access):
    """``access`` as one of "r", "w", "rw": an op2 Access, or PyOP2 0.10's ``readonly`` flag."""
    if isinstance(access, bool):
        return "r" if access else "rw"
    if access is READ:
        return "r"
    if access is WRITE:
        return "w"
    if access is RW:
        return "rw"
    raise ModeValueError("a vec context takes READ, WRITE or RW, not %s" % (access,))


@contextmanager
def dat_vec(dat, access):
    """A PETSc Vec over ``dat``'s owned values (``size * cdim`` of them, block size ``cdim``).
    A Dat of PETSc's scalar type has one Vec over its own memory, made at its first context and
    kept (as PyOP2 keeps it: solvers and null spaces hold on to it); a Dat of another type gets
    a copy to read, and refuses writing. While a writable context is open, loops using the Dat
    run as they are recorded, so that PETSc's writes and the loops keep program order."""
    PETSc = petsc("Dat.vec")
    mode = _mode(access)
    comm = _comm(PETSc)
    if np.dtype(PETSc.ScalarType) != dat.dtype:
        if mode != "r":
            raise TypeError("Dat.vec: %s holds %s, PETSc's Vec %s" % (
                dat.name, dat.dtype, np.dtype(PETSc.ScalarType)))
        array = np.array(dat.data_ro, dtype=PETSc.ScalarType).reshape(-1)
        yield PETSc.Vec().createWithArray(array, size=(array.size, None), bsize=dat.cdim,
                                          comm=comm)
        return
    v = dat.__dict__.get("_petsc_vec")
    if v is None:
        # The Dat's owned rows, which never move: the Vec reads and writes them in place.
        array = dat._view(True, False).reshape(-1)
        v = dat.__dict__["_petsc_vec"] = PETSc.Vec().createWithArray(
            array, size=(array.size, None), bsize=dat.cdim, comm=comm)
    # The host values brought up to date (what the loops writing them left); for writing,
    # device copies and halos marked out of date, without counting a version: the Vec's state
    # says afterwards whether PETSc wrote.
    dat._view(mode != "r", False)
    # The values may have changed behind PETSc's back (loops, NumPy views): a new state, so
    # that what PETSc cached of the old ones (norms) is not used.
    v.stateIncrease()
    if mode == "r":
        yield v
        return
    dat._needs_halo = True
    before = v.stateGet()
    dat.__dict__["_vec_open"] = dat.__dict__.get("_vec_open", 0) + 1
    try:
        yield v
    finally:
        dat.__dict__["_vec_open"] -= 1
    if v.stateGet() != before:
        dat._vec_changed()


@contextmanager
def global_vec(g, access):
    """A PETSc Vec of a Global's values (one rank): a copy, written back unless READ."""
    PETSc = petsc("Global.vec")
    if _ranks() > 1:
        raise NotImplementedError("Global.vec across ranks is not supported by op2rs")
    mode = _mode(access)
    if np.dtype(PETSc.ScalarType) != g.dtype and mode != "r":
        raise TypeError("Global.vec: %s holds %s, PETSc's Vec %s" % (
            g.name, g.dtype, np.dtype(PETSc.ScalarType)))
    array = np.array(g.data_ro, dtype=PETSc.ScalarType).reshape(-1)
    v = PETSc.Vec().createWithArray(array, comm=PETSc.COMM_SELF)
    before = v.stateGet()
    yield v
    if mode != "r" and v.stateGet() != before:
        g.data = array


@contextmanager
def mixed_vec(mdat, access):
    """One PETSc Vec of every component's owned values in turn (PyOP2's MixedDat ``vec``):
    filled from the Dats unless the access is write-only, written back to them unless it is
    read-only. The Vec is kept between uses, as PyOP2's is."""
    PETSc = petsc("MixedDat.vec")
    mode = _mode(access)
    if mode != "r" and any(d.dtype != np.dtype(PETSc.ScalarType) for d in mdat):
        raise TypeError("MixedDat.vec: components of %s, PETSc's Vec holds %s" % (
            [str(d.dtype) for d in mdat], np.dtype(PETSc.ScalarType)))
    sizes = [d.dataset.size * d.cdim for d in mdat]
    v = mdat.__dict__.get("_petsc_vec")
    if v is None:
        v = PETSc.Vec().createMPI((sum(sizes), None), comm=_comm(PETSc)) if _ranks() > 1 \
            else PETSc.Vec().createSeq(sum(sizes), comm=PETSc.COMM_SELF)
        mdat.__dict__["_petsc_vec"] = v
    offsets = np.cumsum([0] + sizes)
    if mode != "w":
        a = v.getArray()
        for d, lo, hi in zip(mdat, offsets, offsets[1:]):
            a[lo:hi] = np.asarray(d.data_ro).reshape(-1)
    yield v
    if mode != "r":
        a = v.getArray(readonly=True)
        for d, lo, hi in zip(mdat, offsets, offsets[1:]):
            d.data[...] = a[lo:hi].reshape(d.data_ro.shape)


def changed(handle):
    """op2 wrote a matrix's values itself (a loop, ``zero``, ``zero_rows``, entries): its PETSc
    handle, if made, counts a new state, so that solvers built on it rebuild what they derived
    from the old values (preconditioners, factorisations)."""
    if handle is not None:
        handle.stateIncrease()


def check_shared(mat, handle):
    """Raises if PETSc no longer works on ``mat``'s own values: an entry outside the sparsity
    added through a handle whose nonzero-location error was turned off makes PETSc move its
    values into memory of its own, after which the two would silently disagree."""
    if handle is not None and handle.getInfo()["nz_used"] != mat._sparsity._native.nnz:
        raise RuntimeError(
            "PETSc moved %s's values out of op2rs's memory (an entry outside the sparsity was "
            "added through its handle, whose NEW_NONZERO_LOCATION_ERR or "
            "NEW_NONZERO_ALLOCATION_ERR option was turned off): the handle and the matrix no "
            "longer share values" % mat.name)
