//! Running recorded work on the hub: forcing (taking what an access needs from the trace and running it in program
//! order, keeping what fails and what depends on it pending), and running each kind of step: a
//! loop over a range of its set, halo exchanges, cross-rank reductions.

use super::engine::{Engine, StepRunner, run_prepared};
use super::shared::{RuntimeShared, State, Wanted};
use super::steps::{Exchange, LoopStep, Reduction, Step};
use super::steps::{reduce_op, step_carriers};
use super::sync::lock;
use super::timing::{self, HaloTraffic};
use crate::contract::rows::row_bytes;
use crate::model::access::Access;
use crate::model::carrier::{Carrier, CarrierKind, CarrierOwner};
use crate::model::comm::{Communicator, combine};
use crate::model::error::{Op2Error, Result};
use crate::model::trace::{DataUse, section};
use std::collections::{HashSet, VecDeque};
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Nodes of the graph that run together: one step, or loops fused into one.
type Group = Vec<(u64, Step)>;

/// What a forcing has met so far: its first error, and the nodes that failed or wait on a
/// failure (with whether communication did: every later communication then waits too).
#[derive(Default)]
struct Outcome {
    first_error: Option<Op2Error>,
    stuck: HashSet<u64>,
    comm_stuck: bool,
}

impl Outcome {
    /// Nothing has failed.
    fn clear(&self) -> bool {
        self.stuck.is_empty() && !self.comm_stuck
    }
}

/// What became of a group offered as the start of a tiled chain.
enum Chain {
    /// Not the start of a chain of two or more tileable loops.
    None,
    /// A chain whose tiling did not pay: its groups after the first (this many) run as usual
    /// and are not offered again.
    Declined(usize),
    /// The chain ran (or failed part way, the rest put back on the queue).
    Ran,
}

impl RuntimeShared {
    /// The one place pending work runs. Takes what `wanted` needs from the graph (and, across
    /// ranks, every earlier pending step that starts communication, so that all ranks start
    /// their messages and collectives in the same order whatever each forces; and the releases
    /// of temporaries whose loops all run now), applies the fusions, orders it (sends first,
    /// then computation, then receives), and runs it. A node that fails stays pending, with
    /// every node that depends on it (and, for communication, every later one); nodes that do
    /// not depend on a failure still run. The first error is returned. The caller holds `exec`.
    pub(crate) fn force(&self, wanted: Wanted<'_>) -> Result<()> {
        let started = Instant::now();
        let Some(order) = self.schedule(wanted) else {
            return Ok(());
        };
        lock(&self.stats).schedule_seconds += started.elapsed().as_secs_f64();
        let mut queue: VecDeque<Group> = order.into();
        let mut outcome = Outcome::default();
        // Groups left of a chain that was offered for tiling and declined: its tails are not
        // offered again (each would be a new shape to inspect and time, for the same answer).
        let mut declined = 0usize;
        while let Some(group) = queue.pop_front() {
            if declined > 0 {
                declined -= 1;
            } else if self.config.lazy_opts.tiling && outcome.clear() {
                match self.run_chain_tiled(&group, &mut queue, &mut outcome) {
                    Chain::Ran => continue,
                    Chain::Declined(tails) => declined = tails,
                    Chain::None => {}
                }
            }
            self.run_group(group, &mut queue, &mut outcome);
        }
        outcome.first_error.map_or(Ok(()), Err)
    }

    /// The groups to run, in order (each one node, or loops fused into one), or `None` when
    /// nothing is pending that `wanted` needs.
    fn schedule(&self, wanted: Wanted<'_>) -> Option<Vec<Group>> {
        let mut st = lock(&self.state);
        if st.trace.is_empty() {
            return None;
        }
        let chosen = self.choose(&mut st, wanted);
        if chosen.is_empty() {
            return None;
        }
        let fusion = self.config.lazy_opts.fusion() && self.caps.fuses_loops;
        let st = &*st;
        let groups = st.trace.schedule_groups(
            &chosen,
            Step::rank,
            Step::order_class,
            |w| fusion && super::fusion::leads(w),
            |group, c| self.fusions.with(self).can_fuse(&st.trace, group, c),
        );
        let mut stats = lock(&self.stats);
        stats.forces += 1;
        stats.nodes_scheduled += chosen.len() as u64;
        drop(stats);
        Some(
            groups
                .into_iter()
                .map(|g| {
                    g.into_iter()
                        .map(|n| (n, st.trace.get(n).expect("chosen").work.clone()))
                        .collect()
                })
                .collect(),
        )
    }

