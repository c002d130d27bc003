//! The named cases: each declares a mesh and runs loops through the public API, then reports the
//! Dats and Globals it computed. Together they cover every feature of the library.

use crate::decl::{CaseRuntime, Map, Set};
use crate::outputs::Outputs;
use op2::{INC, Kernel, MAX, MIN, READ, RW, Result, WRITE};

/// One named case.
#[derive(Clone, Copy)]
pub struct Case {
    /// Short unique name (the table's row).
    pub name: &'static str,
    /// What it exercises.
    pub about: &'static str,
    /// Relative tolerance for floating-point outputs (0 = exact); integers are always exact.
    pub tolerance: f64,
    /// Builds the mesh, runs the loops, reports the outputs.
    pub run: fn(&CaseRuntime) -> Result<Outputs>,
}

/// Tolerance of cases whose floating-point sums a parallel backend may reorder.
pub const REORDERED_SUMS: f64 = 1e-12;

/// Tolerance of cases that call math functions: device math libraries may differ from the host's
/// libm by a few ulp (OpenCL allows 4 ulp for `sin`; PoCL's differs from glibc's by one).
pub const DEVICE_MATH: f64 = 1e-14;

fn k(name: &str, src: &str) -> Result<Kernel> {
    Kernel::new(name, src)
}

/// A chain of `n` nodes and `n - 1` edges, edge `i` joining nodes `i` and `i + 1`.
fn chain(rt: &CaseRuntime, n: usize) -> Result<(Set, Set, Map)> {
    let nodes = rt.decl_set(n, "nodes")?;
    let edges = rt.decl_set(n - 1, "edges")?;
    let e2n: Vec<i32> = (0..n as i32 - 1).flat_map(|i| [i, i + 1]).collect();
    let m = rt.decl_map(&edges, &nodes, 2, e2n, "e2n")?;
    Ok((nodes, edges, m))
}

/// A structured `nx` x `ny` quad mesh: (nodes, cells, interior edges, cell-to-node map of arity
/// 4, edge-to-cell map of arity 2, edge-to-node map of arity 2).
type Quads = (Set, Set, Set, Map, Map, Map);

fn quads(rt: &CaseRuntime, nx: usize, ny: usize) -> Result<Quads> {
    let node = |i: usize, j: usize| (i + j * (nx + 1)) as i32;
    let cell = |i: usize, j: usize| (i + j * nx) as i32;
    let nodes = rt.decl_set((nx + 1) * (ny + 1), "nodes")?;
    let cells = rt.decl_set(nx * ny, "cells")?;
    let c2n: Vec<i32> = (0..ny)
        .flat_map(|j| {
            (0..nx).flat_map(move |i| {
                [
                    node(i, j),
                    node(i + 1, j),
                    node(i + 1, j + 1),
                    node(i, j + 1),
                ]
            })
        })
        .collect();
    let (mut ec, mut en) = (Vec::new(), Vec::new());
    for j in 0..ny {
        for i in 0..nx {
            if j + 1 < ny {
                ec.extend([cell(i, j), cell(i, j + 1)]);
                en.extend([node(i, j + 1), node(i + 1, j + 1)]);
            }
            if i + 1 < nx {
                ec.extend([cell(i + 1, j), cell(i, j)]);
                en.extend([node(i + 1, j), node(i + 1, j + 1)]);
            }
        }
    }
    let edges = rt.decl_set(ec.len() / 2, "edges")?;
    let c2n = rt.decl_map(&cells, &nodes, 4, c2n, "c2n")?;
    let e2c = rt.decl_map(&edges, &cells, 2, ec, "e2c")?;
    let e2n = rt.decl_map(&edges, &nodes, 2, en, "e2n")?;
    Ok((nodes, cells, edges, c2n, e2c, e2n))
}

/// A pseudo-random permutation of `0..n` (deterministic).
fn permutation(n: usize) -> Vec<i32> {
    let mut p: Vec<i32> = (0..n as i32).collect();
    let mut s = 0x2545_f491_4f6c_dd1d_u64;
    for i in (1..n).rev() {
        s ^= s << 13;
        s ^= s >> 7;
        s ^= s << 17;
        p.swap(i, (s % (i as u64 + 1)) as usize);
    }
    p
}

fn direct_write(rt: &CaseRuntime) -> Result<Outputs> {
    let s = rt.decl_set(1000, "s")?;
    let x = rt.decl_dat_zeros::<u32>(&s, 1, "x")?;
    rt.par_loop(
        &k("w", "void w(unsigned int *x) { *x = 42; }")?,
        &s,
        [x.arg(WRITE)],
    )?;
    let mut o = Outputs::new();
    o.dat(&x)?;
    Ok(o)
}

fn direct_rw(rt: &CaseRuntime) -> Result<Outputs> {
    let s = rt.decl_set(1000, "s")?;
    let init: Vec<i32> = (0..1000).collect();
    let x = rt.decl_dat(&s, 1, &init, "x")?;
    rt.par_loop(
        &k("rw", "void rw(int *x) { *x = 3 * *x - 7; }")?,
        &s,
        [x.arg(RW)],
    )?;
    let mut o = Outputs::new();
    o.dat(&x)?;
    Ok(o)
}

fn direct_dim3_f64(rt: &CaseRuntime) -> Result<Outputs> {
    let s = rt.decl_set(777, "s")?;
    let a: Vec<f64> = (0..777 * 3).map(|i| (i as f64).sqrt()).collect();
    let a = rt.decl_dat(&s, 3, &a, "a")?;
    let b = rt.decl_dat_zeros::<f64>(&s, 3, "b")?;
    let kern = k(
        "cross",
        "void cross(const double *a, double *b) { b[0] = a[1] * a[2]; b[1] = a[0] - a[2]; b[2] = sin(a[0]); }",
    )?;
    rt.par_loop(&kern, &s, [a.arg(READ), b.arg(WRITE)])?;
    let mut o = Outputs::new();
    o.dat(&b)?;
    Ok(o)
}

fn every_dtype_direct(rt: &CaseRuntime) -> Result<Outputs> {
    let s = rt.decl_set(300, "s")?;
    let n: usize = 300;
    let f64s = rt.decl_dat(
        &s,
        1,
        &(0..n).map(|i| i as f64 * 0.5).collect::<Vec<_>>(),
        "f64s",
    )?;
    let f32s = rt.decl_dat(
        &s,
        1,
        &(0..n).map(|i| i as f32 * 0.25).collect::<Vec<_>>(),
        "f32s",
    )?;
    let i32s = rt.decl_dat(
        &s,
        1,
        &(0..n).map(|i| i as i32 - 150).collect::<Vec<_>>(),
        "i32s",
    )?;
    let u32s = rt.decl_dat(
        &s,
        1,
        &(0..n).map(|i| i as u32 * 7).collect::<Vec<_>>(),
        "u32s",
    )?;
    let i64s = rt.decl_dat(
        &s,
        1,
        &(0..n).map(|i| (i as i64) << 40).collect::<Vec<_>>(),
        "i64s",
    )?;
    let u64s = rt.decl_dat(
        &s,
        1,
        &(0..n).map(|i| u64::MAX - i as u64).collect::<Vec<_>>(),
        "u64s",
    )?;
    let kern = k(
        "all_types",
        "void all_types(double *a, float *b, int *c, unsigned int *d, int64_t *e, uint64_t *f) {
           *a = *a * 2 + 1; *b = *b * 3 - 1; *c = -*c; *d = *d ^ 0x5a5a5a5au; *e = *e + 1; *f = *f / 3; }",
    )?;
    rt.par_loop(
        &kern,
        &s,
        [
            f64s.arg(RW),
            f32s.arg(RW),
            i32s.arg(RW),
            u32s.arg(RW),
            i64s.arg(RW),
            u64s.arg(RW),
        ],
    )?;
    let mut o = Outputs::new();
    o.dat(&f64s)?;
    o.dat(&f32s)?;
    o.dat(&i32s)?;
    o.dat(&u32s)?;
    o.dat(&i64s)?;
    o.dat(&u64s)?;
    Ok(o)
}

