//! Airfoil's tests in one binary: the solver against OP2-Common's residuals, the conformance case
//! on every backend, mesh and output files, and (feature `mpi`) partitioning across thread ranks.

mod conformance;
mod crashes;
mod files;
mod memory;
#[cfg(feature = "mpi")]
mod partition;
mod solver;

/// Counts allocations per thread, for `memory`.
#[global_allocator]
static ALLOCATOR: op2_test_support::memory::CountingAllocator =
    op2_test_support::memory::CountingAllocator;
