//! The generic device backend over a [`Device`]: the [`Backend`] a device API registers, and the
//! prepared loops it makes. A loop's program is compiled at `par_loop` (so errors surface there),
//! for the stub and layout it will run with; each run moves data as the device-data states say,
//! plans (for staged loops), binds arguments from the stub's parameter list, launches colour by
//! colour, and finishes reductions on the device.

use crate::{Device, DeviceData, DeviceLimits, Entry, LaunchArg, LaunchShape, Strategy};
use op2_codegen::{
    BlockLayout, DeviceCodegen, DeviceOptions, DeviceStub, DeviceUnit, HostRange, StubParam,
};
use op2_core::{
    Backend, BackendMemory, Carrier, Codegen, Config, DataState, DeviceStats, LoopInvocation,
    LoopSignature, MemoryOwner, Op2Error, PreparedLoop, Result,
};
use op2_plan::{
    CachedPlanner, LocalIndices, LocalMemoryFit, Plan, PlanArg, PlanBuffers, PlanDetail,
    PlanRequest, Planner, StrategyChoice, build_plan,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard};

/// Local memory per work-item for reductions: one value of the widest type.
const SCRATCH_PER_THREAD: usize = 8;

/// Work-items of the group that folds reduction partials.
const FINISH_THREADS: usize = 256;

/// Work-items (chunks or plan blocks) per core a host-scheme loop aims for: enough for the
/// device's scheduler to even out cores that run at different speeds, few enough that each one
/// streams long runs of memory.
const HOST_ITEMS_PER_CORE: usize = 16;

/// Bounds of the elements one work-item of the host scheme runs: below the smallest the launch
/// costs more than the elements; above the largest a colour has too few blocks to share out.
const HOST_MIN_RANGE: usize = 256;
const HOST_MAX_RANGE: usize = 8192;

