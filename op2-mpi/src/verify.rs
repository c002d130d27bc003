//! Checks a distribution against the mesh it came from: the invariants halo construction
//! promises, each checked from the global data rather than from how the layout was built.

use crate::collective::agree;
use crate::distribute::Distributed;
use crate::error::{MpiError, Result};
use crate::mesh::{Input, MeshBuilder};
use op2_core::DType;
use op2_core::comm::{Communicator, ReduceOp};

/// Collective: checks this rank's part `d` of a distribution of `whole` (the same mesh declared
/// with [`Input::Everywhere`], so every rank sees all of it), failing on every rank when any rank
/// finds a broken invariant:
/// - every global element is owned by exactly one rank;
/// - sections are core | owned | exec halo | non-exec halo, each halo element received from
///   exactly one neighbour, each halo section ordered by owner rank;
/// - core elements reach only owned elements through every map;
/// - every element that reaches an owned element through a map is owned or exec halo here;
/// - every map row held maps to the same global targets as the global map, and every target
///   an executed element reads is here;
/// - what a rank sends a neighbour is what that neighbour expects to receive, in order;
/// - every dat holds the declared values at every local element, halos included.
pub fn verify(whole: &MeshBuilder, d: &Distributed, comm: &dyn Communicator) -> Result<()> {
    let local = check_local(whole, d);
    agree(comm, local)?;
    let owned_once = check_owned_once(whole, d, comm);
    agree(comm, owned_once)?;
    let lists = check_lists(d, comm);
    agree(comm, lists)
}

fn broken(d: &Distributed, reason: String) -> MpiError {
    MpiError::Invariant {
        rank: d.rank,
        reason,
    }
}

fn check_local(whole: &MeshBuilder, d: &Distributed) -> Result<()> {
    let bad = |r: String| Err(broken(d, r));
    if whole.input != Input::Everywhere {
        return Err(MpiError::BadDeclaration(
            "verify needs the whole mesh (Input::Everywhere)".into(),
        ));
    }
    // Local number of every global element held, per set.
    let mut local_of: Vec<Vec<u32>> = Vec::new();
    for (s, ls) in d.sets.iter().enumerate() {
        let z = ls.sizes;
        let total = z.core + z.owned + z.exec_halo + z.nonexec_halo;
        let n = whole.sets[s].size;
        if ls.global.len() != total {
            return bad(format!(
                "set `{}` holds {} ids for {total} elements",
                ls.name,
                ls.global.len()
            ));
        }
        let mut l = vec![u32::MAX; n];
        for (i, &g) in ls.global.iter().enumerate() {
            if g as usize >= n || l[g as usize] != u32::MAX {
                return bad(format!(
                    "set `{}`: global id {g} out of range or held twice",
                    ls.name
                ));
            }
            l[g as usize] = i as u32;
        }
        // Halo elements: each received once; owners non-decreasing within each halo section.
        let first_halo = z.core + z.owned;
        let mut owner = vec![usize::MAX; total];
        for nb in &ls.halo.neighbours {
            if nb.rank == d.rank || nb.rank >= d.ranks {
                return bad(format!(
                    "set `{}` lists neighbour rank {}",
                    ls.name, nb.rank
                ));
            }
            for &e in &nb.receive {
                let e = e as usize;
                if e < first_halo || e >= total || owner[e] != usize::MAX {
                    return bad(format!("set `{}`: element {e} received wrongly", ls.name));
                }
                owner[e] = nb.rank;
            }
            if let Some(&e) = nb.send.iter().find(|&&e| e as usize >= first_halo) {
                return bad(format!(
                    "set `{}`: sends element {e}, which it does not own",
                    ls.name
                ));
            }
        }
        if let Some(e) = (first_halo..total).find(|&e| owner[e] == usize::MAX) {
            return bad(format!(
                "set `{}`: halo element {e} comes from no neighbour",
                ls.name
            ));
        }
        let exec_end = first_halo + z.exec_halo;
        for section in [first_halo..exec_end, exec_end..total] {
            if section.clone().skip(1).any(|e| owner[e] < owner[e - 1]) {
                return bad(format!(
                    "set `{}`: a halo section is not ordered by owner",
                    ls.name
                ));
            }
        }
        local_of.push(l);
    }
    let owned_here = |s: usize, g: usize| {
        let l = local_of[s][g];
        l != u32::MAX && (l as usize) < d.sets[s].sizes.core + d.sets[s].sizes.owned
    };
    for (m, lm) in whole.maps.iter().zip(&d.maps) {
        let from = &d.sets[m.from];
        let (fz, tz) = (from.sizes, d.sets[m.to].sizes);
        let rows = fz.core + fz.owned + fz.exec_halo;
        if lm.values.len() != rows * m.arity {
            return bad(format!(
                "map `{}` holds {} values for {rows} rows",
                m.name,
                lm.values.len()
            ));
        }
        let t_total = d.sets[m.to].global.len();
        for (i, row) in lm.values.chunks_exact(m.arity).enumerate() {
            let g = from.global[i] as usize;
            for (k, &v) in row.iter().enumerate() {
                if v < 0 || v as usize >= t_total {
                    return bad(format!("map `{}` row {i}: target {v} is not held", m.name));
                }
                if d.sets[m.to].global[v as usize] as i64 != m.values.get(g * m.arity + k) {
                    return bad(format!("map `{}` row {i}: wrong global target", m.name));
                }
                if i < fz.core && v as usize >= tz.core + tz.owned {
                    return bad(format!(
                        "map `{}`: core element {i} reaches halo element {v}",
                        m.name
                    ));
                }
            }
        }
        // Everything that reaches an owned element must run here.
        for (g, &l) in local_of[m.from].iter().enumerate() {
            let reaches_owned =
                (0..m.arity).any(|k| owned_here(m.to, m.values.get(g * m.arity + k) as usize));
            if reaches_owned && (l == u32::MAX || l as usize >= rows) {
                return bad(format!(
                    "map `{}`: element {g} of `{}` reaches an owned element but is neither owned nor exec halo",
                    m.name, from.name
                ));
            }
        }
    }
    for (dd, ld) in whole.dats.iter().zip(&d.dats) {
        let row = dd.dim * dd.dtype.size();
        for (i, &g) in d.sets[dd.set].global.iter().enumerate() {
            let g = g as usize;
            if ld.bytes.get(i * row..(i + 1) * row) != Some(&dd.bytes[g * row..(g + 1) * row]) {
                return bad(format!(
                    "dat `{}`: local element {i} (global {g}) holds other values",
                    dd.name
                ));
            }
        }
    }
    Ok(())
}

