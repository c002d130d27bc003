//! op2-test-support: the helpers op2-rs's tests share (written once here instead of copied per
//! test file): runtimes on the suite's backend or on every backend that starts, kernels, ranks as
//! threads, child test processes, typed-error assertions, and the external readers the file tests
//! check against ([`tools`]). Unpublished; test code only.

pub mod memory;
pub mod tools;

use op2::{Communicator, Kernel, Runtime, RuntimeBuilder};
use std::process::{Command, Output};
use std::sync::Arc;
use std::time::Duration;

/// The backend the facade's suite runs on: `OP2_TEST_BACKEND`, else the sequential reference.
/// `cargo xtask test` runs the suite again on every other backend (with 1, 2 and 3 threads for
/// `openmp`); the expected values are computed independently, so they are the reference's.
pub fn backend() -> String {
    std::env::var("OP2_TEST_BACKEND").unwrap_or_else(|_| "seq".into())
}

/// A runtime builder on the suite's backend, for tests that set more (block size, cache, ranks).
pub fn builder() -> RuntimeBuilder {
    op2::builder().backend(&backend())
}

/// A ring of `n` nodes and `n` edges on `rt`, edge `e` joining nodes `e` and `e + 1` (mod `n`):
/// `(nodes, edges, map from the edges to their two ends)`, every node touched by two edges.
pub fn ring(rt: &Runtime, n: usize) -> (op2::Set, op2::Set, op2::Map) {
    let nodes = rt.decl_set(n, "nodes").unwrap();
    let edges = rt.decl_set(n, "edges").unwrap();
    let ends: Vec<i32> = (0..n)
        .flat_map(|e| [e as i32, ((e + 1) % n) as i32])
        .collect();
    let m = rt.decl_map(&edges, &nodes, 2, ends, "ends").unwrap();
    (nodes, edges, m)
}

/// A lazy runtime on the suite's backend.
pub fn rt() -> Runtime {
    rt_lazy(true)
}

/// A runtime on the suite's backend, lazy or eager.
pub fn rt_lazy(lazy: bool) -> Runtime {
    builder()
        .lazy(lazy)
        .build()
        .unwrap_or_else(|e| panic!("runtime on `{}`: {e}", backend()))
}

/// A lazy runtime on the sequential reference, for tests that need a runtime but no backend in
/// particular (file formats, partitioning).
pub fn seq() -> Runtime {
    op2::builder()
        .backend("seq")
        .build()
        .unwrap_or_else(|e| panic!("runtime on `seq`: {e}"))
}

/// A kernel the test knows to be valid; a panic naming it otherwise.
pub fn kernel(name: &str, source: &str) -> Kernel {
    Kernel::new(name, source).unwrap_or_else(|e| panic!("kernel `{name}`: {e}"))
}

/// Whether backend `name` must start here: `OP2_REQUIRE_BACKENDS` (a comma-separated list, which
/// `cargo xtask test` sets to the backends it built and installed) names it, or, for `cuda`,
/// `OP2_REQUIRE_CUDA` is set (the GPU check sets it on a GPU machine).
pub fn backend_required(name: &str) -> bool {
    let listed = std::env::var("OP2_REQUIRE_BACKENDS")
        .unwrap_or_default()
        .split(',')
        .any(|b| b.trim() == name);
    listed || (name == "cuda" && std::env::var_os("OP2_REQUIRE_CUDA").is_some())
}

/// A repeatable pseudo-random sequence (xorshift64) for tests: the same seed gives the same values
/// on every machine. (`xtask`, which has no dependencies, keeps a copy of its own.)
pub struct Dice(u64);

impl Dice {
    /// A sequence from `seed` (0, which xorshift never leaves, starts as 1).
    pub fn new(seed: u64) -> Self {
        Dice(seed.max(1))
    }

    /// The next value.
    pub fn roll(&mut self) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0
    }

    /// The next value below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.roll() % n.max(1)
    }
}