/// The elements each work-item of a host-scheme loop over `elements` runs on `cores`: a power of
/// two giving each core about [`HOST_ITEMS_PER_CORE`] of them, within
/// [`HOST_MIN_RANGE`]..=[`HOST_MAX_RANGE`].
pub(crate) fn host_range_size(elements: usize, cores: usize) -> usize {
    let fair = elements / (HOST_ITEMS_PER_CORE * cores.max(1));
    let pow2 = if fair == 0 {
        1
    } else {
        1 << (usize::BITS - 1 - fair.leading_zeros())
    };
    pow2.clamp(HOST_MIN_RANGE, HOST_MAX_RANGE)
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A cached plan and its arrays on the device.
type PlanOnDevice<B> = (Arc<Plan>, Arc<PlanBuffers<B>>);

/// Plans on the device by the planner's plan (its address) and which staging areas' indices
/// were widened.
type DevicePlans<B> = HashMap<(usize, Vec<bool>), PlanOnDevice<B>>;

/// Maps on the device, entry-major, by map id: the buffer and its bytes.
type DeviceMaps<B> = HashMap<u64, (Arc<B>, usize)>;

/// A Const's value and the buffer holding it.
type ConstBuffer<B> = (Vec<u8>, Arc<B>);

/// What every prepared loop of one backend shares.
struct Shared<D: Device> {
    data: DeviceData<D>,
    strategy: Strategy,
    /// Chooses each loop's strategy (staging for every loop through a map; atomics where the
    /// backend's strategy and the dialect allow) and makes its plans.
    planner: CachedPlanner,
    /// `OP2_PART_SIZE`: the first block size plans try.
    block_size: Option<usize>,
    /// The device's units add increments atomically at both levels
    /// ([`op2_codegen::DeviceOptions::block_atomics`]): loops that modify nothing through maps
    /// then run the atomics stub (staging what they only read costs more than it saves).
    block_atomics: bool,
    /// Plans already on the device, by the address of the planner's cached plan (kept alive here)
    /// and which of their areas' block-local indices are widened to 32 bits.
    plans: Mutex<DevicePlans<D::Buffer>>,
    /// Maps on the device, entry-major, by map id (maps never change once declared).
    maps: Mutex<DeviceMaps<D::Buffer>>,
}

impl<D: Device> Shared<D> {
    fn device(&self) -> &D {
        self.data.memory()
    }

    fn limits(&self) -> DeviceLimits {
        self.device().limits()
    }

    fn upload(&self, bytes: &[u8]) -> Result<D::Buffer> {
        let b = self.device().allocate(bytes.len().max(1))?;
        if !bytes.is_empty() {
            self.device().upload(&b, bytes)?;
        }
        Ok(b)
    }

    /// The largest block a plan of this backend can have: the user's size or the device's.
    fn block_bound(&self) -> usize {
        self.block_size
            .unwrap_or(self.limits().planned_block)
            .max(1)
    }

    /// The work-items per group to launch with: `wanted`, fewer where the device keeps a whole
    /// group's private arrays in memory of fixed size and `private_bytes` per work-item would not
    /// fit; a [`Op2Error::DeviceLimit`] when one work-item alone does not.
    fn work_group(&self, kernel: &str, wanted: usize, private_bytes: usize) -> Result<usize> {
        let limits = self.limits();
        let refuse = |resource, available| Op2Error::DeviceLimit {
            backend: self.device().backend_name().into(),
            kernel: kernel.into(),
            device: self.device().device_name().into(),
            resource,
            needed: private_bytes,
            available,
            hint: "the loop's private increments, reduction accumulators or copies are too \
                   large (a Dat or Global of very large dim); split the data into smaller Dats"
                .into(),
        };
        if private_bytes > limits.private_per_item {
            return Err(refuse(
                "private memory per work-item",
                limits.private_per_item,
            ));
        }
        let Some(budget) = limits.private_per_group else {
            return Ok(wanted.max(1));
        };
        let fits = budget.checked_div(private_bytes).unwrap_or(usize::MAX);
        if fits == 0 {
            return Err(refuse("private memory per work-group", budget));
        }
        Ok(wanted.min(fits).max(1))
    }

    /// The stub a loop of `sig` runs, as the planner's strategy for it says: direct, the atomics
    /// stub, or a plan's (with the layout a plan of it has, from `sig.data`).
    fn stub_of(&self, sig: &LoopSignature) -> DeviceStub {
        if self.limits().host_scheme.is_some() {
            return DeviceStub::Host(if sig.has_indirect_writes() {
                HostRange::Blocks
            } else {
                HostRange::Chunks
            });
        }
        match self.planner.strategy(sig) {
            Strategy::None => DeviceStub::Direct,
            Strategy::Atomics => DeviceStub::Atomic,
            Strategy::Colour if self.block_atomics && !sig.has_indirect_writes() => {
                DeviceStub::Atomic
            }
            Strategy::Colour => {
                DeviceStub::Planned(BlockLayout::of_signature(sig, self.block_bound()))
            }
        }
    }
}

/// A device backend: everything above the driver, over device `D`.
pub struct DeviceBackend<D: Device> {
    shared: Arc<Shared<D>>,
}

impl<D: Device> DeviceBackend<D> {
    /// The backend on `device`, keeping indirect increments race-free with `strategy`, with the
    /// block size the configuration asks for (`OP2_PART_SIZE`).
    pub fn new(device: D, config: &Config, strategy: Strategy) -> Self {
        let atomics = strategy == Strategy::Atomics && device.dialect().atomic_add().is_some();
        let block_atomics = device.dialect().atomic_add().is_some()
            && device.variants().first().is_some_and(|o| o.block_atomics);
        DeviceBackend {
            shared: Arc::new(Shared {
                data: DeviceData::new(device),
                strategy,
                planner: CachedPlanner::new(StrategyChoice {
                    stages: true,
                    atomics,
                }),
                block_size: config.part_size,
                block_atomics,
                plans: Mutex::new(HashMap::new()),
                maps: Mutex::new(HashMap::new()),
            }),
        }
    }

    /// The device.
    pub fn device(&self) -> &D {
        self.shared.device()
    }

    /// The strategy for indirect increments.
    pub fn strategy(&self) -> Strategy {
        self.shared.strategy
    }
}

impl<D: Device> Backend for DeviceBackend<D> {
    fn name(&self) -> &str {
        self.shared.device().backend_name()
    }

    /// Compiles the program the loop will run, trying the device's ways to emit it in turn: a
    /// kernel that compiles no way fails here with the first compiler message.
    fn prepare(&self, sig: &LoopSignature) -> Result<Arc<dyn PreparedLoop>> {
        let sh = &self.shared;
        let stub = sh.stub_of(sig);
        let codegen = DeviceCodegen {
            dialect: sh.device().dialect(),
        };
        let mut first_failure = None;
        for options in sh.device().variants() {
            // Consts compiled in need their values: a check with zeros here, the real program
            // at the first run (and at every new value).
            let baked = options.baked_consts.is_some();
            let mut emitted = options.clone();
            if baked {
                emitted.baked_consts = Some(
                    sig.consts
                        .iter()
                        .map(|c| vec![0; c.dim * c.dtype.size()])
                        .collect(),
                );
            }
            let unit = codegen.emit(sig, &(stub.clone(), emitted))?;
            sh.work_group(sig.kernel.name(), 1, unit.private_bytes)?;
            match sh.device().compile(&unit) {
                Ok(program) => {
                    let prepared = DeviceLoop {
                        sig: sig.clone(),
                        reductions: sig.reduction_args(),
                        options,
                        shared: sh.clone(),
                        programs: Mutex::new(HashMap::new()),
                        partials: Mutex::new(vec![None; sig.args.len()]),
                        consts: Mutex::new(Vec::new()),
                    };
                    if !baked {
                        lock(&prepared.programs).insert(
                            (stub, None),
                            Arc::new(Loaded {
                                unit,
                                program,
                                consts: Mutex::new(None),
                            }),
                        );
                    }
                    return Ok(Arc::new(prepared));
                }
                Err(e @ Op2Error::Compile { .. }) => {
                    first_failure.get_or_insert(e);
                }
                Err(e) => return Err(e),
            }
        }
        Err(first_failure.unwrap_or_else(|| Op2Error::Unsupported {
            kernel: sig.kernel.name().into(),
            reason: format!("the {} device offers no way to emit it", self.name()),
        }))
    }

    fn host_access(&self, carrier: &Carrier, write: bool) -> Result<()> {
        self.shared.data.host_access(carrier, write)
    }

    fn gather_rows(&self, carrier: &Carrier, rows: &[u32], out: &mut [u8]) -> Result<()> {
        self.shared.data.read_rows(carrier, rows, out)
    }

    fn write_bytes(&self, carrier: &Carrier, offset: usize, data: &[u8]) -> Result<()> {
        self.shared.data.write_range(carrier, offset, data)
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

    fn loop_done(&self, carriers: &[Arc<Carrier>]) {
        self.shared.data.release_stale_hosts(carriers);
    }

    /// Device copies of data and maps, and the cached plans (their host arrays, and the device
    /// arrays of those uploaded). Compiled programs are the driver's and are not counted.
    fn memory(&self) -> Vec<BackendMemory> {
        let sh = &self.shared;
        let mut m: Vec<BackendMemory> = sh
            .data
            .device_bytes()
            .into_iter()
            .map(|(id, bytes)| BackendMemory {
                owner: MemoryOwner::Carrier(id),
                host_bytes: 0,
                device_bytes: bytes as u64,
            })
            .collect();
        let mut maps: Vec<(u64, usize)> = lock(&sh.maps)
            .iter()
            .map(|(&id, (_, bytes))| (id, *bytes))
            .collect();
        maps.sort_unstable();
        m.extend(maps.into_iter().map(|(id, bytes)| BackendMemory {
            owner: MemoryOwner::Map(id),
            host_bytes: 0,
            device_bytes: bytes as u64,
        }));
        let on_device = lock(&sh.plans);
        m.extend(sh.planner.memory(|plan| {
            on_device
                .values()
                .filter(|(p, _)| Arc::ptr_eq(p, plan))
                .map(|(_, d)| d.device_bytes as u64)
                .sum()
        }));
        m
    }
}

/// A compiled program of one loop, and the Const values it last received.
struct Loaded<D: Device> {
    unit: DeviceUnit,
    program: Arc<D::Program>,
    consts: Mutex<Option<Vec<Vec<u8>>>>,
}

/// A reduction's partial results on the device, and how many it holds.
type KeptPartials<B> = (Arc<B>, usize);

/// Programs of a loop by stub, and by Const values where they are compiled in.
type ProgramKey = (DeviceStub, Option<Vec<Vec<u8>>>);

struct DeviceLoop<D: Device> {
    sig: LoopSignature,
    /// Positions of the Global reduction args.
    reductions: Vec<usize>,
    /// How the loop's programs are emitted (the way that compiled at `par_loop`).
    options: DeviceOptions,
    shared: Arc<Shared<D>>,
    programs: Mutex<HashMap<ProgramKey, Arc<Loaded<D>>>>,
    /// Per reduction arg, its partial results' buffer and how many it holds, kept between runs
    /// (work is ordered on the device: a run's kernels use them after the previous run's final
    /// reduction read them).
    partials: Mutex<Vec<Option<KeptPartials<D::Buffer>>>>,
    /// Each Const's value and its buffer, for dialects that pass Consts as parameters.
    consts: Mutex<Vec<ConstBuffer<D::Buffer>>>,
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
    consts: &'a [Arc<B>],
    /// Partial results per reduction (the final kernel's count).
    slots: usize,
    /// Elements per work-item of the host scheme's chunks.
    chunk: usize,
    /// Local memory for staging, and for reductions, per group.
    staging_bytes: usize,
    scratch_bytes: usize,
}

impl<D: Device> DeviceLoop<D> {
    fn kernel_name(&self) -> &str {
        self.sig.kernel.name()
    }

    fn device(&self) -> &D {
        self.shared.device()
    }

    fn internal(&self, what: &str) -> Op2Error {
        Op2Error::Execution {
            backend: self.device().backend_name().into(),
            kernel: self.kernel_name().into(),
            reason: format!("internal: the stub takes {what}, which this launch lacks"),
        }
    }

    /// The program for `stub`, compiled now if `par_loop` did not (a layout the plan chose
    /// differently, or Consts compiled in with new values), its Consts brought up to date.
    fn program(&self, stub: &DeviceStub, consts: &[&[u8]]) -> Result<Arc<Loaded<D>>> {
        let baked = self
            .options
            .baked_consts
            .as_ref()
            .map(|_| consts.iter().map(|c| c.to_vec()).collect::<Vec<_>>());
        let key: ProgramKey = (stub.clone(), baked.clone());
        let loaded = {
            let mut programs = lock(&self.programs);
            match programs.get(&key) {
                Some(p) => p.clone(),
                None => {
                    let options = DeviceOptions {
                        baked_consts: baked,
                        ..self.options.clone()
                    };
                    let codegen = DeviceCodegen {
                        dialect: self.device().dialect(),
                    };
                    let unit = codegen.emit(&self.sig, &(stub.clone(), options))?;
                    self.shared
                        .work_group(self.kernel_name(), 1, unit.private_bytes)?;
                    let program = self.device().compile(&unit)?;
                    let l = Arc::new(Loaded {
                        unit,
                        program,
                        consts: Mutex::new(None),
                    });
                    programs.insert(key, l.clone());
                    l
                }
            }
        };
        let mut last = lock(&loaded.consts);
        if last
            .as_ref()
            .is_none_or(|l| l.iter().zip(consts).any(|(a, b)| a != b))
        {
            self.device().set_consts(&loaded.program, consts)?;
            *last = Some(consts.iter().map(|c| c.to_vec()).collect());
        }
        drop(last);
        Ok(loaded)
    }

    /// A buffer holding each Const's current value, uploaded when it changed (dialects that pass
    /// Consts as parameters).
    fn const_buffers(&self, unit: &DeviceUnit, consts: &[&[u8]]) -> Result<Vec<Arc<D::Buffer>>> {
        if !unit.params.iter().any(|p| matches!(p, StubParam::Const(_))) {
            return Ok(Vec::new());
        }
        let mut kept = lock(&self.consts);
        for (j, bytes) in consts.iter().enumerate() {
            match kept.get(j) {
                Some((v, _)) if v == bytes => {}
                _ => {
                    let b = Arc::new(self.shared.upload(bytes)?);
                    let entry = (bytes.to_vec(), b);
                    if j < kept.len() {
                        kept[j] = entry;
                    } else {
                        kept.push(entry);
                    }
                }
            }
        }
        Ok(kept.iter().map(|(_, b)| b.clone()).collect())
    }

    fn plan(&self, inv: &LoopInvocation<'_>) -> Result<Arc<Plan>> {
        let sh = &self.shared;
        let limits = sh.limits();
        sh.planner.plan_to_fit(
            inv.set.id(),
            inv.start..inv.end,
            &PlanArg::of_loop(inv),
            &LocalMemoryFit {
                preferred: limits.planned_block,
                user: sh.block_size,
                capacity: limits.local_memory,
                scratch_per_thread: if self.reductions.is_empty() {
                    0
                } else {
                    SCRATCH_PER_THREAD
                },
                max_threads: limits.max_threads,
                backend: self.device().backend_name(),
                kernel: self.kernel_name(),
                device: self.device().device_name(),
            },
        )
    }

    /// The plan's arrays on the device, block-local indices widened to 32 bits where the program
    /// reads them so. A full plan (`rebuild` given: how to build it again) is kept on the host
    /// without its per-element arrays once they are on the device
    /// ([`Plan::without_element_arrays`]); a later upload of it with other index widths builds
    /// them again. A plan of block colours only (`rebuild` `None`) has none to drop.
    fn device_plan(
        &self,
        plan: &Arc<Plan>,
        layout: &BlockLayout,
        rebuild: Option<&dyn Fn() -> Result<Plan>>,
    ) -> Result<Arc<PlanBuffers<D::Buffer>>> {
        let wide: Vec<bool> = layout.stagings.iter().map(|s| s.wide_indices).collect();
        let mut plans = lock(&self.shared.plans);
        let key = |p: &Arc<Plan>| (Arc::as_ptr(p) as usize, wide.clone());
        if let Some((_, d)) = plans.get(&key(plan)) {
            return Ok(d.clone());
        }
        let upload = |full: &Plan| {
            PlanBuffers::upload_widened(full, &wide, |b| self.shared.upload(b)).map(Arc::new)
        };
        let (kept, d) = match rebuild {
            Some(_) if plan.holds_element_arrays() => {
                let d = upload(plan)?;
                let lean = Arc::new(plan.without_element_arrays());
                self.shared.planner.replace(plan, &lean);
                (lean, d)
            }
            Some(rebuild) => (plan.clone(), upload(&rebuild()?)?),
            None => (plan.clone(), upload(plan)?),
        };
        // Keyed by the kept plan, which the entry keeps alive (its address is not reused).
        plans.insert(key(&kept), (kept, d.clone()));
        Ok(d)
    }

    /// Each map slot's values on the device, entry-major, with its row count.
    fn device_maps(&self, inv: &LoopInvocation<'_>) -> Result<Vec<(Arc<D::Buffer>, usize)>> {
        let mut cache = lock(&self.shared.maps);
        inv.maps
            .iter()
            .map(|m| {
                let rows = m.values().len() / m.arity();
                if let Some((b, _)) = cache.get(&m.id()) {
                    return Ok((b.clone(), rows));
                }
                let mut by_entry = vec![0i32; m.values().len()];
                for (e, row) in m.values().chunks_exact(m.arity()).enumerate() {
                    for (j, &v) in row.iter().enumerate() {
                        by_entry[j * rows + e] = v;
                    }
                }
                let b = Arc::new(self.shared.upload(bytemuck::cast_slice(&by_entry))?);
                cache.insert(m.id(), (b.clone(), by_entry.len() * size_of::<i32>()));
                Ok((b, rows))
            })
            .collect()
    }

    fn int(&self, v: usize) -> Result<i32> {
        i32::try_from(v).map_err(|_| Op2Error::Execution {
            backend: self.device().backend_name().into(),
            kernel: self.kernel_name().into(),
            reason: format!("{v} does not fit the device code's 32-bit indices"),
        })
    }

    fn args<'a>(
        &self,
        params: &[StubParam],
        v: &LaunchValues<'a, D::Buffer>,
    ) -> Result<Vec<LaunchArg<'a, D::Buffer>>> {
        let plan = || v.plan.ok_or_else(|| self.internal("a plan"));
        params
            .iter()
            .map(|p| {
                Ok(match *p {
                    StubParam::Start => LaunchArg::Int(self.int(v.start)?),
                    StubParam::End => LaunchArg::Int(self.int(v.end)?),
                    StubParam::BlockOffset => LaunchArg::Int(self.int(v.block_offset)?),
                    StubParam::PlanStart => LaunchArg::Int(self.int(plan()?.0.start)?),
                    StubParam::PlanEnd => LaunchArg::Int(self.int(plan()?.0.end)?),
                    StubParam::BlockMap => LaunchArg::Buffer(&plan()?.1.block_map),
                    StubParam::BlockOffsets => LaunchArg::Buffer(&plan()?.1.block_offsets),
                    StubParam::BlockLengths => LaunchArg::Buffer(&plan()?.1.block_lengths),
                    StubParam::ElementColours => LaunchArg::Buffer(&plan()?.1.element_colours),
                    StubParam::BlockElementColours => LaunchArg::Buffer(&plan()?.1.block_colours),
                    StubParam::Data(i) => LaunchArg::Buffer(&*v.buffers[i]),
                    StubParam::StagingItems(k) => LaunchArg::Buffer(&plan()?.1.staging[k][0]),
                    StubParam::StagingOffsets(k) => LaunchArg::Buffer(&plan()?.1.staging[k][1]),
                    StubParam::StagingSizes(k) => LaunchArg::Buffer(&plan()?.1.staging[k][2]),
                    StubParam::StagingLocal(k) => LaunchArg::Buffer(&plan()?.1.staging[k][3]),
                    StubParam::Partials(i) => LaunchArg::Buffer(
                        &**v.partials
                            .get(i)
                            .and_then(Option::as_ref)
                            .ok_or_else(|| self.internal("partials"))?,
                    ),
                    StubParam::MapValues(m) => {
                        LaunchArg::Buffer(&*v.maps.get(m).ok_or_else(|| self.internal("a map"))?.0)
                    }
                    StubParam::MapRows(m) => LaunchArg::Int(
                        self.int(v.maps.get(m).ok_or_else(|| self.internal("a map"))?.1)?,
                    ),
                    StubParam::PartialCount => LaunchArg::Int(self.int(v.slots)?),
                    StubParam::Chunk => LaunchArg::Int(self.int(v.chunk)?),
                    StubParam::Const(j) => LaunchArg::Buffer(
                        &**v.consts.get(j).ok_or_else(|| self.internal("a Const"))?,
                    ),
                    StubParam::Shared => LaunchArg::Local(v.staging_bytes.max(16)),
                    StubParam::Scratch => LaunchArg::Local(v.scratch_bytes.max(16)),
                })
            })
            .collect()
    }

    /// A buffer of at least `slots` partial results per reduction arg (none for other args).
    fn partials(&self, slots: usize) -> Result<Vec<Option<Arc<D::Buffer>>>> {
        let mut kept = lock(&self.partials);
        for &i in &self.reductions {
            if kept[i].as_ref().is_none_or(|(_, n)| *n < slots) {
                let a = &self.sig.args[i];
                let b = self
                    .device()
                    .allocate(slots.max(1) * a.dim * a.dtype.size())?;
                kept[i] = Some((Arc::new(b), slots));
            }
        }
        Ok(kept
            .iter()
            .map(|k| k.as_ref().map(|(b, _)| b.clone()))
            .collect())
    }

    fn groups(&self, elements: usize, threads: usize) -> Result<u32> {
        u32::try_from(elements.div_ceil(threads.max(1))).map_err(|_| Op2Error::Execution {
            backend: self.device().backend_name().into(),
            kernel: self.kernel_name().into(),
            reason: format!("{elements} elements need more work-groups than a launch allows"),
        })
    }

    /// Launches the stub once per colour of `plan` that has blocks, a work-group per block of
    /// `threads` work-items with `local` bytes of local memory (work is ordered on the device, so
    /// a colour's writes are done before the next colour runs).
    fn launch_colours(
        &self,
        loaded: &Loaded<D>,
        plan: &Plan,
        values: &mut LaunchValues<'_, D::Buffer>,
        threads: usize,
        local: usize,
    ) -> Result<()> {
        for c in 0..plan.colours() {
            let (first, last) = (plan.colour_offsets[c], plan.colour_offsets[c + 1]);
            if first == last {
                continue;
            }
            values.block_offset = first;
            let args = self.args(&loaded.unit.params, values)?;
            self.device().launch(
                &loaded.program,
                Entry::Stub,
                self.shape(self.groups(last - first, 1)?, threads, local),
                &args,
            )?;
        }
        Ok(())
    }

    /// The launch's shape: local memory from the launch where the dialect does not take it as
    /// parameters.
    fn shape(&self, groups: u32, threads: usize, local: usize) -> LaunchShape {
        let from_launch = !self.device().dialect().local_memory_params();
        LaunchShape {
            groups,
            threads: threads as u32,
            local_bytes: if from_launch { local as u32 } else { 0 },
        }
    }
}

