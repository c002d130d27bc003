//! Complex Dats, Globals and Consts (`num_complex::Complex<f32>` and `<f64>`, C99's `float
//! _Complex` and `double _Complex` in kernels): loops through maps, reductions, Dat algebra with
//! the conjugate in inner products, against values computed here with `num_complex`. The host
//! backends run them; device backends refuse them with a typed error, and MIN and MAX on complex
//! values are refused everywhere.

use op2::num_complex::{Complex32, Complex64};
use op2::{INC, MAX, MIN, Op2Error, READ, WRITE};
use op2::{SetHalo, SetSizes};
use op2_test_support::{backend, builder, kernel, on_rank_runtimes, ring, rt};

/// Whether this backend runs complex loops (the host backends' C has `_Complex`).
fn runs_complex() -> bool {
    matches!(backend().as_str(), "seq" | "openmp")
}

/// Checks that `r` is the device backends' refusal naming complex values.
fn refused<T: std::fmt::Debug>(r: op2::Result<T>) {
    match r {
        Err(Op2Error::Unsupported { reason, .. }) => {
            assert!(reason.contains("complex"), "{reason}")
        }
        other => panic!("expected a refusal of complex values, got {other:?}"),
    }
}

fn close(a: Complex64, b: Complex64) -> bool {
    (a - b).norm() <= 1e-12 * (1.0 + b.norm())
}

#[test]
fn complex_values_increment_through_a_map_and_reduce_into_a_global() {
    let rt = rt();
    // Past the OpenMP backend's fewest elements per thread, so that colours and per-thread
    // partials run.
    let n = 40_000;
    let (nodes, edges, m) = ring(&rt, n);
    let w: Vec<Complex64> = (0..n)
        .map(|e| Complex64::new(e as f64 * 0.5, 1.0 - e as f64 * 0.25))
        .collect();
    let weights = rt.decl_dat(&edges, 1, &w, "weights").unwrap();
    let acc = rt
        .decl_dat(&nodes, 1, vec![Complex64::new(1.0, -1.0); n], "acc")
        .unwrap();
    let total = rt
        .decl_global(1, &[Complex64::new(0.0, 2.0)], "total")
        .unwrap();
    // Each edge adds w * i to one end and conj(w) to the other, and w * w to the total.
    let k = kernel(
        "spread",
        "void spread(const double complex *w, double complex *a, double complex *b, \
         double _Complex *t) { *a += *w * I; *b += conj(*w); *t += *w * *w; }",
    );
    let r = rt.par_loop(
        &k,
        &edges,
        [
            weights.arg(READ),
            acc.arg_via(&m, 0, INC),
            acc.arg_via(&m, 1, INC),
            total.arg(INC),
        ],
    );
    if !runs_complex() {
        return refused(r);
    }
    r.unwrap();
    let mut expected = vec![Complex64::new(1.0, -1.0); n];
    let mut sum = Complex64::new(0.0, 2.0);
    for (e, &we) in w.iter().enumerate() {
        expected[e] += we * Complex64::i();
        expected[(e + 1) % n] += we.conj();
        sum += we * we;
    }
    let got = acc.to_vec().unwrap();
    for (g, x) in got.iter().zip(&expected) {
        assert!(close(*g, *x), "{g} != {x}");
    }
    assert!(close(total.value().unwrap()[0], sum));
}

#[test]
fn single_precision_complex_values_and_consts() {
    let rt = rt();
    let s = rt.decl_set(64, "s").unwrap();
    let x: Vec<Complex32> = (0..128)
        .map(|i| Complex32::new(i as f32, -(i as f32) / 2.0))
        .collect();
    let xs = rt.decl_dat(&s, 2, &x, "xs").unwrap();
    let out = rt
        .decl_dat(&s, 2, vec![Complex32::new(0.0, 0.0); 128], "out")
        .unwrap();
    let scale = rt.decl_const(1, &[Complex32::new(0.0, 2.0)], "scale");
    let Ok(_scale) = scale else {
        panic!("a complex Const is declared on every backend: {scale:?}");
    };
    let k = kernel(
        "scaled",
        "void scaled(const float complex *x, float complex *y) { y[0] = x[0] * scale; y[1] = conjf(x[1]); }",
    );
    let r = rt.par_loop(&k, &s, [xs.arg(READ), out.arg(WRITE)]);
    if !runs_complex() {
        return refused(r);
    }
    r.unwrap();
    let got = out.to_vec().unwrap();
    for e in 0..64 {
        assert_eq!(got[2 * e], x[2 * e] * Complex32::new(0.0, 2.0));
        assert_eq!(got[2 * e + 1], x[2 * e + 1].conj());
    }
}

