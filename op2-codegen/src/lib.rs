//! op2-codegen: emits the C wrapper for a loop signature and compiles, caches and loads it.
//!
//! [`CCodegen`] turns a [`op2_core::LoopSignature`] into one C compilation unit (the user's kernel
//! followed by the wrapper, so the kernel inlines); [`JitCompiler`] compiles it with the system C
//! compiler into a shared library cached on disk and in memory, and loads it for good.
//! [`OpenMpCodegen`] is the threaded dialect: the same kernel call inside a plan-driven OpenMP loop.
//! [`DeviceCodegen`] emits device stubs (direct, planned with staging through local memory per
//! plan block, atomics) in any [`Dialect`]: [`OpenCl`] and [`Cuda`] are the first-party ones.
//! [`CompileCache`] caches every kind of compiled code.

#![warn(missing_docs)]

mod batch;
mod cache;
mod cuda;
mod device;
mod device_codegen;
mod dialect;
mod emit;
mod jit;
mod lanes;
mod layout;
mod list;
mod opencl;
mod openmp;
mod rows;

pub use cache::{
    ArtefactKind, CacheSource, CacheStats, CompileCache, MemoryLayer, cache_stats, dump_source,
    private_memory, write_atomically,
};
pub use cuda::{
    CUDA_EMULATION_ENTRY, CUDA_EMULATION_PRELUDE, Cuda, EMULATION_LAUNCH_FINISH,
    EMULATION_LAUNCH_STUB, EMULATION_SET_CONST, emulation_source,
};
pub use device::{
    StagedRow, StubParam, atomic_reductions, block_atomics, direct_staging_bytes,
    private_bytes_per_item, staged_direct_rows,
};
pub use device_codegen::{DeviceCodegen, DeviceUnit};
pub use dialect::{
    ConstPassing, DEVICE_ENTRY, DeviceOptions, DeviceStub, Dialect, FINISH_ENTRY, HostRange,
    KernelDecl, without_builtin_includes,
};
pub use emit::{
    CCodegen, HostOptions, LIST_SIGNATURE, WRAPPER_SIGNATURE, const_symbol, kernel_symbol,
    list_symbol,
};
pub use jit::{
    HOST_LIBRARIES, JitCompiler, JitFunction, jit_stats, loaded_libraries, loaded_libraries_memory,
};
pub use layout::{BlockLayout, StagingLayout, StagingMode};
pub use list::HostListLoop;
pub use opencl::{OpenCl, rewrite_params};
pub use openmp::{OPENMP_WRAPPER_SIGNATURE, OpenMpCodegen};
