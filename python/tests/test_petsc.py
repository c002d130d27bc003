"""PETSc views through petsc4py: a Mat's ``handle`` over the matrix's own values, Dat and
MixedDat ``vec`` contexts, today's assembly states, and MPI started by petsc4py before op2rs.
Expected values come from NumPy or from op2rs's own reading of the matrix."""

import os
import subprocess
import sys

import numpy as np
import pytest

from op2rs.la import Solver
from pyop2 import exceptions, op2

PETSc = pytest.importorskip("petsc4py.PETSc")


def _mass(n=6):
    """A 1-D P1 mass-like matrix on ``n`` cells assembled by a loop, with the NumPy sum."""
    nodes, cells = op2.Set(n + 1), op2.Set(n)
    c2n_values = np.array([[c, c + 1] for c in range(n)], dtype=np.int32)
    c2n = op2.Map(cells, nodes, 2, c2n_values)
    h = op2.Dat(cells ** 1, np.linspace(1.0, 2.0, n))
    mat = op2.Mat(op2.Sparsity((nodes ** 1, nodes ** 1), [(c2n, c2n, None)]))
    k = op2.Kernel("""
static void mass(double A[2][2], const double *h) {
  A[0][0] += 2 * h[0] / 6; A[0][1] += h[0] / 6;
  A[1][0] += h[0] / 6;     A[1][1] += 2 * h[0] / 6;
}""", "mass")
    want = np.zeros((n + 1, n + 1))
    for c, (a, b) in enumerate(c2n_values):
        want[np.ix_([a, b], [a, b])] += h.data_ro[c] / 6 * np.array([[2, 1], [1, 2]])

    def assemble():
        op2.par_loop(k, cells, mat(op2.INC, (c2n, c2n)), h(op2.READ))
    return nodes, mat, assemble, want


def test_the_handle_shares_the_matrix_values_both_ways():
    nodes, mat, assemble, want = _mass()
    assemble()
    A = mat.handle
    assert mat.handle is A
    assert A.getSize() == (7, 7)
    np.testing.assert_allclose(A[:, :], want)
    # A second loop adds into the same memory: the handle sees it without being made again.
    assemble()
    np.testing.assert_allclose(A[:, :], 2 * want)
    # PETSc's writes are the matrix's.
    A.setValue(3, 3, 10.0)
    A.assemble()
    A.setValuesLocal([0], [1], [[-1.0]], addv=PETSc.InsertMode.ADD_VALUES)
    A.assemble()
    got = mat.values
    assert got[3, 3] == 10.0 and got[0, 1] == 2 * want[0, 1] - 1.0
    A.zeroRowsLocal([6], 1.0)
    got = mat.values
    np.testing.assert_array_equal(got[6], np.eye(7)[6])
    # An entry outside the sparsity would move PETSc's values out of the matrix: refused.
    with pytest.raises(PETSc.Error):
        A.setValue(0, 6, 1.0)
        A.assemble()


def test_a_ksp_on_the_handle_agrees_with_the_op2_solver():
    nodes, mat, assemble, want = _mass(12)
    assemble()
    b = op2.Dat(nodes ** 1, np.arange(13.0) + 1)
    x = op2.Dat(nodes ** 1)
    ksp = PETSc.KSP().create(comm=PETSc.COMM_SELF)
    ksp.setOperators(mat.handle)
    ksp.setType("cg")
    ksp.getPC().setType("jacobi")
    ksp.setTolerances(rtol=1e-12)
    with b.vec_ro as bv, x.vec as xv:
        ksp.solve(bv, xv)
    np.testing.assert_allclose(x.data_ro, np.linalg.solve(want, b.data_ro), rtol=1e-9)
    y = op2.Dat(nodes ** 1)
    Solver(ksp_rtol=1e-12).solve(mat, y, b)
    np.testing.assert_allclose(x.data_ro, y.data_ro, rtol=1e-8)


