//! Building one plan: blocks, staging maps (local-to-global and global-to-local), element and block
//! colours.

use op2_core::{Access, ArgKind, LoopInvocation, Map, Op2Error, Result};
use std::collections::HashMap;
use std::fmt;
use std::time::{Duration, Instant};

/// Which entries of a map row an arg reaches.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum MapAccess {
    /// One entry.
    Entry(usize),
    /// The whole row.
    Row,
}

/// A map as the planner sees it: borrowed values, so plans can be built without a runtime.
#[derive(Debug, Clone, Copy)]
pub struct PlanMap<'a> {
    /// Identity (a [`Map`]'s id).
    pub id: u64,
    /// Name, for messages.
    pub name: &'a str,
    /// Row-major values, at least `end * arity` of them.
    pub values: &'a [i32],
    /// Entries per row.
    pub arity: usize,
    /// Size of the target set (all sections): every value must be below it.
    pub target_size: usize,
}

impl<'a> From<&'a Map> for PlanMap<'a> {
    fn from(m: &'a Map) -> Self {
        PlanMap {
            id: m.id(),
            name: m.name(),
            values: m.values(),
            arity: m.arity(),
            target_size: m.to().total_size(),
        }
    }
}

/// One loop arg as the planner sees it.
#[derive(Debug, Clone)]
pub struct PlanArg<'a> {
    /// Identity of the data (a carrier id): args on the same data share staging and colouring.
    pub data: u64,
    /// Values per element of the data.
    pub dim: usize,
    /// Bytes per value.
    pub elem_bytes: usize,
    /// The map for an indirect arg; `None` for direct args and globals (which need no plan).
    pub map: Option<PlanMap<'a>>,
    /// Which entries of the map row.
    pub entries: MapAccess,
    /// The access mode.
    pub access: Access,
}

impl<'a> PlanArg<'a> {
    /// Every arg of one run of a loop, in order (direct args and Globals have no map).
    pub fn of_loop(inv: &LoopInvocation<'a>) -> Vec<PlanArg<'a>> {
        let maps: &'a [Map] = inv.maps;
        inv.sig
            .args
            .iter()
            .zip(inv.carriers)
            .map(|(a, c)| {
                let (map, entries) = match a.kind {
                    ArgKind::Indirect { map, index, .. } => {
                        (Some(PlanMap::from(&maps[map])), MapAccess::Entry(index))
                    }
                    ArgKind::Row { map, .. } => (Some(PlanMap::from(&maps[map])), MapAccess::Row),
                    ArgKind::Direct | ArgKind::Global => (None, MapAccess::Row),
                };
                PlanArg {
                    data: c.id(),
                    dim: a.dim,
                    elem_bytes: a.dtype.size(),
                    map,
                    entries,
                    access: a.access,
                }
            })
            .collect()
    }

    /// Whether this arg modifies data through a map, so that elements touching the same item conflict.
    pub fn needs_colouring(&self) -> bool {
        self.map.is_some() && matches!(self.access, Access::Inc | Access::Rw | Access::Write)
    }
}

/// What to plan: elements `0..end` of the iteration set, cut into blocks of `block_size`.
#[derive(Debug, Clone)]
pub struct PlanRequest<'a> {
    /// Identity of the iteration set (a [`op2_core::Set`]'s id).
    pub set: u64,
    /// One past the last element (the set's size, or exec size for loops that write through maps).
    pub end: usize,
    /// Elements per block (the last block may be shorter).
    pub block_size: usize,
    /// The loop's args, in order.
    pub args: &'a [PlanArg<'a>],
}

/// Block-local indices, in the smallest type that holds the largest block's staging size.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LocalIndices {
    /// Every block stages at most 65,536 items.
    U16(Vec<u16>),
    /// Some block stages more.
    U32(Vec<u32>),
}

impl LocalIndices {
    /// The value at `i`.
    pub fn get(&self, i: usize) -> usize {
        match self {
            LocalIndices::U16(v) => v[i] as usize,
            LocalIndices::U32(v) => v[i] as usize,
        }
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            LocalIndices::U16(v) => v.len(),
            LocalIndices::U32(v) => v.len(),
        }
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Bytes per value.
    pub fn width(&self) -> usize {
        match self {
            LocalIndices::U16(_) => 2,
            LocalIndices::U32(_) => 4,
        }
    }
}

