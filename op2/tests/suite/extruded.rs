//! Extruded sets (PyOP2's `ExtrudedSet`): a triangle mesh extruded into prisms against the same
//! mesh declared fully unstructured in 3-D with explicit maps (volumes, a P1 mass matrix's
//! action, an assembled matrix), iteration regions, columns of different heights, interior
//! facets, across ranks, and bad input.

use op2::la::{self, LoopArg, Mat, Sparsity};
use op2::{INC, Layers, Op2Error, READ, RW, Region, Runtime, Set, WRITE};
use op2_test_support::{builder, close, kernel};
use proptest::prelude::*;

/// A unit square of `nx` x `ny` squares, each cut into two triangles: (triangle-to-node map,
/// node coordinates).
fn triangles(nx: usize, ny: usize) -> (Vec<i32>, Vec<f64>) {
    let node = |i: usize, j: usize| (j * (nx + 1) + i) as i32;
    let mut t2n = Vec::new();
    for j in 0..ny {
        for i in 0..nx {
            t2n.extend([node(i, j), node(i + 1, j), node(i + 1, j + 1)]);
            t2n.extend([node(i, j), node(i + 1, j + 1), node(i, j + 1)]);
        }
    }
    let mut xy = Vec::new();
    for j in 0..=ny {
        for i in 0..=nx {
            // Slightly skewed, so that no two triangles have the same shape.
            let (x, y) = (i as f64 / nx as f64, j as f64 / ny as f64);
            xy.extend([x + 0.05 * (3.0 * y).sin() * x * (1.0 - x), y]);
        }
    }
    (t2n, xy)
}

/// Node layer heights of column `n` (nodes of the base mesh) for `layers` layers.
fn height(n: usize, l: usize) -> f64 {
    l as f64 * (0.1 + 0.01 * (n % 3) as f64)
}

/// The prism mesh both ways on one runtime.
struct Prisms {
    cells: Set,
    nodes: Set,
    c2n: op2::Map,
    flat_cells: Set,
    flat_nodes: Set,
    flat_c2n: op2::Map,
    coords: op2::Dat<f64>,
    flat_coords: op2::Dat<f64>,
    base_nodes: usize,
    layers: usize,
}

fn prisms(rt: &Runtime, nx: usize, ny: usize, layers: usize) -> Prisms {
    let (t2n, xy) = triangles(nx, ny);
    let (nt, nn) = (t2n.len() / 3, xy.len() / 2);
    let tris = rt.decl_set(nt, "tris").unwrap();
    let verts = rt.decl_set(nn, "verts").unwrap();
    let cells = rt.decl_extruded_set(&tris, layers, "prisms").unwrap();
    let nodes = rt.decl_extruded_nodes(&verts, layers, "nodes").unwrap();
    // Nodes column by column: node (n, l) is n * layers + l.
    let bottom: Vec<i32> = t2n
        .chunks(3)
        .flat_map(|t| {
            let b: Vec<i32> = t.iter().map(|&n| n * layers as i32).collect();
            [b[0], b[1], b[2], b[0] + 1, b[1] + 1, b[2] + 1]
        })
        .collect();
    let c2n = rt
        .decl_extruded_map(&cells, &nodes, 6, bottom.clone(), vec![1; 6], "c2n")
        .unwrap();
    let mut xyz = Vec::new();
    for n in 0..nn {
        for l in 0..layers {
            xyz.extend([xy[2 * n], xy[2 * n + 1], height(n, l)]);
        }
    }
    let coords = rt.decl_dat(&nodes, 3, xyz.clone(), "coords").unwrap();
    // The same mesh with every prism and node declared, and an explicit map.
    let flat_cells = rt.decl_set(nt * (layers - 1), "flat_prisms").unwrap();
    let flat_nodes = rt.decl_set(nn * layers, "flat_nodes").unwrap();
    let flat: Vec<i32> = bottom
        .chunks(6)
        .flat_map(|row| (0..layers as i32 - 1).flat_map(move |k| row.iter().map(move |v| v + k)))
        .collect();
    let flat_c2n = rt
        .decl_map(&flat_cells, &flat_nodes, 6, flat, "flat_c2n")
        .unwrap();
    let flat_coords = rt.decl_dat(&flat_nodes, 3, xyz, "flat_coords").unwrap();
    Prisms {
        cells,
        nodes,
        c2n,
        flat_cells,
        flat_nodes,
        flat_c2n,
        coords,
        flat_coords,
        base_nodes: nn,
        layers,
    }
}

/// A prism's volume from its six nodes (vertical edges, so the bottom triangle's area times the
/// mean of the three edge heights).
const VOLUME: &str = "void volume(const double *x[6], double *v, double *total) {
  double ax = x[1][0] - x[0][0], ay = x[1][1] - x[0][1];
  double bx = x[2][0] - x[0][0], by = x[2][1] - x[0][1];
  double area = 0.5 * (ax * by - ay * bx);
  double h = (x[3][2] - x[0][2] + x[4][2] - x[1][2] + x[5][2] - x[2][2]) / 3.0;
  *v = area * h;
  *total += area * h;
}";

/// The action on ones of a P1 prism's mass matrix (triangle P1 times interval P1, exact for
/// vertical prisms of constant height per edge taken as the mean): each node's share.
const LUMPED: &str = "void lumped(const double *x[6], double *m[6]) {
  double ax = x[1][0] - x[0][0], ay = x[1][1] - x[0][1];
  double bx = x[2][0] - x[0][0], by = x[2][1] - x[0][1];
  double area = 0.5 * (ax * by - ay * bx);
  double h = (x[3][2] - x[0][2] + x[4][2] - x[1][2] + x[5][2] - x[2][2]) / 3.0;
  for (int i = 0; i < 6; i++) m[i][0] += area * h / 6.0;
}";

/// The P1 prism mass matrix: triangle P1 (area/12 [2 1 1; 1 2 1; 1 1 2]) times interval P1
/// (h/6 [2 1; 1 2]), nodes bottom (0..3) then top (3..6).
const MASS: &str = "void mass(double A[36], const double *x[6]) {
  double ax = x[1][0] - x[0][0], ay = x[1][1] - x[0][1];
  double bx = x[2][0] - x[0][0], by = x[2][1] - x[0][1];
  double area = 0.5 * (ax * by - ay * bx);
  double h = (x[3][2] - x[0][2] + x[4][2] - x[1][2] + x[5][2] - x[2][2]) / 3.0;
  for (int i = 0; i < 6; i++)
    for (int j = 0; j < 6; j++) {
      double t = (i % 3 == j % 3 ? 2.0 : 1.0) * area / 12.0;
      double z = (i / 3 == j / 3 ? 2.0 : 1.0) * h / 6.0;
      A[i * 6 + j] = t * z;
    }
}";