impl<D: Device> DeviceLoop<D> {
    /// Local memory for the reductions' scratch in a work-group of `threads` (none without
    /// reductions).
    fn scratch(&self, threads: usize) -> usize {
        if self.reductions.is_empty() {
            0
        } else {
            SCRATCH_PER_THREAD * threads
        }
    }

    /// A direct or atomics stub: one launch over the range, a work-group of as many threads as
    /// fit (staged direct rows take local memory in proportion to the group).
    fn run_direct(
        &self,
        inv: &LoopInvocation<'_>,
        stub: DeviceStub,
        consts: &[&[u8]],
        base: LaunchValues<'_, D::Buffer>,
    ) -> Result<()> {
        let limits = self.shared.limits();
        let mut values = base;
        let maps;
        if stub == DeviceStub::Atomic {
            maps = self.device_maps(inv)?;
            values.maps = &maps;
        }
        let loaded = self.program(&stub, consts)?;
        let const_buffers = self.const_buffers(&loaded.unit, consts)?;
        values.consts = &const_buffers;
        // Staged direct rows take shared memory in proportion to the block: fewer threads
        // (whole warps) where a block of the usual size would not fit.
        let staged =
            op2_codegen::staged_direct_rows(&self.sig, self.device().dialect(), &self.options);
        let staged_per_thread = op2_codegen::direct_staging_bytes(&self.sig, &staged, 1);
        let fit = limits
            .local_memory
            .checked_div(staged_per_thread)
            .map_or(usize::MAX, |n| (n / 32 * 32).max(1));
        let threads = self.shared.work_group(
            self.kernel_name(),
            limits
                .direct_threads
                .min(self.device().max_threads(&loaded.program))
                .min(fit),
            loaded.unit.private_bytes,
        )?;
        let groups = self.groups(inv.end - inv.start, threads)?;
        values.slots = groups as usize;
        values.scratch_bytes = self.scratch(threads);
        let partials = self.partials(values.slots)?;
        values.partials = &partials;
        let args = self.args(&loaded.unit.params, &values)?;
        // The staged rows and the reductions' scratch share the block's memory, one after the
        // other (the stub waits between them).
        let local = values.scratch_bytes.max(op2_codegen::direct_staging_bytes(
            &self.sig, &staged, threads,
        ));
        self.device().launch(
            &loaded.program,
            Entry::Stub,
            self.shape(groups, threads, local),
            &args,
        )?;
        self.finish_reductions(&loaded, &mut values)
    }

