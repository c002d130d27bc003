//! op2-device: the generic device backend. Everything a device backend does above its driver is
//! here once — the device-data states, plans on the device, the choice of stub, compiling the
//! loop's program at `par_loop`, launch arguments from the stub's parameter list, the colour by
//! colour launches, work-group sizes that fit the device's private memory, reduction partials
//! finished on the device, Const values (changed without recompiling) — over a [`Device`] trait
//! that a device API implements: buffers, programs, launches and copies. OpenCL, CUDA and the CUDA
//! emulator are such implementations; a new API (HIP, SYCL, Vulkan, Metal) needs a [`Device`] and a
//! [`op2_codegen::Dialect`].

#![warn(missing_docs)]

mod backend;
pub mod data;

pub use backend::DeviceBackend;
pub use data::{DeviceData, DeviceMemory, LoopUse, Transfers, Transitions};
/// How a device backend keeps indirect increments free of races: [`Strategy::Colour`] (plans,
/// staging, block colours; deterministic) or [`Strategy::Atomics`] (atomic additions in one
/// launch where the dialect and the loop allow; loops that write through maps, or read data they
/// increment, still use colours).
pub use op2_core::plan::Strategy;

use op2_codegen::{DeviceOptions, DeviceUnit, Dialect};
use op2_core::Result;
use std::sync::Arc;

/// Which kernel of a unit to launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Entry {
    /// The loop's stub, [`op2_codegen::DEVICE_ENTRY`].
    Stub,
    /// The final reduction, [`op2_codegen::FINISH_ENTRY`].
    Finish,
}

/// One kernel argument.
#[derive(Debug)]
pub enum LaunchArg<'a, B> {
    /// A C `int`.
    Int(i32),
    /// A device buffer.
    Buffer(&'a B),
    /// Bytes of the work-group's local memory, for dialects that pass it as a parameter.
    Local(usize),
}

/// The shape of one launch.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct LaunchShape {
    /// Work-groups (thread blocks).
    pub groups: u32,
    /// Work-items (threads) per group.
    pub threads: u32,
    /// Local (shared) memory per group from the launch, in bytes, for dialects that do not pass
    /// it as a parameter.
    pub local_bytes: u32,
}

/// What a device can do, shaping plans and launches.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DeviceLimits {
    /// Work-items per group at most.
    pub max_threads: usize,
    /// Local (shared) memory per group, in bytes.
    pub local_memory: usize,
    /// Private memory a whole work-group may declare, where the device keeps a group's private
    /// arrays in one place of fixed size (PoCL: a thread's stack); `None` elsewhere.
    pub private_per_group: Option<usize>,
    /// Private memory one work-item may declare.
    pub private_per_item: usize,
    /// Preferred block size of plans (a work-group runs a block).
    pub planned_block: usize,
    /// Work-items per group of direct and atomics loops.
    pub direct_threads: usize,
    /// Combine reductions across a group with a tree (GPUs) rather than one work-item in order
    /// (CPU devices, where work-items of a group run in turn).
    pub tree_reductions: bool,
    /// Wait for every loop to finish before the next is queued.
    pub wait_each_loop: bool,
    /// CPU devices: run every loop with the host scheme ([`op2_codegen::DeviceStub::Host`]: one
    /// work-item per group running a chunk or a coloured block of elements, nothing staged), on
    /// this many cores (it sizes chunks and blocks so that every core gets several). `None`:
    /// one element per work-item, staged plans (GPUs).
    pub host_scheme: Option<usize>,
}

/// A device API as the generic backend drives it: memory (its [`DeviceMemory`]), programs,
/// launches. Calls are queued in order; a download waits for what was queued before it.
pub trait Device: DeviceMemory<Buffer: Send + Sync + 'static> + 'static {
    /// A compiled and loaded program.
    type Program: Send + Sync + 'static;

    /// The backend name it runs under (`opencl`, `cuda`, `cuda-emulator`), for messages.
    fn backend_name(&self) -> &'static str;

    /// The device, for messages and listings.
    fn device_name(&self) -> &str;

    /// The language its programs are written in.
    fn dialect(&self) -> &dyn Dialect;

    /// Its limits.
    fn limits(&self) -> DeviceLimits;

    /// The ways to emit a loop, tried in order at `par_loop` until one compiles: the first that
    /// compiles is the loop's (OpenCL C 1.2 needs private copies for some kernels, and Consts
    /// compiled in for kernels whose helper functions use them). Default: one plain way.
    fn variants(&self) -> Vec<DeviceOptions> {
        vec![DeviceOptions {
            tree_reductions: self.limits().tree_reductions,
            ..DeviceOptions::default()
        }]
    }

    /// The unit compiled and loaded (from a cache when it was compiled before). A unit the
    /// device's compiler rejects is an [`op2_core::Op2Error::Compile`] with its message.
    fn compile(&self, unit: &DeviceUnit) -> Result<Arc<Self::Program>>;

    /// Work-items per group the program can run with (a program may allow fewer than the
    /// device, for its registers). Default: the device's limit.
    fn max_threads(&self, _program: &Self::Program) -> usize {
        self.limits().max_threads
    }

    /// Sets the values of the program's Consts (one per `sig.consts`) where the dialect keeps
    /// them in program storage ([`op2_codegen::ConstPassing::Symbols`]); called before launches
    /// when they changed. Dialects that pass Consts as parameters ignore it (the default).
    fn set_consts(&self, _program: &Self::Program, _consts: &[&[u8]]) -> Result<()> {
        Ok(())
    }

    /// Queues one launch of `entry` of `program` with `args` (in the stub's parameter order).
    fn launch(
        &self,
        program: &Self::Program,
        entry: Entry,
        shape: LaunchShape,
        args: &[LaunchArg<'_, Self::Buffer>],
    ) -> Result<()>;

    /// Waits until everything queued has run.
    fn synchronize(&self) -> Result<()>;
}
