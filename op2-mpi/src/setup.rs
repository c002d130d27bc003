//! The distributed setup: from every rank's home slice of the mesh (rows [`block_range`] of each
//! set, as a parallel file read gives them) to its sections, halo owners and local numbering,
//! without any rank holding data in proportion to the whole mesh. Every array here is sized by
//! this rank's slice, its part, its halo or the number of ranks; an element's owner is found by
//! asking its home rank (the holder of its block), never from a gathered table.
//!
//! The steps, each a few all-to-all exchanges:
//! 1. the primary set is partitioned on its home slices ([`crate::partition`]'s distributed
//!    partitioners);
//! 2. every other set follows by the majority rule of [`crate::partition::propagate`], each rank
//!    asking the home ranks for the parts of its rows' targets;
//! 3. every home rank tells each element's new owner; owners fetch the map rows they own;
//! 4. an owned element that reaches elements of other ranks is sent to them as exec halo; what
//!    owned and exec-halo elements reach and the rank does not hold becomes non-exec halo, its
//!    owner asked of its home rank;
//! 5. local numbers: core | owned | exec halo | non-exec halo, as [`crate::layout`] defines them
//!    (the same sections the whole-mesh construction gives, element for element).

use crate::error::{MpiError, Result};
use crate::layout::{RankLayout, SetLayout};
use crate::mesh::{Input, MapDecl, MapValues, MeshBuilder, block_range};
use crate::partition::majority;
use op2_core::comm::{Communicator, ReduceOp};
use op2_core::{DType, SetSizes};
use std::collections::HashMap;

/// The rank whose home block holds global element `g` of a set of `size`.
pub(crate) fn holder(size: usize, ranks: usize, g: usize) -> usize {
    // block_range(size, ranks, r).start = size * r / ranks: invert, then step to the right block.
    let mut r = ((g as u128 * ranks as u128) / size.max(1) as u128) as usize;
    r = r.min(ranks - 1);
    while r > 0 && block_range(size, ranks, r).start > g {
        r -= 1;
    }
    while r + 1 < ranks && block_range(size, ranks, r).end <= g {
        r += 1;
    }
    r
}

/// Sends `sends[p]` (64-bit words) to rank `p`; returns what each rank sent here.
pub(crate) fn exchange_words(
    comm: &dyn Communicator,
    sends: Vec<Vec<u64>>,
) -> Result<Vec<Vec<u64>>> {
    // Each send is converted and freed in turn: the words and their bytes never all coexist.
    let bytes: Vec<Vec<u8>> = sends
        .into_iter()
        .map(|w| bytemuck::cast_slice(&w).to_vec())
        .collect();
    Ok(comm
        .all_to_all_v(bytes)?
        .into_iter()
        .map(|b| bytemuck::pod_collect_to_vec(&b))
        .collect())
}

/// Sorts (element, part, count) triples and merges those of one (element, part), summing
/// their counts.
fn merge_counts(seen: &mut Vec<(u32, u32, u32)>) {
    seen.sort_unstable();
    seen.dedup_by(|later, kept| {
        let same = later.0 == kept.0 && later.1 == kept.1;
        if same {
            kept.2 = kept.2.saturating_add(later.2);
        }
        same
    });
}

/// Map entries per round of the backward step of [`MeshBuilder::propagate_home`] (a few MiB of
/// pairs in flight per rank however large the maps).
const PAIRS_BATCH: usize = 1 << 18;

/// Requests per round of [`fetch`]: bounds the memory a request takes in flight (its numbers
/// and rows pass through a few buffers on the way) to a few MiB however many rows are asked.
const FETCH_BATCH: usize = 1 << 16;

/// The rows of elements `ids` (global numbers of a set of `size`, in any order) from their home
/// ranks, in the order of `ids`: `block` is this rank's home rows, `row` bytes each. Collective;
/// asked in rounds of at most [`FETCH_BATCH`] numbers per rank.
pub(crate) fn fetch<T: Copy + Into<u64>>(
    comm: &dyn Communicator,
    size: usize,
    ids: &[T],
    block: &[u8],
    row: usize,
) -> Result<Vec<u8>> {
    let mut rounds = [ids.len().div_ceil(FETCH_BATCH) as u64];
    all_reduce_words(comm, &mut rounds, ReduceOp::Max)?;
    let rounds = rounds[0] as usize;
    let mut out = Vec::with_capacity(ids.len() * row);
    for r in 0..rounds {
        let lo = (r * FETCH_BATCH).min(ids.len());
        let hi = ((r + 1) * FETCH_BATCH).min(ids.len());
        out.extend(fetch_round(comm, size, &ids[lo..hi], block, row)?);
    }
    Ok(out)
}

