"""PyOP2's API over op2-rs: every class and access mode, direct and indirect loops, reductions,
whole-row args, both local-iteration-space forms, laziness, NumPy views and errors. Expected
values are computed here with NumPy."""

import numpy as np
import pytest

from op2rs import op2


def chain(n):
    """n edges over n + 1 nodes, edge e joining nodes e and e + 1."""
    nodes = op2.Set(n + 1, "nodes")
    edges = op2.Set(n, "edges")
    e2n = op2.Map(edges, nodes, 2, np.array([[e, e + 1] for e in range(n)]), "e2n")
    return nodes, edges, e2n


def test_direct_loops_every_access_and_type():
    s = op2.Set(50, "s")
    for dtype in ["float64", "float32", "int32", "uint32", "int64", "uint64"]:
        x = op2.Dat(s, np.arange(50, dtype=dtype), dtype, "x")
        y = op2.Dat(s ** 2, dtype=dtype, name="y")
        ctype = {"float64": "double", "float32": "float", "int32": "int", "uint32": "unsigned int",
                 "int64": "long long", "uint64": "unsigned long"}[dtype]
        k = op2.Kernel("void dk(%s *x, %s *y) { y[0] = 2 * *x; y[1] = *x + 1; *x = *x * 3; }"
                       % (ctype, ctype), "dk")
        op2.par_loop(k, s, x(op2.RW), y(op2.WRITE))
        base = np.arange(50, dtype=dtype)
        assert x.data_ro.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(x.data_ro, base * 3)
        np.testing.assert_array_equal(y.data_ro[:, 0], base * 2)
        np.testing.assert_array_equal(y.data_ro[:, 1], base + 1)
        assert y.data_ro.shape == (50, 2) and y.shape == (50, 2)


def test_indirect_reads_and_increments_through_map_entries_and_rows():
    n = 37
    nodes, edges, e2n = chain(n)
    x0 = np.sin(np.arange(n + 1))
    x = op2.Dat(nodes, x0, np.float64, "x")
    acc = op2.Dat(nodes, name="acc")
    mid = op2.Dat(edges, name="mid")
    op2.par_loop(op2.Kernel("void m(const double *a, const double *b, double *y) "
                            "{ *y = 0.5 * (*a + *b); }", "m"),
                 edges, x(op2.READ, e2n[0]), x(op2.READ, e2n[1]), mid(op2.WRITE))
    op2.par_loop(op2.Kernel("void sp(const double *y, double *a[2]) "
                            "{ a[0][0] += *y; a[1][0] += 2.0 * *y; }", "sp"),
                 edges, mid(op2.READ), acc(op2.INC, e2n))
    want_mid = 0.5 * (x0[:-1] + x0[1:])
    np.testing.assert_allclose(mid.data_ro, want_mid, rtol=1e-15)
    want = np.zeros(n + 1)
    want[:-1] += want_mid
    want[1:] += 2.0 * want_mid
    np.testing.assert_allclose(acc.data_ro, want, rtol=1e-13)


def test_reductions_inc_min_max():
    s = op2.Set(100, "s")
    v = np.cos(np.arange(100.0))
    x = op2.Dat(s, v, name="x")
    total = op2.Global(1, 0.5, name="total")
    lo = op2.Global(1, 10.0, name="lo")
    hi = op2.Global(1, -10.0, name="hi")
    op2.par_loop(op2.Kernel("void red(const double *x, double *t, double *lo, double *hi) "
                            "{ *t += *x; if (*x < *lo) *lo = *x; if (*x > *hi) *hi = *x; }", "red"),
                 s, x(op2.READ), total(op2.INC), lo(op2.MIN), hi(op2.MAX))
    assert total.data[0] == pytest.approx(0.5 + v.sum(), rel=1e-13)
    assert lo.data[0] == v.min() and hi.data[0] == v.max()
    total.data = [1.0]
    assert total.data_ro[0] == 1.0


