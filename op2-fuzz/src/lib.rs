//! Differential fuzzing of op2-rs: random programs (sets, maps with repeated targets, Dats,
//! Globals, Consts, 10-30 loops with random args and kernels, host reads and writes between them,
//! lazy and eager, varied block sizes), each run through op2's public API on a backend and by a
//! plain-Rust reference interpreter that never calls op2, and compared: integers exactly, floating
//! point within a bound that grows only with the magnitudes a reordered sum may round.
//!
//! Programs are drawn by `proptest` ([`draw`]), so a failing program is shrunk to a small one and
//! printed with its kernels. `cargo xtask fuzz` runs the `op2-fuzz` binary on each backend; the
//! test suite runs a fixed set of seeds (`tests/seeds.rs`).

pub mod check;
pub mod draw;
pub mod expr;
pub mod program;
#[cfg(feature = "ranks")]
mod ranks;
pub mod reference;
pub mod run;

pub use check::{check, execute};
pub use draw::Shape;
pub use program::Program;
pub use run::{Target, target, targets};

use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestError, TestRng, TestRunner};
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

/// A program a backend got wrong, shrunk.
#[derive(Debug, Clone)]
pub struct Failure {
    /// The seed whose first program failed (replay with [`fuzz_seed`] and one case).
    pub seed: u64,
    /// What went wrong on the shrunk program.
    pub reason: String,
    /// The shrunk program, printed with its kernels.
    pub program: String,
}

impl std::fmt::Display for Failure {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "seed {}: {}\nshrunk program:\n{}",
            self.seed, self.reason, self.program
        )
    }
}

/// The random source of programs drawn from `seed` (what [`fuzz_seed`] and [`first_program`]
/// draw from).
fn rng(seed: u64) -> TestRng {
    let mut s = *b"op2-rs differential fuzzing:....";
    s[24..].copy_from_slice(&seed.to_le_bytes());
    TestRng::from_seed(RngAlgorithm::ChaCha, &s)
}

/// How [`fuzz_seed`] runs `cases` programs, shrinking a failure for at most `shrink_time`.
/// (The configuration decides how proptest draws too: [`first_program`] must use the same.)
fn config(cases: u32, shrink_time: Duration) -> Config {
    Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 2048,
        max_shrink_time: shrink_time.as_millis().min(u32::MAX as u128) as u32,
        max_global_rejects: 0,
        ..Config::default()
    }
}

/// The first program `seed` draws for `shape`: what [`fuzz_seed`] runs first (on thread ranks,
/// with [`Shape::distributed`] set).
pub fn first_program(seed: u64, shape: Shape) -> Program {
    // Drawn the way `fuzz_seed` draws: through `TestRunner::run`, which derives each case's
    // random source from the runner's (a tree drawn from the runner itself is another program).
    let mut runner = TestRunner::new_with_rng(config(1, Duration::ZERO), rng(seed));
    let first = std::sync::Mutex::new(None);
    let _ = runner.run(&draw::genomes(shape), |g| {
        first
            .lock()
            .expect("one case at a time")
            .get_or_insert_with(|| draw::decode(&g, shape));
        Ok(())
    });
    first
        .into_inner()
        .expect("one case at a time")
        .expect("one case is drawn")
}

/// Runs `cases` random programs drawn from `seed` on `target`; a failure is shrunk (for at most
/// `shrink_time`) and returned. Compiled code goes to `cache`.
pub fn fuzz_seed(
    target: &Target,
    seed: u64,
    cases: u32,
    shape: Shape,
    shrink_time: Duration,
    cache: Option<&Path>,
) -> Result<(), Failure> {
    let config = config(cases, shrink_time);
    // Across thread ranks: programs of plain sets (no extruded sets, subsets or mixed spaces).
    let shape = Shape {
        distributed: target.ranks.is_some(),
        ..shape
    };
    let mut runner = TestRunner::new_with_rng(config, rng(seed));
    // Races make some failures come and go: once one program failed (proptest is shrinking it),
    // each smaller candidate gets three tries to fail.
    let failed = AtomicBool::new(false);
    let result = runner.run(&draw::genomes(shape), |g| {
        let p = draw::decode(&g, shape);
        let tries = if failed.load(Ordering::Relaxed) { 3 } else { 1 };
        let mut outcome = Ok(());
        for _ in 0..tries {
            outcome = check(&p, target, cache);
            if outcome.is_err() {
                break;
            }
        }
        outcome.map_err(|e| {
            failed.store(true, Ordering::Relaxed);
            TestCaseError::fail(e)
        })
    });
    match result {
        Ok(()) => Ok(()),
        Err(TestError::Fail(reason, g)) => Err(Failure {
            seed,
            reason: reason.message().to_string(),
            program: draw::decode(&g, shape).to_string(),
        }),
        Err(TestError::Abort(why)) => Err(Failure {
            seed,
            reason: format!("aborted: {why}"),
            program: String::new(),
        }),
    }
}