    /// The host scheme (a device whose work-items are CPU cores): the range in chunks, one per
    /// work-item, or in coloured blocks where data is modified through maps.
    fn run_on_host_cores(
        &self,
        inv: &LoopInvocation<'_>,
        range: HostRange,
        consts: &[&[u8]],
        base: LaunchValues<'_, D::Buffer>,
    ) -> Result<()> {
        let sh = &self.shared;
        let cores = sh.limits().host_scheme.unwrap_or(1);
        let elements = inv.end - inv.start;
        let size = sh
            .block_size
            .unwrap_or_else(|| host_range_size(elements, cores));
        let mut values = base;
        let maps = self.device_maps(inv)?;
        values.maps = &maps;
        let loaded = self.program(&DeviceStub::Host(range), consts)?;
        let const_buffers = self.const_buffers(&loaded.unit, consts)?;
        values.consts = &const_buffers;
        let partials;
        let planned;
        match range {
            HostRange::Chunks => {
                values.chunk = size;
                let groups = self.groups(elements, size)?;
                values.slots = groups as usize;
                partials = self.partials(values.slots)?;
                values.partials = &partials;
                let args = self.args(&loaded.unit.params, &values)?;
                self.device().launch(
                    &loaded.program,
                    Entry::Stub,
                    self.shape(groups, 1, 0),
                    &args,
                )?;
            }
            HostRange::Blocks => {
                // Only args that modify data through maps (and direct args modifying the same
                // data) constrain the colours: nothing is staged, and a block's elements run in
                // turn on one work-item.
                let args: Vec<PlanArg<'_>> = PlanArg::colouring_args(inv);
                let plan = sh.planner.plan(&PlanRequest {
                    set: inv.set.id(),
                    start: inv.start,
                    end: inv.end,
                    block_size: size,
                    args: &args,
                    detail: PlanDetail::BlockColours,
                })?;
                let layout = BlockLayout {
                    stagings: Vec::new(),
                    arg_staging: vec![None; self.sig.args.len()],
                };
                planned = (self.device_plan(&plan, &layout, None)?, plan);
                let (device_plan, plan) = (&planned.0, &planned.1);
                values.slots = plan.blocks();
                partials = self.partials(values.slots)?;
                values.partials = &partials;
                values.plan = Some((plan, device_plan));
                self.launch_colours(&loaded, plan, &mut values, 1, 0)?;
            }
        }
        self.finish_reductions(&loaded, &mut values)
    }

