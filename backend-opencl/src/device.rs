//! Choosing an OpenCL device (`OP2_OPENCL_PLATFORM`, `OP2_OPENCL_DEVICE`, else the first with
//! double precision) and the device memory the data-state machine moves data through.

use op2_core::{Config, Op2Error, Result};
use op2_device::DeviceMemory;
use opencl3::command_queue::{
    CL_BLOCKING, CommandQueue, enqueue_read_buffer, enqueue_write_buffer,
};
use opencl3::context::Context;
use opencl3::device::{CL_DEVICE_TYPE_ALL, CL_DEVICE_TYPE_CPU, Device};
use opencl3::error_codes::ClError;
use opencl3::event::Event;
use opencl3::memory::{Buffer, CL_MEM_READ_WRITE, ClMem};
use opencl3::platform::get_platforms;
use opencl3::types::cl_mem;
use std::ffi::c_void;
use std::sync::{Arc, Mutex};

/// Errors from the OpenCL runtime while running `what`.
pub(crate) fn cl_err(what: &str) -> impl Fn(ClError) -> Op2Error + '_ {
    move |e| Op2Error::Driver {
        backend: "opencl".into(),
        kernel: what.into(),
        call: "an OpenCL call",
        source: Box::new(OpenClError(e)),
    }
}

/// An OpenCL error code, as an [`std::error::Error`] (the binding's type is not one).
#[derive(Debug)]
pub struct OpenClError(pub ClError);

impl OpenClError {
    /// The OpenCL status code (`CL_OUT_OF_RESOURCES` is -5, say).
    pub fn code(&self) -> i32 {
        self.0.0
    }
}

impl std::fmt::Display for OpenClError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "OpenCL error {} ({})", self.0.0, self.0)
    }
}

impl std::error::Error for OpenClError {}

fn unavailable(reason: String) -> Op2Error {
    Op2Error::BackendUnavailable {
        name: "opencl".into(),
        reason,
    }
}

/// The chosen device and what the backend needs to know about it.
pub struct ChosenDevice {
    /// The device.
    pub device: Device,
    /// Its name.
    pub name: String,
    /// Its platform's name and version, and the driver version (part of program cache keys).
    pub identity: String,
    /// Largest work-group.
    pub max_work_group: usize,
    /// `__local` memory per work-group, in bytes.
    pub local_mem: usize,
    /// Whether it is a CPU device (PoCL's, for one): work-items of a group run in sequence there.
    pub is_cpu: bool,
    /// Its compute units (cores, on a CPU device).
    pub compute_units: usize,
    /// Private memory a whole work-group may declare, where the device puts a group's private
    /// arrays in one place of fixed size (see [`CPU_PRIVATE_PER_GROUP`]); `None` elsewhere.
    pub private_per_group: Option<usize>,
}

/// Private memory of one work-group on CPU devices. PoCL runs a work-group on one thread and keeps
/// every work-item's private arrays that live across a barrier on that thread's stack (8 MiB):
/// measured, an arity-8 whole-row increment of dim 120 (7.5 MiB per 1,024-item group) ran and dim
/// 140 (8.75 MiB) crashed the process. A quarter of the stack leaves room for the kernel's own
/// locals, which the generator cannot see.
pub const CPU_PRIVATE_PER_GROUP: usize = 2 << 20;

/// Whether `which` (an index or part of a name, case-insensitive) selects item `index` named `name`.
fn selects(which: &str, index: usize, name: &str) -> bool {
    match which.parse::<usize>() {
        Ok(i) => i == index,
        Err(_) => name.to_lowercase().contains(&which.to_lowercase()),
    }
}

