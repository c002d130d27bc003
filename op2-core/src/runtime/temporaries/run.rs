//! The temporaries subsystem's work, with the engine: malloc and free nodes run, memory taken
//! from the pool and given back to it.

use super::{KEPT_PER_SIZE, Temporaries};
use crate::model::carrier::{Carrier, CarrierKind};
use crate::model::dtype::HostBuffer;
use crate::model::error::Result;
use crate::runtime::engine::Engine;
use crate::runtime::sync::lock;
use std::sync::Arc;

/// The temporaries subsystem at work: its pool and the engine.
pub(crate) struct TemporariesWork<'a> {
    engine: &'a Engine,
    state: &'a Temporaries,
}

impl Temporaries {
    /// This subsystem working with `engine`.
    pub(crate) fn with<'a>(&'a self, engine: &'a Engine) -> TemporariesWork<'a> {
        TemporariesWork {
            engine,
            state: self,
        }
    }
}

impl TemporariesWork<'_> {
    /// Gives a temporary its memory: a released temporary's of the same size (zeroed) when the
    /// pool has one and the optimisation is on, else newly allocated zeroed memory.
    pub(crate) fn malloc_temporary(&self, c: &Arc<Carrier>) -> Result<()> {
        let mut g = c.lock_for_loop("malloc", true)?;
        let crate::model::carrier::LoopLock::Write(host) = &mut g else {
            unreachable!("a write lock")
        };
        if !host.is_released() {
            return Ok(());
        }
        let len = host.released_len();
        let reused = if self.engine.config.lazy_opts.temporaries {
            lock(&self.state.pool)
                .buffers
                .get_mut(&(host.dtype(), len))
                .and_then(Vec::pop)
        } else {
            None
        };
        let mut st = lock(&self.engine.stats);
        st.temporaries_allocated += 1;
        match reused {
            Some(mut b) => {
                b.fill_zero();
                st.temporaries_reused += 1;
                st.temporary_bytes_reused += b.held_bytes() as u64;
                **host = b;
            }
            None => host.restore(),
        }
        c.mark_host_allocated();
        Ok(())
    }

    /// Takes a released temporary's memory: into the pool with the optimisation on, else freed.
    pub(crate) fn free_temporary(&self, c: &Arc<Carrier>) -> Result<()> {
        let mut g = c.lock_for_loop("free", true)?;
        let crate::model::carrier::LoopLock::Write(host) = &mut g else {
            unreachable!("a write lock")
        };
        if host.is_released() {
            return Ok(());
        }
        let len = host.len();
        let dtype = host.dtype();
        let b = std::mem::replace(&mut **host, HostBuffer::unallocated(dtype, len));
        drop(g);
        c.mark_host_released();
        if self.engine.config.lazy_opts.temporaries && matches!(c.kind(), CarrierKind::Dat(_)) {
            let mut pool = lock(&self.state.pool);
            let kept = pool.buffers.entry((b.dtype(), len)).or_default();
            if kept.len() < KEPT_PER_SIZE {
                kept.push(b);
            }
        }
        Ok(())
    }
}
