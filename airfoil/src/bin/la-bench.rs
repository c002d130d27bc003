//! The linear-algebra bench (`cargo xtask bench-la`): sparsity construction for Airfoil's
//! cell-to-node pattern, assembly throughput of the Poisson stiffness matrix on seq and openmp, and
//! the native CG + Jacobi solve of the 200 x 200 Poisson problem (against PETSc's where PETSc is
//! built in). Every figure is measured in this one run, side by side.

use poisson as problem;

use airfoil::mesh::Mesh;
use op2::la::{self, Mat, Method, Preconditioner, SolverOptions, Sparsity};
use op2::{INC, READ, Runtime};
use std::time::{Duration, Instant};

const USAGE: &str = "usage: la-bench [--repeats N] [--assembly-n N]";

fn median(mut v: Vec<Duration>) -> Duration {
    v.sort();
    v[v.len() / 2]
}

fn runtime(backend: &str, threads: Option<usize>) -> Result<Runtime, String> {
    let mut b = op2::builder().backend(backend);
    if let Some(t) = threads {
        b = b.num_threads(t);
    }
    b.build().map_err(|e| format!("{backend}: {e}"))
}

/// Sparsity of Airfoil's cells through their four nodes (rows: the 721,801 nodes).
fn sparsity_row(mesh: &Mesh, repeats: usize) -> Result<(), String> {
    let rt = runtime("seq", None)?;
    let nodes = rt
        .decl_set(mesh.nnode(), "nodes")
        .map_err(|e| e.to_string())?;
    let cells = rt
        .decl_set(mesh.ncell(), "cells")
        .map_err(|e| e.to_string())?;
    let mut times = Vec::new();
    let mut shape = (0, 0);
    for _ in 0..repeats {
        // A new map each time, so the cache cannot answer.
        let pcell = rt
            .decl_map(&cells, &nodes, 4, mesh.cell.clone(), "pcell")
            .map_err(|e| e.to_string())?;
        let t = Instant::now();
        let sp =
            Sparsity::new(&[(&pcell, &pcell)], (1, 1), "airfoil").map_err(|e| e.to_string())?;
        times.push(t.elapsed());
        shape = (sp.rows(), sp.nnz());
    }
    println!(
        "sparsity, Airfoil cell-to-node: {} rows, {} nonzeros: median {:.1} ms, best {:.1} ms ({repeats} runs, {} threads)",
        shape.0,
        shape.1,
        median(times.clone()).as_secs_f64() * 1e3,
        times.iter().min().unwrap().as_secs_f64() * 1e3,
        rayon_threads()
    );
    Ok(())
}

fn rayon_threads() -> usize {
    std::thread::available_parallelism().map_or(1, usize::from)
}

/// One configuration's assembly: the mesh, kernels and matrix on its runtime.
struct Assembly {
    label: String,
    rt: Runtime,
    mesh: problem::UnitSquare,
    stiffness: op2::Kernel,
    a: Mat,
}

impl Assembly {
    fn new(backend: &str, threads: Option<usize>, n: usize) -> Result<Assembly, String> {
        let rt = runtime(backend, threads)?;
        let mesh = problem::unit_square(&rt, n).map_err(|e| e.to_string())?;
        let stiffness = problem::kernels().map_err(|e| e.to_string())?.stiffness;
        let sp = Sparsity::new(&[(&mesh.c2n, &mesh.c2n)], (1, 1), "poisson")
            .map_err(|e| e.to_string())?;
        let a = Mat::new(&sp, "A");
        let label = match threads {
            Some(t) => format!("{backend} {t}t"),
            None => backend.to_string(),
        };
        let me = Assembly {
            label,
            rt,
            mesh,
            stiffness,
            a,
        };
        // Warm-up: compiles the kernels and builds the assembly plan.
        me.time()?;
        Ok(me)
    }

    /// One assembly of the stiffness matrix.
    fn time(&self) -> Result<Duration, String> {
        let m = &self.mesh;
        self.a.zero();
        let t = Instant::now();
        la::par_loop!(
            self.rt,
            self.stiffness,
            m.cells,
            self.a.arg(INC, &m.c2n, &m.c2n),
            m.coords.arg_row(&m.c2n, READ)
        )
        .map_err(|e| e.to_string())?;
        self.a.assemble();
        Ok(t.elapsed())
    }
}

