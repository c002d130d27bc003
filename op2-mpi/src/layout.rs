//! Halo construction from maps (exec-halo depth one): given every element's part, the sections
//! of every set on one rank, their local order, and the maps in local numbers.
//!
//! On rank `r`, for each set:
//! - **owned**: the elements whose part is `r`;
//! - **exec halo**: elements of other parts that reach an element of `r` through some map: `r`
//!   runs them redundantly, so a loop that increments or writes through that map gets every
//!   contribution to `r`'s elements without sending any increments;
//! - **non-exec halo**: elements of other parts, not exec halo, that an owned or exec-halo element
//!   reaches through some map: read, never computed;
//! - **core**: owned elements whose map targets are all owned: a loop can compute them before
//!   any halo exchange has finished.
//!
//! Depth one is enough because every loop reads at most one map away from its iteration set:
//! an exec-halo element reads its own values (exchanged, as halo) and its targets' values (owned,
//! exec or non-exec here); and before each loop the runtime exchanges whatever the previous loops
//! changed. Chained redundant computation (an exec-halo element needing a value that only another
//! exec-halo element computes in the same loop) cannot happen in one loop.
//!
//! Local order: core | owned | exec halo | non-exec halo. Core and owned elements keep global
//! order (or a locality order when renumbering); halo elements are ordered by owner rank, then
//! global number, so each neighbour's elements are contiguous within each halo section.

use crate::partition::{Csr, Topology, join_all};
use op2_core::SetSizes;

const NONE: u8 = 0;
const OWNED: u8 = 1;
const EXEC: u8 = 2;
const NONEXEC: u8 = 3;

/// One set's sections on one rank.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct SetLayout {
    pub(crate) sizes: SetSizes,
    /// Global number of every local element, in local order.
    pub(crate) global: Vec<u64>,
    /// Owner rank of every halo element (local numbers `sizes.core + sizes.owned ..`).
    pub(crate) owners: Vec<u32>,
}

/// Everything one rank holds after partitioning, in local numbers.
#[derive(Debug, Clone)]
pub(crate) struct RankLayout {
    pub(crate) sets: Vec<SetLayout>,
    /// Every map's rows for the source set's core, owned and exec-halo elements.
    pub(crate) maps: Vec<Vec<i32>>,
}

impl RankLayout {
    /// Every set's four section sizes, flattened (core, owned, exec, non-exec per set): what
    /// ranks gather for the partition report.
    pub(crate) fn section_sizes(&self) -> Vec<u64> {
        self.sets
            .iter()
            .flat_map(|s| {
                let z = s.sizes;
                [z.core, z.owned, z.exec_halo, z.nonexec_halo]
            })
            .map(|x| x as u64)
            .collect()
    }
}

/// Builds rank `rank`'s layout. `order`, when given, is a locality key per global element of
/// every set (lower first) that orders the core and owned sections.
pub(crate) fn rank_layout(
    top: &Topology,
    parts: &[Vec<u32>],
    rank: u32,
    order: Option<&[Vec<u32>]>,
) -> RankLayout {
    let nsets = top.sizes.len();
    let mut mark: Vec<Vec<u8>> = parts
        .iter()
        .map(|p| {
            p.iter()
                .map(|&q| if q == rank { OWNED } else { NONE })
                .collect()
        })
        .collect();
    let mut core: Vec<Vec<bool>> = mark
        .iter()
        .map(|m| m.iter().map(|&x| x == OWNED).collect())
        .collect();

    // Exec halo and core, map by map.
    for m in &top.maps {
        let to_parts = &parts[m.to];
        for (e, row) in m.values.chunks_exact(m.arity).enumerate() {
            let reaches_mine = row.iter().any(|&t| to_parts[t as usize] == rank);
            let reaches_other = row.iter().any(|&t| to_parts[t as usize] != rank);
            match mark[m.from][e] {
                OWNED if reaches_other => core[m.from][e] = false,
                OWNED => {}
                _ if reaches_mine => mark[m.from][e] = EXEC,
                _ => {}
            }
        }
    }
    // Non-exec halo: what owned and exec elements reach and this rank does not hold yet.
    for m in &top.maps {
        for (e, row) in m.values.chunks_exact(m.arity).enumerate() {
            let here = mark[m.from][e];
            if here == OWNED || here == EXEC {
                for &t in row {
                    let t = t as usize;
                    if mark[m.to][t] == NONE {
                        mark[m.to][t] = NONEXEC;
                    }
                }
            }
        }
    }

    let mut sets = Vec::with_capacity(nsets);
    for s in 0..nsets {
        let (mut cores, mut owned, mut exec, mut nonexec) = (vec![], vec![], vec![], vec![]);
        for (e, &k) in mark[s].iter().enumerate() {
            match k {
                OWNED if core[s][e] => cores.push(e as u64),
                OWNED => owned.push(e as u64),
                EXEC => exec.push(e as u64),
                NONEXEC => nonexec.push(e as u64),
                _ => {}
            }
        }
        if let Some(order) = order {
            let key = |e: &u64| (order[s][*e as usize], *e);
            cores.sort_by_key(key);
            owned.sort_by_key(key);
        }
        let by_owner = |e: &u64| (parts[s][*e as usize], *e);
        exec.sort_by_key(by_owner);
        nonexec.sort_by_key(by_owner);
        let sizes = SetSizes {
            core: cores.len(),
            owned: owned.len(),
            exec_halo: exec.len(),
            nonexec_halo: nonexec.len(),
        };
        let owners = exec
            .iter()
            .chain(&nonexec)
            .map(|&e| parts[s][e as usize])
            .collect();
        let mut global = cores;
        global.extend(owned);
        global.extend(exec);
        global.extend(nonexec);
        sets.push(SetLayout {
            sizes,
            global,
            owners,
        });
    }

    // Local numbers of each set's elements (u32::MAX: not here).
    let local: Vec<Vec<u32>> = (0..nsets)
        .map(|s| {
            let mut l = vec![u32::MAX; top.sizes[s]];
            for (i, &g) in sets[s].global.iter().enumerate() {
                l[g as usize] = i as u32;
            }
            l
        })
        .collect();
    let maps = top
        .maps
        .iter()
        .map(|m| {
            let rows =
                sets[m.from].sizes.core + sets[m.from].sizes.owned + sets[m.from].sizes.exec_halo;
            let mut values = Vec::with_capacity(rows * m.arity);
            for &g in &sets[m.from].global[..rows] {
                let g = g as usize;
                for &t in &m.values[g * m.arity..(g + 1) * m.arity] {
                    let l = local[m.to][t as usize];
                    debug_assert_ne!(l, u32::MAX, "a target of an executed element is held");
                    values.push(l as i32);
                }
            }
            values
        })
        .collect();
    RankLayout { sets, maps }
}

