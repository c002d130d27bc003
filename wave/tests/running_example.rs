//! Seed 002's running example (the wave equation's seven loops per step) as a test: the pending
//! graph before any optimisation against the seed's figures, at one rank and across thread ranks;
//! what each optimisation removes or fuses, with the counts the seed's future-work figures
//! imply; and results equal with every optimisation on or off, and on one rank or several.

use op2::{LazyOptions, NodeKind, PendingGraph, Runtime};
use op2_test_support::{builder, on_rank_runtimes};
use std::collections::{BTreeSet, HashMap};
use wave::Wave;

/// The seed's final figure (one step, every node, program order) as (name, label) pairs: our
/// labels, in the order our runtime records the nodes. The seed's own labels differ only in
/// `zero(t1)`/`zero(t2)` (ours carry the kernel's name: `zero`).
const FIGURE_NODES: [(&str, &str); 17] = [
    ("DT1", "phi_expr[core,owned]"),
    ("Z1", "zero[core,owned]"),
    ("A1a2", "HaloSend(v)"),
    ("A1a1", "HaloSend(phi)"),
    ("A1b", "assemble1[core]"),
    ("A1c2", "HaloRecv(v)"),
    ("A1c1", "HaloRecv(phi)"),
    ("A1d", "assemble1[owned]"),
    ("Z2", "zero[core,owned]"),
    ("A2a2", "HaloSend(v)"),
    ("A2a1", "HaloSend(phi)"),
    ("A2b", "assemble2[core]"),
    ("A2c2", "HaloRecv(v)"),
    ("A2c1", "HaloRecv(phi)"),
    ("A2d", "assemble2[owned]"),
    ("P", "p_expr[core,owned]"),
    ("DT2", "phi_expr[core,owned]"),
];

/// The seed's final figure's edges, as it draws them, plus `A1c1 -> A1d`: the figure leaves it
/// out, but its first figure draws it (`c6 -> c8`) and its table says why (assemble1 over the
/// owned elements reads the halo of `phi` that the receive writes).
const FIGURE_EDGES: &[(&str, &str)] = &[
    ("Z2", "A2b"),
    ("A2b", "A2d"),
    ("DT1", "A2b"),
    ("DT1", "A1a1"),
    ("A1a1", "A1c1"),
    ("A1c1", "A2a1"),
    ("A2a1", "A2c1"),
    ("A2c1", "A2d"),
    ("DT1", "A1b"),
    ("A1a2", "A1c2"),
    ("A1c2", "A2a2"),
    ("A2a2", "A2c2"),
    ("A2c2", "A2d"),
    ("Z1", "A1b"),
    ("A1b", "A1d"),
    ("A1d", "A2c2"),
    ("A1d", "A2c1"),
    ("A1c2", "A1d"),
    ("A2d", "P"),
    ("P", "DT2"),
    // Left out of the final figure; drawn in the first.
    ("A1c1", "A1d"),
];

/// The edges of `g` among its first `FIGURE_NODES.len()` nodes, named by the figure.
fn named_edges(g: &PendingGraph, offset: usize) -> BTreeSet<(&'static str, &'static str)> {
    let n = FIGURE_NODES.len();
    g.edges
        .iter()
        .filter(|(a, b)| (offset..offset + n).contains(a) && (offset..offset + n).contains(b))
        .map(|&(a, b)| (FIGURE_NODES[a - offset].0, FIGURE_NODES[b - offset].0))
        .collect()
}

fn run_steps(rt: &Runtime, n: usize, steps: usize) -> (Wave, Vec<f64>) {
    let w = Wave::new(rt, n).expect("wave");
    for _ in 0..steps {
        w.step().expect("step");
        // The seed's program writes p and phi out every step: that forces the step.
        w.p.to_vec().expect("p");
        w.phi.to_vec().expect("phi");
    }
    let e = w.energy().expect("energy");
    (w, vec![e])
}

fn opts(o: LazyOptions) -> impl Fn() -> op2::RuntimeBuilder + Sync {
    move || builder().lazy_optimisations(o)
}

