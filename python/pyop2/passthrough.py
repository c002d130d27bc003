"""Today's ``PassthroughArg``: a value (a PETSc ``Mat``'s handle, any C pointer) handed to
every call of a loop's kernel as it is, typed as an ``OpaqueType``. op2-rs's loops take data
arguments only, so a loop with such args runs a kernel written around the user's: the handles
travel as one-value ``uint64`` Globals read by every element, and the wrapper casts each back to
its C type before calling the user's kernel. When a handed-through type is PETSc's (``Mat``,
``Vec``, ...), the wrapper is compiled with PETSc's headers (``#include <petsc.h>``, found through
petsc4py) and linked with its library, so that kernels may call PETSc (``MatSetValues`` on a
handed-through ``Mat``). Such loops run at once, element after element on one thread, on the
host backends (seq, openmp); the device backends refuse them."""

import re

import numpy as np

from op2rs.access import READ
from op2rs.data import Global

from op2rs import petsc as _petsc

from . import wrappers
from .datatypes import OpaqueType

__all__ = ["PassthroughArg", "lower"]

# C types of PETSc's own: a kernel taking one needs PETSc's headers.
_PETSC_OPAQUE = re.compile(r"^(Petsc\w*|Mat\w*|Vec\w*|IS\w*|KSP\w*|PC\w*|SNES\w*|TS\w*|DM\w*"
                           r"|Tao\w*)\s*\**$")


class PassthroughArg:
    """``PassthroughArg(type, data)``: ``data`` (an integer, e.g. ``petsc_mat.handle``) handed to
    the kernel as the C type ``type`` (an ``OpaqueType``) at every element."""

    def __init__(self, type, data):
        if not isinstance(type, OpaqueType):
            raise TypeError("PassthroughArg's type must be an OpaqueType, not %r" % (type,))
        if isinstance(data, bool) or not isinstance(data, (int, np.integer)):
            raise TypeError("PassthroughArg's data must be an integer handle, not %r" % (data,))
        if not 0 <= int(data) < 2 ** 64:
            raise ValueError("PassthroughArg's handle %d is not a 64-bit address" % int(data))
        self.type, self.data = type, int(data)

    def __repr__(self):
        return "PassthroughArg(%r, %#x)" % (self.type, self.data)


# PETSc's headers and library for wrappers handing PETSc objects to kernels (op2rs's, which
# also builds its own PETSc helper with them).
_petsc_build_args = _petsc.petsc_build_args


def lower(kernel, args, kernel_type):
    """``(kernel, args)`` of a loop with ``PassthroughArg`` among ``args`` made into one op2-rs
    runs: each such arg becomes a one-value ``uint64`` Global read at every element, and the
    kernel a wrapper (of ``kernel_type``) that casts it back before calling ``kernel``. Other
    loops come back as they are."""
    where = [i for i, a in enumerate(args) if isinstance(a, PassthroughArg)]
    if not where:
        return kernel, args
    declared = wrappers.params_of(kernel, "PassthroughArg")
    if len(declared) < len(args):
        raise TypeError("kernel %s takes %d parameters, the loop passes %d args"
                        % (kernel.name, len(declared), len(args)))
    needs_petsc = [args[i].type.name for i in where if _PETSC_OPAQUE.match(args[i].type.name)]
    # PETSc's headers only for PETSc's types: a user's own types need nothing more.
    petsc = _petsc_build_args() if needs_petsc else None
    if needs_petsc and petsc is None:
        raise ImportError("PassthroughArg of %s: compiling a kernel that takes PETSc's types "
                          "needs PETSc's headers, found through petsc4py; install petsc4py"
                          % ", ".join(needs_petsc))
    params, call = [], []
    for i, (text, name) in enumerate(declared):
        if i in where:
            params.append("const uint64_t *pyop2_handle_%d" % i)
            call.append("(%s)(uintptr_t)*pyop2_handle_%d" % (args[i].type.name, i))
        else:
            params.append(text)
            call.append(name)
    # With PETSc's headers, the user's code as written (its PetscScalar and PetscInt are
    # PETSc's); the wrapper's own parameters are those op2-rs read (C types).
    code = (getattr(kernel, "_written_code", None) if petsc else None) or kernel.code
    wrapped = wrappers.write(kernel, kernel_type, "pyop2_pass_%s" % kernel.name, params, call,
                             code=code, head="#include <petsc.h>\n" if petsc else "",
                             ldargs=petsc[1] if petsc else (), cflags=petsc[0] if petsc else (),
                             effects=True)
    lowered = list(args)
    for i in where:
        handle = Global(1, np.array([args[i].data], dtype=np.uint64), np.uint64,
                        "pyop2_handle_%d" % i)
        lowered[i] = handle(READ)
    return wrapped, tuple(lowered)
