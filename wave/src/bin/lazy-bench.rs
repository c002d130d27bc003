//! `cargo xtask bench` (its lazy-graph part): what the lazy graph costs and what its
//! optimisations save, each measured side by side in one run.
//!
//! 1. Overhead: recording a loop with 0 to 128 nodes pending, and scheduling 128 pending nodes
//!    (the graph's own time per node, from [`op2::LazyStats::schedule_seconds`]).
//! 2. Direct-chain fusion: five dependent direct loops over 10 million elements of 1 and of 8
//!    values, fused against unfused (seq, and openmp with 2 threads), alternating runs, best of
//!    each.
//!    Then five sibling loops (independent, over the same set) that read one Dat of 8 values
//!    per element, fused against unfused.
//! 3. The wave example (seed 002's running example), every optimisation off against on (three
//!    runs each, alternating, best of each): time
//!    and exchanges per step, in one process and across 2 MPI ranks (with the `mpi` feature;
//!    there too three runs each, alternating).
//! 4. Airfoil on the standard mesh, off against on (likewise): ms and exchanges per iteration, in one
//!    process (openmp, 2 threads) and across 2 MPI ranks.
//! 5. Sparse tiling on the wave example (a 1000 x 1000 grid) and on Airfoil: every chain tiled
//!    (`OP2_TILING=always`) against tiling off, the other optimisations on (alternating runs,
//!    best of each), with the chains and tiles run.
//!
//! `lazy-bench [--elements N] [--reps R] [--wave-steps S] [--airfoil-iterations I]`

use airfoil::{Airfoil, Constants, Mesh, STANDARD_IJ};
use op2::{Kernel, LazyOptions, READ, RW, Runtime};
use std::time::Instant;
use wave::Wave;

struct Args {
    elements: usize,
    reps: usize,
    wave_steps: usize,
    airfoil_iterations: usize,
    worker: Option<(String, String)>,
    /// Only these parts (overhead, chain, wave, airfoil); all when empty.
    only: Vec<String>,
}

