//! Partitioning the Airfoil mesh over simulated ranks (threads): every partitioner keeps the
//! halo invariants on the real mesh, and METIS's halos are a small fraction of blocks'.

use airfoil::distributed::{declare, shuffled};
use airfoil::{Airfoil, Constants, Mesh, STANDARD_IJ};
use op2::mpi::{Options, PartitionReport, verify};
use op2_test_support::{on_rank_runtimes, on_ranks};
use std::time::Duration;

/// Distributes `mesh` over `ranks` thread ranks with each partitioner and verifies every rank.
fn check(mesh: &Mesh, ranks: usize) -> Vec<PartitionReport> {
    let (_, handles) = declare(mesh).unwrap();
    let mut reports = Vec::new();
    for p in handles.partitioners() {
        let got = on_ranks(ranks, Duration::from_secs(600), |_, comm| {
            let (here, _) = declare(mesh).unwrap();
            let (whole, _) = declare(mesh).unwrap();
            let d = here.distribute(&*comm, &Options::new(p)).unwrap();
            verify(&whole, &d, &*comm).unwrap();
            d.report
        });
        reports.push(got.into_iter().next().unwrap());
    }
    reports
}

#[test]
fn every_partitioner_keeps_the_invariants_on_a_small_airfoil_mesh() {
    let mesh = Mesh::generate(40, 60);
    for ranks in [2, 3] {
        check(&mesh, ranks);
    }
}

#[test]
fn metis_halos_are_a_small_fraction_of_blocks_on_a_shuffled_standard_mesh() {
    // The generated mesh is numbered ring by ring, so file-order blocks are already bands around
    // the aerofoil (a fair partition); numbered at random, blocks touch everything.
    let standard = Mesh::generate(STANDARD_IJ.0, STANDARD_IJ.1);
    let reports = check(&shuffled(&standard, 7), 4);
    let halo = |r: &PartitionReport| r.largest_halo("cells").unwrap();
    let (metis, geometric, blocks) = (&reports[0], &reports[1], &reports[2]);
    assert_eq!((metis.partitioner, blocks.partitioner), ("metis", "blocks"));
    assert!(halo(metis) * 50 < halo(blocks), "{metis:?}\n{blocks:?}");
    assert!(
        halo(geometric) * 50 < halo(blocks),
        "{geometric:?}\n{blocks:?}"
    );
    assert!(metis.edge_cut * 50 < blocks.edge_cut);
    // On the ordered mesh blocks are bands; METIS still cuts fewer edges.
    let ordered = check(&standard, 4);
    assert!(
        ordered[0].edge_cut < ordered[2].edge_cut,
        "{:?}",
        ordered[0]
    );
}

/// Airfoil's residuals and final flow on `ranks` thread ranks with the partitioner called `name`.
fn across_ranks(
    mesh: &Mesh,
    ranks: usize,
    name: &str,
    steps: usize,
    lazy: bool,
) -> (Vec<f64>, Vec<f64>) {
    let results: Vec<(Vec<f64>, Option<Vec<f64>>)> = on_rank_runtimes(
        ranks,
        || seq(lazy),
        |_, rt| {
            let (airfoil, local) =
                airfoil::distributed::partitioned(&rt, mesh, &Constants::default(), |h| {
                    Options::new(h.partitioner(name).unwrap())
                })
                .unwrap();
            let rms: Vec<f64> = (0..steps).map(|_| airfoil.step().unwrap()).collect();
            (rms, local.gather(airfoil.q_dat()).unwrap())
        },
    );
    let rms = results[0].0.clone();
    for (r, (other, q)) in results.iter().enumerate() {
        assert_eq!(*other, rms, "rank {r}'s residuals differ from rank 0's");
        assert_eq!(q.is_some(), r == 0, "gathered on rank 0 only");
    }
    (rms, results[0].1.clone().unwrap())
}

#[test]
fn airfoil_across_ranks_computes_what_one_process_computes() {
    let mesh = Mesh::generate(30, 40);
    let steps = 12;
    let rt = op2::builder().backend("seq").build().unwrap();
    let one = Airfoil::new(&rt, &mesh, &Constants::default()).unwrap();
    let rms: Vec<f64> = (0..steps).map(|_| one.step().unwrap()).collect();
    let q = one.q().unwrap();
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * a.abs().max(b.abs()).max(1e-300);
    for name in airfoil::distributed::PARTITIONERS {
        for (ranks, lazy) in [(2, true), (3, false), (4, true)] {
            let (got_rms, got_q) = across_ranks(&mesh, ranks, name, steps, lazy);
            for (i, (a, b)) in rms.iter().zip(&got_rms).enumerate() {
                assert!(close(*a, *b), "{name}, {ranks} ranks, step {i}: {a} vs {b}");
            }
            assert_eq!(got_q.len(), q.len());
            // The flux sums over each cell's edges run in another order across ranks: compared
            // against the size of the state (some components are near zero).
            let scale = q.iter().fold(0.0f64, |m, v| m.max(v.abs()));
            let worst = q
                .iter()
                .zip(&got_q)
                .map(|(a, b)| (a - b).abs() / scale)
                .fold(0.0, f64::max);
            assert!(
                worst < 1e-12,
                "{name}, {ranks} ranks: q differs by {worst:e}"
            );
        }
    }
}

