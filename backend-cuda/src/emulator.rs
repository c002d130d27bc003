//! The host emulator behind the `cuda-emulator` backend: the same generated CUDA units, compiled
//! with the system C++ compiler under [`op2_codegen::CUDA_EMULATION_PRELUDE`] (blocks one after
//! another, a block's threads as coroutines switching at `__syncthreads()`), on host memory. It runs
//! everything the `cuda` backend does above the driver (plans, staging, colours, atomics, the data
//! states, the final reductions), so that logic is tested on machines without a GPU. It can also
//! compile every unit with NVRTC, so CI shows the generated CUDA compiles for real.

use crate::gpu::{GpuBuffer, PackedArgs};
use crate::nvrtc::Nvrtc;
use crate::ptx::PtxCompiler;
use crate::{CUDA_THREADS, DEFAULT_BLOCK_SIZE};
use op2_codegen::{
    CUDA_EMULATION_ENTRY, Cuda, DeviceOptions, DeviceUnit, Dialect, EMULATION_LAUNCH_FINISH,
    EMULATION_LAUNCH_STUB, EMULATION_SET_CONST, JitCompiler, emulation_source,
};
use op2_core::{Config, GeneratedUnit, Op2Error, Result};
use op2_device::DeviceMemory;
use op2_device::{Device, DeviceLimits, Entry, LaunchArg, LaunchShape};
use std::alloc::{Layout, alloc, dealloc};
use std::ffi::{c_char, c_int, c_uint, c_ulong, c_void};
use std::ptr::NonNull;
use std::sync::{Arc, Mutex};

/// Compiler flags of emulated units, after the host JIT's defaults: the unit is C++ (templates,
/// `extern "C"`), and needs no C++ runtime library.
const EMULATION_FLAGS: &[&str] = &["-x", "c++", "-fno-exceptions", "-fno-rtti"];

/// Whether the emulator also compiles every unit with NVRTC.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum NvrtcCheck {
    /// No: only the host compiler sees the units.
    Off,
    /// Yes, and a missing NVRTC makes the backend unusable (CI's check that every generated
    /// kernel compiles to PTX).
    Required,
}

/// Host memory standing in for device memory. Filled with `0xff` bytes when allocated (NaN, -1),
/// as device memory holds garbage: a kernel that reads data it was never given shows up.
pub struct HostBuffer {
    ptr: NonNull<u8>,
    layout: Layout,
}

// SAFETY: a plain heap allocation; kernels and copies reach it only under the emulator's lock or
// the runtime's locks, as device memory is reached on a GPU.
unsafe impl Send for HostBuffer {}
// SAFETY: as above.
unsafe impl Sync for HostBuffer {}

impl Drop for HostBuffer {
    fn drop(&mut self) {
        // SAFETY: allocated in `allocate` with this layout.
        unsafe { dealloc(self.ptr.as_ptr(), self.layout) }
    }
}

impl HostBuffer {
    /// A copy of `bytes` stays inside the buffer.
    fn fits(&self, bytes: usize, what: &str) -> Result<()> {
        if bytes <= self.layout.size() {
            return Ok(());
        }
        Err(Op2Error::Execution {
            backend: "cuda-emulator".into(),
            kernel: what.into(),
            reason: format!("{bytes} bytes into a buffer of {}", self.layout.size()),
        })
    }
}

impl GpuBuffer for HostBuffer {
    fn address(&self) -> u64 {
        self.ptr.as_ptr() as u64
    }
}

/// An emulated unit: the entry point of its host library, and the values of its Consts.
///
/// Units of the same source share one loaded library, and with it the storage of their
/// `__constant__` symbols; on a GPU every loaded module has its own. So each program keeps its own
/// Const values, and every launch copies them into the library first (launches run one at a time).
pub struct EmulatedProgram {
    entry: EntryFn,
    kernel: String,
    consts: Mutex<Vec<Option<Vec<u8>>>>,
}

type EntryFn = unsafe extern "C" fn(
    c_int,
    c_uint,
    c_uint,
    c_ulong,
    *mut *mut c_void,
    *mut c_char,
    c_int,
) -> c_int;