/// One round of [`fetch`].
fn fetch_round<T: Copy + Into<u64>>(
    comm: &dyn Communicator,
    size: usize,
    ids: &[T],
    block: &[u8],
    row: usize,
) -> Result<Vec<u8>> {
    let (ranks, rank) = (comm.size(), comm.rank());
    let mut asks: Vec<Vec<u64>> = vec![Vec::new(); ranks];
    for &g in ids {
        let g: u64 = g.into();
        asks[holder(size, ranks, g as usize)].push(g);
    }
    let asked = exchange_words(comm, asks)?;
    let start = block_range(size, ranks, rank).start;
    let replies = asked
        .into_iter()
        .enumerate()
        .map(|(p, ids)| {
            let mut r = Vec::with_capacity(ids.len() * row);
            for g in ids {
                let at = (g as usize).wrapping_sub(start);
                r.extend_from_slice(block.get(at * row..(at + 1) * row).ok_or_else(|| {
                    MpiError::Op2(op2_core::Op2Error::Communication {
                        reason: format!(
                            "rank {p} asked for element {g}, outside this rank's home block"
                        ),
                    })
                })?);
            }
            Ok(r)
        })
        .collect::<Result<Vec<Vec<u8>>>>()?;
    let got = comm.all_to_all_v(replies)?;
    let mut next = vec![0usize; ranks];
    let mut out = Vec::with_capacity(ids.len() * row);
    for &g in ids {
        let h = holder(size, ranks, g.into() as usize);
        let at = next[h];
        next[h] += 1;
        out.extend_from_slice(got[h].get(at * row..(at + 1) * row).ok_or_else(|| {
            MpiError::Op2(op2_core::Op2Error::Communication {
                reason: format!("rank {h} sent fewer rows than asked"),
            })
        })?);
    }
    Ok(out)
}

/// The parts of `ids` (global numbers of a set of `size`), asked of their home ranks, whose
/// home parts are `home`.
pub(crate) fn fetch_parts<T: Copy + Into<u64>>(
    comm: &dyn Communicator,
    size: usize,
    ids: &[T],
    home: &[u32],
) -> Result<Vec<u32>> {
    let bytes = fetch(comm, size, ids, bytemuck::cast_slice(home), 4)?;
    Ok(bytemuck::pod_collect_to_vec(&bytes))
}

/// The part of every entry of `values` (a map slice into a set of `size` whose home parts are
/// `home`), asked of the home ranks once per distinct target, numbers held as `T`.
fn parts_of_entries<T: Copy + Ord + Into<u64>>(
    comm: &dyn Communicator,
    size: usize,
    values: &MapValues,
    home: &[u32],
    narrow: impl Fn(i64) -> T,
) -> Result<Vec<u32>> {
    let ids = unique((0..values.len()).map(|i| narrow(values.get(i))).collect());
    let parts = fetch_parts(comm, size, &ids, home)?;
    Ok((0..values.len())
        .map(|i| {
            parts[ids
                .binary_search(&narrow(values.get(i)))
                .expect("asked for")]
        })
        .collect())
}

/// Sorted, unique.
fn unique<T: Ord>(mut v: Vec<T>) -> Vec<T> {
    v.sort_unstable();
    v.dedup();
    v
}

/// Local numbers by global number in 4 bytes per element (a hash map takes five times that):
/// the local numbers sorted by the global number they hold, searched by bisection.
pub(crate) struct Lookup {
    order: Vec<u32>,
}

impl Lookup {
    /// The lookup of a set whose local element `i` has global number `global[i]`.
    pub(crate) fn new(global: &[u64]) -> Lookup {
        let mut order: Vec<u32> = (0..global.len() as u32).collect();
        order.sort_unstable_by_key(|&i| global[i as usize]);
        Lookup { order }
    }

    /// The local number of global element `g` (`global` as given to [`Lookup::new`]).
    pub(crate) fn find(&self, global: &[u64], g: u64) -> Option<u32> {
        self.order
            .binary_search_by_key(&g, |&i| global[i as usize])
            .ok()
            .map(|k| self.order[k])
    }
}

/// Map rows as fetched: `arity` values of `width` bytes per row.
struct Rows {
    width: usize,
    arity: usize,
    bytes: Vec<u8>,
}

impl Rows {
    fn empty() -> Rows {
        Rows {
            width: 4,
            arity: 1,
            bytes: Vec::new(),
        }
    }

    fn len(&self) -> usize {
        self.bytes.len() / (self.width * self.arity).max(1)
    }

