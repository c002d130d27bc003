"""Jacobi iteration on a 2-D grid, written as a PyOP2 program over op2rs.

OP2's Jacobi test: the interior nodes of an NN x NN grid, one edge per node to itself
(weight -1) and one per interior neighbour (weight 1/4); a boundary neighbour, held at 1, adds
1/4 to the node's right-hand side. Each iteration accumulates ``du += beta * A * u`` over the
edges, then updates ``u += du + alpha * r`` and reduces the sum of squares and the maximum of u.

The same iteration is computed with NumPy (a dense matrix, no op2), and the script exits with
status 1 when the two differ.

    python jacobi.py [--backend sequential] [--nn 6] [--iterations 2]
"""

import argparse
import sys

import numpy as np

from op2rs import op2

RES = """
void res(double *A, double *u, double *du, const double *beta) {
  *du += (*beta) * (*A) * (*u);
}"""

UPDATE = """
void update(double *r, double *du, double *u, double *u_sum, double *u_max) {
  *u += *du + alpha * (*r);
  *du = 0.0;
  *u_sum += (*u) * (*u);
  *u_max = *u_max > *u ? *u_max : *u;
}"""


def grid(nn):
    """The edges (as node pairs), their weights and the right-hand side, in plain NumPy."""
    n = nn - 1  # interior nodes per side

    def node(i, j):
        return (i - 1) * n + (j - 1)

    pairs, weights = [], []
    r = np.zeros(n * n)
    for i in range(1, nn):
        for j in range(1, nn):
            me = node(i, j)
            pairs.append((me, me))
            weights.append(-1.0)
            for di, dj in ((-1, 0), (1, 0), (0, -1), (0, 1)):
                a, b = i + di, j + dj
                if a in (0, nn) or b in (0, nn):
                    r[me] += 0.25
                else:
                    pairs.append((me, node(a, b)))
                    weights.append(0.25)
    return np.array(pairs, dtype=np.int32), np.array(weights), r


def reference(pairs, weights, r, alpha, beta, iterations):
    """The same iteration with a dense matrix: u, and the last sum of squares and maximum."""
    m = np.zeros((len(r), len(r)))
    np.add.at(m, (pairs[:, 0], pairs[:, 1]), weights)
    u = np.zeros(len(r))
    for _ in range(iterations):
        u = u + beta * (m @ u) + alpha * r
    return u, float(np.sum(u * u)), float(max(np.max(u), 0.0))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="sequential")
    p.add_argument("--nn", type=int, default=6, help="grid points per side")
    p.add_argument("--iterations", type=int, default=2)
    opt = p.parse_args()

    pairs, weights, rhs = grid(opt.nn)
    alpha, beta = 1.0, 1.0

    op2.init(backend=opt.backend)
    nodes = op2.Set(len(rhs), "nodes")
    edges = op2.Set(len(pairs), "edges")
    ppedge = op2.Map(edges, nodes, 2, pairs, "ppedge")

    p_A = op2.Dat(edges ** 1, weights, np.float64, "p_A")
    p_r = op2.Dat(nodes ** 1, rhs, np.float64, "p_r")
    p_u = op2.Dat(nodes ** 1, np.zeros(len(rhs)), np.float64, "p_u")
    p_du = op2.Dat(nodes ** 1, np.zeros(len(rhs)), np.float64, "p_du")

    op2.Const(1, alpha, "alpha", dtype=np.float64)
    g_beta = op2.Global(1, beta, np.float64, "beta")

    res = op2.Kernel(RES, "res")
    update = op2.Kernel(UPDATE, "update")

    for it in range(1, opt.iterations + 1):
        op2.par_loop(res, edges,
                     p_A(op2.READ),
                     p_u(op2.READ, ppedge[1]),
                     p_du(op2.INC, ppedge[0]),
                     g_beta(op2.READ))
        u_sum = op2.Global(1, 0.0, np.float64, "u_sum")
        u_max = op2.Global(1, 0.0, np.float64, "u_max")
        op2.par_loop(update, nodes,
                     p_r(op2.READ),
                     p_du(op2.RW),
                     p_u(op2.RW),
                     u_sum(op2.INC),
                     u_max(op2.MAX))
        print(" %4d  u max = %10.5e  u rms = %10.5e"
              % (it, u_max.data[0], np.sqrt(u_sum.data[0] / nodes.size)))

    u = p_u.data_ro.copy()
    got_sum, got_max = float(u_sum.data[0]), float(u_max.data[0])
    op2.exit()

    want_u, want_sum, want_max = reference(pairs, weights, rhs, alpha, beta, opt.iterations)
    print("results after %d iterations:" % opt.iterations)
    n = opt.nn - 1
    if n <= 8:
        for row in u.reshape(n, n):
            print("  " + " ".join("%7.4f" % v for v in row))
    ok = (np.allclose(u, want_u, rtol=1e-12, atol=1e-14)
          and np.isclose(got_sum, want_sum, rtol=1e-12)
          and np.isclose(got_max, want_max, rtol=1e-12))
    if not ok:
        err = np.max(np.abs(u - want_u))
        print("differs from the NumPy iteration: max |u - u_ref| = %g, sum %r vs %r, max %r vs %r"
              % (err, got_sum, want_sum, got_max, want_max))
        return 1
    print("matches the NumPy iteration")
    return 0


if __name__ == "__main__":
    sys.exit(main())
