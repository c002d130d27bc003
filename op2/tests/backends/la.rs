//! Sparse matrices assembled by loops (`op2::la`) on every backend built in: mass matrices checked
//! entry by entry against values computed here, block sizes, INC and WRITE, random meshes against a
//! dense assembly, and every misuse as a typed error (the Poisson problem's own tests are in the
//! poisson crate).

use op2_test_support::runtimes;

use op2::la::{self, LaError, Mat, Method, Preconditioner, SolverOptions, Sparsity};
use op2::{INC, Kernel, READ, RW, Runtime, WRITE};
use proptest::prelude::*;

/// Four triangles of different shapes over five nodes (node 4 inside the square 0-1-2-3).
const XY: [f64; 10] = [0.0, 0.0, 2.0, 0.0, 2.0, 1.0, 0.0, 1.5, 0.7, 0.4];
const TRIANGLES: [i32; 12] = [0, 1, 4, 1, 2, 4, 2, 3, 4, 3, 0, 4];

/// The P1 mass matrix computed here: `M_ij = area/12 (1 + δij)` summed over triangles.
fn mass_expected() -> Vec<Vec<f64>> {
    let mut m = vec![vec![0.0; 5]; 5];
    for t in TRIANGLES.chunks(3) {
        let p = |k: usize| (XY[2 * t[k] as usize], XY[2 * t[k] as usize + 1]);
        let ((x0, y0), (x1, y1), (x2, y2)) = (p(0), p(1), p(2));
        let area = 0.5 * ((x1 - x0) * (y2 - y0) - (x2 - x0) * (y1 - y0)).abs();
        for i in 0..3 {
            for j in 0..3 {
                let v = area / 12.0 * if i == j { 2.0 } else { 1.0 };
                m[t[i] as usize][t[j] as usize] += v;
            }
        }
    }
    m
}

/// The mass kernel for block size `bs`: the scalar element matrix on each component's diagonal.
fn mass_kernel(bs: usize) -> Kernel {
    let n = 3 * bs;
    Kernel::new(
        &format!("mass_{bs}"),
        &format!(
            "void mass_{bs}(double A[{nn}], double *x[3]) {{
  double area = 0.5 * fabs((x[1][0] - x[0][0]) * (x[2][1] - x[0][1])
                         - (x[2][0] - x[0][0]) * (x[1][1] - x[0][1]));
  for (int i = 0; i < 3; i++)
    for (int j = 0; j < 3; j++)
      for (int c = 0; c < {bs}; c++)
        A[(i * {bs} + c) * {n} + j * {bs} + c] += area / 12.0 * (i == j ? 2.0 : 1.0);
}}",
            nn = n * n
        ),
    )
    .unwrap()
}

struct Tiny {
    rt: Runtime,
    nodes: op2::Set,
    cells: op2::Set,
    c2n: op2::Map,
    xy: op2::Dat<f64>,
}

fn tiny(rt: &Runtime) -> Tiny {
    let nodes = rt.decl_set(5, "nodes").unwrap();
    let cells = rt.decl_set(4, "cells").unwrap();
    let c2n = rt
        .decl_map(&cells, &nodes, 3, TRIANGLES.to_vec(), "c2n")
        .unwrap();
    let xy = rt.decl_dat(&nodes, 2, XY, "xy").unwrap();
    Tiny {
        rt: rt.clone(),
        nodes,
        cells,
        c2n,
        xy,
    }
}

/// Adds the tiny mesh's mass matrix for block size `bs` into `m` by a loop on `rt`, and
/// assembles.
fn add_mass(rt: &Runtime, t: &Tiny, m: &Mat, bs: usize) {
    la::par_loop!(
        rt,
        mass_kernel(bs),
        t.cells,
        m.arg(INC, &t.c2n, &t.c2n),
        t.xy.arg_row(&t.c2n, READ)
    )
    .unwrap();
    m.assemble();
}

/// The tiny mesh's P1 mass matrix, assembled by a loop on `rt`.
fn assembled_mass(rt: &Runtime, t: &Tiny) -> Mat {
    let sp = Sparsity::new(&[(&t.c2n, &t.c2n)], (1, 1), "mass").unwrap();
    let m = Mat::new(&sp, "M");
    add_mass(rt, t, &m, 1);
    m
}

