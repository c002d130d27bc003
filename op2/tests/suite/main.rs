//! The facade's suite: one test binary (one link on a 2-core machine) whose modules run on the
//! backend `OP2_TEST_BACKEND` names (`seq` by default). `cargo xtask test` runs it on every
//! backend: openmp with 1, 2 and 3 threads, OpenCL with both schemes, the CUDA emulator with both
//! strategies. Expected values are computed independently in each test.
//!
//! Bad input lives in `bad_input` (its `errors` and `misuse`); regressions in `hardening`.

mod aliasing;
mod bad_input;
mod checkpoint;
mod classic;
mod complex;
mod complex_mats;
mod cpp_kernels;
mod dat_algebra;
mod direct_rows;
mod distributed;
mod extruded;
mod extruded_args;
mod grown_patterns;
mod hardening;
mod layer_arg;
mod laziness;
mod lazy_graph;
mod map_gaps;
mod memory;
mod mixed;
mod outside_kernels;
mod per_entry;
mod random_meshes;
mod registry;
mod subsets;
mod tiling;
mod views;

/// Counts allocations per thread, for `memory`'s checks that declarations do not copy.
#[global_allocator]
static ALLOCATOR: op2_test_support::memory::CountingAllocator =
    op2_test_support::memory::CountingAllocator;