#[test]
fn complex_dat_algebra_conjugates_the_second_operand_of_inner() {
    let rt = rt();
    let s = rt.decl_set(2, "s").unwrap();
    let a = rt
        .decl_dat(
            &s,
            1,
            [Complex64::new(3.0, 0.0), Complex64::new(0.0, 4.0)],
            "a",
        )
        .unwrap();
    let b = rt
        .decl_dat(
            &s,
            1,
            [Complex64::new(4.0, 1.0), Complex64::new(0.0, 5.0)],
            "b",
        )
        .unwrap();
    let inner = a.inner(&b);
    if !runs_complex() {
        return refused(inner);
    }
    // 3 * conj(4 + i) + 4i * conj(5i) = 12 - 3i + 20.
    assert!(close(inner.unwrap(), Complex64::new(32.0, -3.0)));
    assert!((a.norm().unwrap() - 5.0).abs() < 1e-12);
    let q = a.div(&b).unwrap().to_vec().unwrap();
    assert!(close(
        q[0],
        Complex64::new(3.0, 0.0) / Complex64::new(4.0, 1.0)
    ));
    assert!(close(q[1], Complex64::new(0.8, 0.0)));
    a.axpy(Complex64::new(0.0, 1.0), &b).unwrap();
    let ax = a.to_vec().unwrap();
    assert!(close(ax[0], Complex64::new(2.0, 4.0)));
    assert!(close(ax[1], Complex64::new(-5.0, 4.0)));
}

#[test]
fn min_and_max_of_complex_values_are_refused() {
    let rt = rt();
    let s = rt.decl_set(4, "s").unwrap();
    let g = rt.decl_global(1, &[Complex64::new(0.0, 0.0)], "g").unwrap();
    let k = kernel("pick", "void pick(double complex *g) { }");
    for access in [MIN, MAX] {
        match rt.par_loop(&k, &s, [g.arg(access)]) {
            Err(e @ Op2Error::UnorderedReduction { .. }) => {
                assert!(e.to_string().contains("ordered"), "{e}")
            }
            other => panic!("{access:?} on a complex Global: {other:?}"),
        }
    }
    // Into a Dat through a whole-row buffer (today's PyOP2's form), refused alike.
    let (nodes, edges, m) = ring(&rt, 6);
    let d = rt
        .decl_dat(&nodes, 1, vec![Complex64::new(0.0, 0.0); 6], "d")
        .unwrap();
    let kb = kernel("pick2", "void pick2(double complex *v) { }");
    for access in [MIN, MAX] {
        assert!(matches!(
            rt.par_loop(&kb, &edges, [d.arg_buffer(&m, access)]),
            Err(Op2Error::UnorderedReduction { .. })
        ));
    }
    // A mixed Dat's inner product is an f64: refused for complex components.
    let ms = rt.decl_mixed_set(&[&nodes, &s], "ms").unwrap();
    let md = op2::MixedDat::from_dats(
        &ms,
        vec![
            d.clone(),
            rt.decl_dat(&s, 1, vec![Complex64::new(1.0, 1.0); 4], "e")
                .unwrap(),
        ],
    )
    .unwrap();
    assert!(matches!(
        md.inner(&md),
        Err(Op2Error::AlgebraMismatch { .. })
    ));
}

#[test]
fn a_complex_inner_product_sums_over_ranks() {
    if !runs_complex() {
        return;
    }
    let n = 30;
    let value = |i: usize| Complex64::new(i as f64, 1.0 - i as f64);
    let sums = on_rank_runtimes(3, builder, |rank, rt| {
        let block = (rank * n / 3)..((rank + 1) * n / 3);
        let s = rt
            .decl_set_with_halo(
                SetSizes {
                    core: block.len(),
                    ..SetSizes::default()
                },
                SetHalo::default(),
                "s",
            )
            .unwrap();
        let x = rt
            .decl_dat(&s, 1, block.map(value).collect::<Vec<_>>(), "x")
            .unwrap();
        let y = x.mul_scalar(Complex64::new(0.0, 1.0)).unwrap();
        x.inner(&y).unwrap()
    });
    // x conj(i x) = -i |x|^2, the same sum on every rank.
    let want: f64 = (0..n).map(|i| value(i).norm_sqr()).sum();
    for s in sums {
        assert!(close(s, Complex64::new(0.0, -want)), "{s}");
    }
}
