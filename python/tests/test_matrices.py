"""Sparsities, matrices and solves: P1 mass matrices assembled in both of PyOP2's kernel forms,
compared with a dense matrix NumPy assembles from the same triangles; solves, boundary rows,
products and the errors PyOP2 raised."""

import numpy as np
import pytest

from op2rs import op2


def square_mesh(n):
    """The unit square cut into 2 n^2 triangles: (coordinates, triangles)."""
    xs = np.linspace(0.0, 1.0, n + 1)
    coords = np.array([(x, y) for y in xs for x in xs])
    tris = []
    for j in range(n):
        for i in range(n):
            a, b = j * (n + 1) + i, j * (n + 1) + i + 1
            c, d = a + n + 1, b + n + 1
            tris += [(a, b, d), (a, d, c)]
    return coords, np.array(tris, dtype=np.int32)


def numpy_mass(coords, tris):
    """P1 mass matrix: area/12 * (1 + delta_ij) per triangle."""
    m = np.zeros((len(coords), len(coords)))
    for t in tris:
        p = coords[t]
        area = 0.5 * abs((p[1, 0] - p[0, 0]) * (p[2, 1] - p[0, 1])
                         - (p[2, 0] - p[0, 0]) * (p[1, 1] - p[0, 1]))
        for a in range(3):
            for b in range(3):
                m[t[a], t[b]] += area / 12.0 * (2.0 if a == b else 1.0)
    return m


AREA = ("double area = 0.5 * fabs((x[1][0] - x[0][0]) * (x[2][1] - x[0][1])"
        " - (x[2][0] - x[0][0]) * (x[1][1] - x[0][1]));")

# PyOP2 0.8.2: called per (j, k) with a 1x1 block and trailing indices.
MASS_PER_POINT = ("void mass(double A[1][1], double *x[2], int j, int k) { %s"
                  " A[0][0] += area / 12.0 * (j == k ? 2.0 : 1.0); }" % AREA)
# PyOP2 0.8.3 to 0.10: called once per element with the whole 3x3 block.
MASS_PER_ELEMENT = ("void mass(double A[3][3], double *x[2]) { %s"
                    " for (int j = 0; j < 3; j++) for (int k = 0; k < 3; k++)"
                    " A[j][k] += area / 12.0 * (j == k ? 2.0 : 1.0); }" % AREA)


def mesh(n=5):
    coords, tris = square_mesh(n)
    nodes = op2.Set(len(coords), "nodes")
    elements = op2.Set(len(tris), "elements")
    elem_node = op2.Map(elements, nodes, 3, tris, "elem_node")
    x = op2.Dat(nodes ** 2, coords, np.float64, "x")
    return coords, tris, nodes, elements, elem_node, x


@pytest.mark.parametrize("code", [MASS_PER_POINT, MASS_PER_ELEMENT], ids=["0.8.2", "0.10"])
def test_mass_matrix_matches_numpy(code):
    coords, tris, nodes, elements, elem_node, x = mesh()
    sp = op2.Sparsity(nodes, elem_node, "sp")
    assert op2.Sparsity(nodes, elem_node, "sp") is sp  # PyOP2's cache: the same objects
    mat = op2.Mat(sp, np.float64, "mass")
    op2.par_loop(op2.Kernel(code, "mass"), elements,
                 mat(op2.INC, (elem_node[op2.i[0]], elem_node[op2.i[1]])),
                 x(op2.READ, elem_node))
    want = numpy_mass(coords, tris)
    np.testing.assert_allclose(mat.values, want, rtol=1e-13, atol=1e-16)
    # The pattern: one entry per pair of nodes sharing a triangle, in CSR order.
    assert sp.nz == np.count_nonzero(want)
    dense_from_csr = np.zeros_like(want)
    for r in range(len(want)):
        for k in range(sp.rowptr[r], sp.rowptr[r + 1]):
            dense_from_csr[r, sp.colidx[k]] = mat.array[k]
    np.testing.assert_allclose(dense_from_csr, want, rtol=1e-13, atol=1e-16)
    np.testing.assert_array_equal(sp.nnz, np.count_nonzero(want, axis=1))
    # Assembling again adds; zero() clears.
    op2.par_loop(op2.Kernel(code, "mass"), elements,
                 mat(op2.INC, (elem_node[op2.i[0]], elem_node[op2.i[1]])),
                 x(op2.READ, elem_node))
    np.testing.assert_allclose(mat.values, 2 * want, rtol=1e-13, atol=1e-16)
    mat.zero()
    assert not mat.values.any()


