//! Mixed spaces (PyOP2's `MixedSet`, `MixedDat`, `MixedMap`): a mixed arg's one array of
//! pointers against loops over each component, a block matrix against its dense assembly,
//! monolithic and fieldsplit solves, across ranks, and mismatched components.

use op2::la::{self, LoopArg, Mat, Method, Preconditioner, SolverOptions, Sparsity, Split};
use op2::{INC, Op2Error, READ, Runtime};
use op2_test_support::{builder, close, kernel};

/// A chain of `n` elements: nodes `0..=n`, elements `0..n` (element e joins nodes e, e+1); a
/// mixed set (nodes, elements) and the mixed map from elements (its two nodes, itself).
fn chain(rt: &Runtime, n: usize) -> (op2::Set, op2::MixedSet, op2::MixedMap) {
    let nodes = rt.decl_set(n + 1, "nodes").unwrap();
    let elems = rt.decl_set(n, "elems").unwrap();
    let e2n = rt
        .decl_map(
            &elems,
            &nodes,
            2,
            (0..n as i32).flat_map(|e| [e, e + 1]).collect::<Vec<_>>(),
            "e2n",
        )
        .unwrap();
    let e2e = rt
        .decl_map(&elems, &elems, 1, (0..n as i32).collect::<Vec<_>>(), "e2e")
        .unwrap();
    let ms = rt.decl_mixed_set(&[&nodes, &elems], "ms").unwrap();
    let mm = rt.decl_mixed_map(&ms, &[&e2n, &e2e], "mm").unwrap();
    (elems, ms, mm)
}

#[test]
fn a_mixed_arg_hands_the_kernel_every_components_rows() {
    let rt = builder().build().unwrap();
    let n = 23;
    let (elems, ms, mm) = chain(&rt, n);
    assert_eq!((ms.len(), mm.arity(), mm.arities()), (2, 3, vec![2, 1]));
    assert_eq!(ms.flat().size(), 2 * n + 1);
    // Nodes carry two values, elements one: each component keeps its own dim.
    let nodes = ms.split()[0].clone();
    let u0 = rt
        .decl_dat(
            &nodes,
            2,
            (0..2 * (n + 1)).map(|i| i as f64).collect::<Vec<_>>(),
            "u0",
        )
        .unwrap();
    let u1 = rt
        .decl_dat(
            &elems,
            1,
            (0..n).map(|e| 100.0 + e as f64).collect::<Vec<_>>(),
            "u1",
        )
        .unwrap();
    let u = op2::MixedDat::from_dats(&ms, vec![u0.clone(), u1.clone()]).unwrap();
    let w = rt
        .decl_dat(
            &elems,
            1,
            (0..n).map(|e| (e % 4) as f64).collect::<Vec<_>>(),
            "w",
        )
        .unwrap();
    let k = kernel(
        "mixed_k",
        "void mixed_k(double *x[3], const double *w) {
           x[0][0] += *w; x[1][1] += 2.0 * *w; x[2][0] += *w; }",
    );
    rt.par_loop(&k, &elems, [u.arg_row(&mm, INC), w.arg(READ)])
        .unwrap();
    let mut e0: Vec<f64> = (0..2 * (n + 1)).map(|i| i as f64).collect();
    let mut e1: Vec<f64> = (0..n).map(|e| 100.0 + e as f64).collect();
    for e in 0..n {
        let w = (e % 4) as f64;
        e0[2 * e] += w;
        e0[2 * (e + 1) + 1] += 2.0 * w;
        e1[e] += w;
    }
    assert_eq!(u0.to_vec().unwrap(), e0);
    assert_eq!(u1.to_vec().unwrap(), e1);
    let mut all = e0.clone();
    all.extend(&e1);
    assert_eq!(u.to_vec().unwrap(), all);
}

/// The element matrix of the coupled system on element `e` (rows and columns: its two nodes,
/// then the element): symmetric and diagonally dominant.
const ELEMENT: &str = "void coupled(double A[9], const double *h) {
  double k = 1.0 / *h, m = *h;
  double B[3][3] = {{k + 2.0 * m, -k, 0.5 * m}, {-k, k + 2.0 * m, 0.5 * m}, {0.5 * m, 0.5 * m, 3.0 * m}};
  for (int i = 0; i < 3; i++) for (int j = 0; j < 3; j++) A[3 * i + j] = B[i][j];
}";

