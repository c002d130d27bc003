//! The native Krylov solvers against a dense direct solve (Gaussian elimination with partial
//! pivoting, written here) on random SPD and nonsymmetric systems, every method with every
//! preconditioner that suits it; and the stopping reasons on systems built to fail.

use op2_la::{
    ConvergedReason, CsrRef, LaError, LinearSolver, Method, NativeSolver, Preconditioner,
    SolverOptions,
};
use proptest::prelude::*;

/// A CSR matrix owned by the test.
struct Csr {
    n: usize,
    row_ptr: Vec<usize>,
    col_idx: Vec<u32>,
    values: Vec<f64>,
}

impl Csr {
    /// Entries of `dense` that are nonzero, plus every diagonal entry.
    fn from_dense(dense: &[Vec<f64>]) -> Csr {
        let n = dense.len();
        let mut row_ptr = vec![0];
        let (mut col_idx, mut values) = (vec![], vec![]);
        for (i, row) in dense.iter().enumerate() {
            for (j, &v) in row.iter().enumerate() {
                if v != 0.0 || i == j {
                    col_idx.push(j as u32);
                    values.push(v);
                }
            }
            row_ptr.push(col_idx.len());
        }
        Csr {
            n,
            row_ptr,
            col_idx,
            values,
        }
    }

    fn as_ref(&self) -> CsrRef<'_> {
        CsrRef {
            rows: self.n,
            cols: self.n,
            row_ptr: &self.row_ptr,
            col_idx: &self.col_idx,
            values: &self.values,
        }
    }
}

/// `A x = b` by Gaussian elimination with partial pivoting.
fn dense_solve(a: &[Vec<f64>], b: &[f64]) -> Vec<f64> {
    let n = b.len();
    let mut m: Vec<Vec<f64>> = a
        .iter()
        .zip(b)
        .map(|(r, &bi)| {
            let mut r = r.clone();
            r.push(bi);
            r
        })
        .collect();
    for c in 0..n {
        let p = (c..n)
            .max_by(|&i, &j| m[i][c].abs().total_cmp(&m[j][c].abs()))
            .unwrap();
        m.swap(c, p);
        let pivot = m[c].clone();
        for row in &mut m[c + 1..] {
            let f = row[c] / pivot[c];
            for (v, p) in row[c..].iter_mut().zip(&pivot[c..]) {
                *v -= f * p;
            }
        }
    }
    let mut x = vec![0.0; n];
    for r in (0..n).rev() {
        let s: f64 = (r + 1..n).map(|k| m[r][k] * x[k]).sum();
        x[r] = (m[r][n] - s) / m[r][r];
    }
    x
}

/// A random sparse matrix: `n` rows, each entry present with probability ~`density`.
fn sparse(n: usize, entries: &[(usize, usize, f64)]) -> Vec<Vec<f64>> {
    let mut a = vec![vec![0.0; n]; n];
    for &(i, j, v) in entries {
        a[i % n][j % n] += v;
    }
    a
}

/// SPD: `B + B^T` made strictly diagonally dominant with a positive diagonal.
fn spd(n: usize, entries: &[(usize, usize, f64)]) -> Vec<Vec<f64>> {
    let b = sparse(n, entries);
    let mut a = vec![vec![0.0; n]; n];
    for i in 0..n {
        for j in 0..n {
            a[i][j] = b[i][j] + b[j][i];
        }
    }
    dominant(a, 1.0)
}

fn dominant(mut a: Vec<Vec<f64>>, margin: f64) -> Vec<Vec<f64>> {
    for i in 0..a.len() {
        let off: f64 = (0..a.len())
            .filter(|&j| j != i)
            .map(|j| a[i][j].abs())
            .sum();
        a[i][i] = off + margin;
    }
    a
}

fn check(a: &[Vec<f64>], b: &[f64], method: Method, pc: Preconditioner) {
    let csr = Csr::from_dense(a);
    let expected = dense_solve(a, b);
    let mut x = vec![0.0; b.len()];
    let options = SolverOptions::new(method, pc)
        .rtol(1e-12)
        .max_iterations(2000);
    let report = NativeSolver
        .solve_csr(csr.as_ref(), b, &mut x, &options, "A")
        .unwrap();
    assert!(report.converged(), "{method:?} {pc:?}: {report:?}");
    assert_eq!(report.residual_history.len(), report.iterations + 1);
    let scale = expected.iter().fold(1.0f64, |m, v| m.max(v.abs()));
    for (i, (got, want)) in x.iter().zip(&expected).enumerate() {
        assert!(
            (got - want).abs() <= 1e-8 * scale,
            "{method:?} {pc:?}: x[{i}] = {got}, direct solve {want}"
        );
    }
}