#[test]
fn airfoil_exchanges_the_minimum_per_runge_kutta_stage() {
    // Per stage: q (written by the previous update) and adt (written by adt_calc) before
    // res_calc reads them through pecell, nothing more for bres_calc; the node coordinates and
    // the boundary kinds (never written) once; res (only incremented, then read directly) and
    // qold (direct) never; one cross-rank reduction per update (rms and maxerr together).
    let mesh = Mesh::generate(30, 40);
    let steps = 5u64;
    let counts: Vec<Vec<(String, u64)>> = on_rank_runtimes(
        3,
        || seq(true),
        |_, rt| {
            let (airfoil, _local) =
                airfoil::distributed::partitioned(&rt, &mesh, &Constants::default(), |h| {
                    Options::new(h.partitioner("metis").unwrap())
                })
                .unwrap();
            for _ in 0..steps {
                airfoil.step().unwrap();
            }
            rt.flush().unwrap();
            let mut counts: Vec<(String, u64)> = rt
                .halo_traffic()
                .into_iter()
                .map(|t| (t.name, t.traffic.exchanges))
                .collect();
            counts.sort();
            // In Airfoil's loop order (the timing rows come in order of first run, and the
            // scheduler starts adt_calc's sends before save_soln runs).
            let mut timings = rt.timings();
            timings.sort_by_key(|t| airfoil::LOOPS.iter().position(|l| *l == t.kernel));
            for t in &timings {
                counts.push((format!("{} reductions", t.kernel), t.reductions));
                counts.push((format!("{} exchanges", t.kernel), t.halo.exchanges));
            }
            counts
        },
    );
    let expected: Vec<(String, u64)> = [
        ("p_adt", 2 * steps),
        ("p_bound", 1),
        ("p_q", 2 * steps),
        ("p_x", 1),
        ("save_soln reductions", 0),
        ("save_soln exchanges", 0),
        ("adt_calc reductions", 0),
        ("adt_calc exchanges", 1),
        ("res_calc reductions", 0),
        ("res_calc exchanges", 4 * steps),
        ("bres_calc reductions", 0),
        ("bres_calc exchanges", 1),
        ("update reductions", 2 * steps),
        ("update exchanges", 0),
    ]
    .into_iter()
    .map(|(n, c)| (n.to_string(), c))
    .collect();
    for (rank, got) in counts.iter().enumerate() {
        assert_eq!(got, &expected, "rank {rank}");
    }
}

/// What [`exec_written`] computed and exchanged.
struct ExecWritten {
    /// w, the node sums and the edge differences, in global order.
    values: (Vec<f64>, Vec<f64>, Vec<f64>),
    /// Exchanges of w (on rank 0).
    exchanges: u64,
    /// Bytes of w sent, over all ranks.
    bytes: u64,
    /// Every rank's cell sections.
    sizes: Vec<op2::SetSizes>,
}