#[test]
fn mass_matrices_match_values_computed_here_on_every_backend() {
    let expected = mass_expected();
    for rt in runtimes() {
        let b = rt.backend_name().to_string();
        let t = tiny(&rt);
        for bs in [1usize, 2, 3] {
            let sp = Sparsity::new(&[(&t.c2n, &t.c2n)], (bs, bs), "mass").unwrap();
            assert_eq!(sp.rows(), 5 * bs);
            let m = Mat::new(&sp, "M");
            add_mass(&rt, &t, &m, bs);
            let dense = m.to_dense();
            for r in 0..5 * bs {
                for c in 0..5 * bs {
                    // Block size bs: the scalar matrix on each component (kron(M, I)).
                    let want = if r % bs == c % bs {
                        expected[r / bs][c / bs]
                    } else {
                        0.0
                    };
                    assert!(
                        (dense[r][c] - want).abs() <= 1e-15 * want.abs().max(1.0),
                        "{b}, bs {bs}: M[{r}][{c}] = {} expected {want}",
                        dense[r][c]
                    );
                }
            }
            // The pattern: node 4 touches every node; nodes 0 and 2 are not neighbours.
            assert!(sp.position(0, 2 * bs).is_none());
            assert!(sp.position(4 * bs, 0).is_some());
            // Adding the same loop again doubles; zero() starts over.
            add_mass(&rt, &t, &m, bs);
            assert_eq!(
                m.value(4 * bs, 4 * bs).unwrap(),
                2.0 * dense[4 * bs][4 * bs]
            );
            m.zero();
            assert!(m.values().iter().all(|&v| v == 0.0));
        }
    }
}

#[test]
fn write_inserts_the_last_elements_block_and_leaves_other_entries() {
    for rt in runtimes() {
        let b = rt.backend_name().to_string();
        let t = tiny(&rt);
        let sp = Sparsity::new(&[(&t.c2n, &t.c2n)], (1, 1), "ins").unwrap();
        let m = Mat::new(&sp, "W");
        m.set_values(&[0], &[0], &[-7.0]).unwrap();
        m.assemble();
        // Each cell writes its own number + 1 into its whole block.
        let ids =
            t.rt.decl_dat(&t.cells, 1, [1.0, 2.0, 3.0, 4.0], "ids")
                .unwrap();
        let k = Kernel::new(
            "stamp",
            "void stamp(double *A, const double *id) { for (int i = 0; i < 9; i++) A[i] = *id; }",
        )
        .unwrap();
        la::par_loop!(rt, k, t.cells, m.arg(WRITE, &t.c2n, &t.c2n), ids.arg(READ)).unwrap();
        m.assemble();
        // Entry (r, c): the highest-numbered cell holding both r and c.
        for r in 0..5 {
            for c in 0..5 {
                let last = TRIANGLES
                    .chunks(3)
                    .enumerate()
                    .filter(|(_, t)| t.contains(&(r as i32)) && t.contains(&(c as i32)))
                    .map(|(e, _)| e as f64 + 1.0)
                    .next_back()
                    .unwrap_or(0.0);
                assert_eq!(m.value(r, c).unwrap(), last, "{b}: ({r}, {c})");
            }
        }
        let _ = t.nodes;
    }
}

