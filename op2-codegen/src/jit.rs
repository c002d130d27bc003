//! The host JIT: compiles generated C with the system compiler into a shared library, caches it in
//! the compile cache ([`crate::cache`]: memory, then self-checking files in a private directory),
//! and loads it for good.

use crate::cache::{
    ArtefactKind, CacheSource, CacheStats, CompileCache, MemoryLayer, cache_stats, io,
    private_memory, temp_path,
};
use op2_core::{Config, GeneratedUnit, Op2Error, Result};
use std::collections::HashMap;
use std::ffi::c_void;
use std::fs;
use std::path::Path;
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
/// `-fopenmp-simd`: the `omp simd` pragmas of the wrappers' batched loops (see
/// `emit.rs`), without OpenMP's runtime.
///
/// `-Werror=implicit-function-declaration` and `-Wl,-z,defs`: a kernel calling a function that
/// does not exist would otherwise compile with a warning and link (a shared library may leave
/// symbols undefined), then fail to load with a loader message, and stay cached that way. With
/// them it is a compile error at `par_loop`, with the compiler's message.
const DEFAULT_FLAGS: [&str; 10] = [
    "-O3",
    "-march=native",
    "-fno-math-errno",
    "-ffp-contract=off",
    "-fopenmp-simd",
    "-fPIC",
    "-shared",
    "-fvisibility=hidden",
    "-Werror=implicit-function-declaration",
    "-Wl,-z,defs",
];

/// The host JIT's kind of compiled code: shared libraries in the cache directory itself.
pub const HOST_LIBRARIES: ArtefactKind = ArtefactKind {
    name: "host",
    subdir: "",
    source_ext: "c",
    artefact_ext: "so",
};

/// What the JIT did in this process (the compile cache's counters of [`HOST_LIBRARIES`]).
pub fn jit_stats() -> CacheStats {
    cache_stats(HOST_LIBRARIES.name)
}

/// Libraries loaded into this process so far, and their files' bytes (they stay mapped for the
/// process's life).
static LOADED: (AtomicU64, AtomicU64) = (AtomicU64::new(0), AtomicU64::new(0));

/// Compiled loop libraries loaded into this process (process-wide: every runtime shares them),
/// and the bytes of their files.
pub fn loaded_libraries() -> (u64, u64) {
    (
        LOADED.0.load(Ordering::Relaxed),
        LOADED.1.load(Ordering::Relaxed),
    )
}

/// The memory report's row for [`loaded_libraries`].
pub fn loaded_libraries_memory() -> op2_core::BackendMemory {
    let (count, bytes) = loaded_libraries();
    op2_core::BackendMemory {
        owner: op2_core::MemoryOwner::Code(format!("compiled loops: {count} libraries (process)")),
        host_bytes: bytes,
        device_bytes: 0,
    }
}

/// The address of a loaded entry point. Libraries are never unloaded, so it stays valid.
#[derive(Debug, Clone, Copy)]
pub struct JitFunction {
    addr: usize,
    /// One per loaded library (never freed, like the library).
    statics: &'static Mutex<()>,
    /// The library (never unloaded), for its other entry points.
    library: &'static libloading::os::unix::Library,
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

    /// The address of another exported entry point of the same library (a host unit's
    /// element-list entry, say).
    pub fn symbol(self, name: &str) -> Result<*const c_void> {
        // SAFETY: the symbol is one we generated; callers transmute it to its known signature.
        let addr = unsafe { self.library.get::<*const c_void>(name.as_bytes()) }.map_err(|e| {
            Op2Error::Load {
                path: std::path::PathBuf::from(name),
                reason: e.to_string(),
            }
        })?;
        Ok(*addr)
    }

    /// A number that orders [`JitFunction::lock_statics`] guards (the lock's address), so that
    /// callers taking several take them in one order.
    pub fn statics_key(self) -> usize {
        std::ptr::from_ref(self.statics) as usize
    }

