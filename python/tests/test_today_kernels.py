"""Today's kernels that reach outside op2-rs: ``Kernel(ldargs=...)`` linking a library built
here, ``PassthroughArg`` handing a C pointer (a struct of our own, a PETSc ``Mat``) to every call,
and ``CStringLocalKernel``. The host backends run them; the device backends refuse them with
op2-rs's error. Expected values are computed here."""

import ctypes
import os
import subprocess

import numpy as np
import pytest

import op2rs.exceptions
from pyop2 import exceptions
from pyop2 import op2

HOST = os.environ.get("OP2RS_TEST_BACKEND", "sequential") in ("sequential", "seq", "openmp")


@pytest.fixture(scope="module")
def library(tmp_path_factory):
    """A folder holding ``libtodayscale.so``, whose ``today_scale(x)`` is ``3 x + 1``."""
    d = tmp_path_factory.mktemp("lib")
    (d / "scale.c").write_text("double today_scale(double x) { return 3.0 * x + 1.0; }\n")
    subprocess.run(["cc", "-shared", "-fPIC", "-o", str(d / "libtodayscale.so"),
                    str(d / "scale.c")], check=True)
    return d


def _refused(run, why="arguments of its own"):
    with pytest.raises(op2rs.exceptions.Op2Error, match=why):
        run()


def test_ldargs_link_the_loops_with_a_library(library):
    s = op2.Set(50)
    x = op2.Dat(s ** 1, np.arange(50.0))
    k = op2.Kernel("""
double today_scale(double);
static void k(double *x) { *x = today_scale(*x); }""", "k",
                   ldargs=["-L%s" % library, "-ltodayscale"])
    assert k is not op2.Kernel(k.code, "k")
    if not HOST:
        return _refused(lambda: op2.par_loop(k, s, x(op2.RW)))
    op2.par_loop(k, s, x(op2.RW))
    np.testing.assert_array_equal(x.data_ro, 3 * np.arange(50.0) + 1)


def test_a_kernel_without_its_ldargs_is_not_the_linked_one(library):
    s = op2.Set(4)
    x = op2.Dat(s ** 1, np.ones(4))
    code = "double today_scale(double);\nstatic void k(double *x) { *x = today_scale(*x); }"
    if HOST:
        op2.par_loop(op2.Kernel(code, "k", ldargs=["-L%s" % library, "-ltodayscale"]), s,
                     x(op2.RW))
        np.testing.assert_array_equal(x.data_ro, np.full(4, 4.0))
    # Without the library, `today_scale` is found nowhere: the linker's error (or the loader's).
    with pytest.raises(Exception, match="today_scale"):
        op2.par_loop(op2.Kernel(code, "k"), s, x(op2.RW))
        x.data_ro


class _Counter(ctypes.Structure):
    _fields_ = [("calls", ctypes.c_long), ("sum", ctypes.c_double), ("last", ctypes.c_double)]


def test_a_passthrough_pointer_reaches_every_call():
    """A struct of this test's own, handed through as ``Counter *``: each call adds to it, in
    element order (``last`` is the last element's), on every thread count."""
    counter = _Counter(0, 0.0, -1.0)
    n = 50_000
    s = op2.Set(n)
    x = op2.Dat(s ** 1, np.arange(float(n)))
    y = op2.Dat(s ** 1, np.zeros(n))
    k = op2.Kernel("""
typedef struct { long calls; double sum; double last; } Counter;
static void k(const double *x, Counter *c, double *y) {
  c->calls += 1; c->sum += *x; *y = 2 * *x + (*x < c->last); c->last = *x;
}""", "k")
    arg = op2.PassthroughArg(op2.OpaqueType("Counter *"), ctypes.addressof(counter))
    if not HOST:
        return _refused(lambda: op2.par_loop(k, s, x(op2.READ), arg, y(op2.WRITE)),
                        "outside its args")
    op2.par_loop(k, s, x(op2.READ), arg, y(op2.WRITE))
    # The loop ran when it was made (its effect is outside op2-rs's data), every element once,
    # each after the one before it (no element saw a later one's value in ``last``).
    assert (counter.calls, counter.sum, counter.last) == (n, n * (n - 1) / 2, n - 1)
    np.testing.assert_array_equal(y.data_ro, 2 * np.arange(float(n)))


