//! What a program can see of the lazy graph without forcing it: the pending graph (nodes labelled
//! as seed 002's figures label them, edges as its figures draw them, Graphviz dot), and the
//! handle `par_loop` returns, which says whether its loop is still pending.

use super::shared::RuntimeShared;
use super::steps::Step;
use super::sync::lock;
use crate::model::error::Result;
use crate::model::trace::Graph;
use std::collections::HashMap;
use std::fmt::Write as _;
use std::sync::{Arc, Weak};

/// What a node of the pending graph does.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum NodeKind {
    /// A loop over part of its set. (Loops are fused when forced, so the pending graph shows
    /// each on its own.)
    Loop,
    /// Sends a Dat's owned rows that other ranks hold as halo, and posts the receives.
    HaloSend,
    /// Waits for a Dat's halo rows and writes them.
    HaloRecv,
    /// A step of combining Globals across ranks.
    Reduction,
    /// A temporary Dat given memory.
    Malloc,
    /// A temporary Dat's memory given back.
    Free,
}

/// One node of the pending graph.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GraphNode {
    /// Its number (program order).
    pub id: u64,
    /// Its label: `assemble1[core]`, `phi_expr[core,owned]`, `HaloSend(phi)`, `malloc(t1)`.
    pub label: String,
    /// What it does.
    pub kind: NodeKind,
}

/// A snapshot of the pending graph ([`crate::Runtime::pending_graph`]).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PendingGraph {
    /// The pending nodes in program order.
    pub nodes: Vec<GraphNode>,
    /// Dependency edges `(from, to)` as positions in `nodes`, with those implied by others left
    /// out (the transitive reduction: seed 002's figures draw them so; beyond
    /// [`crate::model::trace::REDUCE_EDGES_UP_TO`] pending nodes, every direct edge).
    pub edges: Vec<(usize, usize)>,
}

impl PendingGraph {
    /// How many nodes have this label.
    pub fn count(&self, label: &str) -> usize {
        self.nodes.iter().filter(|n| n.label == label).count()
    }

    /// How many nodes are of this kind.
    pub fn count_kind(&self, kind: NodeKind) -> usize {
        self.nodes.iter().filter(|n| n.kind == kind).count()
    }

    /// The edges as label pairs, for comparing with a figure.
    pub fn labelled_edges(&self) -> Vec<(String, String)> {
        self.edges
            .iter()
            .map(|&(a, b)| (self.nodes[a].label.clone(), self.nodes[b].label.clone()))
            .collect()
    }

    /// The graph in Graphviz's dot language, with `top` and `bot` as the seed draws them (`top`
    /// before every node that depends on nothing pending, `bot` after every node nothing
    /// depends on).
    pub fn to_dot(&self) -> String {
        let mut s = String::from("digraph pending {\n  top [label=\"top\"];\n");
        for (i, n) in self.nodes.iter().enumerate() {
            let shape = match n.kind {
                NodeKind::Loop => "box",
                NodeKind::HaloSend | NodeKind::HaloRecv => "ellipse",
                NodeKind::Reduction => "diamond",
                NodeKind::Malloc | NodeKind::Free => "note",
            };
            let label = n.label.replace('\\', "\\\\").replace('"', "\\\"");
            let _ = writeln!(s, "  n{i} [label=\"{label}\" shape={shape}];");
        }
        s.push_str("  bot [label=\"bot\"];\n");
        let mut has_in = vec![false; self.nodes.len()];
        let mut has_out = vec![false; self.nodes.len()];
        for &(a, b) in &self.edges {
            has_out[a] = true;
            has_in[b] = true;
            let _ = writeln!(s, "  n{a} -> n{b};");
        }
        for i in 0..self.nodes.len() {
            if !has_in[i] {
                let _ = writeln!(s, "  top -> n{i};");
            }
            if !has_out[i] {
                let _ = writeln!(s, "  n{i} -> bot;");
            }
        }
        s.push_str("}\n");
        s
    }
}

/// The view of `graph`.
pub(crate) fn view(graph: &Graph<Step>) -> PendingGraph {
    let mut pos = HashMap::new();
    let nodes: Vec<GraphNode> = graph
        .iter()
        .enumerate()
        .map(|(i, (id, n))| {
            pos.insert(id, i);
            GraphNode {
                id,
                label: n.work.label(),
                kind: match &n.work {
                    Step::Loop(_) => NodeKind::Loop,
                    Step::HaloBegin(_) => NodeKind::HaloSend,
                    Step::HaloEnd(_) => NodeKind::HaloRecv,
                    Step::ReduceInit(_) | Step::ReduceBegin(_) | Step::ReduceEnd(_) => {
                        NodeKind::Reduction
                    }
                    Step::Malloc(_) => NodeKind::Malloc,
                    Step::Free(_) => NodeKind::Free,
                },
            }
        })
        .collect();
    let edges = graph
        .reduced_edges()
        .into_iter()
        .map(|(a, b)| (pos[&a], pos[&b]))
        .collect();
    PendingGraph { nodes, edges }
}

/// The handle of a recorded loop ([`crate::Runtime::par_loop`]): says whether the loop is still
/// pending without forcing anything (PyOP2's `in_queue`), and can run it (and what it needs).
#[derive(Clone)]
pub struct LoopHandle {
    runtime: Weak<RuntimeShared>,
    kernel: String,
    nodes: Vec<u64>,
}

impl std::fmt::Debug for LoopHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LoopHandle")
            .field("kernel", &self.kernel)
            .field("pending", &self.is_pending())
            .finish()
    }
}

impl LoopHandle {
    pub(crate) fn new(runtime: &Arc<RuntimeShared>, kernel: &str, nodes: Vec<u64>) -> Self {
        LoopHandle {
            runtime: Arc::downgrade(runtime),
            kernel: kernel.into(),
            nodes,
        }
    }

    /// The loop's kernel name.
    pub fn kernel(&self) -> &str {
        &self.kernel
    }

    /// Whether some part of the loop has not run yet. Forces nothing. False once the runtime
    /// is gone (it ran everything pending when it went, or reported on stderr what failed).
    pub fn is_pending(&self) -> bool {
        match self.runtime.upgrade() {
            Some(rt) => {
                let st = lock(&rt.state);
                self.nodes.iter().any(|n| st.trace.get(*n).is_some())
            }
            None => false,
        }
    }

    /// PyOP2's name for [`LoopHandle::is_pending`]: whether the loop is still in the queue.
    pub fn in_queue(&self) -> bool {
        self.is_pending()
    }

    /// Runs the loop now, with the pending work it depends on (PyOP2's `ParLoop.compute`);
    /// across ranks, also every earlier pending step that starts communication, so that ranks
    /// start their messages in the same order. Nothing when it already ran.
    pub fn compute(&self) -> Result<()> {
        match self.runtime.upgrade() {
            Some(rt) => {
                let _order = lock(&rt.exec);
                rt.force(super::shared::Wanted::Nodes(&self.nodes))
            }
            None => Ok(()),
        }
    }
}
