//! Subsets (PyOP2's `Subset`): a loop over a subset runs only its elements, against a plain loop
//! that skips the others, on random subsets; direct Dats and maps of the parent at the subset's
//! elements; subsets of subsets; empty subsets; across ranks; bad indices.

use op2::{INC, Op2Error, READ, RW, SetHalo, SetSizes, WRITE};
use op2_test_support::{builder, kernel, on_rank_runtimes};
use proptest::prelude::*;

/// Cells 0..n in a chain, each with two nodes (c, c+1).
fn c2n(n: usize) -> Vec<i32> {
    (0..n as i32).flat_map(|c| [c, c + 1]).collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn a_subset_loop_equals_a_loop_that_skips_the_other_elements(
        (n, pick) in (1usize..60).prop_flat_map(|n| (Just(n), prop::collection::vec(any::<bool>(), n)))
    ) {
        let rt = builder().build().unwrap();
        let cells = rt.decl_set(n, "cells").unwrap();
        let nodes = rt.decl_set(n + 1, "nodes").unwrap();
        let map = rt.decl_map(&cells, &nodes, 2, c2n(n), "c2n").unwrap();
        let u0: Vec<f64> = (0..n).map(|c| (c as f64 * 0.7).sin()).collect();
        let u = rt.decl_dat(&cells, 1, u0.clone(), "u").unwrap();
        let w = rt.decl_dat_zeros::<f64>(&cells, 2, "w").unwrap();
        let acc = rt.decl_dat_zeros::<f64>(&nodes, 1, "acc").unwrap();
        let x0: Vec<f64> = (0..=n).map(|i| i as f64).collect();
        let x = rt.decl_dat(&nodes, 1, x0.clone(), "x").unwrap();
        let g = rt.decl_global(1, &[0.0f64], "g").unwrap();
        let indices: Vec<i32> = (0..n as i32).filter(|&c| pick[c as usize]).collect();
        let sub = rt.decl_subset(&cells, indices.clone(), "chosen").unwrap();
        prop_assert_eq!(sub.size(), indices.len());
        prop_assert_eq!(sub.superset().map(|s| s.name()), Some("cells"));
        let k = kernel(
            "touch",
            "void touch(double *u, double *w, const double *x[2], double *a0, double *a1, double *g) {
               *u = 2.0 * *u + x[0][0] * x[1][0];
               w[0] = *u; w[1] = x[1][0] - x[0][0];
               *a0 += *u; *a1 += 1.0; *g += *u; }",
        );
        rt.par_loop(&k, &sub, [
            u.arg(RW),
            w.arg(WRITE),
            x.arg_row(&map, READ),
            acc.arg_via(&map, 0, INC),
            acc.arg_via(&map, 1, INC),
            g.arg(INC),
        ]).unwrap();
        // The same by hand, skipping the other cells.
        let mut u1 = u0.clone();
        let mut w1 = vec![0.0; 2 * n];
        let mut a1 = vec![0.0; n + 1];
        let mut g1 = 0.0;
        for &c in &indices {
            let c = c as usize;
            u1[c] = 2.0 * u1[c] + x0[c] * x0[c + 1];
            w1[2 * c] = u1[c];
            w1[2 * c + 1] = x0[c + 1] - x0[c];
            a1[c] += u1[c];
            a1[c + 1] += 1.0;
            g1 += u1[c];
        }
        prop_assert_eq!(u.to_vec().unwrap(), u1);
        prop_assert_eq!(w.to_vec().unwrap(), w1);
        let got = acc.to_vec().unwrap();
        for (a, b) in got.iter().zip(&a1) {
            prop_assert!((a - b).abs() <= 1e-12 * (1.0 + b.abs()), "{a} against {b}");
        }
        prop_assert!((g.value().unwrap()[0] - g1).abs() <= 1e-12 * (1.0 + g1.abs()));
    }
}

