//! The device dialects: one C-family emitter for device stubs (`device_codegen.rs`) behind a public
//! [`Dialect`] trait that spells what differs between device languages (address spaces, work-item
//! ids, barriers, how kernels are declared and launched, how Consts and local memory arrive).
//! OpenCL C and CUDA C++ are the two first-party dialects; a backend for another device language
//! (HIP, SYCL, Metal) implements the trait and reuses every stub.

use crate::layout::BlockLayout;
use op2_core::{Access, LoopSignature, Result};
use std::fmt;

/// The loop's kernel in every generated device unit.
pub const DEVICE_ENTRY: &str = "op2_stub";

/// The kernel that folds reduction partials into the Globals on the device (one work-group).
pub const FINISH_ENTRY: &str = "op2_finish";

/// How a dialect hands Consts to kernels.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ConstPassing {
    /// Program-scope storage the device fills before a launch (CUDA's `__constant__` symbols,
    /// through [`const_symbol`](crate::const_symbol)).
    Symbols,
    /// Hidden trailing parameters of the stub and of the user's kernel (OpenCL C 1.2, which has
    /// no program-scope storage a host can write): one buffer per Const
    /// ([`StubParam::Const`](crate::StubParam::Const)).
    Params,
}

/// What differs between device languages. Implement it (and a device) to add one.
pub trait Dialect: Send + Sync + fmt::Debug {
    /// Short name (`opencl`, `cuda`), for file names and messages.
    fn name(&self) -> &'static str;
    /// What every unit starts with: pragmas, type definitions, helpers; `atomics` when the unit
    /// uses [`Dialect::atomic_add`].
    fn prelude(&self, atomics: bool) -> String;
    /// Qualifier of pointers into global memory (with its trailing space, or empty).
    fn global(&self) -> &'static str;
    /// Qualifier of pointers into memory a work-group shares (with its trailing space, or empty).
    fn shared(&self) -> &'static str;
    /// Qualifier of pointers into constant memory (with its trailing space), for Consts passed as
    /// parameters.
    fn constant(&self) -> &'static str;
    /// A barrier across the work-group (local memory).
    fn barrier(&self) -> &'static str;
    /// The work-item's index in its group, as `int`.
    fn local_id(&self) -> &'static str;
    /// The group's size, as `int`.
    fn local_size(&self) -> &'static str;
    /// The group's index, as `int`.
    fn group_id(&self) -> &'static str;
    /// The work-item's global index, as `int`.
    fn global_id(&self) -> &'static str;
    /// The integer type of offsets into large buffers.
    fn wide(&self) -> &'static str;
    /// How the stub hands a pointer into address space `space` to the user's kernel.
    fn pass(&self, space: &str, expr: &str) -> String;
    /// A kernel's opening line with parameter declarations `decl`; `shared_memory` when it uses
    /// the work-group's local memory.
    fn kernel_head(&self, entry: &str, decl: &[String], shared_memory: bool) -> String;
    /// Whether a kernel gets its local (shared) memory as parameters
    /// ([`StubParam::Shared`](crate::StubParam::Shared),
    /// [`StubParam::Scratch`](crate::StubParam::Scratch); OpenCL) rather than from the launch
    /// (CUDA's dynamic shared memory, reached as `op2_shared`).
    fn local_memory_params(&self) -> bool;
    /// How Consts reach kernels.
    fn const_passing(&self) -> ConstPassing;
    /// The function that adds atomically to global memory (`op2_atomic_add(T *, T)`, from the
    /// prelude), when the dialect offers the atomics stub. Where it also takes pointers into
    /// shared memory (CUDA's generic pointers), [`DeviceOptions::block_atomics`] may be set.
    fn atomic_add(&self) -> Option<&'static str>;
    /// The function that combines a value into global memory atomically under a reduction's
    /// access (`op2_atomic_add`, `op2_atomic_min`, `op2_atomic_max` from the atomics prelude),
    /// where the dialect has them for every element type.
    fn atomic_reduce(&self, _access: Access) -> Option<&'static str> {
        None
    }
    /// What goes before a loop whose iterations' loads are independent, so that the compiler
    /// issues several at once (a pragma and a line break; empty where none helps).
    fn unroll_hint(&self) -> &'static str {
        ""
    }
    /// Declares the Consts (program-scope storage), or with `baked` their values as constants.
    fn emit_consts(&self, s: &mut String, sig: &LoopSignature, baked: Option<&[Vec<u8>]>);
    /// The user's kernel as this dialect compiles it, with the user's names open
    /// (the generated macros for their `op2_` symbols) around it.
    fn emit_user_kernel(
        &self,
        s: &mut String,
        sig: &LoopSignature,
        stub: &DeviceStub,
        options: &DeviceOptions,
    ) -> Result<()>;
    /// Anything after the kernels (CUDA: host trampolines for the emulator).
    fn epilogue(&self, _s: &mut String, _sig: &LoopSignature, _kernels: &[KernelDecl]) {}
}

