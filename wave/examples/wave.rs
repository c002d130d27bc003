//! Seed 002's running example: `cargo run --release --example wave [-- --n 100 --steps 1000
//! --every 100 --opts both]`. Advances the explicit wave equation with the lazy graph's
//! optimisations off and then on (or one of them: `--opts none|all`), printing the discrete
//! energy every `--every` steps (it must stay within 1e-3 of its first value, relatively), what
//! the graph did (nodes, exchanges removed, loops fused, temporaries reused), and the time per
//! step. Both runs must give the same energies.
//!
//! Across ranks (built with `--features mpi`): `mpirun -np 3 target/release/examples/wave`;
//! each rank builds its own strip of the mesh, and the energies are those of one process.

use op2::{LazyOptions, Runtime};
use std::process::ExitCode;
use std::time::Instant;
use wave::Wave;

struct Options {
    n: usize,
    steps: usize,
    every: usize,
    runs: Vec<(&'static str, LazyOptions)>,
}

fn parse() -> Result<Options, String> {
    let mut o = Options {
        n: 100,
        steps: 1000,
        every: 100,
        runs: vec![("off", LazyOptions::NONE), ("on", LazyOptions::ALL)],
    };
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = |name: &str| args.next().ok_or_else(|| format!("{name} needs a value"));
        let number = |v: String, name: &str| {
            v.parse::<usize>()
                .ok()
                .filter(|&x| x > 0)
                .ok_or_else(|| format!("{name}: expected a positive integer, got `{v}`"))
        };
        match a.as_str() {
            "--n" => o.n = number(value("--n")?, "--n")?,
            "--steps" => o.steps = number(value("--steps")?, "--steps")?,
            "--every" => o.every = number(value("--every")?, "--every")?,
            "--opts" => {
                o.runs = match value("--opts")?.as_str() {
                    "both" => vec![("off", LazyOptions::NONE), ("on", LazyOptions::ALL)],
                    "none" | "off" => vec![("off", LazyOptions::NONE)],
                    "all" | "on" => vec![("on", LazyOptions::ALL)],
                    other => vec![("custom", other.parse().map_err(|e| format!("--opts: {e}"))?)],
                }
            }
            "--help" | "-h" => {
                println!(
                    "wave [--n SQUARES] [--steps N] [--every N] [--opts both|none|all|LIST]\n\
                     LIST is OP2_LAZY_OPT's syntax, e.g. none,chain_fusion"
                );
                std::process::exit(0);
            }
            other => return Err(format!("unknown argument `{other}` (try --help)")),
        }
    }
    Ok(o)
}

/// One run's results.
struct Run {
    energies: Vec<(usize, f64)>,
    ms_per_step: f64,
}

