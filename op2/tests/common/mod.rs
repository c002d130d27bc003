//! Helpers shared by the integration tests: runtimes on the reference backend and child processes.

#![allow(dead_code)]

use op2::Runtime;
use std::process::{Command, Output};

/// A lazy runtime on the sequential backend.
pub fn rt() -> Runtime {
    op2::builder()
        .backend("seq")
        .lazy(true)
        .build()
        .expect("seq runtime")
}

/// A runtime on the sequential backend, lazy or eager.
pub fn rt_lazy(lazy: bool) -> Runtime {
    op2::builder()
        .backend("seq")
        .lazy(lazy)
        .build()
        .expect("seq runtime")
}

/// Runs one `#[ignore]`d test of this test binary in a child process with extra environment.
pub fn run_child(test: &str, env: &[(&str, &str)]) -> Output {
    let exe = std::env::current_exe().expect("test binary path");
    let mut cmd = Command::new(exe);
    cmd.args([
        test,
        "--exact",
        "--ignored",
        "--nocapture",
        "--test-threads=1",
    ]);
    for (k, v) in env {
        cmd.env(k, v);
    }
    let out = cmd.output().expect("spawn child test process");
    assert!(
        out.status.success(),
        "child `{test}` failed:\n{}\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

/// A token unique to this test run, to make kernel sources (and so cache keys) unique.
pub fn unique_token() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap();
    format!("t{}_{}", std::process::id(), t.as_nanos())
}
