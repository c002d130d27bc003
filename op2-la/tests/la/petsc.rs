//! The native solvers against PETSc's KSP (feature `petsc`) on one matrix: the same solution, and
//! iteration counts within one of PETSc's for every method and preconditioner, since both follow
//! KSP's conventions (left preconditioning, preconditioned norm, zero guess, the same test).

use op2_la::petsc::Petsc;
use op2_la::{
    ConvergedReason, CsrRef, LaError, LinearSolver, Method, NativeSolver, Preconditioner,
    SolverOptions,
};

/// The 5-point Laplacian on an `n x n` grid plus `shift` on the diagonal, and an
/// upwind convection term `wind` (nonsymmetric when nonzero).
fn grid(n: usize, shift: f64, wind: f64) -> (Vec<usize>, Vec<u32>, Vec<f64>) {
    let (mut row_ptr, mut cols, mut vals) = (vec![0], vec![], vec![]);
    for j in 0..n {
        for i in 0..n {
            let mut row = vec![((i + j * n) as u32, 4.0 + shift + wind)];
            if i > 0 {
                row.push(((i - 1 + j * n) as u32, -1.0 - wind));
            }
            if i + 1 < n {
                row.push(((i + 1 + j * n) as u32, -1.0));
            }
            if j > 0 {
                row.push(((i + (j - 1) * n) as u32, -1.0));
            }
            if j + 1 < n {
                row.push(((i + (j + 1) * n) as u32, -1.0));
            }
            row.sort_by_key(|e| e.0);
            for (c, v) in row {
                cols.push(c);
                vals.push(v);
            }
            row_ptr.push(cols.len());
        }
    }
    (row_ptr, cols, vals)
}

fn solve(
    s: &dyn LinearSolver,
    m: &(Vec<usize>, Vec<u32>, Vec<f64>),
    b: &[f64],
    o: &SolverOptions,
) -> (op2_la::SolveReport, Vec<f64>) {
    let a = CsrRef {
        rows: b.len(),
        cols: b.len(),
        row_ptr: &m.0,
        col_idx: &m.1,
        values: &m.2,
    };
    let mut x = vec![0.0; b.len()];
    let r = s.solve_csr(a, b, &mut x, o, "A").unwrap();
    (r, x)
}

#[test]
fn native_and_petsc_agree_on_every_method_and_preconditioner() {
    let petsc = Petsc::new().unwrap();
    assert_eq!(petsc.version().0, 3);
    let n = 40;
    let b: Vec<f64> = (0..n * n).map(|i| ((i * 7919) % 13) as f64 - 6.0).collect();
    let pcs = [
        Preconditioner::None,
        Preconditioner::Jacobi,
        Preconditioner::Sor { omega: 1.0 },
        Preconditioner::Sor { omega: 1.5 },
        Preconditioner::Ilu0,
    ];
    let symmetric = grid(n, 0.0, 0.0);
    let convective = grid(n, 0.1, 0.8);
    let mut cases = Vec::new();
    for pc in pcs {
        cases.push((&symmetric, Method::Cg, pc));
        cases.push((&symmetric, Method::Gmres { restart: 30 }, pc));
        cases.push((&convective, Method::Gmres { restart: 30 }, pc));
        cases.push((&convective, Method::Gmres { restart: 10 }, pc));
        cases.push((&convective, Method::BiCgStab, pc));
    }
    for (m, method, pc) in cases {
        let o = SolverOptions::new(method, pc).rtol(1e-8);
        let (rn, xn) = solve(&NativeSolver, m, &b, &o);
        let (rp, xp) = solve(&petsc, m, &b, &o);
        eprintln!(
            "{method:?} + {pc:?}: native {} / petsc {} iterations",
            rn.iterations, rp.iterations
        );
        let what = format!("{method:?} + {pc:?}: native {rn:?}\npetsc {rp:?}");
        assert!(rn.converged() && rp.converged(), "{what}");
        assert!(
            rn.iterations.abs_diff(rp.iterations) <= 1,
            "{what}: {} vs {} iterations",
            rn.iterations,
            rp.iterations
        );
        // The first residual norms are the same number (same norm, same guess).
        assert!(
            (rn.residual_history[0] - rp.residual_history[0]).abs()
                <= 1e-10 * rp.residual_history[0],
            "{what}"
        );
        let scale = xp.iter().fold(0.0f64, |m, v| m.max(v.abs()));
        for (a, b) in xn.iter().zip(&xp) {
            assert!((a - b).abs() <= 1e-6 * scale, "{what}: {a} vs {b}");
        }
    }
}

#[test]
fn petsc_reports_limits_and_refuses_bad_input_with_typed_errors() {
    let petsc = Petsc::new().unwrap();
    let m = grid(20, 0.0, 0.0);
    let b = vec![1.0; 400];
    let (r, _) = solve(
        &petsc,
        &m,
        &b,
        &SolverOptions::new(Method::Cg, Preconditioner::None)
            .rtol(1e-12)
            .max_iterations(3),
    );
    assert_eq!(r.reason, ConvergedReason::DivergedIterations);
    assert_eq!(r.iterations, 3);
    assert_eq!(r.residual_history.len(), 4);
    let a = CsrRef {
        rows: 400,
        cols: 400,
        row_ptr: &m.0,
        col_idx: &m.1,
        values: &m.2,
    };
    let mut x = vec![0.0; 399];
    assert!(matches!(
        petsc.solve_csr(a, &b, &mut x, &SolverOptions::default(), "A"),
        Err(LaError::Length { .. })
    ));
    let mut x = vec![0.0; 400];
    assert!(matches!(
        petsc.solve_csr(a, &b, &mut x, &SolverOptions::default().rtol(2.0), "A"),
        Err(LaError::Option { .. })
    ));
    // Arrays that do not fit together never reach PETSc.
    let short = CsrRef {
        row_ptr: &m.0[..10],
        ..a
    };
    assert!(matches!(
        petsc.solve_csr(short, &b, &mut x, &SolverOptions::default(), "A"),
        Err(LaError::Csr { .. })
    ));
}
