//! Partitioners: which rank owns each element. One set is partitioned (METIS k-way on the graph a
//! map induces, recursive coordinate bisection on coordinates, or contiguous blocks); every other
//! set follows through the maps, each element taking the part most of its map neighbours have.

use crate::error::{MpiError, Result};
use crate::mesh::{GlobalDat, GlobalMap, block_range};

/// How the mesh is split between ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Partitioner {
    /// Contiguous blocks of every set in global numbering (no partitioning at all: what a
    /// program gets when its file order is its partition).
    Blocks,
    /// METIS k-way on the graph `map` induces on its target set: two targets are joined when one
    /// source element reaches both (edge-to-cell gives the cells' dual graph). The target set is
    /// partitioned; the rest follows. With op2-mpi's `parmetis` feature, on MPI ranks, this is
    /// ParMETIS's k-way on the graph built where it lies (as for PT-Scotch: no rank holds the
    /// whole graph). Without it (and on thread ranks, or for a set smaller than the rank count)
    /// rank 0 gathers the map and runs METIS on the whole graph: for meshes that fit one rank.
    Metis {
        /// The map whose graph is cut.
        map: GlobalMap,
    },
    /// Recursive coordinate bisection of the set `coords` lives on: split along the longest
    /// extent at the point that divides the parts' shares, and again in each half.
    Geometric {
        /// Coordinates (dim 1, 2 or 3) of the set to partition.
        coords: GlobalDat<f64>,
    },
    /// PT-Scotch's distributed graph partitioner on the graph `map` induces on its target set
    /// (as for METIS), built from every rank's slice: no rank holds the whole graph. Needs
    /// op2-mpi's `ptscotch` feature (Debian's `libptscotch-dev`) and MPI ranks.
    PtScotch {
        /// The map whose graph is cut.
        map: GlobalMap,
    },
}

impl Partitioner {
    /// A short name for reports.
    pub fn name(&self) -> &'static str {
        match self {
            Partitioner::Blocks => "blocks",
            Partitioner::Metis { .. } => "metis",
            Partitioner::Geometric { .. } => "geometric",
            Partitioner::PtScotch { .. } => "ptscotch",
        }
    }
}

/// A mesh's connectivity in global numbering: set sizes and every map's values.
#[derive(Debug, Clone)]
pub(crate) struct Topology {
    pub(crate) names: Vec<String>,
    pub(crate) sizes: Vec<usize>,
    pub(crate) maps: Vec<TopoMap>,
}

#[derive(Debug, Clone)]
pub(crate) struct TopoMap {
    pub(crate) name: String,
    pub(crate) from: usize,
    pub(crate) to: usize,
    pub(crate) arity: usize,
    pub(crate) values: Vec<i32>,
}

impl Topology {
    /// Checks every map value against its target set (the same answer on every rank).
    pub(crate) fn check(&self) -> Result<()> {
        for m in &self.maps {
            let size = self.sizes[m.to];
            if let Some(entry) = m.values.iter().position(|&v| v < 0 || v as usize >= size) {
                return Err(MpiError::MapValueOutOfRange {
                    map: m.name.clone(),
                    entry,
                    row: entry / m.arity,
                    value: m.values[entry] as i64,
                    to: self.names[m.to].clone(),
                    size,
                });
            }
        }
        Ok(())
    }

    /// The graph `map` induces on its target set: targets of one row are joined.
    pub(crate) fn target_graph(&self, map: usize) -> Csr {
        let m = &self.maps[map];
        let mut pairs = Vec::new();
        for row in m.values.chunks_exact(m.arity) {
            join_all(row.iter().map(|&t| t as u32), &mut pairs);
        }
        Csr::from_pairs(self.sizes[m.to], pairs)
    }
}

pub(crate) use op2_renumber::{Csr, join_all};

/// The part of every element of `set` when it is split into `parts` contiguous blocks.
pub(crate) fn blocks(size: usize, parts: usize) -> Vec<u32> {
    let mut out = Vec::with_capacity(size);
    for p in 0..parts {
        out.extend(std::iter::repeat_n(
            p as u32,
            block_range(size, parts, p).len(),
        ));
    }
    out
}

/// METIS k-way on the target graph of `map`.
pub(crate) fn metis(top: &Topology, map: usize, parts: usize) -> Result<Vec<u32>> {
    let n = top.sizes[top.maps[map].to];
    if parts <= 1 {
        return Ok(vec![0; n]);
    }
    let graph = top.target_graph(map);
    let xadj: Vec<metis::Idx> = graph.xadj.iter().map(|&x| x as metis::Idx).collect();
    let adjncy: Vec<metis::Idx> = graph.adj.iter().map(|&x| x as metis::Idx).collect();
    let mut part = vec![0 as metis::Idx; n];
    let fail = |e: String| MpiError::Partitioner {
        partitioner: "metis",
        reason: e,
    };
    // A graph without edges (every source element reaches one target) is legal but METIS
    // rejects it; blocks are as good a cut (zero) there.
    if adjncy.is_empty() {
        return Ok(blocks(n, parts));
    }
    metis::Graph::new(1, parts as metis::Idx, &xadj, &adjncy)
        .map_err(|e| fail(e.to_string()))?
        .part_kway(&mut part)
        .map_err(|e| fail(e.to_string()))?;
    Ok(part.into_iter().map(|p| p as u32).collect())
}

/// Recursive coordinate bisection of `n` points of `dim` coordinates into `parts`.
pub(crate) fn bisection(coords: &[f64], dim: usize, parts: usize) -> Vec<u32> {
    let n = coords.len() / dim.max(1);
    let mut part = vec![0u32; n];
    let mut ids: Vec<u32> = (0..n as u32).collect();
    split(coords, dim, &mut ids, 0, parts, &mut part);
    part
}