#[test]
fn running_example_graph_on_one_rank() {
    let rt = builder()
        .lazy_optimisations(LazyOptions::NONE)
        .build()
        .unwrap();
    let w = Wave::new(&rt, 8).unwrap();
    for step in 0..2 {
        w.step().unwrap();
        let g = rt.pending_graph();
        let labels: Vec<&str> = g.nodes.iter().map(|n| n.label.as_str()).collect();
        // One process: no halos, so no exchanges, and each loop is one node over all of its set.
        assert_eq!(
            labels,
            [
                "phi_expr[core,owned]",
                "zero[core,owned]",
                "assemble1[core,owned]",
                "zero[core,owned]",
                "assemble2[core,owned]",
                "p_expr[core,owned]",
                "phi_expr[core,owned]",
            ],
            "step {step}"
        );
        // The figure's dependencies that remain without halos (the seed's rule: phi_expr feeds
        // both assemblies, each zeroing its own, both assemblies p_expr, p_expr phi_expr).
        let edges: BTreeSet<(usize, usize)> = g.edges.iter().copied().collect();
        let want: BTreeSet<(usize, usize)> =
            [(0, 2), (0, 4), (1, 2), (3, 4), (2, 5), (4, 5), (5, 6)]
                .into_iter()
                .collect();
        assert_eq!(edges, want, "step {step}:\n{}", g.to_dot());
        // Reading p runs what p needs: all but the second phi_expr, which phi's read runs.
        w.p.to_vec().unwrap();
        assert_eq!(rt.pending_graph().count("phi_expr[core,owned]"), 1);
        w.phi.to_vec().unwrap();
        assert!(rt.pending_graph().nodes.is_empty());
    }
}

#[test]
fn running_example_graph_across_ranks_is_the_seeds() {
    for ranks in [2, 3] {
        let graphs = on_rank_runtimes(ranks, opts(LazyOptions::NONE), |_, rt| {
            // n = 2: three vertex rows; on three ranks every rank has one row and no core.
            let w = Wave::new(&rt, 2).unwrap();
            let mut seen = Vec::new();
            for _ in 0..2 {
                w.step().unwrap();
                seen.push(rt.pending_graph());
                w.phi.to_vec().unwrap();
                w.p.to_vec().unwrap();
            }
            // Two steps recorded before anything runs: the second joins the first.
            w.step().unwrap();
            w.step().unwrap();
            seen.push(rt.pending_graph());
            rt.flush().unwrap();
            seen
        });
        // Every rank records the same graph, whatever its section sizes.
        for g in &graphs[1..] {
            assert_eq!(g, &graphs[0], "{ranks} ranks");
        }
        for (k, g) in graphs[0].iter().enumerate() {
            let labels: Vec<&str> = g.nodes.iter().map(|n| n.label.as_str()).collect();
            let want: Vec<&str> = FIGURE_NODES.iter().map(|n| n.1).collect();
            assert_eq!(&labels[..17], &want[..], "graph {k}, {ranks} ranks");
            let expected: BTreeSet<(&str, &str)> = FIGURE_EDGES.iter().copied().collect();
            assert_eq!(
                named_edges(g, 0),
                expected,
                "graph {k}, {ranks} ranks:\n{}",
                g.to_dot()
            );
        }
        // Two steps pending: the second step's nodes form the same figure.
        let two = &graphs[0][2];
        assert_eq!(two.nodes.len(), 34);
        let expected: BTreeSet<(&str, &str)> = FIGURE_EDGES.iter().copied().collect();
        assert_eq!(named_edges(two, 17), expected, "{}", two.to_dot());
    }
}

/// Per step (the second, after a first that ran), on two ranks: exchange nodes, exchanges removed
/// early and as successive, sibling and chain fusions, temporaries reused.
fn second_step_counts(o: LazyOptions) -> [u64; 6] {
    let counts = on_rank_runtimes(2, opts(o), |_, rt| {
        let w = Wave::new(&rt, 6).unwrap();
        w.step().unwrap();
        rt.flush().unwrap();
        let before = rt.lazy_stats();
        w.step().unwrap();
        let sends = rt.pending_graph().count_kind(NodeKind::HaloSend) as u64;
        rt.flush().unwrap();
        let s = rt.lazy_stats();
        [
            sends,
            s.early_exchanges_removed - before.early_exchanges_removed,
            s.successive_exchanges_removed - before.successive_exchanges_removed,
            s.sibling_fusions - before.sibling_fusions,
            s.chain_fusions - before.chain_fusions,
            s.temporaries_reused - before.temporaries_reused,
        ]
    });
    assert_eq!(counts[0], counts[1], "both ranks do the same");
    counts[0]
}

