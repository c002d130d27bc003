//! Loop fusion (seed 002's soft fusion): direct loops over the same part of the same set, forced
//! together, run as one generated loop whose kernel calls theirs in order for each element.
//! Siblings (independent loops, such as zeroings of temporaries) and chains (a loop that reads
//! what the one before it wrote) fuse alike: every arg reaches only the element's own row, so
//! running the kernels element by element gives what running the loops one after another does.
//! The fused kernel is written once per combination and compiled through the backend like any
//! kernel; a combination that does not compile (two kernels' helpers clash) runs unfused.

use super::LoopRecord;
use super::execute::{RuntimeShared, State, lock};
use super::steps::{LoopStep, ReductionTarget, Step};
use crate::access::Access;
use crate::backend::PreparedLoop;
use crate::carrier::{Carrier, CarrierKind};
use crate::error::Result;
use crate::kernel::Kernel;
use crate::signature::{ArgKind, ArgSig, ConstSig, LoopSignature};
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::Arc;

/// How many loops one fused node runs at most.
const MAX_MEMBERS: usize = 8;

/// The args of loops run as one: each distinct piece of data once, with its merged access.
pub(crate) struct Unified {
    /// The data of each fused arg (the loops' own carriers).
    pub(crate) carriers: Vec<Arc<Carrier>>,
    /// Each fused arg's signature.
    pub(crate) sigs: Vec<ArgSig>,
    /// Per loop, per arg of its own: the fused arg it is.
    pub(crate) per_member: Vec<Vec<usize>>,
}

/// Whether a step may start a fused group: a loop step whose loop can be fused, over a non-empty
/// range.
pub(crate) fn leads(step: &Step) -> bool {
    matches!(step, Step::Loop(l) if !l.range.is_empty() && fusable(&l.record))
}

/// Whether a loop can be part of a fused one: every arg reaches only the element's own row.
pub(crate) fn fusable(rec: &LoopRecord) -> bool {
    rec.maps.is_empty()
        && rec
            .sig
            .args
            .iter()
            .all(|a| matches!(a.kind, ArgKind::Direct | ArgKind::Global))
}

/// The fused args of `members` (in order), or `None` when they cannot run as one: a Global one
/// of them reduces appears in another, or two different kernels share a name.
pub(crate) fn unify(members: &[&LoopRecord]) -> Option<Unified> {
    let mut u = Unified {
        carriers: Vec::new(),
        sigs: Vec::new(),
        per_member: Vec::new(),
    };
    // Per fused Dat arg: the first loop using it, that loop's access (its args on the Dat
    // combined), and whether every use so far only reads.
    let mut first: Vec<(usize, Access, bool)> = Vec::new();
    let mut reduced_by: HashMap<u64, usize> = HashMap::new();
    let mut kernels: HashMap<&str, &Kernel> = HashMap::new();
    for (m, rec) in members.iter().enumerate() {
        let k = &rec.sig.kernel;
        match kernels.get(k.name()) {
            Some(other) if other.id() != k.id() && other.source() != k.source() => return None,
            _ => {
                kernels.insert(k.name(), k);
            }
        }
        let mut mine = Vec::with_capacity(rec.sig.args.len());
        for (a, c) in rec.sig.args.iter().zip(&rec.carriers) {
            let is_global = a.kind == ArgKind::Global;
            if is_global {
                if let Some(&owner) = reduced_by.get(&c.id) {
                    if owner != m {
                        return None;
                    }
                }
                if a.access.is_reduction() {
                    // A Global reduced here must not appear in an earlier loop either.
                    let seen_before = u
                        .per_member
                        .iter()
                        .flatten()
                        .any(|&i| u.carriers[i].id == c.id);
                    if seen_before {
                        return None;
                    }
                    reduced_by.insert(c.id, m);
                }
            }
            let found = u
                .carriers
                .iter()
                .zip(&u.sigs)
                .position(|(d, s)| d.id == c.id && (s.kind == ArgKind::Global) == is_global);
            let i = match found {
                Some(i) => {
                    let s = &mut u.sigs[i];
                    if s.dim != a.dim || s.dtype != a.dtype {
                        return None;
                    }
                    if is_global {
                        // Read by all, or reduced by one loop through one arg.
                        if !(s.access == Access::Read && a.access == Access::Read) {
                            return None;
                        }
                    } else {
                        let f = &mut first[i];
                        if f.0 == m {
                            f.1 = within_one_loop(f.1, a.access);
                        }
                        f.2 &= a.access == Access::Read;
                    }
                    i
                }
                None => {
                    u.carriers.push(c.clone());
                    u.sigs.push(*a);
                    first.push((m, a.access, a.access == Access::Read));
                    u.carriers.len() - 1
                }
            };
            mine.push(i);
        }
        u.per_member.push(mine);
    }
    for (s, (_, access, all_read)) in u.sigs.iter_mut().zip(&first) {
        if s.kind != ArgKind::Global {
            s.access = merged(*access, *all_read);
        }
    }
    Some(u)
}

