//! Building one plan: blocks, staging maps (local-to-global and global-to-local), element and block
//! colours.

use op2_core::plan::{
    LocalIndices, MapAccess, Plan, PlanArg, PlanDetail, PlanRequest, PlanStats, Staging,
};
use op2_core::{Op2Error, Result};
use std::collections::HashMap;
use std::time::Instant;

/// The items (per modified Dat, its target elements) that colouring args modify.
struct Conflicts<'a> {
    args: Vec<(usize, Reach<'a>)>, // (item offset of the data, what the arg reaches)
    items: usize,
}

/// What one colouring arg reaches from element `e`.
#[derive(Clone, Copy)]
enum Reach<'a> {
    /// Row `e` itself (a direct arg on data that other args modify through a map).
    Element,
    /// Through a map: its values, arity and entries.
    Map(&'a [i32], usize, MapAccess),
}

impl<'a> Conflicts<'a> {
    /// The conflicts of a loop over elements below `end`.
    fn new(args: &'a [PlanArg<'a>], end: usize) -> Self {
        let keep = PlanArg::colouring(args);
        // Every Dat reached through a map gets its own range of items: its target set's size,
        // and at least the iteration range where a direct arg on it colours.
        let mut sizes: Vec<(u64, usize)> = Vec::new();
        for (a, &k) in args.iter().zip(&keep) {
            let size = match &a.map {
                Some(map) => map.target_size,
                None if k => end,
                None => continue,
            };
            match sizes.iter_mut().find(|(d, _)| *d == a.data) {
                Some((_, s)) => *s = (*s).max(size),
                None => sizes.push((a.data, size)),
            }
        }
        let mut offsets: HashMap<u64, usize> = HashMap::new();
        let mut items = 0;
        for (data, size) in sizes {
            offsets.insert(data, items);
            items += size;
        }
        let list = args
            .iter()
            .zip(keep)
            .filter(|(_, k)| *k)
            .map(|(a, _)| {
                let reach = match &a.map {
                    Some(m) => Reach::Map(m.values, m.arity, a.entries),
                    None => Reach::Element,
                };
                (offsets[&a.data], reach)
            })
            .collect();
        Conflicts { args: list, items }
    }

    fn is_empty(&self) -> bool {
        self.args.is_empty()
    }

    /// Calls `f` with every item element `e` modifies.
    #[inline]
    fn for_items(&self, e: usize, mut f: impl FnMut(usize)) {
        for &(offset, reach) in &self.args {
            match reach {
                Reach::Element => f(offset + e),
                Reach::Map(values, arity, MapAccess::Entry(j)) => {
                    f(offset + values[e * arity + j] as usize)
                }
                Reach::Map(values, arity, MapAccess::Row) => {
                    for &v in &values[e * arity..(e + 1) * arity] {
                        f(offset + v as usize)
                    }
                }
            }
        }
    }
}

const UNCOLOURED: u32 = u32::MAX;

/// Greedy colouring of `units` (each a set of elements), 32 colours per pass, as PyOP2's parallel execution plan does.
/// Returns each unit's colour.
fn colour_units(
    conflicts: &Conflicts<'_>,
    work: &mut [u32],
    units: usize,
    elements_of: impl Fn(usize) -> std::ops::Range<usize>,
) -> Vec<u32> {
    let mut colours = vec![UNCOLOURED; units];
    let mut remaining = units;
    let mut base = 0u32;
    while remaining > 0 {
        for (u, colour) in colours.iter_mut().enumerate() {
            if *colour != UNCOLOURED {
                continue;
            }
            let mut mask = 0u32;
            for e in elements_of(u) {
                conflicts.for_items(e, |i| mask |= work[i]);
            }
            if mask != u32::MAX {
                let c = (!mask).trailing_zeros();
                *colour = base + c;
                remaining -= 1;
                for e in elements_of(u) {
                    conflicts.for_items(e, |i| work[i] |= 1 << c);
                }
            }
        }
        // Next pass: fresh masks; its colours are offset by 32.
        for u in 0..units {
            for e in elements_of(u) {
                conflicts.for_items(e, |i| work[i] = 0);
            }
        }
        base += 32;
    }
    colours
}

