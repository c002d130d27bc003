//! PT-Scotch's distributed graph partitioner through a small `extern "C"` layer of our own (no
//! Rust binding is published): the graph a map induces on its target set is built from every
//! rank's slice of the map, each rank holding the adjacency of its home block of vertices, which
//! is the distribution `SCOTCH_dgraphBuild` takes. Linked only with the `ptscotch` feature; the
//! width of `SCOTCH_Num` is read from the installed header when building and checked against
//! the library when running.

use crate::error::{MpiError, Result};
use crate::mesh::{MapDecl, MeshBuilder, block_range};
use crate::setup::{all_reduce_words, exchange_words, holder, sum_u64};
use op2_core::comm::{Communicator, ReduceOp};

fn failed(reason: impl Into<String>) -> MpiError {
    MpiError::Partitioner {
        partitioner: "ptscotch",
        reason: reason.into(),
    }
}

/// Pairs per round of [`home_graph`] (as many map rows as make about this many): bounds what is
/// in flight to a few MiB per rank however large the map and its arity.
const GRAPH_BATCH: usize = 1 << 16;

/// Calls `f(a, c)` for every ordered pair of distinct targets `a`, `c` of one row among `rows`
/// of map `m` (both orders, as the graph is undirected).
fn for_each_pair(m: &MapDecl, rows: std::ops::Range<usize>, mut f: impl FnMut(u64, u64)) {
    for row in rows {
        for i in 0..m.arity {
            let a = m.values.get(row * m.arity + i) as u64;
            for j in 0..m.arity {
                let c = m.values.get(row * m.arity + j) as u64;
                if a != c {
                    f(a, c);
                }
            }
        }
    }
}

/// The adjacency of this rank's home block of the graph `map` induces on its target set (two
/// targets joined when one row reaches both), in compressed rows with global neighbour numbers,
/// sorted, each once. Each rank sends the distinct pairs of its own rows to the home rank of
/// their first end, in rounds of about [`GRAPH_BATCH`] pairs; the home rank keeps each pair as
/// one word (its local vertex in the high half, the neighbour in the low) when the numbers fit,
/// merging repeats whenever its list has doubled, so the graph is never held as pairs of 64-bit
/// numbers, nor whole on its way.
pub(crate) fn home_graph(
    b: &MeshBuilder,
    comm: &dyn Communicator,
    map: usize,
) -> Result<(Vec<usize>, Vec<u64>)> {
    let (ranks, rank) = (comm.size(), comm.rank());
    let m = &b.maps[map];
    let n = b.sets[m.to].size;
    let home = block_range(n, ranks, rank);
    let rows = m.values.len().checked_div(m.arity).unwrap_or(0);
    // Rows per round: the same on every rank (the arity is the map's).
    let per_round = (GRAPH_BATCH / (m.arity * m.arity.saturating_sub(1)).max(1)).max(1);
    let mut rounds = [rows.div_ceil(per_round) as u64];
    all_reduce_words(comm, &mut rounds, ReduceOp::Max)?;
    let batches =
        (0..rounds[0] as usize).map(|r| (r * per_round).min(rows)..((r + 1) * per_round).min(rows));
    let start = home.start as u64;
    // The same choice on every rank: it depends on the set's size only.
    if n as u64 <= 1 << 32 {
        let keys = gather_pairs(comm, m, n, batches, |a, c| (a - start) << 32 | c)?;
        let xadj = offsets(home.len(), keys.iter().map(|&k| (k >> 32) as usize));
        // In place: the neighbour is the low half of each word.
        let adj = keys.into_iter().map(|k| k & 0xffff_ffff).collect();
        Ok((xadj, adj))
    } else {
        let keys = gather_pairs(comm, m, n, batches, |a, c| {
            u128::from(a - start) << 64 | u128::from(c)
        })?;
        let xadj = offsets(home.len(), keys.iter().map(|&k| (k >> 64) as usize));
        Ok((xadj, keys.into_iter().map(|k| k as u64).collect()))
    }
}

