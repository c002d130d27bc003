//! A partitioned mesh declared on a runtime: its local sets, maps and dats by their global
//! handles, and results gathered back in global order.

use crate::distribute::{Distributed, Options, PartitionReport};
use crate::error::{MpiError, Result};
use crate::mesh::{GlobalDat, GlobalMap, GlobalSet, MeshBuilder, typed};
use op2_core::comm::Communicator;
use op2_core::{Dat, Map, Runtime, Scalar, Set};
use std::any::Any;
use std::fmt;
use std::sync::Arc;

/// This rank's part of a partitioned mesh, declared on a runtime.
pub struct LocalMesh {
    comm: Arc<dyn Communicator>,
    sets: Vec<Set>,
    maps: Vec<Map>,
    dats: Vec<Box<dyn Any + Send + Sync>>,
    global: Vec<Vec<u64>>,
    report: PartitionReport,
}

impl fmt::Debug for LocalMesh {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LocalMesh")
            .field("rank", &self.comm.rank())
            .field("sets", &self.sets)
            .finish_non_exhaustive()
    }
}

impl MeshBuilder {
    /// The collective partition step: every rank calls it with the same declarations; each gets
    /// its sets (core | owned | exec halo | non-exec halo), maps in local numbers and dats with
    /// their halo values, declared on `rt` (whose communicator says the ranks).
    pub fn partition(self, rt: &Runtime, options: &Options) -> Result<LocalMesh> {
        let comm = rt.communicator().clone();
        let distributed = self.distribute(&*comm, options)?;
        distributed.declare(rt)
    }
}

impl Distributed {
    /// Declares this rank's sets (with their halos), maps and dats on `rt`, whose communicator
    /// must be the one that partitioned them.
    pub fn declare(self, rt: &Runtime) -> Result<LocalMesh> {
        let comm = rt.communicator().clone();
        if comm.size() != self.ranks || comm.rank() != self.rank {
            return Err(MpiError::BadDeclaration(format!(
                "partitioned for rank {} of {}, declared on a runtime of rank {} of {}",
                self.rank,
                self.ranks,
                comm.rank(),
                comm.size()
            )));
        }
        let mut sets = Vec::with_capacity(self.sets.len());
        let mut global = Vec::with_capacity(self.sets.len());
        for s in self.sets {
            let set = rt.decl_set_with_halo(s.sizes, s.halo, &s.name)?;
            // Checkpoints save Dats in global numbering (to restart on any number of ranks):
            // numbered before the maps and Dats on the set are declared.
            if rt.config().checkpoint.is_some() {
                rt.number_globally(&set, s.global.clone())?;
            }
            sets.push(set);
            global.push(s.global);
        }
        let maps = self
            .maps
            .into_iter()
            .map(|m| rt.decl_map(&sets[m.from], &sets[m.to], m.arity, m.values, &m.name))
            .collect::<op2_core::Result<Vec<Map>>>()?;
        let dats = self
            .dats
            .into_iter()
            .map(|d| d.declare(rt, &sets[d.set]))
            .collect::<op2_core::Result<Vec<_>>>()?;
        Ok(LocalMesh {
            comm,
            sets,
            maps,
            dats,
            global,
            report: self.report,
        })
    }
}

impl LocalMesh {
    /// The local set declared as `set`.
    pub fn set(&self, set: GlobalSet) -> Set {
        self.sets[set.0].clone()
    }

    /// The local map declared as `map`.
    pub fn map(&self, map: GlobalMap) -> Map {
        self.maps[map.0].clone()
    }

    /// The local dat declared as `dat`.
    pub fn dat<T: Scalar>(&self, dat: GlobalDat<T>) -> Dat<T> {
        typed::<T>(&*self.dats[dat.0])
    }

    /// Global number of each local element of `set` (core, owned, exec halo, non-exec halo).
    pub fn global_ids(&self, set: GlobalSet) -> &[u64] {
        &self.global[set.0]
    }

    /// The partition's quality (every rank's section sizes, the edge cut, the time taken).
    pub fn report(&self) -> &PartitionReport {
        &self.report
    }

    fn set_index(&self, set: &Set) -> Result<usize> {
        self.sets.iter().position(|s| s == set).ok_or_else(|| {
            MpiError::BadDeclaration(format!(
                "set `{}` is not part of this distributed mesh",
                set.name()
            ))
        })
    }

    /// This rank's owned values of `dat` (forcing pending loops) with their global numbers.
    pub fn owned_values<T: Scalar>(&self, dat: &Dat<T>) -> Result<(Vec<u64>, Vec<T>)> {
        let s = self.set_index(dat.set())?;
        let owned = dat.set().size();
        let mut values = dat.to_vec()?;
        values.truncate(owned * dat.dim());
        Ok((self.global[s][..owned].to_vec(), values))
    }

    /// Collective: every rank's owned values of `dat`, in global order, on rank 0 (`None` on the
    /// others).
    pub fn gather<T: Scalar>(&self, dat: &Dat<T>) -> Result<Option<Vec<T>>> {
        let (ids, values) = self.owned_values(dat)?;
        let ranks = self.comm.size();
        let mut message: Vec<u8> = bytemuck::cast_slice(&[ids.len() as u64]).to_vec();
        message.extend_from_slice(bytemuck::cast_slice(&ids));
        message.extend_from_slice(bytemuck::cast_slice(&values));
        let mut sends = vec![Vec::new(); ranks];
        sends[0] = message;
        let got = self.comm.all_to_all_v(sends)?;
        if self.comm.rank() != 0 {
            return Ok(None);
        }
        let dim = dat.dim();
        let total: usize = got
            .iter()
            .map(|m| {
                m.get(..8)
                    .map_or(0, |b| bytemuck::pod_read_unaligned::<u64>(b) as usize)
            })
            .sum();
        let mut whole = vec![T::ZERO; total * dim];
        let mut filled = vec![false; total];
        for m in &got {
            let n = bytemuck::pod_read_unaligned::<u64>(&m[..8]) as usize;
            let ids: Vec<u64> = bytemuck::pod_collect_to_vec(&m[8..8 + 8 * n]);
            let vals: Vec<T> = bytemuck::pod_collect_to_vec(&m[8 + 8 * n..]);
            for (i, &g) in ids.iter().enumerate() {
                let g = g as usize;
                if g >= total || std::mem::replace(&mut filled[g], true) {
                    return Err(MpiError::Op2(op2_core::Op2Error::Communication {
                        reason: format!(
                            "element {g} of `{}` is owned twice or out of range",
                            dat.name()
                        ),
                    }));
                }
                whole[g * dim..(g + 1) * dim].copy_from_slice(&vals[i * dim..(i + 1) * dim]);
            }
        }
        Ok(Some(whole))
    }
}
