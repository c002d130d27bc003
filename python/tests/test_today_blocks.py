"""Today's mixed matrices block by block: a Sparsity whose blocks have maps of their own (other
iteration sets, several pairs, empty blocks), loops assembling ``mat[i, j]`` through a block's
own maps, and the small pieces of today's API around them (composed maps through "no element",
kernels defined ``k()``, ``Dat._is_allocated``). Expected values are computed here from the maps'
values."""

import numpy as np
import pytest

from pyop2 import exceptions, op2

# Two meshes of intervals: A (3 cells, 4 nodes) and B (2 cells, 3 nodes); B's cell c sits on
# A's cell c + 1, and A's cells 1 and 2 on B's cells 0 and 1.
A_NODES = np.array([[0, 1], [1, 2], [2, 3]])
B_NODES = np.array([[0, 1], [1, 2]])
B_TO_A = np.array([1, 2])
A_TO_B = np.array([0, 0, 1])

KERNEL = """
static void k(double A[2][2], const double *w) {
  for (int i = 0; i < 2; i++)
    for (int j = 0; j < 2; j++) A[i][j] += *w * (1 + i + 10 * j);
}"""


@pytest.fixture
def meshes():
    cells_a, nodes_a, cells_b, nodes_b = op2.Set(3), op2.Set(4), op2.Set(2), op2.Set(3)
    m = {
        "a": op2.Map(cells_a, nodes_a, 2, A_NODES),
        "b": op2.Map(cells_b, nodes_b, 2, B_NODES),
        "ba": op2.Map(cells_b, cells_a, 1, B_TO_A),
        "ab": op2.Map(cells_a, cells_b, 1, A_TO_B),
    }
    m["b_on_a"] = op2.ComposedMap(m["a"], m["ba"])  # B's cells, A's nodes
    m["a_on_b"] = op2.ComposedMap(m["b"], m["ab"])  # A's cells, B's nodes
    return (cells_a, nodes_a, cells_b, nodes_b), m


def _element(w):
    return np.array([[w * (1 + i + 10 * j) for j in range(2)] for i in range(2)])


def _assembled(blocks, shape, offsets):
    """The dense matrix the loops below assemble: for each block (i, j), its (row values,
    column values, weights) adding ``_element(w)`` at each element."""
    want = np.zeros(shape)
    for (i, j), (rows, cols, weights) in blocks.items():
        for r, c, w in zip(rows, cols, weights):
            want[np.ix_(offsets[0][i] + r, offsets[1][j] + c)] += _element(w)
    return want


def _pattern_counts(pairs, nrows, square):
    """Each row's count of distinct columns reached by ``pairs`` of (row values, column
    values) (and the diagonal of a square pattern)."""
    cols = [set([r]) if square else set() for r in range(nrows)]
    for rows, cs in pairs:
        for r_e, c_e in zip(rows, cs):
            for r in r_e:
                cols[r].update(c_e.tolist())
    return np.array([len(c) for c in cols])


def test_blocks_of_other_iteration_sets_assemble_block_by_block(meshes):
    (cells_a, nodes_a, cells_b, nodes_b), m = meshes
    ds = op2.MixedSet((nodes_a, nodes_b)) ** 1
    blocks = {(0, 0): [(m["a"], m["a"], None)], (1, 1): [(m["b"], m["b"], None)],
              (1, 0): [(m["b"], m["b_on_a"], None)], (0, 1): [(m["a"], m["a_on_b"], None)]}
    sp = op2.Sparsity((ds, ds), blocks)
    assert sp.rcmaps[(1, 0)] == [(m["b"], m["b_on_a"])]
    b_on_a, a_on_b = A_NODES[B_TO_A], B_NODES[A_TO_B]
    # Each block's own pattern (the diagonal blocks with their diagonals, as PETSc's).
    np.testing.assert_array_equal(sp._blocks[0][0].nnz,
                                  _pattern_counts([(A_NODES, A_NODES)], 4, True))
    np.testing.assert_array_equal(sp._blocks[1][0].nnz,
                                  _pattern_counts([(B_NODES, b_on_a)], 3, False))
    np.testing.assert_array_equal(sp._blocks[0][1].nnz,
                                  _pattern_counts([(A_NODES, a_on_b)], 4, False))
    # The whole pattern, rows of A's nodes then of B's.
    whole = _pattern_counts([(A_NODES, A_NODES), (B_NODES + 4, B_NODES + 4),
                             (B_NODES + 4, b_on_a), (A_NODES, a_on_b + 4)], 7, True)
    np.testing.assert_array_equal(sp.nnz, whole)

    mat = op2.Mat(sp)
    wa = op2.Dat(cells_a ** 1, [1.0, 2.0, 3.0])
    wb = op2.Dat(cells_b ** 1, [5.0, 7.0])
    k = op2.Kernel(KERNEL, "k")
    op2.par_loop(k, cells_a, mat[0, 0](op2.INC, (m["a"], m["a"])), wa(op2.READ))
    op2.par_loop(k, cells_b, mat[1, 1](op2.INC, (m["b"], m["b"])), wb(op2.READ))
    op2.par_loop(k, cells_b, mat[1, 0](op2.INC, (m["b"], m["b_on_a"])), wb(op2.READ))
    op2.par_loop(k, cells_a, mat[0, 1](op2.INC, (m["a"], m["a_on_b"])), wa(op2.READ))
    assert mat[1, 0].assembly_state == op2.Mat.ADD_VALUES
    want = _assembled({(0, 0): (A_NODES, A_NODES, [1, 2, 3]),
                       (1, 1): (B_NODES, B_NODES, [5, 7]),
                       (1, 0): (B_NODES, b_on_a, [5, 7]),
                       (0, 1): (A_NODES, a_on_b, [1, 2, 3])}, (7, 7), ((0, 4), (0, 4)))
    np.testing.assert_allclose(mat.values, want)
    np.testing.assert_allclose(mat[1, 0].values, want[4:, :4])


