//! One Dat in several args of one loop, every way the README allows: directly and through a map,
//! through two maps, a whole row and one entry, with INC and commutative RW updates, and args that
//! alias within one element. Each expected value is computed here in plain Rust; the suite runs on
//! every backend and scheme (`cargo xtask test` reruns it on openmp, OpenCL and the CUDA emulator),
//! and these loops once lost increments on openmp and OpenCL or panicked in the device code
//! generator (found by `op2-fuzz`).

use op2::{INC, READ, RW, Runtime, WRITE};
use op2_test_support::{backend, builder, kernel};

/// A runtime on the suite's backend with blocks of `block` elements (many blocks, so that
/// threads and work-groups really run side by side), lazy or eager.
fn rt_blocks(block: usize, lazy: bool) -> Runtime {
    builder()
        .lazy(lazy)
        .part_size(block)
        .build()
        .unwrap_or_else(|e| panic!("runtime on `{}`: {e}", backend()))
}

/// `n` map values below `to` (xorshift from `seed`): repeated targets when `n > to`.
fn random_values(n: usize, to: usize, seed: u64) -> Vec<i32> {
    let mut dice = op2_test_support::Dice::new(seed);
    (0..n).map(|_| dice.below(to as u64) as i32).collect()
}

#[test]
fn a_dat_incremented_directly_and_through_a_map_gets_every_increment() {
    // The minimal case: openmp lost a few of these with two threads.
    for lazy in [true, false] {
        let rt = rt_blocks(64, lazy);
        let n = 2580;
        let s = rt.decl_set(n, "s").unwrap();
        let vals = random_values(n, n, 7);
        let m = rt.decl_map(&s, &s, 1, vals.clone(), "m").unwrap();
        let d = rt.decl_dat_zeros::<i32>(&s, 1, "d").unwrap();
        let k = kernel("rk", "void rk(int *a, int *b) { *a += 1; *b += 1; }");
        // Ten times: a lost increment is a race, which one run may not lose.
        for _ in 0..10 {
            rt.par_loop(&k, &s, [d.arg_via(&m, 0, INC), d.arg(INC)])
                .unwrap();
        }
        let mut want = vec![10; n];
        for &v in &vals {
            want[v as usize] += 10;
        }
        assert_eq!(d.to_vec().unwrap(), want, "lazy {lazy}");
    }
}

#[test]
fn a_dat_incremented_through_two_maps_and_a_row_gets_every_increment() {
    let rt = rt_blocks(32, true);
    let (n, to) = (3000, 400);
    let edges = rt.decl_set(n, "edges").unwrap();
    let nodes = rt.decl_set(to, "nodes").unwrap();
    let v0 = random_values(n * 3, to, 11);
    let v1 = random_values(n * 2, to, 12);
    let m0 = rt.decl_map(&edges, &nodes, 3, v0.clone(), "m0").unwrap();
    let m1 = rt.decl_map(&edges, &nodes, 2, v1.clone(), "m1").unwrap();
    let d = rt.decl_dat_zeros::<i64>(&nodes, 2, "d").unwrap();
    let w = rt.decl_dat_zeros::<i64>(&edges, 1, "w").unwrap();
    let k = kernel(
        "two_maps",
        "void two_maps(int64_t *row[3], int64_t *one, int64_t *e) {
            for (int j = 0; j < 3; j++) { row[j][0] += 1 + j; row[j][1] += 10; }
            one[0] += 100; one[1] += 1000; e[0] += 7; }",
    );
    rt.par_loop(
        &k,
        &edges,
        [d.arg_row(&m0, INC), d.arg_via(&m1, 1, INC), w.arg(INC)],
    )
    .unwrap();
    let mut want = vec![0i64; to * 2];
    for e in 0..n {
        for j in 0..3 {
            let t = v0[e * 3 + j] as usize;
            want[t * 2] += 1 + j as i64;
            want[t * 2 + 1] += 10;
        }
        let t = v1[e * 2 + 1] as usize;
        want[t * 2] += 100;
        want[t * 2 + 1] += 1000;
    }
    assert_eq!(d.to_vec().unwrap(), want);
    assert!(w.to_vec().unwrap().iter().all(|&x| x == 7));
}

