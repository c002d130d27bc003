//! Regressions for defects found by probing the public API as a new user would (repeated args,
//! names that collide with generated code, kernel array bounds, large private data, constants of
//! several runtimes, handles outliving their runtime, failed flushes). Expected values are computed
//! here independently; `cargo xtask test` runs this file on every backend.

use op2::{INC, Kernel, MAX, MIN, Op2Error, READ, RW, WRITE};
use op2_test_support::{backend, kernel, rt};

const N: usize = 1000;

// ---- repeated args: every arg is its own contribution --------------------------------------

#[test]
fn a_global_passed_twice_with_inc_counts_both_contributions() {
    let rt = rt();
    let s = rt.decl_set(N, "s").unwrap();
    let init: Vec<i64> = (0..N as i64).collect();
    let x = rt.decl_dat(&s, 1, &init, "x").unwrap();
    let g = rt.decl_global(2, &[5i64, -3], "g").unwrap();
    let k = kernel(
        "twice",
        "void twice(const int64_t *x, int64_t *a, int64_t *b) { a[0] += *x; a[1] += 1; b[0] += 2 * *x; b[1] += 10; }",
    );
    rt.par_loop(&k, &s, [x.arg(READ), g.arg(INC), g.arg(INC)])
        .unwrap();
    let sum: i64 = init.iter().sum();
    assert_eq!(g.value().unwrap(), [5 + 3 * sum, -3 + 11 * N as i64]);
}

#[test]
fn a_float_global_passed_twice_with_inc_counts_both_contributions() {
    let rt = rt();
    let s = rt.decl_set(N, "s").unwrap();
    let g = rt.decl_global(1, &[0.5f64], "g").unwrap();
    let k = kernel(
        "twice_f",
        "void twice_f(double *a, double *b) { *a += 1.0; *b += 0.25; }",
    );
    rt.par_loop(&k, &s, [g.arg(INC), g.arg(INC)]).unwrap();
    assert_eq!(g.value().unwrap(), [0.5 + 1.25 * N as f64]);
}

#[test]
fn a_global_passed_twice_with_min_and_max_combines_both() {
    let rt = rt();
    let s = rt.decl_set(N, "s").unwrap();
    let init: Vec<i32> = (0..N as i32).map(|i| (i * 37) % 1001 - 500).collect();
    let x = rt.decl_dat(&s, 1, &init, "x").unwrap();
    let lo = rt.decl_global(1, &[0i32], "lo").unwrap();
    let hi = rt.decl_global(1, &[0i32], "hi").unwrap();
    // The first arg sees x, the second x / 2: the first holds the extreme, so a backend that
    // keeps only the last arg's result is caught.
    let kmin = kernel(
        "min2",
        "void min2(const int *x, int *a, int *b) { if (*x < *a) *a = *x; if (*x / 2 < *b) *b = *x / 2; }",
    );
    let kmax = kernel(
        "max2",
        "void max2(const int *x, int *a, int *b) { if (*x > *a) *a = *x; if (*x / 2 > *b) *b = *x / 2; }",
    );
    rt.par_loop(&kmin, &s, [x.arg(READ), lo.arg(MIN), lo.arg(MIN)])
        .unwrap();
    rt.par_loop(&kmax, &s, [x.arg(READ), hi.arg(MAX), hi.arg(MAX)])
        .unwrap();
    let both: Vec<i32> = init.iter().flat_map(|&v| [v, v / 2]).collect();
    assert_eq!(lo.value().unwrap(), [*both.iter().min().unwrap().min(&0)]);
    assert_eq!(hi.value().unwrap(), [*both.iter().max().unwrap().max(&0)]);
}

#[test]
fn a_global_read_and_incremented_in_one_loop_reads_its_value_before_the_loop() {
    let rt = rt();
    let s = rt.decl_set(N, "s").unwrap();
    let g = rt.decl_global(1, &[3i32], "g").unwrap();
    let k = kernel("ri", "void ri(const int *r, int *a) { *a += *r; }");
    rt.par_loop(&k, &s, [g.arg(READ), g.arg(INC)]).unwrap();
    assert_eq!(g.value().unwrap(), [3 + 3 * N as i32]);
}

#[test]
fn a_dat_passed_twice_directly_with_inc_counts_both_contributions() {
    let rt = rt();
    let s = rt.decl_set(N, "s").unwrap();
    let init: Vec<f64> = (0..N).map(|i| i as f64).collect();
    let x = rt.decl_dat(&s, 1, &init, "x").unwrap();
    let k = kernel(
        "inc2",
        "void inc2(double *a, double *b) { *a += 1.0; *b += 2.0; }",
    );
    rt.par_loop(&k, &s, [x.arg(INC), x.arg(INC)]).unwrap();
    let got = x.to_vec().unwrap();
    for (i, v) in got.iter().enumerate() {
        assert_eq!(*v, i as f64 + 3.0, "element {i}");
    }
}

