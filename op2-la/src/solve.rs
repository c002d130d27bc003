//! Krylov solvers configured like PETSc's KSP (method, preconditioner, tolerances, iteration limit)
//! and reporting what KSP reports (why it stopped, iterations, residual history). The native ones
//! (CG, restarted GMRES, BiCGStab) follow PETSc's conventions -- left preconditioning, the
//! preconditioned residual norm, a zero initial guess unless asked, and the test
//! `||r|| <= max(rtol ||r0||, atol)` -- so their iteration counts compare with PETSc's.

use crate::csr::{CsrRef, check_len};
use crate::error::{LaError, Result};
use crate::mat::Mat;
use crate::operator::{Operator, RankSystem, neighbours_of, ranks_of};
use crate::precond::{Applied, Preconditioner};
use op2_core::Dat;

/// The Krylov method (`-ksp_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Method {
    /// Conjugate gradients: symmetric positive definite matrices (and preconditioners).
    Cg,
    /// GMRES restarted every `restart` iterations (PETSc's default 30): any nonsingular matrix.
    Gmres {
        /// Krylov vectors kept before a restart.
        restart: usize,
    },
    /// BiCGStab: nonsymmetric matrices, short recurrences.
    BiCgStab,
}

impl Method {
    /// PETSc's name for it.
    pub fn petsc_name(&self) -> &'static str {
        match self {
            Method::Cg => "cg",
            Method::Gmres { .. } => "gmres",
            Method::BiCgStab => "bcgs",
        }
    }
}

/// How a solve is set up (PETSc's KSP options, with PETSc's defaults).
#[derive(Debug, Clone, PartialEq)]
pub struct SolverOptions {
    /// The method (default GMRES(30)).
    pub method: Method,
    /// The preconditioner (default Jacobi; PETSc's serial default is ILU).
    pub preconditioner: Preconditioner,
    /// Relative tolerance on the residual norm (default 1e-5).
    pub rtol: f64,
    /// Absolute tolerance (default 1e-50).
    pub atol: f64,
    /// Divergence: stop when the residual grows past `dtol` times the first one (default 1e5).
    pub dtol: f64,
    /// Iteration limit (default 10000).
    pub max_iterations: usize,
    /// Start from the values already in `x` instead of zero (default false).
    pub nonzero_initial_guess: bool,
    /// The field of each owned row, for [`Preconditioner::FieldSplit`] ([`solve_mixed`] sets
    /// it from the mixed system).
    pub(crate) fields: Option<std::sync::Arc<[u32]>>,
}

impl Default for SolverOptions {
    fn default() -> Self {
        SolverOptions {
            method: Method::Gmres { restart: 30 },
            preconditioner: Preconditioner::Jacobi,
            rtol: 1e-5,
            atol: 1e-50,
            dtol: 1e5,
            max_iterations: 10_000,
            nonzero_initial_guess: false,
            fields: None,
        }
    }
}

impl SolverOptions {
    /// Defaults with this method and preconditioner.
    pub fn new(method: Method, preconditioner: Preconditioner) -> Self {
        SolverOptions {
            method,
            preconditioner,
            ..Default::default()
        }
    }

    /// With this relative tolerance.
    pub fn rtol(mut self, rtol: f64) -> Self {
        self.rtol = rtol;
        self
    }

    /// With this absolute tolerance.
    pub fn atol(mut self, atol: f64) -> Self {
        self.atol = atol;
        self
    }

    /// With this iteration limit.
    pub fn max_iterations(mut self, n: usize) -> Self {
        self.max_iterations = n;
        self
    }

    pub(crate) fn check(&self) -> Result<()> {
        let bad = |option, value: f64, why| {
            Err(LaError::Option {
                option,
                value: value.to_string(),
                why,
            })
        };
        if !(self.rtol >= 0.0 && self.rtol < 1.0) {
            return bad("rtol", self.rtol, "must be in [0, 1)");
        }
        if self.atol.is_nan() || self.atol < 0.0 {
            return bad("atol", self.atol, "must be at least 0");
        }
        if self.dtol.is_nan() || self.dtol <= 1.0 {
            return bad("dtol", self.dtol, "must be above 1");
        }
        if let Method::Gmres { restart: 0 } = self.method {
            return bad("restart", 0.0, "GMRES needs at least one vector");
        }
        Ok(())
    }
}

