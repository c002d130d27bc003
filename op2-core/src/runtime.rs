//! The runtime: declares sets, maps and data, validates and records `par_loop`s in the lazy trace, and
//! runs them on the chosen backend when their results are needed.

use crate::access::Access;
use crate::arg::{Arg, ArgTarget, Via};
use crate::backend::{Backend, LoopInvocation, PreparedLoop, find_backend};
use crate::carrier::{Carrier, CarrierKind, Const, Dat, Global, check_len};
use crate::config::Config;
use crate::dtype::{DType, HostBuffer, Scalar};
use crate::error::{Op2Error, Result};
use crate::kernel::Kernel;
use crate::map::Map;
use crate::set::{Set, SetSizes};
use crate::signature::{ArgKind, ArgSig, ConstSig, LoopSignature};
use crate::trace::{DataUse, Footprint, Pending, Trace, section};
use std::collections::HashMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// A recorded loop with everything needed to run it.
pub struct LoopRecord {
    sig: Arc<LoopSignature>,
    prepared: Arc<dyn PreparedLoop>,
    set: Set,
    carriers: Vec<Arc<Carrier>>,
    maps: Vec<Map>,
    consts: Vec<Arc<Carrier>>,
    start: usize,
    end: usize,
    /// Bytes the loop moves by OP2's convention (see [`LoopTiming::bytes`]).
    bytes: u64,
}

/// Time spent in one kernel's loops, like OP2's `op_timing_output`.
#[derive(Debug, Clone, PartialEq)]
pub struct LoopTiming {
    /// The kernel's name.
    pub kernel: String,
    /// Loops run.
    pub calls: u64,
    /// Seconds spent running them (the backend's run, data locking included).
    pub seconds: f64,
    /// Bytes moved, by OP2's convention: each Dat once per loop (its iterated rows when direct; when
    /// indirect its whole set, or the rows its map entries can reach if fewer), twice when it is both
    /// read and written; each map's rows once.
    pub bytes: u64,
}

impl LoopTiming {
    /// Achieved bandwidth in GB/s (10^9 bytes per second).
    pub fn gb_per_s(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 / self.seconds / 1e9
        } else {
            0.0
        }
    }
}

/// The bytes a loop moves by OP2's convention (see [`LoopTiming::bytes`]).
fn loop_bytes(sig: &LoopSignature, carriers: &[Arc<Carrier>], maps: &[Map], rows: usize) -> u64 {
    // Per Dat: (id, reads, writes, rows reached directly, map entries reached, its set's size).
    let mut seen: Vec<(u64, bool, bool, usize, usize, usize)> = Vec::new();
    for (a, c) in sig.args.iter().zip(carriers) {
        let CarrierKind::Dat(set) = c.kind() else {
            continue;
        };
        let (direct, entries) = match a.kind {
            ArgKind::Direct => (rows, 0),
            ArgKind::Indirect { .. } => (0, rows),
            ArgKind::Row { arity, .. } => (0, rows * arity),
            ArgKind::Global => (0, 0),
        };
        match seen.iter_mut().find(|s| s.0 == c.id) {
            Some(s) => {
                s.1 |= a.access.reads();
                s.2 |= a.access.writes();
                s.3 = s.3.max(direct);
                s.4 += entries;
            }
            None => seen.push((
                c.id,
                a.access.reads(),
                a.access.writes(),
                direct,
                entries,
                set.size(),
            )),
        }
    }
    let dats: u64 = seen
        .iter()
        .map(|&(id, r, w, direct, entries, size)| {
            let c = carriers
                .iter()
                .find(|c| c.id == id)
                .expect("seen from carriers");
            let n = direct.max(entries.min(size));
            let b = (n * c.dim() * c.dtype().size()) as u64;
            if r && w { 2 * b } else { b }
        })
        .sum();
    let map_bytes: u64 = maps.iter().map(|m| (rows * m.arity() * 4) as u64).sum();
    dats + map_bytes
}