def test_solve_product_and_boundary_rows():
    coords, tris, nodes, elements, elem_node, x = mesh(6)
    mat = op2.Mat(op2.Sparsity(nodes, elem_node), name="m")
    op2.par_loop(op2.Kernel(MASS_PER_ELEMENT, "mass"), elements,
                 mat(op2.INC, (elem_node[op2.i[0]], elem_node[op2.i[1]])),
                 x(op2.READ, elem_node))
    want = numpy_mass(coords, tris)
    u = np.cos(3 * coords[:, 0]) + coords[:, 1]
    b = mat * op2.Dat(nodes, u, np.float64, "u")
    np.testing.assert_allclose(b.data_ro, want @ u, rtol=1e-12)
    sol = op2.Dat(nodes, name="sol")
    op2.solve(mat, sol, b)
    # PyOP2's default: CG + Jacobi to a relative residual of 1e-7.
    assert np.linalg.norm(want @ sol.data_ro - want @ u) <= 1.01e-7 * np.linalg.norm(want @ u)
    np.testing.assert_allclose(sol.data_ro, u, atol=1e-5)
    s = op2.Solver(ksp_type="gmres", pc_type="ilu", ksp_rtol=1e-10)
    sol2 = op2.Dat(nodes, name="sol2")
    s.solve(mat, sol2, b)
    np.testing.assert_allclose(sol2.data_ro, u, rtol=1e-8)
    # Strong boundary rows: identity rows, the rest untouched.
    rows = [0, 3, len(coords) - 1]
    mat.zero_rows(rows, 1.0)
    got = mat.values
    for r in range(len(coords)):
        if r in rows:
            expect = np.zeros(len(coords))
            expect[r] = 1.0
            np.testing.assert_array_equal(got[r], expect)
        else:
            np.testing.assert_allclose(got[r], want[r], rtol=1e-13, atol=1e-16)
    mat.inc_local_diagonal_entries(np.array([3]), 2.5)
    assert mat.values[3, 3] == 3.5
    mat.set_diagonal(op2.Dat(nodes, np.full(len(coords), 7.0), np.float64))
    np.testing.assert_array_equal(np.diag(mat.values), np.full(len(coords), 7.0))
    before = mat.values
    with pytest.raises(ValueError):
        mat.set_diagonal(op2.Dat(op2.Set(3, "short"), np.ones(3), np.float64))
    np.testing.assert_array_equal(mat.values, before)  # nothing written


def test_solver_parameters_and_nonconvergence():
    coords, tris, nodes, elements, elem_node, x = mesh(4)
    mat = op2.Mat(op2.Sparsity(nodes, elem_node))
    op2.par_loop(op2.Kernel(MASS_PER_ELEMENT, "mass"), elements,
                 mat(op2.INC, (elem_node[op2.i[0]], elem_node[op2.i[1]])),
                 x(op2.READ, elem_node))
    b = op2.Dat(nodes, np.ones(len(coords)), np.float64)
    sol = op2.Dat(nodes)
    with pytest.raises(RuntimeError, match="converge"):
        op2.Solver(ksp_max_it=1, ksp_rtol=1e-14, pc_type="none").solve(mat, sol, b)
    with pytest.warns(UserWarning):
        op2.Solver({"ksp_max_it": 1, "ksp_rtol": 1e-14, "pc_type": "none",
                    "error_on_nonconvergence": False}).solve(mat, sol, b)
    with pytest.raises(RuntimeError):
        op2.Solver({"ksp_type": "cg"}, ksp_rtol=1e-3)
    with pytest.raises(op2.MatTypeError):
        op2.solve(b, sol, b)
    with pytest.raises(op2.DatTypeError):
        op2.solve(mat, sol, 1.0)
    with pytest.raises(op2.Op2Error, match="pc_type"):
        op2.Solver(pc_type="hypre").solve(mat, sol, b)


def test_matrix_errors():
    coords, tris, nodes, elements, elem_node, x = mesh(3)
    other = op2.Map(elements, nodes, 3, tris[::-1].copy(), "other")
    mat = op2.Mat(op2.Sparsity(nodes, elem_node))
    with pytest.raises(op2.ModeValueError):
        mat(op2.READ, (elem_node[op2.i[0]], elem_node[op2.i[1]]))
    with pytest.raises(op2.MapValueError):
        mat(op2.INC, (other[op2.i[0]], other[op2.i[1]]))
    with pytest.raises(ValueError):
        mat(op2.INC, (elem_node[op2.i[0]],))
    with pytest.raises(TypeError):
        mat(op2.INC, (elem_node, elem_node))
    with pytest.raises(op2.SparsityTypeError):
        op2.Mat("not a sparsity")
    with pytest.raises(op2.MapTypeError):
        op2.Sparsity(nodes, "not a map")
    with pytest.raises(RuntimeError):
        op2.Sparsity((elements, nodes), elem_node)  # rows are nodes, not elements
    # A matrix's 2-D iteration space and a Dat's 1-D one cannot share a loop.
    b = op2.Dat(nodes)
    with pytest.raises(op2.IndexValueError):
        op2.par_loop(op2.Kernel(MASS_PER_ELEMENT, "mass"), elements,
                     mat(op2.INC, (elem_node[op2.i[0]], elem_node[op2.i[1]])),
                     b(op2.INC, elem_node[op2.i[0]]))
    # Two Dat args of one local iteration space with different extents.
    other_map = op2.Map(elements, nodes, 2, tris[:, :2].copy(), "two")
    with pytest.raises(op2.IndexValueError):
        op2.par_loop(op2.Kernel("void two(double b[3], double c[2]) { }", "two"), elements,
                     b(op2.INC, elem_node[op2.i[0]]), b(op2.INC, other_map[op2.i[0]]))
    # A kernel whose block disagrees with the maps is refused, not run.
    with pytest.raises(op2.KernelTypeError):
        op2.par_loop(op2.Kernel("void bad(double A[4][4], double *x[2]) { }", "bad"), elements,
                     mat(op2.INC, (elem_node[op2.i[0]], elem_node[op2.i[1]])),
                     x(op2.READ, elem_node))