/// Why a solve stopped (PETSc's `KSPConvergedReason`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConvergedReason {
    /// Residual below `rtol` times the first residual.
    Rtol,
    /// Residual below `atol`.
    Atol,
    /// The iteration limit came first.
    DivergedIterations,
    /// The residual grew past `dtol` times the first one.
    DivergedDtol,
    /// A residual or a step length became NaN or infinite.
    DivergedNanOrInf,
    /// The method broke down (a zero denominator).
    DivergedBreakdown,
    /// CG met a direction of non-positive curvature: the matrix is not positive definite.
    DivergedIndefiniteMatrix,
    /// CG's preconditioner is not positive definite.
    DivergedIndefinitePreconditioner,
    /// The preconditioner could not be built or applied (PETSc's `DIVERGED_PC_FAILED`: a zero
    /// pivot in its ILU, say; the native solver reports that as [`crate::LaError::ZeroPivot`]).
    DivergedPcFailed,
}

impl ConvergedReason {
    /// Whether the solve converged.
    pub fn converged(self) -> bool {
        matches!(self, ConvergedReason::Rtol | ConvergedReason::Atol)
    }
}

/// What a solve reports.
#[derive(Debug, Clone, PartialEq)]
pub struct SolveReport {
    /// The solver that ran (`native cg + jacobi`, `petsc cg + jacobi`...).
    pub solver: String,
    /// Why it stopped.
    pub reason: ConvergedReason,
    /// Iterations done.
    pub iterations: usize,
    /// The residual norm tested for convergence, before the first iteration and after each one.
    pub residual_history: Vec<f64>,
}

impl SolveReport {
    /// Whether it converged.
    pub fn converged(&self) -> bool {
        self.reason.converged()
    }

    /// The last residual norm.
    pub fn residual(&self) -> f64 {
        self.residual_history.last().copied().unwrap_or(f64::NAN)
    }

    /// The report, or [`LaError::NotConverged`] when the solve did not converge.
    pub fn check(self) -> Result<SolveReport> {
        if self.converged() {
            Ok(self)
        } else {
            Err(LaError::NotConverged {
                method: self.solver.clone(),
                reason: self.reason,
                iterations: self.iterations,
                residual: self.residual(),
            })
        }
    }
}

/// A linear-algebra implementation that solves assembled CSR systems: the native one
/// ([`NativeSolver`]) or PETSc (feature `petsc`).
pub trait LinearSolver: Send + Sync {
    /// Its name.
    fn name(&self) -> &str;

    /// Solves `A x = b`. `x` holds the initial guess when `options.nonzero_initial_guess`.
    fn solve_csr(
        &self,
        a: CsrRef<'_>,
        b: &[f64],
        x: &mut [f64],
        options: &SolverOptions,
        matrix_name: &str,
    ) -> Result<SolveReport>;

    /// Solves this rank's part of a system spread over ranks (every rank calls it together):
    /// `b` and `x` hold the owned values. Implementations that solve on one process only refuse.
    fn solve_across_ranks(
        &self,
        system: &RankSystem<'_>,
        b: &[f64],
        x: &mut [f64],
        options: &SolverOptions,
        matrix_name: &str,
    ) -> Result<SolveReport> {
        let _ = (system, b, x, options);
        Err(LaError::Serial {
            solver: self.name().into(),
            mat: matrix_name.into(),
        })
    }
}

/// Solves with a matrix and Dats as vectors: `b` on the rows, `x` on the columns.
pub fn solve_with(
    solver: &dyn LinearSolver,
    a: &Mat,
    b: &Dat<f64>,
    x: &Dat<f64>,
    options: &SolverOptions,
) -> Result<SolveReport> {
    if !a.sparsity().is_square() {
        return Err(LaError::NotSquare {
            mat: a.name().into(),
            rows: a.rows(),
            cols: a.cols(),
        });
    }
    a.check_vector("b", b, true)?;
    a.check_vector("x", x, false)?;
    if b.id() == x.id() {
        return Err(LaError::Option {
            option: "x",
            value: x.name().into(),
            why: "x and b must be different Dats",
        });
    }
    let comm = ranks_of(b)?;
    // Owned rows: the first `n` values of each vector (halo values follow them).
    let n = a.rows();
    let bs = b.data_ro()?[..n].to_vec();
    let mut xs = x.data()?;
    if let Some(comm) = comm.filter(|c| c.size() > 1) {
        let sp = a.sparsity();
        let neighbours = neighbours_of(sp.row_set(), sp.dims().0);
        a.with_csr("solve", |csr| {
            let system = RankSystem {
                matrix: csr,
                comm: &*comm,
                neighbours: &neighbours,
            };
            solver.solve_across_ranks(&system, &bs, &mut xs[..n], options, a.name())
        })?
    } else {
        a.with_csr("solve", |csr| {
            solver.solve_csr(csr, &bs, &mut xs[..n], options, a.name())
        })?
    }
}