const PRECONDITIONERS: [Preconditioner; 4] = [
    Preconditioner::None,
    Preconditioner::Jacobi,
    Preconditioner::Sor { omega: 1.0 },
    Preconditioner::Ilu0,
];

fn entries(n: usize) -> impl Strategy<Value = Vec<(usize, usize, f64)>> {
    prop::collection::vec((0..n, 0..n, -2.0f64..2.0), 0..4 * n)
}

fn system() -> impl Strategy<Value = (usize, Vec<(usize, usize, f64)>, Vec<f64>)> {
    (1usize..40).prop_flat_map(|n| {
        (
            Just(n),
            entries(n),
            prop::collection::vec(-10.0f64..10.0, n),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn every_method_solves_spd_systems((n, e, b) in system()) {
        let a = spd(n, &e);
        for pc in PRECONDITIONERS {
            check(&a, &b, Method::Cg, pc);
            check(&a, &b, Method::Gmres { restart: 30 }, pc);
            check(&a, &b, Method::BiCgStab, pc);
        }
    }

    #[test]
    fn gmres_and_bicgstab_solve_nonsymmetric_systems((n, e, b) in system()) {
        let a = dominant(sparse(n, &e), 0.5);
        for pc in PRECONDITIONERS {
            check(&a, &b, Method::Gmres { restart: 30 }, pc);
            check(&a, &b, Method::Gmres { restart: 5 }, pc);
            check(&a, &b, Method::BiCgStab, pc);
        }
    }
}

/// The 1-D Laplacian (tridiagonal 2, -1): SPD, condition number growing as n^2.
fn laplacian(n: usize) -> Vec<Vec<f64>> {
    let mut a = vec![vec![0.0; n]; n];
    for i in 0..n {
        a[i][i] = 2.0;
        if i > 0 {
            a[i][i - 1] = -1.0;
        }
        if i + 1 < n {
            a[i][i + 1] = -1.0;
        }
    }
    a
}

#[test]
fn cg_converges_in_n_steps_and_ilu_is_exact_on_a_tridiagonal_matrix() {
    let a = laplacian(50);
    let csr = Csr::from_dense(&a);
    let b = vec![1.0; 50];
    let mut x = vec![0.0; 50];
    let r = NativeSolver
        .solve_csr(
            csr.as_ref(),
            &b,
            &mut x,
            &SolverOptions::new(Method::Cg, Preconditioner::None).rtol(1e-10),
            "A",
        )
        .unwrap();
    // CG in exact arithmetic: at most n steps; this one needs n/2 (symmetric right-hand side).
    assert!(r.converged() && r.iterations <= 26, "{r:?}");
    // ILU(0) of a tridiagonal matrix is its exact LU: one iteration.
    let r = NativeSolver
        .solve_csr(
            csr.as_ref(),
            &b,
            &mut x,
            &SolverOptions::new(Method::Gmres { restart: 30 }, Preconditioner::Ilu0).rtol(1e-10),
            "A",
        )
        .unwrap();
    assert!(r.converged() && r.iterations == 1, "{r:?}");
    // x_i = i (n + 1 - i) / 2 for the 1-based index i.
    for (i, xi) in x.iter().enumerate() {
        let k = (i + 1) as f64;
        assert!((xi - k * (51.0 - k) / 2.0).abs() < 1e-8);
    }
}

#[test]
fn stopping_reasons_are_reported_not_hung() {
    let csr = Csr::from_dense(&laplacian(200));
    let b = vec![1.0; 200];
    let mut x = vec![0.0; 200];
    // The iteration limit.
    let o = SolverOptions::new(Method::Cg, Preconditioner::None)
        .rtol(1e-12)
        .max_iterations(5);
    let r = NativeSolver
        .solve_csr(csr.as_ref(), &b, &mut x, &o, "A")
        .unwrap();
    assert_eq!(r.reason, ConvergedReason::DivergedIterations);
    assert_eq!(r.iterations, 5);
    assert!(matches!(
        r.clone().check(),
        Err(LaError::NotConverged { iterations: 5, .. })
    ));
    // An indefinite matrix stops CG.
    let neg: Vec<Vec<f64>> = laplacian(10)
        .into_iter()
        .map(|r| r.into_iter().map(|v| -v).collect())
        .collect();
    let csr_neg = Csr::from_dense(&neg);
    let mut x = vec![0.0; 10];
    let r = NativeSolver
        .solve_csr(
            csr_neg.as_ref(),
            &[1.0; 10],
            &mut x,
            &SolverOptions::new(Method::Cg, Preconditioner::None),
            "A",
        )
        .unwrap();
    assert_eq!(r.reason, ConvergedReason::DivergedIndefiniteMatrix);
    // NaN in the matrix.
    let mut bad = laplacian(10);
    bad[3][3] = f64::NAN;
    let csr_nan = Csr::from_dense(&bad);
    for method in [Method::Cg, Method::Gmres { restart: 30 }, Method::BiCgStab] {
        let r = NativeSolver
            .solve_csr(
                csr_nan.as_ref(),
                &[1.0; 10],
                &mut x,
                &SolverOptions::new(method, Preconditioner::None),
                "A",
            )
            .unwrap();
        assert!(!r.converged(), "{method:?}: {r:?}");
    }
    // A zero right-hand side converges at once, to zero.
    let r = NativeSolver
        .solve_csr(
            csr.as_ref(),
            &[0.0; 200],
            &mut vec![1.0; 200],
            &SolverOptions::new(Method::Cg, Preconditioner::Jacobi),
            "A",
        )
        .unwrap();
    assert!(r.converged() && r.iterations == 0);
}

#[test]
fn bad_options_and_pivots_are_typed_errors() {
    let csr = Csr::from_dense(&laplacian(4));
    let b = [1.0; 4];
    let mut x = [0.0; 4];
    let solve =
        |o: SolverOptions, x: &mut [f64]| NativeSolver.solve_csr(csr.as_ref(), &b, x, &o, "A");
    let base = SolverOptions::new(Method::Cg, Preconditioner::None);
    for o in [
        base.clone().rtol(-1.0),
        base.clone().rtol(f64::NAN),
        base.clone().atol(-1.0),
        SolverOptions::new(Method::Gmres { restart: 0 }, Preconditioner::None),
        SolverOptions::new(Method::Cg, Preconditioner::Sor { omega: 2.5 }),
    ] {
        assert!(matches!(solve(o, &mut x), Err(LaError::Option { .. })));
    }
    assert!(matches!(
        solve(base.clone(), &mut [0.0; 3]),
        Err(LaError::Length { .. })
    ));
    // A zero diagonal: ILU(0) and SOR refuse it, Jacobi treats it as 1 (as PETSc does).
    let mut z = laplacian(4);
    z[0][0] = 0.0;
    let csr_z = Csr::from_dense(&z);
    for pc in [Preconditioner::Ilu0, Preconditioner::Sor { omega: 1.0 }] {
        let r = NativeSolver.solve_csr(
            csr_z.as_ref(),
            &b,
            &mut x,
            &SolverOptions::new(Method::Gmres { restart: 30 }, pc),
            "Z",
        );
        assert!(
            matches!(r, Err(LaError::ZeroPivot { row: 0, .. })),
            "{pc:?}: {r:?}"
        );
    }
    let r = NativeSolver
        .solve_csr(
            csr_z.as_ref(),
            &b,
            &mut x,
            &SolverOptions::new(Method::Gmres { restart: 30 }, Preconditioner::Jacobi),
            "Z",
        )
        .unwrap();
    assert!(r.converged());
}

#[test]
fn hand_built_matrices_that_do_not_fit_together_are_refused() {
    let o = SolverOptions::new(Method::Cg, Preconditioner::None);
    let (b, mut x) = ([1.0; 3], [0.0; 3]);
    let bad = [
        // Too few offsets.
        (vec![0usize], vec![], vec![]),
        // Offsets past the entries.
        (vec![0, 1, 2, 5], vec![0u32, 1, 2], vec![1.0, 1.0, 1.0]),
        // Decreasing offsets.
        (vec![0, 2, 1, 3], vec![0, 1, 2], vec![1.0, 1.0, 1.0]),
        // A column outside the matrix.
        (vec![0, 1, 2, 3], vec![0, 1, 7], vec![1.0, 1.0, 1.0]),
        // Fewer values than columns.
        (vec![0, 1, 2, 3], vec![0, 1, 2], vec![1.0, 1.0]),
    ];
    for (row_ptr, col_idx, values) in &bad {
        let a = CsrRef {
            rows: 3,
            cols: 3,
            row_ptr,
            col_idx,
            values,
        };
        let r = NativeSolver.solve_csr(a, &b, &mut x, &o, "H");
        assert!(matches!(r, Err(LaError::Csr { .. })), "{row_ptr:?}: {r:?}");
    }
}

#[test]
fn a_huge_restart_costs_only_the_iterations_done() {
    let csr = Csr::from_dense(&laplacian(30));
    let mut x = vec![0.0; 30];
    for restart in [usize::MAX, 1 << 40] {
        let r = NativeSolver
            .solve_csr(
                csr.as_ref(),
                &[1.0; 30],
                &mut x,
                &SolverOptions::new(Method::Gmres { restart }, Preconditioner::Jacobi).rtol(1e-10),
                "A",
            )
            .unwrap();
        assert!(r.converged() && r.iterations <= 30, "{r:?}");
    }
}