    /// The pending nodes a forcing runs: what `wanted` needs, every earlier step that starts
    /// communication (and what it needs), and the releases of temporaries whose loops all run.
    fn choose(&self, st: &mut State, wanted: Wanted<'_>) -> HashSet<u64> {
        let mut chosen: HashSet<u64> = match wanted {
            Wanted::All => st.trace.iter().map(|(n, _)| n).collect(),
            Wanted::Data { reads, writes } => st.trace.needed(reads, writes),
            Wanted::Nodes(nodes) => st.trace.closure(nodes.iter().copied()),
        };
        if chosen.is_empty() {
            return chosen;
        }
        let last_comm = chosen
            .iter()
            .copied()
            .filter(|n| st.trace.get(*n).is_some_and(|x| x.work.communicates()))
            .max();
        if let Some(last) = last_comm {
            let earlier: Vec<u64> = st
                .trace
                .iter()
                .filter(|(n, x)| *n < last && x.work.communicates() && !chosen.contains(n))
                .map(|(n, _)| n)
                .collect();
            if !earlier.is_empty() {
                let more = st.trace.closure(earlier);
                chosen.extend(more);
            }
        }
        if self.config.lazy_opts.temporaries {
            // Releasing a temporary whose loops all run now costs nothing and needs nothing
            // else: it goes too, so that a temporary allocated after it reuses its memory.
            let State {
                trace,
                pending_frees,
                ..
            } = st;
            pending_frees.retain(|n| trace.get(*n).is_some());
            let frees: Vec<u64> = pending_frees
                .iter()
                .copied()
                .filter(|n| !chosen.contains(n) && trace.preds(*n).all(|p| chosen.contains(&p)))
                .collect();
            chosen.extend(frees);
        }
        chosen
    }

    /// Runs the chain of loop steps starting with `group` tile by tile (sparse tiling), when
    /// the groups at the queue's front make one (single loop steps, one after another, that
    /// tile together) and tiling takes it. The chain's other groups leave the queue; after a
    /// failure those after the failed step go back, to run the usual way.
    fn run_chain_tiled(
        &self,
        group: &Group,
        queue: &mut VecDeque<Group>,
        outcome: &mut Outcome,
    ) -> Chain {
        let mut chain: Vec<LoopStep> = Vec::new();
        let mut nodes: Vec<u64> = Vec::new();
        for g in std::iter::once(group).chain(queue.iter()) {
            match g.as_slice() {
                [(n, Step::Loop(l))]
                    if chain.len() < super::tiling::MAX_CHAIN
                        && super::tiling::tileable(l)
                        && super::tiling::joins(&chain, l) =>
                {
                    chain.push(l.clone());
                    nodes.push(*n);
                }
                _ => break,
            }
        }
        if chain.len() < 2 {
            return Chain::None;
        }
        let Some(run) = self.tilings.with(self).try_run_chain(&chain) else {
            return Chain::Declined(chain.len() - 1);
        };
        let mut rest: Vec<Group> = Vec::new();
        for _ in 1..chain.len() {
            rest.extend(queue.pop_front());
        }
        let mut st = lock(&self.state);
        for n in &nodes[..run.ran] {
            st.trace.remove(*n);
        }
        drop(st);
        lock(&self.stats).nodes_run += run.ran as u64;
        if let Err(e) = run.result {
            // The failed step stays pending; those after it go the usual way (each runs
            // unless it depends on the failure).
            outcome.first_error.get_or_insert(e);
            outcome.stuck.insert(nodes[run.ran]);
            // `rest[i]` is the chain's step `i + 1`.
            for g in rest.into_iter().skip(run.ran).rev() {
                queue.push_front(g);
            }
        }
        Chain::Ran
    }