    /// A planned stub: the plan's blocks staged in local memory, launched colour by colour, or
    /// every block at once where increments are atomic at both levels.
    fn run_planned(
        &self,
        inv: &LoopInvocation<'_>,
        expected: &BlockLayout,
        consts: &[&[u8]],
        base: LaunchValues<'_, D::Buffer>,
    ) -> Result<()> {
        let plan = self.plan(inv)?;
        let layout = self.layout_of(&plan, expected);
        let rebuild = || {
            build_plan(&PlanRequest {
                set: inv.set.id(),
                start: plan.start,
                end: plan.end,
                block_size: plan.block_size,
                args: &PlanArg::of_loop(inv),
                detail: PlanDetail::Full,
            })
        };
        let device_plan = self.device_plan(&plan, &layout, Some(&rebuild))?;
        let all_at_once =
            op2_codegen::block_atomics(&self.sig, &layout, self.device().dialect(), &self.options);
        let loaded = self.program(&DeviceStub::Planned(layout), consts)?;
        let mut values = base;
        let const_buffers = self.const_buffers(&loaded.unit, consts)?;
        values.consts = &const_buffers;
        let threads = self.shared.work_group(
            self.kernel_name(),
            plan.block_size
                .min(self.device().max_threads(&loaded.program)),
            loaded.unit.private_bytes,
        )?;
        values.slots = plan.blocks();
        values.staging_bytes = plan.stats.max_staging_bytes;
        values.scratch_bytes = self.scratch(threads);
        let partials = self.partials(values.slots)?;
        values.partials = &partials;
        values.plan = Some((&plan, &device_plan));
        let local = values.staging_bytes + values.scratch_bytes;
        if all_at_once {
            // Increments are atomic at both levels: every block at once.
            values.block_offset = 0;
            let args = self.args(&loaded.unit.params, &values)?;
            self.device().launch(
                &loaded.program,
                Entry::Stub,
                self.shape(self.groups(plan.blocks(), 1)?, threads, local),
                &args,
            )?;
        } else {
            self.launch_colours(&loaded, &plan, &mut values, threads, local)?;
        }
        self.finish_reductions(&loaded, &mut values)
    }