fn global_inc_u64(rt: &CaseRuntime) -> Result<Outputs> {
    let s = rt.decl_set(5000, "s")?;
    let x = rt.decl_dat(&s, 1, &(0..5000u64).collect::<Vec<_>>(), "x")?;
    let g = rt.decl_global(1, &[5u64], "g")?;
    let kern = k(
        "sum",
        "void sum(const uint64_t *x, uint64_t *g) { *g += *x; }",
    )?;
    rt.par_loop(&kern, &s, [x.arg(READ), g.arg(INC)])?;
    let mut o = Outputs::new();
    o.global(&g)?;
    Ok(o)
}

fn global_inc_f64_dim2(rt: &CaseRuntime) -> Result<Outputs> {
    let s = rt.decl_set(4099, "s")?;
    let x: Vec<f64> = (0..4099).map(|i| (i as f64 * 0.37).cos()).collect();
    let x = rt.decl_dat(&s, 1, &x, "x")?;
    let g = rt.decl_global(2, &[1.5, -2.0f64], "g")?;
    let kern = k(
        "sum2",
        "void sum2(const double *x, double *g) { g[0] += *x; g[1] += *x * *x; }",
    )?;
    rt.par_loop(&kern, &s, [x.arg(READ), g.arg(INC)])?;
    let mut o = Outputs::new();
    o.global(&g)?;
    Ok(o)
}

fn global_min_max_i32(rt: &CaseRuntime) -> Result<Outputs> {
    let s = rt.decl_set(2500, "s")?;
    let x: Vec<i32> = permutation(2500).iter().map(|&p| p * 3 - 4000).collect();
    let x = rt.decl_dat(
        &s,
        2,
        &[x.clone(), x.iter().map(|v| -v).collect()].concat(),
        "x",
    )?;
    let lo = rt.decl_global(2, &[i32::MAX; 2], "lo")?;
    let hi = rt.decl_global(2, &[-5000, i32::MIN], "hi")?;
    let kern = k(
        "mm",
        "void mm(const int *x, int *lo, int *hi) { for (int d = 0; d < 2; d++) {
           if (x[d] < lo[d]) lo[d] = x[d]; if (x[d] > hi[d]) hi[d] = x[d]; } }",
    )?;
    rt.par_loop(&kern, &s, [x.arg(READ), lo.arg(MIN), hi.arg(MAX)])?;
    let mut o = Outputs::new();
    o.global(&lo)?;
    o.global(&hi)?;
    Ok(o)
}

fn global_min_max_f32(rt: &CaseRuntime) -> Result<Outputs> {
    let s = rt.decl_set(3001, "s")?;
    let x: Vec<f32> = (0..3001)
        .map(|i| ((i * 7919) % 3001) as f32 * -0.5)
        .collect();
    let x = rt.decl_dat(&s, 1, &x, "x")?;
    let lo = rt.decl_global(1, &[-10.0f32], "lo")?; // a smaller initial value stays
    let hi = rt.decl_global(1, &[f32::MIN], "hi")?;
    let kern = k(
        "mmf",
        "void mmf(const float *x, float *lo, float *hi) { if (*x < *lo) *lo = *x; if (*x > *hi) *hi = *x; }",
    )?;
    rt.par_loop(&kern, &s, [x.arg(READ), lo.arg(MIN), hi.arg(MAX)])?;
    let mut o = Outputs::new();
    o.global(&lo)?;
    o.global(&hi)?;
    Ok(o)
}

fn global_read(rt: &CaseRuntime) -> Result<Outputs> {
    let s = rt.decl_set(1234, "s")?;
    let x = rt.decl_dat_zeros::<f32>(&s, 1, "x")?;
    let idx = rt.decl_dat(&s, 1, &(0..1234).collect::<Vec<i32>>(), "idx")?;
    let g = rt.decl_global(2, &[3.0f32, 1.0], "g")?;
    let kern = k(
        "scale",
        "void scale(float *x, const int *i, const float *g) { *x = g[0] * *i + g[1]; }",
    )?;
    rt.par_loop(&kern, &s, [x.arg(WRITE), idx.arg(READ), g.arg(READ)])?;
    let mut o = Outputs::new();
    o.dat(&x)?;
    Ok(o)
}

fn zero_size_set(rt: &CaseRuntime) -> Result<Outputs> {
    let s = rt.decl_set(0, "empty")?;
    let nodes = rt.decl_set(3, "nodes")?;
    let m = rt.decl_map(&s, &nodes, 2, vec![], "m")?;
    let x = rt.decl_dat_zeros::<f64>(&nodes, 1, "x")?;
    let g = rt.decl_global(1, &[7.0f64], "g")?;
    let kern = k(
        "inc",
        "void inc(double *a, double *b, double *g) { *a += 1; *b += 1; *g += 1; }",
    )?;
    rt.par_loop(
        &kern,
        &s,
        [x.arg_via(&m, 0, INC), x.arg_via(&m, 1, INC), g.arg(INC)],
    )?;
    let mut o = Outputs::new();
    o.dat(&x)?;
    o.global(&g)?;
    Ok(o)
}

fn one_element_set(rt: &CaseRuntime) -> Result<Outputs> {
    let s = rt.decl_set(1, "one")?;
    let nodes = rt.decl_set(4, "nodes")?;
    let m = rt.decl_map(&s, &nodes, 4, vec![3, 1, 0, 2], "m")?;
    let x = rt.decl_dat(&nodes, 1, &[1i64, 2, 3, 4], "x")?;
    let y = rt.decl_dat_zeros::<i64>(&s, 1, "y")?;
    let g = rt.decl_global(1, &[0i64], "g")?;
    let kern = k(
        "one",
        "void one(int64_t *x[4], int64_t *y, int64_t *g) {
           *y = x[0][0] * 1000 + x[1][0] * 100 + x[2][0] * 10 + x[3][0]; x[0][0] += 5; *g += *y; }",
    )?;
    rt.par_loop(&kern, &s, [x.arg_row(&m, RW), y.arg(WRITE), g.arg(INC)])?;
    let mut o = Outputs::new();
    o.dat(&x)?;
    o.dat(&y)?;
    o.global(&g)?;
    Ok(o)
}

fn indirect_read_chain(rt: &CaseRuntime) -> Result<Outputs> {
    let (nodes, edges, m) = chain(rt, 1000)?;
    let v: Vec<f64> = (0..1000).map(|i| (i * i) as f64).collect();
    let v = rt.decl_dat(&nodes, 1, &v, "v")?;
    let e = rt.decl_dat_zeros::<f64>(&edges, 1, "e")?;
    let kern = k(
        "esum",
        "void esum(double *e, const double *a, const double *b) { *e = *a + 2 * *b; }",
    )?;
    rt.par_loop(
        &kern,
        &edges,
        [e.arg(WRITE), v.arg_via(&m, 0, READ), v.arg_via(&m, 1, READ)],
    )?;
    let mut o = Outputs::new();
    o.dat(&e)?;
    Ok(o)
}

