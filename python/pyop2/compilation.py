"""Today's ``pyop2.compilation``: the compiler families (``LinuxGnuCompiler``, ...) with their
flags, and ``load(code, extension, ...)``, which compiles C or C++ into a shared library with the
system's compiler and loads it (``ctypes.CDLL``). Firedrake compiles its own helper code this way.

op2-rs compiles its loops itself (op2-codegen's JIT, without relaxed floating point): these
classes serve the code a program hands to :func:`load`. ``configuration["safe_math"]`` swaps a
family's optimisation flags for the same flags without the one relaxing IEEE arithmetic
(``-ffast-math``; ``-Ofast`` for Intel, which then states ``-fp-model=precise``).

Libraries are cached by the hash of their source, compiler and flags: in memory, and on disk in
``configuration["cache_dir"]``. Each rank that misses compiles alone into a private file and
renames it into place, so no call here waits on other ranks."""

import ctypes
import hashlib
import os
import platform
import shlex
import shutil
import subprocess
import sys
import tempfile
from textwrap import dedent

from .configuration import configuration
from .exceptions import CompilationError

try:
    from packaging.version import InvalidVersion, Version
except ImportError:  # packaging is optional: versions then stay unknown
    Version, InvalidVersion = None, ValueError

__all__ = ["Compiler", "MacClangCompiler", "MacClangARMCompiler", "MacGNUCompiler",
           "LinuxGnuCompiler", "LinuxClangCompiler", "LinuxIntelCompiler", "LinuxCrayCompiler",
           "AnonymousCompiler", "sniff_compiler", "sniff_compiler_version",
           "set_default_compiler", "load", "make_so", "clear_compiler_disk_cache"]

_default_compiler = None
# Loaded libraries by cache key: loading one twice would map it twice.
_loaded = {}


def _system_compiler(cpp):
    """The compiler to use when the configuration names none: ``CXX``/``CC`` from the
    environment, else ``c++``/``cc``."""
    if cpp:
        return configuration["cxx"] or os.environ.get("CXX") or "c++"
    return configuration["cc"] or os.environ.get("CC") or "cc"


class Compiler:
    """A compiler family building shared libraries.

    :arg extra_compiler_flags: flags for the C or C++ compiler, before ``configuration``'s
        ``cflags``/``cxxflags``.
    :arg extra_linker_flags: flags for the linker, before ``configuration["ldflags"]``.
    :arg version: the compiler's version (a ``packaging.version.Version``), usually sniffed.
    :arg debug: debugging flags instead of optimisation flags."""

    _name = "unknown"
    _cc = None
    _cxx = None
    _ld = None
    _cflags = ()
    _cxxflags = ()
    _ldflags = ()
    # Optimisation flags, and the same without the flag relaxing IEEE arithmetic
    # (``configuration["safe_math"]``).
    _optflags = ()
    _safe_optflags = ()
    _debugflags = ()

    def __init__(self, extra_compiler_flags=(), extra_linker_flags=(), version=None,
                 debug=False):
        self._extra_compiler_flags = tuple(extra_compiler_flags)
        self._extra_linker_flags = tuple(extra_linker_flags)
        self._version = version
        self._debug = debug

    def __repr__(self):
        return ("%s(extra_compiler_flags=%r, extra_linker_flags=%r, version=%r, debug=%r)"
                % (type(self).__name__, self._extra_compiler_flags, self._extra_linker_flags,
                   self._version, self._debug))

    def __str__(self):
        return "<%s compiler, version %s>" % (self._name, self._version or "unknown")

    @property
    def version(self):
        """The compiler's version, or ``None`` when unknown."""
        return self._version

    @property
    def cc(self):
        """The C compiler's command."""
        return self._cc or _system_compiler(False)

    @property
    def cxx(self):
        """The C++ compiler's command."""
        return self._cxx or _system_compiler(True)

    @property
    def ld(self):
        """A separate linker's command, or ``None`` when the compiler links."""
        return self._ld or configuration["ld"] or None

    def _mode_flags(self):
        if self._debug:
            return self._debugflags
        return self._safe_optflags if configuration["safe_math"] else self._optflags

    @property
    def cflags(self):
        """Every flag of a C compilation."""
        return (self._cflags + self._extra_compiler_flags + self.bugfix_cflags
                + self._mode_flags() + tuple(shlex.split(configuration["cflags"])))

    @property
    def cxxflags(self):
        """Every flag of a C++ compilation."""
        return (self._cxxflags + self._extra_compiler_flags + self.bugfix_cflags
                + self._mode_flags() + tuple(shlex.split(configuration["cxxflags"])))

    @property
    def ldflags(self):
        """Every flag of the link."""
        return (self._ldflags + self._extra_linker_flags
                + tuple(shlex.split(configuration["ldflags"])))

    @property
    def bugfix_cflags(self):
        """Flags working around known bugs of this compiler's version."""
        return ()


