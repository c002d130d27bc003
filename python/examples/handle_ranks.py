"""A matrix's PETSc handle across MPI ranks: a grid partitioned by op2-mpi, a weighted graph
Laplacian plus the identity assembled by an op2 loop over the edges, then solved twice, by
op2rs's conjugate gradients and by PETSc's on ``A.handle`` (an MPIAIJ matrix with the same
entries); the solutions must agree. PETSc's writes reach the matrix (``zeroRowsLocal`` on the
handle, then op2rs's product) and op2's reach PETSc (``zero_rows``, then PETSc's product).
Exits 1 on any difference.

    mpirun -np 2 python handle_ranks.py [--backend sequential] [--n 12]

Without mpirun it runs as one rank (the handle then shares the matrix's memory).
"""

import argparse
import sys

import numpy as np
from mpi4py import MPI  # MPI first, by mpi4py: op2rs and PETSc share it
from petsc4py import PETSc

from op2rs import op2

EDGE = """
void edge(double A[2][2], const double *w) {
  A[0][0] += *w; A[0][1] -= *w; A[1][0] -= *w; A[1][1] += *w;
}"""


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="sequential")
    p.add_argument("--n", type=int, default=12)
    opt = p.parse_args()
    op2.init(backend=opt.backend)
    comm = MPI.COMM_WORLD
    n = opt.n
    node = np.arange(n * n).reshape(n, n)
    e2n = np.array([(node[i, j], node[i, j + 1]) for i in range(n) for j in range(n - 1)]
                   + [(node[i, j], node[i + 1, j]) for i in range(n - 1) for j in range(n)],
                   dtype=np.int32)
    mesh = op2.DistributedMesh()
    g_nodes, g_edges = mesh.Set(n * n, "nodes"), mesh.Set(len(e2n), "edges")
    g_e2n = mesh.Map(g_edges, g_nodes, 2, e2n, "e2n")
    g_w = mesh.Dat(g_edges, 1.0 + np.sin(np.arange(len(e2n))) ** 2, np.float64, "w")
    g_f = mesh.Dat(g_nodes, np.cos(np.arange(n * n)), np.float64, "f")
    local = mesh.partition("metis", map=g_e2n)
    nodes, edges, m = local[g_nodes], local[g_edges], local[g_e2n]
    w, f = local[g_w], local[g_f]

    A = op2.Mat(op2.Sparsity((nodes, nodes), (m, m)), name="A")
    op2.par_loop(op2.Kernel(EDGE, "edge"), edges,
                 A(op2.INC, (m[op2.i[0]], m[op2.i[1]])), w(op2.READ))
    A.inc_local_diagonal_entries(np.arange(nodes.size), 1.0)
    A.assemble()

    u = op2.Dat(nodes, None, np.float64, "u")
    op2.Solver(ksp_type="cg", pc_type="jacobi", ksp_rtol=1e-12).solve(A, u, f)
    h = A.handle
    ksp = PETSc.KSP().create(comm=h.getComm())
    ksp.setOperators(h)
    ksp.setType("cg")
    ksp.getPC().setType("jacobi")
    ksp.setTolerances(rtol=1e-12)
    x = h.createVecLeft()
    b = h.createVecRight()
    b.setArray(f.data_ro)
    ksp.solve(b, x)
    gap = np.abs(x.getArray() - u.data_ro).max()
    ok = gap < 1e-8 * (1 + np.abs(u.data_ro).max())

    # PETSc writes: row 0 of each rank becomes 5 on its diagonal; op2rs reads PETSc's values
    # back, every entry in its place: products with a vector of distinct values agree (a
    # permutation within a row would change them), owned and halo columns alike.
    h.zeroRowsLocal([0], diag=5.0)
    v = op2.Dat(nodes, None, np.float64, "v")
    v.data[:] = 1.0 + np.arange(nodes.size) + 1000.0 * comm.rank
    pv = h.createVecRight()
    pv.setArray(v.data_ro)
    pz = h.createVecLeft()
    h.mult(pv, pz)
    ok = ok and np.allclose((A * v).data_ro, pz.getArray(), rtol=1e-14, atol=1e-12)
    ones = op2.Dat(nodes, np.ones(nodes.total_size), np.float64, "ones")
    y = A * ones
    ok = ok and np.isclose(y.data_ro[0], 5.0)
    # op2 writes: row 1 becomes 7 on its diagonal; PETSc's product sees it.
    A.zero_rows([1], 7.0)
    one = h.createVecRight()
    one.set(1.0)
    z = h.createVecLeft()
    h.mult(one, z)
    ok = ok and np.isclose(z.getArray()[1], 7.0) and np.isclose(z.getArray()[0], 5.0)
    oks = comm.allgather(bool(ok))
    if comm.rank == 0:
        print("handle_ranks: %d ranks, PETSc and op2rs differ by %.1e, %s"
              % (comm.size, gap, "ok" if all(oks) else "MISMATCH"))
    op2.exit()
    return 0 if all(oks) else 1


if __name__ == "__main__":
    sys.exit(main())
