"""PETSc views of op2rs objects, through petsc4py when it is installed: a Mat's ``handle`` is a
PETSc matrix over the matrix's own values, a Dat's ``vec`` contexts a PETSc vector over its
data. Without petsc4py these raise ImportError naming it."""

import os
import shlex
import subprocess
from contextlib import contextmanager

import numpy as np

from .access import READ, RW, WRITE
from .exceptions import ModeValueError, call
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
    if np.dtype(PETSc.ScalarType) != np.float64:
        raise RuntimeError("this petsc4py is built for %s values; op2rs matrices hold "
                           "float64" % np.dtype(PETSc.ScalarType))
    if _ranks() > 1:
        return _parallel_handle(PETSc, mat)
    native = mat._native
    sp = native.sparsity
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
    # A new entry makes PETSc move the values out of the matrix's memory: an error, as on
    # PyOP2's matrices, unless the program turns NEW_NONZERO_ALLOCATION_ERR off; the matrix
    # then takes PETSc's larger pattern (see ``adopt``).
    handle.setOption(PETSc.Mat.Option.NEW_NONZERO_ALLOCATION_ERR, True)
    handle.setOption(PETSc.Mat.Option.KEEP_NONZERO_PATTERN, True)
    handle.setName(mat.name)
    return handle


def adopt(handle, mat):
    """PETSc grew ``handle`` beyond ``mat``'s pattern (its NEW_NONZERO_ALLOCATION_ERR turned
    off) and holds the values in memory of its own: ``mat`` takes PETSc's pattern and values (a
    native matrix of its own, the Sparsity's other matrices unchanged). The handle stays the
    same PETSc matrix with its own storage, so whatever holds it (a KSP, null spaces, options,
    local submatrices) is untouched; from now on the two hold copies kept equal as a parallel
    handle's are: op2's writes pushed as they happen, PETSc's pulled before op2's next use."""
    PETSc = petsc("Mat.handle")
    if not handle.assembled:
        handle.assemble()
    # Loops recorded before now write the matrix they were recorded on: run them first.
    from .runtime import current
    current().flush()
    indptr, indices, values = handle.getValuesCSR()
    rows = np.repeat(np.arange(len(indptr) - 1), np.diff(indptr))
    grown_sp = call(mat._native.sparsity.with_entries, rows.tolist(), indices.tolist())
    if grown_sp.nnz != len(values):
        raise RuntimeError("PETSc's pattern of %s (%d entries) does not hold the matrix's "
                           "(%d)" % (mat.name, len(values), grown_sp.nnz))
    grown = call(mat._native.with_pattern, grown_sp)
    # Both list each row's columns in increasing order: the same entries in the same order.
    grown.values_view()[:] = values
    mat._native = grown
    mat.__dict__["_petsc_order"] = np.arange(len(values))
    mat.__dict__["_petsc_csr"] = (np.asarray(grown_sp.rowptr(), dtype=PETSc.IntType),
                                  np.asarray(grown_sp.colidx(), dtype=PETSc.IntType))
    mat.__dict__["_petsc_state"] = handle.stateGet()
    mat.__dict__["_petsc_pending"] = False


def _missing(mat, rows, cols):
    """The scalar entries of the block ``rows`` x ``cols`` outside ``mat``'s pattern."""
    sp = mat._native.sparsity
    rowptr, colidx = sp.rowptr(), sp.colidx()
    out_r, out_c = [], []
    for r in rows:
        have = colidx[rowptr[r]:rowptr[r + 1]]
        for c in cols:
            k = np.searchsorted(have, c)
            if k == len(have) or have[k] != c:
                out_r.append(r)
                out_c.append(c)
    return out_r, out_c


def grow_through_handle(mat, rows, cols):
    """Entries op2 was asked to set outside ``mat``'s pattern: PETSc decides, as it would for
    PyOP2's matrix. With a one-process handle whose NEW_NONZERO_ALLOCATION_ERR the program
    turned off, PETSc takes them (as zeros) and the matrix adopts its larger pattern (True:
    the caller then writes the values itself); otherwise (no handle, the option on, complex
    values, several ranks) nothing changes (False)."""
    handle = mat.__dict__.get("_handle")
    if handle is None or _ranks() > 1 or mat._native.complex:
        return False
    PETSc = petsc("Mat.handle")
    mr, mc = _missing(mat, rows, cols)
    if not mr:
        return False
    try:
        # Only the missing entries, one at a time and as zeros: PETSc writes nothing before
        # it finds one it refuses.
        for r, c in zip(mr, mc):
            handle.setValue(r, c, 0.0, addv=PETSc.InsertMode.ADD_VALUES)
    except PETSc.Error:
        # Refused (the option on): finish the (empty) addition so that PETSc is ready for
        # either kind of insertion again.
        handle.assemble()
        return False
    handle.assemble()
    adopt(handle, mat)
    return True


