//! Poisson's equation on the unit square with P1 elements: the stiffness matrix assembled by a
//! par_loop with a Mat arg, solved with CG and a preconditioner, the L2 error against the exact
//! solution over successive refinements, and the observed order of convergence (2 for P1).
//!
//! `cargo run --release -p poisson [-- --sizes 8,16,32,64,128 --method cg --pc jacobi
//! --rtol 1e-10]`; `OP2_BACKEND` picks the backend that assembles (`seq` by default). Built with
//! `--features mpi`, `mpirun -np 2 target/release/poisson` partitions each mesh with
//! METIS and assembles and solves across the ranks (preconditioners then act per rank's block).

// The problem itself (mesh, kernels, assembly, solve) is the crate's library, shared with its
// tests and `la-bench`.
use poisson as problem;

use op2::la::{Method, Preconditioner, SolverOptions};
use std::process::ExitCode;

struct Args {
    sizes: Vec<usize>,
    options: SolverOptions,
}

fn parse() -> Result<Args, String> {
    let mut sizes = vec![8, 16, 32, 64, 128];
    let mut method = Method::Cg;
    let mut pc = Preconditioner::Jacobi;
    let mut rtol = 1e-10;
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        let mut value = || args.next().ok_or(format!("{a} needs a value"));
        match a.as_str() {
            "--sizes" => {
                sizes = value()?
                    .split(',')
                    .map(|s| {
                        s.trim()
                            .parse::<usize>()
                            .map_err(|e| format!("--sizes {s}: {e}"))
                    })
                    .collect::<Result<_, _>>()?;
                if sizes.len() < 2 || sizes.contains(&0) {
                    return Err("--sizes needs at least two sizes above 0".into());
                }
            }
            "--method" => {
                method = match value()?.as_str() {
                    "cg" => Method::Cg,
                    "gmres" => Method::Gmres { restart: 30 },
                    "bcgs" | "bicgstab" => Method::BiCgStab,
                    m => return Err(format!("--method {m}: expected cg, gmres or bcgs")),
                }
            }
            "--pc" => {
                pc = match value()?.as_str() {
                    "none" => Preconditioner::None,
                    "jacobi" => Preconditioner::Jacobi,
                    "sor" => Preconditioner::Sor { omega: 1.0 },
                    "ilu" | "ilu0" => Preconditioner::Ilu0,
                    p => return Err(format!("--pc {p}: expected none, jacobi, sor or ilu")),
                }
            }
            "--rtol" => {
                let v = value()?;
                rtol = v.parse().map_err(|e| format!("--rtol {v}: {e}"))?;
            }
            "-h" | "--help" => {
                return Err("usage: poisson [--sizes N,N,...] [--method cg|gmres|bcgs] \
                            [--pc none|jacobi|sor|ilu] [--rtol R]"
                    .into());
            }
            other => return Err(format!("unknown argument {other} (try --help)")),
        }
    }
    Ok(Args {
        sizes,
        options: SolverOptions::new(method, pc).rtol(rtol),
    })
}

fn main() -> ExitCode {
    let args = match parse() {
        Ok(a) => a,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    match run(&args) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("poisson: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run(args: &Args) -> Result<bool, Box<dyn std::error::Error>> {
    // Under mpirun (feature `mpi`), one rank of several: each assembles and solves its part.
    #[cfg(feature = "mpi")]
    let mpi = if op2::mpi::launched_by_mpirun() {
        Some(op2::mpi::Mpi::init()?)
    } else {
        None
    };
    #[allow(unused_mut)]
    let mut builder = op2::builder();
    #[cfg(feature = "mpi")]
    if let Some(mpi) = &mpi {
        builder = builder.communicator(mpi.world());
    }
    let rt = builder.build()?;
    let comm = rt.communicator().clone();
    let lead = comm.rank() == 0;
    // Only rank 0 prints (every rank computes the same table).
    macro_rules! say {
        ($($t:tt)*) => { if lead { println!($($t)*); } };
    }
    say!(
        "Poisson -Δu = 2π² sin(πx) sin(πy) on the unit square, P1, backend {}, {} rank(s), {} + {}, rtol {:e}",
        rt.backend_name(),
        comm.size(),
        args.options.method.petsc_name(),
        args.options.preconditioner.petsc_name(),
        args.options.rtol
    );
    say!(
        "{:>6} {:>10} {:>9} {:>10} {:>13} {:>6} {:>6} {:>12} {:>9}",
        "n",
        "h",
        "unknowns",
        "nonzeros",
        "L2 error",
        "order",
        "its",
        "assembly ms",
        "solve ms"
    );
    let mut outcomes = Vec::new();
    for &n in &args.sizes {
        let o = problem::solve(&rt, n, &args.options)?;
        let order = outcomes
            .last()
            .map(|prev| format!("{:.3}", problem::order(prev, &o)))
            .unwrap_or_else(|| "-".into());
        say!(
            "{:>6} {:>10.6} {:>9} {:>10} {:>13.6e} {:>6} {:>6} {:>12.2} {:>9.2}",
            n,
            o.h,
            o.rows,
            o.nnz,
            o.l2_error,
            order,
            o.report.iterations,
            o.assembly.as_secs_f64() * 1e3,
            o.solve.as_secs_f64() * 1e3
        );
        outcomes.push(o);
    }
    let orders = problem::orders(&outcomes);
    let last = *orders.last().expect("at least two sizes");
    let ok = (1.9..=2.1).contains(&last);
    say!(
        "observed order of convergence: {last:.3} (P1 in L2: 2) -> {}",
        if ok { "ok" } else { "NOT in [1.9, 2.1]" }
    );
    Ok(ok)
}
