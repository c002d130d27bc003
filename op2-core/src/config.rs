//! Runtime configuration: the `OP2_*` environment variables and their programmatic equivalents.

use crate::error::{Op2Error, Result};
use std::path::PathBuf;

/// Settings of one runtime. [`Config::from_env`] reads the environment; the runtime builder overrides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Backend name (`OP2_BACKEND`, default `seq`).
    pub backend: String,
    /// Record loops and run them when their results are needed (`OP2_LAZY`, default on; `0` runs each
    /// loop at once).
    pub lazy: bool,
    /// C compiler command (`OP2_CC`, default `cc`).
    pub cc: String,
    /// Extra compiler flags (`OP2_CFLAGS`, split on whitespace), after the defaults.
    pub cflags: Vec<String>,
    /// Where compiled code is cached (`OP2_CACHE_DIR`, default `<user cache dir>/op2-rs`).
    pub cache_dir: PathBuf,
    /// Where to write every generated source (`OP2_DUMP_GENCODE`).
    pub dump_gencode: Option<PathBuf>,
    /// Mini-partition (block) size for planned backends (`OP2_PART_SIZE`).
    pub part_size: Option<usize>,
    /// Threads for threaded backends (`OMP_NUM_THREADS`).
    pub num_threads: Option<usize>,
    /// Fewest elements a loop gives each thread of a threaded backend (`OP2_OMP_MIN_PER_THREAD`):
    /// smaller loops run on fewer threads; default the backend's (8,192 for `openmp`), 1 uses every
    /// thread for every loop (tests of the threaded code paths on small meshes).
    pub min_per_thread: Option<usize>,
    /// OpenCL platform: an index or part of its name (`OP2_OPENCL_PLATFORM`); default any.
    pub opencl_platform: Option<String>,
    /// OpenCL device: an index within the platform(s) or part of its name (`OP2_OPENCL_DEVICE`);
    /// default the first device with double precision.
    pub opencl_device: Option<String>,
    /// CUDA device ordinal (`OP2_CUDA_DEVICE`); default 0.
    pub cuda_device: Option<usize>,
    /// How the CUDA backend keeps indirect increments race-free (`OP2_CUDA_STRATEGY`: `colour`,
    /// staging per plan block with block colours launched in turn, or `atomics`, `atomicAdd`
    /// straight to global memory in one launch); default the backend's.
    pub cuda_strategy: Option<String>,
    /// The virtual architecture NVRTC compiles for (`OP2_CUDA_ARCH`, e.g. `compute_90` or `90`);
    /// default the device's.
    pub cuda_arch: Option<String>,
    /// The NVRTC library, a file or the directory holding it (`OP2_NVRTC`); default the dynamic
    /// loader's search (`libnvrtc.so.13`, `.12`, ...) and the CUDA toolkit's usual places.
    pub nvrtc: Option<PathBuf>,
    /// Wait for every loop to finish on a device backend (`OP2_CUDA_SYNC=1`), so that per-loop
    /// timings are device times, as OP2's own CUDA code does; default off (loops queue up).
    pub cuda_sync: bool,
}

impl Default for Config {
    fn default() -> Self {
        Config {
            backend: "seq".into(),
            lazy: true,
            cc: "cc".into(),
            cflags: Vec::new(),
            cache_dir: default_cache_dir(),
            dump_gencode: None,
            part_size: None,
            num_threads: None,
            min_per_thread: None,
            opencl_platform: None,
            opencl_device: None,
            cuda_device: None,
            cuda_strategy: None,
            cuda_arch: None,
            nvrtc: None,
            cuda_sync: false,
        }
    }
}

fn default_cache_dir() -> PathBuf {
    match dirs::cache_dir() {
        Some(d) => d.join("op2-rs"),
        None => std::env::temp_dir().join(format!("op2-rs-{}", whoami_uid())),
    }
}

fn whoami_uid() -> String {
    std::env::var("USER").unwrap_or_else(|_| "user".into())
}

impl Config {
    /// Defaults overridden by the `OP2_*` and `OMP_NUM_THREADS` environment variables.
    pub fn from_env() -> Result<Self> {
        Self::from_vars(|k| std::env::var(k).ok())
    }

