//! Random loop sequences on the wave example's mesh: direct loops with every access mode,
//! loops reading through the stencil map, Global reductions, host reads and writes in between,
//! temporaries; run lazily with every graph optimisation on and eagerly, on every backend built
//! in, in one process and on three thread ranks. Every value the program reads on the host must
//! be the same (the same bits on host backends).

use op2::{Dat, INC, Kernel, LazyOptions, MAX, READ, RW, Runtime, WRITE};
use op2_test_support::{on_rank_runtimes, runtime_if_available};
use proptest::prelude::*;
use std::collections::HashMap;
use wave::mesh::{LocalGrid, STENCIL};

/// One operation of a random program; Dats by index (0..3).
#[derive(Debug, Clone)]
enum Op {
    /// `y = 0.5 y + 0.25 x` (x READ, y RW).
    Blend(usize, usize),
    /// `y = 1 - 0.5 x` (x READ, y WRITE).
    Set(usize, usize),
    /// `y += 0.125 x` (y INC, direct).
    Inc(usize, usize),
    /// `y = mean of x over the stencil` (x READ through the map, y WRITE).
    Smooth(usize, usize),
    /// Sum and maximum of x into Globals, then read them.
    Reduce(usize),
    /// Read x on the host.
    Read(usize),
    /// Write x on the host (a function of the global vertex number and `k`).
    Write(usize, u8),
    /// A temporary t: `t = 2 x` then `y += t`, t released.
    Temp(usize, usize),
}

fn op() -> impl Strategy<Value = Op> {
    let d = 0usize..3;
    prop_oneof![
        (d.clone(), d.clone())
            .prop_filter("x != y", |(a, b)| a != b)
            .prop_map(|(a, b)| Op::Blend(a, b)),
        (d.clone(), d.clone())
            .prop_filter("x != y", |(a, b)| a != b)
            .prop_map(|(a, b)| Op::Set(a, b)),
        (d.clone(), d.clone())
            .prop_filter("x != y", |(a, b)| a != b)
            .prop_map(|(a, b)| Op::Inc(a, b)),
        (d.clone(), d.clone())
            .prop_filter("x != y", |(a, b)| a != b)
            .prop_map(|(a, b)| Op::Smooth(a, b)),
        d.clone().prop_map(Op::Reduce),
        d.clone().prop_map(Op::Read),
        (d.clone(), any::<u8>()).prop_map(|(a, k)| Op::Write(a, k)),
        (d.clone(), d)
            .prop_filter("x != y", |(a, b)| a != b)
            .prop_map(|(a, b)| Op::Temp(a, b)),
    ]
}

struct Kernels {
    blend: Kernel,
    set: Kernel,
    inc: Kernel,
    smooth: Kernel,
    sum: Kernel,
    max: Kernel,
    twice: Kernel,
}

fn kernels() -> Kernels {
    let k = |n: &str, s: &str| Kernel::new(n, s).unwrap();
    Kernels {
        blend: k(
            "blend",
            "void blend(const double *x, double *y) { *y = 0.5 * *y + 0.25 * *x; }",
        ),
        set: k(
            "setv",
            "void setv(const double *x, double *y) { *y = 1.0 - 0.5 * *x; }",
        ),
        inc: k(
            "incv",
            "void incv(const double *x, double *y) { *y += 0.125 * *x; }",
        ),
        smooth: k(
            "smooth",
            &format!(
                "void smooth(const double *x[{STENCIL}], double *y) {{ double s = 0.0; \
                 for (int k = 0; k < {STENCIL}; k++) s += x[k][0]; *y = s / {STENCIL}.0; }}"
            ),
        ),
        sum: k(
            "gsum",
            "void gsum(const double *x, double *g) { *g += *x; }",
        ),
        max: k(
            "gmax",
            "void gmax(const double *x, double *g) { if (*x > *g) *g = *x; }",
        ),
        twice: k(
            "twice",
            "void twice(const double *x, double *t) { *t = 2.0 * *x; }",
        ),
    }
}

/// What the program saw on the host: owned values by global vertex number, Global values.
#[derive(Debug, Default, PartialEq, Clone)]
struct Seen {
    dats: Vec<HashMap<u64, f64>>,
    globals: Vec<f64>,
}

const N: usize = 5;

