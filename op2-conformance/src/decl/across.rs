//! The distributed half of [`super::CaseRuntime`] (feature `mpi`): a case's mesh in global
//! numbering on an op2-mpi `MeshBuilder` until its first loop, then partitioned collectively, and
//! this rank's part of it.

use super::partition::{Partition, not_distributed};
use op2::mpi::{
    GlobalMap, GlobalSet, Input, LocalMesh, MeshBuilder, MpiError, Options, Partitioner,
};
use op2::{Op2Error, Result, Runtime, Scalar};
use std::cell::{OnceCell, RefCell};

/// A set of the global mesh.
pub(super) type GSet = GlobalSet;
/// A map of the global mesh.
pub(super) type GMap = GlobalMap;

fn mpi_error(e: MpiError) -> Op2Error {
    match e {
        MpiError::Op2(e) => e,
        other => Op2Error::Communication {
            reason: other.to_string(),
        },
    }
}

/// The mesh in global numbering until it is partitioned, then this rank's part.
pub(super) struct Distributed {
    partition: Partition,
    builder: RefCell<Option<MeshBuilder>>,
    first_map: RefCell<Option<GlobalMap>>,
    /// Names handed to the builder so far (it wants them unique per kind; cases need not).
    names: RefCell<Vec<String>>,
    local: OnceCell<LocalMesh>,
    /// Why partitioning failed (every later need fails alike).
    failed: RefCell<Option<String>>,
}

impl Distributed {
    /// Nothing declared yet; `partition` says how the mesh will be split.
    pub(super) fn new(partition: Partition) -> Self {
        Distributed {
            partition,
            builder: RefCell::new(Some(MeshBuilder::new(Input::Everywhere))),
            first_map: RefCell::new(None),
            names: RefCell::new(Vec::new()),
            local: OnceCell::new(),
            failed: RefCell::new(None),
        }
    }

    /// A set of `size` elements in the global mesh.
    pub(super) fn decl_set(&self, size: usize, name: &str) -> Result<GSet> {
        let unique = self.unique("set", name);
        self.builder()?
            .as_mut()
            .expect("checked by builder()")
            .decl_set(size, &unique)
            .map_err(mpi_error)
    }

    /// A map of the global mesh (the first one is METIS's graph).
    pub(super) fn decl_map(
        &self,
        from: GSet,
        to: GSet,
        arity: usize,
        values: Vec<i32>,
        name: &str,
    ) -> Result<GMap> {
        let unique = self.unique("map", name);
        let g = self
            .builder()?
            .as_mut()
            .expect("checked by builder()")
            .decl_map(from, to, arity, values, &unique)
            .map_err(mpi_error)?;
        self.first_map.borrow_mut().get_or_insert(g);
        Ok(g)
    }

    /// This rank's part of `set` (partitioning first if needed).
    pub(super) fn set(&self, rt: &Runtime, set: GSet) -> Result<op2::Set> {
        Ok(self.local(rt)?.set(set))
    }

    /// This rank's part of `map`.
    pub(super) fn map(&self, rt: &Runtime, map: GMap) -> Result<op2::Map> {
        Ok(self.local(rt)?.map(map))
    }

    /// The global number of each local element of `set`.
    pub(super) fn global_ids(&self, rt: &Runtime, set: GSet) -> Result<&[u64]> {
        Ok(self.local(rt)?.global_ids(set))
    }

    /// Collective: `dat`'s owned values from every rank, in global order, on rank 0.
    pub(super) fn gather<T: Scalar>(
        &self,
        rt: &Runtime,
        dat: &op2::Dat<T>,
    ) -> Result<Option<Vec<T>>> {
        self.local(rt)?.gather(dat).map_err(mpi_error)
    }

    /// The builder, while the mesh is not yet partitioned.
    fn builder(&self) -> Result<std::cell::RefMut<'_, Option<MeshBuilder>>> {
        let b = self.builder.borrow_mut();
        if b.is_none() {
            return Err(not_distributed(
                "a set or map declared after the mesh was partitioned (by the first loop)",
            ));
        }
        Ok(b)
    }

    fn unique(&self, kind: &str, name: &str) -> String {
        let mut names = self.names.borrow_mut();
        let mut candidate = name.to_string();
        let mut k = 1;
        while names.contains(&format!("{kind} {candidate}")) {
            k += 1;
            candidate = format!("{name}_{k}");
        }
        names.push(format!("{kind} {candidate}"));
        candidate
    }

    /// The local mesh, partitioning now (collectively) if this is the first need of it.
    fn local(&self, rt: &Runtime) -> Result<&LocalMesh> {
        if let Some(l) = self.local.get() {
            return Ok(l);
        }
        if let Some(why) = &*self.failed.borrow() {
            return Err(Op2Error::Communication {
                reason: format!("the mesh could not be partitioned: {why}"),
            });
        }
        let builder = self
            .builder
            .borrow_mut()
            .take()
            .expect("not yet partitioned");
        let blocks = Options::new(Partitioner::Blocks);
        let result = match (self.partition, *self.first_map.borrow()) {
            // METIS refuses more parts than its graph has vertices (on every rank alike): such
            // meshes are split in blocks.
            (Partition::Metis, Some(map)) => builder
                .clone()
                .partition(rt, &Options::new(Partitioner::Metis { map }).renumber(true))
                .or_else(|e| match e {
                    MpiError::TooManyParts { .. } => builder.partition(rt, &blocks),
                    other => Err(other),
                }),
            _ => builder.partition(rt, &blocks),
        };
        match result {
            Ok(local) => Ok(self.local.get_or_init(|| local)),
            Err(e) => {
                *self.failed.borrow_mut() = Some(e.to_string());
                Err(mpi_error(e))
            }
        }
    }
}
