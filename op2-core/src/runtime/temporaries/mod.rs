//! Temporary Dats as graph nodes (seed 002's malloc and free closures): a temporary gets its
//! memory when its `malloc` node runs and gives it back to a pool when its `free` node runs, so
//! the next temporary of that size reuses it instead of allocating. On device backends the
//! device holds a temporary's data (its host copy is given back after each loop), so the pool
//! sees nothing to keep: only host backends reuse memory. This module holds the pool; `run` runs the nodes, with the
//! engine. Declaring and releasing temporaries is the runtime's API (`temporary_dats`).

mod run;

use crate::model::dtype::{DType, HostBuffer};
use std::collections::HashMap;
use std::sync::Mutex;

/// How many released buffers of one size the pool keeps.
const KEPT_PER_SIZE: usize = 4;

/// The temporaries subsystem as a runtime holds it: the pool of released memory.
#[derive(Default)]
pub(crate) struct Temporaries {
    pool: Mutex<Pool>,
}

impl Temporaries {
    /// Bytes the pool holds.
    pub(crate) fn held_bytes(&self) -> u64 {
        crate::runtime::sync::lock(&self.pool).held_bytes()
    }
}

/// Released temporaries' memory, by element type and length.
#[derive(Default)]
struct Pool {
    buffers: HashMap<(DType, usize), Vec<HostBuffer>>,
}

impl Pool {
    /// Bytes the pool holds.
    fn held_bytes(&self) -> u64 {
        self.buffers
            .values()
            .flatten()
            .map(|b| b.held_bytes() as u64)
            .sum()
    }
}
