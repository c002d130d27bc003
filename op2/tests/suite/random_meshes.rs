//! Property tests: random meshes and loops on the reference backend against the same computation done
//! independently in plain Rust.

use op2::{INC, Kernel, MAX, MIN, READ, WRITE};
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
    fn from_small(v: i32) -> Self;
    fn mul(self, o: Self) -> Self;
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
}

macro_rules! row_value {
    ($t:ty, $c:expr, float) => {
        impl RowValue for $t {
            const C: &'static str = $c;
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
        }
    };
    ($t:ty, $c:expr, int) => {
        impl RowValue for $t {
            const C: &'static str = $c;
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
        }
    };
}
row_value!(f64, "double", float);
row_value!(f32, "float", float);
row_value!(i32, "int32_t", int);
row_value!(i64, "int64_t", int);

/// Two rows read and two incremented through one map (the same Dat twice, at the first and last
/// slot, as Airfoil's `res_calc` does), with SIMD batches on or off, and the row transposes by
/// shuffles or (`shuffles` false) by plain loops; the Dats' values after the loop.
fn rows_loop<T: RowValue>(
    m: &RandomMesh,
    simd: bool,
    shuffles: bool,
    dim: usize,
) -> (Vec<T>, Vec<T>) {
    let mut builder = op2_test_support::builder().simd(simd);
    if !shuffles {
        builder = builder.cflags(["-DOP2_NO_SHUFFLES"]);
    }
    let rt = builder.build().expect("runtime on the suite's backend");
    let a = m.arity;
    let nodes = rt.decl_set(m.nodes, "nodes").unwrap();
    let edges = rt.decl_set(m.edges, "edges").unwrap();
    let e2n = rt
        .decl_map(&edges, &nodes, a, m.map.clone(), "e2n")
        .unwrap();
    let small = |i: usize| T::from_small((i as i32 * 37 + 11) % 101 - 50);
    let v: Vec<T> = (0..m.nodes * dim).map(small).collect();
    let w: Vec<T> = (0..m.edges * dim).map(|i| small(i + 5)).collect();
    let acc0: Vec<T> = (0..m.nodes * dim).map(|i| small(i + 3)).collect();
    let v = rt.decl_dat(&nodes, dim, &v, "v").unwrap();
    let w = rt.decl_dat(&edges, dim, &w, "w").unwrap();
    let acc = rt.decl_dat(&nodes, dim, &acc0, "acc").unwrap();
    let t = T::C;
    let k = Kernel::new(
        "rows",
        &format!(
            "void rows(const {t} *p, const {t} *q, const {t} *w, {t} *x, {t} *y) {{
               for (int k = 0; k < {dim}; k++) {{ x[k] += p[k] * w[k]; y[k] += q[k] - w[k]; }} }}"
        ),
    )
    .unwrap();
    let last = a - 1;
    rt.par_loop(
        &k,
        &edges,
        [
            v.arg_via(&e2n, m.index, READ),
            v.arg_via(&e2n, last, READ),
            w.arg(READ),
            acc.arg_via(&e2n, 0, INC),
            acc.arg_via(&e2n, last, INC),
        ],
    )
    .unwrap();
    (v.to_vec().unwrap(), acc.to_vec().unwrap())
}

/// The same loop in plain Rust, element by element and arg by arg.
fn rows_expected<T: RowValue>(m: &RandomMesh, dim: usize) -> Vec<T> {
    let small = |i: usize| T::from_small((i as i32 * 37 + 11) % 101 - 50);
    let v: Vec<T> = (0..m.nodes * dim).map(small).collect();
    let w: Vec<T> = (0..m.edges * dim).map(|i| small(i + 5)).collect();
    let mut acc: Vec<T> = (0..m.nodes * dim).map(|i| small(i + 3)).collect();
    let a = m.arity;
    for e in 0..m.edges {
        let (p, q) = (
            m.map[e * a + m.index] as usize,
            m.map[e * a + a - 1] as usize,
        );
        let (x, y) = (m.map[e * a] as usize, q);
        for k in 0..dim {
            acc[x * dim + k] = acc[x * dim + k].add(v[p * dim + k].mul(w[e * dim + k]));
            acc[y * dim + k] = acc[y * dim + k].add(v[q * dim + k].sub(w[e * dim + k]));
        }
    }
    acc
}

fn rows_case<T: RowValue>(m: &RandomMesh, dim: usize) -> Result<(), TestCaseError> {
    let expected = rows_expected::<T>(m, dim);
    // The host backends' C compiler also runs the transposes spelled as plain loops.
    let host = ["seq", "openmp"].contains(&op2_test_support::backend().as_str());
    for (simd, shuffles) in [(true, true), (true, !host), (false, true)] {
        let (_, acc) = rows_loop::<T>(m, simd, shuffles, dim);
        prop_assert_eq!(
            &acc,
            &expected,
            "{} dim {} simd {} shuffles {}",
            T::C,
            dim,
            simd,
            shuffles
        );
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    /// Rows of 2 and 4 components move between the Dats and the SIMD batches' lanes whole,
    /// transposed by shuffles; other dims one component at a time. Every dim, four dtypes, set
    /// sizes around the batch width, lanes incrementing one node: the same bits as plain Rust
    /// adding element by element, with batches on and off.
    #[test]
    fn row_transposes_match_plain_rust(
        m in random_mesh(),
        dim in prop::sample::select(vec![1usize, 2, 3, 4, 5, 8]),
        dtype in 0..4,
    ) {
        match dtype {
            0 => rows_case::<f64>(&m, dim)?,
            1 => rows_case::<f32>(&m, dim)?,
            2 => rows_case::<i32>(&m, dim)?,
            _ => rows_case::<i64>(&m, dim)?,
        }
    }
}
