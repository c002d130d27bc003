//! Memory: the runtime's report by owner (each declared object's bytes, computed here from its
//! size; device copies on device backends; plans named by their set), and declarations that take
//! a `Vec` over without allocating its size again (the suite's counting allocator, per thread, so
//! tests running beside do not disturb it).

use op2::{INC, MemoryKind, READ, WRITE};
use op2_test_support::memory::{thread_allocated, thread_heap_now};
use op2_test_support::{backend, kernel, rt};

const MB: usize = 1 << 20;

#[test]
fn the_memory_report_lists_every_declared_object_with_its_bytes() {
    let rt = rt();
    let n = 10_000;
    let cells = rt.decl_set(n, "cells").unwrap();
    let nodes = rt.decl_set(n + 1, "nodes").unwrap();
    let cell_nodes: Vec<i32> = (0..n as i32).flat_map(|c| [c, c + 1]).collect();
    let map = rt
        .decl_map(&cells, &nodes, 2, cell_nodes, "cell_nodes")
        .unwrap();
    let q = rt
        .decl_dat(&cells, 3, vec![1.0f64; 3 * n], "q odd name")
        .unwrap();
    let counts = rt.decl_dat_zeros::<i32>(&nodes, 1, "counts").unwrap();
    let total = rt.decl_global(1, &[0.0f64], "total").unwrap();
    rt.decl_const(2, &[1.0f32, 2.0], "twice").unwrap();
    let count = kernel(
        "count",
        "void count(const double *q, int *a, int *b, double *t) { *a += 1; *b += 1; *t += q[0]; }",
    );
    rt.par_loop(
        &count,
        &cells,
        [
            q.arg(READ),
            counts.arg_via(&map, 0, INC),
            counts.arg_via(&map, 1, INC),
            total.arg(INC),
        ],
    )
    .unwrap();
    assert_eq!(total.value().unwrap(), [n as f64]);

    let r = rt.memory_report();
    let row = |kind, name| {
        r.find(kind, name)
            .unwrap_or_else(|| panic!("no {kind} `{name}` in\n{r}"))
            .clone()
    };
    let sizes = [
        (MemoryKind::Dat, "q odd name", 3 * n * 8),
        (MemoryKind::Dat, "counts", (n + 1) * 4),
        (MemoryKind::Map, "cell_nodes", 2 * n * 4),
        (MemoryKind::Global, "total", 8),
        (MemoryKind::Const, "twice", 8),
    ];
    for (kind, name, bytes) in sizes {
        let u = row(kind, name);
        assert_eq!(u.declared_bytes, bytes as u64, "{kind} {name}: {r}");
        // A device backend gives back the host copy of data only its device holds validly.
        let released = !rt.runs_on_host_memory() && name == "counts";
        let host = if released { 0 } else { bytes as u64 };
        assert_eq!(u.host_bytes, host, "{kind} {name} on {}: {r}", backend());
    }
    assert_eq!(
        r.declared_bytes(),
        (3 * n * 8 + (n + 1) * 4 + 2 * n * 4 + 8 + 8) as u64
    );
    if !rt.runs_on_host_memory() {
        // The loop used both Dats on the device: their device copies are listed with them.
        for name in ["q odd name", "counts"] {
            let u = row(MemoryKind::Dat, name);
            assert!(
                u.device_bytes >= u.declared_bytes,
                "{name} on {}: {r}",
                backend()
            );
        }
    } else {
        assert_eq!(
            r.device_bytes(),
            0,
            "a host backend holds no device memory:\n{r}"
        );
    }
    // The values are all there, brought home into a host copy allocated again.
    let expected: Vec<i32> = (0..=n)
        .map(|i| if i == 0 || i == n { 1 } else { 2 })
        .collect();
    assert_eq!(counts.to_vec().unwrap(), expected);
    assert_eq!(
        rt.memory_report()
            .find(MemoryKind::Dat, "counts")
            .unwrap()
            .host_bytes,
        ((n + 1) * 4) as u64
    );
    // Plans are named by their iteration set, over its elements.
    for u in r.uses.iter().filter(|u| u.kind == MemoryKind::Plan) {
        assert!(u.name.starts_with("plan: cells "), "{}: {r}", u.name);
    }
    // The table prints every row.
    let table = r.to_string();
    assert!(
        table.contains("q odd name") && table.contains("cell_nodes"),
        "{table}"
    );
}