    /// Value `k` of row `r` (checked non-negative when the mesh was handed in).
    fn get(&self, r: usize, k: usize) -> u64 {
        let at = (r * self.arity + k) * self.width;
        let b = &self.bytes[at..at + self.width];
        if self.width == 4 {
            i32::from_ne_bytes(b.try_into().expect("4 bytes")) as u64
        } else {
            i64::from_ne_bytes(b.try_into().expect("8 bytes")) as u64
        }
    }

    fn row(&self, r: usize) -> impl Iterator<Item = u64> + '_ {
        (0..self.arity).map(move |k| self.get(r, k))
    }
}

impl MeshBuilder {
    /// Turns the mesh as handed in into home slices ([`Input::Slices`]): with
    /// [`Input::Everywhere`] each rank keeps its block and drops the rest; with [`Input::Root`]
    /// rank 0 sends each rank its block.
    pub(crate) fn into_slices(mut self, comm: &dyn Communicator) -> Result<MeshBuilder> {
        let (ranks, rank) = (comm.size(), comm.rank());
        let input = self.input;
        for m in &mut self.maps {
            let size = self.sets[m.from].size;
            let row = m.arity * m.values.width();
            let bytes = m.values.as_bytes();
            let slice = match input {
                Input::Slices => continue,
                Input::Everywhere => {
                    let b = block_range(size, ranks, rank);
                    bytes[b.start * row..b.end * row].to_vec()
                }
                Input::Root => scatter_blocks(comm, bytes, size, row)?,
            };
            m.values = m.values.same_width_from(&slice);
        }
        for d in &mut self.dats {
            let size = self.sets[d.set].size;
            let row = d.dim * d.dtype.size();
            d.bytes = match input {
                Input::Slices => continue,
                Input::Everywhere => {
                    let b = block_range(size, ranks, rank);
                    d.bytes[b.start * row..b.end * row].to_vec()
                }
                Input::Root => scatter_blocks(comm, &d.bytes, size, row)?,
            };
        }
        self.input = Input::Slices;
        Ok(self)
    }

    /// Checks every rank's slice of every map against its target set (collective): every rank
    /// reports the same first bad value (lowest map, then lowest entry), whichever rank holds it.
    pub(crate) fn check_slice_values(&self, comm: &dyn Communicator) -> Result<()> {
        let (ranks, rank) = (comm.size(), comm.rank());
        let mut first_bad = [u64::MAX; 3];
        for (k, m) in self.maps.iter().enumerate() {
            let size = self.sets[m.to].size as u64;
            let start = block_range(self.sets[m.from].size, ranks, rank).start * m.arity;
            if let Some(i) = (0..m.values.len()).find(|&i| {
                let v = m.values.get(i);
                v < 0 || v as u64 >= size
            }) {
                first_bad = [k as u64, (start + i) as u64, m.values.get(i) as u64];
                break;
            }
        }
        let all = comm.all_to_all_v(vec![bytemuck::cast_slice(&first_bad).to_vec(); ranks])?;
        let worst = all
            .iter()
            .map(|b| bytemuck::pod_collect_to_vec::<u8, u64>(b))
            .filter(|w| w.len() == 3)
            .min_by_key(|w| (w[0], w[1]));
        match worst {
            Some(w) if w[0] != u64::MAX => {
                let m = &self.maps[w[0] as usize];
                let entry = w[1] as usize;
                Err(MpiError::MapValueOutOfRange {
                    map: m.name.clone(),
                    entry,
                    row: entry / m.arity,
                    value: w[2] as i64,
                    to: self.sets[m.to].name.clone(),
                    size: self.sets[m.to].size,
                })
            }
            _ => Ok(()),
        }
    }