fn parse() -> Result<Args, String> {
    let mut a = Args {
        elements: 10_000_000,
        reps: 5,
        wave_steps: 1000,
        airfoil_iterations: 200,
        worker: None,
        only: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(x) = it.next() {
        let mut num = |name: &str| -> Result<usize, String> {
            it.next()
                .and_then(|v| v.parse().ok())
                .filter(|&v: &usize| v > 0)
                .ok_or_else(|| format!("{name} needs a positive integer"))
        };
        match x.as_str() {
            "--elements" => a.elements = num("--elements")?,
            "--reps" => a.reps = num("--reps")?,
            "--wave-steps" => a.wave_steps = num("--wave-steps")?,
            "--airfoil-iterations" => a.airfoil_iterations = num("--airfoil-iterations")?,
            "--only" => a.only.push(it.next().ok_or("--only needs a part")?),
            "--worker" => {
                let what = it.next().ok_or("--worker needs WHAT OPTS")?;
                let opts = it.next().ok_or("--worker needs WHAT OPTS")?;
                a.worker = Some((what, opts));
            }
            other => return Err(format!("unknown argument `{other}`")),
        }
    }
    Ok(a)
}

fn rt(backend: &str, threads: usize, opts: LazyOptions) -> Result<Runtime, String> {
    op2::builder()
        .backend(backend)
        .num_threads(threads)
        .lazy_optimisations(opts)
        .build()
        .map_err(|e| e.to_string())
}

fn e2s(e: op2::Op2Error) -> String {
    e.to_string()
}

/// Microseconds to record a loop with `pending` nodes already pending, and to schedule 128
/// pending nodes, per node (medians over rounds).
fn overhead() -> Result<(), String> {
    let rt = rt("seq", 1, LazyOptions::ALL)?;
    let s = rt.decl_set(64, "s").map_err(e2s)?;
    let dats: Vec<_> = (0..4)
        .map(|i| rt.decl_dat_zeros::<f64>(&s, 1, &format!("d{i}")))
        .collect::<Result<_, _>>()
        .map_err(e2s)?;
    let k = Kernel::new(
        "bump",
        "void bump(const double *a, double *b) { *b += *a; }",
    )
    .map_err(e2s)?;
    let rounds = 200;
    let mut record = Vec::new();
    let mut schedule = Vec::new();
    for round in 0..rounds {
        let t = Instant::now();
        for i in 0..128 {
            // A chain through four Dats: every loop depends on the one before.
            let (a, b) = (&dats[i % 4], &dats[(i + 1) % 4]);
            rt.par_loop(&k, &s, [a.arg(READ), b.arg(RW)]).map_err(e2s)?;
        }
        let recorded = t.elapsed().as_secs_f64() / 128.0;
        let before = rt.lazy_stats();
        rt.flush().map_err(e2s)?;
        let after = rt.lazy_stats();
        if round > 0 {
            record.push(recorded * 1e6);
            schedule.push(
                (after.schedule_seconds - before.schedule_seconds) * 1e6
                    / (after.nodes_scheduled - before.nodes_scheduled).max(1) as f64,
            );
        }
    }
    let median = |v: &mut Vec<f64>| {
        v.sort_by(f64::total_cmp);
        v[v.len() / 2]
    };
    println!(
        "overhead: recording a loop {:.2} us (goal 2), scheduling {:.3} us per node at 128 pending (goal 1)",
        median(&mut record),
        median(&mut schedule)
    );
    Ok(())
}

/// Five dependent direct loops over `n` elements of `dim` values (each loop one operation per
/// value, so that memory, not arithmetic, bounds them): unfused against fused, alternating.
fn chain(backend: &str, threads: usize, n: usize, dim: usize, reps: usize) -> Result<(), String> {
    let kernels: Vec<Kernel> = [
        ("c1", "u[i] *= 0.999;"),
        ("c2", "u[i] += 0.001;"),
        ("c3", "u[i] *= 1.0005;"),
        ("c4", "u[i] -= 0.0003;"),
        ("c5", "u[i] *= 0.5;"),
    ]
    .iter()
    .map(|(name, body)| {
        Kernel::new(
            name,
            &format!("void {name}(double *u) {{ for (int i = 0; i < {dim}; i++) {body} }}"),
        )
    })
    .collect::<Result<_, _>>()
    .map_err(e2s)?;
    let fused = "none,chain_fusion".parse::<LazyOptions>().map_err(e2s)?;
    let best = alternate(
        backend,
        threads,
        fused,
        reps,
        |rt| {
            let s = rt.decl_set(n, "elements").map_err(e2s)?;
            let u = rt
                .decl_dat(&s, dim, vec![0.5f64; n * dim], "u")
                .map_err(e2s)?;
            Ok((s, u))
        },
        |rt, (s, u)| {
            for kn in &kernels {
                rt.par_loop(kn, s, [u.arg(RW)]).map_err(e2s)?;
            }
            rt.flush().map_err(e2s)
        },
        |(_, u)| u.to_vec().map_err(e2s),
    )?;
    let bytes = 5.0 * 16.0 * (n * dim) as f64;
    println!(
        "chain of 5 direct loops, {n} elements of dim {dim} ({} MB), {backend} x{threads}: unfused {:.2} ms ({:.1} GB/s by loop-at-a-time bytes), fused {:.2} ms: {:.2}x faster, results bit-identical",
        n * dim * 8 / 1_000_000,
        best[0] * 1e3,
        bytes / best[0] / 1e9,
        best[1] * 1e3,
        best[0] / best[1],
    );
    Ok(())
}

/// Five independent direct loops over `n` elements, each reading the same 8 values per element
/// and writing its own Dat: unfused against sibling-fused, alternating.
fn siblings(backend: &str, threads: usize, n: usize, reps: usize) -> Result<(), String> {
    let kernels: Vec<Kernel> = (1..=5)
        .map(|k| {
            let name = format!("s{k}");
            Kernel::new(
                &name,
                &format!(
                    "void {name}(const double *u, double *v) {{ double s = 0.0;                      for (int i = 0; i < 8; i++) s += u[i]; *v = {k}.0 * s; }}"
                ),
            )
        })
        .collect::<Result<_, _>>()
        .map_err(e2s)?;
    let fused = "none,sibling_fusion".parse::<LazyOptions>().map_err(e2s)?;
    let best = alternate(
        backend,
        threads,
        fused,
        reps,
        |rt| {
            let s = rt.decl_set(n, "elements").map_err(e2s)?;
            let init: Vec<f64> = (0..n * 8).map(|i| (i % 13) as f64).collect();
            let u = rt.decl_dat(&s, 8, init, "u").map_err(e2s)?;
            let vs: Vec<_> = (0..5)
                .map(|i| rt.decl_dat_zeros::<f64>(&s, 1, &format!("v{i}")))
                .collect::<Result<_, _>>()
                .map_err(e2s)?;
            Ok((s, u, vs))
        },
        |rt, (s, u, vs)| {
            for (kn, v) in kernels.iter().zip(vs) {
                rt.par_loop(kn, s, [u.arg(READ), v.arg(op2::WRITE)])
                    .map_err(e2s)?;
            }
            rt.flush().map_err(e2s)
        },
        |(_, _, vs)| vs[4].to_vec().map_err(e2s),
    )?;
    println!(
        "five sibling loops reading one {} MB Dat, {backend} x{threads}: unfused {:.2} ms, fused {:.2} ms: {:.2}x faster, results bit-identical",
        n * 64 / 1_000_000,
        best[0] * 1e3,
        best[1] * 1e3,
        best[0] / best[1],
    );
    Ok(())
}

/// Times a loop pattern off (every optimisation off) and on (`on`), alternating runs (off, on,
/// on, off), each on a new runtime of `backend` with `threads`: `setup` declares the data,
/// `round` records and forces one round (run once untimed: compiling, first touch, then `reps`
/// times), `values` reads what is compared. The best seconds of each; an error when the values
/// of the first off and on runs differ.
fn alternate<S>(
    backend: &str,
    threads: usize,
    on: LazyOptions,
    reps: usize,
    setup: impl Fn(&Runtime) -> Result<S, String>,
    round: impl Fn(&Runtime, &S) -> Result<(), String>,
    values: impl Fn(&S) -> Result<Vec<f64>, String>,
) -> Result<[f64; 2], String> {
    let mut best = [f64::INFINITY; 2];
    let mut results: [Vec<f64>; 2] = [Vec::new(), Vec::new()];
    for (k, which) in [0, 1, 1, 0].into_iter().enumerate() {
        let rt = rt(backend, threads, [LazyOptions::NONE, on][which])?;
        let data = setup(&rt)?;
        round(&rt, &data)?;
        for _ in 0..reps {
            let t = Instant::now();
            round(&rt, &data)?;
            best[which] = best[which].min(t.elapsed().as_secs_f64());
        }
        if k < 2 {
            results[which] = values(&data)?;
        }
    }
    if results[0] != results[1] {
        return Err("the results differ with the optimisations off and on".into());
    }
    Ok(best)
}

/// The wave example on `rt`: ms per step after a warm-up, exchanges per step.
fn wave_run(rt: &Runtime, steps: usize) -> Result<(f64, f64, f64), String> {
    let w = Wave::new(rt, 100).map_err(e2s)?;
    // Warm-up with the timed run's pattern, so that every fused combination it meets is
    // compiled before the clock starts.
    for s in 1..=200 {
        w.step().map_err(e2s)?;
        if s % 100 == 0 {
            w.p.to_vec().map_err(e2s)?;
        }
    }
    let x0 = rt.halo_exchanges();
    let t = Instant::now();
    for s in 1..=steps {
        w.step().map_err(e2s)?;
        if s % 100 == 0 {
            w.p.to_vec().map_err(e2s)?;
        }
    }
    rt.flush().map_err(e2s)?;
    let ms = t.elapsed().as_secs_f64() * 1e3 / steps as f64;
    let e = w.energy().map_err(e2s)?;
    Ok((ms, (rt.halo_exchanges() - x0) as f64 / steps as f64, e))
}

/// Airfoil on `rt`: ms and exchanges per iteration after a warm-up iteration.
fn airfoil_run(a: &Airfoil, rt: &Runtime, iters: usize) -> Result<(f64, f64, f64), String> {
    a.step().map_err(e2s)?;
    a.reset(&Constants::default()).map_err(e2s)?;
    rt.flush().map_err(e2s)?;
    let x0 = rt.halo_exchanges();
    let t = Instant::now();
    let mut r = 0.0;
    for _ in 0..iters {
        r = a.step().map_err(e2s)?;
    }
    rt.flush().map_err(e2s)?;
    Ok((
        t.elapsed().as_secs_f64() * 1e3 / iters as f64,
        (rt.halo_exchanges() - x0) as f64 / iters as f64,
        r,
    ))
}

fn opts_named(name: &str) -> LazyOptions {
    if name == "on" {
        LazyOptions::ALL
    } else {
        LazyOptions::NONE
    }
}

/// A worker under mpirun: `what` is `wave` or `airfoil`, `opts` `on` or `off`.
#[cfg(feature = "mpi")]
fn worker(what: &str, opts: &str, args: &Args) -> Result<(), String> {
    let mpi = op2::mpi::Mpi::init().map_err(|e| e.to_string())?;
    let rt = op2::builder()
        .backend("seq")
        .communicator(mpi.world())
        .lazy_optimisations(opts_named(opts))
        .build()
        .map_err(e2s)?;
    let (ms, x, v) = if what == "wave" {
        wave_run(&rt, args.wave_steps)?
    } else {
        let mesh = Mesh::generate(STANDARD_IJ.0, STANDARD_IJ.1);
        let (a, _) = airfoil::distributed::partitioned(&rt, &mesh, &Constants::default(), |h| {
            op2::mpi::Options::new(op2::mpi::Partitioner::Metis { map: h.pecell })
        })
        .map_err(|e| e.to_string())?;
        airfoil_run(&a, &rt, args.airfoil_iterations)?
    };
    if rt.communicator().rank() == 0 {
        println!("RESULT\t{ms}\t{x}\t{v:e}");
    }
    Ok(())
}

#[cfg(not(feature = "mpi"))]
fn worker(_: &str, _: &str, _: &Args) -> Result<(), String> {
    Err("workers need the `mpi` feature".into())
}

/// `what` across 2 MPI ranks, off and on, alternating three times: the best (ms, exchanges,
/// value) of each.
fn off_and_on_two_ranks(what: &str, args: &Args) -> Result<[(f64, f64, String); 2], String> {
    let mut best: [Option<(f64, f64, String)>; 2] = [None, None];
    for which in [0, 1, 1, 0, 0, 1] {
        let r = on_two_ranks(what, ["off", "on"][which], args)?;
        if best[which].as_ref().is_none_or(|b| r.0 < b.0) {
            best[which] = Some(r);
        }
    }
    let [off, on] = best;
    Ok([off.expect("ran"), on.expect("ran")])
}

/// `what` across 2 MPI ranks with `opts`: (ms, exchanges, value) from rank 0.
fn on_two_ranks(what: &str, opts: &str, args: &Args) -> Result<(f64, f64, String), String> {
    let exe = std::env::current_exe().map_err(|e| e.to_string())?;
    let out = std::process::Command::new("mpirun")
        .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
        .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
        .args(["-np", "2", "--oversubscribe", "--bind-to", "none"])
        .args(["--timeout", "1200"])
        .arg(exe)
        .args(["--worker", what, opts])
        .args(["--wave-steps", &args.wave_steps.to_string()])
        .args(["--airfoil-iterations", &args.airfoil_iterations.to_string()])
        .output()
        .map_err(|e| format!("mpirun: {e}"))?;
    let stdout = String::from_utf8_lossy(&out.stdout);
    let line = stdout
        .lines()
        .find_map(|l| l.strip_prefix("RESULT\t"))
        .ok_or_else(|| format!("{}: {}", out.status, String::from_utf8_lossy(&out.stderr)))?;
    let f: Vec<&str> = line.split('\t').collect();
    let num = |s: &str| s.parse::<f64>().map_err(|_| format!("bad line {line}"));
    Ok((num(f[0])?, num(f[1])?, f[2].to_string()))
}

fn main() {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("lazy-bench: {e}");
            std::process::exit(2);
        }
    };
    if let Some((what, opts)) = &args.worker {
        if let Err(e) = worker(what, opts, &args) {
            eprintln!("lazy-bench worker: {e}");
            std::process::exit(1);
        }
        return;
    }
    if let Err(e) = run(&args) {
        eprintln!("lazy-bench: {e}");
        std::process::exit(1);
    }
}

