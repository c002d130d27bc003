//! Complex matrices (`Mat::new_complex`, PyOP2's `Mat(sparsity, dtype=complex128)`): assembly
//! loops whose kernels write `double _Complex` element blocks (adding and inserting, per element
//! and per entry), values set by hand, Dirichlet rows and the product with complex Dats, against
//! dense matrices computed here with `num_complex`. The host backends run them; the device
//! backends refuse complex data with a typed error. Real-only operations refuse complex
//! matrices.

use op2::la::{self, LaError, LoopArg, Mat, SolverOptions, Sparsity};
use op2::num_complex::Complex64;
use op2::{INC, Op2Error, READ, WRITE};
use op2_test_support::{backend, builder, kernel, ring};

fn runs_complex() -> bool {
    matches!(backend().as_str(), "seq" | "openmp")
}

/// Each edge of a ring adds `w_e * [[1, i], [2i, 3]]` at its two nodes (and `conj` on the
/// diagonal of the second), complex weights per edge.
const ELEMENT: &str = "void element(double complex A[2][2], const double complex *w) {
  A[0][0] += *w; A[0][1] += *w * I; A[1][0] += 2.0 * I * *w; A[1][1] += 3.0 * conj(*w);
}";

fn element(w: Complex64) -> [[Complex64; 2]; 2] {
    let i = Complex64::i();
    [[w, w * i], [2.0 * i * w, 3.0 * w.conj()]]
}

fn weights(n: usize) -> Vec<Complex64> {
    (0..n)
        .map(|e| Complex64::new(1.0 + e as f64 * 0.5, 0.25 - e as f64))
        .collect()
}

/// The dense sum of each edge's block at its ends, `times` times.
fn assembled(n: usize, w: &[Complex64], times: f64) -> Vec<Vec<Complex64>> {
    let mut want = vec![vec![Complex64::default(); n]; n];
    for (e, &we) in w.iter().enumerate() {
        let ends = [e, (e + 1) % n];
        let b = element(we);
        for i in 0..2 {
            for j in 0..2 {
                want[ends[i]][ends[j]] += b[i][j] * times;
            }
        }
    }
    want
}

fn close(a: &[Vec<Complex64>], b: &[Vec<Complex64>]) {
    for (r, (x, y)) in a.iter().zip(b).enumerate() {
        for (c, (u, v)) in x.iter().zip(y).enumerate() {
            assert!(
                (u - v).norm() <= 1e-12 * (1.0 + v.norm()),
                "({r}, {c}): {u} vs {v}"
            );
        }
    }
}

#[test]
fn complex_element_blocks_add_and_insert() {
    let rt = builder().build().unwrap();
    let n = 9;
    let (_, edges, m) = ring(&rt, n);
    let w = weights(n);
    let wd = rt.decl_dat(&edges, 1, &w, "w").unwrap();
    let sp = Sparsity::new(&[(&m, &m)], (1, 1), "ring").unwrap();
    let a = Mat::new_complex(&sp, "A");
    assert!(a.is_complex());
    let k = kernel("element", ELEMENT);
    let run = |access| {
        la::par_loop(
            &rt,
            &k,
            &edges,
            [
                LoopArg::Mat(a.arg(access, &m, &m)),
                LoopArg::Op2(wd.arg(READ)),
            ],
        )
    };
    if !runs_complex() {
        let e = run(INC).unwrap_err();
        assert!(
            matches!(&e, LaError::Op2(Op2Error::Unsupported { reason, .. }) if reason.contains("complex")),
            "{e}"
        );
        return;
    }
    // Twice: the second loop reuses the staging the first left.
    run(INC).unwrap();
    run(INC).unwrap();
    a.assemble();
    close(&a.to_dense_complex(), &assembled(n, &w, 2.0));
    // Real and imaginary parts in turn through the real accessors.
    let parts = a.values();
    let values = a.complex_values();
    assert_eq!(parts.len(), 2 * values.len());
    assert!(
        values
            .iter()
            .zip(parts.chunks(2))
            .all(|(v, p)| v.re == p[0] && v.im == p[1])
    );
    // Inserting: where two edges share an entry, the last edge's value stays.
    a.zero();
    run(WRITE).unwrap();
    a.assemble();
    let got = a.to_dense_complex();
    for (e, &we) in w.iter().enumerate() {
        let b = element(we);
        // Entry (e+1, e) and (e, e+1) belong to edge e alone.
        assert_eq!(got[(e + 1) % n][e], b[1][0]);
        assert_eq!(got[e][(e + 1) % n], b[0][1]);
    }
    // The diagonal: node e is the second end of edge e-1, then the first of edge e (last).
    assert_eq!(got[3][3], element(w[3])[0][0]);
}

