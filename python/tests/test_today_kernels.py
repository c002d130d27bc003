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
