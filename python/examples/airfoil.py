"""Airfoil, OP2's standard benchmark, written as a PyOP2 program over op2rs.

It reads OP2's ``new_grid.h5`` (the Rust example writes one: ``cargo run --release -p airfoil
--example airfoil --features hdf5 -- --write-mesh new_grid.h5 --iterations 0``), runs the
five-loop solver, prints the residual every 100 iterations as OP2 prints it and the time per
iteration, and exits with status 1 when the ten residuals of a 1000-iteration run differ
from OP2-Common's.

    python airfoil.py [--mesh new_grid.h5] [--backend openmp] [--iterations 1000]

Apart from the import line and the argument parsing, this is PyOP2's own Airfoil demo: the
same declarations from HDF5, the same loops and arguments.
"""

import argparse
import math
import sys
import time
import types

import h5py
import numpy as np

from op2rs import op2

# OP2's kernels, C code as PyOP2 takes them; gam, gm1, cfl, eps and qinf are Consts. The
# Kernels are made after op2.init, as PyOP2's demo imported its kernels module then.
SAVE_SOLN = """
void save_soln(double *q, double *qold) {
  for (int n = 0; n < 4; n++) qold[n] = q[n];
}"""

ADT_CALC = """
void adt_calc(double *x1, double *x2, double *x3, double *x4, double *q, double *adt) {
  double dx, dy, ri, u, v, c;
  ri = 1.0 / q[0];
  u = ri * q[1];
  v = ri * q[2];
  c = sqrt(gam * gm1 * (ri * q[3] - 0.5 * (u * u + v * v)));
  dx = x2[0] - x1[0];
  dy = x2[1] - x1[1];
  *adt = fabs(u * dy - v * dx) + c * sqrt(dx * dx + dy * dy);
  dx = x3[0] - x2[0];
  dy = x3[1] - x2[1];
  *adt += fabs(u * dy - v * dx) + c * sqrt(dx * dx + dy * dy);
  dx = x4[0] - x3[0];
  dy = x4[1] - x3[1];
  *adt += fabs(u * dy - v * dx) + c * sqrt(dx * dx + dy * dy);
  dx = x1[0] - x4[0];
  dy = x1[1] - x4[1];
  *adt += fabs(u * dy - v * dx) + c * sqrt(dx * dx + dy * dy);
  *adt = (*adt) / cfl;
}"""

RES_CALC = """
void res_calc(double *x1, double *x2, double *q1, double *q2,
              double *adt1, double *adt2, double *res1, double *res2) {
  double dx, dy, mu, ri, p1, vol1, p2, vol2, f;
  dx = x1[0] - x2[0];
  dy = x1[1] - x2[1];
  ri = 1.0 / q1[0];
  p1 = gm1 * (q1[3] - 0.5 * ri * (q1[1] * q1[1] + q1[2] * q1[2]));
  vol1 = ri * (q1[1] * dy - q1[2] * dx);
  ri = 1.0 / q2[0];
  p2 = gm1 * (q2[3] - 0.5 * ri * (q2[1] * q2[1] + q2[2] * q2[2]));
  vol2 = ri * (q2[1] * dy - q2[2] * dx);
  mu = 0.5 * ((*adt1) + (*adt2)) * eps;
  f = 0.5 * (vol1 * q1[0] + vol2 * q2[0]) + mu * (q1[0] - q2[0]);
  res1[0] += f;
  res2[0] -= f;
  f = 0.5 * (vol1 * q1[1] + p1 * dy + vol2 * q2[1] + p2 * dy) + mu * (q1[1] - q2[1]);
  res1[1] += f;
  res2[1] -= f;
  f = 0.5 * (vol1 * q1[2] - p1 * dx + vol2 * q2[2] - p2 * dx) + mu * (q1[2] - q2[2]);
  res1[2] += f;
  res2[2] -= f;
  f = 0.5 * (vol1 * (q1[3] + p1) + vol2 * (q2[3] + p2)) + mu * (q1[3] - q2[3]);
  res1[3] += f;
  res2[3] -= f;
}"""

BRES_CALC = """
void bres_calc(double *x1, double *x2, double *q1, double *adt1, double *res1, int *bound) {
  double dx, dy, mu, ri, p1, vol1, p2, vol2, f;
  dx = x1[0] - x2[0];
  dy = x1[1] - x2[1];
  ri = 1.0 / q1[0];
  p1 = gm1 * (q1[3] - 0.5 * ri * (q1[1] * q1[1] + q1[2] * q1[2]));
  if (*bound == 1) {
    res1[1] += +p1 * dy;
    res1[2] += -p1 * dx;
  } else {
    vol1 = ri * (q1[1] * dy - q1[2] * dx);
    ri = 1.0 / qinf[0];
    p2 = gm1 * (qinf[3] - 0.5 * ri * (qinf[1] * qinf[1] + qinf[2] * qinf[2]));
    vol2 = ri * (qinf[1] * dy - qinf[2] * dx);
    mu = (*adt1) * eps;
    f = 0.5 * (vol1 * q1[0] + vol2 * qinf[0]) + mu * (q1[0] - qinf[0]);
    res1[0] += f;
    f = 0.5 * (vol1 * q1[1] + p1 * dy + vol2 * qinf[1] + p2 * dy) + mu * (q1[1] - qinf[1]);
    res1[1] += f;
    f = 0.5 * (vol1 * q1[2] - p1 * dx + vol2 * qinf[2] - p2 * dx) + mu * (q1[2] - qinf[2]);
    res1[2] += f;
    f = 0.5 * (vol1 * (q1[3] + p1) + vol2 * (qinf[3] + p2)) + mu * (q1[3] - qinf[3]);
    res1[3] += f;
  }
}"""