def test_a_block_may_have_several_pairs_or_none(meshes):
    (cells_a, nodes_a, cells_b, nodes_b), m = meshes
    ds = op2.MixedSet((nodes_a, nodes_b)) ** 1
    # Block (0, 0) from both meshes' cells; block (1, 1) and (0, 1) have no maps at all.
    sp = op2.Sparsity((ds, ds), {(0, 0): [(m["a"], m["a"], None), (m["b_on_a"], m["b_on_a"], None)],
                                 (1, 0): [(m["b"], m["b_on_a"], None)]})
    assert sorted(sp.rcmaps) == [(0, 0), (1, 0)]
    mat = op2.Mat(sp)
    w = op2.Dat(cells_b ** 1, [5.0, 7.0])
    k = op2.Kernel(KERNEL, "k")
    op2.par_loop(k, cells_b, mat[0, 0](op2.INC, (m["b_on_a"], m["b_on_a"])), w(op2.READ))
    op2.par_loop(k, cells_b, mat[1, 0](op2.INC, (m["b"], m["b_on_a"])), w(op2.READ))
    b_on_a = A_NODES[B_TO_A]
    want = _assembled({(0, 0): (b_on_a, b_on_a, [5, 7]), (1, 0): (B_NODES, b_on_a, [5, 7])},
                      (7, 7), ((0, 4), (0, 4)))
    np.testing.assert_allclose(mat.values, want)
    # A block of no maps holds nothing (the diagonal of the whole square pattern aside).
    np.testing.assert_array_equal(mat[0, 1].values, 0)
    # A pair of another block, or maps that are not the block's, are refused.
    with pytest.raises(exceptions.MapValueError):
        mat[1, 1](op2.INC, (m["b"], m["b"]))
    with pytest.raises(exceptions.MapValueError):
        mat[0, 0](op2.INC, (m["b_on_a"], m["a"]))
    with pytest.raises(exceptions.ModeValueError):
        mat[1, 0](op2.READ, (m["b"], m["b_on_a"]))
    with pytest.raises(exceptions.MapTypeError):
        mat[1, 0](op2.INC, op2.MixedMap((m["b"], m["b"])))
    # Maps that do not go to the block's components.
    with pytest.raises(RuntimeError):
        op2.Sparsity((ds, ds), {(0, 1): [(m["a"], m["a"], None)]})
    with pytest.raises(exceptions.IndexValueError):
        op2.Sparsity((ds, ds), {(2, 0): [(m["a"], m["a"], None)]})


def test_block_loops_and_mixed_map_loops_meet_in_one_matrix(meshes):
    """Firedrake's way (one loop per block of a mixed space) beside a loop through the
    MixedMaps, on one Sparsity: the sums of both."""
    (cells_a, nodes_a, _, _), m = meshes
    ms = op2.MixedSet((cells_a, nodes_a))
    cell = op2.Map(cells_a, cells_a, 1, np.arange(3).reshape(3, 1))
    mm = op2.MixedMap((cell, m["a"]))
    sp = op2.Sparsity((ms ** 1, ms ** 1), {(i, j): [(r, c, None)] for i, r in enumerate(mm)
                                           for j, c in enumerate(mm)})
    mat = op2.Mat(sp)
    w = op2.Dat(cells_a ** 1, [1.0, 2.0, 3.0])
    op2.par_loop(op2.Kernel(KERNEL, "k"), cells_a, mat[1, 1](op2.INC, (m["a"], m["a"])),
                 w(op2.READ))
    op2.par_loop(op2.Kernel("""
static void one(double A[3][3]) {
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++) A[i][j] += 1.0;
}""", "one"), cells_a, mat(op2.INC, (mm, mm)))
    want = _assembled({(1, 1): (A_NODES, A_NODES, [1, 2, 3])}, (7, 7), ((0, 3), (0, 3)))
    rows = np.hstack([np.arange(3).reshape(3, 1), 3 + A_NODES])
    for r in rows:
        want[np.ix_(r, r)] += 1.0
    np.testing.assert_allclose(mat.values, want)


