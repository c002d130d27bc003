//! The Poisson problem, an application of op2-rs's sparse matrices that its binary, its tests and
//! Airfoil's `la-bench` share:
//! `-Δu = f` on the unit square with `u = 0` on the boundary, P1 elements on `2 n^2` triangles,
//! exact solution `u = sin(πx) sin(πy)`; the stiffness matrix is assembled by a Mat loop, the load
//! vector by an INC loop, and the L2 error is integrated by a Global reduction.

use op2::la::{self, Mat, SolveReport, SolverOptions, Sparsity};
use op2::{Dat, Global, INC, Kernel, Map, READ, Runtime, Set};
use std::time::{Duration, Instant};

/// The unit square meshed with `2 n^2` triangles (each grid square cut along its diagonal).
pub struct UnitSquare {
    /// Cells per side.
    pub n: usize,
    /// The vertices.
    pub nodes: Set,
    /// The triangles.
    pub cells: Set,
    /// Cell to its three vertices (counter-clockwise).
    pub c2n: Map,
    /// Vertex coordinates.
    pub coords: Dat<f64>,
    /// Vertices on the boundary.
    pub boundary: Vec<usize>,
}

/// The unit square's vertices (coordinates, and which are on the boundary) and triangles, in
/// global numbering.
fn grid(n: usize) -> (Vec<f64>, Vec<usize>, Vec<i32>) {
    let nv = (n + 1) * (n + 1);
    let mut xy = Vec::with_capacity(2 * nv);
    let mut boundary = Vec::new();
    for j in 0..=n {
        for i in 0..=n {
            xy.extend([i as f64 / n as f64, j as f64 / n as f64]);
            if i == 0 || j == 0 || i == n || j == n {
                boundary.push(i + j * (n + 1));
            }
        }
    }
    let v = |i: usize, j: usize| (i + j * (n + 1)) as i32;
    let mut c2n = Vec::with_capacity(6 * n * n);
    for j in 0..n {
        for i in 0..n {
            c2n.extend([v(i, j), v(i + 1, j), v(i + 1, j + 1)]);
            c2n.extend([v(i, j), v(i + 1, j + 1), v(i, j + 1)]);
        }
    }
    (xy, boundary, c2n)
}

/// Meshes the unit square on `rt`: the whole mesh on one process; across ranks (feature `mpi`,
/// a runtime whose communicator has several ranks) each rank's METIS part with its halos.
pub fn unit_square(rt: &Runtime, n: usize) -> Result<UnitSquare, Box<dyn std::error::Error>> {
    if rt.communicator().size() > 1 {
        #[cfg(feature = "mpi")]
        return distributed_unit_square(rt, n);
        #[cfg(not(feature = "mpi"))]
        return Err(
            "the Poisson problem across ranks needs the poisson crate's `mpi` feature".into(),
        );
    }
    let nv = (n + 1) * (n + 1);
    let (xy, boundary, c2n) = grid(n);
    let nodes = rt.decl_set(nv, "nodes")?;
    let cells = rt.decl_set(2 * n * n, "cells")?;
    let c2n = rt.decl_map(&cells, &nodes, 3, c2n, "cell_nodes")?;
    let coords = rt.decl_dat(&nodes, 2, &xy, "coords")?;
    Ok(UnitSquare {
        n,
        nodes,
        cells,
        c2n,
        coords,
        boundary,
    })
}

/// This rank's part of the unit square: partitioned by METIS through the cell-to-node map; the
/// boundary as this rank's owned boundary vertices (local numbers).
#[cfg(feature = "mpi")]
fn distributed_unit_square(
    rt: &Runtime,
    n: usize,
) -> Result<UnitSquare, Box<dyn std::error::Error>> {
    use op2::mpi::{Input, MeshBuilder, Options, Partitioner};
    let nv = (n + 1) * (n + 1);
    let (xy, boundary, c2n) = grid(n);
    let mut flag = vec![0.0f64; nv];
    for &b in &boundary {
        flag[b] = 1.0;
    }
    let mut mesh = MeshBuilder::new(Input::Everywhere);
    let nodes = mesh.decl_set(nv, "nodes")?;
    let cells = mesh.decl_set(2 * n * n, "cells")?;
    let map = mesh.decl_map(cells, nodes, 3, c2n, "cell_nodes")?;
    let coords = mesh.decl_dat(nodes, 2, &xy, "coords")?;
    let on_boundary = mesh.decl_dat(nodes, 1, &flag, "on_boundary")?;
    let local = mesh.partition(rt, &Options::new(Partitioner::Metis { map }))?;
    let node_set = local.set(nodes);
    let flags = local.dat(on_boundary).to_vec()?;
    let boundary = (0..node_set.size()).filter(|&i| flags[i] == 1.0).collect();
    Ok(UnitSquare {
        n,
        nodes: node_set,
        cells: local.set(cells),
        c2n: local.map(map),
        coords: local.dat(coords),
        boundary,
    })
}

