//! The lazy trace: loops run when their results are needed, and only those; eager mode
//! (`OP2_LAZY=0` or `lazy(false)`) gives the same results.

use op2::{INC, READ, RW, WRITE};
use op2_test_support::{backend, kernel as k, rt_lazy, run_child};

#[test]
fn global_is_final_only_after_forcing() {
    let rt = rt_lazy(true);
    let s = rt.decl_set(100, "s").unwrap();
    let x = rt.decl_dat(&s, 1, vec![2.0f64; 100], "x").unwrap();
    let g = rt.decl_global(1, &[0.0f64], "g").unwrap();
    let sum = k("sum", "void sum(const double *x, double *g) { *g += *x; }");
    rt.par_loop(&sum, &s, [x.arg(READ), g.arg(INC)]).unwrap();
    rt.par_loop(&sum, &s, [x.arg(READ), g.arg(INC)]).unwrap();
    assert_eq!(
        (rt.pending_loops(), rt.executed_loops()),
        (2, 0),
        "nothing runs at par_loop"
    );
    assert_eq!(g.value().unwrap(), [400.0]);
    assert_eq!((rt.pending_loops(), rt.executed_loops()), (0, 2));
}

#[test]
fn host_read_forces_only_what_it_needs() {
    let rt = rt_lazy(true);
    let s = rt.decl_set(10, "s").unwrap();
    let a = rt.decl_dat_zeros::<i32>(&s, 1, "a").unwrap();
    let b = rt.decl_dat_zeros::<i32>(&s, 1, "b").unwrap();
    let c = rt.decl_dat_zeros::<i32>(&s, 1, "c").unwrap();
    let set1 = k("set1", "void set1(int *a) { *a = 1; }");
    let set2 = k("set2", "void set2(int *a) { *a = 2; }");
    let copy = k("copy", "void copy(const int *a, int *c) { *c = *a + 10; }");
    rt.par_loop(&set1, &s, [a.arg(WRITE)]).unwrap(); // A: writes a
    rt.par_loop(&set2, &s, [b.arg(WRITE)]).unwrap(); // B: writes b
    rt.par_loop(&copy, &s, [a.arg(READ), c.arg(WRITE)]).unwrap(); // C: a -> c

    assert!(b.data_ro().unwrap().iter().all(|&v| v == 2));
    assert_eq!(
        (rt.executed_loops(), rt.pending_loops()),
        (1, 2),
        "reading b runs B only"
    );

    assert!(c.data_ro().unwrap().iter().all(|&v| v == 11));
    assert_eq!(
        (rt.executed_loops(), rt.pending_loops()),
        (3, 0),
        "reading c runs A then C"
    );
}

/// A lazy runtime with one pending loop copying `x` (all ones) into `y`.
fn pending_copy() -> (op2::Runtime, op2::Dat<f64>, op2::Dat<f64>) {
    let rt = rt_lazy(true);
    let s = rt.decl_set(5, "s").unwrap();
    let x = rt.decl_dat(&s, 1, [1.0f64; 5], "x").unwrap();
    let y = rt.decl_dat_zeros::<f64>(&s, 1, "y").unwrap();
    let copy = k(
        "copyd",
        "void copyd(const double *x, double *y) { *y = *x; }",
    );
    rt.par_loop(&copy, &s, [x.arg(READ), y.arg(WRITE)]).unwrap();
    (rt, x, y)
}

#[test]
fn host_write_runs_earlier_readers_first() {
    let (rt, x, y) = pending_copy();
    // Writing x on the host must not change what the pending loop reads.
    x.data().unwrap().fill(9.0);
    assert_eq!(rt.pending_loops(), 0);
    assert!(y.data_ro().unwrap().iter().all(|&v| v == 1.0));
}

#[test]
fn reading_a_dat_nobody_writes_runs_nothing() {
    let (rt, x, _y) = pending_copy();
    assert_eq!(x.data_ro().unwrap()[0], 1.0);
    assert_eq!(
        rt.pending_loops(),
        1,
        "reading an input does not force its readers"
    );
}