#[test]
fn a_dat_passed_twice_with_inc_counts_both_when_the_kernel_keeps_its_own_pointers() {
    // A kernel that copies its parameters into pointers of its own: OpenCL C 1.2 compiles it only
    // with private copies of the args, which must still add both contributions.
    let rt = rt();
    let s = rt.decl_set(N, "s").unwrap();
    let x = rt.decl_dat(&s, 1, vec![1.0f64; N], "x").unwrap();
    let edges = rt.decl_set(N - 1, "edges").unwrap();
    let e2n: Vec<i32> = (0..N as i32 - 1).flat_map(|i| [i, i + 1]).collect();
    let m = rt.decl_map(&edges, &s, 2, e2n, "e2n").unwrap();
    let k = kernel(
        "own_ptrs",
        "void own_ptrs(double *a, double *b) { double *p = a; double *q = b; *p += 1.0; *q += 2.0; }",
    );
    rt.par_loop(&k, &s, [x.arg(INC), x.arg(INC)]).unwrap();
    assert!(x.to_vec().unwrap().iter().all(|&v| v == 4.0));
    let y = rt.decl_dat_zeros::<f64>(&s, 1, "y").unwrap();
    let kr = kernel(
        "own_rows",
        "void own_rows(double **a, double *b) { double *p = a[0]; double *q = a[1]; *p += 1.0; *q += 10.0; *b += 100.0; }",
    );
    rt.par_loop(&kr, &edges, [y.arg_row(&m, INC), y.arg_via(&m, 0, INC)])
        .unwrap();
    let got = y.to_vec().unwrap();
    for (n, v) in got.iter().enumerate() {
        let left = if n < N - 1 { 101.0 } else { 0.0 };
        let right = if n > 0 { 10.0 } else { 0.0 };
        assert_eq!(*v, left + right, "node {n}");
    }
}

#[test]
fn a_dat_incremented_twice_through_one_map_entry_counts_both_contributions() {
    let rt = rt();
    let edges = rt.decl_set(N, "edges").unwrap();
    let nodes = rt.decl_set(N + 1, "nodes").unwrap();
    let e2n: Vec<i32> = (0..N as i32).flat_map(|i| [i, i + 1]).collect();
    let m = rt.decl_map(&edges, &nodes, 2, e2n, "e2n").unwrap();
    let x = rt.decl_dat_zeros::<u32>(&nodes, 1, "x").unwrap();
    let k = kernel(
        "inc_entry",
        "void inc_entry(unsigned *a, unsigned *b, unsigned *c) { *a += 1; *b += 10; *c += 100; }",
    );
    rt.par_loop(
        &k,
        &edges,
        [
            x.arg_via(&m, 0, INC),
            x.arg_via(&m, 0, INC),
            x.arg_via(&m, 1, INC),
        ],
    )
    .unwrap();
    let got = x.to_vec().unwrap();
    for (n, v) in got.iter().enumerate() {
        let left = if n < N { 11 } else { 0 };
        let right = if n > 0 { 100 } else { 0 };
        assert_eq!(*v, left + right, "node {n}");
    }
}

// ---- names: nothing the generator introduces can collide with a user's name ----------------

/// Names of locals, parameters and helpers the generated wrappers once used.
const ONCE_GENERATED: &[&str] = &[
    "start",
    "end",
    "args",
    "maps",
    "consts",
    "n",
    "first",
    "last",
    "len",
    "lo",
    "hi",
    "nt",
    "tid",
    "blk",
    "b",
    "c",
    "k",
    "t",
    "nthreads",
    "ncolours",
    "colour_offsets",
    "block_map",
    "block_offsets",
    "block_lengths",
    "arg0",
    "arg1",
    "arg0_l",
    "arg1_vec",
    "map0",
];

#[test]
fn consts_named_like_generated_locals_keep_their_values() {
    let rt = rt();
    let s = rt.decl_set(N, "s").unwrap();
    let consts: Vec<op2::Const<i32>> = ONCE_GENERATED
        .iter()
        .enumerate()
        .map(|(i, name)| rt.decl_const(1, &[i as i32 + 1], name).unwrap())
        .collect();
    let sum = ONCE_GENERATED.join(" + ");
    let k = kernel(
        "uses_all",
        &format!("void uses_all(int *x) {{ *x = {sum}; }}"),
    );
    let x = rt.decl_dat_zeros::<i32>(&s, 1, "x").unwrap();
    rt.par_loop(&k, &s, [x.arg(WRITE)]).unwrap();
    let expected: i32 = (1..=consts.len() as i32).sum();
    assert!(
        x.to_vec().unwrap().iter().all(|&v| v == expected),
        "every element is {expected}"
    );
}

#[test]
fn kernels_named_like_generated_locals_compile_and_run() {
    let rt = rt();
    let edges = rt.decl_set(N, "edges").unwrap();
    let nodes = rt.decl_set(N + 1, "nodes").unwrap();
    let e2n: Vec<i32> = (0..N as i32).flat_map(|i| [i, i + 1]).collect();
    let m = rt.decl_map(&edges, &nodes, 2, e2n, "e2n").unwrap();
    let g = rt.decl_global(1, &[0i64], "g").unwrap();
    for (i, name) in ONCE_GENERATED.iter().enumerate() {
        let x = rt.decl_dat_zeros::<i64>(&nodes, 1, "x").unwrap();
        let k = kernel(
            name,
            &format!(
                "void {name}(int64_t *v[2], int64_t *g) {{ *v[0] += 1; *v[1] += 2; *g += 1; }}"
            ),
        );
        rt.par_loop(&k, &edges, [x.arg_row(&m, INC), g.arg(INC)])
            .unwrap_or_else(|e| panic!("kernel `{name}`: {e}"));
        let got = x.to_vec().unwrap();
        assert_eq!(got[0], 1, "kernel `{name}`");
        assert_eq!(got[N], 2, "kernel `{name}`");
        assert!(got[1..N].iter().all(|&v| v == 3), "kernel `{name}`");
        assert_eq!(g.value().unwrap(), [(i as i64 + 1) * N as i64]);
    }
}

