//! A writer of HDF5 files killed at random moments (50 times): the file is always the old or the
//! new complete one, readable, never a half-written file HDF5 cannot open.

use op2_hdf5::H5File;
use std::path::PathBuf;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

const ROWS: usize = 200_000;

fn values(state: usize) -> Vec<f64> {
    (0..2 * ROWS).map(|i| (i + state) as f64).collect()
}

/// Writes one state of the file: a set and a Dat whose values say which state it is.
fn write(path: &std::path::Path, state: usize) {
    let f = H5File::create(path).unwrap();
    f.write_set("cells", ROWS).unwrap();
    f.write_dat_values("q", 2, &values(state)).unwrap();
    f.close().unwrap();
}

/// The child side: with `OP2_HDF5_CHILD=<file>`, writes it over and over, alternating states.
#[test]
fn hdf5_writer_child() {
    let Some(path) = std::env::var_os("OP2_HDF5_CHILD").map(PathBuf::from) else {
        return;
    };
    for round in 0.. {
        if round == 1 {
            // Ready: from now on the child spends its time writing.
            println!("ready");
        }
        write(&path, round % 2);
    }
}

#[test]
fn killed_hdf5_writers_leave_the_old_or_the_new_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("flow.h5");
    let started = Instant::now();
    write(&path, 1);
    let one = started.elapsed().as_micros() as u64;
    let mut dice = op2_test_support::Dice::new(0x9e37_79b9_7f4a_7c15);
    let mut torn = 0;
    for _ in 0..50 {
        let pause = dice.below(3 * one.max(1));
        let mut c = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "crashes::hdf5_writer_child",
                "--nocapture",
                "--test-threads",
                "1",
            ])
            .env("OP2_HDF5_CHILD", &path)
            .stdout(Stdio::piped())
            .stderr(Stdio::null())
            .spawn()
            .unwrap();
        // After the child's first write: the kills land among its writes however long it took
        // to start on a busy machine.
        op2_test_support::wait_for_line(&mut c, "ready");
        std::thread::sleep(Duration::from_micros(pause));
        c.kill().unwrap();
        c.wait().unwrap();
        torn += usize::from(!op2_atomic_write::leftover_temporaries(&path).is_empty());
        let f = H5File::open(&path).expect("the file opens after every kill");
        assert_eq!(f.set_size("cells").unwrap(), ROWS);
        let q = f.values::<f64>("q", ROWS, 2).unwrap();
        assert!(q == values(0) || q == values(1), "a mix of two states");
    }
    eprintln!("hdf5: 50 kills, {torn} during a write");
    assert!(
        torn > 0,
        "no kill landed during a write: the test proves nothing"
    );
}
