//! backend-cuda: the CUDA backend (after the OP2 paper). Each loop becomes generated CUDA
//! (a `__global__` stub around the user's kernel, inlined as a `__device__` function), compiled to
//! PTX by NVRTC and cached, loaded through the driver API (cudarc; libcuda opened at run time, so
//! it builds and reports itself unusable anywhere). Two strategies keep indirect increments
//! race-free (`OP2_CUDA_STRATEGY`): `colour`, OP2's scheme, one plan block per thread block with
//! indirect data staged in shared memory, increments accumulated in registers and applied colour
//! by colour, block colours launched in turn; and `atomics`, one launch with `atomicAdd` straight
//! to global memory. Consts live in `__constant__` memory, Global reductions finish on the device
//! (a block-level tree, then one block folds the partials), and data moves between host and device
//! only as the device-data state table says.
//!
//! The backend's logic is generic over [`Gpu`]: [`DriverGpu`] is the real device (`cuda`), and
//! [`EmulatedGpu`] runs the same generated units on the host (`cuda-emulator`), which is how the
//! backend is tested on machines without a GPU.

#![warn(missing_docs)]

mod driver;
mod emulator;
mod gpu;
mod nvrtc;
mod ptx;
mod settings;

pub use driver::{DriverBuffer, DriverGpu, DriverProgram};
pub use emulator::{EmulatedGpu, EmulatedProgram, HostBuffer, NvrtcCheck};
pub use gpu::{Entry, Gpu, GpuBuffer, GpuLimits, LaunchArg, LaunchShape};
pub use nvrtc::{CompileFailure, Nvrtc, parse_arch};
pub use ptx::{NVRTC_OPTIONS, PTX, PtxCompiler, ptx_stats};
pub use settings::{CudaSettings, SETTINGS};

use op2_codegen::{BlockLayout, CudaCodegen, CudaStub, CudaUnit, StubParam, const_symbol};
use op2_core::{
    Access, Backend, BackendFactory, Carrier, Config, DataState, DeviceData, DeviceStats,
    LoopInvocation, LoopSignature, Op2Error, PreparedLoop, Result,
};
use op2_plan::{LocalIndices, LocalMemoryFit, Plan, PlanArg, PlanBuffers, Planner};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// Block size of planned loops unless `OP2_PART_SIZE` says otherwise (halved while a block's
/// staging does not fit in shared memory): OP2's usual GPU block.
pub const CUDA_DEFAULT_BLOCK_SIZE: usize = 256;

/// Threads per block of direct and atomics loops.
pub const CUDA_THREADS: usize = 256;

/// Threads of the block that folds reduction partials.
const FINISH_THREADS: usize = 256;

/// Shared memory per thread for reductions: one value of the widest type.
const SCRATCH_PER_THREAD: usize = 8;

/// How the CUDA backend keeps indirect increments free of races.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    /// OP2's scheme: a plan's blocks, staging in shared memory, increments applied colour by
    /// colour inside a block, block colours launched one after another. Deterministic.
    Colour,
    /// `atomicAdd` on indirect increments straight to global memory: no plan, no staging, one
    /// launch. Sums come out in whatever order the hardware adds them. Loops that also write
    /// through maps (RW, WRITE), or read data they increment, use the colour scheme.
    Atomics,
}

impl Strategy {
    /// The default when `OP2_CUDA_STRATEGY` is not set: see the README for why.
    pub const DEFAULT: Strategy = Strategy::Atomics;

    /// The `cuda_strategy` setting of `config` (`OP2_CUDA_STRATEGY`), else [`Strategy::DEFAULT`].
    pub fn from_config(config: &Config) -> Result<Self> {
        Ok(CudaSettings::from_config(config)?.strategy)
    }

