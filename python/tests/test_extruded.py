"""Extruded meshes in both of PyOP2's forms (``Set(n, layers=L)`` up to 0.9.1, ``ExtrudedSet``
in 0.10): maps with offsets step up the columns, maps from the base repeat, loops of direct
args run once per column, and matrices assemble every layer; checked against the same
computation on the explicit 3-D mesh in NumPy."""

import numpy as np
import pytest

from op2rs import op2

NBASE, LAYERS = 6, 5  # a strip of 6 intervals over 7 points, 5 node layers (4 cells a column)


def base_mesh():
    """Intervals (i, i + 1) over NBASE + 1 points; node (p, k) of the prism mesh is p*LAYERS+k."""
    e2p = np.array([[i, i + 1] for i in range(NBASE)], dtype=np.int32)
    # A quad cell's 4 nodes at its bottom: (p0, k), (p1, k), (p0, k + 1), (p1, k + 1).
    bottom = np.array([[a * LAYERS, b * LAYERS, a * LAYERS + 1, b * LAYERS + 1] for a, b in e2p],
                      dtype=np.int32)
    return e2p, bottom


def explicit_cells():
    """Every cell's 4 nodes, column by column (what the offsets give)."""
    e2p, bottom = base_mesh()
    return np.array([bottom[c] + k for c in range(NBASE) for k in range(LAYERS - 1)])


def make(form):
    e2p, bottom = base_mesh()
    if form == "0.9":
        cells = op2.Set(NBASE, "cells", layers=LAYERS)
        base = cells
    else:
        base = op2.Set(NBASE, "cells")
        cells = op2.ExtrudedSet(base, LAYERS)
        assert cells.parent is base and cells.layers == LAYERS
    nodes = op2.Set((NBASE + 1) * LAYERS, "nodes")
    c2n = op2.Map(cells, nodes, 4, bottom, "c2n", np.ones(4, dtype=np.int32))
    return base, cells, nodes, c2n


@pytest.mark.parametrize("form", ["0.9", "0.10"])
def test_offsets_step_up_the_columns(form):
    base, cells, nodes, c2n = make(form)
    z = np.arange(nodes.total_size, dtype=np.float64) % LAYERS  # each node's height
    x = op2.Dat(nodes, z, np.float64, "z")
    acc = op2.Dat(nodes, name="acc")
    width = op2.Dat(cells, np.arange(1.0, NBASE + 1.0), np.float64, "width")  # one per column
    per_cell = op2.Kernel("""
void per_cell(const double *z[4], const double *w, double *a[4]) {
  double mid = 0.25 * (z[0][0] + z[1][0] + z[2][0] + z[3][0]);
  for (int j = 0; j < 4; j++) a[j][0] += *w * mid;
}""", "per_cell")
    op2.par_loop(per_cell, cells, x(op2.READ, c2n), width(op2.READ), acc(op2.INC, c2n))
    want = np.zeros(nodes.total_size)
    for i, row in enumerate(explicit_cells()):
        column = i // (LAYERS - 1)
        want[row] += (column + 1.0) * z[row].mean()
    np.testing.assert_allclose(acc.data_ro, want, rtol=1e-14)


@pytest.mark.parametrize("form", ["0.9", "0.10"])
def test_direct_loops_run_once_per_column_and_base_maps_repeat(form):
    base, cells, nodes, c2n = make(form)
    count = op2.Dat(cells, np.zeros(NBASE), np.float64, "count")
    op2.par_loop(op2.Kernel("void once(double *c) { *c += 1.0; }", "once"), cells,
                 count(op2.INC))
    np.testing.assert_array_equal(count.data_ro, np.ones(NBASE))
    # A map from the base (no offset) gives the same row in every layer.
    points = op2.Set(NBASE + 1, "points")
    e2p, _ = base_mesh()
    b2p = op2.Map(base, points, 2, e2p, "b2p")
    hits = op2.Dat(points, name="hits")
    bump = op2.Kernel("void bump(double *z[4], double *h[2]) "
                      "{ h[0][0] += 1.0; h[1][0] += z[3][0] - z[3][0] + 1.0; }", "bump")
    zd = op2.Dat(nodes, np.zeros(nodes.total_size), np.float64, "zd")
    op2.par_loop(bump, cells, zd(op2.READ, c2n), hits(op2.INC, b2p))
    want = np.zeros(NBASE + 1)
    for a, b in e2p:
        want[a] += LAYERS - 1
        want[b] += LAYERS - 1
    np.testing.assert_array_equal(hits.data_ro, want)