def test_vector_valued_matrices_in_both_forms():
    # PyOP2 0.8.3+ programs assemble vector-valued matrices with flatten=True: one call per
    # element, the 6 x 6 block component by component. 0.8.2: per point, a 2 x 2 block.
    coords, tris, nodes, elements, elem_node, x = mesh(3)
    vnodes = nodes ** 2
    sp = op2.Sparsity((vnodes, vnodes), (elem_node, elem_node), "vsp")
    assert sp.dims == (2, 2)
    flat = op2.Kernel("void vmass(double A[6][6], double *x[2]) { %s"
                      " for (int i = 0; i < 3; i++) for (int j = 0; j < 3; j++)"
                      " for (int a = 0; a < 2; a++)"
                      " A[a * 3 + i][a * 3 + j] += area / 12.0 * (i == j ? 2.0 : 1.0); }" % AREA,
                      "vmass")
    per_point = op2.Kernel("void vmass_pp(double A[2][2], double *x[2], int j, int k) { %s"
                           " for (int a = 0; a < 2; a++)"
                           " A[a][a] += area / 12.0 * (j == k ? 2.0 : 1.0); }" % AREA,
                           "vmass_pp")
    scalar = numpy_mass(coords, tris)
    want = np.kron(scalar, np.eye(2))  # row 2n + a, column 2m + b
    # 0.8.2 with flatten=True: one scalar entry per call, 6 x 6 calls, component-major.
    per_entry = op2.Kernel("void vmass_pe(double A[1][1], double *x[2], int j, int k) { %s"
                           " if (j / 3 == k / 3)"
                           " A[0][0] += area / 12.0 * (j %% 3 == k %% 3 ? 2.0 : 1.0); }" % AREA,
                           "vmass_pe")
    for k, flatten in [(flat, True), (per_point, False), (per_entry, True)]:
        mat = op2.Mat(sp, name="V")
        op2.par_loop(k, elements,
                     mat(op2.INC, (elem_node[op2.i[0]], elem_node[op2.i[1]]), flatten=flatten),
                     x(op2.READ, elem_node))
        np.testing.assert_allclose(mat.values, want, rtol=1e-13, atol=1e-16)
    mat = op2.Mat(sp, name="V")
    with pytest.raises(NotImplementedError):
        op2.par_loop(flat, elements, mat(op2.INC, (elem_node[op2.i[0]], elem_node[op2.i[1]])),
                     x(op2.READ, elem_node))


def test_matrices_assemble_over_subsets():
    # As PyOP2's subset tests: a loop over the whole set, and over subsets given in any order.
    iterset = op2.Set(2, "it")
    idset = op2.Set(2, "id")
    indset = op2.Set(4, "ind")
    dat = op2.Dat(idset ** 1, [0.0, 1.0], np.float64, "dat")
    m = op2.Map(iterset, indset, 4, [0, 1, 2, 3, 0, 1, 2, 3], "m")
    idmap = op2.Map(iterset, idset, 1, [0, 1], "idmap")
    sp = op2.Sparsity((indset, indset), (m, m))
    k = op2.Kernel("void unique_id(double *dat, double mat[4][4]) { for (int i = 0; i < 4; i++)"
                   " for (int j = 0; j < 4; j++) mat[i][j] += (*dat) * 16 + i * 4 + j; }",
                   "unique_id")
    mats = []
    for s in (iterset, op2.Subset(iterset, [0, 1]), op2.Subset(iterset, [1, 0])):
        mat = op2.Mat(sp, np.float64)
        op2.par_loop(k, s, dat(op2.READ, idmap[0]), mat(op2.INC, (m[op2.i[0]], m[op2.i[1]])))
        mats.append(mat.values)
    want = np.array([[16 + 2 * (i * 4 + j) for j in range(4)] for i in range(4)], dtype=float)
    for got in mats:
        np.testing.assert_array_equal(got, want)
    only_one = op2.Mat(sp, np.float64)
    op2.par_loop(k, iterset([1]), dat(op2.READ, idmap[0]),
                 only_one(op2.INC, (m[op2.i[0]], m[op2.i[1]])))
    np.testing.assert_array_equal(only_one.values, want - (want - 16) / 2)