#[test]
fn prism_volumes_match_the_unstructured_mesh_and_the_exact_volume() {
    let rt = builder().build().unwrap();
    let (nx, ny, layers) = (5, 4, 7);
    let m = prisms(&rt, nx, ny, layers);
    assert_eq!(m.cells.size(), nx * ny * 2 * (layers - 1));
    assert_eq!(m.nodes.size(), m.base_nodes * layers);
    let k = kernel("volume", VOLUME);
    let v = rt.decl_dat_zeros::<f64>(&m.cells, 1, "v").unwrap();
    let total = rt.decl_global(1, &[0.0f64], "total").unwrap();
    rt.par_loop(
        &k,
        &m.cells,
        [m.coords.arg_row(&m.c2n, READ), v.arg(WRITE), total.arg(INC)],
    )
    .unwrap();
    let fv = rt.decl_dat_zeros::<f64>(&m.flat_cells, 1, "fv").unwrap();
    let ftotal = rt.decl_global(1, &[0.0f64], "ftotal").unwrap();
    rt.par_loop(
        &k,
        &m.flat_cells,
        [
            m.flat_coords.arg_row(&m.flat_c2n, READ),
            fv.arg(WRITE),
            ftotal.arg(INC),
        ],
    )
    .unwrap();
    assert!(close(&v.data_ro().unwrap(), &fv.data_ro().unwrap(), 1e-14));
    // Exact: the column over each triangle has the height of its top layer's mean node height.
    let (t2n, xy) = triangles(nx, ny);
    let exact: f64 = t2n
        .chunks(3)
        .map(|t| {
            let p = |i: usize| (xy[2 * t[i] as usize], xy[2 * t[i] as usize + 1]);
            let (a, b, c) = (p(0), p(1), p(2));
            let area = 0.5 * ((b.0 - a.0) * (c.1 - a.1) - (b.1 - a.1) * (c.0 - a.0));
            let h = t
                .iter()
                .map(|&n| height(n as usize, layers - 1))
                .sum::<f64>()
                / 3.0;
            area * h
        })
        .sum();
    let got = total.value().unwrap()[0];
    assert!((got - exact).abs() < 1e-12, "{got} vs {exact}");
    assert!((ftotal.value().unwrap()[0] - exact).abs() < 1e-12);
}

#[test]
fn increments_through_extruded_maps_match_the_unstructured_mesh() {
    let rt = builder().build().unwrap();
    let m = prisms(&rt, 6, 5, 9);
    let k = kernel("lumped", LUMPED);
    let y = rt.decl_dat_zeros::<f64>(&m.nodes, 1, "y").unwrap();
    let fy = rt.decl_dat_zeros::<f64>(&m.flat_nodes, 1, "fy").unwrap();
    for _ in 0..2 {
        rt.par_loop(
            &k,
            &m.cells,
            [m.coords.arg_row(&m.c2n, READ), y.arg_row(&m.c2n, INC)],
        )
        .unwrap();
        rt.par_loop(
            &k,
            &m.flat_cells,
            [
                m.flat_coords.arg_row(&m.flat_c2n, READ),
                fy.arg_row(&m.flat_c2n, INC),
            ],
        )
        .unwrap();
    }
    let (y, fy) = (
        y.data_ro().unwrap().to_vec(),
        fy.data_ro().unwrap().to_vec(),
    );
    assert!(close(&y, &fy, 1e-13), "extruded and unstructured differ");
    assert!(y.iter().all(|&v| v > 0.0), "every node is in some prism");
}

/// A loop over a subset of an extruded set's cells (PyOP2's Subset of an ExtrudedSet: whole
/// columns) with extruded maps, a direct Dat of the base and a map from the base runs exactly
/// those cells, as the same subset of the unstructured mesh does.
#[test]
fn subsets_of_extruded_cells_run_those_cells() {
    let rt = builder().build().unwrap();
    let m = prisms(&rt, 4, 3, 5);
    let base = m.cells.extrusion().unwrap().base().clone();
    let per = m.layers - 1;
    let columns = [0usize, 5, 6, 23];
    let cells: Vec<i32> = columns
        .iter()
        .flat_map(|&c| (c * per..(c + 1) * per).map(|e| e as i32))
        .collect();
    let sub = rt
        .decl_subset(&m.cells, cells.clone(), "some_columns")
        .unwrap();
    let flat_sub = rt.decl_subset(&m.flat_cells, cells, "flat_some").unwrap();
    // A weight per column, direct on the base; the same per cell on the flat mesh.
    let w: Vec<f64> = (0..base.size()).map(|c| 1.0 + c as f64).collect();
    let wb = rt.decl_dat(&base, 1, w.clone(), "w").unwrap();
    let wf: Vec<f64> = w
        .iter()
        .flat_map(|&v| std::iter::repeat_n(v, per))
        .collect();
    let wflat = rt.decl_dat(&m.flat_cells, 1, wf, "wf").unwrap();
    // A count per column through the base itself (the same row in every layer).
    let ident = rt
        .decl_map(
            &base,
            &base,
            1,
            (0..base.size() as i32).collect::<Vec<_>>(),
            "ident",
        )
        .unwrap();
    let hits = rt.decl_dat_zeros::<f64>(&base, 1, "hits").unwrap();
    let k = kernel(
        "weighted",
        "void weighted(const double *x[6], const double *w, double *m[6], double *h) {
           double ax = x[1][0] - x[0][0], ay = x[1][1] - x[0][1];
           double bx = x[2][0] - x[0][0], by = x[2][1] - x[0][1];
           double v = 0.5 * (ax * by - ay * bx) * (x[3][2] - x[0][2]) * *w;
           for (int i = 0; i < 6; i++) m[i][0] += v;
           *h += 1.0; }",
    );
    let y = rt.decl_dat_zeros::<f64>(&m.nodes, 1, "y").unwrap();
    rt.par_loop(
        &k,
        &sub,
        [
            m.coords.arg_row(&m.c2n, READ),
            wb.arg(READ),
            y.arg_row(&m.c2n, INC),
            hits.arg_via(&ident, 0, INC),
        ],
    )
    .unwrap();
    let fy = rt.decl_dat_zeros::<f64>(&m.flat_nodes, 1, "fy").unwrap();
    let fh = rt.decl_dat_zeros::<f64>(&m.flat_cells, 1, "fh").unwrap();
    rt.par_loop(
        &k,
        &flat_sub,
        [
            m.flat_coords.arg_row(&m.flat_c2n, READ),
            wflat.arg(READ),
            fy.arg_row(&m.flat_c2n, INC),
            fh.arg(INC),
        ],
    )
    .unwrap();
    let (y, fy) = (y.to_vec().unwrap(), fy.to_vec().unwrap());
    assert!(
        close(&y, &fy, 1e-13),
        "extruded and unstructured subsets differ"
    );
    assert!(y.iter().any(|&v| v != 0.0) && y.contains(&0.0));
    let want: Vec<f64> = (0..base.size())
        .map(|c| {
            if columns.contains(&c) {
                per as f64
            } else {
                0.0
            }
        })
        .collect();
    assert_eq!(hits.to_vec().unwrap(), want);
}