/// Builds a plan (no caching; see [`crate::Planner`]).
pub fn build_plan(req: &PlanRequest<'_>) -> Result<Plan> {
    let started = Instant::now();
    let bad = |reason: String| Op2Error::Config {
        key: "plan".into(),
        value: format!("set {}", req.set),
        reason,
    };
    if req.block_size == 0 {
        return Err(bad("block size must be positive".into()));
    }
    if req.start > req.end {
        return Err(bad(format!(
            "range {}..{} is backwards",
            req.start, req.end
        )));
    }
    if req.end > u32::MAX as usize {
        return Err(bad(
            "sets larger than 2^32 elements are not supported".into()
        ));
    }
    for a in req.args {
        if let Some(m) = &a.map {
            let entry_ok = match a.entries {
                MapAccess::Entry(j) => j < m.arity,
                MapAccess::Row => true,
            };
            let rows = &m.values[..m.values.len().min(req.end * m.arity)];
            if m.arity == 0 || !entry_ok || rows.len() < req.end * m.arity {
                return Err(bad(format!(
                    "map `{}` does not fit an arg of a loop over {} elements",
                    m.name, req.end
                )));
            }
            if let Some(v) = rows.iter().find(|&&v| v < 0 || v as usize >= m.target_size) {
                return Err(bad(format!(
                    "map `{}` holds {v}, outside its target of {}",
                    m.name, m.target_size
                )));
            }
        }
    }
    let (start, end) = (req.start, req.end);
    let len = end - start;
    let bs = req.block_size;
    let nblocks = len.div_ceil(bs);
    let block_offsets: Vec<u32> = (0..nblocks).map(|b| (start + b * bs) as u32).collect();
    let block_lengths: Vec<u32> = (0..nblocks)
        .map(|b| (bs.min(len - b * bs)) as u32)
        .collect();
    let block_range = |b: usize| {
        let s = start + b * bs;
        s..(s + bs).min(end)
    };

    // Element colours inside each block (when asked for), then block colours.
    let full = req.detail == PlanDetail::Full;
    let conflicts = Conflicts::new(req.args, end);
    let mut element_colours = vec![0u32; if full { len } else { 0 }];
    let mut block_element_colours =
        vec![if len > 0 { 1u32 } else { 0 }; if full { nblocks } else { 0 }];
    let block_colours = if conflicts.is_empty() {
        vec![0u32; nblocks]
    } else {
        let mut work = vec![0u32; conflicts.items];
        for (b, count) in block_element_colours.iter_mut().enumerate() {
            let range = block_range(b);
            let first = range.start;
            let colours = colour_units(&conflicts, &mut work, range.len(), |u| {
                first + u..first + u + 1
            });
            *count = colours.iter().max().map_or(0, |&c| c + 1);
            element_colours[range.start - start..range.end - start].copy_from_slice(&colours);
        }
        colour_units(&conflicts, &mut work, nblocks, block_range)
    };
    let ncolours = block_colours.iter().max().map_or(0, |&c| c as usize + 1);
    let mut colour_offsets = vec![0usize; ncolours + 1];
    for &c in &block_colours {
        colour_offsets[c as usize + 1] += 1;
    }
    for c in 0..ncolours {
        colour_offsets[c + 1] += colour_offsets[c];
    }
    let mut fill = colour_offsets.clone();
    let mut block_map = vec![0u32; nblocks];
    for (b, &c) in block_colours.iter().enumerate() {
        block_map[fill[c as usize]] = b as u32;
        fill[c as usize] += 1;
    }

    // Staging for every unique (data, map) pair accessed indirectly.
    let mut staging: Vec<Staging> = Vec::new();
    let mut arg_staging = vec![None; req.args.len()];
    let mut pairs: Vec<((u64, u64), Vec<usize>, usize)> = Vec::new(); // key, entries, representative arg
    for (i, a) in req.args.iter().enumerate() {
        let Some(m) = &a.map else { continue };
        if !full {
            break;
        }
        let key = (a.data, m.id);
        let p = pairs
            .iter()
            .position(|(k, _, _)| *k == key)
            .unwrap_or_else(|| {
                pairs.push((key, Vec::new(), i));
                pairs.len() - 1
            });
        match a.entries {
            MapAccess::Entry(j) => pairs[p].1.push(j),
            MapAccess::Row => pairs[p].1.extend(0..m.arity),
        }
        arg_staging[i] = Some(p);
    }
    for (_, mut entries, rep) in pairs {
        entries.sort_unstable();
        entries.dedup();
        staging.push(stage(
            &req.args[rep],
            entries,
            start,
            len,
            nblocks,
            &block_range,
        ));
    }
    let shared_bytes: Vec<u32> = (0..if full { nblocks } else { 0 })
        .map(|b| {
            staging
                .iter()
                .map(|s| (s.sizes[b] as usize * s.dim * s.elem_bytes).next_multiple_of(16))
                .sum::<usize>() as u32
        })
        .collect();

    let stats = PlanStats {
        elements: len,
        blocks: nblocks,
        block_colours: ncolours,
        max_element_colours: block_element_colours.iter().max().copied().unwrap_or(0) as usize,
        average_block_size: if nblocks > 0 {
            len as f64 / nblocks as f64
        } else {
            0.0
        },
        max_staging_bytes: shared_bytes.iter().max().copied().unwrap_or(0) as usize,
        total_staging_bytes: shared_bytes.iter().map(|&b| b as usize).sum(),
        build_time: started.elapsed(),
    };
    Ok(Plan {
        start,
        end,
        block_size: bs,
        block_offsets,
        block_lengths,
        block_colours,
        block_map,
        colour_offsets,
        element_colours,
        block_element_colours,
        staging,
        arg_staging,
        shared_bytes,
        stats,
    })
}

