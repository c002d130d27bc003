"""Today's ``pyop2.configuration``, ``pyop2.compilation`` and ``pyop2.codegen.rep2loopy``: the
keys and their type checks, the compiler families' flags (``safe_math``), ``load`` compiling a
program's own C for real, and the LAPACK callables inside loops (host backends; the device
backends refuse a kernel linking a library). Expected values come from NumPy."""

import ctypes
import os

import numpy as np
import pytest

import op2rs.exceptions
import pyop2
from pyop2 import compilation, op2
from pyop2.configuration import Configuration, configuration
from pyop2.exceptions import CompilationError, ConfigurationError

HOST = os.environ.get("OP2RS_TEST_BACKEND", "sequential") in ("sequential", "seq", "openmp")


@pytest.fixture
def cache_dir(tmp_path):
    """A fresh compilation cache for one test (the configuration restored after it)."""
    old = configuration["cache_dir"]
    configuration["cache_dir"] = str(tmp_path / "cache")
    yield tmp_path / "cache"
    configuration["cache_dir"] = old


def test_the_package_exports_op2_and_the_configuration_object():
    assert pyop2.Set is op2.Set and pyop2.READ is op2.READ
    assert pyop2.configuration is configuration is op2.configuration


@pytest.mark.parametrize("key, good, bad", [
    ("debug", True, "yes"), ("debug", False, 1), ("simd_width", 8, 8.0),
    ("simd_width", 2, True), ("log_level", "INFO", 1.5), ("log_level", 10, None),
    ("cflags", "-g", ["-g"]), ("safe_math", True, 1), ("matnest", False, "no"),
])
def test_known_keys_are_checked_by_type(key, good, bad):
    c = Configuration()
    with pytest.raises(ConfigurationError, match=key):
        c[key] = bad
    c[key] = good
    assert c[key] == good
    c.reset()
    assert c[key] == Configuration.DEFAULTS[key][2]


def test_unknown_keys_are_kept_and_unsafe_reconfigure_does_not_check():
    c = Configuration()
    c.reconfigure(foo="bar", debug=True)
    assert c["foo"] == "bar" and c["debug"] is True
    c.unsafe_reconfigure(debug="anything")
    assert c["debug"] == "anything"
    with pytest.raises(ConfigurationError):
        c.reconfigure(type_check="no")


def test_defaults_come_from_the_environment(monkeypatch):
    monkeypatch.setenv("PYOP2_SAFE_MATH", "1")
    monkeypatch.setenv("PYOP2_SIMD_WIDTH", "16")
    monkeypatch.setenv("PYOP2_CFLAGS", "-g -O1")
    c = Configuration()
    assert c["safe_math"] is True and c["simd_width"] == 16 and c["cflags"] == "-g -O1"
    monkeypatch.setenv("PYOP2_SIMD_WIDTH", "wide")
    with pytest.raises(ValueError, match="PYOP2_SIMD_WIDTH"):
        Configuration()


def test_init_puts_todays_keys_in_todays_configuration():
    op2.init(type_check=False)
    try:
        assert configuration["type_check"] is False
    finally:
        configuration["type_check"] = True
    with pytest.raises(ConfigurationError):
        op2.init(type_check="off")


FAMILIES = [compilation.LinuxGnuCompiler, compilation.LinuxClangCompiler,
            compilation.LinuxCrayCompiler, compilation.LinuxIntelCompiler,
            compilation.MacClangCompiler, compilation.MacClangARMCompiler]


@pytest.mark.parametrize("family", FAMILIES)
def test_safe_math_drops_only_the_relaxed_flag(family):
    old = configuration["safe_math"]
    try:
        configuration["safe_math"] = False
        fast = family().cflags
        configuration["safe_math"] = True
        safe = family().cflags
    finally:
        configuration["safe_math"] = old
    relaxed = {"-ffast-math", "-Ofast"}
    assert relaxed & set(fast) and not relaxed & set(safe)
    assert {"-O3"} & set(safe)
    # Debugging flags win over both.
    assert "-O0" in family(debug=True).cflags