#[test]
fn a_host_copy_the_program_reads_is_kept_between_device_loops() {
    let rt = rt();
    let s = rt.decl_set(1000, "s").unwrap();
    let a = rt.decl_dat_zeros::<f64>(&s, 2, "a").unwrap();
    let b = rt.decl_dat_zeros::<f64>(&s, 2, "b").unwrap();
    let add = kernel(
        "add_one",
        "void add_one(double *x) { x[0] += 1; x[1] += 2; }",
    );
    for round in 1..=3 {
        rt.par_loop(&add, &s, [a.arg(op2::RW)]).unwrap();
        rt.par_loop(&add, &s, [b.arg(op2::RW)]).unwrap();
        rt.flush().unwrap();
        // `a` is read every round: its host copy stays. `b` is never read until the end: on a
        // device backend its host copy is given back.
        let r = rt.memory_report();
        let a_host = r.find(MemoryKind::Dat, "a").unwrap().host_bytes;
        assert_eq!(
            a_host,
            if round == 1 && !rt.runs_on_host_memory() {
                0
            } else {
                16_000
            }
        );
        let b_host = r.find(MemoryKind::Dat, "b").unwrap().host_bytes;
        assert_eq!(
            b_host,
            if rt.runs_on_host_memory() { 16_000 } else { 0 },
            "{r}"
        );
        let values = a.to_vec().unwrap();
        assert!(
            values
                .chunks(2)
                .all(|v| v == [round as f64, 2.0 * round as f64])
        );
    }
    // Read at last, from the device, into a host copy allocated again; then written on the host.
    assert!(b.to_vec().unwrap().chunks(2).all(|v| v == [3.0, 6.0]));
    b.data().unwrap()[0] = -1.0;
    rt.par_loop(&add, &s, [b.arg(op2::RW)]).unwrap();
    let b = b.to_vec().unwrap();
    assert_eq!(&b[..4], &[0.0, 8.0, 4.0, 8.0]);
}

#[test]
fn a_dropped_dat_leaves_the_report() {
    let rt = rt();
    let s = rt.decl_set(100, "s").unwrap();
    let kept = rt.decl_dat_zeros::<f64>(&s, 1, "kept").unwrap();
    let gone = rt.decl_dat_zeros::<f64>(&s, 2, "gone").unwrap();
    let zero = kernel(
        "zero",
        "void zero(double *a, double *b) { *a = 0; b[0] = b[1] = 0; }",
    );
    rt.par_loop(&zero, &s, [kept.arg(WRITE), gone.arg(WRITE)])
        .unwrap();
    rt.flush().unwrap();
    assert!(rt.memory_report().find(MemoryKind::Dat, "gone").is_some());
    drop(gone);
    let r = rt.memory_report();
    assert!(r.find(MemoryKind::Dat, "gone").is_none(), "{r}");
    assert_eq!(r.find(MemoryKind::Dat, "kept").unwrap().declared_bytes, 800);
    assert_eq!(r.declared_bytes(), 800, "{r}");
}