/// The pairs of `m`'s rows in `batches` (one round each, the same count on every rank) sent to
/// their home ranks, received here as keys `key(a, c)`: sorted, each once.
fn gather_pairs<K: Ord + Copy>(
    comm: &dyn Communicator,
    m: &MapDecl,
    n: usize,
    batches: impl Iterator<Item = std::ops::Range<usize>>,
    key: impl Fn(u64, u64) -> K,
) -> Result<Vec<K>> {
    let ranks = comm.size();
    let mut keys: Vec<K> = Vec::new();
    let mut merged = 0;
    for batch in batches {
        let mut pairs: Vec<Vec<(u64, u64)>> = vec![Vec::new(); ranks];
        for_each_pair(m, batch, |a, c| {
            pairs[holder(n, ranks, a as usize)].push((a, c))
        });
        // Rows sharing targets repeat pairs: each is sent once per round.
        let sends = pairs
            .into_iter()
            .map(|mut p| {
                p.sort_unstable();
                p.dedup();
                p.into_iter().flat_map(|(a, c)| [a, c]).collect()
            })
            .collect();
        let received = exchange_words(comm, sends)?;
        keys.reserve_exact(received.iter().map(|w| w.len() / 2).sum());
        for words in received {
            keys.extend(words.chunks_exact(2).map(|p| key(p[0], p[1])));
        }
        // Repeats across rounds and ranks merged whenever the list has doubled: at most twice
        // the graph is held, and sorting stays n log n over all rounds.
        if keys.len() >= 2 * merged.max(GRAPH_BATCH) {
            keys.sort_unstable();
            keys.dedup();
            merged = keys.len();
        }
    }
    keys.sort_unstable();
    keys.dedup();
    keys.shrink_to_fit();
    Ok(keys)
}

/// Compressed-row offsets of `len` vertices from the (sorted) vertex of every entry.
fn offsets(len: usize, vertices: impl Iterator<Item = usize>) -> Vec<usize> {
    let mut xadj = vec![0usize; len + 1];
    for v in vertices {
        xadj[v + 1] += 1;
    }
    for i in 0..len {
        xadj[i + 1] += xadj[i];
    }
    xadj
}

/// What a distributed graph partitioner (PT-Scotch, ParMETIS) is handed: this rank's home
/// block of the graph, or its parts already when there is nothing to cut.
pub(crate) enum ToCut {
    /// The home block's adjacency ([`home_graph`]).
    Graph(Vec<usize>, Vec<u64>),
    /// The home block's parts: one part, or a graph without edges anywhere (cut nowhere: home
    /// blocks do).
    Parts(Vec<u32>),
}

/// [`ToCut`] of `map`'s graph into `parts` parts (collective; the same choice on every rank).
pub(crate) fn to_cut(
    b: &MeshBuilder,
    comm: &dyn Communicator,
    map: usize,
    parts: usize,
) -> Result<ToCut> {
    let rank = comm.rank();
    let home = block_range(b.sets[b.maps[map].to].size, comm.size(), rank);
    if parts <= 1 {
        return Ok(ToCut::Parts(vec![0; home.len()]));
    }
    let (xadj, adj) = home_graph(b, comm, map)?;
    if sum_u64(comm, adj.len() as u64)? == 0 {
        return Ok(ToCut::Parts(vec![rank as u32; home.len()]));
    }
    Ok(ToCut::Graph(xadj, adj))
}

/// PT-Scotch's parts of this rank's home block of `map`'s target set, into `parts` parts.
pub(crate) fn partition(
    b: &MeshBuilder,
    comm: &dyn Communicator,
    map: usize,
    parts: usize,
) -> Result<Vec<u32>> {
    if parts > 1 && !cfg!(feature = "ptscotch") {
        return imp::partition(comm, vec![0], Vec::new(), parts);
    }
    match to_cut(b, comm, map, parts)? {
        ToCut::Parts(parts) => Ok(parts),
        ToCut::Graph(xadj, adj) => imp::partition(comm, xadj, adj, parts),
    }
}