/// A degree-4 rule on the triangle (Strang and Fix's six points): barycentric points and weights
/// summing to 1, as C declarations inside each kernel body (file-scope tables are not portable to
/// OpenCL and CUDA device code).
const QUADRATURE: &str = r#"
  const double poisson_qw[6] = {0.223381589678011, 0.223381589678011, 0.223381589678011,
                                     0.109951743655322, 0.109951743655322, 0.109951743655322};
  const double poisson_ql[6][3] = {
    {0.108103018168070, 0.445948490915965, 0.445948490915965},
    {0.445948490915965, 0.108103018168070, 0.445948490915965},
    {0.445948490915965, 0.445948490915965, 0.108103018168070},
    {0.816847572980459, 0.091576213509771, 0.091576213509771},
    {0.091576213509771, 0.816847572980459, 0.091576213509771},
    {0.091576213509771, 0.091576213509771, 0.816847572980459}};
"#;

/// The kernels: stiffness (element matrix), load (INC into the vertices) and squared L2 error.
pub struct Kernels {
    /// `A[3*i + j] += ∫ ∇φi·∇φj`.
    pub stiffness: Kernel,
    /// `b[i] += ∫ f φi` with `f = 2π² sin(πx) sin(πy)`.
    pub load: Kernel,
    /// `err += ∫ (u_h - u)²`.
    pub error: Kernel,
}

/// The kernels of the problem.
pub fn kernels() -> op2::Result<Kernels> {
    let stiffness = Kernel::new(
        "poisson_stiffness",
        r#"
void poisson_stiffness(double A[9], double *x[3]) {
  double b[3] = {x[1][1] - x[2][1], x[2][1] - x[0][1], x[0][1] - x[1][1]};
  double c[3] = {x[2][0] - x[1][0], x[0][0] - x[2][0], x[1][0] - x[0][0]};
  double twice_area = fabs((x[1][0] - x[0][0]) * (x[2][1] - x[0][1])
                         - (x[2][0] - x[0][0]) * (x[1][1] - x[0][1]));
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      A[3 * i + j] += (b[i] * b[j] + c[i] * c[j]) / (2.0 * twice_area);
}"#,
    )?;
    let load = Kernel::new(
        "poisson_load",
        &format!(
            r#"
void poisson_load(double *b[3], double *x[3]) {{
{QUADRATURE}
  const double pi = 3.14159265358979323846;
  double area = 0.5 * fabs((x[1][0] - x[0][0]) * (x[2][1] - x[0][1])
                         - (x[2][0] - x[0][0]) * (x[1][1] - x[0][1]));
  for (int q = 0; q < 6; q++) {{
    double px = 0.0, py = 0.0;
    for (int k = 0; k < 3; k++) {{ px += poisson_ql[q][k] * x[k][0]; py += poisson_ql[q][k] * x[k][1]; }}
    double f = 2.0 * pi * pi * sin(pi * px) * sin(pi * py);
    for (int i = 0; i < 3; i++) b[i][0] += poisson_qw[q] * area * f * poisson_ql[q][i];
  }}
}}"#
        ),
    )?;
    let error = Kernel::new(
        "poisson_error",
        &format!(
            r#"
void poisson_error(double *err, double *x[3], double *u[3]) {{
{QUADRATURE}
  const double pi = 3.14159265358979323846;
  double area = 0.5 * fabs((x[1][0] - x[0][0]) * (x[2][1] - x[0][1])
                         - (x[2][0] - x[0][0]) * (x[1][1] - x[0][1]));
  for (int q = 0; q < 6; q++) {{
    double px = 0.0, py = 0.0, uh = 0.0;
    for (int k = 0; k < 3; k++) {{
      px += poisson_ql[q][k] * x[k][0]; py += poisson_ql[q][k] * x[k][1];
      uh += poisson_ql[q][k] * u[k][0];
    }}
    double e = uh - sin(pi * px) * sin(pi * py);
    err[0] += poisson_qw[q] * area * e * e;
  }}
}}"#
        ),
    )?;
    Ok(Kernels {
        stiffness,
        load,
        error,
    })
}

