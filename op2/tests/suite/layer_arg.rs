//! The layer as a kernel's last parameter (`Runtime::par_loop_with_layer`, PyOP2's
//! `pass_layer_arg=True`): over every cell, the top cells, the interior facets and a subset,
//! with direct args, map entries and packed buffers, on columns of different heights; expected
//! values computed here. `cargo xtask test` runs this file on every backend.

use op2::{INC, Op2Error, READ, RW, Region, WRITE};
use op2_test_support::{kernel, rt};

/// Nodes per column.
const LAYERS: [usize; 4] = [3, 5, 2, 4];

struct Mesh {
    rt: op2::Runtime,
    cells: op2::Set,
    nodes: op2::Set,
    c2n: op2::Map,
    starts: Vec<usize>,
}

fn mesh() -> Mesh {
    let rt = rt();
    let base = rt.decl_set(LAYERS.len(), "base").unwrap();
    let cells = rt
        .decl_extruded_set(&base, LAYERS.to_vec(), "cells")
        .unwrap();
    let nodes = rt
        .decl_extruded_nodes(&base, LAYERS.to_vec(), "nodes")
        .unwrap();
    let starts: Vec<usize> = LAYERS
        .iter()
        .scan(0, |s, &l| {
            let a = *s;
            *s += l;
            Some(a)
        })
        .collect();
    let bottom: Vec<i32> = starts
        .iter()
        .flat_map(|&s| [s as i32, s as i32 + 1])
        .collect();
    let c2n = rt
        .decl_extruded_map(&cells, &nodes, 2, bottom, [1, 1], "c2n")
        .unwrap();
    Mesh {
        rt,
        cells,
        nodes,
        c2n,
        starts,
    }
}

/// Each cell's layer, column by column.
fn cell_layers() -> Vec<f64> {
    LAYERS
        .iter()
        .flat_map(|&l| (0..l - 1).map(|k| k as f64))
        .collect()
}

#[test]
fn a_parameter_the_kernel_never_names_takes_any_type_with_the_layer_too() {
    let m = mesh();
    let x = m.rt.decl_dat_zeros::<f64>(&m.cells, 1, "x").unwrap();
    let other = m.rt.decl_dat_zeros::<f64>(&m.cells, 1, "other").unwrap();
    let k = kernel(
        "stamp_only",
        "void stamp_only(double *x, int *unused, int layer) { x[0] = layer; }",
    );
    m.rt.par_loop_with_layer(&k, &m.cells, Region::All, [x.arg(WRITE), other.arg(READ)])
        .unwrap();
    assert_eq!(x.to_vec().unwrap(), cell_layers());
}

#[test]
fn every_cell_and_the_top_cells_see_their_layer() {
    let m = mesh();
    let x = m.rt.decl_dat_zeros::<f64>(&m.cells, 2, "x").unwrap();
    let k = kernel(
        "stamp",
        "void stamp(double *x, int layer) { x[0] = layer; x[1] += 10 * layer + 1; }",
    );
    m.rt.par_loop_with_layer(&k, &m.cells, Region::All, [x.arg(RW)])
        .unwrap();
    let want: Vec<f64> = cell_layers()
        .iter()
        .flat_map(|&l| [l, 10.0 * l + 1.0])
        .collect();
    assert_eq!(x.to_vec().unwrap(), want);
    let top = m.rt.decl_dat_zeros::<f64>(&m.cells, 2, "top").unwrap();
    m.rt.par_loop_with_layer(&k, &m.cells, Region::Top, [top.arg(RW)])
        .unwrap();
    let mut want_top = vec![0.0; want.len()];
    let mut at = 0;
    for &l in &LAYERS {
        let cells = l - 1;
        let t = at + cells - 1;
        want_top[2 * t] = (cells - 1) as f64;
        want_top[2 * t + 1] = 10.0 * (cells - 1) as f64 + 1.0;
        at += cells;
    }
    assert_eq!(top.to_vec().unwrap(), want_top);
}

