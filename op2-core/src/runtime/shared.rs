//! The runtime's hub: the state a runtime's handles, its data and its loop handles share (the
//! backend, the communicator, the lazy trace, the subsystems' states). It sits above the
//! subsystems' states (checkpointing, extrusion, fusion, tiling, temporaries, memory accounting)
//! and below everything that works on it: forcing and running in `execute`, each subsystem's own
//! work on the hub in its `run` module, and the `Runtime` API in front.

use super::checkpoint::{Checkpointer, History};
use super::extrusion::ExtrusionCache;
use super::fusion::Fusions;
use super::memory::Declared;
use super::stats::LazyStats;
use super::steps::Step;
use super::sync::next_id;
use super::temporaries::Pool;
use super::tiling::TilingCache;
use super::timing::{DatTraffic, LoopTiming};
use crate::contract::backend::{Backend, Capabilities, PreparedLoop};
use crate::contract::config::Config;
use crate::contract::registry::find_backend;
use crate::model::carrier::Carrier;
use crate::model::comm::Communicator;
use crate::model::error::Result;
use crate::model::kernel::Kernel;
use crate::model::map::Map;
use crate::model::signature::LoopSignature;
use crate::model::trace::{DataUse, Graph};
use std::collections::HashMap;
use std::sync::atomic::AtomicU64;
use std::sync::{Arc, Mutex};

/// What recording and running loops change together, under one lock.
pub(crate) struct State {
    /// The pending graph.
    pub(crate) trace: Graph<Step>,
    /// Per Dat (by carrier id): the flush epoch in which the exchange that last brought its halo
    /// up to date was recorded.
    pub(crate) last_exchange: HashMap<u64, u64>,
    /// Release nodes of temporaries recorded and perhaps still pending (so that forcing need
    /// not look through every pending node for them).
    pub(crate) pending_frees: Vec<u64>,
    /// Maps made for subsets (by subset id, and the id of the map taken at its elements, 0 for
    /// the subset's own map to its superset).
    pub(crate) subset_maps: HashMap<(u64, u64), Map>,
    /// Sets, maps and kernels made for extruded loops.
    pub(crate) extruded: ExtrusionCache,
    /// Flushes so far (every rank flushes alike, so every rank agrees on this count where it
    /// may not agree on what has run).
    pub(crate) epoch: u64,
    pub(crate) prepared: HashMap<LoopSignature, (Arc<LoopSignature>, Arc<dyn PreparedLoop>)>,
    pub(crate) consts: Vec<Arc<Carrier>>,
}

/// The part of a runtime that data carriers point back to (weakly), to force pending work.
pub struct RuntimeShared {
    pub(crate) id: u64,
    pub(crate) config: Config,
    pub(crate) backend: Box<dyn Backend>,
    /// What the backend can do, read once.
    pub(crate) caps: Capabilities,
    /// The ranks this runtime runs with (one process: [`crate::SelfCommunicator`]).
    pub(crate) comm: Arc<dyn Communicator>,
    pub(crate) state: Mutex<State>,
    /// Held while pending work runs, so that concurrent forces keep program order.
    pub(crate) exec: Mutex<()>,
    pub(crate) executed: AtomicU64,
    pub(crate) recorded: AtomicU64,
    /// Halo exchanges of one Dat started so far.
    pub(crate) exchanges: AtomicU64,
    /// Per-kernel run times, in order of first run.
    pub(crate) timings: Mutex<Vec<LoopTiming>>,
    /// Per-Dat halo traffic, in order of first exchange.
    pub(crate) dat_traffic: Mutex<Vec<DatTraffic>>,
    /// Checkpointing, when configured.
    pub(crate) checkpoint: Option<Mutex<Checkpointer>>,
    /// When checkpointing: the values every loop left in the Globals it writes, for replaying.
    pub(crate) history: Option<Mutex<History>>,
    /// Everything declared, weakly, for the memory report.
    pub(crate) declared: Mutex<Declared>,
    /// What the lazy graph did.
    pub(crate) stats: Mutex<LazyStats>,
    /// Memory of released temporaries, for the next ones to reuse.
    pub(crate) pool: Mutex<Pool>,
    /// Fused loops' code.
    pub(crate) fusions: Mutex<Fusions>,
    /// Sparse tiling's inspections, by chain shape.
    pub(crate) tilings: Mutex<TilingCache>,
    /// The runtime's own kernels for Dat algebra.
    pub(crate) algebra: Mutex<HashMap<String, Kernel>>,
}

impl RuntimeShared {
    /// A new runtime's shared part: the configured backend made, checkpointing opened (every
    /// rank agreeing), every subsystem's state empty.
    pub(crate) fn new(config: Config, comm: Arc<dyn Communicator>) -> Result<RuntimeShared> {
        let checkpoint = match &config.checkpoint {
            Some(c) => Some(Mutex::new(Checkpointer::new(c.clone(), &*comm)?)),
            None => None,
        };
        let factory = find_backend(&config.backend)?;
        let backend = (factory.create)(&config)?;
        Ok(RuntimeShared {
            id: next_id(),
            caps: backend.capabilities(&config),
            config,
            backend,
            comm,
            state: Mutex::new(State {
                trace: Graph::default(),
                last_exchange: HashMap::new(),
                subset_maps: HashMap::new(),
                extruded: Default::default(),
                pending_frees: Vec::new(),
                epoch: 0,
                prepared: HashMap::new(),
                consts: Vec::new(),
            }),
            exec: Mutex::new(()),
            executed: AtomicU64::new(0),
            recorded: AtomicU64::new(0),
            exchanges: AtomicU64::new(0),
            timings: Mutex::new(Vec::new()),
            dat_traffic: Mutex::new(Vec::new()),
            history: checkpoint.as_ref().map(|_| Mutex::new(History::default())),
            checkpoint,
            declared: Mutex::new(Declared::default()),
            stats: Mutex::new(LazyStats::default()),
            pool: Mutex::new(Pool::default()),
            fusions: Mutex::new(Fusions::default()),
            tilings: Mutex::new(TilingCache::default()),
            algebra: Mutex::new(HashMap::new()),
        })
    }
}

/// What a forcing must run.
pub(crate) enum Wanted<'a> {
    /// Everything pending.
    All,
    /// What an access reading `reads` and writing `writes` depends on.
    Data {
        reads: &'a [DataUse],
        writes: &'a [DataUse],
    },
    /// These nodes (those still pending) and what they depend on.
    Nodes(&'a [u64]),
}

impl Drop for RuntimeShared {
    /// The runtime's last reference is gone (its last handle, or a Dat's access that outlived
    /// it): data whose valid copy is on a device comes home, since handles to it outlive the
    /// backend. `Runtime`'s own drop already did this in the usual case; doing it again moves
    /// nothing.
    fn drop(&mut self) {
        if let Err(e) = self.backend.release() {
            eprintln!("op2: copying device data home failed while the runtime was dropped: {e}");
        }
    }
}