fn indirect_inc_chain(rt: &CaseRuntime) -> Result<Outputs> {
    let (nodes, edges, m) = chain(rt, 5000)?;
    let e: Vec<f64> = (0..4999).map(|i| 1.0 / (1.0 + i as f64)).collect();
    let e = rt.decl_dat(&edges, 1, &e, "e")?;
    let acc = rt.decl_dat_zeros::<f64>(&nodes, 1, "acc")?;
    let kern = k(
        "scatter",
        "void scatter(const double *e, double *a, double *b) { *a += *e; *b -= 2 * *e; }",
    )?;
    rt.par_loop(
        &kern,
        &edges,
        [
            e.arg(READ),
            acc.arg_via(&m, 0, INC),
            acc.arg_via(&m, 1, INC),
        ],
    )?;
    let mut o = Outputs::new();
    o.dat(&acc)?;
    Ok(o)
}

fn indirect_rw_permutation(rt: &CaseRuntime) -> Result<Outputs> {
    let n = 2000;
    let s = rt.decl_set(n, "s")?;
    let t = rt.decl_set(n, "t")?;
    let m = rt.decl_map(&s, &t, 1, permutation(n), "perm")?;
    let x = rt.decl_dat(&t, 1, &(0..n as i32).collect::<Vec<_>>(), "x")?;
    let idx = rt.decl_dat(&s, 1, &(0..n as i32).collect::<Vec<_>>(), "idx")?;
    let kern = k("rw", "void rw(int *x, const int *i) { *x = *x * 2 + *i; }")?;
    rt.par_loop(&kern, &s, [x.arg_via(&m, 0, RW), idx.arg(READ)])?;
    let mut o = Outputs::new();
    o.dat(&x)?;
    Ok(o)
}

fn indirect_write_permutation(rt: &CaseRuntime) -> Result<Outputs> {
    let n = 3000;
    let s = rt.decl_set(n, "s")?;
    let t = rt.decl_set(n, "t")?;
    let m = rt.decl_map(&s, &t, 1, permutation(n), "perm")?;
    let x = rt.decl_dat_zeros::<u32>(&t, 2, "x")?;
    let kern = k(
        "put",
        "void put(unsigned int *x, const unsigned int *i) { x[0] = *i; x[1] = *i * *i; }",
    )?;
    let idx = rt.decl_dat(&s, 1, &(0..n as u32).collect::<Vec<_>>(), "idx")?;
    rt.par_loop(&kern, &s, [x.arg_via(&m, 0, WRITE), idx.arg(READ)])?;
    let mut o = Outputs::new();
    o.dat(&x)?;
    Ok(o)
}

fn inc_into_one_element(rt: &CaseRuntime) -> Result<Outputs> {
    let s = rt.decl_set(10_000, "s")?;
    let one = rt.decl_set(1, "one")?;
    let m = rt.decl_map(&s, &one, 1, vec![0; 10_000], "all_to_one")?;
    let u = rt.decl_dat_zeros::<u32>(&one, 1, "u")?;
    let kern = k("count", "void count(unsigned int *u) { *u += 1; }")?;
    rt.par_loop(&kern, &s, [u.arg_via(&m, 0, INC)])?;
    let mut o = Outputs::new();
    o.dat(&u)?;
    Ok(o)
}

fn set_larger_than_blocks(rt: &CaseRuntime) -> Result<Outputs> {
    // 40 x 30 quads: 1,200 cells and 2,330 edges, many blocks at any block size up to 1024.
    let (_, cells, edges, _, e2c, _) = quads(rt, 40, 30)?;
    let w: Vec<i64> = (0..2330).map(|e| e % 13 - 6).collect();
    let w = rt.decl_dat(&edges, 1, &w, "w")?;
    let r = rt.decl_dat_zeros::<i64>(&cells, 2, "r")?;
    let kern = k(
        "flux",
        "void flux(const int64_t *w, int64_t *a, int64_t *b) { a[0] += *w; b[0] -= *w; a[1] += 1; b[1] += 1; }",
    )?;
    rt.par_loop(
        &kern,
        &edges,
        [
            w.arg(READ),
            r.arg_via(&e2c, 0, INC),
            r.arg_via(&e2c, 1, INC),
        ],
    )?;
    let mut o = Outputs::new();
    o.dat(&r)?;
    Ok(o)
}

fn row_read_midpoint(rt: &CaseRuntime) -> Result<Outputs> {
    // OP2's classic example: cell midpoints from node coordinates through a map of arity 3.
    let nodes = rt.decl_set(5, "nodes")?;
    let cells = rt.decl_set(4, "cells")?;
    let c2n = rt.decl_map(
        &cells,
        &nodes,
        3,
        vec![0, 1, 4, 1, 2, 4, 2, 3, 4, 3, 0, 4],
        "c2n",
    )?;
    let xy = rt.decl_dat(
        &nodes,
        2,
        &[0.0, 0.0, 2.0, 0.0, 2.0, 2.0, 0.0, 2.0, 1.0, 1.0f64],
        "xy",
    )?;
    let mid = rt.decl_dat_zeros::<f64>(&cells, 2, "mid")?;
    let kern = k(
        "midpoint",
        "void midpoint(double p[2], double *c[3]) {
           p[0] = (c[0][0] + c[1][0] + c[2][0]) / 3.0; p[1] = (c[0][1] + c[1][1] + c[2][1]) / 3.0; }",
    )?;
    rt.par_loop(&kern, &cells, [mid.arg(WRITE), xy.arg_row(&c2n, READ)])?;
    let mut o = Outputs::new();
    o.dat(&mid)?;
    Ok(o)
}

fn row_inc_cells_to_nodes(rt: &CaseRuntime) -> Result<Outputs> {
    let (nodes, cells, _, c2n, _, _) = quads(rt, 25, 20)?;
    let area: Vec<f64> = (0..500).map(|c| 1.0 + (c % 9) as f64 * 0.125).collect();
    let area = rt.decl_dat(&cells, 1, &area, "area")?;
    let acc = rt.decl_dat_zeros::<f64>(&nodes, 2, "acc")?;
    let kern = k(
        "spread",
        "void spread(const double *a, double *n[4]) { for (int i = 0; i < 4; i++) { n[i][0] += 0.25 * *a; n[i][1] += i; } }",
    )?;
    rt.par_loop(&kern, &cells, [area.arg(READ), acc.arg_row(&c2n, INC)])?;
    let mut o = Outputs::new();
    o.dat(&acc)?;
    Ok(o)
}

fn two_maps_two_targets(rt: &CaseRuntime) -> Result<Outputs> {
    let (nodes, cells, edges, _, e2c, e2n) = quads(rt, 30, 17)?;
    let xy: Vec<f64> = (0..nodes.size())
        .flat_map(|n| [(n % 31) as f64, (n / 31) as f64 * 0.5])
        .collect();
    let x = rt.decl_dat(&nodes, 2, &xy, "x")?;
    let len = rt.decl_dat_zeros::<f64>(&cells, 1, "perimeter")?;
    let deg = rt.decl_dat_zeros::<i32>(&nodes, 1, "degree")?;
    let kern = k(
        "edge_len",
        "void edge_len(const double *a, const double *b, double *c1, double *c2, int *d1, int *d2) {
           double l = sqrt((a[0] - b[0]) * (a[0] - b[0]) + (a[1] - b[1]) * (a[1] - b[1]));
           *c1 += l; *c2 += l; *d1 += 1; *d2 += 1; }",
    )?;
    rt.par_loop(
        &kern,
        &edges,
        [
            x.arg_via(&e2n, 0, READ),
            x.arg_via(&e2n, 1, READ),
            len.arg_via(&e2c, 0, INC),
            len.arg_via(&e2c, 1, INC),
            deg.arg_via(&e2n, 0, INC),
            deg.arg_via(&e2n, 1, INC),
        ],
    )?;
    let mut o = Outputs::new();
    o.dat(&len)?;
    o.dat(&deg)?;
    Ok(o)
}