#[test]
fn declaring_from_a_vec_allocates_nothing_of_its_size() {
    let rt = rt();
    let n = 1 << 20;
    let s = rt.decl_set(n, "s").unwrap();
    let t = rt.decl_set(n, "t").unwrap();

    // A Vec is taken over: the declaration allocates far less than its 8 MB.
    let values = vec![2.5f64; n];
    let before = thread_allocated();
    let owned = rt.decl_dat(&s, 1, values, "owned").unwrap();
    assert!(thread_allocated() - before < MB, "decl_dat(Vec) copied");

    // A slice is copied once: the same call allocates its size (so the check above can fail).
    let values = vec![2.5f64; n];
    let before = thread_allocated();
    let copied = rt.decl_dat(&s, 1, &values[..], "copied").unwrap();
    let grew = thread_allocated() - before;
    assert!(
        (8 * n..8 * n + MB).contains(&grew),
        "decl_dat(&[T]) allocated {grew}"
    );

    // Zeros are allocated once, not filled and copied.
    let before = thread_allocated();
    let zeros = rt.decl_dat_zeros::<f64>(&s, 1, "zeros").unwrap();
    let grew = thread_allocated() - before;
    assert!(
        (8 * n..8 * n + MB).contains(&grew),
        "decl_dat_zeros allocated {grew}"
    );

    // A Map's Vec is taken over too.
    let to: Vec<i32> = (0..n as i32).rev().collect();
    let before = thread_allocated();
    let map = rt.decl_map(&s, &t, 1, to, "reverse").unwrap();
    assert!(thread_allocated() - before < MB, "decl_map(Vec) copied");

    // And the data is what was given.
    let held = thread_heap_now();
    assert_eq!(owned.to_vec().unwrap()[n - 1], 2.5);
    assert_eq!(copied.to_vec().unwrap()[0], 2.5);
    assert_eq!(zeros.to_vec().unwrap()[n / 2], 0.0);
    assert_eq!(map.values()[0], n as i32 - 1);
    assert!(thread_heap_now() - held < (3 * MB) as isize);
}

#[test]
fn the_report_does_not_wait_for_a_host_guard() {
    let rt = rt();
    let s = rt.decl_set(10, "s").unwrap();
    let d = rt.decl_dat(&s, 1, vec![1.0f64; 10], "held").unwrap();
    // The caller holds the Dat's host data: the report must not wait for it (it would wait for
    // ever on this thread).
    let guard = d.data().unwrap();
    let r = rt.memory_report();
    assert_eq!(r.find(MemoryKind::Dat, "held").unwrap().host_bytes, 80);
    drop(guard);
}

#[test]
fn plans_kept_on_the_host_hold_nothing_per_element() {
    // A loop through maps: device backends stage it (or colour it), openmp colours its blocks.
    // Once a plan's arrays are on the device (or were never needed), the host keeps its counts
    // and per-block arrays only: well under the 4 bytes per element a full plan's element
    // colours alone take.
    let rt = rt();
    let n = 50_000;
    let edges = rt.decl_set(n, "edges").unwrap();
    let nodes = rt.decl_set(n + 1, "nodes").unwrap();
    let ends: Vec<i32> = (0..n as i32).flat_map(|e| [e, e + 1]).collect();
    let map = rt.decl_map(&edges, &nodes, 2, ends, "ends").unwrap();
    let x: Vec<f64> = (0..=n).map(|i| i as f64).collect();
    let x = rt.decl_dat(&nodes, 1, x, "x").unwrap();
    let flux = rt.decl_dat_zeros::<f64>(&nodes, 1, "flux").unwrap();
    let k = kernel(
        "edge_flux",
        "void edge_flux(const double *a, const double *b, double *fa, double *fb) \
         { *fa += *b - *a; *fb -= *b - *a; }",
    );
    for _ in 0..2 {
        rt.par_loop(
            &k,
            &edges,
            [
                x.arg_via(&map, 0, READ),
                x.arg_via(&map, 1, READ),
                flux.arg_via(&map, 0, INC),
                flux.arg_via(&map, 1, INC),
            ],
        )
        .unwrap();
    }
    let f = flux.to_vec().unwrap();
    assert_eq!((f[0], f[n / 2], f[n]), (2.0, 0.0, -2.0));
    let r = rt.memory_report();
    for u in r.uses.iter().filter(|u| u.kind == MemoryKind::Plan) {
        assert!(
            u.host_bytes < (2 * n) as u64,
            "{} on {}: {r}",
            u.name,
            backend()
        );
    }
}