/// Solves the mixed system `A x = b` with the native solver: `a` a block matrix assembled
/// through mixed maps (its rows and columns the flat sets of `b`'s and `x`'s mixed sets), `b`
/// and `x` mixed Dats of one value per element. Monolithic with any preconditioner; with
/// [`Preconditioner::FieldSplit`] each component of `b`'s mixed set is a field.
pub fn solve_mixed(
    a: &Mat,
    b: &op2_core::MixedDat<f64>,
    x: &op2_core::MixedDat<f64>,
    options: &SolverOptions,
) -> Result<SolveReport> {
    let rows = b.set();
    if a.sparsity().row_set() != rows.flat() || a.sparsity().col_set() != x.set().flat() {
        return Err(LaError::Option {
            option: "a",
            value: a.name().into(),
            why: "a mixed solve needs the matrix of the mixed Dats' flat sets (assembled through their mixed maps)",
        });
    }
    let flat_b = b.to_flat()?;
    let flat_x = x.to_flat()?;
    // One field per scalar row: element `f` of the flat set owns rows `f * dim ..`.
    let dim = a.sparsity().dims().0;
    let mut fields = vec![0u32; rows.flat().size() * dim];
    for (c, s) in rows.split().iter().enumerate() {
        for e in 0..s.size() {
            if let Some(f) = rows.flat_index(c, e) {
                fields[f * dim..(f + 1) * dim].fill(c as u32);
            }
        }
    }
    let mut options = options.clone();
    options.fields = Some(fields.into());
    let report = solve_with(&NativeSolver, a, &flat_b, &flat_x, &options)?;
    x.set_from_flat(&flat_x)?;
    Ok(report)
}

/// Solves `A x = b` with the native solver.
pub fn solve(a: &Mat, b: &Dat<f64>, x: &Dat<f64>, options: &SolverOptions) -> Result<SolveReport> {
    solve_with(&NativeSolver, a, b, x, options)
}

/// What every solver checks of a one-process system: the options, a square matrix, and vectors
/// of its size.
pub(crate) fn check_system(
    a: CsrRef<'_>,
    b: &[f64],
    x: &[f64],
    options: &SolverOptions,
    matrix_name: &str,
) -> Result<()> {
    options.check()?;
    if a.rows != a.cols {
        return Err(LaError::NotSquare {
            mat: matrix_name.into(),
            rows: a.rows,
            cols: a.cols,
        });
    }
    a.check(matrix_name)?;
    check_len("b", b.len(), a.rows)?;
    check_len("x", x.len(), a.cols)
}

/// The native Krylov solvers and preconditioners, in pure Rust: no crate offers KSP's set (faer
/// has sparse direct factorisations and CG/BiCGStab without preconditioners, sprs only
/// BiCGStab), and matching PETSc's iteration counts needs its conventions.
#[derive(Debug, Clone, Copy, Default)]
pub struct NativeSolver;