impl LoopRecord {
    /// The loop's signature.
    pub fn signature(&self) -> &LoopSignature {
        &self.sig
    }
}

struct State {
    trace: Trace<Arc<LoopRecord>>,
    prepared: HashMap<LoopSignature, (Arc<LoopSignature>, Arc<dyn PreparedLoop>)>,
    consts: Vec<Arc<Carrier>>,
}

/// The part of a runtime that data carriers point back to (weakly), to force pending work.
pub struct RuntimeShared {
    id: u64,
    config: Config,
    backend: Box<dyn Backend>,
    state: Mutex<State>,
    /// Held while pending work runs, so that concurrent forces keep program order.
    exec: Mutex<()>,
    executed: AtomicU64,
    recorded: AtomicU64,
    /// Per-kernel run times, in order of first run.
    timings: Mutex<Vec<LoopTiming>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves plain bookkeeping behind; keep going with it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl RuntimeShared {
    /// Runs `work` in order. A loop that fails stays pending, with every later one that depends on
    /// it; loops that do not depend on a failure still run. The kept loops go back to the front of
    /// the trace (they come before anything recorded later), so nothing recorded is lost, and the
    /// first error is returned.
    fn run_pending(&self, work: Vec<Pending<Arc<LoopRecord>>>) -> Result<()> {
        let mut first_error = None;
        let mut kept = Vec::new();
        let mut blocked = Footprint::default();
        for p in work {
            if !kept.is_empty() && blocked.must_precede(&p) {
                blocked.add(&p);
                kept.push(p);
                continue;
            }
            if let Err(e) = self.run_record(&p.work) {
                first_error.get_or_insert(e);
                blocked.add(&p);
                kept.push(p);
            }
        }
        if !kept.is_empty() {
            lock(&self.state).trace.requeue_front(kept);
        }
        first_error.map_or(Ok(()), Err)
    }

    fn run_record(&self, rec: &LoopRecord) -> Result<()> {
        let kernel = rec.sig.kernel.name();
        // Each carrier once: exclusively when some arg writes it, shared otherwise.
        let writes = |id: u64| {
            rec.sig
                .args
                .iter()
                .zip(&rec.carriers)
                .any(|(a, c)| c.id == id && a.access.writes())
        };
        let mut locked = Vec::with_capacity(rec.carriers.len() + rec.consts.len());
        for c in rec.carriers.iter().chain(&rec.consts) {
            if !locked.iter().any(|(id, _)| *id == c.id) {
                locked.push((c.id, c.lock_for_loop(kernel, writes(c.id))?));
            }
        }
        let mut pointer = |id: u64| {
            let (_, guard) = locked
                .iter_mut()
                .find(|(i, _)| *i == id)
                .expect("every carrier of the loop was locked just above");
            guard.pointer()
        };
        let args: Vec<_> = rec.carriers.iter().map(|c| pointer(c.id)).collect();
        let consts: Vec<_> = rec
            .consts
            .iter()
            .map(|c| pointer(c.id).cast_const())
            .collect();
        let started = Instant::now();
        rec.prepared.run(&LoopInvocation {
            sig: &rec.sig,
            set: &rec.set,
            start: rec.start,
            end: rec.end,
            args: &args,
            carriers: &rec.carriers,
            maps: &rec.maps,
            consts: &consts,
        })?;
        let seconds = started.elapsed().as_secs_f64();
        let mut timings = lock(&self.timings);
        match timings.iter_mut().find(|t| t.kernel == kernel) {
            Some(t) => {
                t.calls += 1;
                t.seconds += seconds;
                t.bytes += rec.bytes;
            }
            None => timings.push(LoopTiming {
                kernel: kernel.to_string(),
                calls: 1,
                seconds,
                bytes: rec.bytes,
            }),
        }
        drop(timings);
        self.executed.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Runs the pending loops that must precede a host access to `carrier`, then the backend's hook.
    pub(crate) fn force_for_host(&self, carrier: &Carrier, write: bool) -> Result<()> {
        let _order = lock(&self.exec);
        let work = {
            let mut st = lock(&self.state);
            if st.trace.is_empty() {
                Vec::new()
            } else {
                let uses = [DataUse {
                    id: carrier.id,
                    sections: section::ALL,
                }];
                st.trace.take_needed(&uses, if write { &uses } else { &[] })
            }
        };
        self.run_pending(work)?;
        self.backend.host_access(carrier, write)
    }

    fn flush(&self) -> Result<()> {
        let _order = lock(&self.exec);
        let work = lock(&self.state).trace.take_all();
        self.run_pending(work)
    }
}

/// An op2 runtime: one backend, one configuration, one lazy trace. Cheap to clone (a shared handle).
///
/// Every object declared through a runtime belongs to it; using it with another runtime is an error.
#[derive(Clone)]
pub struct Runtime {
    shared: Arc<RuntimeShared>,
}

impl std::fmt::Debug for Runtime {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Runtime")
            .field("backend", &self.shared.backend.name())
            .field("lazy", &self.shared.config.lazy)
            .field("pending_loops", &self.pending_loops())
            .field("executed_loops", &self.executed_loops())
            .finish()
    }
}

impl Drop for Runtime {
    fn drop(&mut self) {
        // The last handle going away: run what is pending so no recorded work is silently lost.
        if Arc::strong_count(&self.shared) == 1 {
            if let Err(e) = self.shared.flush() {
                eprintln!("op2: pending loops failed while the runtime was dropped: {e}");
            }
            // Handles outlive the runtime: the data they read from now on must be the latest.
            let _order = lock(&self.shared.exec);
            if let Err(e) = self.shared.backend.release() {
                eprintln!(
                    "op2: copying device data home failed while the runtime was dropped: {e}"
                );
            }
        }
    }
}

/// Builds a [`Runtime`]: starts from the environment ([`Config::from_env`]) and applies overrides.
#[derive(Default)]
pub struct RuntimeBuilder {
    backend: Option<String>,
    lazy: Option<bool>,
    cc: Option<String>,
    cflags: Option<Vec<String>>,
    cache_dir: Option<PathBuf>,
    dump_gencode: Option<PathBuf>,
    part_size: Option<usize>,
    num_threads: Option<usize>,
    min_per_thread: Option<usize>,
    opencl_platform: Option<String>,
    opencl_device: Option<String>,
    cuda_device: Option<usize>,
    cuda_strategy: Option<String>,
    cuda_arch: Option<String>,
    nvrtc: Option<PathBuf>,
    cuda_sync: Option<bool>,
}

impl RuntimeBuilder {
    /// The CUDA device ordinal (overrides `OP2_CUDA_DEVICE`).
    pub fn cuda_device(mut self, ordinal: usize) -> Self {
        self.cuda_device = Some(ordinal);
        self
    }

