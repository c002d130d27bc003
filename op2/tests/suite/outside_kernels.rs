//! Kernels that reach outside op2-rs: linked with other libraries (`Kernel::with_link_args`,
//! today's PyOP2's `ldargs`) and compiled with arguments of their own (`with_compile_args`): a
//! shared library and header built here, called from kernels of direct, indirect, extruded and
//! fused lazy loops, against values computed here; a missing library is the compiler's error, a
//! kernel without its link arguments does not reuse the linked one's code, bad arguments are
//! refused. And kernels acting on host state through a pointer handed in a Global
//! (`with_host_effects`, today's `PassthroughArg`): every element once, in order, on every
//! thread count. The host backends run them; the device backends refuse them with a typed error.

use op2::{INC, Kernel, Op2Error, READ, RW, Region, WRITE};
use op2_test_support::{backend, ring, rt};
use std::path::Path;
use std::process::Command;

fn host() -> bool {
    matches!(backend().as_str(), "seq" | "openmp")
}

/// A folder holding `liblinkedscale.so`, whose `linked_scale(x)` is `3 x + 1` and whose
/// `linked_weight(i)` is `i % 7`.
fn library() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let src = dir.path().join("scale.c");
    std::fs::write(
        &src,
        "double linked_scale(double x) { return 3.0 * x + 1.0; }\n\
         int linked_weight(int i) { return i % 7; }\n",
    )
    .unwrap();
    let out = Command::new("cc")
        .args(["-shared", "-fPIC", "-o"])
        .arg(dir.path().join("liblinkedscale.so"))
        .arg(&src)
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir
}

fn link_args(dir: &Path) -> Vec<String> {
    vec![format!("-L{}", dir.display()), "-llinkedscale".into()]
}

fn linked(dir: &Path, name: &str, source: &str) -> Kernel {
    let k = Kernel::new(name, source)
        .unwrap()
        .with_link_args(link_args(dir))
        .unwrap();
    assert_eq!(k.link_args(), link_args(dir).as_slice());
    k
}

fn refused<T: std::fmt::Debug>(r: op2::Result<T>) {
    match r {
        Err(Op2Error::Unsupported { reason, .. }) => {
            assert!(reason.contains("arguments of its own"), "{reason}")
        }
        other => panic!("expected the device backends' refusal, got {other:?}"),
    }
}

#[test]
fn a_linked_kernel_runs_direct_and_fused_with_c_kernels() {
    let dir = library();
    let rt = rt();
    let n = 10_000;
    let s = rt.decl_set(n, "s").unwrap();
    let x = rt
        .decl_dat(&s, 1, (0..n).map(|i| i as f64).collect::<Vec<_>>(), "x")
        .unwrap();
    let total = rt.decl_global(1, &[0.0f64], "total").unwrap();
    // A C loop, the linked one, another linked the same way: a lazy chain whose linked loops
    // the graph fuses into one unit linked with the library (a C loop and a linked one it
    // does not fuse: they are linked differently).
    let twice = Kernel::new("twice", "void twice(double *x) { *x *= 2; }").unwrap();
    rt.par_loop(&twice, &s, [x.arg(RW)]).unwrap();
    let before = rt.lazy_stats();
    let k = linked(
        dir.path(),
        "scale",
        "double linked_scale(double);\n\
         void scale(double *x, double *t) { *x = linked_scale(*x); *t += *x; }",
    );
    let r = rt.par_loop(&k, &s, [x.arg(RW), total.arg(INC)]);
    if !host() {
        return refused(r);
    }
    r.unwrap();
    let plus = linked(dir.path(), "plus", "void plus(double *x) { *x += 1; }");
    rt.par_loop(&plus, &s, [x.arg(RW)]).unwrap();
    let want: Vec<f64> = (0..n).map(|i| 3.0 * (2.0 * i as f64) + 2.0).collect();
    assert_eq!(x.to_vec().unwrap(), want);
    // The two linked loops ran as one (a fused unit that failed to build would have run them
    // apart, unseen but for this count), the C loop on its own.
    let after = rt.lazy_stats();
    assert_eq!(after.chain_fusions - before.chain_fusions, 1, "{after:?}");
    let sum: f64 = (0..n).map(|i| 3.0 * (2.0 * i as f64) + 1.0).sum();
    assert_eq!(total.value().unwrap(), [sum]);
}

#[test]
fn a_linked_kernel_increments_through_a_map() {
    let dir = library();
    let rt = rt();
    let n = 20_000;
    let (nodes, edges, m) = ring(&rt, n);
    let acc = rt.decl_dat_zeros::<i32>(&nodes, 1, "acc").unwrap();
    let id = rt
        .decl_dat(&edges, 1, (0..n as i32).collect::<Vec<_>>(), "id")
        .unwrap();
    let k = linked(
        dir.path(),
        "weigh",
        "int linked_weight(int);\n\
         void weigh(const int *e, int *a, int *b) { int w = linked_weight(*e); *a += w; *b += 10 * w; }",
    );
    let r = rt.par_loop(
        &k,
        &edges,
        [
            id.arg(READ),
            acc.arg_via(&m, 0, INC),
            acc.arg_via(&m, 1, INC),
        ],
    );
    if !host() {
        return refused(r);
    }
    r.unwrap();
    // The ring's edge e joins nodes e and e + 1.
    let mut want = vec![0i32; n];
    for e in 0..n {
        want[e] += (e % 7) as i32;
        want[(e + 1) % n] += 10 * (e % 7) as i32;
    }
    assert_eq!(acc.to_vec().unwrap(), want);
}

