//! Loop tests ported from the classic OP2/PyOP2 suites (direct, indirect, reductions, vector maps,
//! consts, midpoint), each against values computed independently in Rust.

use op2::{INC, MAX, MIN, READ, RW, Scalar, WRITE};
use op2_test_support::{kernel, rt};

const N: usize = 1000;

#[test]
fn direct_write_sets_every_element() {
    let rt = rt();
    let s = rt.decl_set(N, "elems").unwrap();
    let x = rt.decl_dat_zeros::<u32>(&s, 1, "x").unwrap();
    let k = kernel("w", "void w(unsigned int *x) { *x = 42; }");
    rt.par_loop(&k, &s, [x.arg(WRITE)]).unwrap();
    assert!(x.data_ro().unwrap().iter().all(|&v| v == 42));
}

#[test]
fn direct_rw_increments_in_place() {
    let rt = rt();
    let s = rt.decl_set(N, "elems").unwrap();
    let init: Vec<i32> = (0..N as i32).collect();
    let x = rt.decl_dat(&s, 1, &init, "x").unwrap();
    let k = kernel("rw", "void rw(int *x) { *x = *x + 1; }");
    rt.par_loop(&k, &s, [x.arg(RW)]).unwrap();
    let sum: i64 = x.data_ro().unwrap().iter().map(|&v| v as i64).sum();
    assert_eq!(sum, (N * (N + 1) / 2) as i64);
}

#[test]
fn direct_two_dimensional_dat() {
    let rt = rt();
    let s = rt.decl_set(N, "elems").unwrap();
    let init: Vec<f64> = (0..N).flat_map(|i| [i as f64, 0.5 * i as f64]).collect();
    let x = rt.decl_dat(&s, 2, &init, "x").unwrap();
    let y = rt.decl_dat_zeros::<f64>(&s, 2, "y").unwrap();
    let k = kernel(
        "k2",
        "void k2(const double *x, double *y) { y[0] = x[0] + x[1]; y[1] = x[0] * x[1]; }",
    );
    rt.par_loop(&k, &s, [x.arg(READ), y.arg(WRITE)]).unwrap();
    let y = y.data_ro().unwrap();
    for i in 0..N {
        let (a, b) = (i as f64, 0.5 * i as f64);
        assert_eq!([y[2 * i], y[2 * i + 1]], [a + b, a * b]);
    }
}

#[test]
fn global_inc_sums_a_dat_onto_the_initial_value() {
    let rt = rt();
    let s = rt.decl_set(N, "elems").unwrap();
    let init: Vec<u64> = (0..N as u64).collect();
    let x = rt.decl_dat(&s, 1, &init, "x").unwrap();
    let g = rt.decl_global(1, &[5u64], "g").unwrap();
    let k = kernel(
        "sum",
        "void sum(const uint64_t *x, uint64_t *g) { *g += *x; }",
    );
    rt.par_loop(&k, &s, [x.arg(READ), g.arg(INC)]).unwrap();
    assert_eq!(g.value().unwrap(), [5 + (N as u64 * (N as u64 - 1)) / 2]);
}

#[test]
fn global_read_scales_a_dat() {
    let rt = rt();
    let s = rt.decl_set(N, "elems").unwrap();
    let init: Vec<f32> = (0..N).map(|i| i as f32).collect();
    let x = rt.decl_dat(&s, 1, &init, "x").unwrap();
    let g = rt.decl_global(2, &[3.0f32, 1.0], "ab").unwrap();
    let k = kernel(
        "axpb",
        "void axpb(float *x, const float *g) { *x = g[0] * *x + g[1]; }",
    );
    rt.par_loop(&k, &s, [x.arg(RW), g.arg(READ)]).unwrap();
    let x = x.data_ro().unwrap();
    for (i, v) in x.iter().enumerate() {
        assert_eq!(*v, 3.0 * i as f32 + 1.0);
    }
}

