//! Local iteration spaces (PyOP2's `op2.i`): kernels computing one entry of an element vector or
//! one block of an element matrix, against the same loops written with whole-element kernels;
//! over an extruded mesh too; mismatched extents and signatures are typed errors.

use op2::la::{self, LoopArg, Mat, Sparsity};
use op2::{INC, Op2Error, READ, RW, Region, Runtime, WRITE};
use op2_test_support::{builder, close, kernel};

/// A strip of `n` triangles over `n + 2` nodes (triangle t: nodes t, t+1, t+2), with 2-D
/// coordinates: (triangles, nodes, map, coordinates).
fn strip(rt: &Runtime, n: usize) -> (op2::Set, op2::Set, op2::Map, op2::Dat<f64>) {
    let tris = rt.decl_set(n, "tris").unwrap();
    let nodes = rt.decl_set(n + 2, "nodes").unwrap();
    let t2n: Vec<i32> = (0..n as i32)
        .flat_map(|t| {
            if t % 2 == 0 {
                [t, t + 1, t + 2]
            } else {
                [t + 1, t, t + 2]
            }
        })
        .collect();
    let map = rt.decl_map(&tris, &nodes, 3, t2n, "t2n").unwrap();
    let xy: Vec<f64> = (0..n + 2)
        .flat_map(|i| [(i / 2) as f64 + 0.1 * (i as f64).sin(), (i % 2) as f64])
        .collect();
    let x = rt.decl_dat(&nodes, 2, xy, "x").unwrap();
    (tris, nodes, map, x)
}

const AREA: &str = "static double area(const double *x[3]) {
  double d = (x[1][0] - x[0][0]) * (x[2][1] - x[0][1]) - (x[2][0] - x[0][0]) * (x[1][1] - x[0][1]);
  return 0.5 * (d < 0.0 ? -d : d);
}
";

#[test]
fn a_vector_entry_per_call_equals_the_whole_element_kernel() {
    let rt = builder().build().unwrap();
    let (tris, nodes, map, x) = strip(&rt, 37);
    let per = kernel(
        "rhs_i",
        &format!(
            "{AREA}void rhs_i(double *b, const double *x[3], int i) {{ *b += area(x) * (i + 1) / 3.0; }}"
        ),
    );
    let whole = kernel(
        "rhs_all",
        &format!(
            "{AREA}void rhs_all(double *b[3], const double *x[3]) {{ for (int i = 0; i < 3; i++) b[i][0] += area(x) * (i + 1) / 3.0; }}"
        ),
    );
    let b1 = rt.decl_dat_zeros::<f64>(&nodes, 1, "b1").unwrap();
    let b2 = rt.decl_dat_zeros::<f64>(&nodes, 1, "b2").unwrap();
    rt.par_loop(
        &per,
        &tris,
        [b1.arg_entries(&map, INC), x.arg_row(&map, READ)],
    )
    .unwrap();
    rt.par_loop(
        &whole,
        &tris,
        [b2.arg_row(&map, INC), x.arg_row(&map, READ)],
    )
    .unwrap();
    let (v1, v2) = (b1.to_vec().unwrap(), b2.to_vec().unwrap());
    assert!(close(&v1, &v2, 1e-14));
    assert!(v1.iter().all(|&v| v > 0.0));
}

/// PyOP2 0.8.2's `dat(access, map[op2.i[0]], flatten=True)`: one call per value of the element's
/// rows, component-major, against the whole-element kernel over the flattened rows.
#[test]
fn a_flattened_value_per_call_equals_the_whole_element_kernel() {
    let rt = builder().build().unwrap();
    let (tris, nodes, map, x) = strip(&rt, 23);
    for dim in [1usize, 2, 3] {
        let n = 3 * dim;
        let y: Vec<f64> = (0..(25 * dim)).map(|v| 1.0 + (v as f64).cos()).collect();
        let y = rt.decl_dat(&nodes, dim, y, "y").unwrap();
        let per = kernel(
            "flat_i",
            &format!(
                "{AREA}void flat_i(double *b, const double *y, const double *x[3], int i) {{
                   *b += area(x) * *y * (i + 1); }}"
            ),
        );
        let whole = kernel(
            "flat_all",
            &format!(
                "{AREA}void flat_all(double *b[{n}], const double *y[{n}], const double *x[3]) {{
                   for (int i = 0; i < {n}; i++) *b[i] += area(x) * *y[i] * (i + 1); }}"
            ),
        );
        let b1 = rt.decl_dat_zeros::<f64>(&nodes, dim, "b1").unwrap();
        let b2 = rt.decl_dat_zeros::<f64>(&nodes, dim, "b2").unwrap();
        rt.par_loop(
            &per,
            &tris,
            [
                b1.arg_entries_flattened(&map, INC),
                y.arg_entries_flattened(&map, READ),
                x.arg_row(&map, READ),
            ],
        )
        .unwrap();
        rt.par_loop(
            &whole,
            &tris,
            [
                b2.arg_row_flattened(&map, INC),
                y.arg_row_flattened(&map, READ),
                x.arg_row(&map, READ),
            ],
        )
        .unwrap();
        let (v1, v2) = (b1.to_vec().unwrap(), b2.to_vec().unwrap());
        assert!(close(&v1, &v2, 1e-13), "dim {dim}");
        // Component c of node k was visited with index c * 3 + its place in the element: the
        // components differ, so the order is not entry-major.
        assert!(v1.iter().all(|&v| v > 0.0), "dim {dim}");
        // Extents: a flattened arg of dim 2 runs over 6 values, a plain per-entry one over 3.
        if dim == 2 {
            let one = rt.decl_dat_zeros::<f64>(&nodes, 1, "one").unwrap();
            let e = rt
                .par_loop(
                    &kernel(
                        "mix_i",
                        "void mix_i(double *b, double *c, int i) { *b += *c; }",
                    ),
                    &tris,
                    [
                        b1.arg_entries_flattened(&map, INC),
                        one.arg_entries(&map, INC),
                    ],
                )
                .unwrap_err();
            assert!(matches!(e, Op2Error::IterationSpace { .. }), "{e}");
        }
    }
}

