//! The conformance runner `cargo xtask conformance` drives, one process per backend:
//! `list` (registered backends), `known` (the first-party backends, built in or not), `probe
//! NAME`, `run NAME [--random N] [--ranks N [--partition blocks|metis]]` (one tab-separated line
//! per case: name, pass/FAIL/skipped, detail), `ranks` (whether `--ranks` is built in: feature
//! `mpi`). With `--ranks`, the suite runs across N ranks: MPI ranks when `mpirun -np N` started
//! the runner, else N threads of this process; rank 0 prints.

use op2_conformance::{CaseResult, DEFAULT_RANDOM_CASES, Outcome, Partition, probe, run_suite};
use std::process::ExitCode;

/// The suite across `ranks` ranks: rank 0's results (`None` on the other MPI ranks).
#[cfg(feature = "mpi")]
fn across(
    name: &str,
    ranks: usize,
    partition: Partition,
    random: u32,
) -> Result<Option<Vec<CaseResult>>, String> {
    use op2::comm::Communicator;
    use op2_conformance::run_suite_across;
    use std::sync::Arc;
    use std::time::Duration;
    if op2::mpi::launched_by_mpirun() {
        let mpi = op2::mpi::Mpi::init().map_err(|e| e.to_string())?;
        let world: Arc<dyn Communicator> = mpi.world();
        if world.size() != ranks {
            return Err(format!(
                "--ranks {ranks}, but mpirun started {}",
                world.size()
            ));
        }
        let results = run_suite_across(name, &world, partition, random);
        return Ok((world.rank() == 0).then_some(results));
    }
    let timeout = Duration::from_secs_f64(
        std::env::var("OP2_MPI_TIMEOUT")
            .ok()
            .and_then(|t| t.parse::<f64>().ok())
            .filter(|t| t.is_finite() && *t > 0.0)
            .unwrap_or(120.0),
    );
    let comms = op2::thread_communicators(ranks, timeout);
    let mut all: Vec<Vec<CaseResult>> = std::thread::scope(|s| {
        let hs: Vec<_> = comms
            .into_iter()
            .map(|c| {
                s.spawn(move || {
                    let comm: Arc<dyn Communicator> = Arc::new(c);
                    run_suite_across(name, &comm, partition, random)
                })
            })
            .collect();
        hs.into_iter()
            .map(|h| h.join().map_err(|_| "a rank panicked".to_string()))
            .collect::<Result<_, _>>()
    })?;
    Ok(Some(all.swap_remove(0)))
}

#[cfg(not(feature = "mpi"))]
fn across(_: &str, _: usize, _: Partition, _: u32) -> Result<Option<Vec<CaseResult>>, String> {
    Err("--ranks needs the runner built with the `mpi` feature".into())
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let a: Vec<&str> = args.iter().map(String::as_str).collect();
    match a.as_slice() {
        ["list"] => {
            for b in op2::backends() {
                println!("{}\t{}", b.name, b.description);
            }
            ExitCode::SUCCESS
        }
        ["known"] => {
            for (name, feature) in op2::FIRST_PARTY_BACKENDS {
                println!("{name}\t{feature}");
            }
            ExitCode::SUCCESS
        }
        // Whether `--ranks` works in this build (exit status 3 when not).
        ["ranks"] => {
            if cfg!(feature = "mpi") {
                println!("across ranks: yes");
                ExitCode::SUCCESS
            } else {
                println!("across ranks: not built in (feature `mpi`)");
                ExitCode::from(3)
            }
        }
        ["probe", name] => match probe(name) {
            Ok(()) => {
                println!("usable");
                ExitCode::SUCCESS
            }
            Err(why) => {
                println!("{why}");
                ExitCode::from(3)
            }
        },
        ["run", name, rest @ ..] => {
            let mut random = DEFAULT_RANDOM_CASES;
            let mut ranks = None;
            let mut partition = Partition::Metis;
            let mut rest = rest.iter();
            while let Some(option) = rest.next() {
                let value = rest.next();
                match (*option, value) {
                    ("--random", Some(n)) => match n.parse() {
                        Ok(n) => random = n,
                        Err(_) => return usage(),
                    },
                    ("--ranks", Some(n)) => match n.parse() {
                        Ok(n) if n >= 1 => ranks = Some(n),
                        _ => return usage(),
                    },
                    ("--partition", Some(p)) => match Partition::from_name(p) {
                        Some(p) => partition = p,
                        None => return usage(),
                    },
                    _ => return usage(),
                }
            }
            let results = match ranks {
                None => run_suite(name, random),
                Some(n) => match across(name, n, partition, random) {
                    Ok(Some(r)) => r,
                    Ok(None) => return ExitCode::SUCCESS,
                    Err(e) => {
                        eprintln!("op2-conformance: {e}");
                        return ExitCode::from(2);
                    }
                },
            };
            let mut failed = false;
            for r in results {
                let (status, detail) = match &r.outcome {
                    Outcome::Pass => ("pass", String::new()),
                    Outcome::Fail(d) => {
                        failed = true;
                        ("FAIL", d.clone())
                    }
                    Outcome::Skipped(d) => ("skipped", d.clone()),
                };
                // One line per case, tabs and newlines in details flattened.
                println!(
                    "{}\t{status}\t{}",
                    r.case,
                    detail.replace(['\t', '\n'], " ")
                );
            }
            if failed {
                ExitCode::FAILURE
            } else {
                ExitCode::SUCCESS
            }
        }
        _ => usage(),
    }
}

fn usage() -> ExitCode {
    eprintln!(
        "usage: op2-conformance list | known | probe NAME | run NAME [--random N] [--ranks N [--partition blocks|metis]]"
    );
    ExitCode::from(2)
}