    /// Its name as `OP2_CUDA_STRATEGY` spells it.
    pub fn name(self) -> &'static str {
        match self {
            Strategy::Colour => "colour",
            Strategy::Atomics => "atomics",
        }
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A reduction's partial results on the device, and how many it holds.
type KeptPartials<B> = (Arc<B>, usize);

/// A cached plan and its arrays on the device.
type PlanOnDevice<B> = (Arc<Plan>, Arc<PlanBuffers<B>>);

/// What every prepared loop of one backend shares.
struct Shared<G: Gpu> {
    data: DeviceData<G>,
    strategy: Strategy,
    planner: Planner,
    /// `OP2_PART_SIZE`, kept as given.
    block_size: Option<usize>,
    /// `OP2_CUDA_SYNC`: wait for each loop.
    sync: bool,
    /// Plans already on the device, by the address of the planner's cached plan (kept alive here).
    plans: Mutex<HashMap<usize, PlanOnDevice<G::Buffer>>>,
    /// Maps on the device, entry-major, by map id (maps never change once declared).
    maps: Mutex<HashMap<u64, Arc<G::Buffer>>>,
}

impl<G: Gpu> Shared<G> {
    fn gpu(&self) -> &G {
        self.data.memory()
    }

    /// Refuses a unit whose threads declare more private memory than the device allows (a
    /// reduction into a Global of huge dim, say), before it is compiled or launched.
    fn fits_private(&self, kernel: &str, unit: &CudaUnit) -> Result<()> {
        let limit = self.gpu().limits().max_private_per_thread;
        if unit.private_bytes <= limit {
            return Ok(());
        }
        Err(Op2Error::DeviceLimit {
            backend: self.gpu().backend_name().into(),
            kernel: kernel.into(),
            device: self.gpu().device_name().into(),
            resource: "private (local) memory per thread",
            needed: unit.private_bytes,
            available: limit,
            hint: "the loop's private increments or reduction accumulators are too large (a Dat \
                   or Global of very large dim); split the data into smaller Dats"
                .into(),
        })
    }

