//! The collective partition step: check that every rank declared the same mesh, partition and
//! build each rank's sections from distributed data ([`crate::setup`]), build the halo lists and
//! move every dat's rows to the ranks that hold them, all by requests to owners; and the same in
//! one process over the whole mesh ([`MeshBuilder::plan`]) for reports.

use crate::collective::{agree, all_gather, bytes_to_u64s, u64s_to_bytes};
use crate::error::{MpiError, Result};
use crate::geometric::bisection_distributed;
use crate::layout::{RankLayout, locality_order, rank_layout};
use crate::mesh::{Input, MeshBuilder, block_range};
use crate::partition::{
    Partitioner, TopoMap, Topology, bisection, blocks, edge_cut, metis, propagate,
};
use crate::setup::{distributed_edge_cut, fetch};
use op2_core::comm::Communicator;
use op2_core::{DType, HaloNeighbour, Runtime, Set, SetHalo, SetSizes};
use std::fmt;
use std::time::Instant;

/// How to partition.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Options {
    /// Who owns what.
    pub partitioner: Partitioner,
    /// Order each rank's core and owned elements for locality (reverse Cuthill-McKee on the
    /// partitioned set, the others following through the maps), as OP2's `op_renumber`.
    pub renumber: bool,
}

impl Options {
    /// `partitioner`, no renumbering.
    pub fn new(partitioner: Partitioner) -> Self {
        Options {
            partitioner,
            renumber: false,
        }
    }

    /// With or without renumbering.
    pub fn renumber(mut self, on: bool) -> Self {
        self.renumber = on;
        self
    }
}

/// What a partition gives: the cut and every rank's section sizes.
#[derive(Debug, Clone, PartialEq)]
pub struct PartitionReport {
    /// The partitioner's name.
    pub partitioner: &'static str,
    /// Number of parts.
    pub parts: usize,
    /// Edges of the measured graph (see [`PartitionReport::cut_map`]) joining different parts.
    pub edge_cut: usize,
    /// The map whose target graph the cut is measured on (the METIS map, else the first map
    /// whose target set is the partitioned set, else the first map).
    pub cut_map: String,
    /// Per set: its name and every rank's section sizes.
    pub sets: Vec<(String, Vec<SetSizes>)>,
    /// Seconds spent partitioning (gathering, partitioning and building this rank's sections).
    pub seconds: f64,
}

impl PartitionReport {
    /// The largest halo (exec + non-exec) of `set` over all ranks.
    pub fn largest_halo(&self, set: &str) -> Option<usize> {
        let (_, sizes) = self.sets.iter().find(|(n, _)| n == set)?;
        sizes.iter().map(|s| s.exec_halo + s.nonexec_halo).max()
    }
}

/// One set on this rank after partitioning.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalSet {
    /// The set's name.
    pub name: String,
    /// Section sizes.
    pub sizes: SetSizes,
    /// What each neighbour sends and receives.
    pub halo: SetHalo,
    /// Global number of each local element.
    pub global: Vec<u64>,
}

/// One map on this rank: rows for core, owned and exec-halo elements, in local numbers.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LocalMap {
    /// The map's name.
    pub name: String,
    /// Source set (index into [`Distributed::sets`]).
    pub from: usize,
    /// Target set.
    pub to: usize,
    /// Targets per element.
    pub arity: usize,
    /// Local target numbers, row-major.
    pub values: Vec<i32>,
}

/// One dat on this rank: every local element's values (halos included), in local order.
pub struct LocalDat {
    /// The dat's name.
    pub name: String,
    /// Its set (index into [`Distributed::sets`]).
    pub set: usize,
    /// Values per element.
    pub dim: usize,
    /// Element type.
    pub dtype: DType,
    /// The values' bytes.
    pub bytes: Vec<u8>,
    make: crate::mesh::MakeDat,
}

