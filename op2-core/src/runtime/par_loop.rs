//! The life of a loop on the recording side, in order: `par_loop` lowers the loop pass by pass
//! ([`LOWERINGS`]) to an ordinary loop (over a set neither extruded nor a subset, with args every
//! backend takes), then checks its args against the kernel, finds the Consts it uses, compiles it
//! (once per signature), lets checkpointing count or replay it, and records it as steps in the
//! lazy graph (run at once when the runtime is eager). Each pass's work lives with its feature
//! (`extrusion::lower`, `mixed`, `per_entry`, `subset`); this file only puts them in order.

use super::checkpoint::LoopFate;
use super::extrusion::Region;
use super::graph_view::LoopHandle;
use super::per_entry::short_rows;
use super::record::LoopRecord;
use super::steps::{Recording, loop_steps};
use super::sync::{lock, next_id};
use super::{Runtime, timing, validate};
use crate::contract::backend::PreparedLoop;
use crate::model::arg::{Arg, PerEntry};
use crate::model::carrier::Carrier;
use crate::model::error::{Op2Error, Result};
use crate::model::kernel::Kernel;
use crate::model::map::Map;
use crate::model::set::Set;
use crate::model::signature::{ArgSig, ConstSig, LoopSignature};
use std::sync::Arc;
use std::sync::atomic::Ordering;

/// A loop on its way to being recorded: each lowering pass hands on a loop the backends are
/// closer to taking (its kernel often the runtime's own, calling the one before).
struct Draft {
    kernel: Kernel,
    set: Set,
    region: Region,
    args: Vec<Arg>,
    /// The kernel takes each element's layer as its last parameter (until `layer_arg` lowers it).
    layer: bool,
}

/// A lowered loop's args, checked: their signatures, data, and the maps they use (each once).
struct CheckedArgs {
    sigs: Vec<ArgSig>,
    carriers: Vec<Arc<Carrier>>,
    maps: Vec<Map>,
}

/// One lowering pass: the loop as it is where the pass has nothing to do.
type Pass = fn(&Runtime, Draft) -> Result<Draft>;

/// The lowering passes, in the order they run. Interior facets come first (the facets' maps
/// double the cells', so per-entry args see a facet's whole rows); mixed args before buffers and
/// entries (their kernel joins the components' rows into one); buffers (one call per element)
/// before entries (one call per entry); extrusion after all of them (the loop they make runs
/// over columns like any other); subsets last (their args go through the subset's map).
const LOWERINGS: [Pass; 8] = [
    interior_facets,
    layer_arg,
    padded_rows,
    joined_mixed_args,
    element_buffers,
    per_entry_args,
    extrusion,
    subset,
];

impl Runtime {
    /// Records `kernel` over `set` with `args` (one per kernel parameter). Validates everything and
    /// compiles the loop's code now (so mistakes surface here); runs it when its results are needed,
    /// or at once when the runtime is eager. The handle says whether the loop is still pending.
    ///
    /// Over an extruded set it runs every layer of every column; [`Runtime::par_loop_region`]
    /// runs other regions.
    pub fn par_loop(
        &self,
        kernel: &Kernel,
        set: &Set,
        args: impl IntoIterator<Item = Arg>,
    ) -> Result<LoopHandle> {
        self.par_loop_region(kernel, set, Region::All, args)
    }

    /// Records `kernel` over `region` of the extruded set `set` with `args`: like
    /// [`Runtime::par_loop`] (which runs [`Region::All`]), and a [`Op2Error::NotExtruded`] for
    /// any other region of a set that is not extruded.
    pub fn par_loop_region(
        &self,
        kernel: &Kernel,
        set: &Set,
        region: Region,
        args: impl IntoIterator<Item = Arg>,
    ) -> Result<LoopHandle> {
        self.lowered_and_recorded(kernel, set, region, args.into_iter().collect(), false)
    }

