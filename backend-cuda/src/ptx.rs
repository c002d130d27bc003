//! Compiling generated CUDA to PTX once, through the compile cache ([`op2_codegen::CompileCache`]):
//! a process-wide memory layer and self-checking files under `<OP2_CACHE_DIR>/cuda`, keyed by the
//! source, NVRTC's version, the target architecture and the options.

use crate::nvrtc::{CompileFailure, Nvrtc};
use op2_codegen::{
    ArtefactKind, CacheSource, CacheStats, CompileCache, DeviceUnit, MemoryLayer, cache_stats,
    private_memory,
};
use op2_core::{Config, Op2Error, Result};
use std::sync::{Arc, OnceLock};

/// NVRTC options besides the architecture. `-default-device` makes the user's functions (written
/// without CUDA qualifiers) device functions; `--fmad=false` keeps multiply-adds unfused, as the
/// host backends' `-ffp-contract=off` does, so results do not depend on FMA contraction.
pub const NVRTC_OPTIONS: &[&str] = &["-default-device", "--fmad=false"];

/// PTX in the compile cache.
pub const PTX: ArtefactKind = ArtefactKind {
    name: "ptx",
    subdir: "cuda",
    source_ext: "cu",
    artefact_ext: "ptx",
};

/// The PTX cache counters of this process.
pub fn ptx_stats() -> CacheStats {
    cache_stats(PTX.name)
}

/// PTX is shared by every runtime of the process.
fn memory() -> MemoryLayer<Arc<str>> {
    static MEMORY: OnceLock<MemoryLayer<Arc<str>>> = OnceLock::new();
    MEMORY.get_or_init(private_memory).clone()
}

/// Compiles units for one architecture with one NVRTC.
pub struct PtxCompiler {
    nvrtc: &'static Nvrtc,
    arch: String,
    cache: CompileCache<Arc<str>>,
}

impl PtxCompiler {
    /// A compiler for `arch` (`compute_90`), caching under `<cache dir>/cuda`.
    pub fn new(nvrtc: &'static Nvrtc, arch: String, config: &Config) -> Result<Self> {
        Ok(PtxCompiler {
            nvrtc,
            arch,
            cache: CompileCache::new(
                PTX,
                &config.cache_dir,
                config.dump_gencode.as_deref(),
                memory(),
            )?,
        })
    }

    /// NVRTC's version and the architecture, for messages: `NVRTC 12.8 (compute_90)`.
    pub fn identity(&self) -> String {
        let (major, minor) = self.nvrtc.version;
        format!("NVRTC {major}.{minor} ({})", self.arch)
    }

    fn options(&self) -> Vec<String> {
        let mut o = vec![format!("--gpu-architecture={}", self.arch)];
        o.extend(NVRTC_OPTIONS.iter().map(|s| s.to_string()));
        o
    }

    /// The cache key of a source.
    pub fn key(&self, source: &str) -> String {
        let (major, minor) = self.nvrtc.version;
        self.cache.key(
            &[&format!("{major}.{minor}"), &self.options().join(" ")],
            source,
        )
    }

    /// The unit's PTX, compiled only when neither cache has it. A source that does not compile
    /// is an [`Op2Error::Compile`] with NVRTC's log and the path of the kept source.
    pub fn ptx(&self, unit: &DeviceUnit) -> Result<Arc<str>> {
        let source = CacheSource {
            kernel: &unit.unit.kernel,
            text: &unit.unit.source,
        };
        self.cache.get(
            &self.key(&unit.unit.source),
            &source,
            |src| {
                self.nvrtc
                    .compile(&unit.unit.source, &unit.unit.kernel, &self.options())
                    .map(|ptx| (ptx.into_bytes(), None))
                    .map_err(|f| Op2Error::Compile {
                        kernel: unit.unit.kernel.clone(),
                        cc: format!("{} from {}", self.identity(), self.nvrtc.location),
                        message: match f {
                            CompileFailure::Source(log) => log,
                            CompileFailure::Nvrtc(why) => why,
                        },
                        source_path: src.to_path_buf(),
                    })
            },
            |path, body| {
                std::str::from_utf8(body)
                    .map(Arc::from)
                    .map_err(|e| Op2Error::Load {
                        path: path.to_path_buf(),
                        reason: format!("PTX that is not UTF-8: {e}"),
                    })
            },
        )
    }
}