impl LocalDat {
    /// Declares it on `rt` over `set`, as the type it was declared with.
    pub(crate) fn declare(
        &self,
        rt: &Runtime,
        set: &Set,
    ) -> op2_core::Result<Box<dyn std::any::Any + Send + Sync>> {
        (self.make)(rt, set, self.dim, &self.bytes, &self.name)
    }
}

impl fmt::Debug for LocalDat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "LocalDat({:?}, set {}, dim {}, {:?})",
            self.name, self.set, self.dim, self.dtype
        )
    }
}

/// This rank's part of a partitioned mesh, before it is declared on a runtime.
#[derive(Debug)]
pub struct Distributed {
    /// This rank.
    pub rank: usize,
    /// Number of ranks.
    pub ranks: usize,
    /// Sets, in declaration order.
    pub sets: Vec<LocalSet>,
    /// Maps, in declaration order.
    pub maps: Vec<LocalMap>,
    /// Dats, in declaration order.
    pub dats: Vec<LocalDat>,
    /// The partition's quality, the same on every rank.
    pub report: PartitionReport,
}

// ---- the partition step ----------------------------------------------------------------------

impl MeshBuilder {
    /// The partition step without a runtime: this rank's part as plain data. No rank holds more
    /// than its share of the mesh at any point (docs/05-ranks.md), except with
    /// [`Partitioner::Metis`] without the `parmetis` feature, which partitions on rank 0, and the
    /// input itself when it is [`Input::Everywhere`] or [`Input::Root`].
    pub fn distribute(self, comm: &dyn Communicator, options: &Options) -> Result<Distributed> {
        let start = Instant::now();
        let (ranks, rank) = (comm.size(), comm.rank());

        // The same declarations everywhere.
        let ours = format!(
            "{}; partitioner {:?}; renumber {}",
            self.summary(),
            options.partitioner,
            options.renumber
        );
        let all = all_gather(comm, ours.clone().into_bytes())?;
        if let Some(r) = all.iter().position(|s| *s != all[0]) {
            let (r, theirs) = if r == rank {
                (0, &all[0])
            } else {
                (r, &all[r])
            };
            return Err(MpiError::MismatchedDeclarations {
                rank: r,
                theirs: String::from_utf8_lossy(theirs).into_owned(),
                ours,
            });
        }
        drop(all);
        agree(
            comm,
            self.check_options(options)
                .and_then(|()| self.check_lengths(ranks, rank))
                .and_then(|()| self.check_part_count(options, ranks)),
        )?;

        let mut b = self.into_slices(comm)?;
        b.check_slice_values(comm)?;
        let first = b.first_set_of(options);
        let home_parts = b.home_parts(comm, options)?;
        let order = (options.renumber && !b.sets.is_empty()).then_some(first);
        // Its last failures (a part past 32-bit local numbers) come after its last collective.
        let layout = agree(comm, b.build_layout(comm, home_parts, order))?;
        let cut_map = b.cut_map(options);
        let edge_cut = match cut_map {
            Some(m) => distributed_edge_cut(&b, comm, &layout, m)?,
            None => 0,
        };
        let halos = exchange_lists(comm, &layout)?;
        let blocks_of_dats = b
            .dats
            .iter_mut()
            .map(|d| std::mem::take(&mut d.bytes))
            .collect();
        let dats = b.move_dat_rows(comm, &layout, blocks_of_dats)?;

        // Every rank's sizes, for the report.
        let everyone: Vec<Vec<u64>> = all_gather(comm, u64s_to_bytes(&layout.section_sizes()))?
            .iter()
            .map(|b| bytes_to_u64s(b))
            .collect();
        let report = b.report(
            options,
            edge_cut,
            cut_map,
            &everyone,
            start.elapsed().as_secs_f64(),
        );

        let RankLayout { sets, maps } = layout;
        Ok(Distributed {
            rank,
            ranks,
            sets: sets
                .into_iter()
                .zip(halos)
                .zip(&b.sets)
                .map(|((s, halo), d)| LocalSet {
                    name: d.name.clone(),
                    sizes: s.sizes,
                    halo,
                    global: s.global,
                })
                .collect(),
            maps: maps
                .into_iter()
                .zip(&b.maps)
                .map(|(values, m)| LocalMap {
                    name: m.name.clone(),
                    from: m.from,
                    to: m.to,
                    arity: m.arity,
                    values,
                })
                .collect(),
            dats,
            report,
        })
    }