#[test]
fn a_linked_kernel_walks_extruded_columns() {
    let dir = library();
    let rt = rt();
    let layers = vec![4usize, 2, 6];
    let base = rt.decl_set(layers.len(), "base").unwrap();
    let cells = rt
        .decl_extruded_set(&base, layers.clone(), "cells")
        .unwrap();
    let total: usize = layers.iter().map(|l| l - 1).sum();
    let v = rt
        .decl_dat(
            &cells,
            1,
            (0..total).map(|i| i as f64).collect::<Vec<_>>(),
            "v",
        )
        .unwrap();
    let k = linked(
        dir.path(),
        "layered",
        "double linked_scale(double);\n\
         void layered(double *v, int layer) { *v = linked_scale(*v) + layer; }",
    );
    let r = rt.par_loop_with_layer(&k, &cells, Region::All, [v.arg(RW)]);
    if !host() {
        return refused(r);
    }
    r.unwrap();
    let want: Vec<f64> = layers
        .iter()
        .flat_map(|&l| 0..l - 1)
        .enumerate()
        .map(|(i, layer)| 3.0 * i as f64 + 1.0 + layer as f64)
        .collect();
    assert_eq!(v.to_vec().unwrap(), want);
}

#[test]
fn a_kernel_without_its_libraries_fails_and_does_not_share_the_linked_code() {
    let dir = library();
    let rt = rt();
    let s = rt.decl_set(5, "s").unwrap();
    let x = rt.decl_dat(&s, 1, vec![1.0f64; 5], "x").unwrap();
    let source = "double linked_scale(double);\nvoid use_it(double *x) { *x = linked_scale(*x); }";
    let with = linked(dir.path(), "use_it", source);
    let r = rt.par_loop(&with, &s, [x.arg(RW)]);
    if !host() {
        return refused(r);
    }
    r.unwrap();
    assert_eq!(x.to_vec().unwrap(), vec![4.0; 5]);
    // The same source without the library: its code is not the linked kernel's (the link
    // arguments are part of the compiled code's key), so loading it finds no `linked_scale`.
    let without = Kernel::new("use_it", source).unwrap();
    let r = rt
        .par_loop(&without, &s, [x.arg(RW)])
        .and_then(|_| x.to_vec());
    match r {
        Err(Op2Error::Load { reason, .. }) => assert!(reason.contains("linked_scale"), "{reason}"),
        Err(Op2Error::Compile { message, .. }) => {
            assert!(message.contains("linked_scale"), "{message}")
        }
        other => panic!("expected the unresolved symbol, got {other:?}"),
    }
    // A library that is not there: the linker's message, with the generated source's path.
    let missing = Kernel::new("set_one", "void set_one(double *x) { *x = 1; }")
        .unwrap()
        .with_link_args(["-lop2_no_such_library"])
        .unwrap();
    let r = rt
        .par_loop(&missing, &s, [x.arg(WRITE)])
        .and_then(|_| x.to_vec());
    match r {
        Err(Op2Error::Compile {
            message,
            source_path,
            ..
        }) => {
            assert!(message.contains("op2_no_such_library"), "{message}");
            assert!(source_path.exists(), "{}", source_path.display());
        }
        other => panic!("expected the linker's error, got {other:?}"),
    }
}

#[test]
fn link_arguments_no_linker_takes_are_refused() {
    for bad in ["", "  ", "-lfoo\0bar", "-L", "-I"] {
        let r = Kernel::new("k", "void k(double *x) { }")
            .unwrap()
            .with_link_args([bad]);
        assert!(
            matches!(r, Err(Op2Error::LinkArgs { .. })),
            "{bad:?}: {r:?}"
        );
    }
    // Repeats are kept once, in order; a shared kernel gets a new id.
    let k = Kernel::new("k", "void k(double *x) { }").unwrap();
    let again = k.clone().with_link_args(["-lm", "-lm", "-ldl"]).unwrap();
    assert_eq!(again.link_args(), ["-lm", "-ldl"]);
    assert_ne!(again.id(), k.id());
    assert!(k.link_args().is_empty());
    // Relative folders are made absolute from the current one (the cache key and the run-time
    // search path must not depend on where a later program runs).
    let here = std::env::current_dir().unwrap();
    let rel = k
        .clone()
        .with_link_args(["-Llibs", "-lfoo"])
        .unwrap()
        .with_compile_args(["-Iinclude", "-DX=1"])
        .unwrap();
    assert_eq!(
        rel.link_args(),
        [format!("-L{}", here.join("libs").display()), "-lfoo".into()]
    );
    assert_eq!(
        rel.compile_args(),
        [
            format!("-I{}", here.join("include").display()),
            "-DX=1".into()
        ]
    );
}

