//! The runtime: declares sets, maps and data, validates and records `par_loop`s in the lazy trace,
//! and runs them on the chosen backend when their results are needed. This file is the front: the
//! `Runtime` handle and declaring data. The modules below it, bottom up, each
//! using only those before it (the layering test checks this):
//!
//! 1. core: `sync` (ids, locks), `record` (a recorded loop), `stats`, `timing`, `validate`,
//!    `steps` (a loop as its section steps), `engine` (what every part works with: backend,
//!    configuration, ranks, Consts, the kernels the runtime writes; and `StepRunner`, what a
//!    subsystem that runs steps asks of the runtime);
//! 2. subsystems, each owning its state and doing its work with the engine alone:
//!    `checkpoint`, `extrusion`, `fusion`, `tiling`, `temporaries`, `memory`;
//! 3. the hub, `shared`: the engine, the lazy graph's state and each subsystem, which a
//!    runtime's handles, data and loop handles share;
//! 4. execution on the hub: `execute` (forcing, running steps; the `StepRunner`),
//!    `graph_view` (loop handles, the pending graph);
//! 5. the front: this file, `par_loop` (a loop's path from `par_loop` to the lazy graph, in
//!    order), `builder`, and what each feature adds to `Runtime`: `extruded`, `mixed`,
//!    `per_entry`, `subset`, `algebra`, `memory_report`, `temporary_dats`.

// 1. Core.
mod engine;
mod record;
mod stats;
mod steps;
mod sync;
mod timing;
mod validate;
// 2. Subsystems (each with its work, given the engine, in a `run` child).
mod checkpoint;
mod extrusion;
mod fusion;
mod memory;
mod temporaries;
mod tiling;
// 3. The hub.
mod shared;
// 4. Execution on the hub.
mod execute;
mod graph_view;
// 5. The front: a loop's path, then each feature's API.
mod algebra;
mod builder;
mod extruded;
mod halo_refresh;
mod memory_report;
mod mixed;
mod par_loop;
mod per_entry;
mod subset;
mod temporary_dats;

pub use algebra::ArithOp;
pub use builder::RuntimeBuilder;
pub use checkpoint::CheckpointStats;
pub use extrusion::Region;
pub use graph_view::{GraphNode, LoopHandle, NodeKind, PendingGraph};
pub use memory::{MemoryKind, MemoryReport, MemoryUse};
pub use mixed::{MixedDat, MixedMap, MixedSet};
pub use record::LoopRecord;
pub use shared::RuntimeShared;
pub use stats::LazyStats;
pub use timing::{DatTraffic, HaloTraffic, LoopTiming};