    /// Records `kernel` over `region` of the extruded set `set` with `args`, the kernel taking
    /// one more parameter after them, an `int`: each element's layer in its column, 0 at the
    /// bottom (PyOP2's `pass_layer_arg=True`; over the interior facets, the lower cell's).
    /// Otherwise like [`Runtime::par_loop_region`]; [`Op2Error::NotExtruded`] for a set that is
    /// not extruded.
    pub fn par_loop_with_layer(
        &self,
        kernel: &Kernel,
        set: &Set,
        region: Region,
        args: impl IntoIterator<Item = Arg>,
    ) -> Result<LoopHandle> {
        self.lowered_and_recorded(kernel, set, region, args.into_iter().collect(), true)
    }

    fn lowered_and_recorded(
        &self,
        kernel: &Kernel,
        set: &Set,
        region: Region,
        args: Vec<Arg>,
        layer: bool,
    ) -> Result<LoopHandle> {
        self.own("set", set.name(), set.runtime_id())?;
        let mut draft = Draft {
            kernel: kernel.clone(),
            set: set.clone(),
            region,
            args,
            layer,
        };
        for pass in LOWERINGS {
            draft = pass(self, draft)?;
        }
        self.record(draft)
    }

    /// Records a lowered loop: checked, compiled, counted by checkpointing, then its steps.
    fn record(&self, loop_: Draft) -> Result<LoopHandle> {
        let Draft {
            kernel, set, args, ..
        } = loop_;
        self.own("set", set.name(), set.runtime_id())?;
        let CheckedArgs {
            sigs,
            carriers,
            maps,
        } = self.check_args(&kernel, &set, &args)?;
        let (consts, const_sigs) = self.consts_of(&kernel)?;
        let ids: Vec<u64> = carriers.iter().map(|c| c.id).collect();
        let (sig, prepared) = self.prepare(LoopSignature {
            kernel: kernel.clone(),
            args: sigs,
            consts: const_sigs,
            n_maps: maps.len(),
            data: LoopSignature::data_classes(&ids),
        })?;
        // After compiling: a loop that fails there is not counted, and decides nothing.
        let ordinal = match self.shared.checkpoints().checkpoint_before_loop(
            kernel.name(),
            &set,
            &args,
            &sig.args,
            &carriers,
            &maps,
        )? {
            LoopFate::Run(n) => n,
            LoopFate::Replayed => {
                return Ok(LoopHandle::new(&self.shared, kernel.name(), Vec::new()));
            }
        };
        let exec = sig.has_indirect_writes() || args.iter().any(|a| a.exec_halo);
        let end = if exec { set.exec_size() } else { set.size() };
        let bytes = timing::loop_bytes(&sig, &carriers, &maps, end);
        let record = Arc::new(LoopRecord {
            sig,
            prepared,
            set,
            carriers,
            maps,
            consts,
            bytes,
            exec,
            ordinal,
        });
        self.record_steps(&record, kernel.name())
    }

    /// Each arg checked against the set and the kernel: their signatures, data and maps.
    fn check_args(&self, kernel: &Kernel, set: &Set, args: &[Arg]) -> Result<CheckedArgs> {
        let mut sigs = Vec::with_capacity(args.len());
        let mut carriers = Vec::with_capacity(args.len());
        let mut maps: Vec<Map> = Vec::new();
        for (i, arg) in args.iter().enumerate() {
            let (sig, carrier) =
                validate::check_arg(self.shared.id, kernel, set, i, arg, &mut maps)?;
            carrier.check_not_released(&format!("loop `{}`", kernel.name()))?;
            sigs.push(sig);
            carriers.push(carrier);
        }
        validate::check_kernel_params(kernel, &sigs, &carriers)?;
        Ok(CheckedArgs {
            sigs,
            carriers,
            maps,
        })
    }

    /// The Consts `kernel` mentions, with their signatures; a kernel named like a Const is an
    /// error (the generated code would declare the name twice).
    fn consts_of(&self, kernel: &Kernel) -> Result<(Vec<Arc<Carrier>>, Vec<ConstSig>)> {
        let consts = lock(&self.shared.consts);
        if let Some(c) = consts.iter().find(|c| c.name == kernel.name()) {
            return Err(Op2Error::NameClash {
                kernel: kernel.name().into(),
                name: c.name.clone(),
            });
        }
        Ok(consts
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
            .unzip())
    }