def test_flags_gather_the_family_the_extras_and_the_configuration():
    old = configuration["cflags"], configuration["ldflags"]
    try:
        configuration["cflags"] = "-DFROM_CONFIG=1"
        configuration["ldflags"] = "-lm"
        c = compilation.LinuxGnuCompiler(["-DEXTRA"], ["-Wl,--as-needed"])
        assert c.cflags[:3] == ("-fPIC", "-Wall", "-std=gnu11")
        assert "-DEXTRA" in c.cflags and c.cflags[-1] == "-DFROM_CONFIG=1"
        assert c.ldflags == ("-shared", "-Wl,--as-needed", "-lm")
    finally:
        configuration["cflags"], configuration["ldflags"] = old


def test_gcc_bug_workarounds_follow_the_version():
    v = pytest.importorskip("packaging.version").Version
    assert compilation.LinuxGnuCompiler(version=v("4.8.2")).bugfix_cflags == ("-fno-ivopts",)
    assert compilation.LinuxGnuCompiler(version=v("7.4")).bugfix_cflags[0] == \
        "-fno-tree-loop-vectorize"
    assert compilation.LinuxGnuCompiler(version=v("12.2.0")).bugfix_cflags == ()
    assert compilation.LinuxGnuCompiler().bugfix_cflags == ()


def test_the_system_compiler_is_sniffed_as_its_family():
    sniffed = compilation.sniff_compiler("cc")
    instance = sniffed()
    assert isinstance(instance, compilation.Compiler)
    assert instance.version is None or instance.version.major >= 4
    missing = compilation.sniff_compiler("/no/such/compiler")
    assert isinstance(missing(), compilation.AnonymousCompiler)
    with pytest.raises(TypeError):
        compilation.set_default_compiler(42)


def test_load_compiles_and_loads_a_programs_c(cache_dir):
    lib = compilation.load("""
#include <math.h>
double hyp(double a, double b) { return sqrt(a * a + b * b); }
int twice(int x) { return 2 * x; }""", "c", ldargs=["-lm"])
    lib.hyp.restype = ctypes.c_double
    lib.hyp.argtypes = [ctypes.c_double, ctypes.c_double]
    assert lib.hyp(3.0, 4.0) == 5.0 and lib.twice(-21) == -42
    built = sorted(p.name for p in cache_dir.iterdir() if p.suffix == ".so")
    assert len(built) == 1
    # The same source and flags again: the library already there, loaded once.
    assert compilation.load("""
#include <math.h>
double hyp(double a, double b) { return sqrt(a * a + b * b); }
int twice(int x) { return 2 * x; }""", "c", ldargs=["-lm"]) is lib
    assert sorted(p.name for p in cache_dir.iterdir() if p.suffix == ".so") == built


def test_load_compiles_cpp(cache_dir):
    lib = compilation.load("""
#include <vector>
#include <numeric>
extern "C" int sum_to(int n) { std::vector<int> v(n); std::iota(v.begin(), v.end(), 1);
                               return std::accumulate(v.begin(), v.end(), 0); }""", "cpp")
    assert lib.sum_to(10) == 55


def test_a_load_that_does_not_compile_names_the_compilers_message(cache_dir):
    with pytest.raises(CompilationError) as e:
        compilation.load("int broken(int x) { return x +; }", "c")
    message = str(e.value)
    assert "expected expression" in message and "Source in" in message
    source = message.split("Source in ")[1].split("\n")[0]
    assert open(source).read() == "int broken(int x) { return x +; }"
    with pytest.raises(CompilationError, match="extension"):
        compilation.load("int f;", "f90")