#[test]
fn flush_runs_everything_in_order() {
    let rt = rt_lazy(true);
    let s = rt.decl_set(3, "s").unwrap();
    let x = rt.decl_dat(&s, 1, [1i64; 3], "x").unwrap();
    let double = k("dbl", "void dbl(int64_t *x) { *x *= 2; }");
    let plus = k("plus", "void plus(int64_t *x) { *x += 3; }");
    rt.par_loop(&double, &s, [x.arg(RW)]).unwrap();
    rt.par_loop(&plus, &s, [x.arg(RW)]).unwrap();
    rt.par_loop(&double, &s, [x.arg(RW)]).unwrap();
    rt.flush().unwrap();
    assert_eq!(rt.pending_loops(), 0);
    assert_eq!(&*x.data_ro().unwrap(), &[10, 10, 10]); // ((1*2)+3)*2
}

/// A small program of chained direct and indirect loops; returns every output.
fn program(rt: &op2::Runtime) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let n = 50;
    let nodes = rt.decl_set(n, "nodes").unwrap();
    let edges = rt.decl_set(n - 1, "edges").unwrap();
    let e2n = rt
        .decl_map(
            &edges,
            &nodes,
            2,
            (0..n as i32 - 1)
                .flat_map(|i| [i, i + 1])
                .collect::<Vec<_>>(),
            "e2n",
        )
        .unwrap();
    let u = rt
        .decl_dat(
            &nodes,
            1,
            (0..n).map(|i| (i as f64).sin()).collect::<Vec<_>>(),
            "u",
        )
        .unwrap();
    let flux = rt.decl_dat_zeros::<f64>(&edges, 1, "flux").unwrap();
    let res = rt.decl_dat_zeros::<f64>(&nodes, 1, "res").unwrap();
    let norm = rt.decl_global(1, &[0.0f64], "norm").unwrap();
    let grad = k(
        "grad",
        "void grad(double *f, double *u[2]) { *f = u[1][0] - u[0][0]; }",
    );
    let spread = k(
        "spread",
        "void spread(const double *f, double *a, double *b) { *a -= *f; *b += *f; }",
    );
    let step = k(
        "step",
        "void step(double *u, const double *r, double *n) { *u += 0.1 * *r; *n += *r * *r; }",
    );
    for _ in 0..5 {
        rt.par_loop(&grad, &edges, [flux.arg(WRITE), u.arg_row(&e2n, READ)])
            .unwrap();
        rt.par_loop(
            &spread,
            &edges,
            [
                flux.arg(READ),
                res.arg_via(&e2n, 0, INC),
                res.arg_via(&e2n, 1, INC),
            ],
        )
        .unwrap();
        rt.par_loop(&step, &nodes, [u.arg(RW), res.arg(READ), norm.arg(INC)])
            .unwrap();
    }
    (
        u.to_vec().unwrap(),
        res.to_vec().unwrap(),
        norm.value().unwrap(),
    )
}

#[test]
fn eager_and_lazy_give_identical_results() {
    let lazy = program(&rt_lazy(true));
    let eager_rt = rt_lazy(false);
    let eager = program(&eager_rt);
    assert_eq!(lazy, eager);
    assert_eq!(eager_rt.pending_loops(), 0);
}

/// Run by `op2_lazy_0_in_the_environment` in a child process with `OP2_LAZY=0`.
#[test]
#[ignore = "runs in a child process with OP2_LAZY=0"]
fn child_with_op2_lazy_0() {
    let rt = op2::init().unwrap();
    assert!(!rt.config().lazy, "OP2_LAZY=0 must make the runtime eager");
    let s = rt.decl_set(4, "s").unwrap();
    let x = rt.decl_dat_zeros::<f64>(&s, 1, "x").unwrap();
    rt.par_loop(
        &k("one", "void one(double *x) { *x = 1.0; }"),
        &s,
        [x.arg(WRITE)],
    )
    .unwrap();
    assert_eq!(
        (rt.pending_loops(), rt.executed_loops()),
        (0, 1),
        "eager runs at par_loop"
    );
    let lazy = program(&rt_lazy(true));
    assert_eq!(program(&rt), lazy);
    println!("CHILD-EAGER-OK");
}

#[test]
fn op2_lazy_0_in_the_environment() {
    let backend = backend();
    let out = run_child(
        "laziness::child_with_op2_lazy_0",
        &[("OP2_LAZY", "0"), ("OP2_BACKEND", backend.as_str())],
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("CHILD-EAGER-OK"));
}