    /// Runs one group: a single step, or fused loops as one (or, when they cannot run as one,
    /// put back on the queue as single steps); not at all when it waits on a failure.
    fn run_group(&self, group: Group, queue: &mut VecDeque<Group>, outcome: &mut Outcome) {
        let communicates = group.iter().any(|(_, s)| s.communicates());
        let blocked = (outcome.comm_stuck && communicates)
            || (!outcome.stuck.is_empty() && {
                let st = lock(&self.state);
                group
                    .iter()
                    .any(|(n, _)| st.trace.preds(*n).any(|p| outcome.stuck.contains(&p)))
            });
        let result = if group.len() > 1 {
            // A fused group runs as one only when nothing it needs failed and it can (its
            // code compiles, none of its data is borrowed); otherwise as its loops, one by
            // one, so that only those that depend on a failure stay pending.
            let steps: Vec<LoopStep> = group
                .iter()
                .map(|(_, s)| match s {
                    Step::Loop(l) => l.clone(),
                    _ => unreachable!("only loop steps are fused"),
                })
                .collect();
            match (!blocked)
                .then(|| self.fusions.with(self).try_run_fused(&steps))
                .flatten()
            {
                Some(r) => Some(r),
                None => {
                    for single in group.into_iter().rev() {
                        queue.push_front(vec![single]);
                    }
                    return;
                }
            }
        } else if blocked {
            None
        } else {
            Some(self.run_step(&group[0].1))
        };
        match result {
            Some(Ok(())) => self.group_done(&group),
            Some(Err(e)) => {
                outcome.first_error.get_or_insert(e);
                outcome.stuck.extend(group.iter().map(|(n, _)| *n));
                outcome.comm_stuck |= communicates;
            }
            None => {
                outcome.stuck.extend(group.iter().map(|(n, _)| *n));
                outcome.comm_stuck |= communicates;
            }
        }
    }

    /// A group that ran leaves the graph; a fused one is counted as chain or sibling fusions
    /// (each member after the first: a chain when it depends on an earlier member).
    fn group_done(&self, group: &Group) {
        let mut st = lock(&self.state);
        let (mut chains, mut siblings) = (0, 0);
        for k in 1..group.len() {
            let n = group[k].0;
            if st
                .trace
                .preds(n)
                .any(|p| group[..k].iter().any(|(m, _)| *m == p))
            {
                chains += 1;
            } else {
                siblings += 1;
            }
        }
        for (n, _) in group {
            st.trace.remove(*n);
        }
        drop(st);
        let mut stats = lock(&self.stats);
        stats.nodes_run += 1;
        stats.chain_fusions += chains;
        stats.sibling_fusions += siblings;
    }

    fn run_step(&self, step: &Step) -> Result<()> {
        match step {
            Step::Loop(l) => self.run_loop(l),
            Step::HaloBegin(x) => self.begin_exchange(x),
            Step::HaloEnd(x) => self.end_exchange(x),
            Step::ReduceInit(r) => self.init_reduction(r),
            Step::ReduceBegin(r) => self.begin_reduction(r),
            Step::ReduceEnd(r) => self.end_reduction(r),
            Step::Malloc(c) => self.temporaries.with(&self.engine).malloc_temporary(c),
            Step::Free(c) => self.temporaries.with(&self.engine).free_temporary(c),
        }
    }

    /// Packs each Dat's sent rows per neighbour, for the halo sections the exchange brings up to
    /// date, and posts the exchange. The rows come from wherever the valid copy is (a device
    /// backend copies home just the range holding them). A neighbour with nothing to send or
    /// receive for those sections gets no message (it computes the same, and posts none).
    fn begin_exchange(&self, x: &Exchange) -> Result<()> {
        let mut pending = lock(&x.pending);
        *lock(&x.posted) = Some(Instant::now());
        for (dat, sections) in &x.dats {
            let CarrierKind::Dat(set) = dat.kind() else {
                continue;
            };
            let Some(halo) = set.halo() else {
                continue;
            };
            let row = row_bytes(dat);
            let mut sends = Vec::with_capacity(halo.neighbours.len());
            for n in &halo.neighbours {
                let rows = n.send_for(*sections);
                if rows.is_empty() {
                    continue;
                }
                let mut packed = vec![0u8; rows.len() * row];
                self.backend.gather_rows(dat, rows, &mut packed)?;
                sends.push((n.rank, packed));
            }
            let receives = halo
                .neighbours
                .iter()
                .map(|n| {
                    (
                        n.rank,
                        n.receive_for(*sections, set.exec_size()).len() * row,
                    )
                })
                .filter(|(_, bytes)| *bytes > 0)
                .collect();
            let traffic = HaloTraffic {
                exchanges: 1,
                messages: sends.len() as u64,
                bytes: sends.iter().map(|(_, b)| b.len() as u64).sum(),
                wait_seconds: 0.0,
            };
            pending.push(self.comm.begin_exchange(sends, receives)?);
            self.exchanges.fetch_add(1, Ordering::Relaxed);
            self.count_halo(&x.kernel, dat, &traffic);
        }
        Ok(())
    }