/// Staging of one unique (Dat, Map) pair accessed indirectly.
#[derive(Debug, Clone)]
pub struct Staging {
    /// The data's identity.
    pub data: u64,
    /// The map's id.
    pub map: u64,
    /// The map's arity.
    pub arity: usize,
    /// Values per item.
    pub dim: usize,
    /// Bytes per value.
    pub elem_bytes: usize,
    /// The map entries staged (the union over the args of this pair), ascending.
    pub entries: Vec<usize>,
    /// Per block: start of its segment in `local_to_global`.
    pub offsets: Vec<u32>,
    /// Per block: number of items it stages.
    pub sizes: Vec<u32>,
    /// Per block, concatenated: the sorted unique target indices the block touches.
    pub local_to_global: Vec<i32>,
    /// For staged entry slot `s` (position in `entries`) and element `e`: at `s * end + e`, the index of
    /// `map[e][entries[s]]` within its block's segment of `local_to_global`.
    pub global_to_local: LocalIndices,
}

impl Staging {
    /// Block-local index of map entry `entry` of element `e` (`entry` must be staged).
    pub fn local(&self, e: usize, entry: usize, end: usize) -> Option<usize> {
        let slot = self.entries.iter().position(|&x| x == entry)?;
        Some(self.global_to_local.get(slot * end + e))
    }
}

/// Numbers a user can print about a plan.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PlanStats {
    /// Elements planned.
    pub elements: usize,
    /// Blocks.
    pub blocks: usize,
    /// Block colours.
    pub block_colours: usize,
    /// Largest number of element colours in one block.
    pub max_element_colours: usize,
    /// Average elements per block.
    pub average_block_size: f64,
    /// Largest shared-memory (staging) bytes one block needs.
    pub max_staging_bytes: usize,
    /// Staging bytes summed over blocks.
    pub total_staging_bytes: usize,
    /// Time to build the plan.
    pub build_time: Duration,
}

impl fmt::Display for PlanStats {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{} elements in {} blocks (average {:.1}), {} block colours, at most {} element colours per block, \
             staging {} B per block at most ({} B in all), built in {:.3} ms",
            self.elements,
            self.blocks,
            self.average_block_size,
            self.block_colours,
            self.max_element_colours,
            self.max_staging_bytes,
            self.total_staging_bytes,
            self.build_time.as_secs_f64() * 1e3
        )
    }
}

/// An execution plan: plain data the backends consume.
#[derive(Debug, Clone)]
pub struct Plan {
    /// Elements planned (`0..end`).
    pub end: usize,
    /// Requested block size.
    pub block_size: usize,
    /// First element of each block.
    pub block_offsets: Vec<u32>,
    /// Elements in each block.
    pub block_lengths: Vec<u32>,
    /// Colour of each block.
    pub block_colours: Vec<u32>,
    /// Blocks ordered by colour: colour `c` runs `block_map[colour_offsets[c]..colour_offsets[c + 1]]`.
    pub block_map: Vec<u32>,
    /// Start of each colour in `block_map`, plus the end.
    pub colour_offsets: Vec<usize>,
    /// Colour of each element within its block.
    pub element_colours: Vec<u32>,
    /// Number of element colours in each block.
    pub block_element_colours: Vec<u32>,
    /// One staging per unique (Dat, Map) pair accessed indirectly.
    pub staging: Vec<Staging>,
    /// For each arg: its staging, if it is indirect.
    pub arg_staging: Vec<Option<usize>>,
    /// Shared-memory bytes each block needs (each staging rounded up to 16 bytes).
    pub shared_bytes: Vec<u32>,
    /// Diagnostics.
    pub stats: PlanStats,
}

impl Plan {
    /// Number of blocks.
    pub fn blocks(&self) -> usize {
        self.block_offsets.len()
    }

    /// Number of block colours.
    pub fn colours(&self) -> usize {
        self.colour_offsets.len().saturating_sub(1)
    }

    /// The blocks of colour `c`.
    pub fn colour_blocks(&self, c: usize) -> &[u32] {
        &self.block_map[self.colour_offsets[c]..self.colour_offsets[c + 1]]
    }