fn consts_dim1_and_dim4(rt: &CaseRuntime) -> Result<Outputs> {
    rt.decl_const(1, &[2.5f64], "alpha")?;
    rt.decl_const(4, &[1i32, -2, 3, -4], "coef")?;
    let s = rt.decl_set(100, "s")?;
    let y = rt.decl_dat_zeros::<f64>(&s, 1, "y")?;
    let i = rt.decl_dat(&s, 1, &(0..100).collect::<Vec<i32>>(), "i")?;
    let kern = k(
        "poly",
        "void poly(double *y, const int *i) { *y = alpha * *i + coef[*i % 4]; }",
    )?;
    rt.par_loop(&kern, &s, [y.arg(WRITE), i.arg(READ)])?;
    let mut o = Outputs::new();
    o.dat(&y)?;
    Ok(o)
}

fn const_changes_between_loops(rt: &CaseRuntime) -> Result<Outputs> {
    let c = rt.decl_const(1, &[1.0f64], "factor")?;
    let s = rt.decl_set(50, "s")?;
    let y = rt.decl_dat(&s, 1, &vec![1.0f64; 50], "y")?;
    let kern = k("mul", "void mul(double *y) { *y = *y * factor + 1; }")?;
    rt.par_loop(&kern, &s, [y.arg(RW)])?;
    c.set_value(&[3.0])?;
    rt.par_loop(&kern, &s, [y.arg(RW)])?;
    let mut o = Outputs::new();
    o.dat(&y)?;
    Ok(o)
}

fn repeated_args(rt: &CaseRuntime) -> Result<Outputs> {
    // Every arg is its own contribution: a Global twice with INC, MIN or MAX; a Dat twice
    // directly and twice through one map entry with INC; a kernel that keeps its own pointers
    // (OpenCL compiles it with private copies of its args).
    let (nodes, edges, m) = chain(rt, 300)?;
    let v: Vec<i64> = (0..299).map(|i| (i * 37) % 101 - 50).collect();
    let x = rt.decl_dat(&edges, 1, &v, "x")?;
    let sum = rt.decl_global(2, &[5i64, -3], "sum")?;
    let lo = rt.decl_global(1, &[0i64], "lo")?;
    let hi = rt.decl_global(1, &[0i64], "hi")?;
    let fsum = rt.decl_global(1, &[0.5f64], "fsum")?;
    let twice = k(
        "twice",
        "void twice(const int64_t *x, int64_t *a, int64_t *b, int64_t *l1, int64_t *l2,
                    int64_t *h1, int64_t *h2, double *f1, double *f2) {
           a[0] += *x; a[1] += 1; b[0] += 2 * *x; b[1] += 10;
           if (*x < *l1) *l1 = *x; if (*x / 2 < *l2) *l2 = *x / 2;
           if (*x > *h1) *h1 = *x; if (*x / 2 > *h2) *h2 = *x / 2;
           *f1 += 0.25; *f2 += 0.5; }",
    )?;
    rt.par_loop(
        &twice,
        &edges,
        [
            x.arg(READ),
            sum.arg(INC),
            sum.arg(INC),
            lo.arg(MIN),
            lo.arg(MIN),
            hi.arg(MAX),
            hi.arg(MAX),
            fsum.arg(INC),
            fsum.arg(INC),
        ],
    )?;
    let d = rt.decl_dat(&nodes, 1, &vec![1.0f64; 300], "d")?;
    let direct2 = k(
        "direct2",
        "void direct2(double *a, double *b) { double *p = a; *p += 1.0; *b += 2.0; }",
    )?;
    rt.par_loop(&direct2, &nodes, [d.arg(INC), d.arg(INC)])?;
    let n = rt.decl_dat_zeros::<u32>(&nodes, 1, "n")?;
    let entry2 = k(
        "entry2",
        "void entry2(unsigned *a, unsigned *b, unsigned *c) { *a += 1; *b += 10; *c += 100; }",
    )?;
    rt.par_loop(
        &entry2,
        &edges,
        [
            n.arg_via(&m, 0, INC),
            n.arg_via(&m, 0, INC),
            n.arg_via(&m, 1, INC),
        ],
    )?;
    let mut o = Outputs::new();
    o.global(&sum)?;
    o.global(&lo)?;
    o.global(&hi)?;
    o.global(&fsum)?;
    o.dat(&d)?;
    o.dat(&n)?;
    Ok(o)
}

/// Names generated code once used for its locals, and names headers or dialects use: Consts
/// take the first list, kernels the second (a kernel may not share a Const's name).
const CONST_NAMES_TAKEN_ELSEWHERE: &[&str] = &[
    "start", "end", "args", "maps", "consts", "n", "first", "len", "y0", "free", "min", "barrier",
];
const KERNEL_NAMES_TAKEN_ELSEWHERE: &[&str] = &[
    "lo",
    "nt",
    "tid",
    "k",
    "arg0",
    "map0",
    "kernel",
    "local",
    "new",
    "threadIdx",
    "uint",
    "M_PI",
];

fn names_taken_elsewhere(rt: &CaseRuntime) -> Result<Outputs> {
    let (nodes, edges, m) = chain(rt, 200)?;
    for (i, name) in CONST_NAMES_TAKEN_ELSEWHERE.iter().enumerate() {
        rt.decl_const(1, &[i as f64 + 0.5], name)?;
    }
    let x = rt.decl_dat_zeros::<f64>(&nodes, 1, "x")?;
    for (name, c) in KERNEL_NAMES_TAKEN_ELSEWHERE
        .iter()
        .zip(CONST_NAMES_TAKEN_ELSEWHERE)
    {
        let kern = k(
            name,
            &format!("void {name}(double *x[2]) {{ *x[0] += {c}; *x[1] += 2 * {c}; }}"),
        )?;
        rt.par_loop(&kern, &edges, [x.arg_row(&m, INC)])?;
    }
    let sum = CONST_NAMES_TAKEN_ELSEWHERE.join(" + ");
    let all = k("all", &format!("void all(double *x) {{ *x += {sum}; }}"))?;
    rt.par_loop(&all, &nodes, [x.arg(RW)])?;
    let mut o = Outputs::new();
    o.dat(&x)?;
    Ok(o)
}

fn wide_increments(rt: &CaseRuntime) -> Result<Outputs> {
    // Large private increments per element: whole rows of arity 8 and dim 40, one entry of dim
    // 300. Devices must shrink their work-groups rather than fail.
    let arity = 8;
    let cells = rt.decl_set(100, "cells")?;
    let nodes = rt.decl_set(110, "nodes")?;
    let c2n: Vec<i32> = (0..100 * arity)
        .map(|i| ((i / arity) + (i % arity) * (1 + i % 3)).min(109) as i32)
        .collect();
    let c2n = rt.decl_map(&cells, &nodes, arity, c2n, "c2n")?;
    let x = rt.decl_dat_zeros::<f64>(&nodes, 40, "x")?;
    // The whole mesh first: across ranks it is partitioned at the first loop.
    let (nodes2, edges, m) = chain(rt, 60)?;
    let row = k(
        "wide_row",
        "void wide_row(double *x[8]) { for (int j = 0; j < 8; j++) for (int d = 0; d < 40; d++) x[j][d] += j + 0.5 * d; }",
    )?;
    rt.par_loop(&row, &cells, [x.arg_row(&c2n, INC)])?;
    let y = rt.decl_dat_zeros::<f32>(&nodes2, 300, "y")?;
    let entry = k(
        "wide_entry",
        "void wide_entry(float *a, float *b) { for (int d = 0; d < 300; d++) { a[d] += 1.0f + d; b[d] += 2.0f; } }",
    )?;
    rt.par_loop(
        &entry,
        &edges,
        [y.arg_via(&m, 0, INC), y.arg_via(&m, 1, INC)],
    )?;
    let _ = nodes;
    let mut o = Outputs::new();
    o.dat(&x)?;
    o.dat(&y)?;
    Ok(o)
}

