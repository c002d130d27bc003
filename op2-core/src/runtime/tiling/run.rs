//! Tiling's work: a chain of pending loop steps inspected once per shape (cached), then run
//! tile by tile on the backend's threads, or loop by loop where tiling would not pay.

use super::{
    CACHE_ENTRIES, ChainKey, ChainRun, Entry, MUST_GAIN, TILE_BYTES, TILE_ELEMENTS, TRIALS, Tiling,
    Tilings, auto_threshold, chain_key, give_back_freed_memory, inspect, median,
};
use crate::contract::backend::{ElementListLoop, FirstPanic};
use crate::contract::config::TilingMode;
use crate::model::access::Access;
use crate::model::comm::combine;
use crate::runtime::engine::{Engine, StepRunner};
use crate::runtime::steps::{LoopStep, reduce_op, step_carriers};
use crate::runtime::sync::{lock, lock_once, locked_pointer};
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier, OnceLock};
use std::time::Instant;

/// Pointers handed to the threads running tiles. The data behind them is locked for the whole
/// chain, and tiles of one level write disjoint elements.
struct Shared<T>(T);
// SAFETY: see the type's comment; every pointer stays valid until the threads are joined.
unsafe impl<T> Send for Shared<T> {}
// SAFETY: as above.
unsafe impl<T> Sync for Shared<T> {}

impl<T> Shared<T> {
    /// The pointers (a method, so that closures capture the wrapper, not its field).
    fn get(&self) -> &T {
        &self.0
    }
}

/// Tiling at work: its state and the runtime it runs steps with.
pub(crate) struct TilingWork<'a> {
    rt: &'a dyn StepRunner,
    engine: &'a Engine,
    state: &'a Tilings,
}

impl Tilings {
    /// This subsystem working with the runtime `rt`.
    pub(crate) fn with<'a>(&'a self, rt: &'a dyn StepRunner) -> TilingWork<'a> {
        TilingWork {
            rt,
            engine: rt.engine(),
            state: self,
        }
    }
}