    /// Every set's parts on its home block, from the primary set's (`first`, with home parts
    /// `first_parts`) by the majority rule of [`crate::partition::propagate`]: a set with maps
    /// into partitioned sets takes the part most of its targets have; a set only reached from
    /// partitioned sets the part most of the elements reaching it have; the rest stay home.
    pub(crate) fn propagate_home(
        &self,
        comm: &dyn Communicator,
        first: usize,
        first_parts: Vec<u32>,
    ) -> Result<Vec<Vec<u32>>> {
        let (ranks, rank) = (comm.size(), comm.rank());
        let nsets = self.sets.len();
        let home = |s: usize| block_range(self.sets[s].size, ranks, rank);
        let mut result: Vec<Option<Vec<u32>>> = vec![None; nsets];
        result[first] = Some(first_parts);
        // The first set without parts that a map leads to from (`forward`: from it to) a set
        // with parts.
        let reached = |result: &[Option<Vec<u32>>], forward: bool| {
            (0..nsets).find(|&s| {
                result[s].is_none()
                    && self.maps.iter().any(|m| {
                        let (here, there) = if forward {
                            (m.from, m.to)
                        } else {
                            (m.to, m.from)
                        };
                        here == s && result[there].is_some()
                    })
            })
        };
        loop {
            if let Some(s) = reached(&result, true) {
                let n = home(s).len();
                // Per map in turn: the distinct targets of this rank's rows, their parts
                // asked of the home ranks, then the part of every entry (the numbers dropped).
                let maps: Vec<_> = self
                    .maps
                    .iter()
                    .filter(|m| m.from == s && result[m.to].is_some())
                    .collect();
                let mut entry_parts: Vec<Vec<u32>> = Vec::with_capacity(maps.len());
                for m in &maps {
                    let to = result[m.to].as_ref().expect("filtered");
                    let size = self.sets[m.to].size;
                    let values = &m.values;
                    // Numbers of sets that fit 32 bits are asked as such: half the memory.
                    let parts = if size <= u32::MAX as usize {
                        parts_of_entries(comm, size, values, to, |v| v as u32)?
                    } else {
                        parts_of_entries(comm, size, values, to, |v| v as u64)?
                    };
                    entry_parts.push(parts);
                }
                let mut counts: Vec<(u32, u32)> = Vec::new();
                let mut out = Vec::with_capacity(n);
                for e in 0..n {
                    for (m, parts) in maps.iter().zip(&entry_parts) {
                        counts.extend(
                            parts[e * m.arity..(e + 1) * m.arity]
                                .iter()
                                .map(|&p| (p, 1)),
                        );
                    }
                    out.push(majority(&mut counts).unwrap_or(rank as u32));
                }
                result[s] = Some(out);
                continue;
            }
            if let Some(s) = reached(&result, false) {
                let size = self.sets[s].size;
                // (target, part) pairs of this rank's rows, packed as target * ranks + part in
                // one word, counted here first: a target is usually reached by several rows of
                // the same slice.
                if (size as u128) * (ranks as u128) > u64::MAX as u128 {
                    return Err(MpiError::BadDeclaration(format!(
                        "set `{}` of {size} elements on {ranks} ranks: past 64-bit numbering",
                        self.sets[s].name
                    )));
                }
                let reaching: Vec<(&MapDecl, &[u32])> = self
                    .maps
                    .iter()
                    .filter(|m| m.to == s && result[m.from].is_some())
                    .map(|m| (m, result[m.from].as_deref().expect("filtered")))
                    .collect();
                let entries: usize = reaching.iter().map(|(m, from)| from.len() * m.arity).sum();
                // In rounds of at most PAIRS_BATCH entries, so that neither the pairs nor what
                // travels is ever the whole of them; a (target, part) seen in several rounds
                // arrives with its count each time, and the counts add up at home.
                let mut rounds = [entries.div_ceil(PAIRS_BATCH) as u64];
                all_reduce_words(comm, &mut rounds, ReduceOp::Max)?;
                let start = home(s).start as u64;
                let n = home(s).len();
                // (element, part, count), grouped by element.
                let mut seen: Vec<(u32, u32, u32)> = Vec::new();
                let mut merged = 0;
                let rounds = rounds[0] as usize;
                for r in 0..rounds {
                    let lo = (r * PAIRS_BATCH).min(entries);
                    let hi = ((r + 1) * PAIRS_BATCH).min(entries);
                    let mut pairs: Vec<u64> = Vec::with_capacity(hi - lo);
                    let mut at = 0;
                    for (m, from) in &reaching {
                        let len = from.len() * m.arity;
                        for i in lo.max(at)..hi.min(at + len) {
                            let k = i - at;
                            let t = m.values.get(k) as u64;
                            pairs.push(t * ranks as u64 + from[k / m.arity] as u64);
                        }
                        at += len;
                    }
                    pairs.sort_unstable();
                    let mut sends: Vec<Vec<u64>> = vec![Vec::new(); ranks];
                    let mut i = 0;
                    while i < pairs.len() {
                        let key = pairs[i];
                        let mut c = 0u64;
                        while i < pairs.len() && pairs[i] == key {
                            c += 1;
                            i += 1;
                        }
                        let (t, p) = (key / ranks as u64, key % ranks as u64);
                        let h = holder(size, ranks, t as usize);
                        sends[h].push(t);
                        sends[h].push(p << 32 | c.min(u32::MAX as u64));
                    }
                    drop(pairs);
                    let received = exchange_words(comm, sends)?;
                    seen.reserve_exact(received.iter().map(|w| w.len() / 2).sum());
                    for words in received {
                        for w in words.chunks_exact(2) {
                            let at = w[0]
                                .checked_sub(start)
                                .filter(|&a| a < n as u64)
                                .ok_or_else(|| {
                                    MpiError::Op2(op2_core::Op2Error::Communication {
                                        reason: format!(
                                            "element {} sent to the wrong home rank",
                                            w[0]
                                        ),
                                    })
                                })?;
                            seen.push((at as u32, (w[1] >> 32) as u32, w[1] as u32));
                        }
                    }
                    // One entry per (element, part), its counts summed, whenever the list has
                    // doubled since it was last merged: what stays between rounds is at most
                    // twice what a single round would have received, and the sorting stays
                    // n log n over all rounds.
                    if seen.len() >= 2 * merged.max(PAIRS_BATCH) || r + 1 == rounds {
                        merge_counts(&mut seen);
                        merged = seen.len();
                    }
                }
                let mut out = vec![rank as u32; n];
                let mut counts: Vec<(u32, u32)> = Vec::new();
                let mut i = 0;
                while i < seen.len() {
                    let e = seen[i].0;
                    while i < seen.len() && seen[i].0 == e {
                        counts.push((seen[i].1, seen[i].2));
                        i += 1;
                    }
                    if let Some(p) = majority(&mut counts) {
                        out[e as usize] = p;
                    }
                }
                result[s] = Some(out);
                continue;
            }
            break;
        }
        Ok(result
            .into_iter()
            .enumerate()
            .map(|(s, r)| r.unwrap_or_else(|| vec![rank as u32; home(s).len()]))
            .collect())
    }

