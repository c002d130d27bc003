//! Per-kernel loop timings, like OP2's `op_timing_output`: calls, seconds and the bytes each loop
//! moves by OP2's convention.

use crate::carrier::{Carrier, CarrierKind};
use crate::map::Map;
use crate::signature::{ArgKind, LoopSignature};
use std::sync::Arc;

/// Time spent in one kernel's loops, like OP2's `op_timing_output`.
#[derive(Debug, Clone, PartialEq)]
pub struct LoopTiming {
    /// The kernel's name.
    pub kernel: String,
    /// Loops run.
    pub calls: u64,
    /// Seconds spent running them (the backend's run, data locking included).
    pub seconds: f64,
    /// Bytes moved, by OP2's convention: each Dat once per loop (its iterated rows when direct; when
    /// indirect its whole set, or the rows its map entries can reach if fewer), twice when it is both
    /// read and written; each map's rows once.
    pub bytes: u64,
}

impl LoopTiming {
    /// Achieved bandwidth in GB/s (10^9 bytes per second).
    pub fn gb_per_s(&self) -> f64 {
        if self.seconds > 0.0 {
            self.bytes as f64 / self.seconds / 1e9
        } else {
            0.0
        }
    }
}

/// The bytes a loop moves by OP2's convention (see [`LoopTiming::bytes`]).
pub(crate) fn loop_bytes(
    sig: &LoopSignature,
    carriers: &[Arc<Carrier>],
    maps: &[Map],
    rows: usize,
) -> u64 {
    // Per Dat: (id, reads, writes, rows reached directly, map entries reached, its set's size).
    let mut seen: Vec<(u64, bool, bool, usize, usize, usize)> = Vec::new();
    for (a, c) in sig.args.iter().zip(carriers) {
        let CarrierKind::Dat(set) = c.kind() else {
            continue;
        };
        let (direct, entries) = match a.kind {
            ArgKind::Direct => (rows, 0),
            ArgKind::Indirect { .. } => (0, rows),
            ArgKind::Row { arity, .. } => (0, rows * arity),
            ArgKind::Global => (0, 0),
        };
        match seen.iter_mut().find(|s| s.0 == c.id) {
            Some(s) => {
                s.1 |= a.access.reads();
                s.2 |= a.access.writes();
                s.3 = s.3.max(direct);
                s.4 += entries;
            }
            None => seen.push((
                c.id,
                a.access.reads(),
                a.access.writes(),
                direct,
                entries,
                set.size(),
            )),
        }
    }
    let dats: u64 = seen
        .iter()
        .map(|&(id, r, w, direct, entries, size)| {
            let c = carriers
                .iter()
                .find(|c| c.id == id)
                .expect("seen from carriers");
            let n = direct.max(entries.min(size));
            let b = (n * c.dim() * c.dtype().size()) as u64;
            if r && w { 2 * b } else { b }
        })
        .sum();
    let map_bytes: u64 = maps.iter().map(|m| (rows * m.arity() * 4) as u64).sum();
    dats + map_bytes
}

/// Adds a run of kernel `kernel` to `timings` (in order of first run): `seconds` spent, `calls`
/// loops completed, `bytes` moved.
pub(crate) fn record(
    timings: &mut Vec<LoopTiming>,
    kernel: &str,
    seconds: f64,
    calls: u64,
    bytes: u64,
) {
    match timings.iter_mut().find(|t| t.kernel == kernel) {
        Some(t) => {
            t.calls += calls;
            t.seconds += seconds;
            t.bytes += bytes;
        }
        None => timings.push(LoopTiming {
            kernel: kernel.to_string(),
            calls,
            seconds,
            bytes,
        }),
    }
}