/// Every set takes part in the same collectives whatever it finds: the first problem is kept
/// and reported after the loop, so no rank leaves a collective early.
fn check_owned_once(whole: &MeshBuilder, d: &Distributed, comm: &dyn Communicator) -> Result<()> {
    let mut found: Result<()> = Ok(());
    for (s, ls) in d.sets.iter().enumerate() {
        let mut count = vec![0i32; whole.sets[s].size];
        for &g in &ls.global[..ls.sizes.core + ls.sizes.owned] {
            count[g as usize] += 1;
        }
        let mut bytes: Vec<u8> = bytemuck::cast_slice(&count).to_vec();
        comm.all_reduce(&mut bytes, DType::I32, ReduceOp::Sum)?;
        let count: Vec<i32> = bytemuck::pod_collect_to_vec(&bytes);
        if let Some(g) = count.iter().position(|&c| c != 1) {
            found = found.and(Err(broken(
                d,
                format!(
                    "element {g} of set `{}` is owned by {} ranks",
                    ls.name, count[g]
                ),
            )));
        }
    }
    found
}

fn check_lists(d: &Distributed, comm: &dyn Communicator) -> Result<()> {
    let mut found: Result<()> = Ok(());
    for ls in &d.sets {
        // Every rank tells every rank what it sends there (nothing, when not a neighbour), so a
        // list one side has and the other lacks is found too.
        // First how many of them the neighbour holds in its exec halo, then their numbers.
        let mut sends = vec![Vec::new(); d.ranks];
        for n in &ls.halo.neighbours {
            let mut ids: Vec<u64> = vec![n.send_to_exec as u64];
            ids.extend(n.send.iter().map(|&e| ls.global[e as usize]));
            sends[n.rank] = bytemuck::cast_slice(&ids).to_vec();
        }
        let got = comm.all_to_all_v(sends)?;
        let exec_end = ls.sizes.core + ls.sizes.owned + ls.sizes.exec_halo;
        for (p, bytes) in got.iter().enumerate() {
            let mut sent: Vec<u64> = bytemuck::pod_collect_to_vec(bytes);
            if sent.is_empty() {
                sent.push(0);
            }
            let expected: Vec<u64> = ls
                .halo
                .neighbours
                .iter()
                .find(|n| n.rank == p)
                .map(|n| {
                    let exec = n
                        .receive
                        .iter()
                        .filter(|&&e| (e as usize) < exec_end)
                        .count();
                    std::iter::once(exec as u64)
                        .chain(n.receive.iter().map(|&e| ls.global[e as usize]))
                        .collect()
                })
                .unwrap_or_else(|| vec![0]);
            if sent != expected {
                found = found.and(Err(broken(
                    d,
                    format!(
                        "set `{}`: rank {p} sends {} elements ({} for the exec halo), this rank \
                         expects {} ({}) (or others)",
                        ls.name,
                        sent.len() - 1,
                        sent[0],
                        expected.len() - 1,
                        expected[0]
                    ),
                )));
            }
        }
    }
    found
}
