//! `cargo xtask airfoil-mpi`: Airfoil's main job under `mpirun` at each rank count, on each host
//! backend, with each partitioner: checks the residuals against OP2-Common's at every N and
//! tabulates time per iteration, halo traffic and waiting. Also the `mpirun` command line the
//! other subcommands launch ranks with.

use super::{cargo, root, run};
use std::process::Command;

/// `mpirun -np ranks` as root, more ranks than cores allowed, a hang turned into a failure.
pub fn mpirun(ranks: usize, timeout_s: u64) -> Command {
    let mut c = Command::new("mpirun");
    c.env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .args(["-np", &ranks.to_string()])
        .args(["--oversubscribe", "--bind-to", "none"])
        .args(["--timeout", &timeout_s.to_string()]);
    c
}

/// Builds the Airfoil example (release) with `features`; its path.
pub fn build_airfoil(features: &str) -> Result<std::path::PathBuf, String> {
    run(cargo().args([
        "build",
        "--release",
        "-p",
        "airfoil",
        "--features",
        features,
        "--example",
        "airfoil",
    ]))?;
    Ok(root().join("target/release/examples/airfoil"))
}

/// Threads per rank for OpenMP so that ranks x threads fill the machine's cores.
pub fn threads_per_rank(ranks: usize) -> usize {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    (cores / ranks).max(1)
}

/// One run's figures, read back from the example's output.
struct Figures {
    ms_per_iteration: f64,
    matches: bool,
    halo_mb: f64,
    wait_share: f64,
}

/// Reads the example's stdout: the time line, the verdict, the per-loop table's halo columns.
fn figures(out: &str, iterations: usize) -> Option<Figures> {
    let ms = out
        .lines()
        .find(|l| l.contains("ms per iteration"))?
        .split(':')
        .nth(1)?
        .split_whitespace()
        .next()?
        .parse()
        .ok()?;
    // Loop rows: name calls time share GB/s [exch/call halo MB wait wait% reductions].
    let (mut time, mut wait, mut mb) = (0.0, 0.0, 0.0);
    for l in out.lines() {
        let f: Vec<&str> = l.split_whitespace().collect();
        if f.len() >= 5 && airfoil_loop(f[0]) {
            time += f[2].parse::<f64>().unwrap_or(0.0);
            if f.len() >= 10 {
                mb += f[6].parse::<f64>().unwrap_or(0.0);
                wait += f[7].parse::<f64>().unwrap_or(0.0);
            }
        }
    }
    Some(Figures {
        ms_per_iteration: ms,
        matches: out.contains("residuals match OP2-Common's reference"),
        halo_mb: mb / iterations.max(1) as f64,
        wait_share: if time > 0.0 { wait / time } else { 0.0 },
    })
}

fn airfoil_loop(name: &str) -> bool {
    ["save_soln", "adt_calc", "res_calc", "bres_calc", "update"].contains(&name)
}

/// Splits a comma-separated option value.
fn list(v: Option<&String>, what: &str) -> Result<Vec<String>, String> {
    let v = v.ok_or(format!("{what} needs a value"))?;
    Ok(v.split(',').map(str::to_string).collect())
}

