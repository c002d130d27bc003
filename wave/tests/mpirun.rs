//! The wave example across real MPI ranks (feature `mpi`): `mpirun -np 2` and `-np 3` run this
//! test binary's `wave_on_each_rank`, which records a step and reports its pending graph (every
//! rank must record seed 002's 17 nodes and 21 edges, as thread ranks do), then steps the wave
//! equation with the lazy graph's optimisations off and on, forcing by need (the energy's
//! Global, then a Dat read on every rank); rank 0 prints the energies, which must equal one
//! process's to rounding.
#![cfg(feature = "mpi")]

use op2::LazyOptions;
use std::process::Command;
use wave::Wave;

const CHILD: &str = "WAVE_MPIRUN_CHILD";
const N: usize = 16;
const STEPS: usize = 6;

/// The energies after each step, with optimisations `o`, on the runtime's ranks.
fn energies(rt: &op2::Runtime) -> Vec<f64> {
    let w = Wave::new(rt, N).unwrap();
    let mut out = Vec::new();
    for step in 0..STEPS {
        w.step().unwrap();
        if step % 2 == 0 {
            // A Dat read on every rank forces by need: the steps p depends on, not phi's last.
            w.p.to_vec().unwrap();
        }
        out.push(w.energy().unwrap());
    }
    out
}

#[test]
fn running_example_under_mpirun_gives_one_process_energies() {
    let one: Vec<f64> = energies(&op2::builder().backend("seq").build().unwrap());
    let exe = std::env::current_exe().unwrap();
    for ranks in [2, 3] {
        let out = Command::new("mpirun")
            .args([
                "-np",
                &ranks.to_string(),
                "--oversubscribe",
                "--timeout",
                "300",
            ])
            .arg(&exe)
            .args(["--exact", "wave_on_each_rank", "--ignored", "--nocapture"])
            .args(["--test-threads=1"])
            .env(CHILD, "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .output()
            .unwrap_or_else(|e| panic!("mpirun could not start ({e}); install openmpi-bin"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "mpirun -np {ranks}: {}\n{stdout}\n{}",
            out.status,
            String::from_utf8_lossy(&out.stderr)
        );
        for r in 0..ranks {
            assert!(
                stdout.contains(&format!("graph of rank {r}: 17 nodes, 21 edges")),
                "rank {r} of {ranks} recorded another graph:\n{stdout}"
            );
        }
        for label in ["off", "on"] {
            let tag = format!("energies {label}:");
            let line = stdout
                .lines()
                .find_map(|l| l.find(&tag).map(|at| &l[at + tag.len()..]))
                .unwrap_or_else(|| panic!("no energies {label} at {ranks} ranks:\n{stdout}"));
            let got: Vec<f64> = line
                .split_whitespace()
                .map(|v| v.parse().unwrap())
                .collect();
            assert_eq!(got.len(), one.len());
            for (a, b) in got.iter().zip(&one) {
                assert!(
                    (a - b).abs() <= 1e-12 * b.abs(),
                    "{ranks} ranks, {label}: {a} against {b}"
                );
            }
        }
    }
}

#[test]
#[ignore = "run by mpirun from running_example_under_mpirun_gives_one_process_energies"]
fn wave_on_each_rank() {
    if std::env::var_os(CHILD).is_none() {
        return;
    }
    let mpi = op2::mpi::Mpi::init().unwrap();
    {
        let rt = op2::builder()
            .backend("seq")
            .communicator(mpi.world())
            .lazy_optimisations(LazyOptions::NONE)
            .build()
            .unwrap();
        let w = Wave::new(&rt, N).unwrap();
        w.step().unwrap();
        let g = rt.pending_graph();
        println!(
            "graph of rank {}: {} nodes, {} edges",
            rt.communicator().rank(),
            g.nodes.len(),
            g.edges.len()
        );
        rt.flush().unwrap();
    }
    for (label, o) in [("off", LazyOptions::NONE), ("on", LazyOptions::ALL)] {
        let rt = op2::builder()
            .backend("seq")
            .communicator(mpi.world())
            .lazy_optimisations(o)
            .build()
            .unwrap();
        let e = energies(&rt);
        if rt.communicator().rank() == 0 {
            let list: Vec<String> = e.iter().map(|v| format!("{v:e}")).collect();
            println!("energies {label}: {}", list.join(" "));
        }
    }
}
