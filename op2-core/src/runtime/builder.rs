//! The runtime builder: the environment's configuration ([`Config::from_env`]) with overrides set in
//! code, the shared settings by method and each backend's own by name.

use super::Runtime;
use crate::contract::config::{CheckpointConfig, CheckpointEvery, Config, LazyOptions, TilingMode};
use crate::contract::registry::find_setting;
use crate::model::comm::Communicator;
use crate::model::error::{Op2Error, Result};
use std::path::PathBuf;
use std::sync::Arc;

/// Builds a [`Runtime`]: starts from the environment ([`Config::from_env`]) and applies overrides.
#[derive(Default, Debug, Clone)]
pub struct RuntimeBuilder {
    backend: Option<String>,
    lazy: Option<bool>,
    lazy_opts: Option<LazyOptions>,
    cc: Option<String>,
    cflags: Option<Vec<String>>,
    cache_dir: Option<PathBuf>,
    dump_gencode: Option<PathBuf>,
    part_size: Option<usize>,
    num_threads: Option<usize>,
    simd: Option<bool>,
    tile_size: Option<usize>,
    tiling: Option<TilingMode>,
    /// Backend settings by name, in the order given.
    settings: Vec<(String, String)>,
    /// The ranks the runtime runs with (default: one process).
    comm: Option<Arc<dyn Communicator>>,
    checkpoint: Option<PathBuf>,
    checkpoint_every: Option<CheckpointEvery>,
    checkpoint_lock_timeout: Option<std::time::Duration>,
}

impl RuntimeBuilder {
    /// The backend by name (overrides `OP2_BACKEND`).
    pub fn backend(mut self, name: &str) -> Self {
        self.backend = Some(name.into());
        self
    }

    /// Lazy (true) or eager execution (overrides `OP2_LAZY`).
    pub fn lazy(mut self, lazy: bool) -> Self {
        self.lazy = Some(lazy);
        self
    }

    /// Which lazy-graph optimisations run (overrides `OP2_LAZY_OPT`).
    pub fn lazy_optimisations(mut self, opts: LazyOptions) -> Self {
        self.lazy_opts = Some(opts);
        self
    }

    /// The C compiler (overrides `OP2_CC`).
    pub fn cc(mut self, cc: &str) -> Self {
        self.cc = Some(cc.into());
        self
    }

    /// Extra compiler flags (overrides `OP2_CFLAGS`).
    pub fn cflags<S: Into<String>>(mut self, flags: impl IntoIterator<Item = S>) -> Self {
        self.cflags = Some(flags.into_iter().map(Into::into).collect());
        self
    }

    /// The compiled-code cache directory (overrides `OP2_CACHE_DIR`).
    pub fn cache_dir(mut self, dir: impl Into<PathBuf>) -> Self {
        self.cache_dir = Some(dir.into());
        self
    }

    /// Where to write generated sources (overrides `OP2_DUMP_GENCODE`).
    pub fn dump_gencode(mut self, dir: impl Into<PathBuf>) -> Self {
        self.dump_gencode = Some(dir.into());
        self
    }

    /// Block size for planned backends (overrides `OP2_PART_SIZE`).
    pub fn part_size(mut self, n: usize) -> Self {
        self.part_size = Some(n);
        self
    }

    /// Threads for threaded backends (overrides `OMP_NUM_THREADS`).
    pub fn num_threads(mut self, n: usize) -> Self {
        self.num_threads = Some(n);
        self
    }

    /// Whether host loops run elements in SIMD batches where they can (overrides `OP2_SIMD`).
    pub fn simd(mut self, on: bool) -> Self {
        self.simd = Some(on);
        self
    }

    /// Elements of a chain's first loop per tile when the lazy graph tiles loops (overrides
    /// `OP2_TILE_SIZE`; tiling itself is the lazy optimisation `tiling`).
    pub fn tile_size(mut self, n: usize) -> Self {
        self.tile_size = Some(n);
        self
    }

    /// When chains of loops are tiled (overrides `OP2_TILING`).
    pub fn tiling(mut self, mode: TilingMode) -> Self {
        self.tiling = Some(mode);
        self
    }

    /// A backend's own setting by name (`cuda_strategy`, `opencl_device`, ...; overrides its
    /// environment variable). [`crate::contract::registry::known_settings`] lists them; an unknown name or
    /// a value the setting does not take is a [`Op2Error::Config`] at [`RuntimeBuilder::build`].
    pub fn setting(mut self, name: &str, value: impl ToString) -> Self {
        self.settings.push((name.into(), value.to_string()));
        self
    }