#[test]
fn a_dat_incremented_directly_and_twice_through_one_entry_gets_every_increment() {
    // From the issue: `d2 INC, d2 via m0[0] INC, ..., d2 via m0[0] INC`, with a Global reduced
    // twice beside them.
    let rt = rt_blocks(16, true);
    let n = 3570;
    let s = rt.decl_set(n, "s").unwrap();
    let vals = random_values(n, 50, 3);
    let m = rt.decl_map(&s, &s, 1, vals.clone(), "m").unwrap();
    let d = rt.decl_dat_zeros::<f64>(&s, 1, "d").unwrap();
    let g = rt.decl_global(1, &[0i32], "g").unwrap();
    let k = kernel(
        "inc3",
        "void inc3(double *a, double *b, int *g1, int *g2, double *c) {
            *a += 1.0; *b += 2.0; if (5 > *g1) *g1 = 5; if (7 > *g2) *g2 = 7; *c += 4.0; }",
    );
    rt.par_loop(
        &k,
        &s,
        [
            d.arg(INC),
            d.arg_via(&m, 0, INC),
            g.arg(op2::MAX),
            g.arg(op2::MAX),
            d.arg_via(&m, 0, INC),
        ],
    )
    .unwrap();
    let mut want = vec![1.0; n];
    for &v in &vals {
        want[v as usize] += 6.0;
    }
    assert_eq!(d.to_vec().unwrap(), want);
    assert_eq!(g.value().unwrap(), [7]);
}

#[test]
fn a_row_with_repeated_targets_gets_every_increment_beside_other_args() {
    // From the issue: `d5 via m3[0] INC, d1 row m0 INC, d0 via m0[0] WRITE, d5 via m3[0] INC`:
    // rows whose entries repeat.
    let rt = rt_blocks(64, true);
    let (n, to) = (2500, 30);
    let a = rt.decl_set(n, "a").unwrap();
    let b = rt.decl_set(to, "b").unwrap();
    let v0 = random_values(n * 4, to, 21);
    let v3 = random_values(n, to, 22);
    let m0 = rt.decl_map(&a, &b, 4, v0.clone(), "m0").unwrap();
    let m3 = rt.decl_map(&a, &b, 1, v3.clone(), "m3").unwrap();
    let d5 = rt.decl_dat_zeros::<i32>(&b, 1, "d5").unwrap();
    let d1 = rt.decl_dat_zeros::<i32>(&b, 2, "d1").unwrap();
    let d0 = rt.decl_dat_zeros::<f32>(&b, 1, "d0").unwrap();
    let k = kernel(
        "rows",
        "void rows(int *x, int *r[4], float *w, int *y) {
            *x += 1; for (int j = 0; j < 4; j++) { r[j][0] += 1; r[j][1] += j; } *w = 2.5f; *y += 3; }",
    );
    rt.par_loop(
        &k,
        &a,
        [
            d5.arg_via(&m3, 0, INC),
            d1.arg_row(&m0, INC),
            d0.arg_via(&m0, 0, WRITE),
            d5.arg_via(&m3, 0, INC),
        ],
    )
    .unwrap();
    let (mut w5, mut w1) = (vec![0; to], vec![0; to * 2]);
    for e in 0..n {
        w5[v3[e] as usize] += 4;
        for j in 0..4 {
            let t = v0[e * 4 + j] as usize;
            w1[t * 2] += 1;
            w1[t * 2 + 1] += j as i32;
        }
    }
    assert_eq!(d5.to_vec().unwrap(), w5);
    assert_eq!(d1.to_vec().unwrap(), w1);
    let touched: std::collections::HashSet<i32> = (0..n).map(|e| v0[e * 4]).collect();
    for (t, v) in d0.to_vec().unwrap().iter().enumerate() {
        let want = if touched.contains(&(t as i32)) {
            2.5
        } else {
            0.0
        };
        assert_eq!(*v, want, "d0[{t}]");
    }
}

#[test]
fn a_plan_is_not_reused_for_a_loop_whose_args_differ() {
    // From the issue: the second loop has the first one's indirect args without its direct one;
    // the device code generator panicked on the first loop's plan.
    for lazy in [false, true] {
        let rt = rt_blocks(32, lazy);
        let (na, nb) = (3064, 9);
        let a = rt.decl_set(na, "A").unwrap();
        let b = rt.decl_set(nb, "B").unwrap();
        let vals = random_values(na * 4, nb, 5);
        let m = rt.decl_map(&a, &b, 4, vals.clone(), "m").unwrap();
        let d = rt.decl_dat_zeros::<i32>(&b, 4, "d").unwrap();
        let x = rt.decl_dat_zeros::<i32>(&a, 1, "x").unwrap();
        let y = rt.decl_dat_zeros::<i32>(&a, 1, "y").unwrap();
        let k1 = kernel(
            "first",
            "void first(int *x, int *r[4]) { *x += 1; for (int j = 0; j < 4; j++) r[j][j] += 1; }",
        );
        let k2 = kernel(
            "second",
            "void second(int *r[4]) { for (int j = 0; j < 4; j++) r[j][0] += 1; }",
        );
        let k3 = kernel(
            "third",
            "void third(int *r[4], int *y) { for (int j = 0; j < 4; j++) r[j][1] += 2; *y = 9; }",
        );
        rt.par_loop(&k1, &a, [x.arg(RW), d.arg_row(&m, INC)])
            .unwrap();
        rt.par_loop(&k2, &a, [d.arg_row(&m, INC)]).unwrap();
        rt.par_loop(&k3, &a, [d.arg_row(&m, INC), y.arg(WRITE)])
            .unwrap();
        let mut want = vec![0; nb * 4];
        for e in 0..na {
            for j in 0..4 {
                let t = vals[e * 4 + j] as usize;
                want[t * 4 + j] += 1;
                want[t * 4] += 1;
                want[t * 4 + 1] += 2;
            }
        }
        assert_eq!(d.to_vec().unwrap(), want, "lazy {lazy}");
        assert!(x.to_vec().unwrap().iter().all(|&v| v == 1));
        assert!(y.to_vec().unwrap().iter().all(|&v| v == 9));
    }
}