fn many_component_globals(rt: &CaseRuntime) -> Result<Outputs> {
    // Globals of 24 components (a loop, not unrolled, on devices) and of 700 (reduced in place
    // on the host), with every reduction.
    let s = rt.decl_set(500, "s")?;
    let v: Vec<i32> = (0..500).map(|i| (i * 7919) % 1009 - 500).collect();
    let x = rt.decl_dat(&s, 1, &v, "v")?;
    let sum = rt.decl_global(24, &[1i32; 24], "sum")?;
    let lo = rt.decl_global(24, &[0i32; 24], "lo")?;
    let hi = rt.decl_global(24, &[0i32; 24], "hi")?;
    let hist = rt.decl_global(700, &[0.0f64; 700], "hist")?;
    let kern = k(
        "spread",
        "void spread(const int *v, int *s, int *lo, int *hi, double *h) {
           for (int b = 0; b < 24; b++) {
             int w = *v * (b + 1);
             s[b] += w; if (w < lo[b]) lo[b] = w; if (w > hi[b]) hi[b] = w;
           }
           h[(*v + 500) % 700] += 1.0; }",
    )?;
    rt.par_loop(
        &kern,
        &s,
        [
            x.arg(READ),
            sum.arg(INC),
            lo.arg(MIN),
            hi.arg(MAX),
            hist.arg(INC),
        ],
    )?;
    let mut o = Outputs::new();
    o.global(&sum)?;
    o.global(&lo)?;
    o.global(&hi)?;
    o.global(&hist)?;
    Ok(o)
}

fn lazy_chain_of_loops(rt: &CaseRuntime) -> Result<Outputs> {
    // Three dependent loops recorded before any result is read, plus one nobody reads until the end.
    let (nodes, edges, m) = chain(rt, 600)?;
    let a = rt.decl_dat(
        &nodes,
        1,
        &(0..600).map(|i| i as f64).collect::<Vec<_>>(),
        "a",
    )?;
    let e = rt.decl_dat_zeros::<f64>(&edges, 1, "e")?;
    let b = rt.decl_dat_zeros::<f64>(&nodes, 1, "b")?;
    let total = rt.decl_global(1, &[0.0f64], "total")?;
    let diff = k(
        "diff",
        "void diff(double *e, const double *a, const double *b) { *e = *b - *a; }",
    )?;
    let back = k(
        "back",
        "void back(const double *e, double *x, double *y) { *x += *e; *y += *e; }",
    )?;
    let sum = k(
        "sumb",
        "void sumb(const double *b, double *t) { *t += *b * *b; }",
    )?;
    rt.par_loop(
        &diff,
        &edges,
        [e.arg(WRITE), a.arg_via(&m, 0, READ), a.arg_via(&m, 1, READ)],
    )?;
    rt.par_loop(
        &back,
        &edges,
        [e.arg(READ), b.arg_via(&m, 0, INC), b.arg_via(&m, 1, INC)],
    )?;
    rt.par_loop(&sum, &nodes, [b.arg(READ), total.arg(INC)])?;
    let mut o = Outputs::new();
    o.global(&total)?;
    o.dat(&b)?;
    Ok(o)
}

fn host_writes_between_loops(rt: &CaseRuntime) -> Result<Outputs> {
    let s = rt.decl_set(64, "s")?;
    let x = rt.decl_dat(&s, 1, &vec![1i32; 64], "x")?;
    let g = rt.decl_global(1, &[0i32], "g")?;
    let bump = k("bump", "void bump(int *x) { *x += 1; }")?;
    let sum = k("sumx", "void sumx(const int *x, int *g) { *g += *x; }")?;
    rt.par_loop(&bump, &s, [x.arg(RW)])?;
    x.write_element(10, &[100])?;
    rt.par_loop(&bump, &s, [x.arg(RW)])?;
    g.set_value(&[-5])?;
    rt.par_loop(&sum, &s, [x.arg(READ), g.arg(INC)])?;
    let mut o = Outputs::new();
    o.dat(&x)?;
    o.global(&g)?;
    Ok(o)
}

fn op2_style_args(rt: &CaseRuntime) -> Result<Outputs> {
    let (nodes, edges, m) = chain(rt, 50)?;
    let v = rt.decl_dat(
        &nodes,
        1,
        &(0..50).map(|i| i as f64).collect::<Vec<_>>(),
        "v",
    )?;
    let total = rt.decl_global(1, &[0.0f64], "total")?;
    let kern = k(
        "pair",
        "void pair(const double *a, const double *b, double *t) { *t += *a * *b; }",
    )?;
    rt.par_loop(
        &kern,
        &edges,
        [
            v.op_arg(0, Some(&m), 1, "double", READ),
            v.op_arg(1, Some(&m), 1, "double", READ),
            total.op_arg(1, "double", INC),
        ],
    )?;
    let mut o = Outputs::new();
    o.global(&total)?;
    Ok(o)
}

fn indirect_i64_and_u32(rt: &CaseRuntime) -> Result<Outputs> {
    let (nodes, edges, m) = chain(rt, 3000)?;
    let w = rt.decl_dat(
        &edges,
        1,
        &(0..2999).map(|e| (e as i64) << 33).collect::<Vec<_>>(),
        "w",
    )?;
    let big = rt.decl_dat_zeros::<i64>(&nodes, 1, "big")?;
    let cnt = rt.decl_dat_zeros::<u32>(&nodes, 1, "cnt")?;
    let kern = k(
        "wide",
        "void wide(const int64_t *w, int64_t *a, int64_t *b, unsigned int *c, unsigned int *d) {
           *a += *w; *b -= *w; *c += 3u; *d += 5u; }",
    )?;
    rt.par_loop(
        &kern,
        &edges,
        [
            w.arg(READ),
            big.arg_via(&m, 0, INC),
            big.arg_via(&m, 1, INC),
            cnt.arg_via(&m, 0, INC),
            cnt.arg_via(&m, 1, INC),
        ],
    )?;
    let mut o = Outputs::new();
    o.dat(&big)?;
    o.dat(&cnt)?;
    Ok(o)
}

fn indirect_f32_inc(rt: &CaseRuntime) -> Result<Outputs> {
    let (nodes, cells, _, c2n, _, _) = quads(rt, 33, 21)?;
    let v: Vec<f32> = (0..cells.size()).map(|c| (c % 17) as f32 * 0.5).collect();
    let v = rt.decl_dat(&cells, 1, &v, "v")?;
    let acc = rt.decl_dat_zeros::<f32>(&nodes, 1, "acc")?;
    let kern = k(
        "f32inc",
        "void f32inc(const float *v, float *a, float *b, float *c, float *d) { *a += *v; *b += *v; *c += *v; *d += *v; }",
    )?;
    rt.par_loop(
        &kern,
        &cells,
        [
            v.arg(READ),
            acc.arg_via(&c2n, 0, INC),
            acc.arg_via(&c2n, 1, INC),
            acc.arg_via(&c2n, 2, INC),
            acc.arg_via(&c2n, 3, INC),
        ],
    )?;
    let mut o = Outputs::new();
    o.dat(&acc)?;
    Ok(o)
}