def test_consts_are_read_by_name_and_can_change():
    # Loops recorded before a Const changes see its old value (op2-rs's rule; PyOP2's lazy
    # mode gave queued loops the new one): here 1 * 2.5 * 4.
    s = op2.Set(10, "s")
    alpha = op2.Const(1, 2.5, "alpha_py", dtype=np.float64)
    x = op2.Dat(s, np.ones(10), name="x")
    k = op2.Kernel("void sc(double *x) { *x *= alpha_py; }", "sc")
    op2.par_loop(k, s, x(op2.RW))
    alpha.data = 4.0
    op2.par_loop(k, s, x(op2.RW))
    np.testing.assert_array_equal(x.data_ro, np.full(10, 10.0))
    with pytest.raises(op2.Const.NonUniqueNameError):
        op2.Const(1, 1.0, "alpha_py")
    # Removed from the namespace, the name takes a Const of another shape; loops recorded
    # before ran with the old one.
    op2.par_loop(k, s, x(op2.RW))
    alpha.remove_from_namespace()
    beta = op2.Const(2, [1.0, 2.0], "alpha_py", dtype=np.float64)
    op2.par_loop(op2.Kernel("void sc2(double *x) { *x += alpha_py[1]; }", "sc2"), s, x(op2.RW))
    np.testing.assert_array_equal(x.data_ro, np.full(10, 42.0))
    beta.remove_from_namespace()
    # As in PyOP2 (a discard from its set of Consts), removing again does nothing.
    beta.remove_from_namespace()


def test_whole_row_bounds_are_not_compared_as_pyop2_never_did():
    # PyOP2's demos declare `double *x[2]` for maps of arity 4: the bound means nothing in C.
    cells = op2.Set(3, "cells")
    nodes = op2.Set(8, "nodes")
    c2n = op2.Map(cells, nodes, 4, np.array([0, 1, 2, 3, 2, 3, 4, 5, 4, 5, 6, 7]), "c2n")
    x = op2.Dat(nodes, np.arange(8.0), name="x")
    y = op2.Dat(cells, name="y")
    op2.par_loop(op2.Kernel("void four(double *x[2], double *y) "
                            "{ *y = x[0][0] + x[1][0] + x[2][0] + x[3][0]; }", "four"),
                 cells, x(op2.READ, c2n), y(op2.WRITE))
    np.testing.assert_array_equal(y.data_ro, [6.0, 14.0, 22.0])


def test_local_iteration_spaces_per_point_and_per_element():
    n = 11
    nodes, edges, e2n = chain(n)
    w = op2.Dat(edges, np.arange(1.0, n + 1), name="w")
    # PyOP2 0.8.2: called per point with a trailing int index.
    a = op2.Dat(nodes, name="a")
    op2.par_loop(op2.Kernel("void pp(double *b, const double *w, int i) { *b += (i + 1) * *w; }",
                            "pp"), edges, a(op2.INC, e2n[op2.i[0]]), w(op2.READ))
    # PyOP2 0.8.3 to 0.10: called once per element with a buffer.
    b = op2.Dat(nodes, name="b")
    op2.par_loop(op2.Kernel("void pe(double *b, const double *w) "
                            "{ for (int i = 0; i < 2; i++) b[i] += (i + 1) * *w; }", "pe"),
                 edges, b(op2.INC, e2n[op2.i[0]]), w(op2.READ))
    want = np.zeros(n + 1)
    want[:-1] += np.arange(1.0, n + 1)
    want[1:] += 2 * np.arange(1.0, n + 1)
    np.testing.assert_allclose(a.data_ro, want)
    np.testing.assert_allclose(b.data_ro, want)


def test_views_share_op2_memory_force_and_are_seen_by_later_loops():
    s = op2.Set(20, "s")
    x = op2.Dat(s, np.arange(20.0), name="x")
    k = op2.Kernel("void inc1(double *x) { *x += 1.0; }", "inc1")
    op2.par_loop(k, s, x(op2.RW))
    # Reading forces the pending loop.
    np.testing.assert_array_equal(x.data_ro, np.arange(20.0) + 1)
    # No copy: two views are one memory.
    d1, d2 = x.data, x.data_ro
    assert np.shares_memory(d1, d2)
    d1[3] = 100.0
    op2.par_loop(k, s, x(op2.RW))
    assert x.data_ro[3] == 101.0
    # A view handed out before a loop is read-only afterwards; read-only views refuse writes.
    with pytest.raises(ValueError):
        d1[0] = 1.0
    with pytest.raises(ValueError):
        x.data_ro[0] = 1.0


def test_loops_are_lazy_until_their_data_is_read():
    s = op2.Set(5, "s")
    x = op2.Dat(s, np.zeros(5), name="x")
    y = op2.Dat(s, np.zeros(5), name="y")
    k = op2.Kernel("void one(double *x) { *x += 1.0; }", "one")
    rt = op2._state["runtime"]
    rt.flush()
    op2.par_loop(k, s, x(op2.RW))
    op2.par_loop(k, s, y(op2.RW))
    assert rt.pending() == 2
    x.data_ro
    assert rt.pending() == 1  # only x's loop ran
    y.data_ro
    assert rt.pending() == 0


