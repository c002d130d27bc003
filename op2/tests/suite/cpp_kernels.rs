//! C++ kernels (`Kernel::cpp`, PyOP2's `cpp=True`): `<cmath>`, templates and `std::` in the
//! kernel, loops direct, through maps and reducing, and beside C kernels in one lazy chain
//! (never fused with them), against values computed here. The host backends run them; the
//! device backends refuse them with a typed error.

use op2::{INC, Kernel, Op2Error, READ, RW, WRITE};
use op2_test_support::{backend, ring, rt};

fn host() -> bool {
    matches!(backend().as_str(), "seq" | "openmp")
}

fn cpp(name: &str, source: &str) -> Kernel {
    let k = Kernel::new(name, source).unwrap().cpp();
    assert!(k.is_cpp());
    k
}

fn refused<T: std::fmt::Debug>(r: op2::Result<T>) {
    match r {
        Err(Op2Error::Unsupported { reason, .. }) => assert!(reason.contains("C++"), "{reason}"),
        other => panic!("expected the device backends' refusal of C++, got {other:?}"),
    }
}

#[test]
fn a_cpp_kernel_with_templates_and_std_runs_beside_c_kernels() {
    let rt = rt();
    let n = 20_000;
    let s = rt.decl_set(n, "s").unwrap();
    let x = rt
        .decl_dat(
            &s,
            2,
            (0..2 * n).map(|i| i as f64 - n as f64).collect::<Vec<_>>(),
            "x",
        )
        .unwrap();
    let total = rt.decl_global(1, &[0.0f64], "total").unwrap();
    // A C loop, then the C++ one, then C again over the same set: a lazy chain the graph would
    // fuse if the kernels were all C (it does not: C is not C++).
    let twice = Kernel::new("twice", "void twice(double *x) { x[0] *= 2; x[1] *= 2; }").unwrap();
    rt.par_loop(&twice, &s, [x.arg(RW)]).unwrap();
    let k = cpp(
        "magnitude",
        "#include <cmath>\n\
         template <typename T> static T square(T v) { return v * v; }\n\
         void magnitude(double *x, double *t) {\n\
           x[0] = std::abs(x[0]);\n\
           x[1] = std::sqrt(square(x[1]));\n\
           *t += x[0] + x[1];\n\
         }",
    );
    let r = rt.par_loop(&k, &s, [x.arg(RW), total.arg(INC)]);
    if !host() {
        return refused(r);
    }
    r.unwrap();
    let plus = Kernel::new("plus", "void plus(double *x) { x[0] += 1; }").unwrap();
    rt.par_loop(&plus, &s, [x.arg(RW)]).unwrap();
    let want: Vec<f64> = (0..2 * n)
        .map(|i| (2.0 * (i as f64 - n as f64)).abs() + if i % 2 == 0 { 1.0 } else { 0.0 })
        .collect();
    assert_eq!(x.to_vec().unwrap(), want);
    let sum: f64 = (0..2 * n)
        .map(|i| (2.0 * (i as f64 - n as f64)).abs())
        .sum();
    assert_eq!(total.value().unwrap(), [sum]);
}

#[test]
fn a_cpp_kernel_increments_through_a_map() {
    let rt = rt();
    let n = 30_000;
    let (nodes, edges, m) = ring(&rt, n);
    let acc = rt.decl_dat_zeros::<i64>(&nodes, 1, "acc").unwrap();
    let w = rt
        .decl_dat(&edges, 1, (0..n as i64).collect::<Vec<_>>(), "w")
        .unwrap();
    let k = cpp(
        "spread",
        "#include <algorithm>\n\
         void spread(const int64_t *w, int64_t *a, int64_t *b) { *a += std::max<int64_t>(*w, 5); *b += 1; }",
    );
    let r = rt.par_loop(
        &k,
        &edges,
        [
            w.arg(READ),
            acc.arg_via(&m, 0, INC),
            acc.arg_via(&m, 1, INC),
        ],
    );
    if !host() {
        return refused(r);
    }
    r.unwrap();
    let want: Vec<i64> = (0..n as i64).map(|v| v.max(5) + 1).collect();
    assert_eq!(acc.to_vec().unwrap(), want);
}

#[test]
fn a_cpp_kernel_that_does_not_compile_names_the_compiler_and_the_source() {
    let rt = rt();
    let s = rt.decl_set(4, "s").unwrap();
    let x = rt.decl_dat_zeros::<f64>(&s, 1, "x").unwrap();
    let k = cpp(
        "bad",
        "void bad(double *x) { *x = std::no_such_thing(1.0); }",
    );
    match rt.par_loop(&k, &s, [x.arg(WRITE)]) {
        Err(Op2Error::Compile {
            message,
            source_path,
            ..
        }) => {
            assert!(message.contains("no_such_thing"), "{message}");
            assert!(source_path.exists());
        }
        other if !host() => refused(other),
        other => panic!("expected a compile error, got {other:?}"),
    }
}

#[test]
fn a_cpp_kernel_over_an_extruded_set_and_through_a_packed_buffer() {
    let rt = rt();
    let layers = vec![3usize, 5, 2, 4];
    let base = rt.decl_set(layers.len(), "base").unwrap();
    let cells = rt
        .decl_extruded_set(&base, layers.clone(), "cells")
        .unwrap();
    let nodes = rt
        .decl_extruded_nodes(&base, layers.clone(), "nodes")
        .unwrap();
    let starts: Vec<i32> = layers
        .iter()
        .scan(0, |s, &l| {
            let a = *s;
            *s += l as i32;
            Some(a)
        })
        .collect();
    // Each cell's bottom and top node, one layer up per cell.
    let bottom: Vec<i32> = starts.iter().flat_map(|&s| [s, s + 1]).collect();
    let c2n = rt
        .decl_extruded_map(&cells, &nodes, 2, bottom, [1, 1], "c2n")
        .unwrap();
    let n: usize = layers.iter().sum();
    let by_entry = rt.decl_dat_zeros::<f64>(&nodes, 1, "by_entry").unwrap();
    let by_buffer = rt.decl_dat_zeros::<f64>(&nodes, 1, "by_buffer").unwrap();
    let k = cpp(
        "ends",
        "#include <cmath>\nvoid ends(double *lo, double *hi) { *lo += std::sqrt(4.0); *hi += 1; }",
    );
    let r = rt.par_loop(
        &k,
        &cells,
        [
            by_entry.arg_via(&c2n, 0, INC),
            by_entry.arg_via(&c2n, 1, INC),
        ],
    );
    if !host() {
        return refused(r);
    }
    r.unwrap();
    let packed = cpp(
        "ends_packed",
        "#include <cmath>\nvoid ends_packed(double *x) { x[0] += std::sqrt(4.0); x[1] += 1; }",
    );
    rt.par_loop(&packed, &cells, [by_buffer.arg_buffer(&c2n, INC)])
        .unwrap();
    let mut want = vec![0.0; n];
    for (&l, &s) in layers.iter().zip(&starts) {
        for k in 0..l - 1 {
            want[s as usize + k] += 2.0;
            want[s as usize + k + 1] += 1.0;
        }
    }
    assert_eq!(by_entry.to_vec().unwrap(), want);
    assert_eq!(by_buffer.to_vec().unwrap(), want);
}
