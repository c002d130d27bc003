//! op2-rs across ranks: a mesh declared in global numbering is partitioned collectively (METIS
//! or ParMETIS, PT-Scotch, recursive coordinate bisection or blocks), each rank gets its sets in
//! sections (core | owned | exec halo | non-exec halo) with halo exchange lists built from the
//! maps, and results come back in global order; [`Mpi`] gives op2-core's communicator over MPI.
//!
//! ```no_run
//! use op2_mpi::{Input, MeshBuilder, Mpi, Options, Partitioner};
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let mpi = Mpi::init()?;
//! let rt = op2_core::Runtime::builder().communicator(mpi.world()).build()?;
//! let mut mesh = MeshBuilder::new(Input::Everywhere);
//! let nodes = mesh.decl_set(3, "nodes")?;
//! let edges = mesh.decl_set(2, "edges")?;
//! let e2n = mesh.decl_map(edges, nodes, 2, vec![0, 1, 1, 2], "e2n")?;
//! let x = mesh.decl_dat(nodes, 1, &[1.0f64, 2.0, 3.0], "x")?;
//! let local = mesh.partition(&rt, &Options::new(Partitioner::Metis { map: e2n }))?;
//! let (nodes, x) = (local.set(nodes), local.dat(x));
//! // ... par_loops over local sets ...
//! let whole: Option<Vec<f64>> = local.gather(&x)?; // Some on rank 0, global order
//! # let _ = nodes; Ok(()) }
//! ```

mod collective;
mod distribute;
mod error;
mod geometric;
mod layout;
mod local;
mod mesh;
mod mpi_comm;
mod parmetis;
mod partition;
mod ptscotch;
mod setup;
mod verify;

pub use distribute::{Distributed, LocalDat, LocalMap, LocalSet, Options, PartitionReport};
pub use error::{MpiError, Result};
pub use local::LocalMesh;
pub use mesh::{GlobalDat, GlobalMap, GlobalSet, Input, MeshBuilder, block_range};
pub use mpi_comm::{Mpi, MpiCommunicator, launched_by_mpirun, running_world_size};
pub use partition::Partitioner;
pub use verify::verify;