class MacClangCompiler(Compiler):
    """Clang on macOS (x86-64)."""

    _name = "Mac Clang"
    _cflags = ("-fPIC", "-Wall", "-framework", "Accelerate", "-std=gnu11")
    _cxxflags = ("-fPIC", "-Wall", "-framework", "Accelerate")
    _ldflags = ("-dynamiclib",)
    _optflags = ("-O3", "-ffast-math", "-march=native")
    _safe_optflags = ("-O3", "-march=native")
    _debugflags = ("-O0", "-g")


class MacClangARMCompiler(MacClangCompiler):
    """Clang on macOS (Apple silicon)."""

    _optflags = ("-O3", "-ffast-math", "-mcpu=apple-a14")
    _safe_optflags = ("-O3", "-mcpu=apple-a14")
    # Homebrew's GCC runtime is not on the default path of Apple's linker.
    _ldflags = ("-dynamiclib", "-L/opt/homebrew/opt/gcc/lib/gcc/11")


class MacGNUCompiler(MacClangCompiler):
    """GNU C on macOS."""

    _name = "Mac GNU"


class _LinuxGnuLike(Compiler):
    """The flags GNU C's command line takes on Linux, which Clang's and Cray's take too."""

    _cflags = ("-fPIC", "-Wall", "-std=gnu11")
    _cxxflags = ("-fPIC", "-Wall")
    _ldflags = ("-shared",)
    _optflags = ("-march=native", "-O3", "-ffast-math")
    _safe_optflags = ("-march=native", "-O3")
    _debugflags = ("-O0", "-g")


class LinuxGnuCompiler(_LinuxGnuLike):
    """GNU C on Linux."""

    _name = "GNU"

    @property
    def bugfix_cflags(self):
        """Vectoriser and induction-variable bugs of some GCC releases (4.8, 5.0-5.4, 6.0-6.4,
        7.1.0-7.1.1, 7.3-7.5) are avoided by turning the pass off."""
        ver = self._version
        if ver is None or Version is None:
            return ()
        if Version("4.8.0") <= ver < Version("4.9.0"):
            return ("-fno-ivopts",)
        if Version("7.3") <= ver <= Version("7.5"):
            return ("-fno-tree-loop-vectorize", "-mno-avx512f")
        if (Version("5.0") <= ver <= Version("5.4.0")
                or Version("6.0.0") <= ver < Version("6.5.0")
                or Version("7.1.0") <= ver < Version("7.1.2")):
            return ("-fno-tree-loop-vectorize",)
        return ()


class LinuxClangCompiler(_LinuxGnuLike):
    """Clang on Linux (linked by ``ld.lld``)."""

    _name = "Clang"
    _ld = "ld.lld"
    _ldflags = ("-shared", "-L/usr/lib")


class LinuxIntelCompiler(Compiler):
    """Intel's compiler on Linux. ``-Ofast`` relaxes arithmetic there, so safe maths is ``-O3``
    with the precise model stated."""

    _name = "Intel"
    _cflags = ("-fPIC", "-no-multibyte-chars", "-std=gnu11")
    _cxxflags = ("-fPIC", "-no-multibyte-chars")
    _ldflags = ("-shared",)
    _optflags = ("-Ofast", "-xHost")
    _safe_optflags = ("-O3", "-fp-model=precise", "-xHost")
    _debugflags = ("-O0", "-g")


class LinuxCrayCompiler(_LinuxGnuLike):
    """Cray's compiler on Linux (its own LAPACK: ``-llapack`` is dropped from the link)."""

    _name = "Cray"

    @property
    def ldflags(self):
        return tuple(f for f in super().ldflags if f != "-llapack")


class AnonymousCompiler(Compiler):
    """A compiler of no known family: only the configuration's flags."""

    _name = "Unknown"


def _version_of(text):
    if Version is None:
        return None
    try:
        return Version(text.strip())
    except InvalidVersion:
        return None


