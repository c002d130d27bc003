//! op2-codegen: emits the C wrapper for a loop signature and compiles, caches and loads it.
//!
//! [`CCodegen`] turns a [`op2_core::LoopSignature`] into one C compilation unit (the user's kernel
//! followed by the wrapper, so the kernel inlines); [`JitCompiler`] compiles it with the system C
//! compiler into a shared library cached on disk and in memory, and loads it for good.
//! [`OpenMpCodegen`] is the threaded dialect: the same kernel call inside a plan-driven OpenMP loop.
//! [`OpenClCodegen`] is the device dialect: an OpenCL C stub staging data through `__local` memory.

#![warn(missing_docs)]

mod emit;
mod jit;
mod opencl;
mod openmp;

pub use emit::{CCodegen, WRAPPER_SIGNATURE};
pub use jit::{JitCompiler, JitFunction, JitStats, jit_stats};
pub use opencl::{
    ArgPassing, BlockLayout, OPENCL_ENTRY, OpenClCodegen, OpenClEmitError, OpenClUnit,
    StagingLayout, StagingMode, StubParam, rewrite_params,
};
pub use openmp::{OPENMP_WRAPPER_SIGNATURE, OpenMpCodegen};
