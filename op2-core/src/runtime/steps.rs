//! The steps a loop is recorded as (PyOP2's and OP2's distributed sequence): start the halo
//! exchanges of the stale halo sections of the Dats the loop reads through maps (or directly in
//! the exec halo); run the core elements; finish the exchanges; run the owned elements; start the
//! reductions; run the exec halo (elements computed redundantly, for loops that write through
//! maps); finish the reductions; mark the sections the loop left stale. One process with no
//! halos records one loop step over the owned elements (and one over the exec halo where a set
//! has one). Across ranks the steps depend only on what every rank knows alike (the loop, the
//! halo staleness of its Dats), never on how many elements a section has, so every rank records
//! the same graph. Each step states the data sections it reads and writes: the graph's edges.

use super::record::LoopRecord;
use super::stats::LazyStats;
use crate::contract::config::LazyOptions;
use crate::model::access::Access;
use crate::model::carrier::{Carrier, CarrierKind, HALO_BOTH};
use crate::model::comm::{Communicator, PendingExchange, ReduceOp};
use crate::model::dtype::HostBuffer;
use crate::model::signature::ArgKind;
use crate::model::trace::{DataUse, Pending, section};
use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Instant;

/// One step of the trace.
#[derive(Clone)]
pub(crate) enum Step {
    /// Run a loop over a range of its iteration set.
    Loop(LoopStep),
    /// Send the owned values of Dats their neighbours hold as halo, and post the receives.
    HaloBegin(Arc<Exchange>),
    /// Wait for an exchange and write the received values into the halo rows.
    HaloEnd(Arc<Exchange>),
    /// Start each rank's reduction partials from the Globals (zero for sums, their value for
    /// MIN and MAX).
    ReduceInit(Arc<Reduction>),
    /// Start combining the partials across ranks.
    ReduceBegin(Arc<Reduction>),
    /// Finish combining and fold the result into the Globals.
    ReduceEnd(Arc<Reduction>),
    /// Give a temporary Dat its memory (from the pool of released temporaries when one fits).
    Malloc(Arc<Carrier>),
    /// Give a released temporary's memory back to the pool.
    Free(Arc<Carrier>),
}

impl Step {
    /// The loop a step belongs to, for counting pending loops.
    pub(crate) fn loop_record(&self) -> Option<&Arc<LoopRecord>> {
        match self {
            Step::Loop(l) => Some(&l.record),
            _ => None,
        }
    }

    /// The node's label in the pending graph, as seed 002's figures write them:
    /// `assemble1[core]`, `HaloSend(phi)`.
    pub(crate) fn label(&self) -> String {
        let dat = |x: &Exchange| x.dats.first().map_or("", |(c, _)| c.name()).to_string();
        let globals = |r: &Reduction| {
            r.globals
                .iter()
                .map(|(_, g, _)| g.name())
                .collect::<Vec<_>>()
                .join(",")
        };
        match self {
            Step::Loop(l) => format!("{}[{}]", l.record.sig.kernel.name(), l.part),
            Step::HaloBegin(x) => format!("HaloSend({})", dat(x)),
            Step::HaloEnd(x) => format!("HaloRecv({})", dat(x)),
            Step::ReduceInit(r) => format!("ReductionInit({})", globals(r)),
            Step::ReduceBegin(r) => format!("ReductionBegin({})", globals(r)),
            Step::ReduceEnd(r) => format!("ReductionEnd({})", globals(r)),
            Step::Malloc(c) => format!("malloc({})", c.name()),
            Step::Free(c) => format!("free({})", c.name()),
        }
    }

    /// Where the scheduler puts the step among those ready: sends and reductions started first
    /// (0, with temporaries' allocations and releases), then computation (1), then waits for
    /// messages (2), as seed 002 schedules them.
    pub(crate) fn rank(&self) -> u8 {
        match self {
            // Memory bookkeeping costs nothing and frees the loops that wait for it.
            Step::HaloBegin(_) | Step::ReduceBegin(_) | Step::Malloc(_) | Step::Free(_) => 0,
            Step::HaloEnd(_) | Step::ReduceEnd(_) => 2,
            _ => 1,
        }
    }

