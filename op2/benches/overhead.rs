//! Criterion benchmarks of the sequential backend: per-call overhead of a warm par_loop on a
//! one-element set, and a direct loop over 10 million f64 beside a plain Rust loop doing the same work.

use criterion::{Criterion, black_box, criterion_group, criterion_main};
use op2::{Kernel, READ, RW, WRITE};

fn overhead(c: &mut Criterion) {
    let rt = op2::builder()
        .backend("seq")
        .lazy(false)
        .build()
        .expect("seq runtime");
    let one = rt.decl_set(1, "one").unwrap();
    let x = rt.decl_dat(&one, 1, [0.0f64], "x").unwrap();
    let k = Kernel::new("bump", "void bump(double *x) { x[0] += 1.0; }").unwrap();
    rt.par_loop(&k, &one, [x.arg(RW)]).unwrap(); // compile once
    c.bench_function("par_loop_overhead/eager_one_element", |b| {
        b.iter(|| rt.par_loop(&k, &one, [x.arg(RW)]).unwrap())
    });

    let lazy = op2::builder()
        .backend("seq")
        .lazy(true)
        .build()
        .expect("seq runtime");
    let one = lazy.decl_set(1, "one").unwrap();
    let x = lazy.decl_dat(&one, 1, [0.0f64], "x").unwrap();
    lazy.par_loop(&k, &one, [x.arg(RW)]).unwrap();
    c.bench_function("par_loop_overhead/lazy_record_and_flush", |b| {
        b.iter(|| {
            lazy.par_loop(&k, &one, [x.arg(RW)]).unwrap();
            lazy.flush().unwrap();
        })
    });
}

const N: usize = 10_000_000;

fn direct_loop(c: &mut Criterion) {
    let rt = op2::builder()
        .backend("seq")
        .lazy(false)
        .build()
        .expect("seq runtime");
    let set = rt.decl_set(N, "big").unwrap();
    let xs: Vec<f64> = (0..N).map(|i| i as f64 * 1e-3).collect();
    let x = rt.decl_dat(&set, 1, &xs, "x").unwrap();
    let y = rt.decl_dat_zeros::<f64>(&set, 1, "y").unwrap();
    let k = Kernel::new(
        "axpb",
        "void axpb(const double *x, double *y) { y[0] = 2.0 * x[0] + 1.0; }",
    )
    .unwrap();
    let mut g = c.benchmark_group("direct_10M_f64");
    g.sample_size(20);
    g.bench_function("op2_seq", |b| {
        b.iter(|| rt.par_loop(&k, &set, [x.arg(READ), y.arg(WRITE)]).unwrap())
    });
    let mut ys = vec![0.0f64; N];
    g.bench_function("plain_rust", |b| {
        b.iter(|| {
            for (y, x) in ys.iter_mut().zip(black_box(&xs)) {
                *y = 2.0 * x + 1.0;
            }
            black_box(&mut ys);
        })
    });
    g.finish();
}

mod harness {
    //! Criterion's generated entry points (its macros emit undocumented items).
    #![allow(missing_docs)]
    use super::*;
    criterion_group!(benches, overhead, direct_loop);
}
criterion_main!(harness::benches);
