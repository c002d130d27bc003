"""Loops across MPI ranks from Python: a grid's nodes and edges declared in global numbering on
every rank, partitioned (op2-mpi: METIS by default), then indirect increments, direct updates
and reductions run on each rank's part with halo exchanges. The results, gathered on rank 0,
are compared with the same computation in NumPy on the whole mesh; exits 1 when they differ.

    mpirun -np 2 python distributed.py [--backend sequential] [--n 30] [--input everywhere]
        [--partitioner metis] [--mpi4py]

From a mesh file, each rank reading only its slice of every set (no rank holds the mesh) and
PT-Scotch partitioning it where it lies:

    python distributed.py --write-mesh grid.h5 --n 60
    mpirun -np 4 python distributed.py --mesh grid.h5 --input slices --partitioner ptscotch

Without mpirun it runs as one rank.
"""

import argparse
import sys

import numpy as np

from op2rs import op2

SPREAD = """
void spread(const double *x1, const double *x2, const double *w, double *a1, double *a2) {
  double f = *w * (x1[0] + x2[1]);
  *a1 += f;
  *a2 += 2.0 * f;
}"""

SCALE = """
void scale(double *a, double *u, double *total, double *top) {
  *u = 0.5 * *a + 1.0;
  *total += *u;
  if (*u > *top) *top = *u;
}"""

DIFF = """
void diff(const double *u1, const double *u2, double *d) { *d = *u2 - *u1; }"""


def grid(n):
    """An n x n grid of nodes; horizontal and vertical edges; coordinates; edge weights."""
    node = np.arange(n * n).reshape(n, n)
    edges = [(node[i, j], node[i, j + 1]) for i in range(n) for j in range(n - 1)]
    edges += [(node[i, j], node[i + 1, j]) for i in range(n - 1) for j in range(n)]
    e2n = np.array(edges, dtype=np.int32)
    xs = np.linspace(0.0, 1.0, n)
    coords = np.array([(x, y) for y in xs for x in xs])
    w = 1.0 + np.sin(np.arange(len(e2n)))
    return e2n, coords, w


def write_mesh(path, n):
    """The n x n grid in an HDF5 file: edge-to-node map, coordinates, edge weights."""
    import h5py
    e2n, coords, w = grid(n)
    with h5py.File(path, "w") as f:
        f["e2n"], f["coords"], f["w"] = e2n, coords, w


