//! Running a program on thread ranks (`op2::thread_communicators`): each rank hands in its
//! block of every set's maps and Dats (as from a parallel file read), the mesh is partitioned and
//! each rank declares its own part with halos, and every rank runs the same steps. Reads gather
//! each Dat in global order on rank 0, whose observations are compared with the reference; a host
//! write lands on the rank that owns the element.

use crate::program::{Program, Ty};
use crate::run::{DatH, Declared, FromF64, RuntimeOptions, Spread, Target, run_steps, runtime, to};
use op2::mpi::{GlobalDat, Input, LocalMesh, MeshBuilder, Options, Partitioner, block_range};
use op2::{Communicator, Scalar};
use std::collections::HashMap;
use std::path::Path as FsPath;
use std::sync::Arc;
use std::time::Duration;

/// A rank's part of the distributed mesh.
pub(crate) struct Distributed {
    local: LocalMesh,
    /// Per set: the owned elements' local numbers by global number.
    owned: Vec<HashMap<u64, usize>>,
}

impl Spread for Distributed {
    fn owned(&self, set: usize, e: usize) -> Option<usize> {
        self.owned[set].get(&(e as u64)).copied()
    }

    fn gather(&self, d: &DatH) -> op2::Result<Vec<f64>> {
        let values = d.gather(&self.local)?;
        Ok(values.unwrap_or_default())
    }
}

/// One Dat of the mesh being declared, typed.
enum GlobalDatH {
    F64(GlobalDat<f64>),
    F32(GlobalDat<f32>),
    I32(GlobalDat<i32>),
    U32(GlobalDat<u32>),
    I64(GlobalDat<i64>),
    U64(GlobalDat<u64>),
}

fn mpi_err(what: &str) -> impl Fn(op2::mpi::MpiError) -> String + '_ {
    move |e| format!("{what}: {e}")
}

/// Runs `p` on `ranks` thread ranks; what rank 0 saw.
pub(crate) fn execute_on_ranks(
    p: &Program,
    t: &Target,
    ranks: usize,
    cache: Option<&FsPath>,
) -> Result<Vec<Vec<f64>>, String> {
    if !p.is_plain() {
        return Err("thread ranks run programs of plain sets only".into());
    }
    // A rank that fails leaves the others waiting in a collective: the timeout ends them
    // (`OP2_FUZZ_RANK_TIMEOUT` seconds, 120 unless set: shrinking a hang goes faster with less).
    let timeout = std::env::var("OP2_FUZZ_RANK_TIMEOUT")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(120);
    let comms = op2::thread_communicators(ranks, Duration::from_secs(timeout));
    let results: Vec<Result<Vec<Vec<f64>>, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = comms
            .into_iter()
            .map(|comm| s.spawn(move || rank(p, t, Arc::new(comm), ranks, cache)))
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|_| Err("a rank panicked".into())))
            .collect()
    });
    let mut first = None;
    for (r, res) in results.into_iter().enumerate() {
        match res {
            Ok(seen) if r == 0 => first = Some(seen),
            Ok(_) => {}
            Err(e) => return Err(format!("rank {r}: {e}")),
        }
    }
    Ok(first.unwrap_or_default())
}

fn rank(
    p: &Program,
    t: &Target,
    comm: Arc<dyn Communicator>,
    ranks: usize,
    cache: Option<&FsPath>,
) -> Result<Vec<Vec<f64>>, String> {
    let me = comm.rank();
    let rt = runtime(t, RuntimeOptions::of(p), cache, Some(comm))
        .map_err(|e| format!("runtime: {e}"))?;
    let mut b = MeshBuilder::new(Input::Slices);
    let rows = |set: usize| block_range(p.sets[set], ranks, me);
    let sets = (0..p.sets.len())
        .map(|i| b.decl_set(p.sets[i], &format!("s{i}")))
        .collect::<Result<Vec<_>, _>>()
        .map_err(mpi_err("decl_set"))?;
    let maps = p
        .maps
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let r = rows(m.from);
            let values = &m.values[r.start * m.arity..r.end * m.arity];
            b.decl_map(sets[m.from], sets[m.to], m.arity, values, &format!("m{i}"))
        })
        .collect::<Result<Vec<_>, _>>()
        .map_err(mpi_err("decl_map"))?;
    fn dat<T: Scalar + FromF64>(
        b: &mut MeshBuilder,
        set: op2::mpi::GlobalSet,
        dim: usize,
        values: &[f64],
        name: &str,
    ) -> op2::mpi::Result<GlobalDat<T>> {
        b.decl_dat(set, dim, &to::<T>(values), name)
    }
    let dats = p
        .dats
        .iter()
        .enumerate()
        .map(|(i, d)| {
            let r = rows(d.set);
            let v = &d.init[r.start * d.dim..r.end * d.dim];
            let (s, name) = (sets[d.set], format!("d{i}"));
            Ok(match d.ty {
                Ty::F64 => GlobalDatH::F64(dat(&mut b, s, d.dim, v, &name)?),
                Ty::F32 => GlobalDatH::F32(dat(&mut b, s, d.dim, v, &name)?),
                Ty::I32 => GlobalDatH::I32(dat(&mut b, s, d.dim, v, &name)?),
                Ty::U32 => GlobalDatH::U32(dat(&mut b, s, d.dim, v, &name)?),
                Ty::I64 => GlobalDatH::I64(dat(&mut b, s, d.dim, v, &name)?),
                Ty::U64 => GlobalDatH::U64(dat(&mut b, s, d.dim, v, &name)?),
            })
        })
        .collect::<Result<Vec<_>, op2::mpi::MpiError>>()
        .map_err(mpi_err("decl_dat"))?;
    // METIS on the first map whose target has an element per rank; blocks otherwise.
    let partitioner = p
        .maps
        .iter()
        .position(|m| p.sets[m.to] >= ranks && p.block_size.is_some_and(|b| b % 2 == 0))
        .map_or(Partitioner::Blocks, |m| Partitioner::Metis { map: maps[m] });
    let local = b
        .partition(&rt, &Options::new(partitioner).renumber(p.drop_first))
        .map_err(mpi_err("partition"))?;
    let owned = sets
        .iter()
        .map(|&s| {
            let n = local.set(s).size();
            local.global_ids(s)[..n]
                .iter()
                .enumerate()
                .map(|(e, &g)| (g, e))
                .collect()
        })
        .collect();
    let declared = Declared {
        sets: sets.iter().map(|&s| local.set(s)).collect(),
        maps: maps.iter().map(|&m| local.map(m)).collect(),
        dats: dats
            .iter()
            .map(|d| match *d {
                GlobalDatH::F64(g) => DatH::F64(local.dat(g)),
                GlobalDatH::F32(g) => DatH::F32(local.dat(g)),
                GlobalDatH::I32(g) => DatH::I32(local.dat(g)),
                GlobalDatH::U32(g) => DatH::U32(local.dat(g)),
                GlobalDatH::I64(g) => DatH::I64(local.dat(g)),
                GlobalDatH::U64(g) => DatH::U64(local.dat(g)),
            })
            .collect(),
        mesh: Some(Box::new(Distributed { local, owned })),
    };
    run_steps(p, rt, declared)
}
