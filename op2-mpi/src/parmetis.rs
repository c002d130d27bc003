//! METIS across ranks: ParMETIS's k-way partitioner (`ParMETIS_V3_PartKway`) through a small
//! `extern "C"` layer of our own, on the same distributed graph PT-Scotch gets (each rank the
//! adjacency of its home block of the target set), so no rank holds the whole graph. Linked only
//! with the `parmetis` feature, from the library named `parmetis`: on Debian that is PT-Scotch's
//! ParMETIS interface (`libscotchparmetis-dev`, which partitions with PT-Scotch underneath, and
//! is what the tests run); ParMETIS 4 itself is accepted by the header probe (build.rs), its
//! library's folder named by `OP2_PARMETIS_LIB` (it may need its METIS linked too).

use crate::error::{MpiError, Result};
use crate::mesh::{MeshBuilder, block_range};
use crate::mpi_comm::MpiCommunicator;
use crate::ptscotch::{ToCut, to_cut};
use op2_core::comm::Communicator;

fn failed(reason: impl Into<String>) -> MpiError {
    MpiError::Partitioner {
        partitioner: "metis",
        reason: reason.into(),
    }
}

/// ParMETIS's parts of this rank's home block of `map`'s target set, into `parts` parts, or
/// `None` when the graph is too small to spread (ParMETIS refuses a rank without vertices): the
/// caller then runs METIS on one rank, which holds such a graph easily. Also `None` without the
/// `parmetis` feature, and on ranks that are not MPI's (threads in one process, whose graph is
/// in one process anyway): METIS on one rank is then the METIS there is.
pub(crate) fn partition(
    b: &MeshBuilder,
    comm: &dyn Communicator,
    map: usize,
    parts: usize,
) -> Result<Option<Vec<u32>>> {
    let ranks = comm.size();
    let n = b.sets[b.maps[map].to].size;
    // The same choice on every rank: it depends on the set's size only.
    let on_mpi = comm.as_any().is_some_and(|a| a.is::<MpiCommunicator>());
    if !cfg!(feature = "parmetis") || !on_mpi || n < ranks {
        return Ok(None);
    }
    let (xadj, adj) = match to_cut(b, comm, map, parts)? {
        ToCut::Parts(parts) => return Ok(Some(parts)),
        ToCut::Graph(xadj, adj) => (xadj, adj),
    };
    // Where each rank's home block starts, and the end.
    let mut vtxdist: Vec<usize> = (0..ranks).map(|r| block_range(n, ranks, r).start).collect();
    vtxdist.push(n);
    imp::partition(comm, vtxdist, xadj, adj, parts).map(Some)
}

#[cfg(feature = "parmetis")]
mod imp {
    use super::failed;
    use crate::collective::agree;
    use crate::error::Result;
    use crate::mpi_comm::MpiCommunicator;
    use op2_core::comm::Communicator;
    use std::ffi::c_int;

    /// ParMETIS's `idx_t` as the installed headers define it (build.rs reads them).
    #[cfg(not(parmetis_idx64))]
    type Idx = i32;
    #[cfg(parmetis_idx64)]
    type Idx = i64;
    /// ParMETIS's `real_t`.
    #[cfg(not(parmetis_real64))]
    type Real = f32;
    #[cfg(parmetis_real64)]
    type Real = f64;

    /// ParMETIS's `METIS_OK`.
    const OK: c_int = 1;

    // PT-Scotch's width of its integers, for checking the library against the header (the
    // ParMETIS interface's library needs PT-Scotch's, so it is there).
    #[cfg(parmetis_scotch)]
    #[link(name = "ptscotch")]
    unsafe extern "C" {
        fn SCOTCH_numSizeof() -> c_int;
    }

    /// Whether the linked library's integers are `Idx` wide (PT-Scotch's interface says;
    /// ParMETIS itself cannot be asked).
    fn width_checked() -> Result<()> {
        #[cfg(parmetis_scotch)]
        {
            // SAFETY: a plain query of the linked library.
            let width = unsafe { SCOTCH_numSizeof() } as usize;
            if width != std::mem::size_of::<Idx>() {
                return Err(failed(format!(
                    "the installed PT-Scotch has {}-bit integers, the ParMETIS header said {}-bit: \
                     rebuild op2-mpi with OP2_PARMETIS_INCLUDE naming the matching parmetis.h",
                    8 * width,
                    8 * std::mem::size_of::<Idx>()
                )));
            }
        }
        Ok(())
    }