    /// The elements of block `b`.
    pub fn block_elements(&self, b: usize) -> std::ops::Range<usize> {
        let start = self.block_offsets[b] as usize;
        start..start + self.block_lengths[b] as usize
    }
}

/// The items (per modified Dat, its target elements) that colouring args modify.
struct Conflicts<'a> {
    args: Vec<(usize, &'a [i32], usize, MapAccess)>, // (item offset, map values, arity, entries)
    items: usize,
}

impl<'a> Conflicts<'a> {
    fn new(args: &'a [PlanArg<'a>]) -> Self {
        let mut offsets: HashMap<u64, usize> = HashMap::new();
        let mut items = 0;
        let mut list = Vec::new();
        for a in args.iter().filter(|a| a.needs_colouring()) {
            let map = a.map.expect("colouring args are indirect");
            let offset = *offsets.entry(a.data).or_insert_with(|| {
                let o = items;
                items += map.target_size;
                o
            });
            list.push((offset, map.values, map.arity, a.entries));
        }
        Conflicts { args: list, items }
    }

    fn is_empty(&self) -> bool {
        self.args.is_empty()
    }

    /// Calls `f` with every item element `e` modifies.
    #[inline]
    fn for_items(&self, e: usize, mut f: impl FnMut(usize)) {
        for &(offset, values, arity, entries) in &self.args {
            match entries {
                MapAccess::Entry(j) => f(offset + values[e * arity + j] as usize),
                MapAccess::Row => {
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
    let end = req.end;
    let bs = req.block_size;
    let nblocks = end.div_ceil(bs);
    let block_offsets: Vec<u32> = (0..nblocks).map(|b| (b * bs) as u32).collect();
    let block_lengths: Vec<u32> = (0..nblocks)
        .map(|b| (bs.min(end - b * bs)) as u32)
        .collect();
    let block_range = |b: usize| {
        let s = b * bs;
        s..(s + bs).min(end)
    };

    // Element colours inside each block, then block colours.
    let conflicts = Conflicts::new(req.args);
    let mut element_colours = vec![0u32; end];
    let mut block_element_colours = vec![if end > 0 { 1u32 } else { 0 }; nblocks];
    let block_colours = if conflicts.is_empty() {
        vec![0u32; nblocks]
    } else {
        let mut work = vec![0u32; conflicts.items];
        for (b, count) in block_element_colours.iter_mut().enumerate() {
            let range = block_range(b);
            let start = range.start;
            let colours = colour_units(&conflicts, &mut work, range.len(), |u| {
                start + u..start + u + 1
            });
            *count = colours.iter().max().map_or(0, |&c| c + 1);
            element_colours[range].copy_from_slice(&colours);
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
        staging.push(stage(&req.args[rep], entries, end, nblocks, &block_range));
    }
    let shared_bytes: Vec<u32> = (0..nblocks)
        .map(|b| {
            staging
                .iter()
                .map(|s| (s.sizes[b] as usize * s.dim * s.elem_bytes).next_multiple_of(16))
                .sum::<usize>() as u32
        })
        .collect();

    let stats = PlanStats {
        elements: end,
        blocks: nblocks,
        block_colours: ncolours,
        max_element_colours: block_element_colours.iter().max().copied().unwrap_or(0) as usize,
        average_block_size: if nblocks > 0 {
            end as f64 / nblocks as f64
        } else {
            0.0
        },
        max_staging_bytes: shared_bytes.iter().max().copied().unwrap_or(0) as usize,
        total_staging_bytes: shared_bytes.iter().map(|&b| b as usize).sum(),
        build_time: started.elapsed(),
    };
    Ok(Plan {
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
    end: usize,
    nblocks: usize,
    block_range: &impl Fn(usize) -> std::ops::Range<usize>,
) -> Staging {
    let map = arg.map.expect("staged args are indirect");
    let (values, arity) = (map.values, map.arity);
    let mut offsets = Vec::with_capacity(nblocks);
    let mut sizes = Vec::with_capacity(nblocks);
    let mut l2g: Vec<i32> = Vec::new();
    let mut g2l = vec![0u32; entries.len() * end];
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
                g2l[s * end + e] = position[values[e * arity + j] as usize];
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