def test_matrices_assemble_every_layer():
    base, cells, nodes, c2n = make("0.10")
    mat = op2.Mat(op2.Sparsity(nodes, c2n), name="m")
    k = op2.Kernel("void el(double A[4][4]) { for (int i = 0; i < 4; i++) "
                   "for (int j = 0; j < 4; j++) A[i][j] += (i == j) ? 2.0 : 1.0; }", "el")
    op2.par_loop(k, cells, mat(op2.INC, (c2n[op2.i[0]], c2n[op2.i[1]])))
    want = np.zeros((nodes.total_size, nodes.total_size))
    for row in explicit_cells():
        for i in range(4):
            for j in range(4):
                want[row[i], row[j]] += 2.0 if i == j else 1.0
    np.testing.assert_array_equal(mat.values, want)


@pytest.mark.parametrize("form", ["0.9", "0.10"])
@pytest.mark.parametrize("per_point", [False, True])
def test_boundary_masks_drop_bottom_and_top_rows_and_columns(form, per_point):
    # PyOP2's bt_masks with the iteration set's _extruded_bcs: in the bottom cell of every
    # column the bottom-masked map columns' rows and columns get nothing, likewise at the top;
    # the kernel still runs there. Flattened Mat args and loops without _extruded_bcs keep all.
    e2p, bottom = base_mesh()
    base, cells, nodes, _ = make(form)
    c2n = op2.Map(cells, nodes, 4, bottom, "c2n_bt", np.ones(4, dtype=np.int32),
                  bt_masks=([0, 1], [2, 3]))
    np.testing.assert_array_equal(c2n.bottom_mask, [-1, -1, 0, 0])
    np.testing.assert_array_equal(c2n.top_mask, [0, 0, -1, -1])
    sp = op2.Sparsity(nodes, c2n)
    if per_point:
        k = op2.Kernel("void elp(double A[1][1], int i, int j) "
                       "{ A[0][0] += 1.0 + i + 10.0 * j; }", "elp")
    else:
        k = op2.Kernel("void el(double A[4][4]) { for (int i = 0; i < 4; i++) "
                       "for (int j = 0; j < 4; j++) A[i][j] += 1.0 + i + 10.0 * j; }", "el")

    def want(bottom_on, top_on):
        w = np.zeros((nodes.total_size, nodes.total_size))
        for n, row in enumerate(explicit_cells()):
            k = n % (LAYERS - 1)
            gone = set()
            if bottom_on and k == 0:
                gone |= {0, 1}
            if top_on and k == LAYERS - 2:
                gone |= {2, 3}
            for i in range(4):
                for j in range(4):
                    if i not in gone and j not in gone:
                        w[row[i], row[j]] += 1.0 + i + 10.0 * j
        return w

    for bcs in [None, (True, False), (False, True), (True, True)]:
        if bcs is not None:
            cells._extruded_bcs = bcs
        mat = op2.Mat(sp, name="bt")
        op2.par_loop(k, cells, mat(op2.INC, (c2n[op2.i[0]], c2n[op2.i[1]])))
        np.testing.assert_array_equal(mat.values, want(*(bcs or (False, False))), err_msg=bcs)
    # A flattened Mat arg keeps every entry (PyOP2 masked only the others).
    mat = op2.Mat(sp, name="bt_flat")
    op2.par_loop(k, cells, mat(op2.INC, (c2n[op2.i[0]], c2n[op2.i[1]]), flatten=True))
    np.testing.assert_array_equal(mat.values, want(False, False))
    del cells._extruded_bcs
    # Masks are checked; a map without offsets ignores them (PyOP2 0.9+).
    with pytest.raises(op2.DataValueError):
        op2.Map(cells, nodes, 4, bottom, "bad", np.ones(4, dtype=np.int32), bt_masks=([4], []))
    plain = op2.Map(base, base, 1, np.arange(NBASE), "plain", bt_masks=([0], [0]))
    assert plain.bottom_mask == [] and plain.top_mask == []