    #[link(name = "parmetis")]
    unsafe extern "C" {
        // ParMETIS 4's interface (parmetis.h); PT-Scotch's implements the same call.
        fn ParMETIS_V3_PartKway(
            vtxdist: *const Idx,
            xadj: *const Idx,
            adjncy: *const Idx,
            vwgt: *const Idx,
            adjwgt: *const Idx,
            wgtflag: *const Idx,
            numflag: *const Idx,
            ncon: *const Idx,
            nparts: *const Idx,
            tpwgts: *const Real,
            ubvec: *const Real,
            options: *const Idx,
            edgecut: *mut Idx,
            part: *mut Idx,
            comm: *mut mpi::ffi::MPI_Comm,
        ) -> c_int;
    }

    fn idx(v: usize, what: &str) -> Result<Idx> {
        Idx::try_from(v).map_err(|_| {
            failed(format!(
                "{what} {v} does not fit ParMETIS's idx_t ({} bits)",
                8 * std::mem::size_of::<Idx>()
            ))
        })
    }

    fn idxs(v: impl IntoIterator<Item = usize>, what: &str) -> Result<Vec<Idx>> {
        v.into_iter().map(|v| idx(v, what)).collect()
    }

    pub(super) fn partition(
        comm: &dyn Communicator,
        vtxdist: Vec<usize>,
        xadj: Vec<usize>,
        adj: Vec<u64>,
        parts: usize,
    ) -> Result<Vec<u32>> {
        let Some(mpi) = comm
            .as_any()
            .and_then(|a| a.downcast_ref::<MpiCommunicator>())
        else {
            // The same on every rank, and checked by the caller.
            return Err(failed("ParMETIS runs on MPI ranks (op2_mpi::Mpi)"));
        };
        // Each array is converted and freed in turn (the graph is this rank's largest holding
        // while ParMETIS runs).
        let local = (move || -> Result<_> {
            width_checked()?;
            let d = idxs(vtxdist, "vertex")?;
            let x = idxs(xadj, "edge offset")?;
            let a = idxs(adj.into_iter().map(|v| v as usize), "vertex")?;
            Ok((d, x, a, idx(parts, "part count")?))
        })();
        let (vtxdist, xadj, adjncy, nparts) = agree(comm, local)?;
        let n = xadj.len() - 1;
        let mut part: Vec<Idx> = vec![0; n.max(1)];
        // Equal shares, and METIS's usual 5% imbalance.
        let tpwgts: Vec<Real> = vec![1.0 / parts as Real; parts];
        let ubvec: [Real; 1] = [1.05];
        // options[0] = 0: ParMETIS's defaults.
        let options: [Idx; 3] = [0, 0, 0];
        let (wgtflag, numflag, ncon): (Idx, Idx, Idx) = (0, 0, 1);
        let mut edgecut: Idx = 0;
        let rc = mpi.with_raw(|mut raw| {
            // SAFETY: every array lives across the call and has the length ParMETIS reads
            // (vtxdist ranks + 1, xadj local vertices + 1, adjncy xadj's last, tpwgts nparts,
            // part local vertices, at least one); `raw` is the live world communicator, whose
            // lock is held for the whole (collective) call. The prototypes take `xadj` and
            // `adjncy` as mutable, but with `numflag` 0 (C numbering) nothing renumbers them.
            unsafe {
                ParMETIS_V3_PartKway(
                    vtxdist.as_ptr(),
                    xadj.as_ptr(),
                    adjncy.as_ptr(),
                    std::ptr::null(),
                    std::ptr::null(),
                    &wgtflag,
                    &numflag,
                    &ncon,
                    &nparts,
                    tpwgts.as_ptr(),
                    ubvec.as_ptr(),
                    options.as_ptr(),
                    &mut edgecut,
                    part.as_mut_ptr(),
                    &mut raw,
                )
            }
        });
        let result = if rc == OK {
            Ok(())
        } else {
            Err(failed(format!("ParMETIS_V3_PartKway returned {rc}")))
        };
        // The call is collective: every rank got here, and agrees on the outcome.
        agree(comm, result)?;
        part.truncate(n);
        Ok(part.into_iter().map(|p| p as u32).collect())
    }
}

#[cfg(not(feature = "parmetis"))]
mod imp {
    use super::failed;
    use crate::error::Result;
    use op2_core::comm::Communicator;

    pub(super) fn partition(
        _comm: &dyn Communicator,
        _vtxdist: Vec<usize>,
        _xadj: Vec<usize>,
        _adj: Vec<u64>,
        _parts: usize,
    ) -> Result<Vec<u32>> {
        Err(failed(
            "op2-mpi was built without its `parmetis` feature (ParMETIS, or Debian's libscotchparmetis-dev)",
        ))
    }
}