fn split(coords: &[f64], dim: usize, ids: &mut [u32], first: usize, parts: usize, out: &mut [u32]) {
    if parts <= 1 || ids.len() <= 1 {
        for &i in ids.iter() {
            out[i as usize] = first as u32;
        }
        return;
    }
    // The axis of longest extent.
    let mut axis = 0;
    let mut widest = f64::NEG_INFINITY;
    for a in 0..dim {
        let (lo, hi) = ids
            .iter()
            .fold((f64::INFINITY, f64::NEG_INFINITY), |(lo, hi), &i| {
                let v = coords[i as usize * dim + a];
                (lo.min(v), hi.max(v))
            });
        if hi - lo > widest {
            widest = hi - lo;
            axis = a;
        }
    }
    let left_parts = parts / 2;
    let cut = (ids.len() as u128 * left_parts as u128 / parts as u128) as usize;
    let key = |i: &u32| (coords[*i as usize * dim + axis], *i);
    if cut > 0 && cut < ids.len() {
        ids.select_nth_unstable_by(cut, |a, b| {
            key(a)
                .partial_cmp(&key(b))
                .unwrap_or(std::cmp::Ordering::Equal)
        });
    }
    let (left, right) = ids.split_at_mut(cut);
    split(coords, dim, left, first, left_parts, out);
    split(
        coords,
        dim,
        right,
        first + left_parts,
        parts - left_parts,
        out,
    );
}

/// The part most often seen in `counts` (ties go to the lowest part).
pub(crate) fn majority(counts: &mut Vec<(u32, u32)>) -> Option<u32> {
    counts.sort_unstable();
    let mut best: Option<(u32, u32)> = None;
    let mut i = 0;
    while i < counts.len() {
        let p = counts[i].0;
        let mut c = 0;
        while i < counts.len() && counts[i].0 == p {
            c += counts[i].1;
            i += 1;
        }
        if best.is_none_or(|(_, bc)| c > bc) {
            best = Some((p, c));
        }
    }
    counts.clear();
    best.map(|(p, _)| p)
}

/// Extends the partition of one set to every set: a set with maps into partitioned sets
/// (preferred) gives each element the part most of its targets have; a set only reached by maps
/// from partitioned sets gives each element the part most of the elements reaching it have;
/// elements nothing reaches, and sets no map connects, fall back to blocks.
pub(crate) fn propagate(
    top: &Topology,
    first: usize,
    first_parts: Vec<u32>,
    parts: usize,
) -> Vec<Vec<u32>> {
    let nsets = top.sizes.len();
    let mut result: Vec<Option<Vec<u32>>> = vec![None; nsets];
    result[first] = Some(first_parts);
    let mut counts: Vec<(u32, u32)> = Vec::new();
    loop {
        let forward = (0..nsets).find(|&s| {
            result[s].is_none()
                && top
                    .maps
                    .iter()
                    .any(|m| m.from == s && result[m.to].is_some())
        });
        if let Some(s) = forward {
            let maps: Vec<_> = top
                .maps
                .iter()
                .filter(|m| m.from == s && result[m.to].is_some())
                .collect();
            let block = blocks(top.sizes[s], parts);
            let mut out = Vec::with_capacity(top.sizes[s]);
            for (e, fallback) in block.into_iter().enumerate() {
                for m in &maps {
                    let to = result[m.to].as_ref().expect("filtered");
                    for &t in &m.values[e * m.arity..(e + 1) * m.arity] {
                        counts.push((to[t as usize], 1));
                    }
                }
                out.push(majority(&mut counts).unwrap_or(fallback));
            }
            result[s] = Some(out);
            continue;
        }
        let backward = (0..nsets).find(|&s| {
            result[s].is_none()
                && top
                    .maps
                    .iter()
                    .any(|m| m.to == s && result[m.from].is_some())
        });
        if let Some(s) = backward {
            // Per element: (part, count) of every element reaching it.
            let mut seen: Vec<Vec<(u32, u32)>> = vec![Vec::new(); top.sizes[s]];
            for m in top
                .maps
                .iter()
                .filter(|m| m.to == s && result[m.from].is_some())
            {
                let from = result[m.from].as_ref().expect("filtered");
                for (e, row) in m.values.chunks_exact(m.arity).enumerate() {
                    for &t in row {
                        seen[t as usize].push((from[e], 1));
                    }
                }
            }
            let block = blocks(top.sizes[s], parts);
            let out = seen
                .into_iter()
                .zip(block)
                .map(|(mut c, fallback)| majority(&mut c).unwrap_or(fallback))
                .collect();
            result[s] = Some(out);
            continue;
        }
        break;
    }
    result
        .into_iter()
        .enumerate()
        .map(|(s, r)| r.unwrap_or_else(|| blocks(top.sizes[s], parts)))
        .collect()
}

/// Graph edges of `map`'s target graph whose ends lie in different parts.
pub(crate) fn edge_cut(top: &Topology, map: usize, parts: &[u32]) -> usize {
    let Csr { xadj, adj } = top.target_graph(map);
    let mut cut = 0;
    for v in 0..xadj.len() - 1 {
        for &w in &adj[xadj[v]..xadj[v + 1]] {
            if (w as usize) > v && parts[v] != parts[w as usize] {
                cut += 1;
            }
        }
    }
    cut
}

/// Which set a partitioner splits first.
pub(crate) fn first_set(top: &Topology, p: &Partitioner, coords_set: Option<usize>) -> usize {
    match p {
        Partitioner::Blocks => 0,
        Partitioner::Metis { map } | Partitioner::PtScotch { map } => top.maps[map.0].to,
        Partitioner::Geometric { .. } => coords_set.unwrap_or(0),
    }
}