    /// The CUDA backend's strategy for indirect increments, `colour` or `atomics` (overrides
    /// `OP2_CUDA_STRATEGY`).
    pub fn cuda_strategy(mut self, strategy: &str) -> Self {
        self.cuda_strategy = Some(strategy.into());
        self
    }

    /// The architecture NVRTC compiles for, e.g. `compute_90` (overrides `OP2_CUDA_ARCH`).
    pub fn cuda_arch(mut self, arch: &str) -> Self {
        self.cuda_arch = Some(arch.into());
        self
    }

    /// The NVRTC library file or its directory (overrides `OP2_NVRTC`).
    pub fn nvrtc(mut self, path: impl Into<PathBuf>) -> Self {
        self.nvrtc = Some(path.into());
        self
    }

    /// Whether a device backend waits for each loop to finish (overrides `OP2_CUDA_SYNC`).
    pub fn cuda_sync(mut self, sync: bool) -> Self {
        self.cuda_sync = Some(sync);
        self
    }

    /// The OpenCL platform, by index or part of its name (overrides `OP2_OPENCL_PLATFORM`).
    pub fn opencl_platform(mut self, which: &str) -> Self {
        self.opencl_platform = Some(which.into());
        self
    }

    /// The OpenCL device, by index or part of its name (overrides `OP2_OPENCL_DEVICE`).
    pub fn opencl_device(mut self, which: &str) -> Self {
        self.opencl_device = Some(which.into());
        self
    }

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