@pytest.mark.parametrize("form", ["0.9", "0.10"])
def test_subsets_of_extruded_sets_run_their_columns(form):
    base, cells, nodes, c2n = make(form)
    z = np.arange(nodes.total_size, dtype=np.float64) % LAYERS
    x = op2.Dat(nodes, z, np.float64, "z")
    acc = op2.Dat(nodes, name="acc")
    width = op2.Dat(cells, np.arange(1.0, NBASE + 1.0), np.float64, "width")
    per_cell = op2.Kernel("""
void per_cell_s(const double *z[4], const double *w, double *a[4]) {
  double mid = 0.25 * (z[0][0] + z[1][0] + z[2][0] + z[3][0]);
  for (int j = 0; j < 4; j++) a[j][0] += *w * mid;
}""", "per_cell_s")
    columns = [4, 1]
    sub = cells(columns)
    op2.par_loop(per_cell, sub, x(op2.READ, c2n), width(op2.READ), acc(op2.INC, c2n))
    want = np.zeros(nodes.total_size)
    for i, row in enumerate(explicit_cells()):
        column = i // (LAYERS - 1)
        if column in columns:
            want[row] += (column + 1.0) * z[row].mean()
    np.testing.assert_allclose(acc.data_ro, want, rtol=1e-14)
    # A Dat on the base (ExtrudedSet's parent) in a loop over the subset: per column.
    seen = op2.Dat(base, np.zeros(NBASE), np.float64, "seen")
    op2.par_loop(op2.Kernel("void seen_s(const double *z[4], double *s) { *s += 1.0; }",
                            "seen_s"), sub, x(op2.READ, c2n), seen(op2.INC))
    np.testing.assert_array_equal(seen.data_ro, [LAYERS - 1.0 if c in columns else 0.0
                                                 for c in range(NBASE)])
    # Direct args only: once per chosen column.
    count = op2.Dat(cells, np.zeros(NBASE), np.float64, "count")
    op2.par_loop(op2.Kernel("void once_s(double *c) { *c += 1.0; }", "once_s"), sub,
                 count(op2.INC))
    np.testing.assert_array_equal(count.data_ro, [1.0 if c in columns else 0.0
                                                  for c in range(NBASE)])


def test_extrusion_errors():
    s = op2.Set(3, "s")
    with pytest.raises(op2.SizeTypeError):
        op2.ExtrudedSet(s, 1)
    with pytest.raises(TypeError):
        op2.ExtrudedSet("s", 3)
    with pytest.raises(op2.SizeTypeError):
        op2.Set(3, "t", layers=0)
    nodes = op2.Set(12, "nodes")
    with pytest.raises(op2.MapTypeError):
        op2.Map(s, nodes, 2, [[0, 1]] * 3, "m", offset=[1, 1])
    e = op2.ExtrudedSet(s, 4)
    with pytest.raises(op2.DataValueError):
        op2.Map(e, nodes, 2, [[0, 1]] * 3, "m", offset=[1])
    # The top layer would reach past the nodes: PyOP2 took such a map and read out of bounds in
    # a loop; op2rs takes it too and refuses it where it is first used.
    high = op2.Map(e, nodes, 2, [[0, 10]] * 3, "m", offset=[1, 1])
    assert high.values.max() == 10
    with pytest.raises(op2.MapValueError):
        op2.Dat(nodes)(op2.READ, high)