/// Picks the device the configuration asks for, or the first with double precision.
pub fn choose_device(config: &Config) -> Result<ChosenDevice> {
    // PoCL's platform and device discovery is not safe to run from several threads at once (tests
    // create runtimes in parallel and saw empty device lists): discover one at a time.
    static DISCOVERY: Mutex<()> = Mutex::new(());
    let _one_at_a_time = DISCOVERY.lock().unwrap_or_else(|e| e.into_inner());
    let platforms = get_platforms().map_err(|e| {
        unavailable(format!(
            "no OpenCL platform (is an ICD loader and driver installed? e.g. Debian's \
             ocl-icd-libopencl1 and pocl-opencl-icd): {e}"
        ))
    })?;
    if platforms.is_empty() {
        return Err(unavailable("no OpenCL platform is installed".into()));
    }
    let mut seen = Vec::new();
    let mut index = 0;
    for (p_index, platform) in platforms.iter().enumerate() {
        let p_name = platform.name().unwrap_or_default();
        if let Some(which) = config.setting("opencl_platform") {
            if !selects(which, p_index, &p_name) {
                continue;
            }
        }
        let ids = platform.get_devices(CL_DEVICE_TYPE_ALL).unwrap_or_default();
        for id in ids {
            let device = Device::new(id);
            let name = device.name().unwrap_or_default();
            let fp64 = device.double_fp_config().unwrap_or(0) != 0;
            seen.push(format!(
                "{index}: {name} ({p_name}){}",
                if fp64 { "" } else { ", no double precision" }
            ));
            let chosen = match config.setting("opencl_device") {
                Some(which) => selects(which, index, &name),
                None => fp64,
            };
            index += 1;
            if chosen {
                let identity = format!(
                    "{p_name} {} / {name} / {}",
                    platform.version().unwrap_or_default(),
                    device.driver_version().unwrap_or_default()
                );
                let is_cpu = device.dev_type().unwrap_or(0) & CL_DEVICE_TYPE_CPU != 0;
                return Ok(ChosenDevice {
                    max_work_group: device.max_work_group_size().unwrap_or(1).max(1),
                    local_mem: device.local_mem_size().unwrap_or(0) as usize,
                    is_cpu,
                    compute_units: (device.max_compute_units().unwrap_or(1) as usize).max(1),
                    private_per_group: is_cpu.then_some(CPU_PRIVATE_PER_GROUP),
                    device,
                    name,
                    identity,
                });
            }
        }
    }
    let wanted = match (
        config.setting("opencl_platform"),
        config.setting("opencl_device"),
    ) {
        (None, None) => "a device with double precision".to_string(),
        (p, d) => format!(
            "platform {:?}, device {:?}",
            p.unwrap_or("any"),
            d.unwrap_or("any with double precision")
        ),
    };
    Err(unavailable(format!(
        "no OpenCL device matches {wanted}; devices found: [{}]",
        seen.join("; ")
    )))
}

/// A device buffer.
pub struct ClBuffer(pub Buffer<u8>);

impl ClBuffer {
    /// The raw handle, for kernel arguments.
    pub fn raw(&self) -> cl_mem {
        self.0.get()
    }
}

/// Device memory of one context, moved through one in-order queue.
pub struct ClMemory {
    pub(crate) context: Arc<Context>,
    pub(crate) queue: Arc<CommandQueue>,
}

impl DeviceMemory for ClMemory {
    type Buffer = ClBuffer;

    fn allocate(&self, bytes: usize) -> Result<ClBuffer> {
        // SAFETY: no host pointer is passed; the size is positive.
        let b = unsafe {
            Buffer::<u8>::create(
                &self.context,
                CL_MEM_READ_WRITE,
                bytes.max(1),
                std::ptr::null_mut(),
            )
        }
        .map_err(cl_err("device allocation"))?;
        Ok(ClBuffer(b))
    }

    fn upload_at(&self, buffer: &ClBuffer, offset: usize, host: &[u8]) -> Result<()> {
        // SAFETY: a blocking write of `host.len()` bytes at `offset`, which the buffer holds
        // (callers allocate it with the carrier's size), from a live slice.
        unsafe {
            enqueue_write_buffer(
                self.queue.get(),
                buffer.raw(),
                CL_BLOCKING,
                offset,
                host.len(),
                host.as_ptr() as *const c_void,
                0,
                std::ptr::null(),
            )
        }
        .map(|event| drop(Event::new(event)))
        .map_err(|e| cl_err("host-to-device copy")(ClError(e)))
    }

    fn download_at(&self, buffer: &ClBuffer, offset: usize, host: &mut [u8]) -> Result<()> {
        // SAFETY: a blocking read of `host.len()` bytes at `offset` into a live slice; the
        // in-order queue runs it after every kernel enqueued before.
        unsafe {
            enqueue_read_buffer(
                self.queue.get(),
                buffer.raw(),
                CL_BLOCKING,
                offset,
                host.len(),
                host.as_mut_ptr() as *mut c_void,
                0,
                std::ptr::null(),
            )
        }
        .map(|event| drop(Event::new(event)))
        .map_err(|e| cl_err("device-to-host copy")(ClError(e)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn driver_failures_keep_the_opencl_error_as_their_source() {
        let e = cl_err("res_calc")(ClError(-5));
        assert!(matches!(e, Op2Error::Driver { ref kernel, .. } if kernel == "res_calc"));
        let source = std::error::Error::source(&e).expect("a source");
        let cl = source
            .downcast_ref::<OpenClError>()
            .expect("the OpenCL error");
        assert_eq!(cl.code(), -5);
        assert!(e.to_string().contains("-5"), "{e}");
    }
}
