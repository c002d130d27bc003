//! The data model: sets, maps, dats, globals, consts, kernels and their names, loop args and
//! their builders, loop signatures, and the trace's data types. Nothing here knows how loops are
//! run: the model imports neither the backend contract nor the runtime (a unit test checks it).

pub mod access;
pub mod arg;
pub mod carrier;
pub mod comm;
pub mod dtype;
pub mod error;
pub mod kernel;
pub mod map;
pub mod names;
pub mod set;
pub mod signature;
pub mod trace;