#[test]
fn an_assembled_mass_matrix_over_extruded_maps_equals_the_unstructured_one() {
    let rt = builder().build().unwrap();
    let m = prisms(&rt, 3, 3, 5);
    let k = kernel("mass", MASS);
    let assemble = |cells: &Set, map: &op2::Map, x: &op2::Dat<f64>| {
        let sp = Sparsity::new(&[(map, map)], (1, 1), "sp").unwrap();
        let mat = Mat::new(&sp, "M");
        la::par_loop(
            &rt,
            &k,
            cells,
            [
                LoopArg::Mat(mat.arg(INC, map, map)),
                LoopArg::Op2(x.arg_row(map, READ)),
            ],
        )
        .unwrap();
        mat.assemble();
        mat
    };
    let a = assemble(&m.cells, &m.c2n, &m.coords);
    let b = assemble(&m.flat_cells, &m.flat_c2n, &m.flat_coords);
    assert_eq!(a.sparsity().nnz(), b.sparsity().nnz());
    assert_eq!(a.sparsity().row_offsets(), b.sparsity().row_offsets());
    assert_eq!(a.sparsity().col_indices(), b.sparsity().col_indices());
    let (va, vb) = (a.values(), b.values());
    assert!(close(&va, &vb, 1e-13));
    // The entries sum to the volume (the mass matrix applied to ones, summed).
    let volume: f64 = va.iter().sum();
    assert!(volume > 0.0);
    let _ = m.layers;
}

/// PyOP2's boundary masks: map entries whose rows (or columns) the bottom and top cells of every
/// column leave out of an assembled matrix, on columns of different heights (one of a single
/// cell, both bottom and top), in both kernel forms; a later loop without drops adds the whole
/// element blocks (the staging was left clean); misuse is a typed error.
#[test]
fn boundary_drops_leave_bottom_and_top_entries_out_of_a_matrix() {
    let rt = builder().build().unwrap();
    let layers = vec![2usize, 4, 5, 3];
    let nb = layers.len();
    let base = rt.decl_set(nb, "base").unwrap();
    let cells = rt
        .decl_extruded_set(&base, layers.clone(), "cells")
        .unwrap();
    let nodes = rt
        .decl_extruded_nodes(&base, layers.clone(), "nodes")
        .unwrap();
    let nstart: Vec<i32> = layers
        .iter()
        .scan(0, |s, &l| {
            let a = *s;
            *s += l as i32;
            Some(a)
        })
        .collect();
    let right = |b: usize| {
        if b + 1 < nb && layers[b + 1] >= layers[b] {
            b + 1
        } else {
            b
        }
    };
    let bottom: Vec<i32> = (0..nb)
        .flat_map(|b| [nstart[b], nstart[b] + 1, nstart[right(b)]])
        .collect();
    let c2n = rt
        .decl_extruded_map(&cells, &nodes, 3, bottom, [1, 1, 1], "c2n")
        .unwrap();
    let sp = Sparsity::new(&[(&c2n, &c2n)], (1, 1), "bsp").unwrap();
    let drop = la::BoundaryDrop {
        bottom: Some((vec![0], vec![2])),
        top: Some((vec![1], vec![0, 1])),
    };
    // The expected matrix, by hand: element block E[i][j] = 1 + i + 3j.
    let n: usize = layers.iter().sum();
    let rows = c2n.layered_values().to_vec();
    let expect = |dropping: bool| {
        let mut dense = vec![0.0; n * n];
        let mut e = 0;
        for &l in &layers {
            for k in 0..l - 1 {
                let (is_bottom, is_top) = (k == 0, k + 2 == l);
                for i in 0..3 {
                    for j in 0..3 {
                        let gone = dropping
                            && ((is_bottom && (i == 0 || j == 2))
                                || (is_top && (i == 1 || j == 0 || j == 1)));
                        if !gone {
                            let (r, c) = (rows[e * 3 + i] as usize, rows[e * 3 + j] as usize);
                            dense[r * n + c] += (1 + i + 3 * j) as f64;
                        }
                    }
                }
                e += 1;
            }
        }
        dense
    };
    let whole = kernel(
        "bt_all",
        "void bt_all(double A[3][3]) { for (int i = 0; i < 3; i++) for (int j = 0; j < 3; j++) A[i][j] += 1 + i + 3 * j; }",
    );
    let per = kernel(
        "bt_ij",
        "void bt_ij(double A[1][1], int i, int j) { A[0][0] += 1 + i + 3 * j; }",
    );
    let dense_of = |m: &Mat| {
        let mut d = vec![0.0; n * n];
        let values = m.values();
        for r in 0..n {
            for (p, &c) in sp.row(r).iter().enumerate() {
                d[r * n + c as usize] = values[sp.row_offsets()[r] + p];
            }
        }
        d
    };
    for per_entry in [false, true] {
        let m = Mat::new(&sp, "B");
        let arg = |m: &Mat| {
            if per_entry {
                m.arg_entries(INC, &c2n, &c2n)
            } else {
                m.arg(INC, &c2n, &c2n)
            }
        };
        let k = if per_entry { &per } else { &whole };
        let dropped = arg(&m).dropping_boundary(drop.clone()).unwrap();
        la::par_loop(&rt, k, &cells, [LoopArg::Mat(dropped)]).unwrap();
        m.assemble();
        assert_eq!(dense_of(&m), expect(true), "per entry: {per_entry}");
        // Again without drops: the whole blocks are added on top.
        la::par_loop(&rt, k, &cells, [LoopArg::Mat(arg(&m))]).unwrap();
        m.assemble();
        let both: Vec<f64> = expect(true)
            .iter()
            .zip(expect(false))
            .map(|(a, b)| a + b)
            .collect();
        assert_eq!(dense_of(&m), both, "per entry: {per_entry}");
    }
    // An entry past the arity; a row map not from an extruded set.
    let m = Mat::new(&sp, "B");
    let e = m
        .arg(INC, &c2n, &c2n)
        .dropping_boundary(la::BoundaryDrop {
            bottom: Some((vec![3], vec![])),
            top: None,
        })
        .unwrap_err();
    assert!(e.to_string().contains("entry 3"), "{e}");
    let flat = rt
        .decl_map(&base, &base, 1, vec![0, 1, 2, 3], "flat")
        .unwrap();
    let fm = Mat::new(
        &Sparsity::new(&[(&flat, &flat)], (1, 1), "fsp").unwrap(),
        "F",
    );
    let e = fm
        .arg(INC, &flat, &flat)
        .dropping_boundary(drop.clone())
        .unwrap_err();
    assert!(e.to_string().contains("not extruded"), "{e}");
}

