//! Sparsity patterns (PyOP2's `Sparsity`): which entries of a matrix can be nonzero, from the
//! (row map, column map) pairs that assembly loops will add element matrices through. Built once per
//! set of maps and block sizes, by counting then filling each row, and shared through a cache.

use crate::error::{LaError, Result};
use op2_core::{Map, Set};
use rayon::prelude::*;
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, Weak};

/// The nonzero pattern of a matrix: compressed sparse rows over scalar rows and columns (node
/// `n` with block size `b` owns scalar rows `n*b .. n*b+b`). Every row of a square pattern has
/// room for its diagonal (Dirichlet rows set it). Cheap to clone: clones share the pattern.
#[derive(Clone)]
pub struct Sparsity(pub(crate) Arc<SparsityData>);

pub(crate) struct SparsityData {
    pub(crate) name: String,
    pub(crate) pairs: Vec<(Map, Map)>,
    pub(crate) row_set: Set,
    pub(crate) col_set: Set,
    pub(crate) dims: (usize, usize),
    /// Scalar rows and columns.
    pub(crate) rows: usize,
    pub(crate) cols: usize,
    /// CSR: `row_ptr[r]..row_ptr[r+1]` index `col_idx`, sorted within each row.
    pub(crate) row_ptr: Vec<usize>,
    pub(crate) col_idx: Vec<u32>,
}

/// The cache key: the pairs by map id, and the block sizes.
type Key = (Vec<(u64, u64)>, (usize, usize));

fn cache() -> &'static Mutex<HashMap<Key, Weak<SparsityData>>> {
    static CACHE: std::sync::OnceLock<Mutex<HashMap<Key, Weak<SparsityData>>>> =
        std::sync::OnceLock::new();
    CACHE.get_or_init(Default::default)
}

impl Sparsity {
    /// The pattern of a matrix that loops will assemble through `pairs` of (row map, column map),
    /// with `dims = (row block size, column block size)` values per node.
    ///
    /// Each pair's maps start from one iteration set; all row maps go to one set (the rows) and
    /// all column maps to one set (the columns). Asking again for the same maps and block sizes
    /// returns the pattern already built, as long as one is still alive.
    pub fn new(pairs: &[(&Map, &Map)], dims: (usize, usize), name: &str) -> Result<Sparsity> {
        let first = pairs
            .first()
            .ok_or_else(|| LaError::NoMaps { name: name.into() })?;
        if dims.0 == 0 || dims.1 == 0 {
            return Err(LaError::ZeroBlock {
                name: name.into(),
                rows: dims.0,
                cols: dims.1,
            });
        }
        let (row_set, col_set) = (first.0.to().clone(), first.1.to().clone());
        for (r, c) in pairs {
            if r.from() != c.from() {
                return Err(LaError::PairSets {
                    name: name.into(),
                    row_map: r.name().into(),
                    row_from: r.from().name().into(),
                    col_map: c.name().into(),
                    col_from: c.from().name().into(),
                });
            }
            for (which, m, expected) in [("row", r, &row_set), ("column", c, &col_set)] {
                if m.to() != expected {
                    return Err(LaError::TargetSets {
                        name: name.into(),
                        which,
                        map: m.name().into(),
                        set: m.to().name().into(),
                        expected: expected.name().into(),
                    });
                }
            }
        }
        let key: Key = (pairs.iter().map(|(r, c)| (r.id(), c.id())).collect(), dims);
        if let Some(found) = cache().lock().unwrap().get(&key).and_then(Weak::upgrade) {
            return Ok(Sparsity(found));
        }
        let data = Arc::new(build(pairs, dims, row_set, col_set, name)?);
        let mut c = cache().lock().unwrap();
        c.retain(|_, w| w.strong_count() > 0);
        c.insert(key, Arc::downgrade(&data));
        Ok(Sparsity(data))
    }

    /// The block pattern of mixed maps (PyOP2's sparsity on mixed data sets): block `(i, j)`
    /// is the pattern of row map `i` and column map `j`, the whole one pattern over the flat
    /// sets of their mixed sets, one value per element.
    pub fn mixed(
        rows: &op2_core::MixedMap,
        cols: &op2_core::MixedMap,
        name: &str,
    ) -> Result<Sparsity> {
        Sparsity::mixed_blocks(rows, cols, (1, 1), name)
    }

