//! The main job: Airfoil on the standard mesh (generated, no input files), 1000 iterations on the
//! OpenMP backend where it is built in (every core), the residual every 100 printed as OP2 prints
//! it, OP2's per-loop timing table, and whether the residuals match OP2-Common's.
//!
//! `cargo run --release --example airfoil -- [--iterations N] [--backend NAME] [--mesh FILE]
//! [--ij I J] [--write-mesh FILE]`

use airfoil::{Airfoil, Constants, LOOPS, Mesh, REFERENCE_RESIDUALS, STANDARD_IJ, format_residual};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Instant;

struct Options {
    iterations: usize,
    backend: Option<String>,
    mesh: Option<PathBuf>,
    ij: (usize, usize),
    write_mesh: Option<PathBuf>,
}

fn parse() -> Result<Options, String> {
    let mut o = Options {
        iterations: 1000,
        backend: None,
        mesh: None,
        ij: STANDARD_IJ,
        write_mesh: None,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut it = args.iter();
    let num = |v: Option<&String>, what: &str| -> Result<usize, String> {
        v.ok_or(format!("{what} needs a value"))?
            .parse()
            .map_err(|_| format!("{what} needs a positive integer"))
    };
    while let Some(a) = it.next() {
        match a.as_str() {
            "--iterations" => o.iterations = num(it.next(), "--iterations")?,
            "--backend" => o.backend = Some(it.next().ok_or("--backend needs a name")?.clone()),
            "--mesh" => o.mesh = Some(it.next().ok_or("--mesh needs a file")?.into()),
            "--write-mesh" => {
                o.write_mesh = Some(it.next().ok_or("--write-mesh needs a file")?.into())
            }
            "--ij" => o.ij = (num(it.next(), "--ij")?, num(it.next(), "--ij")?),
            "--help" | "-h" => {
                return Err("usage: airfoil [--iterations N] [--backend NAME] [--mesh FILE] [--ij I J] [--write-mesh FILE]".into());
            }
            other => return Err(format!("unknown option `{other}` (try --help)")),
        }
    }
    if o.ij.0 < 2 || o.ij.1 < 2 {
        return Err("--ij needs I >= 2 and J >= 2".into());
    }
    Ok(o)
}

fn main() -> ExitCode {
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(e) => {
            eprintln!("airfoil: {e}");
            ExitCode::from(2)
        }
    }
}

/// Runs the job; `Ok(false)` when the residuals should match the reference and do not.
fn run() -> Result<bool, String> {
    let o = parse()?;
    let t = Instant::now();
    let (mesh, standard) = match &o.mesh {
        Some(path) => (Mesh::read(path).map_err(|e| e.to_string())?, false),
        None => (Mesh::generate(o.ij.0, o.ij.1), o.ij == STANDARD_IJ),
    };
    println!(
        "mesh: {} nodes, {} cells, {} edges, {} boundary edges ({:.2} s)",
        mesh.nnode(),
        mesh.ncell(),
        mesh.nedge(),
        mesh.nbedge(),
        t.elapsed().as_secs_f64()
    );
    if let Some(path) = &o.write_mesh {
        mesh.write(path)
            .map_err(|e| format!("{}: {e}", path.display()))?;
        println!("wrote {}", path.display());
    }
    let mut b = op2::builder();
    match (&o.backend, std::env::var_os("OP2_BACKEND")) {
        (Some(name), _) => b = b.backend(name),
        // The main job uses the machine's cores where the OpenMP backend is built in.
        (None, None) if op2::backends().iter().any(|f| f.name == "openmp") => {
            b = b.backend("openmp")
        }
        _ => {}
    }
    let rt = b.build().map_err(|e| e.to_string())?;
    let threads = match rt.backend_name() {
        "openmp" => format!(
            " ({} threads)",
            rt.config()
                .num_threads
                .unwrap_or_else(|| { std::thread::available_parallelism().map_or(1, usize::from) })
        ),
        _ => String::new(),
    };
    println!(
        "backend: {}{threads} (--backend NAME or OP2_BACKEND chooses another)",
        rt.backend_name()
    );
    let airfoil = Airfoil::new(&rt, &mesh, &Constants::default()).map_err(|e| e.to_string())?;

    let t = Instant::now();
    let mut printed = Vec::new();
    for iter in 1..=o.iterations {
        let rms = airfoil.step().map_err(|e| e.to_string())?;
        if iter % 100 == 0 {
            let r = format_residual(rms);
            println!(" {iter:5}  {r}");
            printed.push(r);
        }
    }
    let total = t.elapsed().as_secs_f64();
    println!(
        "{} iterations in {:.2} s: {:.2} ms per iteration",
        o.iterations,
        total,
        1e3 * total / o.iterations.max(1) as f64
    );

    println!(
        "\n  {:<10} {:>7} {:>10} {:>7} {:>8}",
        "loop", "calls", "time (s)", "share", "GB/s"
    );
    let timings = rt.timings();
    let sum: f64 = timings.iter().map(|t| t.seconds).sum();
    for name in LOOPS {
        if let Some(t) = timings.iter().find(|t| t.kernel == name) {
            println!(
                "  {:<10} {:>7} {:>10.3} {:>6.1}% {:>8.2}",
                t.kernel,
                t.calls,
                t.seconds,
                100.0 * t.seconds / sum.max(f64::MIN_POSITIVE),
                t.gb_per_s()
            );
        }
    }

    if standard && o.iterations >= 100 {
        let expected = &REFERENCE_RESIDUALS[..printed.len().min(10)];
        let matches = printed.iter().zip(expected).all(|(a, b)| a == b);
        if matches {
            println!(
                "\nresiduals match OP2-Common's reference ({} values)",
                expected.len()
            );
        } else {
            println!("\nresiduals DIFFER from OP2-Common's reference:");
            for (i, (a, b)) in printed.iter().zip(expected).enumerate() {
                println!("  {:5}  got {a}  expected {b}", 100 * (i + 1));
            }
        }
        Ok(matches)
    } else {
        println!("\n(no reference residuals for this mesh and iteration count)");
        Ok(true)
    }
}
