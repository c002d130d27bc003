//! The real GPU through the CUDA driver API (cudarc, libcuda opened at run time). Everything runs
//! on the context's legacy default stream, so launches, copies and frees are ordered without
//! events; downloads and large uploads wait for the launches queued before them, small uploads
//! (a Global's value) are queued behind them.

use crate::gpu::{GpuBuffer, PackedArgs};
use crate::nvrtc::Nvrtc;
use crate::ptx::PtxCompiler;
use crate::{CUDA_THREADS, CudaSettings, DEFAULT_BLOCK_SIZE};
use cudarc::driver::sys::{self, CUdevice_attribute};
use cudarc::driver::{CudaContext, CudaFunction, CudaModule, CudaStream, DevicePtrMut, result};
use cudarc::nvrtc::Ptx;
use op2_codegen::{Cuda, DEVICE_ENTRY, DeviceOptions, DeviceUnit, Dialect, FINISH_ENTRY};
use op2_core::{Config, Op2Error, Result};
use op2_device::DeviceMemory;
use op2_device::{Device, DeviceLimits, Entry, LaunchArg, LaunchShape};
use std::sync::Arc;

fn unavailable(reason: String) -> Op2Error {
    Op2Error::BackendUnavailable {
        name: "cuda".into(),
        reason,
    }
}

/// A driver error while doing `what`.
fn driver_err(what: &str) -> impl Fn(result::DriverError) -> Op2Error + '_ {
    move |e| Op2Error::Driver {
        backend: "cuda".into(),
        kernel: what.into(),
        call: "a CUDA driver call",
        source: Box::new(e),
    }
}

/// Uploads of at most this many bytes are queued in stream order (see `upload_at`).
const STREAM_ORDERED_UPLOAD: usize = 64 * 1024;

/// A GPU chosen by `OP2_CUDA_DEVICE`.
pub struct DriverGpu {
    ctx: Arc<CudaContext>,
    stream: Arc<CudaStream>,
    name: String,
    limits: DeviceLimits,
    async_alloc: bool,
    ptx: PtxCompiler,
    options: DeviceOptions,
}

/// A device allocation, freed in stream order.
pub struct DriverBuffer {
    ptr: sys::CUdeviceptr,
    ctx: Arc<CudaContext>,
    async_alloc: bool,
}

impl GpuBuffer for DriverBuffer {
    fn address(&self) -> u64 {
        self.ptr
    }
}

impl Drop for DriverBuffer {
    fn drop(&mut self) {
        if self.ctx.bind_to_thread().is_err() {
            return;
        }
        // SAFETY: allocated by this context and freed once; stream-ordered frees wait for the
        // launches queued before them.
        let _ = unsafe {
            if self.async_alloc {
                result::free_async(self.ptr, std::ptr::null_mut())
            } else {
                result::free_sync(self.ptr)
            }
        };
    }
}

/// A loaded module (one per loop and runtime: each has its own `__constant__` storage), its
/// kernels and its Consts' symbols.
pub struct DriverProgram {
    module: Arc<CudaModule>,
    stub: CudaFunction,
    finish: Option<CudaFunction>,
    const_symbols: Vec<String>,
}

