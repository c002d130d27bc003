"""``Kernel``: a C function a loop calls per element. Its source is read (its parameters, to
tell PyOP2 0.8.2's per-point kernels from later ones) when a loop first needs it, after that
loop's arguments were checked, as PyOP2 compiled kernels only for loops."""

import os
import subprocess

from . import _op2
from .exceptions import CompilationError, KernelTypeError, NameTypeError, call
from .runtime import current

__all__ = ["Kernel"]

_kernels = {}


class Kernel:
    """A C kernel ``name`` defined in ``code``; identical kernels are one object.
    ``include_dirs`` (PyOP2 0.10): the source is run through the C preprocessor with them at
    construction, as PyOP2 did, so ``#include "header.h"`` from those directories works on
    every backend. ``opts`` (PyOP2's COFFEE transformations) are accepted and not applied."""

    def __new__(cls, code, name, opts=None, include_dirs=None, _cpp=False, _ldargs=(),
                _cflags=(), _effects=False, _tag=()):
        # ``_cpp``: the source is C++ (today's ``cpp=True``), compiled as such; ``_ldargs``:
        # what its loops are linked with (today's ``ldargs``); ``_cflags``: what they are
        # compiled with besides the backend's flags; ``_effects``: it acts on host state outside
        # its args (a handed-through pointer), so its loops run in element order; ``_tag``:
        # what else tells two kernels apart (today's accesses and dtypes).
        if not isinstance(name, str):
            raise NameTypeError("name must be of type str")
        if not isinstance(code, str):
            raise KernelTypeError("op2rs kernels are C source strings (not pyop2.ir trees)")
        current()
        dirs = tuple(include_dirs or ())
        ldargs, cflags = tuple(_ldargs or ()), tuple(_cflags or ())
        if not all(isinstance(a, str) for a in ldargs + cflags):
            raise TypeError("link and compile arguments must be strings, not %r"
                            % (ldargs + cflags,))
        key = (cls, code, name, dirs, bool(_cpp), ldargs, cflags, bool(_effects), _tag)
        k = _kernels.get(key)
        if k is None:
            k = object.__new__(cls)
            k._code, k._name = (_preprocess(code, dirs, _cpp) if dirs else code), name
            k._parsed = None
            k._cpp = bool(_cpp)
            k._ldargs, k._cflags, k._effects = ldargs, cflags, bool(_effects)
            _kernels[key] = k
        return k

    def __init__(self, code, name, opts=None, include_dirs=None, _cpp=False, _ldargs=(),
                 _cflags=(), _effects=False, _tag=()):
        pass

    name = property(lambda self: self._name)
    code = property(lambda self: self._code)
    cache_key = property(lambda self: (self._code, self._name, self._cpp, self._ldargs,
                                       self._cflags, self._effects))

    @property
    def _native(self):
        """op2-rs's kernel (read from the source when first asked for)."""
        return (self._parsed or self._parse())[0]

    def _parse(self):
        """``(op2-rs's kernel, whether it is a per-point kernel)``, read from the source once
        (``KernelTypeError`` when the source does not define ``name``)."""
        p = self._parsed
        if p is None:
            k = call(_op2.Kernel, expand_stride(self._code), self._name, self._cpp,
                     list(self._ldargs), list(self._cflags), self._effects)
            p = self._parsed = (k, k.trailing_ints() > 0)
        return p

    def __str__(self):
        return "OP2 Kernel: %s" % self._name

    def __repr__(self):
        return 'Kernel("""%s""", %r)' % (self._code, self._name)


def expand_stride(code):
    """``code`` with PyOP2's ``OP2_STRIDE(a, idx)`` written out as ``(a)[idx]``.

    PyOP2 defined that macro for every host kernel, ``soa=True`` Dats included (their
    component-major layout was a device one); op2-rs hands every backend a Dat's row with its
    values side by side, so plain indexing is right everywhere. Written out here because
    op2-rs keeps names of that prefix for its generated code."""
    out, pos = [], 0
    while True:
        at = code.find("OP2_STRIDE", pos)
        if at < 0:
            out.append(code[pos:])
            return "".join(out)
        before = code[at - 1] if at > 0 else " "
        j = at + len("OP2_STRIDE")
        while j < len(code) and code[j] in " \t\n":
            j += 1
        if (before.isalnum() or before == "_") or j >= len(code) or code[j] != "(":
            out.append(code[pos:j])
            pos = j
            continue
        # The two arguments, split at the first comma outside brackets.
        depth, comma, k = 0, None, j + 1
        while k < len(code):
            c = code[k]
            if c in "([{":
                depth += 1
            elif c in ")]}":
                if depth == 0:
                    break
                depth -= 1
            elif c == "," and depth == 0 and comma is None:
                comma = k
            k += 1
        if k >= len(code) or comma is None:
            # Not a use of the macro (C's compiler will say what is wrong).
            out.append(code[pos:j])
            pos = j
            continue
        array, index = code[j + 1:comma].strip(), code[comma + 1:k].strip()
        out.append(code[pos:at])
        out.append("(%s)[%s]" % (expand_stride(array), expand_stride(index)))
        pos = k + 1


def _preprocess(code, include_dirs, cplusplus=False):
    """``code`` through ``cpp -P`` with ``include_dirs``, as PyOP2 ran its kernels through cpp
    (as C++ for a C++ kernel, so that its headers are found and ``__cplusplus`` is defined)."""
    cmd = ([os.environ.get("CPP", "cpp"), "-P"] + (["-x", "c++"] if cplusplus else [])
           + ["-I%s" % d for d in include_dirs])
    try:
        r = subprocess.run(cmd, input=code, capture_output=True, text=True)
    except OSError as e:
        raise CompilationError("could not run the C preprocessor %r: %s" % (cmd[0], e)) from None
    if r.returncode != 0:
        raise CompilationError("the C preprocessor failed on the kernel:\n%s" % r.stderr)
    return r.stdout
