//! op2-core: the data model, the contract backends implement, and the runtime, in three layers
//! that import one way only:
//!
//! 1. [`model`]: sets, maps, dats, globals, consts, kernels, args, signatures, the trace's types;
//! 2. [`contract`]: `Backend`, `PreparedLoop`, `Codegen`, plans' inputs, configuration, settings
//!    and the registry of backends (builds on the model);
//! 3. [`runtime`]: declaring, recording, validating, forcing and running loops (builds on both).
//!
//! The model reaches the runtime only through a trait of its own (a host read of a Dat forces the
//! loops it depends on). Every module and item stays reachable at its old path
//! (`op2_core::carrier::Dat`, `op2_core::backend::BackendFactory`, ...). Users normally depend on
//! the `op2` facade, which re-exports this crate and links the backends.

#![warn(missing_docs)]

pub mod contract;
pub mod model;
pub mod runtime;

pub use contract::{config, plan, registry, rows};
pub use model::{access, arg, carrier, comm, dtype, error, map, names, set, signature, trace};

// Modules whose items were split between layers keep every item at its old path too.

/// The backend contract ([`contract::backend`]), with the registry's items
/// ([`contract::registry`]) at the paths they had before the registry got a module of its own.
pub mod backend {
    pub use crate::contract::backend::*;
    pub use crate::contract::registry::{
        BackendFactory, declare_known_backends, find_backend, known_backends, registered_backends,
    };
}

/// Backend settings ([`contract::settings`]), with [`known_settings`] and
/// [`find_setting`](registry::find_setting) (now in the registry) at their old paths.
pub mod settings {
    pub use crate::contract::registry::{find_setting, known_settings};
    pub use crate::contract::settings::*;
}

/// Kernels ([`model::kernel`]), with [`is_c_identifier`](names::is_c_identifier) (now in the
/// names module) at its old path.
pub mod kernel {
    pub use crate::model::kernel::*;
    pub use crate::model::names::is_c_identifier;
}

/// What a device backend reports about its data. The device-data table itself (`DeviceData`,
/// `DeviceMemory`, `LoopUse`, `Transfers`) moved to `op2-device`, the one crate that uses it; the
/// `op2` facade re-exports it at `op2::device` and at its root.
pub mod device {
    pub use crate::contract::backend::{DataState, DeviceStats};
    pub use crate::contract::rows::carrier_bytes;
}

#[cfg(test)]
mod layering;

pub use access::{Access, INC, MAX, MIN, READ, RW, WRITE};
pub use arg::{Arg, ArgTarget, OP_ID, PerEntry, Via, op_arg_dat, op_arg_gbl};
pub use backend::{
    Backend, BackendMemory, Capabilities, Codegen, DataState, DeviceStats, ElementListLoop,
    GeneratedUnit, LoopInvocation, MemoryOwner, PreparedLoop,
};
pub use carrier::{Carrier, CarrierKind, Const, Dat, Global, HostRead, HostWrite, LoopLock};
pub use comm::{
    Communicator, PendingExchange, PendingReduction, ReduceOp, SelfCommunicator,
    ThreadCommunicator, thread_communicators,
};
pub use config::{CheckpointConfig, CheckpointEvery, Config, LazyOptions, TilingMode};
pub use dtype::{DType, HostBuffer, IntoValues, Scalar};
pub use error::{Op2Error, Result};
pub use kernel::{Kernel, KernelParam};
pub use map::Map;
/// The complex numbers complex Dats, Globals and Consts hold.
pub use num_complex;
pub use registry::{
    BackendFactory, declare_known_backends, find_backend, known_backends, known_settings,
    registered_backends,
};
pub use rows::carrier_bytes;
pub use runtime::{
    ArithOp, CheckpointStats, DatTraffic, GraphNode, HaloTraffic, LazyStats, LoopHandle,
    LoopTiming, MemoryKind, MemoryReport, MemoryUse, MixedDat, MixedMap, MixedSet, NodeKind,
    PendingGraph, Region, Runtime, RuntimeBuilder,
};
pub use set::{ExchangeLists, Extrusion, HaloNeighbour, Layers, Set, SetHalo, SetSizes};
pub use settings::{Setting, SettingKind, SettingValues};
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