    /// Exclusive use of the library's file-scope storage (the Consts a wrapper copies in on
    /// entry). Every runtime of the process that runs the same generated source shares one
    /// library, so a call that fills that storage and then reads it holds this guard throughout.
    pub fn lock_statics(self) -> MutexGuard<'static, ()> {
        self.statics.lock().unwrap_or_else(|e| e.into_inner())
    }
}

/// Loaded libraries are shared by every runtime of the process.
fn memory() -> MemoryLayer<JitFunction> {
    static MEMORY: OnceLock<MemoryLayer<JitFunction>> = OnceLock::new();
    MEMORY.get_or_init(private_memory).clone()
}

/// Compiles and loads generated C.
pub struct JitCompiler {
    cc: String,
    flags: Vec<String>,
    /// The backend's own flags (before `OP2_CFLAGS`), for [`JitCompiler::probe`].
    extra_flags: Vec<String>,
    identity: String,
    cache: CompileCache<JitFunction>,
    /// Whether units are compiled as C++ (see [`JitCompiler::load_for`]).
    cpp: bool,
    /// The configuration, for the C++ compiler made at the first C++ unit.
    config: Config,
    /// That compiler, or why it could not be made.
    cpp_jit: OnceLock<std::result::Result<Box<JitCompiler>, String>>,
}

/// What a kernel asks its loops' code to be built with besides the backend's flags
/// (`op2_core::Kernel::with_compile_args`, `with_link_args`).
#[derive(Clone, Copy)]
struct BuildArgs<'a> {
    compile: &'a [String],
    link: &'a [String],
}

impl BuildArgs<'_> {
    const NONE: BuildArgs<'static> = BuildArgs {
        compile: &[],
        link: &[],
    };

    fn is_empty(&self) -> bool {
        self.compile.is_empty() && self.link.is_empty()
    }
}

/// C-only defaults a C++ unit is compiled without (g++ warns about each).
const C_ONLY_FLAGS: [&str; 1] = ["-Werror=implicit-function-declaration"];

impl JitCompiler {
    /// A compiler set up from the runtime configuration, with `extra_flags` (e.g. `-fopenmp`) after
    /// the defaults and before `OP2_CFLAGS`. Runs `cc --version` once per process and compiler and
    /// creates the cache directory (mode 0700).
    pub fn new(config: &Config, extra_flags: &[&str]) -> Result<Self> {
        Self::for_language(config, extra_flags, false)
    }

    fn for_language(config: &Config, extra_flags: &[&str], cpp: bool) -> Result<Self> {
        let mut flags: Vec<String> = DEFAULT_FLAGS
            .iter()
            .filter(|f| !(cpp && C_ONLY_FLAGS.contains(f)))
            .map(|s| s.to_string())
            .collect();
        flags.extend(extra_flags.iter().map(|s| s.to_string()));
        flags.extend(config.cflags.iter().cloned());
        if cpp {
            // Before the source, which it makes C++ (the cached file is still `.c`).
            flags.extend(["-x".to_string(), "c++".to_string()]);
        }
        let identity = format!("{}\n{}", compiler_identity(&config.cc)?, cpu_identity());
        Ok(JitCompiler {
            cc: config.cc.clone(),
            flags,
            extra_flags: extra_flags.iter().map(|s| s.to_string()).collect(),
            identity,
            cache: CompileCache::new(
                HOST_LIBRARIES,
                &config.cache_dir,
                config.dump_gencode.as_deref(),
                memory(),
            )?,
            cpp,
            config: config.clone(),
            cpp_jit: OnceLock::new(),
        })
    }

