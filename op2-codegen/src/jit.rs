//! The host JIT: compiles generated C with the system compiler into a shared library, caches it on disk
//! (private directory, atomic writes, self-checking files) and in memory, and loads it for good.

use op2_core::{Config, GeneratedUnit, Op2Error, Result};
use sha2::{Digest, Sha256};
use std::collections::HashMap;
use std::ffi::c_void;
use std::fs;
use std::io::Write;
use std::os::unix::fs::DirBuilderExt;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};

/// Default flags before `OP2_CFLAGS`. Hidden visibility keeps the user's kernel local to its library:
/// otherwise a kernel named like a libc function (`step`, `index`) is interposed by libc at load time,
/// and the compiler may not inline an interposable function into the wrapper.
///
/// `-fno-math-errno`: C's `sqrt` must set `errno` on a negative argument, so without it every
/// `sqrt` in a kernel becomes a compare, a branch and a possible library call instead of one
/// instruction (Airfoil's `adt_calc` ran 35% slower than the same loop in Rust). Results are
/// unchanged; only `errno` is no longer set, and kernels cannot read it anyway.
///
/// `-ffp-contract=off`: GNU C fuses `a * b + c` into one FMA by default, which rounds differently
/// from the kernel as written; off, every backend evaluates expressions as written (as Rust does), so
/// results do not depend on the host CPU's FMA support.
///
/// `-Werror=implicit-function-declaration` and `-Wl,-z,defs`: a kernel calling a function that
/// does not exist would otherwise compile with a warning and link (a shared library may leave
/// symbols undefined), then fail to load with a loader message, and stay cached that way. With
/// them it is a compile error at `par_loop`, with the compiler's message.
const DEFAULT_FLAGS: [&str; 9] = [
    "-O3",
    "-march=native",
    "-fno-math-errno",
    "-ffp-contract=off",
    "-fPIC",
    "-shared",
    "-fvisibility=hidden",
    "-Werror=implicit-function-declaration",
    "-Wl,-z,defs",
];

/// Marks the end of a cache file: magic, then the SHA-256 of everything before it. A truncated or
/// corrupt file fails the check and is rebuilt; the loader ignores bytes after the ELF contents.
const TRAILER_MAGIC: &[u8; 8] = b"OP2CACHE";
const TRAILER_LEN: usize = 8 + 32;

static COMPILES: AtomicU64 = AtomicU64::new(0);
static DISK_HITS: AtomicU64 = AtomicU64::new(0);
static MEMORY_HITS: AtomicU64 = AtomicU64::new(0);
static REBUILDS: AtomicU64 = AtomicU64::new(0);
static TEMP_COUNTER: AtomicU64 = AtomicU64::new(0);

/// What the JIT did in this process.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct JitStats {
    /// Compiler runs that produced a library.
    pub compiles: u64,
    /// Libraries loaded from the disk cache.
    pub disk_hits: u64,
    /// Lookups answered by the in-memory cache.
    pub memory_hits: u64,
    /// Corrupt or truncated cache files found and rebuilt.
    pub rebuilds: u64,
}

/// The JIT's counters for this process.
pub fn jit_stats() -> JitStats {
    JitStats {
        compiles: COMPILES.load(Ordering::Relaxed),
        disk_hits: DISK_HITS.load(Ordering::Relaxed),
        memory_hits: MEMORY_HITS.load(Ordering::Relaxed),
        rebuilds: REBUILDS.load(Ordering::Relaxed),
    }
}

/// The address of a loaded entry point. Libraries are never unloaded, so it stays valid.
#[derive(Debug, Clone, Copy)]
pub struct JitFunction {
    addr: usize,
    /// One per loaded library (never freed, like the library).
    statics: &'static Mutex<()>,
}

impl PartialEq for JitFunction {
    fn eq(&self, other: &Self) -> bool {
        self.addr == other.addr
    }
}
impl Eq for JitFunction {}

impl JitFunction {
    /// The raw address, to transmute into the entry point's `extern "C"` type.
    pub fn as_ptr(self) -> *const c_void {
        self.addr as *const c_void
    }

    /// Exclusive use of the library's file-scope storage (the Consts a wrapper copies in on
    /// entry). Every runtime of the process that runs the same generated source shares one
    /// library, so a call that fills that storage and then reads it holds this guard throughout.
    pub fn lock_statics(self) -> MutexGuard<'static, ()> {
        self.statics.lock().unwrap_or_else(|e| e.into_inner())
    }
}

fn memory_cache() -> &'static Mutex<HashMap<String, JitFunction>> {
    static CACHE: OnceLock<Mutex<HashMap<String, JitFunction>>> = OnceLock::new();
    CACHE.get_or_init(Default::default)
}

/// Compiles and loads generated C.
#[derive(Debug, Clone)]
pub struct JitCompiler {
    cc: String,
    flags: Vec<String>,
    cache_dir: PathBuf,
    dump_dir: Option<PathBuf>,
    identity: String,
}

