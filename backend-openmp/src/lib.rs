//! backend-openmp: the threaded host backend. Loops that modify data through maps run the plan's
//! block colours one after another, each colour's blocks shared among OpenMP threads; other loops
//! share the set in chunks. Blocks and chunks go to whichever thread is free, except in loops with
//! Global reductions, which split them statically: their per-thread partials are combined in thread
//! order, so a given thread count always gives the same result.

#![warn(missing_docs)]

use op2_codegen::{HostListLoop, HostOptions, JitCompiler, JitFunction, OpenMpCodegen};
use op2_core::backend::{Capabilities, FirstPanic};
use op2_core::{
    Backend, BackendFactory, Codegen, Config, LoopInvocation, LoopSignature, Op2Error,
    PreparedLoop, Result, Setting, SettingKind,
};
use op2_plan::{
    CachedPlanner, PlanArg, PlanDetail, PlanRequest, Planner, Strategy, StrategyChoice,
};
use std::ffi::c_void;
use std::sync::{Arc, OnceLock};

/// Largest block of an OpenMP plan unless `OP2_PART_SIZE` says otherwise. Threads never stage data,
/// so unlike a GPU block nothing bounds a block but load balance, and bigger blocks keep more of
/// each colour's memory traffic sequential: on the `openmp` criterion benchmark (an Airfoil-like INC
/// edge loop, 1,438,200 edges, 2 threads) 256-edge blocks took 14.8 ms, 1024 11.8, 4096 11.3, 8192
/// 9.9 and 16384 9.6 (the sequential backend 17.0).
pub const OPENMP_MAX_BLOCK_SIZE: usize = 8192;

/// Smallest default block: below this, per-block overhead and colour count grow for nothing.
pub const OPENMP_MIN_BLOCK_SIZE: usize = 256;

/// The default block size for a loop over `elements` on `threads` threads: the largest power of two
/// that still gives every thread about 16 blocks (so about 8 per colour with the usual 2 to 4
/// colours, enough for static scheduling to balance), within
/// [`OPENMP_MIN_BLOCK_SIZE`]..=[`OPENMP_MAX_BLOCK_SIZE`].
pub fn default_block_size(elements: usize, threads: usize) -> usize {
    let fair = elements / (16 * threads.max(1));
    let pow2 = if fair == 0 {
        1
    } else {
        1 << (usize::BITS - 1 - fair.leading_zeros())
    };
    pow2.clamp(OPENMP_MIN_BLOCK_SIZE, OPENMP_MAX_BLOCK_SIZE)
}

/// Fewest elements worth a thread of their own. Starting and joining a team costs a few
/// microseconds on an idle machine and up to milliseconds when another process holds a core (the
/// thread the team waits for is not scheduled). Measured on this project's 2-core machine (best of
/// 300 calls, libgomp's default wait policy): a 4-value direct loop took 2.0 us on 1 thread and
/// 2.5 on 2 at 2,800 elements, 6.8 and 4.5 at 10,000, 12.8 and 7.7 at 20,000; an edge loop
/// incrementing through a map 8.0 and 7.5 at 2,800, 25.7 and 16.4 at 10,000. Below about 8,000
/// elements per thread a second thread saves at most a few microseconds and risks far more on a
/// busy machine, so a loop gets one thread per 8,192 elements (Airfoil's 2,800-edge `bres_calc`
/// runs on one).
pub const MIN_ELEMENTS_PER_THREAD: usize = 8192;

/// The threads a loop over `elements` elements runs on, of the backend's `threads`, giving each
/// at least `min_per_thread` elements ([`MIN_ELEMENTS_PER_THREAD`] unless configured).
pub fn threads_for(elements: usize, threads: usize, min_per_thread: usize) -> usize {
    (elements / min_per_thread.max(1)).clamp(1, threads.max(1))
}

/// The generated wrapper's type (see [`op2_codegen::OPENMP_WRAPPER_SIGNATURE`]).
type Wrapper = unsafe extern "C" fn(
    i64,
    i64,
    *const *mut c_void,
    *const *const i32,
    *const *const c_void,
    *const *mut c_void,
    i32,
    i32,
    *const u64,
    *const u32,
    *const u32,
    *const u32,
);

/// The OpenMP backend.
pub struct OpenMpBackend {
    jit: JitCompiler,
    options: HostOptions,
    shared: Arc<Shared>,
    /// [`TEAM_SOURCE`]'s entry point, compiled the first time a team is asked for.
    team: OnceLock<Option<Team>>,
}

/// `op2_omp_team(n, f, ctx)`: calls `f(ctx, thread, team)` on every thread of an OpenMP team of
/// up to `n` threads.
type Team = unsafe extern "C" fn(i32, extern "C" fn(*mut c_void, i32, i32), *mut c_void);

