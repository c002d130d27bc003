//! Locality orders for unstructured meshes, as OP2's `op_renumber` makes them: reverse
//! Cuthill-McKee on one set's graph (elements joined through shared map targets), every other set
//! ordered after the elements it is mapped to or from; and applying an order to map values and
//! data rows. Works on plain vectors, before anything is declared, so one process (renumbering a
//! mesh before declaring it) and op2-mpi (each rank's part) share it.
//!
//! ```
//! use op2_renumber::{MapRef, locality_order, permute_rows, renumber_map};
//! // Four edges over five nodes, numbered badly.
//! let sizes = [5, 4]; // nodes, edges
//! let edge_nodes = [0, 4, 4, 1, 1, 3, 3, 2];
//! let maps = [MapRef { from: 1, to: 0, arity: 2, values: &edge_nodes }];
//! let order = locality_order(&sizes, &maps, 0).unwrap();
//! let new_edges = renumber_map(&edge_nodes, 2, &order[1], &order[0]).unwrap();
//! // Along the chain each edge now joins nodes with neighbouring numbers.
//! assert!(new_edges.chunks(2).all(|e| (e[0] - e[1]).abs() == 1));
//! let x = [0.0, 1.0, 2.0, 3.0, 4.0];
//! assert_eq!(permute_rows(&x, 1, &order[0]).unwrap().len(), 5);
//! ```

/// Why an order could not be made.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum RenumberError {
    /// A map names a set that is not in `sizes`.
    #[error("map {map} goes from set {from} to set {to}, but there are {sets} sets")]
    NoSuchSet {
        /// The map's index.
        map: usize,
        /// Its source set.
        from: usize,
        /// Its target set.
        to: usize,
        /// Sets given.
        sets: usize,
    },
    /// A map's values are not whole rows of its source set.
    #[error("map {map}: {len} values, expected {expected} ({rows} rows x arity {arity})")]
    Length {
        /// The map's index.
        map: usize,
        /// Values given.
        len: usize,
        /// Values expected.
        expected: usize,
        /// Rows of the source set.
        rows: usize,
        /// The map's arity.
        arity: usize,
    },
    /// A map value points outside its target set.
    #[error("map {map}: entry {entry} is {value}, outside 0..{size}")]
    OutOfRange {
        /// The map's index.
        map: usize,
        /// The entry (row-major).
        entry: usize,
        /// Its value.
        value: i32,
        /// The target set's size.
        size: usize,
    },
    /// Values are not one row of `dim` per position.
    #[error("{len} values are not {rows} rows of {dim}")]
    Rows {
        /// Values given.
        len: usize,
        /// Positions given (rows).
        rows: usize,
        /// Values per row.
        dim: usize,
    },
    /// The positions are not each of `0..n` once.
    #[error("positions are not a permutation: {position} at row {row} (of {rows})")]
    NotAPermutation {
        /// The row.
        row: usize,
        /// Its position (repeated or out of range).
        position: u32,
        /// Rows.
        rows: usize,
    },
    /// The set to start from is not in `sizes`.
    #[error("no set {first} to order first ({sets} sets)")]
    NoFirstSet {
        /// The set asked for.
        first: usize,
        /// Sets given.
        sets: usize,
    },
}

/// A map as plain values: `arity` entries per element of set `from`, each an element of set `to`.
#[derive(Debug, Clone, Copy)]
pub struct MapRef<'a> {
    /// The source set (an index into the sizes).
    pub from: usize,
    /// The target set.
    pub to: usize,
    /// Entries per source element.
    pub arity: usize,
    /// Row-major values.
    pub values: &'a [i32],
}

/// A graph in compressed rows: the neighbours of `v` are `adj[xadj[v]..xadj[v + 1]]`, each once,
/// no self loops.
#[derive(Debug, Clone)]
pub struct Csr {
    /// Row starts (`n + 1` of them).
    pub xadj: Vec<usize>,
    /// Neighbours.
    pub adj: Vec<u32>,
}

impl Csr {
    /// The graph of `n` vertices with the (directed) `pairs`.
    pub fn from_pairs(n: usize, mut pairs: Vec<(u32, u32)>) -> Csr {
        pairs.retain(|(a, b)| a != b);
        pairs.sort_unstable();
        pairs.dedup();
        let mut xadj = vec![0usize; n + 1];
        for &(a, _) in &pairs {
            xadj[a as usize + 1] += 1;
        }
        for i in 0..n {
            xadj[i + 1] += xadj[i];
        }
        Csr {
            xadj,
            adj: pairs.into_iter().map(|(_, b)| b).collect(),
        }
    }
}