    /// The ranks the runtime runs with: `op2-mpi`'s MPI communicator, or one of
    /// [`crate::thread_communicators`] (default: this process alone).
    pub fn communicator(mut self, comm: Arc<dyn Communicator>) -> Self {
        self.comm = Some(comm);
        self
    }

    /// Checkpoints into `path` (overrides `OP2_CHECKPOINT`); when the file exists, the program
    /// restarts from it: loops before its backup point are replayed, not run. See
    /// [`Runtime::checkpoint_stats`].
    pub fn checkpoint(mut self, path: impl Into<PathBuf>) -> Self {
        self.checkpoint = Some(path.into());
        self
    }

    /// How often to checkpoint (overrides `OP2_CHECKPOINT_EVERY`; default every 300 s).
    pub fn checkpoint_every(mut self, every: CheckpointEvery) -> Self {
        self.checkpoint_every = Some(every);
        self
    }

    /// How long to wait for another job still holding the checkpoint before giving up with
    /// [`crate::Op2Error::CheckpointInUse`] (overrides `OP2_CHECKPOINT_LOCK_TIMEOUT`; default
    /// 10 s).
    pub fn checkpoint_lock_timeout(mut self, timeout: std::time::Duration) -> Self {
        self.checkpoint_lock_timeout = Some(timeout);
        self
    }

    /// The configuration this builder would use.
    pub fn config(&self) -> Result<Config> {
        let mut c = Config::from_env()?;
        if let Some(v) = &self.backend {
            c.backend = v.clone();
        }
        if let Some(v) = self.lazy {
            c.lazy = v;
        }
        if let Some(v) = self.lazy_opts {
            c.lazy_opts = v;
        }
        if let Some(v) = &self.cc {
            c.cc = v.clone();
        }
        if let Some(v) = &self.cflags {
            c.cflags = v.clone();
        }
        if let Some(v) = &self.cache_dir {
            c.cache_dir = v.clone();
        }
        if let Some(v) = &self.dump_gencode {
            c.dump_gencode = Some(v.clone());
        }
        if let Some(v) = self.part_size {
            c.part_size = Some(v);
        }
        if let Some(v) = self.num_threads {
            c.num_threads = Some(v);
        }
        if let Some(v) = self.simd {
            c.simd = v;
        }
        if let Some(v) = self.tile_size {
            c.tile_size = Some(v);
        }
        if let Some(v) = self.tiling {
            c.tiling = v;
        }
        for (key, v) in [
            ("part_size", c.part_size),
            ("num_threads", c.num_threads),
            ("tile_size", c.tile_size),
        ] {
            if v == Some(0) {
                return Err(Op2Error::Config {
                    key: key.into(),
                    value: "0".into(),
                    reason: "must be positive".into(),
                });
            }
        }
        if let Some(path) = &self.checkpoint {
            // The environment's other checkpoint settings stay.
            let ck = c
                .checkpoint
                .get_or_insert_with(|| CheckpointConfig::new(path.clone(), Default::default()));
            ck.path = path.clone();
        }
        if let Some(t) = self.checkpoint_lock_timeout {
            match &mut c.checkpoint {
                Some(ck) => ck.lock_timeout = t,
                None => {
                    return Err(no_checkpoint_file(
                        "checkpoint_lock_timeout",
                        format!("{t:?}"),
                    ));
                }
            }
        }
        if let Some(every) = &self.checkpoint_every {
            if let Some(reason) = every.problem() {
                return Err(Op2Error::Config {
                    key: "checkpoint_every".into(),
                    value: format!("{every:?}"),
                    reason: reason.into(),
                });
            }
            match &mut c.checkpoint {
                Some(ck) => ck.every = every.clone(),
                None => return Err(no_checkpoint_file("checkpoint_every", format!("{every:?}"))),
            }
        }
        for (name, value) in &self.settings {
            find_setting(name)?.check(value)?;
            c.settings.set(name, value);
        }
        Ok(c)
    }

    /// Creates the runtime and its backend.
    pub fn build(self) -> Result<Runtime> {
        let config = self.config()?;
        match self.comm {
            Some(comm) => Runtime::with_communicator(config, comm),
            None => Runtime::with_config(config),
        }
    }
}

/// A checkpoint setting given without a checkpoint file.
fn no_checkpoint_file(key: &str, value: String) -> Op2Error {
    Op2Error::Config {
        key: key.into(),
        value,
        reason: "no checkpoint file (RuntimeBuilder::checkpoint or OP2_CHECKPOINT)".into(),
    }
}
