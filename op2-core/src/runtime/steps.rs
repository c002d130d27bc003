//! The steps a loop is recorded as (PyOP2's and OP2's distributed sequence): start the halo
//! exchanges of the stale halo sections of the Dats the loop reads through maps (or directly in
//! the exec halo); run the core elements; finish the exchanges; run the owned elements; start the
//! reductions; run the exec halo (elements computed redundantly, for loops that write through
//! maps); finish the reductions; mark the sections the loop left stale. A step with nothing to do is not recorded: one
//! process with no halos records one loop step over the owned elements (and one over the exec
//! halo where a set has one). Each step states the data sections it reads and writes, so the lazy
//! trace orders and forces steps like loops.

use super::LoopRecord;
use crate::access::Access;
use crate::carrier::{Carrier, CarrierKind, HALO_BOTH};
use crate::comm::{Communicator, PendingExchange};
use crate::set::SetSizes;
use crate::signature::ArgKind;
use crate::trace::{DataUse, Pending, section};
use std::ops::Range;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

/// One step of the trace.
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
}

impl Step {
    /// The loop a step belongs to, for counting pending loops.
    pub(crate) fn loop_record(&self) -> Option<&Arc<LoopRecord>> {
        match self {
            Step::Loop(l) => Some(&l.record),
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
pub(crate) struct LoopStep {
    pub(crate) record: Arc<LoopRecord>,
    pub(crate) range: Range<usize>,
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

/// The sections a range of a set covers.
fn sections_of(sizes: SetSizes, range: &Range<usize>) -> u8 {
    let bounds = [
        (0, sizes.core, section::CORE),
        (sizes.core, sizes.core + sizes.owned, section::OWNED),
        (
            sizes.core + sizes.owned,
            sizes.core + sizes.owned + sizes.exec_halo,
            section::EXEC_HALO,
        ),
    ];
    bounds
        .iter()
        .filter(|(lo, hi, _)| range.start < *hi && *lo < range.end)
        .fold(0, |acc, (_, _, bit)| acc | bit)
}

/// Records `record` as steps: returns them in program order, with what each reads and writes.
/// `new_id` numbers the runtime's own carriers (reduction partials).
pub(crate) fn loop_steps(
    record: &Arc<LoopRecord>,
    comm: &dyn Communicator,
    mut new_id: impl FnMut() -> u64,
) -> Vec<Pending<Step>> {
    let sig = &record.sig;
    let set = &record.set;
    let sizes = set.sizes();
    let exec = record.exec;
    let distributed = comm.size() > 1;

    // Dats whose halo rows the loop reads, and which sections: through maps (not only
    // incremented or written) both, directly in the exec halo the exec section. Exchanged when
    // their set has neighbours, for the sections out of date.
    let mut exchanged: Vec<(Arc<Carrier>, u8)> = Vec::new();
    if distributed {
        for (a, c) in sig.args.iter().zip(&record.carriers) {
            let CarrierKind::Dat(dset) = c.kind() else {
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
            let stale = reads & c.halo_stale.load(Ordering::Relaxed);
            if stale == 0 || dset.halo().is_none() {
                continue;
            }
            match exchanged.iter_mut().find(|(d, _)| d.id == c.id) {
                Some((_, sections)) => *sections |= stale,
                None => exchanged.push((c.clone(), stale)),
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
                let host = crate::dtype::HostBuffer::zeroed(g.dtype(), g.dim());
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
    let exchange = (!exchanged.is_empty()).then(|| {
        Arc::new(Exchange {
            kernel: sig.kernel.name().to_string(),
            dats: exchanged,
            pending: Mutex::new(Vec::new()),
        })
    });
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
    if let Some(x) = &exchange {
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
    let mut ranges: Vec<(Range<usize>, ReductionTarget)> = Vec::new();
    match &exchange {
        // Core elements touch no halo: they run while the messages travel.
        Some(_) => {
            ranges.push((0..sizes.core, target.clone()));
            ranges.push((sizes.core..owned_end, target.clone()));
        }
        None => ranges.push((0..owned_end, target.clone())),
    }
    if exec && set.exec_size() > owned_end {
        ranges.push((owned_end..set.exec_size(), ReductionTarget::Discard));
    }
    let n_ranges = ranges.len();
    for (k, (range, reductions)) in ranges.into_iter().enumerate() {
        if k == 1 {
            if let Some(x) = &exchange {
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
        let (reads, writes) = range_uses(record, &range, sizes, &reductions);
        steps.push(Pending {
            work: Step::Loop(LoopStep {
                record: record.clone(),
                range,
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

/// What a loop step over `range` reads and writes: direct Dats in the range's sections, data
/// reached through maps anywhere, reductions in the Globals or the partials they accumulate in.
fn range_uses(
    record: &LoopRecord,
    range: &Range<usize>,
    sizes: SetSizes,
    reductions: &ReductionTarget,
) -> (Vec<DataUse>, Vec<DataUse>) {
    let mut reads = Vec::with_capacity(record.carriers.len() + record.consts.len());
    let mut writes = Vec::new();
    let iterated = sections_of(sizes, range);
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
        let sections = if a.kind == ArgKind::Direct {
            iterated
        } else {
            section::ALL
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