/// Runs `iterations` of: a loop over cells that updates a cell value `w` directly and adds it
/// into the cell's nodes (through `pcell`: the exec halo runs), then a loop over edges reading
/// `w` at both cells (through `pecell`).
fn exec_written(mesh: &Mesh, ranks: usize, iterations: usize) -> ExecWritten {
    let results: Vec<_> = on_rank_runtimes(
        ranks,
        || seq(true),
        |_, rt| {
            let (mut b, h) = declare(mesh).unwrap();
            let w0: Vec<f64> = (0..mesh.ncell()).map(|c| (c % 7) as f64).collect();
            let w = b.decl_dat(h.cells, 1, &w0, "w").unwrap();
            let acc = b
                .decl_dat(h.nodes, 1, &vec![0.0; mesh.nnode()], "acc")
                .unwrap();
            let e = b
                .decl_dat(h.edges, 1, &vec![0.0; mesh.nedge()], "e")
                .unwrap();
            let local = b
                .partition(&rt, &Options::new(h.partitioner("metis").unwrap()))
                .unwrap();
            let (cells, edges) = (local.set(h.cells), local.set(h.edges));
            let (pcell, pecell) = (local.map(h.pcell), local.map(h.pecell));
            let (w, acc, e) = (local.dat(w), local.dat(acc), local.dat(e));
            let update = op2::Kernel::new(
                "halve_and_spread",
                "void halve_and_spread(double *w, double *a, double *b, double *c, double *d) {
               *w = 0.5 * *w + 1.0; *a += *w; *b += *w; *c += *w; *d += *w; }",
            )
            .unwrap();
            let diff = op2::Kernel::new(
                "difference",
                "void difference(const double *l, const double *r, double *e) { *e = *l - *r; }",
            )
            .unwrap();
            for _ in 0..iterations {
                rt.par_loop(
                    &update,
                    &cells,
                    [
                        w.arg(op2::RW),
                        acc.arg_via(&pcell, 0, op2::INC),
                        acc.arg_via(&pcell, 1, op2::INC),
                        acc.arg_via(&pcell, 2, op2::INC),
                        acc.arg_via(&pcell, 3, op2::INC),
                    ],
                )
                .unwrap();
                rt.par_loop(
                    &diff,
                    &edges,
                    [
                        w.arg_via(&pecell, 0, op2::READ),
                        w.arg_via(&pecell, 1, op2::READ),
                        e.arg(op2::WRITE),
                    ],
                )
                .unwrap();
            }
            let gathered = (
                local.gather(&w).unwrap(),
                local.gather(&acc).unwrap(),
                local.gather(&e).unwrap(),
            );
            let t = rt
                .halo_traffic()
                .into_iter()
                .find(|t| t.name == "w")
                .map(|t| t.traffic)
                .unwrap_or_default();
            let sizes = local
                .report()
                .sets
                .iter()
                .find(|(n, _)| n == "cells")
                .unwrap()
                .1
                .clone();
            (gathered, (t.exchanges, t.bytes), sizes)
        },
    );
    let (w, acc, e) = results[0].0.clone();
    ExecWritten {
        values: (w.unwrap(), acc.unwrap(), e.unwrap()),
        exchanges: results[0].1.0,
        bytes: results.iter().map(|r| r.1.1).sum(),
        sizes: results[0].2.clone(),
    }
}

#[test]
fn a_dat_written_directly_where_the_exec_halo_runs_exchanges_only_its_non_exec_halo() {
    let mesh = Mesh::generate(24, 30);
    let iterations = 4;
    let one = exec_written(&mesh, 1, iterations).values;
    let ExecWritten {
        values: got,
        exchanges,
        bytes,
        sizes,
    } = exec_written(&mesh, 3, iterations);
    assert_eq!(got.0, one.0, "w");
    assert_eq!(got.2, one.2, "edge differences");
    for (a, b) in got.1.iter().zip(&one.1) {
        assert!((a - b).abs() <= 1e-12 * b.abs(), "node sums {a} vs {b}");
    }
    // The first update exchanges the exec halo (a new Dat's halo is out of date, and the loop
    // reads w there); from then on the update computes it, so each edge loop needs only the
    // non-exec halo: 1 + iterations exchanges, and these bytes over all ranks.
    let exec: usize = sizes.iter().map(|s| s.exec_halo).sum();
    let nonexec: usize = sizes.iter().map(|s| s.nonexec_halo).sum();
    assert!(exec > 0 && nonexec > 0, "{sizes:?}");
    assert_eq!(exchanges, 1 + iterations as u64);
    assert_eq!(bytes, 8 * (exec + iterations * nonexec) as u64);
}

#[cfg(feature = "hdf5")]
#[test]
fn ranks_reading_their_slices_of_an_hdf5_file_compute_what_one_process_computes() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("grid.h5");
    let mesh = Mesh::generate(12, 16);
    mesh.save(&path, &Constants::default()).unwrap();
    let steps = 6;
    let one = Airfoil::new(
        &op2::builder().backend("seq").build().unwrap(),
        &mesh,
        &Constants::default(),
    )
    .unwrap();
    let rms: Vec<f64> = (0..steps).map(|_| one.step().unwrap()).collect();
    for ranks in [2, 3] {
        let got = on_rank_runtimes(
            ranks,
            || seq(true),
            |_, rt| {
                let (a, _local, sizes) = airfoil::distributed::partitioned_hdf5(
                    &rt,
                    &path,
                    &Constants::default(),
                    |h| Options::new(h.partitioner("metis").unwrap()),
                )
                .unwrap();
                assert_eq!(
                    sizes,
                    [mesh.nnode(), mesh.ncell(), mesh.nedge(), mesh.nbedge()]
                );
                let r: Vec<f64> = (0..steps).map(|_| a.step().unwrap()).collect();
                // Each rank writes its piece; rank 0 the index.
                let vtk = dir.path().join(format!("flow{ranks}.pvtu"));
                airfoil::output::write_vtk(&a, &Constants::default(), &vtk).unwrap();
                let cells = a.cell_map().from().size();
                (r, cells)
            },
        );
        let total: usize = got.iter().map(|(_, c)| c).sum();
        assert_eq!(total, mesh.ncell(), "every cell owned once");
        for (r, (got, _)) in got.iter().enumerate() {
            for (a, b) in rms.iter().zip(got) {
                assert!(
                    (a - b).abs() <= 1e-12 * a.abs(),
                    "rank {r} of {ranks}: {a} vs {b}"
                );
            }
        }
        let index = std::fs::read_to_string(dir.path().join(format!("flow{ranks}.pvtu"))).unwrap();
        for r in 0..ranks {
            assert!(index.contains(&format!("flow{ranks}_{r}.vtu")), "{index}");
            assert!(dir.path().join(format!("flow{ranks}_{r}.vtu")).exists());
        }
    }
}