#[cfg(feature = "ptscotch")]
mod imp {
    use super::failed;
    use crate::collective::agree;
    use crate::error::Result;
    use crate::mpi_comm::MpiCommunicator;
    use op2_core::comm::Communicator;
    use std::ffi::{c_int, c_void};

    /// `SCOTCH_Num` as the installed header defines it (build.rs reads it).
    #[cfg(not(scotch_num64))]
    type Num = i32;
    #[cfg(scotch_num64)]
    type Num = i64;

    // The calls of PT-Scotch 6/7's library interface (ptscotch.h, scotch.h). The graph and
    // strategy objects are allocated by the library itself, so their sizes need not be known.
    #[link(name = "ptscotch")]
    #[link(name = "ptscotcherr")]
    #[link(name = "scotch")]
    unsafe extern "C" {
        fn SCOTCH_numSizeof() -> c_int;
        fn SCOTCH_dgraphAlloc() -> *mut c_void;
        fn SCOTCH_dgraphInit(graph: *mut c_void, comm: mpi::ffi::MPI_Comm) -> c_int;
        fn SCOTCH_dgraphBuild(
            graph: *mut c_void,
            baseval: Num,
            vertlocnbr: Num,
            vertlocmax: Num,
            vertloctab: *mut Num,
            vendloctab: *mut Num,
            veloloctab: *mut Num,
            vlblloctab: *mut Num,
            edgelocnbr: Num,
            edgelocsiz: Num,
            edgeloctab: *mut Num,
            edgegsttab: *mut Num,
            edloloctab: *mut Num,
        ) -> c_int;
        fn SCOTCH_dgraphPart(
            graph: *mut c_void,
            partnbr: Num,
            strat: *mut c_void,
            partloctab: *mut Num,
        ) -> c_int;
        fn SCOTCH_dgraphExit(graph: *mut c_void);
        fn SCOTCH_stratAlloc() -> *mut c_void;
        fn SCOTCH_stratInit(strat: *mut c_void) -> c_int;
        fn SCOTCH_stratExit(strat: *mut c_void);
        fn SCOTCH_memFree(ptr: *mut c_void);
    }

    /// Frees the library's objects however the call ends.
    struct Objects {
        graph: *mut c_void,
        strat: *mut c_void,
        graph_live: bool,
        strat_live: bool,
    }

    impl Drop for Objects {
        fn drop(&mut self) {
            // SAFETY: each pointer came from its Alloc call and is exited only when initialised.
            unsafe {
                if self.graph_live {
                    SCOTCH_dgraphExit(self.graph);
                }
                if self.strat_live {
                    SCOTCH_stratExit(self.strat);
                }
                if !self.graph.is_null() {
                    SCOTCH_memFree(self.graph);
                }
                if !self.strat.is_null() {
                    SCOTCH_memFree(self.strat);
                }
            }
        }
    }

    fn num(v: usize, what: &str) -> Result<Num> {
        Num::try_from(v).map_err(|_| {
            failed(format!(
                "{what} {v} does not fit SCOTCH_Num ({} bits)",
                8 * std::mem::size_of::<Num>()
            ))
        })
    }