@pytest.mark.parametrize("n", [1, 3, 5])
def test_lapack_inverse_and_solve_callables_in_loops(n):
    lp = pytest.importorskip("loopy")
    from pyop2.codegen.rep2loopy import INVCallable, SolveCallable
    from pyop2.configuration import target

    rng = np.random.default_rng(n)
    cells = 4
    # Well conditioned and not symmetric: a transposed matrix would give other values.
    a = rng.standard_normal((cells, n, n)) + n * np.eye(n)
    b = rng.standard_normal((cells, n))
    s = op2.Set(cells)
    A = op2.Dat(s ** (n, n), a)
    B = op2.Dat(s ** n, b)
    inv = op2.Dat(s ** (n, n), np.zeros((cells, n, n)))
    x = op2.Dat(s ** n, np.zeros((cells, n)))

    def kernel(instructions, args, name, callable_):
        k = lp.make_kernel(["{ : }"], instructions, args, target=target, name=name,
                           lang_version=(2018, 2))
        k = lp.register_callable(k, callable_.name, callable_())
        return op2.Kernel(lp.generate_code_v2(k).device_code(), name, ldargs=["-llapack"])

    kinv = kernel("Out[:, :] = inverse(In[:, :])",
                  [lp.GlobalArg("Out", dtype=np.float64, shape=(n, n)),
                   lp.GlobalArg("In", dtype=np.float64, shape=(n, n))], "inv_k%d" % n,
                  INVCallable)
    ksolve = kernel("X[:] = solve(M[:, :], R[:])",
                    [lp.GlobalArg("X", dtype=np.float64, shape=(n,)),
                     lp.GlobalArg("M", dtype=np.float64, shape=(n, n)),
                     lp.GlobalArg("R", dtype=np.float64, shape=(n,))], "solve_k%d" % n,
                    SolveCallable)
    if not HOST:
        with pytest.raises(op2rs.exceptions.Op2Error):
            op2.par_loop(kinv, s, inv(op2.WRITE), A(op2.READ))
            inv.data_ro
        return
    op2.par_loop(kinv, s, inv(op2.WRITE), A(op2.READ))
    op2.par_loop(ksolve, s, x(op2.WRITE), A(op2.READ), B(op2.READ))
    # (A Dat of one value per element shows one axis, as today's.)
    np.testing.assert_allclose(inv.data_ro.reshape(a.shape), np.linalg.inv(a), rtol=1e-10,
                               atol=1e-12)
    np.testing.assert_allclose(x.data_ro.reshape(b.shape), np.linalg.solve(a, b[..., None])[..., 0],
                               rtol=1e-10, atol=1e-12)


def test_lapack_callables_take_float64_only():
    lp = pytest.importorskip("loopy")
    from pyop2.codegen.rep2loopy import INVCallable
    from pyop2.configuration import target

    k = lp.make_kernel(["{ : }"], "Out[:, :] = inverse(In[:, :])",
                       [lp.GlobalArg("Out", dtype=np.float32, shape=(2, 2)),
                        lp.GlobalArg("In", dtype=np.float32, shape=(2, 2))], target=target,
                       name="inv_f32", lang_version=(2018, 2))
    k = lp.register_callable(k, INVCallable.name, INVCallable())
    with pytest.raises(Exception, match="float64"):
        lp.generate_code_v2(k)


def test_load_asks_the_compiler_its_family_once(cache_dir, monkeypatch):
    calls = []
    real = compilation.sniff_compiler
    monkeypatch.setattr(compilation, "_sniffed", {})
    monkeypatch.setattr(compilation, "sniff_compiler",
                        lambda exe, comm=None: calls.append(exe) or real(exe))
    for _ in range(3):
        compilation.load("int three(void) { return 3; }", "c")
    assert len(calls) == 1
    # The logs of a compilation sit next to its library.
    names = sorted(p.suffix for p in cache_dir.iterdir() if p.is_file())
    assert names == [".c", ".err", ".log", ".so"]