def _parallel_handle(PETSc, mat):
    """Across ranks: a PETSc MPIAIJ matrix of the same pattern and values. PETSc keeps a
    parallel matrix's diagonal and off-diagonal parts in arrays of its own, so the two hold
    copies kept equal: op2's writes are pushed to PETSc as they happen (``changed``), and
    PETSc's are pulled before op2 next uses the matrix (``check_shared``, seen by the handle's
    state). Rows are the owned ones, numbered rank after rank; local numbers (the LGMaps,
    ``setValuesLocal``, ``zeroRowsLocal``) are the matrix's own, halo columns included."""
    if mat._sparsity.mixed:
        raise NotImplementedError("Mat.handle of a matrix of mixed spaces across ranks is not "
                                  "supported by op2rs")
    comm = PETSc.COMM_WORLD
    sp = mat._sparsity._native
    rdset, cdset = mat._sparsity.dsets
    (rdim, cdim), (rows, cols) = mat._sparsity._pair_dims, sp.shape
    rglobal = _scalar_numbers(PETSc, rdset.set, rdim)
    cglobal = _scalar_numbers(PETSc, cdset.set, cdim)
    rowptr = np.asarray(sp.rowptr(), dtype=PETSc.IntType)
    colidx = np.asarray(sp.colidx(), dtype=PETSc.IntType)
    own_cols = cdset.set.size * cdim
    counts = np.diff(rowptr)
    owned_before = np.concatenate(([0], np.cumsum(colidx < own_cols)))
    diagonal = (owned_before[rowptr[1:]] - owned_before[rowptr[:-1]]).astype(PETSc.IntType)
    handle = PETSc.Mat().createAIJ(((rows, None), (own_cols, None)),
                                   nnz=(diagonal, (counts - diagonal).astype(PETSc.IntType)),
                                   comm=comm)
    handle.setLGMap(_numbering(PETSc, rglobal), _numbering(PETSc, cglobal))
    handle.setOption(PETSc.Mat.Option.KEEP_NONZERO_PATTERN, True)
    handle.setName(mat.name)
    # PETSc's rows list their columns in global order: the matrix's entries in that order.
    entry_rows = np.repeat(np.arange(rows), counts)
    mat.__dict__["_petsc_order"] = np.lexsort((cglobal[colidx], entry_rows))
    mat.__dict__["_petsc_csr"] = (rowptr, colidx)
    _push(handle, mat)
    # The pattern is the sparsity's from now on (PyOP2's matrices refused new entries).
    handle.setOption(PETSc.Mat.Option.NEW_NONZERO_LOCATION_ERR, True)
    return handle


def _scalar_numbers(PETSc, s, dim):
    """The global number (PETSc's, owned rows rank after rank) of each local scalar row of a
    set of ``dim`` values per element, halo elements included: each rank numbers its owned
    elements from its offset, and op2rs's own halo exchange brings the owners' numbers."""
    from .data import Dat
    if callable(getattr(getattr(s, "halo", None), "global_to_local_begin", None)):
        # Today's halo objects number their ghosts themselves (local_to_global_numbering).
        raise NotImplementedError("Mat.handle across ranks on a Set with today's halo is not "
                                  "supported by op2rs")
    offset = PETSc.Vec().createMPI((s.size, None), comm=PETSc.COMM_WORLD)
    first = offset.getOwnershipRange()[0]
    offset.destroy()
    numbers = Dat(s ** 1, None, np.int64, "%s_global_numbers" % s.name)
    numbers.data[:] = first + np.arange(s.size)
    nodes = np.asarray(numbers.data_ro_with_halos, dtype=np.int64)
    return (nodes[:, None] * dim + np.arange(dim)).ravel()


def _numbering(PETSc, numbers):
    return PETSc.LGMap().create(np.asarray(numbers, dtype=PETSc.IntType), bsize=1,
                                comm=PETSc.COMM_WORLD)


def _push(handle, mat):
    """op2's values into the parallel handle (collective), its state then recorded."""
    rowptr, colidx = mat.__dict__["_petsc_csr"]
    handle.setValuesLocalCSR(rowptr, colidx, mat._native.values_view())
    handle.assemble()
    mat.__dict__["_petsc_state"] = handle.stateGet()
    mat.__dict__["_petsc_pending"] = False