/// A locality order for every set: reverse Cuthill-McKee on the first set's graph (elements
/// joined through shared map targets or sources), then each other set ordered by the lowest key
/// among the elements it is mapped to or from (as the partition propagates).
pub(crate) fn locality_order(top: &Topology, first: usize) -> Vec<Vec<u32>> {
    let nsets = top.sizes.len();
    let mut keys: Vec<Option<Vec<u32>>> = vec![None; nsets];
    keys[first] = Some(rcm(&set_graph(top, first)));
    loop {
        let next = (0..nsets).find(|&s| {
            keys[s].is_none()
                && top.maps.iter().any(|m| {
                    (m.from == s && keys[m.to].is_some()) || (m.to == s && keys[m.from].is_some())
                })
        });
        let Some(s) = next else { break };
        let mut key = vec![u32::MAX; top.sizes[s]];
        for m in &top.maps {
            if m.from == s {
                if let Some(to) = &keys[m.to] {
                    for (e, row) in m.values.chunks_exact(m.arity).enumerate() {
                        for &t in row {
                            key[e] = key[e].min(to[t as usize]);
                        }
                    }
                }
            } else if m.to == s {
                if let Some(from) = &keys[m.from] {
                    for (e, row) in m.values.chunks_exact(m.arity).enumerate() {
                        for &t in row {
                            key[t as usize] = key[t as usize].min(from[e]);
                        }
                    }
                }
            }
        }
        // Ranks, not raw keys, so ties keep global order and keys stay dense.
        let mut ids: Vec<u32> = (0..key.len() as u32).collect();
        ids.sort_by_key(|&e| (key[e as usize], e));
        let mut ranked = vec![0u32; key.len()];
        for (r, e) in ids.into_iter().enumerate() {
            ranked[e as usize] = r as u32;
        }
        keys[s] = Some(ranked);
    }
    keys.into_iter()
        .enumerate()
        .map(|(s, k)| k.unwrap_or_else(|| (0..top.sizes[s] as u32).collect()))
        .collect()
}

/// A set's own graph: elements joined when they share a target of a map from the set or, for a
/// set no map leaves, a source of a map into it.
fn set_graph(top: &Topology, s: usize) -> Csr {
    let mut pairs = Vec::new();
    let outgoing: Vec<_> = top.maps.iter().filter(|m| m.from == s).collect();
    if outgoing.is_empty() {
        for m in top.maps.iter().filter(|m| m.to == s) {
            for row in m.values.chunks_exact(m.arity) {
                join_all(row.iter().map(|&t| t as u32), &mut pairs);
            }
        }
    }
    for m in outgoing {
        // Target -> its sources; the sources of one target are joined.
        let mut by_target: Vec<Vec<u32>> = vec![Vec::new(); top.sizes[m.to]];
        for (e, row) in m.values.chunks_exact(m.arity).enumerate() {
            for &t in row {
                by_target[t as usize].push(e as u32);
            }
        }
        for group in by_target {
            join_all(group.into_iter(), &mut pairs);
        }
    }
    Csr::from_pairs(top.sizes[s], pairs)
}

/// Reverse Cuthill-McKee: breadth-first from a lowest-degree element of each component,
/// neighbours by increasing degree, the visit order reversed. Returns each element's position.
fn rcm(Csr { xadj, adj }: &Csr) -> Vec<u32> {
    let n = xadj.len() - 1;
    let degree = |v: usize| xadj[v + 1] - xadj[v];
    let mut by_degree: Vec<usize> = (0..n).collect();
    by_degree.sort_by_key(|&v| (degree(v), v));
    let mut seen = vec![false; n];
    let mut visit = Vec::with_capacity(n);
    let mut neighbours = Vec::new();
    for &start in &by_degree {
        if seen[start] {
            continue;
        }
        seen[start] = true;
        let mut head = visit.len();
        visit.push(start);
        while head < visit.len() {
            let v = visit[head];
            head += 1;
            neighbours.clear();
            neighbours.extend(
                adj[xadj[v]..xadj[v + 1]]
                    .iter()
                    .map(|&w| w as usize)
                    .filter(|&w| !seen[w]),
            );
            neighbours.sort_by_key(|&w| (degree(w), w));
            for &w in &neighbours {
                seen[w] = true;
                visit.push(w);
            }
        }
    }
    let mut position = vec![0u32; n];
    for (i, &v) in visit.iter().rev().enumerate() {
        position[v] = i as u32;
    }
    position
}
