//! Fusion's work: grouping pending nodes into fused loops, compiling each combination once and
//! running a fused node.

use super::{FusedCode, FusionKey, Fusions, MAX_MEMBERS, Unified, fusable, fused_source, unify};
use crate::model::access::Access;
use crate::model::carrier::{Carrier, CarrierKind};
use crate::model::error::Result;
use crate::model::kernel::Kernel;
use crate::model::signature::{ArgSig, ConstSig, LoopSignature};
use crate::model::trace::Graph;
use crate::runtime::engine::{Engine, StepRunner, run_prepared};
use crate::runtime::record::LoopRecord;
use crate::runtime::steps::{LoopStep, ReductionTarget, Step};
use crate::runtime::sync::lock;
use std::sync::Arc;

/// Fusion at work: its state and the runtime it runs steps with.
pub(crate) struct FusionWork<'a> {
    rt: &'a dyn StepRunner,
    engine: &'a Engine,
    state: &'a Fusions,
}

impl Fusions {
    /// This subsystem working with the runtime `rt`.
    pub(crate) fn with<'a>(&'a self, rt: &'a dyn StepRunner) -> FusionWork<'a> {
        FusionWork {
            rt,
            engine: rt.engine(),
            state: self,
        }
    }
}

impl FusionWork<'_> {
    /// Whether node `c` can join `group` (nodes of the pending graph `trace`) in one fused loop.
    pub(crate) fn can_fuse(&self, trace: &Graph<Step>, group: &[u64], c: u64) -> bool {
        if group.len() >= MAX_MEMBERS {
            return false;
        }
        let step = |n: u64| match trace.get(n).map(|x| &x.work) {
            Some(Step::Loop(l)) if fusable(&l.record) => Some(l),
            _ => None,
        };
        let (Some(first), Some(cand)) = (step(group[0]), step(c)) else {
            return false;
        };
        let same_target = matches!(
            (&first.reductions, &cand.reductions),
            (ReductionTarget::Globals, ReductionTarget::Globals)
                | (ReductionTarget::Partials(_), ReductionTarget::Partials(_))
                | (ReductionTarget::Discard, ReductionTarget::Discard)
        );
        // One unit is compiled as C or as C++: a C kernel need not be valid C++ (a fused unit
        // that does not compile would only be given up, after a compiler run); and with one set
        // of compile arguments, which may define a macro one way for one kernel and another way
        // for the other (link arguments add up).
        let (a, b) = (&first.record.sig.kernel, &cand.record.sig.kernel);
        // A kernel acting outside its args keeps its loop to itself (its effects would
        // interleave with the other loop's element by element).
        if a.has_host_effects() || b.has_host_effects() {
            return false;
        }
        // Nor are loops linked differently fused: two libraries may define one symbol, which
        // one unit would bind once for both.
        if first.record.set.id() != cand.record.set.id()
            || a.is_cpp() != b.is_cpp()
            || a.compile_args() != b.compile_args()
            || a.link_args() != b.link_args()
            || first.range != cand.range
            || first.part != cand.part
            || !same_target
            || first.range.is_empty()
        {
            return false;
        }
        let opts = self.engine.config.lazy_opts;
        let chained = trace.preds(c).any(|p| group.contains(&p));
        if !(if chained {
            opts.chain_fusion
        } else {
            opts.sibling_fusion
        }) {
            return false;
        }
        let mut members: Vec<&LoopRecord> = group
            .iter()
            .filter_map(|n| step(*n).map(|l| &*l.record))
            .collect();
        members.push(&cand.record);
        unify(&members).is_some()
    }

    /// Runs loop steps (over the same range of the same set) as one fused loop. `None`, having
    /// run nothing, when they cannot run as one now: their fused code does not compile, or some
    /// of their data is borrowed on the host (the caller then runs them one by one, and only
    /// those that need the borrowed data fail).
    pub(crate) fn try_run_fused(&self, steps: &[LoopStep]) -> Option<Result<()>> {
        let members: Vec<&LoopRecord> = steps.iter().map(|s| &*s.record).collect();
        let u = unify(&members)?;
        let consts = member_consts(&members);
        let free = u
            .carriers
            .iter()
            .chain(&consts)
            .all(|c| c.lock_for_loop("fused loops", true).is_ok());
        if !free {
            return None;
        }
        let code = self.fused_code(&members, &u, &consts)?;
        // Each fused arg's data as this run sees it (a reduction's partials across ranks).
        let mut carriers = u.carriers.clone();
        for (step, mine) in steps.iter().zip(&u.per_member) {
            let own = crate::runtime::steps::step_carriers(step);
            for (k, &i) in mine.iter().enumerate() {
                if own[k].id != step.record.carriers[k].id {
                    carriers[i] = own[k].clone();
                }
            }
        }
        let first = &steps[0];
        let seconds = match run_prepared(
            "fused loops",
            &code.sig,
            &code.prepared,
            &first.record.set,
            first.range.clone(),
            &carriers,
            &[],
            &consts,
        ) {
            Ok(s) => s,
            Err(e) => return Some(Err(e)),
        };
        self.engine.backend.loop_done(&carriers);
        // Time is shared among the loops by the bytes each would move on its own.
        let own: Vec<u64> = members
            .iter()
            .map(|r| direct_bytes(&r.sig.args, &r.carriers, first.range.len()))
            .collect();
        let total: u64 = own.iter().map(|b| (*b).max(1)).sum();
        for (step, b) in steps.iter().zip(&own) {
            self.rt
                .loop_step_done(step, seconds * (*b).max(1) as f64 / total as f64);
        }
        let fused = direct_bytes(&u.sigs, &u.carriers, first.range.len());
        lock(&self.engine.stats).fusion_bytes_saved +=
            own.iter().sum::<u64>().saturating_sub(fused);
        Some(Ok(()))
    }

    /// The compiled fused loop for `members`, written and compiled the first time.
    fn fused_code(
        &self,
        members: &[&LoopRecord],
        u: &Unified,
        consts: &[Arc<Carrier>],
    ) -> Option<Arc<FusedCode>> {
        let key = FusionKey {
            kernels: members.iter().map(|r| r.sig.kernel.id()).collect(),
            per_member: u.per_member.clone(),
            sigs: u.sigs.clone(),
            consts: consts.iter().map(|c| c.id).collect(),
        };
        let mut f = lock(&self.state.made);
        if let Some(code) = f.codes.get(&key) {
            return code.clone();
        }
        f.next += 1;
        let name = format!("op2_fused_{}", f.next);
        drop(f);
        let kernel = Kernel::fused(
            &name,
            fused_source(&name, members, u),
            members
                .iter()
                .zip(&u.per_member)
                .map(|(r, args)| (r.sig.kernel.clone(), args.clone()))
                .collect(),
        );
        let ids: Vec<u64> = u.carriers.iter().map(|c| c.id).collect();
        let sig = LoopSignature {
            kernel,
            args: u.sigs.clone(),
            consts: consts
                .iter()
                .map(|c| ConstSig {
                    name: c.name.clone(),
                    dtype: c.dtype(),
                    dim: c.dim,
                })
                .collect(),
            n_maps: 0,
            data: LoopSignature::data_classes(&ids),
        };
        let code = match self.engine.backend.prepare(&sig) {
            Ok(prepared) => Some(Arc::new(FusedCode {
                sig: Arc::new(sig),
                prepared,
            })),
            Err(e) => {
                if std::env::var_os("OP2_DEBUG_FUSION").is_some() {
                    eprintln!("op2: fused loops run unfused: {e}");
                }
                None
            }
        };
        lock(&self.state.made).codes.insert(key, code.clone());
        code
    }
}

/// The Consts of every loop, each once, in order of first use.
fn member_consts(members: &[&LoopRecord]) -> Vec<Arc<Carrier>> {
    let mut consts: Vec<Arc<Carrier>> = Vec::new();
    for rec in members {
        for c in &rec.consts {
            if !consts.iter().any(|d| d.id == c.id) {
                consts.push(c.clone());
            }
        }
    }
    consts
}

/// Bytes direct args `sigs` on `carriers` move over `n` elements by OP2's convention: each Dat
/// arg's rows once when read or written, twice when both (Globals and Consts not counted).
fn direct_bytes(sigs: &[ArgSig], carriers: &[Arc<Carrier>], n: usize) -> u64 {
    sigs.iter()
        .zip(carriers)
        .filter(|(_, c)| matches!(c.kind(), CarrierKind::Dat(_)))
        .map(|(a, _)| {
            let row = (a.dim * a.dtype.size()) as u64;
            let times = match a.access {
                Access::Read | Access::Write => 1,
                _ => 2,
            };
            row * n as u64 * times
        })
        .sum()
}
