"""Mixed spaces: a MixedDat through a MixedMap hands the kernel one pointer array across the
components; block matrices assemble through mixed maps and solve as one system (monolithic and
fieldsplit); against NumPy."""

import numpy as np
import pytest

from op2rs import op2


def spaces():
    cells = op2.Set(4, "cells")
    a = op2.Set(5, "a")
    b = op2.Set(4, "b")
    c2a = op2.Map(cells, a, 2, [[i, i + 1] for i in range(4)], "c2a")
    c2b = op2.Map(cells, b, 1, [[3 - i] for i in range(4)], "c2b")
    return cells, a, b, c2a, c2b


def test_mixed_dat_through_a_mixed_map():
    cells, a, b, c2a, c2b = spaces()
    ms = op2.MixedSet([a, b])
    assert len(ms) == 2 and ms.size == 9 and ms.split == (a, b)
    mm = op2.MixedMap([c2a, c2b])
    assert mm.arity == 3 and mm.arities == (2, 1) and mm.arange == (0, 2, 3)
    assert mm.toset == ms and mm.iterset is cells
    md = op2.MixedDat(ms ** 1)
    w = op2.Dat(cells, np.arange(1.0, 5.0), np.float64, "w")
    k = op2.Kernel("void k(double *x[3], const double *w) "
                   "{ x[0][0] += *w; x[1][0] += 2.0 * *w; x[2][0] += 10.0 * *w; }", "k")
    op2.par_loop(k, cells, md(op2.INC, mm), w(op2.READ))
    want_a, want_b = np.zeros(5), np.zeros(4)
    for c in range(4):
        want_a[c] += c + 1.0
        want_a[c + 1] += 2.0 * (c + 1.0)
        want_b[3 - c] += 10.0 * (c + 1.0)
    got_a, got_b = md.data_ro
    np.testing.assert_array_equal(got_a, want_a)
    np.testing.assert_array_equal(got_b, want_b)
    # Reading through the same map, components of existing Dats.
    da, db = md.split
    total = op2.Dat(cells, name="total")
    op2.par_loop(op2.Kernel("void s(const double *x[3], double *t) "
                            "{ *t = x[0][0] + x[1][0] + x[2][0]; }", "s"),
                 cells, op2.MixedDat([da, db])(op2.READ, mm), total(op2.WRITE))
    want_t = [want_a[c] + want_a[c + 1] + want_b[3 - c] for c in range(4)]
    np.testing.assert_array_equal(total.data_ro, want_t)
    md.zero()
    assert not md.data_ro[0].any() and not md.data_ro[1].any()


def test_mixed_errors():
    cells, a, b, c2a, c2b = spaces()
    other = op2.Set(3, "other")
    o2a = op2.Map(other, a, 1, [[0], [1], [2]], "o2a")
    with pytest.raises(op2.MapTypeError):
        op2.MixedMap([c2a, o2a])
    with pytest.raises(TypeError):
        op2.MixedSet([a, "b"])
    md = op2.MixedDat([a, b])
    with pytest.raises(op2.DatTypeError):
        md(op2.READ, op2.MixedMap([c2a, c2b]), flatten=True)
    with pytest.raises(op2.MapValueError):
        md(op2.READ, op2.MixedMap([c2a, c2a]))
    with pytest.raises(op2.DataValueError):
        op2.MixedDat([op2.Dat(a), op2.Dat(b, dtype=np.float32)])
    with pytest.raises(ValueError):
        op2.MixedDataSet([a, b], [1, 2, 3])


BLOCK = ("void el(double A[3][3]) { for (int i = 0; i < 3; i++) for (int j = 0; j < 3; j++)"
         " A[i][j] += (i == j) ? 4.0 : -1.0; }")


