//! The runtime's small core that every subsystem may use: the backend and what it can do, the
//! configuration, the ranks, the lock that keeps running in program order, the lazy graph's
//! counters, the declared Consts, and the kernels the runtime writes itself. Subsystems take an
//! `&Engine` (or a [`StepRunner`] when they run steps) for their work; none of them sees the hub
//! (`shared`) that holds them all.

use super::stats::LazyStats;
use super::steps::LoopStep;
use super::sync::{lock, lock_once, locked_pointer, next_id};
use crate::contract::backend::{Backend, Capabilities, LoopInvocation, PreparedLoop};
use crate::contract::config::Config;
use crate::contract::registry::find_backend;
use crate::model::carrier::Carrier;
use crate::model::comm::Communicator;
use crate::model::error::Result;
use crate::model::kernel::Kernel;
use crate::model::map::Map;
use crate::model::set::Set;
use crate::model::signature::LoopSignature;
use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// What every part of a runtime works with.
pub struct Engine {
    /// The runtime's id (every object it declares carries it).
    pub(crate) id: u64,
    pub(crate) config: Config,
    pub(crate) backend: Box<dyn Backend>,
    /// What the backend can do, read once.
    pub(crate) caps: Capabilities,
    /// The ranks this runtime runs with (one process: [`crate::SelfCommunicator`]).
    pub(crate) comm: Arc<dyn Communicator>,
    /// Held while pending work runs, so that concurrent forces keep program order.
    pub(crate) exec: Mutex<()>,
    /// What the lazy graph did.
    pub(crate) stats: Mutex<LazyStats>,
    /// The Consts declared and not removed, in order of declaration.
    pub(crate) consts: Mutex<Vec<Arc<Carrier>>>,
    /// Kernels the runtime wrote (column and entry walks, Dat algebra).
    pub(crate) written: WrittenKernels,
}

impl Engine {
    /// The configured backend made, with nothing declared yet.
    pub(crate) fn new(config: Config, comm: Arc<dyn Communicator>) -> Result<Engine> {
        let factory = find_backend(&config.backend)?;
        let backend = (factory.create)(&config)?;
        Ok(Engine {
            id: next_id(),
            caps: backend.capabilities(&config),
            config,
            backend,
            comm,
            exec: Mutex::new(()),
            stats: Mutex::new(LazyStats::default()),
            consts: Mutex::new(Vec::new()),
            written: WrittenKernels::default(),
        })
    }
}

/// Kernels the runtime writes, made once each by their source and how they are built, so that
/// their compiled code is reused: the same source always names the same kernel.
#[derive(Default)]
pub(crate) struct WrittenKernels {
    by_source: Mutex<HashMap<WrittenKey, Kernel>>,
}

/// A written kernel's key: C++ or not and host effects or not, its compile and link arguments,
/// its source.
type WrittenKey = ([bool; 2], [Vec<String>; 2], String);

impl WrittenKernels {
    /// The kernel written as `source` around the user's kernel `like` (`None`: the runtime's
    /// own code only): `make(source)` the first time, the same kernel after; built as `like` is
    /// (C++ when it is: [`Kernel::cpp`], compiled and linked with its [`Kernel::compile_args`]
    /// and [`Kernel::link_args`]), so that the same source around a C kernel and around a C++
    /// one, or around kernels built differently, are two kernels.
    pub(crate) fn get(
        &self,
        source: String,
        like: Option<&Kernel>,
        make: impl FnOnce(String) -> Kernel,
    ) -> Kernel {
        let mut known = lock(&self.by_source);
        let key = match like {
            Some(k) => (
                [k.is_cpp(), k.has_host_effects()],
                [k.compile_args().to_vec(), k.link_args().to_vec()],
                source,
            ),
            None => (Default::default(), Default::default(), source),
        };
        if let Some(k) = known.get(&key) {
            return k.clone();
        }
        let made = make(key.2.clone());
        let k = match like {
            Some(like) => made.built_like(like),
            None => made,
        };
        known.insert(key, k.clone());
        k
    }
}

/// What running loop steps leaves to the runtime, for the subsystems that run steps their own
/// way (fused, tiled): the execution layer implements it, so that they need not see it.
pub(crate) trait StepRunner {
    /// The engine the runtime works with.
    fn engine(&self) -> &Engine;

    /// Runs one loop step as the runtime runs any (its own code, its bookkeeping after).
    fn run_loop(&self, step: &LoopStep) -> Result<()>;

    /// The bookkeeping after a loop step ran for `seconds` (timings, counts, checkpointing's
    /// history of Globals).
    fn loop_step_done(&self, step: &LoopStep, seconds: f64);

    /// Runs everything recorded so far (a checkpoint's backup point).
    fn run_pending(&self) -> Result<()>;
}

/// Runs prepared code over `range` of `set` with `carriers` (and `consts`), each carrier locked
/// once for the run (exclusively when some arg writes it); returns the seconds the run took.
#[allow(clippy::too_many_arguments)]
pub(crate) fn run_prepared(
    kernel: &str,
    sig: &LoopSignature,
    prepared: &Arc<dyn PreparedLoop>,
    set: &Set,
    range: std::ops::Range<usize>,
    carriers: &[Arc<Carrier>],
    maps: &[Map],
    consts: &[Arc<Carrier>],
) -> Result<f64> {
    let uses: Vec<(&Arc<Carrier>, bool)> = carriers
        .iter()
        .zip(&sig.args)
        .map(|(c, a)| (c, a.access.writes()))
        .chain(consts.iter().map(|c| (c, false)))
        .collect();
    let mut locked = lock_once(&uses, kernel)?;
    let args: Vec<_> = carriers
        .iter()
        .map(|c| locked_pointer(&mut locked, c.id))
        .collect();
    let const_ptrs: Vec<_> = consts
        .iter()
        .map(|c| locked_pointer(&mut locked, c.id).cast_const())
        .collect();
    let started = Instant::now();
    prepared.run(&LoopInvocation {
        sig,
        set,
        start: range.start,
        end: range.end,
        args: &args,
        carriers,
        maps,
        consts: &const_ptrs,
    })?;
    Ok(started.elapsed().as_secs_f64())
}
