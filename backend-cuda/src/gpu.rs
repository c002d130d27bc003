//! What the CUDA devices (the real GPU through the driver, and the host emulator) share: device
//! addresses of buffers, and kernel arguments packed as `cuLaunchKernel` takes them.

use op2_device::LaunchArg;
use std::ffi::c_void;

/// A device allocation as kernels see it.
pub trait GpuBuffer: Send + Sync {
    /// The device address of its first byte.
    fn address(&self) -> u64;
}

/// Argument values laid out as `cuLaunchKernel` takes them: one pointer per argument, to its value.
pub(crate) struct PackedArgs {
    values: Vec<[u8; 8]>,
}

impl PackedArgs {
    /// Packs `args` (ints in their first four bytes, native order; buffers as device addresses).
    /// CUDA kernels take their local memory from the launch, never as an argument.
    pub(crate) fn new<B: GpuBuffer>(args: &[LaunchArg<'_, B>]) -> Self {
        let values = args
            .iter()
            .map(|a| match a {
                LaunchArg::Int(v) => {
                    let mut b = [0u8; 8];
                    b[..4].copy_from_slice(&v.to_ne_bytes());
                    b
                }
                LaunchArg::Buffer(buf) => buf.address().to_ne_bytes(),
                LaunchArg::Local(_) => unreachable!("CUDA stubs take no local-memory arguments"),
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

    struct At(u64);
    impl GpuBuffer for At {
        fn address(&self) -> u64 {
            self.0
        }
    }

    #[test]
    fn ints_and_addresses_pack_natively() {
        let b = At(0xdead_beef_0000);
        let mut p = PackedArgs::new(&[LaunchArg::Int(-7), LaunchArg::Buffer(&b)]);
        let ptrs = p.pointers();
        // SAFETY: each pointer points at 8 live bytes owned by `p`.
        unsafe {
            assert_eq!(*(ptrs[0] as *const i32), -7);
            assert_eq!(*(ptrs[1] as *const u64), 0xdead_beef_0000);
        }
    }
}
