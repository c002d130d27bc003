//! Partitioning the Airfoil mesh over simulated ranks (threads): every partitioner keeps the
//! halo invariants on the real mesh, and METIS's halos are a small fraction of blocks'.

use airfoil::distributed::{declare, shuffled};
use airfoil::{Mesh, STANDARD_IJ};
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