/// [`ELEMENT`] one entry per call.
const ELEMENT_IJ: &str = "void coupled_ij(double A[1][1], const double *h, int i, int j) {
  double k = 1.0 / *h, m = *h;
  double B[3][3] = {{k + 2.0 * m, -k, 0.5 * m}, {-k, k + 2.0 * m, 0.5 * m}, {0.5 * m, 0.5 * m, 3.0 * m}};
  A[0][0] += B[i][j];
}";

fn element(h: f64) -> [[f64; 3]; 3] {
    let (k, m) = (1.0 / h, h);
    [
        [k + 2.0 * m, -k, 0.5 * m],
        [-k, k + 2.0 * m, 0.5 * m],
        [0.5 * m, 0.5 * m, 3.0 * m],
    ]
}

#[test]
fn a_block_matrix_equals_its_dense_assembly_and_every_solve_agrees() {
    let rt = builder().build().unwrap();
    let n = 17;
    let (elems, ms, mm) = chain(&rt, n);
    let hs: Vec<f64> = (0..n).map(|e| 0.5 + 0.1 * (e % 3) as f64).collect();
    let h = rt.decl_dat(&elems, 1, hs.clone(), "h").unwrap();
    let sp = Sparsity::mixed(&mm, &mm, "coupled").unwrap();
    let a = Mat::new(&sp, "A");
    la::par_loop(
        &rt,
        &kernel("coupled", ELEMENT),
        &elems,
        [
            LoopArg::Mat(a.arg_mixed(INC, &mm, &mm)),
            LoopArg::Op2(h.arg(READ)),
        ],
    )
    .unwrap();
    a.assemble();
    // The dense assembly, by hand, in the flat numbering.
    let size = ms.flat().size();
    let mut dense = vec![vec![0.0; size]; size];
    for (e, &he) in hs.iter().enumerate() {
        let rows = [
            ms.flat_index(0, e).unwrap(),
            ms.flat_index(0, e + 1).unwrap(),
            ms.flat_index(1, e).unwrap(),
        ];
        let b = element(he);
        for i in 0..3 {
            for j in 0..3 {
                dense[rows[i]][rows[j]] += b[i][j];
            }
        }
    }
    let values = a.values();
    let mut got = vec![vec![0.0; size]; size];
    for r in 0..size {
        for (p, &c) in sp.row(r).iter().enumerate() {
            got[r][c as usize] = values[sp.row_offsets()[r] + p];
        }
    }
    for r in 0..size {
        for c in 0..size {
            assert!((got[r][c] - dense[r][c]).abs() < 1e-14, "({r}, {c})");
        }
    }
    // PyOP2 0.8.2's per-point form: one call per entry, indices counting through the row
    // maps' entries in turn (the node map's two, then the element's own), the same matrix.
    let per_point = Mat::new(&sp, "P");
    la::par_loop(
        &rt,
        &kernel("coupled_ij", ELEMENT_IJ),
        &elems,
        [
            LoopArg::Mat(per_point.arg_mixed_entries(INC, &mm, &mm)),
            LoopArg::Op2(h.arg(READ)),
        ],
    )
    .unwrap();
    per_point.assemble();
    assert_eq!(per_point.values(), values);
    // The same solution monolithically and with both fieldsplits.
    let b = rt.decl_mixed_dat::<f64>(&ms, &[1, 1], "b").unwrap();
    b.split()[0]
        .data()
        .unwrap()
        .iter_mut()
        .enumerate()
        .for_each(|(i, v)| *v = (i as f64).sin());
    b.split()[1]
        .data()
        .unwrap()
        .iter_mut()
        .enumerate()
        .for_each(|(i, v)| *v = 1.0 + i as f64);
    let mut solutions = Vec::new();
    for (method, pc) in [
        (Method::Gmres { restart: 30 }, Preconditioner::Ilu0),
        (Method::Cg, Preconditioner::FieldSplit(Split::Additive)),
        (
            Method::Gmres { restart: 30 },
            Preconditioner::FieldSplit(Split::Multiplicative),
        ),
    ] {
        let x = rt.decl_mixed_dat::<f64>(&ms, &[1, 1], "x").unwrap();
        let report = la::solve_mixed(&a, &b, &x, &SolverOptions::new(method, pc).rtol(1e-12))
            .unwrap()
            .check()
            .unwrap();
        assert!(report.iterations > 0);
        // The residual against the dense matrix.
        let xv = x.to_flat().unwrap().to_vec().unwrap();
        let bv = b.to_flat().unwrap().to_vec().unwrap();
        for r in 0..size {
            let ax: f64 = (0..size).map(|c| dense[r][c] * xv[c]).sum();
            assert!(
                (ax - bv[r]).abs() < 1e-9,
                "{pc:?}: row {r}: {ax} vs {}",
                bv[r]
            );
        }
        // A x, multiplied through the mixed Dats, is b again.
        let ax = rt.decl_mixed_dat::<f64>(&ms, &[1, 1], "ax").unwrap();
        a.mult_mixed(&x, &ax).unwrap();
        let axv = ax.to_flat().unwrap().to_vec().unwrap();
        assert!(close(&axv, &bv, 1e-9), "{pc:?}");
        solutions.push(xv);
    }
    assert!(a.mult_mixed(&b, &b).is_err(), "x and y must differ");
    for s in &solutions[1..] {
        assert!(
            s.iter()
                .zip(&solutions[0])
                .all(|(a, b)| (a - b).abs() < 1e-9)
        );
    }
    // Fieldsplit needs the fields: a plain solve refuses it.
    let flat_x = b.to_flat().unwrap();
    let e = la::solve(
        &a,
        &b.to_flat().unwrap(),
        &flat_x,
        &SolverOptions::new(Method::Cg, Preconditioner::FieldSplit(Split::Additive)),
    )
    .unwrap_err();
    assert!(e.to_string().contains("fieldsplit"), "{e}");
    // Mixed algebra: a norm over both components.
    let norm = b.norm().unwrap();
    let direct: f64 = b
        .to_vec()
        .unwrap()
        .iter()
        .map(|v| v * v)
        .sum::<f64>()
        .sqrt();
    assert!((norm - direct).abs() < 1e-12);
}

