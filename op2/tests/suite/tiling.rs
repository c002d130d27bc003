//! Sparse tiling of chains of loops: random chains (direct and indirect loops over two sets,
//! increments through maps, whole rows, Global reductions) run tile by tile against the same
//! computation in plain Rust, with every value a small integer so that any order of additions
//! gives the same sums; chains that must not be tiled as one; tiled against untiled on real
//! numbers; the settings.

use op2::{INC, LazyOptions, MAX, READ, RW, Runtime, TilingMode, WRITE};
use op2_test_support::{builder, kernel};
use proptest::prelude::*;

/// Whether the suite's backend runs element lists (and so tiles).
fn tiles_here(rt: &Runtime) -> bool {
    matches!(rt.backend_name(), "seq" | "openmp")
}

fn tiled(tile_size: usize) -> Runtime {
    builder()
        .tiling(TilingMode::Always)
        .tile_size(tile_size)
        .build()
        .unwrap()
}

#[derive(Debug, Clone)]
struct Chain {
    nodes: usize,
    /// Edge to node, two per edge.
    e2n: Vec<i32>,
    v: Vec<i32>,
    w: Vec<i32>,
    tile_size: usize,
}

fn chain() -> impl Strategy<Value = Chain> {
    (1usize..120, 0usize..200, 1usize..9).prop_flat_map(|(nodes, edges, tile_size)| {
        (
            // Mostly near neighbours (a mesh in a good order), sometimes anywhere.
            prop::collection::vec((0..nodes as i32, -3i32..4, any::<bool>()), edges),
            prop::collection::vec(-20i32..20, nodes),
            prop::collection::vec(-20i32..20, edges),
        )
            .prop_map(move |(ends, v, w)| {
                let n = nodes as i32;
                let e2n = ends
                    .into_iter()
                    .flat_map(|(a, step, far)| {
                        let b = if far {
                            (a * 7 + 3) % n
                        } else {
                            (a + step).rem_euclid(n)
                        };
                        [a, b]
                    })
                    .collect();
                Chain {
                    nodes,
                    e2n,
                    v,
                    w,
                    tile_size,
                }
            })
    })
}

/// What the chain leaves: `a`, `acc`, `b`, `g` and the Globals.
#[derive(Debug, PartialEq)]
struct Outcome {
    a: Vec<f64>,
    acc: Vec<f64>,
    b: Vec<f64>,
    g: Vec<f64>,
    total: f64,
    hi: f64,
    count: i64,
}

/// The chain on `rt`: five loops over nodes and edges, forced together by reading the results.
fn run_chain(rt: &Runtime, c: &Chain) -> Outcome {
    let edges_n = c.e2n.len() / 2;
    let nodes = rt.decl_set(c.nodes, "nodes").unwrap();
    let edges = rt.decl_set(edges_n, "edges").unwrap();
    let e2n = rt
        .decl_map(&edges, &nodes, 2, c.e2n.clone(), "e2n")
        .unwrap();
    let v: Vec<f64> = c.v.iter().map(|&x| f64::from(x)).collect();
    let w: Vec<f64> = c.w.iter().map(|&x| f64::from(x)).collect();
    let v = rt.decl_dat(&nodes, 1, &v, "v").unwrap();
    let w = rt.decl_dat(&edges, 1, &w, "w").unwrap();
    let a = rt.decl_dat_zeros::<f64>(&nodes, 1, "a").unwrap();
    let acc = rt.decl_dat_zeros::<f64>(&nodes, 2, "acc").unwrap();
    let b = rt.decl_dat_zeros::<f64>(&nodes, 1, "b").unwrap();
    let g = rt.decl_dat_zeros::<f64>(&edges, 1, "g").unwrap();
    let total = rt.decl_global(1, &[0.0f64], "total").unwrap();
    let hi = rt.decl_global(1, &[-1e9f64], "hi").unwrap();
    let count = rt.decl_global(1, &[0i64], "count").unwrap();

    let double = kernel(
        "double_it",
        "void double_it(const double *v, double *a) { *a = 2 * v[0]; }",
    );
    rt.par_loop(&double, &nodes, [v.arg(READ), a.arg(WRITE)])
        .unwrap();
    let flux = kernel(
        "flux",
        "void flux(const double *w, const double *a1, const double *a0, double *r0, double *r1) {
           r0[0] += a1[0] + w[0]; r0[1] += 1;
           r1[0] -= w[0]; r1[1] += 2; }",
    );
    rt.par_loop(
        &flux,
        &edges,
        [
            w.arg(READ),
            a.arg_via(&e2n, 1, READ),
            a.arg_via(&e2n, 0, READ),
            acc.arg_via(&e2n, 0, INC),
            acc.arg_via(&e2n, 1, INC),
        ],
    )
    .unwrap();
    let combine = kernel(
        "combine",
        "void combine(const double *acc, double *a, double *b, double *t, double *hi, long *n) {
           *b = acc[0] + a[0] * acc[1]; a[0] += 1; *t += *b; if (*b > *hi) *hi = *b; *n += 1; }",
    );
    rt.par_loop(
        &combine,
        &nodes,
        [
            acc.arg(READ),
            a.arg(RW),
            b.arg(WRITE),
            total.arg(INC),
            hi.arg(MAX),
            count.arg(INC),
        ],
    )
    .unwrap();
    let diff = kernel(
        "diff",
        "void diff(double *const *b, const double *a0, double *g) { *g = b[0][0] - 2 * b[1][0] + a0[0]; }",
    );
    rt.par_loop(
        &diff,
        &edges,
        [
            b.arg_row(&e2n, READ),
            a.arg_via(&e2n, 0, READ),
            g.arg(WRITE),
        ],
    )
    .unwrap();
    let clear = kernel("clear", "void clear(double *acc) { acc[1] = 0; }");
    rt.par_loop(&clear, &nodes, [acc.arg(RW)]).unwrap();
    rt.flush().unwrap();
    Outcome {
        a: a.to_vec().unwrap(),
        acc: acc.to_vec().unwrap(),
        b: b.to_vec().unwrap(),
        g: g.to_vec().unwrap(),
        total: total.value().unwrap()[0],
        hi: hi.value().unwrap()[0],
        count: count.value().unwrap()[0],
    }
}