def _pull(handle, mat):
    """PETSc's values into the matrix, once PETSc wrote them (collective)."""
    _, _, values = handle.getValuesCSR()
    order = mat.__dict__["_petsc_order"]
    if len(values) != len(order):
        raise RuntimeError(
            "PETSc changed %s's pattern (an entry outside the sparsity was added through its "
            "handle, whose NEW_NONZERO_LOCATION_ERR option was turned off): the handle and "
            "the matrix no longer hold the same entries" % mat.name)
    mat._native.values_view()[order] = values
    mat.__dict__["_petsc_state"] = handle.stateGet()


_petsc_args = None


def petsc_build_args():
    """``(compile args, link args)`` for PETSc's headers and library, from petsc4py's PETSc
    (its ``petscvariables``), with MPI's headers from the MPI compiler wrapper PETSc was built
    with in mind; ``None`` without petsc4py."""
    global _petsc_args
    if _petsc_args is None:
        try:
            import petsc4py
        except ImportError:
            _petsc_args = ()
            return None
        config = petsc4py.get_config()
        root = os.path.join(config["PETSC_DIR"], config.get("PETSC_ARCH") or "")
        variables = {}
        path = os.path.join(root, "lib", "petsc", "conf", "petscvariables")
        try:
            with open(path) as f:
                for line in f:
                    key, eq, value = line.partition("=")
                    if eq:
                        variables[key.strip()] = value.strip()
        except OSError as e:
            raise RuntimeError("PETSc's build variables, for its headers and "
                               "library, were not found where petsc4py says PETSc is (%s)" % e
                               ) from None
        cflags = shlex.split(variables.get("PETSC_CC_INCLUDES", ""))
        cflags += [f for f in _mpi_compile_args() if f not in cflags]
        libs = shlex.split(variables.get("PETSC_LIB_BASIC", "-lpetsc"))
        _petsc_args = (cflags, ["-L" + os.path.join(root, "lib")] + libs)
    return _petsc_args or None


def _mpi_compile_args():
    """MPI's ``-I`` and ``-D`` flags, from the MPI compiler wrapper (Open MPI's, then MPICH's) or
    pkg-config; empty when none answers (PETSc's own includes then hold ``mpi.h``)."""
    for cmd in (["mpicc", "--showme:compile"], ["mpicc", "-compile-info"],
                ["pkg-config", "--cflags", "mpi"], ["pkg-config", "--cflags", "ompi-c"]):
        try:
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.SubprocessError):
            continue
        if out.returncode == 0 and out.stdout.strip():
            return [f for f in shlex.split(out.stdout) if f.startswith(("-I", "-D"))]
    return []


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


def changed(handle, mat=None, collective=True):
    """op2 wrote a matrix's values itself (a loop, ``zero``, ``zero_rows``, entries): its PETSc
    handle, if made, counts a new state, so that solvers built on it rebuild what they derived
    from the old values (preconditioners, factorisations). A parallel handle gets the values
    at a write every rank makes (``collective``: loops, ``zero``, ``zero_rows``, ``assemble``),
    as PETSc's own insertions reach a parallel matrix at its collective assembly."""
    if handle is None:
        return
    if mat is not None and "_petsc_order" in mat.__dict__:
        # In one process (a handle that grew) every write is everyone's.
        if collective or _ranks() == 1:
            _push(handle, mat)
        else:
            mat.__dict__["_petsc_pending"] = True
    else:
        handle.stateIncrease()


def check_shared(mat, handle):
    """Brings ``mat`` and its handle together before op2 uses the matrix: where the two hold
    copies (across ranks, or a handle that grew) PETSc's writes are pulled; in one process,
    entries PETSc added outside the pattern (its allocation error turned off, so it moved the
    values into memory of its own) are adopted (``adopt``)."""
    if handle is not None and "_petsc_order" in mat.__dict__:
        one = _ranks() == 1
        if one and not handle.assembled:
            # PETSc's entries set and not yet assembled (PETSc's state already counts them):
            # assembled first, as op2 reads only assembled values (across ranks assembling is
            # every rank's, and the program's).
            handle.assemble()
        if handle.stateGet() != mat.__dict__["_petsc_state"]:
            if mat.__dict__.get("_petsc_pending"):
                raise RuntimeError(
                    "%s: PETSc wrote its handle while entries op2 set on this rank were not "
                    "yet assembled: assemble the matrix (every rank) before using the handle"
                    % mat.name)
            # (Only in one process: the global sum across ranks would be collective.)
            if one and handle.getInfo(petsc("Mat.handle").Mat.InfoType.LOCAL)["nz_used"] != len(
                    mat.__dict__["_petsc_order"]):
                # A handle that grew before grew again.
                adopt(handle, mat)
            else:
                _pull(handle, mat)
        return
    if handle is not None and handle.getInfo()["nz_used"] != mat._native.sparsity.nnz:
        # PETSc added entries (its allocation error turned off): the matrix takes them.
        adopt(handle, mat)