impl DriverGpu {
    /// The configured GPU, or [`Op2Error::BackendUnavailable`] with the reason: no driver, no
    /// device, no NVRTC. Never panics (cudarc does when libcuda is missing, so it is probed first).
    pub fn new(config: &Config) -> Result<Self> {
        // SAFETY: only tries to open the library.
        if !unsafe { sys::is_culib_present() } {
            return Err(unavailable(
                "no NVIDIA driver: libcuda.so (the CUDA driver library) was not found".into(),
            ));
        }
        result::init().map_err(|e| unavailable(format!("cuInit failed: {e:?}")))?;
        let count = result::device::get_count()
            .map_err(|e| unavailable(format!("counting devices failed: {e:?}")))?;
        let settings = CudaSettings::from_config(config)?;
        let ordinal = settings.device;
        if ordinal >= count.max(0) as usize {
            return Err(unavailable(format!(
                "device {ordinal} asked for (OP2_CUDA_DEVICE), {count} CUDA device(s) present"
            )));
        }
        let nvrtc = Nvrtc::get(settings.nvrtc.as_deref()).map_err(unavailable)?;
        let ctx = CudaContext::new(ordinal)
            .map_err(|e| unavailable(format!("no context on device {ordinal}: {e:?}")))?;
        let name = ctx
            .name()
            .unwrap_or_else(|_| format!("CUDA device {ordinal}"));
        let attr = |a| ctx.attribute(a).unwrap_or(0).max(0) as usize;
        let cc = (
            attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR),
            attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR),
        );
        let limits = DeviceLimits {
            max_threads: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
                .max(32),
            local_memory: attr(CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)
                .max(16 * 1024),
            private_per_group: None,
            // CUDA's limit of local memory per thread on every architecture since Fermi.
            private_per_item: 512 * 1024,
            planned_block: DEFAULT_BLOCK_SIZE,
            direct_threads: CUDA_THREADS,
            tree_reductions: true,
            wait_each_loop: settings.sync,
            host_scheme: None,
        };
        let wanted = settings.arch.unwrap_or((cc.0 * 10 + cc.1) as i32);
        let arch = nvrtc.arch_for(wanted).map_err(unavailable)?;
        let stream = ctx.default_stream();
        Ok(DriverGpu {
            name: format!("{name} (compute capability {}.{})", cc.0, cc.1),
            async_alloc: ctx.has_async_alloc(),
            ptx: PtxCompiler::new(nvrtc, arch, config)?,
            options: settings.device_options(),
            limits,
            ctx,
            stream,
        })
    }

    fn bind(&self, what: &str) -> Result<()> {
        self.ctx.bind_to_thread().map_err(driver_err(what))
    }

    /// Device-to-device copy bandwidth in GB/s (bytes read plus bytes written per second), the
    /// best of `repeats` copies of `bytes` bytes: the ceiling a memory-bound loop can approach.
    pub fn copy_bandwidth(&self, bytes: usize, repeats: usize) -> Result<f64> {
        self.bind("bandwidth test")?;
        let a = self.allocate(bytes)?;
        let b = self.allocate(bytes)?;
        let mut best = f64::MAX;
        for _ in 0..repeats.max(1) {
            self.synchronize()?;
            let t = std::time::Instant::now();
            // SAFETY: two live allocations of `bytes` bytes each.
            unsafe { result::memcpy_dtod_async(b.ptr, a.ptr, bytes, std::ptr::null_mut()) }
                .map_err(driver_err("bandwidth test"))?;
            self.synchronize()?;
            best = best.min(t.elapsed().as_secs_f64());
        }
        Ok(2.0 * bytes as f64 / best / 1e9)
    }
}

impl DeviceMemory for DriverGpu {
    type Buffer = DriverBuffer;

    fn allocate(&self, bytes: usize) -> Result<DriverBuffer> {
        self.bind("device allocation")?;
        // SAFETY: a positive size; the pointer is freed by `DriverBuffer`'s drop.
        let ptr = unsafe {
            if self.async_alloc {
                result::malloc_async(std::ptr::null_mut(), bytes.max(1))
            } else {
                result::malloc_sync(bytes.max(1))
            }
        }
        .map_err(driver_err("device allocation"))?;
        Ok(DriverBuffer {
            ptr,
            ctx: self.ctx.clone(),
            async_alloc: self.async_alloc,
        })
    }

    fn upload_at(&self, buffer: &DriverBuffer, offset: usize, host: &[u8]) -> Result<()> {
        self.bind("host-to-device copy")?;
        let dst = buffer.ptr + offset as u64;
        // A synchronous copy from pageable memory first waits for everything queued (the
        // driver's documented behaviour), so setting a Global between two loops (Airfoil's
        // `rms` before each `update`) left the GPU idle until the host queued the next loop.
        // Small copies go in stream order instead: from pageable memory the driver stages the
        // bytes before it returns (or waits, as the synchronous copy does), so the host's
        // buffer may change afterwards. Large ones (whole Dats) keep the synchronous copy.
        // SAFETY: the buffer holds at least `offset + host.len()` bytes (callers allocate it
        // so); `host` is pageable memory, never registered with the driver.
        unsafe {
            if host.len() <= STREAM_ORDERED_UPLOAD {
                result::memcpy_htod_async(dst, host, std::ptr::null_mut())
            } else {
                result::memcpy_htod_sync(dst, host)
            }
        }
        .map_err(driver_err("host-to-device copy"))
    }