/// Kernel sources of one loop: plain, and copying each parameter into a pointer of its own
/// (OpenCL then hands the kernel private copies, which must alias as the pointers would).
fn both_ways(name: &str, params: &str, body: &str, own: &str) -> [(String, String); 2] {
    [
        (
            name.to_string(),
            format!("void {name}({params}) {{ {body} }}"),
        ),
        (
            format!("{name}_own"),
            format!("void {name}_own({params}) {{ {own} }}"),
        ),
    ]
}

#[test]
fn commutative_updates_through_two_maps_and_directly_all_land() {
    // RW through two maps and directly, each change an addition: conflicting elements never run
    // at once, and every arg sees the others' writes (the CUDA emulator once kept two staged
    // copies and stored one over the other).
    let n = 2000;
    for (name, src) in both_ways(
        "upd",
        "double *a, double *b, double *c",
        "a[0] = a[0] + 1.0; b[0] = b[0] + 10.0; c[0] = c[0] + 100.0;",
        "double *p = a; double *q = b; double *r = c; p[0] = p[0] + 1.0; q[0] = q[0] + 10.0; r[0] = r[0] + 100.0;",
    ) {
        let rt = rt_blocks(16, true);
        let s = rt.decl_set(n, "s").unwrap();
        let v0 = random_values(n, n, 31);
        let v1 = random_values(n, n, 32);
        let m0 = rt.decl_map(&s, &s, 1, v0.clone(), "m0").unwrap();
        let m1 = rt.decl_map(&s, &s, 1, v1.clone(), "m1").unwrap();
        let d = rt.decl_dat_zeros::<f64>(&s, 1, "d").unwrap();
        let k = kernel(&name, &src);
        rt.par_loop(
            &k,
            &s,
            [d.arg_via(&m0, 0, RW), d.arg_via(&m1, 0, RW), d.arg(RW)],
        )
        .unwrap();
        let mut want = vec![100.0; n];
        for e in 0..n {
            want[v0[e] as usize] += 1.0;
            want[v1[e] as usize] += 10.0;
        }
        assert_eq!(d.to_vec().unwrap(), want, "{name}");
    }
}

#[test]
fn a_row_updated_in_place_counts_repeated_entries_once_each() {
    // RW through a whole row whose entries repeat: the entries alias, so every change lands.
    let (n, to) = (1500, 40);
    for (name, src) in both_ways(
        "rowupd",
        "int *r[3]",
        "for (int j = 0; j < 3; j++) r[j][0] = r[j][0] + 1 + j;",
        "int *p0 = r[0]; int *p1 = r[1]; int *p2 = r[2]; p0[0] = p0[0] + 1; p1[0] = p1[0] + 2; p2[0] = p2[0] + 3;",
    ) {
        let rt = rt_blocks(64, true);
        let a = rt.decl_set(n, "a").unwrap();
        let b = rt.decl_set(to, "b").unwrap();
        let vals = random_values(n * 3, to, 41);
        let m = rt.decl_map(&a, &b, 3, vals.clone(), "m").unwrap();
        let d = rt.decl_dat_zeros::<i32>(&b, 1, "d").unwrap();
        rt.par_loop(&kernel(&name, &src), &a, [d.arg_row(&m, RW)])
            .unwrap();
        let mut want = vec![0; to];
        for e in 0..n {
            for j in 0..3 {
                want[vals[e * 3 + j] as usize] += 1 + j as i32;
            }
        }
        assert_eq!(d.to_vec().unwrap(), want, "{name}");
    }
}

