//! The lazy graph (seed 002): the dependency rule on every section, forcing through one place
//! (every public accessor runs exactly what its data depends on, nothing else), loop handles,
//! the pending graph's view, fusion and temporaries through the public API, and misuse. The
//! running example (the seed's figures) is in the `wave` crate's `running_example` tests.

use op2::trace::{DataUse, Graph, Pending, section};
use op2::{INC, LazyOptions, LoopHandle, MAX, NodeKind, Op2Error, READ, RW, Runtime, WRITE};
use op2_test_support::{builder, kernel};

fn lazy(opts: LazyOptions) -> Runtime {
    builder().lazy_optimisations(opts).build().unwrap()
}

// ---- the rule, section by section ----------------------------------------------------------

/// A graph of `a` then `b`, each reading and writing the given sections of carrier 1.
fn pair(a: (u8, u8), b: (u8, u8)) -> Graph<&'static str> {
    let uses = |s: u8| {
        if s == 0 {
            vec![]
        } else {
            vec![DataUse { id: 1, sections: s }]
        }
    };
    let mut g = Graph::default();
    for (name, (r, w)) in [("a", a), ("b", b)] {
        g.push(Pending {
            work: name,
            reads: uses(r),
            writes: uses(w),
        });
    }
    g
}

#[test]
fn the_rule_orders_reads_and_writes_of_the_same_section_only() {
    let sections = [
        section::CORE,
        section::OWNED,
        section::EXEC_HALO,
        section::NONEXEC_HALO,
        section::NET,
    ];
    for &s in &sections {
        // Read after write, write after read, write after write: b depends on a.
        for (a, b, what) in [
            ((0, s), (s, 0), "read after write"),
            ((s, 0), (0, s), "write after read"),
            ((0, s), (0, s), "write after write"),
        ] {
            let g = pair(a, b);
            assert_eq!(g.preds(1).collect::<Vec<_>>(), [0], "{what} on section {s}");
        }
        // Two reads: siblings.
        assert_eq!(pair((s, 0), (s, 0)).preds(1).count(), 0);
        // Any other section: independent, whatever the access.
        for &t in sections.iter().filter(|&&t| t != s) {
            for (a, b) in [((0, s), (t, 0)), ((s, 0), (0, t)), ((0, s), (0, t))] {
                assert_eq!(pair(a, b).preds(1).count(), 0, "sections {s} and {t}");
            }
        }
    }
}

#[test]
fn a_global_read_forces_its_reduction_only() {
    let rt = lazy(LazyOptions::default());
    let s = rt.decl_set(50, "s").unwrap();
    let x = rt.decl_dat(&s, 1, vec![3.0f64; 50], "x").unwrap();
    let y = rt.decl_dat_zeros::<f64>(&s, 1, "y").unwrap();
    let g = rt.decl_global(1, &[0.0f64], "g").unwrap();
    let m = rt.decl_global(1, &[f64::MIN], "m").unwrap();
    let sum = kernel(
        "gsum",
        "void gsum(const double *x, double *g) { *g += *x; }",
    );
    let max = kernel(
        "gmax",
        "void gmax(const double *x, double *m) { if (*x > *m) *m = *x; }",
    );
    let set = kernel("sety", "void sety(double *y) { *y = 4.0; }");
    let hs = rt.par_loop(&sum, &s, [x.arg(READ), g.arg(INC)]).unwrap();
    let hy = rt.par_loop(&set, &s, [y.arg(WRITE)]).unwrap();
    let hm = rt.par_loop(&max, &s, [y.arg(READ), m.arg(MAX)]).unwrap();
    assert!(hs.is_pending() && hy.is_pending() && hm.is_pending());
    assert_eq!(g.value().unwrap(), [150.0]);
    assert!(!hs.is_pending(), "the reduction ran");
    assert!(hy.is_pending() && hm.is_pending(), "nothing else did");
    assert_eq!(m.value().unwrap(), [4.0]);
    assert!(!hy.is_pending() && !hm.is_pending());
}

// ---- forcing through one place ---------------------------------------------------------------

/// A runtime with a pending loop writing `d` (the accessor's data) and one writing `e`
/// (unrelated); the accessor must run the first and leave the second.
struct Setup {
    rt: Runtime,
    cells: op2::Set,
    nodes: op2::Set,
    c2n: op2::Map,
    coords: op2::Dat<f64>,
    d: op2::Dat<f64>,
    e: op2::Dat<f64>,
    g: op2::Global<f64>,
    c: op2::Const<f64>,
}