#[test]
fn regions_run_the_bottom_the_top_or_every_layer() {
    let rt = builder().build().unwrap();
    let base = rt.decl_set(4, "base").unwrap();
    let layers = 6;
    let cells = rt.decl_extruded_set(&base, layers, "cells").unwrap();
    let nodes = rt.decl_extruded_nodes(&base, layers, "nodes").unwrap();
    let bottom: Vec<i32> = (0..4).flat_map(|b| [b * 6, b * 6 + 1]).collect();
    let c2n = rt
        .decl_extruded_map(&cells, &nodes, 2, bottom, [1, 1], "c2n")
        .unwrap();
    let k = kernel(
        "mark",
        "void mark(double *c, double *n[2], const double *w) { *c += *w; n[0][0] += 1.0; n[1][0] += 10.0; }",
    );
    let w = rt.decl_dat(&base, 1, [1.0, 2.0, 3.0, 4.0], "w").unwrap();
    for (region, layer_of) in [
        (Region::Bottom, vec![0usize]),
        (Region::Top, vec![layers - 2]),
        (Region::All, (0..layers - 1).collect()),
    ] {
        let c = rt.decl_dat_zeros::<f64>(&cells, 1, "c").unwrap();
        let n = rt.decl_dat_zeros::<f64>(&nodes, 1, "n").unwrap();
        rt.par_loop_region(
            &k,
            &cells,
            region,
            [c.arg(INC), n.arg_row(&c2n, INC), w.arg(READ)],
        )
        .unwrap();
        let mut ec = vec![0.0; 4 * (layers - 1)];
        let mut en = vec![0.0; 4 * layers];
        for b in 0..4 {
            for &k in &layer_of {
                ec[b * (layers - 1) + k] += (b + 1) as f64;
                en[b * layers + k] += 1.0;
                en[b * layers + k + 1] += 10.0;
            }
        }
        assert_eq!(c.data_ro().unwrap().to_vec(), ec, "{region:?}");
        assert_eq!(n.data_ro().unwrap().to_vec(), en, "{region:?}");
    }
}

#[test]
fn interior_facets_see_the_cells_below_and_above() {
    let rt = builder().build().unwrap();
    let base = rt.decl_set(3, "base").unwrap();
    let layers = vec![5usize, 2, 4];
    let cells = rt
        .decl_extruded_set(&base, layers.clone(), "cells")
        .unwrap();
    let ncells: Vec<usize> = layers.iter().map(|l| l - 1).collect();
    let starts: Vec<usize> = ncells
        .iter()
        .scan(0, |s, &n| {
            let at = *s;
            *s += n;
            Some(at)
        })
        .collect();
    // A map from each cell to itself, stepping one per layer.
    let self_map = rt
        .decl_extruded_map(
            &cells,
            &cells,
            1,
            starts.iter().map(|&s| s as i32).collect::<Vec<_>>(),
            [1],
            "self",
        )
        .unwrap();
    let total: usize = ncells.iter().sum();
    let u0: Vec<f64> = (0..total).map(|i| (i * i) as f64).collect();
    let u = rt.decl_dat(&cells, 1, u0.clone(), "u").unwrap();
    let jump = rt.decl_dat_zeros::<f64>(&cells, 1, "jump").unwrap();
    let k = kernel(
        "jumps",
        "void jumps(const double *u[2], double *j[2]) { j[0][0] += u[1][0] - u[0][0]; j[1][0] -= u[1][0] - u[0][0]; }",
    );
    rt.par_loop_region(
        &k,
        &cells,
        Region::InteriorFacets,
        [u.arg_row(&self_map, READ), jump.arg_row(&self_map, INC)],
    )
    .unwrap();
    let mut expected = vec![0.0; total];
    for (b, &n) in ncells.iter().enumerate() {
        for f in 0..n.saturating_sub(1) {
            let (lo, hi) = (starts[b] + f, starts[b] + f + 1);
            let d = u0[hi] - u0[lo];
            expected[lo] += d;
            expected[hi] -= d;
        }
    }
    assert_eq!(jump.data_ro().unwrap().to_vec(), expected);
    // A Dat on the cells given directly has no place in a facet loop.
    let err = rt
        .par_loop_region(
            &k,
            &cells,
            Region::InteriorFacets,
            [u.arg_row(&self_map, READ), jump.arg(INC)],
        )
        .unwrap_err();
    assert!(matches!(err, Op2Error::NotExtruded { .. }), "{err}");
}

