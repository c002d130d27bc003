//! Building OpenCL programs once, through the compile cache ([`op2_codegen::CompileCache`]): program
//! binaries keyed by the source, the device and driver identity and the build options.

use crate::device::{ChosenDevice, cl_err};
use op2_codegen::{
    ArtefactKind, CacheSource, CacheStats, CompileCache, DEVICE_ENTRY, DeviceUnit, FINISH_ENTRY,
    cache_stats, private_memory,
};
use op2_core::{Config, Op2Error, Result};
use opencl3::context::Context;
use opencl3::kernel::Kernel;
use opencl3::program::Program;
use std::path::Path;
use std::sync::{Arc, Mutex};

/// Build options of every program: OpenCL C 1.2 (what PoCL and most drivers offer).
/// Floating-point contraction is switched off in the source, as the host backends do with
/// `-ffp-contract=off`, so kernels evaluate as written on every device.
pub const BUILD_OPTIONS: &str = "-cl-std=CL1.2";

/// A built program's kernels, ready to launch.
pub struct Compiled {
    /// The stub; setting arguments and enqueueing must not interleave between threads.
    pub stub: Mutex<Kernel>,
    /// The final reduction, when the loop has one.
    pub finish: Option<Mutex<Kernel>>,
    /// Largest work-group the stub can run with on this device.
    pub max_work_group: usize,
    _program: Program,
}

/// OpenCL program binaries in the compile cache.
pub const OPENCL_BINARIES: ArtefactKind = ArtefactKind {
    name: "opencl",
    subdir: "opencl",
    source_ext: "cl",
    artefact_ext: "bin",
};

/// Program cache counters of this process, all OpenCL backends together.
pub fn program_stats() -> CacheStats {
    cache_stats(OPENCL_BINARIES.name)
}

/// The program caches of one backend (programs belong to its context, so the memory layer is its
/// own).
pub struct ProgramCache {
    cache: CompileCache<Arc<Compiled>>,
}

impl ProgramCache {
    /// Caches under `<cache dir>/opencl`.
    pub fn new(config: &Config) -> Result<Self> {
        Ok(ProgramCache {
            cache: CompileCache::new(
                OPENCL_BINARIES,
                &config.cache_dir,
                config.dump_gencode.as_deref(),
                private_memory(),
            )?,
        })
    }

    /// The cache key of a program on a device.
    pub fn key(&self, device: &ChosenDevice, source: &str) -> String {
        self.cache
            .key(&[device.identity.as_str(), BUILD_OPTIONS], source)
    }

    /// The unit's kernels, built only when neither cache has the program.
    pub fn load(
        &self,
        context: &Context,
        device: &ChosenDevice,
        unit: &DeviceUnit,
    ) -> Result<Arc<Compiled>> {
        let source = CacheSource {
            kernel: &unit.unit.kernel,
            text: &unit.unit.source,
        };
        let kernels = |program: Program| -> Result<Arc<Compiled>> {
            let kernel =
                |entry: &str| Kernel::create(&program, entry).map_err(cl_err(&unit.unit.kernel));
            let stub = kernel(DEVICE_ENTRY)?;
            let finish = match unit.finish_params {
                Some(_) => Some(Mutex::new(kernel(FINISH_ENTRY)?)),
                None => None,
            };
            let max_work_group = stub
                .get_work_group_size(device.device.id())
                .unwrap_or(device.max_work_group)
                .clamp(1, device.max_work_group);
            Ok(Arc::new(Compiled {
                stub: Mutex::new(stub),
                finish,
                max_work_group,
                _program: program,
            }))
        };
        self.cache.get(
            &self.key(device, &unit.unit.source),
            &source,
            |src| {
                let program = build(context, device, unit, src)?;
                let binary = program
                    .get_binaries()
                    .ok()
                    .and_then(|mut v| v.pop())
                    .filter(|b| !b.is_empty())
                    .ok_or_else(|| Op2Error::Load {
                        path: src.to_path_buf(),
                        reason: format!("{} returned no program binary", device.name),
                    })?;
                Ok((binary, Some(kernels(program)?)))
            },
            |_, binary| {
                let program =
                    Program::create_and_build_from_binary(context, &[binary], BUILD_OPTIONS)
                        .map_err(|e| Op2Error::Load {
                            path: src_of(self, device, unit),
                            reason: format!("program binary does not build: {e}"),
                        })?;
                kernels(program)
            },
        )
    }
}

/// Where a unit's source is kept, for messages.
fn src_of(cache: &ProgramCache, device: &ChosenDevice, unit: &DeviceUnit) -> std::path::PathBuf {
    cache
        .cache
        .source_path(&cache.key(device, &unit.unit.source))
}

/// Builds the kept source `src` for the device.
fn build(
    context: &Context,
    device: &ChosenDevice,
    unit: &DeviceUnit,
    src: &Path,
) -> Result<Program> {
    Program::create_and_build_from_source(context, &unit.unit.source, BUILD_OPTIONS).map_err(
        |log| Op2Error::Compile {
            kernel: unit.unit.kernel.clone(),
            cc: format!("the OpenCL C compiler of {}", device.name),
            message: log,
            source_path: src.to_path_buf(),
        },
    )
}
