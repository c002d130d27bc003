//! Runtime configuration: the `OP2_*` environment variables and their programmatic equivalents, the
//! shared ones as fields and each backend's own as declared [`crate::contract::settings`].

use crate::contract::settings::{SettingValues, parse_flag};
use crate::model::error::{Op2Error, Result};
use std::path::PathBuf;

/// Settings of one runtime. [`Config::from_env`] reads the environment; the runtime builder overrides.
/// The fields are what the runtime and every backend share; a backend's own settings are in
/// [`Config::settings`], declared by the backend (see [`crate::contract::settings`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Backend name (`OP2_BACKEND`, default `seq`).
    pub backend: String,
    /// Record loops and run them when their results are needed (`OP2_LAZY`, default on; `0` runs each
    /// loop at once).
    pub lazy: bool,
    /// Which of the lazy graph's optimisations run (`OP2_LAZY_OPT`, see [`LazyOptions`]).
    pub lazy_opts: LazyOptions,
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
    /// Whether the host backends' generated loops run elements in SIMD batches where a loop
    /// allows it (`OP2_SIMD`, default on; `0` runs every element alone, to measure the gain).
    pub simd: bool,
    /// Elements of the first loop per tile when the lazy graph tiles a chain of loops
    /// (`OP2_TILE_SIZE`; by default sized so that a tile's data fits a core's cache).
    pub tile_size: Option<usize>,
    /// When the lazy optimisation `tiling` tiles a chain (`OP2_TILING`, default `auto`).
    pub tiling: TilingMode,
    /// The registered backends' own settings, by name, as the environment and the builder gave
    /// them (checked against their declarations).
    pub settings: SettingValues,
    /// Checkpoint and restart (`OP2_CHECKPOINT`, `OP2_CHECKPOINT_EVERY`): off by default.
    pub checkpoint: Option<CheckpointConfig>,
}

/// Where and how often a runtime checkpoints (see the runtime's `checkpoint` module): a program
/// started again with the file present fast-forwards to the last checkpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CheckpointConfig {
    /// The checkpoint file (`OP2_CHECKPOINT`).
    pub path: PathBuf,
    /// When a checkpoint is taken (`OP2_CHECKPOINT_EVERY`).
    pub every: CheckpointEvery,
    /// How long a run waits for another job still holding the checkpoint (its lock file,
    /// `<file>.lock`) before it gives up with [`Op2Error::CheckpointInUse`]
    /// (`OP2_CHECKPOINT_LOCK_TIMEOUT`, seconds; default
    /// [`CheckpointConfig::DEFAULT_LOCK_TIMEOUT`]): the ranks of a job killed a moment ago may
    /// take that long to go.
    pub lock_timeout: std::time::Duration,
}

impl CheckpointConfig {
    /// The default [`CheckpointConfig::lock_timeout`]: 10 seconds.
    pub const DEFAULT_LOCK_TIMEOUT: std::time::Duration = std::time::Duration::from_secs(10);

    /// Checkpoints into `path` as often as `every` says, waiting the default time for the file's
    /// lock.
    pub fn new(path: impl Into<PathBuf>, every: CheckpointEvery) -> Self {
        CheckpointConfig {
            path: path.into(),
            every,
            lock_timeout: Self::DEFAULT_LOCK_TIMEOUT,
        }
    }
}

/// When a checkpoint is taken: always between two loops (the backup point), before the loop
/// that meets the condition.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckpointEvery {
    /// Before every `n`-th loop (`OP2_CHECKPOINT_EVERY=500` or `500 loops`).
    Loops(u64),
    /// Before the first loop once this much time has passed since the last checkpoint (or the
    /// start): `OP2_CHECKPOINT_EVERY=300s`, `5min` or `1h`. The default, every 300 s.
    Time(std::time::Duration),
    /// Before every `every`-th call of the loop whose kernel is `kernel` after its first: an
    /// iteration of a time-stepping program (`OP2_CHECKPOINT_EVERY=save_soln:100`).
    Kernel {
        /// The kernel's name.
        kernel: String,
        /// Calls between checkpoints.
        every: u64,
    },
}

impl Default for CheckpointEvery {
    fn default() -> Self {
        CheckpointEvery::Time(std::time::Duration::from_secs(300))
    }
}

impl CheckpointEvery {
    /// Why this interval cannot be used, if it cannot: an interval of 0, or a kernel name that
    /// is not a C identifier (no loop could have it).
    pub fn problem(&self) -> Option<&'static str> {
        match self {
            CheckpointEvery::Loops(0) | CheckpointEvery::Kernel { every: 0, .. } => {
                Some("the interval must be at least 1")
            }
            CheckpointEvery::Kernel { kernel, .. }
                if !crate::model::names::is_c_identifier(kernel) =>
            {
                Some("the kernel must be a C identifier")
            }
            _ => None,
        }
    }
}