impl JitCompiler {
    /// A compiler set up from the runtime configuration, with `extra_flags` (e.g. `-fopenmp`) after
    /// the defaults and before `OP2_CFLAGS`. Runs `cc --version` once per process and compiler and
    /// creates the cache directory (mode 0700).
    pub fn new(config: &Config, extra_flags: &[&str]) -> Result<Self> {
        let mut flags: Vec<String> = DEFAULT_FLAGS.iter().map(|s| s.to_string()).collect();
        flags.extend(extra_flags.iter().map(|s| s.to_string()));
        flags.extend(config.cflags.iter().cloned());
        let identity = format!("{}\n{}", compiler_identity(&config.cc)?, cpu_identity());
        create_private_dir(&config.cache_dir)?;
        Ok(JitCompiler {
            cc: config.cc.clone(),
            flags,
            cache_dir: config.cache_dir.clone(),
            dump_dir: config.dump_gencode.clone(),
            identity,
        })
    }

    /// The cache directory.
    pub fn cache_dir(&self) -> &Path {
        &self.cache_dir
    }

    /// The cache key of a unit: hash of source, compiler identity and version, host CPU and flags.
    pub fn key(&self, unit: &GeneratedUnit) -> String {
        let mut h = Sha256::new();
        for part in [
            b"op2-rs jit v1".as_slice(),
            self.identity.as_bytes(),
            self.flags.join(" ").as_bytes(),
        ] {
            h.update(part);
            h.update([0]);
        }
        h.update(unit.source.as_bytes());
        hex(&h.finalize())
    }

    /// Returns the unit's entry point, compiling only when neither cache has it.
    pub fn load(&self, unit: &GeneratedUnit) -> Result<JitFunction> {
        let key = self.key(unit);
        if let Some(f) = memory_cache()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            MEMORY_HITS.fetch_add(1, Ordering::Relaxed);
            return Ok(*f);
        }
        if let Some(dir) = &self.dump_dir {
            dump_source(dir, &unit.kernel, &key, "c", &unit.source)?;
        }
        let lib = self.cache_dir.join(format!("{key}.so"));
        let f = match fs::read(&lib) {
            Ok(bytes) if verify(&bytes) => {
                DISK_HITS.fetch_add(1, Ordering::Relaxed);
                open(&lib, &unit.entry)?
            }
            Ok(_) => {
                REBUILDS.fetch_add(1, Ordering::Relaxed);
                self.compile(unit, &key, &lib)?
            }
            Err(_) => self.compile(unit, &key, &lib)?,
        };
        // Two threads may have loaded the same unit at once: the first one cached is the one
        // everybody uses, so that they share its statics lock.
        Ok(*memory_cache()
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .entry(key)
            .or_insert(f))
    }

    fn temp_path(&self, ext: &str) -> PathBuf {
        let n = TEMP_COUNTER.fetch_add(1, Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        self.cache_dir
            .join(format!(".tmp-{}-{n}-{nanos}.{ext}", std::process::id()))
    }

    fn compile(&self, unit: &GeneratedUnit, key: &str, lib: &Path) -> Result<JitFunction> {
        // The source stays next to the library: it is what a user reads when something goes wrong.
        let src = self.cache_dir.join(format!("{key}.c"));
        let tmp_src = self.temp_path("c");
        fs::write(&tmp_src, &unit.source)
            .map_err(|e| io("writing generated source", &tmp_src, e))?;
        fs::rename(&tmp_src, &src).map_err(|e| io("renaming generated source", &src, e))?;

        let tmp_lib = self.temp_path("so");
        let out = Command::new(&self.cc)
            .args(&self.flags)
            .arg("-o")
            .arg(&tmp_lib)
            .arg(&src)
            .arg("-lm")
            .output()
            .map_err(|e| Op2Error::CompilerNotFound {
                cc: self.cc.clone(),
                reason: e.to_string(),
            })?;
        if !out.status.success() {
            let _ = fs::remove_file(&tmp_lib);
            let mut message = String::from_utf8_lossy(&out.stderr).into_owned();
            message.push_str(&String::from_utf8_lossy(&out.stdout));
            return Err(Op2Error::Compile {
                kernel: unit.kernel.clone(),
                cc: self.cc.clone(),
                message,
                source_path: src,
            });
        }
        let result = (|| {
            let mut bytes =
                fs::read(&tmp_lib).map_err(|e| io("reading compiled library", &tmp_lib, e))?;
            let digest = Sha256::digest(&bytes);
            bytes.extend_from_slice(TRAILER_MAGIC);
            bytes.extend_from_slice(&digest);
            let mut f = fs::File::create(&tmp_lib)
                .map_err(|e| io("writing compiled library", &tmp_lib, e))?;
            f.write_all(&bytes)
                .and_then(|_| f.sync_all())
                .map_err(|e| io("writing compiled library", &tmp_lib, e))?;
            // Rename is atomic: other processes see either no file or the whole file.
            fs::rename(&tmp_lib, lib).map_err(|e| io("installing compiled library", lib, e))
        })();
        if result.is_err() {
            let _ = fs::remove_file(&tmp_lib);
        }
        result?;
        COMPILES.fetch_add(1, Ordering::Relaxed);
        open(lib, &unit.entry)
    }
}