    /// This rank's sections of every set from every set's home parts (`parts`), with maps in
    /// local numbers; `order` (the primary set, when renumbering) orders core and owned
    /// elements for locality within this rank.
    pub(crate) fn build_layout(
        &mut self,
        comm: &dyn Communicator,
        parts: Vec<Vec<u32>>,
        order: Option<usize>,
    ) -> Result<RankLayout> {
        let (ranks, rank) = (comm.size(), comm.rank());
        let nsets = self.sets.len();
        let size = |s: usize| self.sets[s].size;

        // Owned elements, sorted: each home rank sends every element's number to its owner.
        let mut owned: Vec<Vec<u64>> = Vec::with_capacity(nsets);
        for (s, home_parts) in parts.iter().enumerate() {
            let start = block_range(size(s), ranks, rank).start as u64;
            let mut sends: Vec<Vec<u64>> = vec![Vec::new(); ranks];
            for (i, &p) in home_parts.iter().enumerate() {
                sends[p as usize].push(start + i as u64);
            }
            // Home blocks ascend with the rank, each in order: the concatenation is sorted.
            owned.push(exchange_words(comm, sends)?.concat());
        }
        let is_owned = |s: usize, g: u64| owned[s].binary_search(&g).is_ok();

        // Set by set (every rank in the same order): the map rows of its owned elements from
        // their home ranks, the owners of the targets on other ranks, the exec halo it sends,
        // and the rows of the exec halo it receives; then the home slices of its maps go, so
        // that one set's rows and the next set's slices are never all held at once.
        let fetch_rows = |maps: &[MapDecl], m: usize, ids: &[u64]| -> Result<Rows> {
            let d = &maps[m];
            let row = d.arity * d.values.width();
            Ok(Rows {
                width: d.values.width(),
                arity: d.arity,
                bytes: fetch(comm, size(d.from), ids, d.values.as_bytes(), row)?,
            })
        };
        let nmaps = self.maps.len();
        let mut owned_rows: Vec<Rows> = (0..nmaps).map(|_| Rows::empty()).collect();
        let mut exec_rows: Vec<Rows> = (0..nmaps).map(|_| Rows::empty()).collect();
        let mut known: Vec<HashMap<u64, u32>> = vec![HashMap::new(); nsets];
        let mut core: Vec<Vec<bool>> = Vec::with_capacity(nsets);
        let mut exec: Vec<Vec<(u32, u64)>> = Vec::with_capacity(nsets);
        for (s, mine) in owned.iter().enumerate() {
            let from_s: Vec<usize> = (0..nmaps).filter(|&m| self.maps[m].from == s).collect();
            for &m in &from_s {
                owned_rows[m] = fetch_rows(&self.maps, m, mine)?;
                let t = self.maps[m].to;
                let rows = &owned_rows[m];
                let foreign = unique(
                    (0..rows.len())
                        .flat_map(|r| rows.row(r))
                        .filter(|&g| !is_owned(t, g) && !known[t].contains_key(&g))
                        .collect(),
                );
                let p = fetch_parts(comm, size(t), &foreign, &parts[t])?;
                known[t].extend(foreign.into_iter().zip(p));
            }
            // Core flags; owned elements that reach other ranks go to them as exec halo.
            let mut flags = vec![true; mine.len()];
            let mut sends: Vec<Vec<u64>> = vec![Vec::new(); ranks];
            let mut others: Vec<u32> = Vec::new();
            for (i, flag) in flags.iter_mut().enumerate() {
                others.clear();
                for &m in &from_s {
                    let to = self.maps[m].to;
                    for g in owned_rows[m].row(i) {
                        if !is_owned(to, g) {
                            others.push(known[to][&g]);
                        }
                    }
                }
                if !others.is_empty() {
                    *flag = false;
                    others.sort_unstable();
                    others.dedup();
                    for &p in &others {
                        sends[p as usize].push(mine[i]);
                    }
                }
            }
            core.push(flags);
            // By sender (the owner), each in ascending order: sorted by (owner, number).
            let received: Vec<(u32, u64)> = exchange_words(comm, sends)?
                .into_iter()
                .enumerate()
                .flat_map(|(p, ids)| ids.into_iter().map(move |g| (p as u32, g)))
                .collect();
            let ids: Vec<u64> = received.iter().map(|&(_, g)| g).collect();
            for &m in &from_s {
                exec_rows[m] = fetch_rows(&self.maps, m, &ids)?;
                // Every row of this map that runs here is here.
                let d = &mut self.maps[m];
                d.values = d.values.same_width_from(&[]);
            }
            exec.push(received);
        }
        let exec_sorted: Vec<Vec<u64>> = exec
            .iter()
            .map(|e| unique(e.iter().map(|&(_, g)| g).collect()))
            .collect();
        let ask_owners =
            |known: &mut Vec<HashMap<u64, u32>>, t: usize, ids: Vec<u64>| -> Result<()> {
                let ids = unique(ids);
                let p = fetch_parts(comm, size(t), &ids, &parts[t])?;
                known[t].extend(ids.into_iter().zip(p));
                Ok(())
            };

        // Non-exec halo: reached by owned or exec rows, not held yet.
        let mut nonexec: Vec<Vec<(u32, u64)>> = Vec::with_capacity(nsets);
        for t in 0..nsets {
            let mut reached = Vec::new();
            for (m, (o, e)) in self.maps.iter().zip(owned_rows.iter().zip(&exec_rows)) {
                if m.to == t {
                    for rows in [o, e] {
                        reached.extend((0..rows.len()).flat_map(|r| rows.row(r)).filter(|&g| {
                            !is_owned(t, g) && exec_sorted[t].binary_search(&g).is_err()
                        }));
                    }
                }
            }
            let reached = unique(reached);
            let missing: Vec<u64> = reached
                .iter()
                .copied()
                .filter(|g| !known[t].contains_key(g))
                .collect();
            ask_owners(&mut known, t, missing)?;
            let mut halo: Vec<(u32, u64)> =
                reached.into_iter().map(|g| (known[t][&g], g)).collect();
            halo.sort_unstable();
            nonexec.push(halo);
        }
        drop(known);
        drop(parts);

        let sections = Sections {
            owned,
            core,
            exec,
            nonexec,
            owned_rows,
            exec_rows,
        };
        let mut layout = sections.assemble(self, rank)?;
        if let Some(first) = order {
            let keys = local_locality_order(self, &layout, first);
            reorder(self, &mut layout, &keys);
        }
        Ok(layout)
    }
}

