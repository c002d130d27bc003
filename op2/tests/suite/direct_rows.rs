//! Direct args of a few values per element, the rows GPU stubs copy through shared memory
//! (`OP2_CUDA_STAGE_ROWS`): every access mode, dims 2 to 17, every element type, sets that end
//! inside a block, alone and beside reductions, indirect args and args over the same Dat, each
//! against a plain Rust loop. Values are small integers, so every order of sums is exact.

use op2::{INC, MAX, READ, RW, Runtime, Scalar, WRITE};
use op2_test_support::{kernel, rt};

/// Set sizes around the 256-thread blocks of direct launches (and a set of one element).
const SIZES: [usize; 6] = [1, 31, 255, 257, 1000, 4099];

/// An element type holding the small integers of these tests.
trait Small: Scalar + Copy {
    fn of(x: i64) -> Self;
    fn int(self) -> i64;
}

macro_rules! small {
    ($($t:ty),*) => {$(
        impl Small for $t {
            fn of(x: i64) -> Self {
                x as $t
            }
            fn int(self) -> i64 {
                self as i64
            }
        }
    )*};
}
small!(f64, f32, i32, u32, i64, u64);

/// A loop over `n` elements with a READ, a WRITE, an RW and an INC arg, each of `dim` values of
/// C type `c_type`, checked value by value.
fn every_mode<T: Small>(rt: &Runtime, n: usize, dim: usize, c_type: &str) {
    let v = T::of;
    let s = rt.decl_set(n, "elems").unwrap();
    let a0: Vec<T> = (0..n * dim).map(|i| v((i % 97) as i64)).collect();
    let c0: Vec<T> = (0..n * dim).map(|i| v((i % 13) as i64)).collect();
    let e0: Vec<T> = (0..n * dim).map(|i| v((i % 7) as i64)).collect();
    let a = rt.decl_dat(&s, dim, &a0, "a").unwrap();
    let b = rt.decl_dat_zeros::<T>(&s, dim, "b").unwrap();
    let c = rt.decl_dat(&s, dim, &c0, "c").unwrap();
    let e = rt.decl_dat(&s, dim, &e0, "e").unwrap();
    let src = format!(
        "void rows(const {t} *a, {t} *b, {t} *c, {t} *e) {{\n\
         for (int k = 0; k < {dim}; k++) {{ b[k] = a[k] * 2 + k; c[k] = c[k] + a[k]; e[k] += 3; }}\n}}",
        t = c_type
    );
    rt.par_loop(
        &kernel("rows", &src),
        &s,
        [a.arg(READ), b.arg(WRITE), c.arg(RW), e.arg(INC)],
    )
    .unwrap();
    let (b, c, e) = (
        b.data_ro().unwrap().to_vec(),
        c.data_ro().unwrap().to_vec(),
        e.data_ro().unwrap().to_vec(),
    );
    let num = T::int;
    for i in 0..n * dim {
        let (ai, k) = (num(a0[i]), (i % dim) as i64);
        let at = format!("{c_type}, n {n}, dim {dim}, value {i}");
        assert_eq!(num(b[i]), ai * 2 + k, "WRITE: {at}");
        assert_eq!(num(c[i]), num(c0[i]) + ai, "RW: {at}");
        assert_eq!(num(e[i]), num(e0[i]) + 3, "INC: {at}");
    }
}

#[test]
fn every_mode_dim_and_size_in_f64() {
    let rt = rt();
    for n in SIZES {
        for dim in [2, 3, 4, 8, 16, 17] {
            every_mode::<f64>(&rt, n, dim, "double");
        }
    }
}

#[test]
fn every_element_type() {
    let rt = rt();
    for n in [255, 1000] {
        for dim in [2, 4, 5] {
            every_mode::<f32>(&rt, n, dim, "float");
            every_mode::<i32>(&rt, n, dim, "int");
            every_mode::<u32>(&rt, n, dim, "unsigned int");
            every_mode::<i64>(&rt, n, dim, "int64_t");
            every_mode::<u64>(&rt, n, dim, "uint64_t");
        }
    }
}

/// Reductions combine across the block in the same shared memory the rows went through.
#[test]
fn rows_beside_reductions() {
    let rt = rt();
    for n in SIZES {
        let s = rt.decl_set(n, "elems").unwrap();
        let q0: Vec<f64> = (0..n * 4).map(|i| (i % 11) as f64).collect();
        let q = rt.decl_dat(&s, 4, &q0, "q").unwrap();
        let r = rt.decl_dat_zeros::<f64>(&s, 4, "r").unwrap();
        let sum = rt.decl_global(1, &[0.0f64], "sum").unwrap();
        let most = rt.decl_global(2, &[-1.0f64, -1.0], "most").unwrap();
        let k = kernel(
            "upd",
            "void upd(const double *q, double *r, double *sum, double *most) {\n\
             for (int k = 0; k < 4; k++) { r[k] = q[k] + 1; *sum += q[k]; }\n\
             if (q[0] > most[0]) most[0] = q[0];\n\
             if (q[3] > most[1]) most[1] = q[3]; }",
        );
        rt.par_loop(
            &k,
            &s,
            [q.arg(READ), r.arg(WRITE), sum.arg(INC), most.arg(MAX)],
        )
        .unwrap();
        let r = r.data_ro().unwrap();
        assert!(r.iter().zip(&q0).all(|(r, q)| *r == q + 1.0), "n {n}");
        assert_eq!(sum.value().unwrap(), [q0.iter().sum::<f64>()], "n {n}");
        let m0 = (0..n).map(|i| q0[4 * i]).fold(-1.0, f64::max);
        let m3 = (0..n).map(|i| q0[4 * i + 3]).fold(-1.0, f64::max);
        assert_eq!(most.value().unwrap(), [m0, m3], "n {n}");
    }
}