@pytest.mark.parametrize("pc", ["jacobi", "fieldsplit", "fieldsplit_multiplicative"])
def test_block_matrix_assembles_and_solves(pc):
    cells, a, b, c2a, c2b = spaces()
    mm = op2.MixedMap([c2a, c2b])
    mds = op2.MixedDataSet([a, b])
    sp = op2.Sparsity(mds, mm, "blocks")
    assert sp.shape == (2, 2)
    assert sp.nrows == 9 and sp.ncols == 9
    # Cached on the same objects; a MixedSet of other sets is another sparsity, not a stale one.
    assert op2.Sparsity(mds, mm, "blocks") is sp
    for _ in range(20):
        with pytest.raises(RuntimeError):
            op2.Sparsity(op2.MixedSet([b, a]), mm)
    mat = op2.Mat(sp, name="M")
    op2.par_loop(op2.Kernel(BLOCK, "el"), cells, mat(op2.INC, (mm[op2.i[0]], mm[op2.i[1]])))
    # Flat numbering: a's elements, then b's.
    want = np.zeros((9, 9))
    for c in range(4):
        rows = [c, c + 1, 5 + (3 - c)]
        for i in range(3):
            for j in range(3):
                want[rows[i], rows[j]] += 4.0 if i == j else -1.0
    np.testing.assert_array_equal(mat.values, want)
    u = np.cos(np.arange(9.0))
    rhs = want @ u
    b_md = op2.MixedDat([op2.Dat(a, rhs[:5], np.float64), op2.Dat(b, rhs[5:], np.float64)])
    x_md = op2.MixedDat(mds)
    op2.Solver(ksp_type="gmres", pc_type=pc, ksp_rtol=1e-12).solve(mat, x_md, b_md)
    xa, xb = x_md.data_ro
    np.testing.assert_allclose(np.concatenate([xa, xb]), u, rtol=1e-8, atol=1e-10)


def test_mixed_dat_through_a_local_iteration_space_once_per_element():
    # PyOP2 0.8.3-0.10: mixed_dat(access, mixed_map[op2.i[0]]) hands the kernel one buffer of
    # the element's values, component after component (a non-mixed Dat beside it through its
    # whole row: local iteration spaces of one loop share one extent).
    cells, a, b, c2a, c2b = spaces()
    mm = op2.MixedMap([c2a, c2b])
    md = op2.MixedDat(op2.MixedSet([a, b]) ** 1)
    w = op2.Dat(a, np.arange(5.0))
    k = op2.Kernel("void mbuf(double d[3], double *x[2]) "
                   "{ d[0] += 1.0; d[1] += x[1][0]; d[2] += 100.0 + x[0][0]; }", "mbuf")
    op2.par_loop(k, cells, md(op2.INC, mm[op2.i[0]]), w(op2.READ, c2a))
    with pytest.raises(op2.IndexValueError):
        op2.par_loop(k, cells, md(op2.INC, mm[op2.i[0]]), w(op2.READ, c2a[op2.i[0]]))
    want_a, want_b = np.zeros(5), np.zeros(4)
    for c in range(4):
        ra, rb = c2a.values[c], c2b.values[c]
        want_a[ra[0]] += 1.0
        want_a[ra[1]] += ra[1]
        want_b[rb[0]] += 100.0 + ra[0]
    np.testing.assert_array_equal(md[0].data_ro, want_a)
    np.testing.assert_array_equal(md[1].data_ro, want_b)
    parts = md(op2.INC, mm[op2.i[0]]).split
    assert [p.map for p in parts] == [c2a, c2b] and all(p.idx == op2.i[0] for p in parts)


def test_mixed_dat_through_a_local_iteration_space_per_point():
    # PyOP2 0.8.2: a kernel ending in `int i` is called for every entry of the components'
    # entries in turn (i from 0 to the sum of the arities), with that entry's row.
    cells, a, b, c2a, c2b = spaces()
    mm = op2.MixedMap([c2a, c2b])
    md = op2.MixedDat(op2.MixedSet([a, b]) ** 1)
    w = op2.Dat(cells, np.arange(4.0))
    k = op2.Kernel("void mpp(double *d, const double *w, int i) { *d += 10.0 * i + *w; }",
                   "mpp")
    op2.par_loop(k, cells, md(op2.INC, mm[op2.i[0]]), w(op2.READ))
    want_a, want_b = np.zeros(5), np.zeros(4)
    for c in range(4):
        ra, rb = c2a.values[c], c2b.values[c]
        want_a[ra[0]] += 0.0 + c
        want_a[ra[1]] += 10.0 + c
        want_b[rb[0]] += 20.0 + c
    np.testing.assert_array_equal(md[0].data_ro, want_a)
    np.testing.assert_array_equal(md[1].data_ro, want_b)


