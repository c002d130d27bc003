//! Temporary Dats as graph nodes (seed 002's malloc and free closures): a temporary gets its
//! memory when its `malloc` node runs and gives it back to a pool when its `free` node runs, so
//! the next temporary of that size reuses it instead of allocating. On device backends the
//! device holds a temporary's data (its host copy is given back after each loop), so the pool
//! sees nothing to keep: only host backends reuse memory. This module holds the pool (below the
//! hub); `run` declares and releases temporaries and runs their nodes.

mod run;

use crate::model::dtype::{DType, HostBuffer};
use std::collections::HashMap;

/// How many released buffers of one size the pool keeps.
const KEPT_PER_SIZE: usize = 4;

/// Released temporaries' memory, by element type and length.
#[derive(Default)]
pub(crate) struct Pool {
    buffers: HashMap<(DType, usize), Vec<HostBuffer>>,
}

impl Pool {
    /// Bytes the pool holds.
    pub(crate) fn held_bytes(&self) -> u64 {
        self.buffers
            .values()
            .flatten()
            .map(|b| b.held_bytes() as u64)
            .sum()
    }
}