    /// Fewest elements a threaded backend gives each thread of a loop (overrides
    /// `OP2_OMP_MIN_PER_THREAD`; 1 uses every thread for every loop).
    pub fn min_per_thread(mut self, n: usize) -> Self {
        self.min_per_thread = Some(n);
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
        if let Some(v) = self.min_per_thread {
            c.min_per_thread = Some(v);
        }
        if let Some(v) = &self.opencl_platform {
            c.opencl_platform = Some(v.clone());
        }
        if let Some(v) = &self.opencl_device {
            c.opencl_device = Some(v.clone());
        }
        if let Some(v) = self.cuda_device {
            c.cuda_device = Some(v);
        }
        if let Some(v) = &self.cuda_strategy {
            c.cuda_strategy = Some(v.clone());
        }
        if let Some(v) = &self.cuda_arch {
            c.cuda_arch = Some(v.clone());
        }
        if let Some(v) = &self.nvrtc {
            c.nvrtc = Some(v.clone());
        }
        if let Some(v) = self.cuda_sync {
            c.cuda_sync = v;
        }
        for (key, v) in [
            ("part_size", c.part_size),
            ("num_threads", c.num_threads),
            ("min_per_thread", c.min_per_thread),
        ] {
            if v == Some(0) {
                return Err(Op2Error::Config {
                    key: key.into(),
                    value: "0".into(),
                    reason: "must be positive".into(),
                });
            }
        }
        Ok(c)
    }

    /// Creates the runtime and its backend.
    pub fn build(self) -> Result<Runtime> {
        Runtime::with_config(self.config()?)
    }
}

impl Runtime {
    /// A builder starting from the environment.
    pub fn builder() -> RuntimeBuilder {
        RuntimeBuilder::default()
    }

    /// A runtime configured by the environment alone.
    pub fn from_env() -> Result<Runtime> {
        Self::builder().build()
    }

    /// A runtime with exactly this configuration.
    pub fn with_config(config: Config) -> Result<Runtime> {
        let factory = find_backend(&config.backend)?;
        let backend = (factory.create)(&config)?;
        Ok(Runtime {
            shared: Arc::new(RuntimeShared {
                id: next_id(),
                config,
                backend,
                state: Mutex::new(State {
                    trace: Trace::default(),
                    prepared: HashMap::new(),
                    consts: Vec::new(),
                }),
                exec: Mutex::new(()),
                executed: AtomicU64::new(0),
                recorded: AtomicU64::new(0),
                timings: Mutex::new(Vec::new()),
            }),
        })
    }

    /// The configuration in use.
    pub fn config(&self) -> &Config {
        &self.shared.config
    }

    /// The backend's name.
    pub fn backend_name(&self) -> &str {
        self.shared.backend.name()
    }

    /// Loops recorded but not yet run.
    pub fn pending_loops(&self) -> usize {
        lock(&self.shared.state).trace.len()
    }

    /// Time and bytes per kernel so far, in order of first run (OP2's timing output).
    pub fn timings(&self) -> Vec<LoopTiming> {
        lock(&self.shared.timings).clone()
    }

    /// Clears the per-kernel timings (for example after a warm-up).
    pub fn reset_timings(&self) {
        lock(&self.shared.timings).clear();
    }

    /// A device backend's transfer counters; `None` on host backends.
    pub fn device_stats(&self) -> Option<crate::device::DeviceStats> {
        self.shared.backend.device_stats()
    }