/// A loop through a map (the atomics stub on GPUs) with direct rows on its own set.
#[test]
fn rows_in_a_loop_through_a_map() {
    let rt = rt();
    for n in SIZES {
        let nodes = rt.decl_set(n + 1, "nodes").unwrap();
        let edges = rt.decl_set(n, "edges").unwrap();
        let ends: Vec<i32> = (0..n as i32).flat_map(|e| [e, e + 1]).collect();
        let m = rt.decl_map(&edges, &nodes, 2, ends, "ends").unwrap();
        let x0: Vec<f64> = (0..=n).map(|i| i as f64).collect();
        let x = rt.decl_dat(&nodes, 1, &x0, "x").unwrap();
        let hits = rt.decl_dat_zeros::<f64>(&nodes, 1, "hits").unwrap();
        let w0: Vec<f64> = (0..n * 3).map(|i| (i % 5) as f64).collect();
        let w = rt.decl_dat(&edges, 3, &w0, "w").unwrap();
        let k = kernel(
            "edge",
            "void edge(const double *a, const double *b, double *w, double *ha, double *hb) {\n\
             w[0] += *a; w[1] = w[1] * 2; w[2] = *b - *a; *ha += 1; *hb += 1; }",
        );
        rt.par_loop(
            &k,
            &edges,
            [
                x.arg_via(&m, 0, READ),
                x.arg_via(&m, 1, READ),
                w.arg(RW),
                hits.arg_via(&m, 0, INC),
                hits.arg_via(&m, 1, INC),
            ],
        )
        .unwrap();
        let w = w.data_ro().unwrap();
        for e in 0..n {
            let want = [w0[3 * e] + e as f64, w0[3 * e + 1] * 2.0, 1.0];
            assert_eq!(w[3 * e..3 * e + 3], want, "n {n}, edge {e}");
        }
        let hits = hits.data_ro().unwrap();
        for i in 0..=n {
            let want = if i == 0 || i == n { 1.0 } else { 2.0 };
            assert_eq!(hits[i], want, "n {n}, node {i}");
        }
    }
}

/// More rows than a thread's share of shared memory holds (some are staged, the rest not), and
/// one Dat passed twice (never staged: the two args must see each other's writes).
#[test]
fn many_rows_and_a_dat_passed_twice() {
    let rt = rt();
    for n in [257, 1000] {
        let s = rt.decl_set(n, "elems").unwrap();
        let dats: Vec<_> = (0..6)
            .map(|d| {
                let init: Vec<f64> = (0..n * 4).map(|i| (i + d) as f64).collect();
                rt.decl_dat(&s, 4, &init, &format!("d{d}")).unwrap()
            })
            .collect();
        let k = kernel(
            "six",
            "void six(double *a, double *b, double *c, double *d, double *e, double *f) {\n\
             for (int k = 0; k < 4; k++) { a[k] += 1; b[k] += 2; c[k] += 3; d[k] += 4; e[k] += 5; f[k] += 6; } }",
        );
        rt.par_loop(&k, &s, dats.iter().map(|d| d.arg(RW)).collect::<Vec<_>>())
            .unwrap();
        for (d, dat) in dats.iter().enumerate() {
            let v = dat.data_ro().unwrap();
            assert!(
                (0..n * 4).all(|i| v[i] == (i + d + d + 1) as f64),
                "n {n}, dat {d}"
            );
        }
        let y0: Vec<f64> = (0..n * 2).map(|i| i as f64).collect();
        let y = rt.decl_dat(&s, 2, &y0, "y").unwrap();
        let twice = kernel(
            "twice",
            "void twice(const double *a, double *b) { b[0] = a[1] + 10; b[1] = a[0] + 20; }",
        );
        rt.par_loop(&twice, &s, [y.arg(READ), y.arg(RW)]).unwrap();
        let y = y.data_ro().unwrap();
        for i in 0..n {
            // Through one array: b[0] is a[0], so the second line reads the value just written.
            let a1 = y0[2 * i + 1];
            assert_eq!(
                y[2 * i..2 * i + 2],
                [a1 + 10.0, a1 + 10.0 + 20.0],
                "n {n}, {i}"
            );
        }
    }
}
