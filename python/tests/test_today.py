"""Today's PyOP2 (the ``pyop2`` package inside Firedrake) as op2rs presents it: ``from pyop2
import op2``. Three-size Sets, ``comm=``, ``COMM_WORLD``/``COMM_SELF``, ``Constant``, packed
kernel arguments (a map row's values in one array), the present Sparsity and Mat forms, today's
Kernel keywords, ``pyop2.datatypes`` and ``pyop2.exceptions``. Runs on the suite's backend;
expected values are computed with NumPy."""

import os

import numpy as np
import pytest

import op2rs.exceptions
from pyop2 import datatypes, exceptions, op2
from pyop2.mpi import COMM_SELF, COMM_WORLD

N = 64


@pytest.fixture(params=[(N, N, N), (0, N, N), (N // 2, N, N), (0, N // 2, N)])
def elems(request):
    return op2.Set(request.param, "elems", comm=COMM_WORLD)


def test_three_sizes_and_loops_over_the_owned_elements(elems):
    core, owned, total = elems.sizes
    assert (elems.core_size, elems.size, elems.total_size) == (core, owned, total)
    assert repr(elems) == "Set(%r, 'elems')" % ((core, owned, total),)
    x = op2.Dat(op2.DataSet(elems, 1, "delems"), np.arange(N, dtype=np.uint32), np.uint32, "x")
    g = op2.Global(1, 0, np.uint32, "g", comm=COMM_WORLD)
    op2.par_loop(op2.Kernel("""static void inc(unsigned int *x, unsigned int *g) {
        *x += 1; *g += *x; }""", "inc"), elems, x(op2.RW), g(op2.INC))
    assert g.data[0] == owned * (owned + 1) // 2
    assert len(x.data_ro) == owned and len(x.data_ro_with_halos) == total
    # The ghosts are not run over.
    np.testing.assert_array_equal(x.data_ro_with_halos[owned:], np.arange(owned, total))


def test_an_int_is_three_equal_sizes_and_other_sizes_are_refused():
    assert op2.Set(5).sizes == (5, 5, 5)
    with pytest.raises(exceptions.SizeTypeError):
        op2.Set((1, 2))
    with pytest.raises(exceptions.SizeTypeError):
        op2.Set((3, 2, 4))
    with pytest.raises(exceptions.SizeTypeError):
        op2.Set("five")


def test_a_dataset_per_dim_is_one_object():
    s = op2.Set(4)
    assert s ** 2 is s ** 2 and s ** 2 is not s ** 3
    assert (s ** 2).cdim == 2


def test_communicators():
    s = op2.Set(3, comm=COMM_WORLD)
    assert s.comm == COMM_WORLD
    assert op2.Map(s, s, 1, [0, 1, 2]).comm == COMM_WORLD
    assert op2.Dat(s).comm == COMM_WORLD
    # One process: its own communicator spans every rank there is.
    assert COMM_SELF.size == 1 and COMM_WORLD.rank == 0
    if COMM_WORLD.size == 1:
        assert op2.Global(1, 0.0, comm=COMM_SELF).comm == COMM_SELF
    with pytest.raises(TypeError):
        op2.Set(3, comm="world")
    # A halo is today's Halo (with its exchanges), not any object.
    with pytest.raises(TypeError, match="halo"):
        op2.Set((1, 2, 3), halo=object())


def test_constants_are_read_only():
    s = op2.Set(4)
    c = op2.Constant(2, [1.0, 2.0], np.float64, "c", comm=COMM_WORLD)
    x = op2.Dat(s ** 1, np.zeros(4))
    op2.par_loop(op2.Kernel("static void r(double *x, const double *c) { *x = c[0] + c[1]; }",
                            "r"), s, x(op2.WRITE), c(op2.READ))
    np.testing.assert_array_equal(x.data_ro, 3.0)
    with pytest.raises(exceptions.ModeValueError):
        c(op2.INC)


def test_packed_arguments_gather_and_scatter_whole_rows():
    """An edge loop reads both nodes' two values packed (x[0..3]) and increments both nodes'
    rows packed: the values each node gets are every incident edge's."""
    n = 7
    nodes = op2.Set(n + 1, "nodes")
    edges = op2.Set(n, "edges")
    e2n_values = np.array([[e, e + 1] for e in range(n)], dtype=np.int32)
    e2n = op2.Map(edges, nodes, 2, e2n_values, "e2n")
    x0 = np.arange(2.0 * (n + 1)).reshape(n + 1, 2)
    x = op2.Dat(nodes ** 2, x0, np.float64, "x")
    acc = op2.Dat(nodes ** 2, dtype=np.float64, name="acc")
    lengths = op2.Dat(edges ** 1, dtype=np.float64, name="lengths")
    k = op2.Kernel("""
static void edge(double *acc, const double *x, double *len) {
  /* x and acc: (node 0: v0, v1), (node 1: v0, v1) */
  *len = x[2] - x[0] + 10.0 * (x[3] - x[1]);
  for (int j = 0; j < 2; j++) {
    acc[2 * j] += x[0] * (j + 1);
    acc[2 * j + 1] += x[3];
  }
}""", "edge")
    op2.par_loop(k, edges, acc(op2.INC, e2n), x(op2.READ, e2n), lengths(op2.WRITE))
    want = np.zeros((n + 1, 2))
    for e, (a, b) in enumerate(e2n_values):
        for j, node in enumerate((a, b)):
            want[node, 0] += x0[a, 0] * (j + 1)
            want[node, 1] += x0[b, 1]
    np.testing.assert_allclose(acc.data_ro, want)
    np.testing.assert_allclose(lengths.data_ro,
                               x0[1:, 0] - x0[:-1, 0] + 10 * (x0[1:, 1] - x0[:-1, 1]))
    with pytest.raises(exceptions.MapValueError):
        x(op2.READ, op2.Map(edges, edges, 1, np.arange(n)))


def test_present_sparsity_and_packed_element_matrices():
    """A 1-D mass-like matrix assembled from 2x2 element matrices through the present forms,
    compared with the same sum done in NumPy."""
    n = 6
    nodes = op2.Set(n + 1, "mnodes")
    cells = op2.Set(n, "mcells")
    c2n_values = np.array([[c, c + 1] for c in range(n)], dtype=np.int32)
    c2n = op2.Map(cells, nodes, 2, c2n_values, "c2n")
    h = op2.Dat(cells ** 1, np.linspace(1.0, 2.0, n), np.float64, "h")
    sp = op2.Sparsity((nodes ** 1, nodes ** 1), [(c2n, c2n, None)], "msp")
    assert op2.Sparsity((nodes ** 1, nodes ** 1), [(c2n, c2n, None)]) is sp
    mat = op2.Mat(sp, np.float64, "mass")
    op2.par_loop(op2.Kernel("""
static void mass(double A[2][2], const double *h) {
  A[0][0] += 2 * h[0] / 6; A[0][1] += h[0] / 6;
  A[1][0] += h[0] / 6;     A[1][1] += 2 * h[0] / 6;
}""", "mass"), cells, mat(op2.INC, (c2n, c2n)), h(op2.READ))
    want = np.zeros((n + 1, n + 1))
    for c, (a, b) in enumerate(c2n_values):
        hc = h.data_ro[c]
        want[np.ix_([a, b], [a, b])] += hc / 6 * np.array([[2, 1], [1, 2]])
    np.testing.assert_allclose(mat.values, want)
    with pytest.raises(exceptions.MapValueError):
        other = op2.Map(cells, nodes, 2, c2n_values[:, ::-1].copy())
        mat(op2.INC, (other, other))
    # The dict form with its one block is the same pattern.
    assert op2.Sparsity((nodes ** 1, nodes ** 1), {(0, 0): [(c2n, c2n, None)]}) is sp


def test_packed_element_matrices_of_vector_spaces_go_node_by_node():
    """dim 2 on both sides: entry (i * 2 + a, j * 2 + b) of the element matrix is row node i
    component a, column node j component b."""
    n = 4
    nodes = op2.Set(n + 1, "vnodes")
    cells = op2.Set(n, "vcells")
    c2n_values = np.array([[c, c + 1] for c in range(n)], dtype=np.int32)
    c2n = op2.Map(cells, nodes, 2, c2n_values, "vc2n")
    sp = op2.Sparsity((nodes ** 2, nodes ** 2), [(c2n, c2n, None)], "vsp")
    mat = op2.Mat(sp, np.float64, "vmat")
    op2.par_loop(op2.Kernel("""
static void block(double A[4][4]) {
  for (int r = 0; r < 4; r++)
    for (int c = 0; c < 4; c++)
      A[r][c] += 1 + r + 10 * c;
}""", "block"), cells, mat(op2.INC, (c2n, c2n)))
    want = np.zeros((2 * (n + 1), 2 * (n + 1)))
    for cell in c2n_values:
        for i in range(2):
            for a in range(2):
                for j in range(2):
                    for b in range(2):
                        r, c = 2 * i + a, 2 * j + b
                        want[2 * cell[i] + a, 2 * cell[j] + b] += 1 + r + 10 * c
    np.testing.assert_allclose(mat.values, want)


def test_kernel_keywords():
    s = op2.Set(3)
    x = op2.Dat(s ** 1, np.zeros(3))
    k = op2.Kernel("static void w(double *x) { *x = TWICE(21.0); }", "w",
                   headers=["#include <math.h>"], user_code="#define TWICE(a) (2 * (a))",
                   flop_count=1, requires_zeroed_output_arguments=True)
    assert k.num_flops == 1
    op2.par_loop(k, s, x(op2.WRITE))
    np.testing.assert_array_equal(x.data_ro, 42.0)
    with pytest.raises(ValueError, match="pass_layer_arg"):
        op2.par_loop(k, s, x(op2.WRITE), pass_layer_arg=True)


def test_datatypes_and_exceptions():
    assert datatypes.IntType == np.int32 and datatypes.ScalarType == np.float64
    assert datatypes.as_cstr(np.float64) == "double" and datatypes.IntType_c == "int"
    assert datatypes.dtype_limits(np.int32) == (-2 ** 31, 2 ** 31 - 1)
    assert exceptions.MapValueError is op2rs.exceptions.MapValueError


def test_petsc_type_names_in_kernels():
    s = op2.Set(4)
    x = op2.Dat(s ** 1, np.arange(4.0))
    n = op2.Dat(s ** 1, np.zeros(4, dtype=np.int32), np.int32)
    op2.par_loop(op2.Kernel("""static void k(PetscScalar *x, PetscInt *n) {
        PetscReal h = 0.5; *x = *x * h; *n = (PetscInt)(*x * 4); }""", "k"),
        s, x(op2.RW), n(op2.WRITE))
    np.testing.assert_array_equal(x.data_ro, np.arange(4.0) / 2)
    np.testing.assert_array_equal(n.data_ro, np.arange(4) * 2)


def test_dat_versions_halo_flags_and_bytes():
    s = op2.Set(5)
    d = op2.Dat(s ** 2, dtype=np.float64)
    assert d.dat_version == 0 and d.nbytes == 5 * 2 * 8
    d.data_ro
    d.data_ro_with_halos
    assert d.dat_version == 0
    d.data[:] = 1.0
    assert d.dat_version == 1
    d.data_with_halos
    assert d.dat_version == 2
    d.zero()
    assert d.dat_version == 3
    op2.par_loop(op2.Kernel("static void w(double *x) { x[0] = 1; x[1] = 2; }", "w"),
                 s, d(op2.WRITE))
    assert d.dat_version == 4
    op2.par_loop(op2.Kernel("static void r(const double *x) { }", "r"), s, d(op2.READ))
    assert d.dat_version == 4
    d.halo_valid = False
    assert not d.halo_valid and d.needs_halo_update
    d.halo_valid = True
    assert d.halo_valid


def test_dat_copy_and_zero_on_a_subset_and_axpy():
    s = op2.Set(6)
    a = op2.Dat(s ** 1, np.arange(6.0))
    b = op2.Dat(s ** 1, np.full(6, -1.0))
    odd = op2.Subset(s, [1, 3, 5])
    a.copy(b, subset=odd)
    np.testing.assert_array_equal(b.data_ro, [-1, 1, -1, 3, -1, 5])
    b.zero(subset=odd)
    np.testing.assert_array_equal(b.data_ro, [-1, 0, -1, 0, -1, 0])
    c = op2.Dat(s ** 1, np.full(6, 10.0))
    c.axpy(2.0, a)
    np.testing.assert_array_equal(c.data_ro, 10 + 2 * np.arange(6.0))
    c.maxpy((1.0, -1.0), (a, b))
    np.testing.assert_array_equal(c.data_ro, 10 + 3 * np.arange(6.0) - b.data_ro)


def test_dat_save_and_load(tmp_path):
    s = op2.Set(4)
    a = op2.Dat(s ** 2, np.arange(8.0).reshape(4, 2))
    b = op2.Dat(s ** 2)
    a.save(str(tmp_path / "a"))
    b.load(str(tmp_path / "a"))
    np.testing.assert_array_equal(a.data_ro, b.data_ro)


def test_maps_are_equal_only_to_themselves_and_permuted_and_composed_maps():
    cells = op2.Set(2)
    nodes = op2.Set(4)
    m = op2.Map(cells, nodes, 2, [[0, 1], [2, 3]])
    same_values = op2.Map(cells, nodes, 2, [[0, 1], [2, 3]])
    assert m == m and m != same_values
    p = op2.PermutedMap(m, [1, 0])
    np.testing.assert_array_equal(p.values, [[1, 0], [3, 2]])
    outer = op2.Set(3)
    pick = op2.Map(outer, cells, 1, [1, 0, 1])
    c = op2.ComposedMap(m, pick)
    assert c.iterset is outer and c.toset is nodes and c.arity == 2
    np.testing.assert_array_equal(c.values, [[2, 3], [0, 1], [2, 3]])
    # Through a loop: each outer element reads its composed row, packed.
    x = op2.Dat(nodes ** 1, [10.0, 20.0, 30.0, 40.0])
    y = op2.Dat(outer ** 1)
    op2.par_loop(op2.Kernel("static void k(double *y, const double *x) { *y = x[0] - x[1]; }",
                            "k"), outer, y(op2.WRITE), x(op2.READ, op2.PermutedMap(c, [1, 0])))
    np.testing.assert_array_equal(y.data_ro, [10.0, 10.0, 10.0])


def test_sparsity_attributes_and_mixed_blocks_by_dict():
    s = op2.Set(3)
    t = op2.Set(4)
    m = op2.Map(s, s, 1, [0, 1, 2])
    n = op2.Map(s, t, 2, [0, 1, 1, 2, 2, 3])
    sp = op2.Sparsity((s ** 1, s ** 1), [(m, m, None), (m, m, None)], name="one")
    assert sp.rcmaps == {(0, 0): [(m, m)]} and sp.dims == (((1, 1),),)
    assert repr(sp).startswith("Sparsity(") and "one" in str(sp)
    ms = op2.MixedSet((s, t))
    mm = op2.MixedMap((m, n))
    msp = op2.Sparsity((ms ** 1, ms ** 1),
                       {(i, j): [(rm, cm, None)] for i, rm in enumerate(mm)
                        for j, cm in enumerate(mm)})
    assert msp.shape == (2, 2) and msp.dims == (((1, 1), (1, 1)), ((1, 1), (1, 1)))
    assert msp.rcmaps[(1, 0)] == [(n, m)]
    assert msp[1, 0].rcmaps[(0, 0)] == msp.rcmaps[(1, 0)] and msp[1][0] is msp[1, 0]
    with pytest.raises(RuntimeError, match="do not go to"):
        op2.Sparsity((ms ** 1, ms ** 1), {(0, 0): [(m, m, None)], (0, 1): [(n, n, None)]})
    assert op2.MixedMap((m, n)) is mm


def test_mixed_packed_assembly():
    """A MixedDat and a mixed Mat through a MixedMap, packed: the kernel sees every
    component's rows in turn (1 + 2 values here), compared with the same sums in NumPy."""
    elem, node = op2.Set(3), op2.Set(4)
    ms = op2.MixedSet((elem, node))
    m_ee = np.array([[0], [1], [2]])
    m_en = np.array([[0, 1], [1, 2], [2, 3]])
    mm = op2.MixedMap((op2.Map(elem, elem, 1, m_ee), op2.Map(elem, node, 2, m_en)))
    src = op2.MixedDat([op2.Dat(elem ** 1, [1.0, 2.0, 3.0]),
                        op2.Dat(node ** 1, [1.0, 2.0, 3.0, 4.0])])
    rhs = op2.MixedDat(ms)
    sp = op2.Sparsity((ms ** 1, ms ** 1), {(i, j): [(rm, cm, None)] for i, rm in enumerate(mm)
                                           for j, cm in enumerate(mm)})
    A = op2.Mat(sp)
    op2.par_loop(op2.Kernel("""
static void k(PetscScalar A[3][3], PetscScalar *b, const double *d) {
  for (int i = 0; i < 3; i++) {
    b[i] += d[i];
    for (int j = 0; j < 3; j++) A[i][j] += d[i] * d[j];
  }
}""", "k"), elem, A(op2.INC, (mm, mm)), rhs(op2.INC, mm), src(op2.READ, mm))
    offsets = (0, 3)
    want_b = np.zeros(7)
    want_A = np.zeros((7, 7))
    se, sn = src[0].data_ro, src[1].data_ro
    for e in range(3):
        rows = [m_ee[e, 0], offsets[1] + m_en[e, 0], offsets[1] + m_en[e, 1]]
        vals = [se[m_ee[e, 0]], sn[m_en[e, 0]], sn[m_en[e, 1]]]
        for i in range(3):
            want_b[rows[i]] += vals[i]
            for j in range(3):
                want_A[rows[i], rows[j]] += vals[i] * vals[j]
    np.testing.assert_allclose(np.concatenate([rhs[0].data_ro, rhs[1].data_ro]), want_b)
    np.testing.assert_allclose(A.values, want_A)


def test_mat_values_and_local_diagonal_entries():
    s = op2.Set(3)
    m = op2.Map(s, s, 2, [[0, 1], [1, 2], [2, 0]])
    mat = op2.Mat(op2.Sparsity((s ** 2, s ** 2), [(m, m, None)]))
    assert (mat.nblock_rows, mat.nblock_cols) == (3, 3)
    mat.set_local_diagonal_entries([0, 2], 5.0)
    mat.addto_values(1, 2, np.arange(4.0))
    mat.addto_values(1, 2, np.ones(4))
    mat.set_values(0, 1, [[7, 8], [9, 10]])
    mat.set_local_diagonal_entries([1], 3.0, idx=1)
    want = np.zeros((6, 6))
    want[[0, 1, 4, 5], [0, 1, 4, 5]] = 5.0
    want[2:4, 4:6] = np.arange(4.0).reshape(2, 2) + 1
    want[0:2, 2:4] = [[7, 8], [9, 10]]
    want[3, 3] = 3.0
    np.testing.assert_array_equal(mat.values, want)
    with pytest.raises(ValueError):
        mat.addto_values(0, 0, [1.0])


def test_direct_args_over_an_extruded_set_run_every_layer():
    base = op2.Set(4)
    columns = op2.ExtrudedSet(base, 6)
    d = op2.Dat(base ** 1, np.zeros(4))
    op2.par_loop(op2.Kernel("static void k(double *x) { *x += 1.0; }", "k"), columns, d(op2.INC))
    np.testing.assert_array_equal(d.data_ro, 5.0)


def test_mixed_copies_versions_and_sizes():
    s, t = op2.Set(2), op2.Set(3)
    ms = op2.MixedSet((s, t))
    assert ms.sizes == (5, 5, 5)
    md = op2.MixedDat([op2.Dat(s ** 1, [1.0, 2.0]), op2.Dat(t ** 1, [3.0, 4.0, 5.0])])
    copy = op2.MixedDat(md)
    md[0].data[:] = -1
    np.testing.assert_array_equal(copy[0].data_ro, [1.0, 2.0])
    assert md.dat_version == 1
    md.halo_valid = False
    assert not md.halo_valid
    with pytest.raises(NotImplementedError):
        md.copy(copy, subset=op2.Subset(s, [0]))


@pytest.mark.parametrize("region, count", [(op2.ALL, 4), (op2.ON_BOTTOM, 1), (op2.ON_TOP, 1),
                                           (op2.ON_INTERIOR_FACETS, 3)])
def test_iteration_regions_of_extruded_loops(region, count):
    """Five layers: four cells per column, three facets between them."""
    base = op2.Set(3)
    columns = op2.ExtrudedSet(base, 5)
    d = op2.Dat(base ** 1, np.zeros(3))
    op2.par_loop(op2.Kernel("static void k(double *x) { *x += 1.0; }", "k"), columns,
                 d(op2.INC), iteration_region=region)
    np.testing.assert_array_equal(d.data_ro, count)
    with pytest.raises(ValueError):
        op2.par_loop(op2.Kernel("static void k(double *x) { *x += 1.0; }", "k"), base,
                     d(op2.INC), iteration_region=op2.ON_TOP)


def test_global_arithmetic():
    a = op2.Global(2, [1.0, 2.0], np.float64, comm=COMM_WORLD)
    b = op2.Global(2, [10.0, 20.0], np.float64, comm=COMM_WORLD)
    np.testing.assert_array_equal((a + b).data_ro, [11, 22])
    np.testing.assert_array_equal((b - a).data_ro, [9, 18])
    np.testing.assert_array_equal((a * 3).data_ro, [3, 6])
    np.testing.assert_array_equal((3 - a).data_ro, [2, 1])
    np.testing.assert_array_equal((b / a).data_ro, [10, 10])
    np.testing.assert_array_equal((-a).data_ro, [-1, -2])
    assert a.inner(b) == 50.0
    a += b
    np.testing.assert_array_equal(a.data_ro, [11, 22])
    a.zero()
    np.testing.assert_array_equal(a.data_ro, [0, 0])
    with pytest.raises(ValueError):
        a + op2.Global(3, [1.0, 2.0, 3.0], np.float64)


def test_printable_forms_and_mixed_dataset_dims():
    s, t = op2.Set(2, "s"), op2.Set(3, "t")
    m = op2.Map(s, t, 1, [0, 2], "m")
    assert repr(m) == "Map(%r, %r, 1, None, 'm', None, None)" % (s, t)
    mds = op2.MixedSet((s, t)) ** 2
    assert isinstance(mds, op2.MixedDataSet) and mds.cdim == 4


def test_frozen_halo_allows_its_access_mode_only():
    s, t = op2.Set(2), op2.Set(3)
    m = op2.Map(s, t, 2, [[0, 1], [1, 2]])
    d = op2.Dat(t ** 1, np.zeros(3))
    k = op2.Kernel("static void k(double *x) { x[0] += 1; x[1] += 1; }", "k")
    with d.frozen_halo(op2.INC):
        op2.par_loop(k, s, d(op2.INC, m))
        with pytest.raises(RuntimeError):
            d(op2.WRITE, m)
    op2.par_loop(k, s, d(op2.RW, m))
    np.testing.assert_array_equal(d.data_ro, [2, 4, 2])


def test_min_and_max_into_a_dat_through_a_map():
    """Each edge offers its value to both its nodes; a node keeps the smallest (largest) of
    its own and the offers."""
    n = 6
    nodes, edges = op2.Set(n + 1), op2.Set(n)
    e2n = op2.Map(edges, nodes, 2, [[e, e + 1] for e in range(n)])
    offers = np.array([5.0, -2.0, 7.0, 0.0, 3.0, -9.0])
    v = op2.Dat(edges ** 1, offers)
    lo = op2.Dat(nodes ** 1, np.full(n + 1, 1.0))
    hi = op2.Dat(nodes ** 1, np.full(n + 1, 1.0))
    op2.par_loop(op2.Kernel("""
static void k(const double *v, double *lo, double *hi) {
  for (int j = 0; j < 2; j++) {
    lo[j] = lo[j] < *v ? lo[j] : *v;
    hi[j] = hi[j] > *v ? hi[j] : *v;
  }
}""", "k"), edges, v(op2.READ), lo(op2.MIN, e2n), hi(op2.MAX, e2n))
    padded = np.concatenate([[np.inf], offers, [np.inf]])
    want_lo = np.minimum(1.0, np.minimum(padded[:-1], padded[1:]))
    padded = np.concatenate([[-np.inf], offers, [-np.inf]])
    want_hi = np.maximum(1.0, np.maximum(padded[:-1], padded[1:]))
    np.testing.assert_array_equal(lo.data_ro, want_lo)
    np.testing.assert_array_equal(hi.data_ro, want_hi)
    with pytest.raises(exceptions.ModeValueError):
        lo(op2.MIN)


# Complex values: C99's ``double complex`` in kernels, on the host backends; device backends
# refuse their loops (their languages have no ``_Complex``).
HOST = os.environ.get("OP2RS_TEST_BACKEND", "sequential") in ("sequential", "seq", "openmp")


def test_complex_dats_and_globals_through_packed_kernels():
    n = 8
    nodes, edges = op2.Set(n), op2.Set(n)
    e2n = op2.Map(edges, nodes, 2, [[e, (e + 1) % n] for e in range(n)])
    w = np.arange(n) * (1 - 0.5j)
    weights = op2.Dat(edges ** 1, w, np.complex128)
    acc = op2.Dat(nodes ** 1, np.full(n, 1j), np.complex128)
    # Complex values have no order, on every backend.
    with pytest.raises(exceptions.ModeValueError):
        op2.par_loop(op2.Kernel("static void m(double complex *v) { }", "m"), edges,
                     acc(op2.MIN, e2n))
    total = op2.Global(1, 0, np.complex128, comm=COMM_WORLD)
    assert acc.dtype == np.complex128 and acc.ctype == datatypes.as_cstr(np.complex128)

    def run():
        op2.par_loop(op2.Kernel("""
#include <complex.h>
static void k(const double complex *w, double complex *a, double complex *t) {
  a[0] += *w * I;
  a[1] += conj(*w);
  *t += *w * *w;
}""", "k"), edges, weights(op2.READ), acc(op2.INC, e2n), total(op2.INC))
    if not HOST:
        with pytest.raises(op2rs.exceptions.Op2Error, match="complex"):
            run()
        return
    run()
    want = np.full(n, 1j)
    for e in range(n):
        want[e] += w[e] * 1j
        want[(e + 1) % n] += np.conj(w[e])
    np.testing.assert_allclose(acc.data_ro, want)
    np.testing.assert_allclose(total.data_ro, [np.sum(w * w)])
    with pytest.raises(exceptions.ModeValueError):
        op2.par_loop(op2.Kernel("static void m(double complex *t) { }", "m"), edges,
                     total(op2.MIN))


def test_complex_dat_arithmetic_inner_and_norm():
    s = op2.Set(2)
    a = op2.Dat(s, [3, 4j], np.complex128)
    b = op2.Dat(s, [4 + 1j, 5j], np.complex128)
    if not HOST:
        with pytest.raises(op2rs.exceptions.Op2Error, match="complex"):
            a.inner(b)
        return
    # The second operand is conjugated: 3 * (4 - 1j) + 4j * -5j.
    assert a.inner(b) == pytest.approx(32 - 3j)
    assert type(a.norm) is float and a.norm == pytest.approx(5.0)
    np.testing.assert_allclose((a * b).data_ro, [12 + 3j, -20])
    np.testing.assert_allclose((a / (2j)).data_ro, [-1.5j, 2])
    # The left Dat's type: a real Dat plus a complex one stays real (C drops the imaginary part).
    r = op2.Dat(s, [1.0, 2.0])
    assert (r + a).dtype == np.float64
    np.testing.assert_allclose((r + a).data_ro, [4.0, 2.0])
    np.testing.assert_allclose((a + r).data_ro, [4, 2 + 4j])
    m = op2.MixedDat([a, b])
    assert m.inner(m) == pytest.approx(25 + 17 + 25)
    assert type(m.norm) is float and m.norm == pytest.approx(np.sqrt(67))
    a._data = [1j, 1]
    np.testing.assert_array_equal(a.data_ro, [1j, 1])


def test_dat_views_in_loops_see_one_component():
    n = 6
    nodes, edges = op2.Set(n), op2.Set(n)
    e2n = op2.Map(edges, nodes, 2, [[e, (e + 1) % n] for e in range(n)])
    v = op2.Dat(nodes ** 3, np.arange(3 * n, dtype=np.float64).reshape(n, 3))
    start = v.data_ro.copy()
    comp = op2.DatView(v, 1)
    assert (comp.cdim, comp.dim, comp.dataset) == (1, (1,), v.dataset)
    np.testing.assert_array_equal(comp.data_ro, start[:, 1])
    with pytest.raises(exceptions.IndexValueError):
        op2.DatView(v, 3)
    # Directly: component 1 written from component 2 (the others kept).
    op2.par_loop(op2.Kernel("static void k(double *y, const double *z) { *y = 2 * *z; }", "k"),
                 nodes, comp(op2.WRITE), op2.DatView(v, (2,))(op2.READ))
    want = start.copy()
    want[:, 1] = 2 * start[:, 2]
    np.testing.assert_array_equal(v.data_ro, want)
    # Through a map, packed: each edge adds 1 and 10 to component 0 of its two ends.
    op2.par_loop(op2.Kernel("static void k(double *x) { x[0] += 1; x[1] += 10; }", "k"),
                 edges, op2.DatView(v, 0)(op2.INC, e2n))
    want[:, 0] += 11
    np.testing.assert_array_equal(v.data_ro, want)
    comp.zero()
    want[:, 1] = 0
    np.testing.assert_array_equal(v.data_ro, want)
    # Two views of one Dat in one loop, and the Dat's own arg afterwards: each sees its own.
    op2.par_loop(op2.Kernel("static void k(double *a, const double *b) { *a = 3 * *b; }", "k"),
                 nodes, op2.DatView(v, 1)(op2.WRITE), op2.DatView(v, 2)(op2.READ))
    want[:, 1] = 3 * want[:, 2]
    np.testing.assert_array_equal(v.data_ro, want)
    op2.par_loop(op2.Kernel("static void k(double *a) { a[0] = 1; a[1] = 2; a[2] = 3; }", "k"),
                 nodes, v(op2.WRITE))
    np.testing.assert_array_equal(v.data_ro, np.tile([1.0, 2.0, 3.0], (n, 1)))


def test_cpp_kernels():
    s = op2.Set(10)
    y = op2.Dat(s ** 1, np.full(10, -10.5))
    k = op2.Kernel("""
#include <cmath>
template <typename T> static T twice(T v) { return 2 * v; }
static void k(double *y) { *y = twice(std::abs(*y)); }""", "k", cpp=True)
    assert k is not op2.Kernel(k.code, "k")
    if not HOST:
        with pytest.raises(op2rs.exceptions.Op2Error, match="C\\+\\+"):
            op2.par_loop(k, s, y(op2.RW))
        return
    op2.par_loop(k, s, y(op2.RW))
    np.testing.assert_array_equal(y.data_ro, np.full(10, 21.0))


@pytest.mark.parametrize("region", [op2.ALL, op2.ON_TOP])
def test_pass_layer_arg(region):
    """Four cells per column over three columns; each cell's value lives in a plain set
    reached through a map stepping one row per layer."""
    base = op2.Set(3)
    columns = op2.ExtrudedSet(base, 5)
    values = op2.Set(3 * 4)
    cell = op2.Map(columns, values, 1, [[4 * c] for c in range(3)], offset=[1])
    v = op2.Dat(values ** 1, np.full(12, -1.0))
    k = op2.Kernel("static void k(double *x, int layer) { x[0] = 10 * layer; }", "k")
    op2.par_loop(k, columns, v(op2.WRITE, cell), pass_layer_arg=True, iteration_region=region)
    want = np.tile([0.0, 10.0, 20.0, 30.0], 3)
    if region == op2.ON_TOP:
        want[[0, 1, 2, 4, 5, 6, 8, 9, 10]] = -1.0
    np.testing.assert_array_equal(v.data_ro, want)


def test_composed_and_permuted_maps_of_an_extruded_map():
    """A ComposedMap whose first map is extruded walks the columns with its offsets; a
    PermutedMap of one permutes its offsets with its entries. Expected values walk the layers
    in NumPy."""
    layers = 4                                   # 3 cells per column, 4 nodes
    cols_a, cols_c = op2.ExtrudedSet(op2.Set(3), layers), op2.ExtrudedSet(op2.Set(2), layers)
    nodes = op2.Set(3 * layers)                  # column j's nodes: j*layers .. j*layers+3
    node_of = np.arange(3 * layers, dtype=np.float64) * 10.0
    src = op2.Dat(nodes ** 1, node_of)
    # Each cell of column j reads its bottom and top node (offset 1 per layer up).
    cell_nodes = op2.Map(cols_a, nodes, 2, [[j * layers, j * layers + 1] for j in range(3)],
                         offset=[1, 1])
    c_to_a = op2.Map(cols_c, cols_a, 1, [2, 0])   # column 0 of C is column 2 of A, 1 is 0
    composed = op2.ComposedMap(cell_nodes, c_to_a)
    assert composed.offset is not None and list(composed.offset) == [1, 1]
    swapped = op2.PermutedMap(cell_nodes, [1, 0])
    assert list(swapped.offset) == [1, 1]
    out_c = op2.Dat(op2.Set(2 * (layers - 1)) ** 1)  # one value per cell of C, by a map
    cell_of_c = op2.Map(cols_c, out_c.dataset.set, 1, [[0], [layers - 1]], offset=[1])
    op2.par_loop(op2.Kernel("""
static void k(double *out, const double *x) { out[0] = x[1] - 0.5 * x[0]; }""", "k"),
        cols_c, out_c(op2.WRITE, cell_of_c), src(op2.READ, composed))
    want = np.zeros(2 * (layers - 1))
    for c, a in enumerate([2, 0]):
        for l in range(layers - 1):
            bottom, top = node_of[a * layers + l], node_of[a * layers + l + 1]
            want[c * (layers - 1) + l] = top - 0.5 * bottom
    np.testing.assert_array_equal(out_c.data_ro, want)
    out_a = op2.Dat(op2.Set(3 * (layers - 1)) ** 1)
    cell_of_a = op2.Map(cols_a, out_a.dataset.set, 1, [[j * (layers - 1)] for j in range(3)],
                        offset=[1])
    op2.par_loop(op2.Kernel("""
static void k(double *out, const double *x) { out[0] = x[1] - 0.5 * x[0]; }""", "k"),
        cols_a, out_a(op2.WRITE, cell_of_a), src(op2.READ, swapped))
    want_a = np.array([node_of[j * layers + l] - 0.5 * node_of[j * layers + l + 1]
                       for j in range(3) for l in range(layers - 1)])
    np.testing.assert_array_equal(out_a.data_ro, want_a)
    # Through an extruded map elsewhere than first, or onto columns of other layers: refused.
    with pytest.raises(NotImplementedError):
        op2.ComposedMap(c_to_a, op2.Map(cols_c, cols_c, 1, [0, 1], offset=[1]))
    with pytest.raises(NotImplementedError):
        op2.ComposedMap(cell_nodes, op2.Map(op2.ExtrudedSet(op2.Set(2), 3), cols_a, 1, [0, 1]))


def _columns():
    """Three columns with layers per entity: [start, stop] rows, cells ``stop - start - 1``
    (2, 1 and 3), their cells' values in a plain set reached by an extruded map."""
    base = op2.Set(3)
    extents = np.array([[0, 3], [2, 4], [1, 5]], dtype=np.int32)
    columns = op2.ExtrudedSet(base, extents)
    cells = op2.Set(6)
    to_cell = op2.Map(columns, cells, 1, [[0], [2], [3]], offset=[1])
    return base, extents, columns, cells, to_cell


def test_layers_per_entity_hand_each_cell_its_layer():
    base, extents, columns, cells, to_cell = _columns()
    assert not columns.constant_layers
    np.testing.assert_array_equal(columns.layers_array, extents)
    with pytest.raises(ValueError):
        columns.layers
    d = op2.Dat(columns ** 1, np.array([10.0, 20.0, 30.0]))
    out = op2.Dat(cells ** 1, np.full(6, -1.0))
    k = op2.Kernel("static void k(const double *d, double *o, int layer) "
                   "{ o[0] = d[0] + layer; }", "k")
    op2.par_loop(k, columns, d(op2.READ), out(op2.WRITE, to_cell), pass_layer_arg=True)
    # Column c's cells are layers start_c .. stop_c - 2.
    want = [10.0 + layer for layer in range(0, 2)] + [20.0 + 2] + [30.0 + layer for layer in range(1, 4)]
    np.testing.assert_array_equal(out.data_ro, want)
    # The top and bottom cells of each column, and a subset of the columns.
    top = op2.Dat(cells ** 1, np.zeros(6))
    op2.par_loop(k, columns, d(op2.READ), top(op2.WRITE, to_cell), pass_layer_arg=True,
                 iteration_region=op2.ON_TOP)
    np.testing.assert_array_equal(top.data_ro, [0, 11, 22, 0, 0, 33])
    bottom = op2.Dat(cells ** 1, np.zeros(6))
    op2.par_loop(k, columns, d(op2.READ), bottom(op2.WRITE, to_cell), pass_layer_arg=True,
                 iteration_region=op2.ON_BOTTOM)
    np.testing.assert_array_equal(bottom.data_ro, [10, 0, 22, 31, 0, 0])
    some = op2.Dat(cells ** 1, np.zeros(6))
    op2.par_loop(k, op2.Subset(columns, [0, 2]), d(op2.READ), some(op2.WRITE, to_cell),
                 pass_layer_arg=True)
    np.testing.assert_array_equal(some.data_ro, [10, 11, 0, 31, 32, 33])


def test_layers_per_entity_without_the_layer_and_misuse():
    base, extents, columns, cells, to_cell = _columns()
    out = op2.Dat(cells ** 1, np.zeros(6))
    k = op2.Kernel("static void k(double *o) { o[0] += 1; }", "k")
    op2.par_loop(k, columns, out(op2.INC, to_cell))
    np.testing.assert_array_equal(out.data_ro, np.ones(6))
    with pytest.raises(exceptions.SizeTypeError):
        op2.ExtrudedSet(base, np.array([[0, 3], [2, 2], [1, 5]]))  # a column without nodes
    with pytest.raises(exceptions.SizeTypeError):
        op2.ExtrudedSet(base, np.array([[0, 3], [2, 4], [1, 5]]) + 0.5)  # not ints
    with pytest.raises(TypeError):
        op2.ExtrudedSet("base", np.array([[0, 3], [2, 4], [1, 5]]))
    # A column of one node layer has no cells: loops skip it.
    empty = op2.ExtrudedSet(base, np.array([[0, 3], [2, 3], [1, 5]]))
    nodes = op2.Set(2 + 0 + 3)
    count = op2.Dat(nodes ** 1, np.zeros(5))
    k2 = op2.Kernel("static void k(double *o, int layer) { o[0] += 1 + layer; }", "k")
    op2.par_loop(k2, empty, count(op2.INC, op2.Map(empty, nodes, 1, [[0], [2], [2]],
                                                    offset=[1])), pass_layer_arg=True)
    np.testing.assert_array_equal(count.data_ro, [1, 2, 2, 3, 4])
    with pytest.raises(exceptions.SizeTypeError):
        op2.ExtrudedSet(base, np.array([[0, 3], [2, 4]]))  # a row short
    with pytest.raises(exceptions.SizeTypeError):
        op2.ExtrudedSet(base, np.array([0, 3, 2, 4, 1, 5]))  # not (n, 2)
    constant = op2.ExtrudedSet(base, 4)
    assert constant.constant_layers and constant.layers == 4
    np.testing.assert_array_equal(constant.layers_array, [[0, 4]])


def test_composed_map_over_layers_per_entity():
    """A ComposedMap whose first map is extruded, over columns whose layers differ from column
    to column but match those of the columns they reach (today's test_composed_map_extrusion
    with variable layers), and refused where they do not."""
    set_c = op2.ExtrudedSet(op2.Set(2), [[1, 3], [0, 3]])
    nodes_c = op2.Set(8)
    dat_c = op2.Dat(op2.DataSet(nodes_c, 1), dtype=np.float64)
    map_c = op2.Map(set_c, nodes_c, 3, values=[[5, 6, 7], [0, 1, 2]], offset=[2, 2, 2])
    set_a = op2.ExtrudedSet(op2.Set(3), [[0, 3], [1, 3], [0, 3]])
    nodes_a = op2.Set(13)
    dat_a = op2.Dat(op2.DataSet(nodes_a, 1), np.arange(13.0))
    map_a0 = op2.Map(set_a, nodes_a, 3, values=[[8, 9, 10], [5, 6, 7], [0, 1, 2]],
                     offset=[2, 2, 2])
    map_a = op2.ComposedMap(map_a0, op2.Map(set_c, set_a, 1, values=[1, 2]))
    k = op2.Kernel("void copy(double *to, const double *from) "
                   "{ for (int i = 0; i < 3; ++i) to[i] = from[i]; }", "copy")
    op2.par_loop(k, set_c, dat_c(op2.WRITE, map_c), dat_a(op2.READ, map_a))
    np.testing.assert_array_equal(dat_c.data_ro, np.arange(8.0))
    with pytest.raises(NotImplementedError, match="other layers"):
        op2.ComposedMap(map_a0, op2.Map(set_c, set_a, 1, values=[0, 2]))


@pytest.mark.parametrize("per_entity", [False, True])
@pytest.mark.parametrize("region", [op2.ON_BOTTOM, op2.ON_TOP])
def test_bottom_and_top_over_a_subset_of_columns(per_entity, region):
    """The bottom (top) cells of some columns, with and without layers per entity and the
    layer, against the same region over every column restricted to those columns."""
    base = op2.Set(4)
    layers = np.array([[0, 3], [1, 4], [0, 5], [2, 4]]) if per_entity else 4
    columns = op2.ExtrudedSet(base, layers)
    per = (layers[:, 1] - layers[:, 0] - 1) if per_entity else np.full(4, 3)
    first = np.concatenate(([0], np.cumsum(per)[:-1]))
    cells = op2.Set(int(per.sum()))
    to_cell = op2.Map(columns, cells, 1, [[f] for f in first], offset=[1])
    k = op2.Kernel("static void k(double *o, int layer) { o[0] = 100 + layer; }", "k")
    whole = op2.Dat(cells ** 1, np.zeros(cells.size))
    op2.par_loop(k, columns, whole(op2.WRITE, to_cell), pass_layer_arg=True,
                 iteration_region=region)
    chosen = [1, 3]
    some = op2.Dat(cells ** 1, np.zeros(cells.size))
    op2.par_loop(k, op2.Subset(columns, chosen), some(op2.WRITE, to_cell), pass_layer_arg=True,
                 iteration_region=region)
    extents = layers if per_entity else np.tile([0, 4], (4, 1))
    want = np.zeros(cells.size)
    for c in chosen:
        top = region == op2.ON_TOP
        at = first[c] + (per[c] - 1 if top else 0)
        want[at] = 100 + (extents[c, 1] - 2 if top else extents[c, 0])
        assert whole.data_ro[at] == want[at]
    np.testing.assert_array_equal(some.data_ro, want)


@pytest.mark.parametrize("per_entity", [False, True])
def test_interior_facets_over_a_subset_of_columns(per_entity):
    """The facets of some columns: each facet's cells below and above, with the layer of the
    cell below, against facets counted here."""
    base = op2.Set(4)
    layers = np.array([[0, 3], [1, 4], [0, 5], [2, 4]]) if per_entity else 5
    columns = op2.ExtrudedSet(base, layers)
    per = (layers[:, 1] - layers[:, 0] - 1) if per_entity else np.full(4, 4)
    first = np.concatenate(([0], np.cumsum(per)[:-1]))
    cells = op2.Set(int(per.sum()))
    to_cell = op2.Map(columns, cells, 1, [[f] for f in first], offset=[1])
    k = op2.Kernel("static void k(double *c, int layer) { c[0] += 1000 + layer; c[1] += 1; }",
                   "k")
    chosen = [0, 2, 3]
    seen = op2.Dat(cells ** 1, np.zeros(cells.size))
    op2.par_loop(k, op2.Subset(columns, chosen), seen(op2.INC, to_cell), pass_layer_arg=True,
                 iteration_region=op2.ON_INTERIOR_FACETS)
    starts = layers[:, 0] if per_entity else np.zeros(4, dtype=int)
    want = np.zeros(cells.size)
    for c in chosen:
        for f in range(per[c] - 1):
            want[first[c] + f] += 1000 + starts[c] + f
            want[first[c] + f + 1] += 1
    np.testing.assert_array_equal(seen.data_ro, want)


class _SeamHalo:
    """Today's Halo for one process: ghost ``g`` of a set (element ``owned + g``) is a copy of
    owned element ``source[g]``, as on the seam of a periodic mesh. Records its calls."""

    def __init__(self, owned, source):
        self.owned, self.source, self.calls = owned, np.asarray(source), []

    comm = COMM_SELF
    local_to_global_numbering = None

    def global_to_local_begin(self, dat, insert_mode):
        self.calls.append(("g2l", dat.name, insert_mode))
        v = dat._data
        v[self.owned:] = v[self.source]

    def global_to_local_end(self, dat, insert_mode):
        pass

    def local_to_global_begin(self, dat, insert_mode):
        self.calls.append(("l2g", dat.name, insert_mode))
        v = dat._data
        combine = {op2.INC: np.add, op2.MIN: np.minimum, op2.MAX: np.maximum}[insert_mode]
        combine.at(v, self.source, v[self.owned:])

    def local_to_global_end(self, dat, insert_mode):
        pass


def test_todays_halo_fills_ghosts_and_sends_increments_to_their_owners():
    """A periodic ring of n cells: the last cell's second node is a ghost of node 0. Loops
    read ghosts the halo filled and send ghosts' increments (and minima) to their owners."""
    n = 6
    halo = _SeamHalo(n, [0])
    nodes = op2.Set((n, n, n + 1), halo=halo)
    assert nodes.halo is halo
    cells = op2.Set(n)
    c2n = op2.Map(cells, nodes, 2, [[e, e + 1] for e in range(n)])
    x = op2.Dat(nodes ** 1)
    x.data[:] = np.arange(n) + 10.0  # written: the ghost (still 0) is stale
    y = op2.Dat(cells ** 1)
    read = op2.Kernel("static void r(const double *x, double *y) { y[0] = x[0] + x[1]; }",
                      "r")
    op2.par_loop(read, cells, x(op2.READ, c2n), y(op2.WRITE))
    np.testing.assert_array_equal(y.data_ro, [21, 23, 25, 27, 29, 15 + 10])
    assert halo.calls == [("g2l", x.name, op2.WRITE)]
    # Nothing changed x: its ghosts are current, no exchange.
    op2.par_loop(read, cells, x(op2.READ, c2n), y(op2.WRITE))
    assert len(halo.calls) == 1
    z = op2.Dat(nodes ** 1, np.full(n + 1, 5.0))
    op2.par_loop(op2.Kernel("static void i(double *z) { z[0] += 1.0; z[1] += 2.0; }", "i"),
                 cells, z(op2.INC, c2n))
    # Every owned node is the first node of one cell and the second of another.
    np.testing.assert_array_equal(z.data_ro, np.full(n, 8.0))
    assert halo.calls[1:] == [("l2g", z.name, op2.INC)] and not z.halo_valid
    # MIN: the ghost starts from the identity (not its stale 100 nor 0), so node 0 gets the
    # smallest of its own value and the last cell's.
    m = op2.Dat(nodes ** 1, np.arange(n + 1) + 100.0)
    m.data[:] = np.arange(n) + 100.0
    lo = op2.Kernel("static void lo(double *m, const double *c) "
                    "{ if (*c < m[1]) m[1] = *c; }", "lo")
    cell_values = op2.Dat(cells ** 1, np.arange(n) + 50.0)
    op2.par_loop(lo, cells, m(op2.MIN, c2n), cell_values(op2.READ))
    want = np.minimum(np.arange(n) + 100.0, np.roll(np.arange(n) + 50.0, 1))
    np.testing.assert_array_equal(m.data_ro, want)
    assert halo.calls[-1] == ("l2g", m.name, op2.MIN)
    # Frozen for INC: ghosts zeroed on entry, every loop inside adds to them, sent on exit.
    z.data[:] = 0.0
    inc = op2.Kernel("static void i1(double *z) { z[0] += 1.0; z[1] += 1.0; }", "i1")
    with z.frozen_halo(op2.INC):
        op2.par_loop(inc, cells, z(op2.INC, c2n))
        op2.par_loop(inc, cells, z(op2.INC, c2n))
        assert z._data[n] == 2.0 and z.data_ro[0] == 2.0
    np.testing.assert_array_equal(z.data_ro, np.full(n, 4.0))
    # A loop only writing through maps exchanges nothing; neither does one reading a Dat whose
    # ghosts are current, and a view with halos brings stale ghosts first.
    calls = len(halo.calls)
    op2.par_loop(op2.Kernel("static void w(double *z) { z[0] = 1.0; z[1] = 1.0; }", "w"),
                 cells, z(op2.WRITE, c2n))
    assert len(halo.calls) == calls
    x.data[0] = 42.0
    assert x.data_ro_with_halos[n] == 42.0 and halo.calls[-1] == ("g2l", x.name, op2.WRITE)
    # Dat arithmetic computes owned rows only: the result's ghosts are exchanged when read.
    s2 = x + x
    assert not s2.halo_valid
    op2.par_loop(read, cells, s2(op2.READ, c2n), y(op2.WRITE))
    assert y.data_ro[-1] == 2 * x.data_ro[-1] + 2 * 42.0
    # A DatView incremented through a map: its component's ghosts reach their owners, the
    # other component stays.
    two = op2.Dat(nodes ** 2)
    two.data[:, 1] = 3.0
    op2.par_loop(op2.Kernel("static void v(double *z) { z[0] += 1.0; z[1] += 1.0; }", "v"),
                 cells, op2.DatView(two, 0)(op2.INC, c2n))
    np.testing.assert_array_equal(two.data_ro, np.tile([2.0, 3.0], (n, 1)))
    with pytest.raises(TypeError):
        op2.Set(3, halo=object())


def test_a_mixed_dat_through_maps_into_other_sets_of_its_sizes():
    """Today's MixedDat takes a MixedMap whatever its tosets: maps into sets of the same sizes
    reach the Dat's own elements (values computed here); other sizes are MapValueError."""
    cells, nodes = op2.Set(3), op2.Set(4)
    elsewhere = op2.Set(4)
    u = op2.Dat(nodes ** 1, np.arange(4.0) + 1.0)
    p = op2.Dat(cells ** 2, np.arange(6.0).reshape(3, 2))
    m_nodes = op2.Map(cells, elsewhere, 2, [0, 1, 1, 2, 3, 0])
    m_cells = op2.Map(cells, op2.Set(3), 1, [2, 0, 1])
    up = op2.MixedDat([u, p])
    out = op2.Dat(cells ** 1, np.zeros(3))
    k = op2.Kernel("""static void k(double *o, const double *v) {
        o[0] = v[0] + 10.0 * v[1] + 100.0 * v[2] + 1000.0 * v[3]; }""", "k")
    mm = op2.MixedMap([m_nodes, m_cells])
    op2.par_loop(k, cells, out(op2.WRITE), up(op2.READ, mm))
    un, pv = np.arange(4.0) + 1.0, np.arange(6.0).reshape(3, 2)
    rows = [[0, 1], [1, 2], [3, 0]]
    expect = [un[r[0]] + 10 * un[r[1]] + 100 * pv[c, 0] + 1000 * pv[c, 1]
              for r, c in zip(rows, [2, 0, 1])]
    np.testing.assert_array_equal(out.data_ro, expect)
    # Incrementing through them reaches the Dat's elements too, and the same copies serve again.
    inc = op2.Kernel("static void inc(double *v) { for (int i = 0; i < 4; i++) v[i] += 1.0; }",
                     "inc")
    op2.par_loop(inc, cells, up(op2.INC, mm))
    op2.par_loop(inc, cells, up(op2.INC, mm))
    np.testing.assert_array_equal(u.data_ro, un + 2 * np.bincount(np.ravel(rows), minlength=4))
    np.testing.assert_array_equal(p.data_ro, pv + 2)
    with pytest.raises(exceptions.MapValueError, match="sizes"):
        op2.par_loop(k, cells, out(op2.WRITE),
                     up(op2.READ, op2.MixedMap([op2.Map(cells, op2.Set(5), 2, [0] * 6),
                                                 m_cells])))


def test_kernel_parameters_never_named_take_any_type():
    """``static void k(int *x) {}`` over an int64 Dat (today's tests do it): C takes it, and
    nothing can be misread; a kernel that uses the parameter is still refused."""
    s1, s2 = op2.Set(2), op2.Set(3)
    m = op2.Map(s1, s2, 3, [0, 1, 2, 2, 1, 0])
    d = op2.Dat(s2 ** 1, [5, 6, 7], dtype=np.int64)
    op2.par_loop(op2.Kernel("static void k(int *x) {}", "k"), s1, d(op2.INC, m))
    op2.par_loop(op2.Kernel("static void k(int *x) {}", "k"), s2, d(op2.RW))
    np.testing.assert_array_equal(d.data_ro, [5, 6, 7])
    with pytest.raises(exceptions.KernelTypeError, match="int"):
        op2.par_loop(op2.Kernel("static void k2(int *x) { x[0] += 1; }", "k2"), s1,
                     d(op2.INC, m))