#[test]
fn a_matrix_entry_per_call_equals_the_element_matrix() {
    let rt = builder().build().unwrap();
    let (tris, _, map, x) = strip(&rt, 25);
    for dims in [(1usize, 1usize), (2, 2), (1, 3)] {
        let (br, bc) = dims;
        // Entry (i, j)'s block: [a][b] = area * (1 + i + 2j) * (1 + a + 3b).
        let per = kernel(
            "mass_ij",
            &format!(
                "{AREA}void mass_ij(double A[{br}][{bc}], const double *x[3], int i, int j) {{
                   for (int a = 0; a < {br}; a++) for (int b = 0; b < {bc}; b++)
                     A[a][b] += area(x) * (1 + i + 2 * j) * (1 + a + 3 * b); }}"
            ),
        );
        let (r, c) = (3 * br, 3 * bc);
        let whole = kernel(
            "mass_all",
            &format!(
                "{AREA}void mass_all(double A[{}], const double *x[3]) {{
                   for (int i = 0; i < 3; i++) for (int j = 0; j < 3; j++)
                   for (int a = 0; a < {br}; a++) for (int b = 0; b < {bc}; b++)
                     A[(i * {br} + a) * {c} + j * {bc} + b] = area(x) * (1 + i + 2 * j) * (1 + a + 3 * b); }}",
                r * c
            ),
        );
        let sp = Sparsity::new(&[(&map, &map)], dims, "sp").unwrap();
        let assemble = |k: &op2::Kernel, per_entry: bool| {
            let m = Mat::new(&sp, "M");
            let arg = if per_entry {
                m.arg_entries(INC, &map, &map)
            } else {
                m.arg(INC, &map, &map)
            };
            la::par_loop(
                &rt,
                k,
                &tris,
                [LoopArg::Mat(arg), LoopArg::Op2(x.arg_row(&map, READ))],
            )
            .unwrap();
            m.assemble();
            m.values()
        };
        // PyOP2 0.8.3 to 0.10's form: the element matrix as a 2-D array.
        let as_2d = kernel(
            "mass_2d",
            &format!(
                "{AREA}void mass_2d(double A[{r}][{c}], const double *x[3]) {{
                   for (int i = 0; i < 3; i++) for (int j = 0; j < 3; j++)
                   for (int a = 0; a < {br}; a++) for (int b = 0; b < {bc}; b++)
                     A[i * {br} + a][j * {bc} + b] = area(x) * (1 + i + 2 * j) * (1 + a + 3 * b); }}"
            ),
        );
        // PyOP2's flatten=True block: rows and columns component by component.
        let flat = kernel(
            "mass_flat",
            &format!(
                "{AREA}void mass_flat(double A[{r}][{c}], const double *x[3]) {{
                   for (int i = 0; i < 3; i++) for (int j = 0; j < 3; j++)
                   for (int a = 0; a < {br}; a++) for (int b = 0; b < {bc}; b++)
                     A[a * 3 + i][b * 3 + j] = area(x) * (1 + i + 2 * j) * (1 + a + 3 * b); }}"
            ),
        );
        let m = Mat::new(&sp, "F");
        la::par_loop(
            &rt,
            &flat,
            &tris,
            [
                LoopArg::Mat(m.arg_flattened(INC, &map, &map)),
                LoopArg::Op2(x.arg_row(&map, READ)),
            ],
        )
        .unwrap();
        m.assemble();
        // PyOP2 0.8.2's flatten=True per-point form: one scalar entry per call, rows and
        // columns component by component (`i / 3` the component, `i % 3` the node).
        let per_flat = kernel(
            "mass_fij",
            &format!(
                "{AREA}void mass_fij(double A[1][1], const double *x[3], int i, int j) {{
                   A[0][0] += area(x) * (1 + i % 3 + 2 * (j % 3)) * (1 + i / 3 + 3 * (j / 3)); }}"
            ),
        );
        let pf = Mat::new(&sp, "PF");
        la::par_loop(
            &rt,
            &per_flat,
            &tris,
            [
                LoopArg::Mat(pf.arg_entries_flattened(INC, &map, &map)),
                LoopArg::Op2(x.arg_row(&map, READ)),
            ],
        )
        .unwrap();
        pf.assemble();
        let (a, b) = (assemble(&per, true), assemble(&whole, false));
        assert!(close(&pf.values(), &b, 1e-14), "{dims:?}");
        assert!(close(&a, &b, 1e-14), "{dims:?}");
        assert!(a.iter().any(|&v| v != 0.0));
        assert!(close(&assemble(&as_2d, false), &b, 1e-14), "{dims:?}");
        assert!(close(&m.values(), &b, 1e-14), "{dims:?}");
    }
}

