//! Building OpenCL programs once: a memory cache, and a disk cache of program binaries keyed like
//! the host JIT cache (source, device and driver identity, build options).

use crate::device::{ChosenDevice, cl_err};
use op2_codegen::{OpenClUnit, StubParam, dump_source, write_atomically};
use op2_core::{Config, Op2Error, Result};
use opencl3::context::Context;
use opencl3::kernel::Kernel;
use opencl3::program::Program;
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
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

/// Counters of the program caches.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct ProgramStats {
    /// Programs built from source.
    pub built: u64,
    /// Programs built from a cached binary.
    pub from_disk: u64,
    /// Programs found in memory.
    pub from_memory: u64,
}

static BUILT: AtomicU64 = AtomicU64::new(0);
static FROM_DISK: AtomicU64 = AtomicU64::new(0);
static FROM_MEMORY: AtomicU64 = AtomicU64::new(0);

/// Program cache counters of this process, all OpenCL backends together.
pub fn program_stats() -> ProgramStats {
    ProgramStats {
        built: BUILT.load(Ordering::Relaxed),
        from_disk: FROM_DISK.load(Ordering::Relaxed),
        from_memory: FROM_MEMORY.load(Ordering::Relaxed),
    }
}

/// The program caches of one backend.
pub struct ProgramCache {
    dir: PathBuf,
    dump: Option<PathBuf>,
    memory: Mutex<HashMap<String, Arc<Compiled>>>,
}

fn io(context: &'static str, path: &Path, source: std::io::Error) -> Op2Error {
    Op2Error::Io {
        context,
        path: path.to_path_buf(),
        source,
    }
}

impl ProgramCache {
    /// Caches under `<cache dir>/opencl`.
    pub fn new(config: &Config) -> Self {
        ProgramCache {
            dir: config.cache_dir.join("opencl"),
            dump: config.dump_gencode.clone(),
            memory: Mutex::new(HashMap::new()),
        }
    }

    /// The cache key of a program on a device.
    pub fn key(device: &ChosenDevice, source: &str) -> String {
        let mut h = Sha256::new();
        for part in [
            "op2-rs opencl v1",
            device.identity.as_str(),
            BUILD_OPTIONS,
            source,
        ] {
            h.update(part.as_bytes());
            h.update([0]);
        }
        h.finalize().iter().map(|b| format!("{b:02x}")).collect()
    }

    /// Compiles the unit's source without building it for the device (the OpenCL front end only),
    /// so that kernels that do not compile fail at `par_loop` with the compiler's message.
    pub fn check(&self, context: &Context, device: &ChosenDevice, unit: &OpenClUnit) -> Result<()> {
        let key = Self::key(device, &unit.unit.source);
        // A marker file records sources that compiled, so later processes skip the check.
        let checked = self.dir.join(format!("{key}.ok"));
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
            fs::create_dir_all(&self.dir)
                .map_err(|e| io("creating the cache directory", &self.dir, e))?;
            let src = self.dir.join(format!("{key}.cl"));
            write_atomically(&src, unit.unit.source.as_bytes())?;
            return Err(Op2Error::Compile {
                kernel: unit.unit.kernel.clone(),
                cc: format!("the OpenCL C compiler of {}", device.name),
                message: log,
                source_path: src,
            });
        }
        fs::create_dir_all(&self.dir)
            .map_err(|e| io("creating the cache directory", &self.dir, e))?;
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
        let key = Self::key(device, &unit.unit.source);
        if let Some(c) = self
            .memory
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            FROM_MEMORY.fetch_add(1, Ordering::Relaxed);
            return Ok(c.clone());
        }
        if let Some(dir) = &self.dump {
            dump_source(dir, &unit.unit.kernel, &key, "cl", &unit.unit.source)?;
        }
        fs::create_dir_all(&self.dir)
            .map_err(|e| io("creating the cache directory", &self.dir, e))?;
        let bin = self.dir.join(format!("{key}.bin"));
        let cached = fs::read(&bin).ok().and_then(|b| {
            Program::create_and_build_from_binary(context, &[&b], BUILD_OPTIONS).ok()
        });
        let program = match cached {
            Some(p) => {
                FROM_DISK.fetch_add(1, Ordering::Relaxed);
                p
            }
            None => self.build(context, device, unit, &key, &bin)?,
        };
        let kernel =
            Kernel::create(&program, &unit.unit.entry).map_err(cl_err(&unit.unit.kernel))?;
        let max_work_group = kernel
            .get_work_group_size(device.device.id())
            .unwrap_or(device.max_work_group)
            .clamp(1, device.max_work_group);
        let compiled = Arc::new(Compiled {
            kernel: Mutex::new(kernel),
            params: unit.params.clone(),
            max_work_group,
            private_bytes: unit.private_bytes,
            _program: program,
        });
        self.memory
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, compiled.clone());
        Ok(compiled)
    }

    fn build(
        &self,
        context: &Context,
        device: &ChosenDevice,
        unit: &OpenClUnit,
        key: &str,
        bin: &Path,
    ) -> Result<Program> {
        // The source stays beside the binary: it is what a user reads when something goes wrong.
        let src = self.dir.join(format!("{key}.cl"));
        write_atomically(&src, unit.unit.source.as_bytes())?;
        let program =
            Program::create_and_build_from_source(context, &unit.unit.source, BUILD_OPTIONS)
                .map_err(|log| Op2Error::Compile {
                    kernel: unit.unit.kernel.clone(),
                    cc: format!("the OpenCL C compiler of {}", device.name),
                    message: log,
                    source_path: src.clone(),
                })?;
        BUILT.fetch_add(1, Ordering::Relaxed);
        // A binary that cannot be saved only costs a rebuild next time.
        if let Some(b) = program.get_binaries().ok().and_then(|mut v| v.pop()) {
            if !b.is_empty() {
                let _ = write_atomically(bin, &b);
            }
        }
        Ok(program)
    }
}