#[test]
fn zero_size_set_runs_nothing() {
    let rt = rt();
    let s = rt.decl_set(0, "empty").unwrap();
    let x = rt.decl_dat_zeros::<f64>(&s, 3, "x").unwrap();
    let g = rt.decl_global(1, &[7.0f64], "g").unwrap();
    let k = kernel(
        "z",
        "void z(double *x, double *g) { x[0] = 1.0; *g += 1.0; }",
    );
    rt.par_loop(&k, &s, [x.arg(WRITE), g.arg(INC)]).unwrap();
    assert_eq!(g.value().unwrap(), [7.0]);
    assert!(x.data_ro().unwrap().is_empty());
}

/// A deterministic permutation of 0..n.
fn permutation(n: usize) -> Vec<i32> {
    let mut p: Vec<i32> = (0..n as i32).collect();
    let mut state = 12345u64;
    for i in (1..n).rev() {
        state = state
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        p.swap(i, (state >> 33) as usize % (i + 1));
    }
    p
}

#[test]
fn indirect_rw_through_a_permutation_gives_triangular_sum() {
    let rt = rt();
    let iter = rt.decl_set(N, "iter").unwrap();
    let target = rt.decl_set(N, "target").unwrap();
    let m = rt
        .decl_map(&iter, &target, 1, permutation(N), "perm")
        .unwrap();
    let init: Vec<u32> = (0..N as u32).collect();
    let x = rt.decl_dat(&target, 1, &init, "x").unwrap();
    let k = kernel("rw", "void rw(unsigned int *x) { *x += 1; }");
    rt.par_loop(&k, &iter, [x.arg_via(&m, 0, RW)]).unwrap();
    let x = x.data_ro().unwrap();
    assert_eq!(
        x.iter().map(|&v| v as usize).sum::<usize>(),
        N * (N + 1) / 2
    );
    assert!(x.iter().enumerate().all(|(j, &v)| v as usize == j + 1));
}

#[test]
fn indirect_inc_into_one_element_counts_elements() {
    let rt = rt();
    let iter = rt.decl_set(N, "iter").unwrap();
    let one = rt.decl_set(1, "one").unwrap();
    let m = rt.decl_map(&iter, &one, 1, vec![0; N], "to_one").unwrap();
    let u = rt.decl_dat_zeros::<u32>(&one, 1, "u").unwrap();
    let k = kernel("count", "void count(unsigned int *u) { *u += 1; }");
    rt.par_loop(&k, &iter, [u.arg_via(&m, 0, INC)]).unwrap();
    assert_eq!(&*u.data_ro().unwrap(), &[N as u32]);
}

/// A chain of `n` nodes and `n - 1` edges (i, i+1).
fn chain(rt: &op2::Runtime, n: usize) -> (op2::Set, op2::Set, op2::Map) {
    let nodes = rt.decl_set(n, "nodes").unwrap();
    let edges = rt.decl_set(n - 1, "edges").unwrap();
    let e2n: Vec<i32> = (0..n as i32 - 1).flat_map(|i| [i, i + 1]).collect();
    let m = rt.decl_map(&edges, &nodes, 2, e2n, "edge2node").unwrap();
    (nodes, edges, m)
}

#[test]
fn edge_to_node_sums_on_a_chain() {
    let rt = rt();
    let (nodes, edges, m) = chain(&rt, N);
    let vals: Vec<f64> = (0..N).map(|i| (i * i) as f64).collect();
    let v = rt.decl_dat(&nodes, 1, &vals, "v").unwrap();
    let e = rt.decl_dat_zeros::<f64>(&edges, 1, "e").unwrap();
    let k = kernel(
        "esum",
        "void esum(double *e, const double *a, const double *b) { *e = *a + *b; }",
    );
    rt.par_loop(
        &k,
        &edges,
        [e.arg(WRITE), v.arg_via(&m, 0, READ), v.arg_via(&m, 1, READ)],
    )
    .unwrap();

    // And back: each node gathers the sums of its edges.
    let acc = rt.decl_dat_zeros::<f64>(&nodes, 1, "acc").unwrap();
    let k2 = kernel(
        "scatter",
        "void scatter(const double *e, double *a, double *b) { *a += *e; *b += *e; }",
    );
    rt.par_loop(
        &k2,
        &edges,
        [
            e.arg(READ),
            acc.arg_via(&m, 0, INC),
            acc.arg_via(&m, 1, INC),
        ],
    )
    .unwrap();

    let e = e.data_ro().unwrap();
    for i in 0..N - 1 {
        assert_eq!(e[i], vals[i] + vals[i + 1]);
    }
    let acc = acc.data_ro().unwrap();
    for i in 0..N {
        let left = if i > 0 { vals[i - 1] + vals[i] } else { 0.0 };
        let right = if i + 1 < N {
            vals[i] + vals[i + 1]
        } else {
            0.0
        };
        assert_eq!(acc[i], left + right, "node {i}");
    }
}