/// The same chain in plain Rust.
fn expected(c: &Chain) -> Outcome {
    let n = c.nodes;
    let v: Vec<f64> = c.v.iter().map(|&x| f64::from(x)).collect();
    let mut a: Vec<f64> = v.iter().map(|x| 2.0 * x).collect();
    let mut acc = vec![0.0; 2 * n];
    for (e, &w) in c.w.iter().enumerate() {
        let (n0, n1) = (c.e2n[2 * e] as usize, c.e2n[2 * e + 1] as usize);
        let w = f64::from(w);
        acc[2 * n0] += a[n1] + w;
        acc[2 * n0 + 1] += 1.0;
        acc[2 * n1] -= w;
        acc[2 * n1 + 1] += 2.0;
    }
    let mut b = vec![0.0; n];
    let (mut total, mut hi) = (0.0, -1e9f64);
    for i in 0..n {
        b[i] = acc[2 * i] + a[i] * acc[2 * i + 1];
        a[i] += 1.0;
        total += b[i];
        hi = hi.max(b[i]);
    }
    let g = (0..c.w.len())
        .map(|e| {
            let (n0, n1) = (c.e2n[2 * e] as usize, c.e2n[2 * e + 1] as usize);
            b[n0] - 2.0 * b[n1] + a[n0]
        })
        .collect();
    for i in 0..n {
        acc[2 * i + 1] = 0.0;
    }
    Outcome {
        a,
        acc,
        b,
        g,
        total,
        hi,
        count: n as i64,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn random_chains_run_tile_by_tile_as_plain_rust_computes_them(c in chain()) {
        let rt = tiled(c.tile_size);
        let got = run_chain(&rt, &c);
        prop_assert_eq!(got, expected(&c));
        if tiles_here(&rt) && c.nodes >= 2 * c.tile_size {
            let stats = rt.lazy_stats();
            prop_assert!(stats.tiled_chains >= 1, "{stats:?}");
            prop_assert!(stats.tiles_run >= 2, "{stats:?}");
        }
    }
}

/// Real numbers on a structured quad mesh (Airfoil's shape of loops): tiled and loop by loop
/// agree to rounding (increments into one cell may come in another order), and tiled runs give
/// the same bits on one thread and on several.
#[test]
fn tiled_chains_agree_with_loop_by_loop_runs_to_rounding() {
    let (nx, ny) = (37, 23);
    let cells = nx * ny;
    let mut e2c = Vec::new();
    for j in 0..ny {
        for i in 0..nx {
            let c = (i + nx * j) as i32;
            if i + 1 < nx {
                e2c.extend([c, c + 1]);
            }
            if j + 1 < ny {
                e2c.extend([c, c + nx as i32]);
            }
        }
    }
    let q0: Vec<f64> = (0..cells)
        .map(|c| 1.0 + (c as f64 * 0.37).sin() * 0.1)
        .collect();
    let run = |rt: &Runtime| -> (Vec<f64>, f64) {
        let cs = rt.decl_set(cells, "cells").unwrap();
        let es = rt.decl_set(e2c.len() / 2, "edges").unwrap();
        let m = rt.decl_map(&es, &cs, 2, e2c.clone(), "e2c").unwrap();
        let q = rt.decl_dat(&cs, 1, &q0, "q").unwrap();
        let res = rt.decl_dat_zeros::<f64>(&cs, 1, "res").unwrap();
        let rms = rt.decl_global(1, &[0.0f64], "rms").unwrap();
        let flux = kernel(
            "flux",
            "void flux(const double *q0, const double *q1, double *r0, double *r1) {
               double f = 0.3 * (q0[0] - q1[0]) + 0.01 / (q0[0] + q1[0]);
               r0[0] -= f; r1[0] += f; }",
        );
        let update = kernel(
            "update",
            "void update(double *q, double *r, double *rms) {
               q[0] += 0.1 * r[0]; *rms += r[0] * r[0]; r[0] = 0; }",
        );
        for _ in 0..3 {
            rt.par_loop(
                &flux,
                &es,
                [
                    q.arg_via(&m, 0, READ),
                    q.arg_via(&m, 1, READ),
                    res.arg_via(&m, 0, INC),
                    res.arg_via(&m, 1, INC),
                ],
            )
            .unwrap();
            rt.par_loop(&update, &cs, [q.arg(RW), res.arg(RW), rms.arg(INC)])
                .unwrap();
        }
        (q.to_vec().unwrap(), rms.value().unwrap()[0])
    };
    let untiled = builder()
        .lazy_optimisations("-tiling".parse::<LazyOptions>().unwrap())
        .build()
        .unwrap();
    let (q_ref, rms_ref) = run(&untiled);
    assert_eq!(untiled.lazy_stats().tiled_chains, 0);
    for tile_size in [16, 100, 333] {
        let rt = tiled(tile_size);
        let (q, rms) = run(&rt);
        for (a, b) in q.iter().zip(&q_ref) {
            assert!((a - b).abs() <= 1e-12 * b.abs().max(1.0), "{a} {b}");
        }
        assert!(
            (rms - rms_ref).abs() <= 1e-12 * rms_ref.abs(),
            "{rms} {rms_ref}"
        );
        if tiles_here(&rt) {
            let s = rt.lazy_stats();
            assert_eq!(s.tiled_chains, 1, "{s:?}");
            assert_eq!(s.tiled_loops, 6, "{s:?}");
        }
        // The same tiles on the reference and on 3 OpenMP threads: the same bits.
        if op2::backends().iter().any(|b| b.name == "openmp") {
            let on = |backend: &str| {
                op2::builder()
                    .backend(backend)
                    .num_threads(3)
                    .tiling(TilingMode::Always)
                    .tile_size(tile_size)
                    .build()
                    .unwrap()
            };
            assert_eq!(run(&on("seq")), run(&on("openmp")));
        }
    }
}

