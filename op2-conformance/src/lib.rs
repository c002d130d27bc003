//! op2-conformance: the conformance suite. Named cases (every feature of the library) and random
//! loops drawn with `proptest` from a fixed seed run on a candidate backend and on the sequential
//! reference; outputs must agree exactly for integers and within each case's tolerance for floating
//! point.
//!
//! A backend crate adds the whole suite to its tests with one line:
//!
//! ```ignore
//! op2_conformance::conformance_tests!("my-backend", my_backend::LINKED);
//! ```
//!
//! `cargo xtask conformance` runs the binary of this crate once per backend, in its own process,
//! and prints a table of case x backend.

#![warn(missing_docs)]

mod cases;
pub mod decl;
mod outputs;
mod random;
mod runner;
mod values;

pub use cases::{Case, REORDERED_SUMS, cases};
pub use decl::{CaseRuntime, Partition};
pub use outputs::{Mismatch, Outputs, close, compare};
pub use random::{RandomLoop, SEED, check_random, random_loop};
pub use runner::{
    CaseResult, DEFAULT_RANDOM_CASES, Outcome, RANDOM_ROW, assert_conforms, probe, run_case,
    run_random, run_suite, runtime,
};
#[cfg(feature = "mpi")]
pub use runner::{run_case_across, run_random_across, run_suite_across, runtime_across};
pub use values::{OutputValue, Values};

/// Defines a `#[test]` that runs the whole suite on the named backend and fails listing every case
/// that differs from the sequential reference (a case the backend could not run counts as a
/// failure). The second argument is any item of the backend's crate: referring to it keeps the
/// crate, and so its `register_backend!` registration, in the test binary (the linker drops
/// unreferenced library code, registrations included).
#[macro_export]
macro_rules! conformance_tests {
    ($backend:expr, $keep:expr) => {
        #[test]
        fn op2_conformance_suite() {
            ::std::hint::black_box(&$keep);
            $crate::assert_conforms($backend);
        }
    };
}