/// Everything the sections are made of, before local numbering.
struct Sections {
    owned: Vec<Vec<u64>>,
    core: Vec<Vec<bool>>,
    exec: Vec<Vec<(u32, u64)>>,
    nonexec: Vec<Vec<(u32, u64)>>,
    owned_rows: Vec<Rows>,
    exec_rows: Vec<Rows>,
}

impl Sections {
    /// Local numbers and maps (core and owned elements in global order), freeing the rows as
    /// they are translated.
    fn assemble(mut self, b: &MeshBuilder, rank: usize) -> Result<RankLayout> {
        let nsets = self.owned.len();
        let mut sets = Vec::with_capacity(nsets);
        // Per set: the index into the owned list of every core and owned element, in local order.
        let mut owned_order: Vec<Vec<u32>> = Vec::with_capacity(nsets);
        for s in 0..nsets {
            let total = self.owned[s].len() + self.exec[s].len() + self.nonexec[s].len();
            if total > i32::MAX as usize {
                return Err(MpiError::BadDeclaration(format!(
                    "set `{}`: {total} elements on rank {rank}, past 32-bit local numbers",
                    b.sets[s].name
                )));
            }
            let (mut cores, rest): (Vec<u32>, Vec<u32>) =
                (0..self.owned[s].len() as u32).partition(|&i| self.core[s][i as usize]);
            let sizes = SetSizes {
                core: cores.len(),
                owned: rest.len(),
                exec_halo: self.exec[s].len(),
                nonexec_halo: self.nonexec[s].len(),
            };
            let mut global = Vec::with_capacity(total);
            global.extend(
                cores
                    .iter()
                    .chain(&rest)
                    .map(|&i| self.owned[s][i as usize]),
            );
            global.extend(self.exec[s].iter().map(|&(_, g)| g));
            global.extend(self.nonexec[s].iter().map(|&(_, g)| g));
            let owners = self.exec[s]
                .iter()
                .chain(&self.nonexec[s])
                .map(|&(p, _)| p)
                .collect();
            cores.extend(rest);
            owned_order.push(cores);
            self.owned[s] = Vec::new();
            self.core[s] = Vec::new();
            sets.push(SetLayout {
                sizes,
                global,
                owners,
            });
        }
        let local: Vec<Lookup> = sets.iter().map(|s| Lookup::new(&s.global)).collect();
        let mut maps = Vec::with_capacity(b.maps.len());
        for (m, d) in b.maps.iter().enumerate() {
            let o = std::mem::replace(&mut self.owned_rows[m], Rows::empty());
            let e = std::mem::replace(&mut self.exec_rows[m], Rows::empty());
            let rows = owned_order[d.from].len() + e.len();
            let mut values = Vec::with_capacity(rows * d.arity);
            let (to, to_global) = (&local[d.to], &sets[d.to].global);
            let mut push = |g: u64| -> Result<()> {
                let l = to.find(to_global, g).ok_or_else(|| MpiError::Invariant {
                    rank,
                    reason: format!(
                        "map `{}`: target {g} of an executed row is not held",
                        d.name
                    ),
                })?;
                values.push(l as i32);
                Ok(())
            };
            for &i in &owned_order[d.from] {
                o.row(i as usize).try_for_each(&mut push)?;
            }
            for r in 0..e.len() {
                e.row(r).try_for_each(&mut push)?;
            }
            maps.push(values);
        }
        Ok(RankLayout { sets, maps })
    }
}