def test_passthrough_arg_misuse():
    with pytest.raises(TypeError):
        op2.PassthroughArg("Mat", 1)
    with pytest.raises(TypeError):
        op2.PassthroughArg(op2.OpaqueType("Mat"), 1.5)
    with pytest.raises(ValueError):
        op2.PassthroughArg(op2.OpaqueType("Mat"), -1)


def test_passthrough_of_a_petsc_mat():
    """Today's ``test_passthrough_mat``: a kernel calling ``MatSetValues`` on a handed-through
    ``Mat`` (PETSc's headers and library in the kernel's build)."""
    PETSc = pytest.importorskip("petsc4py.PETSc")
    iterset = op2.Set(10)
    kernel = op2.Kernel("""
static void mat_inc(Mat mat) {
  PetscScalar values[] = {1, 2, 3, 4, 5, 6, 7, 8, 9};
  PetscInt idxs[] = {0, 2, 4};
  MatSetValues(mat, 3, idxs, 3, idxs, values, ADD_VALUES);
}""", "mat_inc")
    m = PETSc.Mat().create()
    m.setSizes(5)
    m.setUp()
    m.setValues([0, 2, 4], [0, 2, 4], np.zeros((3, 3)))
    m.assemble()
    arg = op2.PassthroughArg(op2.OpaqueType("Mat"), m.handle)
    if not HOST:
        return _refused(lambda: op2.par_loop(kernel, iterset, arg), "outside its args")
    op2.par_loop(kernel, iterset, arg)
    m.assemble()
    want = np.zeros((5, 5))
    want[np.ix_([0, 2, 4], [0, 2, 4])] = 10 * np.arange(1, 10).reshape(3, 3)
    np.testing.assert_array_equal(m.getValues(range(5), range(5)), want)


def test_cstring_local_kernel():
    k = op2.CStringLocalKernel("static void foo(double *x) { *x += 1; }", "foo",
                               accesses=(op2.RW,), dtypes=(np.float64,))
    assert (k.name, k.accesses, k.dtypes) == ("foo", (op2.RW,), (np.float64,))
    assert isinstance(k, op2.Kernel)
    s = op2.Set(3)
    x = op2.Dat(s ** 1, np.zeros(3))
    op2.par_loop(k, s, x(op2.RW))
    np.testing.assert_array_equal(x.data_ro, np.ones(3))


def _ring_loop():
    """Elements reading their value and adding it (and ten times it) into the two nodes of a
    ring, and into a Global: the loop's pieces and the expected results."""
    n = 6
    elements, nodes = op2.Set(n), op2.Set(n)
    ends = op2.Map(elements, nodes, 2, [[e, (e + 1) % n] for e in range(n)])
    x = op2.Dat(elements ** 1, np.arange(1.0, n + 1))
    acc = op2.Dat(nodes ** 1, np.zeros(n))
    total = op2.Global(1, 0.0)
    want = np.zeros(n)
    for e in range(n):
        want[e] += e + 1
        want[(e + 1) % n] += 10 * (e + 1)
    return elements, ends, x, acc, total, want, n * (n + 1) / 2


def test_a_global_kernel_runs_through_parloop():
    elements, ends, x, acc, total, want, sum_x = _ring_loop()
    local = op2.Kernel("static void k(const double *x, double *a, double *t) "
                       "{ a[0] += x[0]; a[1] += 10 * x[0]; *t += x[0]; }", "k",
                       accesses=(op2.READ, op2.INC, op2.INC))
    gk = op2.GlobalKernel(local, (op2.DatKernelArg((1,)),
                                  op2.DatKernelArg((1,), op2.MapKernelArg(2)),
                                  op2.GlobalKernelArg((1,))))
    assert gk.name == "wrap_k" and len(gk.zipped_arguments) == 3
    args = [op2.DatParloopArg(x), op2.DatParloopArg(acc, ends), op2.GlobalParloopArg(total)]
    loop = op2.Parloop(gk, elements, args)
    loop()
    np.testing.assert_array_equal(acc.data_ro, want)
    assert total.data_ro[0] == sum_x
    op2.parloop(gk, elements, args)
    np.testing.assert_array_equal(acc.data_ro, 2 * want)
    assert total.data_ro[0] == 2 * sum_x