/// A direct Dat's values taken as a 2-D array (`double t[2][3]` for dim 6) run on every backend;
/// an array larger than the values is refused, even by a kernel without bound checks (it could
/// write past them), and a smaller one only by a checking kernel.
#[test]
fn values_as_two_dimensional_arrays() {
    let rt = builder().build().unwrap();
    let cells = rt.decl_set(9, "cells").unwrap();
    let t = rt.decl_dat_zeros::<f64>(&cells, 6, "t").unwrap();
    let s = rt
        .decl_dat(&cells, 1, (0..9).map(f64::from).collect::<Vec<_>>(), "s")
        .unwrap();
    let fill = kernel(
        "fill",
        "void fill(const double *s, double t[2][3]) {
           for (int a = 0; a < 2; a++) for (int b = 0; b < 3; b++) t[a][b] = *s * 10 + a * 3 + b; }",
    );
    rt.par_loop(&fill, &cells, [s.arg(READ), t.arg(WRITE)])
        .unwrap();
    let want: Vec<f64> = (0..9)
        .flat_map(|e| (0..6).map(move |k| f64::from(e * 10 + k)))
        .collect();
    assert_eq!(t.to_vec().unwrap(), want);
    for (src, lenient, refused) in [
        ("void big(double t[3][3]) { t[2][2] = 1.0; }", true, true),
        ("void big(double t[3][3]) { t[2][2] = 1.0; }", false, true),
        ("void big(double t[1][3]) { t[0][2] = 1.0; }", false, true),
        ("void big(double t[1][3]) { t[0][2] = 1.0; }", true, false),
    ] {
        let k = if lenient {
            op2::Kernel::without_bound_checks("big", src).unwrap()
        } else {
            op2::Kernel::new("big", src).unwrap()
        };
        let r = rt.par_loop(&k, &cells, [t.arg(RW)]);
        match r {
            Err(Op2Error::KernelParamBound {
                declared, expected, ..
            }) if refused => {
                assert_eq!(expected, 6);
                assert!(declared == 9 || declared == 3);
            }
            Ok(_) if !refused => {}
            other => panic!("{src} (lenient {lenient}): {other:?}"),
        }
    }
    rt.flush().unwrap();
}

#[test]
fn entries_over_extruded_columns_equal_whole_rows() {
    let rt = builder().build().unwrap();
    let base = rt.decl_set(5, "base").unwrap();
    let layers = 4;
    let cells = rt.decl_extruded_set(&base, layers, "cells").unwrap();
    let nodes = rt.decl_extruded_nodes(&base, layers, "nodes").unwrap();
    // Column b's cells reach their own two nodes and the next column's bottom one.
    let bottom: Vec<i32> = (0..5)
        .flat_map(|b| [b * 4, b * 4 + 1, ((b + 1) % 5) * 4])
        .collect();
    let m = rt
        .decl_extruded_map(&cells, &nodes, 3, bottom, [1, 1, 1], "m")
        .unwrap();
    let w = rt
        .decl_dat(
            &cells,
            1,
            (0..15).map(|c| c as f64 + 1.0).collect::<Vec<_>>(),
            "w",
        )
        .unwrap();
    let per = kernel(
        "spread_i",
        "void spread_i(double *n, const double *w, int i) { *n += *w * (i + 1); }",
    );
    let whole = kernel(
        "spread_all",
        "void spread_all(double *n[3], const double *w) { for (int i = 0; i < 3; i++) n[i][0] += *w * (i + 1); }",
    );
    let a = rt.decl_dat_zeros::<f64>(&nodes, 1, "a").unwrap();
    let b = rt.decl_dat_zeros::<f64>(&nodes, 1, "b").unwrap();
    rt.par_loop(&per, &cells, [a.arg_entries(&m, INC), w.arg(READ)])
        .unwrap();
    rt.par_loop(&whole, &cells, [b.arg_row(&m, INC), w.arg(READ)])
        .unwrap();
    assert!(close(&a.to_vec().unwrap(), &b.to_vec().unwrap(), 1e-14));
}