/// A `seq` runtime builder, lazy or eager, for the ranks.
fn seq(lazy: bool) -> op2::RuntimeBuilder {
    op2::builder().backend("seq").lazy(lazy)
}

/// Airfoil with a checkpoint every 4 iterations: `steps` of them on `ranks` thread ranks (1: one
/// process, the whole mesh), restarting from `ckpt` when it is there. Residuals and the final
/// flow in global order, and where the run restarted from.
fn checkpointed(
    mesh: &Mesh,
    ranks: usize,
    ckpt: &std::path::Path,
    steps: usize,
) -> (Vec<f64>, Vec<f64>, Option<u64>) {
    let every = op2::CheckpointEvery::Kernel {
        kernel: "save_soln".into(),
        every: 4,
    };
    let b = || seq(true).checkpoint(ckpt).checkpoint_every(every.clone());
    if ranks == 1 {
        let rt = b().build().unwrap();
        let a = Airfoil::new(&rt, mesh, &Constants::default()).unwrap();
        let rms = (0..steps).map(|_| a.step().unwrap()).collect();
        let from = rt.checkpoint_stats().unwrap().restored_from;
        return (rms, a.q().unwrap(), from);
    }
    // Per rank: residuals, the gathered flow (rank 0), where it restarted from.
    type PerRank = (Vec<f64>, Option<Vec<f64>>, Option<u64>);
    let results: Vec<PerRank> = on_rank_runtimes(ranks, b, |_, rt| {
        let (a, local) = airfoil::distributed::partitioned(&rt, mesh, &Constants::default(), |h| {
            Options::new(h.partitioner("metis").unwrap())
        })
        .unwrap();
        let rms = (0..steps).map(|_| a.step().unwrap()).collect();
        let from = rt.checkpoint_stats().unwrap().restored_from;
        (rms, local.gather(a.q_dat()).unwrap(), from)
    });
    for r in &results {
        assert_eq!(r.2, results[0].2, "every rank restarts from the same point");
    }
    let rms = results[0].0.clone();
    (rms, results[0].1.clone().unwrap(), results[0].2)
}

#[test]
fn a_checkpoint_taken_on_three_ranks_restarts_on_one_two_three_and_four() {
    let mesh = Mesh::generate(30, 40);
    let steps = 14;
    // Uninterrupted, on 3 ranks and on one process.
    let dir = tempfile::tempdir().unwrap();
    let (want_rms, want_q, from) = checkpointed(&mesh, 3, &dir.path().join("none-3"), steps);
    assert_eq!(from, None);
    let close = |a: &[f64], b: &[f64], tol: f64| {
        let scale = b.iter().fold(0.0f64, |m, v| m.max(v.abs())).max(1e-300);
        a.len() == b.len() && a.iter().zip(b).all(|(x, y)| (x - y).abs() <= tol * scale)
    };
    // Stopped after 10 iterations on 3 ranks: the last checkpoint is before iteration 9.
    let taken = dir.path().join("three.ckpt");
    checkpointed(&mesh, 3, &taken, 10);
    let bytes = std::fs::read(&taken).unwrap();
    for ranks in [1, 2, 3, 4] {
        let ckpt = dir.path().join(format!("restart-{ranks}.ckpt"));
        std::fs::write(&ckpt, &bytes).unwrap();
        let (rms, q, from) = checkpointed(&mesh, ranks, &ckpt, steps);
        // Iteration 9's save_soln is loop 8 x 9 = 72.
        assert_eq!(from, Some(72), "{ranks} ranks");
        // The replayed residuals are the 3-rank run's, bit for bit.
        assert_eq!(rms[..8], want_rms[..8], "{ranks} ranks: replayed residuals");
        if ranks == 3 {
            assert_eq!(
                rms, want_rms,
                "3 ranks: the restart is the same computation"
            );
            assert_eq!(q, want_q, "3 ranks: the restart is the same computation");
        } else {
            // Sums over cells run in another order: within rounding.
            assert!(
                close(&rms, &want_rms, 1e-10),
                "{ranks} ranks: {rms:?} vs {want_rms:?}"
            );
            assert!(close(&q, &want_q, 1e-12), "{ranks} ranks: q differs");
        }
    }
}
