//! A column model on an extruded mesh: the unit square's triangles extruded into layers of
//! prisms filling the unit cube, `-Δu + u = f` with natural (zero-flux) boundaries and P1
//! prism elements, the matrix assembled through the extruded cell-to-node map (its bottom row
//! plus one layer per step), solved with CG, and the error against the exact solution
//! `cos(πx) cos(πy) cos(πz)` over successive refinements: it must fall as h² (P1).
//!
//! `cargo run --release --example extruded [-- --sizes 4,8,16,32]`; `OP2_BACKEND` picks the
//! backend. It exits non-zero unless the observed order is within 2 ± 0.2.

use op2::la::{self, LoopArg, Mat, Method, Preconditioner, SolverOptions, Sparsity};
use op2::{INC, Kernel, READ, Runtime};
use std::f64::consts::PI;
use std::process::ExitCode;

/// The P1 prism's element matrix for `-Δ + 1` and the load `M f`: a right prism over a
/// triangle (its first three nodes at the bottom, the last three above them), whose matrices
/// are the triangle's and the interval's, combined: `K = K_t ⊗ M_z + M_t ⊗ K_z` and `M = M_t ⊗
/// M_z`, exact for such prisms.
const HEADER: &str = "
static void prism(const double *x[6], double K[36], double M[36]) {
  double ax = x[1][0] - x[0][0], ay = x[1][1] - x[0][1];
  double bx = x[2][0] - x[0][0], by = x[2][1] - x[0][1];
  double det = ax * by - ay * bx, area = 0.5 * det;
  double h = x[3][2] - x[0][2];
  /* Gradients of the triangle's hat functions, times det. */
  double g[3][2] = {{ay - by, bx - ax}, {by, -bx}, {-ay, ax}};
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 6; j++) {
      int ti = i % 3, tj = j % 3, zi = i / 3, zj = j / 3;
      double kt = (g[ti][0] * g[tj][0] + g[ti][1] * g[tj][1]) / (4.0 * area);
      double mt = (ti == tj ? 2.0 : 1.0) * area / 12.0;
      double mz = (zi == zj ? 2.0 : 1.0) * h / 6.0;
      double kz = (zi == zj ? 1.0 : -1.0) / h;
      K[i * 6 + j] = kt * mz + mt * kz + mt * mz;
      M[i * 6 + j] = mt * mz;
    }
}
";

fn kernels() -> op2::Result<(Kernel, Kernel, Kernel)> {
    let matrix = Kernel::new(
        "matrix",
        &format!(
            "{HEADER}void matrix(double A[36], const double *x[6]) {{
  double M[36]; prism(x, A, M); }}"
        ),
    )?;
    let load = Kernel::new(
        "load",
        &format!(
            "{HEADER}void load(double *b[6], const double *x[6], const double *f[6]) {{
  double K[36], M[36]; prism(x, K, M);
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 6; j++) b[i][0] += M[i * 6 + j] * f[j][0];
}}"
        ),
    )?;
    let error = Kernel::new(
        "error",
        &format!(
            "{HEADER}void error(double *e2, const double *x[6], const double *u[6], const double *ex[6]) {{
  double K[36], M[36]; prism(x, K, M);
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 6; j++)
      *e2 += (u[i][0] - ex[i][0]) * M[i * 6 + j] * (u[j][0] - ex[j][0]);
}}"
        ),
    )?;
    Ok((matrix, load, error))
}