/// The runtime `builder` makes, or `None` (saying why) where its backend cannot start here (no
/// OpenCL driver, no GPU, no C++ compiler for the CUDA emulator) and [`backend_required`] does not
/// ask for it. Any other error fails the test.
pub fn runtime_if_available(builder: RuntimeBuilder) -> Option<Runtime> {
    match builder.build() {
        Ok(rt) => Some(rt),
        Err(op2::Op2Error::BackendUnavailable { name, reason }) => {
            assert!(
                !backend_required(&name),
                "{name} is required here but cannot start: {reason}"
            );
            eprintln!("{name}: not checked here: {reason}");
            None
        }
        Err(e) => panic!("{e}"),
    }
}

/// Runtimes on every backend built in that starts here, the reference (`seq`) first: the others
/// are compared with it. A backend [`backend_required`] must start; any other that cannot is
/// skipped with the reason.
pub fn runtimes() -> Vec<Runtime> {
    let mut names: Vec<&str> = op2::backends().iter().map(|b| b.name).collect();
    names.sort_by_key(|n| *n != "seq");
    let out: Vec<Runtime> = names
        .into_iter()
        .filter_map(|name| runtime_if_available(op2::builder().backend(name)))
        .collect();
    assert_eq!(out.first().map(|r| r.backend_name()), Some("seq"));
    out
}

/// Runs `f(rank, communicator)` on `ranks` threads connected as ranks (a deadlock fails after
/// `timeout`); each rank's result, in rank order.
pub fn on_ranks<R: Send>(
    ranks: usize,
    timeout: Duration,
    f: impl Fn(usize, Arc<dyn Communicator>) -> R + Sync,
) -> Vec<R> {
    let comms = op2::thread_communicators(ranks, timeout);
    let f = &f;
    std::thread::scope(|s| {
        let handles: Vec<_> = comms
            .into_iter()
            .enumerate()
            .map(|(rank, c)| s.spawn(move || f(rank, Arc::new(c))))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|e| std::panic::resume_unwind(e)))
            .collect()
    })
}

/// Runs `work(rank, runtime)` on `ranks` thread ranks, each with a runtime from `builder` over
/// its communicator (a deadlock fails after 120 s); each rank's result, in rank order.
pub fn on_rank_runtimes<R: Send>(
    ranks: usize,
    builder: impl Fn() -> RuntimeBuilder + Sync,
    work: impl Fn(usize, Runtime) -> R + Sync,
) -> Vec<R> {
    on_ranks(ranks, Duration::from_secs(120), |rank, comm| {
        let rt = builder()
            .communicator(comm)
            .build()
            .unwrap_or_else(|e| panic!("runtime on rank {rank}: {e}"));
        work(rank, rt)
    })
}

/// Runs one `#[ignore]`d test of this test binary (its full path, as `cargo test -- --list`
/// prints it) in a child process with extra environment; a child that fails fails the test.
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

/// Whether `a` and `b` have the same length and agree value by value within `tol` relative to
/// the larger magnitude (and absolute near zero).
pub fn close(a: &[f64], b: &[f64], tol: f64) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| (x - y).abs() <= tol * (1.0 + x.abs().max(y.abs())))
}

/// A token unique to this test run, to make kernel sources (and so cache keys) unique.
pub fn unique_token() -> String {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap_or_default();
    format!("t{}_{}", std::process::id(), t.as_nanos())
}

/// Waits until child process `c` (its stdout piped) prints a line ending in `word` (or closes
/// its output): a child test process says when it is ready that way, since the test harness
/// prints lines of its own first (and `test NAME ... ` on the line before the child's own text).
pub fn wait_for_line(c: &mut std::process::Child, word: &str) {
    use std::io::BufRead;
    let Some(out) = c.stdout.take() else {
        return;
    };
    for line in std::io::BufReader::new(out).lines() {
        if line.map_or(true, |l| l.trim_end().ends_with(word)) {
            return;
        }
    }
}

/// Asserts that `$e` is an `Err` matching `$p` (with an optional guard) whose message is not
/// empty, printing the error otherwise.
#[macro_export]
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
