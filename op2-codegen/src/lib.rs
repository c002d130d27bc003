//! op2-codegen: emits the C wrapper for a loop signature and compiles, caches and loads it.
//!
//! [`CCodegen`] turns a [`op2_core::LoopSignature`] into one C compilation unit (the user's kernel
//! followed by the wrapper, so the kernel inlines); [`JitCompiler`] compiles it with the system C
//! compiler into a shared library cached on disk and in memory, and loads it for good.
//! [`OpenMpCodegen`] is the threaded dialect: the same kernel call inside a plan-driven OpenMP loop.
//! [`OpenClCodegen`] and [`CudaCodegen`] are the device dialects: stubs (shared between the two)
//! staging data through local (shared) memory per plan block, and CUDA's atomics stub.

#![warn(missing_docs)]

mod cache;
mod cuda;
mod device;
mod emit;
mod jit;
mod opencl;
mod openmp;

pub use cache::{
    ArtefactKind, CacheSource, CacheStats, CompileCache, MemoryLayer, cache_stats, dump_source,
    private_memory, write_atomically,
};
pub use cuda::{
    CUDA_EMULATION_ENTRY, CUDA_EMULATION_PRELUDE, CUDA_ENTRY, CUDA_FINISH_ENTRY, CudaCodegen,
    CudaStub, CudaUnit, EMULATION_LAUNCH_FINISH, EMULATION_LAUNCH_STUB, EMULATION_SET_CONST,
};
pub use device::{BlockLayout, StagingLayout, StagingMode, StubParam, private_bytes_per_item};
pub use emit::{CCodegen, WRAPPER_SIGNATURE, const_symbol, kernel_symbol};
pub use jit::{HOST_LIBRARIES, JitCompiler, JitFunction, jit_stats};
pub use opencl::{
    ArgPassing, OPENCL_ENTRY, OpenClCodegen, OpenClEmitError, OpenClUnit, rewrite_params,
};
pub use openmp::{OPENMP_WRAPPER_SIGNATURE, OpenMpCodegen};
