//! op2-la: sparse matrices assembled by op2 loops, and solvers for them (PyOP2's `Sparsity`, `Mat`
//! and its PETSc layer).
//!
//! A [`Sparsity`] comes from the (row map, column map) pairs that loops will assemble through; a
//! [`Mat`] on it is filled by [`par_loop`](par_loop())s whose Mat args hand each kernel its dense element
//! matrix; [`solve`] runs a Krylov method with a preconditioner, configured like PETSc's KSP.
//!
//! ```
//! use op2_core::{Kernel, INC, READ, Runtime};
//! use op2_la::{Mat, Method, Preconditioner, SolverOptions, Sparsity};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! # std::hint::black_box(&backend_seq::LINKED); // link the backend (the facade `op2` does this)
//! let rt = Runtime::builder().backend("seq").build()?;
//! // Three nodes on a line, two edges: the 1-D Laplacian plus the identity.
//! let nodes = rt.decl_set(3, "nodes")?;
//! let edges = rt.decl_set(2, "edges")?;
//! let e2n = rt.decl_map(&edges, &nodes, 2, vec![0, 1, 1, 2], "e2n")?;
//! let sparsity = Sparsity::new(&[(&e2n, &e2n)], (1, 1), "pattern")?;
//! let a = Mat::new(&sparsity, "A");
//! let k = Kernel::new("edge", "void edge(double *A) {
//!     A[0] += 1.5; A[1] -= 1.0; A[2] -= 1.0; A[3] += 1.5; }")?;
//! op2_la::par_loop!(rt, k, edges, a.arg(INC, &e2n, &e2n))?;
//! a.assemble();
//! assert_eq!(a.value(1, 1)?, 3.0);
//! let b = rt.decl_dat(&nodes, 1, &[1.0, 1.0, 1.0], "b")?;
//! let x = rt.decl_dat_zeros::<f64>(&nodes, 1, "x")?;
//! let report = op2_la::solve(&a, &b, &x, &SolverOptions::new(Method::Cg, Preconditioner::Jacobi))?;
//! assert!(report.converged());
//! # Ok(()) }
//! ```

mod assembly;
mod csr;
mod error;
mod mat;
mod operator;
/// PETSc's KSP as a [`LinearSolver`] (feature `petsc`).
#[cfg(feature = "petsc")]
pub mod petsc;
mod plan;
mod precond;
mod solve;
mod sparsity;

pub use assembly::{LoopArg, host_threads, par_loop};
pub use csr::CsrRef;
pub use error::{LaError, Result};
pub use mat::{BoundaryDrop, Mat, MatArg};
pub use operator::{Neighbour, RankSystem, neighbours_of};
pub use precond::{Preconditioner, Split};
pub use solve::{
    ConvergedReason, LinearSolver, Method, NativeSolver, SolveReport, SolverOptions, solve,
    solve_mixed, solve_with,
};
pub use sparsity::Sparsity;
