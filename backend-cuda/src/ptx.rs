//! Compiling generated CUDA to PTX once: a process-wide memory cache and a disk cache under
//! `<OP2_CACHE_DIR>/cuda`, keyed by the source, NVRTC's version, the target architecture and the
//! options. Each PTX file ends with a line holding the SHA-256 of the rest, so a truncated or
//! corrupt file is compiled again rather than handed to the driver.

use crate::nvrtc::{CompileFailure, Nvrtc};
use op2_codegen::{CudaUnit, dump_source, write_atomically};
use op2_core::{Config, Op2Error, Result};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::fs;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

/// NVRTC options besides the architecture. `-default-device` makes the user's functions (written
/// without CUDA qualifiers) device functions; `--fmad=false` keeps multiply-adds unfused, as the
/// host backends' `-ffp-contract=off` does, so results do not depend on FMA contraction.
pub const NVRTC_OPTIONS: &[&str] = &["-default-device", "--fmad=false"];

/// The marker of a PTX file's checksum line.
const TRAILER: &str = "// op2-rs sha256 ";

static COMPILED: AtomicU64 = AtomicU64::new(0);
static FROM_DISK: AtomicU64 = AtomicU64::new(0);
static FROM_MEMORY: AtomicU64 = AtomicU64::new(0);

/// Counters of the PTX caches in this process.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct PtxStats {
    /// Units NVRTC compiled.
    pub compiled: u64,
    /// Units read back from the disk cache.
    pub from_disk: u64,
    /// Units found in memory.
    pub from_memory: u64,
}

/// The PTX cache counters of this process.
pub fn ptx_stats() -> PtxStats {
    PtxStats {
        compiled: COMPILED.load(Ordering::Relaxed),
        from_disk: FROM_DISK.load(Ordering::Relaxed),
        from_memory: FROM_MEMORY.load(Ordering::Relaxed),
    }
}

fn memory() -> &'static Mutex<HashMap<String, Arc<str>>> {
    static CACHE: OnceLock<Mutex<HashMap<String, Arc<str>>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// Compiles units for one architecture with one NVRTC.
pub struct PtxCompiler {
    nvrtc: &'static Nvrtc,
    arch: String,
    dir: PathBuf,
    dump: Option<PathBuf>,
}

fn io(context: &'static str, path: &Path, source: std::io::Error) -> Op2Error {
    Op2Error::Io {
        context,
        path: path.to_path_buf(),
        source,
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

impl PtxCompiler {
    /// A compiler for `arch` (`compute_90`), caching under `<cache dir>/cuda`.
    pub fn new(nvrtc: &'static Nvrtc, arch: String, config: &Config) -> Self {
        PtxCompiler {
            nvrtc,
            arch,
            dir: config.cache_dir.join("cuda"),
            dump: config.dump_gencode.clone(),
        }
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
        let mut h = Sha256::new();
        let (major, minor) = self.nvrtc.version;
        for part in [
            "op2-rs cuda ptx v1",
            &format!("{major}.{minor}"),
            &self.options().join(" "),
            source,
        ] {
            h.update(part.as_bytes());
            h.update([0]);
        }
        hex(&h.finalize())
    }

    /// The unit's PTX, compiled only when neither cache has it. A source that does not compile
    /// is an [`Op2Error::Compile`] with NVRTC's log and the path of the kept source.
    pub fn ptx(&self, unit: &CudaUnit) -> Result<Arc<str>> {
        let source = &unit.unit.source;
        let key = self.key(source);
        if let Some(p) = memory().lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            FROM_MEMORY.fetch_add(1, Ordering::Relaxed);
            return Ok(p.clone());
        }
        if let Some(dir) = &self.dump {
            dump_source(dir, &unit.unit.kernel, &key, "cu", source)?;
        }
        fs::DirBuilder::new()
            .recursive(true)
            .mode(0o700)
            .create(&self.dir)
            .map_err(|e| io("creating the cache directory", &self.dir, e))?;
        let file = self.dir.join(format!("{key}.ptx"));
        let ptx: Arc<str> = match fs::read_to_string(&file).ok().and_then(|t| verified(&t)) {
            Some(p) => {
                FROM_DISK.fetch_add(1, Ordering::Relaxed);
                p.into()
            }
            None => {
                let p = self.compile(unit, &key)?;
                let body_hash = hex(&Sha256::digest(p.as_bytes()));
                // A PTX file that cannot be saved only costs a compile next time.
                let _ = write_atomically(&file, format!("{p}\n{TRAILER}{body_hash}\n").as_bytes());
                p.into()
            }
        };
        memory()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, ptx.clone());
        Ok(ptx)
    }

    fn compile(&self, unit: &CudaUnit, key: &str) -> Result<String> {
        // The source stays in the cache: it is what a user reads when something goes wrong.
        let src = self.dir.join(format!("{key}.cu"));
        write_atomically(&src, unit.unit.source.as_bytes())?;
        let ptx = self
            .nvrtc
            .compile(&unit.unit.source, &unit.unit.kernel, &self.options())
            .map_err(|f| Op2Error::Compile {
                kernel: unit.unit.kernel.clone(),
                cc: format!("{} from {}", self.identity(), self.nvrtc.location),
                message: match f {
                    CompileFailure::Source(log) => log,
                    CompileFailure::Nvrtc(why) => why,
                },
                source_path: src,
            })?;
        COMPILED.fetch_add(1, Ordering::Relaxed);
        Ok(ptx)
    }
}

/// The PTX of a cache file whose checksum line matches; `None` for anything else.
fn verified(text: &str) -> Option<String> {
    let body = text.strip_suffix('\n')?;
    let (body, hash) = body.rsplit_once(&format!("\n{TRAILER}"))?;
    (hex(&Sha256::digest(body.as_bytes())) == hash).then(|| body.to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn checksum_line_rejects_damaged_files() {
        let body = ".version 8.7\n.target sm_90\n.visible .entry op2_stub()\n{\n}";
        let file = format!(
            "{body}\n{TRAILER}{}\n",
            hex(&Sha256::digest(body.as_bytes()))
        );
        assert_eq!(verified(&file).as_deref(), Some(body));
        assert_eq!(verified(&file[..file.len() - 2]), None);
        assert_eq!(verified(&file.replace("sm_90", "sm_80")), None);
        assert_eq!(verified(body), None);
    }
}