/// Joins every two of `group` both ways (a clique), into `pairs`.
pub fn join_all(group: impl Iterator<Item = u32> + Clone, pairs: &mut Vec<(u32, u32)>) {
    for (i, a) in group.clone().enumerate() {
        for b in group.clone().skip(i + 1) {
            pairs.push((a, b));
            pairs.push((b, a));
        }
    }
}

/// Checks that every map fits `sizes`.
fn check(sizes: &[usize], maps: &[MapRef]) -> Result<(), RenumberError> {
    for (i, m) in maps.iter().enumerate() {
        if m.from >= sizes.len() || m.to >= sizes.len() {
            return Err(RenumberError::NoSuchSet {
                map: i,
                from: m.from,
                to: m.to,
                sets: sizes.len(),
            });
        }
        let expected = sizes[m.from] * m.arity;
        if m.values.len() != expected {
            return Err(RenumberError::Length {
                map: i,
                len: m.values.len(),
                expected,
                rows: sizes[m.from],
                arity: m.arity,
            });
        }
        let size = sizes[m.to];
        if let Some(entry) = m.values.iter().position(|&v| v < 0 || v as usize >= size) {
            return Err(RenumberError::OutOfRange {
                map: i,
                entry,
                value: m.values[entry],
                size,
            });
        }
    }
    Ok(())
}

/// A locality order for every set: each element's new position. Reverse Cuthill-McKee on set
/// `first`'s graph (elements joined when they share a target of a map from the set or, for a set
/// no map leaves, a source of a map into it), then each other set reached through the maps ordered
/// by the lowest new position among the elements it is mapped to or from (ties keep the old
/// order); a set no map reaches keeps its order.
pub fn locality_order(
    sizes: &[usize],
    maps: &[MapRef],
    first: usize,
) -> Result<Vec<Vec<u32>>, RenumberError> {
    check(sizes, maps)?;
    if first >= sizes.len() {
        return Err(RenumberError::NoFirstSet {
            first,
            sets: sizes.len(),
        });
    }
    let nsets = sizes.len();
    let mut keys: Vec<Option<Vec<u32>>> = vec![None; nsets];
    keys[first] = Some(rcm(&set_graph(sizes, maps, first)));
    loop {
        let next = (0..nsets).find(|&s| {
            keys[s].is_none()
                && maps.iter().any(|m| {
                    (m.from == s && keys[m.to].is_some()) || (m.to == s && keys[m.from].is_some())
                })
        });
        let Some(s) = next else { break };
        let mut key = vec![u32::MAX; sizes[s]];
        for m in maps {
            if m.arity == 0 {
                continue;
            }
            if m.from == s {
                if let Some(to) = &keys[m.to] {
                    for (e, row) in m.values.chunks_exact(m.arity).enumerate() {
                        for &t in row {
                            key[e] = key[e].min(to[t as usize]);
                        }
                    }
                }
            } else if m.to == s {
                if let Some(from) = &keys[m.from] {
                    for (e, row) in m.values.chunks_exact(m.arity).enumerate() {
                        for &t in row {
                            key[t as usize] = key[t as usize].min(from[e]);
                        }
                    }
                }
            }
        }
        // Ranks, not raw keys, so ties keep the old order and positions stay dense.
        let mut ids: Vec<u32> = (0..key.len() as u32).collect();
        ids.sort_by_key(|&e| (key[e as usize], e));
        let mut ranked = vec![0u32; key.len()];
        for (r, e) in ids.into_iter().enumerate() {
            ranked[e as usize] = r as u32;
        }
        keys[s] = Some(ranked);
    }
    Ok(keys
        .into_iter()
        .enumerate()
        .map(|(s, k)| k.unwrap_or_else(|| (0..sizes[s] as u32).collect()))
        .collect())
}

/// A set's own graph: elements joined when they share a target of a map from the set or, for a
/// set no map leaves, a source of a map into it.
fn set_graph(sizes: &[usize], maps: &[MapRef], s: usize) -> Csr {
    let mut pairs = Vec::new();
    let outgoing: Vec<_> = maps.iter().filter(|m| m.from == s && m.arity > 0).collect();
    if outgoing.is_empty() {
        for m in maps.iter().filter(|m| m.to == s && m.arity > 0) {
            for row in m.values.chunks_exact(m.arity) {
                join_all(row.iter().map(|&t| t as u32), &mut pairs);
            }
        }
    }
    for m in outgoing {
        // Target -> its sources; the sources of one target are joined.
        let mut by_target: Vec<Vec<u32>> = vec![Vec::new(); sizes[m.to]];
        for (e, row) in m.values.chunks_exact(m.arity).enumerate() {
            for &t in row {
                by_target[t as usize].push(e as u32);
            }
        }
        for group in by_target {
            join_all(group.into_iter(), &mut pairs);
        }
    }
    Csr::from_pairs(sizes[s], pairs)
}