impl std::str::FromStr for CheckpointEvery {
    type Err = Op2Error;

    /// `N` or `N loops`, `Ns` / `Nmin` / `Nh`, or `kernel:N`.
    fn from_str(v: &str) -> Result<Self> {
        let bad = |reason: &str| Op2Error::Config {
            key: "OP2_CHECKPOINT_EVERY".into(),
            value: v.into(),
            reason: reason.into(),
        };
        let t = v.trim();
        let positive = |n: &str| match n.trim().parse::<u64>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(bad(
                "expected N (loops), N loops, Ns, Nmin, Nh or KERNEL:N with N a positive integer",
            )),
        };
        if let Some((kernel, n)) = t.split_once(':') {
            let every = CheckpointEvery::Kernel {
                kernel: kernel.trim().into(),
                every: positive(n)?,
            };
            return match every.problem() {
                Some(reason) => Err(bad(reason)),
                None => Ok(every),
            };
        }
        let digits = t.find(|c: char| !c.is_ascii_digit()).unwrap_or(t.len());
        let (n, unit) = t.split_at(digits);
        let n = positive(n)?;
        let secs = |k: u64| {
            n.checked_mul(k)
                .map(|s| CheckpointEvery::Time(std::time::Duration::from_secs(s)))
                .ok_or_else(|| bad("too long"))
        };
        match unit.trim() {
            "" | "loops" | "loop" => Ok(CheckpointEvery::Loops(n)),
            "s" | "sec" | "seconds" => secs(1),
            "min" | "minutes" => secs(60),
            "h" | "hours" => secs(3600),
            _ => Err(bad("unknown unit (loops, s, min or h)")),
        }
    }
}

impl Default for Config {
    fn default() -> Self {
        Config {
            backend: "seq".into(),
            lazy: true,
            lazy_opts: LazyOptions::default(),
            cc: "cc".into(),
            cflags: Vec::new(),
            cache_dir: default_cache_dir(),
            dump_gencode: None,
            part_size: None,
            num_threads: None,
            simd: true,
            tile_size: None,
            tiling: TilingMode::Auto,
            settings: SettingValues::default(),
            checkpoint: None,
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

/// The value of variable `key` through `get`, unless it is unset or blank (a blank variable means
/// the default, as if unset).
pub(crate) fn nonempty(get: &dyn Fn(&str) -> Option<String>, key: &str) -> Option<String> {
    get(key).filter(|v| !v.trim().is_empty())
}

impl Config {
    /// The threads a threaded backend runs on: [`Config::num_threads`] (`OMP_NUM_THREADS`), else
    /// every core the process may use.
    pub fn host_threads(&self) -> usize {
        self.num_threads.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(usize::from)
                .unwrap_or(1)
        })
    }

    /// Defaults overridden by the shared `OP2_*` variables and `OMP_NUM_THREADS`, read through
    /// `get`. The backends' own variables are read by [`Config::from_vars`], beside the registry
    /// that knows which backends (and so which settings) this binary has.
    pub(crate) fn from_shared_vars(get: &dyn Fn(&str) -> Option<String>) -> Result<Self> {
        let mut c = Config::default();
        let nonempty = |k: &str| nonempty(get, k);
        if let Some(v) = nonempty("OP2_BACKEND") {
            c.backend = v.trim().to_string();
        }
        if let Some(v) = nonempty("OP2_LAZY") {
            c.lazy = parse_bool("OP2_LAZY", &v)?;
        }
        if let Some(v) = nonempty("OP2_LAZY_OPT") {
            c.lazy_opts = v.parse()?;
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
        if let Some(v) = nonempty("OP2_SIMD") {
            c.simd = parse_bool("OP2_SIMD", &v)?;
        }
        if let Some(v) = nonempty("OP2_TILE_SIZE") {
            c.tile_size = Some(parse_positive("OP2_TILE_SIZE", &v)?);
        }
        if let Some(v) = nonempty("OP2_TILING") {
            c.tiling = v.parse()?;
        }
        if let Some(v) = nonempty("OMP_NUM_THREADS") {
            // OpenMP allows a list for nested levels; the first entry is the outer level.
            let first = v.split(',').next().unwrap_or("");
            c.num_threads = Some(parse_positive("OMP_NUM_THREADS", first)?);
        }
        if let Some(v) = nonempty("OP2_CHECKPOINT") {
            let mut ck = CheckpointConfig::new(
                v,
                match nonempty("OP2_CHECKPOINT_EVERY") {
                    Some(e) => e.parse()?,
                    None => CheckpointEvery::default(),
                },
            );
            if let Some(t) = nonempty("OP2_CHECKPOINT_LOCK_TIMEOUT") {
                ck.lock_timeout = parse_seconds("OP2_CHECKPOINT_LOCK_TIMEOUT", &t)?;
            }
            c.checkpoint = Some(ck);
        } else if let Some((key, v)) = ["OP2_CHECKPOINT_EVERY", "OP2_CHECKPOINT_LOCK_TIMEOUT"]
            .into_iter()
            .find_map(|k| nonempty(k).map(|v| (k, v)))
        {
            return Err(Op2Error::Config {
                key: key.into(),
                value: v,
                reason: "set OP2_CHECKPOINT (the file) too".into(),
            });
        }
        Ok(c)
    }

    /// The value of backend setting `name` as given by the environment or the builder, if any.
    pub fn setting(&self, name: &str) -> Option<&str> {
        self.settings.get(name)
    }
}

/// When the lazy graph tiles a chain of loops (with the lazy optimisation `tiling` on).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum TilingMode {
    /// Where it pays (`OP2_TILING=auto`): chains that move enough data, whose inspection finds
    /// balanced tiles, and whose first runs, timed both ways, were faster tiled.
    #[default]
    Auto,
    /// Every chain of two or more loops that has at least two tiles (`OP2_TILING=always`): for
    /// testing and measuring.
    Always,
}

impl std::str::FromStr for TilingMode {
    type Err = Op2Error;