#[test]
fn vector_map_read_dim_1() {
    let rt = rt();
    let (nodes, edges, m) = chain(&rt, N);
    let vals: Vec<i64> = (0..N as i64).map(|i| 3 * i - 7).collect();
    let v = rt.decl_dat(&nodes, 1, &vals, "v").unwrap();
    let e = rt.decl_dat_zeros::<i64>(&edges, 1, "e").unwrap();
    let k = kernel(
        "vsum",
        "void vsum(int64_t *e, int64_t *v[2]) { *e = v[0][0] * 10 + v[1][0]; }",
    );
    rt.par_loop(&k, &edges, [e.arg(WRITE), v.arg_row(&m, READ)])
        .unwrap();
    let e = e.data_ro().unwrap();
    for i in 0..N - 1 {
        assert_eq!(e[i], vals[i] * 10 + vals[i + 1]);
    }
}

#[test]
fn vector_map_inc_dim_2() {
    let rt = rt();
    let (nodes, edges, m) = chain(&rt, N);
    let w: Vec<f64> = (0..N - 1).flat_map(|i| [i as f64, 1.0]).collect();
    let e = rt.decl_dat(&edges, 2, &w, "w").unwrap();
    let v = rt.decl_dat_zeros::<f64>(&nodes, 2, "v").unwrap();
    let k = kernel(
        "vinc",
        "void vinc(const double *w, double **v) { for (int j = 0; j < 2; j++) { v[j][0] += w[0]; v[j][1] += w[1]; } }",
    );
    rt.par_loop(&k, &edges, [e.arg(READ), v.arg_row(&m, INC)])
        .unwrap();
    let v = v.data_ro().unwrap();
    for i in 0..N {
        let mut expect = [0.0, 0.0];
        for edge in [i.checked_sub(1), (i + 1 < N).then_some(i)]
            .into_iter()
            .flatten()
        {
            expect[0] += edge as f64;
            expect[1] += 1.0;
        }
        assert_eq!([v[2 * i], v[2 * i + 1]], expect, "node {i}");
    }
}

#[test]
fn consts_of_dim_1_and_4() {
    let rt = rt();
    let s = rt.decl_set(N, "elems").unwrap();
    let _scale = rt.decl_const(1, &[2.5f64], "scale").unwrap();
    let _coef = rt.decl_const(4, &[1i32, -2, 3, -4], "coef").unwrap();
    let x = rt
        .decl_dat(&s, 1, (0..N).map(|i| i as f64).collect::<Vec<_>>(), "x")
        .unwrap();
    let k = kernel(
        "use_consts",
        "void use_consts(double *x) { *x = scale * *x + coef[0] + coef[1] + coef[2] + coef[3]; }",
    );
    rt.par_loop(&k, &s, [x.arg(RW)]).unwrap();
    let x = x.data_ro().unwrap();
    for (i, v) in x.iter().enumerate() {
        assert_eq!(*v, 2.5 * i as f64 - 2.0);
    }
}

#[test]
fn const_changes_apply_to_later_loops_only() {
    let rt = rt();
    let s = rt.decl_set(10, "elems").unwrap();
    let c = rt.decl_const(1, &[2.0f64], "factor").unwrap();
    let x = rt.decl_dat(&s, 1, [1.0f64; 10], "x").unwrap();
    let k = kernel("mul", "void mul(double *x) { *x *= factor; }");
    rt.par_loop(&k, &s, [x.arg(RW)]).unwrap();
    c.set_value(&[3.0]).unwrap();
    rt.par_loop(&k, &s, [x.arg(RW)]).unwrap();
    assert!(x.data_ro().unwrap().iter().all(|&v| v == 6.0));
    assert_eq!(c.value().unwrap(), [3.0]);
}