impl NativeSolver {
    fn run(
        &self,
        op: &Operator<'_>,
        b: &[f64],
        x: &mut [f64],
        options: &SolverOptions,
        matrix_name: &str,
    ) -> Result<SolveReport> {
        options.check()?;
        check_len("b", b.len(), op.rows())?;
        check_len("x", x.len(), op.rows())?;
        if !options.nonzero_initial_guess {
            x.fill(0.0);
        }
        // Preconditioners act on this rank's owned-by-owned block (the whole matrix on one
        // process): across ranks, block Jacobi with the chosen method inside each block, as PETSc
        // does for SOR and ILU.
        let block;
        let local = if op.is_serial() {
            op.matrix()
        } else {
            block = op.local_block();
            CsrRef {
                rows: op.rows(),
                cols: op.rows(),
                row_ptr: &block.0,
                col_idx: &block.1,
                values: &block.2,
            }
        };
        let pc = Applied::new(
            options.preconditioner,
            local,
            matrix_name,
            options.fields.as_deref(),
        );
        // Across ranks, a preconditioner only some ranks could build (a zero pivot in one
        // block) stops every rank, instead of leaving the others in the first inner product.
        if let Some(failed) = op.first_failed_rank(pc.is_err())? {
            return match pc {
                Err(e) => Err(e),
                Ok(_) => Err(LaError::OtherRank {
                    rank: failed,
                    mat: matrix_name.into(),
                }),
            };
        }
        let pc = pc?;
        let mut k = Krylov {
            op,
            pc,
            options,
            history: Vec::new(),
            limit: 0.0,
        };
        let (reason, iterations) = match options.method {
            Method::Cg => k.cg(b, x)?,
            Method::Gmres { restart } => k.gmres(b, x, restart)?,
            Method::BiCgStab => k.bicgstab(b, x)?,
        };
        Ok(SolveReport {
            solver: format!(
                "native {} + {}",
                options.method.petsc_name(),
                options.preconditioner.petsc_name()
            ),
            reason,
            iterations,
            residual_history: k.history,
        })
    }
}

impl LinearSolver for NativeSolver {
    fn name(&self) -> &str {
        "native"
    }

    fn solve_csr(
        &self,
        a: CsrRef<'_>,
        b: &[f64],
        x: &mut [f64],
        options: &SolverOptions,
        matrix_name: &str,
    ) -> Result<SolveReport> {
        check_system(a, b, x, options, matrix_name)?;
        self.run(&Operator::serial(a), b, x, options, matrix_name)
    }

    fn solve_across_ranks(
        &self,
        system: &RankSystem<'_>,
        b: &[f64],
        x: &mut [f64],
        options: &SolverOptions,
        matrix_name: &str,
    ) -> Result<SolveReport> {
        // A hand-built system is checked like a one-process one: arrays that fit, halo positions
        // inside the local vector, sends from owned values.
        let a = system.matrix;
        a.check(matrix_name)?;
        for n in system.neighbours {
            let outside = n.send.iter().any(|&i| i >= a.rows)
                || n.receive.iter().any(|&i| i < a.rows || i >= a.cols);
            if outside {
                return Err(LaError::Csr {
                    mat: matrix_name.into(),
                    why: format!(
                        "rank {}'s exchange lists name positions outside the owned ({}) or halo ({}..{}) values",
                        n.rank, a.rows, a.rows, a.cols
                    ),
                });
            }
        }
        self.run(&Operator::rank(system), b, x, options, matrix_name)
    }
}

/// `y += alpha x`.
fn axpy(y: &mut [f64], alpha: f64, x: &[f64]) {
    for (y, x) in y.iter_mut().zip(x) {
        *y += alpha * x;
    }
}

/// Why a method stopped and after how many iterations.
type Stop = Result<(ConvergedReason, usize)>;

struct Krylov<'a, 'o> {
    op: &'a Operator<'a>,
    pc: Applied<'a>,
    options: &'o SolverOptions,
    history: Vec<f64>,
    /// `max(rtol ||r0||, atol)`, set by the first test.
    limit: f64,
}

impl Krylov<'_, '_> {
    /// PETSc's default convergence test on residual norm `rnorm` after `its` iterations.
    fn test(&mut self, its: usize, rnorm: f64) -> Option<ConvergedReason> {
        self.history.push(rnorm);
        let o = self.options;
        if !rnorm.is_finite() {
            return Some(ConvergedReason::DivergedNanOrInf);
        }
        if its == 0 {
            self.limit = (o.rtol * rnorm).max(o.atol);
        }
        if rnorm <= self.limit {
            return Some(if rnorm < o.atol {
                ConvergedReason::Atol
            } else {
                ConvergedReason::Rtol
            });
        }
        if its > 0 && rnorm >= o.dtol * self.history[0] {
            return Some(ConvergedReason::DivergedDtol);
        }
        if its >= o.max_iterations {
            return Some(ConvergedReason::DivergedIterations);
        }
        None
    }

