//! `op2-fuzz`: runs random programs on one backend configuration against the reference
//! interpreter, for a number of seeds or a number of seconds (`cargo xtask fuzz` runs it once per
//! configuration).
//!
//! ```text
//! op2-fuzz list                          configurations, and whether each can run here
//! op2-fuzz run TARGET [--seconds N] [--programs N] [--seed S] [--max-set N] [--show]
//! ```
//!
//! Each program comes from its own seed (`--seed`, then the next ones), so a failure replays with
//! `--seed S --programs 1`; `--show` prints each program before running it.

use op2_fuzz::{Shape, fuzz_seed, run};
use std::process::ExitCode;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn usage() -> ExitCode {
    eprintln!(
        "usage: op2-fuzz list\n       op2-fuzz run TARGET [--seconds N] [--programs N] [--seed S] [--max-set N] [--show]"
    );
    ExitCode::from(2)
}

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("list") => {
            for t in run::targets() {
                match run::probe(&t) {
                    Ok(()) => println!("{}\tusable", t.label),
                    Err(why) => println!("{}\tnot usable: {why}", t.label),
                }
            }
            ExitCode::SUCCESS
        }
        Some("run") if args.len() >= 2 => match fuzz(&args[1], &args[2..]) {
            Ok(code) => code,
            Err(e) => {
                eprintln!("op2-fuzz: {e}");
                ExitCode::from(2)
            }
        },
        _ => usage(),
    }
}

fn fuzz(label: &str, rest: &[String]) -> Result<ExitCode, String> {
    let target = run::target(label).ok_or_else(|| {
        let all: Vec<String> = run::targets().into_iter().map(|t| t.label).collect();
        format!("unknown target `{label}` (known: {})", all.join(", "))
    })?;
    let mut seconds: Option<u64> = None;
    let mut programs: Option<u64> = None;
    let mut seed = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(1);
    let mut shape = Shape::default();
    let mut show = false;
    let mut it = rest.iter();
    while let Some(a) = it.next() {
        let mut num = || -> Result<u64, String> {
            it.next()
                .and_then(|v| v.parse().ok())
                .ok_or(format!("`{a}` needs a number"))
        };
        match a.as_str() {
            "--seconds" => seconds = Some(num()?),
            "--programs" => programs = Some(num()?),
            "--seed" => seed = num()?,
            "--max-set" => shape.max_set = num()? as usize,
            "--show" => show = true,
            other => return Err(format!("unknown option `{other}`")),
        }
    }
    if seconds.is_none() && programs.is_none() {
        programs = Some(10);
    }
    if let Err(why) = run::probe(&target) {
        println!("{label}: not usable here: {why}");
        return Ok(ExitCode::from(3));
    }
    // Thread ranks run programs of plain sets (as `fuzz_seed` draws them for such a target).
    shape.distributed = target.ranks.is_some();
    let cache = tempfile::tempdir().map_err(|e| format!("temporary cache: {e}"))?;
    let started = Instant::now();
    let deadline = seconds.map(|s| started + Duration::from_secs(s));
    let mut done = 0u64;
    println!("{label}: fuzzing from seed {seed}");
    loop {
        if programs.is_some_and(|n| done >= n) || deadline.is_some_and(|d| Instant::now() >= d) {
            break;
        }
        let s = seed + done;
        if show {
            let program = op2_fuzz::first_program(s, shape);
            println!("seed {s}:\n{program}");
        }
        let t0 = Instant::now();
        let result = fuzz_seed(
            &target,
            s,
            1,
            shape,
            Duration::from_secs(600),
            Some(cache.path()),
        );
        done += 1;
        match result {
            Ok(()) => println!("{label}: seed {s} ok ({:.1} s)", t0.elapsed().as_secs_f64()),
            Err(f) => {
                println!("{label}: FAILED\n{f}");
                println!(
                    "{label}: {done} programs in {:.0} s, 1 failure",
                    started.elapsed().as_secs_f64()
                );
                return Ok(ExitCode::FAILURE);
            }
        }
    }
    println!(
        "{label}: {done} programs in {:.0} s, nothing found",
        started.elapsed().as_secs_f64()
    );
    Ok(ExitCode::SUCCESS)
}