/// Over a subset of the cells (PyOP2's Subset of an ExtrudedSet's columns, or any cells), the
/// interior facets between two chosen cells only; with the layer, the lower cell's. Against
/// the facets computed here, with columns of different heights.
#[test]
fn interior_facets_of_a_subset_are_those_between_its_cells() {
    let rt = builder().build().unwrap();
    let base = rt.decl_set(4, "base").unwrap();
    let layers = vec![5usize, 2, 4, 6];
    let cells = rt
        .decl_extruded_set(&base, layers.clone(), "cells")
        .unwrap();
    let ncells: Vec<usize> = layers.iter().map(|l| l - 1).collect();
    let starts: Vec<usize> = ncells
        .iter()
        .scan(0, |s, &n| {
            let at = *s;
            *s += n;
            Some(at)
        })
        .collect();
    let total: usize = ncells.iter().sum();
    let self_map = rt
        .decl_extruded_map(
            &cells,
            &cells,
            1,
            starts.iter().map(|&s| s as i32).collect::<Vec<_>>(),
            [1],
            "self",
        )
        .unwrap();
    // Columns 0 and 3 whole, column 2 but its top cell, column 1 (one cell): its cell.
    let mut chosen: Vec<i32> = (0..ncells[0]).map(|k| (starts[0] + k) as i32).collect();
    chosen.extend((0..ncells[2] - 1).map(|k| (starts[2] + k) as i32));
    chosen.extend((0..ncells[3]).map(|k| (starts[3] + k) as i32));
    chosen.push(starts[1] as i32);
    chosen.sort_unstable();
    let some = rt.decl_subset(&cells, chosen.clone(), "some").unwrap();
    let seen = rt.decl_dat_zeros::<f64>(&cells, 1, "seen").unwrap();
    let k = kernel(
        "facet",
        "void facet(double *s[2], int layer) { s[0][0] += 1.0 + layer; s[1][0] += 100.0; }",
    );
    for _ in 0..2 {
        rt.par_loop_with_layer(
            &k,
            &some,
            Region::InteriorFacets,
            [seen.arg_row(&self_map, INC)],
        )
        .unwrap();
    }
    let mut expected = vec![0.0; total];
    for (b, &n) in ncells.iter().enumerate() {
        for f in 0..n.saturating_sub(1) {
            let (lo, hi) = (starts[b] + f, starts[b] + f + 1);
            if chosen.contains(&(lo as i32)) && chosen.contains(&(hi as i32)) {
                expected[lo] += 2.0 * (1.0 + f as f64);
                expected[hi] += 200.0;
            }
        }
    }
    assert_eq!(seen.data_ro().unwrap().to_vec(), expected);
    assert!(expected.iter().filter(|&&v| v > 0.0).count() > 4);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 16, ..ProptestConfig::default() })]

    /// Columns of random heights (some with no cells), a random offset per entry, every region:
    /// against a plain loop over every extruded element.
    #[test]
    fn columns_of_any_height_equal_a_loop_over_every_cell(
        layers in prop::collection::vec(1usize..7, 1..12),
        region in prop_oneof![Just(Region::All), Just(Region::Bottom), Just(Region::Top)],
        direct_base in any::<bool>(),
        inc_entry in 1usize..3,
    ) {
        let rt = builder().build().unwrap();
        let nb = layers.len();
        let base = rt.decl_set(nb, "base").unwrap();
        let cells = rt.decl_extruded_set(&base, layers.clone(), "cells").unwrap();
        let nodes = rt.decl_extruded_nodes(&base, layers.clone(), "nodes").unwrap();
        let cstart: Vec<usize> = layers.iter().scan(0, |s, &l| { let a = *s; *s += l - 1; Some(a) }).collect();
        let nstart: Vec<usize> = layers.iter().scan(0, |s, &l| { let a = *s; *s += l; Some(a) }).collect();
        // Column b reaches its own nodes and its right neighbour's (when as tall).
        let right = |b: usize| if b + 1 < nb && layers[b + 1] >= layers[b] { b + 1 } else { b };
        let bottom: Vec<i32> = (0..nb)
            .flat_map(|b| [nstart[b] as i32, nstart[b] as i32 + 1, nstart[right(b)] as i32])
            .collect();
        let c2n = rt.decl_extruded_map(&cells, &nodes, 3, bottom.clone(), [1, 1, 1], "c2n").unwrap();
        let nn: usize = layers.iter().sum();
        let x0: Vec<f64> = (0..nn).map(|i| (i as f64 * 0.37).cos()).collect();
        let x = rt.decl_dat(&nodes, 1, x0.clone(), "x").unwrap();
        let acc = rt.decl_dat_zeros::<f64>(&nodes, 1, "acc").unwrap();
        let nc: usize = cstart.last().unwrap() + layers.last().unwrap() - 1;
        let u = rt.decl_dat(&cells, 2, (0..2 * nc).map(|i| i as f64).collect::<Vec<_>>(), "u").unwrap();
        let w = rt.decl_dat(&base, 1, (0..nb).map(|b| b as f64 + 0.5).collect::<Vec<_>>(), "w").unwrap();
        let g = rt.decl_global(1, &[0.0f64], "g").unwrap();
        let k = kernel(
            "step",
            "void step(double *u, const double *x[3], double *a, const double *w, double *g) {
               u[0] = u[0] * 0.5 + x[0][0] - x[2][0] + *w; u[1] += x[1][0];
               a[0] += u[0]; *g += u[1]; }",
        );
        // The base's Dat directly, or through a map from the base (the same row at every layer).
        let b2b = rt.decl_map(&base, &base, 1, (0..nb as i32).collect::<Vec<_>>(), "b2b").unwrap();
        let wa = if direct_base { w.arg(READ) } else { w.arg_via(&b2b, 0, READ) };
        rt.par_loop_region(&k, &cells, region, [
            u.arg(RW), x.arg_row(&c2n, READ), acc.arg_via(&c2n, inc_entry, INC), wa, g.arg(INC),
        ]).unwrap();
        let mut eu: Vec<f64> = (0..2 * nc).map(|i| i as f64).collect();
        let mut ea = vec![0.0; nn];
        let mut eg = 0.0;
        for b in 0..nb {
            let n = layers[b] - 1;
            let ks: Vec<usize> = match region {
                Region::Bottom => (0..n.min(1)).collect(),
                Region::Top => if n > 0 { vec![n - 1] } else { vec![] },
                _ => (0..n).collect(),
            };
            for k in ks {
                let c = cstart[b] + k;
                let xs = |j: usize| x0[bottom[3 * b + j] as usize + k];
                eu[2 * c] = eu[2 * c] * 0.5 + xs(0) - xs(2) + b as f64 + 0.5;
                eu[2 * c + 1] += xs(1);
                ea[bottom[3 * b + inc_entry] as usize + k] += eu[2 * c];
                eg += eu[2 * c + 1];
            }
        }
        prop_assert!(close(&u.data_ro().unwrap(), &eu, 1e-14));
        prop_assert!(close(&acc.data_ro().unwrap(), &ea, 1e-13));
        prop_assert!((g.value().unwrap()[0] - eg).abs() <= 1e-12 * (1.0 + eg.abs()));
        let _ = Layers::Uniform(2);
    }
}

