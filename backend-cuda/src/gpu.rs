//! What the CUDA backend needs from a device, as a trait with two implementations: the real GPU
//! through the CUDA driver ([`crate::driver`]) and the host emulator ([`crate::emulator`]), which
//! runs the same generated source on the CPU so the backend's logic is tested without a GPU.

use op2_codegen::CudaUnit;
use op2_core::{DeviceMemory, Result};
use std::ffi::c_void;
use std::sync::Arc;

/// A device allocation as kernels see it.
pub trait GpuBuffer: Send + Sync {
    /// The device address of its first byte.
    fn address(&self) -> u64;
}

/// One kernel argument.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LaunchArg {
    /// A C `int`.
    Int(i32),
    /// A device pointer.
    Address(u64),
}

/// Which kernel of a unit to launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// The loop's stub, [`op2_codegen::CUDA_ENTRY`].
    Stub,
    /// The final reduction, [`op2_codegen::CUDA_FINISH_ENTRY`].
    Finish,
}

/// The shape of one launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchShape {
    /// Thread blocks.
    pub blocks: u32,
    /// Threads per block.
    pub threads: u32,
    /// Dynamic shared memory per block, in bytes.
    pub shared_bytes: u32,
}

/// Limits of a device that shape plans and launches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct GpuLimits {
    /// Threads per block at most.
    pub max_threads: usize,
    /// Dynamic shared memory per block at most, in bytes (without opting in to more).
    pub max_shared: usize,
    /// Private (local) memory one thread may declare, in bytes.
    pub max_private_per_thread: usize,
}

/// A CUDA device as the backend drives it.
pub trait Gpu: DeviceMemory<Buffer: GpuBuffer> + 'static {
    /// A compiled unit, loaded and ready to launch.
    type Program: Send + Sync;

    /// The backend name it runs under (`cuda`, `cuda-emulator`), for messages.
    fn backend_name(&self) -> &'static str;

    /// The device, for messages and listings.
    fn device_name(&self) -> &str;

    /// Its limits.
    fn limits(&self) -> GpuLimits;

    /// Compiles the unit (cached), so that a kernel that does not compile fails at `par_loop`.
    fn check(&self, unit: &CudaUnit) -> Result<()>;

    /// The unit compiled and loaded.
    fn load(&self, unit: &CudaUnit) -> Result<Arc<Self::Program>>;

    /// Copies `bytes` into the program's Const number `index` (named `name` in the source).
    fn set_const(
        &self,
        program: &Self::Program,
        index: usize,
        name: &str,
        bytes: &[u8],
    ) -> Result<()>;

    /// Queues one kernel launch; the device runs launches in the order they were queued, before
    /// any later copy to or from the host.
    fn launch(
        &self,
        program: &Self::Program,
        entry: Entry,
        shape: LaunchShape,
        args: &[LaunchArg],
    ) -> Result<()>;

    /// Waits until everything queued has run.
    fn synchronize(&self) -> Result<()>;
}

/// Argument values laid out as `cuLaunchKernel` takes them: one pointer per argument, to its value.
pub(crate) struct PackedArgs {
    values: Vec<[u8; 8]>,
}

impl PackedArgs {
    /// Packs `args` (ints in their first four bytes, native order).
    pub(crate) fn new(args: &[LaunchArg]) -> Self {
        let values = args
            .iter()
            .map(|a| match *a {
                LaunchArg::Int(v) => {
                    let mut b = [0u8; 8];
                    b[..4].copy_from_slice(&v.to_ne_bytes());
                    b
                }
                LaunchArg::Address(v) => v.to_ne_bytes(),
            })
            .collect();
        PackedArgs { values }
    }

    /// The pointer array; valid while `self` lives and is not moved.
    pub(crate) fn pointers(&mut self) -> Vec<*mut c_void> {
        self.values
            .iter_mut()
            .map(|v| v.as_mut_ptr() as *mut c_void)
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ints_and_addresses_pack_natively() {
        let mut p = PackedArgs::new(&[LaunchArg::Int(-7), LaunchArg::Address(0xdead_beef_0000)]);
        let ptrs = p.pointers();
        // SAFETY: each pointer points at 8 live bytes owned by `p`.
        unsafe {
            assert_eq!(*(ptrs[0] as *const i32), -7);
            assert_eq!(*(ptrs[1] as *const u64), 0xdead_beef_0000);
        }
    }
}