fn run(args: &Args) -> Result<(), String> {
    let part = |p: &str| args.only.is_empty() || args.only.iter().any(|o| o == p);
    if part("overhead") {
        overhead()?;
    }
    let have_openmp = op2::backends().iter().any(|b| b.name == "openmp");
    if part("chain") {
        // dim 8: 640 MB, past this machine's 480 MiB L3 (dim 1's 80 MB would sit in it).
        for dim in [1, 8] {
            chain("seq", 1, args.elements, dim, args.reps)?;
            if have_openmp {
                chain("openmp", 2, args.elements, dim, args.reps)?;
            }
        }
    }
    if part("siblings") {
        siblings("seq", 1, args.elements, args.reps)?;
        if have_openmp {
            siblings("openmp", 2, args.elements, args.reps)?;
        }
    }
    if part("wave") {
        wave_part(args)?;
    }
    if part("airfoil") {
        airfoil_part(args, have_openmp)?;
    }
    if part("tiling") {
        tiling_part(args, have_openmp)?;
    }
    Ok(())
}

/// Tiling off against forced on, the other optimisations on: the wave example on a large grid
/// and Airfoil, on openmp with 2 threads where built (else seq).
fn tiling_part(args: &Args, have_openmp: bool) -> Result<(), String> {
    let backend = if have_openmp { "openmp" } else { "seq" };
    let build = |tiled: bool| -> Result<Runtime, String> {
        let mut opts = LazyOptions::ALL;
        opts.tiling = tiled;
        op2::builder()
            .backend(backend)
            .num_threads(2)
            .lazy_optimisations(opts)
            .tiling(op2::TilingMode::Always)
            .build()
            .map_err(e2s)
    };
    let steps = (args.wave_steps / 10).max(10);
    let (mut best, mut energy, mut tiled_stats) = ([f64::INFINITY; 2], [0.0; 2], None);
    for which in [0, 1, 1, 0, 0, 1] {
        let r = build(which == 1)?;
        let w = Wave::new(&r, 1000).map_err(e2s)?;
        for _ in 0..3 {
            w.step().map_err(e2s)?;
        }
        r.flush().map_err(e2s)?;
        let t = Instant::now();
        for _ in 0..steps {
            w.step().map_err(e2s)?;
        }
        r.flush().map_err(e2s)?;
        best[which] = best[which].min(t.elapsed().as_secs_f64() * 1e3 / steps as f64);
        energy[which] = w.energy().map_err(e2s)?;
        if which == 1 {
            tiled_stats = Some(r.lazy_stats());
        }
    }
    let close = |a: f64, b: f64| (a - b).abs() <= 1e-12 * b.abs().max(1e-300);
    report(
        &format!("wave 1000 x 1000, tiling ({backend} x2)"),
        "step",
        best,
        close(energy[0], energy[1]),
        "energies (to 1e-12)",
    );
    if let Some(s) = tiled_stats {
        println!(
            "  tiled: {} chains, {} loops, {} tiles in {} levels; {} inspections, {:.3} s",
            s.tiled_chains,
            s.tiled_loops,
            s.tiles_run,
            s.tile_levels,
            s.tiling_inspections,
            s.tiling_seconds
        );
    }
    let mesh = Mesh::generate(STANDARD_IJ.0, STANDARD_IJ.1);
    let (mut best, mut residual) = ([f64::INFINITY; 2], [0.0; 2]);
    for which in [0, 1, 1, 0, 0, 1] {
        let r = build(which == 1)?;
        let a = Airfoil::new(&r, &mesh, &Constants::default()).map_err(e2s)?;
        let (ms, _, res) = airfoil_run(&a, &r, args.airfoil_iterations)?;
        best[which] = best[which].min(ms);
        residual[which] = res;
    }
    report(
        &format!("airfoil, tiling ({backend} x2)"),
        "iteration",
        best,
        format!("{:.5e}", residual[0]) == format!("{:.5e}", residual[1]),
        "residuals (to 6 digits)",
    );
    Ok(())
}

