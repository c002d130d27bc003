//! op2: the facade users depend on. Re-exports the API of `op2-core` and links the backends chosen
//! with Cargo features (`seq` by default), so that their registrations exist at run time.
//!
//! ```no_run
//! use op2::{Kernel, READ, WRITE};
//! # fn main() -> op2::Result<()> {
//! let rt = op2::init()?; // OP2_BACKEND picks the backend, `seq` by default
//! let cells = rt.decl_set(2, "cells")?;
//! let nodes = rt.decl_set(4, "nodes")?;
//! let c2n = rt.decl_map(&cells, &nodes, 3, vec![0, 1, 2, 0, 2, 3], "c2n")?;
//! let xy = rt.decl_dat(&nodes, 2, &[0.0, 0.0, 1.0, 0.0, 1.0, 1.0, 0.0, 1.0], "xy")?;
//! let mid = rt.decl_dat_zeros::<f64>(&cells, 2, "mid")?;
//! let k = Kernel::new("midpoint", "void midpoint(double *p, double *x[3]) {
//!     p[0] = (x[0][0] + x[1][0] + x[2][0]) / 3.0;
//!     p[1] = (x[0][1] + x[1][1] + x[2][1]) / 3.0; }")?;
//! op2::par_loop!(rt, k, cells, mid.arg(WRITE), xy.arg_row(&c2n, READ))?;
//! println!("{:?}", &*mid.data_ro()?);
//! # Ok(()) }
//! ```

#![warn(missing_docs)]

pub use op2_core::*;
/// The generic device backend: a third-party device backend implements its `Device` trait (and an
/// `op2_codegen` `Dialect` for a new language) and registers a `DeviceBackend` over it.
pub use op2_device;
/// The device-data table every device backend keeps (moved from op2-core to op2-device, which only
/// device backends use; re-exported here at the root, where they were, and in [`device`]).
pub use op2_device::{DeviceData, DeviceMemory, LoopUse, Transfers, Transitions};

/// Device data: what a device backend reports ([`DataState`], [`DeviceStats`]) and the table it
/// keeps ([`DeviceData`] over its [`DeviceMemory`], with the state transitions).
pub mod device {
    pub use op2_core::device::*;
    pub use op2_device::{DeviceData, DeviceMemory, LoopUse, Transfers, Transitions};
}
/// OP2's HDF5 mesh files (feature `hdf5`): sets, maps, dats and constants declared from and
/// written to files in OP2-Common's layout.
#[cfg(feature = "hdf5")]
pub use op2_hdf5 as hdf5;
/// Sparse matrices assembled by loops with Mat args (PyOP2's `Sparsity` and `Mat`), and Krylov
/// solvers with preconditioners configured like PETSc's KSP.
pub use op2_la as la;
/// Distributed meshes and MPI (feature `mpi`): partition a mesh declared in global numbering,
/// get each rank's sets with halos, gather results; `mpi::Mpi` is the communicator.
#[cfg(feature = "mpi")]
pub use op2_mpi as mpi;
/// Locality orders for meshes before they are declared (OP2's `op_renumber`): reverse
/// Cuthill-McKee through the maps, applied to map values and data rows.
pub use op2_renumber as renumber;
/// VTK output for ParaView: a mesh and its data as `.vtu`, or per-rank pieces and a `.pvtu` index.
pub use op2_vtk as vtk;

/// Whole-file outputs that are never half-written (a temporary file renamed over the target):
/// what every writer of op2-rs uses, for an application's own files too.
pub use op2_atomic_write as atomic_write;

/// The first-party backends, written once: for each, the Cargo feature of this crate that brings
/// it in, its crate, and the backend names it registers. From this one list come the re-exports
/// of the backend crates, [`FIRST_PARTY_BACKENDS`], and the references that keep each enabled
/// backend in the final binary (`inventory` registrations live in the backend crates' object
/// files, which the linker drops unless something refers to them).
macro_rules! first_party_backends {
    ($($feature:literal => $krate:ident [$($name:literal),+]),* $(,)?) => {
        $(
            #[cfg(feature = $feature)]
            pub use $krate;
        )*

        /// First-party backends by name, and the Cargo feature of `op2` that enables each.
        pub const FIRST_PARTY_BACKENDS: &[(&str, &str)] = &[$($(($name, $feature),)+)*];

        /// Keeps every enabled backend crate in the final binary, and tells the runtime which
        /// first-party backends exist (so a missing one names its feature).
        fn link_backends() {
            $(
                #[cfg(feature = $feature)]
                std::hint::black_box(&$krate::LINKED);
            )*
            declare_known_backends(FIRST_PARTY_BACKENDS);
        }
    };
}

first_party_backends! {
    "seq" => backend_seq ["seq"],
    "openmp" => backend_openmp ["openmp"],
    "cuda" => backend_cuda ["cuda", "cuda-emulator"],
    "opencl" => backend_opencl ["opencl"],
}

/// A runtime configured from the environment (`OP2_BACKEND`, `OP2_LAZY`, `OP2_CC`, ...).
pub fn init() -> Result<Runtime> {
    link_backends();
    Runtime::from_env()
}

/// A runtime builder starting from the environment, for settings chosen in code.
pub fn builder() -> RuntimeBuilder {
    link_backends();
    Runtime::builder()
}

/// The backends compiled into this binary.
pub fn backends() -> Vec<&'static BackendFactory> {
    link_backends();
    registered_backends()
}

/// The README's Rust blocks, compiled and run as doctests (the front door's example must work).
#[cfg(doctest)]
#[doc = include_str!("../../README.md")]
pub struct ReadmeDoctests;
