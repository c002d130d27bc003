//! Criterion benchmarks of the OpenMP backend on Airfoil's standard 720,000-cell mesh: Airfoil's
//! `res_calc` (an indirect INC edge loop) and `update` (a direct loop with Global reductions),
//! on `seq`, `openmp` with 1 thread and with 2 threads, side by side in one run; then the edge loop
//! on 2 threads over block sizes 256..16384 (how [`op2::backend_openmp::OPENMP_MAX_BLOCK_SIZE`] was chosen).

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use op2::{Dat, Global, INC, Kernel, MAX, Map, READ, RW, Runtime, Set, WRITE};
use std::time::Duration;

/// Airfoil's mesh: the standard I = 400, J = 600 under `cargo bench`; a small one when `cargo test
/// --all-targets` runs each benchmark once as a smoke test (criterion passes `--bench` only to real
/// runs).
fn dims() -> (usize, usize) {
    if std::env::args().any(|a| a == "--bench") {
        airfoil::STANDARD_IJ
    } else {
        (10, 10)
    }
}

/// Airfoil's own kernels: the edge loop is its `res_calc`, the direct loop its `update`.
use airfoil::solver::{RES_CALC, UPDATE};

/// The mesh and data of one runtime.
struct Mesh {
    cells: Set,
    edges: Set,
    e2n: Map,
    e2c: Map,
    x: Dat<f64>,
    q: Dat<f64>,
    qold: Dat<f64>,
    adt: Dat<f64>,
    res: Dat<f64>,
    rms: Global<f64>,
    maxerr: Global<f64>,
}

fn mesh(rt: &Runtime) -> Mesh {
    let (ni, nj) = dims();
    let m = airfoil::Mesh::generate(ni, nj);
    let nodes = rt.decl_set(m.nnode(), "nodes").unwrap();
    let cells = rt.decl_set(m.ncell(), "cells").unwrap();
    let edges = rt.decl_set(m.nedge(), "edges").unwrap();
    let e2n = rt
        .decl_map(&edges, &nodes, 2, m.edge.clone(), "e2n")
        .unwrap();
    let e2c = rt
        .decl_map(&edges, &cells, 2, m.ecell.clone(), "e2c")
        .unwrap();
    // A varied flow state, so that no loop sees only identical values.
    let ncell = m.ncell();
    let q: Vec<f64> = (0..ncell)
        .flat_map(|c| [1.0 + 0.01 * (c % 7) as f64, 0.4, 0.01 * (c % 3) as f64, 2.5])
        .collect();
    let adt: Vec<f64> = (0..ncell).map(|c| 1.0 + (c % 5) as f64).collect();
    rt.decl_const(1, &[0.4f64], "gm1").unwrap();
    rt.decl_const(1, &[0.05f64], "eps").unwrap();
    Mesh {
        x: rt.decl_dat(&nodes, 2, &m.x, "x").unwrap(),
        q: rt.decl_dat(&cells, 4, &q, "q").unwrap(),
        qold: rt.decl_dat(&cells, 4, &q, "qold").unwrap(),
        adt: rt.decl_dat(&cells, 1, &adt, "adt").unwrap(),
        res: rt.decl_dat_zeros(&cells, 4, "res").unwrap(),
        rms: rt.decl_global(1, &[0.0], "rms").unwrap(),
        maxerr: rt.decl_global(1, &[0.0], "maxerr").unwrap(),
        cells,
        edges,
        e2n,
        e2c,
    }
}

fn res_calc(rt: &Runtime, m: &Mesh, k: &Kernel) {
    rt.par_loop(
        k,
        &m.edges,
        [
            m.x.arg_via(&m.e2n, 0, READ),
            m.x.arg_via(&m.e2n, 1, READ),
            m.q.arg_via(&m.e2c, 0, READ),
            m.q.arg_via(&m.e2c, 1, READ),
            m.adt.arg_via(&m.e2c, 0, READ),
            m.adt.arg_via(&m.e2c, 1, READ),
            m.res.arg_via(&m.e2c, 0, INC),
            m.res.arg_via(&m.e2c, 1, INC),
        ],
    )
    .unwrap();
}

fn update(rt: &Runtime, m: &Mesh, k: &Kernel) {
    rt.par_loop(
        k,
        &m.cells,
        [
            m.qold.arg(READ),
            m.q.arg(WRITE),
            m.res.arg(RW),
            m.adt.arg(READ),
            m.rms.arg(INC),
            m.maxerr.arg(MAX),
        ],
    )
    .unwrap();
}