def test_copy_zero_and_dat_from_dat():
    s = op2.Set(7, "s")
    x = op2.Dat(s ** 3, np.arange(21.0), name="x")
    y = op2.Dat(x)
    np.testing.assert_array_equal(y.data_ro, x.data_ro)
    assert y.name == "copy_of_x"
    x.zero()
    assert not x.data_ro.any()
    np.testing.assert_array_equal(y.data_ro, np.arange(21.0).reshape(7, 3))
    assert y.data_ro.shape == (7, 3)
    assert y._native.carrier_id != x._native.carrier_id


def test_pyop2_errors():
    nodes, edges, e2n = chain(4)
    x = op2.Dat(nodes, name="x")
    # Values past the target set: taken as PyOP2 took them, refused where first used (an
    # argument, a sparsity, a mixed map) instead of read out of bounds.
    bad = op2.Map(edges, nodes, 2, [0, 1, 1, 2, 2, 3, 3, 9], "bad")
    assert list(bad.values[-1]) == [3, 9]
    with pytest.raises(op2.MapValueError):
        x(op2.READ, bad)
    with pytest.raises(op2.MapValueError):
        op2.Mat(op2.Sparsity(nodes, bad))
    with pytest.raises(op2.MapValueError):
        op2.MixedDat([x, op2.Dat(nodes)])(op2.READ, op2.MixedMap([e2n, bad]))
    with pytest.raises(op2.DataValueError):
        op2.Map(edges, nodes, 2, [0, 1], "short")
    with pytest.raises(op2.DataValueError):
        op2.Dat(nodes, [1.0, 2.0], name="short")
    with pytest.raises(op2.DataTypeError):
        op2.Dat(nodes, dtype=np.float16)
    with pytest.raises(op2.ModeValueError):
        x(op2.MIN)
    with pytest.raises(op2.ModeValueError):
        op2.Access("FOO")
    with pytest.raises(op2.IndexValueError):
        e2n[2]
    with pytest.raises(op2.IndexTypeError):
        e2n["a"]
    with pytest.raises(op2.MapValueError):
        op2.Dat(edges, name="e")(op2.READ, e2n)
    with pytest.raises(op2.SizeTypeError):
        op2.Set("ten")
    with pytest.raises(op2.NameTypeError):
        op2.Set(3, 7)
    with pytest.raises(op2.SetTypeError):
        op2.par_loop(op2.Kernel("void z(double *x) { }", "z"), "nodes", x(op2.RW))
    with pytest.raises(op2.MapValueError):
        op2.par_loop(op2.Kernel("void z(double *x) { }", "z"), edges, x(op2.RW))
    with pytest.raises(op2.CompilationError) as e:
        op2.par_loop(op2.Kernel("void broken(double *x) { *x = undeclared; }", "broken"),
                     nodes, x(op2.RW))
    assert "undeclared" in str(e.value)
    # Still usable afterwards.
    op2.par_loop(op2.Kernel("void fine(double *x) { *x = 1.0; }", "fine"), nodes, x(op2.WRITE))
    assert x.data_ro.sum() == 5.0


def test_dtypes_are_inferred_as_numpy_infers_them():
    s = op2.Set(3, "s")
    assert op2.Dat(s, [1, 2, 3]).dtype == np.dtype("int64")
    assert op2.Dat(s, [1.0, 2.0, 3.0]).dtype == np.dtype("float64")
    assert op2.Dat(s).dtype == np.dtype("float64")
    assert op2.Global(1, 2).dtype == np.dtype("int64")


def test_halo_sizes_and_map_values_with_halo():
    s = op2.Set([2, 3, 4, 5], "halo_set")
    assert (s.core_size, s.size, s.exec_size, s.total_size) == (2, 3, 4, 5)
    t = op2.Set(6, "t")
    m = op2.Map(s, t, 1, [5, 4, 3, 2, 1], "m")
    np.testing.assert_array_equal(m.values, [[5], [4], [3]])
    np.testing.assert_array_equal(m.values_with_halo, [[5], [4], [3], [2], [1]])
    d = op2.Dat(s ** 2, np.arange(10.0), name="d")
    assert d.data_ro.shape == (3, 2) and d.data_ro_with_halos.shape == (5, 2)


