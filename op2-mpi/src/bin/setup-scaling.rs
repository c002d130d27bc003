//! Measures the distributed setup: run under `mpirun -np P`, every rank generates only its own
//! slice of a quad mesh (numbered by a scrambling permutation, so a slice is scattered across the
//! domain and partitioning really moves elements), partitions it, and measures its peak memory
//! during the setup (a counting allocator for Rust's heap; the kernel's high-water mark for all
//! of the process, C libraries included) and the time taken. Rank 0 prints one line of figures:
//!
//! `setup ranks=P partitioner=NAME cells=C connectivity_bytes=B peak_max=.. peak_mean=..
//! hwm_max=.. seconds=.. edge_cut=.. largest_halo=.. owned_ok=true`
//!
//! Usage: `setup-scaling [--cells N] [--partitioner geometric|blocks|metis|ptscotch]`.
//! `cargo xtask setup-scaling` runs it at 1, 2, 4 and 8 ranks for every partitioner.

use op2_core::comm::Communicator;
use op2_mpi::{Input, MeshBuilder, Mpi, Options, Partitioner, block_range};
use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

/// The system allocator, counting the bytes live now and the most live since the last reset.
struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

// SAFETY: forwards to the system allocator unchanged; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: the caller's contract, passed on.
        unsafe { System.dealloc(ptr, layout) };
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: the caller's contract, passed on.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            if new_size > layout.size() {
                let grow = new_size - layout.size();
                let now = LIVE.fetch_add(grow, Ordering::Relaxed) + grow;
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

/// A field of `/proc/self/status` in bytes (`VmRSS`, `VmHWM`), 0 where unreadable.
fn status_bytes(field: &str) -> usize {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|s| {
            s.lines()
                .find(|l| l.starts_with(field))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|kb| kb.parse::<usize>().ok())
        })
        .map_or(0, |kb| kb * 1024)
}

/// `x -> (a x + b) mod n`, a bijection of `0..n` that scatters neighbours far apart.
struct Scramble {
    n: u64,
    a: u64,
    b: u64,
    a_inv: u64,
}

impl Scramble {
    fn new(n: u64) -> Scramble {
        let gcd = |mut x: u64, mut y: u64| {
            while y != 0 {
                (x, y) = (y, x % y);
            }
            x
        };
        let n1 = n.max(1);
        let mut a = 2_654_435_761 % n1;
        while n1 > 1 && (a == 0 || gcd(a, n1) != 1) {
            a = (a + 1) % n1;
        }
        let a = a.max(1);
        // The inverse of a mod n by the extended Euclidean algorithm.
        let (mut r0, mut r1, mut s0, mut s1) = (n1 as i128, a as i128, 0i128, 1i128);
        while r1 != 0 {
            let q = r0 / r1;
            (r0, r1) = (r1, r0 - q * r1);
            (s0, s1) = (s1, s0 - q * s1);
        }
        let a_inv = s0.rem_euclid(n1 as i128) as u64;
        Scramble {
            n: n1,
            a,
            b: n1 / 3,
            a_inv,
        }
    }

    fn to(&self, x: u64) -> u64 {
        ((self.a as u128 * x as u128 + self.b as u128) % self.n as u128) as u64
    }

    fn from(&self, y: u64) -> u64 {
        let d = (y + self.n - self.b % self.n) % self.n;
        ((self.a_inv as u128 * d as u128) % self.n as u128) as u64
    }
}

/// This rank's slice of an `nx` x `ny` quad mesh in scrambled numbering: cells to nodes, interior
/// edges to their two cells and two nodes, node coordinates and a value per cell.
struct Slice {
    builder: MeshBuilder,
    connectivity_bytes: usize,
    cells: usize,
    pecell: op2_mpi::GlobalMap,
    xy: op2_mpi::GlobalDat<f64>,
}

