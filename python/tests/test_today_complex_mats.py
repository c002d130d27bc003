"""Today's complex matrices: ``Mat(sparsity, dtype=numpy.complex128)`` assembled by kernels
writing ``double complex`` element matrices (adding and inserting), entries set by hand,
Dirichlet rows, products with complex Dats, and blocks of mixed ones; against matrices computed
here with NumPy. The host backends run them; the device backends refuse complex data. op2rs's
solvers and PETSc handles are for real matrices and say so."""

import os

import numpy as np
import pytest

import op2rs.exceptions
from op2rs.la import Solver
from pyop2 import exceptions, op2

HOST = os.environ.get("OP2RS_TEST_BACKEND", "sequential") in ("sequential", "seq", "openmp")

ELEMENT = """
#include <complex.h>
static void k(double complex A[2][2], const double complex *w) {
  A[0][0] += *w;
  A[0][1] += *w * I;
  A[1][0] += 2.0 * I * *w;
  A[1][1] += 3.0 * conj(*w);
}"""


def _element(w):
    return np.array([[w, w * 1j], [2j * w, 3 * np.conj(w)]])


def _ring(n):
    nodes, edges = op2.Set(n), op2.Set(n)
    ends = np.array([[e, (e + 1) % n] for e in range(n)])
    return nodes, edges, ends, op2.Map(edges, nodes, 2, ends)


def test_complex_element_matrices_add_and_insert():
    n = 7
    nodes, edges, ends, m = _ring(n)
    w = (1 + np.arange(n)) * (0.5 - 0.25j)
    weights = op2.Dat(edges ** 1, w, np.complex128)
    mat = op2.Mat(op2.Sparsity((nodes ** 1, nodes ** 1), [(m, m, None)]), np.complex128)
    assert mat.dtype == np.complex128 and mat.ctype == "double complex"

    def run(access):
        op2.par_loop(op2.Kernel(ELEMENT, "k"), edges, mat(access, (m, m)), weights(op2.READ))
    if not HOST:
        with pytest.raises(op2rs.exceptions.Op2Error, match="complex"):
            run(op2.INC)
        return
    run(op2.INC)
    run(op2.INC)
    want = np.zeros((n, n), complex)
    for e in range(n):
        want[np.ix_(ends[e], ends[e])] += 2 * _element(w[e])
    np.testing.assert_allclose(mat.values, want)
    assert mat.values.dtype == np.complex128 and mat.array.dtype == np.complex128
    assert mat.nbytes == 16 * mat.array.size
    # Inserting: entries of one edge alone get that edge's value.
    mat.zero()
    run(op2.WRITE)
    got = mat.values
    for e in range(n):
        assert got[ends[e][1], ends[e][0]] == _element(w[e])[1, 0]
    # A kernel writing real element matrices into it: the loop's type check says so.
    with pytest.raises(exceptions.KernelTypeError):
        op2.par_loop(op2.Kernel("static void r(double A[2][2]) { A[0][0] += 1.0; }", "r"),
                     edges, mat(op2.INC, (m, m)))


def test_complex_entries_rows_and_products():
    n = 5
    nodes, edges, ends, m = _ring(n)
    mat = op2.Mat(op2.Sparsity((nodes ** 1, nodes ** 1), [(m, m, None)]), np.complex128)
    mat.addto_values([0, 1], [0, 1], [[1 + 1j, 2], [3j, 4 - 1j]])
    mat.addto_values(1, 1, [0.5 + 0.5j])
    mat.set_values(2, 3, [-1 + 2j])
    mat.set_local_diagonal_entries([4], diag_val=6.0)
    want = np.zeros((n, n), complex)
    want[np.ix_([0, 1], [0, 1])] = [[1 + 1j, 2], [3j, 4.5 - 0.5j]]
    want[2, 3] = -1 + 2j
    want[4, 4] = 6.0
    np.testing.assert_allclose(mat.values, want)
    x = op2.Dat(nodes ** 1, np.arange(n) * (1 + 2j), np.complex128)
    if HOST:
        y = mat * x
        assert y.dtype == np.complex128
        np.testing.assert_allclose(y.data_ro, want @ x.data_ro)
        # A real Dat is taken as complex.
        r = op2.Dat(nodes ** 1, np.arange(n, dtype=float))
        np.testing.assert_allclose((mat * r).data_ro, want @ np.arange(n))
    mat.zero_rows([1], diag_val=9.0)
    want[1] = 0
    want[1, 1] = 9.0
    np.testing.assert_allclose(mat.values, want)
    # Real-only: PETSc handles and op2rs's solvers.
    with pytest.raises(NotImplementedError, match="complex"):
        mat.handle
    with pytest.raises(NotImplementedError, match="complex"):
        Solver().solve(mat, op2.Dat(nodes ** 1), op2.Dat(nodes ** 1))
    with pytest.raises(RuntimeError, match="complex128"):
        op2.Mat(mat.sparsity, np.complex64)


def test_complex_mixed_blocks():
    """A complex matrix on mixed spaces, one loop per block; block values and entries."""
    n = 4
    nodes, edges, ends, m = _ring(n)
    cell = op2.Map(edges, edges, 1, np.arange(n).reshape(n, 1))
    ms = op2.MixedSet((nodes, edges))
    mm = op2.MixedMap((m, cell))
    sp = op2.Sparsity((ms ** 1, ms ** 1), {(i, j): [(r, c, None)] for i, r in enumerate(mm)
                                           for j, c in enumerate(mm)})
    mat = op2.Mat(sp, np.complex128)
    w = (1 + np.arange(n)) * 1j
    weights = op2.Dat(edges ** 1, w, np.complex128)
    if not HOST:
        return
    op2.par_loop(op2.Kernel(ELEMENT, "k"), edges, mat[0, 0](op2.INC, (m, m)),
                 weights(op2.READ))
    mat[1, 1].addto_values(2, 2, [5 - 5j])
    want = np.zeros((n, n), complex)
    for e in range(n):
        want[np.ix_(ends[e], ends[e])] += _element(w[e])
    np.testing.assert_allclose(mat[0, 0].values, want)
    assert mat[1, 1].values[2, 2] == 5 - 5j
    np.testing.assert_array_equal(mat[0, 1].values, 0)


def test_complex_diagonals_and_empty_blocks_between_one_set():
    n = 4
    nodes, edges, ends, m = _ring(n)
    mat = op2.Mat(op2.Sparsity((nodes ** 1, nodes ** 1), [(m, m, None)]), np.complex128)
    mat.set_local_diagonal_entries([1, 2], diag_val=2 - 3j)
    mat.zero_rows([3], diag_val=1j)
    np.testing.assert_allclose(np.diag(mat.values), [0, 2 - 3j, 2 - 3j, 1j])
    # Blocks without maps between components on one set: the diagonal in diagonal blocks only.
    ms = op2.MixedSet((nodes, nodes))
    sp = op2.Sparsity((ms ** 1, ms ** 1), {(0, 0): [(m, m, None)]})
    np.testing.assert_array_equal(sp._blocks[1][1].nnz, np.ones(n))
    np.testing.assert_array_equal(sp._blocks[0][1].nnz, np.zeros(n))
    np.testing.assert_array_equal(sp._blocks[1][0].nnz, np.zeros(n))
    mixed = op2.Mat(sp, np.complex128)
    with pytest.raises(NotImplementedError):
        mixed.set_diagonal(op2.MixedDat(ms))