#[test]
fn reserved_names_are_refused_with_a_typed_error() {
    let rt = rt();
    for name in [
        "op2_x",
        "OP2_ROUND_UP",
        "Op2_stub",
        "int",
        "double",
        "restrict",
        "__x",
        "_Bool",
        "size_t",
    ] {
        assert!(
            matches!(
                rt.decl_const(1, &[1.0f64], name),
                Err(Op2Error::ReservedIdentifier { .. })
            ),
            "const `{name}`"
        );
        assert!(
            matches!(
                Kernel::new(name, &format!("void {name}(double *x) {{ }}")),
                Err(Op2Error::ReservedIdentifier { .. })
            ),
            "kernel `{name}`"
        );
    }
}

/// Names that headers, dialects or generated stubs use for something else: users may still pick
/// them, since the generator renames them around the user's code.
const TAKEN_ELSEWHERE: &[&str] = &[
    "y0",
    "j1",
    "free",
    "memcpy",
    "remove",
    "min",
    "max",
    "barrier",
    "kernel",
    "local",
    "global",
    "constant",
    "new",
    "class",
    "this",
    "threadIdx",
    "blockDim",
    "atomicAdd",
    "uint",
    "M_PI",
    "INFINITY",
    "NAN",
    "sqrt2",
    "omp_x",
];

#[test]
fn consts_and_kernels_named_like_library_names_work() {
    let rt = rt();
    let s = rt.decl_set(100, "s").unwrap();
    let consts: Vec<op2::Const<f64>> = TAKEN_ELSEWHERE
        .iter()
        .enumerate()
        .map(|(i, name)| rt.decl_const(1, &[i as f64], name).unwrap())
        .collect();
    let sum = TAKEN_ELSEWHERE.join(" + ");
    let x = rt.decl_dat_zeros::<f64>(&s, 1, "x").unwrap();
    let k = kernel("all", &format!("void all(double *x) {{ *x = {sum}; }}"));
    rt.par_loop(&k, &s, [x.arg(WRITE)]).unwrap();
    let expected: f64 = (0..consts.len()).map(|i| i as f64).sum();
    assert!(x.to_vec().unwrap().iter().all(|&v| v == expected));
    // Kernels of those names, with a Const of another such name in them.
    let rt = self::rt();
    let s = rt.decl_set(10, "s").unwrap();
    let x = rt.decl_dat_zeros::<f64>(&s, 1, "x").unwrap();
    let _c = rt.decl_const(1, &[2.0f64], "y1").unwrap();
    for name in TAKEN_ELSEWHERE {
        let k = kernel(name, &format!("void {name}(double *x) {{ *x += y1; }}"));
        rt.par_loop(&k, &s, [x.arg(RW)])
            .unwrap_or_else(|e| panic!("kernel `{name}`: {e}"));
    }
    let want = 2.0 * TAKEN_ELSEWHERE.len() as f64;
    assert!(x.to_vec().unwrap().iter().all(|&v| v == want));
}

#[test]
fn a_const_named_like_the_kernel_is_a_typed_error() {
    let rt = rt();
    let s = rt.decl_set(4, "s").unwrap();
    let x = rt.decl_dat_zeros::<f64>(&s, 1, "x").unwrap();
    let _c = rt.decl_const(1, &[1.0f64], "same").unwrap();
    let k = kernel("same", "void same(double *x) { *x = 1.0; }");
    assert!(matches!(
        rt.par_loop(&k, &s, [x.arg(WRITE)]),
        Err(Op2Error::NameClash { .. })
    ));
}

#[test]
fn kernel_sources_may_not_use_the_generated_prefix() {
    assert!(matches!(
        Kernel::new(
            "k",
            "static int op2_helper(int a) { return a; }\nvoid k(int *x) { *x = op2_helper(1); }"
        ),
        Err(Op2Error::ReservedIdentifier { .. })
    ));
}

// ---- kernel array bounds are checked against arity and dim ----------------------------------

#[test]
fn whole_row_bound_must_match_the_arity() {
    let rt = rt();
    let cells = rt.decl_set(4, "cells").unwrap();
    let nodes = rt.decl_set(6, "nodes").unwrap();
    let m = rt
        .decl_map(
            &cells,
            &nodes,
            3,
            (0..12).map(|i| i % 6).collect::<Vec<_>>(),
            "c2n",
        )
        .unwrap();
    let x = rt.decl_dat_zeros::<f64>(&nodes, 1, "x").unwrap();
    let y = rt.decl_dat_zeros::<f64>(&cells, 1, "y").unwrap();
    let k = kernel(
        "four",
        "void four(const double *x[4], double *y) { *y = x[0][0] + x[3][0]; }",
    );
    match rt.par_loop(&k, &cells, [x.arg_row(&m, READ), y.arg(WRITE)]) {
        Err(Op2Error::KernelParamBound {
            arg: 0,
            declared: 4,
            expected: 3,
            ..
        }) => {}
        other => panic!("expected KernelParamBound, got {other:?}"),
    }
    // The matching bound, and no bound, are fine.
    let ok3 = kernel(
        "three",
        "void three(const double *x[3], double *y) { *y = x[0][0] + x[2][0]; }",
    );
    rt.par_loop(&ok3, &cells, [x.arg_row(&m, READ), y.arg(WRITE)])
        .unwrap();
    let ok_any = kernel(
        "any",
        "void any(const double **x, double *y) { *y = x[0][0]; }",
    );
    rt.par_loop(&ok_any, &cells, [x.arg_row(&m, READ), y.arg(WRITE)])
        .unwrap();
    rt.flush().unwrap();
}