    fn from_str(v: &str) -> Result<Self> {
        match v.trim().to_ascii_lowercase().as_str() {
            "auto" => Ok(TilingMode::Auto),
            "always" => Ok(TilingMode::Always),
            _ => Err(Op2Error::Config {
                key: "OP2_TILING".into(),
                value: v.into(),
                reason: "expected auto or always (OP2_LAZY_OPT=-tiling turns tiling off)".into(),
            }),
        }
    }
}

/// The lazy graph's optimisations (seed 002's future work), each on or off. `OP2_LAZY_OPT` is
/// `all`, `none`, or a comma-separated list of names, each optionally prefixed with `-` to turn
/// it off (applied in order after the defaults): `early_halo`, `successive_halo`,
/// `sibling_fusion`, `chain_fusion`, `temporaries`, `tiling`. For example
/// `OP2_LAZY_OPT=-chain_fusion`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LazyOptions {
    /// An exchange of a Dat whose halo is up to date (nothing since the last exchange that ran
    /// wrote it) is not recorded.
    pub early_halo: bool,
    /// An exchange of a Dat that a pending exchange already brings up to date (no write in
    /// between) is not recorded.
    pub successive_halo: bool,
    /// Independent direct loops over the same set, forced together, run as one generated loop.
    pub sibling_fusion: bool,
    /// A direct loop that depends on the direct loop before it over the same set runs in the
    /// same generated loop: each element goes through both kernels in order.
    pub chain_fusion: bool,
    /// Temporary Dats get their memory when their first loop runs and give it back to a pool
    /// when released, so the next temporary of that size reuses it.
    pub temporaries: bool,
    /// A chain of loops forced together (one process, or between two halo exchanges) runs tile
    /// by tile, each tile through every loop while its data is in cache (sparse tiling), where
    /// an inspection finds that it pays.
    pub tiling: bool,
}

impl LazyOptions {
    /// Every optimisation on.
    pub const ALL: LazyOptions = LazyOptions {
        early_halo: true,
        successive_halo: true,
        sibling_fusion: true,
        chain_fusion: true,
        temporaries: true,
        tiling: true,
    };
    /// Every optimisation off: the graph as recorded.
    pub const NONE: LazyOptions = LazyOptions {
        early_halo: false,
        successive_halo: false,
        sibling_fusion: false,
        chain_fusion: false,
        temporaries: false,
        tiling: false,
    };
    /// The names `OP2_LAZY_OPT` takes, in the order of the fields.
    pub const NAMES: [&'static str; 6] = [
        "early_halo",
        "successive_halo",
        "sibling_fusion",
        "chain_fusion",
        "temporaries",
        "tiling",
    ];

    fn flag(&mut self, name: &str) -> Option<&mut bool> {
        Some(match name {
            "early_halo" => &mut self.early_halo,
            "successive_halo" => &mut self.successive_halo,
            "sibling_fusion" => &mut self.sibling_fusion,
            "chain_fusion" => &mut self.chain_fusion,
            "temporaries" => &mut self.temporaries,
            "tiling" => &mut self.tiling,
            _ => return None,
        })
    }

    /// Whether any fusion is on.
    pub fn fusion(&self) -> bool {
        self.sibling_fusion || self.chain_fusion
    }
}