fn setup() -> Setup {
    let rt = lazy(LazyOptions::default());
    // Two triangles on the unit square.
    let nodes = rt.decl_set(4, "nodes").unwrap();
    let cells = rt.decl_set(2, "cells").unwrap();
    let c2n = rt
        .decl_map(&cells, &nodes, 3, vec![0, 1, 2, 0, 2, 3], "c2n")
        .unwrap();
    let coords = rt
        .decl_dat(&nodes, 2, vec![0., 0., 1., 0., 1., 1., 0., 1.], "coords")
        .unwrap();
    let d = rt.decl_dat_zeros::<f64>(&cells, 1, "d").unwrap();
    let e = rt.decl_dat_zeros::<f64>(&cells, 1, "e").unwrap();
    let g = rt.decl_global(1, &[0.0f64], "g").unwrap();
    let c = rt.decl_const(1, &[2.0f64], "scale_c").unwrap();
    Setup {
        rt,
        cells,
        nodes,
        c2n,
        coords,
        d,
        e,
        g,
        c,
    }
}

impl Setup {
    /// A pending loop writing `d` (reading the Const) and one writing `e`.
    fn pending(&self) -> (LoopHandle, LoopHandle) {
        let wd = kernel("wd", "void wd(double *d) { *d = 7.0 * scale_c; }");
        let we = kernel("we", "void we(double *e) { *e = 5.0; }");
        let hd = self
            .rt
            .par_loop(&wd, &self.cells, [self.d.arg(WRITE)])
            .unwrap();
        let he = self
            .rt
            .par_loop(&we, &self.cells, [self.e.arg(WRITE)])
            .unwrap();
        assert!(hd.is_pending() && he.is_pending());
        (hd, he)
    }
}

