//! NVRTC, the CUDA run-time compiler, opened at run time. cudarc's own NVRTC loader does not fit:
//! it looks only for file names derived from the CUDA version chosen at build time (with the 12.8
//! bindings, never `libnvrtc.so.13`, the NVRTC of CUDA 13 toolkits), cannot be pointed at a file,
//! and panics when nothing is found. NVRTC's C interface is small and stable since CUDA 7, so this
//! module binds the eight calls the backend makes, looks in `OP2_NVRTC`, the dynamic loader's path
//! and the CUDA toolkit's usual places, and answers with a reason when there is none.

use libloading::Library;
use std::collections::HashMap;
use std::ffi::{CStr, CString, c_char, c_int, c_void};
use std::path::{Path, PathBuf};
use std::sync::{Mutex, OnceLock};

type Program = *mut c_void;
type Status = c_int;

/// NVRTC's result code for a compile error in the source.
const NVRTC_ERROR_COMPILATION: Status = 6;

/// The library names tried through the dynamic loader, newest first.
const SONAMES: &[&str] = &[
    "libnvrtc.so.13",
    "libnvrtc.so.12",
    "libnvrtc.so.11.2",
    "libnvrtc.so",
];

/// Directories of CUDA toolkits tried after the loader's path.
const TOOLKIT_DIRS: &[&str] = &[
    "/usr/local/cuda/lib64",
    "/usr/local/cuda/targets/x86_64-linux/lib",
    "/usr/lib/x86_64-linux-gnu",
];

struct Calls {
    version: unsafe extern "C" fn(*mut c_int, *mut c_int) -> Status,
    error_string: unsafe extern "C" fn(Status) -> *const c_char,
    create: unsafe extern "C" fn(
        *mut Program,
        *const c_char,
        *const c_char,
        c_int,
        *const *const c_char,
        *const *const c_char,
    ) -> Status,
    compile: unsafe extern "C" fn(Program, c_int, *const *const c_char) -> Status,
    log_size: unsafe extern "C" fn(Program, *mut usize) -> Status,
    log: unsafe extern "C" fn(Program, *mut c_char) -> Status,
    ptx_size: unsafe extern "C" fn(Program, *mut usize) -> Status,
    ptx: unsafe extern "C" fn(Program, *mut c_char) -> Status,
    destroy: unsafe extern "C" fn(*mut Program) -> Status,
    num_archs: Option<unsafe extern "C" fn(*mut c_int) -> Status>,
    archs: Option<unsafe extern "C" fn(*mut c_int) -> Status>,
}

/// A loaded NVRTC library.
pub struct Nvrtc {
    calls: Calls,
    /// Where it was found (a path, or the name the loader resolved).
    pub location: String,
    /// NVRTC's version (major, minor).
    pub version: (i32, i32),
    /// The architectures it compiles for (`90` for `compute_90`), ascending.
    pub archs: Vec<i32>,
    _library: Library,
}

/// Why a compile produced no PTX.
#[derive(Debug)]
pub enum CompileFailure {
    /// The source has errors: NVRTC's log.
    Source(String),
    /// NVRTC itself failed (bad option, out of memory...).
    Nvrtc(String),
}

