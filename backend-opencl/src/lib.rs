//! backend-opencl: the OpenCL device backend. An OpenCL device (PoCL's CPU device in CI, any
//! GPU with double precision) implements [`op2_device::Device`]: buffers, programs built through
//! the compile cache, launches on one in-order queue; everything above that (plans, staging,
//! launches colour by colour, reductions, Consts, the device-data states) is
//! [`op2_device::DeviceBackend`]'s. Programs are written in the [`op2_codegen::OpenCl`] dialect:
//! the user's kernel with address-space qualifiers, Consts as hidden `__constant` parameters.

#![warn(missing_docs)]

mod device;
mod program;

pub use device::{
    CPU_PRIVATE_PER_GROUP, ChosenDevice, ClBuffer, ClMemory, OpenClError, choose_device,
};
pub use program::{BUILD_OPTIONS, Compiled, OPENCL_BINARIES, program_stats};

use device::cl_err;
use op2_codegen::{DeviceOptions, DeviceUnit, Dialect, OpenCl};
use op2_core::{Backend, BackendFactory, Config, Op2Error, Result, Setting, SettingKind};
use op2_device::{
    Device, DeviceBackend, DeviceLimits, DeviceMemory, Entry, LaunchArg, LaunchShape, Strategy,
};
use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::types::{cl_int, cl_mem};
use program::ProgramCache;
use std::sync::Arc;

/// Block (work-group) size of planned loops on GPUs unless `OP2_PART_SIZE` says otherwise: OP2's
/// usual GPU block.
pub const OPENCL_DEFAULT_BLOCK_SIZE: usize = 256;

/// Block size on CPU devices, where a work-group is a loop on one core and barriers cost a pass
/// over the group: Airfoil's res_calc on PoCL (2 cores, 50 iterations) took 40 ms per call with
/// 256-element blocks, 34.7 with 1024 and 76 with 64.
pub const OPENCL_CPU_BLOCK_SIZE: usize = 1024;

/// Work-group size of direct loops.
pub const OPENCL_DIRECT_WORK_GROUP: usize = 256;

/// Private memory one work-item may declare on a GPU (beyond it, drivers spill to slow memory or
/// fail); on CPU devices the group's budget bounds it.
const GPU_PRIVATE_PER_ITEM: usize = 512 * 1024;

/// How loops run on an OpenCL device (`OP2_OPENCL_SCHEME`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Scheme {
    /// The host scheme: one work-item per group runs a chunk or a coloured plan block in turn,
    /// straight from global memory (the default on CPU devices, where a work-group is a loop on
    /// one core and staging only copies memory to memory).
    Host,
    /// One element per work-item, indirect data staged in local memory per plan block (OP2's
    /// GPU scheme; the default on GPUs).
    Staged,
}

impl Scheme {
    /// The scheme `config` asks for on `chosen`: the `opencl_scheme` setting, else the device's
    /// default.
    pub fn from_config(config: &Config, chosen: &ChosenDevice) -> Result<Self> {
        match config
            .setting("opencl_scheme")
            .map(|v| v.trim().to_ascii_lowercase())
            .as_deref()
        {
            None | Some("auto") => Ok(if chosen.is_cpu {
                Scheme::Host
            } else {
                Scheme::Staged
            }),
            Some("host") => Ok(Scheme::Host),
            Some("staged") => Ok(Scheme::Staged),
            Some(v) => Err(Op2Error::Config {
                key: "opencl_scheme".into(),
                value: v.into(),
                reason: "expected `host`, `staged` or `auto`".into(),
            }),
        }
    }
}

/// An OpenCL device: the chosen device, a context with one in-order queue, its program cache.
pub struct OpenClDevice {
    chosen: ChosenDevice,
    scheme: Scheme,
    memory: ClMemory,
    programs: ProgramCache,
}

/// The OpenCL backend.
pub type OpenClBackend = DeviceBackend<OpenClDevice>;

impl OpenClDevice {
    /// The configured device (`opencl_platform`, `opencl_device`), else the first device with
    /// double precision; [`Op2Error::BackendUnavailable`] when there is none.
    pub fn new(config: &Config) -> Result<Self> {
        let chosen = choose_device(config)?;
        let scheme = Scheme::from_config(config, &chosen)?;
        let context =
            Context::from_device(&chosen.device).map_err(|e| Op2Error::BackendUnavailable {
                name: "opencl".into(),
                reason: format!("could not create a context on {}: {e}", chosen.name),
            })?;
        #[allow(deprecated)] // clCreateCommandQueue is the OpenCL 1.2 call, which every driver has.
        let queue = CommandQueue::create_default(&context, 0).map_err(|e| {
            Op2Error::BackendUnavailable {
                name: "opencl".into(),
                reason: format!("could not create a queue on {}: {e}", chosen.name),
            }
        })?;
        Ok(OpenClDevice {
            programs: ProgramCache::new(config)?,
            memory: ClMemory {
                context: Arc::new(context),
                queue: Arc::new(queue),
            },
            chosen,
            scheme,
        })
    }

    /// How its loops run.
    pub fn scheme(&self) -> Scheme {
        self.scheme
    }

    /// The chosen device.
    pub fn chosen(&self) -> &ChosenDevice {
        &self.chosen
    }
}

impl DeviceMemory for OpenClDevice {
    type Buffer = ClBuffer;

    fn allocate(&self, bytes: usize) -> Result<ClBuffer> {
        self.memory.allocate(bytes)
    }

    fn upload_at(&self, buffer: &ClBuffer, offset: usize, host: &[u8]) -> Result<()> {
        self.memory.upload_at(buffer, offset, host)
    }