def test_block_matrix_per_point_mat_times_dat_and_diagonal():
    # PyOP2 0.8.2 called a kernel ending in `int i, int j` per block and per point, the indices
    # offset by the block starts; `mat * mixed_dat` and `set_diagonal(mixed_dat)` work on the
    # whole block matrix in its flat numbering (a's elements, then b's).
    cells, a, b, c2a, c2b = spaces()
    mm = op2.MixedMap([c2a, c2b])
    mds = op2.MixedDataSet([a, b])
    mat = op2.Mat(op2.Sparsity(mds, mm, "blocks_pp"), name="P")
    w = op2.Dat(cells, np.arange(1.0, 5.0))
    k = op2.Kernel("void el_ij(double A[1][1], const double *w, int i, int j) "
                   "{ A[0][0] += (i == j) ? 4.0 * *w : -1.0 - i - 10.0 * j; }", "el_ij")
    op2.par_loop(k, cells, mat(op2.INC, (mm[op2.i[0]], mm[op2.i[1]])), w(op2.READ))
    want = np.zeros((9, 9))
    for c in range(4):
        rows = [c, c + 1, 5 + (3 - c)]
        for i in range(3):
            for j in range(3):
                want[rows[i], rows[j]] += 4.0 * (c + 1) if i == j else -1.0 - i - 10.0 * j
    np.testing.assert_array_equal(mat.values, want)
    # The blocks, as PyOP2 numbers them.
    np.testing.assert_array_equal(mat[0, 1].values, want[:5, 5:])
    u = op2.MixedDat([op2.Dat(a, np.sin(np.arange(5.0)), np.float64),
                      op2.Dat(b, np.arange(4.0), np.float64)])
    y = mat * u
    assert isinstance(y, op2.MixedDat) and y.dtype == np.float64
    flat_u = np.concatenate([np.sin(np.arange(5.0)), np.arange(4.0)])
    np.testing.assert_allclose(np.concatenate(y.data_ro), want @ flat_u, rtol=1e-14)
    # Integer vectors are read as float64 values, as PETSc would have them.
    iu = op2.MixedDat([op2.Dat(a, np.arange(5), np.int32), op2.Dat(b, np.arange(4), np.int32)])
    np.testing.assert_allclose(np.concatenate((mat * iu).data_ro),
                               want @ np.concatenate([np.arange(5.0), np.arange(4.0)]),
                               rtol=1e-14)
    with pytest.raises(TypeError):
        mat * op2.Dat(a)
    d = op2.MixedDat([op2.Dat(a, np.arange(10.0, 15.0)), op2.Dat(b, np.arange(20.0, 24.0))])
    mat.set_diagonal(d)
    want[np.arange(9), np.arange(9)] = np.concatenate([np.arange(10.0, 15.0),
                                                       np.arange(20.0, 24.0)])
    np.testing.assert_array_equal(mat.values, want)
    with pytest.raises(TypeError):
        mat.set_diagonal(op2.Dat(a))
    with pytest.raises(ValueError):
        mat.set_diagonal(op2.MixedDat([op2.Dat(b), op2.Dat(a)]))