    fn download_at(&self, buffer: &DriverBuffer, offset: usize, host: &mut [u8]) -> Result<()> {
        self.bind("device-to-host copy")?;
        // SAFETY: as in `upload_at`; the copy follows every launch queued before it.
        unsafe { result::memcpy_dtoh_sync(host, buffer.ptr + offset as u64) }
            .map_err(driver_err("device-to-host copy"))
    }
}

impl Device for DriverGpu {
    type Program = DriverProgram;

    fn backend_name(&self) -> &'static str {
        "cuda"
    }

    fn device_name(&self) -> &str {
        &self.name
    }

    fn dialect(&self) -> &dyn Dialect {
        &Cuda
    }

    fn limits(&self) -> DeviceLimits {
        self.limits
    }

    fn variants(&self) -> Vec<DeviceOptions> {
        vec![self.options.clone()]
    }

    /// NVRTC compiles the unit to PTX (cached), and the driver loads it as a module of its own.
    fn compile(&self, unit: &DeviceUnit) -> Result<Arc<DriverProgram>> {
        let ptx = self.ptx.ptx(unit)?;
        let kernel = unit.unit.kernel.as_str();
        self.bind(kernel)?;
        let module = self
            .ctx
            .load_module(Ptx::from_src(ptx.to_string()))
            .map_err(driver_err(kernel))?;
        let stub = module
            .load_function(DEVICE_ENTRY)
            .map_err(driver_err(kernel))?;
        let finish = match unit.finish_params {
            Some(_) => Some(
                module
                    .load_function(FINISH_ENTRY)
                    .map_err(driver_err(kernel))?,
            ),
            None => None,
        };
        Ok(Arc::new(DriverProgram {
            module,
            stub,
            finish,
            const_symbols: unit.const_symbols.clone(),
        }))
    }

    /// Copies each Const into its `__constant__` symbol of the program's module.
    fn set_consts(&self, program: &DriverProgram, consts: &[&[u8]]) -> Result<()> {
        for (name, bytes) in program.const_symbols.iter().zip(consts) {
            self.bind(name)?;
            let mut symbol = program
                .module
                .get_global(name, &self.stream)
                .map_err(driver_err(name))?;
            if symbol.len() != bytes.len() {
                return Err(Op2Error::Execution {
                    backend: "cuda".into(),
                    kernel: name.into(),
                    reason: format!(
                        "the __constant__ symbol holds {} bytes, the Const {}",
                        symbol.len(),
                        bytes.len()
                    ),
                });
            }
            let (ptr, _sync) = symbol.device_ptr_mut(&self.stream);
            // SAFETY: the symbol holds `bytes.len()` bytes (checked above).
            unsafe { result::memcpy_htod_sync(ptr, bytes) }.map_err(driver_err(name))?;
        }
        Ok(())
    }

    fn launch(
        &self,
        program: &DriverProgram,
        entry: Entry,
        shape: LaunchShape,
        args: &[LaunchArg<'_, DriverBuffer>],
    ) -> Result<()> {
        let f = match entry {
            Entry::Stub => &program.stub,
            Entry::Finish => program.finish.as_ref().ok_or_else(|| Op2Error::Execution {
                backend: "cuda".into(),
                kernel: FINISH_ENTRY.into(),
                reason: "the unit has no final reduction kernel".into(),
            })?,
        };
        self.bind("kernel launch")?;
        let mut packed = PackedArgs::new(args);
        let mut ptrs = packed.pointers();
        // SAFETY: `args` match the kernel's parameters in number and type (the generator's
        // parameter list), device pointers are live allocations, and the shape is within the
        // device's limits (the backend sizes it from them).
        unsafe {
            result::launch_kernel(
                f.cu_function(),
                (shape.groups, 1, 1),
                (shape.threads, 1, 1),
                shape.local_bytes,
                std::ptr::null_mut(),
                &mut ptrs,
            )
        }
        .map_err(driver_err("kernel launch"))
    }

    fn synchronize(&self) -> Result<()> {
        self.bind("synchronize")?;
        result::ctx::synchronize().map_err(driver_err("synchronize"))
    }
}
