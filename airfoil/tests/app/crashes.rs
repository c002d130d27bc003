//! Crash safety: Airfoil killed with SIGKILL at random moments (during checkpoint writes too)
//! and restarted until it finishes ends exactly as an uninterrupted run; and every whole-file
//! writer Airfoil uses (VTK, PNG, the mesh text file), killed at random moments, leaves the old
//! or the new complete file.

use airfoil::{Airfoil, Constants, Mesh};
use op2_test_support::Dice;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ITERATIONS: usize = 240;
const IJ: (usize, usize) = (120, 60);

/// Runs Airfoil on the small mesh; with a checkpoint file, checkpointing every 2 iterations and
/// restarting from it when present. Every iteration's residual and the final `q`.
fn airfoil_run(checkpoint: Option<&Path>) -> (Vec<f64>, Vec<f64>) {
    let mut b = op2::builder().backend("seq");
    if let Some(p) = checkpoint {
        b = b
            .checkpoint(p)
            .checkpoint_every(op2::CheckpointEvery::Kernel {
                kernel: "save_soln".into(),
                every: 2,
            });
    }
    let rt = b.build().unwrap();
    let a = Airfoil::new(&rt, &Mesh::generate(IJ.0, IJ.1), &Constants::default()).unwrap();
    let residuals = (0..ITERATIONS).map(|_| a.step().unwrap()).collect();
    (residuals, a.q().unwrap())
}

fn to_bytes(v: &[f64]) -> Vec<u8> {
    v.iter().flat_map(|x| x.to_le_bytes()).collect()
}

/// The child side: with `AIRFOIL_CRASH_CHILD=<dir>`, runs Airfoil checkpointing into the
/// directory and writes what it computed there (atomically) when it finishes.
#[test]
fn crash_child() {
    let Some(dir) = std::env::var_os("AIRFOIL_CRASH_CHILD").map(PathBuf::from) else {
        return;
    };
    let (residuals, q) = airfoil_run(Some(&dir.join("airfoil.ckpt")));
    op2::atomic_write::write_file(dir.join("residuals"), &to_bytes(&residuals)).unwrap();
    op2::atomic_write::write_file(dir.join("q"), &to_bytes(&q)).unwrap();
}

fn child(test: &str, var: &str, dir: &Path) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(["--exact", test, "--nocapture", "--test-threads", "1"])
        .env(var, dir)
        .stdout(Stdio::null())
        .stderr(Stdio::null());
    c
}

#[test]
fn airfoil_killed_twenty_times_ends_as_the_uninterrupted_run() {
    let (want_residuals, want_q) = airfoil_run(None);
    let dir = tempfile::tempdir().unwrap();
    let ckpt = dir.path().join("airfoil.ckpt");
    // How long one whole run takes in a child, to spread the kills over.
    let scratch = tempfile::tempdir().unwrap();
    let started = Instant::now();
    let status = child(
        "crashes::crash_child",
        "AIRFOIL_CRASH_CHILD",
        scratch.path(),
    )
    .status()
    .unwrap();
    assert!(status.success());
    let whole = started.elapsed().as_micros() as u64;
    let mut dice = Dice::new(0x9e37_79b9_7f4a_7c15);
    let (mut kills, mut mid_write, mut runs) = (0, 0, 0);
    while !dir.path().join("q").exists() {
        runs += 1;
        assert!(runs < 200, "no progress after {runs} restarts");
        let before = op2::atomic_write::leftover_temporaries(&ckpt);
        let mut c = child("crashes::crash_child", "AIRFOIL_CRASH_CHILD", dir.path())
            .spawn()
            .unwrap();
        let mut killed = false;
        if kills < 20 {
            // Each run gets a random slice of at most 1/30 of the whole run's time (a few
            // checkpoints, or none): twenty cannot finish the work, so all twenty land.
            std::thread::sleep(Duration::from_micros(whole / 100 + dice.below(whole / 43)));
            if c.try_wait().unwrap().is_none() {
                c.kill().unwrap();
                kills += 1;
                killed = true;
                // A temporary file this run left: it was writing a checkpoint.
                let after = op2::atomic_write::leftover_temporaries(&ckpt);
                mid_write += usize::from(after.iter().any(|t| !before.contains(t)));
            }
        }
        let status = c.wait().unwrap();
        assert!(
            killed || status.success(),
            "a run that was not killed failed: {status}"
        );
    }
    eprintln!("{kills} kills ({mid_write} while a checkpoint was being written), {runs} runs");
    assert_eq!(kills, 20);
    let got_residuals = std::fs::read(dir.path().join("residuals")).unwrap();
    let got_q = std::fs::read(dir.path().join("q")).unwrap();
    assert!(
        got_residuals == to_bytes(&want_residuals),
        "the residuals differ"
    );
    assert!(got_q == to_bytes(&want_q), "q differs");
}