/// Orders every set's core and owned sections by `keys` (a locality key per local element,
/// ties by global number) and renumbers the maps to match.
fn reorder(b: &MeshBuilder, layout: &mut RankLayout, keys: &[Vec<u32>]) {
    // Per set: the old local number of each new position, and the new number of each old one.
    let mut new_of: Vec<Vec<u32>> = Vec::with_capacity(layout.sets.len());
    let mut old_at: Vec<Vec<u32>> = Vec::with_capacity(layout.sets.len());
    for (set, key) in layout.sets.iter_mut().zip(keys) {
        let z = set.sizes;
        let total = set.global.len();
        let mut order: Vec<u32> = (0..total as u32).collect();
        let global = &set.global;
        let by_key = |i: &u32| (key[*i as usize], global[*i as usize]);
        order[..z.core].sort_by_key(by_key);
        order[z.core..z.core + z.owned].sort_by_key(by_key);
        let mut new = vec![0u32; total];
        for (n, &o) in order.iter().enumerate() {
            new[o as usize] = n as u32;
        }
        set.global = order.iter().map(|&o| set.global[o as usize]).collect();
        new_of.push(new);
        old_at.push(order);
    }
    for (d, values) in b.maps.iter().zip(&mut layout.maps) {
        let rows = values.len() / d.arity;
        let mut out = Vec::with_capacity(values.len());
        for &old in &old_at[d.from][..rows] {
            let row = &values[old as usize * d.arity..(old as usize + 1) * d.arity];
            out.extend(row.iter().map(|&v| new_of[d.to][v as usize] as i32));
        }
        *values = out;
    }
}