#[test]
fn declared_array_bound_must_match_the_dim() {
    let rt = rt();
    let s = rt.decl_set(4, "s").unwrap();
    let x = rt.decl_dat_zeros::<f64>(&s, 2, "x").unwrap();
    let g = rt.decl_global(3, &[0.0f64; 3], "g").unwrap();
    let k = kernel("d3", "void d3(double x[3]) { x[2] = 1.0; }");
    assert!(matches!(
        rt.par_loop(&k, &s, [x.arg(WRITE)]),
        Err(Op2Error::KernelParamBound {
            arg: 0,
            declared: 3,
            expected: 2,
            ..
        })
    ));
    let kg = kernel("g2", "void g2(double g[2]) { g[1] += 1.0; }");
    assert!(matches!(
        rt.par_loop(&kg, &s, [g.arg(INC)]),
        Err(Op2Error::KernelParamBound {
            declared: 2,
            expected: 3,
            ..
        })
    ));
    let ok = kernel("d2", "void d2(double x[2]) { x[1] = 1.0; }");
    rt.par_loop(&ok, &s, [x.arg(WRITE)]).unwrap();
    assert!(x.to_vec().unwrap().chunks(2).all(|r| r[1] == 1.0));
}

#[test]
fn a_two_dimensional_array_is_not_an_array_of_pointers() {
    let rt = rt();
    let cells = rt.decl_set(2, "cells").unwrap();
    let nodes = rt.decl_set(3, "nodes").unwrap();
    let m = rt
        .decl_map(&cells, &nodes, 2, vec![0, 1, 1, 2], "c2n")
        .unwrap();
    let x = rt.decl_dat_zeros::<f64>(&nodes, 1, "x").unwrap();
    let k = kernel("grid", "void grid(double x[2][1]) { x[1][0] += 1.0; }");
    assert!(matches!(
        rt.par_loop(&k, &cells, [x.arg_row(&m, INC)]),
        Err(Op2Error::KernelParamShape { arg: 0, .. })
    ));
}

// ---- large private data: a clear error or a smaller work-group, never a crash ---------------

#[test]
fn wide_whole_row_increments_run_on_every_backend() {
    let rt = rt();
    let arity = 8;
    let dim = 200;
    let cells = rt.decl_set(64, "cells").unwrap();
    let nodes = rt.decl_set(72, "nodes").unwrap();
    let c2n: Vec<i32> = (0..64 * arity)
        .map(|i| ((i / arity) + i % arity) as i32)
        .collect();
    let m = rt
        .decl_map(&cells, &nodes, arity, c2n.clone(), "c2n")
        .unwrap();
    let x = rt.decl_dat_zeros::<f64>(&nodes, dim, "x").unwrap();
    let k = kernel(
        "wide",
        &format!(
            "void wide(double *x[{arity}]) {{ for (int j = 0; j < {arity}; j++) for (int d = 0; d < {dim}; d++) x[j][d] += 1.0 + d; }}"
        ),
    );
    rt.par_loop(&k, &cells, [x.arg_row(&m, INC)]).unwrap();
    let got = x.to_vec().unwrap();
    let mut count = vec![0usize; 72];
    for &n in &c2n {
        count[n as usize] += 1;
    }
    for n in 0..72 {
        for d in 0..dim {
            assert_eq!(
                got[n * dim + d],
                (count[n] * (1 + d)) as f64,
                "node {n} d {d}"
            );
        }
    }
}

#[test]
fn wide_single_entry_increments_run_on_every_backend() {
    let rt = rt();
    let dim = 1500;
    let edges = rt.decl_set(40, "edges").unwrap();
    let nodes = rt.decl_set(41, "nodes").unwrap();
    let e2n: Vec<i32> = (0..40).flat_map(|i| [i, i + 1]).collect();
    let m = rt.decl_map(&edges, &nodes, 2, e2n, "e2n").unwrap();
    let x = rt.decl_dat_zeros::<f32>(&nodes, dim, "x").unwrap();
    let k = kernel(
        "wide1",
        &format!(
            "void wide1(float *a, float *b) {{ for (int d = 0; d < {dim}; d++) {{ a[d] += 1.0f; b[d] += 2.0f; }} }}"
        ),
    );
    rt.par_loop(&k, &edges, [x.arg_via(&m, 0, INC), x.arg_via(&m, 1, INC)])
        .unwrap();
    let got = x.to_vec().unwrap();
    for n in 0..41 {
        let want = if n < 40 { 1.0 } else { 0.0 } + if n > 0 { 2.0 } else { 0.0 };
        assert!(
            got[n * dim..(n + 1) * dim].iter().all(|&v| v == want),
            "node {n}"
        );
    }
}

// ---- constants belong to their runtime ------------------------------------------------------

