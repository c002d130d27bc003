//! The plan cache: a loop in a time-stepping loop plans once.

use crate::build::{MapAccess, Plan, PlanArg, PlanRequest, build_plan};
use op2_core::{Access, Op2Error, Result};
use std::collections::HashMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// Block size when neither the user (`OP2_PART_SIZE`) nor the backend asks for one.
pub const DEFAULT_BLOCK_SIZE: usize = 256;

/// What makes two requests plan alike: the set, the range, the block size and, per indirect arg, its
/// map, entries and access, the data's position among the loop's data (so args sharing data share
/// staging whatever the data is), and its value size.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
struct PlanKey {
    set: u64,
    end: usize,
    block_size: usize,
    args: Vec<(u64, MapAccess, Access, usize, usize)>,
}

/// Cache counters.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct PlannerStats {
    /// Plans built.
    pub built: u64,
    /// Requests answered from the cache.
    pub reused: u64,
}

/// Builds plans and caches them.
#[derive(Default)]
pub struct Planner {
    cache: Mutex<HashMap<PlanKey, Arc<Plan>>>,
    built: AtomicU64,
    reused: AtomicU64,
}

impl Planner {
    /// An empty planner.
    pub fn new() -> Self {
        Self::default()
    }

    /// The plan for `req`, from the cache when an equivalent request was planned before.
    pub fn plan(&self, req: &PlanRequest<'_>) -> Result<Arc<Plan>> {
        let mut data_ids: Vec<u64> = Vec::new();
        let args = req
            .args
            .iter()
            .filter_map(|a| {
                let m = a.map.as_ref()?;
                let class = data_ids
                    .iter()
                    .position(|&d| d == a.data)
                    .unwrap_or_else(|| {
                        data_ids.push(a.data);
                        data_ids.len() - 1
                    });
                Some((m.id, a.entries, a.access, class, a.dim * a.elem_bytes))
            })
            .collect();
        let key = PlanKey {
            set: req.set,
            end: req.end,
            block_size: req.block_size,
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
        end: usize,
        args: &[PlanArg<'_>],
        fit: &LocalMemoryFit<'_>,
    ) -> Result<Arc<Plan>> {
        let mut block_size = fit.user.unwrap_or(fit.preferred).max(1);
        loop {
            let plan = self.plan(&PlanRequest {
                set,
                end,
                block_size,
                args,
            })?;
            let needed = plan.stats.max_staging_bytes
                + fit.scratch_per_thread * block_size.min(fit.max_threads);
            if needed <= fit.capacity {
                return Ok(plan);
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

    /// Plans built and reused so far.
    pub fn stats(&self) -> PlannerStats {
        PlannerStats {
            built: self.built.load(Ordering::Relaxed),
            reused: self.reused.load(Ordering::Relaxed),
        }
    }
}

/// What a device block must fit in, for [`Planner::plan_to_fit`].
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
