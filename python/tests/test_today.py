"""Today's PyOP2 (the ``pyop2`` package inside Firedrake) as op2rs presents it: ``from pyop2
import op2``. Three-size Sets, ``comm=``, ``COMM_WORLD``/``COMM_SELF``, ``Constant``, packed
kernel arguments (a map row's values in one array), the present Sparsity and Mat forms, today's
Kernel keywords, ``pyop2.datatypes`` and ``pyop2.exceptions``. Runs on the suite's backend;
expected values are computed with NumPy."""

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
    with pytest.raises(NotImplementedError):
        op2.Sparsity((nodes ** 1, nodes ** 1), {(0, 0): [(c2n, c2n, None)]})


def test_kernel_keywords():
    s = op2.Set(3)
    x = op2.Dat(s ** 1, np.zeros(3))
    k = op2.Kernel("static void w(double *x) { *x = TWICE(21.0); }", "w",
                   headers=["#include <math.h>"], user_code="#define TWICE(a) (2 * (a))",
                   flop_count=1, requires_zeroed_output_arguments=True)
    assert k.num_flops == 1
    op2.par_loop(k, s, x(op2.WRITE))
    np.testing.assert_array_equal(x.data_ro, 42.0)
    with pytest.raises(NotImplementedError, match="C\\+\\+"):
        op2.Kernel("static void k(double *y) {}", "k", cpp=True)
    with pytest.raises(NotImplementedError, match="pass_layer_arg"):
        op2.par_loop(k, s, x(op2.WRITE), pass_layer_arg=True)


def test_datatypes_and_exceptions():
    assert datatypes.IntType == np.int32 and datatypes.ScalarType == np.float64
    assert datatypes.as_cstr(np.float64) == "double" and datatypes.IntType_c == "int"
    assert datatypes.dtype_limits(np.int32) == (-2 ** 31, 2 ** 31 - 1)
    assert exceptions.MapValueError is op2rs.exceptions.MapValueError