    pub(super) fn partition(
        comm: &dyn Communicator,
        xadj: Vec<usize>,
        adj: Vec<u64>,
        parts: usize,
    ) -> Result<Vec<u32>> {
        let Some(mpi) = comm
            .as_any()
            .and_then(|a| a.downcast_ref::<MpiCommunicator>())
        else {
            // The same on every rank: every rank was handed the same kind of communicator.
            return Err(failed(
                "PT-Scotch runs on MPI ranks (op2_mpi::Mpi), not on this communicator",
            ));
        };
        // SAFETY: a plain query of the linked library.
        let width = unsafe { SCOTCH_numSizeof() } as usize;
        let local = if width != std::mem::size_of::<Num>() {
            Err(failed(format!(
                "the installed PT-Scotch has {}-bit SCOTCH_Num, its header said {}-bit: rebuild op2-mpi",
                8 * width,
                8 * std::mem::size_of::<Num>()
            )))
        } else {
            // Each array is converted and freed in turn (the graph is this rank's largest
            // holding while PT-Scotch runs).
            (move || -> Result<(Vec<Num>, Vec<Num>)> {
                let x = xadj
                    .into_iter()
                    .map(|v| num(v, "edge offset"))
                    .collect::<Result<_>>()?;
                let a = adj
                    .into_iter()
                    .map(|v| num(v as usize, "vertex"))
                    .collect::<Result<_>>()?;
                Ok((x, a))
            })()
        };
        let (mut vertloctab, mut edgeloctab) = agree(comm, local)?;
        let n = vertloctab.len() - 1;
        let edges = edgeloctab.len();
        let mut part: Vec<Num> = vec![0; n.max(1)];
        let result = mpi.with_raw(|raw| -> std::result::Result<(), String> {
            let mut o = Objects {
                // SAFETY: allocations by the library, checked below.
                graph: unsafe { SCOTCH_dgraphAlloc() },
                strat: unsafe { SCOTCH_stratAlloc() },
                graph_live: false,
                strat_live: false,
            };
            if o.graph.is_null() || o.strat.is_null() {
                return Err("out of memory allocating the graph".into());
            }
            // SAFETY: `o.graph` is a fresh graph object; `raw` is the live world communicator,
            // whose lock is held for the whole call.
            if unsafe { SCOTCH_dgraphInit(o.graph, raw) } != 0 {
                return Err("SCOTCH_dgraphInit failed (see its message above)".into());
            }
            o.graph_live = true;
            // SAFETY: compact arrays (vendloctab NULL: vertloctab + 1 is used), alive until
            // the graph is exited at the end of this closure.
            let rc = unsafe {
                SCOTCH_dgraphBuild(
                    o.graph,
                    0,
                    n as Num,
                    n as Num,
                    vertloctab.as_mut_ptr(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                    edges as Num,
                    edges as Num,
                    edgeloctab.as_mut_ptr(),
                    std::ptr::null_mut(),
                    std::ptr::null_mut(),
                )
            };
            if rc != 0 {
                return Err("SCOTCH_dgraphBuild refused the graph".into());
            }
            // SAFETY: a fresh strategy object.
            if unsafe { SCOTCH_stratInit(o.strat) } != 0 {
                return Err("SCOTCH_stratInit failed".into());
            }
            o.strat_live = true;
            // SAFETY: `part` holds one entry per local vertex (at least one, never read then).
            let rc =
                unsafe { SCOTCH_dgraphPart(o.graph, parts as Num, o.strat, part.as_mut_ptr()) };
            if rc != 0 {
                return Err("SCOTCH_dgraphPart failed".into());
            }
            Ok(())
        });
        // PT-Scotch's calls are collective: every rank got here, and agrees on the outcome.
        agree(comm, result.map_err(failed))?;
        part.truncate(n);
        Ok(part.into_iter().map(|p| p as u32).collect())
    }
}

#[cfg(not(feature = "ptscotch"))]
mod imp {
    use super::failed;
    use crate::error::Result;
    use op2_core::comm::Communicator;

    pub(super) fn partition(
        _comm: &dyn Communicator,
        _xadj: Vec<usize>,
        _adj: Vec<u64>,
        _parts: usize,
    ) -> Result<Vec<u32>> {
        Err(failed(
            "op2-mpi was built without its `ptscotch` feature (PT-Scotch, Debian's libptscotch-dev)",
        ))
    }
}