#[test]
fn bad_extrusions_maps_and_regions_are_typed_errors() {
    let rt = builder().build().unwrap();
    let base = rt.decl_set(3, "base").unwrap();
    let plain = rt.decl_set(5, "plain").unwrap();
    // Too few layers, wrong number of columns, a column of no nodes.
    for layers in [
        Layers::Uniform(1),
        Layers::PerColumn(vec![2, 3]),
        Layers::PerColumn(vec![2, 0, 3]),
    ] {
        let e = rt.decl_extruded_set(&base, layers, "cells").unwrap_err();
        assert!(matches!(e, Op2Error::BadExtrusion { .. }), "{e}");
    }
    let cells = rt.decl_extruded_set(&base, 4, "cells").unwrap();
    let e = rt.decl_extruded_set(&cells, 4, "again").unwrap_err();
    assert!(matches!(e, Op2Error::BadExtrusion { .. }), "{e}");
    // Offsets on a map from a set that is not extruded.
    let e = rt
        .decl_extruded_map(&plain, &base, 1, vec![0; 5], [1], "m")
        .unwrap_err();
    assert!(matches!(e, Op2Error::NotExtruded { .. }), "{e}");
    // A top layer past the target, the wrong number of offsets or rows.
    let nodes = rt.decl_extruded_nodes(&base, 4, "nodes").unwrap();
    let e = rt
        .decl_extruded_map(&cells, &nodes, 1, vec![0, 4, 10], [1], "m")
        .unwrap_err();
    assert!(matches!(e, Op2Error::MapValueOutOfRange { .. }), "{e}");
    let e = rt
        .decl_extruded_map(&cells, &nodes, 1, vec![0, 4, 8], [1, 1], "m")
        .unwrap_err();
    assert!(matches!(e, Op2Error::DataLength { .. }), "{e}");
    let e = rt
        .decl_extruded_map(&cells, &nodes, 1, vec![0, 4], [1], "m")
        .unwrap_err();
    assert!(matches!(e, Op2Error::DataLength { .. }), "{e}");
    // A region of a set that is not extruded.
    let k = kernel("nop", "void nop(double *x) { (void)x; }");
    let d = rt.decl_dat_zeros::<f64>(&plain, 1, "d").unwrap();
    let e = rt
        .par_loop_region(&k, &plain, Region::Top, [d.arg(RW)])
        .unwrap_err();
    assert!(matches!(e, Op2Error::NotExtruded { .. }), "{e}");
    // Interior facets of the nodes' columns.
    let dn = rt.decl_dat_zeros::<f64>(&nodes, 1, "dn").unwrap();
    let e = rt
        .par_loop_region(&k, &nodes, Region::InteriorFacets, [dn.arg(RW)])
        .unwrap_err();
    assert!(matches!(e, Op2Error::NotExtruded { .. }), "{e}");
    // A kernel that disagrees with the args, through the extruded map.
    let m = rt
        .decl_extruded_map(&cells, &nodes, 2, vec![0, 1, 4, 5, 8, 9], [1, 1], "m2")
        .unwrap();
    let k2 = kernel("two", "void two(double *x[3]) { x[0][0] += 1.0; }");
    let e = rt.par_loop(&k2, &cells, [dn.arg_row(&m, INC)]).unwrap_err();
    assert!(!matches!(e, Op2Error::NotExtruded { .. }), "{e}");
    // The runtime is still usable.
    let k3 = kernel(
        "one",
        "void one(double *x[2]) { x[0][0] += 1.0; x[1][0] += 2.0; }",
    );
    rt.par_loop(&k3, &cells, [dn.arg_row(&m, INC)]).unwrap();
    let v = dn.data_ro().unwrap().to_vec();
    assert_eq!(v.iter().sum::<f64>(), 3.0 * 3.0 * 3.0);
}

#[test]
fn host_backends_walk_columns_and_device_backends_run_every_layer() {
    let rt = builder().lazy(true).build().unwrap();
    let m = prisms(&rt, 2, 2, 4);
    let y = rt.decl_dat_zeros::<f64>(&m.nodes, 1, "y").unwrap();
    rt.par_loop(
        &kernel("lumped", LUMPED),
        &m.cells,
        [m.coords.arg_row(&m.c2n, READ), y.arg_row(&m.c2n, INC)],
    )
    .unwrap();
    let graph = rt.pending_graph();
    let walked = graph
        .nodes
        .iter()
        .any(|n| n.label.starts_with("op2_col_lumped"));
    let layered = graph.nodes.iter().any(|n| n.label.starts_with("lumped"));
    let host = matches!(op2_test_support::backend().as_str(), "seq" | "openmp");
    assert_eq!((walked, layered), (host, !host), "{:?}", graph.nodes);
    // Both give what a loop over every prism gives.
    let fy = rt.decl_dat_zeros::<f64>(&m.flat_nodes, 1, "fy").unwrap();
    rt.par_loop(
        &kernel("lumped", LUMPED),
        &m.flat_cells,
        [
            m.flat_coords.arg_row(&m.flat_c2n, READ),
            fy.arg_row(&m.flat_c2n, INC),
        ],
    )
    .unwrap();
    assert!(close(&y.data_ro().unwrap(), &fy.data_ro().unwrap(), 1e-14));
}

/// What one rank computed on the extruded chain: node values, cell values, increments, a sum.
struct ChainColumns {
    x: Vec<f64>,
    y: Vec<f64>,
    acc: Vec<f64>,
    sum: f64,
}

