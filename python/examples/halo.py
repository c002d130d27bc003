"""PyOP2's hand-built halos: each rank declares its own part of a chain of edges in local
numbers, with a ``Halo`` per set listing what it sends to and receives from each neighbour, as
PyOP2 0.8-0.10 programs did. A direct update, an edge loop reading nodes through a map (its halo
exchanged first), increments into nodes (the exec-halo edge run redundantly) and reductions run;
each rank's owned values are compared with the same computation in NumPy on the whole chain.
Exits 1 when they differ.

    mpirun -np 3 python halo.py [--backend sequential] [--n 40]

Without mpirun it runs as one rank.
"""

import argparse
import sys

import numpy as np

from op2rs import op2

SCALE = "void scale(double *x) { *x = 3.0 * *x + 1.0; }"
EDGE = "void edge(const double *x[2], double *y) { *y = x[0][0] + 2.0 * x[1][0]; }"
SPREAD = """
void spread(const double *y, double *a[2], double *s, double *m) {
  a[0][0] += *y;
  a[1][0] += 0.5 * *y;
  *s += *y;
  if (*y > *m) *m = *y;
}"""


def initial(n):
    return ((np.arange(n) * 7) % 11) - 3.5


def whole_chain(n):
    """The loops on the whole chain of n edges and n + 1 nodes, in NumPy."""
    x = 3.0 * initial(n + 1) + 1.0
    y = x[:-1] + 2.0 * x[1:]
    acc = np.zeros(n + 1)
    np.add.at(acc, np.arange(n), y)
    np.add.at(acc, np.arange(1, n + 1), 0.5 * y)
    return x, y, acc, y.sum(), y.max()


def part(rank, ranks, n):
    """This rank's part: owned edges [a, b), owned nodes [a, b) (and node n on the last rank);
    halo nodes b (from the next rank) and a - 1 (from the previous one), and exec-halo edge a - 1
    (it increments node a). Local numbers: owned first, then the halo. Returns the global
    number of each local node and edge, the set sizes and the exchange lists."""
    bounds = np.linspace(0, n, ranks + 1).astype(int)
    a, b = bounds[rank], bounds[rank + 1]
    last = rank == ranks - 1
    nodes = list(range(a, b + 1 if last else b))
    owned_nodes = len(nodes)
    if not last:
        nodes.append(b)
    if rank > 0:
        nodes.append(a - 1)
    edges = list(range(a, b))
    owned_edges = len(edges)
    if rank > 0:
        edges.append(a - 1)
    local = {g: i for i, g in enumerate(nodes)}
    node_sends, node_recv, edge_sends, edge_recv = {}, {}, {}, {}
    if rank > 0:
        node_sends[rank - 1] = [local[a]]          # its halo node b' = a
        node_recv[rank - 1] = [local[a - 1]]
        edge_recv[rank - 1] = [owned_edges]        # edge a - 1, exec halo
    if not last:
        node_sends[rank + 1] = [local[b - 1]]      # its halo node a' - 1 = b - 1
        node_recv[rank + 1] = [local[b]]
        edge_sends[rank + 1] = [owned_edges - 1]   # edge b - 1
    node_sizes = [0, owned_nodes, owned_nodes, len(nodes)]
    edge_sizes = [0, owned_edges, len(edges), len(edges)]
    return (nodes, edges, owned_nodes, owned_edges, node_sizes, edge_sizes,
            (node_sends, node_recv), (edge_sends, edge_recv))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="sequential")
    p.add_argument("--n", type=int, default=40)
    opt = p.parse_args()
    op2.init(backend=opt.backend)
    rank, ranks = op2.MPI.comm.rank, op2.MPI.comm.size
    (gnodes, gedges, own_n, own_e, nsizes, esizes, nlists, elists) = part(rank, ranks, opt.n)
    nodes = op2.Set(nsizes, "nodes", halo=op2.Halo(*nlists))
    edges = op2.Set(esizes, "edges", halo=op2.Halo(*elists))
    local = {g: i for i, g in enumerate(gnodes)}
    e2n = op2.Map(edges, nodes, 2, [[local[e], local[e + 1]] for e in gedges], "e2n")
    x = op2.Dat(nodes, initial(opt.n + 1)[gnodes], np.float64, "x")
    y = op2.Dat(edges, None, np.float64, "y")
    acc = op2.Dat(nodes, None, np.float64, "acc")
    total = op2.Global(1, 0.0, np.float64, "total")
    top = op2.Global(1, -1e300, np.float64, "top")
    op2.par_loop(op2.Kernel(SCALE, "scale"), nodes, x(op2.RW))
    op2.par_loop(op2.Kernel(EDGE, "edge"), edges, x(op2.READ, e2n), y(op2.WRITE))
    op2.par_loop(op2.Kernel(SPREAD, "spread"), edges, y(op2.READ), acc(op2.INC, e2n),
                 total(op2.INC), top(op2.MAX))
    wx, wy, wacc, wsum, wmax = whole_chain(opt.n)
    checks = {
        "x (owned)": (x.data_ro[:own_n], wx[gnodes[:own_n]]),
        "x (halo, exchanged)": (x.data_ro_with_halos[own_n:], wx[gnodes[own_n:]]),
        "y (owned)": (y.data_ro[:own_e], wy[gedges[:own_e]]),
        "acc (owned)": (acc.data_ro[:own_n], wacc[gnodes[:own_n]]),
        "sum": (total.data_ro, [wsum]),
        "max": (top.data_ro, [wmax]),
    }
    bad = [k for k, (got, want) in checks.items() if not np.allclose(got, want, rtol=1e-12)]
    print("rank %d of %d: %s" % (rank, ranks, "mismatch in " + ", ".join(bad) if bad
                                  else "matches NumPy on the whole chain"))
    op2.exit()
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