/// The child side of the writer test: with `AIRFOIL_WRITER_CHILD=<dir>`, writes the file of
/// `AIRFOIL_WRITER` over and over, alternating two states.
#[test]
fn writer_child() {
    let Some(dir) = std::env::var_os("AIRFOIL_WRITER_CHILD").map(PathBuf::from) else {
        return;
    };
    let which = std::env::var("AIRFOIL_WRITER").unwrap();
    let states = writer_states(&which);
    for round in 0.. {
        if round == 1 {
            // Ready: from now on the child spends its time writing.
            println!("ready");
        }
        let (mesh, q) = &states[round % 2];
        write_output(&which, mesh, q, &dir.join(target(&which)));
    }
}

/// The two states (mesh, flow) a writer test alternates: two flows, or for the mesh file two
/// numberings of the mesh.
fn writer_states(which: &str) -> [(Mesh, Vec<f64>); 2] {
    let c = Constants::default();
    let mesh = match which {
        "dat" => Mesh::generate(120, 60),
        _ => Mesh::generate(60, 30),
    };
    let flow = |k: f64| -> Vec<f64> {
        (0..mesh.ncell())
            .flat_map(|i| {
                let s = 1.0 + k * ((i % 17) as f64) * 1e-3;
                c.qinf.map(|v| v * s)
            })
            .collect()
    };
    let second = match which {
        "dat" => airfoil::mesh::shuffled(&mesh, 7),
        _ => mesh.clone(),
    };
    [(mesh.clone(), flow(0.0)), (second, flow(1.0))]
}

/// The file a writer writes (the VTK writer puts `.vtu` on names without it).
fn target(which: &str) -> String {
    match which {
        "vtk" => "out.vtu".into(),
        other => format!("out.{other}"),
    }
}

fn write_output(which: &str, mesh: &Mesh, q: &[f64], path: &Path) {
    let c = Constants::default();
    match which {
        "vtk" => {
            let rt = op2::builder().backend("seq").build().unwrap();
            let a = Airfoil::new(&rt, mesh, &c).unwrap();
            a.q_dat().data().unwrap().copy_from_slice(q);
            airfoil::output::write_vtk(&a, &c, path).unwrap();
        }
        #[cfg(feature = "png")]
        "png" => airfoil::picture::render_pressure(mesh, q, c.gm1, "t", path, (320, 200)).unwrap(),
        "dat" => mesh.write(path).unwrap(),
        other => panic!("unknown writer {other}"),
    }
}

#[test]
fn killed_writers_leave_the_old_or_the_new_file() {
    let mut writers = vec!["vtk", "dat"];
    if cfg!(feature = "png") {
        writers.push("png");
    }
    for which in writers {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(target(which));
        // The two complete files, written once here, timing one write (the kills are spread
        // over a child's writes).
        let states = writer_states(which);
        let started = Instant::now();
        let complete: Vec<Vec<u8>> = states
            .iter()
            .map(|(mesh, q)| {
                let p = dir.path().join(format!("reference-{}", target(which)));
                write_output(which, mesh, q, &p);
                std::fs::read(p).unwrap()
            })
            .collect();
        let write = started.elapsed() / 2;
        std::fs::write(&path, &complete[1]).unwrap();
        let mut dice = Dice::new(0x2545_f491_4f6c_dd1d ^ which.len() as u64);
        let mut torn = 0;
        for _ in 0..50 {
            let mut c = child("crashes::writer_child", "AIRFOIL_WRITER_CHILD", dir.path())
                .env("AIRFOIL_WRITER", which)
                .stdout(Stdio::piped())
                .spawn()
                .unwrap();
            // After the child's first write: the kills land among its writes however long it
            // took to start on a busy machine.
            op2_test_support::wait_for_line(&mut c, "ready");
            std::thread::sleep(Duration::from_micros(
                dice.below(3 * write.as_micros() as u64),
            ));
            c.kill().unwrap();
            c.wait().unwrap();
            let now = std::fs::read(&path).unwrap();
            assert!(
                complete.contains(&now),
                "{which}: a torn file of {} bytes",
                now.len()
            );
            torn += usize::from(!op2::atomic_write::leftover_temporaries(&path).is_empty());
        }
        eprintln!("{which}: 50 kills, {torn} during a write");
        assert!(
            torn > 0,
            "{which}: no kill landed during a write: the test proves nothing"
        );
    }
}