    /// Whether the step starts communication: such steps run in program order on every rank,
    /// whatever each forces, so that messages and collectives match up.
    pub(crate) fn communicates(&self) -> bool {
        matches!(self, Step::HaloBegin(_) | Step::ReduceBegin(_))
    }

    /// The steps that run in program order among themselves when forced together (see
    /// [`crate::model::trace::Graph::schedule`]): communication (class 0), and temporaries' allocations
    /// and releases (class 1: a temporary allocated after another was released then finds its
    /// memory in the pool).
    pub(crate) fn order_class(&self) -> Option<u8> {
        match self {
            _ if self.communicates() => Some(0),
            Step::Malloc(_) | Step::Free(_) => Some(1),
            _ => None,
        }
    }
}

/// Where a loop step's reduction args accumulate.
#[derive(Clone)]
pub(crate) enum ReductionTarget {
    /// Into the Globals themselves (one process).
    Globals,
    /// Into this rank's partials, combined across ranks later.
    Partials(Arc<Reduction>),
    /// Into scratch copies thrown away (elements computed redundantly must not count).
    Discard,
}

/// A loop over a range of its iteration set.
#[derive(Clone)]
pub(crate) struct LoopStep {
    pub(crate) record: Arc<LoopRecord>,
    pub(crate) range: Range<usize>,
    /// Which part of the set the range is, for labels: `core`, `owned`, `core,owned`, `exec`.
    pub(crate) part: &'static str,
    pub(crate) reductions: ReductionTarget,
    /// The loop's first step (its call is counted once, its bytes once).
    pub(crate) first: bool,
    /// The loop's last step (it has run when this one has).
    pub(crate) last: bool,
}

/// A halo exchange of some Dats of one set.
pub(crate) struct Exchange {
    /// The kernel of the loop that needs it (its timing row counts the traffic).
    pub(crate) kernel: String,
    /// The Dats, each with the halo sections ([`section`] bits) to bring up to date.
    pub(crate) dats: Vec<(Arc<Carrier>, u8)>,
    /// The messages in flight, one exchange per Dat, between begin and end.
    pub(crate) pending: Mutex<Vec<Box<dyn PendingExchange>>>,
    /// When the sends were posted (the overlap lasts until the receive is needed).
    pub(crate) posted: Mutex<Option<Instant>>,
}

/// The cross-rank reductions of one loop.
pub(crate) struct Reduction {
    /// The kernel of the loop whose Globals these are.
    pub(crate) kernel: String,
    /// Per reduction: the arg's position, the Global, its access.
    pub(crate) globals: Vec<(usize, Arc<Carrier>, Access)>,
    /// Per reduction, this rank's partial result.
    pub(crate) partials: Vec<Arc<Carrier>>,
    /// The loop's number (see [`LoopRecord`]'s `ordinal`).
    pub(crate) ordinal: u64,
    /// Every rank's partials (all of this loop's in one message), in flight between begin and
    /// end.
    pub(crate) pending: Mutex<Option<Box<dyn PendingExchange>>>,
}

/// The sections a loop step over `part` of its set iterates: named, never measured, so that the
/// graph does not depend on how many elements each section has on this rank.
fn sections_of(part: &str) -> u8 {
    match part {
        "core" => section::CORE,
        "owned" => section::OWNED,
        "exec" => section::EXEC_HALO,
        _ => section::CORE | section::OWNED,
    }
}

/// What recording a loop needs to know beyond the loop: the ranks, which optimisations run,
/// and about earlier exchanges.
pub(crate) struct Recording<'a> {
    /// The ranks the runtime runs with.
    pub(crate) comm: &'a dyn Communicator,
    /// The graph optimisations in force.
    pub(crate) opts: LazyOptions,
    /// Whether the exchange that last brought a Dat's halo (by carrier id) up to date was
    /// recorded since the last flush (the successive rule; otherwise the early one). Every rank
    /// agrees on this, where it might not on what has run.
    pub(crate) exchange_pending: &'a dyn Fn(u64) -> bool,
    /// Where skipped exchanges are counted.
    pub(crate) stats: &'a Mutex<LazyStats>,
}