/// A locality order of this rank's elements (op2-renumber's reverse Cuthill-McKee from set
/// `first` over the local mesh, the other sets through the maps): a key per local element. Rows
/// of non-exec halo elements are not held; they are given a row repeating one target, which
/// joins nothing, so only held connectivity shapes the order.
fn local_locality_order(b: &MeshBuilder, layout: &RankLayout, first: usize) -> Vec<Vec<u32>> {
    let sizes: Vec<usize> = layout.sets.iter().map(|s| s.global.len()).collect();
    let mut padded: Vec<(usize, usize, usize, Vec<i32>)> = Vec::new();
    for (d, values) in b.maps.iter().zip(&layout.maps) {
        let rows = sizes[d.from];
        let held = values.len() / d.arity;
        if rows > held && sizes[d.to] == 0 {
            continue;
        }
        let mut v = values.clone();
        v.resize(rows * d.arity, 0);
        padded.push((d.from, d.to, d.arity, v));
    }
    let maps: Vec<op2_renumber::MapRef> = padded
        .iter()
        .map(|(from, to, arity, values)| op2_renumber::MapRef {
            from: *from,
            to: *to,
            arity: *arity,
            values,
        })
        .collect();
    op2_renumber::locality_order(&sizes, &maps, first)
        .expect("local maps hold local numbers of held elements")
}

/// Rank 0's rows of a set of `size` (`row` bytes each) sent out by home block: each rank gets
/// its own block.
fn scatter_blocks(
    comm: &dyn Communicator,
    bytes: &[u8],
    size: usize,
    row: usize,
) -> Result<Vec<u8>> {
    let ranks = comm.size();
    let sends = if comm.rank() == 0 {
        (0..ranks)
            .map(|p| {
                let b = block_range(size, ranks, p);
                bytes[b.start * row..b.end * row].to_vec()
            })
            .collect()
    } else {
        vec![Vec::new(); ranks]
    };
    Ok(comm.all_to_all_v(sends)?.swap_remove(0))
}

/// Sums `v` over ranks.
pub(crate) fn sum_u64(comm: &dyn Communicator, v: u64) -> Result<u64> {
    let mut w = [v];
    all_reduce_words(comm, &mut w, ReduceOp::Sum)?;
    Ok(w[0])
}

/// Combines `words` over ranks under `op` (integers: MPI combines them, exact in any order).
pub(crate) fn all_reduce_words(
    comm: &dyn Communicator,
    words: &mut [u64],
    op: ReduceOp,
) -> Result<()> {
    let mut bytes: Vec<u8> = bytemuck::cast_slice(words).to_vec();
    comm.all_reduce(&mut bytes, DType::U64, op)?;
    words.copy_from_slice(&bytemuck::pod_collect_to_vec::<u8, u64>(&bytes));
    Ok(())
}

/// Sends `sends[p]` (pairs of words, flattened) to rank `p`; every pair received, sorted, once.
pub(crate) fn exchange_pairs(
    comm: &dyn Communicator,
    sends: Vec<Vec<u64>>,
) -> Result<Vec<(u64, u64)>> {
    let mut pairs: Vec<(u64, u64)> = exchange_words(comm, sends)?
        .into_iter()
        .flat_map(|w| w.chunks_exact(2).map(|p| (p[0], p[1])).collect::<Vec<_>>())
        .collect();
    pairs.sort_unstable();
    pairs.dedup();
    Ok(pairs)
}

/// Edges of the graph map `m` induces on its target set (targets of one row joined) whose ends
/// have different owners, counted once each: every rank looks at the rows it owns, and sends
/// each cut edge to the home rank of its lower end, which counts distinct ones.
pub(crate) fn distributed_edge_cut(
    b: &MeshBuilder,
    comm: &dyn Communicator,
    layout: &RankLayout,
    m: usize,
) -> Result<usize> {
    let (ranks, rank) = (comm.size(), comm.rank());
    let d = &b.maps[m];
    let from = &layout.sets[d.from];
    let to = &layout.sets[d.to];
    let own = from.sizes.core + from.sizes.owned;
    let values = &layout.maps[m];
    let tsize = b.sets[d.to].size;
    let mut sends: Vec<Vec<u64>> = vec![Vec::new(); ranks];
    let owner = |l: usize| {
        let o = to.sizes.core + to.sizes.owned;
        if l < o { rank as u32 } else { to.owners[l - o] }
    };
    for row in values.chunks_exact(d.arity).take(own) {
        for (i, &a) in row.iter().enumerate() {
            for &c in &row[i + 1..] {
                let (la, lc) = (a as usize, c as usize);
                let (ga, gc) = (to.global[la], to.global[lc]);
                if ga != gc && owner(la) != owner(lc) {
                    let (lo, hi) = (ga.min(gc), ga.max(gc));
                    let h = holder(tsize, ranks, lo as usize);
                    sends[h].push(lo);
                    sends[h].push(hi);
                }
            }
        }
    }
    let edges = exchange_pairs(comm, sends)?;
    Ok(sum_u64(comm, edges.len() as u64)? as usize)
}
