//! Running the suite: each case on a fresh reference runtime (`seq`) and a fresh candidate runtime,
//! compared; panics inside a backend are caught and reported as failures.

use crate::cases::{Case, cases};
use crate::decl::CaseRuntime;
use crate::outputs::compare;
use crate::random::check_random;
use op2::{Op2Error, Runtime};
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};

/// Random loops run by default (on top of the named cases).
pub const DEFAULT_RANDOM_CASES: u32 = 24;

/// Name of the random-loop row in reports.
pub const RANDOM_ROW: &str = "random_loops";

/// How one case went on the candidate.
#[derive(Debug, Clone, PartialEq)]
pub enum Outcome {
    /// Same outputs as the reference.
    Pass,
    /// Different outputs, an error, or a panic: the first difference or the message.
    Fail(String),
    /// Not run, and why.
    Skipped(String),
}

impl fmt::Display for Outcome {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Outcome::Pass => write!(f, "pass"),
            Outcome::Fail(why) => write!(f, "FAIL: {why}"),
            Outcome::Skipped(why) => write!(f, "skipped: {why}"),
        }
    }
}

/// One case's result.
#[derive(Debug, Clone, PartialEq)]
pub struct CaseResult {
    /// The case (or [`RANDOM_ROW`]).
    pub case: String,
    /// How it went.
    pub outcome: Outcome,
}

/// A runtime on `backend` (lazy, settings otherwise from the environment).
pub fn runtime(backend: &str) -> op2::Result<Runtime> {
    op2::builder().backend(backend).lazy(true).build()
}

/// Whether `backend` can run here: registered in this binary and able to start (device present).
pub fn probe(backend: &str) -> Result<(), String> {
    match runtime(backend) {
        Ok(_) => Ok(()),
        Err(Op2Error::BackendNotEnabled { feature, .. }) => {
            Err(format!("not built in (feature `{feature}`)"))
        }
        Err(Op2Error::UnknownBackend { .. }) => Err("not registered in this build".into()),
        Err(e) => Err(e.to_string()),
    }
}

fn panic_message(p: Box<dyn std::any::Any + Send>) -> String {
    p.downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| p.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "non-string panic".into())
}

/// Runs one case on the reference and on `backend`, each on a fresh runtime, and compares.
pub fn run_case(case: &Case, backend: &str) -> Outcome {
    let reference = match runtime("seq").and_then(|rt| (case.run)(&CaseRuntime::single(rt))) {
        Ok(o) => o,
        Err(e) => return Outcome::Fail(format!("the reference itself failed: {e}")),
    };
    let candidate = catch_unwind(AssertUnwindSafe(|| {
        runtime(backend).and_then(|rt| {
            let out = (case.run)(&CaseRuntime::single(rt.clone()))?;
            rt.flush()?;
            Ok(out)
        })
    }));
    match candidate {
        Err(p) => Outcome::Fail(format!("panicked: {}", panic_message(p))),
        Ok(Err(e)) => Outcome::Fail(format!("error: {e}")),
        Ok(Ok(out)) => match compare(&reference, &out, case.tolerance) {
            Ok(()) => Outcome::Pass,
            Err(m) => Outcome::Fail(m.to_string()),
        },
    }
}

/// Runs the random loops on the reference and on `backend`.
pub fn run_random(backend: &str, cases: u32) -> Outcome {
    let result = catch_unwind(AssertUnwindSafe(|| -> Result<(), String> {
        let reference = runtime("seq").map_err(|e| e.to_string())?;
        let candidate = runtime(backend).map_err(|e| e.to_string())?;
        check_random(
            &CaseRuntime::single(reference),
            &CaseRuntime::single(candidate),
            cases,
        )
    }));
    match result {
        Err(p) => Outcome::Fail(format!("panicked: {}", panic_message(p))),
        Ok(Err(e)) => Outcome::Fail(e),
        Ok(Ok(())) => Outcome::Pass,
    }
}

/// Every named case through `one`, then the random row through `random` when there are random
/// loops; every row skipped when `backend` cannot run here.
fn suite(
    backend: &str,
    random: u32,
    one: impl Fn(&Case) -> Outcome,
    random_row: impl FnOnce() -> Outcome,
) -> Vec<CaseResult> {
    let all = cases();
    if let Err(why) = probe(backend) {
        return all
            .iter()
            .map(|c| c.name)
            .chain([RANDOM_ROW])
            .map(|case| CaseResult {
                case: case.into(),
                outcome: Outcome::Skipped(why.clone()),
            })
            .collect();
    }
    let mut results: Vec<CaseResult> = all
        .iter()
        .map(|c| CaseResult {
            case: c.name.into(),
            outcome: one(c),
        })
        .collect();
    if random > 0 {
        results.push(CaseResult {
            case: RANDOM_ROW.into(),
            outcome: random_row(),
        });
    }
    results
}

/// Runs every named case and `random` random loops on `backend`; skips them all when the backend
/// cannot run here.
pub fn run_suite(backend: &str, random: u32) -> Vec<CaseResult> {
    suite(
        backend,
        random,
        |c| run_case(c, backend),
        || run_random(backend, random),
    )
}

/// Runs the suite on `backend` and panics, listing every failure, unless all cases pass. For
/// backend crates' own tests (see [`crate::conformance_tests!`]).
pub fn assert_conforms(backend: &str) {
    let results = run_suite(backend, DEFAULT_RANDOM_CASES);
    let bad: Vec<String> = results
        .iter()
        .filter(|r| r.outcome != Outcome::Pass)
        .map(|r| format!("  {}: {}", r.case, r.outcome))
        .collect();
    assert!(
        bad.is_empty(),
        "backend `{backend}` does not conform ({} of {} cases):\n{}",
        bad.len(),
        results.len(),
        bad.join("\n")
    );
}