/// Components of two values per element (PyOP2's mixed data sets whose components share a
/// `cdim` of 2): the pattern has 2 x 2 blocks, a per-point kernel fills one block per call (its
/// indices counting through the mixed maps' entries), and the mixed solve, its fieldsplits and
/// the mixed product agree with the dense matrix.
#[test]
fn a_block_matrix_of_vector_components_assembles_per_point_and_solves() {
    let rt = builder().build().unwrap();
    let n = 9;
    let (elems, ms, mm) = chain(&rt, n);
    let hs: Vec<f64> = (0..n).map(|e| 0.5 + 0.1 * (e % 4) as f64).collect();
    let h = rt.decl_dat(&elems, 1, hs.clone(), "h").unwrap();
    let sp = Sparsity::mixed_blocks(&mm, &mm, (2, 2), "vcoupled").unwrap();
    assert_eq!(sp.dims(), (2, 2));
    let a = Mat::new(&sp, "V");
    // Block (i, j) of the element: B[i][j] times [[2, 0.5], [0.5, 2]] (SPD, as B is).
    let per_point = kernel(
        "vcoupled_ij",
        "void vcoupled_ij(double A[2][2], const double *h, int i, int j) {
           double k = 1.0 / *h, m = *h;
           double B[3][3] = {{k + 2.0 * m, -k, 0.5 * m}, {-k, k + 2.0 * m, 0.5 * m}, {0.5 * m, 0.5 * m, 3.0 * m}};
           for (int p = 0; p < 2; p++) for (int q = 0; q < 2; q++) A[p][q] += B[i][j] * (p == q ? 2.0 : 0.5);
         }",
    );
    la::par_loop(
        &rt,
        &per_point,
        &elems,
        [
            LoopArg::Mat(a.arg_mixed_entries(INC, &mm, &mm)),
            LoopArg::Op2(h.arg(READ)),
        ],
    )
    .unwrap();
    a.assemble();
    let size = 2 * ms.flat().size();
    let mut dense = vec![vec![0.0; size]; size];
    for (e, &he) in hs.iter().enumerate() {
        let at = [
            ms.flat_index(0, e).unwrap(),
            ms.flat_index(0, e + 1).unwrap(),
            ms.flat_index(1, e).unwrap(),
        ];
        let b = element(he);
        for i in 0..3 {
            for j in 0..3 {
                for p in 0..2 {
                    for q in 0..2 {
                        dense[2 * at[i] + p][2 * at[j] + q] +=
                            b[i][j] * if p == q { 2.0 } else { 0.5 };
                    }
                }
            }
        }
    }
    let values = a.values();
    for r in 0..size {
        let mut row = vec![0.0; size];
        for (p, &c) in sp.row(r).iter().enumerate() {
            row[c as usize] = values[sp.row_offsets()[r] + p];
        }
        assert!(close(&row, &dense[r], 1e-14), "row {r}");
    }
    let b = rt.decl_mixed_dat::<f64>(&ms, &[2, 2], "b").unwrap();
    for (c, d) in b.split().iter().enumerate() {
        d.data()
            .unwrap()
            .iter_mut()
            .enumerate()
            .for_each(|(i, v)| *v = (i as f64 + c as f64).cos());
    }
    let bv = b.to_flat().unwrap().to_vec().unwrap();
    for pc in [
        Preconditioner::Ilu0,
        Preconditioner::FieldSplit(Split::Additive),
        Preconditioner::FieldSplit(Split::Multiplicative),
    ] {
        let x = rt.decl_mixed_dat::<f64>(&ms, &[2, 2], "x").unwrap();
        la::solve_mixed(
            &a,
            &b,
            &x,
            &SolverOptions::new(Method::Gmres { restart: 40 }, pc).rtol(1e-12),
        )
        .unwrap()
        .check()
        .unwrap();
        let xv = x.to_flat().unwrap().to_vec().unwrap();
        for r in 0..size {
            let ax: f64 = (0..size).map(|c| dense[r][c] * xv[c]).sum();
            assert!((ax - bv[r]).abs() < 1e-9, "{pc:?}: row {r}");
        }
        let ax = rt.decl_mixed_dat::<f64>(&ms, &[2, 2], "ax").unwrap();
        a.mult_mixed(&x, &ax).unwrap();
        assert!(close(&ax.to_flat().unwrap().to_vec().unwrap(), &bv, 1e-9));
    }
    // Components of different dims have no common block: the flat Dats refuse them.
    let odd = rt.decl_mixed_dat::<f64>(&ms, &[2, 1], "odd").unwrap();
    let x = rt.decl_mixed_dat::<f64>(&ms, &[2, 2], "x2").unwrap();
    assert!(a.mult_mixed(&odd, &x).is_err());
}