    /// [`Sparsity::mixed`] with `dims` values per element, down and across, in every
    /// component (PyOP2's mixed data sets whose components share one `cdim`): element `f` of
    /// the flat row set owns scalar rows `f * dims.0 ..`, as in a block matrix on one set.
    pub fn mixed_blocks(
        rows: &op2_core::MixedMap,
        cols: &op2_core::MixedMap,
        dims: (usize, usize),
        name: &str,
    ) -> Result<Sparsity> {
        Sparsity::new(&[(rows.flat(), cols.flat())], dims, name)
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// Scalar rows (row set size x row block size).
    pub fn rows(&self) -> usize {
        self.0.rows
    }

    /// Scalar columns.
    pub fn cols(&self) -> usize {
        self.0.cols
    }

    /// Block sizes (values per row node, values per column node).
    pub fn dims(&self) -> (usize, usize) {
        self.0.dims
    }

    /// The set whose elements are the rows.
    pub fn row_set(&self) -> &Set {
        &self.0.row_set
    }

    /// The set whose elements are the columns.
    pub fn col_set(&self) -> &Set {
        &self.0.col_set
    }

    /// The (row map, column map) pairs it was built from.
    pub fn pairs(&self) -> &[(Map, Map)] {
        &self.0.pairs
    }

    /// Stored entries.
    pub fn nnz(&self) -> usize {
        self.0.col_idx.len()
    }

    /// CSR row offsets (`rows() + 1` of them).
    pub fn row_offsets(&self) -> &[usize] {
        &self.0.row_ptr
    }

    /// CSR column indices, sorted within each row.
    pub fn col_indices(&self) -> &[u32] {
        &self.0.col_idx
    }

    /// The columns of scalar row `r`. Panics if `r >= rows()`, as slice indexing does.
    pub fn row(&self, r: usize) -> &[u32] {
        &self.0.col_idx[self.0.row_ptr[r]..self.0.row_ptr[r + 1]]
    }

    /// Whether two handles share one pattern.
    pub fn same(&self, other: &Sparsity) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }

    /// The position of entry (`row`, `col`) in the CSR arrays, if the pattern has it.
    pub fn position(&self, row: usize, col: usize) -> Option<usize> {
        if row >= self.0.rows {
            return None;
        }
        let start = self.0.row_ptr[row];
        let col = u32::try_from(col).ok()?;
        self.row(row).binary_search(&col).ok().map(|i| start + i)
    }

    /// This pattern with scalar entries (`rows[k]`, `cols[k]`) added (those already there are
    /// kept once): a pattern of its own, for one matrix that gains entries beyond its maps' (as
    /// a PETSc matrix whose `NEW_NONZERO_ALLOCATION_ERR` is off grows). Loops still assemble
    /// through the same pairs of maps. An entry outside the matrix is [`LaError::Index`].
    pub fn with_entries(&self, rows: &[usize], cols: &[usize]) -> Result<Sparsity> {
        let d = &self.0;
        if rows.len() != cols.len() {
            return Err(LaError::Length {
                what: "columns of the added entries",
                len: cols.len(),
                expected: rows.len(),
            });
        }
        let out_of = |what, index, size| LaError::Index {
            mat: d.name.clone(),
            what,
            index,
            size,
        };
        let mut added: Vec<Vec<u32>> = vec![Vec::new(); d.rows];
        for (&r, &c) in rows.iter().zip(cols) {
            if r >= d.rows {
                return Err(out_of("row", r, d.rows));
            }
            if c >= d.cols {
                return Err(out_of("column", c, d.cols));
            }
            // Columns fit u32: the pattern's own column count does (checked when it was built).
            added[r].push(c as u32);
        }
        let mut row_ptr = Vec::with_capacity(d.rows + 1);
        let mut col_idx = Vec::with_capacity(d.col_idx.len() + rows.len());
        row_ptr.push(0);
        for (r, extra) in added.iter_mut().enumerate() {
            let start = col_idx.len();
            col_idx.extend_from_slice(self.row(r));
            col_idx.append(extra);
            col_idx[start..].sort_unstable();
            // The row's columns once each: dedup the tail of the vector in place.
            let mut kept = start;
            for k in start..col_idx.len() {
                if k == start || col_idx[k] != col_idx[kept - 1] {
                    col_idx[kept] = col_idx[k];
                    kept += 1;
                }
            }
            col_idx.truncate(kept);
            row_ptr.push(col_idx.len());
        }
        Ok(Sparsity(Arc::new(SparsityData {
            name: d.name.clone(),
            pairs: d.pairs.clone(),
            row_set: d.row_set.clone(),
            col_set: d.col_set.clone(),
            dims: d.dims,
            rows: d.rows,
            cols: d.cols,
            row_ptr,
            col_idx,
        })))
    }

    pub(crate) fn is_square(&self) -> bool {
        self.0.row_set == self.0.col_set && self.0.dims.0 == self.0.dims.1
    }
}

impl fmt::Debug for Sparsity {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Sparsity({:?}: {} x {}, blocks {}x{}, {} entries)",
            self.0.name,
            self.0.rows,
            self.0.cols,
            self.0.dims.0,
            self.0.dims.1,
            self.nnz()
        )
    }
}

/// Elements an assembly loop over `set` runs: the owned ones and, under MPI, the exec halo (whose
/// contributions to owned rows are computed redundantly instead of being sent).
pub(crate) fn assembled_elements(set: &Set) -> usize {
    set.exec_size()
}