/// The emulated device.
pub struct EmulatedGpu {
    jit: JitCompiler,
    ptx: Option<PtxCompiler>,
    sync: bool,
    options: DeviceOptions,
}

/// Emulated launches share each library's scheduler state, so one runs at a time in a process.
static LAUNCH: Mutex<()> = Mutex::new(());

impl EmulatedGpu {
    /// The emulator, compiling with the configured host compiler, and with NVRTC as `check` says
    /// (for the configured architecture, else `compute_90`, the H100's).
    pub fn new(config: &Config, check: NvrtcCheck) -> Result<Self> {
        let unavailable = |reason: String| Op2Error::BackendUnavailable {
            name: "cuda-emulator".into(),
            reason,
        };
        let jit = JitCompiler::new(config, EMULATION_FLAGS)?;
        // The emulated CUDA is compiled as C++: a C compiler without its C++ front end (gcc
        // without g++) cannot run this backend.
        jit.probe().map_err(|e| {
            unavailable(format!(
                "the emulator compiles CUDA as C++ (install g++): {e}"
            ))
        })?;
        let ptx = match check {
            NvrtcCheck::Off => None,
            NvrtcCheck::Required => {
                let settings = crate::CudaSettings::from_config(config)?;
                let nvrtc = Nvrtc::get(settings.nvrtc.as_deref()).map_err(unavailable)?;
                let wanted = settings.arch.unwrap_or(90);
                let arch = nvrtc.arch_for(wanted).map_err(unavailable)?;
                Some(PtxCompiler::new(nvrtc, arch, config)?)
            }
        };
        let settings = crate::CudaSettings::from_config(config)?;
        Ok(EmulatedGpu {
            jit,
            ptx,
            sync: settings.sync,
            options: settings.device_options(),
        })
    }

    fn call(
        &self,
        program: &EmulatedProgram,
        what: i32,
        shape: LaunchShape,
        params: &mut [*mut c_void],
    ) -> Result<()> {
        let mut err = vec![0u8; 512];
        let _one_at_a_time = LAUNCH.lock().unwrap_or_else(|e| e.into_inner());
        let consts = program.consts.lock().unwrap_or_else(|e| e.into_inner());
        let mut status = 0;
        for (index, bytes) in consts.iter().enumerate() {
            if let Some(bytes) = bytes {
                let mut p = [bytes.as_ptr() as *mut c_void];
                // SAFETY: as below; `p[0]` points at the Const's bytes, as many as it holds.
                status = unsafe {
                    (program.entry)(
                        EMULATION_SET_CONST,
                        index as c_uint,
                        0,
                        0,
                        p.as_mut_ptr(),
                        err.as_mut_ptr() as *mut c_char,
                        err.len() as c_int,
                    )
                };
                if status != 0 {
                    break;
                }
            }
        }
        if status == 0 {
            // SAFETY: the entry point of a unit we generated; `params` points at values of the
            // types its kernels declare, in order, and `err` holds `err.len()` bytes.
            status = unsafe {
                (program.entry)(
                    what,
                    shape.groups,
                    shape.threads,
                    shape.local_bytes as c_ulong,
                    params.as_mut_ptr(),
                    err.as_mut_ptr() as *mut c_char,
                    err.len() as c_int,
                )
            };
        }
        if status == 0 {
            return Ok(());
        }
        let end = err.iter().position(|&b| b == 0).unwrap_or(err.len());
        Err(Op2Error::Execution {
            backend: "cuda-emulator".into(),
            kernel: program.kernel.clone(),
            reason: String::from_utf8_lossy(&err[..end]).into_owned(),
        })
    }
}

impl DeviceMemory for EmulatedGpu {
    type Buffer = HostBuffer;

    fn allocate(&self, bytes: usize) -> Result<HostBuffer> {
        let layout =
            Layout::from_size_align(bytes.max(1), 16).map_err(|e| Op2Error::Execution {
                backend: "cuda-emulator".into(),
                kernel: "device allocation".into(),
                reason: e.to_string(),
            })?;
        // SAFETY: a layout of non-zero size.
        let ptr = NonNull::new(unsafe { alloc(layout) }).ok_or_else(|| Op2Error::Execution {
            backend: "cuda-emulator".into(),
            kernel: "device allocation".into(),
            reason: format!("out of memory allocating {bytes} bytes"),
        })?;
        // SAFETY: freshly allocated, `layout.size()` bytes.
        unsafe { std::ptr::write_bytes(ptr.as_ptr(), 0xff, layout.size()) };
        Ok(HostBuffer { ptr, layout })
    }