    /// [`JitCompiler::load`] for a unit that calls `kernel`, built the way the kernel asks:
    /// as C++ when it is C++ (`op2_core::Kernel::cpp`: the same flags and `-x c++`, linked with
    /// the C++ library; the C++ compiler is set up at the first such unit), compiled and linked
    /// with its arguments (`op2_core::Kernel::with_compile_args`, `with_link_args`; both part
    /// of the cache key).
    pub fn load_for(&self, unit: &GeneratedUnit, kernel: &op2_core::Kernel) -> Result<JitFunction> {
        let cpp = kernel.is_cpp();
        let build = BuildArgs {
            compile: kernel.compile_args(),
            link: kernel.link_args(),
        };
        if cpp == self.cpp {
            return self.load_built(unit, build);
        }
        let extra: Vec<&str> = self.extra_flags.iter().map(String::as_str).collect();
        let made = self.cpp_jit.get_or_init(|| {
            Self::for_language(&self.config, &extra, cpp)
                .map(Box::new)
                .map_err(|e| e.to_string())
        });
        match made {
            Ok(jit) => jit.load_built(unit, build),
            Err(reason) => Err(Op2Error::CompilerNotFound {
                cc: self.cc.clone(),
                reason: reason.clone(),
            }),
        }
    }

    /// Checks, once per process for each compiler and set of backend flags, that the compiler
    /// builds a trivial library with the default and the backend's own flags (not the user's
    /// `OP2_CFLAGS`, whose mistakes are reported at the loop that needs them): a backend whose
    /// flags need more than a C compiler (`-fopenmp`, or `-x c++` for the CUDA emulator, which
    /// needs g++) reports itself unavailable instead of failing at every loop. `Err` holds the
    /// compiler's message.
    pub fn probe(&self) -> std::result::Result<(), String> {
        static SEEN: OnceLock<Mutex<HashMap<String, std::result::Result<(), String>>>> =
            OnceLock::new();
        let key = format!("{}\n{}", self.cc, self.extra_flags.join(" "));
        let seen = SEEN.get_or_init(Default::default);
        if let Some(r) = seen.lock().unwrap_or_else(|e| e.into_inner()).get(&key) {
            return r.clone();
        }
        let result = self.try_trivial_library();
        seen.lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, result.clone());
        result
    }

    fn try_trivial_library(&self) -> std::result::Result<(), String> {
        let src = temp_path(self.cache.dir(), "c");
        fs::write(&src, "int op2_probe(void) { return 0; }\n")
            .map_err(|e| format!("{}: {e}", src.display()))?;
        let flags: Vec<&str> = DEFAULT_FLAGS
            .iter()
            .copied()
            .chain(self.extra_flags.iter().map(String::as_str))
            .collect();
        let built = self.build_library(&flags, &src, BuildArgs::NONE);
        let _ = fs::remove_file(&src);
        match built {
            Ok((out, lib)) if out.status.success() => {
                let _ = fs::remove_file(lib);
                Ok(())
            }
            Ok((out, _)) => Err(format!(
                "`{} {}` cannot build a library: {}",
                self.cc,
                self.extra_flags.join(" "),
                String::from_utf8_lossy(&out.stderr).trim()
            )),
            Err(e) => Err(format!("`{}` cannot run: {e}", self.cc)),
        }
    }

    /// The cache directory.
    pub fn cache_dir(&self) -> &Path {
        self.cache.dir()
    }

    /// The cache key of a unit: hash of source, compiler identity and version, host CPU and flags.
    pub fn key(&self, unit: &GeneratedUnit) -> String {
        self.key_built(unit, BuildArgs::NONE)
    }

    /// [`JitCompiler::key`] of a unit built with `build` as well (nothing added when there is
    /// none, so that the keys of units without such arguments stay what they were).
    fn key_built(&self, unit: &GeneratedUnit, build: BuildArgs<'_>) -> String {
        let flags = self.flags.join(" ");
        let more = [build.compile.join("\n"), build.link.join("\n")];
        let mut parts: Vec<&str> = vec![&self.identity, &flags];
        if !build.is_empty() {
            parts.extend(more.iter().map(String::as_str));
        }
        self.cache.key(&parts, &unit.source)
    }

    /// Returns the unit's entry point, compiling only when neither cache has it.
    pub fn load(&self, unit: &GeneratedUnit) -> Result<JitFunction> {
        self.load_built(unit, BuildArgs::NONE)
    }

    /// [`JitCompiler::load`], the unit compiled and linked with `build` as well.
    fn load_built(&self, unit: &GeneratedUnit, build: BuildArgs<'_>) -> Result<JitFunction> {
        let key = self.key_built(unit, build);
        let source = CacheSource {
            kernel: &unit.kernel,
            text: &unit.source,
        };
        self.cache.get(
            &key,
            &source,
            |src| Ok((self.compile(unit, src, build)?, None)),
            |path, body| {
                let f = open(path, &unit.entry)?;
                LOADED.0.fetch_add(1, Ordering::Relaxed);
                LOADED.1.fetch_add(body.len() as u64, Ordering::Relaxed);
                Ok(f)
            },
        )
    }

    /// Compiles the kept source `src` into a shared library built with `build` as well and
    /// returns its bytes.
    fn compile(&self, unit: &GeneratedUnit, src: &Path, build: BuildArgs<'_>) -> Result<Vec<u8>> {
        let (out, tmp_lib) = self.build_library(&self.flags, src, build).map_err(|e| {
            Op2Error::CompilerNotFound {
                cc: self.cc.clone(),
                reason: e.to_string(),
            }
        })?;
        if !out.status.success() {
            let mut message = String::from_utf8_lossy(&out.stderr).into_owned();
            message.push_str(&String::from_utf8_lossy(&out.stdout));
            return Err(Op2Error::Compile {
                kernel: unit.kernel.clone(),
                cc: self.cc.clone(),
                message,
                source_path: src.to_path_buf(),
            });
        }
        let bytes = fs::read(&tmp_lib).map_err(|e| io("reading compiled library", &tmp_lib, e));
        let _ = fs::remove_file(&tmp_lib);
        bytes
    }

    /// Runs the compiler on `src` with `flags` and `build`'s compile arguments, into a temporary
    /// library in the cache directory linked with `build`'s link arguments (after the source,
    /// where linkers look for what it needs; each `-L` folder also a run-time search path, so
    /// that the loaded library finds what it was linked with): its output, and the library's
    /// path (removed here when the compiler failed).
    fn build_library(
        &self,
        flags: &[impl AsRef<std::ffi::OsStr>],
        src: &Path,
        build: BuildArgs<'_>,
    ) -> std::io::Result<(std::process::Output, std::path::PathBuf)> {
        let lib = temp_path(self.cache.dir(), "so");
        // `-Xlinker` pairs rather than `-Wl,`, which would split a folder at its commas.
        let rpaths = build.link.iter().flat_map(|a| match a.strip_prefix("-L") {
            Some(dir) if !dir.is_empty() => vec!["-Xlinker", "-rpath", "-Xlinker", dir],
            _ => Vec::new(),
        });
        let out = Command::new(&self.cc)
            .args(flags)
            .args(build.compile)
            .arg("-o")
            .arg(&lib)
            .arg(src)
            .args(build.link)
            .args(rpaths)
            .arg("-lm")
            .args(self.cpp.then_some("-lstdc++"))
            .output()?;
        if !out.status.success() {
            let _ = fs::remove_file(&lib);
        }
        Ok((out, lib))
    }
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
    let addr = *addr as usize;
    Ok(JitFunction {
        addr,
        statics: Box::leak(Box::new(Mutex::new(()))),
        library: Box::leak(Box::new(lib)),
    })
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

#[cfg(test)]
mod tests {
    use super::*;

    fn jit(dir: &Path, extra: &[&str]) -> JitCompiler {
        let config = Config {
            cache_dir: dir.to_path_buf(),
            ..Config::default()
        };
        JitCompiler::new(&config, extra).expect("the system C compiler")
    }

    #[test]
    fn the_probe_passes_the_plain_flags_and_names_a_flag_the_compiler_refuses() {
        let dir = tempfile::tempdir().expect("a temporary directory");
        assert_eq!(jit(dir.path(), &[]).probe(), Ok(()));
        let err = jit(dir.path(), &["-fop2-no-such-flag"])
            .probe()
            .unwrap_err();
        assert!(err.contains("-fop2-no-such-flag"), "{err}");
        // Asked again, the answer comes from memory, the same.
        assert_eq!(jit(dir.path(), &["-fop2-no-such-flag"]).probe(), Err(err));
    }
}
