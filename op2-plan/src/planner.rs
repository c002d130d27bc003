//! The planner: how a backend keeps loops race-free, and the plan cache (a loop in a
//! time-stepping loop plans once).

use crate::build::build_plan;
use op2_core::plan::{MapAccess, Plan, PlanArg, PlanDetail, PlanRequest, Planner, Strategy};
use op2_core::{Access, LoopSignature, Op2Error, Result};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Block size when neither the user (`OP2_PART_SIZE`) nor the backend asks for one.
pub const DEFAULT_BLOCK_SIZE: usize = 256;

/// What makes two requests plan alike: the set, the range, the block size and, per arg in order
/// (direct ones too: a plan's per-arg tables are indexed by position, and a direct arg on data
/// modified through a map adds to the colouring), its map (if any), entries and access, the
/// data's position among the loop's data (so args sharing data share staging whatever the data
/// is), and its value size.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct PlanKey {
    set: u64,
    start: usize,
    end: usize,
    block_size: usize,
    detail: PlanDetail,
    args: Vec<(Option<u64>, MapAccess, Access, usize, usize)>,
}

/// Cache counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PlannerStats {
    /// Plans built.
    pub built: u64,
    /// Requests answered from the cache.
    pub reused: u64,
}

/// What a backend does with a loop's indirect writes, for [`CachedPlanner::strategy`].
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct StrategyChoice {
    /// The backend stages indirect data per block (devices): every loop through a map needs a
    /// plan, not only loops that write through one.
    pub stages: bool,
    /// The backend adds increments atomically where a loop allows it.
    pub atomics: bool,
}

/// Builds plans, caches them, and chooses each loop's [`Strategy`] for its backend.
#[derive(Default)]
pub struct CachedPlanner {
    choice: StrategyChoice,
    cache: Mutex<HashMap<PlanKey, Arc<Plan>>>,
    built: AtomicU64,
    reused: AtomicU64,
}

impl Planner for CachedPlanner {
    /// Direct loops, and loops that write nothing through maps on a backend that stages nothing,
    /// need no plan; atomics where the backend has them and the loop allows them (nothing written
    /// through maps, data incremented through a map used by no other kind of arg); colours
    /// otherwise.
    fn strategy(&self, sig: &LoopSignature) -> Strategy {
        let c = self.choice;
        if sig.is_direct() || (!c.stages && !sig.has_indirect_writes()) {
            return Strategy::None;
        }
        if c.atomics && atomics_allowed(sig) {
            return Strategy::Atomics;
        }
        Strategy::Colour
    }

    fn plan(&self, req: &PlanRequest<'_>) -> Result<Arc<Plan>> {
        CachedPlanner::plan(self, req)
    }
}

/// Whether `sig`'s increments may be added atomically: nothing is written through maps (RW,
/// WRITE), and data incremented through a map is used by no other kind of arg (a read of it would
/// see some increments and not others).
fn atomics_allowed(sig: &LoopSignature) -> bool {
    let writes_through_maps = sig
        .args
        .iter()
        .any(|a| a.is_indirect() && matches!(a.access, Access::Rw | Access::Write));
    if writes_through_maps {
        return false;
    }
    let incremented = |i: usize| sig.args[i].is_indirect() && sig.args[i].access == Access::Inc;
    (0..sig.args.len())
        .filter(|&i| incremented(i))
        .all(|i| (0..sig.args.len()).all(|j| sig.data[j] != sig.data[i] || incremented(j)))
}

impl CachedPlanner {
    /// A planner choosing strategies as `choice` says.
    pub fn new(choice: StrategyChoice) -> Self {
        CachedPlanner {
            choice,
            ..Self::default()
        }
    }

