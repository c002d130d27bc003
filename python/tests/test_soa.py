"""PyOP2's ``soa=True`` Dats and ``OP2_STRIDE(a, idx)`` in kernels (PYOP2-API.md section 11):
the values and results are the same as without it, on every backend, read from HDF5 files whose
``type`` says ``:soa`` too. Expected values are computed with NumPy."""

import numpy as np
import pytest

from op2rs import op2
from op2rs.kernels import expand_stride


def test_stride_macro_is_written_out_as_indexing():
    assert expand_stride("OP2_STRIDE(K, j*4+k) = 0;") == "(K)[j*4+k] = 0;"
    assert expand_stride("a += OP2_STRIDE (K, f(i, j)) * OP2_STRIDE(x[1], OP2_STRIDE(c, 0));") \
        == "a += (K)[f(i, j)] * (x[1])[(c)[0]];"
    # Other names that contain it, and text that is not a use, stay as they are.
    assert expand_stride("MY_OP2_STRIDE(a, 1); OP2_STRIDE;") == "MY_OP2_STRIDE(a, 1); OP2_STRIDE;"


def test_soa_dats_through_direct_and_indirect_args():
    n = 6
    nodes = op2.Set(n + 1, "soa_nodes")
    edges = op2.Set(n, "soa_edges")
    e2n = op2.Map(edges, nodes, 2, [[e, e + 1] for e in range(n)], "soa_e2n")
    x0 = np.arange(3.0 * (n + 1)).reshape(n + 1, 3)
    x = op2.Dat(nodes ** 3, x0, np.float64, "soa_x", soa=True)
    assert x.soa and op2.Dat(nodes).soa is False
    k = op2.Dat(edges ** 4, dtype=np.float64, name="soa_k", soa=True)
    acc = op2.Dat(nodes ** 2, dtype=np.float64, name="soa_acc", soa=True)
    kernel = op2.Kernel("""
void soa_edge(double **x, double *k, double **acc) {
  for (int j = 0; j < 2; j++)
    for (int c = 0; c < 2; c++)
      OP2_STRIDE(k, 2 * j + c) = x[j][c] + 10 * x[j][2];
  for (int j = 0; j < 2; j++) {
    OP2_STRIDE(acc[j], 0) += OP2_STRIDE(k, 2 * j);
    OP2_STRIDE(acc[j], 1) += OP2_STRIDE(k, 2 * j + 1);
  }
}""", "soa_edge")
    op2.par_loop(kernel, edges, x(op2.READ, e2n), k(op2.WRITE), acc(op2.INC, e2n))
    want_k = np.zeros((n, 4))
    want_acc = np.zeros((n + 1, 2))
    for e in range(n):
        for j in range(2):
            node = e + j
            for c in range(2):
                want_k[e, 2 * j + c] = x0[node, c] + 10 * x0[node, 2]
                want_acc[node, c] += want_k[e, 2 * j + c]
    np.testing.assert_array_equal(k.data_ro, want_k)
    np.testing.assert_array_equal(acc.data_ro, want_acc)
    copy = op2.Dat(k)
    assert copy.soa
    np.testing.assert_array_equal(copy.data_ro, want_k)


def test_soa_dats_from_hdf5(tmp_path):
    h5py = pytest.importorskip("h5py")
    path = tmp_path / "soa.h5"
    values = np.arange(12.0)
    with h5py.File(path, "w") as f:
        f["cells"] = np.array([3])
        f["p_K"] = values
        f["p_K"].attrs["type"] = "double:soa"
        f["p_q"] = values
        f["p_q"].attrs["type"] = "double"
    with h5py.File(path, "r") as f:
        cells = op2.Set.fromhdf5(f, "cells")
        kd = op2.Dat.fromhdf5(cells ** 4, f, "p_K")
        qd = op2.Dat.fromhdf5(cells ** 4, f, "p_q")
    assert kd.soa and not qd.soa
    np.testing.assert_array_equal(kd.data_ro, values.reshape(3, 4))
    total = op2.Global(1, 0.0, np.float64)
    op2.par_loop(op2.Kernel("void soa_sum(double *k, double *t) "
                            "{ for (int i = 0; i < 4; i++) *t += i * OP2_STRIDE(k, i); }",
                            "soa_sum"), cells, kd(op2.READ), total(op2.INC))
    assert total.data_ro[0] == sum(i * values.reshape(3, 4)[:, i].sum() for i in range(4))