fn slice(nx: usize, ny: usize, ranks: usize, rank: usize) -> Slice {
    let (cells, nodes) = (nx * ny, (nx + 1) * (ny + 1));
    let horizontal = nx.saturating_sub(1) * ny;
    let edges = horizontal + nx * ny.saturating_sub(1);
    let (sc, sn, se) = (
        Scramble::new(cells as u64),
        Scramble::new(nodes as u64),
        Scramble::new(edges as u64),
    );
    let node = |i: usize, j: usize| sn.to((j * (nx + 1) + i) as u64) as i32;
    let cell = |i: usize, j: usize| sc.to((j * nx + i) as u64) as i32;
    let mut b = MeshBuilder::new(Input::Slices);
    let s_nodes = b.decl_set(nodes, "nodes").unwrap();
    let s_cells = b.decl_set(cells, "cells").unwrap();
    let s_edges = b.decl_set(edges, "edges").unwrap();

    let mut pcell = Vec::new();
    let mut value = Vec::new();
    for c in block_range(cells, ranks, rank) {
        let o = sc.from(c as u64) as usize;
        let (i, j) = (o % nx, o / nx);
        pcell.extend([
            node(i, j),
            node(i + 1, j),
            node(i + 1, j + 1),
            node(i, j + 1),
        ]);
        value.push((o % 7) as f64);
    }
    let (mut pecell, mut pedge) = (Vec::new(), Vec::new());
    for e in block_range(edges, ranks, rank) {
        let o = se.from(e as u64) as usize;
        if o < horizontal {
            let (i, j) = (o % (nx - 1), o / (nx - 1));
            pecell.extend([cell(i, j), cell(i + 1, j)]);
            pedge.extend([node(i + 1, j), node(i + 1, j + 1)]);
        } else {
            let o = o - horizontal;
            let (i, j) = (o % nx, o / nx);
            pecell.extend([cell(i, j), cell(i, j + 1)]);
            pedge.extend([node(i, j + 1), node(i + 1, j + 1)]);
        }
    }
    let mut xy = Vec::new();
    for n in block_range(nodes, ranks, rank) {
        let o = sn.from(n as u64) as usize;
        xy.extend([(o % (nx + 1)) as f64, (o / (nx + 1)) as f64]);
    }
    b.decl_map(s_cells, s_nodes, 4, pcell, "pcell").unwrap();
    let pecell = b.decl_map(s_edges, s_cells, 2, pecell, "pecell").unwrap();
    b.decl_map(s_edges, s_nodes, 2, pedge, "pedge").unwrap();
    let xy = b.decl_dat(s_nodes, 2, &xy, "xy").unwrap();
    b.decl_dat(s_cells, 1, &value, "q").unwrap();
    Slice {
        builder: b,
        connectivity_bytes: 4 * (4 * cells + 4 * edges),
        cells,
        pecell,
        xy,
    }
}

fn arg(args: &[String], name: &str) -> Option<String> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1).cloned())
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let cells: usize = arg(&args, "--cells")
        .map(|s| s.parse().expect("--cells takes a number"))
        .unwrap_or(2_000_000);
    let which = arg(&args, "--partitioner").unwrap_or_else(|| "geometric".into());
    let nx = ((cells as f64 * 1.25).sqrt().round() as usize).max(2);
    let ny = (cells / nx).max(2);

    let mpi = Mpi::init().expect("MPI starts");
    let comm = mpi.world();
    let (ranks, rank) = (comm.size(), comm.rank());

    let s = slice(nx, ny, ranks, rank);
    let partitioner = match which.as_str() {
        "geometric" => Partitioner::Geometric { coords: s.xy },
        "blocks" => Partitioner::Blocks,
        "metis" => Partitioner::Metis { map: s.pecell },
        "ptscotch" => Partitioner::PtScotch { map: s.pecell },
        other => panic!("unknown partitioner `{other}`"),
    };
    comm.barrier().unwrap();

    // The baseline: what this rank holds before the setup (its slice), and the kernel's
    // high-water mark reset to now (writing 5 to clear_refs resets VmHWM).
    let live_before = LIVE.load(Ordering::Relaxed);
    PEAK.store(live_before, Ordering::Relaxed);
    let _ = std::fs::write("/proc/self/clear_refs", "5");
    let rss_before = status_bytes("VmRSS:");
    let start = Instant::now();
    let d = s
        .builder
        .distribute(&*comm, &Options::new(partitioner))
        .unwrap_or_else(|e| panic!("rank {rank}: {e}"));
    let seconds = start.elapsed().as_secs_f64();
    let peak = PEAK.load(Ordering::Relaxed);
    let hwm = status_bytes("VmHWM:").saturating_sub(rss_before);

    // Figures of every rank on rank 0.
    let mine: Vec<f64> = vec![peak as f64, hwm as f64, seconds];
    let mut sends = vec![Vec::new(); ranks];
    sends[0] = bytemuck::cast_slice(&mine).to_vec();
    let got = comm.all_to_all_v(sends).unwrap();
    let report = &d.report;
    let owned_ok = report
        .sets
        .iter()
        .zip([
            (nx + 1) * (ny + 1),
            nx * ny,
            nx.saturating_sub(1) * ny + nx * ny.saturating_sub(1),
        ])
        .all(|((_, sizes), n)| sizes.iter().map(|z| z.core + z.owned).sum::<usize>() == n);
    if rank == 0 {
        let all: Vec<Vec<f64>> = got
            .iter()
            .map(|b| bytemuck::pod_collect_to_vec(b))
            .collect();
        let max = |k: usize| all.iter().map(|v| v[k]).fold(0.0, f64::max);
        let mean = all.iter().map(|v| v[0]).sum::<f64>() / ranks as f64;
        println!(
            "setup ranks={ranks} partitioner={which} cells={} connectivity_bytes={} peak_max={:.0} peak_mean={:.0} hwm_max={:.0} seconds={:.3} edge_cut={} largest_halo={} owned_ok={owned_ok}",
            s.cells,
            s.connectivity_bytes,
            max(0),
            mean,
            max(1),
            max(2),
            report.edge_cut,
            report.largest_halo("cells").unwrap_or(0),
        );
    }
}