/// The C behind [`Backend::run_team`]: one parallel region calling back into Rust.
const TEAM_SOURCE: &str = "/* op2-rs: a team of OpenMP threads for work beside the loops */\n\
#include <omp.h>\n\
#include <stdint.h>\n\
__attribute__((visibility(\"default\"))) void op2_omp_team(int32_t op2_n, void (*op2_f)(void *, int32_t, int32_t), void *op2_ctx) {\n\
  #pragma omp parallel num_threads(op2_n)\n\
  op2_f(op2_ctx, omp_get_thread_num(), omp_get_num_threads());\n\
}\n";

/// What [`team_thread`] is handed: the work, and the first panic of any thread (a panic may not
/// unwind through OpenMP's C frames).
struct TeamWork<'a> {
    work: &'a (dyn Fn(usize, usize) + Sync),
    panicked: FirstPanic,
}

extern "C" fn team_thread(ctx: *mut c_void, t: i32, team: i32) {
    // SAFETY: `run_team` passes a `TeamWork` that outlives the parallel region.
    let w = unsafe { &*(ctx as *const TeamWork<'_>) };
    w.panicked
        .run(|| (w.work)(t.max(0) as usize, team.max(1) as usize));
}

/// What every prepared loop of one backend shares.
struct Shared {
    /// Colours loops that write through maps (threads stage nothing, and have no atomics here).
    planner: CachedPlanner,
    /// `OP2_PART_SIZE` (or the builder's `part_size`), else [`default_block_size`] per loop.
    block_size: Option<usize>,
    threads: i32,
    /// Fewest elements per thread of a loop (`OP2_OMP_MIN_PER_THREAD`).
    min_per_thread: usize,
}

impl OpenMpBackend {
    /// An OpenMP backend with the configuration's compiler, cache, block size (`OP2_PART_SIZE`) and
    /// thread count (`OMP_NUM_THREADS`, else every core the process may use).
    pub fn new(config: &Config) -> Result<Self> {
        let threads = config.host_threads();
        let threads = i32::try_from(threads).map_err(|_| Op2Error::Config {
            key: "OMP_NUM_THREADS".into(),
            value: threads.to_string(),
            reason: "more threads than an OpenMP runtime can start".into(),
        })?;
        let jit = JitCompiler::new(config, &["-fopenmp"])?;
        jit.probe().map_err(|reason| Op2Error::BackendUnavailable {
            name: "openmp".into(),
            reason: format!("the C compiler cannot build OpenMP code: {reason}"),
        })?;
        Ok(OpenMpBackend {
            jit,
            options: HostOptions::from_config(config),
            team: OnceLock::new(),
            shared: Arc::new(Shared {
                planner: CachedPlanner::new(StrategyChoice::default()),
                block_size: config.part_size,
                threads,
                min_per_thread: config
                    .settings
                    .number("omp_min_per_thread")?
                    .unwrap_or(MIN_ELEMENTS_PER_THREAD),
            }),
        })
    }

    /// Threads each loop runs on.
    pub fn threads(&self) -> usize {
        self.shared.threads as usize
    }

    /// Block size of the plans of loops over `elements` elements.
    pub fn block_size(&self, elements: usize) -> usize {
        self.shared
            .block_size
            .unwrap_or_else(|| default_block_size(elements, self.threads()))
    }
}

impl Backend for OpenMpBackend {
    fn name(&self) -> &str {
        "openmp"
    }

    /// Its own thread count, OpenMP's threads; threads point into the Dats themselves, so a
    /// column's kernel can step through its layers.
    fn capabilities(&self, config: &Config) -> Capabilities {
        Capabilities {
            host_threads: self.threads(),
            openmp_threads: true,
            walks_columns: true,
            ..Capabilities::new(config)
        }
    }

    fn run_team(&self, n: usize, work: &(dyn Fn(usize, usize) + Sync)) -> bool {
        let team = self.team.get_or_init(|| {
            let unit = op2_core::GeneratedUnit {
                source: TEAM_SOURCE.into(),
                entry: "op2_omp_team".into(),
                kernel: "op2_omp_team".into(),
            };
            let f = self.jit.load(&unit).ok()?;
            // SAFETY: the entry point is `TEAM_SOURCE`'s, with exactly the `Team` signature.
            Some(unsafe { std::mem::transmute::<*const c_void, Team>(f.as_ptr()) })
        });
        let Some(team) = *team else {
            return false;
        };
        let ctx = TeamWork {
            work,
            panicked: FirstPanic::default(),
        };
        let n = i32::try_from(n.max(1)).unwrap_or(i32::MAX);
        // SAFETY: `ctx` lives until the parallel region has ended, and `team_thread` lets no
        // panic out.
        unsafe {
            team(
                n,
                team_thread,
                (&ctx as *const TeamWork<'_>).cast_mut().cast(),
            )
        };
        ctx.panicked.resume();
        true
    }

    /// The cached plans (block colours only) and the compiled loops.
    fn memory(&self) -> Vec<op2_core::BackendMemory> {
        let mut m = self.shared.planner.memory(|_| 0);
        m.push(op2_codegen::loaded_libraries_memory());
        m
    }

    fn prepare(&self, sig: &LoopSignature) -> Result<Arc<dyn PreparedLoop>> {
        let unit = OpenMpCodegen.emit(sig, &self.options)?;
        let f = self.jit.load_for(&unit, &sig.kernel)?;
        // SAFETY: the entry point was generated with exactly the `Wrapper` signature.
        let wrapper: Wrapper = unsafe { std::mem::transmute::<*const c_void, Wrapper>(f.as_ptr()) };
        Ok(Arc::new(OpenMpLoop {
            wrapper,
            statics: (!sig.consts.is_empty()).then_some(f),
            list: HostListLoop::load(f, sig)?,
            coloured: self.shared.planner.strategy(sig) == Strategy::Colour,
            shared: self.shared.clone(),
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::atomic::{AtomicUsize, Ordering};

    #[test]
    fn a_team_runs_the_work_once_on_each_of_its_threads_and_passes_panics_on() {
        let config = op2_core::RuntimeBuilder::default().config().unwrap();
        let backend = match OpenMpBackend::new(&config) {
            Ok(b) => b,
            Err(e) => return eprintln!("no OpenMP here: {e}"),
        };
        let seen: Vec<AtomicUsize> = (0..3).map(|_| AtomicUsize::new(0)).collect();
        let teams = AtomicUsize::new(0);
        let ran = backend.run_team(3, &|t, team| {
            seen[t].fetch_add(1, Ordering::Relaxed);
            teams.store(team, Ordering::Relaxed);
        });
        assert!(ran);
        let team = teams.load(Ordering::Relaxed);
        assert!((1..=3).contains(&team));
        for (t, s) in seen.iter().enumerate() {
            assert_eq!(
                s.load(Ordering::Relaxed),
                usize::from(t < team),
                "thread {t}"
            );
        }
        // A panic on a team thread comes back to the caller, not through OpenMP's frames.
        let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
            backend.run_team(2, &|t, _| assert!(t > 0, "thread zero gives up"))
        }));
        let message = caught.unwrap_err();
        let text = message
            .downcast_ref::<&str>()
            .map(|m| m.to_string())
            .or_else(|| message.downcast_ref::<String>().cloned());
        assert_eq!(text.as_deref(), Some("thread zero gives up"));
    }

    #[test]
    fn small_loops_run_on_fewer_threads() {
        let m = MIN_ELEMENTS_PER_THREAD;
        assert_eq!(threads_for(0, 4, m), 1);
        assert_eq!(threads_for(2_800, 2, m), 1);
        assert_eq!(threads_for(16_383, 2, m), 1);
        assert_eq!(threads_for(16_384, 2, m), 2);
        assert_eq!(threads_for(720_000, 2, m), 2);
        assert_eq!(threads_for(40_000, 16, m), 4);
        assert_eq!(threads_for(1 << 30, 16, m), 16);
        assert_eq!(threads_for(3, 2, 1), 2);
    }

    #[test]
    fn default_block_size_balances_threads_within_bounds() {
        // Airfoil's 1,438,200 edges: 2 threads get the largest blocks, 16 threads smaller ones.
        assert_eq!(default_block_size(1_438_200, 2), 8192);
        assert_eq!(default_block_size(1_438_200, 16), 4096);
        assert_eq!(default_block_size(20_000, 3), 256);
        assert_eq!(default_block_size(0, 1), OPENMP_MIN_BLOCK_SIZE);
        for (n, t) in [(1usize << 20, 1usize), (100_000, 7), (5_000_000, 64)] {
            let b = default_block_size(n, t);
            assert!(b.is_power_of_two());
            assert!(b == OPENMP_MIN_BLOCK_SIZE || n / b >= 16 * t, "{n} {t} {b}");
        }
    }
}

struct OpenMpLoop {
    wrapper: Wrapper,
    /// The library, when the wrapper copies Consts into its file-scope storage: runs of the same
    /// source from other runtimes must not overwrite them mid-loop.
    statics: Option<JitFunction>,
    /// The same loop over element lists on the calling thread (tiles).
    list: HostListLoop,
    /// Whether the loop modifies data through maps, and so needs a coloured plan.
    coloured: bool,
    shared: Arc<Shared>,
}

impl OpenMpLoop {
    /// The plan's colouring constraints: only args that modify data through maps (and direct
    /// args modifying the same data) matter here, since threads never stage data (elements of a
    /// block run in sequence on one thread).
    fn plan_args<'a>(inv: &'a LoopInvocation<'a>) -> Vec<PlanArg<'a>> {
        PlanArg::colouring_args(inv)
    }
}

impl PreparedLoop for OpenMpLoop {
    fn element_lists(&self) -> Option<&dyn op2_core::ElementListLoop> {
        Some(&self.list)
    }

    fn run(&self, inv: &LoopInvocation<'_>) -> Result<()> {
        if inv.start >= inv.end {
            return Ok(());
        }
        let maps = inv.map_pointers();
        // A kernel acting outside its args runs on one thread, elements in order.
        let threads = if inv.sig.kernel.has_host_effects() {
            1
        } else {
            threads_for(
                inv.end - inv.start,
                self.shared.threads as usize,
                self.shared.min_per_thread,
            )
        };
        // On one thread nothing runs at once: no colours needed.
        let plan = if self.coloured && threads > 1 {
            let args = Self::plan_args(inv);
            Some(
                self.shared.planner.plan(&PlanRequest {
                    set: inv.set.id(),
                    start: inv.start,
                    end: inv.end,
                    block_size: self
                        .shared
                        .block_size
                        .unwrap_or_else(|| default_block_size(inv.end - inv.start, threads)),
                    args: &args,
                    // Each block runs on one thread straight from the data: no staging, no
                    // element colours (they would be built and kept for nothing).
                    detail: PlanDetail::BlockColours,
                })?,
            )
        } else {
            None
        };
        let colour_offsets: Vec<u64> = plan
            .as_ref()
            .map(|p| p.colour_offsets.iter().map(|&o| o as u64).collect())
            .unwrap_or_default();
        let (ncolours, block_map, block_offsets, block_lengths) = match &plan {
            Some(p) => (
                p.colours() as i32,
                p.block_map.as_ptr(),
                p.block_offsets.as_ptr(),
                p.block_lengths.as_ptr(),
            ),
            None => (0, std::ptr::null(), std::ptr::null(), std::ptr::null()),
        };
        // Per-thread partial results of each Global reduction, 8-byte aligned for every dtype.
        let mut partials: Vec<Vec<u64>> = inv
            .sig
            .reduction_args()
            .into_iter()
            .map(|i| {
                let a = &inv.sig.args[i];
                let bytes = threads * a.dim * a.dtype.size();
                vec![0u64; bytes.div_ceil(8)]
            })
            .collect();
        let partial_ptrs: Vec<*mut c_void> = partials
            .iter_mut()
            .map(|p| p.as_mut_ptr().cast::<c_void>())
            .collect();
        let _statics = self.statics.map(JitFunction::lock_statics);
        // SAFETY: the runtime validated every arg against the signature and locked the data; map
        // values were range-checked at declaration. The plan covers `inv.start..inv.end` with
        // these maps, and no two blocks of one colour modify the same item, so threads never race.
        unsafe {
            (self.wrapper)(
                inv.start as i64,
                inv.end as i64,
                inv.args.as_ptr(),
                maps.as_ptr(),
                inv.consts.as_ptr(),
                partial_ptrs.as_ptr(),
                threads as i32,
                ncolours,
                colour_offsets.as_ptr(),
                block_map,
                block_offsets,
                block_lengths,
            );
        }
        Ok(())
    }
}

fn create(config: &Config) -> Result<Box<dyn Backend>> {
    Ok(Box::new(OpenMpBackend::new(config)?))
}

op2_core::register_backend!(BackendFactory {
    name: "openmp",
    feature: "openmp",
    description: "generated C with OpenMP over plan colours, all cores (OMP_NUM_THREADS)",
    create,
    settings: SETTINGS,
});

/// The OpenMP backend's own settings (threads and block size are the runtime's, shared with
/// other backends).
pub const SETTINGS: &[Setting] = &[Setting {
    name: "omp_min_per_thread",
    env: "OP2_OMP_MIN_PER_THREAD",
    kind: SettingKind::Positive,
    default: "8192",
    doc: "fewest elements a loop gives each thread (1: every thread for every loop)",
}];

/// Referenced by the `op2` facade so that the linker keeps this crate, and with it the registration.
#[doc(hidden)]
pub static LINKED: &str = "backend-openmp";