    /// Where a Dat's, Global's or Const's valid data lives on a device backend (by carrier id);
    /// `None` on host backends.
    pub fn data_state(&self, carrier: u64) -> Option<crate::device::DataState> {
        self.shared.backend.data_state(carrier)
    }

    /// Loops run so far.
    pub fn executed_loops(&self) -> u64 {
        self.shared.executed.load(Ordering::Relaxed)
    }

    /// Loops recorded so far.
    pub fn recorded_loops(&self) -> u64 {
        self.shared.recorded.load(Ordering::Relaxed)
    }

    /// Runs every pending loop, in order.
    pub fn flush(&self) -> Result<()> {
        self.shared.flush()
    }

    /// Declares a set of `size` elements, all core (no MPI halos).
    pub fn decl_set(&self, size: usize, name: &str) -> Result<Set> {
        self.decl_set_sections(
            SetSizes {
                core: size,
                ..SetSizes::default()
            },
            name,
        )
    }

    /// Declares a set with explicit MPI section sizes.
    pub fn decl_set_sections(&self, sizes: SetSizes, name: &str) -> Result<Set> {
        Set::new(next_id(), self.shared.id, name, sizes)
    }

    /// Declares a map from `from` to `to` with `arity` entries per element; `values` is row-major and
    /// every value is checked against `to`'s size.
    pub fn decl_map(
        &self,
        from: &Set,
        to: &Set,
        arity: usize,
        values: impl Into<Vec<i32>>,
        name: &str,
    ) -> Result<Map> {
        self.own("set", from.name(), from.runtime_id())?;
        self.own("set", to.name(), to.runtime_id())?;
        Map::new(next_id(), from, to, arity, values.into(), name)
    }

    /// Declares a Dat with `dim` values per element of `set` (all sections, halos included).
    pub fn decl_dat<T: Scalar>(
        &self,
        set: &Set,
        dim: usize,
        data: &[T],
        name: &str,
    ) -> Result<Dat<T>> {
        self.own("set", set.name(), set.runtime_id())?;
        if dim == 0 {
            return Err(Op2Error::ZeroDimension {
                what: "dat",
                name: name.into(),
                field: "dim",
            });
        }
        let expected = set.total_size() * dim;
        if data.len() != expected {
            return Err(Op2Error::DataLength {
                what: "dat",
                name: name.into(),
                expected,
                actual: data.len(),
                detail: format!(
                    "{} elements of set `{}` x dim {dim}",
                    set.total_size(),
                    set.name()
                ),
            });
        }
        Ok(Dat::from_carrier(self.carrier(
            CarrierKind::Dat(set.clone()),
            name,
            dim,
            HostBuffer::from_slice(data),
        )))
    }

    /// Declares a zero-filled Dat.
    pub fn decl_dat_zeros<T: Scalar>(&self, set: &Set, dim: usize, name: &str) -> Result<Dat<T>> {
        self.decl_dat(set, dim, &vec![T::ZERO; set.total_size() * dim], name)
    }

    /// Declares a Global with `dim` values.
    pub fn decl_global<T: Scalar>(
        &self,
        dim: usize,
        values: &[T],
        name: &str,
    ) -> Result<Global<T>> {
        if dim == 0 {
            return Err(Op2Error::ZeroDimension {
                what: "global",
                name: name.into(),
                field: "dim",
            });
        }
        check_len("global", name, dim, values.len())?;
        Ok(Global::from_carrier(self.carrier(
            CarrierKind::Global,
            name,
            dim,
            HostBuffer::from_slice(values),
        )))
    }