    /// The loop's compiled code: the backend prepares each signature once.
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

    /// The recorded loop as steps in the lazy graph; run now when the runtime is eager, or when
    /// its kernel acts on host state outside its args ([`Kernel::with_host_effects`]: nothing
    /// the runtime sees would force it before the program looks at that state).
    fn record_steps(&self, record: &Arc<LoopRecord>, kernel: &str) -> Result<LoopHandle> {
        self.shared.recorded.fetch_add(1, Ordering::Relaxed);
        let steps = {
            let st = lock(&self.shared.state);
            // "Pending" for the halo rules: recorded since the last flush. Whether it has run
            // can differ between ranks (they may force different data); flushes cannot.
            let exchange_pending = |c: u64| st.last_exchange.get(&c) == Some(&st.epoch);
            let rec = Recording {
                comm: &*self.shared.comm,
                opts: self.shared.config.lazy_opts,
                exchange_pending: &exchange_pending,
                stats: &self.shared.stats,
            };
            loop_steps(record, &rec, next_id)
        };
        let nodes = self.push_steps(steps);
        let handle = LoopHandle::new(&self.shared, kernel, nodes);
        if !self.shared.config.lazy || record.sig.kernel.has_host_effects() {
            self.flush()?;
        }
        Ok(handle)
    }
}

/// Interior facets of an extruded set: a loop over every layer of the facets' own set, each
/// map from the cells doubled (the lower cell's row, then the upper's).
/// Over a subset of an extruded set's cells, the facets between two of its cells (a subset of
/// the facets' set), the maps from the whole cells doubled likewise.
fn interior_facets(rt: &Runtime, d: Draft) -> Result<Draft> {
    if d.region != Region::InteriorFacets {
        return Ok(d);
    }
    let (cells, subset) = if d.set.extrusion().is_some() {
        (d.set.clone(), None)
    } else {
        match d.set.superset().filter(|s| s.extrusion().is_some()) {
            Some(s) => (s.clone(), Some(d.set.clone())),
            None => return Ok(d),
        }
    };
    let facets = rt.facet_set(&cells)?;
    let args = d
        .args
        .into_iter()
        .map(|a| rt.facet_arg(&d.kernel, &cells, &facets, a))
        .collect::<Result<Vec<_>>>()?;
    let set = match &subset {
        Some(s) => rt.facet_subset(&cells, &facets, s)?,
        None => facets,
    };
    Ok(Draft {
        set,
        region: Region::All,
        args,
        ..d
    })
}

/// The layer as the kernel's last parameter: a kernel of the runtime's own hands it each
/// element's value of the set's layer Dat.
fn layer_arg(rt: &Runtime, d: Draft) -> Result<Draft> {
    if !d.layer {
        return Ok(d);
    }
    // A subset of an extruded set's elements reaches its superset's Dats.
    let extruded = if d.set.extrusion().is_some() {
        d.set.clone()
    } else {
        match d.set.superset().filter(|s| s.extrusion().is_some()) {
            Some(s) => s.clone(),
            None => {
                return Err(Op2Error::NotExtruded {
                    what: format!("loop `{}` passing the layer", d.kernel.name()),
                    reason: format!("`{}` is not extruded: it has no layers", d.set.name()),
                });
            }
        }
    };
    let layers = rt.layer_dat(&extruded)?;
    let (kernel, args) = rt.lower_layer_arg(&d.kernel, d.args, layers)?;
    Ok(Draft {
        kernel,
        args,
        layer: false,
        ..d
    })
}

/// Pointer arrays declared longer than the rows they get (PyOP2's kernels), padded.
fn padded_rows(rt: &Runtime, d: Draft) -> Result<Draft> {
    let short = short_rows(&d.kernel, &d.args);
    if short.is_empty() {
        return Ok(d);
    }
    let (kernel, args) = rt.lower_padded_rows(&d.kernel, d.args, &short)?;
    Ok(Draft { kernel, args, ..d })
}