def read_mesh(path, edges=None, nodes=None):
    """The mesh from ``path``: every row, or the ``edges`` and ``nodes`` row ranges only."""
    import h5py
    with h5py.File(path, "r") as f:
        e, n = slice(*edges) if edges else slice(None), slice(*nodes) if nodes else slice(None)
        return f["e2n"][e], f["coords"][n], f["w"][e]


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--backend", default="sequential")
    p.add_argument("--n", type=int, default=30)
    p.add_argument("--input", default="everywhere", choices=["everywhere", "root", "slices"])
    p.add_argument("--partitioner", default="metis", choices=["metis", "ptscotch", "geometric"])
    p.add_argument("--mesh", help="read the mesh from this HDF5 file (see --write-mesh)")
    p.add_argument("--write-mesh", metavar="FILE", help="write the n x n grid there and stop")
    p.add_argument("--mpi4py", action="store_true",
                   help="start MPI with mpi4py first: op2 shares it")
    opt = p.parse_args()
    if opt.write_mesh:
        write_mesh(opt.write_mesh, opt.n)
        return 0
    if opt.input == "slices" and not opt.mesh:
        p.error("--input slices reads its slices from a --mesh file")
    if opt.mpi4py:
        from mpi4py import MPI as mpi4py_mpi  # starts MPI

    op2.init(backend=opt.backend)
    if opt.mpi4py:
        assert op2.MPI.comm is mpi4py_mpi.COMM_WORLD
        assert op2.MPI.comm.size == op2._state["runtime"].ranks
    rank, ranks = op2.MPI.comm.rank, op2.MPI.comm.size
    if opt.mesh:
        import h5py
        with h5py.File(opt.mesh, "r") as f:
            nnodes, nedges = len(f["coords"]), len(f["e2n"])
    else:
        e2n, coords, w = grid(opt.n)
        nnodes, nedges = len(coords), len(e2n)

    mesh = op2.DistributedMesh(input=opt.input)
    g_nodes = mesh.Set(nnodes, "nodes")
    g_edges = mesh.Set(nedges, "edges")
    if opt.mesh:
        # Each rank reads what it hands in: its slices, or everything.
        here = opt.input == "everywhere" or (opt.input == "root" and rank == 0)
        if opt.input == "slices":
            e2n_in, coords_in, w_in = read_mesh(opt.mesh, mesh.rows(g_edges),
                                                mesh.rows(g_nodes))
        elif here:
            e2n_in, coords_in, w_in = read_mesh(opt.mesh)
        else:
            e2n_in = coords_in = w_in = None
    else:
        e2n_in, coords_in, w_in = e2n, coords, w
    g_e2n = mesh.Map(g_edges, g_nodes, 2, e2n_in, "e2n")
    g_x = mesh.Dat(g_nodes ** 2, coords_in, np.float64, "x")
    g_w = mesh.Dat(g_edges, w_in, np.float64, "w")
    g_acc = mesh.Dat(g_nodes, None, np.float64, "acc")
    g_u = mesh.Dat(g_nodes, None, np.float64, "u")
    g_d = mesh.Dat(g_edges, None, np.float64, "d")
    if opt.partitioner == "geometric":
        local = mesh.partition("geometric", coords=g_x)
    else:
        local = mesh.partition(opt.partitioner, map=g_e2n)
    del e2n_in, coords_in, w_in

    nodes, edges, pe = local[g_nodes], local[g_edges], local[g_e2n]
    x, wd, acc, u, d = (local[g] for g in (g_x, g_w, g_acc, g_u, g_d))
    print("rank %d of %d: %d nodes, %d edges owned (%s)"
          % (rank, ranks, nodes.size, edges.size, local.report), flush=True)

    op2.par_loop(op2.Kernel(SPREAD, "spread"), edges,
                 x(op2.READ, pe[0]), x(op2.READ, pe[1]), wd(op2.READ),
                 acc(op2.INC, pe[0]), acc(op2.INC, pe[1]))
    total = op2.Global(1, 0.0, np.float64, "total")
    top = op2.Global(1, -1e300, np.float64, "top")
    op2.par_loop(op2.Kernel(SCALE, "scale"), nodes,
                 acc(op2.READ), u(op2.WRITE), total(op2.INC), top(op2.MAX))
    op2.par_loop(op2.Kernel(DIFF, "diff"), edges, u(op2.READ, pe[0]), u(op2.READ, pe[1]),
                 d(op2.WRITE))
    got_total, got_top = float(total.data[0]), float(top.data[0])
    if opt.mpi4py:
        # op2's reduction and mpi4py's, on the same ranks.
        mine = float(np.sum(u.data_ro))
        assert np.isclose(op2.MPI.comm.allreduce(mine), got_total, rtol=1e-12)
    got_u, got_d = local.gather(u), local.gather(d)

    # The same on the whole mesh with NumPy (from the file, for this check only).
    if opt.mesh:
        e2n, coords, w = read_mesh(opt.mesh)
    f = w * (coords[e2n[:, 0], 0] + coords[e2n[:, 1], 1])
    want_acc = np.zeros(len(coords))
    np.add.at(want_acc, e2n[:, 0], f)
    np.add.at(want_acc, e2n[:, 1], 2.0 * f)
    want_u = 0.5 * want_acc + 1.0
    want_d = want_u[e2n[:, 1]] - want_u[e2n[:, 0]]
    ok = (np.isclose(got_total, want_u.sum(), rtol=1e-12)
          and np.isclose(got_top, want_u.max(), rtol=1e-15))
    if rank == 0:
        ok = ok and np.allclose(got_u, want_u, rtol=1e-13) and np.allclose(
            got_d, want_d, rtol=1e-12, atol=1e-12)
        print("sum of u %.12g, max %.12g over %d ranks: %s"
              % (got_total, got_top, ranks, "match NumPy" if ok else "DIFFER from NumPy"))
    else:
        assert got_u is None and got_d is None
    op2.exit()
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
