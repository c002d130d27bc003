//! Patterns grown past their maps' (`Sparsity::with_entries`, `Mat::with_pattern`: what a PETSc
//! matrix whose `NEW_NONZERO_ALLOCATION_ERR` is off does, and what the Python package's handles
//! adopt): random extra entries on a ring, the values kept, the new entries settable, and loops
//! assembling into the grown matrix as into the first, against dense matrices computed here.

use op2::la::{self, LaError, LoopArg, Mat, Sparsity};
use op2::num_complex::Complex64;
use op2::{INC, READ};
use op2_test_support::{builder, kernel, ring};
use proptest::prelude::*;

/// Each edge adds `w_e * [[2, -1], [-1, 2]]` at its two nodes.
const ELEMENT: &str = "void element(double A[2][2], const double *w) {
  A[0][0] += 2.0 * *w; A[0][1] -= *w; A[1][0] -= *w; A[1][1] += 2.0 * *w;
}";

fn ring_sum(n: usize, w: &[f64]) -> Vec<Vec<f64>> {
    let mut want = vec![vec![0.0; n]; n];
    for (e, &we) in w.iter().enumerate() {
        let ends = [e, (e + 1) % n];
        let b = [[2.0, -1.0], [-1.0, 2.0]];
        for i in 0..2 {
            for j in 0..2 {
                want[ends[i]][ends[j]] += b[i][j] * we;
            }
        }
    }
    want
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]

    #[test]
    fn grown_patterns_keep_values_and_take_loops(
        n in 3usize..12,
        extra in proptest::collection::vec((0usize..12, 0usize..12, -4.0f64..4.0), 0..12),
    ) {
        let rt = builder().build().unwrap();
        let (_, edges, m) = ring(&rt, n);
        let w: Vec<f64> = (0..n).map(|e| 1.0 + e as f64 * 0.25).collect();
        let wd = rt.decl_dat(&edges, 1, &w, "w").unwrap();
        let sp = Sparsity::new(&[(&m, &m)], (1, 1), "ring").unwrap();
        let a = Mat::new(&sp, "A");
        let k = kernel("element", ELEMENT);
        let assemble = |mat: &Mat| {
            la::par_loop(&rt, &k, &edges,
                [LoopArg::Mat(mat.arg(INC, &m, &m)), LoopArg::Op2(wd.arg(READ))]).unwrap();
        };
        assemble(&a);
        let extra: Vec<(usize, usize, f64)> =
            extra.into_iter().map(|(r, c, v)| (r % n, c % n, v)).collect();
        let (rows, cols): (Vec<usize>, Vec<usize>) = extra.iter().map(|e| (e.0, e.1)).unzip();
        let grown_sp = sp.with_entries(&rows, &cols).unwrap();
        // The pattern: the ring's entries and the extra ones, each once, sorted in each row.
        let mut want_pattern = std::collections::BTreeSet::new();
        for r in 0..n {
            for &c in sp.row(r) {
                want_pattern.insert((r, c as usize));
            }
        }
        want_pattern.extend(rows.iter().copied().zip(cols.iter().copied()));
        let got: Vec<(usize, usize)> = (0..n)
            .flat_map(|r| grown_sp.row(r).iter().map(move |&c| (r, c as usize)))
            .collect();
        prop_assert_eq!(got, want_pattern.into_iter().collect::<Vec<_>>());
        prop_assert_eq!(sp.nnz(), 3 * n, "the Sparsity's own pattern is unchanged");

        let g = a.with_pattern(&grown_sp).unwrap();
        let mut want = ring_sum(n, &w);
        prop_assert_eq!(g.to_dense(), want.clone());
        // The new entries take values; loops add into the grown matrix.
        for &(r, c, v) in &extra {
            g.set_values(&[r], &[c], &[v]).unwrap();
            want[r][c] = v;
        }
        g.assemble();
        assemble(&g);
        let ring = ring_sum(n, &w);
        for r in 0..n {
            for c in 0..n {
                want[r][c] += ring[r][c];
            }
        }
        let dense = g.to_dense();
        for r in 0..n {
            for c in 0..n {
                prop_assert!((dense[r][c] - want[r][c]).abs() <= 1e-12,
                    "({}, {}): {} vs {}", r, c, dense[r][c], want[r][c]);
            }
        }
        // The first matrix is as it was.
        prop_assert_eq!(a.to_dense(), ring_sum(n, &w));
    }
}

#[test]
fn grown_patterns_refuse_what_does_not_fit() {
    let rt = builder().build().unwrap();
    let (_, _, m) = ring(&rt, 5);
    let sp = Sparsity::new(&[(&m, &m)], (1, 1), "ring").unwrap();
    assert!(matches!(
        sp.with_entries(&[5], &[0]),
        Err(LaError::Index {
            what: "row",
            index: 5,
            size: 5,
            ..
        })
    ));
    assert!(matches!(
        sp.with_entries(&[0], &[7]),
        Err(LaError::Index { what: "column", .. })
    ));
    assert!(matches!(
        sp.with_entries(&[0, 1], &[0]),
        Err(LaError::Length { .. })
    ));
    // A pattern of the same shape lacking the ring's off-diagonal entries is refused; one
    // holding them all fits.
    let a = Mat::new(&sp, "A");
    let (nodes2, _, m2) = ring(&rt, 5);
    let diagonal = rt
        .decl_map(&nodes2, &nodes2, 1, vec![0, 1, 2, 3, 4], "diag")
        .unwrap();
    let smaller = Sparsity::new(&[(&diagonal, &diagonal)], (1, 1), "diagonal").unwrap();
    assert!(matches!(
        a.with_pattern(&smaller),
        Err(LaError::NotInPattern { row: 0, col: 1, .. })
    ));
    let same = Sparsity::new(&[(&m2, &m2)], (1, 1), "other").unwrap();
    assert!(a.with_pattern(&same).is_ok());
    let (_, _, m6) = ring(&rt, 6);
    let other_shape = Sparsity::new(&[(&m6, &m6)], (1, 1), "six").unwrap();
    assert!(matches!(
        a.with_pattern(&other_shape),
        Err(LaError::Index {
            what: "row count",
            ..
        })
    ));
}

#[test]
fn grown_complex_patterns_keep_imaginary_parts() {
    let rt = builder().build().unwrap();
    let (_, _, m) = ring(&rt, 4);
    let sp = Sparsity::new(&[(&m, &m)], (1, 1), "ring").unwrap();
    let a = Mat::new_complex(&sp, "Z");
    a.set_complex_values(&[1], &[2], &[Complex64::new(1.5, -2.5)])
        .unwrap();
    a.assemble();
    let g = a
        .with_pattern(&sp.with_entries(&[3], &[1]).unwrap())
        .unwrap();
    assert!(g.is_complex());
    assert_eq!(g.complex_value(1, 2).unwrap(), Complex64::new(1.5, -2.5));
    g.set_complex_values(&[3], &[1], &[Complex64::new(0.0, 4.0)])
        .unwrap();
    g.assemble();
    assert_eq!(g.complex_value(3, 1).unwrap(), Complex64::new(0.0, 4.0));
    assert_eq!(a.complex_value(3, 1).unwrap(), Complex64::default());
    assert!(
        matches!(
            a.set_complex_values(&[3], &[1], &[Complex64::new(1.0, 0.0)]),
            Err(LaError::NotInPattern { row: 3, col: 1, .. })
        ),
        "the first matrix has no such entry"
    );
}