/// The chain of the distributed tests extruded: each edge a column of `layers - 1` quads, each
/// node a column of `layers` nodes; a node loop, a cell loop reading nodes through the extruded
/// map (its halo exchanged), a direct increment of the cells, and one incrementing the nodes
/// (the exec halo's columns run again).
fn extruded_chain(
    rt: &Runtime,
    part: crate::distributed::ChainPart,
    layers: usize,
) -> ChainColumns {
    let (ns, nh, es, eh, e2n, x0) = part;
    let bnodes = rt.decl_set_with_halo(ns, nh, "bnodes").unwrap();
    let bedges = rt.decl_set_with_halo(es, eh, "bedges").unwrap();
    let cells = rt.decl_extruded_set(&bedges, layers, "cells").unwrap();
    let nodes = rt.decl_extruded_nodes(&bnodes, layers, "nodes").unwrap();
    let l = layers as i32;
    let bottom: Vec<i32> = e2n
        .chunks(2)
        .flat_map(|e| [e[0] * l, e[1] * l, e[0] * l + 1, e[1] * l + 1])
        .collect();
    let c2n = rt
        .decl_extruded_map(&cells, &nodes, 4, bottom, [1; 4], "c2n")
        .unwrap();
    let xv: Vec<f64> = x0
        .iter()
        .flat_map(|&v| (0..layers).map(move |k| v * (1 + k) as f64 + k as f64))
        .collect();
    let x = rt.decl_dat(&nodes, 1, xv, "x").unwrap();
    let y = rt.decl_dat_zeros::<f64>(&cells, 1, "y").unwrap();
    let acc = rt.decl_dat_zeros::<f64>(&nodes, 1, "acc").unwrap();
    let sum = rt.decl_global(1, &[0.0f64], "sum").unwrap();
    rt.par_loop(
        &kernel("scale", "void scale(double *x) { *x = 3.0 * *x + 1.0; }"),
        &nodes,
        [x.arg(RW)],
    )
    .unwrap();
    rt.par_loop(
        &kernel(
            "quad",
            "void quad(const double *x[4], double *y) { *y = x[0][0] + 2.0 * x[1][0] + 3.0 * x[2][0] + 4.0 * x[3][0]; }",
        ),
        &cells,
        [x.arg_row(&c2n, READ), y.arg(WRITE)],
    )
    .unwrap();
    // A direct INC on the cells alone (walked, it goes through each column's start and so
    // runs the exec-halo columns too): once landed on the wrong cells.
    rt.par_loop(
        &kernel("bump", "void bump(double *y) { *y += 1.0; }"),
        &cells,
        [y.arg(INC)],
    )
    .unwrap();
    rt.par_loop(
        &kernel(
            "spread",
            "void spread(const double *y, double *a[4], double *s) {
               a[0][0] += *y; a[1][0] += 0.5 * *y; a[2][0] += 0.25 * *y; a[3][0] += 0.125 * *y; *s += *y; }",
        ),
        &cells,
        [y.arg(READ), acc.arg_row(&c2n, INC), sum.arg(INC)],
    )
    .unwrap();
    ChainColumns {
        x: x.to_vec().unwrap(),
        y: y.to_vec().unwrap(),
        acc: acc.to_vec().unwrap(),
        sum: sum.value().unwrap()[0],
    }
}

#[test]
fn extruded_columns_on_two_ranks_compute_what_one_process_computes() {
    use crate::distributed::{chain_part, core, initial};
    let (n, m, layers) = (30, 13, 5);
    let one = extruded_chain(
        &builder().build().unwrap(),
        (
            core(n + 1),
            op2::SetHalo::default(),
            core(n),
            op2::SetHalo::default(),
            (0..n as i32).flat_map(|e| [e, e + 1]).collect(),
            initial(n + 1),
        ),
        layers,
    );
    let mut both = op2_test_support::on_rank_runtimes(2, builder, |rank, rt| {
        extruded_chain(&rt, chain_part(rank, n, m), layers)
    })
    .into_iter();
    let (r0, r1) = (both.next().unwrap(), both.next().unwrap());
    let (nl, cl) = (layers, layers - 1);
    assert!(close(&r0.x[..m * nl], &one.x[..m * nl], 0.0));
    assert!(close(&r1.x[..(n - m + 1) * nl], &one.x[m * nl..], 0.0));
    assert!(close(&r0.y[..m * cl], &one.y[..m * cl], 1e-15));
    assert!(close(&r1.y[..(n - m) * cl], &one.y[m * cl..], 1e-15));
    assert!(close(&r0.acc[..m * nl], &one.acc[..m * nl], 1e-14));
    assert!(close(
        &r1.acc[..(n - m + 1) * nl],
        &one.acc[m * nl..],
        1e-14
    ));
    // Rank 1's exec-halo column (edge m-1) ran again: its cells hold the owner's values.
    assert!(close(
        &r1.y[(n - m) * cl..],
        &one.y[(m - 1) * cl..m * cl],
        1e-15
    ));
    for r in [&r0, &r1] {
        assert!((r.sum - one.sum).abs() <= 1e-12 * one.sum.abs());
    }
}

