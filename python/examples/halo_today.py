"""Today's PyOP2 halos across ranks: each rank holds its part of a periodic ring of cells, its
nodes ``(core, owned, total)`` with one ghost (the next rank's first node), and a ``Halo`` of
its own written with mpi4py (as Firedrake writes one with PETSc's star forests): it fills the
ghost from its owner before loops read it and sends the ghost's increment to its owner after
loops increment it. A read, an increment and a reduction are checked against NumPy on the
whole ring. Exits 1 when they differ.

    mpirun -np 2 python halo_today.py [--backend sequential] [--n 10]

Without mpirun it runs as one rank (the ghost is then the rank's own first node).
"""

import argparse
import sys

import numpy as np
from mpi4py import MPI

from pyop2 import op2


class RingHalo:
    """The ghost (the last node) is the next rank's first node."""

    def __init__(self, comm, owned):
        self.comm, self.owned = comm, owned
        self.next = (comm.rank + 1) % comm.size
        self.prev = (comm.rank - 1) % comm.size

    local_to_global_numbering = None

    def global_to_local_begin(self, dat, insert_mode):
        v = dat._data
        # My first node to the previous rank's ghost; mine from the next rank.
        v[self.owned:] = self.comm.sendrecv(v[0].copy(), dest=self.prev, source=self.next)

    def global_to_local_end(self, dat, insert_mode):
        pass

    def local_to_global_begin(self, dat, insert_mode):
        v = dat._data
        got = self.comm.sendrecv(v[self.owned:].copy(), dest=self.next, source=self.prev)
        combine = {op2.INC: np.add, op2.MIN: np.minimum, op2.MAX: np.maximum}[insert_mode]
        v[0] = combine(v[0], got[0])

    def local_to_global_end(self, dat, insert_mode):
        pass


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--backend", default="sequential")
    p.add_argument("--n", type=int, default=10, help="cells per rank")
    a = p.parse_args()
    comm = MPI.COMM_WORLD
    op2.init(backend=a.backend)
    n, rank, size = a.n, comm.rank, comm.size
    nodes = op2.Set((n, n, n + 1), halo=RingHalo(comm, n))
    cells = op2.Set(n)
    c2n = op2.Map(cells, nodes, 2, [[e, e + 1] for e in range(n)])
    total = n * size
    first = rank * n
    x = op2.Dat(nodes ** 1)
    x.data[:] = np.sin(first + np.arange(n))
    y = op2.Dat(cells ** 1)
    op2.par_loop(op2.Kernel("static void r(const double *x, double *y) { *y = x[0] - 2 * x[1]; }",
                            "r"), cells, x(op2.READ, c2n), y(op2.WRITE))
    z = op2.Dat(nodes ** 1)
    s = op2.Global(1, 0.0, np.float64, comm=comm)
    op2.par_loop(op2.Kernel("""
static void inc(const double *y, double *z, double *s) {
  z[0] += *y;
  z[1] += 0.5 * *y;
  *s += *y;
}""", "inc"), cells, y(op2.READ), z(op2.INC, c2n), s(op2.INC))
    xs = np.sin(np.arange(total))
    ys = xs - 2 * np.roll(xs, -1)
    zs = ys + 0.5 * np.roll(ys, 1)
    ok = (np.allclose(y.data_ro, ys[first:first + n])
          and np.allclose(z.data_ro, zs[first:first + n])
          and np.isclose(s.data_ro[0], ys.sum()))
    oks = comm.allgather(ok)
    if rank == 0:
        print("halo_today: %d ranks, %s" % (size, "ok" if all(oks) else "MISMATCH"))
    op2.exit()
    return 0 if all(oks) else 1


if __name__ == "__main__":
    sys.exit(main())
