//! Tests of the atomic writes: replacing, failing without touching the target, a size limit
//! (a full disk) and a writer killed at random moments.

use super::*;
use std::process::{Command, Stdio};
use std::time::Duration;

#[test]
fn writes_and_replaces_without_leftovers() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("out.vtu");
    write_file(&target, b"first").unwrap();
    assert_eq!(fs::read(&target).unwrap(), b"first");
    write_with(&target, |w| w.write_all(b"second, longer")).unwrap();
    assert_eq!(fs::read(&target).unwrap(), b"second, longer");
    let n = replace_with(&target, |tmp| -> Result<usize, WriteError> {
        assert_eq!(
            tmp.extension().unwrap(),
            "vtu",
            "the temporary keeps the extension"
        );
        assert_eq!(tmp.parent(), target.parent(), "and lives beside the target");
        fs::write(tmp, b"third").unwrap();
        Ok(3)
    })
    .unwrap();
    assert_eq!(n, 3);
    assert_eq!(fs::read(&target).unwrap(), b"third");
    assert!(leftover_temporaries(&target).is_empty());
    // A bare file name writes in the current directory's terms.
    assert_eq!(directory_of(Path::new("x.dat")), PathBuf::from("."));
}

#[test]
fn a_failing_writer_leaves_the_previous_file() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("mesh.dat");
    write_file(&target, b"old").unwrap();
    let e = write_with(&target, |w| {
        w.write_all(&[7u8; 3 << 20])?;
        Err(io::Error::other("the encoder gave up"))
    })
    .unwrap_err();
    assert_eq!(e.path(), target);
    assert!(
        e.to_string().contains("mesh.dat") && e.to_string().contains("gave up"),
        "{e}"
    );
    assert_eq!(fs::read(&target).unwrap(), b"old");
    assert!(leftover_temporaries(&target).is_empty());

    #[derive(Debug)]
    struct Mine(#[allow(dead_code)] Option<WriteError>);
    impl From<WriteError> for Mine {
        fn from(e: WriteError) -> Self {
            Mine(Some(e))
        }
    }
    let r: Result<(), Mine> = replace_with(&target, |tmp| {
        fs::write(tmp, b"half").unwrap();
        Err(Mine(None))
    });
    assert!(matches!(r, Err(Mine(None))));
    assert_eq!(fs::read(&target).unwrap(), b"old");
    assert!(leftover_temporaries(&target).is_empty());
}

#[test]
fn bad_targets_are_typed_errors() {
    let dir = tempfile::tempdir().unwrap();
    let e = write_file(dir.path(), b"x").unwrap_err();
    assert!(matches!(e, WriteError::NotAFile { .. }), "{e}");
    let e = write_file(dir.path().join("no/such/dir/f.png"), b"x").unwrap_err();
    match &e {
        WriteError::Io { step, source, path } => {
            assert_eq!(*step, "creating a temporary file");
            assert_eq!(source.kind(), io::ErrorKind::NotFound);
            assert!(path.ends_with("no/such/dir/f.png"));
        }
        other => panic!("{other}"),
    }
    assert!(e.to_string().contains("f.png"), "{e}");
}

#[test]
fn temporaries_of_dead_processes_are_swept() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("q.h5");
    let mut stale = temp_prefix(target.file_name().unwrap());
    // No process has this pid (above the kernel's maximum).
    stale.push("4194999.0.h5");
    fs::write(dir.path().join(&stale), b"half").unwrap();
    let mut live = temp_prefix(target.file_name().unwrap());
    live.push(format!("{}.999.h5", std::process::id()));
    fs::write(dir.path().join(&live), b"in progress").unwrap();
    assert_eq!(leftover_temporaries(&target).len(), 2);
    write_file(&target, b"new").unwrap();
    assert_eq!(leftover_temporaries(&target), vec![dir.path().join(&live)]);
}