def test_composed_maps_keep_no_element_as_negative():
    s, t, u = op2.Set(3), op2.Set(2), op2.Set(3)
    inner = op2.Map(s, t, 1, [-1, 0, 1])
    outer = op2.Map(t, u, 2, [[0, 1], [1, 2]])
    c = op2.ComposedMap(outer, inner)
    np.testing.assert_array_equal(c.values, [[-1, -1], [0, 1], [1, 2]])
    # A loop's data need an element at every entry.
    d = op2.Dat(u ** 1)
    with pytest.raises(exceptions.MapValueError, match="gaps"):
        op2.par_loop(op2.Kernel("static void k(double *x) { x[0] += 1.0; }", "k"), s,
                     d(op2.INC, c))


def test_matrices_leave_negative_map_values_out():
    """Today's "no element" (a negative map value): the pattern and the assembly leave those
    entries out, as PETSc leaves out negative indices; blocks without maps show the diagonal
    (square) or nothing. Today's blockwise specification, with an inverse map that has a
    gap."""
    (cells_a, nodes_a, cells_b, nodes_b), m = _gap_meshes()
    ds = op2.MixedSet((nodes_a, nodes_b)) ** 1
    sp = op2.Sparsity((ds, ds), {(1, 0): [(m["b"], m["b_on_a"], None)],
                                 (0, 1): [(m["a"], m["a_on_b"], None)]})
    np.testing.assert_array_equal(sp._blocks[0][0].nnz, [1, 1, 1, 1])
    np.testing.assert_array_equal(sp._blocks[0][1].nnz, [0, 2, 3, 2])
    np.testing.assert_array_equal(sp._blocks[1][0].nnz, [2, 3, 2])
    np.testing.assert_array_equal(sp._blocks[1][1].nnz, [1, 1, 1])
    mat = op2.Mat(sp)
    w = op2.Dat(cells_a ** 1, [1.0, 2.0, 3.0])
    op2.par_loop(op2.Kernel(KERNEL, "k"), cells_a, mat[0, 1](op2.INC, (m["a"], m["a_on_b"])),
                 w(op2.READ))
    a_on_b = np.where((GAP_A_TO_B >= 0)[:, None], B_NODES[np.maximum(GAP_A_TO_B, 0)], -1)
    want = np.zeros((4, 3))
    for e in range(3):
        for i in range(2):
            for j in range(2):
                if a_on_b[e, j] >= 0:
                    want[A_NODES[e, i], a_on_b[e, j]] += (e + 1) * (1 + i + 10 * j)
    np.testing.assert_allclose(mat[0, 1].values, want)
    assert want[0].sum() == 0 and want.sum() > 0
    # The map itself still reaches no data.
    d = op2.Dat(nodes_b ** 1)
    with pytest.raises(exceptions.MapValueError, match="gaps"):
        op2.par_loop(op2.Kernel("static void k(double *x) { x[0] += 1.0; }", "k"), cells_a,
                     d(op2.INC, m["a_on_b"]))


GAP_A_TO_B = np.array([-1, 0, 1])


def _gap_meshes():
    cells_a, nodes_a, cells_b, nodes_b = op2.Set(3), op2.Set(4), op2.Set(2), op2.Set(3)
    m = {"a": op2.Map(cells_a, nodes_a, 2, A_NODES), "b": op2.Map(cells_b, nodes_b, 2, B_NODES),
         "ba": op2.Map(cells_b, cells_a, 1, B_TO_A),
         "ab": op2.Map(cells_a, cells_b, 1, GAP_A_TO_B)}
    m["b_on_a"] = op2.ComposedMap(m["a"], m["ba"])
    m["a_on_b"] = op2.ComposedMap(m["b"], m["ab"])
    return (cells_a, nodes_a, cells_b, nodes_b), m


