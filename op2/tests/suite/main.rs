//! The facade's suite: one test binary (one link on a 2-core machine) whose modules run on the
//! backend `OP2_TEST_BACKEND` names (`seq` by default). `cargo xtask test` runs it on every
//! backend: openmp with 1, 2 and 3 threads, OpenCL with both schemes, the CUDA emulator with both
//! strategies. Expected values are computed independently in each test.
//!
//! Bad input lives in `errors` (declarations and loop args) and `misuse` (names, kernel
//! parameters, access modes, compile errors, settings, data in use); regressions in `hardening`.

mod aliasing;
mod classic;
mod distributed;
mod errors;
mod hardening;
mod laziness;
mod misuse;
mod random_meshes;
mod registry;