/// Mixed args: their kernel joins the components' rows into one.
fn joined_mixed_args(rt: &Runtime, d: Draft) -> Result<Draft> {
    if d.args.iter().all(|a| a.joined.is_empty()) {
        return Ok(d);
    }
    if let Some(i) = d
        .args
        .iter()
        .position(|a| !a.joined.is_empty() && a.component.is_some())
    {
        return Err(Op2Error::InvalidArg {
            kernel: d.kernel.name().into(),
            arg: i,
            reason: "a component of a mixed Dat's row: view one component Dat instead".into(),
        });
    }
    let (kernel, args) = rt.lower_joined(&d.kernel, d.args)?;
    Ok(Draft { kernel, args, ..d })
}

/// Element buffers (one call per element with the element's values). A kernel taking them as a
/// 2-D array (`double A[3][3]`, PyOP2's element matrices) is called through the same kind of
/// kernel, which hands it each pointer as the type it declares (a `double *` is not a
/// `double (*)[3]` to a C++ or OpenCL compiler). Args viewing one component of a Dat
/// ([`Arg::component`]) go through it too: its kernel hands the user's the component.
fn element_buffers(rt: &Runtime, d: Draft) -> Result<Draft> {
    let buffers = d.args.iter().any(|a| {
        matches!(
            a.per_entry,
            Some(PerEntry::Buffer { .. } | PerEntry::FlatRow)
        ) || a.component.is_some()
    });
    let multi_dim = || {
        d.args.iter().all(|a| a.per_entry.is_none())
            && d.kernel
                .params()
                .is_some_and(|ps| ps.iter().any(|p| p.pointers == 0 && p.bounds.len() >= 2))
    };
    if !buffers && !multi_dim() {
        return Ok(d);
    }
    let (kernel, args) = rt.lower_buffers(&d.kernel, d.args)?;
    Ok(Draft { kernel, args, ..d })
}

/// Per-entry args (a local iteration space): its kernel walks the entries.
fn per_entry_args(rt: &Runtime, d: Draft) -> Result<Draft> {
    if d.args.iter().all(|a| a.per_entry.is_none()) {
        return Ok(d);
    }
    let (kernel, args) = rt.lower_entries(&d.kernel, &d.set, d.args)?;
    Ok(Draft { kernel, args, ..d })
}

/// A loop over an extruded set: over the base set with a column walk, or over the extruded set
/// with every map at every layer. A subset of an extruded set's cells (PyOP2's Subset of an
/// ExtrudedSet) gets its args as the loop over every cell has them, to run at its cells. Any
/// region but the whole of a set that is not extruded is an error.
fn extrusion(rt: &Runtime, d: Draft) -> Result<Draft> {
    if d.set.extrusion().is_some() {
        let (walker, set, args) = rt.lower_extruded(&d.kernel, &d.set, d.region, d.args)?;
        return Ok(Draft {
            kernel: walker.unwrap_or(d.kernel),
            set,
            region: Region::All,
            args,
            layer: false,
        });
    }
    if d.region != Region::All {
        return Err(Op2Error::NotExtruded {
            what: format!("loop `{}` over {:?}", d.kernel.name(), d.region),
            reason: format!(
                "only extruded sets have layers, and `{}` is not extruded",
                d.set.name()
            ),
        });
    }
    let Some(whole) = d
        .set
        .superset()
        .filter(|s| s.extrusion().is_some())
        .cloned()
    else {
        return Ok(d);
    };
    let base = whole.extrusion().expect("extruded").base().clone();
    rt.check_user_view(&d.kernel, &whole, &base, &d.args)?;
    let (_, args) = rt.layered_loop(&whole, Region::All, d.args)?;
    Ok(Draft { args, ..d })
}

/// A loop over a subset: direct args on the superset's Dats go through the subset's map, maps
/// from the superset are taken at the subset's elements.
fn subset(rt: &Runtime, d: Draft) -> Result<Draft> {
    if !d.set.is_subset() {
        return Ok(d);
    }
    let args = rt.subset_args(&d.set, d.args)?;
    Ok(Draft { args, ..d })
}
