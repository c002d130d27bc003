//! backend-seq: the sequential reference backend. Each loop runs the generated C wrapper over the
//! iteration range on the calling thread; every other backend is checked against it.

#![warn(missing_docs)]

use op2_codegen::{CCodegen, HostListLoop, HostOptions, JitCompiler, JitFunction};
use op2_core::{
    Backend, BackendFactory, Capabilities, Codegen, Config, LoopInvocation, LoopSignature,
    PreparedLoop, Result,
};
use std::ffi::c_void;
use std::sync::Arc;

/// The generated wrapper's type (see [`op2_codegen::WRAPPER_SIGNATURE`]).
type Wrapper =
    unsafe extern "C" fn(i64, i64, *const *mut c_void, *const *const i32, *const *const c_void);

/// The sequential backend.
pub struct SeqBackend {
    jit: JitCompiler,
    options: HostOptions,
}

impl SeqBackend {
    /// A sequential backend using the configuration's compiler and cache.
    pub fn new(config: &Config) -> Result<Self> {
        Ok(SeqBackend {
            jit: JitCompiler::new(config, &[])?,
            options: HostOptions::from_config(config),
        })
    }
}

impl Backend for SeqBackend {
    fn name(&self) -> &str {
        "seq"
    }

    /// One thread: the reference stays sequential, and so does the work beside its loops. Its
    /// order of operations is the reference's: tiling (which changes the order increments
    /// arrive in) only when asked. Its generated C points into the Dats themselves, so it walks
    /// columns.
    fn capabilities(&self, config: &Config) -> Capabilities {
        Capabilities {
            host_threads: 1,
            keeps_operation_order: true,
            walks_columns: true,
            ..Capabilities::new(config)
        }
    }

    /// No plans, no copies: only the compiled loops.
    fn memory(&self) -> Vec<op2_core::BackendMemory> {
        vec![op2_codegen::loaded_libraries_memory()]
    }

    fn prepare(&self, sig: &LoopSignature) -> Result<Arc<dyn PreparedLoop>> {
        let unit = CCodegen.emit(sig, &self.options)?;
        let f = self.jit.load_for(&unit, &sig.kernel)?;
        // SAFETY: the entry point was generated with exactly the `Wrapper` signature.
        let wrapper: Wrapper = unsafe { std::mem::transmute::<*const c_void, Wrapper>(f.as_ptr()) };
        Ok(Arc::new(SeqLoop {
            wrapper,
            statics: (!sig.consts.is_empty()).then_some(f),
            list: HostListLoop::load(f, sig)?,
        }))
    }
}

struct SeqLoop {
    wrapper: Wrapper,
    /// The library, when the wrapper copies Consts into its file-scope storage: runs of the same
    /// source from other runtimes must not overwrite them mid-loop.
    statics: Option<JitFunction>,
    /// The same loop over element lists (tiles).
    list: HostListLoop,
}

impl PreparedLoop for SeqLoop {
    fn element_lists(&self) -> Option<&dyn op2_core::ElementListLoop> {
        Some(&self.list)
    }

    fn run(&self, inv: &LoopInvocation<'_>) -> Result<()> {
        if inv.start >= inv.end {
            return Ok(());
        }
        let maps = inv.map_pointers();
        let _statics = self.statics.map(JitFunction::lock_statics);
        // SAFETY: the runtime validated every arg against the signature (sets, maps, dims, types) and
        // locked the data; map values were range-checked at declaration, so every access the wrapper
        // makes is inside the buffers passed here.
        unsafe {
            (self.wrapper)(
                inv.start as i64,
                inv.end as i64,
                inv.args.as_ptr(),
                maps.as_ptr(),
                inv.consts.as_ptr(),
            );
        }
        Ok(())
    }
}

fn create(config: &Config) -> Result<Box<dyn Backend>> {
    Ok(Box::new(SeqBackend::new(config)?))
}

op2_core::register_backend!(BackendFactory {
    name: "seq",
    feature: "seq",
    description: "sequential reference: generated C on one core",
    create,
    settings: &[],
});

/// Referenced by the `op2` facade so that the linker keeps this crate, and with it the registration.
#[doc(hidden)]
pub static LINKED: &str = "backend-seq";
