//! Property tests: random meshes and loops on the reference backend against the same computation done
//! independently in plain Rust.

use op2::{INC, Kernel, MAX, MIN, READ, TilingMode, WRITE};
use proptest::prelude::*;

#[derive(Debug, Clone)]
struct RandomMesh {
    nodes: usize,
    edges: usize,
    arity: usize,
    dim: usize,
    map: Vec<i32>,
    weights: Vec<f64>,
    node_values: Vec<f64>,
    index: usize,
}

fn random_mesh() -> impl Strategy<Value = RandomMesh> {
    (1usize..40, 0usize..60, 1usize..=4, 1usize..=3).prop_flat_map(|(nodes, edges, arity, dim)| {
        (
            prop::collection::vec(0..nodes as i32, edges * arity),
            prop::collection::vec(-50i32..50, edges * dim),
            prop::collection::vec(-50i32..50, nodes * dim),
            0..arity,
        )
            .prop_map(move |(map, w, v, index)| RandomMesh {
                nodes,
                edges,
                arity,
                dim,
                map,
                weights: w.into_iter().map(f64::from).collect(),
                node_values: v.into_iter().map(f64::from).collect(),
                index,
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn random_loops_match_plain_rust(m in random_mesh(), lazy in any::<bool>()) {
        let rt = op2_test_support::rt_lazy(lazy);
        let (a, d) = (m.arity, m.dim);
        let nodes = rt.decl_set(m.nodes, "nodes").unwrap();
        let edges = rt.decl_set(m.edges, "edges").unwrap();
        let e2n = rt.decl_map(&edges, &nodes, a, m.map.clone(), "e2n").unwrap();
        let w = rt.decl_dat(&edges, d, &m.weights, "w").unwrap();
        let v = rt.decl_dat(&nodes, d, &m.node_values, "v").unwrap();
        let acc = rt.decl_dat_zeros::<f64>(&nodes, d, "acc").unwrap();
        let gathered = rt.decl_dat_zeros::<f64>(&edges, d, "gathered").unwrap();
        let picked = rt.decl_dat_zeros::<f64>(&nodes, d, "picked").unwrap();
        let total = rt.decl_global(d, &vec![0.0; d], "total").unwrap();
        let lo = rt.decl_global(1, &[f64::INFINITY], "lo").unwrap();
        let hi = rt.decl_global(1, &[f64::NEG_INFINITY], "hi").unwrap();

        // Whole-row INC: node[map[e][j]] += w[e] * (j + 1).
        let scatter = Kernel::new("scatter", &format!(
            "void scatter(const double *w, double *n[{a}]) {{
               for (int j = 0; j < {a}; j++) for (int k = 0; k < {d}; k++) n[j][k] += w[k] * (j + 1); }}")).unwrap();
        rt.par_loop(&scatter, &edges, [w.arg(READ), acc.arg_row(&e2n, INC)]).unwrap();

        // Whole-row READ into a direct WRITE, plus global reductions.
        let gather = Kernel::new("gather", &format!(
            "void gather(double *const *n, double *out, double *t, double *lo, double *hi) {{
               for (int k = 0; k < {d}; k++) {{ out[k] = 0.0;
                 for (int j = 0; j < {a}; j++) out[k] += n[j][k];
                 t[k] += out[k]; if (out[k] < *lo) *lo = out[k]; if (out[k] > *hi) *hi = out[k]; }} }}")).unwrap();
        rt.par_loop(&gather, &edges,
            [v.arg_row(&e2n, READ), gathered.arg(WRITE), total.arg(INC), lo.arg(MIN), hi.arg(MAX)]).unwrap();

        // One map entry, INC.
        let pick = Kernel::new("pick", &format!(
            "void pick(const double *w, double *n) {{ for (int k = 0; k < {d}; k++) n[k] += w[k]; }}")).unwrap();
        rt.par_loop(&pick, &edges, [w.arg(READ), picked.arg_via(&e2n, m.index, INC)]).unwrap();

        // The same in plain Rust.
        let mut e_acc = vec![0.0; m.nodes * d];
        let mut e_gathered = vec![0.0; m.edges * d];
        let mut e_picked = vec![0.0; m.nodes * d];
        let mut e_total = vec![0.0; d];
        let (mut e_lo, mut e_hi) = (f64::INFINITY, f64::NEG_INFINITY);
        for e in 0..m.edges {
            for j in 0..a {
                let n = m.map[e * a + j] as usize;
                for k in 0..d {
                    e_acc[n * d + k] += m.weights[e * d + k] * (j + 1) as f64;
                    e_gathered[e * d + k] += m.node_values[n * d + k];
                }
            }
            for k in 0..d {
                let g = e_gathered[e * d + k];
                e_total[k] += g;
                e_lo = e_lo.min(g);
                e_hi = e_hi.max(g);
                e_picked[m.map[e * a + m.index] as usize * d + k] += m.weights[e * d + k];
            }
        }
        // Small integers: every sum is exact, whatever the order.
        prop_assert_eq!(acc.to_vec().unwrap(), e_acc);
        prop_assert_eq!(gathered.to_vec().unwrap(), e_gathered);
        prop_assert_eq!(picked.to_vec().unwrap(), e_picked);
        prop_assert_eq!(total.value().unwrap(), e_total);
        prop_assert_eq!(lo.value().unwrap(), vec![e_lo]);
        prop_assert_eq!(hi.value().unwrap(), vec![e_hi]);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    /// Loops the host wrappers run in SIMD batches (indirect reads, direct writes, Globals read):
    /// every set size around the batch width, several dtypes, a branch and a square root per
    /// element, against plain Rust.
    #[test]
    fn batched_gathers_match_plain_rust(m in random_mesh(), scale in -4i32..4) {
        let rt = op2_test_support::rt();
        let (a, d) = (m.arity, m.dim);
        let nodes = rt.decl_set(m.nodes, "nodes").unwrap();
        let edges = rt.decl_set(m.edges, "edges").unwrap();
        let e2n = rt.decl_map(&edges, &nodes, a, m.map.clone(), "e2n").unwrap();
        let v = rt.decl_dat(&nodes, d, &m.node_values, "v").unwrap();
        let vi: Vec<i32> = m.node_values.iter().map(|&x| x as i32).collect();
        let v32 = rt.decl_dat(&nodes, d, &vi, "v32").unwrap();
        let w = rt.decl_dat(&edges, d, &m.weights, "w").unwrap();
        let out = rt.decl_dat_zeros::<f64>(&edges, d, "out").unwrap();
        let outi = rt.decl_dat_zeros::<i32>(&edges, 1, "outi").unwrap();
        let g = rt.decl_global(1, &[f64::from(scale)], "g").unwrap();
        let last = a - 1;
        let k = Kernel::new("pair", &format!(
            "void pair(const double *p, const double *q, const int *pi, const double *w, double *o, int *oi, const double *g) {{
               int s = 0;
               for (int k = 0; k < {d}; k++) {{
                 double x = p[k] - q[k];
                 o[k] = (x > 0.0 ? sqrt(x * x) : w[k]) * g[0];
                 s += pi[k];
               }}
               *oi = s; }}")).unwrap();
        rt.par_loop(&k, &edges, [
            v.arg_via(&e2n, 0, READ),
            v.arg_via(&e2n, last, READ),
            v32.arg_via(&e2n, m.index, READ),
            w.arg(READ),
            out.arg(WRITE),
            outi.arg(WRITE),
            g.arg(READ),
        ]).unwrap();
        let mut e_out = vec![0.0; m.edges * d];
        let mut e_outi = vec![0i32; m.edges];
        for e in 0..m.edges {
            let (p, q) = (m.map[e * a] as usize, m.map[e * a + last] as usize);
            let r = m.map[e * a + m.index] as usize;
            for k in 0..d {
                let x = m.node_values[p * d + k] - m.node_values[q * d + k];
                e_out[e * d + k] = if x > 0.0 { x } else { m.weights[e * d + k] } * f64::from(scale);
                e_outi[e] += vi[r * d + k];
            }
        }
        prop_assert_eq!(out.to_vec().unwrap(), e_out);
        prop_assert_eq!(outi.to_vec().unwrap(), e_outi);
    }
}

/// Values for [`row_transposes_match_plain_rust`], with the arithmetic the kernel does on them
/// (wrapping for integers, so that plain Rust and C agree on every bit).
trait RowValue: op2::Scalar + Copy + PartialEq + std::fmt::Debug {
    const C: &'static str;
    /// The relative rounding of one addition: 0 for integers, whose sums are exact in any order.
    const EPS: f64;
    fn from_small(v: i32) -> Self;
    fn mul(self, o: Self) -> Self;
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn magnitude(self) -> f64;
    fn as_f64(self) -> f64;
}

macro_rules! row_value {
    ($t:ty, $c:expr, float) => {
        impl RowValue for $t {
            const C: &'static str = $c;
            const EPS: f64 = <$t>::EPSILON as f64;
            // Sevenths: sums of them round, so a changed order of additions shows.
            fn from_small(v: i32) -> Self {
                v as $t / 7.0
            }
            fn mul(self, o: Self) -> Self {
                self * o
            }
            fn add(self, o: Self) -> Self {
                self + o
            }
            fn sub(self, o: Self) -> Self {
                self - o
            }
            fn magnitude(self) -> f64 {
                f64::from(self).abs()
            }
            fn as_f64(self) -> f64 {
                f64::from(self)
            }
        }
    };
    ($t:ty, $c:expr, int) => {
        impl RowValue for $t {
            const C: &'static str = $c;
            const EPS: f64 = 0.0;
            // Negative values wrap for the unsigned types: large values, still exact.
            fn from_small(v: i32) -> Self {
                v as $t
            }
            fn mul(self, o: Self) -> Self {
                self.wrapping_mul(o)
            }
            fn add(self, o: Self) -> Self {
                self.wrapping_add(o)
            }
            fn sub(self, o: Self) -> Self {
                self.wrapping_sub(o)
            }
            fn magnitude(self) -> f64 {
                0.0
            }
            fn as_f64(self) -> f64 {
                self as f64
            }
        }
    };
}
row_value!(f64, "double", float);
row_value!(f32, "float", float);
row_value!(i32, "int32_t", int);
row_value!(i64, "int64_t", int);
row_value!(u32, "uint32_t", int);
row_value!(u64, "uint64_t", int);

/// How [`rows_loop`] runs: SIMD batches on or off, the row transposes by shuffles or (`shuffles`
/// false) by plain loops, and tiled (a chain of two loops in tiles of this many elements) or not.
#[derive(Debug, Clone, Copy)]
struct RowsRun {
    simd: bool,
    shuffles: bool,
    tile: Option<usize>,
}

/// The kernel of [`rows_loop`]: two rows read, one direct row, two rows incremented.
fn rows_kernel<T: RowValue>(dim: usize) -> Kernel {
    let t = T::C;
    Kernel::new(
        "rows",
        &format!(
            "void rows(const {t} *p, const {t} *q, const {t} *w, {t} *x, {t} *y) {{
               for (int k = 0; k < {dim}; k++) {{ x[k] += p[k] * w[k]; y[k] += q[k] - w[k]; }} }}"
        ),
    )
    .unwrap()
}

/// The starting values of [`rows_loop`]'s Dats: `v` on nodes, `w` on edges, the increments'
/// targets `acc` and (tiled) `out` on nodes.
fn rows_start<T: RowValue>(m: &RandomMesh, dim: usize) -> [Vec<T>; 4] {
    let small = |i: usize| T::from_small((i as i32 * 37 + 11) % 101 - 50);
    [
        (0..m.nodes * dim).map(small).collect(),
        (0..m.edges * dim).map(|i| small(i + 5)).collect(),
        (0..m.nodes * dim).map(|i| small(i + 3)).collect(),
        (0..m.nodes * dim).map(|i| small(i + 7)).collect(),
    ]
}

/// Two rows read and two incremented through one map (the same Dat twice, at the first and last
/// slot, as Airfoil's `res_calc` does); tiled, a second loop then reads the incremented Dat through
/// the map and increments a third. The incremented Dat's values after the loop (the third's, tiled).
fn rows_loop<T: RowValue>(m: &RandomMesh, run: RowsRun, dim: usize) -> Vec<T> {
    let mut builder = op2_test_support::builder().simd(run.simd);
    if !run.shuffles {
        builder = builder.cflags(["-DOP2_NO_SHUFFLES"]);
    }
    if let Some(tile) = run.tile {
        builder = builder.tiling(TilingMode::Always).tile_size(tile);
    }
    let rt = builder.build().expect("runtime on the suite's backend");
    let a = m.arity;
    let nodes = rt.decl_set(m.nodes, "nodes").unwrap();
    let edges = rt.decl_set(m.edges, "edges").unwrap();
    let e2n = rt
        .decl_map(&edges, &nodes, a, m.map.clone(), "e2n")
        .unwrap();
    let [v, w, acc, out] = rows_start::<T>(m, dim);
    let v = rt.decl_dat(&nodes, dim, &v, "v").unwrap();
    let w = rt.decl_dat(&edges, dim, &w, "w").unwrap();
    let acc = rt.decl_dat(&nodes, dim, &acc, "acc").unwrap();
    let k = rows_kernel::<T>(dim);
    let last = a - 1;
    let step = |from: &op2::Dat<T>, to: &op2::Dat<T>| {
        rt.par_loop(
            &k,
            &edges,
            [
                from.arg_via(&e2n, m.index, READ),
                from.arg_via(&e2n, last, READ),
                w.arg(READ),
                to.arg_via(&e2n, 0, INC),
                to.arg_via(&e2n, last, INC),
            ],
        )
        .unwrap();
    };
    step(&v, &acc);
    if run.tile.is_none() {
        return acc.to_vec().unwrap();
    }
    let out = rt.decl_dat(&nodes, dim, &out, "out").unwrap();
    step(&acc, &out);
    let out = out.to_vec().unwrap();
    if matches!(rt.backend_name(), "seq" | "openmp") && run.tile.is_some_and(|t| m.edges > t) {
        // The chain did run in tiles (one tile would be no tiling), through element lists
        // where runs are short.
        let s = rt.lazy_stats();
        assert_eq!((s.tiled_chains, s.tiled_loops), (1, 2), "{s:?}");
    }
    out
}

/// One loop of [`rows_loop`] in plain Rust, element by element and arg by arg; beside each sum,
/// how many additions made it and the magnitudes of its start and terms together (the scale of
/// its rounding in another order).
fn rows_step<T: RowValue>(
    m: &RandomMesh,
    dim: usize,
    v: &[T],
    w: &[T],
    acc: &mut [T],
) -> (Vec<f64>, Vec<f64>) {
    let a = m.arity;
    let mut adds = vec![0.0; acc.len()];
    let mut size: Vec<f64> = acc.iter().map(|x| x.magnitude()).collect();
    for e in 0..m.edges {
        let (p, q) = (
            m.map[e * a + m.index] as usize,
            m.map[e * a + a - 1] as usize,
        );
        let (x, y) = (m.map[e * a] as usize, q);
        for k in 0..dim {
            let dx = v[p * dim + k].mul(w[e * dim + k]);
            let dy = v[q * dim + k].sub(w[e * dim + k]);
            acc[x * dim + k] = acc[x * dim + k].add(dx);
            acc[y * dim + k] = acc[y * dim + k].add(dy);
            for (i, d) in [(x * dim + k, dx), (y * dim + k, dy)] {
                adds[i] += 1.0;
                size[i] += d.magnitude();
            }
        }
    }
    (adds, size)
}

/// [`rows_loop`] in plain Rust: the values and, for each, how far another order of additions may
/// move it (0 for integers).
fn rows_expected<T: RowValue>(m: &RandomMesh, dim: usize, tiled: bool) -> (Vec<T>, Vec<f64>) {
    let [v, w, mut acc, mut out] = rows_start::<T>(m, dim);
    let (adds, size) = rows_step(m, dim, &v, &w, &mut acc);
    let slack: Vec<f64> = (0..acc.len()).map(|i| adds[i] * size[i] * T::EPS).collect();
    if !tiled {
        return (acc, slack);
    }
    let (adds2, size2) = rows_step(m, dim, &acc, &w, &mut out);
    // Each term of the second loop carries its input's error times at most the largest weight
    // (50/7).
    let carried = 8.0 * slack.iter().cloned().fold(0.0, f64::max);
    let slack2 = (0..out.len())
        .map(|i| adds2[i] * (size2[i] * T::EPS + carried))
        .collect();
    (out, slack2)
}

fn rows_case<T: RowValue>(m: &RandomMesh, dim: usize, tile: usize) -> Result<(), TestCaseError> {
    let backend = op2_test_support::backend();
    // The sequential backend adds a node's increments in element order, as plain Rust does, so
    // its sums keep every bit. OpenMP's threads run a plan's block colours one after another, and
    // a block of an earlier colour may come later in element order (greedy colouring gives block
    // 2 colour 0 when it meets only block 1, of colour 1): a node shared by such blocks gets their
    // increments in colour order, which rounds differently (seen with three threads and blocks of
    // 16). Within a block, and with one block, the order is the elements'. The device backends add
    // in their own order.
    let host = ["seq", "openmp"].contains(&backend.as_str());
    let element_order = backend == "seq";
    let mut runs = vec![
        RowsRun {
            simd: true,
            shuffles: true,
            tile: None,
        },
        RowsRun {
            simd: false,
            shuffles: true,
            tile: None,
        },
    ];
    if host {
        // The host backends' C compiler also runs the transposes spelled as plain loops, and
        // they run element lists (tiles) through the batches.
        runs.push(RowsRun {
            simd: true,
            shuffles: false,
            tile: None,
        });
        runs.push(RowsRun {
            simd: true,
            shuffles: true,
            tile: Some(tile),
        });
        runs.push(RowsRun {
            simd: true,
            shuffles: false,
            tile: Some(tile),
        });
    }
    for run in runs {
        let (expected, slack) = rows_expected::<T>(m, dim, run.tile.is_some());
        let got = rows_loop::<T>(m, run, dim);
        // Tiles run a loop's elements in another order, and so do the device backends.
        let exact = element_order && run.tile.is_none();
        let agree = |(i, (g, e)): (usize, (&T, &T))| {
            g == e || (!exact && (g.as_f64() - e.as_f64()).abs() <= 2.0 * slack[i])
        };
        prop_assert!(
            got.len() == expected.len() && got.iter().zip(&expected).enumerate().all(agree),
            "{} dim {} {:?}: got {:?}, plain Rust {:?}",
            T::C,
            dim,
            run,
            got,
            expected
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Rows of 2 and 4 components move between the Dats and the SIMD batches' lanes whole,
    /// transposed by shuffles; other dims one component at a time. Every dim, six dtypes, set
    /// sizes around the batch width, lanes incrementing one node, and element lists (tiles of a
    /// chain of two such loops): the same bits as plain Rust adding element by element (within
    /// rounding for floats added in another order), with batches on and off.
    #[test]
    fn row_transposes_match_plain_rust(
        m in random_mesh(),
        dim in prop::sample::select(vec![1usize, 2, 3, 4, 5, 8]),
        dtype in 0..6,
        tile in 1usize..24,
    ) {
        match dtype {
            0 => rows_case::<f64>(&m, dim, tile)?,
            1 => rows_case::<f32>(&m, dim, tile)?,
            2 => rows_case::<i32>(&m, dim, tile)?,
            3 => rows_case::<i64>(&m, dim, tile)?,
            4 => rows_case::<u32>(&m, dim, tile)?,
            _ => rows_case::<u64>(&m, dim, tile)?,
        }
    }
}
