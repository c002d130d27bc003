//! The lazy trace as a dependency graph (seed 002): recorded computations, each with the data
//! sections it reads and writes, joined by edges from the dependency rule; forcing takes the
//! computations some data depends on (and what they depend on) and orders them for running.

use std::cmp::Reverse;
use std::collections::{BTreeMap, BinaryHeap, HashMap, HashSet};

/// Section bits of a carrier's data: which parts of a set a computation touches.
pub mod section {
    /// Core elements.
    pub const CORE: u8 = 1;
    /// Owned elements next to halos.
    pub const OWNED: u8 = 2;
    /// Exec-halo elements.
    pub const EXEC_HALO: u8 = 4;
    /// Non-exec-halo elements.
    pub const NONEXEC_HALO: u8 = 8;
    /// The message buffer of a halo exchange (orders sends before receives).
    pub const NET: u8 = 16;
    /// Every section.
    pub const ALL: u8 = CORE | OWNED | EXEC_HALO | NONEXEC_HALO | NET;
    /// Every section of the data itself (not its message buffer).
    pub const DATA: u8 = CORE | OWNED | EXEC_HALO | NONEXEC_HALO;
}

/// How many section bits there are.
const SECTIONS: usize = 5;

/// One use of a carrier's data by a computation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataUse {
    /// The carrier's id (or a pseudo-resource's: a loop's own chain, the memory pool).
    pub id: u64,
    /// Which sections ([`section`] bits).
    pub sections: u8,
}

/// A computation to record: something to run, with what it reads and writes.
#[derive(Debug)]
pub struct Pending<T> {
    /// What to run.
    pub work: T,
    /// Data it reads.
    pub reads: Vec<DataUse>,
    /// Data it writes.
    pub writes: Vec<DataUse>,
}

/// A node of the graph: a pending computation and the earlier ones it depends on.
#[derive(Debug)]
pub struct Node<T> {
    /// What to run.
    pub work: T,
    /// Data it reads.
    pub reads: Vec<DataUse>,
    /// Data it writes.
    pub writes: Vec<DataUse>,
    /// The nodes (by number) it depends on, when it was recorded; some may have run since.
    preds: Vec<u64>,
}

/// Who last wrote one section of one carrier, and who read it since, among recorded nodes.
#[derive(Debug, Default, Clone)]
struct SectionUse {
    writer: Option<u64>,
    readers: Vec<u64>,
}

/// Pending computations as a directed acyclic graph. Nodes are numbered in program order; an
/// edge runs from `a` to a later `b` when `b` reads what `a` writes, writes what `a` reads, or
/// writes what `a` writes, section by section (seed 002's rule: `R_b ∩ W_a ∪ W_b ∩ R_a ∪ W_b ∩
/// W_a` not empty). Edges come from section bits only, never from how many elements a section
/// has, so ranks that record the same loops build the same graph.
#[derive(Debug)]
pub struct Graph<T> {
    nodes: BTreeMap<u64, Node<T>>,
    next: u64,
    /// Per carrier, per section bit: its last writer and readers since, for finding the edges of
    /// a new node without looking at every pending one.
    index: HashMap<u64, [SectionUse; SECTIONS]>,
    /// Index entries when it was last pruned of entries naming only nodes that ran.
    pruned_at: usize,
}

/// Beyond this many pending nodes, [`Graph::reduced_edges`] gives the direct edges as they are:
/// the reduction's reachability table grows as the square of the nodes.
pub const REDUCE_EDGES_UP_TO: usize = 4096;

impl<T> Default for Graph<T> {
    fn default() -> Self {
        Graph {
            nodes: BTreeMap::new(),
            next: 0,
            index: HashMap::new(),
            pruned_at: 0,
        }
    }
}

fn bits(sections: u8) -> impl Iterator<Item = usize> {
    (0..SECTIONS).filter(move |b| sections & (1 << b) != 0)
}

