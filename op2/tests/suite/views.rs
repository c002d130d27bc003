//! Args viewing one component of a Dat's rows (`Arg::component`, today's PyOP2's `DatView`):
//! direct, through a map entry, a whole row and an element buffer, each access, against values
//! computed here; the other components keep their values. `cargo xtask test` runs this file on
//! every backend.

use op2::{INC, Op2Error, READ, RW, WRITE};
use op2_test_support::{kernel, ring, rt};

#[test]
fn a_direct_view_writes_one_component_and_keeps_the_others() {
    let rt = rt();
    let n = 5000;
    let s = rt.decl_set(n, "s").unwrap();
    let init: Vec<f64> = (0..3 * n).map(|i| i as f64).collect();
    let x = rt.decl_dat(&s, 3, &init, "x").unwrap();
    // WRITE component 1 from component 2, read through a second view of the same Dat.
    let k = kernel(
        "copy_component",
        "void copy_component(double *y, const double *z) { y[0] = 2.0 * z[0]; }",
    );
    rt.par_loop(
        &k,
        &s,
        [x.arg(WRITE).component(1), x.arg(READ).component(2)],
    )
    .unwrap();
    let got = x.to_vec().unwrap();
    for e in 0..n {
        let row = &init[3 * e..3 * e + 3];
        assert_eq!(
            &got[3 * e..3 * e + 3],
            [row[0], 2.0 * row[2], row[2]],
            "{e}"
        );
    }
}

#[test]
fn views_through_map_entries_rows_and_buffers() {
    let rt = rt();
    let n = 3000;
    let (nodes, edges, m) = ring(&rt, n);
    let w: Vec<f64> = (0..n).map(|e| 1.0 + e as f64 * 0.5).collect();
    let weights = rt.decl_dat(&edges, 1, &w, "weights").unwrap();
    let start: Vec<f64> = (0..2 * n).map(|i| -(i as f64)).collect();
    let by_entry = rt.decl_dat(&nodes, 2, &start, "by_entry").unwrap();
    let by_buffer = rt.decl_dat(&nodes, 2, &start, "by_buffer").unwrap();
    // Component 1 of each end gets the edge's weight: through two map entries, and through
    // one packed buffer of the row's components (today's `view(op2.INC, map)`).
    let k_entry = kernel(
        "spread2",
        "void spread2(const double *w, double *a, double *b) { *a += *w; *b += 3.0 * *w; }",
    );
    rt.par_loop(
        &k_entry,
        &edges,
        [
            weights.arg(READ),
            by_entry.arg_via(&m, 0, INC).component(1),
            by_entry.arg_via(&m, 1, INC).component(1),
        ],
    )
    .unwrap();
    let k_buffer = kernel(
        "spread_packed",
        "void spread_packed(const double *w, double *ab) { ab[0] += *w; ab[1] += 3.0 * *w; }",
    );
    rt.par_loop(
        &k_buffer,
        &edges,
        [
            weights.arg(READ),
            by_buffer.arg_buffer(&m, INC).component(1),
        ],
    )
    .unwrap();
    let mut want = start.clone();
    for e in 0..n {
        want[2 * e + 1] += w[e];
        want[2 * ((e + 1) % n) + 1] += 3.0 * w[e];
    }
    assert_eq!(by_entry.to_vec().unwrap(), want);
    assert_eq!(by_buffer.to_vec().unwrap(), want);
    // Reading component 0 through a whole row (pointers) and a buffer (values).
    let sums = rt.decl_dat_zeros::<f64>(&edges, 2, "sums").unwrap();
    let k_read = kernel(
        "gather0",
        "void gather0(const double *r[2], const double *b, double *s) { s[0] = *r[0] - *r[1]; s[1] = b[0] + b[1]; }",
    );
    rt.par_loop(
        &k_read,
        &edges,
        [
            by_entry.arg_row(&m, READ).component(0),
            by_entry.arg_buffer(&m, READ).component(0),
            sums.arg(WRITE),
        ],
    )
    .unwrap();
    let got = sums.to_vec().unwrap();
    for e in 0..n {
        let (a, b) = (want[2 * e], want[2 * ((e + 1) % n)]);
        assert_eq!([got[2 * e], got[2 * e + 1]], [a - b, a + b], "{e}");
    }
}

#[test]
fn a_view_written_through_a_buffer_keeps_the_other_components() {
    let rt = rt();
    let n = 64;
    let (nodes, edges, m) = ring(&rt, n);
    let start: Vec<i32> = (0..3 * n as i32).collect();
    let x = rt.decl_dat(&nodes, 3, &start, "x").unwrap();
    // Each edge writes its index into component 2 of both ends (RW: later edges win alike on
    // every backend, since elements sharing a row run apart).
    let k = kernel(
        "stamp",
        "void stamp(int *v, const int *e) { v[0] = 7; v[1] = 7; (void)e; }",
    );
    let ids = rt
        .decl_dat(&edges, 1, (0..n as i32).collect::<Vec<_>>(), "ids")
        .unwrap();
    rt.par_loop(
        &k,
        &edges,
        [x.arg_buffer(&m, WRITE).component(2), ids.arg(READ)],
    )
    .unwrap();
    let got = x.to_vec().unwrap();
    for v in 0..n {
        let row = &start[3 * v..3 * v + 3];
        assert_eq!(&got[3 * v..3 * v + 3], [row[0], row[1], 7], "{v}");
    }
}

#[test]
fn views_past_the_dim_or_of_globals_are_refused() {
    let rt = rt();
    let s = rt.decl_set(4, "s").unwrap();
    let x = rt.decl_dat_zeros::<f64>(&s, 2, "x").unwrap();
    let g = rt.decl_global(2, &[0.0f64; 2], "g").unwrap();
    let k = kernel("one", "void one(double *x) { *x = 1.0; }");
    for arg in [x.arg(RW).component(2), g.arg(INC).component(0)] {
        match rt.par_loop(&k, &s, [arg]) {
            Err(e @ Op2Error::InvalidArg { .. }) => assert!(e.to_string().contains("component")),
            other => panic!("expected a refused view, got {other:?}"),
        }
    }
}