#[test]
fn subsets_of_subsets_and_empty_subsets() {
    let rt = builder().build().unwrap();
    let s = rt.decl_set(10, "s").unwrap();
    let x = rt
        .decl_dat(&s, 1, (0..10).map(f64::from).collect::<Vec<_>>(), "x")
        .unwrap();
    let evens = rt.decl_subset(&s, vec![0, 2, 4, 6, 8], "evens").unwrap();
    // Elements 1 and 3 of `evens`: 2 and 6 of `s`.
    let some = rt.decl_subset(&evens, vec![1, 3], "some").unwrap();
    assert_eq!(some.subset_indices(), Some(&[2, 6][..]));
    assert_eq!(some.superset().unwrap().name(), "s");
    let neg = kernel("neg", "void neg(double *x) { *x = -*x; }");
    rt.par_loop(&neg, &some, [x.arg(RW)]).unwrap();
    let empty = rt.decl_subset(&s, Vec::<i32>::new(), "none").unwrap();
    rt.par_loop(&neg, &empty, [x.arg(RW)]).unwrap();
    let mut want: Vec<f64> = (0..10).map(f64::from).collect();
    want[2] = -2.0;
    want[6] = -6.0;
    assert_eq!(x.to_vec().unwrap(), want);
    // The same subset loop again reuses its maps.
    rt.par_loop(&neg, &some, [x.arg(RW)]).unwrap();
    assert_eq!(x.to_vec().unwrap()[2], 2.0);
}

#[test]
fn bad_subsets_are_typed_errors_and_the_runtime_goes_on() {
    let rt = builder().build().unwrap();
    let s = rt.decl_set(5, "s").unwrap();
    for (indices, says) in [
        (vec![0, 2, 1], "sorted"),
        (vec![1, 1], "each given once"),
        (vec![0, 5], "index 5"),
        (vec![-1, 2], "index -1"),
    ] {
        let e = rt.decl_subset(&s, indices, "bad").unwrap_err();
        assert!(matches!(e, Op2Error::BadSubset { .. }), "{e}");
        assert!(e.to_string().contains(says), "{e}");
    }
    let sub = rt.decl_subset(&s, vec![1, 3], "sub").unwrap();
    let e = rt.decl_dat_zeros::<f64>(&sub, 1, "d").unwrap_err();
    assert!(
        matches!(e, Op2Error::BadSubset { .. }) && e.to_string().contains("dats"),
        "{e}"
    );
    let e = rt.decl_map(&sub, &s, 1, vec![0, 1], "m").unwrap_err();
    assert!(e.to_string().contains("maps"), "{e}");
    // A Dat of another set, direct, over the subset: the usual error, naming the subset.
    let t = rt.decl_set(2, "t").unwrap();
    let y = rt.decl_dat_zeros::<f64>(&t, 1, "y").unwrap();
    let k = kernel("one", "void one(double *y) { *y = 1.0; }");
    let e = rt.par_loop(&k, &sub, [y.arg(WRITE)]).unwrap_err();
    assert!(matches!(e, Op2Error::DirectSetMismatch { .. }), "{e}");
    let x = rt.decl_dat_zeros::<f64>(&s, 1, "x").unwrap();
    rt.par_loop(&k, &sub, [x.arg(WRITE)]).unwrap();
    assert_eq!(x.to_vec().unwrap(), [0.0, 1.0, 0.0, 1.0, 0.0]);
}

#[test]
fn subsets_across_ranks_hold_local_indices_and_reduce_once() {
    // Three ranks, 6 owned elements each (2 core, 4 owned); each picks its odd elements.
    let out = on_rank_runtimes(3, builder, |rank, rt| {
        let s = rt
            .decl_set_with_halo(
                SetSizes {
                    core: 2,
                    owned: 4,
                    ..SetSizes::default()
                },
                SetHalo::default(),
                "s",
            )
            .unwrap();
        let x = rt
            .decl_dat(
                &s,
                1,
                (0..6).map(|i| (6 * rank + i) as f64).collect::<Vec<_>>(),
                "x",
            )
            .unwrap();
        let g = rt.decl_global(1, &[0.0f64], "g").unwrap();
        let odd = rt.decl_subset(&s, vec![1, 3, 5], "odd").unwrap();
        assert_eq!((odd.sizes().core, odd.sizes().owned), (1, 2));
        let k = kernel(
            "sumx",
            "void sumx(const double *x, double *g) { *g += *x; }",
        );
        rt.par_loop(&k, &odd, [x.arg(READ), g.arg(INC)]).unwrap();
        g.value().unwrap()[0]
    });
    let want: f64 = (0..18).filter(|i| i % 2 == 1).map(f64::from).sum();
    assert!(out.iter().all(|&v| v == want), "{out:?} against {want}");
}
