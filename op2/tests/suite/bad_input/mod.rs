//! Bad input, all in one place: every misuse of the facade gives its own typed error (never a
//! panic, a hang or silent damage). `errors` covers declarations and loop args; `misuse` the
//! mistakes a new user makes (names, kernel parameters, access modes, compile errors, settings,
//! data in use). Regressions found by probing live in `hardening`.

mod errors;
mod misuse;

use op2::{Kernel, Runtime};
use op2_test_support::{kernel, rt};

/// A small mesh: 3 edges over 4 nodes, 2 cells of 3 nodes.
pub(crate) struct Mesh {
    pub(crate) rt: Runtime,
    pub(crate) nodes: op2::Set,
    pub(crate) edges: op2::Set,
    pub(crate) cells: op2::Set,
    pub(crate) e2n: op2::Map,
    pub(crate) c2n: op2::Map,
    pub(crate) xn: op2::Dat<f64>,
    pub(crate) xe: op2::Dat<f64>,
    pub(crate) ie: op2::Dat<i32>,
    pub(crate) g: op2::Global<f64>,
}

pub(crate) fn mesh() -> Mesh {
    let rt = rt();
    let nodes = rt.decl_set(4, "nodes").unwrap();
    let edges = rt.decl_set(3, "edges").unwrap();
    let cells = rt.decl_set(2, "cells").unwrap();
    let e2n = rt
        .decl_map(&edges, &nodes, 2, vec![0, 1, 1, 2, 2, 3], "e2n")
        .unwrap();
    let c2n = rt
        .decl_map(&cells, &nodes, 3, vec![0, 1, 2, 1, 2, 3], "c2n")
        .unwrap();
    let xn = rt.decl_dat_zeros::<f64>(&nodes, 1, "xn").unwrap();
    let xe = rt.decl_dat_zeros::<f64>(&edges, 1, "xe").unwrap();
    let ie = rt.decl_dat_zeros::<i32>(&edges, 1, "ie").unwrap();
    let g = rt.decl_global(1, &[0.0], "g").unwrap();
    Mesh {
        rt,
        nodes,
        edges,
        cells,
        e2n,
        c2n,
        xn,
        xe,
        ie,
        g,
    }
}

/// `void inc1(double *a) { a[0] += 1.0; }`
pub(crate) fn inc1() -> Kernel {
    kernel("inc1", "void inc1(double *a) { a[0] += 1.0; }")
}