#[test]
fn mixed_objects_that_do_not_fit_are_typed_errors() {
    let rt = builder().build().unwrap();
    let (elems, ms, mm) = chain(&rt, 5);
    let nodes = ms.split()[0].clone();
    let other = rt.decl_set(5, "other").unwrap();
    let o2n = rt
        .decl_map(&other, &nodes, 1, vec![0, 1, 2, 3, 4], "o2n")
        .unwrap();
    let e2e = mm.split()[1].clone();
    let mismatch = |e: Op2Error| assert!(matches!(e, Op2Error::MixedMismatch { .. }), "{e}");
    // Components from different iteration sets, the wrong count, the wrong target.
    mismatch(rt.decl_mixed_map(&ms, &[&o2n, &e2e], "bad").unwrap_err());
    mismatch(rt.decl_mixed_map(&ms, &[&e2e], "bad").unwrap_err());
    mismatch(rt.decl_mixed_map(&ms, &[&e2e, &e2e], "bad").unwrap_err());
    mismatch(rt.decl_mixed_set(&[], "none").unwrap_err());
    assert_eq!(
        (
            ms.flat_index(2, 0),
            ms.flat_index(1, 5),
            ms.flat_index(1, 4)
        ),
        (None, None, Some(10))
    );
    // Dats on the wrong sets.
    let d = rt.decl_dat_zeros::<f64>(&elems, 1, "d").unwrap();
    mismatch(op2::MixedDat::from_dats(&ms, vec![d.clone(), d.clone()]).unwrap_err());
    // A kernel whose array has the wrong bound.
    let u = rt.decl_mixed_dat::<f64>(&ms, &[1, 1], "u").unwrap();
    let k = kernel("k2", "void k2(double *x[2]) { x[0][0] += 1.0; }");
    let e = rt.par_loop(&k, &elems, [u.arg_row(&mm, INC)]).unwrap_err();
    assert!(matches!(e, Op2Error::KernelParamBound { .. }), "{e}");
    // A mixed Dat through a mixed map into another mixed set.
    let ms2 = rt.decl_mixed_set(&[&nodes, &elems], "ms2").unwrap();
    let v = rt.decl_mixed_dat::<f64>(&ms2, &[1, 1], "v").unwrap();
    let k3 = kernel("k3", "void k3(double *x[3]) { x[0][0] += 1.0; }");
    let e = rt.par_loop(&k3, &elems, [v.arg_row(&mm, INC)]).unwrap_err();
    assert!(matches!(e, Op2Error::InvalidArg { .. }), "{e}");
    // Still usable.
    rt.par_loop(&k3, &elems, [u.arg_row(&mm, INC)]).unwrap();
    assert_eq!(u.split()[0].to_vec().unwrap()[..5], [1.0; 5]);
}

