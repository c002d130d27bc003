//! `cargo xtask fuzz [--seconds N] [--backend LABEL]... [--seed S] [--max-set N]`: the
//! differential fuzzer (`op2-fuzz`) on each backend configuration this machine can run (or the
//! named ones), one after another, each for `N` seconds (default 60), random programs compared
//! with the reference interpreter. Exits non-zero if any configuration found a difference (its
//! shrunk program is printed) or if a named one cannot run.

use crate::{cargo, host_features, root};
use std::process::Command;

pub fn run(args: &[String]) -> Result<(), String> {
    let mut seconds = "60".to_string();
    let mut named: Vec<String> = Vec::new();
    let mut extra: Vec<String> = Vec::new();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().cloned().ok_or(format!("`{a}` needs a value"));
        match a.as_str() {
            "--seconds" => seconds = value()?,
            "--backend" => named.push(value()?),
            "--seed" | "--max-set" => {
                let v = value()?;
                extra.extend([a.clone(), v]);
            }
            other => return Err(format!("unknown option `{other}`")),
        }
    }
    // Thread ranks too (`seq/2-ranks`, ...): MPI is one of the system packages `deps` checks.
    let mut features = host_features();
    features.push("ranks");
    let features = features.join(",");
    let mut build = cargo();
    build.current_dir(root()).args([
        "build",
        "--quiet",
        "-p",
        "op2-fuzz",
        "--features",
        &features,
    ]);
    let status = build.status().map_err(|e| format!("{build:?}: {e}"))?;
    if !status.success() {
        return Err(format!("{build:?} failed with {status}"));
    }
    let binary = root().join("target/debug/op2-fuzz");
    // The configurations the fuzzer knows, in its order: `op2-fuzz list` prints one a line.
    let list = Command::new(&binary)
        .arg("list")
        .output()
        .map_err(|e| format!("{}: {e}", binary.display()))?;
    let known: Vec<String> = String::from_utf8_lossy(&list.stdout)
        .lines()
        .filter_map(|l| l.split('\t').next())
        .map(str::to_string)
        .collect();
    if let Some(bad) = named.iter().find(|n| !known.contains(n)) {
        return Err(format!(
            "unknown configuration `{bad}` (known: {})",
            known.join(", ")
        ));
    }
    let labels = if named.is_empty() {
        known
    } else {
        named.clone()
    };
    let mut table = Vec::new();
    let mut failed = false;
    for label in &labels {
        let mut c = Command::new(&binary);
        c.args(["run", label, "--seconds", &seconds])
            .args(&extra)
            .current_dir(root());
        // Every program's kernels are new: PoCL would keep each in its disk cache (hundreds of
        // megabytes an hour). The fuzzer's own compiled code goes to a temporary directory.
        if std::env::var_os("POCL_KERNEL_CACHE").is_none() {
            c.env("POCL_KERNEL_CACHE", "0");
        }
        let status = c
            .status()
            .map_err(|e| format!("{}: {e}", binary.display()))?;
        // Exit status 3: the configuration cannot run here.
        let outcome = match status.code() {
            Some(0) => "nothing found",
            Some(3) if named.is_empty() => "skipped (cannot run here)",
            Some(3) => {
                failed = true;
                "FAILED: cannot run here"
            }
            // A crash (a signal, say SIGSEGV from generated code) ends the process before it
            // can shrink or print the program: say so, and how to find and replay it.
            None => {
                failed = true;
                use std::os::unix::process::ExitStatusExt;
                let signal = status.signal().map_or("?".into(), |s| s.to_string());
                eprintln!(
                    "xtask: op2-fuzz crashed on {label} (signal {signal}) running the program after \
                     the last seed reported ok above; replay it with `target/debug/op2-fuzz run \
                     {label} --seed SEED --programs 1 --show`"
                );
                table.push(format!("{label:<24} FAILED: crashed (signal {signal})"));
                continue;
            }
            _ => {
                failed = true;
                "FAILED: found a difference (see above)"
            }
        };
        table.push(format!("{label:<24} {outcome}"));
    }
    println!("\nfuzzing, {seconds} s per configuration:");
    for line in &table {
        println!("  {line}");
    }
    if failed {
        Err("the fuzzer found a difference, or a named configuration cannot run".into())
    } else {
        Ok(())
    }
}