/// PyOP2's `Const.remove_from_namespace`: loops recorded before the removal see the old
/// values, the name can then be declared again with another shape, and removing twice is a
/// typed error.
#[test]
fn removed_consts_free_their_names() {
    let rt = rt();
    let s = rt.decl_set(10, "elems").unwrap();
    let c = rt.decl_const(1, &[2.0f64], "factor").unwrap();
    let x = rt.decl_dat(&s, 1, [1.0f64; 10], "x").unwrap();
    let k = kernel("mul", "void mul(double *x) { *x *= factor; }");
    rt.par_loop(&k, &s, [x.arg(RW)]).unwrap();
    rt.remove_const(&c).unwrap();
    let e = rt.remove_const(&c).unwrap_err();
    assert!(matches!(e, op2::Op2Error::ConstRemoved { .. }), "{e}");
    let c2 = rt.decl_const(2, &[3.0f64, 5.0], "factor").unwrap();
    let k2 = kernel(
        "mul2",
        "void mul2(double *x) { *x *= factor[0] + factor[1]; }",
    );
    rt.par_loop(&k2, &s, [x.arg(RW)]).unwrap();
    assert!(x.data_ro().unwrap().iter().all(|&v| v == 16.0));
    rt.remove_const(&c2).unwrap();
    // The name is gone: a kernel using it no longer compiles.
    assert!(rt.par_loop(&k, &s, [x.arg(RW)]).is_err());
}

#[test]
fn midpoint_of_pyop2s_example() {
    let rt = rt();
    // Two triangles of the unit square.
    let vertices = rt.decl_set(4, "vertices").unwrap();
    let cells = rt.decl_set(2, "cells").unwrap();
    let c2v = rt
        .decl_map(&cells, &vertices, 3, vec![0, 1, 2, 0, 2, 3], "cell2vertex")
        .unwrap();
    let coords = rt
        .decl_dat(
            &vertices,
            2,
            [0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0],
            "coords",
        )
        .unwrap();
    let mid = rt.decl_dat_zeros::<f64>(&cells, 2, "midpoints").unwrap();
    let k = kernel(
        "midpoint",
        "void midpoint(double p[2], double *coords[3]) {
           p[0] = (coords[0][0] + coords[1][0] + coords[2][0]) / 3.0;
           p[1] = (coords[0][1] + coords[1][1] + coords[2][1]) / 3.0; }",
    );
    op2::par_loop!(rt, k, cells, mid.arg(WRITE), coords.arg_row(&c2v, READ)).unwrap();
    let m = mid.data_ro().unwrap();
    let expect = [2.0 / 3.0, 1.0 / 3.0, 1.0 / 3.0, 2.0 / 3.0];
    for (a, b) in m.iter().zip(expect) {
        assert!((a - b).abs() < 1e-15);
    }
}

/// Values a test can build from small integers in every element type.
trait TestNum: Scalar + Copy + PartialOrd {
    fn from_i64(v: i64) -> Self;
    fn c_type() -> &'static str {
        Self::DTYPE.c_name()
    }
}
macro_rules! test_num {
    ($($t:ty),*) => { $(impl TestNum for $t { fn from_i64(v: i64) -> Self { v as $t } })* };
}
test_num!(f64, f32, i32, u32, i64, u64);