    /// Declares a named Const visible in every kernel (a scalar when `dim` is 1, else an array).
    pub fn decl_const<T: Scalar>(&self, dim: usize, values: &[T], name: &str) -> Result<Const<T>> {
        crate::names::check_user_name("const", name)?;
        if dim == 0 {
            return Err(Op2Error::ZeroDimension {
                what: "const",
                name: name.into(),
                field: "dim",
            });
        }
        check_len("const", name, dim, values.len())?;
        let mut st = lock(&self.shared.state);
        if st.consts.iter().any(|c| c.name == name) {
            return Err(Op2Error::DuplicateConst { name: name.into() });
        }
        let c = self.carrier(
            CarrierKind::Const,
            name,
            dim,
            HostBuffer::from_slice(values),
        );
        st.consts.push(c.clone());
        Ok(Const::from_carrier(c))
    }

    fn carrier(&self, kind: CarrierKind, name: &str, dim: usize, host: HostBuffer) -> Arc<Carrier> {
        Carrier::new(
            next_id(),
            self.shared.id,
            Arc::downgrade(&self.shared),
            kind,
            name,
            dim,
            host,
        )
    }

    fn own(&self, what: &'static str, name: &str, runtime_id: u64) -> Result<()> {
        if runtime_id != self.shared.id {
            return Err(Op2Error::ForeignObject {
                what,
                name: name.into(),
            });
        }
        Ok(())
    }

    /// Records `kernel` over `set` with `args` (one per kernel parameter). Validates everything and
    /// compiles the loop's code now (so mistakes surface here); runs it when its results are needed,
    /// or at once when the runtime is eager.
    pub fn par_loop(
        &self,
        kernel: &Kernel,
        set: &Set,
        args: impl IntoIterator<Item = Arg>,
    ) -> Result<()> {
        let args: Vec<Arg> = args.into_iter().collect();
        self.own("set", set.name(), set.runtime_id())?;
        let mut sigs = Vec::with_capacity(args.len());
        let mut carriers = Vec::with_capacity(args.len());
        let mut maps: Vec<Map> = Vec::new();
        for (i, arg) in args.iter().enumerate() {
            let (sig, carrier) = self.check_arg(kernel, set, i, arg, &mut maps)?;
            sigs.push(sig);
            carriers.push(carrier);
        }
        check_kernel_params(kernel, &sigs, &carriers)?;

        if let Some(c) = lock(&self.shared.state)
            .consts
            .iter()
            .find(|c| c.name == kernel.name())
        {
            return Err(Op2Error::NameClash {
                kernel: kernel.name().into(),
                name: c.name.clone(),
            });
        }
        let (consts, const_sigs): (Vec<_>, Vec<_>) = {
            let st = lock(&self.shared.state);
            st.consts
                .iter()
                .filter(|c| kernel.mentions(&c.name))
                .map(|c| {
                    (
                        c.clone(),
                        ConstSig {
                            name: c.name.clone(),
                            dtype: c.dtype(),
                            dim: c.dim,
                        },
                    )
                })
                .unzip()
        };
        let probe = LoopSignature {
            kernel: kernel.clone(),
            args: sigs,
            consts: const_sigs,
            n_maps: maps.len(),
        };
        let (sig, prepared) = self.prepare(probe)?;

        let exec = sig.has_indirect_writes();
        let end = if exec { set.exec_size() } else { set.size() };
        let iterated = section::CORE | section::OWNED | if exec { section::EXEC_HALO } else { 0 };
        let mut reads = Vec::with_capacity(carriers.len() + consts.len());
        let mut writes = Vec::new();
        for (a, c) in sig.args.iter().zip(&carriers) {
            let sections = if a.kind == ArgKind::Direct {
                iterated
            } else {
                section::ALL
            };
            let u = DataUse { id: c.id, sections };
            if a.access.reads() {
                reads.push(u);
            }
            if a.access.writes() {
                writes.push(u);
            }
        }
        reads.extend(consts.iter().map(|c| DataUse {
            id: c.id,
            sections: section::ALL,
        }));
        let bytes = loop_bytes(&sig, &carriers, &maps, end);
        let record = Arc::new(LoopRecord {
            sig,
            prepared,
            set: set.clone(),
            carriers,
            maps,
            consts,
            start: 0,
            end,
            bytes,
        });
        self.shared.recorded.fetch_add(1, Ordering::Relaxed);
        lock(&self.shared.state).trace.push(Pending {
            work: record,
            reads,
            writes,
        });
        if !self.shared.config.lazy {
            self.flush()?;
        }
        Ok(())
    }