def _run_quiet(cmd):
    """``cmd``'s standard output, or None when it cannot run or fails."""
    try:
        return subprocess.run(cmd, capture_output=True, check=True, encoding="utf-8").stdout
    except (OSError, subprocess.CalledProcessError, UnicodeDecodeError):
        return None


def _executable_version(exe):
    """The version compiler ``exe`` reports (``-dumpfullversion``, else ``-dumpversion``: not
    every compiler has the first), or ``None``."""
    for flag in ("-dumpfullversion", "-dumpversion"):
        out = _run_quiet([exe, flag])
        version = _version_of(out) if out else None
        if version is not None:
            return version
    return None


def sniff_compiler_version(compiler, cpp=False):
    """The version of ``compiler`` (an instance) as its executable reports it, or ``None``."""
    return _executable_version(compiler.cxx if cpp else compiler.cc)


def _family(exe):
    """The compiler class for the executable ``exe``, from its ``--version`` banner."""
    banner = _run_quiet([exe, "--version"]) or ""
    first = banner.split("\n")[0]
    if "Cray" in first:
        name = "cray"
    elif banner.startswith(("gcc", "g++", "cc (", "c++ (")) or "(GCC)" in first:
        name = "gnu"
    elif banner.startswith(("clang", "Apple LLVM", "Apple clang")) or "clang" in first:
        name = "clang"
    elif banner.startswith(("icc", "icpc", "icx", "icpx")):
        name = "intel"
    else:
        name = "unknown"
    if sys.platform.startswith("linux"):
        return {"gnu": LinuxGnuCompiler, "clang": LinuxClangCompiler,
                "intel": LinuxIntelCompiler, "cray": LinuxCrayCompiler}.get(name,
                                                                             AnonymousCompiler)
    if sys.platform.startswith("darwin"):
        if name == "clang":
            return MacClangARMCompiler if platform.machine() == "arm64" else MacClangCompiler
        if name == "gnu":
            return MacGNUCompiler
    return AnonymousCompiler


class _Sniffed:
    """A compiler class with the sniffed executable and version bound (what
    :func:`sniff_compiler` returns: call it as the class)."""

    def __init__(self, cls, exe, version):
        self.cls, self.exe, self.version = cls, exe, version

    def __call__(self, extra_compiler_flags=(), extra_linker_flags=(), version=None,
                 debug=False):
        return self.cls(extra_compiler_flags, extra_linker_flags,
                        version if version is not None else self.version, debug)

    def __repr__(self):
        return "sniffed %s (%s, version %s)" % (self.cls.__name__, self.exe, self.version)


def sniff_compiler(exe, comm=None):
    """The compiler family of executable ``exe`` (``gcc``, ``/usr/bin/clang``, ...), with its
    version: call the result as a compiler class. ``comm`` is accepted for today's signature;
    each rank asks the executable itself."""
    return _Sniffed(_family(exe), exe, _executable_version(exe))


def set_default_compiler(compiler):
    """The compiler :func:`load` uses from now on: an executable's name or path, or a
    :class:`Compiler` subclass."""
    global _default_compiler
    if isinstance(compiler, str):
        _default_compiler = sniff_compiler(compiler)
    elif isinstance(compiler, type) and issubclass(compiler, Compiler):
        _default_compiler = compiler
    else:
        raise TypeError("compiler must be a compiler's name or path, or a subclass of "
                        "pyop2.compilation.Compiler, not %r" % (compiler,))


# Compiler families by executable: asking the executable (two runs of it) once per process.
_sniffed = {}


def _compiler_for(extension):
    if _default_compiler is not None:
        return _default_compiler
    exe = _system_compiler(extension == "cpp")
    found = _sniffed.get(exe)
    if found is None:
        found = _sniffed[exe] = sniff_compiler(exe)
    return found


def _command_and_flags(compiler, extension):
    if extension == "cpp":
        return compiler.cxx, compiler.cxxflags
    return compiler.cc, compiler.cflags


