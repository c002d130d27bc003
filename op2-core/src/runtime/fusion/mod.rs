//! Loop fusion (seed 002's soft fusion): direct loops over the same part of the same set, forced
//! together, run as one generated loop whose kernel calls theirs in order for each element.
//! Siblings (independent loops, such as zeroings of temporaries) and chains (a loop that reads
//! what the one before it wrote) fuse alike: every arg reaches only the element's own row, so
//! running the kernels element by element gives what running the loops one after another does.
//! The fused kernel is written once per combination and compiled through the backend like any
//! kernel; a combination that does not compile (two kernels' helpers clash) runs unfused. This
//! module decides what fuses and writes the fused code; `run` fuses nodes of the pending graph
//! and runs them, through the engine.

mod run;

use super::record::LoopRecord;
use super::steps::Step;
use crate::contract::backend::PreparedLoop;
use crate::model::access::Access;
use crate::model::carrier::Carrier;
use crate::model::kernel::Kernel;
use crate::model::signature::{ArgKind, ArgSig, LoopSignature};
use std::collections::{HashMap, HashSet};
use std::fmt::Write as _;
use std::sync::{Arc, Mutex};

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
struct FusedCodes {
    codes: HashMap<FusionKey, Option<Arc<FusedCode>>>,
    next: u64,
}

/// The fusion subsystem as a runtime holds it: the fused code made so far. Its work (`run`)
/// takes the runtime as a [`super::engine::StepRunner`] and nothing else of it.
#[derive(Default)]
pub(crate) struct Fusions {
    made: Mutex<FusedCodes>,
}

/// The C source of the fused kernel `name`: each distinct kernel once, under a name of the
/// generated code's own (so it cannot clash with the names around it), then `name` calling them
/// in order with the fused args.
fn fused_source(name: &str, members: &[&LoopRecord], u: &Unified) -> String {
    // Pointers reach each kernel through `OP2_PASS`, whatever its parameters' spelling (`long *`
    // for an `int64_t` Dat, added `const`), in C and in C++.
    let mut s = String::from(crate::model::kernel::PASS_MACRO);
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
        let args: Vec<String> = mine.iter().map(|i| format!("OP2_PASS(op2_a{i})")).collect();
        let _ = writeln!(s, "  {}({});", rec.sig.kernel.name(), args.join(", "));
    }
    s.push_str("}\n");
    for name in defined {
        let _ = writeln!(s, "#undef {name}");
    }
    s
}
