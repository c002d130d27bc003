//! The OpenMP backend against the sequential reference: races (many elements incrementing a few
//! nodes), reduction determinism, thread counts and block sizes.

use op2::{INC, Kernel, MAX, MIN, READ, Runtime, WRITE};

/// Whether the OpenMP backend starts here (a C compiler without OpenMP cannot run it): the tests
/// return early, saying why, unless `OP2_REQUIRE_BACKENDS` names it.
fn openmp_here() -> bool {
    op2_test_support::runtime_if_available(op2::builder().backend("openmp")).is_some()
}

/// A runtime whose threaded loops use every thread whatever their size (these meshes are small).
fn runtime(backend: &str, threads: usize, part_size: Option<usize>) -> Runtime {
    let mut b = op2::builder()
        .backend(backend)
        .num_threads(threads)
        .setting("omp_min_per_thread", 1);
    if let Some(p) = part_size {
        b = b.part_size(p);
    }
    b.build().unwrap()
}

/// A "hub" mesh: `n` elements, each touching three of only `hubs` nodes, so that almost every pair
/// of blocks conflicts. Runs the loop `runs` times, each time from zero, `INC`-ing integer element
/// contributions through the map (so every order gives the same exact sum); returns each run's result.
fn hub_increments(rt: &Runtime, n: usize, hubs: usize, runs: usize) -> Vec<Vec<i64>> {
    let elems = rt.decl_set(n, "elems").unwrap();
    let nodes = rt.decl_set(hubs, "hubs").unwrap();
    let map: Vec<i32> = (0..n)
        .flat_map(|e| [e % hubs, (e * 7 + 1) % hubs, (e / 3 + 2) % hubs])
        .map(|v| v as i32)
        .collect();
    let e2n = rt.decl_map(&elems, &nodes, 3, map, "e2hub").unwrap();
    let w: Vec<i64> = (0..n as i64).map(|e| e % 11 + 1).collect();
    let w = rt.decl_dat(&elems, 1, &w, "w").unwrap();
    let acc = rt.decl_dat_zeros::<i64>(&nodes, 1, "acc").unwrap();
    let k = Kernel::new(
        "hub_inc",
        "void hub_inc(const long *w, long *a, long *b, long *c) { *a += *w; *b += 2 * *w; *c += 3 * *w; }",
    )
    .unwrap();
    (0..runs)
        .map(|_| {
            acc.data().unwrap().fill(0);
            rt.par_loop(
                &k,
                &elems,
                [
                    w.arg(READ),
                    acc.arg_via(&e2n, 0, INC),
                    acc.arg_via(&e2n, 1, INC),
                    acc.arg_via(&e2n, 2, INC),
                ],
            )
            .unwrap();
            acc.to_vec().unwrap()
        })
        .collect()
}

#[test]
fn inc_into_a_few_hub_nodes_never_races() {
    if !openmp_here() {
        return;
    }
    const N: usize = 20_000;
    const HUBS: usize = 5;
    let expected = hub_increments(&runtime("seq", 1, None), N, HUBS, 1).remove(0);
    // Independent check of the reference itself.
    let mut by_hand = vec![0i64; HUBS];
    for e in 0..N {
        let w = (e % 11 + 1) as i64;
        by_hand[e % HUBS] += w;
        by_hand[(e * 7 + 1) % HUBS] += 2 * w;
        by_hand[(e / 3 + 2) % HUBS] += 3 * w;
    }
    assert_eq!(expected, by_hand);
    for threads in [2, 3, 4] {
        for part in [None, Some(16), Some(64)] {
            let rt = runtime("openmp", threads, part);
            for (run, got) in hub_increments(&rt, N, HUBS, 50).iter().enumerate() {
                assert_eq!(got, &expected, "threads {threads} part {part:?} run {run}");
            }
        }
    }
}

#[test]
fn repeated_loops_accumulate_like_the_reference() {
    if !openmp_here() {
        return;
    }
    let seq = hub_increments(&runtime("seq", 1, None), 3_000, 4, 10);
    let omp = hub_increments(&runtime("openmp", 3, Some(32)), 3_000, 4, 10);
    assert_eq!(seq, omp);
    assert!(seq.windows(2).all(|w| w[0] == w[1]));
}