/// The assembled stiffness matrix of the triangles `cells` (vertices `c2n`, at `coords`).
pub fn stiffness(
    rt: &Runtime,
    cells: &Set,
    c2n: &Map,
    coords: &Dat<f64>,
) -> Result<Mat, la::LaError> {
    let sparsity = Sparsity::new(&[(c2n, c2n)], (1, 1), "poisson")?;
    let a = Mat::new(&sparsity, "stiffness");
    op2::la::par_loop!(
        rt,
        kernels()?.stiffness,
        cells,
        a.arg(INC, c2n, c2n),
        coords.arg_row(c2n, READ)
    )?;
    a.assemble();
    Ok(a)
}

/// One solve's outcome.
pub struct Outcome {
    /// Cells per side.
    pub n: usize,
    /// Mesh size `1/n`.
    pub h: f64,
    /// `||u_h - u||` in L2.
    pub l2_error: f64,
    /// What the solver reported.
    pub report: SolveReport,
    /// Assembling the matrix and the load vector (sparsity included).
    pub assembly: Duration,
    /// The solve.
    pub solve: Duration,
    /// The matrix's rows (over all ranks).
    pub rows: usize,
    /// Stored entries (over all ranks).
    pub nnz: usize,
}

/// Solves the problem on an `n x n` mesh on `rt` with `options`.
pub fn solve(
    rt: &Runtime,
    n: usize,
    options: &SolverOptions,
) -> Result<Outcome, Box<dyn std::error::Error>> {
    solve_with(rt, n, options, &la::NativeSolver)
}

/// Solves the problem with a given solver implementation.
pub fn solve_with(
    rt: &Runtime,
    n: usize,
    options: &SolverOptions,
    solver: &dyn la::LinearSolver,
) -> Result<Outcome, Box<dyn std::error::Error>> {
    let m = unit_square(rt, n)?;
    let k = kernels()?;
    let t0 = Instant::now();
    let a = stiffness(rt, &m.cells, &m.c2n, &m.coords)?;
    let sparsity = a.sparsity().clone();
    let b = rt.decl_dat_zeros::<f64>(&m.nodes, 1, "load")?;
    let u = rt.decl_dat_zeros::<f64>(&m.nodes, 1, "u")?;
    rt.par_loop(
        &k.load,
        &m.cells,
        [b.arg_row(&m.c2n, INC), m.coords.arg_row(&m.c2n, READ)],
    )?;
    // u = 0 on the boundary: identity rows, zero right-hand side.
    a.zero_rows(&m.boundary, 1.0)?;
    {
        let mut bv = b.data()?;
        for &i in &m.boundary {
            bv[i] = 0.0;
        }
    }
    let assembly = t0.elapsed();
    let t1 = Instant::now();
    let report = la::solve_with(solver, &a, &b, &u, options)?.check()?;
    let solve = t1.elapsed();
    let err: Global<f64> = rt.decl_global(1, &[0.0], "l2_error_squared")?;
    rt.par_loop(
        &k.error,
        &m.cells,
        [
            err.arg(INC),
            m.coords.arg_row(&m.c2n, READ),
            u.arg_row(&m.c2n, READ),
        ],
    )?;
    let mut sizes = [a.rows() as f64, sparsity.nnz() as f64];
    rt.communicator()
        .all_reduce_f64(&mut sizes, op2::ReduceOp::Sum)?;
    Ok(Outcome {
        n,
        h: 1.0 / n as f64,
        l2_error: err.value()?[0].sqrt(),
        report,
        assembly,
        solve,
        rows: sizes[0] as usize,
        nnz: sizes[1] as usize,
    })
}

/// The observed order of convergence from a coarser to a finer solve.
pub fn order(coarse: &Outcome, fine: &Outcome) -> f64 {
    (coarse.l2_error / fine.l2_error).ln() / (coarse.h / fine.h).ln()
}

/// Observed orders of convergence between successive refinements.
pub fn orders(outcomes: &[Outcome]) -> Vec<f64> {
    outcomes.windows(2).map(|w| order(&w[0], &w[1])).collect()
}