#[test]
fn iteration_spaces_that_disagree_are_typed_errors() {
    let rt = builder().build().unwrap();
    let (tris, nodes, map, x) = strip(&rt, 6);
    let pairs = rt.decl_set(6, "pairs").unwrap();
    let two = rt
        .decl_map(
            &tris,
            &nodes,
            2,
            (0..12).map(|v| v % 8).collect::<Vec<_>>(),
            "two",
        )
        .unwrap();
    let _ = pairs;
    let b = rt.decl_dat_zeros::<f64>(&nodes, 1, "b").unwrap();
    let is_space = |e: Op2Error| assert!(matches!(e, Op2Error::IterationSpace { .. }), "{e}");
    // Two per-entry args over 3 and 2 entries.
    let k2 = kernel(
        "k2",
        "void k2(double *a, double *b, int i) { *a += i; *b += i; }",
    );
    is_space(
        rt.par_loop(
            &k2,
            &tris,
            [b.arg_entries(&map, INC), b.arg_entries(&two, INC)],
        )
        .unwrap_err(),
    );
    // No trailing index, or one of the wrong type, or two for one dimension.
    for src in [
        "void k1(double *a) { *a += 1.0; }",
        "void k1(double *a, double i) { *a += i; }",
        "void k1(double *a, int i, int j) { *a += i + j; }",
    ] {
        is_space(
            rt.par_loop(&kernel("k1", src), &tris, [b.arg_entries(&map, INC)])
                .unwrap_err(),
        );
    }
    // A per-entry Dat beside a per-entry matrix: one and two dimensions.
    let sp = Sparsity::new(&[(&map, &map)], (1, 1), "sp").unwrap();
    let mat = Mat::new(&sp, "M");
    let k3 = kernel(
        "k3",
        "void k3(double A[1][1], double *b, int i, int j) { A[0][0] += i; *b += j; }",
    );
    let e = la::par_loop(
        &rt,
        &k3,
        &tris,
        [
            LoopArg::Mat(mat.arg_entries(INC, &map, &map)),
            LoopArg::Op2(b.arg_entries(&map, INC)),
        ],
    )
    .unwrap_err();
    assert!(e.to_string().contains("local iteration space"), "{e}");
    // A per-entry arg whose kernel parameter is not one row's pointer.
    let k4 = kernel("k4", "void k4(double *a[3], int i) { a[i][0] += 1.0; }");
    let e = rt
        .par_loop(&k4, &tris, [b.arg_entries(&map, INC)])
        .unwrap_err();
    assert!(matches!(e, Op2Error::KernelParamShape { .. }), "{e}");
    // The runtime still works.
    let k5 = kernel(
        "k5",
        "void k5(double *a, const double *x, int i) { *a += x[0] * 0.0 + 1.0 + 0 * i; }",
    );
    rt.par_loop(
        &k5,
        &tris,
        [b.arg_entries(&map, INC), x.arg_via(&map, 0, READ)],
    )
    .unwrap();
    assert_eq!(b.to_vec().unwrap().iter().sum::<f64>(), 18.0);
    let _ = WRITE;
}

#[test]
fn element_blocks_per_entry_are_checked() {
    let rt = builder().build().unwrap();
    let (tris, _, map, x) = strip(&rt, 4);
    let k = kernel(
        "blk",
        "void blk(double A[1][1], const double *x[3], int i, int j) { A[0][0] += x[i][0] * x[j][0]; }",
    );
    let space = |e: Op2Error| assert!(matches!(e, Op2Error::IterationSpace { .. }), "{e}");
    // A Dat too small for 3 x 3 blocks, blocks of no values, an access that is not INC or RW.
    let small = rt.decl_dat_zeros::<f64>(&tris, 4, "small").unwrap();
    space(
        rt.par_loop(
            &k,
            &tris,
            [
                small.arg(INC).per_entry_block(3, 3, (1, 1)),
                x.arg_row(&map, READ),
            ],
        )
        .unwrap_err(),
    );
    let nine = rt.decl_dat_zeros::<f64>(&tris, 9, "nine").unwrap();
    space(
        rt.par_loop(
            &k,
            &tris,
            [
                nine.arg(INC).per_entry_block(3, 3, (0, 1)),
                x.arg_row(&map, READ),
            ],
        )
        .unwrap_err(),
    );
    space(
        rt.par_loop(
            &k,
            &tris,
            [
                nine.arg(WRITE).per_entry_block(3, 3, (1, 1)),
                x.arg_row(&map, READ),
            ],
        )
        .unwrap_err(),
    );
    // A block parameter of another type.
    let kf = kernel(
        "blkf",
        "void blkf(float A[1][1], const double *x[3], int i, int j) { A[0][0] += 1.0f; }",
    );
    let e = rt
        .par_loop(
            &kf,
            &tris,
            [
                nine.arg(INC).per_entry_block(3, 3, (1, 1)),
                x.arg_row(&map, READ),
            ],
        )
        .unwrap_err();
    assert!(matches!(e, Op2Error::TypeMismatch { .. }), "{e}");
    // The right ones run: each block the product of its entries' x.
    rt.par_loop(
        &k,
        &tris,
        [
            nine.arg(RW).per_entry_block(3, 3, (1, 1)),
            x.arg_row(&map, READ),
        ],
    )
    .unwrap();
    assert!(nine.to_vec().unwrap().iter().any(|&v| v != 0.0));
}