    /// The set the partitioner splits (from the declarations alone).
    pub(crate) fn first_set_of(&self, options: &Options) -> usize {
        match options.partitioner {
            Partitioner::Blocks => 0,
            Partitioner::Metis { map } | Partitioner::PtScotch { map } => self.maps[map.0].to,
            Partitioner::Geometric { coords } => self.dats[coords.0].set,
        }
    }

    /// The map whose target graph the edge cut is measured on: the partitioner's map, else the
    /// first map into the partitioned set, else the first map.
    fn cut_map(&self, options: &Options) -> Option<usize> {
        if self.sets.is_empty() {
            return None;
        }
        let first = self.first_set_of(options);
        match options.partitioner {
            Partitioner::Metis { map } | Partitioner::PtScotch { map } => Some(map.0),
            _ => self
                .maps
                .iter()
                .position(|m| m.to == first)
                .or((!self.maps.is_empty()).then_some(0)),
        }
    }

    /// Refuses more parts than the partitioned set has elements (blocks split every set as it
    /// is: a set smaller than the rank count leaves ranks without elements of it, which is legal).
    fn check_part_count(&self, options: &Options, parts: usize) -> Result<()> {
        if self.sets.is_empty() || options.partitioner == Partitioner::Blocks {
            return Ok(());
        }
        let first = self.first_set_of(options);
        let size = self.sets[first].size;
        if parts > size && parts > 1 {
            return Err(MpiError::TooManyParts {
                parts,
                set: self.sets[first].name.clone(),
                size,
            });
        }
        Ok(())
    }

    /// Every set's part on its home block (collective).
    fn home_parts(&self, comm: &dyn Communicator, options: &Options) -> Result<Vec<Vec<u32>>> {
        let (ranks, rank) = (comm.size(), comm.rank());
        if self.sets.is_empty() {
            return Ok(Vec::new());
        }
        let first = self.first_set_of(options);
        let size = self.sets[first].size;
        let home = block_range(size, ranks, rank);
        let firsts = match options.partitioner {
            Partitioner::Blocks => {
                return Ok(self
                    .sets
                    .iter()
                    .map(|s| vec![rank as u32; block_range(s.size, ranks, rank).len()])
                    .collect());
            }
            Partitioner::Geometric { coords } => {
                let d = &self.dats[coords.0];
                let xy: Vec<f64> = bytemuck::pod_collect_to_vec(&d.bytes);
                bisection_distributed(comm, &xy, d.dim, home.start as u64, size, ranks)?
            }
            Partitioner::Metis { map } => {
                match crate::parmetis::partition(self, comm, map.0, ranks)? {
                    Some(parts) => parts,
                    None => self.metis_on_root(comm, map.0)?,
                }
            }
            Partitioner::PtScotch { map } => crate::ptscotch::partition(self, comm, map.0, ranks)?,
        };
        self.propagate_home(comm, first, firsts)
    }

