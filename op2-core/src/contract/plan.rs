//! Execution plans as data, and the [`Planner`] trait that makes them: how a backend keeps a loop
//! race-free ([`Strategy`]), and for a range of an iteration set its blocks, their colours and
//! the staging of indirect data (PyOP2's parallel execution plan). `op2-plan` builds and caches
//! plans; backends consume them.

use crate::contract::backend::LoopInvocation;
use crate::model::access::Access;
use crate::model::error::Result;
use crate::model::map::Map;
use crate::model::signature::{ArgKind, LoopSignature};
use std::fmt;
use std::sync::Arc;
use std::time::Duration;

/// How a backend keeps the concurrent updates of a loop free of races.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Strategy {
    /// Nothing to keep apart: elements run in any order (no conflicting writes, or one thread).
    None,
    /// A plan's blocks and colours: blocks of one colour, and elements of one colour in a block,
    /// touch no item in common (and devices stage indirect data per block).
    Colour,
    /// Increments added atomically, in one pass without a plan.
    Atomics,
}

/// Makes plans: the one place a backend decides how loops stay race-free, and for a range of an
/// iteration set (a section: core, owned, exec halo) the plan that runs it.
pub trait Planner: Send + Sync {
    /// How loops of `sig` run on this backend.
    fn strategy(&self, sig: &LoopSignature) -> Strategy;

    /// The plan of `request`'s range (from a cache when it was made before).
    fn plan(&self, request: &PlanRequest<'_>) -> Result<Arc<Plan>>;
}

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
        self.map.is_some() && self.modifies()
    }

    /// Whether this arg changes its data (INC, RW, WRITE).
    fn modifies(&self) -> bool {
        matches!(self.access, Access::Inc | Access::Rw | Access::Write)
    }

    /// For each of `args`, whether it constrains a plan's colours: it modifies data through a
    /// map, or it modifies data directly that another arg modifies through a map (element `e`
    /// changes row `e`, which other elements reach through the map: `d INC` beside
    /// `d via m INC` must not run `e` beside an element whose map entry is `e`).
    pub fn colouring(args: &[PlanArg<'_>]) -> Vec<bool> {
        args.iter()
            .map(|a| {
                a.needs_colouring()
                    || (a.map.is_none()
                        && a.modifies()
                        && args.iter().any(|b| b.data == a.data && b.needs_colouring()))
            })
            .collect()
    }

    /// The args of one run of a loop that constrain its colours (see [`PlanArg::colouring`]): all
    /// a backend that stages nothing (threads, CPU devices) plans with.
    pub fn colouring_args(inv: &LoopInvocation<'a>) -> Vec<PlanArg<'a>> {
        let args = Self::of_loop(inv);
        let keep = Self::colouring(&args);
        args.into_iter()
            .zip(keep)
            .filter_map(|(a, k)| k.then_some(a))
            .collect()
    }
}

/// What to plan: elements `start..end` of the iteration set (a section), cut into blocks of
/// `block_size`.
#[derive(Debug, Clone)]
pub struct PlanRequest<'a> {
    /// Identity of the iteration set (a [`crate::Set`]'s id).
    pub set: u64,
    /// The first element.
    pub start: usize,
    /// One past the last element.
    pub end: usize,
    /// Elements per block (the last block may be shorter).
    pub block_size: usize,
    /// The loop's args, in order.
    pub args: &'a [PlanArg<'a>],
    /// What the backend will read of the plan.
    pub detail: PlanDetail,
}

/// How much of a plan a backend needs built (and kept: plans stay cached for the run).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum PlanDetail {
    /// Everything: blocks, block colours, element colours inside blocks and the staging maps
    /// (device backends stage indirect data per block and colour elements inside it).
    #[default]
    Full,
    /// Blocks and their colours only: `element_colours`, `block_element_colours`,
    /// `shared_bytes` and `staging` are left empty and every `arg_staging` is `None` (a host backend that runs
    /// each block on one thread, reading data where it lies, needs nothing else).
    BlockColours,
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
    /// For staged entry slot `s` (position in `entries`) and element `e` of a plan of `len`
    /// elements from `start`: at `s * len + (e - start)`, the index of `map[e][entries[s]]`
    /// within its block's segment of `local_to_global`.
    pub global_to_local: LocalIndices,
}