    fn prepare(&self, probe: LoopSignature) -> Result<(Arc<LoopSignature>, Arc<dyn PreparedLoop>)> {
        if let Some((s, p)) = lock(&self.shared.state).prepared.get(&probe) {
            return Ok((s.clone(), p.clone()));
        }
        // Compile without holding the state lock: it can take a while.
        let prepared = self.shared.backend.prepare(&probe)?;
        let sig = Arc::new(probe.clone());
        lock(&self.shared.state)
            .prepared
            .insert(probe, (sig.clone(), prepared.clone()));
        Ok((sig, prepared))
    }

    fn check_arg(
        &self,
        kernel: &Kernel,
        set: &Set,
        i: usize,
        arg: &Arg,
        maps: &mut Vec<Map>,
    ) -> Result<(ArgSig, Arc<Carrier>)> {
        let kname = || kernel.name().to_string();
        if let Some(reason) = &arg.invalid {
            return Err(Op2Error::InvalidArg {
                kernel: kname(),
                arg: i,
                reason: reason.clone(),
            });
        }
        let mut slot = |m: &Map| -> Result<usize> {
            self.own("map", m.name(), m.runtime_id())?;
            if m.from() != set {
                return Err(Op2Error::MapFromMismatch {
                    kernel: kname(),
                    arg: i,
                    map: m.name().into(),
                    map_from: m.from().name().into(),
                    iter_set: set.name().into(),
                });
            }
            Ok(maps.iter().position(|x| x == m).unwrap_or_else(|| {
                maps.push(m.clone());
                maps.len() - 1
            }))
        };
        let (carrier, kind) = match &arg.target {
            ArgTarget::Dat { carrier, via } => {
                self.own("dat", &carrier.name, carrier.runtime_id)?;
                let CarrierKind::Dat(dset) = &carrier.kind else {
                    unreachable!("dat args are built from Dat handles")
                };
                if matches!(arg.access, Access::Min | Access::Max) {
                    return Err(Op2Error::ReductionOnDat {
                        kernel: kname(),
                        arg: i,
                        dat: carrier.name.clone(),
                        access: arg.access,
                    });
                }
                let on_target = |m: &Map| -> Result<()> {
                    if dset != m.to() {
                        return Err(Op2Error::DatSetMismatch {
                            kernel: kname(),
                            arg: i,
                            dat: carrier.name.clone(),
                            dat_set: dset.name().into(),
                            map: m.name().into(),
                            map_to: m.to().name().into(),
                        });
                    }
                    Ok(())
                };
                let kind = match via {
                    Via::Direct => {
                        if dset != set {
                            return Err(Op2Error::DirectSetMismatch {
                                kernel: kname(),
                                arg: i,
                                dat: carrier.name.clone(),
                                dat_set: dset.name().into(),
                                iter_set: set.name().into(),
                            });
                        }
                        ArgKind::Direct
                    }
                    Via::Entry(m, idx) => {
                        let map = slot(m)?;
                        on_target(m)?;
                        if *idx < 0 || *idx as usize >= m.arity() {
                            return Err(Op2Error::MapIndexOutOfRange {
                                kernel: kname(),
                                arg: i,
                                map: m.name().into(),
                                index: *idx,
                                arity: m.arity(),
                            });
                        }
                        ArgKind::Indirect {
                            map,
                            arity: m.arity(),
                            index: *idx as usize,
                        }
                    }
                    Via::Row(m) => {
                        let map = slot(m)?;
                        on_target(m)?;
                        ArgKind::Row {
                            map,
                            arity: m.arity(),
                        }
                    }
                };
                (carrier, kind)
            }
            ArgTarget::Global(carrier) => {
                self.own("global", &carrier.name, carrier.runtime_id)?;
                if matches!(arg.access, Access::Write | Access::Rw) {
                    return Err(Op2Error::GlobalAccess {
                        kernel: kname(),
                        arg: i,
                        global: carrier.name.clone(),
                        access: arg.access,
                    });
                }
                (carrier, ArgKind::Global)
            }
            ArgTarget::Const(carrier) => {
                self.own("const", &carrier.name, carrier.runtime_id)?;
                if arg.access != Access::Read {
                    return Err(Op2Error::ConstWrite {
                        kernel: kname(),
                        arg: i,
                        name: carrier.name.clone(),
                        access: arg.access,
                    });
                }
                (carrier, ArgKind::Global)
            }
        };
        let dtype = carrier.dtype();
        if let Some((dim, c_type)) = &arg.declared {
            if *dim != carrier.dim {
                return Err(Op2Error::DimMismatch {
                    kernel: kname(),
                    arg: i,
                    object: carrier.name.clone(),
                    declared: *dim,
                    actual: carrier.dim,
                });
            }
            if DType::from_c_name(c_type) != Some(dtype) {
                return Err(Op2Error::TypeMismatch {
                    kernel: kname(),
                    arg: i,
                    object: carrier.name.clone(),
                    declared: c_type.clone(),
                    declared_by: "the arg",
                    actual: dtype,
                });
            }
        }
        Ok((
            ArgSig {
                kind,
                dtype,
                dim: carrier.dim,
                access: arg.access,
            },
            carrier.clone(),
        ))
    }
}

fn check_kernel_params(kernel: &Kernel, sigs: &[ArgSig], carriers: &[Arc<Carrier>]) -> Result<()> {
    let Some(params) = kernel.params() else {
        return Ok(());
    };
    if params.len() != sigs.len() {
        return Err(Op2Error::KernelParamCount {
            kernel: kernel.name().into(),
            params: params.len(),
            args: sigs.len(),
        });
    }
    for (i, ((p, s), c)) in params.iter().zip(sigs).zip(carriers).enumerate() {
        if let Some(d) = p.dtype {
            if d != s.dtype {
                return Err(Op2Error::TypeMismatch {
                    kernel: kernel.name().into(),
                    arg: i,
                    object: c.name.clone(),
                    declared: p.text.clone(),
                    declared_by: "the kernel parameter",
                    actual: s.dtype,
                });
            }
        }
        let shape_error = |expected| Op2Error::KernelParamShape {
            kernel: kernel.name().into(),
            arg: i,
            param: p.text.clone(),
            expected,
        };
        let bound_error = |what, declared, expected| Op2Error::KernelParamBound {
            kernel: kernel.name().into(),
            arg: i,
            param: p.text.clone(),
            what,
            declared,
            expected,
        };
        match (s.kind, p.pointers, &p.bounds[..]) {
            // An array of pointers (`double *x[3]`, `double **x`), one per map entry.
            (ArgKind::Row { arity, .. }, 1, [bound]) => {
                if let Some(b) = *bound {
                    if b != arity {
                        return Err(bound_error("pointers", b, arity));
                    }
                }
            }
            (ArgKind::Row { .. }, 2, []) => {}
            (ArgKind::Row { .. }, ..) => return Err(shape_error("an array of pointers")),
            // A pointer to the `dim` values (`double *x`, `double x[2]`).
            (_, 1, []) => {}
            (_, 0, [bound]) => {
                if let Some(b) = *bound {
                    if b != s.dim {
                        return Err(bound_error("values", b, s.dim));
                    }
                }
            }
            _ => return Err(shape_error("a pointer")),
        }
    }
    Ok(())
}
