//! `cargo xtask conformance`: probes which backends can run here, runs the conformance binary once
//! per backend (and per thread count for `openmp`) in its own process, and prints case x backend.
//! Columns `mpiN/BACKEND` run the suite across N MPI ranks under `mpirun` (the host backends),
//! `thrN/BACKEND` across N thread ranks of one process (the CUDA emulator).

use crate::mpi::mpirun;
use crate::{cargo, host_features, root};
use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

/// Thread counts the `openmp` backend is checked with.
const OPENMP_THREADS: &[&str] = &["1", "2", "3"];

struct Options {
    backends: Vec<String>,
    require: Vec<String>,
    random: Option<String>,
}

fn parse(args: &[String]) -> Result<Options, String> {
    let mut o = Options {
        backends: Vec::new(),
        require: Vec::new(),
        random: None,
    };
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut value = || it.next().cloned().ok_or(format!("`{a}` needs a value"));
        match a.as_str() {
            "--backend" => o.backends.push(value()?),
            "--require" => o.require.push(value()?),
            "--random" => o.random = Some(value()?),
            other => return Err(format!("unknown option `{other}`")),
        }
    }
    Ok(o)
}

/// Rank counts of the distributed columns, each with the partition its meshes get.
const RANKS: [(usize, &str); 3] = [(2, "metis"), (3, "blocks"), (4, "metis")];