fn assembly_rows(n: usize, repeats: usize) -> Result<(), String> {
    let mut configs = vec![Assembly::new("seq", None, n)?];
    if op2::backends().iter().any(|b| b.name == "openmp") {
        configs.push(Assembly::new("openmp", Some(1), n)?);
        configs.push(Assembly::new("openmp", Some(2), n)?);
    }
    // Rounds of one assembly per configuration, so that noise from other work on the machine
    // falls on all of them alike.
    let mut times = vec![Vec::new(); configs.len()];
    for _ in 0..repeats {
        for (c, t) in configs.iter().zip(&mut times) {
            t.push(c.time()?);
        }
    }
    let cells = configs[0].mesh.cells.size();
    println!("assembly, P1 stiffness on {cells} triangles (median of {repeats} rounds):");
    let medians: Vec<f64> = times.into_iter().map(|t| median(t).as_secs_f64()).collect();
    for (c, t) in configs.iter().zip(&medians) {
        println!(
            "  {:<10} {:>8.2} ms  {:>7.1} M elements/s  {:.2}x seq",
            c.label,
            t * 1e3,
            cells as f64 / t / 1e6,
            medians[0] / t
        );
    }
    Ok(())
}

fn solver_rows(repeats: usize) -> Result<(), String> {
    let rt = runtime("seq", None)?;
    let options = SolverOptions::new(Method::Cg, Preconditioner::Jacobi).rtol(1e-8);
    #[allow(unused_mut)]
    let mut solvers: Vec<Box<dyn la::LinearSolver>> = vec![Box::new(la::NativeSolver)];
    #[cfg(feature = "petsc")]
    solvers.push(Box::new(
        la::petsc::Petsc::new().map_err(|e| e.to_string())?,
    ));
    println!("CG + Jacobi, 200 x 200 P1 Poisson, rtol 1e-8 (median of {repeats} solves):");
    let mut first: Option<(usize, f64)> = None;
    for s in &solvers {
        let mut times = Vec::new();
        let mut its = 0;
        let mut err = 0.0;
        for _ in 0..repeats {
            let o =
                problem::solve_with(&rt, 200, &options, s.as_ref()).map_err(|e| e.to_string())?;
            times.push(o.solve);
            its = o.report.iterations;
            err = o.l2_error;
        }
        let t = median(times).as_secs_f64();
        // Against the first (native) solver: its iterations and time relative to this one.
        let vs = first.map_or(String::new(), |(i, t0)| {
            format!(
                "  (native: {:+} iterations, {:.2}x this time)",
                i as i64 - its as i64,
                t0 / t
            )
        });
        println!(
            "  {:<8} {its} iterations, {:.2} ms, L2 error {err:.3e}{vs}",
            s.name(),
            t * 1e3
        );
        first.get_or_insert((its, t));
    }
    if solvers.len() == 1 {
        println!("  (PETSc not built in: build with feature `petsc` to compare)");
    }
    Ok(())
}

fn main() {
    let mut repeats = 11;
    let mut n = 512;
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mut it = args.iter();
    while let Some(a) = it.next() {
        let mut num = || -> usize {
            it.next().and_then(|v| v.parse().ok()).unwrap_or_else(|| {
                eprintln!("{USAGE}");
                std::process::exit(2)
            })
        };
        match a.as_str() {
            "--repeats" => repeats = num().max(1),
            "--assembly-n" => n = num().max(1),
            _ => {
                eprintln!("{USAGE}");
                std::process::exit(2)
            }
        }
    }
    let mesh = Mesh::generate(airfoil::STANDARD_IJ.0, airfoil::STANDARD_IJ.1);
    let result = sparsity_row(&mesh, repeats)
        .and_then(|_| assembly_rows(n, repeats))
        .and_then(|_| solver_rows(repeats));
    if let Err(e) = result {
        eprintln!("la-bench: {e}");
        std::process::exit(1);
    }
}
