//! The Airfoil mesh declared for partitioning across ranks (feature `mpi`): its sets, maps and
//! the data partitioners use, in global numbering, as OP2's Airfoil declares them.

use crate::mesh::Mesh;
use crate::solver::{Airfoil, Constants, DeclaredMesh};
use op2::Runtime;
use op2::mpi::{
    GlobalDat, GlobalMap, GlobalSet, Input, LocalMesh, MeshBuilder, Options, Partitioner, Result,
};

/// The partitioners' names, in the order of [`AirfoilHandles::partitioners`].
pub const PARTITIONERS: [&str; 3] = ["metis", "geometric", "blocks"];

/// Handles of the Airfoil mesh on a [`MeshBuilder`].
#[derive(Debug, Clone, Copy)]
pub struct AirfoilHandles {
    /// Nodes.
    pub nodes: GlobalSet,
    /// Interior edges.
    pub edges: GlobalSet,
    /// Boundary edges.
    pub bedges: GlobalSet,
    /// Cells.
    pub cells: GlobalSet,
    /// Edge to its two nodes.
    pub pedge: GlobalMap,
    /// Edge to its two cells.
    pub pecell: GlobalMap,
    /// Boundary edge to its two nodes.
    pub pbedge: GlobalMap,
    /// Boundary edge to its cell.
    pub pbecell: GlobalMap,
    /// Cell to its four nodes.
    pub pcell: GlobalMap,
    /// Node coordinates.
    pub x: GlobalDat<f64>,
    /// Boundary kind per boundary edge.
    pub bound: GlobalDat<i32>,
}

impl AirfoilHandles {
    /// The partitioners OP2 offers for Airfoil: METIS on the cells' dual graph (through the
    /// edge-to-cell map, as OP2's Airfoil asks), coordinate bisection on the nodes, and blocks.
    pub fn partitioners(&self) -> [Partitioner; 3] {
        [
            Partitioner::Metis { map: self.pecell },
            Partitioner::Geometric { coords: self.x },
            Partitioner::Blocks,
        ]
    }

    /// The partitioner called `name` (one of [`PARTITIONERS`], or `ptscotch`: PT-Scotch on the
    /// cells' dual graph, which runs on MPI ranks with the `ptscotch` feature only).
    pub fn partitioner(&self, name: &str) -> Option<Partitioner> {
        if name == "ptscotch" {
            return Some(Partitioner::PtScotch { map: self.pecell });
        }
        PARTITIONERS
            .iter()
            .position(|p| *p == name)
            .map(|i| self.partitioners()[i])
    }
}

/// Airfoil across the ranks of `rt`'s communicator: `mesh` (the whole mesh, on every rank) is
/// partitioned by `choose`'s partitioner (collectively), and this rank declares its part and the
/// flow on `rt`. Returns the solver and the local mesh (for gathering results in global order).
pub fn partitioned(
    rt: &Runtime,
    mesh: &Mesh,
    c: &Constants,
    choose: impl FnOnce(&AirfoilHandles) -> Options,
) -> Result<(Airfoil, LocalMesh)> {
    let (builder, h) = declare(mesh)?;
    partition(rt, builder, h, mesh.ncell(), c, choose)
}

/// Partitions a declared Airfoil mesh of `ncell` cells and declares the flow on this rank's part.
fn partition(
    rt: &Runtime,
    builder: MeshBuilder,
    h: AirfoilHandles,
    ncell: usize,
    c: &Constants,
    choose: impl FnOnce(&AirfoilHandles) -> Options,
) -> Result<(Airfoil, LocalMesh)> {
    let local = builder.partition(rt, &choose(&h))?;
    let declared = DeclaredMesh {
        cells: local.set(h.cells),
        edges: local.set(h.edges),
        bedges: local.set(h.bedges),
        pcell: local.map(h.pcell),
        pedge: local.map(h.pedge),
        pecell: local.map(h.pecell),
        pbedge: local.map(h.pbedge),
        pbecell: local.map(h.pbecell),
        p_x: local.dat(h.x),
        p_bound: local.dat(h.bound),
        ncell,
    };
    Ok((Airfoil::on(rt, declared, c)?, local))
}