def test_block_handles_write_into_their_block_of_a_mixed_matrix():
    elem, node = op2.Set(3), op2.Set(4)
    ms = op2.MixedSet((elem, node))
    mm = op2.MixedMap((op2.Map(elem, elem, 1, [0, 1, 2]),
                       op2.Map(elem, node, 2, [0, 1, 1, 2, 2, 3])))
    for nest in (True, False):
        mat = op2.Mat(op2.Sparsity((ms ** 1, ms ** 1), {
            (i, j): [(rm, cm, None)] for i, rm in enumerate(mm) for j, cm in enumerate(mm)},
            nest=nest))
        assert mat.handle.getSize() == (7, 7)
        b = mat[1, 1].handle
        b.setValuesLocal([2], [1], [[5.0]], addv=PETSc.InsertMode.ADD_VALUES)
        b.assemble()
        mat.handle.assemble()
        want = np.zeros((4, 4))
        want[2, 1] = 5.0
        np.testing.assert_array_equal(mat[1, 1].values, want)
        assert mat.values[3 + 2, 3 + 1] == 5.0 and mat.values.sum() == 5.0


def test_dat_vec_contexts_read_and_write_the_owned_values():
    s = op2.Set(5)
    d = op2.Dat(s ** 2, np.arange(10.0).reshape(5, 2))
    with d.vec_ro as v:
        assert v.getSize() == 10 and v.getBlockSize() == 2
        np.testing.assert_array_equal(v.array_r, np.arange(10.0))
        assert v.norm() == pytest.approx(np.linalg.norm(np.arange(10.0)))
    before = d.dat_version
    with d.vec as v:
        v.scale(2.0)
    np.testing.assert_array_equal(d.data_ro.ravel(), 2 * np.arange(10.0))
    assert d.dat_version == before + 1
    with d.vec_wo as v:
        v.set(7.0)
    np.testing.assert_array_equal(d.data_ro, np.full((5, 2), 7.0))
    # A context that writes nothing counts no version.
    v0 = d.dat_version
    with d.vec:
        pass
    assert d.dat_version == v0
    # A loop after the context sees PETSc's values.
    op2.par_loop(op2.Kernel("static void k(double *x) { x[0] += 1; x[1] += 2; }", "k"),
                 s, d(op2.RW))
    np.testing.assert_array_equal(d.data_ro, np.tile([8.0, 9.0], (5, 1)))
    with pytest.raises(op2.ModeValueError):
        with d.vec_context(op2.INC):
            pass


def test_mixed_dat_vec_is_every_component_in_turn():
    s, t = op2.Set(2), op2.Set(3)
    md = op2.MixedDat([op2.Dat(s ** 1, [1.0, 2.0]), op2.Dat(t ** 2, np.arange(6.0))])
    with md.vec_ro as v:
        np.testing.assert_array_equal(v.array_r, [1, 2, 0, 1, 2, 3, 4, 5])
    with md.vec as v:
        v.shift(1.0)
    np.testing.assert_array_equal(md[0].data_ro, [2, 3])
    np.testing.assert_array_equal(md[1].data_ro, np.arange(6.0).reshape(3, 2) + 1)
    with md.vec_wo as v:
        v.set(4.0)
    assert (md[0].data_ro == 4).all() and (md[1].data_ro == 4).all()


def test_pyop2_0_10_vec_context_takes_readonly():
    from op2rs import op2 as old
    d = old.Dat(old.Set(3) ** 1, [1.0, 2.0, 3.0])
    with d.vec_context(readonly=False) as v:
        v.scale(-1.0)
    np.testing.assert_array_equal(d.data_ro, [-1, -2, -3])
    with d.vec_context(readonly=True) as v:
        np.testing.assert_array_equal(v.array_r, [-1, -2, -3])


def test_assembly_states_and_flushes_between_insert_and_add():
    nodes, mat, assemble, want = _mass()
    assert mat.assembly_state is op2.Mat.ASSEMBLED
    flushes = []
    flush = mat._flush_assembly
    mat._flush_assembly = lambda: (flushes.append(1), flush())
    mat.addto_values(0, 0, [1.0])
    assert mat.assembly_state is op2.Mat.ADD_VALUES and not flushes
    mat.addto_values(1, 1, [1.0])
    assert not flushes
    mat.set_values(2, 2, [3.0])
    assert mat.assembly_state is op2.Mat.INSERT_VALUES and len(flushes) == 1
    mat.assemble()
    assert mat.assembly_state is op2.Mat.ASSEMBLED and len(flushes) == 1
    assert mat.values[0, 0] == 1.0 and mat.values[2, 2] == 3.0