/// `cargo xtask airfoil-mpi [--iterations N] [--ranks 1,2,3,4] [--backend seq,openmp]
/// [--partitioner metis,geometric,blocks] [--ij I J] [--renumber] [--hdf5]`: every combination
/// under mpirun; fails unless each run succeeds and (standard mesh, 100+ iterations) prints
/// OP2-Common's residuals. `--hdf5` writes the standard mesh as OP2's `new_grid.h5` first, has
/// every rank read its slice of it, and checks each run's VTK pieces and picture.
pub fn airfoil(args: &[String]) -> Result<(), String> {
    let mut iterations = 1000usize;
    let mut ranks: Vec<usize> = vec![1, 2, 3, 4];
    let mut backends = vec!["seq".to_string(), "openmp".to_string()];
    let mut partitioners = vec![
        "metis".to_string(),
        "geometric".to_string(),
        "blocks".to_string(),
    ];
    let mut extra: Vec<String> = Vec::new();
    let mut hdf5 = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--iterations" => {
                iterations = it
                    .next()
                    .and_then(|v| v.parse().ok())
                    .ok_or("--iterations needs a number")?
            }
            "--ranks" => {
                ranks = list(it.next(), "--ranks")?
                    .iter()
                    .map(|r| r.parse().map_err(|_| format!("bad rank count `{r}`")))
                    .collect::<Result<_, _>>()?
            }
            "--backend" => backends = list(it.next(), "--backend")?,
            "--partitioner" => partitioners = list(it.next(), "--partitioner")?,
            "--ij" => {
                extra.push("--ij".into());
                extra.push(it.next().ok_or("--ij needs I J")?.clone());
                extra.push(it.next().ok_or("--ij needs I J")?.clone());
            }
            "--renumber" => extra.push("--renumber".into()),
            "--hdf5" => hdf5 = true,
            other => return Err(format!("unknown option `{other}`")),
        }
    }
    let exe = build_airfoil("mpi,hdf5")?;
    let out_dir = root().join("target/airfoil-mpi");
    let mesh = out_dir.join("new_grid.h5");
    if hdf5 {
        std::fs::create_dir_all(&out_dir).map_err(|e| format!("{}: {e}", out_dir.display()))?;
        let mut c = Command::new(&exe);
        // One process writes the mesh (`--renumber` would make it a one-rank MPI job).
        c.args(["--iterations", "0", "--no-progress", "--write-mesh"])
            .arg(&mesh)
            .args(extra.iter().filter(|a| *a != "--renumber"));
        run(&mut c)?;
    }
    let mut rows = Vec::new();
    let mut failed = Vec::new();
    for backend in &backends {
        for partitioner in &partitioners {
            for &n in &ranks {
                let mut c = mpirun(n, 1800);
                let run_name = format!("{backend}-{partitioner}-{n}");
                let (vtk, png) = (
                    out_dir.join(format!("{run_name}/flow.pvtu")),
                    out_dir.join(format!("{run_name}.png")),
                );
                if hdf5 {
                    let _ = std::fs::remove_dir_all(out_dir.join(&run_name));
                    std::fs::create_dir_all(out_dir.join(&run_name))
                        .map_err(|e| format!("{}: {e}", out_dir.display()))?;
                    c.arg(&exe).arg("--mesh").arg(&mesh);
                    c.arg("--vtk").arg(&vtk).arg("--png").arg(&png);
                } else {
                    c.arg(&exe);
                }
                c.args(["--backend", backend, "--partitioner", partitioner])
                    .args(["--iterations", &iterations.to_string(), "--no-progress"])
                    .args(&extra)
                    .env("OMP_NUM_THREADS", threads_per_rank(n).to_string())
                    .current_dir(root());
                eprintln!("xtask: {backend}, {partitioner}, {n} ranks");
                let out = c.output().map_err(|e| format!("mpirun: {e}"))?;
                let stdout = String::from_utf8_lossy(&out.stdout);
                print!("{stdout}");
                let label = format!("{backend} {partitioner} x{n}");
                match figures(&stdout, iterations) {
                    Some(f) if out.status.success() => {
                        if !f.matches && extra.is_empty() && iterations >= 100 {
                            failed.push(format!("{label}: residuals differ"));
                        }
                        if hdf5 {
                            // One piece per rank (or one .vtu on one rank) and the picture.
                            let pieces: Vec<_> = if n == 1 {
                                vec![vtk.with_extension("vtu")]
                            } else {
                                (0..n)
                                    .map(|r| vtk.with_file_name(format!("flow_{r}.vtu")))
                                    .chain([vtk.clone()])
                                    .collect()
                            };
                            for f in pieces.iter().chain([&png]) {
                                if !f.exists() {
                                    failed.push(format!("{label}: no {}", f.display()));
                                }
                            }
                        }
                        rows.push((backend.clone(), partitioner.clone(), n, f));
                    }
                    _ => failed.push(format!(
                        "{label}: {} {}",
                        out.status,
                        String::from_utf8_lossy(&out.stderr)
                    )),
                }
            }
        }
    }
    println!(
        "\n{:<8} {:<10} {:>5} {:>9} {:>13} {:>14} {:>8}",
        "backend", "partition", "ranks", "threads", "ms per iter", "halo MB/iter", "wait %"
    );
    for (b, p, n, f) in &rows {
        println!(
            "{:<8} {:<10} {:>5} {:>9} {:>13.2} {:>14.3} {:>7.1}% {}",
            b,
            p,
            n,
            if b == "openmp" {
                threads_per_rank(*n)
            } else {
                1
            },
            f.ms_per_iteration,
            f.halo_mb,
            100.0 * f.wait_share,
            if f.matches {
                "residuals match"
            } else {
                "residuals DIFFER"
            }
        );
    }
    if failed.is_empty() {
        Ok(())
    } else {
        Err(failed.join("\n"))
    }
}