#[test]
fn the_layer_reaches_kernels_through_map_entries_and_packed_buffers() {
    let m = mesh();
    let by_entry = m.rt.decl_dat_zeros::<f64>(&m.nodes, 1, "by_entry").unwrap();
    let by_buffer =
        m.rt.decl_dat_zeros::<f64>(&m.nodes, 1, "by_buffer")
            .unwrap();
    let entries = kernel(
        "entries",
        "void entries(double *lo, double *hi, int layer) { *lo += layer + 1; *hi += 100; }",
    );
    m.rt.par_loop_with_layer(
        &entries,
        &m.cells,
        Region::All,
        [
            by_entry.arg_via(&m.c2n, 0, INC),
            by_entry.arg_via(&m.c2n, 1, INC),
        ],
    )
    .unwrap();
    let packed = kernel(
        "packed",
        "void packed(double *x, int layer) { x[0] += layer + 1; x[1] += 100; }",
    );
    m.rt.par_loop_with_layer(
        &packed,
        &m.cells,
        Region::All,
        [by_buffer.arg_buffer(&m.c2n, INC)],
    )
    .unwrap();
    let n: usize = LAYERS.iter().sum();
    let mut want = vec![0.0; n];
    for (&l, &s) in LAYERS.iter().zip(&m.starts) {
        for k in 0..l - 1 {
            want[s + k] += k as f64 + 1.0;
            want[s + k + 1] += 100.0;
        }
    }
    assert_eq!(by_entry.to_vec().unwrap(), want);
    assert_eq!(by_buffer.to_vec().unwrap(), want);
}

#[test]
fn interior_facets_see_the_lower_cells_layer() {
    let m = mesh();
    let layer = m.rt.decl_dat_zeros::<f64>(&m.cells, 1, "layer").unwrap();
    let k = kernel(
        "facet",
        "void facet(double *c, int layer) { c[0] += layer; c[1] += 1000 + layer; }",
    );
    m.rt.par_loop_with_layer(
        &k,
        &m.cells,
        Region::InteriorFacets,
        [layer.arg_buffer(
            &m.rt
                .decl_extruded_map(&m.cells, &m.cells, 1, cell_starts(&m), [1], "self")
                .unwrap(),
            INC,
        )],
    )
    .unwrap();
    // Facet j of a column lies between cells j and j + 1: the lower gets j, the upper 1000 + j.
    let mut want = vec![0.0; cell_layers().len()];
    let mut at = 0;
    for &l in &LAYERS {
        let cells = l - 1;
        for j in 0..cells.saturating_sub(1) {
            want[at + j] += j as f64;
            want[at + j + 1] += 1000.0 + j as f64;
        }
        at += cells;
    }
    assert_eq!(layer.to_vec().unwrap(), want);
}

/// The first cell of each column, for a map from the cells to themselves.
fn cell_starts(_m: &Mesh) -> Vec<i32> {
    LAYERS
        .iter()
        .scan(0, |s, &l| {
            let a = *s;
            *s += l as i32 - 1;
            Some(a)
        })
        .collect()
}

#[test]
fn a_layer_needs_an_extruded_set_and_an_int_parameter() {
    let m = mesh();
    let x = m.rt.decl_dat_zeros::<f64>(&m.cells, 1, "x").unwrap();
    let flat = m.rt.decl_set(3, "flat").unwrap();
    let y = m.rt.decl_dat_zeros::<f64>(&flat, 1, "y").unwrap();
    let k = kernel("k", "void k(double *x, int layer) { *x = layer; }");
    assert!(matches!(
        m.rt.par_loop_with_layer(&k, &flat, Region::All, [y.arg(WRITE)]),
        Err(Op2Error::NotExtruded { .. })
    ));
    let no_int = kernel("no_int", "void no_int(double *x, double *l) { *x = *l; }");
    assert!(matches!(
        m.rt.par_loop_with_layer(&no_int, &m.cells, Region::All, [x.arg(WRITE)]),
        Err(Op2Error::KernelParamShape { .. })
    ));
    let missing = kernel("missing", "void missing(double *x) { *x = 1; }");
    assert!(matches!(
        m.rt.par_loop_with_layer(&missing, &m.cells, Region::All, [x.arg(READ)]),
        Err(Op2Error::KernelParamCount { .. })
    ));
}