def test_without_petsc4py_the_error_names_it():
    code = """
import sys
sys.modules["petsc4py"] = None
from op2rs.la import Solver
from pyop2 import op2
s = op2.Set(2)
m = op2.Map(s, s, 1, [0, 1])
mat = op2.Mat(op2.Sparsity((s ** 1, s ** 1), [(m, m, None)]))
try:
    mat.handle
except ImportError as e:
    assert "petsc4py" in str(e), e
else:
    raise SystemExit("no error")
d = op2.Dat(s ** 1)
try:
    with d.vec:
        pass
except ImportError as e:
    assert "petsc4py" in str(e), e
else:
    raise SystemExit("no error")
"""
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ))


def test_petsc4py_started_first_leaves_op2rs_one_process():
    """petsc4py starting MPI (funnelled) before op2rs runs sets the launcher's variables:
    op2rs still runs its loops, as one process."""
    code = """
from petsc4py import PETSc
from op2rs.la import Solver
from pyop2 import op2
import numpy as np
s = op2.Set(4)
d = op2.Dat(s ** 1, np.arange(4.0))
op2.par_loop(op2.Kernel("static void k(double *x) { x[0] *= 2; }", "k"), s, d(op2.RW))
assert (d.data_ro == 2 * np.arange(4.0)).all()
assert PETSc.COMM_WORLD.getSize() == 1
"""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("OMPI_", "PMI"))}
    subprocess.run([sys.executable, "-c", code], check=True, env=env)


def test_a_reused_ksp_sees_what_op2_wrote_since():
    """op2's own writes raise the handle's state, so a KSP set up once rebuilds its
    factorisation when the matrix changed (LU here: a stale one would give the old answer)."""
    nodes, mat, assemble, want = _mass(8)
    assemble()
    b = op2.Dat(nodes ** 1, np.linspace(1.0, 2.0, 9))
    ksp = PETSc.KSP().create(comm=PETSc.COMM_SELF)
    ksp.setOperators(mat.handle)
    ksp.setType("preonly")
    ksp.getPC().setType("lu")
    x = op2.Dat(nodes ** 1)
    with b.vec_ro as bv, x.vec as xv:
        ksp.solve(bv, xv)
    np.testing.assert_allclose(x.data_ro, np.linalg.solve(want, b.data_ro), rtol=1e-10)
    for change, factor in ((assemble, 2.0), (lambda: mat.zero_rows([0], 1.0), None)):
        change()
        a = mat.values
        with b.vec_ro as bv, x.vec as xv:
            ksp.solve(bv, xv)
        np.testing.assert_allclose(x.data_ro, np.linalg.solve(a, b.data_ro), rtol=1e-10)
        if factor is not None:
            np.testing.assert_allclose(a, factor * want)