/// A few explicit Euler steps of heat diffusion on a quad mesh: an edge flux loop (INC) and a direct
/// update with a residual reduction, repeated; floating-point sums reorder on parallel backends.
fn diffusion_time_steps(rt: &CaseRuntime) -> Result<Outputs> {
    let (_, cells, edges, _, e2c, _) = quads(rt, 60, 40)?;
    let t: Vec<f64> = (0..cells.size())
        .map(|c| if c % 60 < 30 { 1.0 } else { 0.0 })
        .collect();
    let t = rt.decl_dat(&cells, 1, &t, "t")?;
    let du = rt.decl_dat_zeros::<f64>(&cells, 1, "du")?;
    let rms = rt.decl_global(1, &[0.0f64], "rms")?;
    rt.decl_const(1, &[0.2f64], "kappa")?;
    let flux = k(
        "flux",
        "void flux(const double *t1, const double *t2, double *d1, double *d2) {
           double f = kappa * (*t2 - *t1); *d1 += f; *d2 -= f; }",
    )?;
    let step = k(
        "step",
        "void step(double *t, double *d, double *r) { *t += *d; *r += *d * *d; *d = 0; }",
    )?;
    for _ in 0..20 {
        rt.par_loop(
            &flux,
            &edges,
            [
                t.arg_via(&e2c, 0, READ),
                t.arg_via(&e2c, 1, READ),
                du.arg_via(&e2c, 0, INC),
                du.arg_via(&e2c, 1, INC),
            ],
        )?;
        rt.par_loop(&step, &cells, [t.arg(RW), du.arg(RW), rms.arg(INC)])?;
    }
    let mut o = Outputs::new();
    o.dat(&t)?;
    o.global(&rms)?;
    Ok(o)
}

fn same_dat_read_and_inc_via_two_maps(rt: &CaseRuntime) -> Result<Outputs> {
    // Reads one Dat through one map while incrementing another through a second map on the same set.
    let (nodes, cells, edges, _, e2c, e2n) = quads(rt, 20, 20)?;
    let nv = rt.decl_dat(
        &nodes,
        1,
        &(0..nodes.size())
            .map(|n| (n % 5) as i32)
            .collect::<Vec<_>>(),
        "nv",
    )?;
    let cv = rt.decl_dat_zeros::<i32>(&cells, 1, "cv")?;
    let kern = k(
        "mix",
        "void mix(const int *a, const int *b, int *c, int *d) { *c += *a * 10 + *b; *d -= *a + *b; }",
    )?;
    rt.par_loop(
        &kern,
        &edges,
        [
            nv.arg_via(&e2n, 0, READ),
            nv.arg_via(&e2n, 1, READ),
            cv.arg_via(&e2c, 0, INC),
            cv.arg_via(&e2c, 1, INC),
        ],
    )?;
    let mut o = Outputs::new();
    o.dat(&cv)?;
    Ok(o)
}

fn global_max_all_negative(rt: &CaseRuntime) -> Result<Outputs> {
    let s = rt.decl_set(999, "s")?;
    let x: Vec<i64> = (0..999)
        .map(|i| -1_000_000 - ((i * 37) % 999) as i64)
        .collect();
    let x = rt.decl_dat(&s, 1, &x, "x")?;
    let hi = rt.decl_global(1, &[i64::MIN], "hi")?;
    let sum = rt.decl_global(1, &[0i64], "sum")?;
    let kern = k(
        "mx",
        "void mx(const int64_t *x, int64_t *h, int64_t *s) { if (*x > *h) *h = *x; *s += *x; }",
    )?;
    rt.par_loop(&kern, &s, [x.arg(READ), hi.arg(MAX), sum.arg(INC)])?;
    let mut o = Outputs::new();
    o.global(&hi)?;
    o.global(&sum)?;
    Ok(o)
}

fn row_rw_gather_scatter(rt: &CaseRuntime) -> Result<Outputs> {
    // RW through a whole row on a map whose rows are disjoint (each node in one element's row).
    let elems = rt.decl_set(400, "elems")?;
    let nodes = rt.decl_set(1200, "nodes")?;
    let p = permutation(1200);
    let m = rt.decl_map(&elems, &nodes, 3, p, "disjoint")?;
    let x = rt.decl_dat(&nodes, 1, &(0..1200).collect::<Vec<u64>>(), "x")?;
    let kern = k(
        "rot",
        "void rot(uint64_t *x[3]) { uint64_t t = x[0][0]; x[0][0] = x[1][0]; x[1][0] = x[2][0]; x[2][0] = t + 1; }",
    )?;
    rt.par_loop(&kern, &elems, [x.arg_row(&m, RW)])?;
    let mut o = Outputs::new();
    o.dat(&x)?;
    Ok(o)
}

/// A subset of a quad mesh's cells (every third, and a subset of that): direct RW, INC through
/// the cell-to-node map and a Global, over the subset's elements only (PyOP2's `Subset`).
fn subset_loops(rt: &CaseRuntime) -> Result<Outputs> {
    let (nodes, cells, _, c2n, _, _) = quads(rt, 23, 17)?;
    let n = cells.size();
    let u = rt.decl_dat(
        &cells,
        1,
        &(0..n).map(|c| c as f64 * 0.5).collect::<Vec<_>>(),
        "u",
    )?;
    let acc = rt.decl_dat_zeros::<f64>(&nodes, 1, "acc")?;
    let g = rt.decl_global(1, &[0.0f64], "g")?;
    let thirds: Vec<usize> = (0..n).step_by(3).collect();
    let sixths: Vec<usize> = thirds.iter().copied().step_by(2).collect();
    let kern = k(
        "sub_touch",
        "void sub_touch(double *u, double *a[4], double *g) {
           *u = 2.0 * *u + 1.0; for (int i = 0; i < 4; i++) a[i][0] += *u * (i + 1); *g += *u; }",
    )?;
    for (name, indices) in [("thirds", &thirds), ("sixths", &sixths)] {
        let sub = rt.decl_subset(&cells, indices, name)?;
        rt.par_loop(&kern, &sub, [u.arg(RW), acc.arg_row(&c2n, INC), g.arg(INC)])?;
    }
    let mut o = Outputs::new();
    o.dat(&u)?;
    o.dat(&acc)?;
    o.global(&g)?;
    Ok(o)
}

/// A chain of `n` nodes extruded into node columns of heights `layers`, and its edges into
/// columns of quads as tall as their shorter node column: (node columns, quad columns, the
/// quads' extruded map to their four nodes, the chain's edge set).
fn extruded_chain(rt: &CaseRuntime, layers: &[usize]) -> Result<(Set, Set, Map, Set)> {
    let (bnodes, bedges, _) = chain(rt, layers.len())?;
    let n = layers.len();
    let cell_layers: Vec<usize> = (0..n - 1).map(|e| layers[e].min(layers[e + 1])).collect();
    // Columns of one height are declared with one count.
    let (cells, nodes) = if layers.iter().all(|&l| l == layers[0]) {
        (
            rt.decl_extruded_set(&bedges, layers[0], "cells")?,
            rt.decl_extruded_nodes(&bnodes, layers[0], "nodes")?,
        )
    } else {
        (
            rt.decl_extruded_set(&bedges, cell_layers, "cells")?,
            rt.decl_extruded_nodes(&bnodes, layers.to_vec(), "nodes")?,
        )
    };
    let start: Vec<i32> = layers
        .iter()
        .scan(0, |s, &l| {
            let a = *s;
            *s += l as i32;
            Some(a)
        })
        .collect();
    let bottom: Vec<i32> = (0..n - 1)
        .flat_map(|e| [start[e], start[e + 1], start[e] + 1, start[e + 1] + 1])
        .collect();
    let c2n = rt.decl_extruded_map(&cells, &nodes, 4, bottom, [1; 4], "c2n")?;
    Ok((nodes, cells, c2n, bedges))
}