/// `cargo xtask setup-scaling [--cells N] [--ranks 1,2,4,8] [--partitioner geometric,ptscotch,metis]`:
/// op2-mpi's `setup-scaling` (release, with PT-Scotch) under `mpirun` at each rank count with
/// each partitioner, tabulated: the largest and mean peak memory per rank during the setup,
/// the kernel's high-water mark, the setup time, the edge cut and the largest cell halo.
pub fn setup_scaling(args: &[String]) -> Result<(), String> {
    let mut cells = 2_000_000usize;
    let mut ranks = vec!["1".to_string(), "2".into(), "4".into(), "8".into()];
    let mut partitioners = vec!["geometric".to_string(), "ptscotch".into(), "metis".into()];
    let mut i = 0;
    while i < args.len() {
        let value = args.get(i + 1);
        match args[i].as_str() {
            "--cells" => {
                cells = value
                    .and_then(|v| v.parse().ok())
                    .ok_or("--cells takes a number")?
            }
            "--ranks" => ranks = list(value, "--ranks")?,
            "--partitioner" => partitioners = list(value, "--partitioner")?,
            other => return Err(format!("unknown option `{other}`")),
        }
        i += 2;
    }
    run(cargo().args([
        "build",
        "--release",
        "-p",
        "op2-mpi",
        "--features",
        "ptscotch,parmetis",
        "--bin",
        "setup-scaling",
    ]))?;
    let exe = root().join("target/release/setup-scaling");
    let mb = |f: &std::collections::HashMap<&str, &str>, k: &str| -> String {
        f.get(k)
            .and_then(|v| v.parse::<f64>().ok())
            .map_or("-".into(), |b| format!("{:.1}", b / 1048576.0))
    };
    println!(
        "\n| partitioner | ranks | peak max (MiB) | peak mean (MiB) | RSS growth max (MiB) | setup (s) | edge cut | largest cell halo |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    let mut connectivity = String::new();
    for p in &partitioners {
        for r in &ranks {
            let n: usize = r.parse().map_err(|_| format!("bad rank count `{r}`"))?;
            let out = mpirun(n, 900)
                .env("OP2_MPI_TIMEOUT", "800")
                .arg(&exe)
                .args(["--cells", &cells.to_string(), "--partitioner", p])
                .output()
                .map_err(|e| format!("mpirun: {e}"))?;
            let stdout = String::from_utf8_lossy(&out.stdout);
            let Some(line) = stdout.lines().find(|l| l.starts_with("setup ")) else {
                return Err(format!(
                    "{p} at {n} ranks gave no figures:\n{stdout}\n{}",
                    String::from_utf8_lossy(&out.stderr)
                ));
            };
            let f: std::collections::HashMap<&str, &str> = line
                .split_whitespace()
                .filter_map(|kv| kv.split_once('='))
                .collect();
            if f.get("owned_ok") != Some(&"true") {
                return Err(format!("{p} at {n} ranks lost elements: {line}"));
            }
            connectivity = format!(
                "{} cells; maps as handed in (32-bit): {} MiB",
                f.get("cells").unwrap_or(&"?"),
                mb(&f, "connectivity_bytes")
            );
            println!(
                "| {p} | {n} | {} | {} | {} | {} | {} | {} |",
                mb(&f, "peak_max"),
                mb(&f, "peak_mean"),
                mb(&f, "hwm_max"),
                f.get("seconds").unwrap_or(&"-"),
                f.get("edge_cut").unwrap_or(&"-"),
                f.get("largest_halo").unwrap_or(&"-"),
            );
        }
    }
    println!("\n{connectivity}");
    Ok(())
}