#[test]
fn per_entry_kernels_over_facets_see_both_cells() {
    let rt = builder().build().unwrap();
    let base = rt.decl_set(3, "base").unwrap();
    let cells = rt.decl_extruded_set(&base, 5, "cells").unwrap();
    let own = rt
        .decl_extruded_map(&cells, &cells, 1, vec![0, 4, 8], [1], "own")
        .unwrap();
    let hits = rt.decl_dat_zeros::<f64>(&cells, 1, "hits").unwrap();
    let w = rt.decl_dat(&base, 1, [1.0, 10.0, 100.0], "w").unwrap();
    // Entry 0 is the lower cell, entry 1 the upper: both visited, with a Dat of the base read
    // directly at every facet.
    let k = kernel(
        "facet_i",
        "void facet_i(double *h, const double *w, int i) { *h += (i + 1) * *w; }",
    );
    rt.par_loop_region(
        &k,
        &cells,
        Region::InteriorFacets,
        [hits.arg_entries(&own, INC), w.arg(READ)],
    )
    .unwrap();
    let mut expected = vec![0.0; 12];
    for (b, wb) in [1.0, 10.0, 100.0].into_iter().enumerate() {
        for f in 0..3 {
            expected[4 * b + f] += wb;
            expected[4 * b + f + 1] += 2.0 * wb;
        }
    }
    assert_eq!(hits.to_vec().unwrap(), expected);
}

#[test]
fn kernels_named_like_library_functions_run_through_every_wrapper() {
    let rt = builder().build().unwrap();
    let (tris, nodes, map, _) = strip(&rt, 5);
    // `y0` is a Bessel function of <math.h>, `barrier` an OpenCL builtin.
    for name in ["y0", "barrier"] {
        let b = rt.decl_dat_zeros::<f64>(&nodes, 1, "b").unwrap();
        let k = kernel(
            name,
            &format!("void {name}(double *b, int i) {{ *b += i + 1; }}"),
        );
        rt.par_loop(&k, &tris, [b.arg_entries(&map, INC)]).unwrap();
        assert_eq!(b.to_vec().unwrap().iter().sum::<f64>(), 5.0 * 6.0);
        // Over extruded columns too (a column walk on host backends).
        let base = rt.decl_set(2, "cols").unwrap();
        let cells = rt.decl_extruded_set(&base, 3, "cells").unwrap();
        let c = rt.decl_dat_zeros::<f64>(&cells, 1, "c").unwrap();
        let kc = kernel(name, &format!("void {name}(double *c) {{ *c += 2.0; }}"));
        rt.par_loop(&kc, &cells, [c.arg(INC)]).unwrap();
        assert_eq!(c.to_vec().unwrap(), vec![2.0; 4]);
    }
}