/// Columns of different heights over a chain: a node loop, a cell loop reading through the
/// extruded map and writing the cells and reading a Dat of the base set, then increments into
/// the nodes over every layer, the bottom and the top.
fn extruded_columns(rt: &CaseRuntime) -> Result<Outputs> {
    let layers: Vec<usize> = (0..40).map(|b| 2 + (b * 7) % 9).collect();
    let (nodes, cells, c2n, bedges) = extruded_chain(rt, &layers)?;
    let total = nodes.size();
    let xv: Vec<f64> = (0..total).map(|i| (i % 13) as f64 - 4.0).collect();
    let x = rt.decl_dat(&nodes, 1, &xv, "x")?;
    let y = rt.decl_dat_zeros::<f64>(&cells, 2, "y")?;
    let acc = rt.decl_dat_zeros::<f64>(&nodes, 1, "acc")?;
    let wv: Vec<f64> = (0..bedges.size()).map(|e| e as f64).collect();
    let w = rt.decl_dat(&bedges, 1, &wv, "w")?;
    let g = rt.decl_global(1, &[0.0f64], "g")?;
    rt.par_loop(
        &k(
            "col_scale",
            "void col_scale(double *x) { *x = 3.0 * *x + 1.0; }",
        )?,
        &nodes,
        [x.arg(RW)],
    )?;
    rt.par_loop(
        &k(
            "col_quad",
            "void col_quad(const double *x[4], double *y, const double *w) {
               y[0] = x[0][0] + 2.0 * x[1][0] + 3.0 * x[2][0] + 4.0 * x[3][0]; y[1] = *w; }",
        )?,
        &cells,
        [x.arg_row(&c2n, READ), y.arg(WRITE), w.arg(READ)],
    )?;
    let spread = k(
        "col_spread",
        "void col_spread(const double *y, double *a[4], double *g) {
           for (int i = 0; i < 4; i++) a[i][0] += y[0] * (i + 1); *g += y[0] + y[1]; }",
    )?;
    for region in [op2::Region::All, op2::Region::Bottom, op2::Region::Top] {
        rt.par_loop_region(
            &spread,
            &cells,
            region,
            [y.arg(READ), acc.arg_row(&c2n, INC), g.arg(INC)],
        )?;
    }
    let mut o = Outputs::new();
    o.dat(&x)?;
    o.dat(&y)?;
    o.dat(&acc)?;
    o.global(&g)?;
    Ok(o)
}

/// Interior horizontal facets of extruded quads: each facet sees the quads below and above
/// through a map of twice the arity (here the quads' nodes), and increments both.
fn extruded_facets(rt: &CaseRuntime) -> Result<Outputs> {
    // One height everywhere: the column walk's literal count (the other case has many).
    let layers = vec![7usize; 30];
    let (nodes, cells, c2n, _) = extruded_chain(rt, &layers)?;
    let xv: Vec<f64> = (0..nodes.size()).map(|i| ((i * 37) % 101) as f64).collect();
    let x = rt.decl_dat(&nodes, 1, &xv, "x")?;
    let jump = rt.decl_dat_zeros::<f64>(&nodes, 1, "jump")?;
    rt.par_loop_region(
        &k(
            "facet_jump",
            "void facet_jump(const double *x[8], double *j[8]) {
               double d = x[4][0] + x[5][0] - x[0][0] - x[1][0];
               for (int i = 0; i < 4; i++) { j[i][0] += d; j[4 + i][0] -= 2.0 * d; } }",
        )?,
        &cells,
        op2::Region::InteriorFacets,
        [x.arg_row(&c2n, READ), jump.arg_row(&c2n, INC)],
    )?;
    let mut o = Outputs::new();
    o.dat(&jump)?;
    Ok(o)
}

/// PyOP2's Dat algebra in place on a case's Dats (Dats, scalars, axpy), then an inner product
/// and a norm (reduced over ranks).
fn dat_algebra(rt: &CaseRuntime) -> Result<Outputs> {
    let (nodes, ..) = quads(rt, 20, 13)?;
    let n = nodes.size();
    let x = rt.decl_dat(
        &nodes,
        2,
        &(0..2 * n)
            .map(|i| (i % 17) as f64 - 8.0)
            .collect::<Vec<_>>(),
        "x",
    )?;
    let y = rt.decl_dat(
        &nodes,
        2,
        &(0..2 * n).map(|i| 1.0 + (i % 5) as f64).collect::<Vec<_>>(),
        "y",
    )?;
    let z = rt.decl_dat_zeros::<f64>(&nodes, 2, "z")?;
    let (xl, yl, zl) = (x.op2()?, y.op2()?, z.op2()?);
    zl.copy(&xl)?;
    zl.add_assign(&yl)?;
    zl.mul_scalar_assign(0.5)?;
    zl.axpy(-2.0, &yl)?;
    zl.div_assign(&yl)?;
    let mut o = Outputs::new();
    o.dat(&z)?;
    o.push("inner", &[zl.inner(&xl)?]);
    o.push("norm", &[zl.norm()?]);
    Ok(o)
}

/// Local iteration spaces (PyOP2's `op2.i`): a kernel called per map entry incrementing nodes,
/// and one called per (i, j) block filling each cell's 4 x 4 blocks of 2 x 1 values.
fn local_iteration_space(rt: &CaseRuntime) -> Result<Outputs> {
    let (nodes, cells, _, c2n, _, _) = quads(rt, 9, 7)?;
    let xv: Vec<f64> = (0..nodes.size()).map(|i| (i % 7) as f64 + 0.25).collect();
    let x = rt.decl_dat(&nodes, 1, &xv, "x")?;
    let b = rt.decl_dat_zeros::<f64>(&nodes, 1, "b")?;
    let blocks = rt.decl_dat_zeros::<f64>(&cells, 32, "blocks")?;
    rt.par_loop(
        &k(
            "lis_rhs",
            "void lis_rhs(double *b, const double *x[4], int i) { *b += (i + 1) * (x[0][0] + x[i][0]); }",
        )?,
        &cells,
        [b.arg_entries(&c2n, INC), x.arg_row(&c2n, READ)],
    )?;
    rt.par_loop(
        &k(
            "lis_block",
            "void lis_block(double A[2][1], const double *x[4], int i, int j) {
               A[0][0] += x[i][0] * x[j][0]; A[1][0] += x[i][0] - 2.0 * x[j][0]; }",
        )?,
        &cells,
        [
            blocks.arg(RW).per_entry_block(4, 4, (2, 1)),
            x.arg_row(&c2n, READ),
        ],
    )?;
    // The once-per-element form: a buffer of the four nodes' values, added back.
    let c = rt.decl_dat_zeros::<f64>(&nodes, 1, "c")?;
    rt.par_loop(
        &k(
            "lis_buffer",
            "void lis_buffer(double *c, const double *x[4]) { for (int i = 0; i < 4; i++) c[i] += x[i][0] * (i + 1); }",
        )?,
        &cells,
        [c.arg_buffer(&c2n, INC), x.arg_row(&c2n, READ)],
    )?;
    let mut o = Outputs::new();
    o.dat(&b)?;
    o.dat(&blocks)?;
    o.dat(&c)?;
    Ok(o)
}