    /// Adds `traffic` to the exchanging loop's row and the Dat's.
    fn count_halo(&self, kernel: &str, dat: &Carrier, traffic: &HaloTraffic) {
        timing::entry(&mut lock(&self.timings), kernel)
            .halo
            .add(traffic);
        timing::record_dat(&mut lock(&self.dat_traffic), dat.id, dat.name(), traffic);
    }

    /// Waits for each Dat's messages and writes them into its halo rows: the exchanged sections
    /// as one range, where the valid copy is (a device backend copies just those rows to the
    /// device).
    fn end_exchange(&self, x: &Exchange) -> Result<()> {
        if let Some(posted) = lock(&x.posted).take() {
            let mut st = lock(&self.stats);
            st.overlap_seconds += posted.elapsed().as_secs_f64();
            st.receives += 1;
        }
        // One posted exchange per Dat whose set has neighbours here, in order (`begin_exchange`
        // posts none for the others).
        let mut pending = std::mem::take(&mut *lock(&x.pending)).into_iter();
        for (dat, sections) in &x.dats {
            let CarrierKind::Dat(set) = dat.kind() else {
                continue;
            };
            let Some(halo) = set.halo() else {
                continue;
            };
            let Some(p) = pending.next() else {
                break;
            };
            let started = Instant::now();
            let received = p.wait()?;
            let waited = HaloTraffic {
                wait_seconds: started.elapsed().as_secs_f64(),
                ..HaloTraffic::default()
            };
            self.count_halo(&x.kernel, dat, &waited);
            let row = row_bytes(dat);
            let exec_end = set.exec_size();
            let start = if sections & section::EXEC_HALO != 0 {
                set.size()
            } else {
                exec_end
            };
            let end = if sections & section::NONEXEC_HALO != 0 {
                set.total_size()
            } else {
                exec_end
            };
            if start >= end {
                continue;
            }
            let mut bytes = vec![0u8; (end - start) * row];
            let lists: Vec<&[u32]> = halo
                .neighbours
                .iter()
                .map(|n| n.receive_for(*sections, exec_end))
                .filter(|l| !l.is_empty())
                .collect();
            let covered: usize = lists.iter().map(|l| l.len()).sum();
            if covered < end - start {
                // Halo rows nobody sends keep their values.
                let halo_rows: Vec<u32> = (start as u32..end as u32).collect();
                self.backend.gather_rows(dat, &halo_rows, &mut bytes)?;
            }
            for (list, message) in lists.iter().zip(received) {
                for (k, &e) in list.iter().enumerate() {
                    let e = e as usize - start;
                    bytes[e * row..(e + 1) * row].copy_from_slice(&message[k * row..(k + 1) * row]);
                }
            }
            self.backend.write_bytes(dat, start * row, &bytes)?;
        }
        Ok(())
    }

    /// Starts this rank's partials: zero for sums, the Global's value for MIN and MAX (the same
    /// on every rank, so combining it again changes nothing).
    fn init_reduction(&self, r: &Reduction) -> Result<()> {
        for ((_, global, access), partial) in r.globals.iter().zip(&r.partials) {
            let mut p = partial.lock_for_loop("reduction", true)?;
            let p = p.bytes_mut().expect("a write lock gives mutable bytes");
            if *access == Access::Inc {
                p.fill(0);
            } else {
                self.backend.host_access(global, false)?;
                p.copy_from_slice(global.lock_for_loop("reduction", false)?.bytes());
            }
        }
        Ok(())
    }

    /// Sends this rank's partials of every Global of the loop, as one message, to every rank.
    fn begin_reduction(&self, r: &Reduction) -> Result<()> {
        let mut message = Vec::new();
        for partial in &r.partials {
            self.backend.host_access(partial, false)?;
            message.extend_from_slice(partial.lock_for_loop("reduction", false)?.bytes());
        }
        *lock(&r.pending) = Some(self.comm.begin_all_gather(message)?);
        timing::entry(&mut lock(&self.timings), &r.kernel).reductions += 1;
        Ok(())
    }