/// PyOP2 0.8.3 to 0.10's form of `op2.i`: one call per element with a local buffer of the row's
/// values, against the same loop with a whole-row kernel, for every access and both layouts.
#[test]
fn element_buffers_gather_and_scatter_like_whole_rows() {
    let rt = builder().build().unwrap();
    let (tris, nodes, map, x) = strip(&rt, 19);
    for flattened in [false, true] {
        // x has dim 2: entry k, component c at buf[k * 2 + c], or buf[c * 3 + k] flattened.
        let at = |k: &str, c: &str| {
            if flattened {
                format!("{c} * 3 + {k}")
            } else {
                format!("{k} * 2 + {c}")
            }
        };
        let buf = kernel(
            "buf_k",
            &format!(
                "void buf_k(const double *xb, double *inc, double *rw, double *wr) {{
                   for (int k = 0; k < 3; k++) for (int c = 0; c < 2; c++) {{
                     inc[{0}] += xb[{0}] * (k + 1);
                     rw[{0}] = 2.0 * rw[{0}] + 1.0;
                     wr[{0}] = xb[{0}] + c; }} }}",
                at("k", "c")
            ),
        );
        let rows = kernel(
            "rows_k",
            "void rows_k(const double *x[3], double *inc[3], double *rw[3], double *wr[3]) {
               for (int k = 0; k < 3; k++) for (int c = 0; c < 2; c++) {
                 inc[k][c] += x[k][c] * (k + 1);
                 rw[k][c] = 2.0 * rw[k][c] + 1.0;
                 wr[k][c] = x[k][c] + c; } }",
        );
        let make = |name: &str| {
            let v: Vec<f64> = (0..2 * nodes.size()).map(|i| (i % 5) as f64).collect();
            (
                rt.decl_dat_zeros::<f64>(&nodes, 2, &format!("{name}_inc"))
                    .unwrap(),
                rt.decl_dat(&nodes, 2, v, &format!("{name}_rw")).unwrap(),
                rt.decl_dat_zeros::<f64>(&nodes, 2, &format!("{name}_wr"))
                    .unwrap(),
            )
        };
        let (a_inc, a_rw, a_wr) = make("a");
        let (b_inc, b_rw, b_wr) = make("b");
        let buffer = |d: &op2::Dat<f64>, access| {
            if flattened {
                d.arg_buffer_flattened(&map, access)
            } else {
                d.arg_buffer(&map, access)
            }
        };
        rt.par_loop(
            &buf,
            &tris,
            [
                buffer(&x, READ),
                buffer(&a_inc, INC),
                buffer(&a_rw, RW),
                buffer(&a_wr, WRITE),
            ],
        )
        .unwrap();
        rt.par_loop(
            &rows,
            &tris,
            [
                x.arg_row(&map, READ),
                b_inc.arg_row(&map, INC),
                b_rw.arg_row(&map, RW),
                b_wr.arg_row(&map, WRITE),
            ],
        )
        .unwrap();
        for (a, b) in [(&a_inc, &b_inc), (&a_rw, &b_rw), (&a_wr, &b_wr)] {
            assert!(
                close(&a.to_vec().unwrap(), &b.to_vec().unwrap(), 1e-14),
                "{}",
                a.name()
            );
        }
    }
    // Buffers and per-entry args do not mix.
    let b = rt.decl_dat_zeros::<f64>(&nodes, 1, "b").unwrap();
    let k = kernel(
        "mix",
        "void mix(double *a, double *b, int i) { *a += 1.0; *b += i; }",
    );
    let e = rt
        .par_loop(
            &k,
            &tris,
            [b.arg_buffer(&map, INC), b.arg_entries(&map, INC)],
        )
        .unwrap_err();
    assert!(matches!(e, Op2Error::IterationSpace { .. }), "{e}");
}

/// PyOP2's `dat(access, map, flatten=True)`: one pointer per value, component-major, against
/// the same loop through whole rows; read and incremented.
#[test]
fn flattened_rows_point_at_each_component() {
    let rt = builder().build().unwrap();
    let (tris, nodes, map, x) = strip(&rt, 13);
    let flat = kernel(
        "flat_k",
        "void flat_k(const double *x[6], double *y[6]) {
           for (int k = 0; k < 3; k++) for (int c = 0; c < 2; c++)
             y[c * 3 + k][0] += x[c * 3 + k][0] * (k + 1) + c; }",
    );
    let rows = kernel(
        "rows_k2",
        "void rows_k2(const double *x[3], double *y[3]) {
           for (int k = 0; k < 3; k++) for (int c = 0; c < 2; c++)
             y[k][c] += x[k][c] * (k + 1) + c; }",
    );
    let a = rt.decl_dat_zeros::<f64>(&nodes, 2, "a").unwrap();
    let b = rt.decl_dat_zeros::<f64>(&nodes, 2, "b").unwrap();
    rt.par_loop(
        &flat,
        &tris,
        [
            x.arg_row_flattened(&map, READ),
            a.arg_row_flattened(&map, INC),
        ],
    )
    .unwrap();
    rt.par_loop(&rows, &tris, [x.arg_row(&map, READ), b.arg_row(&map, INC)])
        .unwrap();
    assert!(close(&a.to_vec().unwrap(), &b.to_vec().unwrap(), 1e-14));
    assert!(a.to_vec().unwrap().iter().any(|&v| v != 0.0));
}