fn min_max_case<T: TestNum>(dim: usize) {
    let rt = rt();
    let s = rt.decl_set(N, "elems").unwrap();
    let signed = T::from_i64(-1) < T::from_i64(0);
    let offset = if signed { 500 } else { 0 };
    let vals: Vec<T> = (0..N * dim)
        .map(|i| T::from_i64(((i as i64 * 7919 + 13 * (i as i64 % dim as i64)) % 1000) - offset))
        .collect();
    let x = rt.decl_dat(&s, dim, &vals, "x").unwrap();
    let gmin = rt
        .decl_global(dim, &vec![T::MAX_VALUE; dim], "gmin")
        .unwrap();
    let gmax = rt
        .decl_global(dim, &vec![T::MIN_VALUE; dim], "gmax")
        .unwrap();
    let ty = T::c_type();
    let src = format!(
        "void minmax(const {ty} *x, {ty} *lo, {ty} *hi) {{
           for (int d = 0; d < {dim}; d++) {{ if (x[d] < lo[d]) lo[d] = x[d]; if (x[d] > hi[d]) hi[d] = x[d]; }} }}"
    );
    let k = kernel("minmax", &src);
    rt.par_loop(&k, &s, [x.arg(READ), gmin.arg(MIN), gmax.arg(MAX)])
        .unwrap();
    for d in 0..dim {
        let col = vals.iter().skip(d).step_by(dim);
        let lo = col
            .clone()
            .fold(T::MAX_VALUE, |a, &b| if b < a { b } else { a });
        let hi = col.fold(T::MIN_VALUE, |a, &b| if b > a { b } else { a });
        assert_eq!(gmin.value().unwrap()[d], lo, "{} dim {dim} min", T::DTYPE);
        assert_eq!(gmax.value().unwrap()[d], hi, "{} dim {dim} max", T::DTYPE);
    }
}

#[test]
fn global_min_max_all_types_dims_1_and_2() {
    for dim in [1, 2] {
        min_max_case::<f64>(dim);
        min_max_case::<f32>(dim);
        min_max_case::<i32>(dim);
        min_max_case::<u32>(dim);
        min_max_case::<i64>(dim);
        min_max_case::<u64>(dim);
    }
}

/// MIN (or MAX) partials of every component, with a Dat store between them: GCC 12's SLP
/// vectoriser with AVX-512 gave every `uint32_t` component the least of all of them here
/// (`op2-fuzz` found it). Each element offers component `d` the value `4 + d` (MIN) or
/// `60 - d` (MAX).
fn min_max_beside_a_store_case<T: TestNum>(dim: usize) {
    for (access, cmp) in [(MIN, "<"), (MAX, ">")] {
        let rt = rt();
        let s = rt.decl_set(N, "elems").unwrap();
        let y = rt.decl_dat_zeros::<f64>(&s, 1, "y").unwrap();
        let best = |d: usize| {
            if access == MIN {
                4 + d as i64
            } else {
                60 - d as i64
            }
        };
        let init: Vec<T> = (0..dim)
            .map(|d| {
                T::from_i64(if access == MIN {
                    67 - d as i64
                } else {
                    2 + d as i64
                })
            })
            .collect();
        let g = rt.decl_global(dim, &init, "g").unwrap();
        let ty = T::c_type();
        let mut body = String::new();
        for d in (0..dim).rev() {
            body += &format!(
                "{{ {ty} v = {}; if (v {cmp} g[{d}]) g[{d}] = v; }} *y += -8.0;\n",
                best(d),
            );
        }
        let src = format!("void mmst({ty} *g, double *y) {{ {body} }}");
        let k = kernel("mmst", &src);
        rt.par_loop(&k, &s, [g.arg(access), y.arg(INC)]).unwrap();
        let want: Vec<T> = (0..dim).map(|d| T::from_i64(best(d))).collect();
        assert_eq!(
            g.value().unwrap(),
            want,
            "{} dim {dim} {access:?}",
            T::DTYPE
        );
        assert!(y.data_ro().unwrap().iter().all(|&v| v == -8.0 * dim as f64));
    }
}

#[test]
fn global_min_max_of_every_type_beside_a_dat_store() {
    for dim in [2, 3, 4] {
        min_max_beside_a_store_case::<f64>(dim);
        min_max_beside_a_store_case::<f32>(dim);
        min_max_beside_a_store_case::<i32>(dim);
        min_max_beside_a_store_case::<u32>(dim);
        min_max_beside_a_store_case::<i64>(dim);
        min_max_beside_a_store_case::<u64>(dim);
    }
}

#[test]
fn global_min_keeps_a_smaller_initial_value() {
    let rt = rt();
    let s = rt.decl_set(10, "elems").unwrap();
    let x = rt
        .decl_dat(&s, 1, (1..=10).collect::<Vec<i32>>(), "x")
        .unwrap();
    let g = rt.decl_global(1, &[-3i32], "g").unwrap();
    let k = kernel(
        "mn",
        "void mn(const int *x, int *g) { if (*x < *g) *g = *x; }",
    );
    rt.par_loop(&k, &s, [x.arg(READ), g.arg(MIN)]).unwrap();
    assert_eq!(g.value().unwrap(), [-3]);
}