def test_kernels_defined_without_parameters_take_any_args():
    """``static void k()`` is C's "parameters unspecified": today's pyop2 calls it with the
    loop's args; so does op2rs, and the data stay as they were."""
    s, n = op2.Set(3), op2.Set(4)
    m = op2.Map(s, n, 2, [0, 1, 1, 2, 2, 3])
    d = op2.Dat(n ** 1, np.arange(4.0))
    g = op2.Global(1, 5, dtype=np.int32)
    mat = op2.Mat(op2.Sparsity((n ** 1, n ** 1), [(m, m, None)]))
    k = op2.Kernel("static void k() { }", "k")
    op2.par_loop(k, s, d(op2.INC, m), g(op2.INC), mat(op2.INC, (m, m)))
    op2.par_loop(k, op2.ExtrudedSet(s, 3), d(op2.READ, m), pass_layer_arg=True)
    np.testing.assert_array_equal(d.data_ro, np.arange(4.0))
    assert g.data_ro[0] == 5 and not mat.values.any()
    # `k(void)` takes none: the loop says so.
    with pytest.raises(exceptions.KernelTypeError, match="0 parameters"):
        op2.par_loop(op2.Kernel("static void k(void) { }", "k"), s, d(op2.READ, m))


def test_dats_are_allocated_when_given_viewed_or_used():
    s = op2.Set(5)
    assert op2.Dat(s ** 1, np.ones(5))._is_allocated
    d = op2.Dat(s ** 2)
    assert not d._is_allocated
    d.data_ro
    assert d._is_allocated
    e = op2.Dat(s ** 1)
    op2.par_loop(op2.Kernel("static void k(double *x) { *x = 1.0; }", "k"), s, e(op2.WRITE))
    assert e._is_allocated
    f = op2.Dat(s ** 1)
    f.zero()
    assert f._is_allocated


def test_blocks_of_components_with_core_elements_read_their_own_rows():
    """Components whose core elements come before the rest of their owned ones: the mixed
    sets' flat numbering puts every component's core elements first, so a block's rows are
    not one range of the whole matrix. Block loops, block values and block entries agree."""
    nodes, cells = op2.Set((2, 4, 4)), op2.Set((1, 3, 3))
    ms = op2.MixedSet((nodes, cells))
    c2n = op2.Map(cells, nodes, 2, A_NODES)
    c2c = op2.Map(cells, cells, 1, np.arange(3).reshape(3, 1))
    mm = op2.MixedMap((c2n, c2c))
    sp = op2.Sparsity((ms ** 1, ms ** 1), {(i, j): [(r, c, None)] for i, r in enumerate(mm)
                                           for j, c in enumerate(mm)})
    mat = op2.Mat(sp)
    w = op2.Dat(cells ** 1, [1.0, 2.0, 3.0])
    op2.par_loop(op2.Kernel(KERNEL, "k"), cells, mat[0, 0](op2.INC, (c2n, c2n)), w(op2.READ))
    op2.par_loop(op2.Kernel("static void d(double A[1][1], const double *w) { A[0][0] += *w; }",
                            "d"), cells, mat[1, 1](op2.INC, (c2c, c2c)), w(op2.READ))
    mat.assemble()
    want = _assembled({(0, 0): (A_NODES, A_NODES, [1, 2, 3])}, (4, 4), ((0,), (0,)))
    np.testing.assert_allclose(mat[0, 0].values, want)
    np.testing.assert_allclose(mat[1, 1].values, np.diag([1.0, 2.0, 3.0]))
    np.testing.assert_array_equal(mat[0, 1].values, 0)
    mat[1, 1].addto_values(2, 2, [10.0])
    mat[0, 0].set_local_diagonal_entries([3], diag_val=7.0)
    mat.assemble()
    np.testing.assert_allclose(mat[1, 1].values, np.diag([1.0, 2.0, 13.0]))
    want[3, 3] = 7.0
    np.testing.assert_allclose(mat[0, 0].values, want)


def test_dats_of_dim_zero_hold_no_values():
    """``set ** 0``: a Dat of no values per element, in loops too (the kernel has nothing to
    read); its views, bytes, norm and inner product are empty or zero."""
    s, n = op2.Set(4), op2.Set(5)
    m = op2.Map(s, n, 2, [0, 1, 1, 2, 2, 3, 3, 4])
    d = op2.Dat(n ** 0)
    assert d.shape == (5, 0) and d.data.shape == (5, 0) and d._data.size == 0
    assert d.nbytes == 0 and d.norm == 0 and d.inner(d) == 0
    x = op2.Dat(n ** 1, np.arange(5.0))
    op2.par_loop(op2.Kernel("static void k(double *a, double *b) { b[0] += 1.0; }", "k"), s,
                 d(op2.INC, m), x(op2.INC, m))
    np.testing.assert_array_equal(x.data_ro, [1, 2, 3, 4, 4])
    assert (d + d).data_ro.shape == (5, 0) and op2.Dat(n ** 0, []).data_ro.size == 0
