//! An assembly plan's data: where each entry of each element block goes among a matrix's
//! stored values, and each thread's share of the adding pass. `assembly.rs` builds and applies
//! plans; a matrix keeps them by loop shape.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Where each entry of each element block goes: `slot[element * block + local]` is its position
/// among the matrix's stored values (`u32::MAX`: a row this process does not own).
pub(crate) struct AssemblyPlan {
    pub(crate) slot: Vec<u32>,
    /// Block entries dropped at extruded boundaries (their slots are `u32::MAX`).
    pub(crate) dropped: Vec<usize>,
    pub(crate) nnz: usize,
    /// Per thread count: each thread's share of the matrix entries and the block entries that
    /// can reach them (see [`AssemblyPlan::shares`]).
    pub(crate) shares: Mutex<HashMap<usize, Arc<Vec<Share>>>>,
}

/// One thread's part of an assembly: it owns matrix entries `entries` and scans block entries
/// `blocks` (the first to the last that lands in its entries).
#[derive(Debug, Clone)]
pub(crate) struct Share {
    pub(crate) entries: std::ops::Range<usize>,
    pub(crate) blocks: std::ops::Range<usize>,
}