#[test]
fn a_subset_of_the_cells_sees_its_cells_layers() {
    let m = mesh();
    let all = cell_layers();
    // Every third cell.
    let picked: Vec<i32> = (0..all.len() as i32).step_by(3).collect();
    let some = m.rt.decl_subset(&m.cells, picked.clone(), "some").unwrap();
    let x =
        m.rt.decl_dat(&m.cells, 1, vec![-1.0; all.len()], "x")
            .unwrap();
    let k = kernel("put", "void put(double *x, int layer) { *x = layer; }");
    m.rt.par_loop_with_layer(&k, &some, Region::All, [x.arg(WRITE)])
        .unwrap();
    let mut want = vec![-1.0; all.len()];
    for &c in &picked {
        want[c as usize] = all[c as usize];
    }
    assert_eq!(x.to_vec().unwrap(), want);
}

#[test]
fn the_users_declarations_still_shape_what_the_kernel_gets() {
    let m = mesh();
    let n: usize = LAYERS.iter().sum();
    // Node i holds (i, 10 i).
    let x =
        m.rt.decl_dat(
            &m.nodes,
            2,
            (0..n)
                .flat_map(|i| [i as f64, 10.0 * i as f64])
                .collect::<Vec<_>>(),
            "x",
        )
        .unwrap();
    let out = m.rt.decl_dat_zeros::<f64>(&m.cells, 1, "out").unwrap();
    // A buffer declared longer than the row's 4 values (up to arity x dim x dim, its tail
    // zeroed) and a lenient kernel's pointer array declared longer than the map's arity (its
    // extra pointers lead to zeros), as without the layer.
    let long_buffer = kernel(
        "long_buffer",
        "void long_buffer(double b[8], double *o, int layer) { *o = b[0] + b[1] + b[2] + b[3] + b[7] + 100 * layer; }",
    );
    m.rt.par_loop_with_layer(
        &long_buffer,
        &m.cells,
        Region::All,
        [x.arg_buffer(&m.c2n, READ), out.arg(WRITE)],
    )
    .unwrap();
    let layers = cell_layers();
    let mut sums = Vec::new();
    for (&l, &s) in LAYERS.iter().zip(&m.starts) {
        for k in 0..l - 1 {
            sums.push(11.0 * (2 * (s + k) + 1) as f64);
        }
    }
    let want: Vec<f64> = sums
        .iter()
        .zip(&layers)
        .map(|(v, &l)| v + 100.0 * l)
        .collect();
    assert_eq!(out.to_vec().unwrap(), want);
    let lenient = op2::Kernel::without_bound_checks(
        "lenient",
        "void lenient(const double *r[4], double *o, int layer) { *o = r[0][0] + r[1][0] + r[3][1] - layer; }",
    )
    .unwrap();
    m.rt.par_loop_with_layer(
        &lenient,
        &m.cells,
        Region::All,
        [x.arg_row(&m.c2n, READ), out.arg(WRITE)],
    )
    .unwrap();
    let want: Vec<f64> = sums
        .iter()
        .zip(&layers)
        .map(|(v, &l)| v / 11.0 - l)
        .collect();
    assert_eq!(out.to_vec().unwrap(), want);
    // Longer still is refused, as without the layer.
    let too_long = kernel(
        "too_long",
        "void too_long(double b[9], double *o, int layer) { *o = b[0] + layer; }",
    );
    assert!(matches!(
        m.rt.par_loop_with_layer(
            &too_long,
            &m.cells,
            Region::All,
            [x.arg_buffer(&m.c2n, READ), out.arg(WRITE)],
        ),
        Err(Op2Error::KernelParamBound { .. })
    ));
}