impl<T> Graph<T> {
    /// The pending nodes an access reading `reads` and writing `writes` would depend on directly.
    fn direct_preds(&self, reads: &[DataUse], writes: &[DataUse]) -> Vec<u64> {
        let mut preds = Vec::new();
        let live = |n: &u64| self.nodes.contains_key(n);
        for u in reads {
            if let Some(e) = self.index.get(&u.id) {
                for b in bits(u.sections) {
                    preds.extend(e[b].writer.iter().filter(|n| live(n)));
                }
            }
        }
        for u in writes {
            if let Some(e) = self.index.get(&u.id) {
                for b in bits(u.sections) {
                    preds.extend(e[b].writer.iter().filter(|n| live(n)));
                    preds.extend(e[b].readers.iter().filter(|n| live(n)));
                }
            }
        }
        preds.sort_unstable();
        preds.dedup();
        preds
    }

    /// Records a computation after everything recorded so far; returns its number.
    pub fn push(&mut self, p: Pending<T>) -> u64 {
        let id = self.next;
        self.next += 1;
        let preds = self.direct_preds(&p.reads, &p.writes);
        let nodes = &self.nodes;
        for u in &p.reads {
            let e = self.index.entry(u.id).or_default();
            for b in bits(u.sections) {
                let readers = &mut e[b].readers;
                if readers.len() >= 16 && readers.len().is_power_of_two() {
                    // Readers that ran are dropped now and then (when the list doubles), so a
                    // Dat read by every loop (coordinates) does not collect them forever.
                    readers.retain(|n| nodes.contains_key(n));
                }
                if readers.last() != Some(&id) {
                    readers.push(id);
                }
            }
        }
        for u in &p.writes {
            let e = self.index.entry(u.id).or_default();
            for b in bits(u.sections) {
                e[b].writer = Some(id);
                e[b].readers.clear();
            }
        }
        self.nodes.insert(
            id,
            Node {
                work: p.work,
                reads: p.reads,
                writes: p.writes,
                preds,
            },
        );
        id
    }

    /// The node numbered `id`, while it is pending.
    pub fn get(&self, id: u64) -> Option<&Node<T>> {
        self.nodes.get(&id)
    }

    /// Removes a node that ran.
    pub fn remove(&mut self, id: u64) -> Option<T> {
        let n = self.nodes.remove(&id)?;
        if self.nodes.is_empty() {
            // Nothing pending: every index entry names nodes that ran.
            self.index.clear();
            self.pruned_at = 0;
        } else if self.index.len() > 2 * self.pruned_at.max(self.nodes.len()) + 64 {
            // A graph that never empties (forcing by need leaves some node pending) would keep
            // the entries of every carrier it ever saw: drop those naming only nodes that ran.
            let nodes = &self.nodes;
            self.index.retain(|_, e| {
                e.iter().any(|s| {
                    s.writer.is_some_and(|w| nodes.contains_key(&w))
                        || s.readers.iter().any(|r| nodes.contains_key(r))
                })
            });
            self.pruned_at = self.index.len();
        }
        Some(n.work)
    }

    /// The pending nodes, in program order, with their numbers.
    pub fn iter(&self) -> impl Iterator<Item = (u64, &Node<T>)> {
        self.nodes.iter().map(|(k, n)| (*k, n))
    }

    /// Number of pending nodes.
    pub fn len(&self) -> usize {
        self.nodes.len()
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.nodes.is_empty()
    }