    /// METIS on rank 0: the partitioner's map is gathered there (its whole graph in one
    /// process: METIS's limit, and the one O(global) step a program can choose without the
    /// `parmetis` feature), and each rank
    /// gets its home block's parts back.
    fn metis_on_root(&self, comm: &dyn Communicator, map: usize) -> Result<Vec<u32>> {
        let (ranks, rank) = (comm.size(), comm.rank());
        let m = &self.maps[map];
        let mut sends = vec![Vec::new(); ranks];
        sends[0] = m.values.as_bytes().to_vec();
        let got = comm.all_to_all_v(sends)?;
        let n = self.sets[m.to].size;
        let local = if rank == 0 {
            let whole = m.values.same_width_from(&got.concat());
            drop(got);
            match whole.to_i32() {
                None => Err(MpiError::Partitioner {
                    partitioner: "metis",
                    reason: format!(
                        "map `{}` reaches past 2^31 elements: METIS on one rank cannot hold it; use Partitioner::PtScotch or Geometric",
                        m.name
                    ),
                }),
                Some(values) => {
                    let top = Topology {
                        names: self.sets.iter().map(|s| s.name.clone()).collect(),
                        sizes: self.sets.iter().map(|s| s.size).collect(),
                        maps: vec![TopoMap {
                            name: m.name.clone(),
                            from: m.from,
                            to: m.to,
                            arity: m.arity,
                            values,
                        }],
                    };
                    metis(&top, 0, ranks)
                }
            }
        } else {
            Ok(Vec::new())
        };
        let parts = agree(comm, local)?;
        let sends = if rank == 0 {
            (0..ranks)
                .map(|p| bytemuck::cast_slice(&parts[block_range(n, ranks, p)]).to_vec())
                .collect()
        } else {
            vec![Vec::new(); ranks]
        };
        Ok(bytemuck::pod_collect_to_vec(&comm.all_to_all_v(sends)?[0]))
    }

    /// Partitions without any ranks (every value handed in, [`Input::Everywhere`]) and reports
    /// what `parts` ranks would hold: for choosing a partitioner, and for tables.
    pub fn plan(&self, parts: usize, options: &Options) -> Result<PartitionReport> {
        if self.input != Input::Everywhere {
            return Err(MpiError::BadDeclaration(
                "planning a partition needs the whole mesh (Input::Everywhere)".into(),
            ));
        }
        let start = Instant::now();
        self.check_options(options)?;
        self.check_lengths(1, 0)?;
        // Planning numbers every element of the whole mesh in one process with 32-bit local
        // numbers (the bisection's ids, the layouts'): a set past that is refused, as a map
        // into one is below, rather than numbered wrongly.
        if let Some(s) = self.sets.iter().find(|s| s.size > i32::MAX as usize) {
            return Err(MpiError::BadDeclaration(format!(
                "set `{}` has {} elements, 2^31 or more: too large to plan in one process (partition it across ranks)",
                s.name, s.size
            )));
        }
        let values = self
            .maps
            .iter()
            .map(|m| {
                m.values.to_i32().ok_or_else(|| {
                    MpiError::BadDeclaration(format!(
                        "map `{}` reaches past 2^31 elements: too large to plan in one process",
                        m.name
                    ))
                })
            })
            .collect::<Result<Vec<_>>>()?;
        let top = self.topology(values);
        top.check()?;
        let coords: Option<Vec<f64>> = match options.partitioner {
            Partitioner::Geometric { coords } => {
                Some(bytemuck::pod_collect_to_vec(&self.dats[coords.0].bytes))
            }
            _ => None,
        };
        let first = self.first_parts(&top, options, parts, coords.as_deref())?;
        let parts_of = self.all_parts(&top, options, parts, first);
        let first = self.first_set(&top, options);
        let order =
            (options.renumber && !top.sizes.is_empty()).then(|| locality_order(&top, first));
        let everyone: Vec<Vec<u64>> = (0..parts)
            .map(|r| rank_layout(&top, &parts_of, r as u32, order.as_deref()).section_sizes())
            .collect();
        let cut_map = self.cut_map(options);
        let cut = cut_map.map_or(0, |m| edge_cut(&top, m, &parts_of[top.maps[m].to]));
        Ok(self.report(
            options,
            cut,
            cut_map,
            &everyone,
            start.elapsed().as_secs_f64(),
        ))
    }