# OP2-Common's residuals at iterations 100, 200, ..., 1000 on the standard mesh.
REFERENCE = ["5.02186e-04", "3.41746e-04", "2.63430e-04", "2.16288e-04", "1.84659e-04",
             "1.60866e-04", "1.42253e-04", "1.27627e-04", "1.15810e-04", "1.06011e-04"]

UPDATE = """
void update(double *qold, double *q, double *res, double *adt, double *rms) {
  double del, adti;
  adti = 1.0 / (*adt);
  for (int n = 0; n < 4; n++) {
    del = adti * res[n];
    q[n] = qold[n] - del;
    res[n] = 0.0;
    *rms += del * del;
  }
}"""


def read_mesh(path):
    """OP2's ``new_grid.h5``: its sets, maps and Dats (attributes named as in OP2's Airfoil),
    and its Consts declared."""
    m = types.SimpleNamespace()
    with h5py.File(path, "r") as f:
        for name in ("nodes", "edges", "bedges", "cells"):
            setattr(m, name, op2.Set.fromhdf5(f, name))
        for name, iterset, toset in (("pedge", m.edges, m.nodes), ("pecell", m.edges, m.cells),
                                     ("pbedge", m.bedges, m.nodes),
                                     ("pbecell", m.bedges, m.cells),
                                     ("pcell", m.cells, m.nodes)):
            setattr(m, name, op2.Map.fromhdf5(iterset, toset, f, name))
        for name, dset in (("p_bound", m.bedges ** 1), ("p_x", m.nodes ** 2),
                           ("p_q", m.cells ** 4), ("p_qold", m.cells ** 4),
                           ("p_adt", m.cells ** 1), ("p_res", m.cells ** 4)):
            setattr(m, name, op2.Dat.fromhdf5(dset, f, name))
        for name in ("gam", "gm1", "cfl", "eps", "mach", "alpha", "qinf"):
            op2.Const.fromhdf5(f, name)
    return m


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--mesh", default="new_grid.h5", help="OP2's new_grid.h5")
    p.add_argument("--backend", default="openmp",
                   help="sequential, openmp, opencl, cuda or cuda-emulator")
    p.add_argument("--iterations", type=int, default=1000)
    opt = p.parse_args()

    op2.init(backend=opt.backend)
    save_soln = op2.Kernel(SAVE_SOLN, "save_soln")
    adt_calc = op2.Kernel(ADT_CALC, "adt_calc")
    res_calc = op2.Kernel(RES_CALC, "res_calc")
    bres_calc = op2.Kernel(BRES_CALC, "bres_calc")
    update = op2.Kernel(UPDATE, "update")

    m = read_mesh(opt.mesh)
    nodes, edges, bedges, cells = m.nodes, m.edges, m.bedges, m.cells
    pedge, pecell, pbedge, pbecell, pcell = m.pedge, m.pecell, m.pbedge, m.pbecell, m.pcell
    p_bound, p_x, p_q, p_qold, p_adt, p_res = m.p_bound, m.p_x, m.p_q, m.p_qold, m.p_adt, m.p_res

    print("backend: %s; mesh: %d nodes, %d cells, %d edges, %d boundary edges"
          % (opt.backend, nodes.size, cells.size, edges.size, bedges.size))
    printed = []
    start = time.perf_counter()
    for i in range(1, opt.iterations + 1):
        op2.par_loop(save_soln, cells,
                     p_q(op2.READ),
                     p_qold(op2.WRITE))

        # Predictor and corrector.
        for _ in range(2):
            op2.par_loop(adt_calc, cells,
                         p_x(op2.READ, pcell[0]),
                         p_x(op2.READ, pcell[1]),
                         p_x(op2.READ, pcell[2]),
                         p_x(op2.READ, pcell[3]),
                         p_q(op2.READ),
                         p_adt(op2.WRITE))

            op2.par_loop(res_calc, edges,
                         p_x(op2.READ, pedge[0]),
                         p_x(op2.READ, pedge[1]),
                         p_q(op2.READ, pecell[0]),
                         p_q(op2.READ, pecell[1]),
                         p_adt(op2.READ, pecell[0]),
                         p_adt(op2.READ, pecell[1]),
                         p_res(op2.INC, pecell[0]),
                         p_res(op2.INC, pecell[1]))

            op2.par_loop(bres_calc, bedges,
                         p_x(op2.READ, pbedge[0]),
                         p_x(op2.READ, pbedge[1]),
                         p_q(op2.READ, pbecell[0]),
                         p_adt(op2.READ, pbecell[0]),
                         p_res(op2.INC, pbecell[0]),
                         p_bound(op2.READ))

            rms = op2.Global(1, 0.0, np.double, "rms")
            op2.par_loop(update, cells,
                         p_qold(op2.READ),
                         p_q(op2.WRITE),
                         p_res(op2.RW),
                         p_adt(op2.READ),
                         rms(op2.INC))

        # Reading the Global runs the loops it depends on.
        rms = math.sqrt(rms.data[0] / cells.size)
        if i % 100 == 0:
            line = "%10.5e" % rms
            print(" %5d  %s" % (i, line), flush=True)
            printed.append(line)
    total = time.perf_counter() - start
    print("%d iterations in %.2f s: %.2f ms per iteration"
          % (opt.iterations, total, 1e3 * total / max(opt.iterations, 1)))
    op2.exit()

    if opt.iterations == 1000:
        if printed != REFERENCE:
            print("residuals differ from OP2-Common's reference:")
            for k, (got, want) in enumerate(zip(printed, REFERENCE)):
                mark = "" if got == want else "   <- expected " + want
                print(" %5d  %s%s" % (100 * (k + 1), got, mark))
            return 1
        print("residuals match OP2-Common's reference (10 values)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
