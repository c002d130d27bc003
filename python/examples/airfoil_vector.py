"""Airfoil with vector maps, as PyOP2's ``airfoil_vector`` demo wrote it, over op2rs.

The same solver as ``airfoil.py``, but the indirect loops take whole map rows (``p_x(op2.READ,
pcell)``, ``p_res(op2.INC, pecell)``): each kernel gets one array of pointers per Dat. The kernels
declare their arrays as PyOP2's demo did, with bounds that do not match the maps (``double
*x[2]`` for the four nodes of a cell, ``double *q[4]`` for the two cells of an edge): C ignores
such a bound, PyOP2 ran them, and so does op2rs (padding the short arrays with pointers to
zeros). The residual printed every 100 iterations must equal OP2-Common's; the exit status is 1
otherwise.

    python airfoil_vector.py [--mesh new_grid.h5] [--backend openmp] [--iterations 1000]
"""

import argparse
import math
import sys
import time

import numpy as np

from airfoil import BRES_CALC, REFERENCE, SAVE_SOLN, UPDATE, read_mesh
from op2rs import op2

# A cell's four nodes through one pointer array (declared two long, as in PyOP2's demo).
ADT_CALC = """
void adt_calc(double *x[2], double *q, double *adt) {
  double dx, dy, ri, u, v, c;
  ri = 1.0 / q[0];
  u = ri * q[1];
  v = ri * q[2];
  c = sqrt(gam * gm1 * (ri * q[3] - 0.5 * (u * u + v * v)));
  *adt = 0.0;
  for (int k = 0; k < 4; k++) {
    const double *a = x[k], *b = x[(k + 1) % 4];
    dx = b[0] - a[0];
    dy = b[1] - a[1];
    *adt += fabs(u * dy - v * dx) + c * sqrt(dx * dx + dy * dy);
  }
  *adt = (*adt) / cfl;
}"""

# An edge's two nodes and two cells (q and res declared four long, adt one, as in the demo).
RES_CALC = """
void res_calc(double *x[2], double *q[4], double *adt[1], double *res[4]) {
  double dx, dy, mu, ri, p1, vol1, p2, vol2, f;
  dx = x[0][0] - x[1][0];
  dy = x[0][1] - x[1][1];
  ri = 1.0 / q[0][0];
  p1 = gm1 * (q[0][3] - 0.5 * ri * (q[0][1] * q[0][1] + q[0][2] * q[0][2]));
  vol1 = ri * (q[0][1] * dy - q[0][2] * dx);
  ri = 1.0 / q[1][0];
  p2 = gm1 * (q[1][3] - 0.5 * ri * (q[1][1] * q[1][1] + q[1][2] * q[1][2]));
  vol2 = ri * (q[1][1] * dy - q[1][2] * dx);
  mu = 0.5 * (adt[0][0] + adt[1][0]) * eps;
  f = 0.5 * (vol1 * q[0][0] + vol2 * q[1][0]) + mu * (q[0][0] - q[1][0]);
  res[0][0] += f;
  res[1][0] -= f;
  f = 0.5 * (vol1 * q[0][1] + p1 * dy + vol2 * q[1][1] + p2 * dy) + mu * (q[0][1] - q[1][1]);
  res[0][1] += f;
  res[1][1] -= f;
  f = 0.5 * (vol1 * q[0][2] - p1 * dx + vol2 * q[1][2] - p2 * dx) + mu * (q[0][2] - q[1][2]);
  res[0][2] += f;
  res[1][2] -= f;
  f = 0.5 * (vol1 * (q[0][3] + p1) + vol2 * (q[1][3] + p2)) + mu * (q[0][3] - q[1][3]);
  res[0][3] += f;
  res[1][3] -= f;
}"""

# A boundary edge's two nodes through one pointer array; its cell through one entry.
BRES_CALC_VECTOR = BRES_CALC.replace(
    "void bres_calc(double *x1, double *x2,", "void bres_calc(double *x[2],").replace(
    "dx = x1[0] - x2[0];\n  dy = x1[1] - x2[1];", "dx = x[0][0] - x[1][0];\n  dy = x[0][1] - x[1][1];")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mesh", default="new_grid.h5", help="OP2's new_grid.h5")
    p.add_argument("--backend", default="openmp",
                   help="sequential, openmp, opencl, cuda or cuda-emulator")
    p.add_argument("--iterations", type=int, default=1000)
    opt = p.parse_args()

    op2.init(backend=opt.backend)
    assert "x[0][0] - x[1][0]" in BRES_CALC_VECTOR, "bres_calc's node arguments were not joined"
    save_soln = op2.Kernel(SAVE_SOLN, "save_soln")
    adt_calc = op2.Kernel(ADT_CALC, "adt_calc")
    res_calc = op2.Kernel(RES_CALC, "res_calc")
    bres_calc = op2.Kernel(BRES_CALC_VECTOR, "bres_calc")
    update = op2.Kernel(UPDATE, "update")

    m = read_mesh(opt.mesh)
    nodes, edges, bedges, cells = m.nodes, m.edges, m.bedges, m.cells
    pedge, pecell, pbedge, pbecell, pcell = m.pedge, m.pecell, m.pbedge, m.pbecell, m.pcell
    p_bound, p_x, p_q, p_qold, p_adt, p_res = m.p_bound, m.p_x, m.p_q, m.p_qold, m.p_adt, m.p_res

    print("backend: %s; mesh: %d nodes, %d cells, %d edges, %d boundary edges (vector maps)"
          % (opt.backend, nodes.size, cells.size, edges.size, bedges.size))
    printed = []
    start = time.perf_counter()
    for i in range(1, opt.iterations + 1):
        op2.par_loop(save_soln, cells, p_q(op2.READ), p_qold(op2.WRITE))
        for _ in range(2):
            op2.par_loop(adt_calc, cells,
                         p_x(op2.READ, pcell), p_q(op2.READ), p_adt(op2.WRITE))
            op2.par_loop(res_calc, edges,
                         p_x(op2.READ, pedge), p_q(op2.READ, pecell),
                         p_adt(op2.READ, pecell), p_res(op2.INC, pecell))
            op2.par_loop(bres_calc, bedges,
                         p_x(op2.READ, pbedge), p_q(op2.READ, pbecell[0]),
                         p_adt(op2.READ, pbecell[0]), p_res(op2.INC, pbecell[0]),
                         p_bound(op2.READ))
            rms = op2.Global(1, 0.0, np.double, "rms")
            op2.par_loop(update, cells,
                         p_qold(op2.READ), p_q(op2.WRITE), p_res(op2.RW),
                         p_adt(op2.READ), rms(op2.INC))
        rms = math.sqrt(rms.data[0] / cells.size)
        if i % 100 == 0:
            line = "%10.5e" % rms
            print(" %5d  %s" % (i, line), flush=True)
            printed.append(line)
    total = time.perf_counter() - start
    print("%d iterations in %.2f s: %.2f ms per iteration"
          % (opt.iterations, total, 1e3 * total / max(opt.iterations, 1)))
    op2.exit()

    want = REFERENCE[:len(printed)]
    if not printed or printed != want:
        print("residuals differ from OP2-Common's reference: %s, expected %s" % (printed, want))
        return 1
    print("residuals match OP2-Common's reference (%d values)" % len(printed))
    return 0


if __name__ == "__main__":
    sys.exit(main())