/// Which stub a device program runs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum DeviceStub {
    /// One element per work-item, no maps.
    Direct,
    /// One plan block per work-group: indirect data staged in local memory, increments
    /// accumulated privately and applied colour by colour, block colours launched in turn.
    Planned(BlockLayout),
    /// One element per work-item, indirect data straight from global memory through maps uploaded
    /// entry-major, increments added atomically: no plan, one launch.
    Atomic,
    /// CPU devices: one work-item per work-group, each running a whole range of elements in turn,
    /// indirect data straight from global memory through entry-major maps, nothing staged.
    Host(HostRange),
}

/// Which elements a work-item of the [`DeviceStub::Host`] stub runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum HostRange {
    /// A chunk of [`StubParam::Chunk`](crate::StubParam::Chunk) consecutive elements (loops that
    /// modify nothing through maps, so any two chunks may run at once).
    Chunks,
    /// A block of a coloured plan (loops that modify data through maps): the blocks of one colour
    /// are launched together, colour by colour, and increments go straight to global memory.
    Blocks,
}

/// How a device unit is emitted besides its stub.
#[derive(Debug, Clone, PartialEq, Eq, Hash, Default)]
pub struct DeviceOptions {
    /// Hand the kernel private copies of its args, parameters unqualified (OpenCL C 1.2 kernels
    /// that keep a parameter in a pointer of their own compile only this way).
    pub private_copies: bool,
    /// Compile the Consts in with these values (one per `sig.consts`) instead of passing them as
    /// the dialect does: a program per value, for kernels whose helper functions use Consts
    /// where the dialect passes them as parameters.
    pub baked_consts: Option<Vec<Vec<u8>>>,
    /// Combine reductions across a work-group with a tree (GPUs) rather than one work-item in
    /// order (CPU devices).
    pub tree_reductions: bool,
    /// Direct and atomics stubs copy the rows of small direct args (a few values per element)
    /// through shared memory, a block's rows in one coalesced sweep each way, instead of each
    /// thread reading and writing its own row at a stride of the row's size (see
    /// [`crate::staged_direct_rows`]). For dialects that take shared memory from the launch
    /// (CUDA); ignored by the others.
    pub stage_direct_rows: bool,
    /// Planned stubs whose kernel need not run colour by colour add their increments into the
    /// block's staged copy atomically and add the copy back to global memory atomically, so
    /// that every block runs in one launch and no element waits for its colour (see
    /// [`crate::block_atomics`]). For dialects whose [`Dialect::atomic_add`] also adds into
    /// shared memory.
    pub block_atomics: bool,
    /// Direct and atomics stubs combine each block's reduction result into the Global itself
    /// with an atomic operation ([`Dialect::atomic_reduce`]) instead of writing a partial for a
    /// final kernel: one launch fewer per loop, sums in no fixed order. Ignored by dialects
    /// without atomic reductions.
    pub atomic_reductions: bool,
}

/// A kernel of a unit and its parameters' declarations.
#[derive(Debug, Clone)]
pub struct KernelDecl {
    /// Its name.
    pub entry: &'static str,
    /// Its parameters' C declarations, in order.
    pub decls: Vec<String>,
}

/// `source` with each `#include <h>` of a header in `builtin` (the C library headers whose
/// functions, types and constants a device language has built in: OpenCL C's `sqrt`, `bool`,
/// `INT_MAX`; CUDA's math functions) left as a comment: a device compiler has no C library to
/// find them in, and kernels written for the host (today's PyOP2 kernels begin with
/// `#include <math.h>`) would not compile. Other includes stay, and fail with the compiler's
/// message if the device cannot find them.
pub fn without_builtin_includes(source: &str, builtin: &[&str], language: &str) -> String {
    let mut out = String::with_capacity(source.len());
    for line in source.split_inclusive('\n') {
        let header = line
            .trim_start()
            .strip_prefix('#')
            .map(str::trim_start)
            .and_then(|l| l.strip_prefix("include"))
            .map(str::trim)
            .and_then(|l| l.strip_prefix('<'))
            .and_then(|l| l.strip_suffix('>'))
            .map(str::trim);
        match header {
            Some(h) if builtin.contains(&h) => {
                out.push_str(&format!("/* <{h}>: built into {language} */"));
                if line.ends_with('\n') {
                    out.push('\n');
                }
            }
            _ => out.push_str(line),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::without_builtin_includes;

    #[test]
    fn builtin_headers_become_comments_and_others_stay() {
        let src = "#include <math.h>\n  # include < stdbool.h >\n#include <omp.h>\n\
                   #include \"math.h\"\nvoid k(double *x) { *x = sqrt(*x); }";
        let out = without_builtin_includes(src, &["math.h", "stdbool.h"], "OpenCL C");
        assert_eq!(
            out,
            "/* <math.h>: built into OpenCL C */\n/* <stdbool.h>: built into OpenCL C */\n\
             #include <omp.h>\n#include \"math.h\"\nvoid k(double *x) { *x = sqrt(*x); }"
        );
    }
}