/// One block of a mixed matrix assembled through maps of its own, from an iteration set of its
/// own (PyOP2's `mat[i, j]` loops): each map lifted into the flat numbering with
/// `decl_component_map`, against the dense block computed here; and lifted maps that do not fit.
#[test]
fn a_block_assembles_through_component_maps_from_its_own_iteration_set() {
    let rt = builder().build().unwrap();
    let (elems, ms, _) = chain(&rt, 5);
    let nodes = ms.split()[0].clone();
    // Three points, each on a node and an element of the chain.
    let pts = rt.decl_set(3, "pts").unwrap();
    let p2n = rt
        .decl_map(&pts, &nodes, 2, vec![0, 1, 2, 3, 5, 4], "p2n")
        .unwrap();
    let p2e = rt.decl_map(&pts, &elems, 1, vec![4, 0, 2], "p2e").unwrap();
    let rows = rt.decl_component_map(&ms, 0, &p2n, "p2n@0").unwrap();
    let cols = rt.decl_component_map(&ms, 1, &p2e, "p2e@1").unwrap();
    assert_eq!((rows.from(), rows.to()), (&pts, ms.flat()));
    let sp = Sparsity::new(&[(&rows, &cols)], (1, 1), "block01").unwrap();
    let a = Mat::new(&sp, "A");
    let w = rt.decl_dat(&pts, 1, vec![1.0, 2.0, 3.0], "w").unwrap();
    la::par_loop(
        &rt,
        &kernel(
            "blk",
            "void blk(double A[2][1], const double *w) { A[0][0] += *w; A[1][0] += 10.0 * *w; }",
        ),
        &pts,
        [
            LoopArg::Mat(a.arg(INC, &rows, &cols)),
            LoopArg::Op2(w.arg(READ)),
        ],
    )
    .unwrap();
    a.assemble();
    let size = ms.flat().size();
    let mut want = vec![vec![0.0; size]; size];
    let (n, e) = ([[0, 1], [2, 3], [5, 4]], [4, 0, 2]);
    for p in 0..3 {
        let c = ms.flat_index(1, e[p]).unwrap();
        let w = (p + 1) as f64;
        want[ms.flat_index(0, n[p][0]).unwrap()][c] += w;
        want[ms.flat_index(0, n[p][1]).unwrap()][c] += 10.0 * w;
    }
    let values = a.values();
    for r in 0..size {
        let mut got = vec![0.0; size];
        for (q, &c) in sp.row(r).iter().enumerate() {
            got[c as usize] = values[sp.row_offsets()[r] + q];
        }
        assert_eq!(got, want[r], "row {r}");
    }
    // A component that is not there, a map into another component, an extruded map.
    let mismatch = |e: Op2Error| assert!(matches!(e, Op2Error::MixedMismatch { .. }), "{e}");
    mismatch(rt.decl_component_map(&ms, 2, &p2n, "bad").unwrap_err());
    mismatch(rt.decl_component_map(&ms, 1, &p2n, "bad").unwrap_err());
    let column = rt.decl_extruded_set(&pts, 3, "column").unwrap();
    let up = rt
        .decl_extruded_map(&column, &nodes, 1, vec![0, 1, 2], vec![1], "up")
        .unwrap();
    mismatch(rt.decl_component_map(&ms, 0, &up, "bad").unwrap_err());
}