/// Declares the whole of `mesh` ([`Input::Everywhere`]).
pub fn declare(mesh: &Mesh) -> Result<(MeshBuilder, AirfoilHandles)> {
    let sizes = [mesh.nnode(), mesh.nedge(), mesh.nbedge(), mesh.ncell()];
    declare_parts(Input::Everywhere, sizes, mesh.clone())
}

/// Declares sets of `sizes` (nodes, edges, boundary edges, cells) with `part`'s rows: the whole
/// mesh, or this rank's slice of every map and dat.
fn declare_parts(
    input: Input,
    sizes: [usize; 4],
    part: Mesh,
) -> Result<(MeshBuilder, AirfoilHandles)> {
    let mut b = MeshBuilder::new(input);
    let nodes = b.decl_set(sizes[0], "nodes")?;
    let edges = b.decl_set(sizes[1], "edges")?;
    let bedges = b.decl_set(sizes[2], "bedges")?;
    let cells = b.decl_set(sizes[3], "cells")?;
    let pedge = b.decl_map(edges, nodes, 2, part.edge, "pedge")?;
    let pecell = b.decl_map(edges, cells, 2, part.ecell, "pecell")?;
    let pbedge = b.decl_map(bedges, nodes, 2, part.bedge, "pbedge")?;
    let pbecell = b.decl_map(bedges, cells, 1, part.becell, "pbecell")?;
    let pcell = b.decl_map(cells, nodes, 4, part.cell, "pcell")?;
    let x = b.decl_dat(nodes, 2, &part.x, "p_x")?;
    let bound = b.decl_dat(bedges, 1, &part.bound, "p_bound")?;
    Ok((
        b,
        AirfoilHandles {
            nodes,
            edges,
            bedges,
            cells,
            pedge,
            pecell,
            pbedge,
            pbecell,
            pcell,
            x,
            bound,
        },
    ))
}

/// Airfoil across the ranks of `rt`'s communicator from an OP2 HDF5 file: each rank reads only
/// its block of every set's rows ([`Input::Slices`]), the mesh is partitioned collectively, and
/// this rank declares its part and the flow. Returns the solver, the local mesh and the whole
/// mesh's sizes `[nnode, ncell, nedge, nbedge]`.
#[cfg(feature = "hdf5")]
pub fn partitioned_hdf5(
    rt: &Runtime,
    path: &std::path::Path,
    c: &Constants,
    choose: impl FnOnce(&AirfoilHandles) -> Options,
) -> std::result::Result<(Airfoil, LocalMesh, [usize; 4]), crate::MeshError> {
    use op2::mpi::{MpiError, block_range};
    let comm = rt.communicator();
    let (rank, ranks) = (comm.rank(), comm.size());
    let read = || -> std::result::Result<([usize; 4], Mesh), crate::MeshError> {
        let f = op2::hdf5::H5File::open(path)?;
        let [nnode, ncell, nedge, nbedge] = crate::hdf5::sizes(&f)?;
        let mine = |n: usize| block_range(n, ranks, rank);
        let part = Mesh {
            x: f.rows("p_x", mine(nnode), 2)?,
            cell: f.rows("pcell", mine(ncell), 4)?,
            edge: f.rows("pedge", mine(nedge), 2)?,
            ecell: f.rows("pecell", mine(nedge), 2)?,
            bedge: f.rows("pbedge", mine(nbedge), 2)?,
            becell: f.rows("pbecell", mine(nbedge), 1)?,
            bound: f.rows("p_bound", mine(nbedge), 1)?,
        };
        Ok(([nnode, ncell, nedge, nbedge], part))
    };
    let read = read();
    // Every rank learns whether all could read before anyone starts partitioning, so a rank that
    // failed does not leave the others waiting in a collective.
    let failed = comm
        .first_failed_rank(read.is_err())
        .map_err(MpiError::from)?;
    let ([nnode, ncell, nedge, nbedge], part) = match read {
        Ok(r) if failed.is_none() => r,
        Ok(_) => {
            return Err(crate::MeshError::OtherRank {
                path: path.display().to_string(),
            });
        }
        Err(e) => return Err(e),
    };
    let (builder, h) = declare_parts(Input::Slices, [nnode, nedge, nbedge, ncell], part)?;
    let (airfoil, local) = partition(rt, builder, h, ncell, c, choose)?;
    Ok((airfoil, local, [nnode, ncell, nedge, nbedge]))
}

pub use crate::mesh::shuffled;