/// Mixed spaces: a mixed Dat (nodes with two values, cells with one) through a mixed map (a
/// cell's four nodes, itself), the kernel getting one array of five pointers; and the mixed
/// Dat's norm.
fn mixed_spaces(rt: &CaseRuntime) -> Result<Outputs> {
    let (nodes, cells, _, c2n, _, _) = quads(rt, 8, 6)?;
    let ids: Vec<i32> = (0..cells.size() as i32).collect();
    let c2c = rt.decl_map(&cells, &cells, 1, ids, "c2c")?;
    let nv: Vec<f64> = (0..2 * nodes.size()).map(|i| (i % 9) as f64).collect();
    let cv: Vec<f64> = (0..cells.size()).map(|c| c as f64 * 0.5).collect();
    let un = rt.decl_dat(&nodes, 2, &nv, "un")?;
    let uc = rt.decl_dat(&cells, 1, &cv, "uc")?;
    let w = rt.decl_dat(&nodes, 2, &nv, "w")?;
    let op2rt = rt.runtime();
    let ms = op2rt.decl_mixed_set(&[&nodes.op2()?, &cells.op2()?], "ms")?;
    let mm = op2rt.decl_mixed_map(&ms, &[&c2n.op2()?, &c2c.op2()?], "mm")?;
    let u = op2::MixedDat::from_dats(&ms, vec![un.op2()?, uc.op2()?])?;
    op2rt.par_loop(
        &k(
            "mixed_cell",
            "void mixed_cell(double *x[5], const double *w[4]) {
               double s = w[0][0] + w[1][1] + w[2][0] + w[3][1];
               for (int i = 0; i < 4; i++) { x[i][0] += s * (i + 1); x[i][1] += 1.0; }
               x[4][0] += 0.25 * s; }",
        )?,
        &cells.op2()?,
        [u.arg_row(&mm, INC), w.op2()?.arg_row(&c2n.op2()?, READ)],
    )?;
    let mut o = Outputs::new();
    o.dat(&un)?;
    o.dat(&uc)?;
    o.push("norm", &[u.norm()?]);
    Ok(o)
}

/// Every named case.
pub fn cases() -> Vec<Case> {
    macro_rules! case {
        ($f:ident, $tol:expr, $about:literal) => {
            Case {
                name: stringify!($f),
                about: $about,
                tolerance: $tol,
                run: $f,
            }
        };
    }
    vec![
        case!(direct_write, 0.0, "direct WRITE of a u32 Dat"),
        case!(direct_rw, 0.0, "direct RW of an i32 Dat"),
        case!(direct_dim3_f64, DEVICE_MATH, "direct 3-D f64 Dats, math.h"),
        case!(
            every_dtype_direct,
            0.0,
            "direct RW of f64, f32, i32, u32, i64, u64"
        ),
        case!(
            global_inc_u64,
            0.0,
            "Global INC (u64) onto an initial value"
        ),
        case!(
            global_inc_f64_dim2,
            REORDERED_SUMS,
            "Global INC of dim 2 (f64)"
        ),
        case!(global_min_max_i32, 0.0, "Global MIN and MAX of dim 2 (i32)"),
        case!(
            global_min_max_f32,
            0.0,
            "Global MIN/MAX (f32), a smaller initial MIN stays"
        ),
        case!(
            global_max_all_negative,
            0.0,
            "Global MAX of negatives and INC (i64)"
        ),
        case!(global_read, 0.0, "Global READ"),
        case!(
            zero_size_set,
            0.0,
            "a loop over an empty set changes nothing"
        ),
        case!(
            one_element_set,
            0.0,
            "one-element set, whole-row RW of arity 4"
        ),
        case!(
            indirect_read_chain,
            0.0,
            "READ through a map (edge sums on a chain)"
        ),
        case!(
            indirect_inc_chain,
            REORDERED_SUMS,
            "INC through a map (chain)"
        ),
        case!(indirect_rw_permutation, 0.0, "RW through a permutation"),
        case!(
            indirect_write_permutation,
            0.0,
            "WRITE of dim 2 through a permutation"
        ),
        case!(inc_into_one_element, 0.0, "10,000 elements INC one item"),
        case!(
            set_larger_than_blocks,
            0.0,
            "INC over a set of many blocks (quad mesh)"
        ),
        case!(
            row_read_midpoint,
            0.0,
            "whole-row READ, PyOP2's midpoint example"
        ),
        case!(
            row_inc_cells_to_nodes,
            REORDERED_SUMS,
            "whole-row INC of dim 2, cells to nodes"
        ),
        case!(
            row_rw_gather_scatter,
            0.0,
            "whole-row RW on disjoint rows (u64)"
        ),
        case!(
            two_maps_two_targets,
            REORDERED_SUMS,
            "two maps to two sets, INC into both"
        ),
        case!(
            same_dat_read_and_inc_via_two_maps,
            0.0,
            "READ via one map, INC via another"
        ),
        case!(indirect_i64_and_u32, 0.0, "INC of i64 and u32 through maps"),
        case!(
            indirect_f32_inc,
            REORDERED_SUMS,
            "INC of f32 through four map entries"
        ),
        case!(
            consts_dim1_and_dim4,
            0.0,
            "Consts of dim 1 (f64) and 4 (i32)"
        ),
        case!(
            const_changes_between_loops,
            0.0,
            "a Const changed between loops"
        ),
        case!(
            repeated_args,
            0.0,
            "a Global twice with INC/MIN/MAX, a Dat twice with INC (each arg counts)"
        ),
        case!(
            names_taken_elsewhere,
            REORDERED_SUMS,
            "Consts and kernels named like generated locals and library names"
        ),
        case!(
            wide_increments,
            REORDERED_SUMS,
            "INC of dim 40 through arity-8 rows, and of dim 300 through one entry"
        ),
        case!(
            many_component_globals,
            0.0,
            "Global reductions of 24 and 700 components"
        ),
        case!(
            lazy_chain_of_loops,
            REORDERED_SUMS,
            "three dependent loops run lazily"
        ),
        case!(
            host_writes_between_loops,
            0.0,
            "host writes to Dats and Globals between loops"
        ),
        case!(
            op2_style_args,
            REORDERED_SUMS,
            "op_arg_dat/op_arg_gbl arguments"
        ),
        case!(
            diffusion_time_steps,
            1e-10,
            "20 time steps: flux INC + update with reduction"
        ),
        case!(
            subset_loops,
            REORDERED_SUMS,
            "loops over a subset and a subset of it (PyOP2's Subset)"
        ),
        case!(
            extruded_columns,
            REORDERED_SUMS,
            "extruded columns of different heights: all, bottom and top layers"
        ),
        case!(
            extruded_facets,
            0.0,
            "interior horizontal facets of extruded cells"
        ),
        case!(
            local_iteration_space,
            REORDERED_SUMS,
            "kernels called per map entry and per element-matrix block (op2.i)"
        ),
        case!(
            mixed_spaces,
            REORDERED_SUMS,
            "a mixed Dat through a mixed map: one array of pointers over two sets"
        ),
        case!(
            dat_algebra,
            REORDERED_SUMS,
            "Dat algebra: + * / with Dats and scalars, axpy, inner, norm"
        ),
    ]
}