/// Writes a generated source into the `OP2_DUMP_GENCODE` directory `dir`, as
/// `<kernel>_<first 16 characters of its cache key>.<ext>`.
pub fn dump_source(dir: &Path, kernel: &str, key: &str, ext: &str, source: &str) -> Result<()> {
    fs::create_dir_all(dir).map_err(|e| io("creating the OP2_DUMP_GENCODE directory", dir, e))?;
    let path = dir.join(format!("{kernel}_{}.{ext}", &key[..key.len().min(16)]));
    fs::write(&path, source).map_err(|e| io("writing generated source", &path, e))
}

/// Writes a cache file through a temporary file and a rename, so that readers (other threads or
/// processes) see all of it or nothing.
pub fn write_atomically(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension(format!(
        "tmp-{}-{}",
        std::process::id(),
        TEMP_COUNTER.fetch_add(1, Ordering::Relaxed)
    ));
    fs::write(&tmp, bytes).map_err(|e| io("writing a cache file", &tmp, e))?;
    fs::rename(&tmp, path).map_err(|e| {
        let _ = fs::remove_file(&tmp);
        io("installing a cache file", path, e)
    })
}

fn verify(bytes: &[u8]) -> bool {
    if bytes.len() < TRAILER_LEN {
        return false;
    }
    let (body, trailer) = bytes.split_at(bytes.len() - TRAILER_LEN);
    trailer[..8] == TRAILER_MAGIC[..] && trailer[8..] == Sha256::digest(body)[..]
}

fn open(path: &Path, entry: &str) -> Result<JitFunction> {
    let load_err = |e: libloading::Error| Op2Error::Load {
        path: path.to_path_buf(),
        reason: e.to_string(),
    };
    // RTLD_NODELETE: code from these libraries (and runtimes they pull in, such as OpenMP's) must never
    // be unloaded while threads or function pointers may still use it.
    let flags = libc::RTLD_NOW | libc::RTLD_LOCAL | libc::RTLD_NODELETE;
    // SAFETY: the library is one we compiled from generated C; it has no initialisers of its own.
    let lib =
        unsafe { libloading::os::unix::Library::open(Some(path), flags) }.map_err(load_err)?;
    // SAFETY: the symbol is the wrapper we generated; callers transmute it to its known signature.
    let addr = unsafe { lib.get::<*const c_void>(entry.as_bytes()) }.map_err(load_err)?;
    let f = JitFunction {
        addr: *addr as usize,
        statics: Box::leak(Box::new(Mutex::new(()))),
    };
    std::mem::forget(lib);
    Ok(f)
}

fn create_private_dir(dir: &Path) -> Result<()> {
    fs::DirBuilder::new()
        .recursive(true)
        .mode(0o700)
        .create(dir)
        .map_err(|e| io("creating the cache directory", dir, e))
}

fn compiler_identity(cc: &str) -> Result<String> {
    static IDS: OnceLock<Mutex<HashMap<String, String>>> = OnceLock::new();
    let ids = IDS.get_or_init(Default::default);
    if let Some(id) = ids.lock().unwrap_or_else(|e| e.into_inner()).get(cc) {
        return Ok(id.clone());
    }
    let out =
        Command::new(cc)
            .arg("--version")
            .output()
            .map_err(|e| Op2Error::CompilerNotFound {
                cc: cc.into(),
                reason: e.to_string(),
            })?;
    if !out.status.success() {
        return Err(Op2Error::CompilerNotFound {
            cc: cc.into(),
            reason: format!(
                "`{cc} --version` failed: {}",
                String::from_utf8_lossy(&out.stderr).trim()
            ),
        });
    }
    let id = format!("{cc}\n{}", String::from_utf8_lossy(&out.stdout));
    ids.lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(cc.into(), id.clone());
    Ok(id)
}

/// What `-march=native` means here: the CPU model and feature flags, so a cache directory shared by
/// different machines never hands one machine another's instructions.
fn cpu_identity() -> String {
    static ID: OnceLock<String> = OnceLock::new();
    ID.get_or_init(|| {
        let info = fs::read_to_string("/proc/cpuinfo").unwrap_or_default();
        let field = |name: &str| {
            info.lines()
                .find(|l| l.starts_with(name))
                .and_then(|l| l.split_once(':'))
                .map(|(_, v)| v.trim().to_string())
                .unwrap_or_default()
        };
        format!(
            "{} {}\n{}\n{}",
            std::env::consts::ARCH,
            field("vendor_id"),
            field("model name"),
            field("flags")
        )
    })
    .clone()
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn trailer_detects_truncation() {
        let mut bytes = b"\x7fELF fake library".to_vec();
        let d = Sha256::digest(&bytes);
        bytes.extend_from_slice(TRAILER_MAGIC);
        bytes.extend_from_slice(&d);
        assert!(verify(&bytes));
        assert!(!verify(&bytes[..bytes.len() - 1]));
        assert!(!verify(&bytes[1..]));
        assert!(!verify(b"short"));
    }
}
