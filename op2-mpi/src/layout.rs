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

use crate::partition::Topology;
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

/// A locality order for every set (op2-renumber's reverse Cuthill-McKee from set `first`, the
/// other sets through the maps): each element's new position.
pub(crate) fn locality_order(top: &Topology, first: usize) -> Vec<Vec<u32>> {
    let maps: Vec<op2_renumber::MapRef> = top
        .maps
        .iter()
        .map(|m| op2_renumber::MapRef {
            from: m.from,
            to: m.to,
            arity: m.arity,
            values: &m.values,
        })
        .collect();
    op2_renumber::locality_order(&top.sizes, &maps, first)
        .expect("the topology was checked when the mesh was declared")
}