    fn upload_at(&self, buffer: &HostBuffer, offset: usize, host: &[u8]) -> Result<()> {
        buffer.fits(offset.saturating_add(host.len()), "host-to-device copy")?;
        // SAFETY: in bounds (checked above); host and buffer never overlap.
        unsafe {
            std::ptr::copy_nonoverlapping(
                host.as_ptr(),
                buffer.ptr.as_ptr().add(offset),
                host.len(),
            )
        };
        Ok(())
    }

    fn download_at(&self, buffer: &HostBuffer, offset: usize, host: &mut [u8]) -> Result<()> {
        buffer.fits(offset.saturating_add(host.len()), "device-to-host copy")?;
        // SAFETY: as in `upload_at`.
        unsafe {
            std::ptr::copy_nonoverlapping(
                buffer.ptr.as_ptr().add(offset),
                host.as_mut_ptr(),
                host.len(),
            )
        };
        Ok(())
    }
}

impl Device for EmulatedGpu {
    type Program = EmulatedProgram;

    fn backend_name(&self) -> &'static str {
        "cuda-emulator"
    }

    fn device_name(&self) -> &str {
        "CUDA emulated on the host CPU"
    }

    fn dialect(&self) -> &dyn Dialect {
        &Cuda
    }

    fn limits(&self) -> DeviceLimits {
        // A GPU's, so plans and launches take the shapes they take there.
        DeviceLimits {
            max_threads: 1024,
            local_memory: 48 * 1024,
            private_per_group: None,
            // Each emulated thread runs on a 128 KiB stack of its own (the prelude's
            // OP2_EMU_STACK_BYTES); half of it stays for the kernel's own locals.
            private_per_item: 64 * 1024,
            planned_block: DEFAULT_BLOCK_SIZE,
            direct_threads: CUDA_THREADS,
            tree_reductions: true,
            wait_each_loop: self.sync,
            host_scheme: None,
        }
    }

    fn variants(&self) -> Vec<DeviceOptions> {
        vec![self.options.clone()]
    }

    /// NVRTC too when asked (the PTX is not run, only checked), then the host compiler under the
    /// emulation prelude.
    fn compile(&self, unit: &DeviceUnit) -> Result<Arc<EmulatedProgram>> {
        if let Some(ptx) = &self.ptx {
            ptx.ptx(unit)?;
        }
        let host = GeneratedUnit {
            source: emulation_source(unit),
            entry: CUDA_EMULATION_ENTRY.into(),
            kernel: unit.unit.kernel.clone(),
        };
        let f = self.jit.load(&host)?;
        Ok(Arc::new(EmulatedProgram {
            // SAFETY: the symbol is `op2_emu_entry`, defined with exactly this C signature.
            entry: unsafe { std::mem::transmute::<*const c_void, EntryFn>(f.as_ptr()) },
            kernel: unit.unit.kernel.clone(),
            consts: Mutex::new(Vec::new()),
        }))
    }

    fn set_consts(&self, program: &EmulatedProgram, consts: &[&[u8]]) -> Result<()> {
        // Kept with the program and copied into the library at each launch (see
        // `EmulatedProgram`).
        *program.consts.lock().unwrap_or_else(|e| e.into_inner()) =
            consts.iter().map(|c| Some(c.to_vec())).collect();
        Ok(())
    }

    fn launch(
        &self,
        program: &EmulatedProgram,
        entry: Entry,
        shape: LaunchShape,
        args: &[LaunchArg<'_, HostBuffer>],
    ) -> Result<()> {
        let what = match entry {
            Entry::Stub => EMULATION_LAUNCH_STUB,
            Entry::Finish => EMULATION_LAUNCH_FINISH,
        };
        let mut packed = PackedArgs::new(args);
        self.call(program, what, shape, &mut packed.pointers())
    }

    fn synchronize(&self) -> Result<()> {
        Ok(())
    }
}
