//! backend-opencl: the OpenCL device backend. Each loop becomes a generated OpenCL C
//! program; loops through maps run one plan block per work-group, staging indirect data in
//! `__local` memory, with block colours launched in sequence; direct loops run one element per
//! work-item. Data moves between host and device only as the device-data state table says.

#![warn(missing_docs)]

mod device;
mod program;

pub use device::{CPU_PRIVATE_PER_GROUP, ChosenDevice, OpenClError, choose_device};
pub use program::{BUILD_OPTIONS, OPENCL_BINARIES, program_stats};

use device::{ClBuffer, ClMemory, cl_err};
use op2_codegen::{ArgPassing, BlockLayout, OpenClCodegen, StubParam};
use op2_core::{
    Access, Backend, BackendFactory, Carrier, Config, DType, DataState, DeviceData, DeviceMemory,
    DeviceStats, LoopInvocation, LoopSignature, Op2Error, PreparedLoop, Result, Setting,
    SettingKind,
};
use op2_plan::{LocalIndices, LocalMemoryFit, Plan, PlanArg, PlanBuffers, Planner};
use opencl3::command_queue::CommandQueue;
use opencl3::context::Context;
use opencl3::types::{cl_int, cl_mem};
use program::{Compiled, ProgramCache};
use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Block (work-group) size of planned loops on GPUs unless `OP2_PART_SIZE` says otherwise: OP2's
/// usual GPU block.
pub const OPENCL_DEFAULT_BLOCK_SIZE: usize = 256;

/// Block size on CPU devices, where a work-group is a loop on one core and barriers cost a pass
/// over the group: Airfoil's res_calc on PoCL (2 cores, 50 iterations) took 40 ms per call with
/// 256-element blocks, 34.7 with 1024 and 76 with 64.
pub const OPENCL_CPU_BLOCK_SIZE: usize = 1024;

/// Work-group size of direct loops.
pub const OPENCL_DIRECT_WORK_GROUP: usize = 256;

/// The OpenCL backend.
pub struct OpenClBackend {
    shared: Arc<Shared>,
}

/// A cached plan and its arrays on the device.
type PlanOnDevice = (Arc<Plan>, Arc<DevicePlan>);

/// What every prepared loop of one backend shares.
struct Shared {
    device: ChosenDevice,
    /// The emitter, set up for the device (tree reductions on GPUs).
    codegen: OpenClCodegen,
    data: DeviceData<ClMemory>,
    programs: ProgramCache,
    planner: Planner,
    /// `OP2_PART_SIZE`, else [`OPENCL_DEFAULT_BLOCK_SIZE`] ([`OPENCL_CPU_BLOCK_SIZE`] on CPUs).
    block_size: Option<usize>,
    /// Plans already on the device, by the address of the planner's cached plan (kept alive here).
    plans: Mutex<HashMap<usize, PlanOnDevice>>,
}

impl Shared {
    fn memory(&self) -> &ClMemory {
        self.data.memory()
    }

    /// The work-group size to launch with: `wanted`, made smaller where the device keeps a whole
    /// group's private arrays in memory of fixed size (see [`CPU_PRIVATE_PER_GROUP`]) and
    /// `private_bytes` per work-item would not fit; an error when one work-item alone does not.
    fn work_group(&self, kernel: &str, wanted: usize, private_bytes: usize) -> Result<usize> {
        let Some(budget) = self.device.private_per_group else {
            return Ok(wanted);
        };
        let fits = budget.checked_div(private_bytes).unwrap_or(usize::MAX);
        if fits == 0 {
            return Err(Op2Error::DeviceLimit {
                backend: "opencl".into(),
                kernel: kernel.into(),
                device: self.device.name.clone(),
                resource: "private memory per work-item",
                needed: private_bytes,
                available: budget,
                hint: "the loop's private increments, reduction accumulators or copies are too \
                       large (a Dat or Global of very large dim); split the data into smaller Dats"
                    .into(),
            });
        }
        Ok(wanted.min(fits).max(1))
    }
}

