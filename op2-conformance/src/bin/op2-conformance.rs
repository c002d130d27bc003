//! The conformance runner `cargo xtask conformance` drives, one process per backend:
//! `list` (registered backends), `known` (the first-party backends, built in or not), `probe NAME`, `run NAME [--random N]` (one tab-separated line per
//! case: name, pass/FAIL/skipped, detail).

use op2_conformance::{DEFAULT_RANDOM_CASES, Outcome, probe, run_suite};
use std::process::ExitCode;

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
            let random = match rest {
                [] => DEFAULT_RANDOM_CASES,
                ["--random", n] => match n.parse() {
                    Ok(n) => n,
                    Err(_) => return usage(),
                },
                _ => return usage(),
            };
            let mut failed = false;
            for r in run_suite(name, random) {
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
    eprintln!("usage: op2-conformance list | known | probe NAME | run NAME [--random N]");
    ExitCode::from(2)
}