/// Sums `sin(i)` over a set into a Global and takes its min and max.
fn reductions(rt: &Runtime, n: usize) -> (f64, f64, f64) {
    let s = rt.decl_set(n, "s").unwrap();
    let x: Vec<f64> = (0..n).map(|i| (i as f64).sin()).collect();
    let x = rt.decl_dat(&s, 1, &x, "x").unwrap();
    let sum = rt.decl_global(1, &[0.0f64], "sum").unwrap();
    let lo = rt.decl_global(1, &[f64::MAX], "lo").unwrap();
    let hi = rt.decl_global(1, &[f64::MIN], "hi").unwrap();
    let k = Kernel::new(
        "red",
        "void red(const double *x, double *s, double *lo, double *hi) {
           *s += *x; if (*x < *lo) *lo = *x; if (*x > *hi) *hi = *x; }",
    )
    .unwrap();
    rt.par_loop(
        &k,
        &s,
        [x.arg(READ), sum.arg(INC), lo.arg(MIN), hi.arg(MAX)],
    )
    .unwrap();
    (
        sum.value().unwrap()[0],
        lo.value().unwrap()[0],
        hi.value().unwrap()[0],
    )
}

#[test]
fn reductions_are_deterministic_and_match_the_reference() {
    if !openmp_here() {
        return;
    }
    const N: usize = 100_003;
    let (s_ref, lo_ref, hi_ref) = reductions(&runtime("seq", 1, None), N);
    for threads in [1, 2, 3] {
        let rt = runtime("openmp", threads, None);
        let first = reductions(&rt, N);
        // Reordered floating-point sum: within 1e-12 relative of the sequential one.
        assert!(
            (first.0 - s_ref).abs() <= 1e-12 * s_ref.abs().max(1.0),
            "threads {threads}: {} vs {s_ref}",
            first.0
        );
        // Min and max do not depend on the order.
        assert_eq!((first.1, first.2), (lo_ref, hi_ref));
        for _ in 0..10 {
            // Bit for bit the same with the same thread count.
            assert_eq!(reductions(&rt, N), first, "threads {threads}");
        }
    }
}

#[test]
fn thread_count_comes_from_the_builder() {
    if !openmp_here() {
        return;
    }
    for threads in [1, 2, 3] {
        let rt = runtime("openmp", threads, None);
        let s = rt.decl_set(10_000, "s").unwrap();
        let tid = rt.decl_dat_zeros::<i32>(&s, 1, "tid").unwrap();
        let most = rt.decl_global(1, &[-1i32], "most").unwrap();
        // The generated unit includes <omp.h>, so a kernel may ask which thread runs it.
        let k = Kernel::new(
            "who",
            "void who(int *t, int *m) { *t = omp_get_thread_num(); if (*t > *m) *m = *t; }",
        )
        .unwrap();
        rt.par_loop(&k, &s, [tid.arg(WRITE), most.arg(MAX)])
            .unwrap();
        assert_eq!(most.value().unwrap(), [threads as i32 - 1]);
        // The static split hands each thread one contiguous range, in thread order.
        let t = tid.to_vec().unwrap();
        assert!(t.windows(2).all(|w| w[0] <= w[1]));
    }
}

#[test]
fn omp_num_threads_and_part_size_set_the_defaults() {
    if !openmp_here() {
        return;
    }
    use op2::backend_openmp::{OpenMpBackend, default_block_size};
    let c = op2::Config::from_vars(|k| (k == "OMP_NUM_THREADS").then(|| "3".to_string())).unwrap();
    let b = OpenMpBackend::new(&c).unwrap();
    assert_eq!(b.threads(), 3);
    assert_eq!(b.block_size(1 << 20), default_block_size(1 << 20, 3));
    let c = op2::Config::from_vars(|k| (k == "OP2_PART_SIZE").then(|| "64".to_string())).unwrap();
    assert_eq!(OpenMpBackend::new(&c).unwrap().block_size(1 << 20), 64);
}