def test_a_vec_outlives_its_context_and_loops_keep_order_with_petsc_writes():
    s = op2.Set(3)
    d = op2.Dat(s ** 1, [1.0, 2.0, 3.0])
    e = op2.Dat(s ** 1)
    with d.vec as v:
        copy = op2.Kernel("static void k(double *e, const double *d) { e[0] = d[0]; }", "k")
        op2.par_loop(copy, s, e(op2.WRITE), d(op2.READ))
        v.set(100.0)
    # The loop was recorded before PETSc wrote: it saw the old values.
    np.testing.assert_array_equal(e.data_ro, [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(d.data_ro, [100.0] * 3)
    # The Vec is the Dat's, kept: using it after the context is fine.
    assert v.norm() == pytest.approx(np.sqrt(3) * 100.0)
    with d.vec_ro as w:
        assert w is v


def test_assembly_state_after_loops_and_reads():
    nodes, mat, assemble, want = _mass()
    assemble()
    assert mat.assembly_state is op2.Mat.ADD_VALUES
    np.testing.assert_allclose(mat.values, want)
    assert mat.assembly_state is op2.Mat.ASSEMBLED


def test_entries_outside_the_pattern_are_petscs_to_allow():
    """As on PyOP2's matrices: an entry outside the sparsity is an error while the handle's
    NEW_NONZERO_ALLOCATION_ERR is on; turned off, PETSc takes it and the matrix grows to PETSc's
    pattern (this matrix only), after which op2 and PETSc share values again."""
    nodes, mat, assemble, want = _mass(4)
    other = op2.Mat(mat.sparsity)
    assemble()
    A = mat.handle
    # As made, the handle refuses new entries, and so does the matrix: nothing changes.
    with pytest.raises(PETSc.Error):
        A.setValue(0, 4, 1.0)
        A.assemble()
    with pytest.raises(exceptions.Op2Error, match="not in the sparsity pattern"):
        mat.set_values(4, 0, [5.0])
    np.testing.assert_allclose(mat.values, want)
    # A failed insertion through op2 left PETSc ready for either kind of insertion.
    A.setValue(1, 1, want[1, 1])
    A.assemble()
    # What holds the handle keeps holding the same matrix once it grows: a KSP, a (near) null
    # space.
    ksp = PETSc.KSP().create(comm=PETSc.COMM_SELF)
    ksp.setOperators(A)
    ksp.setType("preonly")
    ksp.getPC().setType("lu")
    nullspace = PETSc.NullSpace().create(constant=True, comm=PETSc.COMM_SELF)
    A.setNearNullSpace(nullspace)
    # Set up (factorised) once before the matrix grows: it must factorise again after.
    b = PETSc.Vec().createWithArray(np.arange(1.0, 6.0), comm=PETSc.COMM_SELF)
    x = b.duplicate()
    ksp.solve(b, x)
    np.testing.assert_allclose(want @ x.array, b.array, rtol=1e-10)
    A.setOption(PETSc.Mat.Option.NEW_NONZERO_ALLOCATION_ERR, False)
    # Through PETSc: adopted at op2's next use of the matrix.
    A.setValue(0, 4, 1.0)
    A.assemble()
    grown = want.copy()
    grown[0, 4] = 1.0
    np.testing.assert_allclose(mat.values, grown)
    # Through op2: PETSc decides, then the matrix grows.
    mat.set_values(4, 0, [5.0])
    mat.addto_values(2, 0, [0.5])
    grown[4, 0], grown[2, 0] = 5.0, 0.5
    np.testing.assert_allclose(mat.values, grown)
    assert mat.handle is A and A.getInfo()["nz_used"] == np.count_nonzero(grown)
    # Loops add into the grown matrix; PETSc's writes are the matrix's again.
    assemble()
    grown += want
    np.testing.assert_allclose(mat.values, grown)
    np.testing.assert_allclose(A[:, :], grown)
    A.setValue(4, 0, -1.0)
    A.assemble()
    grown[4, 0] = -1.0
    np.testing.assert_allclose(mat.values, grown)
    # The KSP solves with the grown matrix; the null space and the name stayed.
    ksp.solve(b, x)
    np.testing.assert_allclose(grown @ x.array, b.array, rtol=1e-10)
    assert A.getNearNullSpace().handle == nullspace.handle and A.getName() == mat.name
    # op2 writes that follow PETSc's growth are not lost to it.
    A.setValue(3, 0, 2.0)
    A.assemble()
    mat.set_values(1, 1, [3.0])
    grown[3, 0], grown[1, 1] = 2.0, 3.0
    np.testing.assert_allclose(mat.values, grown)
    # The Sparsity's other matrices keep its pattern.
    assert other.sparsity is mat.sparsity
    with pytest.raises(exceptions.Op2Error, match="not in the sparsity pattern"):
        other.set_values(4, 0, [5.0])
    # It grows again, through either side; then PETSc's matrix outlives op2's.
    A.setValue(0, 3, 7.0)
    A.assemble()
    mat.set_values(3, 1, [-2.0])
    grown[0, 3], grown[3, 1] = 7.0, -2.0
    np.testing.assert_allclose(mat.values, grown)
    np.testing.assert_allclose(A[:, :], grown)
    del mat, other
    import gc
    gc.collect()
    y = b.duplicate()
    A.mult(b, y)
    np.testing.assert_allclose(y.array, grown @ b.array)
    ksp.solve(b, x)
    np.testing.assert_allclose(grown @ x.array, b.array, rtol=1e-10)


def test_vec_contexts_of_other_types_and_of_globals():
    s = op2.Set(2)
    md = op2.MixedDat([op2.Dat(s ** 1, [1, 2], np.int32), op2.Dat(s ** 1, [3, 4], np.int32)])
    with md.vec_ro as v:
        np.testing.assert_array_equal(v.array_r, [1, 2, 3, 4])
    with pytest.raises(TypeError):
        with md.vec:
            pass
    g = op2.Global(2, [1.0, 2.0], np.float64)
    with g.vec as v:
        v.scale(3.0)
    np.testing.assert_array_equal(g.data_ro, [3.0, 6.0])
    with g.vec_ro as v:
        np.testing.assert_array_equal(v.array_r, [3.0, 6.0])


def test_a_kept_vec_forgets_what_petsc_cached_when_the_dat_changed():
    d = op2.Dat(op2.Set(1) ** 1, [1.0])
    with d.vec_ro as v:
        assert v.norm() == 1.0
    d.data[:] = 2.0
    with d.vec_ro as v:
        assert v.norm() == 2.0
    op2.par_loop(op2.Kernel("static void k(double *x) { x[0] = 5; }", "k"), d.dataset.set,
                 d(op2.WRITE))
    with d.vec_ro as v:
        assert v.norm() == 5.0


def test_early_pyop2_hands_a_dats_vec_to_set_diagonal_and_products():
    """PyOP2's early ``dat.vec_ro`` was the PETSc Vec itself: ``mat.set_diagonal(dat.vec_ro)``
    and ``mat * dat.vec_ro`` take it (a Vec, or the context that yields one) as the Dat's
    values; the product is a Dat, as then."""
    from op2rs import op2 as old
    s = old.Set(4)
    m = old.Map(s, s, 1, [0, 1, 2, 3])
    mat = old.Mat(old.Sparsity((s ** 1, s ** 1), [(m, m)]))
    d = old.Dat(s ** 1, np.array([1.0, -2.0, 3.0, 0.5]))
    mat.set_diagonal(d.vec_ro)
    np.testing.assert_array_equal(np.diag(mat.values), d.data_ro)
    np.testing.assert_array_equal((mat * d.vec_ro).data_ro, d.data_ro ** 2)
    raw = PETSc.Vec().createWithArray(np.array([2.0, 2.0, 2.0, 2.0]), comm=PETSc.COMM_SELF)
    np.testing.assert_array_equal((mat * raw).data_ro, 2 * d.data_ro)
    mat.set_diagonal(raw)
    np.testing.assert_array_equal(np.diag(mat.values), np.full(4, 2.0))
    short = PETSc.Vec().createWithArray(np.ones(3), comm=PETSc.COMM_SELF)
    with pytest.raises(ValueError, match="3 values"):
        mat * short
    with pytest.raises(TypeError):
        mat * [1.0, 2.0, 3.0, 4.0]
    assert d.nbytes == 4 * 8


@pytest.mark.parametrize("grown", [False, True])
def test_petsc_writes_before_a_made_loop_runs_are_kept(grown):
    """A ParLoop made, then PETSc writes (assembled or not), then the loop runs: both writes
    stay, whether the handle shares the values or (grown) keeps a copy. A loop whose matrix
    argument was made before the handle grew is refused, not run into the old storage."""
    nodes, mat, assemble, want = _mass(4)
    assemble()
    A = mat.handle
    got = want.copy()
    if grown:
        A.setOption(PETSc.Mat.Option.NEW_NONZERO_ALLOCATION_ERR, False)
        A.setValue(0, 4, 1.0)
        A.assemble()
        got[0, 4] = 1.0
        np.testing.assert_allclose(mat.values, got)
    rmap = mat.sparsity.maps[0][0]
    k = op2.Kernel("static void k(double A[2][2]) { A[0][0] += 1.0; }", "k")
    loop = op2.ParLoop(k, rmap.iterset, mat(op2.INC, (rmap, rmap)))
    A.setValue(2, 2, 50.0)
    A.assemble()
    got[2, 2] = 50.0
    loop.compute()
    for c in range(4):
        got[c, c] += 1.0
    np.testing.assert_allclose(mat.values, got)
    np.testing.assert_allclose(A[:, :], got)
    # PETSc's entries not yet assembled are assembled before op2 reads them.
    A.setValue(1, 1, 9.0)
    got[1, 1] = 9.0
    np.testing.assert_allclose(mat.values, got)
    if grown:
        stale = op2.ParLoop(k, rmap.iterset, mat(op2.INC, (rmap, rmap)))
        A.setValue(4, 1, 2.0)
        A.assemble()
        with pytest.raises(RuntimeError, match="make the arguments"):
            stale.compute()