    /// Combines every rank's partials in rank order (the same bits on every rank for a given
    /// number of ranks) and folds the result into the Globals: sums are added, extremes combined.
    fn end_reduction(&self, r: &Reduction) -> Result<()> {
        let pending = lock(&r.pending)
            .take()
            .ok_or_else(|| Op2Error::Communication {
                reason: "a reduction finished that never started".into(),
            })?;
        let started = Instant::now();
        let ranks = pending.wait()?;
        timing::entry(&mut lock(&self.timings), &r.kernel).reduction_wait_seconds +=
            started.elapsed().as_secs_f64();
        let mut offset = 0;
        for (_, global, access) in &r.globals {
            let len = global.dim() * global.dtype().size();
            let part = |message: &Vec<u8>| -> Result<Vec<u8>> {
                message
                    .get(offset..offset + len)
                    .map(<[u8]>::to_vec)
                    .ok_or_else(|| Op2Error::Communication {
                        reason: format!(
                            "a reduction message of {} bytes, expected at least {}",
                            message.len(),
                            offset + len
                        ),
                    })
            };
            let mut combined = part(&ranks[0])?;
            for message in &ranks[1..] {
                combine(
                    &mut combined,
                    &part(message)?,
                    global.dtype(),
                    reduce_op(*access),
                );
            }
            offset += len;
            self.backend.host_access(global, true)?;
            let mut g = global.lock_for_loop("reduction", true)?;
            let g = g.bytes_mut().expect("a write lock gives mutable bytes");
            combine(g, &combined, global.dtype(), reduce_op(*access));
        }
        if self.checkpointing.is_on() {
            let globals: Vec<(usize, &Arc<Carrier>)> =
                r.globals.iter().map(|(arg, g, _)| (*arg, g)).collect();
            self.checkpoints().checkpoint_globals(r.ordinal, &globals);
        }
        Ok(())
    }

    pub(crate) fn flush(&self) -> Result<()> {
        let _order = lock(&self.exec);
        lock(&self.state).epoch += 1;
        self.force(Wanted::All)
    }
}

/// The runtime as the subsystems that run steps their own way (fused, tiled) see it.
impl StepRunner for RuntimeShared {
    fn engine(&self) -> &Engine {
        &self.engine
    }

    fn run_pending(&self) -> Result<()> {
        self.force(Wanted::All)
    }

    fn run_loop(&self, step: &LoopStep) -> Result<()> {
        let rec = &step.record;
        let carriers = step_carriers(step);
        let seconds = run_prepared(
            rec.sig.kernel.name(),
            &rec.sig,
            &rec.prepared,
            &rec.set,
            step.range.clone(),
            &carriers,
            &rec.maps,
            &rec.consts,
        )?;
        self.backend.loop_done(&carriers);
        self.loop_step_done(step, seconds);
        Ok(())
    }

    /// Bookkeeping after a loop step ran for `seconds`: its timing row, the loop counted once
    /// its last step ran, and, when checkpointing, the values it left in the Globals it writes.
    fn loop_step_done(&self, step: &LoopStep, seconds: f64) {
        let rec = &step.record;
        timing::record(
            &mut lock(&self.timings),
            rec.sig.kernel.name(),
            seconds,
            u64::from(step.first),
            if step.first { rec.bytes } else { 0 },
        );
        if step.last {
            self.executed.fetch_add(1, Ordering::Relaxed);
            // Across ranks a Global's value is final once its reduction finished.
            if self.checkpointing.is_on() && self.comm.size() == 1 {
                let globals: Vec<(usize, &Arc<Carrier>)> = rec
                    .sig
                    .args
                    .iter()
                    .zip(&rec.carriers)
                    .enumerate()
                    .filter(|(_, (a, c))| {
                        a.access.writes() && matches!(c.kind(), CarrierKind::Global)
                    })
                    .map(|(i, (_, c))| (i, c))
                    .collect();
                if !globals.is_empty() {
                    self.checkpoints().checkpoint_globals(rec.ordinal, &globals);
                }
            }
        }
    }
}

impl CarrierOwner for RuntimeShared {
    /// Runs the pending work a host access to `carrier` depends on (across ranks also every
    /// earlier pending step that starts communication, and what that needs), then the
    /// backend's hook.
    fn force_for_host(&self, carrier: &Carrier, write: bool) -> Result<()> {
        let _order = lock(&self.exec);
        self.checkpoints().checkpoint_host_access(carrier, write)?;
        let uses = [DataUse {
            id: carrier.id,
            sections: section::ALL,
        }];
        self.force(Wanted::Data {
            reads: &uses,
            writes: if write { &uses } else { &[] },
        })?;
        self.backend.host_access(carrier, write)
    }

    fn communicator(&self) -> Arc<dyn Communicator> {
        self.comm.clone()
    }

    fn as_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        self
    }
}