/// A kernel never gets fewer values or pointers than it declares, bound checks or not: an
/// array with a left-out outer bound and a per-entry block declaring more than the block are
/// refused; a whole row declaring more pointers than the arity is refused, or (without bound
/// checks) handed that many, the extra ones leading to zeros; a local buffer declared longer
/// than its values is made that long (PyOP2's flattened buffers were declared `arity * dim *
/// dim` long), so the kernel's writes past the values land in it; longer still is refused.
#[test]
fn kernels_are_never_handed_fewer_values_than_they_declare() {
    let rt = builder().build().unwrap();
    let (tris, nodes, map, x) = strip(&rt, 7);
    let t = rt.decl_dat_zeros::<f64>(&tris, 6, "t").unwrap();
    let refused = |e: &str| e.contains("declares") || e.contains("bound");
    for lenient in [false, true] {
        let make = |name: &str, src: &str| {
            if lenient {
                op2::Kernel::without_bound_checks(name, src).unwrap()
            } else {
                op2::Kernel::new(name, src).unwrap()
            }
        };
        let open_outer = make("big", "void big(double b[][4096]) { b[0][4095] = 1.0; }");
        let e = rt.par_loop(&open_outer, &tris, [t.arg(RW)]).unwrap_err();
        assert!(
            matches!(
                e,
                Op2Error::KernelParamBound {
                    declared: 4096,
                    expected: 6,
                    ..
                }
            ),
            "{e}"
        );
        let many = make(
            "many",
            "void many(double *x[64], double *t) { t[0] = x[63][0] + 1.0; }",
        );
        let run = rt.par_loop(&many, &tris, [x.arg_row(&map, READ), t.arg(RW)]);
        if lenient {
            // Padded to the 64 pointers declared: the 61 past the row lead to zeros.
            run.unwrap();
            let got = t.to_vec().unwrap();
            assert!(got.chunks(6).all(|row| row[0] == 1.0), "{got:?}");
        } else {
            let e = run.unwrap_err();
            assert!(
                matches!(
                    e,
                    Op2Error::KernelParamBound {
                        declared: 64,
                        expected: 3,
                        ..
                    }
                ),
                "{e}"
            );
        }
        // 0.8.2's per-point matrix kernel declaring a block larger than the 1 x 1 one.
        let sp = Sparsity::new(&[(&map, &map)], (1, 1), "sp").unwrap();
        let m = Mat::new(&sp, "M");
        let block = make(
            "blk",
            "void blk(double A[8][8], const double *x[3], int i, int j) { A[7][7] += 1.0; }",
        );
        let e = la::par_loop(
            &rt,
            &block,
            &tris,
            [
                LoopArg::Mat(m.arg_entries(INC, &map, &map)),
                LoopArg::Op2(x.arg_row(&map, READ)),
            ],
        )
        .unwrap_err();
        assert!(refused(&e.to_string()), "{e}");
    }
    // A buffer of 3 x 2 values declared 12 long: made that long, the values still right.
    let acc = rt.decl_dat_zeros::<f64>(&nodes, 2, "acc").unwrap();
    let long = op2::Kernel::without_bound_checks(
        "long_buf",
        "void long_buf(double b[12]) { for (int k = 0; k < 6; k++) b[k] += 1.0; b[11] = 7.0; }",
    )
    .unwrap();
    rt.par_loop(&long, &tris, [acc.arg_buffer_flattened(&map, INC)])
        .unwrap();
    let huge = op2::Kernel::without_bound_checks("huge", "void huge(double b[4096]) { }").unwrap();
    let e = rt
        .par_loop(&huge, &tris, [acc.arg_buffer(&map, INC)])
        .unwrap_err();
    assert!(
        matches!(
            e,
            Op2Error::KernelParamBound {
                declared: 4096,
                expected: 6,
                ..
            }
        ),
        "{e}"
    );
    let got = acc.to_vec().unwrap();
    // Each node gets 1 per component from each triangle it is in.
    let mut want = vec![0.0; got.len()];
    for tri in 0..7usize {
        let nodes: [usize; 3] = if tri % 2 == 0 {
            [tri, tri + 1, tri + 2]
        } else {
            [tri + 1, tri, tri + 2]
        };
        for n in nodes {
            want[2 * n] += 1.0;
            want[2 * n + 1] += 1.0;
        }
    }
    assert_eq!(got, want);
}