/// How a column's ranks run.
#[derive(Clone, Copy, PartialEq)]
enum Ranks {
    /// One process.
    One,
    /// N MPI ranks under `mpirun`, meshes partitioned as named.
    Mpi(usize, &'static str),
    /// N thread ranks in one process.
    Threads(usize, &'static str),
}

/// One column of the table: a backend, maybe with a thread count or ranks.
struct Column {
    label: String,
    backend: String,
    /// Extra environment (thread count, block size).
    env: Vec<(&'static str, &'static str)>,
    ranks: Ranks,
}

/// How to start the conformance binary.
pub enum Runner {
    /// `cargo run` with these features (the host backends').
    Cargo(String),
    /// A binary built before, perhaps on another machine (`cargo xtask gpu-check`), and
    /// environment variables for every run of it.
    Binary(PathBuf, Vec<(String, String)>),
}

impl Runner {
    /// The runner's binary, built when needed (for launching under `mpirun`).
    fn binary(&self) -> Result<PathBuf, String> {
        match self {
            Runner::Binary(path, _) => Ok(path.clone()),
            Runner::Cargo(features) => {
                let mut c = cargo();
                c.current_dir(root())
                    .args(["build", "--quiet", "-p", "op2-conformance"]);
                if !features.is_empty() {
                    c.args(["--features", features]);
                }
                let status = c.status().map_err(|e| format!("{c:?}: {e}"))?;
                if !status.success() {
                    return Err(format!("{c:?} failed with {status}"));
                }
                Ok(root().join("target/debug/op2-conformance"))
            }
        }
    }

    /// Runs the conformance binary with `args` and `env` under `mpirun -np ranks`.
    fn run_mpi(
        &self,
        ranks: usize,
        args: &[&str],
        env: &[(&str, &str)],
    ) -> Result<(bool, String), String> {
        let mut c = mpirun(ranks, 1800);
        if let Runner::Binary(_, vars) = self {
            c.envs(vars.iter().map(|(k, v)| (k, v)));
        }
        c.arg(self.binary()?)
            .args(args)
            .envs(env.iter().copied())
            // A rank that fails alone leaves the others waiting: fail them within a minute.
            .env("OP2_MPI_TIMEOUT", "60")
            .current_dir(root());
        let out = c.output().map_err(|e| format!("mpirun: {e}"))?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if stdout.is_empty() && !out.status.success() {
            return Err(format!(
                "the conformance binary failed under mpirun:\n{}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok((out.status.success(), stdout))
    }

    /// Runs the conformance binary with `args` and `env`: whether it succeeded, and its output.
    fn run(&self, args: &[&str], env: &[(&str, &str)]) -> Result<(bool, String), String> {
        let mut c = match self {
            Runner::Cargo(features) => {
                let mut c = cargo();
                c.current_dir(root())
                    .args(["run", "--quiet", "-p", "op2-conformance"]);
                if !features.is_empty() {
                    c.args(["--features", features]);
                }
                c.arg("--");
                c
            }
            Runner::Binary(path, vars) => {
                let mut c = Command::new(path);
                c.envs(vars.iter().map(|(k, v)| (k, v)));
                c
            }
        };
        c.args(args).envs(env.iter().copied());
        let out = c
            .output()
            .map_err(|e| format!("running the conformance binary: {e}"))?;
        let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
        if out.status.code() == Some(2) || (stdout.is_empty() && !out.status.success()) {
            return Err(format!(
                "the conformance binary failed:\n{}",
                String::from_utf8_lossy(&out.stderr)
            ));
        }
        Ok((out.status.success(), stdout))
    }
}

/// `cargo xtask conformance ARGS`: the runner built with every host backend's feature, and
/// `mpi` for the columns across ranks.
pub fn run(args: &[String]) -> Result<(), String> {
    let mut features = host_features();
    features.push("mpi");
    let features = features.join(",");
    eprintln!("xtask: building the conformance runner (features: {features:?})");
    run_with(&Runner::Cargo(features), args)
}

/// The conformance table of the backends `args` asks for, run by `runner`.
pub fn run_with(runner: &Runner, args: &[String]) -> Result<(), String> {
    let opts = parse(args)?;
    let (_, listed) = runner.run(&["list"], &[])?;
    let registered: Vec<String> = listed
        .lines()
        .filter_map(|l| l.split('\t').next())
        .map(String::from)
        .collect();
    let mut names: Vec<String> = if opts.backends.is_empty() {
        // The first-party backends, as the facade lists them, always shown (skipped with the
        // reason when they cannot run), then any other backend registered.
        let (_, known) = runner.run(&["known"], &[])?;
        let mut n: Vec<String> = known
            .lines()
            .filter_map(|l| l.split('\t').next())
            .map(String::from)
            .collect();
        n.extend(
            registered
                .iter()
                .filter(|r| !n.contains(r))
                .cloned()
                .collect::<Vec<_>>(),
        );
        n
    } else {
        opts.backends.clone()
    };
    for r in &opts.require {
        if !names.contains(r) {
            names.push(r.clone());
        }
    }
    let mut columns = Vec::new();
    for name in &names {
        if name == "openmp" && registered.contains(name) {
            columns.extend(OPENMP_THREADS.iter().map(|&t| Column {
                label: format!("openmp/{t}t"),
                backend: name.clone(),
                // Every loop on every thread, however small the case's mesh.
                env: vec![("OMP_NUM_THREADS", t), ("OP2_OMP_MIN_PER_THREAD", "1")],
                ranks: Ranks::One,
            }));
        } else if name.starts_with("cuda") && registered.contains(name) {
            // Every strategy, colouring with small blocks so that every case's sets span many
            // blocks and block colours, and staged atomics with small blocks too.
            let short = if name == "cuda" { "cuda" } else { "emu" };
            let columns_of: [(&str, Vec<(&'static str, &'static str)>); 4] = [
                ("colour", vec![("OP2_CUDA_STRATEGY", "colour")]),
                ("atomics", vec![("OP2_CUDA_STRATEGY", "atomics")]),
                (
                    "b16",
                    vec![("OP2_CUDA_STRATEGY", "colour"), ("OP2_PART_SIZE", "16")],
                ),
                // Many blocks of one launch adding to the same items.
                (
                    "staged-atomics/b16",
                    vec![
                        ("OP2_CUDA_STRATEGY", "staged-atomics"),
                        ("OP2_PART_SIZE", "16"),
                    ],
                ),
            ];
            columns.extend(columns_of.into_iter().map(|(what, env)| Column {
                label: format!("{short}/{what}"),
                backend: name.clone(),
                env,
                ranks: Ranks::One,
            }));
        } else {
            columns.push(Column {
                label: name.clone(),
                backend: name.clone(),
                env: Vec::new(),
                ranks: Ranks::One,
            });
            // Small blocks too, so that every case's sets span many blocks and block colours;
            // and the staged scheme GPUs run, on whatever device this is (PoCL's CPU device
            // defaults to the host scheme).
            if name == "opencl" && registered.contains(name) {
                let columns_of: [(&str, Vec<(&'static str, &'static str)>); 3] = [
                    ("b16", vec![("OP2_PART_SIZE", "16")]),
                    ("staged", vec![("OP2_OPENCL_SCHEME", "staged")]),
                    (
                        "staged/b16",
                        vec![("OP2_OPENCL_SCHEME", "staged"), ("OP2_PART_SIZE", "16")],
                    ),
                ];
                columns.extend(columns_of.into_iter().map(|(what, env)| Column {
                    label: format!("opencl/{what}"),
                    backend: name.clone(),
                    env,
                    ranks: Ranks::One,
                }));
            }
        }
    }
    // Across ranks, where the runner has it (feature `mpi`; a GPU bundle's runner does not):
    // the host backends under mpirun (OpenMP with one thread per rank, all loops threaded), the
    // CUDA backends on thread ranks of one process.
    let (across_ranks, _) = runner.run(&["ranks"], &[])?;
    for name in &names {
        if !across_ranks || !registered.contains(name) {
            continue;
        }
        for (n, partition) in RANKS {
            let (ranks, prefix) = match name.as_str() {
                "seq" | "openmp" | "opencl" => (Ranks::Mpi(n, partition), "mpi"),
                "cuda-emulator" | "cuda" if n == 2 => (Ranks::Threads(n, partition), "thr"),
                _ => continue,
            };
            columns.push(Column {
                label: format!("{prefix}{n}/{name}"),
                backend: name.clone(),
                env: if name == "openmp" {
                    vec![("OMP_NUM_THREADS", "1"), ("OP2_OMP_MIN_PER_THREAD", "1")]
                } else {
                    Vec::new()
                },
                ranks,
            });
        }
    }

    // case -> column label -> (status, detail)
    let mut table: BTreeMap<String, BTreeMap<String, (String, String)>> = BTreeMap::new();
    let mut order: Vec<String> = Vec::new();
    let mut failures = Vec::new();
    let mut skipped_required = Vec::new();
    for col in &columns {
        eprintln!("xtask: conformance of `{}`", col.label);
        let mut run_args = vec!["run", col.backend.as_str()];
        if let Some(r) = &opts.random {
            run_args.extend(["--random", r.as_str()]);
        }
        let count;
        let (_, out) = match col.ranks {
            Ranks::One => runner.run(&run_args, &col.env)?,
            Ranks::Mpi(n, partition) | Ranks::Threads(n, partition) => {
                count = n.to_string();
                run_args.extend(["--ranks", count.as_str(), "--partition", partition]);
                if matches!(col.ranks, Ranks::Mpi(..)) {
                    runner.run_mpi(n, &run_args, &col.env)?
                } else {
                    runner.run(&run_args, &col.env)?
                }
            }
        };
        for line in out.lines() {
            let mut parts = line.splitn(3, '\t');
            let (Some(case), Some(status), detail) = (parts.next(), parts.next(), parts.next())
            else {
                continue;
            };
            let detail = detail.unwrap_or("").to_string();
            if !order.iter().any(|c| c == case) {
                order.push(case.to_string());
            }
            match status {
                "FAIL" => failures.push(format!("{} / {case}: {detail}", col.label)),
                "skipped" if opts.require.contains(&col.backend) => {
                    skipped_required.push(format!("{}: {detail}", col.label))
                }
                _ => {}
            }
            table
                .entry(case.to_string())
                .or_default()
                .insert(col.label.clone(), (status.to_string(), detail));
        }
    }

    print_table(&order, &columns, &table);
    skipped_required.dedup();
    if !failures.is_empty() || !skipped_required.is_empty() {
        for f in &failures {
            eprintln!("FAIL {f}");
        }
        for s in &skipped_required {
            eprintln!("required backend skipped: {s}");
        }
        return Err(format!(
            "conformance: {} failure(s), {} required backend(s) skipped",
            failures.len(),
            skipped_required.len()
        ));
    }
    eprintln!("xtask: conformance passed");
    Ok(())
}

fn print_table(
    order: &[String],
    columns: &[Column],
    table: &BTreeMap<String, BTreeMap<String, (String, String)>>,
) {
    let width = order.iter().map(String::len).max().unwrap_or(4).max(4);
    let mut header = format!("{:width$}", "case");
    for c in columns {
        header.push_str(&format!("  {:>10}", c.label));
    }
    println!("{header}");
    for case in order {
        let mut line = format!("{case:width$}");
        for c in columns {
            let status = table
                .get(case)
                .and_then(|m| m.get(&c.label))
                .map(|(s, _)| s.as_str())
                .unwrap_or("-");
            line.push_str(&format!("  {status:>10}"));
        }
        println!("{line}");
    }
    // Why each skipped column was skipped, once per column.
    for c in columns {
        let why = order.iter().find_map(|case| {
            table
                .get(case)
                .and_then(|m| m.get(&c.label))
                .filter(|(s, _)| s == "skipped")
                .map(|(_, d)| d.clone())
        });
        if let Some(why) = why {
            println!("{}: skipped: {why}", c.label);
        }
    }
}