impl OpenClBackend {
    /// The backend on the configured device (`OP2_OPENCL_PLATFORM`, `OP2_OPENCL_DEVICE`), else
    /// the first device with double precision; [`Op2Error::BackendUnavailable`] when there is none.
    pub fn new(config: &Config) -> Result<Self> {
        let device = choose_device(config)?;
        let context =
            Context::from_device(&device.device).map_err(|e| Op2Error::BackendUnavailable {
                name: "opencl".into(),
                reason: format!("could not create a context on {}: {e}", device.name),
            })?;
        #[allow(deprecated)] // clCreateCommandQueue is the OpenCL 1.2 call, which every driver has.
        let queue = CommandQueue::create_default(&context, 0).map_err(|e| {
            Op2Error::BackendUnavailable {
                name: "opencl".into(),
                reason: format!("could not create a queue on {}: {e}", device.name),
            }
        })?;
        Ok(OpenClBackend {
            shared: Arc::new(Shared {
                data: DeviceData::new(ClMemory {
                    context: Arc::new(context),
                    queue: Arc::new(queue),
                }),
                codegen: OpenClCodegen {
                    tree_reductions: !device.is_cpu,
                },
                device,
                programs: ProgramCache::new(config)?,
                planner: Planner::new(),
                block_size: config.part_size,
                plans: Mutex::new(HashMap::new()),
            }),
        })
    }

    /// The device's name.
    pub fn device_name(&self) -> &str {
        &self.shared.device.name
    }
}

impl Backend for OpenClBackend {
    fn name(&self) -> &str {
        "opencl"
    }