impl Nvrtc {
    /// The NVRTC library: `OP2_NVRTC` (a file, or a directory holding `libnvrtc.so*`) when given,
    /// else the first found through the dynamic loader or in a CUDA toolkit. Loaded once per
    /// process and location, and never unloaded.
    pub fn get(explicit: Option<&Path>) -> Result<&'static Nvrtc, String> {
        type Loaded = HashMap<Option<PathBuf>, Result<&'static Nvrtc, String>>;
        static LOADED: OnceLock<Mutex<Loaded>> = OnceLock::new();
        let loaded = LOADED.get_or_init(Default::default);
        let mut loaded = loaded.lock().unwrap_or_else(|e| e.into_inner());
        loaded
            .entry(explicit.map(Path::to_path_buf))
            .or_insert_with(|| Nvrtc::find(explicit).map(|n| &*Box::leak(Box::new(n))))
            .clone()
    }

    fn find(explicit: Option<&Path>) -> Result<Nvrtc, String> {
        let mut tried = Vec::new();
        let candidates: Vec<String> = match explicit {
            Some(p) if p.is_dir() => SONAMES
                .iter()
                .map(|n| p.join(n).display().to_string())
                .collect(),
            Some(p) => vec![p.display().to_string()],
            None => {
                let mut c: Vec<String> = SONAMES.iter().map(|s| s.to_string()).collect();
                let mut dirs: Vec<PathBuf> = ["CUDA_HOME", "CUDA_PATH"]
                    .iter()
                    .filter_map(std::env::var_os)
                    .map(|d| PathBuf::from(d).join("lib64"))
                    .collect();
                dirs.extend(TOOLKIT_DIRS.iter().map(PathBuf::from));
                for d in dirs {
                    c.extend(SONAMES.iter().map(|n| d.join(n).display().to_string()));
                }
                c
            }
        };
        for name in candidates {
            // SAFETY: NVRTC's initialisers only set up the library itself.
            match unsafe { Library::new(&name) } {
                Ok(lib) => return Nvrtc::bind(lib, name),
                Err(e) => tried.push(format!("{name} ({e})")),
            }
        }
        Err(match explicit {
            Some(p) => format!(
                "OP2_NVRTC={} holds no NVRTC library: {}",
                p.display(),
                tried.join("; ")
            ),
            None => format!(
                "NVRTC (libnvrtc.so.12 or .13) was not found on the loader's path or in a CUDA \
                 toolkit; install the CUDA toolkit's NVRTC or the PyPI package nvidia-cuda-nvrtc-cu12, \
                 and set OP2_NVRTC to the library or its directory (tried {})",
                SONAMES.join(", ")
            ),
        })
    }

    fn bind(lib: Library, location: String) -> Result<Nvrtc, String> {
        macro_rules! sym {
            ($name:literal) => {
                // SAFETY: the type is the function's C prototype in nvrtc.h.
                *unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                    .map_err(|e| format!("{location} is not NVRTC: no {}: {e}", $name))?
            };
        }
        macro_rules! optional {
            ($name:literal) => {
                // SAFETY: as above; these two exist since CUDA 11.2.
                unsafe { lib.get(concat!($name, "\0").as_bytes()) }
                    .ok()
                    .map(|s| *s)
            };
        }
        let calls = Calls {
            version: sym!("nvrtcVersion"),
            error_string: sym!("nvrtcGetErrorString"),
            create: sym!("nvrtcCreateProgram"),
            compile: sym!("nvrtcCompileProgram"),
            log_size: sym!("nvrtcGetProgramLogSize"),
            log: sym!("nvrtcGetProgramLog"),
            ptx_size: sym!("nvrtcGetPTXSize"),
            ptx: sym!("nvrtcGetPTX"),
            destroy: sym!("nvrtcDestroyProgram"),
            num_archs: optional!("nvrtcGetNumSupportedArchs"),
            archs: optional!("nvrtcGetSupportedArchs"),
        };
        let (mut major, mut minor) = (0, 0);
        // SAFETY: two out-parameters.
        let status = unsafe { (calls.version)(&mut major, &mut minor) };
        if status != 0 {
            return Err(format!("{location}: nvrtcVersion failed ({status})"));
        }
        let mut archs = Vec::new();
        if let (Some(num), Some(list)) = (calls.num_archs, calls.archs) {
            let mut n = 0;
            // SAFETY: NVRTC writes `n`, then `n` ints into a buffer of that size.
            if unsafe { num(&mut n) } == 0 && n > 0 {
                archs = vec![0; n as usize];
                if unsafe { list(archs.as_mut_ptr()) } != 0 {
                    archs.clear();
                }
            }
        }
        archs.sort_unstable();
        Ok(Nvrtc {
            calls,
            location,
            version: (major, minor),
            archs,
            _library: lib,
        })
    }

    /// `compute_XY` for a device of compute capability `wanted` (`90`): the device's own when
    /// NVRTC knows it, else the newest NVRTC knows below it (the driver compiles older PTX for
    /// newer devices).
    pub fn arch_for(&self, wanted: i32) -> Result<String, String> {
        if self.archs.is_empty() || self.archs.contains(&wanted) {
            return Ok(format!("compute_{wanted}"));
        }
        match self.archs.iter().rev().find(|&&a| a <= wanted) {
            Some(a) => Ok(format!("compute_{a}")),
            None => Err(format!(
                "NVRTC {}.{} compiles for {:?}, none of them for compute capability {}.{}",
                self.version.0,
                self.version.1,
                self.archs,
                wanted / 10,
                wanted % 10
            )),
        }
    }

    fn error(&self, status: Status) -> String {
        // SAFETY: NVRTC returns a static string for every status.
        let s = unsafe { (self.calls.error_string)(status) };
        if s.is_null() {
            format!("NVRTC error {status}")
        } else {
            // SAFETY: a NUL-terminated static string.
            unsafe { CStr::from_ptr(s) }.to_string_lossy().into_owned()
        }
    }

    /// Compiles CUDA C++ `source` (called `name` in messages) to PTX with `options`.
    pub fn compile(
        &self,
        source: &str,
        name: &str,
        options: &[String],
    ) -> Result<String, CompileFailure> {
        let c = &self.calls;
        let nvrtc = |what: &str, status: Status| {
            CompileFailure::Nvrtc(format!("{what}: {}", self.error(status)))
        };
        let src = CString::new(source)
            .map_err(|_| CompileFailure::Nvrtc("the source holds a NUL byte".into()))?;
        let file = CString::new(format!("{name}.cu"))
            .map_err(|_| CompileFailure::Nvrtc("the kernel name holds a NUL byte".into()))?;
        let opts: Vec<CString> = options
            .iter()
            .map(|o| CString::new(o.as_str()))
            .collect::<Result<_, _>>()
            .map_err(|_| CompileFailure::Nvrtc("an option holds a NUL byte".into()))?;
        let opt_ptrs: Vec<*const c_char> = opts.iter().map(|o| o.as_ptr()).collect();
        let mut prog: Program = std::ptr::null_mut();
        // SAFETY: valid NUL-terminated strings; no headers.
        let status = unsafe {
            (c.create)(
                &mut prog,
                src.as_ptr(),
                file.as_ptr(),
                0,
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        if status != 0 {
            return Err(nvrtc("nvrtcCreateProgram", status));
        }
        struct Destroy<'a>(&'a Calls, Program);
        impl Drop for Destroy<'_> {
            fn drop(&mut self) {
                // SAFETY: a program created above, destroyed once.
                unsafe { (self.0.destroy)(&mut self.1) };
            }
        }
        let guard = Destroy(c, prog);
        // SAFETY: `opt_ptrs` holds `len` valid strings that outlive the call.
        let status = unsafe { (c.compile)(guard.1, opt_ptrs.len() as c_int, opt_ptrs.as_ptr()) };
        if status != 0 {
            let log = self.text(guard.1, c.log_size, c.log).unwrap_or_default();
            return Err(if status == NVRTC_ERROR_COMPILATION {
                CompileFailure::Source(log)
            } else {
                CompileFailure::Nvrtc(format!(
                    "nvrtcCompileProgram: {}\n{log}",
                    self.error(status)
                ))
            });
        }
        self.text(guard.1, c.ptx_size, c.ptx)
            .map_err(|status| nvrtc("nvrtcGetPTX", status))
    }

    /// A program's log or PTX: its size, then its text.
    fn text(
        &self,
        prog: Program,
        size: unsafe extern "C" fn(Program, *mut usize) -> Status,
        get: unsafe extern "C" fn(Program, *mut c_char) -> Status,
    ) -> Result<String, Status> {
        let mut n = 0usize;
        // SAFETY: one out-parameter.
        let status = unsafe { size(prog, &mut n) };
        if status != 0 {
            return Err(status);
        }
        let mut buf = vec![0u8; n.max(1)];
        // SAFETY: the buffer holds the size NVRTC asked for.
        let status = unsafe { get(prog, buf.as_mut_ptr() as *mut c_char) };
        if status != 0 {
            return Err(status);
        }
        let end = buf.iter().position(|&b| b == 0).unwrap_or(buf.len());
        Ok(String::from_utf8_lossy(&buf[..end]).into_owned())
    }
}