/// A Global one loop reduces and a later loop reads cannot be in one tiled chain (the
/// reduction is only complete after the whole chain): the chain is cut there.
#[test]
fn a_global_reduced_then_read_cuts_the_chain() {
    let rt = tiled(4);
    let n = 64;
    let s = rt.decl_set(n, "s").unwrap();
    let x = rt.decl_dat(&s, 1, vec![1.0f64; n], "x").unwrap();
    let y = rt.decl_dat_zeros::<f64>(&s, 1, "y").unwrap();
    let sum = rt.decl_global(1, &[0.0f64], "sum").unwrap();
    let add = kernel(
        "add_up",
        "void add_up(const double *x, double *s) { *s += x[0]; }",
    );
    let scale = kernel(
        "scale_by",
        "void scale_by(const double *s, double *y) { y[0] = s[0]; }",
    );
    // Through a map, so that chain fusion (direct loops only) does not take it first.
    let next: Vec<i32> = (0..n as i32).map(|i| (i + 1) % n as i32).collect();
    let shift = rt.decl_map(&s, &s, 1, next, "next").unwrap();
    let again = kernel("again", "void again(double *y) { y[0] += 1; }");
    rt.par_loop(&add, &s, [x.arg(READ), sum.arg(INC)]).unwrap();
    rt.par_loop(&scale, &s, [sum.arg(READ), y.arg(WRITE)])
        .unwrap();
    rt.par_loop(&again, &s, [y.arg_via(&shift, 0, INC)])
        .unwrap();
    assert_eq!(y.to_vec().unwrap(), vec![65.0; n]);
    assert_eq!(sum.value().unwrap()[0], 64.0);
    if tiles_here(&rt) {
        // `add_up` alone, then `scale_by` and `again` tiled together.
        assert_eq!(rt.lazy_stats().tiled_loops, 2);
    }
}

/// Chains that move little data stay loop by loop unless tiling is forced, and the settings
/// reject nonsense.
#[test]
fn small_chains_are_not_tiled_by_default_and_settings_are_checked() {
    let rt = builder().tiling(TilingMode::Auto).build().unwrap();
    let c = Chain {
        nodes: 100,
        e2n: (0..99).flat_map(|i| [i, i + 1]).collect(),
        v: vec![1; 100],
        w: vec![2; 99],
        tile_size: 8,
    };
    assert_eq!(run_chain(&rt, &c), expected(&c));
    assert_eq!(rt.lazy_stats().tiled_chains, 0);
    assert!(matches!(
        builder().tile_size(0).build(),
        Err(op2::Op2Error::Config { .. })
    ));
    assert!("sometimes".parse::<TilingMode>().is_err());
    assert_eq!("Always".parse::<TilingMode>().unwrap(), TilingMode::Always);
}
