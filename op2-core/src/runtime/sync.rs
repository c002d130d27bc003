//! The runtime's smallest shared pieces: ids for everything it declares, and locks that survive a
//! panic elsewhere (the state they guard is bookkeeping that stays usable).

use crate::model::carrier::{Carrier, LoopLock};
use crate::model::error::Result;
use std::ffi::c_void;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

static NEXT_ID: AtomicU64 = AtomicU64::new(1);

/// A new id, unique in this process (runtimes, sets, maps, data, loops).
pub(crate) fn next_id() -> u64 {
    NEXT_ID.fetch_add(1, Ordering::Relaxed)
}

/// Locks `m`, keeping going with its data if a thread panicked while holding it.
pub(crate) fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    // A panic while holding the lock leaves plain bookkeeping behind; keep going with it.
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// Locks each carrier of `uses` (a carrier, and whether that use writes it) once, in order of
/// first use: for writing where any of its uses writes, shared otherwise.
pub(crate) fn lock_once<'a>(
    uses: &[(&'a Arc<Carrier>, bool)],
    kernel: &str,
) -> Result<Vec<(u64, LoopLock<'a>)>> {
    let mut locked = Vec::with_capacity(uses.len());
    for (c, _) in uses {
        if !locked.iter().any(|(id, _)| *id == c.id) {
            let writes = uses.iter().any(|(d, w)| d.id == c.id && *w);
            locked.push((c.id, c.lock_for_loop(kernel, writes)?));
        }
    }
    Ok(locked)
}

/// The data pointer of carrier `id` among those [`lock_once`] locked.
pub(crate) fn locked_pointer(locked: &mut [(u64, LoopLock<'_>)], id: u64) -> *mut c_void {
    let (_, guard) = locked
        .iter_mut()
        .find(|(i, _)| *i == id)
        .expect("every carrier was locked together");
    guard.pointer()
}
