//! Sparse tiling of chains of pending loops (Strout's full sparse tiling, as Luporini et al.'s
//! SLOPE applies it to unstructured meshes): a run of loops the lazy graph forces together is cut
//! into tiles, each tile a piece of every loop, and each tile runs through the whole chain while
//! its data is in cache, instead of every loop streaming all of its data from memory in turn.
//!
//! **Inspection.** The first loop's range is cut into blocks of consecutive elements (seed
//! tiles). Each later loop's element joins the highest-numbered tile among those that touched
//! the same data before it (through its own row or its maps), so that whatever an element
//! depends on, or must not overtake, runs in its own tile or a lower one. Only data some loop
//! of the chain writes counts (reading the same coordinates imposes no order), tracked per
//! element of each set. Tiles are numbered so that neighbours differ: a first pass finds
//! which seed tiles meet, a greedy colouring of that graph renumbers them colour by colour,
//! and a second pass assigns the elements. A tile's level is one more than the highest level
//! of any lower-numbered tile it shares written data with: tiles of one level share nothing,
//! so threads run them at once, level after level. Correct by construction whatever the
//! colouring found; the colouring only decides how many levels there are.
//!
//! **Execution.** Each tile runs its share of each loop, in chain order, through the
//! backend's element-list code ([`crate::ElementListLoop`]). Global reductions accumulate per
//! tile and are combined in tile order afterwards, so threads change nothing: a tiled chain
//! gives the same bits on `seq` and `openmp`. The order of increments into one element can
//! differ from loop by loop (its neighbours' tiles run in tile order, not element order), so
//! results agree with untiled runs to rounding, not bit for bit.
//!
//! **Across ranks** tiles stop at the halo: a chain is a run of loop steps with no exchange
//! between them, so a loop that needs a halo exchange of data an earlier loop wrote starts a
//! new chain. Growing the exec halo with the chain's depth (SLOPE's way) would make every rank
//! compute more redundantly and change the halo lists the distributed setup built.
//!
//! **Which loops.** Loops over plain sets (not subsets or extruded sets) on backends with
//! element-range code (`seq`, `openmp`), writing through maps only by increments (with two
//! elements writing one target, tiles would change which value is left), reading or reducing
//! Globals; a Global that one loop reduces may appear in the others only reduced the same way.
//! Not while checkpointing (it records the Globals each loop leaves).
//!
//! **When.** The lazy optimisation `tiling` (on by default) with `OP2_TILING=auto` tiles a
//! chain only where it pays: at least two loops moving more than the largest cache
//! ([`auto_threshold`]; less stays in cache anyway), an inspection whose largest tile is not
//! many times the mean (a mesh in random order ties everything together) and, with threads,
//! with enough tiles per level to keep them busy; then its first runs alternate loop by loop and tiled, timed, and the faster
//! way is kept. The sequential reference never tiles by itself (its order of operations is the
//! reference); `OP2_TILING=always` tiles every chain it can, on any host backend. Inspections
//! are cached per chain shape. This module decides and inspects; `run` runs chains, through
//! the engine.

mod run;

use super::steps::LoopStep;
use crate::model::access::Access;
use crate::model::carrier::CarrierKind;
use crate::model::error::Result;
use crate::model::signature::ArgKind;
use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};

/// Most loops one tiled chain runs.
pub(crate) const MAX_CHAIN: usize = 16;

/// Fewest bytes (OP2's count, summed over the chain's loops) a chain must move to be tiled
/// automatically, at least: below it, what one loop leaves in cache is still there for the
/// next. The threshold is the last-level cache where the system says how large it is
/// ([`auto_threshold`]).
pub(crate) const MIN_CHAIN_BYTES: u64 = 8 << 20;