    fn download_at(&self, buffer: &ClBuffer, offset: usize, host: &mut [u8]) -> Result<()> {
        self.memory.download_at(buffer, offset, host)
    }
}

impl Device for OpenClDevice {
    type Program = Compiled;

    fn backend_name(&self) -> &'static str {
        "opencl"
    }

    fn device_name(&self) -> &str {
        &self.chosen.name
    }

    fn dialect(&self) -> &dyn Dialect {
        &OpenCl
    }

    fn limits(&self) -> DeviceLimits {
        let c = &self.chosen;
        DeviceLimits {
            max_threads: c.max_work_group,
            local_memory: c.local_mem,
            private_per_group: c.private_per_group,
            private_per_item: c.private_per_group.unwrap_or(GPU_PRIVATE_PER_ITEM),
            planned_block: if c.is_cpu {
                OPENCL_CPU_BLOCK_SIZE
            } else {
                OPENCL_DEFAULT_BLOCK_SIZE
            },
            direct_threads: OPENCL_DIRECT_WORK_GROUP,
            tree_reductions: !c.is_cpu,
            // Each loop's time is its own in the timing table.
            wait_each_loop: true,
            host_scheme: (self.scheme == Scheme::Host).then_some(c.compute_units),
        }
    }

    /// Qualified parameters first; private copies for kernels that keep a parameter in an
    /// unqualified pointer of their own (OpenCL C 1.2 has no generic address space); Consts
    /// compiled in for kernels whose helper functions use them (hidden parameters reach the
    /// kernel only).
    fn variants(&self) -> Vec<DeviceOptions> {
        let tree_reductions = !self.chosen.is_cpu;
        [
            (false, None),
            (true, None),
            (false, Some(Vec::new())),
            (true, Some(Vec::new())),
        ]
        .into_iter()
        .map(|(private_copies, baked_consts)| DeviceOptions {
            private_copies,
            baked_consts,
            tree_reductions,
            // OpenCL takes local memory as parameters; the stubs stage no direct rows there.
            stage_direct_rows: false,
            block_atomics: false,
            atomic_reductions: false,
        })
        .collect()
    }

    fn compile(&self, unit: &DeviceUnit) -> Result<Arc<Compiled>> {
        self.programs.load(&self.memory.context, &self.chosen, unit)
    }

    fn max_threads(&self, program: &Compiled) -> usize {
        program.max_work_group
    }

    fn launch(
        &self,
        program: &Compiled,
        entry: Entry,
        shape: LaunchShape,
        args: &[LaunchArg<'_, ClBuffer>],
    ) -> Result<()> {
        let kernel = match entry {
            Entry::Stub => &program.stub,
            Entry::Finish => program.finish.as_ref().ok_or_else(|| Op2Error::Execution {
                backend: "opencl".into(),
                kernel: "finish".into(),
                reason: "internal: a program without a final reduction was asked for one".into(),
            })?,
        };
        let kernel = kernel.lock().unwrap_or_else(|e| e.into_inner());
        let err = cl_err("launch");
        for (idx, a) in args.iter().enumerate() {
            let idx = idx as u32;
            // SAFETY: each value has the type the generated kernel declares for this position.
            unsafe {
                match a {
                    LaunchArg::Int(v) => kernel.set_arg(idx, &(*v as cl_int)),
                    LaunchArg::Buffer(b) => kernel.set_arg(idx, &(b.raw() as cl_mem)),
                    LaunchArg::Local(bytes) => kernel.set_arg_local_buffer(idx, *bytes),
                }
            }
            .map_err(&err)?;
        }
        let local = shape.threads as usize;
        let global = shape.groups as usize * local;
        // SAFETY: every argument was set above; sizes are positive and local divides global.
        let event = unsafe {
            self.memory.queue.enqueue_nd_range_kernel(
                kernel.get(),
                1,
                std::ptr::null(),
                &global,
                &local,
                &[],
            )
        }
        .map_err(&err)?;
        drop(event);
        Ok(())
    }

    fn synchronize(&self) -> Result<()> {
        self.memory.queue.finish().map_err(cl_err("synchronize"))
    }
}

fn create(config: &Config) -> Result<Box<dyn Backend>> {
    Ok(Box::new(DeviceBackend::new(
        OpenClDevice::new(config)?,
        config,
        Strategy::Colour,
    )))
}

op2_core::register_backend!(BackendFactory {
    name: "opencl",
    feature: "opencl",
    description: "generated OpenCL C: plan blocks staged in local memory on GPUs, the host scheme on CPU devices (OP2_OPENCL_DEVICE, OP2_OPENCL_SCHEME)",
    create,
    settings: SETTINGS,
});

/// The OpenCL backend's own settings.
pub const SETTINGS: &[Setting] = &[
    Setting {
        name: "opencl_platform",
        env: "OP2_OPENCL_PLATFORM",
        kind: SettingKind::Text,
        default: "any",
        doc: "the OpenCL platform, by index or part of its name",
    },
    Setting {
        name: "opencl_device",
        env: "OP2_OPENCL_DEVICE",
        kind: SettingKind::Text,
        default: "the first with double precision",
        doc: "the OpenCL device, by index or part of its name",
    },
    Setting {
        name: "opencl_scheme",
        env: "OP2_OPENCL_SCHEME",
        kind: SettingKind::OneOf(&["auto", "host", "staged"]),
        default: "auto: host on CPU devices, staged on GPUs",
        doc: "how loops run: `host` (a work-item runs a chunk or a coloured block of elements \
              from global memory) or `staged` (an element per work-item, plan blocks staged in \
              local memory)",
    },
];

/// Referenced by the `op2` facade so that the linker keeps this crate, and with it the registration.
#[doc(hidden)]
pub static LINKED: &str = "backend-opencl";