    /// Like [`Config::from_env`], reading variables through `get` (for tests).
    pub fn from_vars(get: impl Fn(&str) -> Option<String>) -> Result<Self> {
        let mut c = Config::default();
        let nonempty = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        if let Some(v) = nonempty("OP2_BACKEND") {
            c.backend = v.trim().to_string();
        }
        if let Some(v) = nonempty("OP2_LAZY") {
            c.lazy = parse_bool("OP2_LAZY", &v)?;
        }
        if let Some(v) = nonempty("OP2_CC") {
            c.cc = v.trim().to_string();
        }
        if let Some(v) = nonempty("OP2_CFLAGS") {
            c.cflags = v.split_whitespace().map(String::from).collect();
        }
        if let Some(v) = nonempty("OP2_CACHE_DIR") {
            c.cache_dir = PathBuf::from(v);
        }
        if let Some(v) = nonempty("OP2_DUMP_GENCODE") {
            c.dump_gencode = Some(PathBuf::from(v));
        }
        if let Some(v) = nonempty("OP2_PART_SIZE") {
            c.part_size = Some(parse_positive("OP2_PART_SIZE", &v)?);
        }
        if let Some(v) = nonempty("OMP_NUM_THREADS") {
            // OpenMP allows a list for nested levels; the first entry is the outer level.
            let first = v.split(',').next().unwrap_or("");
            c.num_threads = Some(parse_positive("OMP_NUM_THREADS", first)?);
        }
        if let Some(v) = nonempty("OP2_OMP_MIN_PER_THREAD") {
            c.min_per_thread = Some(parse_positive("OP2_OMP_MIN_PER_THREAD", &v)?);
        }
        c.opencl_platform = nonempty("OP2_OPENCL_PLATFORM").map(|v| v.trim().to_string());
        c.opencl_device = nonempty("OP2_OPENCL_DEVICE").map(|v| v.trim().to_string());
        if let Some(v) = nonempty("OP2_CUDA_DEVICE") {
            c.cuda_device = Some(parse_index("OP2_CUDA_DEVICE", &v)?);
        }
        c.cuda_strategy = nonempty("OP2_CUDA_STRATEGY").map(|v| v.trim().to_string());
        c.cuda_arch = nonempty("OP2_CUDA_ARCH").map(|v| v.trim().to_string());
        c.nvrtc = nonempty("OP2_NVRTC").map(|v| PathBuf::from(v.trim()));
        if let Some(v) = nonempty("OP2_CUDA_SYNC") {
            c.cuda_sync = parse_bool("OP2_CUDA_SYNC", &v)?;
        }
        Ok(c)
    }
}

fn parse_bool(key: &str, v: &str) -> Result<bool> {
    match v.trim().to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Ok(true),
        "0" | "false" | "no" | "off" => Ok(false),
        _ => Err(Op2Error::Config {
            key: key.into(),
            value: v.into(),
            reason: "expected 0 or 1".into(),
        }),
    }
}

fn parse_positive(key: &str, v: &str) -> Result<usize> {
    match v.trim().parse::<usize>() {
        Ok(n) if n > 0 => Ok(n),
        _ => Err(Op2Error::Config {
            key: key.into(),
            value: v.into(),
            reason: "expected a positive integer".into(),
        }),
    }
}

fn parse_index(key: &str, v: &str) -> Result<usize> {
    v.trim().parse::<usize>().map_err(|_| Op2Error::Config {
        key: key.into(),
        value: v.into(),
        reason: "expected a device number (0, 1, ...)".into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_variables() {
        let c = Config::from_vars(|k| match k {
            "OP2_LAZY" => Some("0".into()),
            "OP2_CFLAGS" => Some("-g  -O1".into()),
            "OMP_NUM_THREADS" => Some("3,2".into()),
            _ => None,
        })
        .unwrap();
        assert!(!c.lazy);
        assert_eq!(c.cflags, ["-g", "-O1"]);
        assert_eq!(c.num_threads, Some(3));
        let c = Config::from_vars(|k| match k {
            "OP2_CUDA_DEVICE" => Some("1".into()),
            "OP2_CUDA_STRATEGY" => Some(" atomics ".into()),
            "OP2_NVRTC" => Some("/opt/nvrtc/lib".into()),
            "OP2_CUDA_SYNC" => Some("1".into()),
            _ => None,
        })
        .unwrap();
        assert_eq!(c.cuda_device, Some(1));
        assert_eq!(c.cuda_strategy.as_deref(), Some("atomics"));
        assert_eq!(c.nvrtc, Some(PathBuf::from("/opt/nvrtc/lib")));
        assert!(c.cuda_sync);
    }

    #[test]
    fn rejects_bad_values() {
        let bad = |key: &'static str, val: &'static str| {
            Config::from_vars(move |k| (k == key).then(|| val.to_string())).unwrap_err()
        };
        assert!(matches!(bad("OP2_LAZY", "maybe"), Op2Error::Config { .. }));
        assert!(matches!(bad("OP2_PART_SIZE", "0"), Op2Error::Config { .. }));
        assert!(matches!(
            bad("OMP_NUM_THREADS", "many"),
            Op2Error::Config { .. }
        ));
        assert!(matches!(
            bad("OP2_CUDA_DEVICE", "first"),
            Op2Error::Config { .. }
        ));
    }
}