/// The bytes a chain must move before `OP2_TILING=auto` inspects it: the largest cache this
/// machine reports (Linux's `/sys/devices/system/cpu/cpu0/cache`), and at least
/// [`MIN_CHAIN_BYTES`]. A chain whose data fits that cache finds it there loop after loop;
/// measured on Airfoil here (480 MiB of L3), tiling gained nothing below it and about 5% above.
fn auto_threshold() -> u64 {
    static BYTES: std::sync::OnceLock<u64> = std::sync::OnceLock::new();
    *BYTES.get_or_init(|| {
        let dir = std::path::Path::new("/sys/devices/system/cpu/cpu0/cache");
        let largest = std::fs::read_dir(dir)
            .into_iter()
            .flatten()
            .flatten()
            .filter_map(|e| {
                let size = std::fs::read_to_string(e.path().join("size")).ok()?;
                let size = size.trim();
                let (digits, unit) = size.split_at(size.find(|c: char| !c.is_ascii_digit())?);
                let n: u64 = digits.parse().ok()?;
                Some(match unit {
                    "K" => n << 10,
                    "M" => n << 20,
                    "G" => n << 30,
                    _ => n,
                })
            })
            .max()
            .unwrap_or(0);
        largest.max(MIN_CHAIN_BYTES)
    })
}

/// Bytes of data a tile aims at when `OP2_TILE_SIZE` does not say: half of a core's L2 on
/// common server parts, so that a tile's data survives from one loop to the next.
const TILE_BYTES: u64 = 1 << 20;

/// Bounds of the default tile size, in elements of the first loop.
const TILE_ELEMENTS: (usize, usize) = (256, 1 << 16);

/// Tiles a level should hold on average; with fewer, the seed tiles grow (see [`inspect`]).
const TILES_PER_LEVEL: usize = 8;

/// Inspections (and refusals) kept; past this the cache starts again.
const CACHE_ENTRIES: usize = 64;

/// A tile's work may be at most this many times the mean before tiling is refused.
const MAX_IMBALANCE: usize = 8;

/// What an arg touches, for the dependences between tiles.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
enum Touch {
    /// The element's own row.
    Own,
    /// Entry `index` of map slot `map`.
    Via { map: usize, index: usize },
    /// Every entry of map slot `map`.
    Row { map: usize },
}

/// One loop of a chain as far as tiling is concerned.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct LoopShape {
    set: u64,
    start: usize,
    end: usize,
    /// The map in each slot (by id).
    maps: Vec<u64>,
    /// Args on data some loop of the chain writes.
    touches: Vec<Touch>,
}

/// What identifies an inspection: the loops' shapes and the tile size.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub(crate) struct ChainKey {
    loops: Vec<LoopShape>,
    tile_size: usize,
    threads: usize,
}

/// An inspected chain: which elements of each loop each tile runs, and the levels.
#[derive(Debug)]
pub(crate) struct Tiling {
    tiles: usize,
    /// Per loop: each tile's elements.
    loops: Vec<Pieces>,
    /// Tiles by level; a level's tiles share no written data.
    levels: Vec<Vec<u32>>,
}

impl Tiling {
    /// Tiles and levels, for the stats.
    pub(crate) fn shape(&self) -> (usize, usize) {
        (self.tiles, self.levels.len())
    }
}

/// A loop's elements in tiles: each tile's runs of consecutive elements at least [`MIN_RUN`]
/// long as ranges (a range runs in SIMD batches with its direct data contiguous), and the rest
/// as a list (Airfoil's edges along a tile's border alternate between two tiles: ranges of one
/// or two edges would leave SIMD batches empty). A tile runs its ranges, then its list.
#[derive(Debug)]
struct Pieces {
    /// Tile `t`'s ranges are `ranges[range_offsets[t]..range_offsets[t + 1]]`.
    range_offsets: Vec<u32>,
    ranges: Vec<[u32; 2]>,
    /// Tile `t`'s listed elements are `elements[element_offsets[t]..element_offsets[t + 1]]`.
    element_offsets: Vec<u32>,
    elements: Vec<u32>,
}

/// Runs of consecutive elements shorter than this go into a tile's list: two SIMD batches, so
/// that a range's one-at-a-time remainder is at most a third of it.
const MIN_RUN: u32 = 16;

/// Runs of each kind a chain shape is timed for before the faster is chosen.
const TRIALS: usize = 3;

/// Tiling is kept only where its median time is below this share of running loop by loop.
const MUST_GAIN: f64 = 0.97;