/// A random mesh: `cells` elements of arity `arity` over `nodes` nodes, values per element.
fn random_mesh() -> impl Strategy<Value = (usize, usize, Vec<i32>, Vec<f64>)> {
    (1usize..30, 1usize..4).prop_flat_map(|(nodes, arity)| {
        (0usize..40).prop_flat_map(move |cells| {
            (
                Just(nodes),
                Just(arity),
                prop::collection::vec(0..nodes as i32, cells * arity),
                prop::collection::vec(-1.0f64..1.0, cells),
            )
        })
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// Any map (repeated entries included) and any element values: the pattern is exactly the
    /// pairs the maps join (plus the diagonal), and every backend's matrix equals a dense
    /// assembly done here.
    #[test]
    fn random_meshes_assemble_as_a_dense_sum((nn, arity, map, w) in random_mesh()) {
        let cells = w.len();
        let mut dense = vec![vec![0.0; nn]; nn];
        let mut pattern = vec![vec![false; nn]; nn];
        for (i, row) in pattern.iter_mut().enumerate() {
            row[i] = true;
        }
        for e in 0..cells {
            for i in 0..arity {
                for j in 0..arity {
                    let (r, c) = (map[e * arity + i] as usize, map[e * arity + j] as usize);
                    dense[r][c] += w[e] * (1 + i + 2 * j) as f64;
                    pattern[r][c] = true;
                }
            }
        }
        let kernel = Kernel::new(
            "weighted",
            &format!("void weighted(double *A, const double *w) {{
               for (int i = 0; i < {arity}; i++) for (int j = 0; j < {arity}; j++)
                 A[i * {arity} + j] += *w * (1 + i + 2 * j); }}"),
        ).unwrap();
        for rt in runtimes() {
            let b = rt.backend_name().to_string();
            let nodes = rt.decl_set(nn, "nodes").unwrap();
            let elements = rt.decl_set(cells, "elements").unwrap();
            let m = rt.decl_map(&elements, &nodes, arity, map.clone(), "e2n").unwrap();
            let wd = rt.decl_dat(&elements, 1, &w, "w").unwrap();
            let sp = Sparsity::new(&[(&m, &m)], (1, 1), "random").unwrap();
            let mat = Mat::new(&sp, "R");
            la::par_loop!(rt, kernel, elements, mat.arg(INC, &m, &m), wd.arg(READ)).unwrap();
            mat.assemble();
            let got = mat.to_dense();
            for r in 0..nn {
                let cols: Vec<u32> = (0..nn as u32).filter(|&c| pattern[r][c as usize]).collect();
                prop_assert_eq!(sp.row(r), &cols[..], "{}: row {}", b, r);
                for c in 0..nn {
                    prop_assert!((got[r][c] - dense[r][c]).abs() <= 1e-12,
                        "{}: ({}, {}) {} vs {}", b, r, c, got[r][c], dense[r][c]);
                }
            }
        }
    }
}

#[test]
fn solving_uses_dats_as_vectors() {
    let rt = runtimes().remove(0);
    let t = tiny(&rt);
    let m = assembled_mass(&rt, &t);
    // b = M * 1 is each node's share of the area; solving gives back the ones.
    let ones = rt.decl_dat(&t.nodes, 1, [1.0; 5], "ones").unwrap();
    let b = rt.decl_dat_zeros::<f64>(&t.nodes, 1, "b").unwrap();
    m.mult(&ones, &b).unwrap();
    let total: f64 = b.data_ro().unwrap().iter().sum();
    // The entries of a mass matrix sum to the area (the quadrilateral's shoelace area: 2.5).
    assert!((total - 2.5).abs() < 1e-14, "{total}");
    let expected: Vec<f64> = mass_expected().iter().map(|r| r.iter().sum()).collect();
    for (g, e) in b.to_vec().unwrap().iter().zip(&expected) {
        assert!((g - e).abs() < 1e-15);
    }
    for method in [Method::Cg, Method::Gmres { restart: 30 }, Method::BiCgStab] {
        for pc in [
            Preconditioner::None,
            Preconditioner::Jacobi,
            Preconditioner::Sor { omega: 1.2 },
            Preconditioner::Ilu0,
        ] {
            let x = rt.decl_dat_zeros::<f64>(&t.nodes, 1, "x").unwrap();
            let r = la::solve(&m, &b, &x, &SolverOptions::new(method, pc).rtol(1e-12)).unwrap();
            assert!(r.converged(), "{method:?} {pc:?}: {r:?}");
            for v in x.to_vec().unwrap() {
                assert!((v - 1.0).abs() < 1e-9, "{method:?} {pc:?}: {v}");
            }
        }
    }
    // A loop that reads x after the solve sees the solution (the solve wrote through the Dat).
    let x = rt.decl_dat_zeros::<f64>(&t.nodes, 1, "x2").unwrap();
    la::solve(&m, &b, &x, &SolverOptions::default().rtol(1e-12)).unwrap();
    let k = Kernel::new("halve", "void halve(double *v) { *v *= 0.5; }").unwrap();
    rt.par_loop(&k, &t.nodes, [x.arg(RW)]).unwrap();
    for v in x.to_vec().unwrap() {
        assert!((v - 0.5).abs() < 1e-9);
    }
}

#[test]
fn misuse_is_a_typed_error() {
    let rt = runtimes().remove(0);
    let t = tiny(&rt);
    let other = rt
        .decl_map(&t.cells, &t.nodes, 3, TRIANGLES.to_vec(), "c2n_copy")
        .unwrap();
    let edges = rt.decl_set(2, "edges").unwrap();
    let e2n = rt
        .decl_map(&edges, &t.nodes, 2, vec![0, 1, 1, 2], "e2n")
        .unwrap();
    let sp = Sparsity::new(&[(&t.c2n, &t.c2n)], (1, 1), "s").unwrap();
    let m = Mat::new(&sp, "M");
    let k = mass_kernel(1);
    let xy = t.xy.arg_row(&t.c2n, READ);
    let run = |a: la::MatArg, set: &op2::Set, k: &Kernel| {
        la::par_loop(&rt, k, set, [a.into(), xy.clone().into()])
    };

    // Sparsities.
    assert!(matches!(
        Sparsity::new(&[], (1, 1), "none"),
        Err(LaError::NoMaps { .. })
    ));
    assert!(matches!(
        Sparsity::new(&[(&t.c2n, &t.c2n)], (0, 1), "z"),
        Err(LaError::ZeroBlock { .. })
    ));
    assert!(matches!(
        Sparsity::new(&[(&t.c2n, &e2n)], (1, 1), "p"),
        Err(LaError::PairSets { .. })
    ));
    let cells2 = rt.decl_set(4, "other_nodes").unwrap();
    let to_other = rt
        .decl_map(
            &t.cells,
            &cells2,
            3,
            TRIANGLES.iter().map(|v| v % 4).collect::<Vec<i32>>(),
            "to_other",
        )
        .unwrap();
    assert!(matches!(
        Sparsity::new(&[(&t.c2n, &t.c2n), (&to_other, &t.c2n)], (1, 1), "t"),
        Err(LaError::TargetSets { which: "row", .. })
    ));
    // Maps that are not the sparsity's pair, a loop over another set, READ access.
    assert!(matches!(
        run(m.arg(INC, &other, &other), &t.cells, &k),
        Err(LaError::MapsNotInSparsity { .. })
    ));
    assert!(matches!(
        run(m.arg(INC, &t.c2n, &t.c2n), &t.nodes, &k),
        Err(LaError::MatSet { .. })
    ));
    for access in [READ, RW, op2::MIN] {
        assert!(matches!(
            run(m.arg(access, &t.c2n, &t.c2n), &t.cells, &k),
            Err(LaError::MatAccess { .. })
        ));
    }
    // A kernel whose element matrix is declared with another size.
    let wrong = Kernel::new(
        "wrong_shape",
        "void wrong_shape(double A[4], double *x[3]) { A[0] += x[0][0]; }",
    )
    .unwrap();
    let e = run(m.arg(INC, &t.c2n, &t.c2n), &t.cells, &wrong).unwrap_err();
    assert!(matches!(e, LaError::Op2(_)), "{e:?}");
    assert!(e.to_string().contains('9'), "{e}");
    // Nothing ran: the matrix is still empty, and unassembled.
    assert!(m.values().iter().all(|&v| v == 0.0));
    let x = rt.decl_dat_zeros::<f64>(&t.nodes, 1, "x").unwrap();
    let b = rt.decl_dat(&t.nodes, 1, [1.0; 5], "b").unwrap();
    let o = SolverOptions::default();
    assert!(matches!(
        la::solve(&m, &b, &x, &o),
        Err(LaError::Unassembled { .. })
    ));
    assert!(matches!(
        m.zero_rows(&[0], 1.0),
        Err(LaError::Unassembled { .. })
    ));
    assert!(matches!(m.mult(&b, &x), Err(LaError::Unassembled { .. })));
    // Adding then inserting without assembling.
    run(m.arg(INC, &t.c2n, &t.c2n), &t.cells, &k).unwrap();
    assert!(matches!(
        run(m.arg(WRITE, &t.c2n, &t.c2n), &t.cells, &k),
        Err(LaError::MixedModes { .. })
    ));
    assert!(matches!(
        m.set_values(&[0], &[0], &[1.0]),
        Err(LaError::MixedModes { .. })
    ));
    m.assemble();
    // Entries outside the pattern or the matrix; blocks of the wrong length.
    assert!(matches!(
        m.add_values(&[0], &[2], &[1.0]),
        Err(LaError::NotInPattern { row: 0, col: 2, .. })
    ));
    assert!(matches!(
        m.add_values(&[5], &[0], &[1.0]),
        Err(LaError::Index { .. })
    ));
    assert!(matches!(
        m.add_values(&[0, 1], &[0], &[1.0]),
        Err(LaError::Length { .. })
    ));
    assert!(matches!(m.zero_rows(&[9], 1.0), Err(LaError::Index { .. })));
    assert!(matches!(m.value(0, 7), Err(LaError::Index { .. })));
    // Vectors on the wrong set or with the wrong dim; x and b the same Dat.
    let on_cells = rt.decl_dat_zeros::<f64>(&t.cells, 1, "on_cells").unwrap();
    assert!(matches!(
        m.mult(&on_cells, &x),
        Err(LaError::VectorShape { role: "x", .. })
    ));
    assert!(matches!(
        la::solve(&m, &t.xy, &x, &o),
        Err(LaError::VectorShape { role: "b", .. })
    ));
    assert!(matches!(
        la::solve(&m, &b, &b, &o),
        Err(LaError::Option { .. })
    ));
    // A rectangular matrix cannot be solved.
    let rect = Sparsity::new(&[(&t.c2n, &to_other)], (1, 1), "rect").unwrap();
    let r = Mat::new(&rect, "R");
    r.assemble();
    assert!(matches!(
        r.zero_rows(&[0], 1.0),
        Err(LaError::NotSquare { .. })
    ));
    // A diverging solve is a report, and an error when asked.
    let o = SolverOptions::new(Method::Cg, Preconditioner::None)
        .max_iterations(1)
        .rtol(1e-14);
    let rep = la::solve(&m, &b, &x, &o).unwrap();
    assert!(!rep.converged());
    assert!(matches!(rep.check(), Err(LaError::NotConverged { .. })));
}

#[test]
fn sparsities_are_cached_by_maps_and_block_sizes() {
    let rt = runtimes().remove(0);
    let t = tiny(&rt);
    let a = Sparsity::new(&[(&t.c2n, &t.c2n)], (1, 1), "a").unwrap();
    let b = Sparsity::new(&[(&t.c2n, &t.c2n)], (1, 1), "b").unwrap();
    let c = Sparsity::new(&[(&t.c2n, &t.c2n)], (2, 2), "c").unwrap();
    assert!(a.same(&b));
    assert!(!a.same(&c));
    // Two pairs over different iteration sets: the union of both patterns.
    let edges = rt.decl_set(1, "edges").unwrap();
    let e2n = rt.decl_map(&edges, &t.nodes, 2, vec![0, 2], "e2n").unwrap();
    let u = Sparsity::new(&[(&t.c2n, &t.c2n), (&e2n, &e2n)], (1, 1), "u").unwrap();
    assert!(u.position(0, 2).is_some() && a.position(0, 2).is_none());
    assert_eq!(u.nnz(), a.nnz() + 2);
    // Empty sets make an empty (diagonal-only) pattern.
    let none = rt.decl_set(0, "no_cells").unwrap();
    let n2n = rt.decl_map(&none, &t.nodes, 3, vec![], "n2n").unwrap();
    let d = Sparsity::new(&[(&n2n, &n2n)], (1, 1), "d").unwrap();
    assert_eq!(d.nnz(), 5);
    let m = Mat::new(&d, "D");
    la::par_loop!(
        rt,
        mass_kernel(1),
        none,
        m.arg(INC, &n2n, &n2n),
        t.xy.arg_row(&n2n, READ)
    )
    .unwrap();
    m.assemble();
    assert!(m.values().iter().all(|&v| v == 0.0));
}

/// A rectangular matrix (rows: nodes, columns: cells, through an identity map on the cells):
/// each cell puts a third of its area in its three nodes' rows; `mult` takes a Dat on the cells
/// to one on the nodes.
#[test]
fn rectangular_matrices_assemble_and_multiply_on_every_backend() {
    for rt in runtimes() {
        let b = rt.backend_name().to_string();
        let t = tiny(&rt);
        let itself = rt
            .decl_map(&t.cells, &t.cells, 1, vec![0, 1, 2, 3], "itself")
            .unwrap();
        let sp = Sparsity::new(&[(&t.c2n, &itself)], (1, 1), "rect").unwrap();
        assert_eq!((sp.rows(), sp.cols()), (5, 4));
        let g = Mat::new(&sp, "G");
        let k = Kernel::new(
            "share",
            "void share(double A[3], double *x[3]) {
               double area = 0.5 * fabs((x[1][0] - x[0][0]) * (x[2][1] - x[0][1])
                                      - (x[2][0] - x[0][0]) * (x[1][1] - x[0][1]));
               for (int i = 0; i < 3; i++) A[i] += area / 3.0; }",
        )
        .unwrap();
        la::par_loop!(
            rt,
            k,
            t.cells,
            g.arg(INC, &t.c2n, &itself),
            t.xy.arg_row(&t.c2n, READ)
        )
        .unwrap();
        g.assemble();
        let ones = rt.decl_dat(&t.cells, 1, [1.0; 4], "ones").unwrap();
        let y = rt.decl_dat_zeros::<f64>(&t.nodes, 1, "y").unwrap();
        g.mult(&ones, &y).unwrap();
        // Row sums: each node's share of its cells' areas, computed here.
        let expected: Vec<f64> = mass_expected().iter().map(|r| r.iter().sum()).collect();
        for (i, (got, want)) in y.to_vec().unwrap().iter().zip(&expected).enumerate() {
            assert!((got - want).abs() < 1e-14, "{b}: node {i}: {got} vs {want}");
        }
        // A square solve on it is refused.
        let x = rt.decl_dat_zeros::<f64>(&t.cells, 1, "x").unwrap();
        assert!(matches!(
            la::solve(&g, &y, &x, &SolverOptions::default()),
            Err(LaError::NotSquare { .. })
        ));
    }
}

