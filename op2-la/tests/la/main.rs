//! op2-la's tests in one binary: the native Krylov solvers and preconditioners, and (feature
//! `petsc`) the same problems solved by PETSc's KSP beside them.

#[cfg(feature = "petsc")]
mod petsc;
mod solvers;