#[test]
fn two_runtimes_with_the_same_kernel_keep_their_own_consts() {
    let src = "void scale_by(double *x) { *x = factor * (*x + 1.0); }";
    // Each runtime keeps its kernel object, so a backend that skips setting an unchanged value
    // reuses its program; the runs alternate, so shared storage would show the other's value.
    let setup = |value: f64| {
        let rt = rt();
        let c = rt.decl_const(1, &[value], "factor").unwrap();
        (rt, c, kernel("scale_by", src))
    };
    let (a, b) = (setup(2.0), setup(3.0));
    for round in 0..3 {
        for ((rt, _c, k), value) in [(&a, 2.0), (&b, 3.0)] {
            let s = rt.decl_set(10, "s").unwrap();
            let x = rt.decl_dat_zeros::<f64>(&s, 1, "x").unwrap();
            rt.par_loop(k, &s, [x.arg(RW)]).unwrap();
            let got = x.to_vec().unwrap();
            assert!(
                got.iter().all(|&v| v == value),
                "round {round}: {got:?} != {value}"
            );
        }
    }
}

#[test]
fn two_kernel_objects_with_one_source_see_the_current_const() {
    let rt = rt();
    let s = rt.decl_set(10, "s").unwrap();
    let x = rt.decl_dat_zeros::<i32>(&s, 1, "x").unwrap();
    let c = rt.decl_const(1, &[1i32], "cval").unwrap();
    let src = "void put(int *x) { *x = cval; }";
    let (k1, k2) = (kernel("put", src), kernel("put", src));
    // Each kernel object sees the same value twice in a row, with the other's run in between.
    for (k, v) in [(&k1, 1), (&k2, 2), (&k1, 1), (&k2, 2), (&k1, 1)] {
        c.set_value(&[v]).unwrap();
        rt.par_loop(k, &s, [x.arg(WRITE)]).unwrap();
        assert!(x.to_vec().unwrap().iter().all(|&e| e == v), "value {v}");
    }
}

// ---- handles outliving their runtime ---------------------------------------------------------

#[test]
fn a_dat_read_after_its_runtime_was_dropped_holds_the_loops_results() {
    let (x, g) = {
        let rt = rt();
        let s = rt.decl_set(N, "s").unwrap();
        let x = rt.decl_dat_zeros::<f64>(&s, 1, "x").unwrap();
        let g = rt.decl_global(1, &[0.0f64], "g").unwrap();
        let k = kernel(
            "fill",
            "void fill(double *x, double *g) { *x = 7.0; *g += 1.0; }",
        );
        rt.par_loop(&k, &s, [x.arg(WRITE), g.arg(INC)]).unwrap();
        // Also data the device computed in an earlier, already forced loop.
        rt.flush().unwrap();
        let k2 = kernel("add", "void add(double *x) { *x += 1.0; }");
        rt.par_loop(&k2, &s, [x.arg(RW)]).unwrap();
        (x, g)
    };
    assert!(x.to_vec().unwrap().iter().all(|&v| v == 8.0));
    assert_eq!(g.value().unwrap(), [N as f64]);
    // Writing through a handle whose runtime is gone changes only the host copy, and is allowed.
    x.data().unwrap()[0] = 1.0;
    assert_eq!(x.to_vec().unwrap()[0], 1.0);
}

// ---- a failed flush keeps every loop it could not run ---------------------------------------

#[test]
fn a_failed_flush_runs_what_it_can_and_keeps_the_rest_pending() {
    let rt = rt();
    let s = rt.decl_set(100, "s").unwrap();
    let x = rt.decl_dat_zeros::<i32>(&s, 1, "x").unwrap();
    let y = rt.decl_dat_zeros::<i32>(&s, 1, "y").unwrap();
    let z = rt.decl_dat_zeros::<i32>(&s, 1, "z").unwrap();
    let set = kernel("set", "void set(int *v) { *v = 5; }");
    let copy = kernel("copy", "void copy(const int *a, int *b) { *b = *a + 1; }");
    let guard = y.data_ro().unwrap();
    rt.par_loop(&set, &s, [y.arg(WRITE)]).unwrap(); // needs y: fails while the guard lives
    rt.par_loop(&copy, &s, [y.arg(READ), z.arg(WRITE)]).unwrap(); // depends on the failed loop
    rt.par_loop(&set, &s, [x.arg(WRITE)]).unwrap(); // unrelated: runs
    assert!(matches!(rt.flush(), Err(Op2Error::DataBorrowed { .. })));
    assert_eq!(
        rt.pending_loops(),
        2,
        "the failed loop and its dependant wait"
    );
    drop(guard);
    assert!(x.to_vec().unwrap().iter().all(|&v| v == 5));
    assert!(z.to_vec().unwrap().iter().all(|&v| v == 6));
    assert!(y.to_vec().unwrap().iter().all(|&v| v == 5));
    assert_eq!(rt.pending_loops(), 0);
}

#[test]
fn a_failed_host_read_keeps_the_loops_it_needed() {
    let rt = rt();
    let s = rt.decl_set(100, "s").unwrap();
    let x = rt.decl_dat_zeros::<i32>(&s, 1, "x").unwrap();
    let y = rt.decl_dat_zeros::<i32>(&s, 1, "y").unwrap();
    let guard = x.data_ro().unwrap();
    let k = kernel("xy", "void xy(int *x, int *y) { *x = 1; *y = 2; }");
    rt.par_loop(&k, &s, [x.arg(WRITE), y.arg(WRITE)]).unwrap();
    assert!(matches!(y.to_vec(), Err(Op2Error::DataBorrowed { .. })));
    assert_eq!(rt.pending_loops(), 1);
    drop(guard);
    assert!(y.to_vec().unwrap().iter().all(|&v| v == 2));
    assert!(x.to_vec().unwrap().iter().all(|&v| v == 1));
}