def test_block_matrix_of_vector_components_per_point():
    # Components of one dim (2 here): each per-point call fills a zeroed 2 x 2 block, the
    # indices counting through the mixed maps' entries; the system solves with fieldsplit.
    cells, a, b, c2a, c2b = spaces()
    mm = op2.MixedMap([c2a, c2b])
    mds = op2.MixedSet([a, b]) ** 2
    sp = op2.Sparsity(mds, mm, "vblocks")
    assert sp.dims == (2, 2) and sp[0, 1].dims == (2, 2)
    mat = op2.Mat(sp, name="VB")
    k = op2.Kernel("void vel(double A[2][2], int i, int j) { for (int p = 0; p < 2; p++)"
                   " for (int q = 0; q < 2; q++)"
                   " A[p][q] += ((i == j) ? 4.0 : -1.0) * (p == q ? 2.0 : 0.5); }", "vel")
    op2.par_loop(k, cells, mat(op2.INC, (mm[op2.i[0]], mm[op2.i[1]])))
    scalar = np.zeros((9, 9))
    for c in range(4):
        rows = [c, c + 1, 5 + (3 - c)]
        for i in range(3):
            for j in range(3):
                scalar[rows[i], rows[j]] += 4.0 if i == j else -1.0
    want = np.kron(scalar, [[2.0, 0.5], [0.5, 2.0]])  # row 2f + p of flat element f
    np.testing.assert_allclose(mat.values, want, rtol=1e-15)
    np.testing.assert_allclose(mat[1, 0].values, want[10:, :10], rtol=1e-15)
    u = np.cos(np.arange(18.0))
    rhs = want @ u
    b_md = op2.MixedDat([op2.Dat(a ** 2, rhs[:10]), op2.Dat(b ** 2, rhs[10:])])
    x_md = op2.MixedDat(mds)
    op2.Solver(ksp_type="gmres", pc_type="fieldsplit", ksp_rtol=1e-12).solve(mat, x_md, b_md)
    np.testing.assert_allclose(np.concatenate([x.ravel() for x in x_md.data_ro]), u,
                               rtol=1e-8, atol=1e-10)
    y = mat * x_md
    np.testing.assert_allclose(np.concatenate([v.ravel() for v in y.data_ro]), rhs, rtol=1e-8)
    # The once-per-element form had no layout for vector blocks in PyOP2.
    with pytest.raises(NotImplementedError):
        op2.par_loop(op2.Kernel("void vel6(double A[6][6]) { }", "vel6"), cells,
                     mat(op2.INC, (mm[op2.i[0]], mm[op2.i[1]])))
    # Components of different dims have no one block shape.
    with pytest.raises(NotImplementedError):
        op2.Sparsity(op2.MixedDataSet([a ** 2, b ** 1]), mm)


def test_sparsity_mixed_on_one_side():
    # PyOP2's block sparsities may be mixed on one side only: rows on (a, b) by columns on a.
    cells, a, b, c2a, c2b = spaces()
    mm = op2.MixedMap([c2a, c2b])
    mds = op2.MixedDataSet([a, b])
    sp = op2.Sparsity((mds, a ** 1), (mm, c2a), "one_side")
    assert sp.shape == (2, 1) and sp.dims == (1, 1)
    assert [blk.dsets for blk in sp] == [(a ** 1, a ** 1), (b ** 1, a ** 1)]
    assert sp[1, 0].maps == [(c2b, c2a)]
    tr = op2.Sparsity((a, mds), (c2a, mm), "other_side")
    assert tr.shape == (1, 2)
    mat = op2.Mat(sp, name="R")
    k = op2.Kernel("void rect(double A[3][2]) { for (int i = 0; i < 3; i++)"
                   " for (int j = 0; j < 2; j++) A[i][j] += 1.0 + i + 10.0 * j; }", "rect")
    op2.par_loop(k, cells, mat(op2.INC, (mm[op2.i[0]], c2a[op2.i[1]])))
    want = np.zeros((9, 5))
    for c in range(4):
        rows, cols = [c, c + 1, 5 + (3 - c)], [c, c + 1]
        for i in range(3):
            for j in range(2):
                want[rows[i], cols[j]] += 1.0 + i + 10.0 * j
    np.testing.assert_array_equal(mat.values, want)
    np.testing.assert_array_equal(mat[1, 0].values, want[5:, :])
    # Row and column maps must start from one iteration set.
    other = op2.Set(4, "other")
    o2a = op2.Map(other, a, 2, [[i, i + 1] for i in range(4)], "o2a")
    with pytest.raises(RuntimeError):
        op2.Sparsity((mds, mds), (mm, op2.MixedMap([o2a, op2.Map(other, b, 1, [[0]] * 4)])))
    # A Dat is a mixed Dat of one component: dat[0] is dat.
    d = op2.Dat(a)
    assert d[0] is d and list(d) == [d] and len(d) == 1
    with pytest.raises(op2.IndexValueError):
        d[1]
