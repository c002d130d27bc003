//! Dat algebra (PyOP2's `zero`, `copy`, `+ - * /` with Dats and scalars, in place and into new
//! Dats, `axpy`, `inner`, `norm`) against plain Rust on random data; every operation is a lazy
//! loop (it fuses with its neighbours), works across ranks, and refuses Dats that do not match.

use op2::{Dat, LazyOptions, Op2Error, Runtime, SetHalo, SetSizes};
use op2_test_support::{backend, builder, on_rank_runtimes};
use proptest::prelude::*;

/// Host backends give the reference's bits; devices compile with their own compilers.
fn exact() -> bool {
    matches!(backend().as_str(), "seq" | "openmp")
}

fn close(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter().zip(b).all(|(x, y)| {
            if exact() {
                x == y
            } else {
                (x - y).abs() <= 1e-12 * (1.0 + x.abs())
            }
        })
}

fn dats(rt: &Runtime, dim: usize, a: &[f64], b: &[f64]) -> (Dat<f64>, Dat<f64>) {
    let s = rt.decl_set(a.len() / dim, "s").unwrap();
    (
        rt.decl_dat(&s, dim, a, "a").unwrap(),
        rt.decl_dat(&s, dim, b, "b").unwrap(),
    )
}

fn values(dim: usize) -> impl Strategy<Value = (usize, Vec<f64>, Vec<f64>, f64)> {
    (1usize..40).prop_flat_map(move |n| {
        (
            Just(dim),
            prop::collection::vec(-100.0f64..100.0, n * dim),
            // Away from zero: b divides.
            prop::collection::vec(prop_oneof![-50.0f64..-0.5, 0.5f64..50.0], n * dim),
            -10.0f64..10.0,
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    #[test]
    fn elementwise_operations_match_plain_rust((dim, a, b, s) in (1usize..4).prop_flat_map(values)) {
        let rt = builder().build().unwrap();
        let (x, y) = dats(&rt, dim, &a, &b);
        let zip = |f: fn(f64, f64) -> f64| -> Vec<f64> { a.iter().zip(&b).map(|(p, q)| f(*p, *q)).collect() };
        let scal = |f: &dyn Fn(f64) -> f64| -> Vec<f64> { a.iter().map(|p| f(*p)).collect() };
        prop_assert!(close(&x.add(&y).unwrap().to_vec().unwrap(), &zip(|p, q| p + q)));
        prop_assert!(close(&x.sub(&y).unwrap().to_vec().unwrap(), &zip(|p, q| p - q)));
        prop_assert!(close(&x.mul(&y).unwrap().to_vec().unwrap(), &zip(|p, q| p * q)));
        prop_assert!(close(&x.div(&y).unwrap().to_vec().unwrap(), &zip(|p, q| p / q)));
        prop_assert!(close(&x.add_scalar(s).unwrap().to_vec().unwrap(), &scal(&|p| p + s)));
        prop_assert!(close(&x.sub_scalar(s).unwrap().to_vec().unwrap(), &scal(&|p| p - s)));
        prop_assert!(close(&x.mul_scalar(s).unwrap().to_vec().unwrap(), &scal(&|p| p * s)));
        prop_assert!(close(&y.div_scalar(s + 20.0).unwrap().to_vec().unwrap(),
            &b.iter().map(|q| q / (s + 20.0)).collect::<Vec<_>>()));
        // In place, one after another (they fuse), then axpy.
        let z = rt.decl_dat(x.set(), dim, &a, "z").unwrap();
        z.add_assign(&y).unwrap();
        z.mul_scalar_assign(s).unwrap();
        z.sub_assign(&x).unwrap();
        z.div_assign(&y).unwrap();
        z.add_scalar_assign(1.5).unwrap();
        z.axpy(s, &x).unwrap();
        let want: Vec<f64> = a.iter().zip(&b).map(|(p, q)| {
            let mut v = *p + *q;
            v *= s;
            v -= *p;
            v /= *q;
            v += 1.5;
            v + s * *p
        }).collect();
        prop_assert!(close(&z.to_vec().unwrap(), &want));
        // Inner product and norm, in element order.
        let mut inner = 0.0;
        for (p, q) in a.iter().zip(&b) {
            inner += p * q;
        }
        let got = x.inner(&y).unwrap();
        prop_assert!((got - inner).abs() <= 1e-9 * (1.0 + inner.abs()), "{got} against {inner}");
        let norm = a.iter().map(|p| p * p).sum::<f64>().sqrt();
        prop_assert!((x.norm().unwrap() - norm).abs() <= 1e-9 * (1.0 + norm));
        // Copy and zero.
        let w = rt.decl_dat_zeros::<f64>(x.set(), dim, "w").unwrap();
        x.copy(&w).unwrap();
        prop_assert_eq!(w.to_vec().unwrap(), a.clone());
        w.zero().unwrap();
        prop_assert!(w.to_vec().unwrap().iter().all(|&v| v == 0.0));
    }
}

#[test]
fn operations_are_lazy_loops_and_fuse() {
    let rt = builder()
        .lazy_optimisations(LazyOptions::ALL)
        .build()
        .unwrap();
    let (x, y) = dats(&rt, 2, &[1.0, 2.0, 3.0, 4.0], &[10.0, 20.0, 30.0, 40.0]);
    x.add_assign(&y).unwrap();
    x.mul_scalar_assign(2.0).unwrap();
    x.sub_scalar_assign(1.0).unwrap();
    assert_eq!(rt.pending_loops(), 3, "recorded, not run");
    assert_eq!(x.to_vec().unwrap(), [21.0, 43.0, 65.0, 87.0]);
    assert_eq!(rt.lazy_stats().chain_fusions, 2, "one pass over memory");
}

#[test]
fn integer_dats_add_and_reduce_but_do_not_divide() {
    let rt = builder().build().unwrap();
    let s = rt.decl_set(5, "s").unwrap();
    let i = rt.decl_dat(&s, 1, vec![1i32, 2, 3, 4, 5], "i").unwrap();
    let j = rt
        .decl_dat(&s, 1, vec![10i32, 20, 30, 40, 50], "j")
        .unwrap();
    assert_eq!(i.add(&j).unwrap().to_vec().unwrap(), [11, 22, 33, 44, 55]);
    assert_eq!(i.inner(&j).unwrap(), 550);
    assert_eq!(i.norm().unwrap(), 55f64.sqrt());
    let e = i.div(&j).unwrap_err();
    assert!(
        matches!(e, Op2Error::AlgebraMismatch { op: "div", .. }),
        "{e}"
    );
    let u = rt.decl_dat(&s, 1, vec![7u64; 5], "u").unwrap();
    u.mul_scalar_assign(3).unwrap();
    assert_eq!(u.to_vec().unwrap(), [21; 5]);
}

#[test]
fn dats_that_do_not_match_are_refused_and_the_runtime_goes_on() {
    let rt = builder().build().unwrap();
    let s = rt.decl_set(4, "s").unwrap();
    let t = rt.decl_set(4, "t").unwrap();
    let a = rt.decl_dat(&s, 1, [1.0f64; 4], "a").unwrap();
    let b = rt.decl_dat(&t, 1, [1.0f64; 4], "b").unwrap();
    let c = rt.decl_dat(&s, 2, [1.0f64; 8], "c").unwrap();
    for e in [a.add(&b).unwrap_err(), a.inner(&b).unwrap_err()] {
        assert!(matches!(e, Op2Error::AlgebraMismatch { .. }), "{e}");
        assert!(e.to_string().contains("different sets"), "{e}");
    }
    let e = a.axpy(2.0, &c).unwrap_err();
    assert!(e.to_string().contains("dims differ (1 and 2)"), "{e}");
    assert!(a.copy(&c).is_err());
    // Still usable.
    a.add_scalar_assign(1.0).unwrap();
    assert_eq!(a.to_vec().unwrap(), [2.0; 4]);
    // A Dat whose runtime is gone.
    let d = {
        let rt = builder().build().unwrap();
        let s = rt.decl_set(2, "s").unwrap();
        rt.decl_dat(&s, 1, [1.0f64; 2], "d").unwrap()
    };
    assert!(matches!(d.zero(), Err(Op2Error::RuntimeGone { .. })));
    assert_eq!(d.to_vec().unwrap(), [1.0; 2], "its data stays readable");
}

#[test]
fn inner_products_sum_over_ranks_once() {
    // Three ranks, each owning a block of 0..30 (no halo: the operations are direct).
    let n = 30usize;
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
        let a: Vec<f64> = block.clone().map(|i| i as f64).collect();
        let x = rt.decl_dat(&s, 1, a, "x").unwrap();
        let y = x.mul_scalar(2.0).unwrap();
        y.add_scalar_assign(1.0).unwrap();
        (x.inner(&y).unwrap(), x.norm().unwrap())
    });
    let want: f64 = (0..n).map(|i| i as f64 * (2.0 * i as f64 + 1.0)).sum();
    let norm = (0..n).map(|i| (i * i) as f64).sum::<f64>().sqrt();
    for (inner, nrm) in sums {
        assert_eq!(inner, want, "every rank gets the sum over all ranks");
        assert!((nrm - norm).abs() < 1e-12);
    }
}

#[test]
fn consts_named_like_the_kernels_variables_do_not_reach_them() {
    let rt = builder().build().unwrap();
    for name in ["a", "b", "g", "i", "r", "s", "x", "y"] {
        rt.decl_const(1, &[1000.0f64], name).unwrap();
    }
    let (x, y) = dats(&rt, 2, &[1.0, 2.0, 3.0, 4.0], &[5.0, 6.0, 7.0, 8.0]);
    assert_eq!(x.inner(&y).unwrap(), 70.0);
    x.axpy(2.0, &y).unwrap();
    assert_eq!(x.to_vec().unwrap(), [11.0, 14.0, 17.0, 20.0]);
    assert_eq!(x.sub(&y).unwrap().to_vec().unwrap(), [6.0, 8.0, 10.0, 12.0]);
    x.zero().unwrap();
    assert_eq!(x.to_vec().unwrap(), [0.0; 4]);
}

#[test]
fn signed_integer_overflow_wraps() {
    let rt = builder().build().unwrap();
    let s = rt.decl_set(2, "s").unwrap();
    let i = rt.decl_dat(&s, 1, vec![i32::MAX, i32::MIN], "i").unwrap();
    let one = rt.decl_dat(&s, 1, vec![1i32, -1], "one").unwrap();
    assert_eq!(i.add(&one).unwrap().to_vec().unwrap(), [i32::MIN, i32::MAX]);
    let l = rt.decl_dat(&s, 1, vec![i64::MAX, 3], "l").unwrap();
    l.mul_scalar_assign(2).unwrap();
    assert_eq!(l.to_vec().unwrap(), [-2, 6]);
}

/// PyOP2's arithmetic as C computes it (`c_arith` and its kin): operands of other types convert
/// by C's rules and the result is stored as the target's type. Expected values follow those
/// rules by hand: an `i32` Dat times 0.5 is computed in double and truncated toward zero, an
/// `f32` Dat plus an `f64` one in double and rounded once, integers wrap, a division by -1 of
/// the most negative value wraps, and a division by zero (an integer scalar) or by an integer
/// Dat is refused.
#[test]
fn c_arithmetic_converts_as_c_does() {
    use op2::ArithOp::{Add, Div, Mul, Sub};
    let rt = builder().build().unwrap();
    let s = rt.decl_set(4, "s").unwrap();
    let i = rt
        .decl_dat(&s, 1, vec![7i32, -7, 3, i32::MIN], "i")
        .unwrap();
    let out = rt.decl_dat_zeros::<i32>(&s, 1, "out").unwrap();
    i.c_arith_scalar(Mul, 0.5f64, &out).unwrap();
    assert_eq!(out.to_vec().unwrap(), [3, -3, 1, -1073741824]);
    i.c_arith_scalar(Div, -1i64, &out).unwrap();
    assert_eq!(out.to_vec().unwrap(), [-7, 7, -3, i32::MIN]);
    i.c_arith_scalar(Div, 2i64, &out).unwrap();
    assert_eq!(out.to_vec().unwrap(), [3, -3, 1, i32::MIN / 2]);
    let e = i.c_arith_scalar(Div, 0i64, &out).unwrap_err();
    assert!(matches!(e, Op2Error::AlgebraMismatch { .. }), "{e}");
    let e = i.c_arith(Div, &i, &out).unwrap_err();
    assert!(matches!(e, Op2Error::AlgebraMismatch { .. }), "{e}");
    // An i32 Dat plus an i64 Dat, into an i32 Dat: wraps.
    let l = rt.decl_dat(&s, 1, vec![1i64, 1 << 40, -1, 5], "l").unwrap();
    i.c_arith(Add, &l, &out).unwrap();
    assert_eq!(out.to_vec().unwrap(), [8, -7, 2, i32::MIN.wrapping_add(5)]);
    // f32 plus f64, stored as f32: one rounding, from the double sum.
    let f = rt
        .decl_dat(&s, 1, vec![0.1f32, 1.0, 16777216.0, -2.5], "f")
        .unwrap();
    let d = rt
        .decl_dat(&s, 1, vec![0.2f64, 1e-9, 1.0, 0.25], "d")
        .unwrap();
    let fo = rt.decl_dat_zeros::<f32>(&s, 1, "fo").unwrap();
    f.c_arith(Add, &d, &fo).unwrap();
    let want: Vec<f32> = [
        (0.1f32, 0.2f64),
        (1.0, 1e-9),
        (16777216.0, 1.0),
        (-2.5, 0.25),
    ]
    .iter()
    .map(|&(a, b)| (f64::from(a) + b) as f32)
    .collect();
    assert_eq!(fo.to_vec().unwrap(), want);
    // In place: an f64 Dat minus an i32 Dat; a u32 Dat times a negative scalar wraps.
    d.c_arith_assign(Sub, &i).unwrap();
    assert_eq!(
        d.to_vec().unwrap(),
        [0.2 - 7.0, 1e-9 + 7.0, 1.0 - 3.0, 0.25 + 2147483648.0]
    );
    let u = rt.decl_dat(&s, 1, vec![1u32, 2, 3, 4], "u").unwrap();
    u.c_arith_scalar_assign(Mul, -1i64).unwrap();
    assert_eq!(
        u.to_vec().unwrap(),
        [u32::MAX, u32::MAX - 1, u32::MAX - 2, u32::MAX - 3]
    );
    // Into a Dat of another type (PyOP2's Dat.copy into another dtype is `+ 0`).
    let back = rt.decl_dat_zeros::<f64>(&s, 1, "back").unwrap();
    u.c_arith_scalar(Add, 0i64, &back).unwrap();
    assert_eq!(
        back.to_vec().unwrap(),
        [4294967295.0, 4294967294.0, 4294967293.0, 4294967292.0]
    );
    // Dats that do not meet: another set or another dim.
    let t = rt.decl_set(4, "t").unwrap();
    let other = rt.decl_dat_zeros::<f64>(&t, 1, "other").unwrap();
    assert!(d.c_arith(Add, &other, &back).is_err());
    let wide = rt.decl_dat_zeros::<f64>(&s, 2, "wide").unwrap();
    assert!(d.c_arith(Add, &d, &wide).is_err());
}