#[test]
fn runtime_is_debug() {
    let rt = rt();
    let text = format!("{rt:?}");
    assert!(text.contains(&backend()), "{text}");
    let err = op2::builder()
        .backend("no-such-backend")
        .build()
        .unwrap_err();
    assert!(matches!(err, Op2Error::UnknownBackend { .. }));
}

#[test]
fn runtimes_on_two_threads_with_one_kernel_source_keep_their_own_consts() {
    let src = "void affine(double *x) { *x = offset + 0.5 * *x; }";
    let worker = |value: f64| {
        move || {
            let rt = rt();
            let _c = rt.decl_const(1, &[value], "offset").unwrap();
            let s = rt.decl_set(20_000, "s").unwrap();
            let x = rt.decl_dat_zeros::<f64>(&s, 1, "x").unwrap();
            let k = kernel("affine", src);
            for round in 0..40 {
                x.data().unwrap().fill(0.0);
                rt.par_loop(&k, &s, [x.arg(RW)]).unwrap();
                let got = x.to_vec().unwrap();
                assert!(
                    got.iter().all(|&v| v == value),
                    "round {round}: a loop saw another runtime's const"
                );
            }
        }
    };
    let a = std::thread::spawn(worker(1.0));
    let b = std::thread::spawn(worker(2.0));
    a.join().unwrap();
    b.join().unwrap();
}

#[test]
fn a_global_of_huge_dim_reduces_or_is_refused_never_a_crash() {
    // A histogram: each element adds one to its own bin of a 400,000-bin Global (3.2 MB of
    // doubles, more than a thread's stack), and lowers every bin of a MIN Global.
    let rt = rt();
    let bins = 400_000;
    let s = rt.decl_set(1000, "s").unwrap();
    let idx: Vec<i32> = (0..1000).map(|i| (i * 397) % bins as i32).collect();
    let x = rt.decl_dat(&s, 1, &idx, "bin").unwrap();
    let h = rt.decl_global(bins, &vec![0.0f64; bins], "hist").unwrap();
    let k = kernel(
        "hist",
        "void hist(const int *b, double *h) { h[*b] += 1.0; }",
    );
    match rt.par_loop(&k, &s, [x.arg(READ), h.arg(INC)]) {
        Ok(_) => {
            let got = h.value().unwrap();
            let mut want = vec![0.0f64; bins];
            for &b in &idx {
                want[b as usize] += 1.0;
            }
            assert_eq!(got, want);
        }
        Err(Op2Error::DeviceLimit { .. }) => {}
        Err(e) => panic!("unexpected error: {e}"),
    }
}

#[test]
fn globals_of_many_components_reduce_on_every_backend() {
    // 600 components: too many to unroll on devices, and more than the host keeps on the stack.
    let rt = rt();
    let bins = 600usize;
    let s = rt.decl_set(300, "s").unwrap();
    let vals: Vec<i64> = (0..300i64).map(|i| (i * 7919) % 10007 - 5000).collect();
    let x = rt.decl_dat(&s, 1, &vals, "v").unwrap();
    let sum = rt.decl_global(bins, &vec![1i64; bins], "sum").unwrap();
    let lo = rt.decl_global(bins, &vec![0i64; bins], "lo").unwrap();
    let hi = rt.decl_global(bins, &vec![0i64; bins], "hi").unwrap();
    let k = kernel(
        "spread",
        "void spread(const int64_t *v, int64_t *s, int64_t *lo, int64_t *hi) {
           for (int b = 0; b < 600; b++) {
             int64_t w = *v + b;
             s[b] += w;
             if (w < lo[b]) lo[b] = w;
             if (w > hi[b]) hi[b] = w;
           } }",
    );
    rt.par_loop(
        &k,
        &s,
        [x.arg(READ), sum.arg(INC), lo.arg(MIN), hi.arg(MAX)],
    )
    .unwrap();
    let (min, max) = (*vals.iter().min().unwrap(), *vals.iter().max().unwrap());
    let total: i64 = vals.iter().sum();
    let (sum, lo, hi) = (
        sum.value().unwrap(),
        lo.value().unwrap(),
        hi.value().unwrap(),
    );
    for b in 0..bins as i64 {
        let i = b as usize;
        assert_eq!(sum[i], 1 + total + 300 * b, "sum {b}");
        assert_eq!(lo[i], (min + b).min(0), "min {b}");
        assert_eq!(hi[i], (max + b).max(0), "max {b}");
    }
}

// ---- reads through maps of very large rows ---------------------------------------------------