/// What is known of one chain shape.
struct Entry {
    /// The inspection (`None`: refused).
    tiling: Option<Arc<Tiling>>,
    /// Seconds of timed runs loop by loop, and tiled.
    untiled: Vec<f64>,
    tiled: Vec<f64>,
    /// Once timed: whether tiling won.
    choice: Option<bool>,
}

/// Inspections and timings by chain shape.
#[derive(Default)]
struct TilingCache {
    entries: HashMap<ChainKey, Entry>,
}

/// The tiling subsystem as a runtime holds it: its inspections, by chain shape. Its work
/// (`run`) takes the runtime as a [`super::engine::StepRunner`] and nothing else of it.
#[derive(Default)]
pub(crate) struct Tilings {
    cache: Mutex<TilingCache>,
}

/// What became of a chain handed to [`run::TilingWork::try_run_chain`].
pub(crate) struct ChainRun {
    /// How many of its steps ran, from the first (all of them unless one failed).
    pub(crate) ran: usize,
    /// The first failure (the step after the `ran` ones).
    pub(crate) result: Result<()>,
}

fn median(v: &[f64]) -> f64 {
    let mut v = v.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

/// Whether a loop step can be part of a tiled chain: its backend runs element lists, its set
/// is a plain one (subsets and extruded sets run through maps and columns of their own), its
/// Globals are read or reduced, and it writes through maps only by increments. (Two elements
/// writing one target through a map leave the last one's value; tiles would change which is
/// last, where increments only change the rounding.) A kernel acting outside its args
/// ([`crate::Kernel::with_host_effects`]) keeps its elements in order: never tiled.
pub(crate) fn tileable(step: &LoopStep) -> bool {
    let rec = &step.record;
    rec.prepared.element_lists().is_some()
        && !rec.sig.kernel.has_host_effects()
        && !rec.set.is_subset()
        && rec.set.extrusion().is_none()
        && rec.sig.args.iter().all(|a| match a.kind {
            ArgKind::Global => a.access == Access::Read || a.access.is_reduction(),
            ArgKind::Indirect { .. } | ArgKind::Row { .. } => {
                matches!(a.access, Access::Read | Access::Inc)
            }
            ArgKind::Direct => true,
        })
}

/// Whether `next` may join `chain`: every Global both use is read by both, or reduced by both
/// the same way (reductions are combined after the whole chain ran, so no loop may read what
/// another reduces, and MIN after INC, say, would start from the wrong value).
pub(crate) fn joins(chain: &[LoopStep], next: &LoopStep) -> bool {
    let globals = |s: &LoopStep| -> Vec<(u64, Access)> {
        s.record
            .sig
            .args
            .iter()
            .zip(&s.record.carriers)
            .filter(|(a, _)| a.kind == ArgKind::Global)
            .map(|(a, c)| (c.id, a.access))
            .collect()
    };
    let theirs: Vec<(u64, Access)> = chain.iter().flat_map(globals).collect();
    globals(next).iter().all(|&(id, access)| {
        theirs
            .iter()
            .all(|&(other, theirs)| other != id || theirs == access)
    })
}

/// The chain's shape: per loop its set, range, maps and the args on data the chain writes.
fn chain_key(steps: &[LoopStep], tile_size: usize, threads: usize) -> ChainKey {
    let written: HashSet<u64> = steps
        .iter()
        .flat_map(|s| {
            s.record
                .sig
                .args
                .iter()
                .zip(&s.record.carriers)
                .filter(|(a, c)| a.access.writes() && !matches!(c.kind(), CarrierKind::Global))
                .map(|(_, c)| c.id)
        })
        .collect();
    let loops = steps
        .iter()
        .map(|s| {
            let rec = &s.record;
            let touches = rec
                .sig
                .args
                .iter()
                .zip(&rec.carriers)
                .filter(|(_, c)| written.contains(&c.id))
                .filter_map(|(a, _)| match a.kind {
                    ArgKind::Direct => Some(Touch::Own),
                    ArgKind::Indirect { map, index, .. } => Some(Touch::Via { map, index }),
                    ArgKind::Row { map, .. } => Some(Touch::Row { map }),
                    ArgKind::Global => None,
                })
                .collect::<Vec<_>>();
            let mut touches = touches;
            touches.sort_unstable();
            touches.dedup();
            LoopShape {
                set: rec.set.id(),
                start: s.range.start,
                end: s.range.end,
                maps: rec.maps.iter().map(|m| m.id()).collect(),
                touches,
            }
        })
        .collect();
    ChainKey {
        loops,
        tile_size,
        threads,
    }
}

/// How an arg reaches a tracked element: the element itself (`None`), or map values, the
/// map's arity and the entries used.
type Reach<'a> = Option<(&'a [i32], usize, std::ops::Range<usize>)>;