    fn upload(&self, bytes: &[u8]) -> Result<G::Buffer> {
        let b = self.gpu().allocate(bytes.len().max(1))?;
        if !bytes.is_empty() {
            self.gpu().upload(&b, bytes)?;
        }
        Ok(b)
    }
}

/// The CUDA backend on a [`Gpu`]: [`CudaBackend<DriverGpu>`] is `cuda`,
/// [`CudaBackend<EmulatedGpu>`] is `cuda-emulator`.
pub struct CudaBackend<G: Gpu> {
    shared: Arc<Shared<G>>,
}

impl CudaBackend<DriverGpu> {
    /// The backend on the configured GPU (`OP2_CUDA_DEVICE`, default 0);
    /// [`Op2Error::BackendUnavailable`] with the reason when there is no driver, device or NVRTC.
    pub fn new(config: &Config) -> Result<Self> {
        Self::with_gpu(DriverGpu::new(config)?, config)
    }
}

impl CudaBackend<EmulatedGpu> {
    /// The backend on the host emulator, compiling units with NVRTC too as `check` says.
    pub fn emulated(config: &Config, check: NvrtcCheck) -> Result<Self> {
        Self::with_gpu(EmulatedGpu::new(config, check)?, config)
    }
}

impl<G: Gpu> CudaBackend<G> {
    /// The backend on `gpu`, with the strategy and block size the configuration asks for.
    pub fn with_gpu(gpu: G, config: &Config) -> Result<Self> {
        Ok(CudaBackend {
            shared: Arc::new(Shared {
                strategy: CudaSettings::from_config(config)?.strategy,
                data: DeviceData::new(gpu),
                planner: Planner::new(),
                block_size: config.part_size,
                sync: CudaSettings::from_config(config)?.sync,
                plans: Mutex::new(HashMap::new()),
                maps: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// The device.
    pub fn gpu(&self) -> &G {
        self.shared.gpu()
    }

    /// The strategy for indirect increments.
    pub fn strategy(&self) -> Strategy {
        self.shared.strategy
    }
}

/// The stub a loop would run if every arg named its own data: what `par_loop` compiles.
fn expected_stub(sig: &LoopSignature, strategy: Strategy) -> CudaStub {
    if sig.is_direct() {
        CudaStub::Direct
    } else if strategy == Strategy::Atomics && !writes_through_maps(sig) {
        CudaStub::Atomic
    } else {
        CudaStub::Planned(BlockLayout::assuming_distinct_data(sig))
    }
}

/// Whether some arg writes (RW, WRITE) through a map: atomics cannot order those.
fn writes_through_maps(sig: &LoopSignature) -> bool {
    sig.args
        .iter()
        .any(|a| a.is_indirect() && matches!(a.access, Access::Rw | Access::Write))
}

/// Whether one run of a loop may add its indirect increments atomically: nothing is written
/// through maps, and data incremented through a map is used by no other kind of arg (a read of it
/// would see some increments and not others).
fn atomics_apply(inv: &LoopInvocation<'_>) -> bool {
    let sig = inv.sig;
    if writes_through_maps(sig) {
        return false;
    }
    let incremented = |i: usize| sig.args[i].is_indirect() && sig.args[i].access == Access::Inc;
    (0..sig.args.len()).filter(|&i| incremented(i)).all(|i| {
        let id = inv.carriers[i].id();
        (0..sig.args.len()).all(|j| inv.carriers[j].id() != id || incremented(j))
    })
}

impl<G: Gpu> Backend for CudaBackend<G> {
    fn name(&self) -> &str {
        self.shared.gpu().backend_name()
    }

    fn prepare(&self, sig: &LoopSignature) -> Result<Arc<dyn PreparedLoop>> {
        // Compiling now surfaces kernels that do not compile at `par_loop`. A planned loop's real
        // layout (which args share data) is only known at its first run.
        let unit = CudaCodegen.emit(sig, &expected_stub(sig, self.shared.strategy));
        self.shared.fits_private(sig.kernel.name(), &unit)?;
        self.shared.gpu().check(&unit)?;
        Ok(Arc::new(CudaLoop {
            reductions: sig.reduction_args(),
            sig: sig.clone(),
            shared: self.shared.clone(),
            programs: Mutex::new(HashMap::new()),
            partials: Mutex::new(vec![None; sig.args.len()]),
        }))
    }

    fn host_access(&self, carrier: &Carrier, write: bool) -> Result<()> {
        self.shared.data.host_access(carrier, write)
    }

    fn release(&self) -> Result<()> {
        self.shared.data.copy_all_home()
    }

    fn device_stats(&self) -> Option<DeviceStats> {
        Some(self.shared.data.stats())
    }

    fn data_state(&self, carrier: u64) -> Option<DataState> {
        Some(self.shared.data.state(carrier))
    }
}

/// A program of one loop and the Const values it last received.
struct Loaded<G: Gpu> {
    unit: CudaUnit,
    program: Arc<G::Program>,
    consts: Mutex<Option<Vec<Vec<u8>>>>,
}

struct CudaLoop<G: Gpu> {
    sig: LoopSignature,
    /// Positions of the Global reduction args.
    reductions: Vec<usize>,
    shared: Arc<Shared<G>>,
    /// Programs by stub (a planned stub's layout depends on which args share data).
    programs: Mutex<HashMap<CudaStub, Arc<Loaded<G>>>>,
    /// Per reduction arg, its partial results' buffer and how many it holds, kept between runs:
    /// all work is ordered on one stream, so a run's kernels use them only after the previous
    /// run's final reduction has read them.
    partials: Mutex<Vec<Option<KeptPartials<G::Buffer>>>>,
}

/// The values of one launch's parameters.
struct LaunchValues<'a, B> {
    start: usize,
    end: usize,
    block_offset: usize,
    plan: Option<(&'a Plan, &'a PlanBuffers<B>)>,
    buffers: &'a [Arc<B>],
    partials: &'a [Option<Arc<B>>],
    /// Per map slot: the entry-major values and their row count (atomics stubs).
    maps: &'a [(Arc<B>, usize)],
    /// Partial results per reduction (the final kernel's count).
    slots: usize,
}

impl<G: Gpu> CudaLoop<G> {
    fn kernel_name(&self) -> &str {
        self.sig.kernel.name()
    }

    fn gpu(&self) -> &G {
        self.shared.gpu()
    }

    /// The program for `stub`, its Consts brought up to date.
    fn program(&self, stub: CudaStub, consts: &[&[u8]]) -> Result<Arc<Loaded<G>>> {
        let loaded = {
            let mut programs = lock(&self.programs);
            match programs.get(&stub) {
                Some(p) => p.clone(),
                None => {
                    let unit = CudaCodegen.emit(&self.sig, &stub);
                    self.shared.fits_private(self.kernel_name(), &unit)?;
                    let program = self.gpu().load(&unit)?;
                    let l = Arc::new(Loaded {
                        unit,
                        program,
                        consts: Mutex::new(None),
                    });
                    programs.insert(stub, l.clone());
                    l
                }
            }
        };
        let mut last = lock(&loaded.consts);
        let mut changed = false;
        for (j, (c, bytes)) in self.sig.consts.iter().zip(consts).enumerate() {
            if last.as_ref().is_none_or(|l| l[j] != *bytes) {
                self.gpu()
                    .set_const(&loaded.program, j, &const_symbol(&c.name), bytes)?;
                changed = true;
            }
        }
        if changed {
            *last = Some(consts.iter().map(|c| c.to_vec()).collect());
        }
        drop(last);
        Ok(loaded)
    }

    fn plan(&self, inv: &LoopInvocation<'_>) -> Result<Arc<Plan>> {
        let sh = &self.shared;
        let limits = self.gpu().limits();
        sh.planner.plan_to_fit(
            inv.set.id(),
            inv.end,
            &PlanArg::of_loop(inv),
            &LocalMemoryFit {
                preferred: CUDA_DEFAULT_BLOCK_SIZE,
                user: sh.block_size,
                capacity: limits.max_shared,
                scratch_per_thread: if self.reductions.is_empty() {
                    0
                } else {
                    SCRATCH_PER_THREAD
                },
                max_threads: limits.max_threads,
                backend: self.gpu().backend_name(),
                kernel: self.kernel_name(),
                device: self.gpu().device_name(),
            },
        )
    }

    fn device_plan(&self, plan: &Arc<Plan>) -> Result<Arc<PlanBuffers<G::Buffer>>> {
        let mut plans = lock(&self.shared.plans);
        let key = Arc::as_ptr(plan) as usize;
        if let Some((_, d)) = plans.get(&key) {
            return Ok(d.clone());
        }
        let d = Arc::new(PlanBuffers::upload(plan, |b| self.shared.upload(b))?);
        plans.insert(key, (plan.clone(), d.clone()));
        Ok(d)
    }

    /// Each map slot's values on the device, entry-major, with its row count.
    fn device_maps(&self, inv: &LoopInvocation<'_>) -> Result<Vec<(Arc<G::Buffer>, usize)>> {
        let mut cache = lock(&self.shared.maps);
        inv.maps
            .iter()
            .map(|m| {
                let rows = m.values().len() / m.arity();
                if let Some(b) = cache.get(&m.id()) {
                    return Ok((b.clone(), rows));
                }
                let mut by_entry = vec![0i32; m.values().len()];
                for (e, row) in m.values().chunks_exact(m.arity()).enumerate() {
                    for (j, &v) in row.iter().enumerate() {
                        by_entry[j * rows + e] = v;
                    }
                }
                let b = Arc::new(self.shared.upload(bytemuck::cast_slice(&by_entry))?);
                cache.insert(m.id(), b.clone());
                Ok((b, rows))
            })
            .collect()
    }

    fn int(&self, v: usize) -> Result<i32> {
        i32::try_from(v).map_err(|_| Op2Error::Execution {
            backend: self.gpu().backend_name().into(),
            kernel: self.kernel_name().into(),
            reason: format!("{v} does not fit the device code's 32-bit indices"),
        })
    }

    fn args(
        &self,
        params: &[StubParam],
        v: &LaunchValues<'_, G::Buffer>,
    ) -> Result<Vec<LaunchArg>> {
        let internal = |what: &str| Op2Error::Execution {
            backend: self.gpu().backend_name().into(),
            kernel: self.kernel_name().into(),
            reason: format!("internal: the stub takes {what}, which this launch lacks"),
        };
        let plan = || v.plan.ok_or_else(|| internal("a plan"));
        let addr = |b: &G::Buffer| LaunchArg::Address(b.address());
        params
            .iter()
            .map(|p| {
                Ok(match *p {
                    StubParam::Start => LaunchArg::Int(self.int(v.start)?),
                    StubParam::End => LaunchArg::Int(self.int(v.end)?),
                    StubParam::BlockOffset => LaunchArg::Int(self.int(v.block_offset)?),
                    StubParam::PlanEnd => LaunchArg::Int(self.int(plan()?.0.end)?),
                    StubParam::BlockMap => addr(&plan()?.1.block_map),
                    StubParam::BlockOffsets => addr(&plan()?.1.block_offsets),
                    StubParam::BlockLengths => addr(&plan()?.1.block_lengths),
                    StubParam::ElementColours => addr(&plan()?.1.element_colours),
                    StubParam::BlockElementColours => addr(&plan()?.1.block_colours),
                    StubParam::Data(i) => addr(&v.buffers[i]),
                    StubParam::StagingItems(k) => addr(&plan()?.1.staging[k][0]),
                    StubParam::StagingOffsets(k) => addr(&plan()?.1.staging[k][1]),
                    StubParam::StagingSizes(k) => addr(&plan()?.1.staging[k][2]),
                    StubParam::StagingLocal(k) => addr(&plan()?.1.staging[k][3]),
                    StubParam::Partials(i) => {
                        addr(v.partials[i].as_ref().ok_or_else(|| internal("partials"))?)
                    }
                    StubParam::MapValues(m) => {
                        addr(&v.maps.get(m).ok_or_else(|| internal("a map"))?.0)
                    }
                    StubParam::MapRows(m) => {
                        LaunchArg::Int(self.int(v.maps.get(m).ok_or_else(|| internal("a map"))?.1)?)
                    }
                    StubParam::PartialCount => LaunchArg::Int(self.int(v.slots)?),
                    StubParam::Shared | StubParam::Scratch => {
                        return Err(internal("OpenCL's local memory"));
                    }
                })
            })
            .collect()
    }

    /// A buffer of at least `slots` partial results per reduction arg (none for other args).
    fn partials(&self, slots: usize) -> Result<Vec<Option<Arc<G::Buffer>>>> {
        let mut kept = lock(&self.partials);
        for &i in &self.reductions {
            if kept[i].as_ref().is_none_or(|(_, n)| *n < slots) {
                let a = &self.sig.args[i];
                let b = self.gpu().allocate(slots.max(1) * a.dim * a.dtype.size())?;
                kept[i] = Some((Arc::new(b), slots));
            }
        }
        Ok(kept
            .iter()
            .map(|k| k.as_ref().map(|(b, _)| b.clone()))
            .collect())
    }

    fn blocks(&self, elements: usize, threads: usize) -> Result<u32> {
        u32::try_from(elements.div_ceil(threads)).map_err(|_| Op2Error::Execution {
            backend: self.gpu().backend_name().into(),
            kernel: self.kernel_name().into(),
            reason: format!("{elements} elements need more thread blocks than a launch allows"),
        })
    }
}

impl<G: Gpu> PreparedLoop for CudaLoop<G> {
    fn run(&self, inv: &LoopInvocation<'_>) -> Result<()> {
        if inv.start >= inv.end {
            return Ok(());
        }
        let sh = &self.shared;
        sh.data.forget_dropped();
        let consts = inv.const_bytes();
        let buffers = sh.data.for_invocation(inv)?;
        let limits = self.gpu().limits();
        let scratch = |threads: usize| {
            if self.reductions.is_empty() {
                0
            } else {
                SCRATCH_PER_THREAD * threads
            }
        };
        let mut values = LaunchValues {
            start: inv.start,
            end: inv.end,
            block_offset: 0,
            plan: None,
            buffers: &buffers,
            partials: &[],
            maps: &[],
            slots: 0,
        };
        let partials;
        let maps;
        let planned;
        let loaded;
        if self.sig.is_direct() || (sh.strategy == Strategy::Atomics && atomics_apply(inv)) {
            let stub = if self.sig.is_direct() {
                CudaStub::Direct
            } else {
                maps = self.device_maps(inv)?;
                values.maps = &maps;
                CudaStub::Atomic
            };
            loaded = self.program(stub, &consts)?;
            let threads = CUDA_THREADS.min(limits.max_threads);
            let blocks = self.blocks(inv.end - inv.start, threads)?;
            values.slots = blocks as usize;
            partials = self.partials(values.slots)?;
            values.partials = &partials;
            let shape = LaunchShape {
                blocks,
                threads: threads as u32,
                shared_bytes: scratch(threads) as u32,
            };
            let args = self.args(&loaded.unit.params, &values)?;
            self.gpu()
                .launch(&loaded.program, Entry::Stub, shape, &args)?;
        } else {
            let plan = self.plan(inv)?;
            planned = (self.device_plan(&plan)?, plan);
            let (device_plan, plan) = (&planned.0, &planned.1);
            let layout = BlockLayout::of_plan(
                &self.sig,
                &plan.arg_staging,
                plan.staging.iter().map(|st| {
                    let wide = matches!(st.global_to_local, LocalIndices::U32(_));
                    (st.dim, st.entries.clone(), wide)
                }),
            );
            loaded = self.program(CudaStub::Planned(layout), &consts)?;
            let threads = plan.block_size.min(limits.max_threads);
            values.slots = plan.blocks();
            partials = self.partials(values.slots)?;
            values.partials = &partials;
            values.plan = Some((plan, device_plan));
            let shared_bytes = (plan.stats.max_staging_bytes + scratch(threads)) as u32;
            for c in 0..plan.colours() {
                let (first, last) = (plan.colour_offsets[c], plan.colour_offsets[c + 1]);
                if first == last {
                    continue;
                }
                values.block_offset = first;
                let shape = LaunchShape {
                    blocks: self.blocks(last - first, 1)?,
                    threads: threads as u32,
                    shared_bytes,
                };
                let args = self.args(&loaded.unit.params, &values)?;
                self.gpu()
                    .launch(&loaded.program, Entry::Stub, shape, &args)?;
            }
        }
        if let Some(params) = &loaded.unit.finish_params {
            let threads = FINISH_THREADS.min(limits.max_threads);
            let shape = LaunchShape {
                blocks: 1,
                threads: threads as u32,
                shared_bytes: (SCRATCH_PER_THREAD * threads) as u32,
            };
            let args = self.args(params, &values)?;
            self.gpu()
                .launch(&loaded.program, Entry::Finish, shape, &args)?;
        }
        if sh.sync {
            self.gpu().synchronize()?;
        }
        Ok(())
    }
}

fn create_cuda(config: &Config) -> Result<Box<dyn Backend>> {
    Ok(Box::new(CudaBackend::new(config)?))
}

fn create_emulator(config: &Config) -> Result<Box<dyn Backend>> {
    Ok(Box::new(CudaBackend::emulated(config, NvrtcCheck::Off)?))
}

op2_core::register_backend!(BackendFactory {
    name: "cuda",
    feature: "cuda",
    description: "generated CUDA compiled by NVRTC on an NVIDIA GPU (OP2_CUDA_DEVICE, OP2_CUDA_STRATEGY)",
    create: create_cuda,
    settings: SETTINGS,
});

op2_core::register_backend!(BackendFactory {
    name: "cuda-emulator",
    feature: "cuda",
    description: "the cuda backend's generated code run on the host CPU, for testing without a GPU (slow)",
    create: create_emulator,
    settings: SETTINGS,
});

/// Referenced by the `op2` facade so that the linker keeps this crate, and with it the registration.
#[doc(hidden)]
pub static LINKED: &str = "backend-cuda";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strategy_reads_its_setting() {
        let mut c = Config::default();
        assert_eq!(Strategy::from_config(&c).unwrap(), Strategy::DEFAULT);
        c.settings.set("cuda_strategy", "Colour");
        assert_eq!(Strategy::from_config(&c).unwrap(), Strategy::Colour);
        c.settings.set("cuda_strategy", "atomics");
        assert_eq!(Strategy::from_config(&c).unwrap(), Strategy::Atomics);
        c.settings.set("cuda_strategy", "magic");
        assert!(matches!(
            Strategy::from_config(&c),
            Err(Op2Error::Config { .. })
        ));
    }

    #[test]
    fn no_driver_is_a_reason_not_a_panic() {
        // This machine may or may not have a GPU; either way `new` must return, not panic.
        match CudaBackend::new(&Config::default()) {
            Ok(b) => assert_eq!(b.name(), "cuda"),
            Err(Op2Error::BackendUnavailable { name, reason }) => {
                assert_eq!(name, "cuda");
                assert!(!reason.is_empty());
            }
            Err(e) => panic!("unexpected error: {e}"),
        }
    }
}
