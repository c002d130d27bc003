/* op2-la's bridge to PETSc: one call that solves an assembled CSR system with a KSP configured from
 * plain arguments, so the Rust side needs no bindings to PETSc's types. Compiled by op2-la's build
 * script when the `petsc` feature is on. Every PETSc call's error code is returned, with the name
 * of the call, instead of PETSc printing and aborting. */
#include <petscksp.h>
#include <string.h>

/* The Rust side passes doubles and reads PetscReal norms: refuse other PETSc builds at compile
 * time rather than misread memory. */
#if !defined(PETSC_USE_REAL_DOUBLE) || defined(PETSC_USE_COMPLEX)
#error "op2-la's PETSc shim needs a PETSc built with real double scalars (Debian: libpetsc-real-dev)"
#endif

/* Why each step failed: the name of the PETSc call, for the Rust error. */
static const char *op2la_failed_call = "";

#define OP2LA_TRY(call)               \
  do {                                \
    PetscErrorCode op2la_e = (call);  \
    if (op2la_e) {                    \
      op2la_failed_call = #call;      \
      return (int)op2la_e;            \
    }                                 \
  } while (0)

const char *op2la_petsc_failed_call(void) { return op2la_failed_call; }

/* Starts PETSc once (MPI too, if nobody did): no signal handlers of its own, errors returned. */
int op2la_petsc_init(void) {
  PetscBool up = PETSC_FALSE;
  OP2LA_TRY(PetscInitialized(&up));
  if (up) return 0;
  OP2LA_TRY(PetscOptionsSetValue(NULL, "-no_signal_handler", NULL));
  OP2LA_TRY(PetscInitializeNoArguments());
  OP2LA_TRY(PetscPushErrorHandler(PetscReturnErrorHandler, NULL));
  return 0;
}

/* The PETSc version as MAJOR*10000 + MINOR*100 + SUBMINOR. */
int op2la_petsc_version(void) {
  return PETSC_VERSION_MAJOR * 10000 + PETSC_VERSION_MINOR * 100 + PETSC_VERSION_SUBMINOR;
}

/* Solves A x = b for the n x n CSR matrix (row_ptr: n + 1 offsets, cols, vals). x holds the initial
 * guess when nonzero_guess. On return: reason (KSPConvergedReason), its, and up to history_len
 * residual norms in history (history_count of them). */
int op2la_petsc_solve(long long n, const long long *row_ptr, const unsigned *cols, const double *vals,
                      const double *b, double *x, const char *ksp_type, const char *pc_type,
                      double omega, int restart, double rtol, double atol, double dtol, long long maxits,
                      int nonzero_guess, int *reason, long long *its, double *history,
                      long long history_len, long long *history_count) {
  Mat A;
  Vec vb, vx;
  KSP ksp;
  PC pc;
  PetscInt *ia, *ja;
  PetscInt m = (PetscInt)n, i, nnz;
  KSPConvergedReason r;
  PetscInt count = 0, done = 0;
  PetscReal *hist;

  if ((long long)m != n || row_ptr[n] > (long long)PETSC_MAX_INT) {
    op2la_failed_call = "PetscInt range (the matrix is too large for this PETSc's 32-bit indices)";
    return 63; /* PETSC_ERR_ARG_OUTOFRANGE */
  }
  nnz = (PetscInt)row_ptr[n];
  OP2LA_TRY(PetscMalloc1(m + 1, &ia));
  OP2LA_TRY(PetscMalloc1(nnz > 0 ? nnz : 1, &ja));
  for (i = 0; i <= m; i++) ia[i] = (PetscInt)row_ptr[i];
  for (i = 0; i < nnz; i++) ja[i] = (PetscInt)cols[i];
  /* PETSc reads the arrays in place and never writes them during a solve. */
  OP2LA_TRY(MatCreateSeqAIJWithArrays(PETSC_COMM_SELF, m, m, ia, ja, (PetscScalar *)vals, &A));
  OP2LA_TRY(VecCreateSeqWithArray(PETSC_COMM_SELF, 1, m, b, &vb));
  OP2LA_TRY(VecCreateSeqWithArray(PETSC_COMM_SELF, 1, m, x, &vx));
  OP2LA_TRY(KSPCreate(PETSC_COMM_SELF, &ksp));
  OP2LA_TRY(KSPSetOperators(ksp, A, A));
  OP2LA_TRY(KSPSetType(ksp, ksp_type));
  if (strcmp(ksp_type, KSPGMRES) == 0) OP2LA_TRY(KSPGMRESSetRestart(ksp, restart));
  OP2LA_TRY(KSPGetPC(ksp, &pc));
  OP2LA_TRY(PCSetType(pc, pc_type));
  if (strcmp(pc_type, PCSOR) == 0) OP2LA_TRY(PCSORSetOmega(pc, omega));
  OP2LA_TRY(KSPSetTolerances(ksp, rtol, atol, dtol, maxits > PETSC_MAX_INT ? PETSC_MAX_INT : (PetscInt)maxits));
  OP2LA_TRY(KSPSetInitialGuessNonzero(ksp, nonzero_guess ? PETSC_TRUE : PETSC_FALSE));
  OP2LA_TRY(PetscMalloc1(history_len > 0 ? history_len : 1, &hist));
  OP2LA_TRY(KSPSetResidualHistory(ksp, hist, (PetscInt)history_len, PETSC_TRUE));
  OP2LA_TRY(KSPSolve(ksp, vb, vx));
  OP2LA_TRY(KSPGetConvergedReason(ksp, &r));
  OP2LA_TRY(KSPGetIterationNumber(ksp, &done));
  OP2LA_TRY(KSPGetResidualHistory(ksp, NULL, &count));
  for (i = 0; i < count; i++) history[i] = hist[i];
  *reason = (int)r;
  *its = done;
  *history_count = count;
  OP2LA_TRY(PetscFree(hist));
  OP2LA_TRY(KSPDestroy(&ksp));
  OP2LA_TRY(VecDestroy(&vx));
  OP2LA_TRY(VecDestroy(&vb));
  OP2LA_TRY(MatDestroy(&A));
  OP2LA_TRY(PetscFree(ja));
  OP2LA_TRY(PetscFree(ia));
  return 0;
}