fn run(rt: &Runtime, ops: &[Op], k: &Kernels) -> Seen {
    let comm = rt.communicator();
    let grid = LocalGrid::new(N, comm.size(), comm.rank());
    let ids = grid.global_ids.clone();
    let w = wave::Wave::from_grid(rt, grid).unwrap();
    let s = &w.vertices;
    let init = |i: usize| -> Vec<f64> {
        ids.iter()
            .map(|g| ((*g as f64) * 0.37 + i as f64).sin())
            .collect()
    };
    let d: Vec<Dat<f64>> = (0..3)
        .map(|i| rt.decl_dat(s, 1, init(i), &format!("d{i}")).unwrap())
        .collect();
    let owned = s.size();
    let mut seen = Seen::default();
    let read = |x: &Dat<f64>, seen: &mut Seen| {
        let v = x.to_vec().unwrap();
        seen.dats
            .push(ids[..owned].iter().zip(&v).map(|(g, v)| (*g, *v)).collect());
    };
    for o in ops {
        match *o {
            Op::Blend(x, y) => {
                rt.par_loop(&k.blend, s, [d[x].arg(READ), d[y].arg(RW)])
                    .unwrap();
            }
            Op::Set(x, y) => {
                rt.par_loop(&k.set, s, [d[x].arg(READ), d[y].arg(WRITE)])
                    .unwrap();
            }
            Op::Inc(x, y) => {
                rt.par_loop(&k.inc, s, [d[x].arg(READ), d[y].arg(INC)])
                    .unwrap();
            }
            Op::Smooth(x, y) => {
                rt.par_loop(
                    &k.smooth,
                    s,
                    [d[x].arg_row(&w.stencil, READ), d[y].arg(WRITE)],
                )
                .unwrap();
            }
            Op::Reduce(x) => {
                let g = rt.decl_global(1, &[0.0f64], "g").unwrap();
                let m = rt.decl_global(1, &[f64::MIN], "m").unwrap();
                rt.par_loop(&k.sum, s, [d[x].arg(READ), g.arg(INC)])
                    .unwrap();
                rt.par_loop(&k.max, s, [d[x].arg(READ), m.arg(MAX)])
                    .unwrap();
                seen.globals.push(m.value().unwrap()[0]);
                seen.globals.push(g.value().unwrap()[0]);
            }
            Op::Read(x) => read(&d[x], &mut seen),
            Op::Write(x, kk) => {
                let mut v = d[x].data().unwrap();
                for (i, g) in ids[..owned].iter().enumerate() {
                    v[i] = ((*g as f64) * 0.11 + kk as f64 * 0.01).cos();
                }
            }
            Op::Temp(x, y) => {
                let t = rt.decl_temporary::<f64>(s, 1, "t").unwrap();
                rt.par_loop(&k.twice, s, [d[x].arg(READ), t.arg(WRITE)])
                    .unwrap();
                rt.par_loop(&k.inc, s, [t.arg(READ), d[y].arg(INC)])
                    .unwrap();
                rt.release_temporary(&t).unwrap();
            }
        }
    }
    for x in &d {
        read(x, &mut seen);
    }
    seen
}

/// The program on `ranks` thread ranks of `backend`, lazy with `opts` or eager: what rank 0
/// saw, with every rank's owned values merged.
fn on(backend: &str, ranks: usize, lazy: bool, opts: LazyOptions, ops: &[Op]) -> Seen {
    let k = kernels();
    let b = || {
        op2::builder()
            .backend(backend)
            .lazy(lazy)
            .lazy_optimisations(opts)
    };
    if ranks == 1 {
        return run(&b().build().unwrap(), ops, &k);
    }
    let all = on_rank_runtimes(ranks, b, |_, rt| run(&rt, ops, &k));
    let mut merged = all[0].clone();
    for other in &all[1..] {
        assert_eq!(
            other.globals, merged.globals,
            "every rank reads the same Globals"
        );
        for (m, o) in merged.dats.iter_mut().zip(&other.dats) {
            m.extend(o.iter().map(|(k, v)| (*k, *v)));
        }
    }
    merged
}

fn close(a: &Seen, b: &Seen, exact: bool) -> bool {
    if exact {
        return a == b;
    }
    let near = |x: f64, y: f64| (x - y).abs() <= 1e-11 * (1.0 + x.abs());
    a.globals.len() == b.globals.len()
        && a.globals.iter().zip(&b.globals).all(|(x, y)| near(*x, *y))
        && a.dats.len() == b.dats.len()
        && a.dats.iter().zip(&b.dats).all(|(x, y)| {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| near(*v, *w)))
        })
}

/// The backends built in that start here.
fn backends() -> Vec<String> {
    op2::backends()
        .iter()
        .map(|f| f.name.to_string())
        .filter(|n| runtime_if_available(op2::builder().backend(n)).is_some())
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, ..ProptestConfig::default() })]

    #[test]
    fn lazy_with_every_optimisation_equals_eager(ops in prop::collection::vec(op(), 1..14)) {
        let reference = on("seq", 1, false, LazyOptions::NONE, &ops);
        for backend in backends() {
            let exact = matches!(backend.as_str(), "seq" | "openmp");
            for ranks in [1, 3] {
                // Device backends on one rank only: their compiles are slow, and ranks are
                // the same code on every backend.
                if !exact && ranks > 1 {
                    continue;
                }
                let eager = on(&backend, ranks, false, LazyOptions::NONE, &ops);
                let lazy = on(&backend, ranks, true, LazyOptions::ALL, &ops);
                prop_assert!(close(&eager, &lazy, exact), "{backend}, {ranks} ranks: lazy {lazy:?}\neager {eager:?}");
                // One rank or three, one backend or another: the values of the reference, to
                // rounding (sums over ranks are added in another order).
                prop_assert!(close(&reference, &lazy, false), "{backend}, {ranks} ranks against seq");
            }
        }
    }
}
