//! Building OpenCL programs once, through the compile cache ([`op2_codegen::CompileCache`]): program
//! binaries keyed by the source, the device and driver identity and the build options.

use crate::device::{ChosenDevice, cl_err};
use op2_codegen::{
    ArtefactKind, CacheSource, CacheStats, CompileCache, OpenClUnit, StubParam, cache_stats,
    private_memory, write_atomically,
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

/// A built program's stub, ready to launch.
pub struct Compiled {
    /// The stub; setting arguments and enqueueing must not interleave between threads.
    pub kernel: Mutex<Kernel>,
    /// Its parameters, in order.
    pub params: Vec<StubParam>,
    /// Largest work-group the stub can run with on this device.
    pub max_work_group: usize,
    /// Private memory each work-item of the stub declares.
    pub private_bytes: usize,
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

    /// Compiles the unit's source without building it for the device (the OpenCL front end only),
    /// so that kernels that do not compile fail at `par_loop` with the compiler's message.
    pub fn check(&self, context: &Context, device: &ChosenDevice, unit: &OpenClUnit) -> Result<()> {
        let key = self.key(device, &unit.unit.source);
        // A marker file records sources that compiled, so later processes skip the check.
        let checked = self.cache.dir().join(format!("{key}.ok"));
        if checked.exists() {
            return Ok(());
        }
        let mut program = Program::create_from_source(context, &unit.unit.source)
            .map_err(cl_err(&unit.unit.kernel))?;
        if program
            .compile(context.devices(), BUILD_OPTIONS, &[], &[])
            .is_err()
        {
            let log = program
                .get_build_log(device.device.id())
                .unwrap_or_else(|e| format!("(no build log: {e})"));
            let src = self.cache.keep_source(
                &key,
                &CacheSource {
                    kernel: &unit.unit.kernel,
                    text: &unit.unit.source,
                },
            )?;
            return Err(Op2Error::Compile {
                kernel: unit.unit.kernel.clone(),
                cc: format!("the OpenCL C compiler of {}", device.name),
                message: log,
                source_path: src,
            });
        }
        // Without the marker the next process only checks again.
        let _ = write_atomically(&checked, b"");
        Ok(())
    }

    /// The unit's stub, built only when neither cache has it.
    pub fn load(
        &self,
        context: &Context,
        device: &ChosenDevice,
        unit: &OpenClUnit,
    ) -> Result<Arc<Compiled>> {
        let source = CacheSource {
            kernel: &unit.unit.kernel,
            text: &unit.unit.source,
        };
        self.cache.get(
            &self.key(device, &unit.unit.source),
            &source,
            |src| build(context, device, unit, src),
            |_, binary| {
                let program =
                    Program::create_and_build_from_binary(context, &[binary], BUILD_OPTIONS)
                        .map_err(|e| Op2Error::Load {
                            path: src_of(self, device, unit),
                            reason: format!("program binary does not build: {e}"),
                        })?;
                let kernel = Kernel::create(&program, &unit.unit.entry)
                    .map_err(cl_err(&unit.unit.kernel))?;
                let max_work_group = kernel
                    .get_work_group_size(device.device.id())
                    .unwrap_or(device.max_work_group)
                    .clamp(1, device.max_work_group);
                Ok(Arc::new(Compiled {
                    kernel: Mutex::new(kernel),
                    params: unit.params.clone(),
                    max_work_group,
                    private_bytes: unit.private_bytes,
                    _program: program,
                }))
            },
        )
    }
}

/// Where a unit's source is kept, for messages.
fn src_of(cache: &ProgramCache, device: &ChosenDevice, unit: &OpenClUnit) -> std::path::PathBuf {
    cache
        .cache
        .source_path(&cache.key(device, &unit.unit.source))
}

/// Builds the kept source `src` for the device and returns the program binary.
fn build(
    context: &Context,
    device: &ChosenDevice,
    unit: &OpenClUnit,
    src: &Path,
) -> Result<Vec<u8>> {
    let program = Program::create_and_build_from_source(context, &unit.unit.source, BUILD_OPTIONS)
        .map_err(|log| Op2Error::Compile {
            kernel: unit.unit.kernel.clone(),
            cc: format!("the OpenCL C compiler of {}", device.name),
            message: log,
            source_path: src.to_path_buf(),
        })?;
    program
        .get_binaries()
        .ok()
        .and_then(|mut v| v.pop())
        .filter(|b| !b.is_empty())
        .ok_or_else(|| Op2Error::Load {
            path: src.to_path_buf(),
            reason: format!("{} returned no program binary", device.name),
        })
}