fn stage(
    arg: &PlanArg<'_>,
    entries: Vec<usize>,
    first: usize,
    len: usize,
    nblocks: usize,
    block_range: &impl Fn(usize) -> std::ops::Range<usize>,
) -> Staging {
    let map = arg.map.expect("staged args are indirect");
    let (values, arity) = (map.values, map.arity);
    let mut offsets = Vec::with_capacity(nblocks);
    let mut sizes = Vec::with_capacity(nblocks);
    let mut l2g: Vec<i32> = Vec::new();
    let mut g2l = vec![0u32; entries.len() * len];
    // position[target] = block-local index while the block is processed; reset after each block.
    let mut position = vec![u32::MAX; map.target_size];
    for b in 0..nblocks {
        let start = l2g.len();
        for e in block_range(b) {
            for &j in &entries {
                l2g.push(values[e * arity + j]);
            }
        }
        l2g[start..].sort_unstable();
        let mut w = start;
        for r in start..l2g.len() {
            if r == start || l2g[r] != l2g[w - 1] {
                l2g[w] = l2g[r];
                w += 1;
            }
        }
        l2g.truncate(w);
        for (local, &g) in l2g[start..].iter().enumerate() {
            position[g as usize] = local as u32;
        }
        for e in block_range(b) {
            for (s, &j) in entries.iter().enumerate() {
                g2l[s * len + e - first] = position[values[e * arity + j] as usize];
            }
        }
        for &g in &l2g[start..] {
            position[g as usize] = u32::MAX;
        }
        offsets.push(start as u32);
        sizes.push((w - start) as u32);
    }
    let largest = sizes.iter().max().copied().unwrap_or(0);
    let global_to_local = if largest <= 1 << 16 {
        LocalIndices::U16(g2l.into_iter().map(|v| v as u16).collect())
    } else {
        LocalIndices::U32(g2l)
    };
    Staging {
        data: arg.data,
        map: map.id,
        arity,
        dim: arg.dim,
        elem_bytes: arg.elem_bytes,
        entries,
        offsets,
        sizes,
        local_to_global: l2g,
        global_to_local,
    }
}