def test_global_kernel_and_parloop_misuse():
    elements, ends, x, acc, total, want, sum_x = _ring_loop()
    local = op2.CStringLocalKernel("static void k(double *x) { }", "k", accesses=(op2.RW,),
                                   dtypes=(np.float64,))
    with pytest.raises(ValueError, match="do not match"):
        op2.GlobalKernel(local, (op2.DatKernelArg((1,)), op2.GlobalKernelArg((1,))))
    with pytest.raises(ValueError, match="layer"):
        op2.GlobalKernel(local, (op2.DatKernelArg((1,)),), pass_layer_arg=True)
    with pytest.raises(ValueError, match="accesses"):
        op2.GlobalKernel(op2.Kernel("static void k(double *x) { }", "k"),
                         (op2.DatKernelArg((1,)),))
    gk = op2.GlobalKernel(local, (op2.DatKernelArg((1,)),))
    with pytest.raises(ValueError, match="do not match"):
        op2.Parloop(gk, elements, [])
    with pytest.raises(TypeError):
        op2.Parloop(gk, elements, [op2.GlobalParloopArg(total)])
    with pytest.raises(exceptions.KernelTypeError):
        op2.parloop("k", elements)


def test_a_passthrough_parloop_arg_takes_the_kernels_type():
    counter = _Counter(0, 0.0, -1.0)
    s = op2.Set(5)
    x = op2.Dat(s ** 1, np.arange(5.0))
    local = op2.Kernel("""
typedef struct { long calls; double sum; double last; } Counter;
static void k(const double *x, Counter *c) { c->calls += 1; c->sum += *x; c->last = *x; }""",
                       "k", accesses=(op2.READ, op2.RW))
    gk = op2.GlobalKernel(local, (op2.DatKernelArg((1,)), op2.PassthroughKernelArg()))
    run = lambda: op2.parloop(gk, s, [op2.DatParloopArg(x),  # noqa: E731
                                      op2.PassthroughParloopArg(ctypes.addressof(counter))])
    if not HOST:
        return _refused(run, "outside its args")
    run()
    assert (counter.calls, counter.sum, counter.last) == (5, 10.0, 4.0)


def test_a_loopy_kernel_is_compiled_from_loopys_c():
    lp = pytest.importorskip("loopy")
    k = lp.make_kernel("{ [i]: 0 <= i < 2 }", "y[i] = 2 * x[i] + y[i]",
                       [lp.GlobalArg("x", np.float64, (2,)), lp.GlobalArg("y", np.float64, (2,))],
                       name="axpy", lang_version=(2018, 2))
    local = op2.LoopyLocalKernel(k, "axpy", accesses=(op2.READ, op2.RW))
    assert local.dtypes == (np.dtype(np.float64), np.dtype(np.float64))
    s = op2.Set(3)
    x = op2.Dat(s ** 2, np.arange(6.0))
    y = op2.Dat(s ** 2, np.ones(6))
    op2.par_loop(op2.Kernel(k, "axpy"), s, x(op2.READ), y(op2.RW))
    np.testing.assert_array_equal(y.data_ro.ravel(), 2 * np.arange(6.0) + 1)


def test_a_passthrough_over_layers_per_entity_keeps_to_element_order():
    """A handed-through counter and the layer over columns starting above 0: both wrappers
    keep the loop in element order on one thread, run at once; the parameter named like the
    kernel does not hide it."""
    counter = _Counter(0, 0.0, -1.0)
    base = op2.Set(2)
    columns = op2.ExtrudedSet(base, np.array([[1, 3], [0, 4]], dtype=np.int32))
    k = op2.Kernel("""
typedef struct { long calls; double sum; double last; } Counter;
static void layer(Counter *c, int layer) { c->calls += 1; c->sum += layer; c->last = layer; }""",
                   "layer")
    arg = op2.PassthroughArg(op2.OpaqueType("Counter *"), ctypes.addressof(counter))
    run = lambda: op2.par_loop(k, columns, arg, pass_layer_arg=True)  # noqa: E731
    if not HOST:
        return _refused(run, "outside its args")
    run()
    # Column 0: layer 1; column 1: layers 0, 1, 2 (the last one seen).
    assert (counter.calls, counter.sum, counter.last) == (4, 4.0, 2.0)
