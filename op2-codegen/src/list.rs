//! The element-range entry point every host unit exports beside its wrapper, as an
//! [`ElementListLoop`] the lazy graph's sparse tiling runs tiles through (seq and openmp alike).

use crate::emit::list_symbol;
use crate::jit::JitFunction;
use op2_core::{ElementListLoop, LoopSignature, Result};
use std::ffi::c_void;
use std::sync::MutexGuard;

/// The list entry's type (see [`crate::LIST_SIGNATURE`]).
type ListFn = unsafe extern "C" fn(
    *const u32,
    i64,
    *const u32,
    i64,
    *const *mut c_void,
    *const *const i32,
    *const *const c_void,
);

/// A host unit's element-list entry point.
pub struct HostListLoop {
    entry: ListFn,
    /// The library, when the unit copies Consts into its file-scope storage.
    statics: Option<JitFunction>,
}

impl HostListLoop {
    /// The list entry of the library whose wrapper is `f`, emitted for `sig`.
    pub fn load(f: JitFunction, sig: &LoopSignature) -> Result<Self> {
        let addr = f.symbol(&list_symbol(sig.kernel.name()))?;
        // SAFETY: every host unit exports this symbol with exactly the `ListFn` signature.
        let entry = unsafe { std::mem::transmute::<*const c_void, ListFn>(addr) };
        Ok(HostListLoop {
            entry,
            statics: (!sig.consts.is_empty()).then_some(f),
        })
    }
}

impl ElementListLoop for HostListLoop {
    fn lock_consts(&self) -> Option<MutexGuard<'static, ()>> {
        self.statics.map(JitFunction::lock_statics)
    }

    fn consts_key(&self) -> usize {
        self.statics.map_or(0, JitFunction::statics_key)
    }

    unsafe fn run_ranges(
        &self,
        ranges: &[[u32; 2]],
        elements: &[u32],
        args: &[*mut c_void],
        maps: &[*const i32],
        consts: Option<&[*const c_void]>,
    ) {
        // SAFETY: the caller vouches for the pointers (see the trait); the entry reads
        // `ranges.len()` pairs and `elements.len()` elements and, with a null Consts array, leaves the Consts alone.
        unsafe {
            (self.entry)(
                ranges.as_ptr().cast(),
                ranges.len() as i64,
                elements.as_ptr(),
                elements.len() as i64,
                args.as_ptr(),
                maps.as_ptr(),
                consts.map_or(std::ptr::null(), <[_]>::as_ptr),
            );
        }
    }
}
