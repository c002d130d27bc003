//! backend-openmp: the threaded host backend. Loops that modify data through maps run the plan's
//! block colours one after another, each colour's blocks shared among OpenMP threads; other loops split
//! the set statically across threads. Global reductions go through per-thread partials combined in
//! thread order, so a given thread count always gives the same result.

#![warn(missing_docs)]

use op2_codegen::{JitCompiler, OpenMpCodegen};
use op2_core::{
    ArgKind, Backend, BackendFactory, Codegen, Config, LoopInvocation, LoopSignature, Op2Error,
    PreparedLoop, Result,
};
use op2_plan::{MapAccess, PlanArg, PlanMap, PlanRequest, Planner};
use std::ffi::c_void;
use std::sync::Arc;

/// Block size for OpenMP plans unless `OP2_PART_SIZE` says otherwise. Chosen from the `openmp`
/// criterion benchmark (an Airfoil-like INC edge loop on a 720,000-cell quad mesh, block sizes 64 to
/// 2048, 2 threads): see the README's OpenMP section for the figures.
pub const OPENMP_BLOCK_SIZE: usize = 1024;

/// The generated wrapper's type (see [`op2_codegen::OPENMP_WRAPPER_SIGNATURE`]).
type Wrapper = unsafe extern "C" fn(
    i64,
    i64,
    *const *mut c_void,
    *const *const i32,
    *const *const c_void,
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
    shared: Arc<Shared>,
}

/// What every prepared loop of one backend shares.
struct Shared {
    planner: Planner,
    block_size: usize,
    threads: i32,
}

impl OpenMpBackend {
    /// An OpenMP backend with the configuration's compiler, cache, block size (`OP2_PART_SIZE`) and
    /// thread count (`OMP_NUM_THREADS`, else every core the process may use).
    pub fn new(config: &Config) -> Result<Self> {
        let threads = config.num_threads.unwrap_or_else(|| {
            std::thread::available_parallelism()
                .map(usize::from)
                .unwrap_or(1)
        });
        let threads = i32::try_from(threads).map_err(|_| Op2Error::Config {
            key: "OMP_NUM_THREADS".into(),
            value: threads.to_string(),
            reason: "more threads than an OpenMP runtime can start".into(),
        })?;
        Ok(OpenMpBackend {
            jit: JitCompiler::new(config, &["-fopenmp"])?,
            shared: Arc::new(Shared {
                planner: Planner::new(),
                block_size: op2_plan::block_size(config, Some(OPENMP_BLOCK_SIZE)),
                threads,
            }),
        })
    }

    /// Threads each loop runs on.
    pub fn threads(&self) -> usize {
        self.shared.threads as usize
    }

    /// Block size of the plans.
    pub fn block_size(&self) -> usize {
        self.shared.block_size
    }
}

impl Backend for OpenMpBackend {
    fn name(&self) -> &str {
        "openmp"
    }

    fn prepare(&self, sig: &LoopSignature) -> Result<Arc<dyn PreparedLoop>> {
        let unit = OpenMpCodegen.emit(sig);
        let f = self.jit.load(&unit)?;
        // SAFETY: the entry point was generated with exactly the `Wrapper` signature.
        let wrapper: Wrapper = unsafe { std::mem::transmute::<*const c_void, Wrapper>(f.as_ptr()) };
        Ok(Arc::new(OpenMpLoop {
            wrapper,
            coloured: sig.has_indirect_writes(),
            shared: self.shared.clone(),
        }))
    }
}

struct OpenMpLoop {
    wrapper: Wrapper,
    /// Whether the loop modifies data through maps, and so needs a coloured plan.
    coloured: bool,
    shared: Arc<Shared>,
}

impl OpenMpLoop {
    /// The plan's colouring constraints: only args that modify data through maps matter here, since
    /// threads never stage data (elements of a block run in sequence on one thread).
    fn plan_args<'a>(inv: &'a LoopInvocation<'a>) -> Vec<PlanArg<'a>> {
        inv.sig
            .args
            .iter()
            .zip(inv.carriers)
            .filter(|(a, _)| a.access.writes())
            .filter_map(|(a, c)| {
                let (slot, entries) = match a.kind {
                    ArgKind::Indirect { map, index, .. } => (map, MapAccess::Entry(index)),
                    ArgKind::Row { map, .. } => (map, MapAccess::Row),
                    ArgKind::Direct | ArgKind::Global => return None,
                };
                Some(PlanArg {
                    data: c.id(),
                    dim: a.dim,
                    elem_bytes: a.dtype.size(),
                    map: Some(PlanMap::from(&inv.maps[slot])),
                    entries,
                    access: a.access,
                })
            })
            .collect()
    }
}

impl PreparedLoop for OpenMpLoop {
    fn run(&self, inv: &LoopInvocation<'_>) -> Result<()> {
        if inv.start >= inv.end {
            return Ok(());
        }
        let maps = inv.map_pointers();
        let plan = if self.coloured {
            let args = Self::plan_args(inv);
            Some(self.shared.planner.plan(&PlanRequest {
                set: inv.set.id(),
                end: inv.end,
                block_size: self.shared.block_size,
                args: &args,
            })?)
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
        // SAFETY: the runtime validated every arg against the signature and locked the data; map
        // values were range-checked at declaration. The plan covers `0..inv.end` of this set with
        // these maps, and no two blocks of one colour modify the same item, so threads never race.
        unsafe {
            (self.wrapper)(
                inv.start as i64,
                inv.end as i64,
                inv.args.as_ptr(),
                maps.as_ptr(),
                inv.consts.as_ptr(),
                self.shared.threads,
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
});

/// Referenced by the `op2` facade so that the linker keeps this crate, and with it the registration.
#[doc(hidden)]
pub static LINKED: &str = "backend-openmp";