/// Matrices assemble over subsets (PyOP2's `par_loop(k, subset, mat(INC, ...))`): the even and
/// the odd triangles added into one matrix give the whole mesh's, in both kernel forms; a
/// subset's loop adds nothing from the elements it does not run.
#[test]
fn matrices_assemble_over_subsets() {
    let rt = builder().build().unwrap();
    let (tris, _, map, x) = strip(&rt, 12);
    let sp = Sparsity::new(&[(&map, &map)], (1, 1), "sp").unwrap();
    let whole_k = kernel(
        "mass_w",
        &format!(
            "{AREA}void mass_w(double A[3][3], const double *x[3]) {{
               for (int i = 0; i < 3; i++) for (int j = 0; j < 3; j++)
                 A[i][j] += area(x) * (1 + i + 2 * j); }}"
        ),
    );
    let entry_k = kernel(
        "mass_e",
        &format!(
            "{AREA}void mass_e(double A[1][1], const double *x[3], int i, int j) {{
               A[0][0] += area(x) * (1 + i + 2 * j); }}"
        ),
    );
    let evens = rt
        .decl_subset(&tris, (0..12).step_by(2).collect::<Vec<i32>>(), "evens")
        .unwrap();
    let odds = rt
        .decl_subset(&tris, (1..12).step_by(2).collect::<Vec<i32>>(), "odds")
        .unwrap();
    for per_entry in [false, true] {
        let k = if per_entry { &entry_k } else { &whole_k };
        let arg = |m: &Mat| {
            if per_entry {
                m.arg_entries(INC, &map, &map)
            } else {
                m.arg(INC, &map, &map)
            }
        };
        let run = |m: &Mat, set: &op2::Set| {
            la::par_loop(
                &rt,
                k,
                set,
                [LoopArg::Mat(arg(m)), LoopArg::Op2(x.arg_row(&map, READ))],
            )
            .unwrap();
            m.assemble();
        };
        let full = Mat::new(&sp, "full");
        run(&full, &tris);
        let parts = Mat::new(&sp, "parts");
        run(&parts, &evens);
        let half = parts.values();
        run(&parts, &odds);
        assert!(
            close(&parts.values(), &full.values(), 1e-14),
            "per entry {per_entry}"
        );
        // The evens alone: the blocks of odd triangles were not added.
        let only_evens = Mat::new(&sp, "evens");
        run(&only_evens, &evens);
        assert_eq!(only_evens.values(), half);
        assert!(half != full.values());
        // After a whole-set loop, a subset loop again adds only its own.
        run(&only_evens, &tris);
        run(&only_evens, &odds);
        let twice: Vec<f64> = full.values().iter().map(|v| 2.0 * v).collect();
        assert!(
            close(&only_evens.values(), &twice, 1e-14),
            "per entry {per_entry}"
        );
    }
}

/// MIN and MAX through a whole-row buffer (today's PyOP2's `dat(op2.MIN, map)`): the kernel
/// sees the current values and each value it leaves is combined back with the Dat's, however
/// many elements share a node. Expected values computed here.
#[test]
fn buffers_reduce_with_min_and_max_into_shared_rows() {
    let rt = op2_test_support::rt();
    let n = 400;
    let (tris, nodes, t2n, _) = strip(&rt, n);
    let rows: Vec<i32> = t2n.values().to_vec();
    let seed: Vec<f64> = (0..n).map(|t| ((t * 37) % 101) as f64 - 50.0).collect();
    let v = rt.decl_dat(&tris, 1, &seed, "v").unwrap();
    let low0: Vec<f64> = (0..n + 2).map(|i| (i % 7) as f64 - 3.0).collect();
    let lo = rt
        .decl_dat(
            &nodes,
            2,
            low0.iter().flat_map(|x| [*x, -*x]).collect::<Vec<_>>(),
            "lo",
        )
        .unwrap();
    let hi = rt.decl_dat(&nodes, 1, &low0, "hi").unwrap();
    let k = kernel(
        "extremes",
        "void extremes(const double *v, double lo[6], double hi[3]) {\n\
           for (int j = 0; j < 3; j++) {\n\
             if (*v + j < lo[2 * j]) lo[2 * j] = *v + j;\n\
             lo[2 * j + 1] = lo[2 * j + 1] < -*v ? lo[2 * j + 1] : -*v;\n\
             if (*v * (j + 1) > hi[j]) hi[j] = *v * (j + 1);\n\
           }\n\
         }",
    );
    rt.par_loop(
        &k,
        &tris,
        [
            v.arg(READ),
            lo.arg_buffer(&t2n, op2::MIN),
            hi.arg_buffer(&t2n, op2::MAX),
        ],
    )
    .unwrap();
    let mut want_lo: Vec<f64> = low0.iter().flat_map(|x| [*x, -*x]).collect();
    let mut want_hi = low0.clone();
    for t in 0..n {
        for j in 0..3 {
            let node = rows[t * 3 + j] as usize;
            want_lo[2 * node] = want_lo[2 * node].min(seed[t] + j as f64);
            want_lo[2 * node + 1] = want_lo[2 * node + 1].min(-seed[t]);
            want_hi[node] = want_hi[node].max(seed[t] * (j + 1) as f64);
        }
    }
    assert_eq!(lo.data().unwrap().to_vec(), want_lo);
    assert_eq!(hi.data().unwrap().to_vec(), want_hi);
    // A reduction on a Dat through a pointer row (or directly) stays an error.
    let k2 = kernel("row_min", "void row_min(const double *v, double **lo) { }");
    let err = rt
        .par_loop(&k2, &tris, [v.arg(READ), lo.arg_row(&t2n, op2::MIN)])
        .unwrap_err();
    assert!(matches!(err, Op2Error::ReductionOnDat { .. }), "{err}");
}