#[test]
fn direct_args_on_one_dat_alias_within_an_element() {
    // `x RW` and `x READ` (and `x WRITE`) reach the same values: a read after a write through
    // another arg sees it, as with pointers on the host.
    let n = 1000;
    for (name, src) in both_ways(
        "alias",
        "double *a, const double *b, double *c, double *y",
        "a[0] = 2.0 * a[0]; y[0] = b[0] + 1.0; c[1] = 5.0; y[1] = b[1];",
        "double *p = a; const double *q = b; double *r = c; double *o = y; p[0] = 2.0 * p[0]; o[0] = q[0] + 1.0; r[1] = 5.0; o[1] = q[1];",
    ) {
        let rt = rt_blocks(64, true);
        let s = rt.decl_set(n, "s").unwrap();
        let init: Vec<f64> = (0..2 * n).map(|i| i as f64).collect();
        let x = rt.decl_dat(&s, 2, &init, "x").unwrap();
        let y = rt.decl_dat_zeros::<f64>(&s, 2, "y").unwrap();
        rt.par_loop(
            &kernel(&name, &src),
            &s,
            [x.arg(RW), x.arg(READ), x.arg(WRITE), y.arg(WRITE)],
        )
        .unwrap();
        let (xs, ys) = (x.to_vec().unwrap(), y.to_vec().unwrap());
        for e in 0..n {
            let x0 = init[2 * e] * 2.0;
            assert_eq!([xs[2 * e], xs[2 * e + 1]], [x0, 5.0], "{name} x[{e}]");
            assert_eq!([ys[2 * e], ys[2 * e + 1]], [x0 + 1.0, 5.0], "{name} y[{e}]");
        }
    }
}

#[test]
fn increments_of_a_kernel_with_its_own_pointers_land_through_rows_and_entries() {
    // INC through a row and an entry of the same map and directly, in a kernel that copies its
    // parameters (OpenCL's private copies): each copy starts at zero and is added back.
    let (n, to) = (1800, 25);
    let rt = rt_blocks(32, true);
    let a = rt.decl_set(n, "a").unwrap();
    let b = rt.decl_set(to, "b").unwrap();
    let vals = random_values(n * 2, to, 51);
    let m = rt.decl_map(&a, &b, 2, vals.clone(), "m").unwrap();
    let d = rt.decl_dat_zeros::<u32>(&b, 1, "d").unwrap();
    let k = kernel(
        "own_inc",
        "void own_inc(unsigned *r[2], unsigned *one) { unsigned *p = r[0]; unsigned *q = r[1]; unsigned *o = one; p[0] += 1; q[0] += 10; o[0] += 100; }",
    );
    rt.par_loop(&k, &a, [d.arg_row(&m, INC), d.arg_via(&m, 1, INC)])
        .unwrap();
    let mut want = vec![0u32; to];
    for e in 0..n {
        want[vals[e * 2] as usize] += 1;
        want[vals[e * 2 + 1] as usize] += 110;
    }
    assert_eq!(d.to_vec().unwrap(), want);
}

#[test]
fn a_kernel_with_its_own_pointers_takes_a_direct_increment_beside_args_through_a_map() {
    // OpenCL's private copies once skipped direct INC args in planned loops (taken for Global
    // reductions), so such a kernel did not compile on the staged scheme (found by op2-fuzz).
    let (n, to) = (700, 90);
    let rt = rt_blocks(32, true);
    let a = rt.decl_set(n, "a").unwrap();
    let b = rt.decl_set(to, "b").unwrap();
    let vals = random_values(n, to, 61);
    let m = rt.decl_map(&a, &b, 1, vals.clone(), "m").unwrap();
    let x: Vec<f64> = (0..to).map(|i| i as f64 * 0.5).collect();
    let d0 = rt.decl_dat(&b, 1, &x, "d0").unwrap();
    let init: Vec<f64> = (0..2 * n).map(|i| i as f64).collect();
    let d1 = rt.decl_dat(&a, 2, &init, "d1").unwrap();
    let k = kernel(
        "own_direct_inc",
        "void own_direct_inc(double *w, const double *r, double *inc) {
            double *p0 = w; const double *p1 = r; double *p2 = inc;
            p2[0] += p1[0]; p0[1] = 7.0; }",
    );
    rt.par_loop(
        &k,
        &a,
        [d1.arg(WRITE), d0.arg_via(&m, 0, READ), d1.arg(INC)],
    )
    .unwrap();
    let got = d1.to_vec().unwrap();
    for e in 0..n {
        let want = [init[2 * e] + x[vals[e] as usize], 7.0];
        assert_eq!([got[2 * e], got[2 * e + 1]], want, "element {e}");
    }
}