/// The access one loop has to a Dat it passes through several args: the same READ or WRITE, or
/// else both.
fn within_one_loop(a: Access, b: Access) -> Access {
    if a == b && matches!(a, Access::Read | Access::Write) {
        a
    } else {
        Access::Rw
    }
}

/// The access of a fused Dat arg: read only if every loop only reads it; written in full by the
/// first loop that uses it, a write (later loops see what it wrote); anything else reads and
/// writes (a first INC too: it adds to the values there).
fn merged(first: Access, all_read: bool) -> Access {
    if all_read {
        Access::Read
    } else if first == Access::Write {
        Access::Write
    } else {
        Access::Rw
    }
}

/// Compiled code of a fused loop.
pub(crate) struct FusedCode {
    pub(crate) sig: Arc<LoopSignature>,
    pub(crate) prepared: Arc<dyn PreparedLoop>,
}

/// What decides a fused loop's code: the kernels, how their args map onto the fused ones, the
/// fused args' signatures, and the Consts.
#[derive(PartialEq, Eq, Hash)]
struct FusionKey {
    kernels: Vec<u64>,
    per_member: Vec<Vec<usize>>,
    sigs: Vec<ArgSig>,
    consts: Vec<u64>,
}

/// Fused code by combination (`None`: it did not compile; such loops run unfused).
#[derive(Default)]
pub(crate) struct Fusions {
    codes: HashMap<FusionKey, Option<Arc<FusedCode>>>,
    next: u64,
}

/// The C source of the fused kernel `name`: each distinct kernel once, under a name of the
/// generated code's own (so it cannot clash with the names around it), then `name` calling them
/// in order with the fused args.
fn fused_source(name: &str, members: &[&LoopRecord], u: &Unified) -> String {
    let mut s = String::new();
    let mut defined: HashSet<&str> = HashSet::new();
    for rec in members {
        let k = &rec.sig.kernel;
        if defined.insert(k.name()) {
            let _ = writeln!(s, "#define {0} op2_fused_part_{0}", k.name());
            if let Some(params) = k.params() {
                let list: Vec<&str> = params.iter().map(|p| p.text.as_str()).collect();
                let list = if list.is_empty() {
                    "void".to_string()
                } else {
                    list.join(", ")
                };
                let _ = writeln!(s, "static inline void {}({list});", k.name());
            }
            s.push_str(k.source());
            s.push('\n');
        }
    }
    let params: Vec<String> = u
        .sigs
        .iter()
        .enumerate()
        .map(|(i, a)| format!("{} *op2_a{i}", a.dtype.c_name()))
        .collect();
    let _ = writeln!(s, "void {name}({}) {{", params.join(", "));
    for (rec, mine) in members.iter().zip(&u.per_member) {
        let args: Vec<String> = mine.iter().map(|i| format!("op2_a{i}")).collect();
        let _ = writeln!(s, "  {}({});", rec.sig.kernel.name(), args.join(", "));
    }
    s.push_str("}\n");
    for name in defined {
        let _ = writeln!(s, "#undef {name}");
    }
    s
}

impl RuntimeShared {
    /// Whether node `c` can join `group` (nodes of `st`'s graph) in one fused loop.
    pub(crate) fn can_fuse(&self, st: &State, group: &[u64], c: u64) -> bool {
        if group.len() >= MAX_MEMBERS {
            return false;
        }
        let step = |n: u64| match st.trace.get(n).map(|x| &x.work) {
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
        if first.record.set.id() != cand.record.set.id()
            || first.range != cand.range
            || first.part != cand.part
            || !same_target
            || first.range.is_empty()
        {
            return false;
        }
        let opts = self.config.lazy_opts;
        let chained = st.trace.preds(c).any(|p| group.contains(&p));
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
            let own = super::execute::step_carriers(step);
            for (k, &i) in mine.iter().enumerate() {
                if own[k].id != step.record.carriers[k].id {
                    carriers[i] = own[k].clone();
                }
            }
        }
        let first = &steps[0];
        let seconds = match self.run_prepared(
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
        self.backend.loop_done(&carriers);
        // Time is shared among the loops by the bytes each would move on its own.
        let own: Vec<u64> = members
            .iter()
            .map(|r| direct_bytes(&r.sig.args, &r.carriers, first.range.len()))
            .collect();
        let total: u64 = own.iter().map(|b| (*b).max(1)).sum();
        for (step, b) in steps.iter().zip(&own) {
            self.loop_step_done(step, seconds * (*b).max(1) as f64 / total as f64);
        }
        let fused = direct_bytes(&u.sigs, &u.carriers, first.range.len());
        lock(&self.stats).fusion_bytes_saved += own.iter().sum::<u64>().saturating_sub(fused);
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
        let mut f = lock(&self.fusions);
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
        let code = match self.backend.prepare(&sig) {
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
        lock(&self.fusions).codes.insert(key, code.clone());
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