/// The per-entry form (PyOP2's `op2.i` local iteration space): one call per entry of the
/// element matrix, with a `double _Complex A[1][1]` block and the entry's indices; adding, and
/// through mixed maps.
#[test]
fn complex_blocks_per_entry_and_through_mixed_maps() {
    if !runs_complex() {
        return;
    }
    let rt = builder().build().unwrap();
    let n = 7;
    let (nodes, edges, m) = ring(&rt, n);
    let w = weights(n);
    let wd = rt.decl_dat(&edges, 1, &w, "w").unwrap();
    let sp = Sparsity::new(&[(&m, &m)], (1, 1), "ring").unwrap();
    let a = Mat::new_complex(&sp, "A");
    let k = kernel(
        "entry",
        "void entry(double complex A[1][1], const double complex *w, int i, int j) {
           double complex b[2][2] = {{*w, *w * I}, {2.0 * I * *w, 3.0 * conj(*w)}};
           A[0][0] += b[i][j];
         }",
    );
    la::par_loop(
        &rt,
        &k,
        &edges,
        [
            LoopArg::Mat(a.arg_entries(INC, &m, &m)),
            LoopArg::Op2(wd.arg(READ)),
        ],
    )
    .unwrap();
    a.assemble();
    close(&a.to_dense_complex(), &assembled(n, &w, 1.0));
    // Mixed: (nodes, edges) through (the edge's two nodes, the edge itself).
    let e2e = rt
        .decl_map(&edges, &edges, 1, (0..n as i32).collect::<Vec<_>>(), "e2e")
        .unwrap();
    let ms = rt.decl_mixed_set(&[&nodes, &edges], "ms").unwrap();
    let mm = rt.decl_mixed_map(&ms, &[&m, &e2e], "mm").unwrap();
    let msp = Sparsity::mixed(&mm, &mm, "mixed").unwrap();
    let b = Mat::new_complex(&msp, "B");
    let k3 = kernel(
        "three",
        "void three(double complex A[3][3], const double complex *w) {
           for (int i = 0; i < 3; i++) for (int j = 0; j < 3; j++) A[i][j] += *w * (i + 3 * j) * I;
         }",
    );
    la::par_loop(
        &rt,
        &k3,
        &edges,
        [
            LoopArg::Mat(b.arg_mixed(INC, &mm, &mm)),
            LoopArg::Op2(wd.arg(READ)),
        ],
    )
    .unwrap();
    b.assemble();
    let size = ms.flat().size();
    let mut want = vec![vec![Complex64::default(); size]; size];
    for (e, &we) in w.iter().enumerate() {
        let rows = [
            ms.flat_index(0, e).unwrap(),
            ms.flat_index(0, (e + 1) % n).unwrap(),
            ms.flat_index(1, e).unwrap(),
        ];
        for i in 0..3 {
            for j in 0..3 {
                want[rows[i]][rows[j]] += we * ((i + 3 * j) as f64) * Complex64::i();
            }
        }
    }
    close(&b.to_dense_complex(), &want);
}

