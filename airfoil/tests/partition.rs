//! Partitioning the Airfoil mesh over simulated ranks (threads): every partitioner keeps the
//! halo invariants on the real mesh, and METIS's halos are a small fraction of blocks'.

use airfoil::distributed::{declare, shuffled};
use airfoil::{Airfoil, Constants, Mesh, STANDARD_IJ};
use op2::comm::Communicator;
use op2::mpi::{Options, PartitionReport, verify};
use std::sync::Arc;
use std::time::Duration;

/// Distributes `mesh` over `ranks` thread ranks with each partitioner and verifies every rank.
fn check(mesh: &Mesh, ranks: usize) -> Vec<PartitionReport> {
    let (_, handles) = declare(mesh).unwrap();
    let mut reports = Vec::new();
    for p in handles.partitioners() {
        let comms = op2::thread_communicators(ranks, Duration::from_secs(600));
        let got: Vec<PartitionReport> = std::thread::scope(|s| {
            let hs: Vec<_> = comms
                .into_iter()
                .map(|c| {
                    s.spawn(move || {
                        let comm: Arc<dyn Communicator> = Arc::new(c);
                        let (here, _) = declare(mesh).unwrap();
                        let (whole, _) = declare(mesh).unwrap();
                        let d = here.distribute(&*comm, &Options::new(p)).unwrap();
                        verify(&whole, &d, &*comm).unwrap();
                        d.report
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
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
    let comms = op2::thread_communicators(ranks, Duration::from_secs(60));
    let results: Vec<(Vec<f64>, Option<Vec<f64>>)> = std::thread::scope(|s| {
        let hs: Vec<_> = comms
            .into_iter()
            .map(|c| {
                s.spawn(move || {
                    let rt = op2::builder()
                        .backend("seq")
                        .lazy(lazy)
                        .communicator(Arc::new(c))
                        .build()
                        .unwrap();
                    let (airfoil, local) =
                        airfoil::distributed::partitioned(&rt, mesh, &Constants::default(), |h| {
                            Options::new(h.partitioner(name).unwrap())
                        })
                        .unwrap();
                    let rms: Vec<f64> = (0..steps).map(|_| airfoil.step().unwrap()).collect();
                    (rms, local.gather(airfoil.q_dat()).unwrap())
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
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
    let comms = op2::thread_communicators(3, Duration::from_secs(60));
    let counts: Vec<Vec<(String, u64)>> = std::thread::scope(|s| {
        let hs: Vec<_> = comms
            .into_iter()
            .map(|c| {
                let mesh = &mesh;
                s.spawn(move || {
                    let rt = op2::builder()
                        .backend("seq")
                        .communicator(Arc::new(c))
                        .build()
                        .unwrap();
                    let (airfoil, _local) =
                        airfoil::distributed::partitioned(&rt, mesh, &Constants::default(), |h| {
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
                    let timings = rt.timings();
                    for t in &timings {
                        counts.push((format!("{} reductions", t.kernel), t.reductions));
                        counts.push((format!("{} exchanges", t.kernel), t.halo.exchanges));
                    }
                    counts
                })
            })
            .collect();
        hs.into_iter().map(|h| h.join().unwrap()).collect()
    });
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