/// A loop's touches resolved to tracked sets and map values.
struct Resolved<'a> {
    start: usize,
    end: usize,
    /// Per touch: the tracked set's slot, and how to reach it.
    touches: Vec<(usize, Reach<'a>)>,
}

impl Resolved<'_> {
    /// Calls `f(slot, target)` for every tracked element element `e` touches.
    #[inline]
    fn each(&self, e: usize, mut f: impl FnMut(usize, usize)) {
        for (slot, via) in &self.touches {
            match via {
                None => f(*slot, e),
                Some((values, arity, entries)) => {
                    for k in entries.clone() {
                        f(*slot, values[e * arity + k] as usize);
                    }
                }
            }
        }
    }
}

/// Hands the heap's free memory back to the system after an inspection. Its tile numbers are
/// several arrays of the chain's element counts (tens of MB on Airfoil), and once glibc has
/// freed blocks that large it raises its threshold for mapping memory, so the next ones come
/// from the heap and stay resident after they are freed: Airfoil on openmp peaked 16 MB (about
/// 13% of its declared data) above the run without tiling, past the 1.2x budget.
fn give_back_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only releases free memory of glibc's heap; it touches nothing in use.
    unsafe {
        libc::malloc_trim(0);
    }
}

/// Inspects a chain (see the module's comment); `None` when there would be one tile, or
/// (`strict`) when the tiling would not pay.
fn inspect(steps: &[LoopStep], key: &ChainKey, threads: usize, strict: bool) -> Option<Tiling> {
    // Tracked sets: every set a touch lands in, each element holding the highest tile so far.
    let mut slots: Vec<(u64, usize)> = Vec::new();
    let mut slot_of = |id: u64, size: usize| match slots.iter().position(|(s, _)| *s == id) {
        Some(i) => i,
        None => {
            slots.push((id, size));
            slots.len() - 1
        }
    };
    let loops: Vec<Resolved<'_>> = steps
        .iter()
        .zip(&key.loops)
        .map(|(s, shape)| {
            let rec = &s.record;
            let touches = shape
                .touches
                .iter()
                .map(|t| match *t {
                    Touch::Own => (slot_of(rec.set.id(), rec.set.total_size()), None),
                    Touch::Via { map, index } => {
                        let m = &rec.maps[map];
                        (
                            slot_of(m.to().id(), m.to().total_size()),
                            Some((m.values(), m.arity(), index..index + 1)),
                        )
                    }
                    Touch::Row { map } => {
                        let m = &rec.maps[map];
                        (
                            slot_of(m.to().id(), m.to().total_size()),
                            Some((m.values(), m.arity(), 0..m.arity())),
                        )
                    }
                })
                .collect();
            Resolved {
                start: s.range.start,
                end: s.range.end,
                touches,
            }
        })
        .collect();
    // Tiles thinner than the chain's reach grow through each other, and levels get deep:
    // larger tiles until a level holds [`TILES_PER_LEVEL`] of them on average, or too few tiles
    // are left to split further. The thread count plays no part, so that every thread count
    // runs the same tiles (and gives the same bits); it only decides whether to refuse.
    let mut tile_size = key.tile_size;
    let mut t = tile_with(&loops, &slots, tile_size, strict)?;
    while t.tiles < TILES_PER_LEVEL * t.levels.len() && t.tiles >= 4 * TILES_PER_LEVEL {
        // One inspection's lists at a time (they are the size of the chain's element ranges):
        // the smaller tiles go before the larger ones are tried, and come back if those fail.
        drop(t);
        match tile_with(&loops, &slots, tile_size * 2, strict) {
            Some(grown) => {
                t = grown;
                tile_size *= 2;
            }
            None => {
                t = tile_with(&loops, &slots, tile_size, strict)?;
                break;
            }
        }
    }
    if strict && threads > 1 && t.tiles < 2 * threads * t.levels.len() {
        return None;
    }
    Some(t)
}