#[test]
fn empty_columns_subsets_of_extruded_sets_and_reductions() {
    let rt = builder().build().unwrap();
    // No columns at all.
    let none = rt.decl_set(0, "none").unwrap();
    let cells0 = rt.decl_extruded_set(&none, 5, "cells0").unwrap();
    let nodes0 = rt.decl_extruded_nodes(&none, 5, "nodes0").unwrap();
    let m0 = rt
        .decl_extruded_map(&cells0, &nodes0, 2, Vec::<i32>::new(), [1, 1], "m0")
        .unwrap();
    let d0 = rt.decl_dat_zeros::<f64>(&nodes0, 1, "d0").unwrap();
    let k = kernel(
        "two",
        "void two(double *x[2]) { x[0][0] += 1.0; x[1][0] += 2.0; }",
    );
    rt.par_loop(&k, &cells0, [d0.arg_row(&m0, INC)]).unwrap();
    for region in [Region::Bottom, Region::Top] {
        rt.par_loop_region(&k, &cells0, region, [d0.arg_row(&m0, INC)])
            .unwrap();
    }
    // A facet sees both cells' rows: twice the arity.
    let kf = kernel(
        "four",
        "void four(double *x[4]) { x[0][0] += 1.0; x[3][0] += 2.0; }",
    );
    rt.par_loop_region(&kf, &cells0, Region::InteriorFacets, [d0.arg_row(&m0, INC)])
        .unwrap();
    assert!(d0.to_vec().unwrap().is_empty());
    // A subset of an extruded set: its maps at the chosen cells' layers.
    let base = rt.decl_set(3, "base").unwrap();
    let cells = rt.decl_extruded_set(&base, 4, "cells").unwrap();
    let nodes = rt.decl_extruded_nodes(&base, 4, "nodes").unwrap();
    let m = rt
        .decl_extruded_map(&cells, &nodes, 2, vec![0, 1, 4, 5, 8, 9], [1, 1], "m")
        .unwrap();
    let d = rt.decl_dat_zeros::<f64>(&nodes, 1, "d").unwrap();
    let sub = rt.decl_subset(&cells, vec![1, 5, 6], "sub").unwrap();
    rt.par_loop(&k, &sub, [d.arg_row(&m, INC)]).unwrap();
    // Cell 1 is column 0 layer 1 (nodes 1, 2), cell 5 column 1 layer 2 (6, 7), cell 6 column 2
    // layer 0 (8, 9).
    let mut expected = vec![0.0; 12];
    for (a, b) in [(1, 2), (6, 7), (8, 9)] {
        expected[a] += 1.0;
        expected[b] += 2.0;
    }
    assert_eq!(d.to_vec().unwrap(), expected);
    // MIN and MAX reductions over every layer, walked or not.
    let x = rt
        .decl_dat(
            &cells,
            1,
            (0..9).map(|c| ((c * 5) % 9) as f64).collect::<Vec<_>>(),
            "x",
        )
        .unwrap();
    let (lo, hi) = (
        rt.decl_global(1, &[f64::MAX], "lo").unwrap(),
        rt.decl_global(1, &[f64::MIN], "hi").unwrap(),
    );
    rt.par_loop(
        &kernel(
            "range",
            "void range(const double *x, double *lo, double *hi) { if (*x < *lo) *lo = *x; if (*x > *hi) *hi = *x; }",
        ),
        &cells,
        [x.arg(READ), lo.arg(op2::MIN), hi.arg(op2::MAX)],
    )
    .unwrap();
    assert_eq!((lo.value().unwrap()[0], hi.value().unwrap()[0]), (0.0, 8.0));
}

/// An extruded program checkpointed, then started again: it goes on from the checkpoint and
/// ends where the uninterrupted run ends (extruded maps are fingerprinted layer by layer).
#[test]
fn extruded_programs_checkpoint_and_restart() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ext.ckpt");
    let program = |rt: &Runtime, steps: usize| -> Vec<f64> {
        let base = rt.decl_set(4, "base").unwrap();
        let cells = rt.decl_extruded_set(&base, 5, "cells").unwrap();
        let nodes = rt.decl_extruded_nodes(&base, 5, "nodes").unwrap();
        let bottom: Vec<i32> = (0..4).flat_map(|b| [b * 5, b * 5 + 1]).collect();
        let m = rt
            .decl_extruded_map(&cells, &nodes, 2, bottom, [1, 1], "m")
            .unwrap();
        let u = rt.decl_dat(&nodes, 1, vec![1.0; 20], "u").unwrap();
        let k = kernel(
            "grow",
            "void grow(double *u[2]) { u[0][0] += 1.0; u[1][0] = 1.5 * u[1][0] - u[0][0]; }",
        );
        for _ in 0..steps {
            rt.par_loop(&k, &cells, [u.arg_row(&m, RW)]).unwrap();
        }
        u.to_vec().unwrap()
    };
    let whole = program(&builder().build().unwrap(), 6);
    {
        let rt = builder()
            .checkpoint(&path)
            .checkpoint_every(op2::CheckpointEvery::Loops(3))
            .build()
            .unwrap();
        program(&rt, 4);
    }
    let rt = builder().checkpoint(&path).build().unwrap();
    assert_eq!(program(&rt, 6), whole);
}

#[test]
fn an_extruded_mesh_writes_as_vtk_prisms() {
    use op2::vtk::{CellType, UnstructuredGrid};
    let rt = builder().build().unwrap();
    let m = prisms(&rt, 3, 2, 4);
    // Six points in 3-D could be more than one cell type: both maps say so alike (no panic on
    // the extruded one's bottom rows).
    let e = UnstructuredGrid::from_dats(&m.coords, &m.c2n).unwrap_err();
    let f = UnstructuredGrid::from_dats(&m.flat_coords, &m.flat_c2n).unwrap_err();
    assert_eq!(e.to_string(), f.to_string());
    // Named wedges, from every layer's rows.
    let grid = UnstructuredGrid::new(&m.coords.to_vec().unwrap(), 3)
        .unwrap()
        .with_cells_of(&m.c2n.layered_values(), 6, CellType::Wedge)
        .unwrap();
    assert_eq!(grid.num_cells(), m.cells.size());
    assert_eq!(grid.num_points(), m.nodes.size());
    assert_eq!(&m.c2n.layered_values()[..], m.flat_c2n.values());
}

#[test]
fn one_cell_columns_have_no_interior_facets() {
    let rt = builder().build().unwrap();
    let base = rt.decl_set(3, "base").unwrap();
    let cells = rt.decl_extruded_set(&base, 2, "cells").unwrap();
    let own = rt
        .decl_extruded_map(&cells, &cells, 1, vec![0, 1, 2], [1], "own")
        .unwrap();
    let u = rt.decl_dat_zeros::<f64>(&cells, 1, "u").unwrap();
    let k = kernel(
        "f",
        "void f(double *u[2]) { u[0][0] += 1.0; u[1][0] += 1.0; }",
    );
    rt.par_loop_region(&k, &cells, Region::InteriorFacets, [u.arg_row(&own, INC)])
        .unwrap();
    assert_eq!(u.to_vec().unwrap(), vec![0.0; 3]);
}

#[test]
fn ranks_that_disagree_on_a_columns_height_are_told() {
    use crate::distributed::chain_part;
    let out = op2_test_support::on_rank_runtimes(2, builder, |rank, rt| {
        let (ns, nh, ..) = chain_part(rank, 10, 4);
        let nodes = rt.decl_set_with_halo(ns, nh, "nodes").unwrap();
        // Rank 1 says its halo column is one layer taller than rank 0, its owner, does.
        let layers: Vec<usize> = (0..nodes.total_size())
            .map(|b| if rank == 1 && b >= nodes.size() { 4 } else { 3 })
            .collect();
        rt.decl_extruded_nodes(&nodes, layers, "columns")
            .map(|_| ())
    });
    assert!(out[0].is_ok(), "{:?}", out[0]);
    assert!(
        matches!(out[1], Err(Op2Error::BadExtrusion { .. })),
        "{:?}",
        out[1]
    );
}
