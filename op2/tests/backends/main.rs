//! Facade tests that choose their backends themselves (every backend built in, or one in
//! particular), in one test binary: the OpenMP backend against the reference, the device
//! backends' data states, what each backend reports of itself, matrices and solvers, files.

mod capabilities;
#[cfg(any(feature = "opencl", feature = "cuda"))]
mod device_states;
#[cfg(feature = "hdf5")]
mod files;
mod la;
#[cfg(feature = "openmp")]
mod openmp;