fn build(
    pairs: &[(&Map, &Map)],
    dims: (usize, usize),
    row_set: Set,
    col_set: Set,
    name: &str,
) -> Result<SparsityData> {
    let row_nodes = row_set.size();
    let col_nodes = col_set.total_size();
    let too_large = |count: u128| LaError::TooLarge {
        what: "sparsity",
        name: name.into(),
        count,
        limit: u32::MAX as u128,
    };
    // Column indices and the per-row marks are 32-bit.
    for n in [
        row_nodes as u128 * dims.0 as u128,
        col_nodes as u128 * dims.1 as u128,
    ] {
        if n >= u32::MAX as u128 {
            return Err(too_large(n));
        }
    }
    let square = row_set == col_set && dims.0 == dims.1;

    // Which (pair, element) touch each row node: counting sort of the row maps' entries. A map
    // holds one row per executed element (owned and exec halo), each value inside its target
    // set: op2 checks both when the map is declared.
    // Maps from an extruded set contribute every layer's rows.
    let layered: Vec<_> = pairs
        .iter()
        .map(|(r, c)| (r.layered_values(), c.layered_values()))
        .collect();
    let maps: Vec<(&[i32], usize, &[i32], usize)> = pairs
        .iter()
        .zip(&layered)
        .map(|((r, c), (rv, cv))| (&rv[..], r.arity(), &cv[..], c.arity()))
        .collect();
    let mut start = vec![0usize; row_nodes + 1];
    for (rv, ..) in &maps {
        for &v in *rv {
            // Rows past the owned ones, and a map's gaps (negative: no row), are left out.
            if v >= 0 && (v as usize) < row_nodes {
                start[v as usize + 1] += 1;
            }
        }
    }
    for i in 0..row_nodes {
        start[i + 1] += start[i];
    }
    let mut fill = start.clone();
    // (pair, element) packed into one word for a compact incidence list.
    let mut touching = vec![(0u32, 0u32); start[row_nodes]];
    for (p, (rv, ra, ..)) in maps.iter().enumerate() {
        for (k, &v) in rv.iter().enumerate() {
            if v < 0 {
                continue;
            }
            let v = v as usize;
            if v < row_nodes {
                touching[fill[v]] = (p as u32, (k / ra) as u32);
                fill[v] += 1;
            }
        }
    }

    // Node-level columns of each row node, in parallel chunks of rows (each with its own marks).
    let chunk = 4096;
    let node_rows: Vec<(Vec<usize>, Vec<u32>)> = (0..row_nodes.div_ceil(chunk))
        .into_par_iter()
        // `mark[c] == r` when column node c is already in row r; one array per worker thread.
        .map_init(
            || vec![u32::MAX; col_nodes],
            |mark, ci| {
                let lo = ci * chunk;
                let hi = (lo + chunk).min(row_nodes);
                let mut counts = Vec::with_capacity(hi - lo);
                let mut cols = Vec::new();
                for r in lo..hi {
                    let before = cols.len();
                    if square {
                        cols.push(r as u32);
                        mark[r] = r as u32;
                    }
                    for &(p, e) in &touching[start[r]..start[r + 1]] {
                        let (_, _, cv, ca) = maps[p as usize];
                        let e = e as usize;
                        for &c in &cv[e * ca..(e + 1) * ca] {
                            // A map with gaps: a negative value reaches no column.
                            if c < 0 {
                                continue;
                            }
                            if mark[c as usize] != r as u32 {
                                mark[c as usize] = r as u32;
                                cols.push(c as u32);
                            }
                        }
                    }
                    cols[before..].sort_unstable();
                    counts.push(cols.len() - before);
                }
                (counts, cols)
            },
        )
        .collect();

    // Expand node columns to scalar entries: row node r, component a has columns c*bc+b.
    let (br, bc) = dims;
    let node_nnz: usize = node_rows.iter().map(|(_, c)| c.len()).sum();
    let nnz = node_nnz as u128 * br as u128 * bc as u128;
    if nnz > isize::MAX as u128 / 4 {
        return Err(too_large(nnz));
    }
    let rows = row_nodes * br;
    let mut row_ptr = Vec::with_capacity(rows + 1);
    let mut col_idx = Vec::with_capacity(nnz as usize);
    row_ptr.push(0);
    for (counts, cols) in &node_rows {
        let mut at = 0;
        for &n in counts {
            let node_cols = &cols[at..at + n];
            at += n;
            for _a in 0..br {
                for &c in node_cols {
                    for b in 0..bc {
                        col_idx.push(c * bc as u32 + b as u32);
                    }
                }
                row_ptr.push(col_idx.len());
            }
        }
    }
    Ok(SparsityData {
        name: name.into(),
        pairs: pairs
            .iter()
            .map(|(r, c)| ((*r).clone(), (*c).clone()))
            .collect(),
        row_set,
        col_set,
        dims,
        rows,
        cols: col_nodes * bc,
        row_ptr,
        col_idx,
    })
}