#[test]
fn complex_entries_rows_and_products() {
    let rt = builder().build().unwrap();
    let n = 6;
    let (nodes, _, m) = ring(&rt, n);
    let sp = Sparsity::new(&[(&m, &m)], (1, 1), "ring").unwrap();
    let a = Mat::new_complex(&sp, "A");
    let c = |re, im| Complex64::new(re, im);
    a.add_complex_values(
        &[0, 1],
        &[0, 1],
        &[c(1.0, 1.0), c(2.0, 0.0), c(0.0, 3.0), c(4.0, -1.0)],
    )
    .unwrap();
    a.add_complex_values(&[1], &[1], &[c(0.5, 0.5)]).unwrap();
    // Real values for a complex matrix (and the other way) are refused, and change nothing.
    let kind = |e: LaError| assert!(matches!(e, LaError::ScalarKind { .. }), "{e}");
    kind(a.add_values(&[0], &[0], &[1.0]).unwrap_err());
    kind(a.value(0, 0).unwrap_err());
    let real = Mat::new(&sp, "R");
    kind(
        real.add_complex_values(&[0], &[0], &[c(1.0, 0.0)])
            .unwrap_err(),
    );
    assert_eq!(real.complex_value(0, 0).unwrap(), c(0.0, 0.0));
    // Mixing adding and inserting before assembling is refused as for real matrices.
    assert!(matches!(
        a.set_complex_values(&[2], &[2], &[c(1.0, 0.0)])
            .unwrap_err(),
        LaError::MixedModes { .. }
    ));
    a.assemble();
    a.set_complex_values(&[2], &[3], &[c(-1.0, 2.0)]).unwrap();
    a.assemble();
    assert_eq!(a.complex_value(1, 1).unwrap(), c(4.5, -0.5));
    assert_eq!(a.complex_value(2, 3).unwrap(), c(-1.0, 2.0));
    assert_eq!(a.complex_value(0, 3).unwrap(), c(0.0, 0.0));
    // Dirichlet rows: zero, then the diagonal given (its imaginary part zero).
    a.zero_rows(&[1], 7.0).unwrap();
    assert_eq!(a.complex_value(1, 0).unwrap(), c(0.0, 0.0));
    assert_eq!(a.complex_value(1, 1).unwrap(), c(7.0, 0.0));
    // y = A x against the dense product.
    let xs: Vec<Complex64> = (0..n).map(|i| c(i as f64, 1.0 - i as f64)).collect();
    let x = rt.decl_dat(&nodes, 1, &xs, "x").unwrap();
    let y = rt.decl_dat_zeros::<Complex64>(&nodes, 1, "y").unwrap();
    let dense = a.to_dense_complex();
    let want: Vec<Complex64> = dense
        .iter()
        .map(|row| row.iter().zip(&xs).map(|(a, x)| a * x).sum())
        .collect();
    if runs_complex() {
        a.mult_complex(&x, &y).unwrap();
        assert_eq!(y.to_vec().unwrap(), want);
    }
    // The real solvers and products refuse a complex matrix.
    let b = rt.decl_dat_zeros::<f64>(&nodes, 1, "b").unwrap();
    let u = rt.decl_dat_zeros::<f64>(&nodes, 1, "u").unwrap();
    let complex = |e: LaError| assert!(matches!(e, LaError::Complex { .. }), "{e}");
    complex(a.mult(&b, &u).unwrap_err());
    complex(la::solve(&a, &b, &u, &SolverOptions::default()).unwrap_err());
    // A kernel writing real blocks into a complex matrix: op2's type check names both.
    let k = kernel("real", "void real(double A[2][2]) { A[0][0] += 1.0; }");
    let e = la::par_loop(
        &rt,
        &k,
        &m.from().clone(),
        [LoopArg::Mat(a.arg(INC, &m, &m))],
    )
    .unwrap_err();
    assert!(
        matches!(
            &e,
            LaError::Op2(Op2Error::TypeMismatch { .. } | Op2Error::Unsupported { .. })
        ),
        "{e}"
    );
}
