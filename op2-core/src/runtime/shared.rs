//! The runtime's hub: the state a runtime's handles, its data and its loop handles share (the
//! backend, the communicator, the lazy trace, the subsystems' states). It sits above the
//! subsystems' states (checkpointing, extrusion, fusion, tiling, temporaries, memory accounting)
//! and below everything that works on it: forcing and running in `execute`, each subsystem's own
//! work on the hub in its `run` module, and the `Runtime` API in front.

use super::checkpoint::{CheckpointWork, Checkpointing};
use super::engine::Engine;
use super::extrusion::ExtrusionCache;
use super::fusion::Fusions;
use super::memory::Declared;
use super::steps::Step;
use super::temporaries::Temporaries;
use super::tiling::Tilings;
use super::timing::{DatTraffic, LoopTiming};
use crate::contract::backend::PreparedLoop;
use crate::contract::config::Config;
use crate::model::comm::Communicator;
use crate::model::error::Result;
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
    /// Sets and maps made for extruded loops.
    pub(crate) extruded: ExtrusionCache,
    /// Flushes so far (every rank flushes alike, so every rank agrees on this count where it
    /// may not agree on what has run).
    pub(crate) epoch: u64,
    pub(crate) prepared: HashMap<LoopSignature, (Arc<LoopSignature>, Arc<dyn PreparedLoop>)>,
}

/// The part of a runtime that data carriers point back to (weakly), to force pending work: the
/// engine (reached through `Deref`), the lazy graph's state, and each subsystem, which owns its
/// own state and works with the engine alone.
pub struct RuntimeShared {
    pub(crate) engine: Engine,
    pub(crate) state: Mutex<State>,
    pub(crate) executed: AtomicU64,
    pub(crate) recorded: AtomicU64,
    /// Halo exchanges of one Dat started so far.
    pub(crate) exchanges: AtomicU64,
    /// Per-kernel run times, in order of first run.
    pub(crate) timings: Mutex<Vec<LoopTiming>>,
    /// Per-Dat halo traffic, in order of first exchange.
    pub(crate) dat_traffic: Mutex<Vec<DatTraffic>>,
    /// Checkpointing and the history of Globals (both idle unless configured).
    pub(crate) checkpointing: Checkpointing,
    /// Everything declared, weakly, for the memory report.
    pub(crate) declared: Mutex<Declared>,
    /// Memory of released temporaries, for the next ones to reuse.
    pub(crate) temporaries: Temporaries,
    /// Fused loops' code.
    pub(crate) fusions: Fusions,
    /// Sparse tiling's inspections, by chain shape.
    pub(crate) tilings: Tilings,
}

impl std::ops::Deref for RuntimeShared {
    type Target = Engine;

    fn deref(&self) -> &Engine {
        &self.engine
    }
}

impl RuntimeShared {
    /// Checkpointing at work with this runtime's engine.
    pub(crate) fn checkpoints(&self) -> CheckpointWork<'_> {
        self.checkpointing.with(self)
    }

    /// A new runtime's shared part: the configured backend made, checkpointing opened (every
    /// rank agreeing), every subsystem's state empty.
    pub(crate) fn new(config: Config, comm: Arc<dyn Communicator>) -> Result<RuntimeShared> {
        let checkpointing = Checkpointing::new(config.checkpoint.as_ref(), &*comm)?;
        Ok(RuntimeShared {
            engine: Engine::new(config, comm)?,
            state: Mutex::new(State {
                trace: Graph::default(),
                last_exchange: HashMap::new(),
                subset_maps: HashMap::new(),
                extruded: Default::default(),
                pending_frees: Vec::new(),
                epoch: 0,
                prepared: HashMap::new(),
            }),
            executed: AtomicU64::new(0),
            recorded: AtomicU64::new(0),
            exchanges: AtomicU64::new(0),
            timings: Mutex::new(Vec::new()),
            dat_traffic: Mutex::new(Vec::new()),
            checkpointing,
            declared: Mutex::new(Declared::default()),
            temporaries: Temporaries::default(),
            fusions: Fusions::default(),
            tilings: Tilings::default(),
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