#[cfg(feature = "mpi")]
pub use across::{run_case_across, run_random_across, run_suite_across, runtime_across};

/// The suite across ranks (feature `mpi`).
#[cfg(feature = "mpi")]
mod across {
    use super::*;
    use crate::decl::{NOT_DISTRIBUTED, Partition};
    use crate::outputs::Outputs;
    use crate::random::random_loop;
    use op2::ReduceOp;
    use op2::comm::Communicator;
    use proptest::strategy::{Strategy, ValueTree};
    use proptest::test_runner::{Config, RngAlgorithm, TestRng, TestRunner};
    use std::sync::Arc;

    /// A runtime on `backend` that runs across the ranks of `comm` (lazy, as [`runtime`]).
    pub fn runtime_across(backend: &str, comm: &Arc<dyn Communicator>) -> op2::Result<Runtime> {
        op2::builder()
            .backend(backend)
            .lazy(true)
            .communicator(comm.clone())
            .build()
    }

    /// Runs `run` on a fresh runtime on `backend` across the ranks of `comm`, its mesh partitioned
    /// by `partition`, and compares its outputs (gathered on rank 0) with the one-process sequential
    /// reference `reference`. Collective: every rank calls it; the verdict that counts is rank 0's
    /// (the others only see their own errors).
    fn across(
        reference: op2::Result<Outputs>,
        run: impl FnOnce(&CaseRuntime) -> op2::Result<Outputs>,
        tolerance: f64,
        backend: &str,
        comm: &Arc<dyn Communicator>,
        partition: Partition,
    ) -> Outcome {
        let reference = match reference {
            Ok(o) => o,
            Err(e) => return Outcome::Fail(format!("the reference itself failed: {e}")),
        };
        let candidate = catch_unwind(AssertUnwindSafe(|| {
            runtime_across(backend, comm).and_then(|rt| {
                let out = run(&CaseRuntime::distributed(rt.clone(), partition))?;
                rt.flush()?;
                Ok(out)
            })
        }));
        match candidate {
            Err(p) => Outcome::Fail(format!("panicked: {}", panic_message(p))),
            Ok(Err(Op2Error::Unsupported { kernel, reason })) if kernel == NOT_DISTRIBUTED => {
                Outcome::Skipped(format!("one process only: {reason}"))
            }
            Ok(Err(e)) => Outcome::Fail(format!("error: {e}")),
            Ok(Ok(_)) if comm.rank() != 0 => Outcome::Pass,
            Ok(Ok(out)) => match compare(&reference, &out, tolerance) {
                Ok(()) => Outcome::Pass,
                Err(m) => Outcome::Fail(m.to_string()),
            },
        }
    }

    /// Runs one case on `backend` across the ranks of `comm` (see [`run_suite_across`]).
    pub fn run_case_across(
        case: &Case,
        backend: &str,
        comm: &Arc<dyn Communicator>,
        partition: Partition,
    ) -> Outcome {
        let reference = runtime("seq").and_then(|rt| (case.run)(&CaseRuntime::single(rt)));
        across(
            reference,
            case.run,
            case.tolerance,
            backend,
            comm,
            partition,
        )
    }

    /// Runs `cases` random loops (the same ones [`check_random`] draws, without shrinking: every
    /// rank must take the same steps) across the ranks of `comm`; the first failure, with its loop.
    pub fn run_random_across(
        backend: &str,
        comm: &Arc<dyn Communicator>,
        partition: Partition,
        cases: u32,
    ) -> Outcome {
        let mut runner = TestRunner::new_with_rng(
            Config::default(),
            TestRng::from_seed(RngAlgorithm::ChaCha, &crate::SEED),
        );
        for _ in 0..cases {
            let l = match random_loop().new_tree(&mut runner) {
                Ok(tree) => tree.current(),
                Err(e) => return Outcome::Fail(format!("drawing a random loop: {e}")),
            };
            let reference = runtime("seq").and_then(|rt| l.run(&CaseRuntime::single(rt)));
            let outcome = across(reference, |rt| l.run(rt), 1e-5, backend, comm, partition);
            // Only rank 0 compares: every rank stops where one found a difference, or none
            // does (a rank going on alone would wait in the next loop's partitioning).
            let mut stop = [f64::from(u8::from(outcome != Outcome::Pass))];
            if let Err(e) = comm.all_reduce_f64(&mut stop, ReduceOp::Max) {
                return Outcome::Fail(format!("agreeing on the verdict: {e}"));
            }
            match outcome {
                Outcome::Pass if stop[0] == 0.0 => {}
                Outcome::Pass => return Outcome::Fail("another rank failed".into()),
                Outcome::Fail(why) => return Outcome::Fail(format!("{why}\n  loop: {l:?}")),
                Outcome::Skipped(why) => return Outcome::Skipped(why),
            }
        }
        Outcome::Pass
    }

    /// Runs every named case and `random` random loops on `backend` across the ranks of `comm`, each
    /// case's mesh partitioned by `partition`: collective, every rank calls it; rank 0's results
    /// compare every output, in global order, with the one-process sequential reference.
    pub fn run_suite_across(
        backend: &str,
        comm: &Arc<dyn Communicator>,
        partition: Partition,
        random: u32,
    ) -> Vec<CaseResult> {
        suite(
            backend,
            random,
            |c| run_case_across(c, backend, comm, partition),
            || run_random_across(backend, comm, partition, random),
        )
    }
}