#[test]
fn one_matrix_twice_in_a_loop() {
    let rt = runtimes().remove(0);
    let t = tiny(&rt);
    let sp = Sparsity::new(&[(&t.c2n, &t.c2n)], (1, 1), "twice").unwrap();
    let m = Mat::new(&sp, "M");
    let k = Kernel::new(
        "both",
        "void both(double *A, double *B, double *x[3]) { for (int i = 0; i < 9; i++) { A[i] += 1.0; B[i] += 2.0; } }",
    )
    .unwrap();
    // Two INC args on one matrix add both blocks.
    la::par_loop!(
        rt,
        k,
        t.cells,
        m.arg(INC, &t.c2n, &t.c2n),
        m.arg(INC, &t.c2n, &t.c2n),
        t.xy.arg_row(&t.c2n, READ)
    )
    .unwrap();
    m.assemble();
    // Node 4 is in all four cells: 4 x (1 + 2).
    assert_eq!(m.value(4, 4).unwrap(), 12.0);
    // INC and WRITE on one matrix in one loop: refused before anything runs.
    let before = m.values();
    let r = la::par_loop!(
        rt,
        k,
        t.cells,
        m.arg(INC, &t.c2n, &t.c2n),
        m.arg(WRITE, &t.c2n, &t.c2n),
        t.xy.arg_row(&t.c2n, READ)
    );
    assert!(matches!(r, Err(LaError::MixedModes { .. })), "{r:?}");
    assert_eq!(m.values(), before);
}

/// Data outlives its runtime: a matrix and Dats whose runtime was dropped still multiply and
/// solve (one process: the Dats hold all their values).
#[test]
fn solving_after_the_runtime_is_dropped() {
    let (m, b, x) = {
        let rt = runtimes().remove(0);
        let t = tiny(&rt);
        let m = assembled_mass(&rt, &t);
        let b = rt.decl_dat(&t.nodes, 1, [1.0; 5], "b").unwrap();
        let x = rt.decl_dat_zeros::<f64>(&t.nodes, 1, "x").unwrap();
        (m, b, x)
    };
    let r = la::solve(
        &m,
        &b,
        &x,
        &SolverOptions::new(Method::Cg, Preconditioner::Jacobi).rtol(1e-12),
    )
    .unwrap();
    assert!(r.converged());
    let check = x.to_vec().unwrap();
    let dense = mass_expected();
    for (i, row) in dense.iter().enumerate() {
        let ax: f64 = row.iter().zip(&check).map(|(a, x)| a * x).sum();
        assert!((ax - 1.0).abs() < 1e-10, "row {i}: {ax}");
    }
}
