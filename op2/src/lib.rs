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

#[cfg(feature = "cuda")]
pub use backend_cuda;
#[cfg(feature = "opencl")]
pub use backend_opencl;
#[cfg(feature = "openmp")]
pub use backend_openmp;
#[cfg(feature = "seq")]
pub use backend_seq;

/// Keeps every enabled backend crate in the final binary: `inventory` registrations live in the
/// backend crates' object files, which the linker drops unless something refers to them.
fn link_backends() {
    #[cfg(feature = "seq")]
    std::hint::black_box(&backend_seq::LINKED);
    #[cfg(feature = "openmp")]
    std::hint::black_box(&backend_openmp::LINKED);
    #[cfg(feature = "opencl")]
    std::hint::black_box(&backend_opencl::LINKED);
    #[cfg(feature = "cuda")]
    std::hint::black_box(&backend_cuda::LINKED);
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