#[test]
fn compile_arguments_find_headers_and_define_macros() {
    let dir = library();
    std::fs::write(
        dir.path().join("linked_scale.h"),
        "double linked_scale(double);\n#define SHIFT (OFFSET + 0.5)\n",
    )
    .unwrap();
    let rt = rt();
    let n = 100;
    let s = rt.decl_set(n, "s").unwrap();
    let x = rt
        .decl_dat(&s, 1, (0..n).map(|i| i as f64).collect::<Vec<_>>(), "x")
        .unwrap();
    let y = rt.decl_dat_zeros::<f64>(&s, 1, "y").unwrap();
    let source = "#include \"linked_scale.h\"\n\
                  void shifted(const double *x, double *y) { *y = linked_scale(*x) + SHIFT; }";
    let k = |offset: i32| {
        Kernel::new("shifted", source)
            .unwrap()
            .with_compile_args([
                format!("-I{}", dir.path().display()),
                format!("-DOFFSET={offset}"),
            ])
            .unwrap()
            .with_link_args(link_args(dir.path()))
            .unwrap()
    };
    // The same source with two definitions of the macro: two compiled codes, each its own (and
    // two loops not fused, as one unit has one definition).
    let (two, five) = (k(2), k(5));
    let r = rt.par_loop(&two, &s, [x.arg(READ), y.arg(WRITE)]);
    if !host() {
        return refused(r);
    }
    r.unwrap();
    let after_two = y.to_vec().unwrap();
    rt.par_loop(&five, &s, [x.arg(READ), y.arg(RW)]).unwrap();
    let want = |o: f64| {
        (0..n)
            .map(|i| 3.0 * i as f64 + 1.0 + o + 0.5)
            .collect::<Vec<_>>()
    };
    assert_eq!(after_two, want(2.0));
    assert_eq!(y.to_vec().unwrap(), want(5.0));
    // Lazy siblings with different definitions over one set: each keeps its own.
    let z = rt.decl_dat_zeros::<f64>(&s, 1, "z").unwrap();
    rt.par_loop(&two, &s, [x.arg(READ), y.arg(WRITE)]).unwrap();
    rt.par_loop(&five, &s, [x.arg(READ), z.arg(WRITE)]).unwrap();
    assert_eq!(y.to_vec().unwrap(), want(2.0));
    assert_eq!(z.to_vec().unwrap(), want(5.0));
}

#[test]
fn a_kernel_with_host_effects_runs_every_element_once_in_order() {
    // The state the kernel acts on, reached through its address in a Global: calls, the sum of
    // what it saw, and the last element, which each call compares with its own.
    #[repr(C)]
    struct Counter {
        calls: i64,
        sum: f64,
        last: f64,
        out_of_order: i64,
    }
    let mut counter = Counter {
        calls: 0,
        sum: 0.0,
        last: -1.0,
        out_of_order: 0,
    };
    let rt = rt();
    let n = 100_000;
    let s = rt.decl_set(n, "s").unwrap();
    let x = rt
        .decl_dat(&s, 1, (0..n).map(|i| i as f64).collect::<Vec<_>>(), "x")
        .unwrap();
    let y = rt.decl_dat_zeros::<f64>(&s, 1, "y").unwrap();
    let address = &mut counter as *mut Counter as u64;
    let handle = rt.decl_global(1, &[address], "handle").unwrap();
    let k = Kernel::new(
        "count",
        "#include <stdint.h>\n\
         typedef struct { int64_t calls; double sum; double last; int64_t out_of_order; } Counter;\n\
         void count(const double *x, const uint64_t *h, double *y) {\n\
           Counter *c = (Counter *)(uintptr_t)*h;\n\
           c->calls += 1; c->sum += *x; c->out_of_order += *x < c->last; c->last = *x;\n\
           *y = 2 * *x;\n\
         }",
    )
    .unwrap()
    .with_host_effects();
    assert!(k.has_host_effects());
    // A plain loop before it, lazily recorded: not fused with it.
    let twice = Kernel::new("twice", "void twice(double *y) { *y *= 2; }").unwrap();
    rt.par_loop(&twice, &s, [y.arg(RW)]).unwrap();
    let r = rt.par_loop(&k, &s, [x.arg(READ), handle.arg(READ), y.arg(WRITE)]);
    if !host() {
        match r {
            Err(Op2Error::Unsupported { reason, .. }) => {
                assert!(reason.contains("outside its args"), "{reason}")
            }
            other => panic!("expected the device backends' refusal, got {other:?}"),
        }
        return;
    }
    r.unwrap();
    let want: Vec<f64> = (0..n).map(|i| 2.0 * i as f64).collect();
    assert_eq!(y.to_vec().unwrap(), want);
    // The loop has run (y was read back): the counter is final.
    let c = &counter;
    assert_eq!(c.calls, n as i64);
    assert_eq!(c.sum, (n * (n - 1) / 2) as f64);
    assert_eq!((c.last, c.out_of_order), ((n - 1) as f64, 0));
}