#[test]
fn indirect_reads_of_huge_rows_sum_correctly() {
    // 40,000 doubles per row read through a map (the host wrappers' SIMD batches would need
    // 2.5 MB of lane arrays per arg; such loops run one element at a time instead), 37 elements
    // so that batches and a remainder would both occur.
    const DIM: usize = 40_000;
    const E: usize = 37;
    let rt = rt();
    let nodes = rt.decl_set(3, "nodes").unwrap();
    let edges = rt.decl_set(E, "edges").unwrap();
    let map: Vec<i32> = (0..E)
        .flat_map(|e| [(e % 3) as i32, ((e + 1) % 3) as i32])
        .collect();
    let e2n = rt.decl_map(&edges, &nodes, 2, map.clone(), "e2n").unwrap();
    let rows: Vec<f64> = (0..3 * DIM).map(|i| (i % 97) as f64).collect();
    let big = rt.decl_dat(&nodes, DIM, &rows, "big").unwrap();
    let out = rt.decl_dat_zeros::<f64>(&edges, 1, "out").unwrap();
    let k = kernel(
        "rowsum",
        &format!(
            "void rowsum(const double *a, const double *b, double *o) {{
               double s = 0.0; for (int k = 0; k < {DIM}; k++) s += a[k] - b[k]; *o = s; }}"
        ),
    );
    // Schemes that stage an element's indirect data in local memory cannot hold 640 KB: a typed
    // error naming the limit (at `par_loop`, or where the lazy loop runs), not a crash.
    let got = rt
        .par_loop(
            &k,
            &edges,
            [
                big.arg_via(&e2n, 0, READ),
                big.arg_via(&e2n, 1, READ),
                out.arg(WRITE),
            ],
        )
        .and_then(|_| out.to_vec());
    if let Err(Op2Error::DeviceLimit {
        resource, needed, ..
    }) = &got
    {
        assert!(resource.contains("local"), "{resource}");
        assert!(*needed >= 2 * DIM * 8);
        return;
    }
    let expected: Vec<f64> = (0..E)
        .map(|e| {
            let (a, b) = (map[2 * e] as usize, map[2 * e + 1] as usize);
            (0..DIM).fold(0.0, |s, k| s + (rows[a * DIM + k] - rows[b * DIM + k]))
        })
        .collect();
    assert_eq!(got.unwrap(), expected);
}

/// A kernel spelling C's 64-bit integers `long long` (as PyOP2's `ctype` of int64 does) on
/// every backend: OpenCL reserves `long long` for 128 bits, so its code spells them `long`.
#[test]
fn long_long_kernels_read_and_write_64_bit_rows() {
    let rt = op2_test_support::rt();
    let s = rt.decl_set(40, "s").unwrap();
    let x = rt
        .decl_dat(&s, 1, (0..40i64).map(|i| i << 33).collect::<Vec<_>>(), "x")
        .unwrap();
    let y = rt.decl_dat_zeros::<u64>(&s, 2, "y").unwrap();
    let k = op2_test_support::kernel(
        "wide",
        "void wide(long long *x, unsigned long long *y) { y[0] = (unsigned long long)*x + 1; y[1] = 7; *x = *x * 3; }",
    );
    rt.par_loop(&k, &s, [x.arg(op2::RW), y.arg(op2::WRITE)])
        .unwrap();
    let want: Vec<i64> = (0..40i64).map(|i| (i << 33) * 3).collect();
    assert_eq!(x.to_vec().unwrap(), want);
    let yw: Vec<u64> = (0..40u64).flat_map(|i| [(i << 33) + 1, 7]).collect();
    assert_eq!(y.to_vec().unwrap(), yw);
}

/// PyOP2's leniency, asked for: a kernel made without bound checks runs with a whole-row
/// parameter declared `double *x[2]` for a map of arity 4; an ordinary kernel is refused.
#[test]
fn bounds_are_compared_unless_the_kernel_says_not_to() {
    let rt = op2_test_support::rt();
    let cells = rt.decl_set(2, "cells").unwrap();
    let nodes = rt.decl_set(6, "nodes").unwrap();
    let m = rt
        .decl_map(&cells, &nodes, 4, vec![0, 1, 2, 3, 2, 3, 4, 5], "m")
        .unwrap();
    let x = rt
        .decl_dat(&nodes, 1, (0..6).map(f64::from).collect::<Vec<_>>(), "x")
        .unwrap();
    let y = rt.decl_dat_zeros::<f64>(&cells, 1, "y").unwrap();
    let src =
        "void sum4(const double *x[2], double *y) { *y = x[0][0] + x[1][0] + x[2][0] + x[3][0]; }";
    let strict = op2::Kernel::new("sum4", src).unwrap();
    let e = rt
        .par_loop(
            &strict,
            &cells,
            [x.arg_row(&m, op2::READ), y.arg(op2::WRITE)],
        )
        .unwrap_err();
    assert!(matches!(e, op2::Op2Error::KernelParamBound { .. }), "{e}");
    let lenient = op2::Kernel::without_bound_checks("sum4", src).unwrap();
    assert!(!lenient.checks_bounds());
    rt.par_loop(
        &lenient,
        &cells,
        [x.arg_row(&m, op2::READ), y.arg(op2::WRITE)],
    )
    .unwrap();
    assert_eq!(y.to_vec().unwrap(), vec![6.0, 14.0]);
}

