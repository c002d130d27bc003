"""Subsets as iteration sets (direct and indirect args on the superset, nested subsets, bad
indices) and Dat arithmetic (new Dats, in place, scalars, norms, mismatches), against NumPy."""

import numpy as np
import pytest

from op2rs import op2


def test_loops_over_subsets_touch_only_their_elements():
    n = 40
    nodes = op2.Set(n + 1, "nodes")
    edges = op2.Set(n, "edges")
    e2n = op2.Map(edges, nodes, 2, [[e, e + 1] for e in range(n)], "e2n")
    x = op2.Dat(edges, np.arange(n, dtype=np.float64), np.float64, "x")
    acc = op2.Dat(nodes, name="acc")
    picked = [3, 1, 17, 3, 39, 0]
    sub = edges(picked)
    assert isinstance(sub, op2.Subset) and sub.superset is edges
    np.testing.assert_array_equal(sub.indices, sorted(set(picked)))
    assert sub.total_size == 5 and sub.size == 5 and sub.name == edges.name
    op2.par_loop(op2.Kernel("void twice(double *x) { *x *= 2.0; }", "twice"), sub, x(op2.RW))
    want = np.arange(n, dtype=np.float64)
    want[sorted(set(picked))] *= 2.0
    np.testing.assert_array_equal(x.data_ro, want)
    op2.par_loop(op2.Kernel("void spread(double *x, double *a, double *b) "
                            "{ *a += *x; *b += 10.0 * *x; }", "spread"),
                 sub, x(op2.READ), acc(op2.INC, e2n[0]), acc(op2.INC, e2n[1]))
    want_acc = np.zeros(n + 1)
    for e in sorted(set(picked)):
        want_acc[e] += want[e]
        want_acc[e + 1] += 10.0 * want[e]
    np.testing.assert_array_equal(acc.data_ro, want_acc)
    # A subset of a subset: its indices are positions in the first one.
    nested = sub([0, 4])
    assert nested.superset is edges
    np.testing.assert_array_equal(nested.indices, [0, 39])
    op2.par_loop(op2.Kernel("void zero(double *x) { *x = 0.0; }", "zero"), nested, x(op2.WRITE))
    want[[0, 39]] = 0.0
    np.testing.assert_array_equal(x.data_ro, want)
    # An empty subset runs nothing.
    op2.par_loop(op2.Kernel("void zero(double *x) { *x = 0.0; }", "zero"), edges([]),
                 x(op2.WRITE))
    np.testing.assert_array_equal(x.data_ro, want)


def test_subset_errors():
    s = op2.Set(10, "s")
    with pytest.raises(NotImplementedError):
        op2.DataSet(s([1, 2]), 1)
    halo = op2.Set([1, 3, 4, 6], "halo")
    with pytest.raises(op2.SubsetIndexOutOfBounds):
        halo([0, 5])  # non-exec halo elements are never run
    other = op2.Set(10, "other")
    with pytest.raises(op2.SubsetIndexOutOfBounds):
        op2.Subset(s, [3, 10])
    with pytest.raises(op2.SubsetIndexOutOfBounds):
        s([-1])
    with pytest.raises(TypeError):
        op2.Subset(s, "0,1")
    with pytest.raises(TypeError):
        op2.Subset("s", [0])
    with pytest.raises(NotImplementedError):
        s([1, 2]) ** 2
    d = op2.Dat(other)
    with pytest.raises(op2.MapValueError):
        op2.par_loop(op2.Kernel("void z(double *x) { *x = 0.0; }", "z"), s([1]), d(op2.WRITE))


def test_dat_arithmetic_matches_numpy():
    s = op2.Set(23, "s")
    a0 = np.linspace(1.0, 3.0, 46).reshape(23, 2)
    b0 = np.cos(np.arange(46.0)).reshape(23, 2) + 2.0
    a = op2.Dat(s ** 2, a0, np.float64, "a")
    b = op2.Dat(s ** 2, b0, np.float64, "b")
    for got, want in [(a + b, a0 + b0), (a - b, a0 - b0), (a * b, a0 * b0), (a / b, a0 / b0),
                      (a + 2.5, a0 + 2.5), (2.5 + a, a0 + 2.5), (a * 3, a0 * 3),
                      (3 * a, a0 * 3), (a - 1, a0 - 1), (1 - a, 1 - a0), (a / 4, a0 / 4),
                      (-a, -a0), (+a, a0)]:
        assert isinstance(got, op2.Dat) and got.dataset is a.dataset and got is not a
        np.testing.assert_allclose(got.data_ro, want, rtol=1e-15)
    np.testing.assert_array_equal(a.data_ro, a0)  # operands unchanged
    c = op2.Dat(a)
    c += b
    c *= 2
    c -= 1.5
    c /= b
    np.testing.assert_allclose(c.data_ro, ((a0 + b0) * 2 - 1.5) / b0, rtol=1e-15)
    assert abs(a.norm - np.linalg.norm(a0)) < 1e-12 * np.linalg.norm(a0)
    assert op2.Dat(a) == a and not (b == a)
    i = op2.Dat(s, np.arange(23), np.int32, "i")
    np.testing.assert_array_equal((i * 3 + 1).data_ro, np.arange(23) * 3 + 1)
    # C's conversions, as PyOP2's generated expressions: computed in double, stored truncated.
    j = op2.Dat(s, np.array([3, 5, 7] * 7 + [9, -3]), np.int32, "j")
    j0 = np.array([3, 5, 7] * 7 + [9, -3])
    np.testing.assert_array_equal((j * 0.5).data_ro, np.trunc(j0 * 0.5))
    np.testing.assert_array_equal((j - 1.5).data_ro, np.trunc(j0 - 1.5))
    np.testing.assert_array_equal((j / 2).data_ro, np.trunc(j0 / 2))  # C integer division
    assert (j * 0.5).dtype == np.int32
    # Dats of other types mix as C mixes them; the result has the left operand's type.
    f = op2.Dat(s, np.full(23, 0.25), np.float64, "f")
    np.testing.assert_array_equal((f + j).data_ro, 0.25 + j0)
    np.testing.assert_array_equal((j + f).data_ro, np.trunc(j0 + 0.25))
    h = op2.Dat(s ** 2, a0.astype(np.float32), np.float32, "h")
    np.testing.assert_allclose((a + h).data_ro, a0 + a0.astype(np.float32), rtol=1e-7)
    with pytest.raises(ValueError):
        a + op2.Dat(s ** 1)
    with pytest.raises(TypeError):
        1.0 / a
    with pytest.raises(TypeError):
        a + "text"


def test_arithmetic_is_lazy_and_makes_held_arrays_read_only():
    s = op2.Set(5, "s")
    a = op2.Dat(s, np.ones(5), np.float64, "a")
    held = a.data
    a += 1.0
    assert not held.flags.writeable
    np.testing.assert_array_equal(a.data_ro, np.full(5, 2.0))
