"""The cost of one ``op2.par_loop`` call from Python with its code cached: loops over a set of
four elements (so that the loop's own work is negligible), timed from Python and, side by side
in the same process, the same loops recorded from Rust with no Python in between.

    python overhead.py [--backend sequential] [--calls 20000] [--batch 10]

Pending loops run every ``--batch`` calls (as a time step forces its reductions). The
difference of the two columns is what the Python layer adds; the goal is a total under 10 us.
"""

import argparse
import time

import numpy as np

from op2rs import op2


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="sequential")
    p.add_argument("--calls", type=int, default=20000)
    p.add_argument("--batch", type=int, default=10)
    p.add_argument("--rounds", type=int, default=3)
    opt = p.parse_args()

    op2.init(backend=opt.backend)
    rt = op2._state["runtime"]
    n = 4
    cells = op2.Set(n, "cells")
    edges = op2.Set(n, "edges")
    nodes = op2.Set(n, "nodes")
    pedge = op2.Map(edges, nodes, 2, [[e, (e + 1) % n] for e in range(n)], "pedge")
    pecell = op2.Map(edges, cells, 2, [[e, (e + 2) % n] for e in range(n)], "pecell")
    x = op2.Dat(nodes ** 2, np.ones((n, 2)), np.float64, "x")
    q = op2.Dat(cells ** 4, np.ones((n, 4)), np.float64, "q")
    adt = op2.Dat(cells, np.ones(n), np.float64, "adt")
    res = op2.Dat(cells ** 4, np.zeros((n, 4)), np.float64, "res")
    qold = op2.Dat(cells ** 4, np.zeros((n, 4)), np.float64, "qold")

    save = op2.Kernel("void save(double *q, double *qold) "
                      "{ for (int k = 0; k < 4; k++) qold[k] = q[k]; }", "save")
    flux = op2.Kernel("""
void flux(double *x1, double *x2, double *q1, double *q2, double *a1, double *a2,
          double *r1, double *r2) {
  double f = (x1[0] - x2[0]) * (q1[0] - q2[0]) * (*a1 + *a2);
  for (int k = 0; k < 4; k++) { r1[k] += f; r2[k] -= f; }
}""", "flux")

    loops = {
        "direct, 2 args (save_soln)": (
            save, cells, lambda: (q(op2.READ), qold(op2.WRITE))),
        "indirect, 8 args (res_calc)": (
            flux, edges, lambda: (x(op2.READ, pedge[0]), x(op2.READ, pedge[1]),
                                  q(op2.READ, pecell[0]), q(op2.READ, pecell[1]),
                                  adt(op2.READ, pecell[0]), adt(op2.READ, pecell[1]),
                                  res(op2.INC, pecell[0]), res(op2.INC, pecell[1]))),
    }
    print("par_loop overhead on %s, %d calls, pending loops run every %d (us per call):"
          % (opt.backend, opt.calls, opt.batch))
    print("  %-30s %10s %10s %10s" % ("loop", "python", "rust", "added"))
    worst = 0.0
    for name, (kernel, iterset, make) in loops.items():
        op2.par_loop(kernel, iterset, *make())  # compiles
        rt.flush()
        native = [a.native for a in make()]
        best_py, best_rs = float("inf"), float("inf")
        for _ in range(opt.rounds):
            # Alternating rounds: the machine is shared and noisy.
            start = time.perf_counter()
            for i in range(opt.calls):
                # The arguments are made in the call, as a program writes them.
                op2.par_loop(kernel, iterset, *make())
                if (i + 1) % opt.batch == 0:
                    rt.flush()
            rt.flush()
            best_py = min(best_py, (time.perf_counter() - start) / opt.calls)
            best_rs = min(best_rs, rt.time_loop(kernel._native, iterset._native, native,
                                                opt.calls, opt.batch) / opt.calls)
        worst = max(worst, best_py)
        print("  %-30s %10.2f %10.2f %10.2f" % (name, 1e6 * best_py, 1e6 * best_rs,
                                              1e6 * (best_py - best_rs)))
    print("largest cost of a call from Python: %.2f us (goal: at most 10)" % (1e6 * worst))
    op2.exit()


if __name__ == "__main__":
    main()