fn mpi_here() -> bool {
    cfg!(feature = "mpi")
        && std::process::Command::new("mpirun")
            .arg("--version")
            .output()
            .is_ok()
}

fn wave_part(args: &Args) -> Result<(), String> {
    // The wave example, one process: off, on, on, off.
    let mut best = [f64::INFINITY; 2];
    let mut energy = [0.0; 2];
    for which in [0, 1, 1, 0, 0, 1] {
        let r = rt("seq", 1, opts_named(["off", "on"][which]))?;
        let (ms, _, e) = wave_run(&r, args.wave_steps)?;
        best[which] = best[which].min(ms);
        energy[which] = e;
    }
    report(
        "wave, 1 process (seq)",
        "step",
        best,
        energy[0] == energy[1],
        "energies",
    );
    if mpi_here() {
        report_ranks(
            "wave",
            "step",
            "energies",
            &off_and_on_two_ranks("wave", args)?,
        );
    }
    Ok(())
}

/// Prints one process's off and on times (ms per `unit`) and whether their results agree.
fn report(what: &str, unit: &str, ms: [f64; 2], equal: bool, results: &str) {
    println!(
        "{what}: {:.4} ms per {unit} off, {:.4} on: on/off {:.3}; {results} {}",
        ms[0],
        ms[1],
        ms[1] / ms[0],
        if equal { "equal" } else { "DIFFERENT" }
    );
}