#[test]
fn running_example_optimisations_remove_what_the_seed_says() {
    let only = |name: &str| -> LazyOptions { format!("none,{name}").parse().unwrap() };
    // Before any optimisation: v and phi exchanged for each assembly.
    assert_eq!(second_step_counts(LazyOptions::NONE), [4, 0, 0, 0, 0, 0]);
    // Early halo skip: v's halo is up to date since the exchange that ran in step 1 (the seed's
    // figure removes assemble1's; assemble2's goes too, as nothing pending exchanges v then).
    assert_eq!(second_step_counts(only("early_halo")), [2, 2, 0, 0, 0, 0]);
    // Successive exchanges: assemble2's exchanges of v and of phi follow assemble1's with no
    // write in between (the seed's figure marks v's; its rule takes phi's too).
    assert_eq!(
        second_step_counts(only("successive_halo")),
        [2, 0, 2, 0, 0, 0]
    );
    // Sibling fusion: phi_expr and both zeroings are independent loops over the vertices.
    assert_eq!(
        second_step_counts(only("sibling_fusion")),
        [4, 0, 0, 2, 0, 0]
    );
    // Direct-chain fusion: p_expr then phi_expr.
    assert_eq!(second_step_counts(only("chain_fusion")), [4, 0, 0, 0, 1, 0]);
    // Temporaries: t1 and t2 of step 2 reuse step 1's memory.
    assert_eq!(second_step_counts(only("temporaries")), [4, 0, 0, 0, 0, 2]);
    // All of them: one exchange (phi, once) per step; the seed's hypothetical graph.
    assert_eq!(second_step_counts(LazyOptions::ALL), [1, 2, 1, 2, 1, 2]);
}

#[test]
fn running_example_results_do_not_depend_on_optimisations_or_ranks() {
    let n = 12;
    let steps = 5;
    let reference = {
        let rt = builder().lazy(false).build().unwrap();
        let (w, e) = run_steps(&rt, n, steps);
        (w.p.to_vec().unwrap(), w.phi.to_vec().unwrap(), e)
    };
    for o in [LazyOptions::NONE, LazyOptions::ALL] {
        let rt = builder().lazy_optimisations(o).build().unwrap();
        let (w, e) = run_steps(&rt, n, steps);
        // One process, a host backend: the same bits, fused or not.
        assert_eq!(w.p.to_vec().unwrap(), reference.0, "{o:?}");
        assert_eq!(w.phi.to_vec().unwrap(), reference.1, "{o:?}");
        assert_eq!(e, reference.2);
    }
    for ranks in [2, 3] {
        for o in [LazyOptions::NONE, LazyOptions::ALL] {
            let got = on_rank_runtimes(ranks, opts(o), |_, rt| {
                let (w, e) = run_steps(&rt, n, steps);
                let ids = wave::mesh::LocalGrid::new(n, ranks, rt.communicator().rank());
                let owned = w.vertices.size();
                let p = w.p.to_vec().unwrap();
                let values: HashMap<u64, f64> = ids.global_ids[..owned]
                    .iter()
                    .zip(&p)
                    .map(|(g, v)| (*g, *v))
                    .collect();
                (values, e)
            });
            let mut p = HashMap::new();
            for (values, e) in &got {
                p.extend(values.iter().map(|(k, v)| (*k, *v)));
                // The energy is summed across ranks: the same on each, and (to rounding) one
                // process's.
                assert!((e[0] - reference.2[0]).abs() <= 1e-12 * reference.2[0].abs());
            }
            assert_eq!(p.len(), reference.0.len());
            for (g, v) in p {
                // Each vertex's value does not depend on the partition: the same bits.
                assert_eq!(
                    v, reference.0[g as usize],
                    "vertex {g}, {ranks} ranks, {o:?}"
                );
            }
        }
    }
}