    /// The plan for `req`, from the cache when an equivalent request was planned before.
    pub fn plan(&self, req: &PlanRequest<'_>) -> Result<Arc<Plan>> {
        let mut data_ids: Vec<u64> = Vec::new();
        let args = req
            .args
            .iter()
            .map(|a| {
                let class = data_ids
                    .iter()
                    .position(|&d| d == a.data)
                    .unwrap_or_else(|| {
                        data_ids.push(a.data);
                        data_ids.len() - 1
                    });
                (
                    a.map.as_ref().map(|m| m.id),
                    a.entries,
                    a.access,
                    class,
                    a.dim * a.elem_bytes,
                )
            })
            .collect();
        let key = PlanKey {
            set: req.set,
            start: req.start,
            end: req.end,
            block_size: req.block_size,
            detail: req.detail,
            args,
        };
        if let Some(p) = self
            .cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            self.reused.fetch_add(1, Ordering::Relaxed);
            return Ok(p.clone());
        }
        let plan = Arc::new(build_plan(req)?);
        self.built.fetch_add(1, Ordering::Relaxed);
        self.cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, plan.clone());
        Ok(plan)
    }

    /// The plan of a device backend, whose blocks must fit its local (shared) memory: blocks of
    /// the user's `fit.user` size, else of `fit.preferred` elements, halved until a block's staging
    /// plus `fit.scratch_per_thread` bytes per thread (of at most `fit.max_threads`) fit in
    /// `fit.capacity` bytes. A loop whose single element does not fit is a
    /// [`Op2Error::DeviceLimit`].
    pub fn plan_to_fit(
        &self,
        set: u64,
        range: std::ops::Range<usize>,
        args: &[PlanArg<'_>],
        fit: &LocalMemoryFit<'_>,
    ) -> Result<Arc<Plan>> {
        let mut block_size = fit.user.unwrap_or(fit.preferred).max(1);
        loop {
            let plan = self.plan(&PlanRequest {
                set,
                start: range.start,
                end: range.end,
                block_size,
                args,
                detail: PlanDetail::Full,
            })?;
            let needed = plan.stats.max_staging_bytes
                + fit.scratch_per_thread * block_size.min(fit.max_threads);
            if needed <= fit.capacity {
                return Ok(plan);
            }
            // Too large for the device: only its counts are read again (the next request of this
            // size is answered from the cache), not its per-element arrays.
            if plan.holds_element_arrays() {
                self.replace(&plan, &Arc::new(plan.without_element_arrays()));
            }
            if block_size == 1 {
                return Err(Op2Error::DeviceLimit {
                    backend: fit.backend.into(),
                    kernel: fit.kernel.into(),
                    device: fit.device.into(),
                    resource: "local (shared) memory per block",
                    needed,
                    available: fit.capacity,
                    hint: "one element's data staged through its maps does not fit; a device with \
                           more local memory, or smaller Dats per element, is needed"
                        .into(),
                });
            }
            block_size /= 2;
        }
    }

    /// Caches `new` wherever `old` is cached (the same request gets `new` from now on): a device
    /// backend keeps a plan's arrays on the device and the host only what it needs of them.
    pub fn replace(&self, old: &Arc<Plan>, new: &Arc<Plan>) {
        let mut cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        for p in cache.values_mut() {
            if Arc::ptr_eq(p, old) {
                *p = new.clone();
            }
        }
    }

    /// The plans cached now, with their iteration sets' ids, in a stable order.
    fn cached_plans(&self) -> Vec<(u64, Arc<Plan>)> {
        let cache = self.cache.lock().unwrap_or_else(|e| e.into_inner());
        let mut plans: Vec<(u64, Arc<Plan>)> =
            cache.iter().map(|(k, p)| (k.set, p.clone())).collect();
        plans.sort_by_key(|(set, p)| (*set, p.start, p.end, p.block_size));
        plans
    }

    /// The plans cached now, each with the bytes it holds on the host and the bytes
    /// `device_bytes` says a device holds for it (a memory report's rows).
    pub fn memory(&self, device_bytes: impl Fn(&Arc<Plan>) -> u64) -> Vec<op2_core::BackendMemory> {
        self.cached_plans()
            .into_iter()
            .map(|(set, plan)| op2_core::BackendMemory {
                owner: op2_core::MemoryOwner::Plan {
                    set,
                    start: plan.start,
                    end: plan.end,
                },
                host_bytes: plan.held_bytes() as u64,
                device_bytes: device_bytes(&plan),
            })
            .collect()
    }

    /// Plans built and reused so far.
    pub fn stats(&self) -> PlannerStats {
        PlannerStats {
            built: self.built.load(Ordering::Relaxed),
            reused: self.reused.load(Ordering::Relaxed),
        }
    }
}

/// What a device block must fit in, for [`CachedPlanner::plan_to_fit`].
#[derive(Debug, Clone)]
pub struct LocalMemoryFit<'a> {
    /// Block size the backend prefers.
    pub preferred: usize,
    /// Block size the user chose (`OP2_PART_SIZE`): the first size tried.
    pub user: Option<usize>,
    /// Bytes of local (shared) memory per block.
    pub capacity: usize,
    /// Bytes each thread needs beside the staging (reduction scratch).
    pub scratch_per_thread: usize,
    /// Threads per block at most (a block of more elements runs them in rounds).
    pub max_threads: usize,
    /// Backend, kernel and device, for the error when a user's block size does not fit.
    pub backend: &'a str,
    /// The loop's kernel.
    pub kernel: &'a str,
    /// The device's name.
    pub device: &'a str,
}

/// The block size to plan with: `OP2_PART_SIZE` (or the builder's `part_size`) when set, else the
/// backend's wish, else [`DEFAULT_BLOCK_SIZE`].
pub fn block_size(config: &op2_core::Config, backend_wish: Option<usize>) -> usize {
    config
        .part_size
        .or(backend_wish)
        .unwrap_or(DEFAULT_BLOCK_SIZE)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn user_block_size_wins_over_the_backend() {
        let mut c = op2_core::Config::default();
        assert_eq!(block_size(&c, None), DEFAULT_BLOCK_SIZE);
        assert_eq!(block_size(&c, Some(64)), 64);
        c.part_size = Some(32);
        assert_eq!(block_size(&c, Some(64)), 32);
    }
}