#[test]
fn mixed_loops_on_two_ranks_compute_what_one_process_computes() {
    use crate::distributed::{ChainPart, chain_part, core, initial};
    let (n, m) = (30, 13);
    let run = |rt: &Runtime, part: ChainPart| -> (Vec<f64>, Vec<f64>) {
        let (ns, nh, es, eh, e2n, x0) = part;
        let nodes = rt.decl_set_with_halo(ns, nh, "nodes").unwrap();
        let edges = rt.decl_set_with_halo(es, eh, "edges").unwrap();
        let e2n = rt.decl_map(&edges, &nodes, 2, e2n, "e2n").unwrap();
        let rows = edges.exec_size() as i32;
        let e2e = rt
            .decl_map(&edges, &edges, 1, (0..rows).collect::<Vec<_>>(), "e2e")
            .unwrap();
        let ms = rt.decl_mixed_set(&[&nodes, &edges], "ms").unwrap();
        let mm = rt.decl_mixed_map(&ms, &[&e2n, &e2e], "mm").unwrap();
        let x = rt.decl_dat(&nodes, 1, x0, "x").unwrap();
        let u = rt.decl_mixed_dat::<f64>(&ms, &[1, 1], "u").unwrap();
        rt.par_loop(
            &kernel("scale", "void scale(double *x) { *x = 3.0 * *x + 1.0; }"),
            &nodes,
            [x.arg(op2::RW)],
        )
        .unwrap();
        rt.par_loop(
            &kernel(
                "mixed_spread",
                "void mixed_spread(double *u[3], const double *x[2]) {
                   double d = x[1][0] - x[0][0]; u[0][0] += d; u[1][0] -= 0.5 * d; u[2][0] += x[0][0] * x[1][0]; }",
            ),
            &edges,
            [u.arg_row(&mm, INC), x.arg_row(&e2n, READ)],
        )
        .unwrap();
        (
            u.split()[0].to_vec().unwrap(),
            u.split()[1].to_vec().unwrap(),
        )
    };
    let one = run(
        &builder().build().unwrap(),
        (
            core(n + 1),
            op2::SetHalo::default(),
            core(n),
            op2::SetHalo::default(),
            (0..n as i32).flat_map(|e| [e, e + 1]).collect(),
            initial(n + 1),
        ),
    );
    let mut both =
        op2_test_support::on_rank_runtimes(2, builder, |rank, rt| run(&rt, chain_part(rank, n, m)))
            .into_iter();
    let (r0, r1) = (both.next().unwrap(), both.next().unwrap());
    assert_eq!(r0.0[..m], one.0[..m]);
    assert_eq!(r1.0[..=n - m], one.0[m..]);
    assert_eq!(r0.1[..m], one.1[..m]);
    assert_eq!(r1.1[..n - m], one.1[m..]);
}

/// A mixed arg as one local buffer per element (PyOP2 0.8.3 to 0.10's `mixed_dat(access,
/// mixed_map[op2.i[0]])`), beside a non-mixed Dat's buffer in the same loop: component `b`'s
/// values start after those of the components before it, entry by entry; INC adds them back,
/// READ fills them, WRITE assigns them. Checked against loops computed here.
#[test]
fn a_mixed_buffer_holds_every_components_values_in_turn() {
    let rt = builder().build().unwrap();
    let n = 9;
    let (elems, ms, mm) = chain(&rt, n);
    let nodes = ms.split()[0].clone();
    let e2n = mm.split()[0].clone();
    let u = rt.decl_mixed_dat::<f64>(&ms, &[1, 1], "u").unwrap();
    let x = rt
        .decl_dat(
            &nodes,
            1,
            (0..=n).map(|i| i as f64).collect::<Vec<_>>(),
            "x",
        )
        .unwrap();
    let y = rt.decl_dat_zeros::<f64>(&nodes, 1, "y").unwrap();
    // The buffer `b` is [node e, node e + 1, element e]; `x` is [node e, node e + 1].
    let k = kernel(
        "mixbuf",
        "void mixbuf(double b[3], const double x[2], double y[2]) {
           b[0] += 1.0; b[1] += 10.0 * x[1]; b[2] += 100.0 + x[0];
           y[0] += b[0]; y[1] += b[2]; }",
    );
    for _ in 0..2 {
        rt.par_loop(
            &k,
            &elems,
            [
                u.arg_buffer(&mm, INC),
                x.arg_buffer(&e2n, READ),
                y.arg_buffer(&e2n, INC),
            ],
        )
        .unwrap();
    }
    let (mut u0, mut u1, mut yy) = (vec![0.0; n + 1], vec![0.0; n], vec![0.0; n + 1]);
    for _ in 0..2 {
        for e in 0..n {
            let (b0, b2) = (1.0, 100.0 + e as f64);
            u0[e] += b0;
            u0[e + 1] += 10.0 * (e + 1) as f64;
            u1[e] += b2;
            // The kernel adds to its own buffer, zeroed for INC: y sees the buffer's values.
            yy[e] += b0;
            yy[e + 1] += b2;
        }
    }
    let split = u.split();
    assert_eq!(split[0].to_vec().unwrap(), u0);
    assert_eq!(split[1].to_vec().unwrap(), u1);
    assert_eq!(y.to_vec().unwrap(), yy);
    // Read back through a READ buffer: the element's values in the same order.
    let sums = rt.decl_dat_zeros::<f64>(&elems, 3, "sums").unwrap();
    let rd = kernel(
        "mixrd",
        "void mixrd(const double b[3], double *s) { s[0] = b[0]; s[1] = b[1]; s[2] = b[2]; }",
    );
    rt.par_loop(&rd, &elems, [u.arg_buffer(&mm, READ), sums.arg(op2::WRITE)])
        .unwrap();
    let want: Vec<f64> = (0..n).flat_map(|e| [u0[e], u0[e + 1], u1[e]]).collect();
    assert_eq!(sums.to_vec().unwrap(), want);
}