def test_empty_sets_globals_kernels_and_lifecycle():
    e = op2.Set(0, "empty")
    x = op2.Dat(e, name="x")
    op2.par_loop(op2.Kernel("void nothing(double *x) { *x = 1.0; }", "nothing"), e, x(op2.WRITE))
    assert x.data_ro.shape == (0,)
    g = op2.Global(1, 3.0, name="g")
    g.data[0] = 1.0  # item writes go to the Global, as with PyOP2's own array
    assert g.data_ro[0] == 1.0
    with pytest.raises(ValueError):
        g.data_ro[0] = 2.0
    g.data = [4.0]
    assert g.data[0] == 4.0
    # A loop then sees what was written; a later read sees the loop's result.
    s = op2.Set(3, "three")
    g2 = op2.Global(2, [0.0, 0.0], np.float64, "g2")
    g2.data[:] = [10.0, 20.0]
    op2.par_loop(op2.Kernel("void addg(double *g) { g[0] += 1.0; g[1] += 2.0; }", "addg"), s,
                 g2(op2.INC))
    np.testing.assert_array_equal(g2.data, [13.0, 26.0])
    half = g2.data[:1]
    half[0] = -1.0  # a slice is a plain copy
    np.testing.assert_array_equal(g2.data, [13.0, 26.0])
    k1 = op2.Kernel("void same(double *x) { }", "same")
    assert op2.Kernel("void same(double *x) { }", "same") is k1
    c = op2.Const(1, name="no_data_yet")
    with pytest.raises(RuntimeError):
        c.data
    assert op2.initialised()
    with pytest.raises(RuntimeError):
        op2.init(backend="some-other-backend")
    with pytest.raises(ValueError):
        op2.Set()


def test_flattened_whole_rows_as_ffc_takes_coordinates():
    # PyOP2's `coords(op2.READ, elem_node, flatten=True)`: x[c * arity + k], here arity 2, dim 2.
    n = 6
    nodes, edges, e2n = chain(n)
    xy = np.array([[i, i * i] for i in range(n + 1)], dtype=np.float64)
    coords = op2.Dat(nodes ** 2, xy, name="coords")
    length = op2.Dat(edges, name="length")
    op2.par_loop(op2.Kernel("void len2(const double *x[4], double *l) {"
                            " double dx = x[1][0] - x[0][0], dy = x[3][0] - x[2][0];"
                            " *l = dx * dx + dy * dy; }", "len2"),
                 edges, coords(op2.READ, e2n, flatten=True), length(op2.WRITE))
    d = xy[1:] - xy[:-1]
    np.testing.assert_allclose(length.data_ro, (d * d).sum(axis=1))


def test_flattened_entries_per_point():
    nodes, edges, e2n = chain(3)
    x = op2.Dat(nodes ** 2, np.arange(8.0).reshape(4, 2), name="x")
    # flatten=True on map[k] is the plain entry, as in PyOP2.
    y = op2.Dat(edges ** 2, name="y")
    op2.par_loop(op2.Kernel("void cp(const double *a, double *b) { b[0] = a[0]; b[1] = a[1]; }",
                            "cp"), edges, x(op2.READ, e2n[1], flatten=True), y(op2.WRITE))
    np.testing.assert_array_equal(y.data_ro, np.arange(8.0).reshape(4, 2)[1:])
    # A per-point (0.8.2) kernel over a flattened Dat of dim 2: one call per value,
    # component-major (i / arity the component, i % arity the entry).
    z = op2.Dat(nodes ** 2, name="z")
    op2.par_loop(op2.Kernel("void pp(double *z, const double *a, int i) { *z += 100 * i + *a; }",
                            "pp"), edges,
                 z(op2.INC, e2n[op2.i[0]], flatten=True), x(op2.READ, e2n[op2.i[0]], flatten=True))
    want = np.zeros((4, 2))
    for e in range(3):
        for i in range(4):
            node, comp = e2n.values[e][i % 2], i // 2
            want[node, comp] += 100 * i + x.data_ro[node, comp]
    np.testing.assert_array_equal(z.data_ro, want)