#[test]
fn op2_style_args_run_like_typed_ones() {
    let rt = rt();
    let (nodes, edges, m) = chain(&rt, 50);
    let v = rt
        .decl_dat(&nodes, 1, (0..50).map(f64::from).collect::<Vec<_>>(), "v")
        .unwrap();
    let e = rt.decl_dat_zeros::<f64>(&edges, 1, "e").unwrap();
    let total = rt.decl_global(1, &[0.0f64], "total").unwrap();
    let k = kernel(
        "diff",
        "void diff(double *e, double *v[2], double *t) { *e = v[1][0] - v[0][0]; *t += *e; }",
    );
    op2::par_loop!(
        rt,
        k,
        edges,
        op2::op_arg_dat(&e, op2::OP_ID, None, 1, "double", WRITE),
        op2::op_arg_dat(&v, -2, Some(&m), 1, "double", READ),
        op2::op_arg_gbl(&total, 1, "double", INC)
    )
    .unwrap();
    assert!(e.data_ro().unwrap().iter().all(|&d| d == 1.0));
    assert_eq!(total.value().unwrap(), [49.0]);
}

#[test]
fn host_writes_are_seen_by_later_loops() {
    let rt = rt();
    let s = rt.decl_set(4, "s").unwrap();
    let x = rt.decl_dat_zeros::<i32>(&s, 1, "x").unwrap();
    x.data().unwrap().copy_from_slice(&[1, 2, 3, 4]);
    let g = rt.decl_global(1, &[0i32], "g").unwrap();
    let k = kernel("s", "void s(const int *x, int *g) { *g += *x; }");
    rt.par_loop(&k, &s, [x.arg(READ), g.arg(INC)]).unwrap();
    assert_eq!(g.value().unwrap(), [10]);
}

#[test]
fn kernels_named_like_libc_functions_stay_local() {
    // glibc exports `step` and `index`; the generated library must call the user's kernels.
    let rt = rt();
    let s = rt.decl_set(3, "s").unwrap();
    let x = rt.decl_dat(&s, 1, [1.0f64, 2.0, 3.0], "x").unwrap();
    let step = kernel("step", "void step(double *x) { *x = *x * 2.0; }");
    let index = kernel("index", "void index(double *x) { *x = *x + 1.0; }");
    rt.par_loop(&step, &s, [x.arg(RW)]).unwrap();
    rt.par_loop(&index, &s, [x.arg(RW)]).unwrap();
    assert_eq!(&*x.data_ro().unwrap(), &[3.0, 5.0, 7.0]);
}

#[test]
fn suite_runs_on_the_requested_backend() {
    // `OP2_TEST_BACKEND` reruns this suite on another backend; make sure it really does.
    assert_eq!(rt().backend_name(), op2_test_support::backend());
}

#[test]
fn timings_count_calls_and_bytes_by_op2_convention() {
    let rt = rt();
    let (nodes, edges, m) = chain(&rt, 101);
    let x = rt.decl_dat_zeros::<f64>(&nodes, 2, "x").unwrap();
    let w = rt.decl_dat_zeros::<f32>(&edges, 1, "w").unwrap();
    let k = kernel(
        "acc",
        "void acc(const float *w, double *a, double *b) { a[0] += *w; b[1] += *w; }",
    );
    for _ in 0..3 {
        rt.par_loop(
            &k,
            &edges,
            [w.arg(READ), x.arg_via(&m, 0, INC), x.arg_via(&m, 1, INC)],
        )
        .unwrap();
    }
    rt.flush().unwrap();
    let t = rt.timings();
    assert_eq!(t.len(), 1);
    assert_eq!((t[0].kernel.as_str(), t[0].calls), ("acc", 3));
    // Per loop: w read once (100 x 4), x read and written (2 x 101 x 2 x 8), the map (100 x 2 x 4).
    assert_eq!(t[0].bytes, 3 * (400 + 2 * 1616 + 800));
    assert!(t[0].seconds > 0.0);
    rt.reset_timings();
    assert!(rt.timings().is_empty());
}
