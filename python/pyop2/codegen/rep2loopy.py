"""Today's ``pyop2.codegen.rep2loopy`` callables: ``INVCallable`` and ``SolveCallable`` turn
loopy calls ``B[:, :] = inverse(A[:, :])`` and ``x[:] = solve(A[:, :], b[:])`` into calls of C
functions (``inverse(B, A, n)``, ``solve(x, A, b, n)``) that LAPACK's LU factorisation
(``dgetrf``, then ``dgetri`` or ``dgetrs``) implements; their code comes as loopy preambles, so
a kernel using them links with ``-llapack`` (``Kernel(..., ldargs=["-llapack"])``).

Needs loopy (``pip install loopy``), as today's does."""

from dataclasses import dataclass

import numpy as np
from loopy.kernel.function_interface import ScalarCallable
from loopy.types import NumpyType

__all__ = ["LACallable", "INVCallable", "SolveCallable", "inverse_preamble", "solve_preamble"]

# LAPACK's Fortran entry points, declared here so that no LAPACK header is needed. The matrices
# are row-major and LAPACK reads column-major: the inverse of the transpose is the transpose of
# the inverse, so the inverse needs nothing more; a solve asks for the transposed system ("T").
_LAPACK = """
#ifndef OP2RS_LAPACK_DECLS
#define OP2RS_LAPACK_DECLS
#include <string.h>
extern void dgetrf_(int *m, int *n, double *a, int *lda, int *ipiv, int *info);
extern void dgetri_(int *n, double *a, int *lda, int *ipiv, double *work, int *lwork,
                    int *info);
extern void dgetrs_(char *trans, int *n, int *nrhs, double *a, int *lda, int *ipiv,
                    double *b, int *ldb, int *info);
#endif
"""

#: C of ``inverse(out, A, n)``: ``out`` = the inverse of the ``n`` x ``n`` matrix ``A``.
inverse_preamble = _LAPACK + """
static void inverse(double *__restrict__ out, const double *__restrict__ A, int n)
{
    int ipiv[n];
    int lwork = n * n;
    double work[n * n];
    int info;
    memcpy(out, A, sizeof(double) * n * n);
    dgetrf_(&n, &n, out, &n, ipiv, &info);
    if (info == 0)
        dgetri_(&n, out, &n, ipiv, work, &lwork, &info);
}
"""

#: C of ``solve(x, A, b, n)``: ``x`` = the solution of ``A x = b`` (``A`` is ``n`` x ``n``).
solve_preamble = _LAPACK + """
static void solve(double *__restrict__ x, const double *__restrict__ A,
                  const double *__restrict__ b, int n)
{
    int ipiv[n];
    double lu[n * n];
    int info, one = 1;
    char trans = 'T';
    memcpy(lu, A, sizeof(double) * n * n);
    memcpy(x, b, sizeof(double) * n);
    dgetrf_(&n, &n, lu, &n, ipiv, &info);
    if (info == 0)
        dgetrs_(&trans, &n, &one, lu, &n, ipiv, x, &n, &info);
}
"""


def _frozen(mapping):
    """``mapping`` as loopy's hashable mapping (loopy refuses plain dicts from 2026)."""
    if mapping is None:
        return None
    try:
        from constantdict import constantdict
    except ImportError:  # older loopy: plain mappings
        return mapping
    return constantdict(mapping)


@dataclass(frozen=True, init=False)
class LACallable(ScalarCallable):
    """A loopy callable of a linear algebra function: the call's result array is passed as the
    C function's first argument, then the call's arguments, then the matrix's order."""

    #: the function's name in loopy code and in C (each subclass's)
    name = None
    #: (preamble id, C code) of the function
    preamble = None

    def __init__(self, name=None, arg_id_to_dtype=None, arg_id_to_descr=None,
                 name_in_target=None):
        own = type(self).name
        if name is not None and name != own:
            raise ValueError("%s is the callable of %r, not %r" % (type(self).__name__, own,
                                                                   name))
        super().__init__(own, arg_id_to_dtype=_frozen(arg_id_to_dtype),
                         arg_id_to_descr=_frozen(arg_id_to_descr),
                         name_in_target=name_in_target or own)

    def with_types(self, arg_id_to_dtype, callables_table):
        if any(arg_id_to_dtype.get(i) is None for i in range(len(arg_id_to_dtype))):
            # Not every argument's type is known yet: loopy asks again later.
            return self.copy(arg_id_to_dtype=arg_id_to_dtype), callables_table
        dtypes = {i: NumpyType(arg_id_to_dtype[i].numpy_dtype)
                  for i in range(len(arg_id_to_dtype))}
        wrong = [d.dtype for d in dtypes.values() if d.dtype != np.float64]
        if wrong:
            # The C functions take doubles: another type would be read as doubles.
            raise TypeError("%s() takes float64 arrays, not %s" % (self.name, wrong[0]))
        dtypes[-1] = NumpyType(dtypes[0].dtype)
        return self.copy(arg_id_to_dtype=dtypes), callables_table

    def emit_call_insn(self, insn, target, expression_to_code_mapper):
        from loopy.expression import dtype_to_type_context
        from pymbolic import var
        from pymbolic.mapper.stringifier import PREC_NONE

        params = list(insn.expression.parameters) + [insn.assignees[-1]]
        dtypes = [self.arg_id_to_dtype[i] for i in range(len(params) - 1)]
        dtypes.append(self.arg_id_to_dtype[0])
        c_args = [expression_to_code_mapper(p, PREC_NONE, dtype_to_type_context(target, t),
                                            t).expr
                  for p, t in zip(params, dtypes)]
        order = np.int32(self.arg_id_to_descr[0].shape[1])
        # The result first, then the arguments, then the order.
        return var(self.name_in_target)(c_args[-1], *c_args[:-1], order), False

    def generate_preambles(self, target):
        yield type(self).preamble


@dataclass(frozen=True, init=False)
class INVCallable(LACallable):
    """``B[:, :] = inverse(A[:, :])`` through LAPACK's ``dgetrf`` and ``dgetri``."""

    name = "inverse"
    preamble = ("inverse", inverse_preamble)


@dataclass(frozen=True, init=False)
class SolveCallable(LACallable):
    """``x[:] = solve(A[:, :], b[:])`` through LAPACK's ``dgetrf`` and ``dgetrs``."""

    name = "solve"
    preamble = ("solve", solve_preamble)
