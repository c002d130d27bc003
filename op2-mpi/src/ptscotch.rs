//! PT-Scotch's distributed graph partitioner through a small `extern "C"` layer of our own (no
//! Rust binding is published): the graph a map induces on its target set is built from every
//! rank's slice of the map, each rank holding the adjacency of its home block of vertices, which
//! is the distribution `SCOTCH_dgraphBuild` takes. Linked only with the `ptscotch` feature; the
//! width of `SCOTCH_Num` is read from the installed header when building and checked against
//! the library when running.

use crate::error::{MpiError, Result};
use crate::mesh::{MeshBuilder, block_range};
use crate::setup::{exchange_pairs, holder, sum_u64};
use op2_core::comm::Communicator;

fn failed(reason: impl Into<String>) -> MpiError {
    MpiError::Partitioner {
        partitioner: "ptscotch",
        reason: reason.into(),
    }
}

/// The adjacency of this rank's home block of the graph `map` induces on its target set (two
/// targets joined when one row reaches both), in compressed rows with global neighbour numbers.
/// Each rank joins the targets of its own rows and sends every pair to the home rank of its
/// first end.
pub(crate) fn home_graph(
    b: &MeshBuilder,
    comm: &dyn Communicator,
    map: usize,
) -> Result<(Vec<usize>, Vec<u64>)> {
    let (ranks, rank) = (comm.size(), comm.rank());
    let m = &b.maps[map];
    let n = b.sets[m.to].size;
    let mut pairs: Vec<(u64, u64)> = Vec::new();
    for row in 0..m.values.len() / m.arity {
        for i in 0..m.arity {
            for j in 0..m.arity {
                let (a, c) = (
                    m.values.get(row * m.arity + i) as u64,
                    m.values.get(row * m.arity + j) as u64,
                );
                if a != c {
                    pairs.push((a, c));
                }
            }
        }
    }
    pairs.sort_unstable();
    pairs.dedup();
    let mut sends: Vec<Vec<u64>> = vec![Vec::new(); ranks];
    for (a, c) in pairs {
        let h = holder(n, ranks, a as usize);
        sends[h].push(a);
        sends[h].push(c);
    }
    let pairs = exchange_pairs(comm, sends)?;
    let home = block_range(n, ranks, rank);
    let mut xadj = vec![0usize; home.len() + 1];
    for &(a, _) in &pairs {
        xadj[a as usize - home.start + 1] += 1;
    }
    for i in 0..home.len() {
        xadj[i + 1] += xadj[i];
    }
    Ok((xadj, pairs.into_iter().map(|(_, c)| c).collect()))
}

/// PT-Scotch's parts of this rank's home block of `map`'s target set, into `parts` parts.
pub(crate) fn partition(
    b: &MeshBuilder,
    comm: &dyn Communicator,
    map: usize,
    parts: usize,
) -> Result<Vec<u32>> {
    let rank = comm.rank();
    let home = block_range(b.sets[b.maps[map].to].size, comm.size(), rank);
    if parts <= 1 {
        return Ok(vec![0; home.len()]);
    }
    if !cfg!(feature = "ptscotch") {
        return imp::partition(comm, &[0], &[], parts);
    }
    let (xadj, adj) = home_graph(b, comm, map)?;
    // An edgeless graph (every row reaches one target) is cut nowhere: home blocks do.
    if sum_u64(comm, adj.len() as u64)? == 0 {
        return Ok(vec![rank as u32; home.len()]);
    }
    imp::partition(comm, &xadj, &adj, parts)
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
        xadj: &[usize],
        adj: &[u64],
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
            (|| -> Result<(Vec<Num>, Vec<Num>)> {
                let x = xadj
                    .iter()
                    .map(|&v| num(v, "edge offset"))
                    .collect::<Result<_>>()?;
                let a = adj
                    .iter()
                    .map(|&v| num(v as usize, "vertex"))
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
        _xadj: &[usize],
        _adj: &[u64],
        _parts: usize,
    ) -> Result<Vec<u32>> {
        Err(failed(
            "op2-mpi was built without its `ptscotch` feature (PT-Scotch, Debian's libptscotch-dev)",
        ))
    }
}