impl Staging {
    /// Block-local index of map entry `entry` of element `e` of `plan` (`entry` must be staged).
    pub fn local(&self, plan: &Plan, e: usize, entry: usize) -> Option<usize> {
        let slot = self.entries.iter().position(|&x| x == entry)?;
        Some(self.global_to_local.get(slot * plan.len() + e - plan.start))
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

/// An execution plan of elements `start..end`: plain data the backends consume. Block offsets
/// are element indices; per-element arrays are indexed from `start`.
#[derive(Debug, Clone)]
pub struct Plan {
    /// First element planned.
    pub start: usize,
    /// One past the last element planned.
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
    /// Colour of each element within its block (element `e` at `e - start`).
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

/// Bytes a `Vec` holds (its capacity).
fn vec_bytes<T>(v: &Vec<T>) -> usize {
    v.capacity() * std::mem::size_of::<T>()
}

impl Staging {
    /// Bytes this staging's arrays hold.
    pub fn held_bytes(&self) -> usize {
        vec_bytes(&self.entries)
            + vec_bytes(&self.offsets)
            + vec_bytes(&self.sizes)
            + vec_bytes(&self.local_to_global)
            + match &self.global_to_local {
                LocalIndices::U16(v) => vec_bytes(v),
                LocalIndices::U32(v) => vec_bytes(v),
            }
    }
}

impl Plan {
    /// Bytes this plan's arrays hold (what keeping it cached costs).
    pub fn held_bytes(&self) -> usize {
        std::mem::size_of::<Plan>()
            + vec_bytes(&self.block_offsets)
            + vec_bytes(&self.block_lengths)
            + vec_bytes(&self.block_colours)
            + vec_bytes(&self.block_map)
            + vec_bytes(&self.colour_offsets)
            + vec_bytes(&self.element_colours)
            + vec_bytes(&self.block_element_colours)
            + vec_bytes(&self.arg_staging)
            + vec_bytes(&self.shared_bytes)
            + vec_bytes(&self.staging)
            + self.staging.iter().map(Staging::held_bytes).sum::<usize>()
    }

    /// This plan without its per-element arrays (element colours, and each staging area's
    /// local-to-global items and block-local indices, which keep their width): what the host
    /// needs of a plan whose arrays a device holds (counts, blocks, colours, the staging
    /// layout). [`Plan::holds_element_arrays`] tells the two apart.
    pub fn without_element_arrays(&self) -> Plan {
        let staging = self
            .staging
            .iter()
            .map(|st| Staging {
                entries: st.entries.clone(),
                offsets: st.offsets.clone(),
                sizes: st.sizes.clone(),
                local_to_global: Vec::new(),
                global_to_local: match st.global_to_local {
                    LocalIndices::U16(_) => LocalIndices::U16(Vec::new()),
                    LocalIndices::U32(_) => LocalIndices::U32(Vec::new()),
                },
                ..*st
            })
            .collect();
        Plan {
            block_offsets: self.block_offsets.clone(),
            block_lengths: self.block_lengths.clone(),
            block_colours: self.block_colours.clone(),
            block_map: self.block_map.clone(),
            colour_offsets: self.colour_offsets.clone(),
            element_colours: Vec::new(),
            block_element_colours: self.block_element_colours.clone(),
            staging,
            arg_staging: self.arg_staging.clone(),
            shared_bytes: self.shared_bytes.clone(),
            stats: self.stats,
            ..*self
        }
    }

    /// Whether the per-element arrays are here: a full plan, not one
    /// [`Plan::without_element_arrays`] made (nor a [`PlanDetail::BlockColours`] plan).
    pub fn holds_element_arrays(&self) -> bool {
        self.element_colours.len() == self.len()
    }

    /// Elements planned.
    pub fn len(&self) -> usize {
        self.end - self.start
    }

    /// Whether the plan has no elements.
    pub fn is_empty(&self) -> bool {
        self.end == self.start
    }

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