/// The child side of the tests below: with `OP2_ATOMIC_CHILD=<target>` set, writes the target
/// over and over (or once, with `OP2_ATOMIC_ONCE`), alternating two contents of several MB.
#[test]
fn child_writer() {
    let Some(target) = std::env::var_os("OP2_ATOMIC_CHILD") else {
        return;
    };
    let once = std::env::var_os("OP2_ATOMIC_ONCE").is_some();
    let both = [contents(0), contents(1)];
    for round in 0usize.. {
        if round == 1 {
            // Ready: from now on the child spends its time writing.
            println!("ready");
        }
        let r = write_file(&target, &both[round % 2]);
        if once {
            match r {
                Ok(()) => std::process::exit(0),
                Err(e) => {
                    eprintln!("{e}");
                    let full = e.io_error().map(|s| s.kind()) == Some(io::ErrorKind::FileTooLarge)
                        || e.io_error().and_then(io::Error::raw_os_error) == Some(27);
                    std::process::exit(if full { 3 } else { 4 });
                }
            }
        }
        r.unwrap();
    }
}

/// One of two file contents, each 4 MB and recognisable whole.
fn contents(which: u64) -> Vec<u8> {
    let mut v: Vec<u8> = (0..4u64 << 20)
        .map(|i| (i * 31 + which * 7) as u8)
        .collect();
    v.extend_from_slice(format!("end {which}").as_bytes());
    v
}

fn child(target: &Path) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([
        "--exact",
        "tests::child_writer",
        "--nocapture",
        "--test-threads",
        "1",
    ])
    .env("OP2_ATOMIC_CHILD", target)
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    c
}

/// Waits until a child writer says it is ready (its first write done): kills then land among
/// its writes, however long it took to start on a busy machine.
fn wait_ready(c: &mut std::process::Child) {
    use std::io::BufRead;
    let out = std::io::BufReader::new(c.stdout.take().expect("piped"));
    // The test harness prints its own lines first (and `test NAME ... ` before ours).
    for line in out.lines() {
        if line.map_or(true, |l| l.trim_end().ends_with("ready")) {
            break;
        }
    }
}

#[test]
fn killed_writers_leave_the_old_or_the_new_file() {
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("big.bin");
    let (a, b) = (contents(0), contents(1));
    let started = std::time::Instant::now();
    write_file(&target, &b).unwrap();
    let one = started.elapsed().as_micros() as u64;
    // A small linear congruential sequence of delays: random enough, and repeatable.
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut torn_midway = 0;
    for _ in 0..30 {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        let delay = Duration::from_micros((seed >> 33) % (3 * one + 1));
        let mut c = child(&target).spawn().unwrap();
        wait_ready(&mut c);
        std::thread::sleep(delay);
        c.kill().unwrap();
        c.wait().unwrap();
        let now = fs::read(&target).unwrap();
        assert!(now == a || now == b, "a torn file of {} bytes", now.len());
        torn_midway += usize::from(!leftover_temporaries(&target).is_empty());
    }
    assert!(
        torn_midway > 0,
        "no kill landed during a write: the test proves nothing"
    );
    write_file(&target, &a).unwrap();
    assert!(
        leftover_temporaries(&target).is_empty(),
        "a clean write sweeps the killed ones'"
    );
}

#[test]
fn a_full_disk_is_a_typed_error_and_keeps_the_old_file() {
    // A file size limit stands in for a full disk: writes past it fail (SIGXFSZ ignored).
    if Command::new("bash").arg("-c").arg("true").status().is_err() {
        eprintln!("skipped: no bash to set a file size limit");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let target = dir.path().join("out.vtu");
    write_file(&target, b"the old result").unwrap();
    let exe = std::env::current_exe().unwrap();
    let out = Command::new("bash")
        .arg("-c")
        .arg("trap '' XFSZ; ulimit -f 1024; exec \"$0\" \"$@\"")
        .arg(&exe)
        .args([
            "--exact",
            "tests::child_writer",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env("OP2_ATOMIC_CHILD", &target)
        .env("OP2_ATOMIC_ONCE", "1")
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.contains("out.vtu") && stderr.contains("unchanged"),
        "{stderr}"
    );
    assert_eq!(fs::read(&target).unwrap(), b"the old result");
    assert!(leftover_temporaries(&target).is_empty());
}