    /// The block layout of `plan` for the program: as the signature expects it, except that
    /// the plan's indices may be narrower than the program's bound (they are widened at
    /// upload), never wider; a plan whose stagings differ from the expected ones gets its own.
    fn layout_of(&self, plan: &Plan, expected: &BlockLayout) -> BlockLayout {
        if plan.staging.len() == expected.stagings.len() {
            BlockLayout::of_plan(
                &self.sig,
                &plan.arg_staging,
                plan.staging.iter().zip(&expected.stagings).map(|(st, e)| {
                    let wide = e.wide_indices || matches!(st.global_to_local, LocalIndices::U32(_));
                    (st.dim, st.entries.clone(), wide)
                }),
            )
        } else {
            BlockLayout::of_plan(
                &self.sig,
                &plan.arg_staging,
                plan.staging.iter().map(|st| {
                    let wide = matches!(st.global_to_local, LocalIndices::U32(_));
                    (st.dim, st.entries.clone(), wide)
                }),
            )
        }
    }

    /// The program's final kernel, where it has one, folds the reductions' partials (one
    /// work-item without tree reductions).
    fn finish_reductions(
        &self,
        loaded: &Loaded<D>,
        values: &mut LaunchValues<'_, D::Buffer>,
    ) -> Result<()> {
        let Some(params) = &loaded.unit.finish_params else {
            return Ok(());
        };
        let threads = if self.options.tree_reductions {
            FINISH_THREADS.min(self.shared.limits().max_threads)
        } else {
            1
        };
        values.scratch_bytes = SCRATCH_PER_THREAD * threads;
        let args = self.args(params, values)?;
        self.device().launch(
            &loaded.program,
            Entry::Finish,
            self.shape(1, threads, values.scratch_bytes),
            &args,
        )
    }
}