impl TilingWork<'_> {
    /// Runs `steps` (a chain of tileable loop steps, in program order) tile by tile, or loop
    /// by loop while timing both ways, or returns `None` (nothing ran) when tiling does not pay
    /// or cannot start (data borrowed by the program): the caller then runs them one by one.
    /// A chain shape is inspected once; its first runs alternate loop by loop and tiled
    /// ([`TRIALS`] each), and from then on it runs the faster way.
    pub(crate) fn try_run_chain(&self, steps: &[LoopStep]) -> Option<ChainRun> {
        let always = self.engine.config.tiling == TilingMode::Always;
        // Checkpointing records the Globals each loop leaves, which a tiled chain only has
        // once all of its loops ran.
        if (!always && self.engine.caps.keeps_operation_order)
            || self.engine.config.checkpoint.is_some()
        {
            return None;
        }
        let bytes: u64 = steps.iter().map(|s| s.record.bytes).sum();
        if steps.len() < 2 || (!always && bytes < auto_threshold()) || steps[0].range.is_empty() {
            return None;
        }
        let threads = self.engine.caps.host_threads.max(1);
        let tile_size = self.engine.config.tile_size.unwrap_or_else(|| {
            let per_element = steps[0].record.bytes.max(1) * steps.len() as u64
                / steps[0].range.len().max(1) as u64;
            ((TILE_BYTES / per_element.max(1)) as usize).clamp(TILE_ELEMENTS.0, TILE_ELEMENTS.1)
        });
        let key = chain_key(steps, tile_size, threads);
        let known = lock(&self.state.cache)
            .entries
            .get(&key)
            .map(|e| (e.tiling.clone(), e.choice, e.untiled.len() <= e.tiled.len()));
        let (tiling, choice, untiled_next) = match known {
            Some(k) => k,
            None => {
                let started = Instant::now();
                let t = inspect(steps, &key, threads, !always).map(Arc::new);
                give_back_freed_memory();
                let mut stats = lock(&self.engine.stats);
                stats.tiling_inspections += 1;
                stats.tiling_seconds += started.elapsed().as_secs_f64();
                if t.is_none() {
                    stats.tiling_refused += 1;
                }
                drop(stats);
                let mut cache = lock(&self.state.cache);
                if cache.entries.len() >= CACHE_ENTRIES {
                    cache.entries.clear();
                }
                cache.entries.insert(
                    key.clone(),
                    Entry {
                        tiling: t.clone(),
                        untiled: Vec::new(),
                        tiled: Vec::new(),
                        choice: None,
                    },
                );
                (t, None, true)
            }
        };
        let tiling = tiling?;
        let choice = if always { Some(true) } else { choice };
        match choice {
            Some(false) => None,
            Some(true) => self.run_tiled(steps, &tiling, threads).map(|_| ChainRun {
                ran: steps.len(),
                result: Ok(()),
            }),
            None if untiled_next => {
                // A timed run loop by loop, as the caller would run it.
                let started = Instant::now();
                for (k, step) in steps.iter().enumerate() {
                    if let Err(e) = self.rt.run_loop(step) {
                        return Some(ChainRun {
                            ran: k,
                            result: Err(e),
                        });
                    }
                }
                self.note_trial(&key, false, started.elapsed().as_secs_f64());
                Some(ChainRun {
                    ran: steps.len(),
                    result: Ok(()),
                })
            }
            None => {
                let seconds = self.run_tiled(steps, &tiling, threads)?;
                self.note_trial(&key, true, seconds);
                Some(ChainRun {
                    ran: steps.len(),
                    result: Ok(()),
                })
            }
        }
    }

    /// Records a timed run of a chain shape, and chooses once both ways have their trials.
    fn note_trial(&self, key: &ChainKey, tiled: bool, seconds: f64) {
        let mut cache = lock(&self.state.cache);
        let Some(e) = cache.entries.get_mut(key) else {
            return;
        };
        if tiled {
            e.tiled.push(seconds);
        } else {
            e.untiled.push(seconds);
        }
        if e.tiled.len() >= TRIALS && e.untiled.len() >= TRIALS {
            let wins = median(&e.tiled) < MUST_GAIN * median(&e.untiled);
            e.choice = Some(wins);
            if !wins {
                // The inspection is not needed again: its memory goes.
                e.tiling = None;
            }
            drop(cache);
            let mut stats = lock(&self.engine.stats);
            if !wins {
                stats.tiling_refused += 1;
            }
        }
    }

    /// Runs the chain tile by tile; the seconds it took, or `None` (nothing ran) when its data
    /// cannot be locked.
    fn run_tiled(&self, steps: &[LoopStep], tiling: &Tiling, threads: usize) -> Option<f64> {
        let lists: Vec<&dyn ElementListLoop> = steps
            .iter()
            .map(|s| s.record.prepared.element_lists())
            .collect::<Option<_>>()?;
        // Every carrier of the chain locked once, for writing where any loop writes it.
        let carriers: Vec<Vec<Arc<crate::model::carrier::Carrier>>> =
            steps.iter().map(step_carriers).collect();
        let uses: Vec<(&Arc<crate::model::carrier::Carrier>, bool)> = steps
            .iter()
            .zip(&carriers)
            .flat_map(|(s, cs)| {
                cs.iter()
                    .zip(&s.record.sig.args)
                    .map(|(c, a)| (c, a.access.writes()))
                    .chain(s.record.consts.iter().map(|c| (c, false)))
            })
            .collect();
        let mut locked = lock_once(&uses, "tiled loops").ok()?;
        let mut pointer = |id: u64| locked_pointer(&mut locked, id);
        let args: Vec<Vec<*mut c_void>> = carriers
            .iter()
            .map(|cs| cs.iter().map(|c| pointer(c.id)).collect())
            .collect();
        let consts: Vec<Vec<*const c_void>> = steps
            .iter()
            .map(|s| {
                s.record
                    .consts
                    .iter()
                    .map(|c| pointer(c.id).cast_const())
                    .collect()
            })
            .collect();
        let maps: Vec<Vec<*const i32>> = steps
            .iter()
            .map(|s| s.record.maps.iter().map(|m| m.values().as_ptr()).collect())
            .collect();
        // Per loop, per reduction arg: each tile's partial (sums from zero, MIN and MAX from the
        // Global's value).
        let tiles = tiling.tiles;
        // 8-byte words, so that every partial is aligned for its type.
        let mut partials: Vec<Vec<(usize, Vec<u64>)>> = Vec::with_capacity(steps.len());
        for (j, s) in steps.iter().enumerate() {
            let mut mine = Vec::new();
            for i in s.record.sig.reduction_args() {
                let a = &s.record.sig.args[i];
                let width = a.dim * a.dtype.size();
                let start: Vec<u8> = if a.access == Access::Inc {
                    vec![0; width]
                } else {
                    // SAFETY: the Global is locked above and holds `dim` values.
                    unsafe { std::slice::from_raw_parts(args[j][i] as *const u8, width) }.to_vec()
                };
                let mut words = vec![0u64; (width * tiles).div_ceil(8)];
                let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut words);
                for part in bytes.chunks_exact_mut(width).take(tiles) {
                    part.copy_from_slice(&start);
                }
                mine.push((i, words));
            }
            partials.push(mine);
        }
        // The Consts: set once per loop under its library's lock, taken in one order.
        let mut keyed: Vec<(usize, usize)> = lists
            .iter()
            .enumerate()
            .map(|(j, l)| (l.consts_key(), j))
            .filter(|(k, _)| *k != 0)
            .collect();
        keyed.sort_unstable();
        keyed.dedup_by_key(|(k, _)| *k);
        let _const_guards: Vec<_> = keyed
            .iter()
            .filter_map(|&(_, j)| lists[j].lock_consts())
            .collect();
        for (j, l) in lists.iter().enumerate() {
            // No elements: the call only copies the Consts in. Its reductions still fold their
            // (empty) result into the arg, so they get scratch words instead of the Global.
            let mut scratch: Vec<Vec<u64>> = Vec::new();
            let mut mine = args[j].clone();
            for i in steps[j].record.sig.reduction_args() {
                let a = &steps[j].record.sig.args[i];
                scratch.push(vec![0u64; (a.dim * a.dtype.size()).div_ceil(8)]);
                mine[i] = scratch.last_mut().expect("just pushed").as_mut_ptr().cast();
            }
            // SAFETY: no elements; the pointers are the loop's own (locked above) or scratch.
            unsafe { l.run_ranges(&[], &[], &mine, &maps[j], Some(&consts[j])) };
        }
        let nanos: Vec<AtomicU64> = steps.iter().map(|_| AtomicU64::new(0)).collect();
        let partial_ptrs: Vec<Vec<(usize, *mut u8, usize)>> = partials
            .iter_mut()
            .zip(steps)
            .map(|(ps, s)| {
                ps.iter_mut()
                    .map(|(i, buf)| {
                        let a = &s.record.sig.args[*i];
                        (*i, buf.as_mut_ptr().cast::<u8>(), a.dim * a.dtype.size())
                    })
                    .collect()
            })
            .collect();
        let work = Shared((&args, &maps, &partial_ptrs, &lists));
        let run_tile = |t: usize| {
            let (args, maps, partial_ptrs, lists) = *work.get();
            let mut mine: Vec<*mut c_void> = Vec::new();
            for (j, pieces) in tiling.loops.iter().enumerate() {
                let (ranges, elems) = pieces.of(t);
                if ranges.is_empty() && elems.is_empty() {
                    continue;
                }
                mine.clear();
                mine.extend_from_slice(&args[j]);
                for &(i, base, width) in &partial_ptrs[j] {
                    // SAFETY: each tile's partial is its own `width` bytes of the buffer.
                    mine[i] = unsafe { base.add(t * width) }.cast();
                }
                let started = Instant::now();
                // SAFETY: the data is locked for the chain, the Consts were set above under
                // their locks, and tiles running at once (one level) write disjoint elements.
                unsafe { lists[j].run_ranges(ranges, elems, &mine, &maps[j], None) };
                nanos[j].fetch_add(started.elapsed().as_nanos() as u64, Ordering::Relaxed);
            }
        };
        let started = Instant::now();
        let widest = tiling.levels.iter().map(Vec::len).max().unwrap_or(0);
        let n = threads.min(widest).max(1);
        if n == 1 {
            for level in &tiling.levels {
                for &t in level {
                    run_tile(t as usize);
                }
            }
        } else {
            let next: Vec<AtomicUsize> =
                tiling.levels.iter().map(|_| AtomicUsize::new(0)).collect();
            // The team the backend starts may be smaller than asked: the barrier waits for
            // as many threads as there are.
            let barrier: OnceLock<Barrier> = OnceLock::new();
            // A thread unwinding out of its levels would leave the others waiting at the next
            // barrier for ever: a panicking tile ends the team's work instead, and the panic
            // goes on from here once the team is done.
            let panicked = FirstPanic::default();
            let worker = |_: usize, team: usize| {
                let barrier = barrier.get_or_init(|| Barrier::new(team));
                for (level, counter) in tiling.levels.iter().zip(&next) {
                    loop {
                        let k = counter.fetch_add(1, Ordering::Relaxed);
                        match level.get(k) {
                            Some(&t) => panicked.run(|| run_tile(t as usize)),
                            None => break,
                        }
                    }
                    barrier.wait();
                }
            };
            // On the backend's own threads where it has them (OpenMP's); else std threads.
            if !self.engine.backend.run_team(n, &worker) {
                std::thread::scope(|scope| {
                    for t in 1..n {
                        let worker = &worker;
                        scope.spawn(move || worker(t, n));
                    }
                    worker(0, n);
                });
            }
            panicked.resume();
        }
        let wall = started.elapsed().as_secs_f64();
        // Reductions: every tile's partial folded into the arg's target, in tile order.
        for ((s, ps), cs) in steps.iter().zip(&partials).zip(&carriers) {
            for (i, buf) in ps {
                let a = &s.record.sig.args[*i];
                let op = reduce_op(a.access);
                let width = a.dim * a.dtype.size();
                let target = locked
                    .iter_mut()
                    .find(|(id, _)| *id == cs[*i].id)
                    .expect("locked above")
                    .1
                    .bytes_mut()
                    .expect("reduction targets are locked for writing");
                let bytes: &[u8] = bytemuck::cast_slice(buf);
                for part in bytes.chunks_exact(width).take(tiles) {
                    combine(target, part, a.dtype, op);
                }
            }
        }
        drop(locked);
        // Time is shared among the loops by the time their tiles took.
        let spent: Vec<u64> = nanos.iter().map(|n| n.load(Ordering::Relaxed)).collect();
        let total = spent.iter().sum::<u64>().max(1) as f64;
        for ((s, cs), ns) in steps.iter().zip(&carriers).zip(&spent) {
            self.engine.backend.loop_done(cs);
            self.rt.loop_step_done(s, wall * *ns as f64 / total);
        }
        let mut stats = lock(&self.engine.stats);
        stats.tiled_chains += 1;
        stats.tiled_loops += steps.len() as u64;
        let (tiles, levels) = tiling.shape();
        stats.tiles_run += tiles as u64;
        stats.tile_levels += levels as u64;
        Some(wall)
    }
}
