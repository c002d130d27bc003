"""DistributedMesh in one process (the mpirun runs are python/examples/distributed.py under
cargo xtask test): every partitioner gives back the whole mesh, loops run on it, and misuse is
refused."""

import numpy as np
import pytest

from op2rs import op2, _op2

pytestmark = pytest.mark.skipif(not getattr(_op2, "HAS_MPI", False),
                                reason="op2rs built without MPI")


@pytest.mark.parametrize("input", ["everywhere", "slices"])
@pytest.mark.parametrize("partitioner", ["metis", "ptscotch", "geometric", "blocks"])
def test_one_rank_holds_the_whole_mesh(partitioner, input):
    n = 12
    mesh = op2.DistributedMesh(input=input)
    nodes = mesh.Set(n + 1, "nodes")
    edges = mesh.Set(n, "edges")
    # One rank's slices are every row.
    assert mesh.rows(nodes) == (0, n + 1) and mesh.rows(edges) == (0, n)
    e2n = mesh.Map(edges, nodes, 2, [[e, e + 1] for e in range(n)], "e2n")
    x = mesh.Dat(nodes ** 2, np.arange(2.0 * (n + 1)).reshape(-1, 2), np.float64, "x")
    acc = mesh.Dat(nodes, None, np.float64, "acc")
    by_map = partitioner in ("metis", "ptscotch")
    local = mesh.partition(partitioner, map=e2n if by_map else None,
                           coords=x if partitioner == "geometric" else None)
    ln, le, lm = local[nodes], local[edges], local[e2n]
    assert local[nodes] is ln and ln.size == n + 1 and le.size == n and lm.arity == 2
    op2.par_loop(op2.Kernel("void s(const double *x, double *a1, double *a2) "
                            "{ *a1 += x[0]; *a2 += x[1]; }", "s"),
                 le, local[x](op2.READ, lm[0]), local[acc](op2.INC, lm[0]),
                 local[acc](op2.INC, lm[1]))
    xs = np.arange(2.0 * (n + 1)).reshape(-1, 2)
    want = np.zeros(n + 1)
    want[:-1] += xs[:-1, 0]
    want[1:] += xs[:-1, 1]
    np.testing.assert_array_equal(local.gather(local[acc]), want)
    ids = local.global_ids(ln)
    np.testing.assert_array_equal(np.sort(ids), np.arange(n + 1))
    with pytest.raises(op2.Op2Error, match="partitioned already"):
        mesh.Set(3, "more")


def test_partition_misuse():
    mesh = op2.DistributedMesh()
    s = mesh.Set(4, "s")
    with pytest.raises(ValueError):
        mesh.partition("metis")
    with pytest.raises(ValueError):
        mesh.partition("scotch")
    with pytest.raises(ValueError):
        op2.DistributedMesh(input="sideways")
    with pytest.raises(op2.DataValueError):
        mesh.Map(s, s, 2, [0, 1, 2], "short")
    assert op2.MPI.comm.size == 1 and not op2.MPI.parallel
    assert op2.MPI.rank_zero(lambda: 7)() == 7


def test_hand_built_halos_in_one_process():
    # PyOP2's Halo: dicts (or lists of per-rank arrays) of local element numbers; a rank may
    # not list itself; verify() checks sends are owned and receives halo elements. In one
    # process a Set's Halo has no neighbours (python/examples/halo.py runs it across ranks).
    h = op2.Halo({}, [])
    assert h.sends == {} and h.receives == {} and h.comm.size == 1
    assert h.global_to_petsc_numbering is None
    s = op2.Set([3, 4, 4, 4], "with_halo", halo=h)
    assert s.halo is h and s.sizes == (3, 4, 4, 4)
    x = op2.Dat(s, np.arange(4.0))
    op2.par_loop(op2.Kernel("void dbl(double *x) { *x *= 2.0; }", "dbl"), s, x(op2.RW))
    np.testing.assert_array_equal(x.data_ro, 2.0 * np.arange(4.0))
    listed = op2.Halo([[], [1, 2]], [np.array([], dtype=np.int32), [3]])
    assert list(listed.sends) == [1] and list(listed.receives) == [1]
    np.testing.assert_array_equal(listed.sends[1], [1, 2])
    with pytest.raises(AssertionError):
        op2.Halo({0: [1]}, {})
    with pytest.raises(AssertionError):
        op2.Halo({}, {0: [1]})
    bad = op2.Halo.__new__(op2.Halo)
    bad._sends, bad._receives = {1: np.array([5])}, {}
    with pytest.raises(AssertionError):
        bad.verify(op2.Set(3))
    bad._sends, bad._receives = {}, {1: np.array([1])}
    with pytest.raises(AssertionError):
        bad.verify(op2.Set([2, 3, 3, 5]))
    with pytest.raises(TypeError):
        op2.Set(3, "h", halo={})
    # Ranks this process does not have are refused by the runtime.
    with pytest.raises(op2.Op2Error, match="rank 0 sends to rank 1"):
        op2.Set([0, 2, 2, 3], "far", halo=op2.Halo({1: [0]}, {1: [2]}))
