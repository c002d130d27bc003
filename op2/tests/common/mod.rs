//! Helpers shared by the integration tests: runtimes on the reference backend and child processes.

#![allow(dead_code)]

use op2::Runtime;
use std::process::{Command, Output};

/// The backend the suite runs on: `OP2_TEST_BACKEND`, else the sequential reference. `cargo xtask
/// test` runs the suite again on every other host backend (with 1, 2 and 3 threads for `openmp`);
/// the expected values are computed independently, so they are the reference's results.
pub fn backend() -> String {
    std::env::var("OP2_TEST_BACKEND").unwrap_or_else(|_| "seq".into())
}

/// A lazy runtime on the suite's backend.
pub fn rt() -> Runtime {
    rt_lazy(true)
}

/// A runtime on the suite's backend, lazy or eager.
pub fn rt_lazy(lazy: bool) -> Runtime {
    op2::builder()
        .backend(&backend())
        .lazy(lazy)
        .build()
        .unwrap_or_else(|e| panic!("runtime on `{}`: {e}", backend()))
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

/// Asserts that `$e` is an `Err` matching `$p` (with an optional guard) whose message is not empty,
/// printing the error otherwise. (Not every test file that shares this module uses it.)
#[allow(unused_macros)]
macro_rules! assert_err {
    ($e:expr, $p:pat $(if $guard:expr)?) => {
        match $e {
            Err(err) => {
                assert!(matches!(err, $p $(if $guard)?), "wrong error: {err:?}");
                // Every error renders a message naming what went wrong.
                assert!(!err.to_string().is_empty());
            }
            Ok(_) => panic!("expected an error matching {}", stringify!($p)),
        }
    };
}
#[allow(unused_imports)]
pub(crate) use assert_err;
