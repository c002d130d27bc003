//! op2-core: the data model (sets, maps, dats, globals, consts, kernels), loop validation, the lazy
//! trace, the runtime, and the traits and registry that backends plug into.
//!
//! Users normally depend on the `op2` facade, which re-exports this crate and links the backends.

#![warn(missing_docs)]

pub mod access;
pub mod arg;
pub mod backend;
pub mod carrier;
pub mod comm;
pub mod config;
pub mod device;
pub mod dtype;
pub mod error;
pub mod kernel;
pub mod map;
pub mod names;
pub mod plan;
pub mod runtime;
pub mod set;
pub mod settings;
pub mod signature;
pub mod trace;

pub use access::{Access, INC, MAX, MIN, READ, RW, WRITE};
pub use arg::{Arg, ArgTarget, OP_ID, Via, op_arg_dat, op_arg_gbl};
pub use backend::{
    Backend, BackendFactory, Codegen, GeneratedUnit, LoopInvocation, PreparedLoop,
    declare_known_backends, find_backend, known_backends, registered_backends,
};
pub use carrier::{Carrier, CarrierKind, Const, Dat, Global, HostRead, HostWrite, LoopLock};
pub use comm::{
    Communicator, PendingExchange, PendingReduction, ReduceOp, SelfCommunicator,
    ThreadCommunicator, thread_communicators,
};
pub use config::Config;
pub use device::{
    DataState, DeviceData, DeviceMemory, DeviceStats, LoopUse, Transfers, carrier_bytes,
};
pub use dtype::{DType, HostBuffer, Scalar};
pub use error::{Op2Error, Result};
pub use kernel::{Kernel, KernelParam};
pub use map::Map;
pub use runtime::{DatTraffic, HaloTraffic, LoopTiming, Runtime, RuntimeBuilder};
pub use set::{HaloNeighbour, Set, SetHalo, SetSizes};
pub use settings::{Setting, SettingKind, SettingValues, known_settings};
pub use signature::{ArgKind, ArgSig, ConstSig, LoopSignature};

/// Runs a loop in OP2's style: `par_loop!(rt, kernel, set, arg0, arg1, ...)`.
#[macro_export]
macro_rules! par_loop {
    ($rt:expr, $kernel:expr, $set:expr $(, $arg:expr)* $(,)?) => {
        $rt.par_loop(&$kernel, &$set, [$($arg),*])
    };
}

#[doc(hidden)]
pub mod __private {
    pub use inventory;
}