use crate::contract::backend::Capabilities;
use crate::contract::config::Config;
use crate::model::carrier::{Carrier, CarrierKind, Const, Dat, Global, check_len};
use crate::model::comm::Communicator;
use crate::model::dtype::{HostBuffer, IntoValues, Scalar};
use crate::model::error::{Op2Error, Result};
use crate::model::map::Map;
use crate::model::set::{Set, SetHalo, SetSizes};
use crate::model::trace::Pending;
use checkpoint::DeclaredAs;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use steps::Step;
use sync::{lock, next_id};

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
            if let Err(e) = self.shared.checkpoints().checkpoint_finish() {
                eprintln!("op2: {e}");
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
        Self::with_communicator(config, Arc::new(crate::model::comm::SelfCommunicator))
    }

    /// A runtime with this configuration, one rank of the ranks `comm` connects.
    pub fn with_communicator(config: Config, comm: Arc<dyn Communicator>) -> Result<Runtime> {
        Ok(Runtime {
            shared: Arc::new(RuntimeShared::new(config, comm)?),
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

    /// Loops recorded but not yet run (or not yet run over every section of their set).
    pub fn pending_loops(&self) -> usize {
        let st = lock(&self.shared.state);
        let mut loops: Vec<*const LoopRecord> = st
            .trace
            .iter()
            .filter_map(|(_, p)| p.work.loop_record().map(Arc::as_ptr))
            .collect();
        loops.sort_unstable();
        loops.dedup();
        loops.len()
    }

    /// The ranks this runtime runs with.
    pub fn communicator(&self) -> &Arc<dyn Communicator> {
        &self.shared.comm
    }

    /// Time and bytes per kernel so far, in order of first run (OP2's timing output).
    pub fn timings(&self) -> Vec<LoopTiming> {
        lock(&self.shared.timings).clone()
    }

    /// Clears the per-kernel timings and the per-Dat halo traffic (for example after a warm-up).
    pub fn reset_timings(&self) {
        lock(&self.shared.timings).clear();
        lock(&self.shared.dat_traffic).clear();
    }

    /// Halo exchange traffic per Dat on this rank so far, in order of first exchange (the same
    /// traffic per loop is in [`Runtime::timings`]). Empty on one process.
    pub fn halo_traffic(&self) -> Vec<DatTraffic> {
        lock(&self.shared.dat_traffic).clone()
    }

    /// What the backend can do and how it runs, as it said when the runtime started.
    pub fn capabilities(&self) -> Capabilities {
        self.shared.caps
    }

    /// Whether the backend's loops work on the host copy of the data itself
    /// ([`Capabilities::host_memory`]).
    pub fn runs_on_host_memory(&self) -> bool {
        self.shared.caps.host_memory
    }

    /// How many host threads the backend works with ([`Capabilities::host_threads`]).
    pub fn host_threads(&self) -> usize {
        self.shared.caps.host_threads
    }

    /// Whether the backend's host threads are OpenMP's ([`Capabilities::openmp_threads`]).
    pub fn uses_openmp_threads(&self) -> bool {
        self.shared.caps.openmp_threads
    }

    /// A device backend's transfer counters; `None` on host backends.
    pub fn device_stats(&self) -> Option<crate::contract::backend::DeviceStats> {
        self.shared.backend.device_stats()
    }

    /// Where a Dat's, Global's or Const's valid data lives on a device backend (by carrier id);
    /// `None` on host backends.
    pub fn data_state(&self, carrier: u64) -> Option<crate::contract::backend::DataState> {
        self.shared.backend.data_state(carrier)
    }

    /// Loops run so far.
    pub fn executed_loops(&self) -> u64 {
        self.shared.executed.load(Ordering::Relaxed)
    }

    /// Halo exchanges (of one Dat each) started so far.
    pub fn halo_exchanges(&self) -> u64 {
        self.shared.exchanges.load(Ordering::Relaxed)
    }

    /// Loops recorded so far.
    pub fn recorded_loops(&self) -> u64 {
        self.shared.recorded.load(Ordering::Relaxed)
    }

    /// Runs every pending loop, in order.
    pub fn flush(&self) -> Result<()> {
        self.shared.flush()
    }

    /// What the lazy graph has done so far: nodes recorded and run, forcings, and what each
    /// optimisation saved.
    pub fn lazy_stats(&self) -> LazyStats {
        lock(&self.shared.stats).clone()
    }

    /// The pending graph as it is now (nothing is forced): its nodes, labelled as seed 002's
    /// figures label them, and its edges with those implied by others left out.
    /// [`PendingGraph::to_dot`] writes it for Graphviz.
    pub fn pending_graph(&self) -> PendingGraph {
        graph_view::view(&lock(&self.shared.state).trace)
    }

    /// Records steps in the graph (in order), noting the exchanges among them; returns their
    /// node numbers.
    pub(crate) fn push_steps(&self, steps: Vec<Pending<Step>>) -> Vec<u64> {
        let mut st = lock(&self.shared.state);
        let mut ids = Vec::with_capacity(steps.len());
        for p in steps {
            let exchanged: Vec<u64> = match &p.work {
                Step::HaloEnd(x) => x.dats.iter().map(|(c, _)| c.id).collect(),
                _ => Vec::new(),
            };
            let free = matches!(p.work, Step::Free(_));
            let id = st.trace.push(p);
            if free {
                st.pending_frees.push(id);
            }
            let epoch = st.epoch;
            for c in exchanged {
                st.last_exchange.insert(c, epoch);
            }
            ids.push(id);
        }
        drop(st);
        lock(&self.shared.stats).nodes_recorded += ids.len() as u64;
        ids
    }

    /// What checkpointing has done so far (`None` when it is off): checkpoints taken, the bytes
    /// the last one saved against every Dat's, whether this run restarted and from where.
    pub fn checkpoint_stats(&self) -> Option<CheckpointStats> {
        self.shared.checkpoints().checkpoint_stats()
    }

    /// Completes the checkpoint being taken, if any (Dats whose fate the loops since its backup
    /// point have not decided yet are saved as they are), and waits until it is on disk (a
    /// failure to write it is returned here, or by the next loop). Dropping the runtime does
    /// the same.
    pub fn checkpoint_wait(&self) -> Result<()> {
        self.shared.checkpoints().checkpoint_wait()
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

    /// Declares a set with explicit MPI section sizes, and what a halo exchange sends to and
    /// receives from each neighbour rank ([`Op2Error::BadHalo`] when the lists do not fit the
    /// sections). Loops that read its Dats' halos exchange them first, through the runtime's
    /// communicator, when they are out of date.
    pub fn decl_set_with_halo(&self, sizes: SetSizes, halo: SetHalo, name: &str) -> Result<Set> {
        let set = Set::with_halo(next_id(), self.shared.id, name, sizes, halo)?;
        self.note_set(&set)?;
        Ok(set)
    }

    /// [`Runtime::decl_set_with_halo`] from PyOP2-style exchange lists (per neighbour, the
    /// owned elements sent and the halo elements received, in matching order, exec and
    /// non-exec halo mixed): collective across the runtime's ranks, which agree on the order
    /// of the lists ([`ExchangeLists::into_halo`](crate::model::set::ExchangeLists::into_halo)).
    pub fn decl_set_with_exchanges(
        &self,
        sizes: SetSizes,
        lists: crate::model::set::ExchangeLists,
        name: &str,
    ) -> Result<Set> {
        crate::model::names::check_user_name("set", name)?;
        let halo = lists.into_halo(&*self.shared.comm, sizes, name)?;
        self.decl_set_with_halo(sizes, halo, name)
    }

    /// Declares a set with explicit MPI section sizes.
    pub fn decl_set_sections(&self, sizes: SetSizes, name: &str) -> Result<Set> {
        let set = Set::new(next_id(), self.shared.id, name, sizes)?;
        self.note_set(&set)?;
        Ok(set)
    }

    /// Tells checkpointing about a declared set.
    fn note_set(&self, set: &Set) -> Result<()> {
        lock(&self.shared.declared).set(&set.0);
        self.shared
            .checkpoints()
            .checkpoint_declare("set", set.name(), DeclaredAs::Set(set))
    }

    /// Gives the elements of `set` global numbers: `global_ids[i]` for local element `i`, every
    /// element of this rank's part (core, owned, exec halo, non-exec halo). Checkpoints save
    /// Dats in this numbering, so a run checkpointed on some number of ranks restarts on any
    /// other; op2-mpi's partitioned meshes set it (before their maps and Dats are declared, as
    /// a program numbering its own sets must too). On one process a set without one is
    /// numbered in order.
    pub fn number_globally(&self, set: &Set, global_ids: Vec<u64>) -> Result<()> {
        self.own("set", set.name(), set.runtime_id())?;
        self.shared.checkpoints().checkpoint_number(set, global_ids)
    }

    /// Declares a map from `from` to `to` with `arity` entries per element; `values` is row-major and
    /// every value is checked against `to`'s size. A `Vec<i32>` becomes the Map's storage as it is (no copy).
    pub fn decl_map(
        &self,
        from: &Set,
        to: &Set,
        arity: usize,
        values: impl Into<Vec<i32>>,
        name: &str,
    ) -> Result<Map> {
        self.declare_map(from, to, arity, values.into(), name, false)
    }

    /// [`Runtime::decl_map`] for a map whose negative values mean "no element" (PyOP2's maps
    /// with gaps, such as an inverse map where some elements have no partner). Matrices take
    /// it: sparsity patterns and assembly leave those entries out. Loops refuse it for data
    /// (there is no element to read or write), with a typed error.
    pub fn decl_map_with_gaps(
        &self,
        from: &Set,
        to: &Set,
        arity: usize,
        values: impl Into<Vec<i32>>,
        name: &str,
    ) -> Result<Map> {
        let values = values.into().into_iter().map(|v| v.max(-1)).collect();
        self.declare_map(from, to, arity, values, name, true)
    }

    fn declare_map(
        &self,
        from: &Set,
        to: &Set,
        arity: usize,
        values: Vec<i32>,
        name: &str,
        gaps: bool,
    ) -> Result<Map> {
        self.own("set", from.name(), from.runtime_id())?;
        self.own("set", to.name(), to.runtime_id())?;
        self.whole_set(from, "maps")?;
        self.whole_set(to, "maps")?;
        let map = Map::new_with(next_id(), from, to, arity, values, name, gaps)?;
        lock(&self.shared.declared).map(&map.0);
        self.shared
            .checkpoints()
            .checkpoint_declare("map", name, DeclaredAs::Map(&map))?;
        Ok(map)
    }

    /// Declares a Dat with `dim` values per element of `set` (all sections, halos included).
    ///
    /// `data` is a `Vec<T>` (taken over: the Dat's storage is that `Vec`, with no copy) or borrowed
    /// values (`&[T]`, `&Vec<T>`, an array: copied once).
    pub fn decl_dat<T: Scalar>(
        &self,
        set: &Set,
        dim: usize,
        data: impl IntoValues<T>,
        name: &str,
    ) -> Result<Dat<T>> {
        self.decl_dat_buffer(set, dim, HostBuffer::from_vec(data.into_values()), name)
    }

    /// Declares a Dat whose storage is `data` (its length checked against the set and `dim`).
    fn decl_dat_buffer<T: Scalar>(
        &self,
        set: &Set,
        dim: usize,
        data: HostBuffer,
        name: &str,
    ) -> Result<Dat<T>> {
        self.own("set", set.name(), set.runtime_id())?;
        self.whole_set(set, "dats")?;
        if dim == 0 {
            return Err(Op2Error::ZeroDimension {
                what: "dat",
                name: name.into(),
                field: "dim",
            });
        }
        let expected = set.total_size() * dim;
        if data.released_len() != expected {
            return Err(Op2Error::DataLength {
                what: "dat",
                name: name.into(),
                expected,
                actual: data.released_len(),
                detail: format!(
                    "{} elements of set `{}` x dim {dim}",
                    set.total_size(),
                    set.name()
                ),
            });
        }
        // The carrier takes the buffer over; the checkpoint then reads the values from it.
        let c = self.carrier(CarrierKind::Dat(set.clone()), name, dim, data);
        {
            // Just declared: nothing else holds this lock yet.
            let values = c.host.read().unwrap_or_else(|e| e.into_inner());
            self.shared.checkpoints().checkpoint_declare(
                "dat",
                name,
                DeclaredAs::Dat {
                    dat: &c,
                    values: values.as_bytes(),
                },
            )?;
        }
        Ok(Dat::from_carrier(c))
    }

    /// Declares a zero-filled Dat, allocated once (zeroed pages, not a filled copy).
    pub fn decl_dat_zeros<T: Scalar>(&self, set: &Set, dim: usize, name: &str) -> Result<Dat<T>> {
        let len = Self::values_for(set, dim, name)?;
        self.decl_dat_buffer(set, dim, HostBuffer::zeroed(T::DTYPE, len), name)
    }

    /// How many values a Dat of `dim` per element of `set` holds; an error when that overflows.
    pub(crate) fn values_for(set: &Set, dim: usize, name: &str) -> Result<usize> {
        set.total_size()
            .checked_mul(dim)
            .ok_or_else(|| Op2Error::DataLength {
                what: "dat",
                name: name.into(),
                expected: usize::MAX,
                actual: 0,
                detail: format!(
                    "{} elements of set `{}` x dim {dim} overflows",
                    set.total_size(),
                    set.name()
                ),
            })
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
        self.shared.checkpoints().checkpoint_declare(
            "global",
            name,
            DeclaredAs::Replicated {
                sizes: vec![dim as u64, T::DTYPE as u64],
                values: bytemuck::cast_slice(values),
            },
        )?;
        Ok(Global::from_carrier(self.carrier(
            CarrierKind::Global,
            name,
            dim,
            HostBuffer::from_slice(values),
        )))
    }

    /// Declares a named Const visible in every kernel (a scalar when `dim` is 1, else an array).
    pub fn decl_const<T: Scalar>(&self, dim: usize, values: &[T], name: &str) -> Result<Const<T>> {
        crate::model::names::check_user_name("const", name)?;
        if dim == 0 {
            return Err(Op2Error::ZeroDimension {
                what: "const",
                name: name.into(),
                field: "dim",
            });
        }
        check_len("const", name, dim, values.len())?;
        if lock(&self.shared.consts).iter().any(|c| c.name == name) {
            return Err(Op2Error::DuplicateConst { name: name.into() });
        }
        self.shared.checkpoints().checkpoint_declare(
            "const",
            name,
            DeclaredAs::Replicated {
                sizes: vec![dim as u64, T::DTYPE as u64],
                values: bytemuck::cast_slice(values),
            },
        )?;
        let mut consts = lock(&self.shared.consts);
        let c = self.carrier(
            CarrierKind::Const,
            name,
            dim,
            HostBuffer::from_slice(values),
        );
        consts.push(c.clone());
        Ok(Const::from_carrier(c))
    }

    /// Frees `c`'s name (PyOP2's `Const.remove_from_namespace`): loops recorded before run
    /// first, with its values; later kernels no longer see it, and a Const of that name (of any
    /// shape) may be declared again. Errors: a Const of another runtime, or one removed before.
    pub fn remove_const<T: Scalar>(&self, c: &Const<T>) -> Result<()> {
        self.own("const", c.name(), c.carrier().runtime_id)?;
        self.flush()?;
        let mut consts = lock(&self.shared.consts);
        let before = consts.len();
        consts.retain(|k| k.id != c.id());
        if consts.len() == before {
            return Err(Op2Error::ConstRemoved {
                name: c.name().into(),
            });
        }
        Ok(())
    }

    fn carrier(&self, kind: CarrierKind, name: &str, dim: usize, host: HostBuffer) -> Arc<Carrier> {
        let owner: Weak<RuntimeShared> = Arc::downgrade(&self.shared);
        let c = Carrier::new(next_id(), self.shared.id, owner, kind, name, dim, host);
        lock(&self.shared.declared).carrier(&c);
        c
    }

    fn own(&self, what: &'static str, name: &str, runtime_id: u64) -> Result<()> {
        validate::own(self.shared.id, what, name, runtime_id)
    }
}