/// Prints the off and on rows across 2 MPI ranks: ms and exchanges per `unit`, rank 0's result.
fn report_ranks(what: &str, unit: &str, results: &str, rows: &[(f64, f64, String); 2]) {
    let [off, on] = rows;
    println!(
        "{what}, 2 MPI ranks (seq): off {:.4} ms and {:.2} exchanges per {unit}, on {:.4} ms and {:.2}: on/off {:.3}; {results} {} / {}",
        off.0,
        off.1,
        on.0,
        on.1,
        on.0 / off.0,
        off.2,
        on.2
    );
}

fn airfoil_part(args: &Args, have_openmp: bool) -> Result<(), String> {
    // Airfoil on the standard mesh, one process: openmp (2 threads) where built, else seq.
    let backend = if have_openmp { "openmp" } else { "seq" };
    let mesh = Mesh::generate(STANDARD_IJ.0, STANDARD_IJ.1);
    let mut best = [f64::INFINITY; 2];
    let mut residual = [0.0; 2];
    for which in [0, 1, 1, 0, 0, 1] {
        let r = rt(backend, 2, opts_named(["off", "on"][which]))?;
        let a = Airfoil::new(&r, &mesh, &Constants::default()).map_err(e2s)?;
        let (ms, _, res) = airfoil_run(&a, &r, args.airfoil_iterations)?;
        best[which] = best[which].min(ms);
        residual[which] = res;
    }
    report(
        &format!("airfoil, 1 process ({backend} x2)"),
        "iteration",
        best,
        residual[0] == residual[1],
        "residuals",
    );
    if mpi_here() {
        let rows = off_and_on_two_ranks("airfoil", args)?;
        report_ranks("airfoil", "iteration", "residuals", &rows);
    }
    Ok(())
}
