//! Running recorded work: the runtime's shared state (backend, trace, compiled loops, timings),
//! and forcing: taking what an access needs from the trace and running it in program order, keeping
//! what fails (and what depends on it) pending.

use super::timing::{self, LoopTiming};
use crate::backend::{Backend, LoopInvocation, PreparedLoop};
use crate::carrier::Carrier;
use crate::config::Config;
use crate::error::Result;
use crate::map::Map;
use crate::set::Set;
use crate::signature::LoopSignature;
use crate::trace::{DataUse, Footprint, Pending, Trace, section};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

/// A recorded loop with everything needed to run it.
pub struct LoopRecord {
    pub(crate) sig: Arc<LoopSignature>,
    pub(crate) prepared: Arc<dyn PreparedLoop>,
    pub(crate) set: Set,
    pub(crate) carriers: Vec<Arc<Carrier>>,
    pub(crate) maps: Vec<Map>,
    pub(crate) consts: Vec<Arc<Carrier>>,
    pub(crate) start: usize,
    pub(crate) end: usize,
    /// Bytes the loop moves by OP2's convention (see [`LoopTiming::bytes`]).
    pub(crate) bytes: u64,
}

impl LoopRecord {
    /// The loop's signature.
    pub fn signature(&self) -> &LoopSignature {
        &self.sig
    }
}

pub(crate) struct State {
    pub(crate) trace: Trace<Arc<LoopRecord>>,
    pub(crate) prepared: HashMap<LoopSignature, (Arc<LoopSignature>, Arc<dyn PreparedLoop>)>,
    pub(crate) consts: Vec<Arc<Carrier>>,
}

/// The part of a runtime that data carriers point back to (weakly), to force pending work.
pub struct RuntimeShared {
    pub(crate) id: u64,
    pub(crate) config: Config,
    pub(crate) backend: Box<dyn Backend>,
    pub(crate) state: Mutex<State>,
    /// Held while pending work runs, so that concurrent forces keep program order.
    pub(crate) exec: Mutex<()>,
    pub(crate) executed: AtomicU64,
    pub(crate) recorded: AtomicU64,
    /// Per-kernel run times, in order of first run.
    pub(crate) timings: Mutex<Vec<LoopTiming>>,
}

pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves plain bookkeeping behind; keep going with it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl RuntimeShared {
    /// Runs `work` in order. A loop that fails stays pending, with every later one that depends on
    /// it; loops that do not depend on a failure still run. The kept loops go back to the front of
    /// the trace (they come before anything recorded later), so nothing recorded is lost, and the
    /// first error is returned.
    fn run_pending(&self, work: Vec<Pending<Arc<LoopRecord>>>) -> Result<()> {
        let mut first_error = None;
        let mut kept = Vec::new();
        let mut blocked = Footprint::default();
        for p in work {
            if !kept.is_empty() && blocked.must_precede(&p) {
                blocked.add(&p);
                kept.push(p);
                continue;
            }
            if let Err(e) = self.run_record(&p.work) {
                first_error.get_or_insert(e);
                blocked.add(&p);
                kept.push(p);
            }
        }
        if !kept.is_empty() {
            lock(&self.state).trace.requeue_front(kept);
        }
        first_error.map_or(Ok(()), Err)
    }

    fn run_record(&self, rec: &LoopRecord) -> Result<()> {
        let kernel = rec.sig.kernel.name();
        // Each carrier once: exclusively when some arg writes it, shared otherwise.
        let writes = |id: u64| {
            rec.sig
                .args
                .iter()
                .zip(&rec.carriers)
                .any(|(a, c)| c.id == id && a.access.writes())
        };
        let mut locked = Vec::with_capacity(rec.carriers.len() + rec.consts.len());
        for c in rec.carriers.iter().chain(&rec.consts) {
            if !locked.iter().any(|(id, _)| *id == c.id) {
                locked.push((c.id, c.lock_for_loop(kernel, writes(c.id))?));
            }
        }
        let mut pointer = |id: u64| {
            let (_, guard) = locked
                .iter_mut()
                .find(|(i, _)| *i == id)
                .expect("every carrier of the loop was locked just above");
            guard.pointer()
        };
        let args: Vec<_> = rec.carriers.iter().map(|c| pointer(c.id)).collect();
        let consts: Vec<_> = rec
            .consts
            .iter()
            .map(|c| pointer(c.id).cast_const())
            .collect();
        let started = Instant::now();
        rec.prepared.run(&LoopInvocation {
            sig: &rec.sig,
            set: &rec.set,
            start: rec.start,
            end: rec.end,
            args: &args,
            carriers: &rec.carriers,
            maps: &rec.maps,
            consts: &consts,
        })?;
        let seconds = started.elapsed().as_secs_f64();
        timing::record(&mut lock(&self.timings), kernel, seconds, rec.bytes);
        self.executed.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// Runs the pending loops that must precede a host access to `carrier`, then the backend's hook.
    pub(crate) fn force_for_host(&self, carrier: &Carrier, write: bool) -> Result<()> {
        let _order = lock(&self.exec);
        let work = {
            let mut st = lock(&self.state);
            if st.trace.is_empty() {
                Vec::new()
            } else {
                let uses = [DataUse {
                    id: carrier.id,
                    sections: section::ALL,
                }];
                st.trace.take_needed(&uses, if write { &uses } else { &[] })
            }
        };
        self.run_pending(work)?;
        self.backend.host_access(carrier, write)
    }

    pub(crate) fn flush(&self) -> Result<()> {
        let _order = lock(&self.exec);
        let work = lock(&self.state).trace.take_all();
        self.run_pending(work)
    }
}