/// `update` in plain Rust, the cells split into `threads` contiguous ranges; returns the rms sum
/// and the largest squared change.
fn plain_update(
    threads: usize,
    qold: &[f64],
    q: &mut [f64],
    res: &mut [f64],
    adt: &[f64],
) -> (f64, f64) {
    let chunk = adt.len().div_ceil(threads);
    std::thread::scope(|s| {
        let parts: Vec<_> = q
            .chunks_mut(4 * chunk)
            .zip(res.chunks_mut(4 * chunk))
            .zip(qold.chunks(4 * chunk).zip(adt.chunks(chunk)))
            .map(|((q, res), (qold, adt))| {
                s.spawn(move || {
                    let (mut rms, mut max) = (0.0, 0.0f64);
                    for (c, a) in adt.iter().enumerate() {
                        let adti = 1.0 / a;
                        for n in 4 * c..4 * c + 4 {
                            let del = adti * res[n];
                            q[n] = qold[n] - del;
                            res[n] = 0.0;
                            rms += del * del;
                            if del * del > max {
                                max = del * del;
                            }
                        }
                    }
                    (rms, max)
                })
            })
            .collect();
        parts
            .into_iter()
            .map(|p| p.join().unwrap())
            .fold((0.0, 0.0f64), |(r, m), (pr, pm)| (r + pr, m.max(pm)))
    })
}

fn runtime(backend: &str, threads: usize, part: Option<usize>) -> Runtime {
    let mut b = op2::builder()
        .backend(backend)
        .lazy(false)
        .num_threads(threads);
    if let Some(p) = part {
        b = b.part_size(p);
    }
    b.build().expect("runtime")
}

fn backends(c: &mut Criterion) {
    let res_k = Kernel::new("res_calc", RES_CALC).unwrap();
    let upd_k = Kernel::new("update", UPDATE).unwrap();
    let configs = [("seq", 1), ("openmp", 1), ("openmp", 2)];
    // Default block sizes: the `OP2_PART_SIZE` of the environment would skew the comparison.
    // SAFETY: no other thread reads the environment while the benchmark sets up.
    unsafe { std::env::remove_var("OP2_PART_SIZE") };
    let runs: Vec<(String, Runtime, Mesh)> = configs
        .iter()
        .map(|&(b, t)| {
            let rt = runtime(b, t, None);
            let m = mesh(&rt);
            // Compile and plan before measuring.
            res_calc(&rt, &m, &res_k);
            update(&rt, &m, &upd_k);
            (format!("{b}_{t}t"), rt, m)
        })
        .collect();
    let mut g = c.benchmark_group("indirect_inc_edges_720k_cells");
    for (name, rt, m) in &runs {
        g.bench_function(name.as_str(), |b| b.iter(|| res_calc(rt, m, &res_k)));
    }
    g.finish();
    let mut g = c.benchmark_group("direct_update_720k_cells");
    for (name, rt, m) in &runs {
        g.bench_function(name.as_str(), |b| b.iter(|| update(rt, m, &upd_k)));
    }
    // The hardware's ceiling: the same update hand-written in Rust on 1 and 2 threads.
    let m = &runs[0].2;
    let (qold, adt) = (m.qold.to_vec().unwrap(), m.adt.to_vec().unwrap());
    let (mut q, mut res) = (m.q.to_vec().unwrap(), m.res.to_vec().unwrap());
    for threads in [1, 2] {
        g.bench_function(format!("plain_rust_{threads}t"), |b| {
            b.iter(|| black_box(plain_update(threads, &qold, &mut q, &mut res, &adt)))
        });
    }
    g.finish();
}

fn block_sizes(c: &mut Criterion) {
    let res_k = Kernel::new("res_calc", RES_CALC).unwrap();
    let mut g = c.benchmark_group("block_size_indirect_inc_2t");
    for part in [256, 1024, 4096, 8192, 16384] {
        let rt = runtime("openmp", 2, Some(part));
        let m = mesh(&rt);
        res_calc(&rt, &m, &res_k);
        g.bench_function(part.to_string(), |b| b.iter(|| res_calc(&rt, &m, &res_k)));
    }
    g.finish();
}

mod harness {
    //! Criterion's generated entry points (its macros emit undocumented items).
    #![allow(missing_docs)]
    use super::*;
    criterion_group! {
        name = benches;
        config = Criterion::default()
            .sample_size(20)
            .warm_up_time(Duration::from_secs(1))
            .measurement_time(Duration::from_secs(4));
        targets = backends, block_sizes
    }
}
criterion_main!(harness::benches);