/// One refinement: `n` x `n` squares cut into triangles, extruded into `n` layers. Returns
/// (unknowns, nonzeros, the error in the mass norm, CG iterations).
fn solve(rt: &Runtime, n: usize) -> Result<(usize, usize, f64, usize), Box<dyn std::error::Error>> {
    let layers = n + 1;
    let node = |i: usize, j: usize| (j * (n + 1) + i) as i32;
    let mut bottom = Vec::new();
    for j in 0..n {
        for i in 0..n {
            for t in [
                [node(i, j), node(i + 1, j), node(i + 1, j + 1)],
                [node(i, j), node(i + 1, j + 1), node(i, j + 1)],
            ] {
                let b = t.map(|v| v * layers as i32);
                bottom.extend([b[0], b[1], b[2], b[0] + 1, b[1] + 1, b[2] + 1]);
            }
        }
    }
    let tris = rt.decl_set(2 * n * n, "triangles")?;
    let columns = rt.decl_set((n + 1) * (n + 1), "columns")?;
    let cells = rt.decl_extruded_set(&tris, layers, "prisms")?;
    let nodes = rt.decl_extruded_nodes(&columns, layers, "nodes")?;
    let c2n = rt.decl_extruded_map(&cells, &nodes, 6, bottom, [1; 6], "c2n")?;
    // Node (column, layer) is column * layers + layer.
    let mut xyz = Vec::new();
    let (mut f, mut exact) = (Vec::new(), Vec::new());
    for j in 0..=n {
        for i in 0..=n {
            for l in 0..layers {
                let (x, y, z) = (
                    i as f64 / n as f64,
                    j as f64 / n as f64,
                    l as f64 / n as f64,
                );
                xyz.extend([x, y, z]);
                let u = (PI * x).cos() * (PI * y).cos() * (PI * z).cos();
                exact.push(u);
                f.push((3.0 * PI * PI + 1.0) * u);
            }
        }
    }
    let coords = rt.decl_dat(&nodes, 3, xyz, "coords")?;
    let f = rt.decl_dat(&nodes, 1, f, "f")?;
    let exact = rt.decl_dat(&nodes, 1, exact, "exact")?;
    let (matrix, load, error) = kernels()?;
    let sparsity = Sparsity::new(&[(&c2n, &c2n)], (1, 1), "prisms")?;
    let a = Mat::new(&sparsity, "A");
    la::par_loop(
        rt,
        &matrix,
        &cells,
        [
            LoopArg::Mat(a.arg(INC, &c2n, &c2n)),
            LoopArg::Op2(coords.arg_row(&c2n, READ)),
        ],
    )?;
    a.assemble();
    let b = rt.decl_dat_zeros::<f64>(&nodes, 1, "b")?;
    rt.par_loop(
        &load,
        &cells,
        [
            b.arg_row(&c2n, INC),
            coords.arg_row(&c2n, READ),
            f.arg_row(&c2n, READ),
        ],
    )?;
    let u = rt.decl_dat_zeros::<f64>(&nodes, 1, "u")?;
    let options = SolverOptions::new(Method::Cg, Preconditioner::Jacobi).rtol(1e-12);
    let report = la::solve(&a, &b, &u, &options)?.check()?;
    let e2 = rt.decl_global(1, &[0.0f64], "e2")?;
    rt.par_loop(
        &error,
        &cells,
        [
            e2.arg(INC),
            coords.arg_row(&c2n, READ),
            u.arg_row(&c2n, READ),
            exact.arg_row(&c2n, READ),
        ],
    )?;
    Ok((
        a.rows(),
        sparsity.nnz(),
        e2.value()?[0].sqrt(),
        report.iterations,
    ))
}

fn parse() -> Result<Vec<usize>, String> {
    let mut sizes = vec![4, 8, 16, 32];
    let mut args = std::env::args().skip(1);
    while let Some(a) = args.next() {
        match a.as_str() {
            "--sizes" => {
                let v = args.next().ok_or("--sizes needs a value")?;
                sizes = v
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
            other => {
                return Err(format!(
                    "unknown argument {other} (usage: extruded [--sizes N,N,...])"
                ));
            }
        }
    }
    Ok(sizes)
}

fn main() -> ExitCode {
    let sizes = match parse() {
        Ok(s) => s,
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    let run = || -> Result<bool, Box<dyn std::error::Error>> {
        let rt = op2::builder().build()?;
        println!(
            "-Δu + u = f in the unit cube, P1 prisms (triangles extruded into layers), backend {}",
            rt.backend_name()
        );
        println!(
            "{:>5} {:>9} {:>10} {:>13} {:>6} {:>5}",
            "n", "unknowns", "nonzeros", "error", "order", "its"
        );
        let mut last: Option<(usize, f64)> = None;
        let mut order = f64::NAN;
        for &n in &sizes {
            let (rows, nnz, err, its) = solve(&rt, n)?;
            let o = last.map(|(m, e)| (e / err).ln() / (n as f64 / m as f64).ln());
            order = o.unwrap_or(f64::NAN);
            println!(
                "{n:>5} {rows:>9} {nnz:>10} {err:>13.6e} {:>6} {its:>5}",
                o.map_or("-".into(), |o| format!("{o:.2}"))
            );
            last = Some((n, err));
        }
        let ok = (order - 2.0).abs() <= 0.2;
        println!(
            "observed order {order:.2}: {}",
            if ok {
                "h², as P1 should"
            } else {
                "NOT 2 ± 0.2"
            }
        );
        Ok(ok)
    };
    match run() {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::FAILURE,
        Err(e) => {
            eprintln!("extruded: {e}");
            ExitCode::FAILURE
        }
    }
}
