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