def test_configuration_logging_and_utils():
    from op2rs import utils
    assert op2.configuration["backend"] == op2._state["backend"]
    assert op2.configuration["lazy_evaluation"] in (True, False)
    with pytest.raises(op2.ConfigurationError):
        op2.configuration["lazy_evaluation"] = 0
    with pytest.raises(KeyError):
        op2.configuration["no such key"]
    # init again with the same backend only updates the configuration (unknown keys kept).
    op2.init(my_option=3, log_level="INFO")
    assert op2.configuration["my_option"] == 3
    op2.set_log_level("WARN")
    p = utils.parser(group=True)
    ns = vars(p.parse_args(["-b", "openmp", "-l", "DEBUG"]))
    assert ns == {"backend": "openmp", "log_level": "DEBUG"}


def test_par_loop_returns_the_loop():
    s = op2.Set(3, "s")
    d = op2.Dat(s, np.zeros(3), np.float64, "d")
    k = op2.Kernel("void one(double *x) { *x = 1.0; }", "one")
    loop = op2.par_loop(k, s, d(op2.WRITE))
    assert loop.kernel is k and loop.iterset is s and len(loop.args) == 1
    loop.compute()
    assert op2._state["runtime"].pending() == 0
    np.testing.assert_array_equal(d.data_ro, np.ones(3))


def test_lazy_max_trace_length_runs_loops_past_the_bound():
    s = op2.Set(3, "s")
    d = op2.Dat(s, np.zeros(3), np.float64, "d")
    k = op2.Kernel("void inc1(double *x) { *x += 1.0; }", "inc1")
    op2.configuration["lazy_max_trace_length"] = 2
    try:
        rt = op2._state["runtime"]
        rt.flush()
        for _ in range(5):
            op2.par_loop(k, s, d(op2.RW))
            assert rt.pending() < 2
    finally:
        op2.configuration["lazy_max_trace_length"] = 0
    np.testing.assert_array_equal(d.data_ro, np.full(3, 5.0))


def test_a_backend_that_cannot_start_leaves_init_usable():
    # In a fresh interpreter: a failed init (no such backend) then a working one.
    import subprocess
    import sys
    code = ("from op2rs import op2\n"
            "try:\n    op2.init(backend='no-such-backend')\n"
            "except ImportError:\n    pass\n"
            "op2.init(backend='sequential')\n"
            "assert op2.configuration['backend'] == 'sequential'\n"
            "op2.exit()\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.returncode == 0, r.stderr


def test_kernel_include_dirs_are_preprocessed(tmp_path):
    (tmp_path / "scale.h").write_text("#define SCALE(x) (3.0 * (x))\n")
    s = op2.Set(4, "s")
    d = op2.Dat(s, np.arange(4.0), np.float64, "d")
    k = op2.Kernel('#include "scale.h"\nvoid sc3(double *x) { *x = SCALE(*x); }', "sc3",
                   include_dirs=[str(tmp_path)])
    assert "SCALE" not in k.code and "#include" not in k.code
    op2.par_loop(k, s, d(op2.RW))
    np.testing.assert_array_equal(d.data_ro, 3.0 * np.arange(4.0))
    with pytest.raises(op2.CompilationError):
        op2.Kernel('#include "missing.h"\nvoid m(double *x) { }', "m",
                   include_dirs=[str(tmp_path)])
    with pytest.raises(op2.KernelTypeError):
        op2.Kernel(42, "k")


def test_profiling_timers(tmp_path):
    # PyOP2's pyop2.profiling: named timers, tic/toc, a decorator, a summary table or CSV.
    from op2rs import profiling
    profiling.reset()
    clock = iter([0.0, 1.5, 2.0, 2.25, 10.0, 13.0]).__next__
    t = profiling.Timer("assemble", timer=clock)
    assert profiling.Timer("assemble") is t
    t.start()
    assert t.stop() == 1.5
    t.start()
    t.stop()
    assert (t.ncalls, t.total, t.average) == (2, 1.75, 0.875)
    with pytest.raises(AssertionError):
        t.stop()
    with pytest.raises(AssertionError):
        t.elapsed
    t.start()
    assert t.elapsed == 3.0
    profiling.tic("solve")
    assert profiling.toc("solve") >= 0.0

    @profiling.profile("work")
    def work(x):
        return 2 * x
    assert work(3) == 6 and work(4) == 8
    assert profiling.get_timers()["work"].ncalls == 2
    assert profiling.Timer().name != profiling.Timer().name
    out = tmp_path / "t.csv"
    profiling.summary(str(out))
    lines = out.read_text().splitlines()
    assert lines[0] == "Timer,Total time,Calls,Average time"
    assert any(line.startswith("assemble,1.75,2,0.875") for line in lines)
    profiling.reset()
    assert profiling.get_timers() == {}
