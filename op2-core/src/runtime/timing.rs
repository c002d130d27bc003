//! Per-kernel loop timings, like OP2's `op_timing_output`: calls, seconds and the bytes each loop
//! moves by OP2's convention, with the halo exchanges and cross-rank reductions each loop started
//! (per loop here, per Dat in [`HaloTraffic`] rows the runtime keeps beside them).

use crate::model::carrier::{Carrier, CarrierKind};
use crate::model::map::Map;
use crate::model::signature::{ArgKind, LoopSignature};
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
    /// The halo exchanges this kernel's loops started (before reading halos through maps).
    pub halo: HaloTraffic,
    /// Cross-rank reductions started by this kernel's loops: one per loop with Globals to reduce,
    /// all of them in one message whatever their types and operations.
    pub reductions: u64,
    /// Seconds spent waiting for those reductions to finish.
    pub reduction_wait_seconds: f64,
}

/// Halo exchange traffic on this rank: of one Dat, or started by one kernel's loops.
#[derive(Debug, Clone, Copy, PartialEq, Default)]
pub struct HaloTraffic {
    /// Exchanges of one Dat each (one per Dat per loop that needed its halo).
    pub exchanges: u64,
    /// Messages this rank sent (one per neighbour per exchange; it receives as many).
    pub messages: u64,
    /// Bytes this rank sent (the owned rows its neighbours hold as halo).
    pub bytes: u64,
    /// Seconds this rank waited for messages to arrive after the core elements ran: the part of
    /// the exchange computation did not hide.
    pub wait_seconds: f64,
}

impl HaloTraffic {
    /// Adds `other` to these counts.
    pub fn add(&mut self, other: &HaloTraffic) {
        self.exchanges += other.exchanges;
        self.messages += other.messages;
        self.bytes += other.bytes;
        self.wait_seconds += other.wait_seconds;
    }
}

/// One Dat's halo traffic so far, as [`crate::Runtime::halo_traffic`] reports it.
#[derive(Debug, Clone, PartialEq)]
pub struct DatTraffic {
    /// The Dat's id.
    pub dat: u64,
    /// The Dat's name.
    pub name: String,
    /// Its exchanges.
    pub traffic: HaloTraffic,
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

/// Kernel `kernel`'s row of `timings`, added (in order of first use) when it has none.
pub(crate) fn entry<'a>(timings: &'a mut Vec<LoopTiming>, kernel: &str) -> &'a mut LoopTiming {
    match timings.iter().position(|t| t.kernel == kernel) {
        Some(i) => &mut timings[i],
        None => {
            timings.push(LoopTiming {
                kernel: kernel.to_string(),
                calls: 0,
                seconds: 0.0,
                bytes: 0,
                halo: HaloTraffic::default(),
                reductions: 0,
                reduction_wait_seconds: 0.0,
            });
            timings.last_mut().expect("just pushed")
        }
    }
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
    let t = entry(timings, kernel);
    t.calls += calls;
    t.seconds += seconds;
    t.bytes += bytes;
}

/// Adds `traffic` to Dat `dat`'s row of `rows` (in order of first exchange).
pub(crate) fn record_dat(rows: &mut Vec<DatTraffic>, dat: u64, name: &str, traffic: &HaloTraffic) {
    match rows.iter_mut().find(|r| r.dat == dat) {
        Some(r) => r.traffic.add(traffic),
        None => rows.push(DatTraffic {
            dat,
            name: name.to_string(),
            traffic: *traffic,
        }),
    }
}