    fn check_options(&self, options: &Options) -> Result<()> {
        match options.partitioner {
            Partitioner::Blocks => Ok(()),
            Partitioner::Metis { map } | Partitioner::PtScotch { map }
                if map.0 >= self.maps.len() =>
            {
                Err(MpiError::BadDeclaration(format!(
                    "the {} map belongs to another mesh",
                    options.partitioner.name()
                )))
            }
            Partitioner::Metis { .. } | Partitioner::PtScotch { .. } => Ok(()),
            Partitioner::Geometric { coords } => match self.dats.get(coords.0) {
                None => Err(MpiError::BadDeclaration(
                    "the coordinates belong to another mesh".into(),
                )),
                Some(d) if d.dim > 3 => Err(MpiError::BadDeclaration(format!(
                    "coordinates `{}` have dim {}: 1, 2 or 3 expected",
                    d.name, d.dim
                ))),
                Some(_) => Ok(()),
            },
        }
    }

    fn first_set(&self, top: &Topology, options: &Options) -> usize {
        let coords_set = match options.partitioner {
            Partitioner::Geometric { coords } => Some(self.dats[coords.0].set),
            _ => None,
        };
        crate::partition::first_set(top, &options.partitioner, coords_set)
    }

    fn topology(&self, values: Vec<Vec<i32>>) -> Topology {
        Topology {
            names: self.sets.iter().map(|s| s.name.clone()).collect(),
            sizes: self.sets.iter().map(|s| s.size).collect(),
            maps: self
                .maps
                .iter()
                .zip(values)
                .map(|(m, values)| TopoMap {
                    name: m.name.clone(),
                    from: m.from,
                    to: m.to,
                    arity: m.arity,
                    values,
                })
                .collect(),
        }
    }

    /// The partitioned set's parts (pure: no communication).
    fn first_parts(
        &self,
        top: &Topology,
        options: &Options,
        parts: usize,
        coords: Option<&[f64]>,
    ) -> Result<Vec<u32>> {
        self.check_part_count(options, parts)?;
        if top.sizes.is_empty() {
            return Ok(Vec::new());
        }
        let size = top.sizes[self.first_set(top, options)];
        Ok(match options.partitioner {
            Partitioner::Blocks => blocks(size, parts),
            Partitioner::Metis { map } => metis(top, map.0, parts)?,
            Partitioner::Geometric { coords: c } => {
                bisection(coords.unwrap_or_default(), self.dats[c.0].dim, parts)
            }
            Partitioner::PtScotch { .. } => {
                return Err(MpiError::Partitioner {
                    partitioner: "ptscotch",
                    reason: "PT-Scotch partitions on MPI ranks; planning runs in one process (plan with Metis)".into(),
                });
            }
        })
    }

    /// Every set's parts from the partitioned set's.
    fn all_parts(
        &self,
        top: &Topology,
        options: &Options,
        parts: usize,
        first: Vec<u32>,
    ) -> Vec<Vec<u32>> {
        match options.partitioner {
            // Blocks; and a mesh without sets, with nothing to propagate from.
            _ if top.sizes.is_empty() => Vec::new(),
            Partitioner::Blocks => top.sizes.iter().map(|&n| blocks(n, parts)).collect(),
            _ => propagate(top, self.first_set(top, options), first, parts),
        }
    }

    fn report(
        &self,
        options: &Options,
        edge_cut: usize,
        cut_map: Option<usize>,
        everyone: &[Vec<u64>],
        seconds: f64,
    ) -> PartitionReport {
        PartitionReport {
            partitioner: options.partitioner.name(),
            parts: everyone.len(),
            edge_cut,
            cut_map: cut_map.map_or_else(String::new, |m| self.maps[m].name.clone()),
            sets: self
                .sets
                .iter()
                .enumerate()
                .map(|(s, d)| {
                    let sizes = everyone
                        .iter()
                        .map(|r| SetSizes {
                            core: r[4 * s] as usize,
                            owned: r[4 * s + 1] as usize,
                            exec_halo: r[4 * s + 2] as usize,
                            nonexec_halo: r[4 * s + 3] as usize,
                        })
                        .collect();
                    (d.name.clone(), sizes)
                })
                .collect(),
            seconds,
        }
    }