/// A mixed arg called once per entry (PyOP2 0.8.2's `mixed_dat(access, mixed_map[op2.i[0]])`
/// with a kernel ending in `int i`): call `i` gets entry `i` of the components' entries in turn,
/// beside a non-mixed per-entry arg over as many entries and a direct arg passed whole.
#[test]
fn a_mixed_arg_per_entry_walks_every_components_entries() {
    let rt = builder().build().unwrap();
    let n = 8;
    let (elems, ms, mm) = chain(&rt, n);
    let u = rt.decl_mixed_dat::<f64>(&ms, &[2, 1], "u").unwrap();
    // Three entries per element: node e, node e + 1, element e; a Dat on the elements through
    // a map of arity 3 (the element three times) runs over as many.
    let e3 = rt
        .decl_map(
            &elems,
            &elems,
            3,
            (0..n as i32).flat_map(|e| [e, e, e]).collect::<Vec<_>>(),
            "e3",
        )
        .unwrap();
    let hits = rt.decl_dat_zeros::<f64>(&elems, 1, "hits").unwrap();
    let w = rt
        .decl_dat(&elems, 1, (0..n).map(|e| e as f64).collect::<Vec<_>>(), "w")
        .unwrap();
    let k = kernel(
        "pp_mixed",
        "void pp_mixed(double *x, double *h, const double *w, int i) {
           x[0] += 10.0 * i + *w; h[0] += 1.0; }",
    );
    rt.par_loop(
        &k,
        &elems,
        [
            u.arg_entries(&mm, INC),
            hits.arg_entries(&e3, INC),
            w.arg(READ),
        ],
    )
    .unwrap();
    let (mut u0, mut u1) = (vec![0.0; 2 * (n + 1)], vec![0.0; n]);
    for e in 0..n {
        let w = e as f64;
        u0[2 * e] += w;
        u0[2 * (e + 1)] += 10.0 + w;
        u1[e] += 20.0 + w;
    }
    let split = u.split();
    assert_eq!(split[0].to_vec().unwrap(), u0);
    assert_eq!(split[1].to_vec().unwrap(), u1);
    assert_eq!(hits.to_vec().unwrap(), vec![3.0; n]);
    // Entries of different counts in one loop, and a kernel without the index, are refused.
    let e2 = mm.split()[0].clone();
    let e = rt
        .par_loop(
            &k,
            &elems,
            [
                u.arg_entries(&mm, INC),
                hits.arg_entries(&e2, INC),
                w.arg(READ),
            ],
        )
        .unwrap_err();
    assert!(matches!(e, Op2Error::IterationSpace { .. }), "{e}");
    let no_index = kernel(
        "pp_noi",
        "void pp_noi(double *x, double *h, const double *w) { }",
    );
    let e = rt
        .par_loop(
            &no_index,
            &elems,
            [
                u.arg_entries(&mm, INC),
                hits.arg_entries(&e3, INC),
                w.arg(READ),
            ],
        )
        .unwrap_err();
    assert!(matches!(e, Op2Error::KernelParamCount { .. }), "{e}");
}