def make_so(compiler, code, extension, comm=None, filename=None):
    """Compiles ``code`` (C, or C++ when ``extension`` is ``"cpp"``) with ``compiler`` (an
    instance) into a shared library in ``configuration["cache_dir"]`` and returns its path;
    a library already there for the same source, compiler and flags is reused. A failed
    compilation raises :class:`CompilationError` naming the log and error files."""
    if extension not in ("c", "cpp"):
        raise CompilationError("extension must be 'c' or 'cpp', not %r" % (extension,))
    exe, flags = _command_and_flags(compiler, extension)
    key = hashlib.sha256(repr((code, type(compiler).__name__, exe, flags, compiler.ld,
                               compiler.ldflags)).encode()).hexdigest()
    cache_dir = configuration["cache_dir"]
    os.makedirs(cache_dir, exist_ok=True)
    soname = os.path.join(cache_dir, key + ".so")
    if os.path.exists(soname):
        return soname
    # A private working directory: ranks (or processes) missing together never share files.
    work = tempfile.mkdtemp(prefix="pyop2-build-", dir=cache_dir)
    stem = os.path.splitext(os.path.basename(str(filename)))[0] if filename else key
    base = os.path.join(work, stem)
    src, obj, lib = base + "." + extension, base + ".o", base + ".so"
    # The logs are written in the private folder too, then moved next to the library: ranks
    # compiling the same source at once never write into one file.
    logfile, errfile = base + ".log", base + ".err"
    with open(src, "w") as f:
        f.write(code)
    ldflags = compiler.ldflags
    if compiler.ld:
        steps = [("Compilation", (exe,) + flags + ("-c", "-o", obj, src)),
                 ("Linker", tuple(shlex.split(compiler.ld)) + ("-o", lib, obj)
                  + tuple(_linker_flags(ldflags)))]
    else:
        steps = [("Compilation", (exe,) + flags + ("-o", lib, src) + ldflags)]
    with open(logfile, "w") as log, open(errfile, "w") as err:
        for step, cmd in steps:
            log.write("%s command:\n%s\n\n" % (step, " ".join(cmd)))
            log.flush()
            try:
                subprocess.run(cmd, stdout=log, stderr=err, check=True)
            except (OSError, subprocess.CalledProcessError) as e:
                err.flush()
                with open(errfile) as f:
                    message = f.read()[-4000:]
                # The source and the logs stay in their working folder for the user to read.
                raise CompilationError(dedent("""\
                    %s failed: %s
                    %s
                    Source in %s
                    Compile log in %s
                    Compile errors in %s""") % (step, e, message, src, logfile,
                                                errfile)) from None
    # Atomic: a concurrent reader sees the whole library or none.
    os.replace(lib, soname)
    for path, ext in ((src, extension), (logfile, "log"), (errfile, "err")):
        os.replace(path, os.path.join(cache_dir, "%s.%s" % (key, ext)))
    shutil.rmtree(work, ignore_errors=True)
    return soname


def _linker_flags(ldflags):
    """``-Wl,a,b`` compiler-driver flags as the linker's own ``a b``."""
    for flag in ldflags:
        if flag.startswith("-Wl,"):
            yield from flag[4:].split(",")
        else:
            yield flag


def load(code, extension, cppargs=(), ldargs=(), comm=None):
    """Compiles ``code`` (C, or C++ when ``extension`` is ``"cpp"``) into a shared library,
    with ``cppargs`` added to the compiler's flags and ``ldargs`` to the linker's, and loads it:
    a ``ctypes.CDLL`` whose functions the program takes by name (``lib.my_function``).
    Compiled once per source and flags; ``comm`` is accepted for today's signature."""
    if not isinstance(code, str):
        raise TypeError("code must be a str of C or C++ source, not %r" % (type(code),))
    compiler = _compiler_for(extension)(tuple(cppargs), tuple(ldargs),
                                        debug=configuration["debug"])
    soname = make_so(compiler, code, extension, comm)
    lib = _loaded.get(soname)
    if lib is None:
        lib = _loaded[soname] = ctypes.CDLL(soname)
    return lib


def clear_compiler_disk_cache(prompt=False):
    """Removes the libraries :func:`load` compiled (``configuration["cache_dir"]``), asking
    first when ``prompt``."""
    cache_dir = configuration["cache_dir"]
    if not os.path.isdir(cache_dir) or not os.listdir(cache_dir):
        print("No cached libraries to remove")
        return
    if prompt:
        answer = input("Remove cached libraries from %s? [Y/n]: " % cache_dir).strip().lower()
        while answer not in ("", "y", "n"):
            answer = input("Please answer y or n: ").strip().lower()
        if answer == "n":
            print("Not removing cached libraries")
            return
    print("Removing cached libraries from %s" % cache_dir)
    shutil.rmtree(cache_dir, ignore_errors=True)