    /// `r = b - A x`.
    fn residual(&self, b: &[f64], x: &[f64], r: &mut [f64]) -> Result<()> {
        self.op.mult(x, r)?;
        for (r, b) in r.iter_mut().zip(b) {
            *r = b - *r;
        }
        Ok(())
    }

    fn dot(&self, a: &[f64], b: &[f64]) -> Result<f64> {
        self.op.dot(a, b)
    }

    fn norm(&self, a: &[f64]) -> Result<f64> {
        self.op.norm(a)
    }

    fn cg(&mut self, b: &[f64], x: &mut [f64]) -> Stop {
        let n = b.len();
        let (mut r, mut z, mut p, mut w) = (vec![0.0; n], vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        self.residual(b, x, &mut r)?;
        self.pc.apply(&r, &mut z);
        let rnorm = self.norm(&z)?;
        if let Some(reason) = self.test(0, rnorm) {
            return Ok((reason, 0));
        }
        let mut beta = self.dot(&r, &z)?;
        let mut beta_old = 0.0;
        let mut its = 0;
        loop {
            if beta < 0.0 {
                return Ok((ConvergedReason::DivergedIndefinitePreconditioner, its));
            }
            if beta == 0.0 {
                // r . z = 0 with z = M^-1 r: nothing left to reduce (PETSc stops the same way).
                return Ok((ConvergedReason::Atol, its));
            }
            if its == 0 {
                p.copy_from_slice(&z);
            } else {
                let ratio = beta / beta_old;
                for (p, z) in p.iter_mut().zip(&z) {
                    *p = z + ratio * *p;
                }
            }
            self.op.mult(&p, &mut w)?;
            let curvature = self.dot(&p, &w)?;
            if curvature <= 0.0 || !curvature.is_finite() {
                let reason = if curvature.is_finite() {
                    ConvergedReason::DivergedIndefiniteMatrix
                } else {
                    ConvergedReason::DivergedNanOrInf
                };
                return Ok((reason, its));
            }
            let alpha = beta / curvature;
            axpy(x, alpha, &p);
            axpy(&mut r, -alpha, &w);
            self.pc.apply(&r, &mut z);
            its += 1;
            let rnorm = self.norm(&z)?;
            if let Some(reason) = self.test(its, rnorm) {
                return Ok((reason, its));
            }
            beta_old = beta;
            beta = self.dot(&r, &z)?;
        }
    }

    /// `dst = M^-1 A src`.
    fn preconditioned(&self, src: &[f64], dst: &mut [f64], tmp: &mut [f64]) -> Result<()> {
        self.op.mult(src, tmp)?;
        self.pc.apply(tmp, dst);
        Ok(())
    }

    fn bicgstab(&mut self, b: &[f64], x: &mut [f64]) -> Stop {
        // BiCGStab on the left-preconditioned system M^-1 A x = M^-1 b.
        let n = b.len();
        let mut tmp = vec![0.0; n];
        let mut r = vec![0.0; n];
        self.residual(b, x, &mut tmp)?;
        self.pc.apply(&tmp, &mut r);
        let rnorm = self.norm(&r)?;
        if let Some(reason) = self.test(0, rnorm) {
            return Ok((reason, 0));
        }
        let r_hat = r.clone();
        let (mut p, mut v, mut s, mut t) = (vec![0.0; n], vec![0.0; n], vec![0.0; n], vec![0.0; n]);
        let (mut rho, mut alpha, mut omega) = (1.0, 1.0, 1.0);
        let mut its = 0;
        loop {
            let rho_new = self.dot(&r_hat, &r)?;
            if rho_new == 0.0 || omega == 0.0 {
                return Ok((ConvergedReason::DivergedBreakdown, its));
            }
            let beta = (rho_new / rho) * (alpha / omega);
            rho = rho_new;
            for ((p, r), v) in p.iter_mut().zip(&r).zip(&v) {
                *p = r + beta * (*p - omega * v);
            }
            self.preconditioned(&p, &mut v, &mut tmp)?;
            let rv = self.dot(&r_hat, &v)?;
            if rv == 0.0 {
                return Ok((ConvergedReason::DivergedBreakdown, its));
            }
            alpha = rho / rv;
            for ((s, r), v) in s.iter_mut().zip(&r).zip(&v) {
                *s = r - alpha * v;
            }
            self.preconditioned(&s, &mut t, &mut tmp)?;
            let tt = self.dot(&t, &t)?;
            omega = if tt == 0.0 {
                0.0
            } else {
                self.dot(&t, &s)? / tt
            };
            axpy(x, alpha, &p);
            axpy(x, omega, &s);
            for ((r, s), t) in r.iter_mut().zip(&s).zip(&t) {
                *r = s - omega * t;
            }
            its += 1;
            let rnorm = self.norm(&r)?;
            if let Some(reason) = self.test(its, rnorm) {
                return Ok((reason, its));
            }
        }
    }

    fn gmres(&mut self, b: &[f64], x: &mut [f64], restart: usize) -> Stop {
        // Left-preconditioned GMRES(m) with modified Gram-Schmidt and Givens rotations; the
        // residual norm of the least-squares problem is the one tested, as in PETSc. The
        // Hessenberg matrix grows a column per iteration (column j holds j + 2 entries), so
        // memory follows the iterations done, whatever `restart` says.
        let n = b.len();
        let m = restart.max(1);
        let mut tmp = vec![0.0; n];
        let mut w = vec![0.0; n];
        let mut its = 0;
        let mut v: Vec<Vec<f64>> = Vec::new();
        let mut h: Vec<Vec<f64>> = Vec::new();
        let (mut cs, mut sn, mut g): (Vec<f64>, Vec<f64>, Vec<f64>) = Default::default();
        loop {
            self.residual(b, x, &mut tmp)?;
            let mut r = vec![0.0; n];
            self.pc.apply(&tmp, &mut r);
            let beta = self.norm(&r)?;
            if its == 0 {
                if let Some(reason) = self.test(0, beta) {
                    return Ok((reason, 0));
                }
            }
            if beta == 0.0 {
                return Ok((ConvergedReason::Atol, its));
            }
            v.clear();
            h.clear();
            cs.clear();
            sn.clear();
            g.clear();
            v.push(r.iter().map(|x| x / beta).collect());
            g.push(beta);
            let mut stop = None;
            let mut j = 0;
            while j < m {
                self.preconditioned(&v[j], &mut w, &mut tmp)?;
                let mut col = vec![0.0; j + 2];
                for (i, vi) in v.iter().enumerate() {
                    col[i] = self.dot(&w, vi)?;
                    axpy(&mut w, -col[i], vi);
                }
                let hn = self.norm(&w)?;
                col[j + 1] = hn;
                for i in 0..j {
                    let t = cs[i] * col[i] + sn[i] * col[i + 1];
                    col[i + 1] = -sn[i] * col[i] + cs[i] * col[i + 1];
                    col[i] = t;
                }
                let d = col[j].hypot(col[j + 1]);
                if d == 0.0 || !d.is_finite() {
                    stop = Some(if d == 0.0 {
                        ConvergedReason::DivergedBreakdown
                    } else {
                        ConvergedReason::DivergedNanOrInf
                    });
                    break;
                }
                cs.push(col[j] / d);
                sn.push(col[j + 1] / d);
                col[j] = d;
                col[j + 1] = 0.0;
                h.push(col);
                g.push(-sn[j] * g[j]);
                g[j] *= cs[j];
                its += 1;
                j += 1;
                if let Some(reason) = self.test(its, g[j].abs()) {
                    stop = Some(reason);
                    break;
                }
                if hn == 0.0 {
                    // Happy breakdown: the Krylov space holds the solution.
                    break;
                }
                v.push(w.iter().map(|x| x / hn).collect());
            }
            // x += V y with H y = g (upper triangular, j columns; H[i][k] is h[k][i]).
            let mut y = vec![0.0; j];
            for i in (0..j).rev() {
                let mut s = g[i];
                for k in i + 1..j {
                    s -= h[k][i] * y[k];
                }
                y[i] = s / h[i][i];
            }
            for (i, yi) in y.iter().enumerate() {
                axpy(x, *yi, &v[i]);
            }
            if let Some(reason) = stop {
                return Ok((reason, its));
            }
        }
    }
}