/// Records `record` as steps: returns them in program order, with what each reads and writes.
/// `new_id` numbers the runtime's own carriers (reduction partials) and pseudo-resources.
pub(crate) fn loop_steps(
    record: &Arc<LoopRecord>,
    rec: &Recording<'_>,
    mut new_id: impl FnMut() -> u64,
) -> Vec<Pending<Step>> {
    let sig = &record.sig;
    let set = &record.set;
    let sizes = set.sizes();
    let exec = record.exec;
    let distributed = rec.comm.size() > 1;

    // Dats whose halo rows the loop reads, and which sections: through maps (not only
    // incremented or written) both, directly in the exec halo the exec section: every section
    // the loop reads, less those the optimisations know are up to date. Recorded on every rank,
    // also where the set has no neighbours (the exchange then sends and waits for nothing):
    // whether an exchange is still pending decides later skips (successive or early), and
    // what a force takes along, so every rank must have the same exchange steps. A rank
    // without neighbours once recorded none, ran ahead of the others' pending exchanges, and
    // with one of the two skips off the ranks disagreed on a later exchange and waited for
    // each other (op2-fuzz on three thread ranks).
    let mut exchanged: Vec<(Arc<Carrier>, u8)> = Vec::new();
    if distributed {
        for (a, c) in sig.args.iter().zip(&record.carriers) {
            let CarrierKind::Dat(_) = c.kind() else {
                continue;
            };
            let reads = match a.kind {
                ArgKind::Indirect { .. } | ArgKind::Row { .. }
                    if matches!(a.access, Access::Read | Access::Rw) =>
                {
                    HALO_BOTH
                }
                ArgKind::Direct if exec && a.access.reads() => section::EXEC_HALO,
                _ => 0,
            };
            if reads == 0 {
                continue;
            }
            let already = exchanged
                .iter()
                .find(|(d, _)| d.id == c.id)
                .map_or(0, |(_, s)| *s);
            let stale = reads & c.halo_stale.load(Ordering::Relaxed);
            let fresh = reads & !stale & !already;
            let mut wanted = stale;
            if fresh != 0 {
                // Up to date already: by an exchange recorded since the last flush (successive
                // exchanges), or by one before it (early skip).
                let successive = (rec.exchange_pending)(c.id);
                let skip = if successive {
                    rec.opts.successive_halo
                } else {
                    rec.opts.early_halo
                };
                if skip {
                    let mut st = rec.stats.lock().unwrap_or_else(|e| e.into_inner());
                    let bytes = halo_send_bytes(c, fresh);
                    if successive {
                        st.successive_exchanges_removed += 1;
                    } else {
                        st.early_exchanges_removed += 1;
                    }
                    st.exchange_bytes_saved += bytes;
                } else {
                    wanted |= fresh;
                }
            }
            if wanted == 0 {
                continue;
            }
            match exchanged.iter_mut().find(|(d, _)| d.id == c.id) {
                Some((_, sections)) => *sections |= wanted,
                None => exchanged.push((c.clone(), wanted)),
            }
        }
    }
    // The halos of what was exchanged are current; what the loop writes is not (marked now, in
    // program order: the steps run in that order). A Dat the loop writes only directly while it
    // runs its exec halo has that section computed here, correctly (whatever it read there was
    // exchanged first): only its non-exec halo goes out of date.
    for (c, sections) in &exchanged {
        c.halo_stale.fetch_and(!sections, Ordering::Relaxed);
    }
    for (a, c) in sig.args.iter().zip(&record.carriers) {
        if !a.access.writes() || !matches!(c.kind(), CarrierKind::Dat(_)) {
            continue;
        }
        let only_direct = sig
            .args
            .iter()
            .zip(&record.carriers)
            .filter(|(b, d)| d.id == c.id && b.access.writes())
            .all(|(b, _)| b.kind == ArgKind::Direct);
        if exec && only_direct {
            c.halo_stale.store(section::NONEXEC_HALO, Ordering::Relaxed);
        } else {
            c.halo_stale.store(HALO_BOTH, Ordering::Relaxed);
        }
    }

    let reduction = (distributed && sig.has_reductions()).then(|| {
        let globals: Vec<(usize, Arc<Carrier>, Access)> = sig
            .reduction_args()
            .into_iter()
            .map(|i| (i, record.carriers[i].clone(), sig.args[i].access))
            .collect();
        let partials = globals
            .iter()
            .map(|(_, g, _)| {
                let host = crate::model::dtype::HostBuffer::zeroed(g.dtype(), g.dim());
                Carrier::detached(g, new_id(), "this rank's partial", host)
            })
            .collect();
        Arc::new(Reduction {
            kernel: sig.kernel.name().to_string(),
            globals,
            partials,
            ordinal: record.ordinal,
            pending: Mutex::new(None),
        })
    });

    let mut steps: Vec<Pending<Step>> = Vec::new();
    // One exchange per Dat, as seed 002 draws them: each Dat's send and receive are nodes of
    // their own.
    let exchanges: Vec<Arc<Exchange>> = exchanged
        .into_iter()
        .map(|d| {
            Arc::new(Exchange {
                kernel: sig.kernel.name().to_string(),
                dats: vec![d],
                pending: Mutex::new(Vec::new()),
                posted: Mutex::new(None),
            })
        })
        .collect();
    let dat_uses = |dats: &[Arc<Carrier>], sections: u8| -> Vec<DataUse> {
        dats.iter()
            .map(|c| DataUse { id: c.id, sections })
            .collect()
    };
    let global_uses = |r: &Reduction, partials: bool, sections: u8| -> Vec<DataUse> {
        if partials {
            dat_uses(&r.partials, sections)
        } else {
            r.globals
                .iter()
                .map(|(_, g, _)| DataUse { id: g.id, sections })
                .collect()
        }
    };
    // An exchange reads the owned rows it sends and writes the halo sections it brings.
    let exchange_uses = |x: &Exchange, halo: bool| -> Vec<DataUse> {
        x.dats
            .iter()
            .map(|(c, sections)| DataUse {
                id: c.id,
                sections: if halo {
                    *sections
                } else {
                    section::CORE | section::OWNED
                },
            })
            .collect()
    };
    let net = |x: &Exchange| -> Vec<DataUse> {
        x.dats
            .iter()
            .map(|(c, _)| DataUse {
                id: c.id,
                sections: section::NET,
            })
            .collect()
    };
    for x in &exchanges {
        steps.push(Pending {
            work: Step::HaloBegin(x.clone()),
            reads: exchange_uses(x, false),
            writes: net(x),
        });
    }
    if let Some(r) = &reduction {
        steps.push(Pending {
            work: Step::ReduceInit(r.clone()),
            reads: global_uses(r, false, section::ALL),
            writes: global_uses(r, true, section::ALL),
        });
    }
    let target = match &reduction {
        Some(r) => ReductionTarget::Partials(r.clone()),
        None => ReductionTarget::Globals,
    };
    let owned_end = set.size();
    let mut ranges: Vec<(Range<usize>, ReductionTarget, &'static str)> = Vec::new();
    if exchanges.is_empty() {
        ranges.push((0..owned_end, target.clone(), "core,owned"));
    } else {
        // Core elements touch no halo: they run while the messages travel.
        ranges.push((0..sizes.core, target.clone(), "core"));
        ranges.push((sizes.core..owned_end, target.clone(), "owned"));
    }
    // Across ranks the exec step is recorded whether or not this rank's exec halo is empty:
    // the graph must not depend on section sizes.
    if exec && (distributed || set.exec_size() > owned_end) {
        ranges.push((owned_end..set.exec_size(), ReductionTarget::Discard, "exec"));
    }
    // Every step of the loop writes this: they run in order (the core part before the owned
    // part, as the seed draws them; a loop's timing and count stay whole).
    let chain = DataUse {
        id: new_id(),
        sections: section::CORE,
    };
    let n_ranges = ranges.len();
    for (k, (range, reductions, part)) in ranges.into_iter().enumerate() {
        if k == 1 {
            for x in &exchanges {
                steps.push(Pending {
                    work: Step::HaloEnd(x.clone()),
                    reads: net(x),
                    writes: exchange_uses(x, true),
                });
            }
        }
        let is_exec = matches!(reductions, ReductionTarget::Discard);
        if is_exec {
            if let Some(r) = &reduction {
                steps.push(Pending {
                    work: Step::ReduceBegin(r.clone()),
                    reads: global_uses(r, true, section::ALL),
                    writes: global_uses(r, false, section::NET),
                });
            }
        }
        let (reads, mut writes) = range_uses(record, part, &reductions);
        writes.push(chain);
        steps.push(Pending {
            work: Step::Loop(LoopStep {
                record: record.clone(),
                range,
                part,
                reductions,
                first: k == 0,
                last: k + 1 == n_ranges,
            }),
            reads,
            writes,
        });
    }
    if let Some(r) = &reduction {
        if !steps.iter().any(|p| matches!(p.work, Step::ReduceBegin(_))) {
            steps.push(Pending {
                work: Step::ReduceBegin(r.clone()),
                reads: global_uses(r, true, section::ALL),
                writes: global_uses(r, false, section::NET),
            });
        }
        let mut reads = global_uses(r, false, section::ALL);
        reads.extend(global_uses(r, false, section::NET));
        steps.push(Pending {
            work: Step::ReduceEnd(r.clone()),
            reads,
            writes: global_uses(r, false, section::ALL),
        });
    }
    steps
}

/// The bytes an exchange of `sections` of Dat `c` sends from this rank (what skipping it saves).
fn halo_send_bytes(c: &Carrier, sections: u8) -> u64 {
    let CarrierKind::Dat(set) = c.kind() else {
        return 0;
    };
    let Some(halo) = set.halo() else {
        return 0;
    };
    let row = (c.dim() * c.dtype().size()) as u64;
    halo.neighbours
        .iter()
        .map(|n| n.send_for(sections).len() as u64 * row)
        .sum()
}

/// What a loop step over `range` reads and writes: direct Dats in the range's sections, data
/// reached through maps anywhere, reductions in the Globals or the partials they accumulate in.
fn range_uses(
    record: &LoopRecord,
    part: &str,
    reductions: &ReductionTarget,
) -> (Vec<DataUse>, Vec<DataUse>) {
    let mut reads = Vec::with_capacity(record.carriers.len() + record.consts.len());
    let mut writes = Vec::new();
    let iterated = sections_of(part);
    let core_only = part == "core";
    let reduction_args = record.sig.reduction_args();
    for (i, (a, c)) in record.sig.args.iter().zip(&record.carriers).enumerate() {
        let id = match reductions {
            ReductionTarget::Partials(r) if reduction_args.contains(&i) => {
                let k = reduction_args
                    .iter()
                    .position(|&x| x == i)
                    .expect("a reduction");
                r.partials[k].id
            }
            // Scratch copies: nothing anybody else sees.
            ReductionTarget::Discard if reduction_args.contains(&i) => continue,
            _ => c.id,
        };
        let sections = match a.kind {
            ArgKind::Direct => iterated,
            // Core elements reach only core and owned elements through maps (what makes them
            // core); the rest reach the halos too.
            _ if core_only => section::CORE | section::OWNED,
            _ if matches!(c.kind(), CarrierKind::Dat(_)) => section::DATA,
            _ => section::ALL,
        };
        let u = DataUse { id, sections };
        if a.access.reads() {
            reads.push(u);
        }
        if a.access.writes() {
            writes.push(u);
        }
    }
    reads.extend(record.consts.iter().map(|c| DataUse {
        id: c.id,
        sections: section::ALL,
    }));
    (reads, writes)
}
/// The data each arg of a loop step works on: the loop's own, except that reduction args
/// accumulate in this rank's partials across ranks, or in scratch copies thrown away over
/// elements computed redundantly.
pub(crate) fn step_carriers(step: &LoopStep) -> Vec<Arc<Carrier>> {
    let rec = &step.record;
    let reductions = rec.sig.reduction_args();
    rec.carriers
        .iter()
        .enumerate()
        .map(
            |(i, c)| match (&step.reductions, reductions.iter().position(|&r| r == i)) {
                (ReductionTarget::Partials(r), Some(k)) => r.partials[k].clone(),
                (ReductionTarget::Discard, Some(_)) => Carrier::detached(
                    c,
                    super::sync::next_id(),
                    "redundant elements' part, discarded",
                    HostBuffer::zeroed(c.dtype(), c.dim()),
                ),
                _ => c.clone(),
            },
        )
        .collect()
}

/// The reduction an access folds partial results with.
pub(crate) fn reduce_op(access: Access) -> ReduceOp {
    match access {
        Access::Min => ReduceOp::Min,
        Access::Max => ReduceOp::Max,
        _ => ReduceOp::Sum,
    }
}