    /// The pending nodes a node depends on directly.
    pub fn preds(&self, id: u64) -> impl Iterator<Item = u64> + '_ {
        self.nodes
            .get(&id)
            .into_iter()
            .flat_map(|n| n.preds.iter().copied())
            .filter(|p| self.nodes.contains_key(p))
    }

    /// Every pending node (by number) that must run before an access that reads `reads` and
    /// writes `writes`: those it depends on by the rule, and, transitively, theirs.
    pub fn needed(&self, reads: &[DataUse], writes: &[DataUse]) -> HashSet<u64> {
        self.closure(self.direct_preds(reads, writes))
    }

    /// `start` and every pending node they depend on, transitively.
    pub fn closure(&self, start: impl IntoIterator<Item = u64>) -> HashSet<u64> {
        let mut seen = HashSet::new();
        let mut stack: Vec<u64> = start.into_iter().collect();
        while let Some(n) = stack.pop() {
            if !self.nodes.contains_key(&n) || !seen.insert(n) {
                continue;
            }
            stack.extend(self.preds(n));
        }
        seen
    }

    /// Orders `chosen` (closed under dependencies) for running: a node runs after the nodes it
    /// depends on; among those ready, the lowest `rank` first, then the earliest recorded. Nodes
    /// to which `class` gives the same class (0 to 3) also run in program order among themselves
    /// (communication: every rank posts its messages and collectives in the same order whatever
    /// it forces; memory: a temporary allocated after another was released reuses its memory).
    /// That order is not a dependency: it never makes a node needed.
    pub fn schedule(
        &self,
        chosen: &HashSet<u64>,
        rank: impl Fn(&T) -> u8,
        class: impl Fn(&T) -> Option<u8>,
    ) -> Vec<u64> {
        self.schedule_groups(chosen, rank, class, |_| false, |_, _| false)
            .into_iter()
            .flatten()
            .collect()
    }

    /// Like [`Graph::schedule`], in groups of nodes that run together: each group starts with the
    /// next node in order and, when `leads` says that node may start a group, takes in any node
    /// ready once the group's nodes have run (a node independent of them, or one that depends
    /// on them) for which `join(group, node)` says true, in the order taken. Running each
    /// group's nodes one after another in that order is a valid order.
    pub fn schedule_groups(
        &self,
        chosen: &HashSet<u64>,
        rank: impl Fn(&T) -> u8,
        class: impl Fn(&T) -> Option<u8>,
        leads: impl Fn(&T) -> bool,
        mut join: impl FnMut(&[u64], u64) -> bool,
    ) -> Vec<Vec<u64>> {
        // Dense positions in program order.
        let mut ids: Vec<u64> = chosen.iter().copied().collect();
        ids.sort_unstable();
        let n = ids.len();
        let pos = |id: u64| ids.binary_search(&id).ok();
        let works: Vec<&T> = ids.iter().map(|id| &self.nodes[id].work).collect();
        let mut missing = vec![0usize; n];
        let mut succs: Vec<Vec<u32>> = vec![Vec::new(); n];
        for (i, id) in ids.iter().enumerate() {
            for p in self.nodes[id].preds.iter().filter_map(|p| pos(*p)) {
                succs[p].push(i as u32);
                missing[i] += 1;
            }
        }
        // The nodes of each class form one chain: each waits for the one before it.
        let mut previous: [Option<usize>; 4] = [None; 4];
        for i in 0..n {
            if let Some(c) = class(works[i]) {
                let c = usize::from(c.min(3));
                if let Some(p) = previous[c] {
                    succs[p].push(i as u32);
                    missing[i] += 1;
                }
                previous[c] = Some(i);
            }
        }
        let ranks: Vec<u8> = works.iter().map(|w| rank(w)).collect();
        let mut ready: BinaryHeap<Reverse<(u8, u32)>> = (0..n)
            .filter(|&i| missing[i] == 0)
            .map(|i| Reverse((ranks[i], i as u32)))
            .collect();
        let done =
            |i: usize, ready: &mut BinaryHeap<Reverse<(u8, u32)>>, missing: &mut Vec<usize>| {
                for &s in &succs[i] {
                    let m = &mut missing[s as usize];
                    *m -= 1;
                    if *m == 0 {
                        ready.push(Reverse((ranks[s as usize], s)));
                    }
                }
            };
        let mut groups = Vec::new();
        let mut count = 0;
        while let Some(Reverse((_, i))) = ready.pop() {
            let i = i as usize;
            let mut group = vec![ids[i]];
            done(i, &mut ready, &mut missing);
            if leads(works[i]) {
                loop {
                    let mut candidates: Vec<u32> = ready.iter().map(|Reverse((_, c))| *c).collect();
                    candidates.sort_unstable();
                    let Some(c) = candidates
                        .into_iter()
                        .find(|c| join(&group, ids[*c as usize]))
                    else {
                        break;
                    };
                    ready.retain(|Reverse((_, x))| *x != c);
                    group.push(ids[c as usize]);
                    done(c as usize, &mut ready, &mut missing);
                }
            }
            count += group.len();
            groups.push(group);
        }
        debug_assert_eq!(count, n, "the graph has no cycles");
        groups
    }

    /// The edges among pending nodes with those implied by others left out (the transitive
    /// reduction, as the seed's figures draw them), as pairs of node numbers; beyond
    /// [`REDUCE_EDGES_UP_TO`] pending nodes, every direct edge.
    pub fn reduced_edges(&self) -> Vec<(u64, u64)> {
        let ids: Vec<u64> = self.nodes.keys().copied().collect();
        if ids.len() > REDUCE_EDGES_UP_TO {
            let mut edges: Vec<(u64, u64)> = ids
                .iter()
                .flat_map(|id| self.preds(*id).map(move |p| (p, *id)))
                .collect();
            edges.sort_unstable();
            return edges;
        }
        let pos: HashMap<u64, usize> = ids.iter().enumerate().map(|(i, n)| (*n, i)).collect();
        let n = ids.len();
        let words = n.div_ceil(64);
        // ancestors[i]: every node i depends on, transitively (nodes are in program order, so a
        // node's predecessors come before it).
        let mut ancestors = vec![vec![0u64; words]; n];
        let direct: Vec<Vec<usize>> = ids
            .iter()
            .map(|id| self.preds(*id).map(|p| pos[&p]).collect())
            .collect();
        for i in 0..n {
            for &p in &direct[i] {
                ancestors[i][p / 64] |= 1 << (p % 64);
                let (lo, hi) = ancestors.split_at_mut(i);
                for (w, a) in hi[0].iter_mut().zip(&lo[p]) {
                    *w |= *a;
                }
            }
        }
        let mut edges = Vec::new();
        for i in 0..n {
            for &p in &direct[i] {
                // Implied when another direct predecessor already depends on p.
                let implied = direct[i]
                    .iter()
                    .any(|&q| q != p && ancestors[q][p / 64] & (1 << (p % 64)) != 0);
                if !implied {
                    edges.push((ids[p], ids[i]));
                }
            }
        }
        edges.sort_unstable();
        edges.dedup();
        edges
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(id: u64) -> DataUse {
        DataUse {
            id,
            sections: section::ALL,
        }
    }

    fn graph(specs: &[(&str, &[u64], &[u64])]) -> Graph<String> {
        let mut g = Graph::default();
        for (name, r, w) in specs {
            g.push(Pending {
                work: name.to_string(),
                reads: r.iter().map(|&i| u(i)).collect(),
                writes: w.iter().map(|&i| u(i)).collect(),
            });
        }
        g
    }

    fn names(g: &Graph<String>, ids: &HashSet<u64>) -> Vec<String> {
        g.schedule(ids, |_| 0, |_| None)
            .into_iter()
            .map(|n| g.get(n).unwrap().work.clone())
            .collect()
    }

    #[test]
    fn read_needs_writers_and_their_inputs() {
        // a: writes 1; b: writes 2; c: reads 1 writes 3; d: reads 2 writes 4
        let g = graph(&[
            ("a", &[], &[1]),
            ("b", &[], &[2]),
            ("c", &[1], &[3]),
            ("d", &[2], &[4]),
        ]);
        let needed = g.needed(&[u(3)], &[]);
        assert_eq!(names(&g, &needed), ["a", "c"]);
    }

    #[test]
    fn write_needs_earlier_readers_and_writers() {
        let g = graph(&[("a", &[1], &[2]), ("b", &[3], &[4]), ("c", &[], &[1])]);
        // Writing 1: a read it (write after read), c wrote it (write after write).
        let needed = g.needed(&[], &[u(1)]);
        assert_eq!(names(&g, &needed), ["a", "c"]);
        // Reading 4 needs b only.
        assert_eq!(names(&g, &g.needed(&[u(4)], &[])), ["b"]);
    }

    #[test]
    fn readers_of_the_same_data_are_siblings() {
        let g = graph(&[("w", &[], &[1]), ("r1", &[1], &[2]), ("r2", &[1], &[3])]);
        assert_eq!(g.reduced_edges(), [(0, 1), (0, 2)]);
    }

    #[test]
    fn sections_that_do_not_overlap_are_independent() {
        let mut g = Graph::default();
        g.push(Pending {
            work: "core",
            reads: vec![],
            writes: vec![DataUse {
                id: 1,
                sections: section::CORE,
            }],
        });
        let halo = [DataUse {
            id: 1,
            sections: section::EXEC_HALO,
        }];
        assert!(g.needed(&halo, &[]).is_empty());
        assert!(g.needed(&halo, &halo).is_empty());
    }

    #[test]
    fn ranks_choose_among_ready_nodes_and_ordered_nodes_keep_program_order() {
        // Two independent chains: compute -> send, and a lone receive-like node.
        let g = graph(&[
            ("compute", &[], &[1]),
            ("send_late", &[1], &[2]),
            ("recv", &[], &[3]),
            ("send_early", &[], &[4]),
        ]);
        let all: HashSet<u64> = (0..4).collect();
        let rank = |w: &String| match w.as_str() {
            s if s.starts_with("send") => 0,
            "recv" => 2,
            _ => 1,
        };
        let order: Vec<&str> = g
            .schedule(&all, rank, |_| None)
            .into_iter()
            .map(|n| g.get(n).unwrap().work.as_str())
            .collect();
        assert_eq!(order, ["send_early", "compute", "send_late", "recv"]);
        // Sends in program order: send_early waits for send_late.
        let order: Vec<&str> = g
            .schedule(&all, rank, |w| w.starts_with("send").then_some(0))
            .into_iter()
            .map(|n| g.get(n).unwrap().work.as_str())
            .collect();
        assert_eq!(order, ["compute", "send_late", "send_early", "recv"]);
    }

    #[test]
    fn removing_what_ran_leaves_the_rest_connected() {
        let mut g = graph(&[("a", &[], &[1]), ("b", &[1], &[2]), ("c", &[2], &[3])]);
        assert_eq!(g.remove(0).as_deref(), Some("a"));
        assert_eq!(g.reduced_edges(), [(1, 2)]);
        assert_eq!(names(&g, &g.needed(&[u(3)], &[])), ["b", "c"]);
        g.remove(1);
        g.remove(2);
        assert!(g.is_empty());
        // The index was cleared: a new node depends on nothing.
        g.push(Pending {
            work: "d".into(),
            reads: vec![u(3)],
            writes: vec![],
        });
        assert_eq!(g.preds(3).count(), 0);
    }

    #[test]
    fn transitive_edges_are_left_out_of_the_drawing() {
        // a -> b -> c, and a -> c directly (c reads what a wrote).
        let g = graph(&[("a", &[], &[1]), ("b", &[1], &[2]), ("c", &[1, 2], &[3])]);
        assert_eq!(g.preds(2).collect::<Vec<_>>(), [0, 1]);
        assert_eq!(g.reduced_edges(), [(0, 1), (1, 2)]);
    }
}
