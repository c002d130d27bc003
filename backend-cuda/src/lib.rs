//! backend-cuda: the CUDA backend (after the OP2 paper). Each loop becomes generated CUDA in the
//! [`op2_codegen::Cuda`] dialect (a `__global__` stub around the user's kernel, inlined as a
//! `__device__` function), compiled to PTX by NVRTC through the compile cache, loaded through the
//! driver API (cudarc; libcuda opened at run time, so it builds and reports itself unusable
//! anywhere). Three strategies keep indirect increments race-free (`OP2_CUDA_STRATEGY`): `colour`,
//! OP2's scheme, `atomics`, `atomicAdd` straight to global memory in one launch, and
//! `staged-atomics`, OP2's staging with `atomicAdd` into shared and then global memory. Consts live
//! in `__constant__` memory; Global reductions finish on the device.
//!
//! Everything above the driver is [`op2_device::DeviceBackend`]'s: this crate is two
//! [`op2_device::Device`]s, [`DriverGpu`] (`cuda`) and [`EmulatedGpu`] (`cuda-emulator`, the same
//! generated units run on the host, which is how the backend is tested without a GPU).

#![warn(missing_docs)]

mod driver;
mod emulator;
mod gpu;
mod nvrtc;
mod ptx;
mod settings;

pub use driver::{DriverBuffer, DriverGpu, DriverProgram};
pub use emulator::{EmulatedGpu, EmulatedProgram, HostBuffer, NvrtcCheck};
pub use gpu::GpuBuffer;
pub use nvrtc::{CompileFailure, Nvrtc, parse_arch};
pub use op2_device::Strategy;
pub use ptx::{NVRTC_OPTIONS, PTX, PtxCompiler, ptx_stats};
pub use settings::{CudaSettings, SETTINGS};

use op2_core::{Backend, BackendFactory, Config, Result};
use op2_device::DeviceBackend;

/// Block size of planned loops unless `OP2_PART_SIZE` says otherwise (halved while a block's
/// staging does not fit in shared memory): OP2's usual GPU block.
pub const DEFAULT_BLOCK_SIZE: usize = 256;

/// Threads per block of direct and atomics loops.
pub const CUDA_THREADS: usize = 256;

/// The strategy when `OP2_CUDA_STRATEGY` is not set: see the README for why.
pub const DEFAULT_STRATEGY: Strategy = Strategy::Atomics;

/// The CUDA backend on a GPU of type `G`: [`CudaBackend<DriverGpu>`] is `cuda`,
/// [`CudaBackend<EmulatedGpu>`] is `cuda-emulator`.
pub type CudaBackend<G> = DeviceBackend<G>;

/// The `cuda` backend on the configured GPU (`cuda_device`, default 0);
/// [`op2_core::Op2Error::BackendUnavailable`] with the reason when there is no driver, device or
/// NVRTC.
pub fn cuda(config: &Config) -> Result<CudaBackend<DriverGpu>> {
    let strategy = CudaSettings::from_config(config)?.strategy;
    Ok(DeviceBackend::new(
        DriverGpu::new(config)?,
        config,
        strategy,
    ))
}

/// The `cuda-emulator` backend, compiling units with NVRTC too as `check` says.
pub fn emulated(config: &Config, check: NvrtcCheck) -> Result<CudaBackend<EmulatedGpu>> {
    let strategy = CudaSettings::from_config(config)?.strategy;
    Ok(DeviceBackend::new(
        EmulatedGpu::new(config, check)?,
        config,
        strategy,
    ))
}

fn create_cuda(config: &Config) -> Result<Box<dyn Backend>> {
    Ok(Box::new(cuda(config)?))
}

fn create_emulator(config: &Config) -> Result<Box<dyn Backend>> {
    Ok(Box::new(emulated(config, NvrtcCheck::Off)?))
}

op2_core::register_backend!(BackendFactory {
    name: "cuda",
    feature: "cuda",
    description: "generated CUDA compiled by NVRTC on an NVIDIA GPU (OP2_CUDA_DEVICE, OP2_CUDA_STRATEGY)",
    create: create_cuda,
    settings: SETTINGS,
});

op2_core::register_backend!(BackendFactory {
    name: "cuda-emulator",
    feature: "cuda",
    description: "the cuda backend's generated code run on the host CPU, for testing without a GPU (slow)",
    create: create_emulator,
    settings: SETTINGS,
});

/// Referenced by the `op2` facade so that the linker keeps this crate, and with it the registration.
#[doc(hidden)]
pub static LINKED: &str = "backend-cuda";

#[cfg(test)]
mod tests {
    use super::*;
    use op2_core::Op2Error;

    #[test]
    fn strategy_reads_its_setting() {
        let strategy = |c: &Config| CudaSettings::from_config(c).map(|s| s.strategy);
        let mut c = Config::default();
        assert_eq!(strategy(&c).unwrap(), DEFAULT_STRATEGY);
        c.settings.set("cuda_strategy", "Colour");
        assert_eq!(strategy(&c).unwrap(), Strategy::Colour);
        c.settings.set("cuda_strategy", "atomics");
        assert_eq!(strategy(&c).unwrap(), Strategy::Atomics);
        c.settings.set("cuda_strategy", "staged-atomics");
        let staged = CudaSettings::from_config(&c).unwrap();
        assert_eq!(staged.strategy, Strategy::Colour);
        assert!(staged.block_atomics && staged.device_options().block_atomics);
        c.settings.set("cuda_strategy", "magic");
        assert!(matches!(strategy(&c), Err(Op2Error::Config { .. })));
    }

    #[test]
    fn no_driver_is_a_reason_not_a_panic() {
        // This machine may or may not have a GPU; either way `cuda` must return, not panic.
        match cuda(&Config::default()) {
            Ok(b) => assert_eq!(b.name(), "cuda"),
            Err(Op2Error::BackendUnavailable { name, reason }) => {
                assert_eq!(name, "cuda");
                assert!(!reason.is_empty());
            }
            Err(e) => panic!("unexpected error: {e}"),
        }
    }
}