impl Default for LazyOptions {
    /// Every optimisation on (each one measured to save time or memory; docs/13-lazy-graph.md).
    fn default() -> Self {
        LazyOptions::ALL
    }
}

impl std::str::FromStr for LazyOptions {
    type Err = Op2Error;

    fn from_str(v: &str) -> Result<Self> {
        let mut o = LazyOptions::default();
        for item in v.split(',').map(str::trim).filter(|i| !i.is_empty()) {
            match item {
                "all" => o = LazyOptions::ALL,
                "none" => o = LazyOptions::NONE,
                _ => {
                    let (on, name) = match item.strip_prefix('-') {
                        Some(n) => (false, n),
                        None => (true, item.strip_prefix('+').unwrap_or(item)),
                    };
                    *o.flag(name).ok_or_else(|| Op2Error::Config {
                        key: "OP2_LAZY_OPT".into(),
                        value: v.into(),
                        reason: format!(
                            "unknown optimisation `{name}` (all, none, or {})",
                            LazyOptions::NAMES.join(", ")
                        ),
                    })? = on;
                }
            }
        }
        Ok(o)
    }
}

fn parse_bool(key: &str, v: &str) -> Result<bool> {
    parse_flag(v).ok_or_else(|| Op2Error::Config {
        key: key.into(),
        value: v.into(),
        reason: "expected 0 or 1".into(),
    })
}

fn parse_seconds(key: &str, v: &str) -> Result<std::time::Duration> {
    let t = v.trim();
    let t = t.strip_suffix('s').unwrap_or(t).trim();
    t.parse::<f64>()
        .ok()
        .filter(|s| s.is_finite() && *s >= 0.0 && *s < 1e9)
        .map(std::time::Duration::from_secs_f64)
        .ok_or_else(|| Op2Error::Config {
            key: key.into(),
            value: v.into(),
            reason: "expected seconds (`10`, `2.5`, `30s`)".into(),
        })
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lazy_options_parse_from_the_defaults_in_order() {
        assert_eq!("all".parse::<LazyOptions>().unwrap(), LazyOptions::ALL);
        assert_eq!("none".parse::<LazyOptions>().unwrap(), LazyOptions::NONE);
        let o: LazyOptions = "none, chain_fusion,+early_halo".parse().unwrap();
        assert!(o.chain_fusion && o.early_halo && !o.sibling_fusion && !o.temporaries);
        let o: LazyOptions = "-temporaries".parse().unwrap();
        assert!(!o.temporaries && o.successive_halo);
        let e = "fusion".parse::<LazyOptions>().unwrap_err().to_string();
        assert!(e.contains("unknown optimisation `fusion`"), "{e}");
    }

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
            bad("OP2_CHECKPOINT_EVERY", "100"),
            Op2Error::Config { .. }
        ));
    }

    #[test]
    fn reads_checkpoint_intervals() {
        use std::time::Duration;
        let every = |v: &str| v.parse::<CheckpointEvery>();
        assert_eq!(every("500").unwrap(), CheckpointEvery::Loops(500));
        assert_eq!(every(" 7 loops").unwrap(), CheckpointEvery::Loops(7));
        assert_eq!(
            every("90s").unwrap(),
            CheckpointEvery::Time(Duration::from_secs(90))
        );
        assert_eq!(
            every("2 min").unwrap(),
            CheckpointEvery::Time(Duration::from_secs(120))
        );
        assert_eq!(
            every("1h").unwrap(),
            CheckpointEvery::Time(Duration::from_secs(3600))
        );
        assert_eq!(
            every("save_soln: 100").unwrap(),
            CheckpointEvery::Kernel {
                kernel: "save_soln".into(),
                every: 100
            }
        );
        for bad in ["0", "", "-3", "5 parsecs", "1e3", "a b:3", "k:0", ":4"] {
            assert!(
                matches!(every(bad), Err(Op2Error::Config { .. })),
                "{bad:?} was accepted"
            );
        }
        let c = Config::from_vars(|k| match k {
            "OP2_CHECKPOINT" => Some("/tmp/run.ckpt".into()),
            "OP2_CHECKPOINT_EVERY" => Some("update:10".into()),
            _ => None,
        })
        .unwrap();
        let ck = c.checkpoint.unwrap();
        assert_eq!(ck.path, PathBuf::from("/tmp/run.ckpt"));
        assert_eq!(
            ck.every,
            CheckpointEvery::Kernel {
                kernel: "update".into(),
                every: 10
            }
        );
        let c = Config::from_vars(|k| (k == "OP2_CHECKPOINT").then(|| "c".into())).unwrap();
        assert_eq!(c.checkpoint.unwrap().every, CheckpointEvery::default());
    }
}