impl<D: Device> PreparedLoop for DeviceLoop<D> {
    /// Runs the range with the stub the signature chose (direct or atomics, the host scheme,
    /// or planned), then folds the reductions.
    fn run(&self, inv: &LoopInvocation<'_>) -> Result<()> {
        if inv.start >= inv.end {
            return Ok(());
        }
        let sh = &self.shared;
        sh.data.forget_dropped();
        let consts = inv.const_bytes();
        let buffers = sh.data.for_invocation(inv)?;
        let base = LaunchValues {
            start: inv.start,
            end: inv.end,
            block_offset: 0,
            plan: None,
            buffers: &buffers,
            partials: &[],
            maps: &[],
            consts: &[],
            slots: 0,
            chunk: 0,
            staging_bytes: 0,
            scratch_bytes: 0,
        };
        match sh.stub_of(inv.sig) {
            stub @ (DeviceStub::Direct | DeviceStub::Atomic) => {
                self.run_direct(inv, stub, &consts, base)?
            }
            DeviceStub::Host(range) => self.run_on_host_cores(inv, range, &consts, base)?,
            DeviceStub::Planned(expected) => self.run_planned(inv, &expected, &consts, base)?,
        }
        if sh.limits().wait_each_loop {
            self.device().synchronize()?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn host_ranges_give_each_core_several_within_bounds() {
        // Airfoil's 1,438,600 edges on 2 cores: the largest ranges; on 16 cores smaller ones.
        assert_eq!(host_range_size(1_438_600, 2), HOST_MAX_RANGE);
        assert_eq!(host_range_size(1_438_600, 16), 4096);
        assert_eq!(host_range_size(0, 4), HOST_MIN_RANGE);
        assert_eq!(host_range_size(10, 0), HOST_MIN_RANGE);
        for (n, c) in [(1usize << 20, 1usize), (100_000, 7), (5_000_000, 64)] {
            let r = host_range_size(n, c);
            assert!(r.is_power_of_two());
            assert!(
                r == HOST_MIN_RANGE || r == HOST_MAX_RANGE || n / r >= HOST_ITEMS_PER_CORE * c,
                "{n} {c} {r}"
            );
        }
    }
}