/// The tiling of resolved loops with seed blocks of `tile_size` elements: `None` when there
/// would be one tile, or (`strict`) when its largest tile is many times the mean.
fn tile_with(
    loops: &[Resolved<'_>],
    slots: &[(u64, usize)],
    tile_size: usize,
    strict: bool,
) -> Option<Tiling> {
    let seed_len = loops[0].end - loops[0].start;
    let blocks = seed_len.div_ceil(tile_size);
    if blocks < 2 {
        return None;
    }
    // The inspection's largest arrays hold a tile number per element of the chain's sets and
    // loops: 16 bits each while the tiles allow (Airfoil has a few hundred), which halves the
    // memory an inspection adds to a program's peak.
    if blocks < usize::from(u16::MAX) {
        tile_with_keys::<u16>(loops, slots, tile_size, strict, blocks)
    } else {
        tile_with_keys::<u32>(loops, slots, tile_size, strict, blocks)
    }
}

/// A tile number as an inspection stores it per element.
trait TileKey: Copy + Ord + Default {
    /// Above every tile number (the mark of "no tile yet").
    const NONE: Self;
    fn of(t: usize) -> Self;
    fn get(self) -> usize;
}

impl TileKey for u16 {
    const NONE: Self = u16::MAX;
    fn of(t: usize) -> Self {
        t as u16
    }
    fn get(self) -> usize {
        usize::from(self)
    }
}

impl TileKey for u32 {
    const NONE: Self = u32::MAX;
    fn of(t: usize) -> Self {
        t as u32
    }
    fn get(self) -> usize {
        self as usize
    }
}

/// [`tile_with`] with tile numbers of type `K` (which holds `blocks`).
fn tile_with_keys<K: TileKey>(
    loops: &[Resolved<'_>],
    slots: &[(u64, usize)],
    tile_size: usize,
    strict: bool,
    blocks: usize,
) -> Option<Tiling> {
    // First pass, blocks in their own order: which seed tiles meet (the lowest and highest
    // tile touching each tracked element).
    let identity: Vec<K> = (0..blocks).map(K::of).collect();
    let mut low: Vec<Vec<K>> = slots.iter().map(|(_, n)| vec![K::NONE; *n]).collect();
    let mut high: Vec<Vec<K>> = slots.iter().map(|(_, n)| vec![K::default(); *n]).collect();
    propagate(loops, slots, &identity, tile_size, |l, keys| {
        for (e, &k) in (l.start..l.end).zip(keys) {
            l.each(e, |s, t| {
                low[s][t] = low[s][t].min(k);
                high[s][t] = high[s][t].max(k);
            });
        }
    });
    let mut neighbours: Vec<Vec<u32>> = vec![Vec::new(); blocks];
    for (lo, hi) in low.iter().zip(&high) {
        for (&a, &b) in lo.iter().zip(hi) {
            if a != K::NONE && a != b {
                neighbours[a.get()].push(b.get() as u32);
                neighbours[b.get()].push(a.get() as u32);
            }
        }
    }
    drop((low, high));
    // Greedy colouring, then tiles numbered colour by colour.
    let mut colour = vec![u32::MAX; blocks];
    for b in 0..blocks {
        let nb = &mut neighbours[b];
        nb.sort_unstable();
        nb.dedup();
        let used: HashSet<u32> = nb.iter().map(|&n| colour[n as usize]).collect();
        colour[b] = (0..).find(|c| !used.contains(c)).expect("a free colour");
    }
    drop(neighbours);
    let mut order: Vec<u32> = (0..blocks as u32).collect();
    order.sort_by_key(|&b| (colour[b as usize], b));
    let mut renumbered = vec![K::default(); blocks];
    for (new, &b) in order.iter().enumerate() {
        renumbered[b as usize] = K::of(new);
    }
    // Second pass: each loop's elements in their tiles, kept as ranges or a list as soon as
    // the loop is done (only one loop's tile numbers are held at a time).
    let tiles = blocks;
    let mut per_loop: Vec<Pieces> = Vec::with_capacity(loops.len());
    propagate(loops, slots, &renumbered, tile_size, |l, keys| {
        per_loop.push(pieces(l, keys, tiles));
    });
    // Does it pay: no tile many times the mean.
    let work = |t: usize| -> usize { per_loop.iter().map(|p| p.count(t)).sum() };
    let total: usize = (0..tiles).map(work).sum();
    let biggest = (0..tiles).map(work).max().unwrap_or(0);
    if strict && biggest > MAX_IMBALANCE * total.div_ceil(tiles).max(1) {
        return None;
    }
    // Levels: one above every lower tile sharing written data.
    let mut reached: Vec<Vec<i32>> = slots.iter().map(|(_, n)| vec![-1; *n]).collect();
    let mut level_of = vec![0u32; tiles];
    for (t, level_t) in level_of.iter_mut().enumerate() {
        let mut level = 0i32;
        for (l, p) in loops.iter().zip(&per_loop) {
            p.each(t, |e| {
                l.each(e, |s, x| level = level.max(reached[s][x] + 1));
            });
        }
        for (l, p) in loops.iter().zip(&per_loop) {
            p.each(t, |e| {
                l.each(e, |s, x| reached[s][x] = reached[s][x].max(level));
            });
        }
        *level_t = level as u32;
    }
    let depth = level_of.iter().max().map_or(0, |&l| l as usize + 1);
    let mut levels: Vec<Vec<u32>> = vec![Vec::new(); depth];
    for (t, &l) in level_of.iter().enumerate() {
        levels[l as usize].push(t as u32);
    }
    Some(Tiling {
        tiles,
        loops: per_loop,
        levels,
    })
}

/// A loop's elements by tile (`keys`: each element's tile), runs of [`MIN_RUN`] or more as
/// ranges and the rest as a list, each in element order.
fn pieces<K: TileKey>(l: &Resolved<'_>, keys: &[K], tiles: usize) -> Pieces {
    let mut offsets = vec![0u32; tiles + 1];
    for &k in keys {
        offsets[k.get() + 1] += 1;
    }
    for t in 0..tiles {
        offsets[t + 1] += offsets[t];
    }
    let mut fill = offsets.clone();
    let mut sorted = vec![0u32; keys.len()];
    for (e, &k) in (l.start..l.end).zip(keys) {
        sorted[fill[k.get()] as usize] = e as u32;
        fill[k.get()] += 1;
    }
    drop(fill);
    let mut p = Pieces {
        range_offsets: Vec::with_capacity(tiles + 1),
        ranges: Vec::new(),
        element_offsets: Vec::with_capacity(tiles + 1),
        elements: Vec::new(),
    };
    p.range_offsets.push(0);
    p.element_offsets.push(0);
    for t in 0..tiles {
        let mine = &sorted[offsets[t] as usize..offsets[t + 1] as usize];
        let mut i = 0;
        while i < mine.len() {
            let mut j = i + 1;
            while j < mine.len() && mine[j] == mine[j - 1] + 1 {
                j += 1;
            }
            if (j - i) as u32 >= MIN_RUN {
                p.ranges.push([mine[i], mine[j - 1] + 1]);
            } else {
                p.elements.extend_from_slice(&mine[i..j]);
            }
            i = j;
        }
        p.range_offsets.push(p.ranges.len() as u32);
        p.element_offsets.push(p.elements.len() as u32);
    }
    p.ranges.shrink_to_fit();
    p.elements.shrink_to_fit();
    p
}

impl Pieces {
    /// Tile `t`'s ranges and listed elements.
    fn of(&self, t: usize) -> (&[[u32; 2]], &[u32]) {
        let r = self.range_offsets[t] as usize..self.range_offsets[t + 1] as usize;
        let e = self.element_offsets[t] as usize..self.element_offsets[t + 1] as usize;
        (&self.ranges[r], &self.elements[e])
    }

    /// How many elements tile `t` runs.
    fn count(&self, t: usize) -> usize {
        let (ranges, elements) = self.of(t);
        ranges.iter().map(|r| (r[1] - r[0]) as usize).sum::<usize>() + elements.len()
    }

    /// Calls `f` with every element of tile `t`, in the order the tile runs them.
    fn each(&self, t: usize, mut f: impl FnMut(usize)) {
        let (ranges, elements) = self.of(t);
        ranges
            .iter()
            .flat_map(|r| r[0]..r[1])
            .chain(elements.iter().copied())
            .for_each(|e| f(e as usize));
    }
}

/// Each loop's elements' tiles, loop by loop, handed to `visit` with the loop: the first
/// loop's from its block's number in `seed`, every element of a later loop the highest tile
/// that touched its data in an earlier loop.
fn propagate<K: TileKey>(
    loops: &[Resolved<'_>],
    slots: &[(u64, usize)],
    seed: &[K],
    tile_size: usize,
    mut visit: impl FnMut(&Resolved<'_>, &[K]),
) {
    let mut last: Vec<Vec<K>> = slots.iter().map(|(_, n)| vec![K::default(); *n]).collect();
    for (j, l) in loops.iter().enumerate() {
        let len = l.end - l.start;
        let mut ks = vec![K::default(); len];
        for (i, k) in ks.iter_mut().enumerate() {
            let mut tile = if j == 0 {
                seed[i / tile_size]
            } else {
                K::default()
            };
            l.each(l.start + i, |s, t| tile = tile.max(last[s][t]));
            *k = tile;
        }
        if j > 0 && l.touches.is_empty() {
            // Nothing orders this loop: spread it over the tiles, for balance.
            let tiles = seed.len();
            for (i, k) in ks.iter_mut().enumerate() {
                *k = K::of(i * tiles / len.max(1));
            }
        }
        for (i, &k) in ks.iter().enumerate() {
            l.each(l.start + i, |s, t| last[s][t] = last[s][t].max(k));
        }
        visit(l, &ks);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A chain over a strip: edge `e` joins cells `e / 2` and `e / 2 + 1`, then a loop over the
    /// cells. Tile numbers of 16 and 32 bits give the same tiles, levels and element lists.
    #[test]
    fn narrow_and_wide_tile_numbers_inspect_alike() {
        let cells = 5_001usize;
        let edges = 2 * (cells - 1);
        let ends: Vec<i32> = (0..edges)
            .flat_map(|e| [(e / 2) as i32, (e / 2 + 1) as i32])
            .collect();
        let loops = [
            Resolved {
                start: 0,
                end: edges,
                touches: vec![(0, Some((&ends[..], 2, 0..2)))],
            },
            Resolved {
                start: 0,
                end: cells,
                touches: vec![(0, None)],
            },
        ];
        let slots = [(7u64, cells)];
        for tile_size in [16, 64, 1000] {
            let blocks = edges.div_ceil(tile_size);
            let narrow = tile_with_keys::<u16>(&loops, &slots, tile_size, false, blocks)
                .expect("a strip tiles");
            let wide = tile_with_keys::<u32>(&loops, &slots, tile_size, false, blocks)
                .expect("a strip tiles");
            assert_eq!(
                format!("{narrow:?}"),
                format!("{wide:?}"),
                "tile size {tile_size}"
            );
            assert_eq!(narrow.tiles, blocks);
            // Every element of each loop runs in exactly one tile.
            for (l, p) in loops.iter().zip(&narrow.loops) {
                let mut seen = vec![0u32; l.end];
                for t in 0..narrow.tiles {
                    p.each(t, |e| seen[e] += 1);
                }
                assert!(seen.iter().all(|&n| n == 1), "tile size {tile_size}");
            }
        }
    }
}