    fn prepare(&self, sig: &LoopSignature) -> Result<Arc<dyn PreparedLoop>> {
        // Emitting now surfaces kernels OpenCL cannot take at `par_loop`; programs are built at the
        // first run, when the consts' values (compiled in as `__constant` data) are known.
        let zeros: Vec<Vec<u8>> = sig
            .consts
            .iter()
            .map(|c| vec![0; c.dim * c.dtype.size()])
            .collect();
        let zeros: Vec<&[u8]> = zeros.iter().map(Vec::as_slice).collect();
        let sh = &self.shared;
        let layout = (!sig.is_direct()).then(|| BlockLayout::assuming_distinct_data(sig));
        let check = |passing| -> Result<()> {
            let unit = sh
                .codegen
                .emit(sig, &zeros, layout.as_ref(), passing)
                .map_err(|e| emit_error(sig, e))?;
            // A stub whose one work-item needs more private memory than the device has is
            // refused before the compiler sees it.
            sh.work_group(sig.kernel.name(), 1, unit.private_bytes)?;
            sh.programs.check(&sh.memory().context, &sh.device, &unit)
        };
        // Kernels that copy a parameter into their own unqualified pointer do not compile with
        // qualified parameters under OpenCL C 1.2 (no generic address space): such kernels get
        // private copies instead. Any other compile error shows up again in the second form.
        let passing = match check(ArgPassing::Qualified) {
            Ok(()) => ArgPassing::Qualified,
            Err(Op2Error::Compile { .. }) => {
                check(ArgPassing::PrivateCopies)?;
                ArgPassing::PrivateCopies
            }
            Err(e) => return Err(e),
        };
        Ok(Arc::new(OpenClLoop {
            sig: sig.clone(),
            reductions: sig.reduction_args(),
            passing,
            shared: self.shared.clone(),
            programs: Mutex::new(HashMap::new()),
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

fn emit_error(sig: &LoopSignature, e: op2_codegen::OpenClEmitError) -> Op2Error {
    Op2Error::Execution {
        backend: "opencl".into(),
        kernel: sig.kernel.name().into(),
        reason: e.0,
    }
}

/// A plan's arrays on the device.
type DevicePlan = PlanBuffers<ClBuffer>;

/// What shapes a program beyond the signature: the consts' values and the block layout.
type ProgramKey = (Vec<Vec<u8>>, Option<BlockLayout>);

struct OpenClLoop {
    sig: LoopSignature,
    /// Positions of the Global reduction args.
    reductions: Vec<usize>,
    /// How args reach the kernel, chosen when the loop was prepared.
    passing: ArgPassing,
    shared: Arc<Shared>,
    programs: Mutex<HashMap<ProgramKey, Arc<Compiled>>>,
}

/// One launch's values of the stub parameters that vary.
struct Launch<'a> {
    start: usize,
    end: usize,
    block_offset: usize,
    plan: Option<(&'a Plan, &'a DevicePlan)>,
    buffers: &'a [Arc<ClBuffer>],
    partials: &'a [Option<ClBuffer>],
    shared_bytes: usize,
    scratch_bytes: usize,
    groups: usize,
    work_group: usize,
}

impl OpenClLoop {
    fn kernel_name(&self) -> &str {
        self.sig.kernel.name()
    }

    fn program(&self, consts: &[&[u8]], layout: Option<BlockLayout>) -> Result<Arc<Compiled>> {
        let key: ProgramKey = (consts.iter().map(|c| c.to_vec()).collect(), layout);
        let mut programs = self.programs.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(p) = programs.get(&key) {
            return Ok(p.clone());
        }
        let sh = &self.shared;
        let unit = sh
            .codegen
            .emit(&self.sig, consts, key.1.as_ref(), self.passing)
            .map_err(|e| emit_error(&self.sig, e))?;
        let compiled = match sh.programs.load(&sh.memory().context, &sh.device, &unit) {
            // The check at `par_loop` assumed every arg on its own data; args sharing data can
            // change which parameters are private, so the real layout may still need copies.
            Err(Op2Error::Compile { .. }) if self.passing == ArgPassing::Qualified => {
                let unit = sh
                    .codegen
                    .emit(&self.sig, consts, key.1.as_ref(), ArgPassing::PrivateCopies)
                    .map_err(|e| emit_error(&self.sig, e))?;
                sh.programs.load(&sh.memory().context, &sh.device, &unit)?
            }
            other => other?,
        };
        programs.insert(key, compiled.clone());
        Ok(compiled)
    }

    fn plan(&self, inv: &LoopInvocation<'_>) -> Result<Arc<Plan>> {
        let sh = &self.shared;
        // Staging must fit the device's local memory beside 8 bytes per work-item of reduction
        // scratch.
        sh.planner.plan_to_fit(
            inv.set.id(),
            inv.end,
            &PlanArg::of_loop(inv),
            &LocalMemoryFit {
                preferred: if sh.device.is_cpu {
                    OPENCL_CPU_BLOCK_SIZE
                } else {
                    OPENCL_DEFAULT_BLOCK_SIZE
                },
                user: sh.block_size,
                capacity: sh.device.local_mem,
                scratch_per_thread: 8,
                max_threads: sh.device.max_work_group,
                backend: "opencl",
                kernel: self.kernel_name(),
                device: &sh.device.name,
            },
        )
    }

    fn device_plan(&self, plan: &Arc<Plan>) -> Result<Arc<DevicePlan>> {
        let mut plans = self.shared.plans.lock().unwrap_or_else(|e| e.into_inner());
        let key = Arc::as_ptr(plan) as usize;
        if let Some((_, d)) = plans.get(&key) {
            return Ok(d.clone());
        }
        let d = Arc::new(DevicePlan::upload(plan, |b| {
            self.shared.memory().buffer_from(b)
        })?);
        plans.insert(key, (plan.clone(), d.clone()));
        Ok(d)
    }

    fn layout(&self, plan: &Plan) -> BlockLayout {
        BlockLayout::of_plan(
            &self.sig,
            &plan.arg_staging,
            plan.staging.iter().map(|st| {
                let wide = matches!(st.global_to_local, LocalIndices::U32(_));
                (st.dim, st.entries.clone(), wide)
            }),
        )
    }

    fn launch(&self, compiled: &Compiled, l: &Launch<'_>) -> Result<()> {
        let err = cl_err(self.kernel_name());
        let int = |v: usize| -> Result<cl_int> {
            cl_int::try_from(v).map_err(|_| Op2Error::Execution {
                backend: "opencl".into(),
                kernel: self.kernel_name().into(),
                reason: format!("{v} does not fit the device's 32-bit indices"),
            })
        };
        let kernel = compiled.kernel.lock().unwrap_or_else(|e| e.into_inner());
        for (idx, p) in compiled.params.iter().enumerate() {
            let idx = idx as u32;
            let plan = || l.plan.expect("planned stubs are launched with a plan");
            let mem = |b: &ClBuffer| -> cl_mem { b.raw() };
            // SAFETY: each value has the type the generated stub declares for this position.
            unsafe {
                match *p {
                    StubParam::Start => kernel.set_arg(idx, &int(l.start)?),
                    StubParam::End => kernel.set_arg(idx, &int(l.end)?),
                    StubParam::BlockOffset => kernel.set_arg(idx, &int(l.block_offset)?),
                    StubParam::PlanEnd => kernel.set_arg(idx, &int(plan().0.end)?),
                    StubParam::BlockMap => kernel.set_arg(idx, &mem(&plan().1.block_map)),
                    StubParam::BlockOffsets => kernel.set_arg(idx, &mem(&plan().1.block_offsets)),
                    StubParam::BlockLengths => kernel.set_arg(idx, &mem(&plan().1.block_lengths)),
                    StubParam::ElementColours => {
                        kernel.set_arg(idx, &mem(&plan().1.element_colours))
                    }
                    StubParam::BlockElementColours => {
                        kernel.set_arg(idx, &mem(&plan().1.block_colours))
                    }
                    StubParam::Data(i) => kernel.set_arg(idx, &mem(&l.buffers[i])),
                    StubParam::StagingItems(k) => {
                        kernel.set_arg(idx, &mem(&plan().1.staging[k][0]))
                    }
                    StubParam::StagingOffsets(k) => {
                        kernel.set_arg(idx, &mem(&plan().1.staging[k][1]))
                    }
                    StubParam::StagingSizes(k) => {
                        kernel.set_arg(idx, &mem(&plan().1.staging[k][2]))
                    }
                    StubParam::StagingLocal(k) => {
                        kernel.set_arg(idx, &mem(&plan().1.staging[k][3]))
                    }
                    StubParam::Partials(i) => kernel.set_arg(
                        idx,
                        &mem(l.partials[i].as_ref().expect("reductions have partials")),
                    ),
                    StubParam::Shared => kernel.set_arg_local_buffer(idx, l.shared_bytes.max(16)),
                    StubParam::Scratch => kernel.set_arg_local_buffer(idx, l.scratch_bytes.max(16)),
                    StubParam::MapValues(_) | StubParam::MapRows(_) | StubParam::PartialCount => {
                        unreachable!("OpenCL stubs take no maps and no final reduction")
                    }
                }
            }
            .map_err(&err)?;
        }
        let global = l.groups * l.work_group;
        let local = l.work_group;
        // SAFETY: every argument was set above; sizes are positive and local divides global.
        let event = unsafe {
            self.shared.memory().queue.enqueue_nd_range_kernel(
                kernel.get(),
                1,
                std::ptr::null(),
                &global,
                &local,
                &[],
            )
        }
        .map_err(&err)?;
        drop(event);
        Ok(())
    }
}

impl PreparedLoop for OpenClLoop {
    fn run(&self, inv: &LoopInvocation<'_>) -> Result<()> {
        if inv.start >= inv.end {
            return Ok(());
        }
        let sh = &self.shared;
        sh.data.forget_dropped();
        let consts = inv.const_bytes();
        let buffers = sh.data.for_invocation(inv)?;
        let reductions = &self.reductions;
        let partials_for = |slots: usize| -> Result<Vec<Option<ClBuffer>>> {
            (0..self.sig.args.len())
                .map(|i| {
                    if reductions.contains(&i) {
                        let a = &self.sig.args[i];
                        sh.memory()
                            .allocate(slots * a.dim * a.dtype.size())
                            .map(Some)
                    } else {
                        Ok(None)
                    }
                })
                .collect()
        };
        let slots;
        let partials;
        if self.sig.is_direct() {
            let compiled = self.program(&consts, None)?;
            let work_group = sh.work_group(
                self.kernel_name(),
                OPENCL_DIRECT_WORK_GROUP.min(compiled.max_work_group),
                compiled.private_bytes,
            )?;
            slots = (inv.end - inv.start).div_ceil(work_group);
            partials = partials_for(slots)?;
            self.launch(
                &compiled,
                &Launch {
                    start: inv.start,
                    end: inv.end,
                    block_offset: 0,
                    plan: None,
                    buffers: &buffers,
                    partials: &partials,
                    shared_bytes: 0,
                    scratch_bytes: 8 * work_group,
                    groups: slots,
                    work_group,
                },
            )?;
        } else {
            let plan = self.plan(inv)?;
            let device_plan = self.device_plan(&plan)?;
            let compiled = self.program(&consts, Some(self.layout(&plan)))?;
            let work_group = sh.work_group(
                self.kernel_name(),
                plan.block_size.min(compiled.max_work_group),
                compiled.private_bytes,
            )?;
            slots = plan.blocks();
            partials = partials_for(slots)?;
            for c in 0..plan.colours() {
                let (first, last) = (plan.colour_offsets[c], plan.colour_offsets[c + 1]);
                if first == last {
                    continue;
                }
                self.launch(
                    &compiled,
                    &Launch {
                        start: inv.start,
                        end: inv.end,
                        block_offset: first,
                        plan: Some((&plan, &device_plan)),
                        buffers: &buffers,
                        partials: &partials,
                        shared_bytes: plan.stats.max_staging_bytes,
                        scratch_bytes: 8 * work_group,
                        groups: last - first,
                        work_group,
                    },
                )?;
            }
        }
        for &i in reductions {
            let a = &self.sig.args[i];
            let part = partials[i].as_ref().expect("reductions have partials");
            let mut bytes = vec![0u8; slots * a.dim * a.dtype.size()];
            sh.memory().download(part, &mut bytes)?;
            // SAFETY: the runtime locked this Global for writing; it holds `dim` values.
            let host = unsafe {
                std::slice::from_raw_parts_mut(inv.args[i] as *mut u8, a.dim * a.dtype.size())
            };
            combine(a.dtype, a.access, host, &bytes);
            sh.data.written_on_host(inv.carriers[i].id());
        }
        sh.memory()
            .queue
            .finish()
            .map_err(cl_err(self.kernel_name()))?;
        Ok(())
    }
}

/// Folds per-work-group partials (in work-group order) into the host value: INC adds, MIN and MAX
/// keep the extreme. Integer sums wrap, as the C they stand for would on every target we run.
fn combine(dtype: DType, access: Access, host: &mut [u8], partials: &[u8]) {
    macro_rules! fold {
        ($t:ty, $add:expr) => {{
            let dim = host.len() / std::mem::size_of::<$t>();
            let mut h: Vec<$t> = bytemuck::pod_collect_to_vec(host);
            let p: Vec<$t> = bytemuck::pod_collect_to_vec(partials);
            for chunk in p.chunks_exact(dim) {
                for (x, &y) in h.iter_mut().zip(chunk) {
                    *x = match access {
                        Access::Min => {
                            if y < *x {
                                y
                            } else {
                                *x
                            }
                        }
                        Access::Max => {
                            if y > *x {
                                y
                            } else {
                                *x
                            }
                        }
                        _ => $add(*x, y),
                    };
                }
            }
            host.copy_from_slice(bytemuck::cast_slice(&h));
        }};
    }
    match dtype {
        DType::F64 => fold!(f64, |x: f64, y: f64| x + y),
        DType::F32 => fold!(f32, |x: f32, y: f32| x + y),
        DType::I32 => fold!(i32, i32::wrapping_add),
        DType::U32 => fold!(u32, u32::wrapping_add),
        DType::I64 => fold!(i64, i64::wrapping_add),
        DType::U64 => fold!(u64, u64::wrapping_add),
    }
}

fn create(config: &Config) -> Result<Box<dyn Backend>> {
    Ok(Box::new(OpenClBackend::new(config)?))
}

op2_core::register_backend!(BackendFactory {
    name: "opencl",
    feature: "opencl",
    description: "generated OpenCL C, staged through local memory per plan block (OP2_OPENCL_DEVICE)",
    create,
    settings: SETTINGS,
});

/// The OpenCL backend's own settings.
pub const SETTINGS: &[Setting] = &[
    Setting {
        name: "opencl_platform",
        env: "OP2_OPENCL_PLATFORM",
        kind: SettingKind::Text,
        default: "any",
        doc: "the OpenCL platform, by index or part of its name",
    },
    Setting {
        name: "opencl_device",
        env: "OP2_OPENCL_DEVICE",
        kind: SettingKind::Text,
        default: "the first with double precision",
        doc: "the OpenCL device, by index or part of its name",
    },
];

/// Referenced by the `op2` facade so that the linker keeps this crate, and with it the registration.
#[doc(hidden)]
pub static LINKED: &str = "backend-opencl";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partials_fold_in_order() {
        let mut host = 1.5f64.to_ne_bytes().to_vec();
        let parts: Vec<u8> = [1.0f64, 2.0, 0.25]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        combine(DType::F64, Access::Inc, &mut host, &parts);
        assert_eq!(f64::from_ne_bytes(host[..].try_into().unwrap()), 4.75);
        let mut host = 5i32.to_ne_bytes().to_vec();
        let parts: Vec<u8> = [7i32, -3, 9].iter().flat_map(|v| v.to_ne_bytes()).collect();
        combine(DType::I32, Access::Min, &mut host, &parts);
        assert_eq!(i32::from_ne_bytes(host[..].try_into().unwrap()), -3);
        let mut host = [1u64, 10]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect::<Vec<_>>();
        let parts: Vec<u8> = [4u64, 2, 0, 12]
            .iter()
            .flat_map(|v| v.to_ne_bytes())
            .collect();
        combine(DType::U64, Access::Max, &mut host, &parts);
        assert_eq!(bytemuck::pod_collect_to_vec::<u8, u64>(&host), [4, 12]);
    }
}
