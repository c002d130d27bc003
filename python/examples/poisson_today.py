"""P1 Poisson on the unit square, written the way today's PyOP2 programs are (the ``pyop2``
package inside Firedrake): ``from pyop2 import op2``, three-size Sets, packed kernel arguments
(``dat(op2.READ, map)`` hands the kernel the map row's values in one array), the present
``Sparsity((dset, dset), [(map, map, None)])`` and ``mat(op2.INC, (map, map))``.

-laplace(u) = f with u = sin(pi x) sin(pi y) (so f = 2 pi^2 u) and u = 0 on the boundary, on
N x N squares cut into triangles. Stiffness and load (consistent mass times nodal f) are
assembled by par_loops over the cells; the boundary rows are replaced by the identity; the
system is solved as today's programs solve it, by PETSc's conjugate gradients on
``mat.handle`` with ``b.vec_ro`` and ``u.vec`` (when petsc4py is installed and the program runs
on one rank), and by op2-rs's own conjugate gradients (always); where both ran they must
agree. The nodal error against the exact solution is checked for two meshes: it must be small
and fall by about 4 when N doubles (second order). Exit status 1 otherwise.

    python poisson_today.py [--backend sequential] [--n 16]

Under ``mpirun -np 2`` every rank solves the whole problem on op2-rs's world (the objects'
``comm`` is ``COMM_WORLD``): the matrix, vectors and loops are distributed by op2-rs as the
Sets' halos say; here the mesh is not partitioned, so each rank owns all of it and the ranks
must agree on the answer.
"""

import argparse
import sys

import numpy as np

from pyop2 import op2
from pyop2.mpi import COMM_WORLD

STIFFNESS = """
static void stiffness(double A[3][3], const double *x) {
  /* x: the cell's three vertices packed, (x0, y0, x1, y1, x2, y2). */
  double b[3][2] = {{x[3] - x[5], x[4] - x[2]},
                    {x[5] - x[1], x[0] - x[4]},
                    {x[1] - x[3], x[2] - x[0]}};
  double det = (x[2] - x[0]) * (x[5] - x[1]) - (x[4] - x[0]) * (x[3] - x[1]);
  double area = 0.5 * (det < 0 ? -det : det);
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      A[i][j] += (b[i][0] * b[j][0] + b[i][1] * b[j][1]) / (4.0 * area);
}
"""

LOAD = """
static void load(double *b, const double *x, const double *f) {
  double det = (x[2] - x[0]) * (x[5] - x[1]) - (x[4] - x[0]) * (x[3] - x[1]);
  double area = 0.5 * (det < 0 ? -det : det);
  for (int i = 0; i < 3; i++)
    b[i] += area / 12.0 * (f[0] + f[1] + f[2] + f[i]);
}
"""


def mesh(n):
    """Vertices (row-major (n+1) x (n+1) grid), triangles, and the boundary vertices."""
    s = np.linspace(0.0, 1.0, n + 1)
    xy = np.array([(x, y) for y in s for x in s])
    cells = []
    for j in range(n):
        for i in range(n):
            v = j * (n + 1) + i
            cells += [(v, v + 1, v + n + 2), (v, v + n + 2, v + n + 1)]
    on_edge = (np.isclose(xy, 0.0) | np.isclose(xy, 1.0)).any(axis=1)
    return xy, np.array(cells, dtype=np.int32), np.flatnonzero(on_edge).astype(np.int32)


def solve(n):
    """The largest nodal error of the P1 solution on an n x n mesh."""
    xy, cells, boundary = mesh(n)
    nodes = op2.Set(len(xy), "nodes", comm=COMM_WORLD)
    elements = op2.Set(len(cells), "cells", comm=COMM_WORLD)
    cell_node = op2.Map(elements, nodes, 3, cells, "cell_node")
    coords = op2.Dat(nodes ** 2, xy, np.float64, "coords")
    exact = np.sin(np.pi * xy[:, 0]) * np.sin(np.pi * xy[:, 1])
    f = op2.Dat(nodes ** 1, 2 * np.pi ** 2 * exact, np.float64, "f")

    sparsity = op2.Sparsity((nodes ** 1, nodes ** 1), [(cell_node, cell_node, None)], "sp")
    A = op2.Mat(sparsity, np.float64, "A")
    b = op2.Dat(nodes ** 1, dtype=np.float64, name="b")
    u = op2.Dat(nodes ** 1, dtype=np.float64, name="u")

    op2.par_loop(op2.Kernel(STIFFNESS, "stiffness"), elements,
                 A(op2.INC, (cell_node, cell_node)), coords(op2.READ, cell_node))
    op2.par_loop(op2.Kernel(LOAD, "load"), elements,
                 b(op2.INC, cell_node), coords(op2.READ, cell_node), f(op2.READ, cell_node))
    A.zero_rows(boundary, 1.0)
    b.data[boundary] = 0.0

    from op2rs.op2 import Solver  # today's PyOP2 has no solver of its own
    Solver(ksp_rtol=1e-10).solve(A, u, b)
    petsc = _petsc_solve(A, b, nodes)
    if petsc is not None:
        gap = float(np.abs(petsc - u.data_ro).max())
        if gap > 1e-6:
            raise SystemExit("FAILED: PETSc's solution on mat.handle differs from op2-rs's "
                             "by %.2e" % gap)
    return float(np.abs(u.data_ro - exact).max())


def _petsc_solve(A, b, nodes):
    """The solution by PETSc's CG on ``A.handle`` (today's programs' way), or None without
    petsc4py or across ranks (op2rs's handles are sequential)."""
    try:
        from petsc4py import PETSc
    except ImportError:
        return None
    if COMM_WORLD.size > 1:
        return None
    x = op2.Dat(nodes ** 1, dtype=np.float64, name="x_petsc")
    ksp = PETSc.KSP().create(comm=PETSc.COMM_SELF)
    ksp.setOperators(A.handle)
    ksp.setType("cg")
    ksp.getPC().setType("jacobi")
    ksp.setTolerances(rtol=1e-10)
    with b.vec_ro as bv, x.vec as xv:
        ksp.solve(bv, xv)
    if ksp.getConvergedReason() <= 0:
        raise SystemExit("FAILED: PETSc's CG did not converge (%d)" % ksp.getConvergedReason())
    return x.data_ro.copy()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--backend", default="sequential")
    p.add_argument("--n", type=int, default=16)
    opt = p.parse_args()
    op2.init(backend=opt.backend)
    coarse, fine = solve(opt.n), solve(2 * opt.n)
    rate = coarse / fine
    if COMM_WORLD.rank == 0:
        print("P1 Poisson, largest nodal error: %.3e (n=%d), %.3e (n=%d), ratio %.2f"
              % (coarse, opt.n, fine, 2 * opt.n, rate))
    ok = fine < 0.01 and 3.0 < rate < 5.0
    if not ok and COMM_WORLD.rank == 0:
        print("FAILED: the error is not second order")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