type Accessor = (&'static str, fn(&Setup, &LoopHandle));

#[test]
fn every_accessor_forces_exactly_what_its_data_depends_on() {
    let accessors: Vec<Accessor> = vec![
        ("Dat::data_ro", |s, _| {
            assert_eq!(&*s.d.data_ro().unwrap(), &[14.0, 14.0]);
        }),
        ("Dat::data", |s, _| {
            s.d.data().unwrap()[0] = 1.0;
        }),
        ("Dat::to_vec", |s, _| {
            assert_eq!(s.d.to_vec().unwrap(), [14.0, 14.0]);
        }),
        (
            "Const::set_value (a loop reading the old value runs first)",
            |s, _| {
                s.c.set_value(&[3.0]).unwrap();
            },
        ),
        ("LoopHandle::compute", |_, h| h.compute().unwrap()),
        ("vtk::UnstructuredGrid::with_cell_dat", |s, _| {
            let grid = op2::vtk::UnstructuredGrid::from_dats(&s.coords, &s.c2n).unwrap();
            let grid = grid.with_cell_dat(&s.d).unwrap();
            assert!(!grid.to_vtu().is_empty());
        }),
        ("la::par_loop! (a Mat loop reading the Dat)", |s, _| {
            use op2::la::{Mat, Sparsity};
            let sp = Sparsity::new(&[(&s.c2n, &s.c2n)], (1, 1), "sp").unwrap();
            let a = Mat::new(&sp, "a");
            let k = kernel(
                "mass",
                "void mass(double m[9], const double *d) { for (int i = 0; i < 3; i++) m[4 * i] += *d; }",
            );
            op2::la::par_loop!(s.rt, k, s.cells, a.arg(INC, &s.c2n, &s.c2n), s.d.arg(READ))
                .unwrap();
            a.assemble();
            // Node 0 and node 2 are in both cells.
            assert_eq!(a.value(0, 0).unwrap(), 28.0);
        }),
        ("la::solve (the right-hand side)", |s, _| {
            use op2::la::{Mat, SolverOptions, Sparsity};
            let sp = Sparsity::new(&[(&s.c2n, &s.c2n)], (1, 1), "sp").unwrap();
            let a = Mat::new(&sp, "a");
            let k = kernel(
                "ident",
                "void ident(double m[9]) { for (int i = 0; i < 3; i++) m[4 * i] = 1.0; }",
            );
            op2::la::par_loop!(s.rt, k, s.cells, a.arg(WRITE, &s.c2n, &s.c2n)).unwrap();
            a.assemble();
            let b = s.rt.decl_dat_zeros::<f64>(&s.nodes, 1, "b").unwrap();
            let x = s.rt.decl_dat_zeros::<f64>(&s.nodes, 1, "x").unwrap();
            let spread = kernel(
                "spread",
                "void spread(const double *d, double *b[3]) { *b[0] += *d; }",
            );
            s.rt.par_loop(&spread, &s.cells, [s.d.arg(READ), b.arg_row(&s.c2n, INC)])
                .unwrap();
            op2::la::solve(&a, &b, &x, &SolverOptions::default()).unwrap();
            assert_eq!(x.to_vec().unwrap()[0], 28.0);
        }),
    ];
    for (name, access) in accessors {
        let s = setup();
        let (hd, he) = s.pending();
        access(&s, &hd);
        assert!(!hd.is_pending(), "{name}: the loop writing the data ran");
        assert!(he.is_pending(), "{name}: the unrelated loop did not");
        assert!(s.e.to_vec().unwrap().iter().all(|&v| v == 5.0));
    }

    // A Global's value and set_value: the loop reducing into it runs, the other does not.
    for set in [false, true] {
        let s = setup();
        let sum = kernel("gs", "void gs(const double *x, double *g) { *g += *x; }");
        let w = kernel("w2", "void w2(double *e) { *e = 1.0; }");
        let hg =
            s.rt.par_loop(&sum, &s.nodes, [s.coords.arg(READ), s.g.arg(INC)])
                .unwrap();
        let he = s.rt.par_loop(&w, &s.cells, [s.e.arg(WRITE)]).unwrap();
        if set {
            s.g.set_value(&[1.0]).unwrap();
        } else {
            assert_eq!(s.g.value().unwrap(), [2.0]); // the x of each node
        }
        assert!(!hg.is_pending() && he.is_pending(), "Global set={set}");
        // Const::value reads the value declared or set; it forces nothing that writes it.
        assert_eq!(s.c.value().unwrap(), [2.0]);
        assert!(he.is_pending());
    }

    // Runtime::flush: everything.
    let s = setup();
    let (hd, he) = s.pending();
    s.rt.flush().unwrap();
    assert!(!hd.is_pending() && !he.is_pending());
}

#[cfg(feature = "hdf5")]
#[test]
fn an_hdf5_write_forces_what_the_dat_depends_on() {
    let s = setup();
    let (hd, he) = s.pending();
    let dir = tempfile::tempdir().unwrap();
    let f = op2::hdf5::H5File::create(dir.path().join("out.h5")).unwrap();
    f.write_dat(&s.rt, &s.d).unwrap();
    assert!(!hd.is_pending() && he.is_pending());
}

// ---- handles, the view, fusion, temporaries --------------------------------------------------

#[test]
fn handles_say_pending_without_forcing() {
    let rt = lazy(LazyOptions::default());
    let s = rt.decl_set(10, "s").unwrap();
    let x = rt.decl_dat_zeros::<f64>(&s, 1, "x").unwrap();
    let k = kernel("one", "void one(double *x) { *x = 1.0; }");
    let h = rt.par_loop(&k, &s, [x.arg(WRITE)]).unwrap();
    for _ in 0..3 {
        assert!(h.is_pending() && h.in_queue());
    }
    assert_eq!(h.kernel(), "one");
    assert_eq!(rt.executed_loops(), 0, "asking forced nothing");
    assert!(format!("{h:?}").contains("pending: true"));
    h.compute().unwrap();
    assert!(!h.is_pending());
    h.compute().unwrap();
    assert_eq!(rt.executed_loops(), 1, "computing twice runs once");
    // Eager: never pending.
    let eager = builder().lazy(false).build().unwrap();
    let s = eager.decl_set(3, "s").unwrap();
    let x = eager.decl_dat_zeros::<f64>(&s, 1, "x").unwrap();
    assert!(!eager.par_loop(&k, &s, [x.arg(WRITE)]).unwrap().is_pending());
    // A handle outliving its runtime: the runtime ran everything when it went.
    let h = {
        let rt = lazy(LazyOptions::default());
        let s = rt.decl_set(3, "s").unwrap();
        let x = rt.decl_dat_zeros::<f64>(&s, 1, "x").unwrap();
        rt.par_loop(&k, &s, [x.arg(WRITE)]).unwrap()
    };
    assert!(!h.is_pending());
    h.compute().unwrap();
}

#[test]
fn the_pending_graph_is_drawn_without_forcing() {
    let rt = lazy(LazyOptions::NONE);
    let s = rt.decl_set(8, "s").unwrap();
    let a = rt.decl_dat_zeros::<f64>(&s, 1, "a \"quoted\"").unwrap();
    let b = rt.decl_dat_zeros::<f64>(&s, 1, "b").unwrap();
    let w = kernel("wa", "void wa(double *a) { *a = 2.0; }");
    let c = kernel("cp", "void cp(const double *a, double *b) { *b = *a; }");
    rt.par_loop(&w, &s, [a.arg(WRITE)]).unwrap();
    rt.par_loop(&c, &s, [a.arg(READ), b.arg(WRITE)]).unwrap();
    rt.par_loop(&w, &s, [b.arg(WRITE)]).unwrap();
    let g = rt.pending_graph();
    let labels: Vec<&str> = g.nodes.iter().map(|n| n.label.as_str()).collect();
    assert_eq!(
        labels,
        ["wa[core,owned]", "cp[core,owned]", "wa[core,owned]"]
    );
    assert_eq!(g.edges, [(0, 1), (1, 2)]);
    assert_eq!(g.count_kind(NodeKind::Loop), 3);
    let dot = g.to_dot();
    assert!(dot.starts_with("digraph") && dot.contains("n0 -> n1") && dot.contains("top -> n0"));
    assert!(dot.contains("n2 -> bot"));
    assert_eq!(rt.executed_loops(), 0);
    rt.flush().unwrap();
    assert!(rt.pending_graph().nodes.is_empty());
    assert_eq!(rt.pending_graph().to_dot().matches("->").count(), 0);
}

/// Loops that fuse (siblings and a chain) give the same values as unfused, and are counted.
#[test]
fn fused_loops_give_the_same_results_and_are_counted() {
    let run = |opts: LazyOptions| {
        let rt = lazy(opts);
        let s = rt.decl_set(1000, "s").unwrap();
        let init: Vec<f64> = (0..1000).map(|i| (i as f64).sin()).collect();
        let u = rt.decl_dat(&s, 1, init, "u").unwrap();
        let v = rt.decl_dat_zeros::<f64>(&s, 2, "v").unwrap();
        let w = rt.decl_dat_zeros::<f64>(&s, 1, "w").unwrap();
        let g = rt.decl_global(1, &[0.0f64], "g").unwrap();
        let big = rt.decl_global(1, &[0.5f64], "big").unwrap();
        let zero = kernel("zero", "void zero(double *x) { x[0] = 0.0; }");
        let zero2 = kernel("zero2", "void zero2(double *x) { x[0] = 0.0; x[1] = 0.0; }");
        let scale = kernel(
            "scale",
            "void scale(double *u, const double *f) { *u = *u * *f + 1.0; }",
        );
        let spread = kernel(
            "spread",
            "void spread(const double *u, double *v, double *w) { v[0] += *u; v[1] = 2.0 * *u; *w += v[0]; }",
        );
        let sum = kernel(
            "total",
            "void total(const double *w, double *g) { *g += *w; }",
        );
        rt.par_loop(&zero, &s, [w.arg(WRITE)]).unwrap();
        rt.par_loop(&zero2, &s, [v.arg(WRITE)]).unwrap();
        rt.par_loop(&scale, &s, [u.arg(RW), big.arg(READ)]).unwrap();
        rt.par_loop(&spread, &s, [u.arg(READ), v.arg(RW), w.arg(INC)])
            .unwrap();
        rt.par_loop(&sum, &s, [w.arg(READ), g.arg(INC)]).unwrap();
        rt.par_loop(&scale, &s, [u.arg(RW), big.arg(READ)]).unwrap();
        let out = (
            u.to_vec().unwrap(),
            v.to_vec().unwrap(),
            w.to_vec().unwrap(),
            g.value().unwrap()[0],
        );
        (out, rt.lazy_stats())
    };
    let (plain, none) = run(LazyOptions::NONE);
    let (fused, stats) = run(LazyOptions::ALL);
    assert_eq!(none.sibling_fusions + none.chain_fusions, 0);
    assert!(stats.sibling_fusions >= 1, "{stats:?}");
    assert!(stats.chain_fusions >= 1, "{stats:?}");
    let host = !matches!(
        op2_test_support::backend().as_str(),
        "opencl" | "cuda" | "cuda-emulator"
    );
    if host {
        assert_eq!(plain, fused, "the same bits on a host backend");
    } else {
        let close = |a: &[f64], b: &[f64]| {
            a.iter()
                .zip(b)
                .all(|(x, y)| (x - y).abs() <= 1e-12 * (1.0 + x.abs()))
        };
        assert!(
            close(&plain.0, &fused.0) && close(&plain.1, &fused.1) && close(&plain.2, &fused.2)
        );
        assert!((plain.3 - fused.3).abs() <= 1e-9 * plain.3.abs());
    }
}

#[test]
fn temporaries_reuse_released_memory_and_refuse_use_after_release() {
    for opts in [LazyOptions::NONE, LazyOptions::ALL] {
        let rt = lazy(opts);
        let s = rt.decl_set(100, "s").unwrap();
        let x = rt.decl_dat(&s, 1, vec![1.5f64; 100], "x").unwrap();
        let y = rt.decl_dat_zeros::<f64>(&s, 1, "y").unwrap();
        let twice = kernel(
            "twice",
            "void twice(const double *x, double *t) { *t += 2.0 * *x; }",
        );
        let add = kernel(
            "addt",
            "void addt(const double *t, double *y) { *y += *t; }",
        );
        for _ in 0..3 {
            let t = rt.decl_temporary::<f64>(&s, 1, "t").unwrap();
            // A temporary starts at zero, reused or not.
            rt.par_loop(&twice, &s, [x.arg(READ), t.arg(INC)]).unwrap();
            rt.par_loop(&add, &s, [t.arg(READ), y.arg(INC)]).unwrap();
            rt.release_temporary(&t).unwrap();
            rt.release_temporary(&t).unwrap(); // twice: nothing more
            let e = rt
                .par_loop(&add, &s, [t.arg(READ), y.arg(INC)])
                .unwrap_err();
            assert!(matches!(e, Op2Error::TemporaryReleased { .. }), "{e}");
            assert!(e.to_string().contains("`t`") && e.to_string().contains("addt"));
            assert!(matches!(
                t.to_vec(),
                Err(Op2Error::TemporaryReleased { .. })
            ));
        }
        assert!(y.to_vec().unwrap().iter().all(|&v| v == 9.0));
        let st = rt.lazy_stats();
        let host = rt.runs_on_host_memory();
        if opts.temporaries && host {
            assert_eq!(
                (st.temporaries_allocated, st.temporaries_reused),
                (3, 2),
                "{st:?}"
            );
        } else if !opts.temporaries {
            assert_eq!(st.temporaries_reused, 0);
        }
        // Releasing a Dat that is not a temporary.
        assert!(matches!(
            rt.release_temporary(&x),
            Err(Op2Error::NotTemporary { .. })
        ));
    }
}

// ---- misuse -------------------------------------------------------------------------------

#[test]
fn a_host_write_while_a_reader_is_pending_keeps_program_order() {
    let rt = lazy(LazyOptions::default());
    let s = rt.decl_set(20, "s").unwrap();
    let x = rt.decl_dat(&s, 1, vec![1.0f64; 20], "x").unwrap();
    let y = rt.decl_dat_zeros::<f64>(&s, 1, "y").unwrap();
    let copy = kernel(
        "copyxy",
        "void copyxy(const double *x, double *y) { *y = *x; }",
    );
    let h = rt.par_loop(&copy, &s, [x.arg(READ), y.arg(WRITE)]).unwrap();
    // The write comes after the loop in program order: the loop sees the old value.
    x.data().unwrap().fill(9.0);
    assert!(!h.is_pending());
    assert!(y.to_vec().unwrap().iter().all(|&v| v == 1.0));
    // A loop recorded after the write sees the new one.
    rt.par_loop(&copy, &s, [x.arg(READ), y.arg(WRITE)]).unwrap();
    assert!(y.to_vec().unwrap().iter().all(|&v| v == 9.0));
}

#[test]
fn the_graph_forced_from_two_threads_keeps_program_order() {
    let rt = lazy(LazyOptions::default());
    let s = rt.decl_set(1000, "s").unwrap();
    let x = rt.decl_dat_zeros::<f64>(&s, 1, "x").unwrap();
    let y = rt.decl_dat_zeros::<f64>(&s, 1, "y").unwrap();
    let inc = kernel("inc1", "void inc1(double *x) { *x += 1.0; }");
    let mirror = kernel(
        "mirror",
        "void mirror(const double *x, double *y) { *y = 2.0 * *x; }",
    );
    for _ in 0..50 {
        rt.par_loop(&inc, &s, [x.arg(RW)]).unwrap();
        rt.par_loop(&mirror, &s, [x.arg(READ), y.arg(WRITE)])
            .unwrap();
    }
    std::thread::scope(|sc| {
        let a = sc.spawn(|| x.to_vec().unwrap());
        let b = sc.spawn(|| y.to_vec().unwrap());
        let (xa, yb) = (a.join().unwrap(), b.join().unwrap());
        assert!(xa.iter().all(|&v| v == 50.0));
        assert!(yb.iter().all(|&v| v == 100.0));
    });
    // Recording from one thread while another forces.
    std::thread::scope(|sc| {
        let r = sc.spawn(|| {
            for _ in 0..50 {
                rt.par_loop(&inc, &s, [x.arg(RW)]).unwrap();
            }
        });
        for _ in 0..20 {
            let v = x.to_vec().unwrap()[0];
            assert!((50.0..=100.0).contains(&v));
        }
        r.join().unwrap();
    });
    assert!(x.to_vec().unwrap().iter().all(|&v| v == 100.0));
}

#[test]
fn lazy_options_come_from_the_environment_and_the_builder() {
    let c = op2::Config::from_vars(|k| (k == "OP2_LAZY_OPT").then(|| "none,temporaries".into()))
        .unwrap();
    assert!(c.lazy_opts.temporaries && !c.lazy_opts.early_halo);
    let e = op2::Config::from_vars(|k| (k == "OP2_LAZY_OPT").then(|| "fast".into())).unwrap_err();
    assert!(matches!(e, Op2Error::Config { .. }) && e.to_string().contains("fast"));
    let rt = builder()
        .lazy_optimisations(LazyOptions::NONE)
        .build()
        .unwrap();
    assert_eq!(rt.config().lazy_opts, LazyOptions::NONE);
}

#[test]
fn reading_one_temporarys_result_runs_nothing_of_another() {
    let rt = lazy(LazyOptions::default());
    let s = rt.decl_set(30, "s").unwrap();
    let x = rt.decl_dat(&s, 1, vec![1.0f64; 30], "x").unwrap();
    let y = rt.decl_dat_zeros::<f64>(&s, 1, "y").unwrap();
    let z = rt.decl_dat_zeros::<f64>(&s, 1, "z").unwrap();
    let copy = kernel(
        "copyt",
        "void copyt(const double *a, double *b) { *b = *a + 1.0; }",
    );
    let fill = kernel("fillt", "void fillt(double *t) { *t = 3.0; }");
    // A guard on y (taken before any loop, so it forces nothing): anything that ran the first
    // temporary's loops would fail.
    let guard = y.data_ro().unwrap();
    let t1 = rt.decl_temporary::<f64>(&s, 1, "t1").unwrap();
    let ha = rt
        .par_loop(&copy, &s, [x.arg(READ), t1.arg(WRITE)])
        .unwrap();
    let hb = rt
        .par_loop(&copy, &s, [t1.arg(READ), y.arg(WRITE)])
        .unwrap();
    rt.release_temporary(&t1).unwrap();
    let t2 = rt.decl_temporary::<f64>(&s, 1, "t2").unwrap();
    let hc = rt.par_loop(&fill, &s, [t2.arg(WRITE)]).unwrap();
    let hd = rt
        .par_loop(&copy, &s, [t2.arg(READ), z.arg(WRITE)])
        .unwrap();
    rt.release_temporary(&t2).unwrap();
    assert!(z.to_vec().unwrap().iter().all(|&v| v == 4.0));
    assert!(!hc.is_pending() && !hd.is_pending());
    assert!(
        ha.is_pending() && hb.is_pending(),
        "z does not depend on t1's loops"
    );
    drop(guard);
    assert!(y.to_vec().unwrap().iter().all(|&v| v == 3.0));
}

#[test]
fn a_fused_group_with_a_failed_member_runs_its_other_loops() {
    let rt = lazy(LazyOptions::ALL);
    let s = rt.decl_set(40, "s").unwrap();
    let y = rt.decl_dat_zeros::<f64>(&s, 1, "y").unwrap();
    let z = rt.decl_dat_zeros::<f64>(&s, 1, "z").unwrap();
    let w = rt.decl_dat_zeros::<f64>(&s, 1, "w").unwrap();
    let set = kernel("set5", "void set5(double *v) { *v = 5.0; }");
    let copy = kernel(
        "copy1",
        "void copy1(const double *a, double *b) { *b = *a + 1.0; }",
    );
    let guard = y.data_ro().unwrap();
    let hp = rt.par_loop(&set, &s, [y.arg(WRITE)]).unwrap(); // fails: y is borrowed
    let hq = rt.par_loop(&copy, &s, [y.arg(READ), z.arg(WRITE)]).unwrap(); // its chain
    let hr = rt.par_loop(&set, &s, [w.arg(WRITE)]).unwrap(); // a sibling: runs
    assert!(matches!(rt.flush(), Err(Op2Error::DataBorrowed { .. })));
    assert!(hp.is_pending() && hq.is_pending());
    assert!(!hr.is_pending());
    assert_eq!(rt.executed_loops(), 1);
    drop(guard);
    assert!(z.to_vec().unwrap().iter().all(|&v| v == 6.0));
    assert_eq!(rt.executed_loops(), 3, "each loop ran once");
}

#[test]
fn a_loop_reading_and_writing_a_dat_through_two_args_fuses_as_read_write() {
    // x is read through one arg and written through another by the first loop: the fused loop
    // must read it (a device must upload it).
    for opts in [LazyOptions::NONE, LazyOptions::ALL] {
        let rt = lazy(opts);
        let s = rt.decl_set(64, "s").unwrap();
        let init: Vec<f64> = (0..64).map(f64::from).collect();
        let x = rt.decl_dat(&s, 1, init, "x").unwrap();
        let v = rt.decl_dat_zeros::<f64>(&s, 1, "v").unwrap();
        let bump = kernel(
            "bump2",
            "void bump2(const double *a, double *b) { *b = *a + 1.0; }",
        );
        let other = kernel("other", "void other(double *v) { *v = 2.0; }");
        rt.par_loop(&bump, &s, [x.arg(READ), x.arg(WRITE)]).unwrap();
        rt.par_loop(&other, &s, [v.arg(WRITE)]).unwrap();
        rt.par_loop(&bump, &s, [x.arg(READ), x.arg(WRITE)]).unwrap();
        let got = x.to_vec().unwrap();
        let want: Vec<f64> = (0..64).map(|i| f64::from(i) + 2.0).collect();
        assert_eq!(got, want, "{opts:?}");
    }
}

/// op2-mpi's gather (across thread ranks) forces what the gathered Dat depends on, not more.
#[cfg(feature = "mpi")]
#[test]
fn a_gather_forces_what_the_dat_depends_on() {
    use op2::mpi::{Input, MeshBuilder, Options, Partitioner};
    let out = op2_test_support::on_rank_runtimes(2, builder, |_, rt| {
        let mut mesh = MeshBuilder::new(Input::Everywhere);
        let nodes = mesh.decl_set(21, "nodes").unwrap();
        let cells = mesh.decl_set(20, "cells").unwrap();
        let c2n: Vec<i32> = (0..20).flat_map(|c| [c, c + 1]).collect();
        mesh.decl_map(cells, nodes, 2, c2n, "c2n").unwrap();
        let local = mesh
            .partition(&rt, &Options::new(Partitioner::Blocks))
            .unwrap();
        let cells = local.set(cells);
        let d = rt.decl_dat_zeros::<f64>(&cells, 1, "d").unwrap();
        let e = rt.decl_dat_zeros::<f64>(&cells, 1, "e").unwrap();
        let wd = kernel("gd", "void gd(double *d) { *d = 3.0; }");
        let we = kernel("ge", "void ge(double *e) { *e = 4.0; }");
        let hd = rt.par_loop(&wd, &cells, [d.arg(WRITE)]).unwrap();
        let he = rt.par_loop(&we, &cells, [e.arg(WRITE)]).unwrap();
        let got = local.gather(&d).unwrap();
        let pending = (hd.is_pending(), he.is_pending());
        rt.flush().unwrap();
        (got, pending)
    });
    assert_eq!(out[0].0.as_deref(), Some(&[3.0; 20][..]));
    for (_, pending) in &out {
        assert_eq!(*pending, (false, true));
    }
}