/// Reverse Cuthill-McKee: breadth-first from a lowest-degree element of each component,
/// neighbours by increasing degree, the visit order reversed. Returns each element's position.
pub fn rcm(Csr { xadj, adj }: &Csr) -> Vec<u32> {
    let n = xadj.len() - 1;
    let degree = |v: usize| xadj[v + 1] - xadj[v];
    let mut by_degree: Vec<usize> = (0..n).collect();
    by_degree.sort_by_key(|&v| (degree(v), v));
    let mut seen = vec![false; n];
    let mut visit = Vec::with_capacity(n);
    let mut neighbours = Vec::new();
    for &start in &by_degree {
        if seen[start] {
            continue;
        }
        seen[start] = true;
        let mut head = visit.len();
        visit.push(start);
        while head < visit.len() {
            let v = visit[head];
            head += 1;
            neighbours.clear();
            neighbours.extend(
                adj[xadj[v]..xadj[v + 1]]
                    .iter()
                    .map(|&w| w as usize)
                    .filter(|&w| !seen[w]),
            );
            neighbours.sort_by_key(|&w| (degree(w), w));
            for &w in &neighbours {
                seen[w] = true;
                visit.push(w);
            }
        }
    }
    let mut position = vec![0u32; n];
    for (i, &v) in visit.iter().rev().enumerate() {
        position[v] = i as u32;
    }
    position
}

/// Rows of `dim` values moved to their new positions: row `e` of `values` becomes row
/// `position[e]` of the result. [`permute_rows_in_place`] does the same without a second copy.
pub fn permute_rows<T: Copy>(
    values: &[T],
    dim: usize,
    position: &[u32],
) -> Result<Vec<T>, RenumberError> {
    let mut out = values.to_vec();
    permute_rows_in_place(&mut out, dim, position)?;
    Ok(out)
}

/// Moves rows of `dim` values to their new positions in place: row `e` becomes row
/// `position[e]`. Each cycle of the permutation is followed once, carrying one row, so the
/// extra memory is a byte per row (which rows are done), not a second copy of `values`.
pub fn permute_rows_in_place<T: Copy>(
    values: &mut [T],
    dim: usize,
    position: &[u32],
) -> Result<(), RenumberError> {
    let rows = position.len();
    if values.len() != rows.saturating_mul(dim) {
        return Err(RenumberError::Rows {
            len: values.len(),
            rows,
            dim,
        });
    }
    // A permutation first: every position once (checked before anything moves).
    let mut done = vec![false; rows];
    for (row, &p) in position.iter().enumerate() {
        match done.get_mut(p as usize) {
            Some(seen @ false) => *seen = true,
            _ => {
                return Err(RenumberError::NotAPermutation {
                    row,
                    position: p,
                    rows,
                });
            }
        }
    }
    done.fill(false);
    if dim == 0 {
        return Ok(());
    }
    let mut carried: Vec<T> = Vec::with_capacity(dim);
    for start in 0..rows {
        if done[start] {
            continue;
        }
        // Row `start` goes to its position; the row found there goes to its own; and so on
        // round the cycle until the row carried belongs where `start` was.
        carried.clear();
        carried.extend_from_slice(&values[start * dim..(start + 1) * dim]);
        let mut e = start;
        loop {
            done[e] = true;
            let p = position[e] as usize;
            values[p * dim..(p + 1) * dim].swap_with_slice(&mut carried);
            if p == start {
                break;
            }
            e = p;
        }
    }
    Ok(())
}

/// A map's values after renumbering: its rows moved by `from_position`, each entry replaced by
/// its target's new number in `to_position`. [`renumber_map_in_place`] does the same without a
/// second copy.
pub fn renumber_map(
    values: &[i32],
    arity: usize,
    from_position: &[u32],
    to_position: &[u32],
) -> Result<Vec<i32>, RenumberError> {
    let mut out = values.to_vec();
    renumber_map_in_place(&mut out, arity, from_position, to_position)?;
    Ok(out)
}

/// [`renumber_map`] in place. On an error the values are left as they were.
pub fn renumber_map_in_place(
    values: &mut [i32],
    arity: usize,
    from_position: &[u32],
    to_position: &[u32],
) -> Result<(), RenumberError> {
    // Checked first, so that an error changes nothing (the rows are checked before any moves).
    if let Some((entry, &v)) = values
        .iter()
        .enumerate()
        .find(|&(_, &v)| v < 0 || v as usize >= to_position.len())
    {
        return Err(RenumberError::OutOfRange {
            map: 0,
            entry,
            value: v,
            size: to_position.len(),
        });
    }
    permute_rows_in_place(values, arity, from_position)?;
    for v in values.iter_mut() {
        *v = to_position[*v as usize] as i32;
    }
    Ok(())
}