fn run_once(
    o: &Options,
    label: &str,
    opts: LazyOptions,
    builder: impl Fn() -> op2::RuntimeBuilder,
) -> Result<Run, String> {
    let rt: Runtime = builder()
        .lazy_optimisations(opts)
        .build()
        .map_err(|e| e.to_string())?;
    let root = rt.communicator().rank() == 0;
    let w = Wave::new(&rt, o.n).map_err(|e| e.to_string())?;
    let e = |w: &Wave| w.energy().map_err(|e| e.to_string());
    let mut energies = vec![(0, e(&w)?)];
    // The first interval compiles the kernels (and the fused ones): the clock starts after it
    // when there are more.
    let warm = if o.steps > o.every { o.every } else { 0 };
    let mut before = rt.lazy_stats();
    let mut exchanges_before = 0;
    let mut stepping = 0.0;
    for step in 1..=o.steps {
        let t = Instant::now();
        w.step().map_err(|e| e.to_string())?;
        if step % o.every == 0 || step == o.steps {
            // Forces the steps since the last print: they run as one graph.
            rt.flush().map_err(|e| e.to_string())?;
            stepping += t.elapsed().as_secs_f64();
            energies.push((step, e(&w)?));
        } else {
            stepping += t.elapsed().as_secs_f64();
        }
        if step == warm {
            stepping = 0.0;
            before = rt.lazy_stats();
            exchanges_before = rt.halo_exchanges();
        }
    }
    let s = rt.lazy_stats();
    let timed = (o.steps - warm) as f64;
    let per_step = |x: u64, y: u64| (x - y) as f64 / timed;
    if root {
        println!("optimisations {label} ({opts:?})");
        for (step, en) in &energies {
            println!("  step {step:>6}  energy {en:.12e}");
        }
        println!(
            "  per step: {:.1} graph nodes, {:.2} exchanges, {:.2} removed early, {:.2} removed as successive, \
             {:.2} sibling + {:.2} chain fusions, {:.2} temporaries reused",
            per_step(s.nodes_recorded, before.nodes_recorded),
            per_step(rt.halo_exchanges(), exchanges_before),
            per_step(s.early_exchanges_removed, before.early_exchanges_removed),
            per_step(
                s.successive_exchanges_removed,
                before.successive_exchanges_removed
            ),
            per_step(s.sibling_fusions, before.sibling_fusions),
            per_step(s.chain_fusions, before.chain_fusions),
            per_step(s.temporaries_reused, before.temporaries_reused),
        );
        println!(
            "  {:.4} ms per step over steps {}..={} (energies included), sends overlapping work {:.3} ms per step",
            stepping * 1e3 / timed,
            warm + 1,
            o.steps,
            (s.overlap_seconds - before.overlap_seconds) * 1e3 / timed
        );
    }
    Ok(Run {
        energies,
        ms_per_step: stepping * 1e3 / timed,
    })
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("wave: {e}");
            ExitCode::from(2)
        }
    }
}

fn run() -> Result<bool, String> {
    let o = parse()?;
    #[cfg(feature = "mpi")]
    let mpi = if op2::mpi::launched_by_mpirun() {
        Some(op2::mpi::Mpi::init().map_err(|e| e.to_string())?)
    } else {
        None
    };
    let builder = || {
        #[allow(unused_mut)]
        let mut b = op2::builder();
        #[cfg(feature = "mpi")]
        if let Some(m) = &mpi {
            b = b.communicator(m.world());
        }
        b
    };
    let probe = builder().build().map_err(|e| e.to_string())?;
    let (ranks, rank, backend) = (
        probe.communicator().size(),
        probe.communicator().rank(),
        probe.backend_name().to_string(),
    );
    drop(probe);
    if rank == 0 {
        println!(
            "wave: {0} x {0} squares, {1} vertices, {2} steps of dt {3}, backend {backend}, {ranks} rank(s)",
            o.n,
            (o.n + 1) * (o.n + 1),
            o.steps,
            wave::DT
        );
    }
    let mut runs = Vec::new();
    for (label, opts) in &o.runs {
        runs.push(run_once(&o, label, *opts, builder)?);
    }
    let mut ok = true;
    if rank == 0 {
        let first = &runs[0];
        let e0 = first.energies[0].1;
        let drift = first
            .energies
            .iter()
            .map(|(_, e)| ((e - e0) / e0).abs())
            .fold(0.0, f64::max);
        println!("energy: largest relative change {drift:.3e} (must stay below 1e-3)");
        ok &= drift < 1e-3;
        for other in &runs[1..] {
            let worst = first
                .energies
                .iter()
                .zip(&other.energies)
                .map(|((_, a), (_, b))| ((a - b) / a).abs())
                .fold(0.0, f64::max);
            println!("runs agree: largest relative difference {worst:.3e} (must stay below 1e-12)");
            ok &= worst < 1e-12;
            println!(
                "time per step: on/off = {:.3} ({:.4} ms against {:.4} ms)",
                other.ms_per_step / first.ms_per_step,
                other.ms_per_step,
                first.ms_per_step
            );
        }
    }
    Ok(ok)
}