    /// Every dat's values for this rank's local elements, fetched from their home ranks.
    fn move_dat_rows(
        &self,
        comm: &dyn Communicator,
        layout: &RankLayout,
        dat_blocks: Vec<Vec<u8>>,
    ) -> Result<Vec<LocalDat>> {
        let mut out = Vec::with_capacity(self.dats.len());
        for (d, block) in self.dats.iter().zip(dat_blocks) {
            let row = d.dim * d.dtype.size();
            let global = &layout.sets[d.set].global;
            let bytes = fetch(comm, self.sets[d.set].size, global, &block, row)?;
            drop(block);
            out.push(LocalDat {
                name: d.name.clone(),
                set: d.set,
                dim: d.dim,
                dtype: d.dtype,
                bytes,
                make: d.make,
            });
        }
        Ok(out)
    }
}

/// Per set, what this rank sends to and receives from each neighbour: it receives its halo
/// elements from their owners (in local order) and asks each owner for them by global number;
/// the owner turns the asked numbers into its local numbers, in the asked order.
fn exchange_lists(comm: &dyn Communicator, layout: &RankLayout) -> Result<Vec<SetHalo>> {
    let ranks = comm.size();
    let mut out = Vec::with_capacity(layout.sets.len());
    for s in &layout.sets {
        let first_halo = s.sizes.core + s.sizes.owned;
        let exec_end = first_halo + s.sizes.exec_halo;
        let mut receive: Vec<Vec<u32>> = vec![Vec::new(); ranks];
        // Per owner: how many of the asked elements this rank holds in its exec halo (they come
        // first: the halo is in local order, exec section first), then the global numbers.
        let mut wanted: Vec<Vec<u64>> = vec![vec![0]; ranks];
        for (i, &owner) in s.owners.iter().enumerate() {
            let local = first_halo + i;
            receive[owner as usize].push(local as u32);
            wanted[owner as usize].push(s.global[local]);
            if local < exec_end {
                wanted[owner as usize][0] += 1;
            }
        }
        let asked = comm.all_to_all_v(wanted.iter().map(|w| u64s_to_bytes(w)).collect())?;
        drop(wanted);
        let owned = &s.global[..first_halo];
        let local = crate::setup::Lookup::new(owned);
        let mut neighbours = Vec::new();
        for (p, (recv, asked)) in receive.into_iter().zip(asked).enumerate() {
            let asked = bytes_to_u64s(&asked);
            let send_to_exec = asked.first().copied().unwrap_or(0) as usize;
            let send = asked
                .into_iter()
                .skip(1)
                .map(|g| {
                    local.find(owned, g).ok_or_else(|| {
                        MpiError::Op2(op2_core::Op2Error::Communication {
                            reason: format!(
                                "rank {p} asked for element {g}, which this rank does not own"
                            ),
                        })
                    })
                })
                .collect::<Result<Vec<u32>>>()?;
            if !send.is_empty() || !recv.is_empty() {
                neighbours.push(HaloNeighbour {
                    rank: p,
                    send,
                    send_to_exec,
                    receive: recv,
                });
            }
        }
        out.push(SetHalo { neighbours });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    //! The distributed construction against the whole-mesh one ([`rank_layout`] on the gathered
    //! topology): the same parts, the same sections element for element, the same maps.

    use super::*;
    use crate::mesh::GlobalSet;
    use op2_core::comm::thread_communicators;
    use proptest::prelude::*;
    use std::time::Duration;

    /// Sets' sizes, maps (from, to, arity, values), coordinates on set 0.
    type RandomMesh = (Vec<usize>, Vec<(usize, usize, usize, Vec<i32>)>, Vec<f64>);

    fn mesh_strategy() -> impl Strategy<Value = RandomMesh> {
        prop::collection::vec(1usize..40, 1..4)
            .prop_flat_map(|sets| {
                let n = sets.len();
                let sizes = sets.clone();
                let maps = prop::collection::vec((0..n, 0..n, 1usize..4), 0..4).prop_flat_map(
                    move |shapes| {
                        let sets = sizes.clone();
                        shapes
                            .into_iter()
                            .map(|(from, to, arity)| {
                                let values =
                                    prop::collection::vec(0..sets[to] as i32, sets[from] * arity);
                                (Just(from), Just(to), Just(arity), values)
                            })
                            .collect::<Vec<_>>()
                    },
                );
                (Just(sets.clone()), maps)
            })
            .prop_flat_map(|(sets, maps)| {
                let xy = prop::collection::vec(-10.0f64..10.0, sets[0] * 2);
                (Just(sets), Just(maps), xy)
            })
    }

    fn builder(mesh: &RandomMesh) -> (MeshBuilder, Vec<GlobalSet>) {
        let (sets, maps, xy) = mesh;
        let mut b = MeshBuilder::new(Input::Everywhere);
        let handles: Vec<GlobalSet> = sets
            .iter()
            .enumerate()
            .map(|(i, &n)| b.decl_set(n, &format!("s{i}")).unwrap())
            .collect();
        for (i, (from, to, arity, values)) in maps.iter().enumerate() {
            b.decl_map(
                handles[*from],
                handles[*to],
                *arity,
                values.clone(),
                &format!("m{i}"),
            )
            .unwrap();
        }
        let _ = xy;
        (b, handles)
    }

    proptest! {
        #![proptest_config(ProptestConfig { cases: 64, ..ProptestConfig::default() })]

        #[test]
        fn the_distributed_setup_builds_what_the_whole_mesh_gives(
            mesh in mesh_strategy(),
            ranks in 1usize..=4,
            which in 0usize..3,
        ) {
            let (mut b, handles) = builder(&mesh);
            let coords = b.decl_dat(handles[0], 2, &mesh.2, "coords").unwrap();
            let partitioner = match which {
                0 => Partitioner::Blocks,
                1 if !b.maps.is_empty() => Partitioner::Metis { map: crate::mesh::GlobalMap(0) },
                _ => Partitioner::Geometric { coords },
            };
            let options = Options::new(partitioner);
            prop_assume!(b.check_part_count(&options, ranks).is_ok());
            // The reference: the whole mesh in one process.
            let values = b.maps.iter().map(|m| m.values.to_i32().unwrap()).collect();
            let top = b.topology(values);
            let coords: Vec<f64> = bytemuck::pod_collect_to_vec(&b.dats[0].bytes);
            let firsts = b.first_parts(&top, &options, ranks, Some(&coords)).unwrap();
            let parts = b.all_parts(&top, &options, ranks, firsts);
            let comms = thread_communicators(ranks, Duration::from_secs(20));
            let got: Vec<Distributed> = std::thread::scope(|scope| {
                let handles: Vec<_> = comms
                    .into_iter()
                    .map(|c| {
                        let b = b.clone();
                        scope.spawn(move || b.distribute(&c, &options).unwrap())
                    })
                    .collect();
                handles.into_iter().map(|h| h.join().unwrap()).collect()
            });
            let mut cut = None;
            for (r, d) in got.iter().enumerate() {
                let want = rank_layout(&top, &parts, r as u32, None);
                for (s, (ws, gs)) in want.sets.iter().zip(&d.sets).enumerate() {
                    prop_assert_eq!(ws.sizes, gs.sizes, "rank {} set {}", r, s);
                    prop_assert_eq!(&ws.global, &gs.global, "rank {} set {}", r, s);
                }
                for (wm, gm) in want.maps.iter().zip(&d.maps) {
                    prop_assert_eq!(wm, &gm.values);
                }
                let c = *cut.get_or_insert(d.report.edge_cut);
                prop_assert_eq!(c, d.report.edge_cut);
            }
            if let Some(m) = b.cut_map(&options) {
                prop_assert_eq!(cut.unwrap(), edge_cut(&top, m, &parts[top.maps[m].to]));
            }
        }
    }
}