/// A kernel made without bound checks whose parameter declares more pointers than the row it
/// gets (PyOP2's `airfoil_vector` declares `double *q[4]` through a map of arity 2): it runs,
/// handed an array of the declared length whose extra pointers lead to a zeroed row of its
/// own. Reads past the row see zeros and writes there reach no Dat, on every backend; a values
/// array declared longer than the values is still refused.
#[test]
fn pointer_arrays_declared_longer_than_the_row_are_padded_with_zeros() {
    let rt = op2_test_support::rt();
    let cells = rt.decl_set(3, "cells").unwrap();
    let nodes = rt.decl_set(4, "nodes").unwrap();
    let m = rt
        .decl_map(&cells, &nodes, 2, vec![0, 1, 1, 2, 2, 3], "m")
        .unwrap();
    let x = rt
        .decl_dat(&nodes, 2, (0..8).map(f64::from).collect::<Vec<_>>(), "x")
        .unwrap();
    let acc = rt.decl_dat_zeros::<f64>(&nodes, 2, "acc").unwrap();
    let y = rt.decl_dat_zeros::<f64>(&cells, 3, "y").unwrap();
    // Sums every declared pointer's values: the two real rows, then two padded ones (zeros);
    // writes through all four, of which only two reach `acc`.
    let src = "void pad4(const double *x[4], double *acc[4], double *y) {
        y[0] = 0; y[1] = 0; y[2] = 0;
        for (int k = 0; k < 4; k++) { y[0] += x[k][0]; y[1] += x[k][1]; }
        y[2] = x[2][0] + x[3][1];
        for (int k = 0; k < 4; k++) { acc[k][0] += 1.0; acc[k][1] += 10.0 * k; }
    }";
    let strict = op2::Kernel::new("pad4", src).unwrap();
    let e = rt
        .par_loop(
            &strict,
            &cells,
            [
                x.arg_row(&m, op2::READ),
                acc.arg_row(&m, op2::INC),
                y.arg(op2::WRITE),
            ],
        )
        .unwrap_err();
    assert!(matches!(e, op2::Op2Error::KernelParamBound { .. }), "{e}");
    let lenient = op2::Kernel::without_bound_checks("pad4", src).unwrap();
    for _ in 0..2 {
        rt.par_loop(
            &lenient,
            &cells,
            [
                x.arg_row(&m, op2::READ),
                acc.arg_row(&m, op2::INC),
                y.arg(op2::WRITE),
            ],
        )
        .unwrap();
    }
    let xs: Vec<f64> = (0..8).map(f64::from).collect();
    let mut want_y = Vec::new();
    let mut want_acc = vec![0.0; 8];
    for c in 0..3 {
        let (a, b) = (c, c + 1);
        want_y.extend([xs[2 * a] + xs[2 * b], xs[2 * a + 1] + xs[2 * b + 1], 0.0]);
        for (k, n) in [a, b].into_iter().enumerate() {
            want_acc[2 * n] += 2.0;
            want_acc[2 * n + 1] += 2.0 * 10.0 * k as f64;
        }
    }
    assert_eq!(y.to_vec().unwrap(), want_y);
    assert_eq!(acc.to_vec().unwrap(), want_acc);
    // A values array longer than the values the arg has stays refused: the kernel could
    // write past them.
    let long = op2::Kernel::without_bound_checks("long3", "void long3(double v[3]) { v[2] = 1; }")
        .unwrap();
    let e = rt.par_loop(&long, &nodes, [x.arg(op2::WRITE)]).unwrap_err();
    assert!(matches!(e, op2::Op2Error::KernelParamBound { .. }), "{e}");
}

// ---- kernels written for the host: `static`, C library headers ------------------------------

/// Today's PyOP2 writes every kernel `static` and begins it with `#include <math.h>`: the
/// device dialects keep the definition's linkage and have those headers built in.
#[test]
fn a_static_kernel_including_c_library_headers_runs_directly_and_through_maps() {
    let rt = rt();
    let n = 300;
    let nodes = rt.decl_set(n + 1, "nodes").unwrap();
    let edges = rt.decl_set(n, "edges").unwrap();
    let e2n: Vec<i32> = (0..n as i32).flat_map(|e| [e, e + 1]).collect();
    let m = rt.decl_map(&edges, &nodes, 2, e2n, "e2n").unwrap();
    let x0: Vec<f64> = (0..n).map(|e| 0.5 + e as f64 / 7.0).collect();
    let x = rt.decl_dat(&edges, 1, &x0, "x").unwrap();
    let acc = rt.decl_dat(&nodes, 1, vec![0.0f64; n + 1], "acc").unwrap();
    let top = rt.decl_global(1, &[0.0f64], "top").unwrap();
    let k = kernel(
        "root_edge",
        "#include <math.h>\n#include <stdbool.h>\n#include <float.h>\n\
         static void root_edge(const double *x, double *a, double *b, double *top) {\n\
           bool big = *x > 20.0;\n\
           double r = sqrt(*x) + (big ? 1.0 : 0.0) + 0.0 * DBL_EPSILON;\n\
           *a += r; *b += 2.0 * r;\n\
           if (r > *top) *top = r;\n\
         }",
    );
    rt.par_loop(
        &k,
        &edges,
        [
            x.arg(READ),
            acc.arg_via(&m, 0, INC),
            acc.arg_via(&m, 1, INC),
            top.arg(MAX),
        ],
    )
    .unwrap();
    let root = |v: f64| v.sqrt() + if v > 20.0 { 1.0 } else { 0.0 };
    let mut want = vec![0.0f64; n + 1];
    for (e, v) in x0.iter().enumerate() {
        want[e] += root(*v);
        want[e + 1] += 2.0 * root(*v);
    }
    let got = acc.data().unwrap();
    for (i, (g, w)) in got.iter().zip(&want).enumerate() {
        assert!(
            (g - w).abs() <= 1e-12 * w.abs().max(1.0),
            "acc[{i}]: {g} vs {w} ({})",
            backend()
        );
    }
    let best = x0.iter().map(|v| root(*v)).fold(0.0f64, f64::max);
    assert!((top.value().unwrap()[0] - best).abs() <= 1e-12 * best);
}