/// Reads `OP2_CUDA_ARCH`-style text (`compute_90`, `sm_90`, `90`, `9.0`) as a compute capability
/// number (`90`).
pub fn parse_arch(text: &str) -> Option<i32> {
    let t = text.trim();
    let t = t
        .strip_prefix("compute_")
        .or_else(|| t.strip_prefix("sm_"))
        .unwrap_or(t);
    let t = t.trim_end_matches(['a', 'f']);
    if let Some((major, minor)) = t.split_once('.') {
        let (major, minor): (i32, i32) = (major.parse().ok()?, minor.parse().ok()?);
        return (minor < 10).then_some(major * 10 + minor);
    }
    t.parse().ok().filter(|&v| v >= 10)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn architectures_read_in_every_spelling() {
        for t in ["compute_90", "sm_90", "90", "9.0", "sm_90a"] {
            assert_eq!(parse_arch(t), Some(90), "{t}");
        }
        assert_eq!(parse_arch("8.6"), Some(86));
        assert_eq!(parse_arch("hopper"), None);
        assert_eq!(parse_arch("9"), None);
    }

    #[test]
    fn a_missing_library_is_a_reason_not_a_panic() {
        let dir = tempfile::tempdir().unwrap();
        let e = Nvrtc::get(Some(dir.path()))
            .err()
            .expect("an empty directory");
        assert!(e.contains("holds no NVRTC library"), "{e}");
        let e = Nvrtc::get(Some(&dir.path().join("libnvrtc.so.12")))
            .err()
            .unwrap();
        assert!(e.contains("libnvrtc.so.12"), "{e}");
    }
}
