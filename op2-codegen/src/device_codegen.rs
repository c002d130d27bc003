//! The device emitter: every stub of a loop, in one dialect ([`Dialect`]), as one program with
//! its entry points' parameters.

use crate::device::{
    StubParam, atomic_reductions, block_atomics, emit_atomic_stub, emit_direct_stub,
    emit_finish_kernel, emit_host_stub, emit_planned_stub, private_bytes_per_item,
};
use crate::dialect::{
    ConstPassing, DEVICE_ENTRY, DeviceOptions, DeviceStub, Dialect, FINISH_ENTRY, HostRange,
    KernelDecl,
};
use crate::emit::{const_symbol, reduction_args};
use op2_core::{Codegen, GeneratedUnit, LoopSignature, Op2Error, Result};
use std::fmt::Write;

/// An emitted device program.
#[derive(Debug, Clone)]
pub struct DeviceUnit {
    /// Source, entry ([`DEVICE_ENTRY`]) and kernel name.
    pub unit: GeneratedUnit,
    /// [`DEVICE_ENTRY`]'s parameters in order.
    pub params: Vec<StubParam>,
    /// [`FINISH_ENTRY`]'s parameters, when the loop reduces into Globals.
    pub finish_params: Option<Vec<StubParam>>,
    /// Private memory each work-item of [`DEVICE_ENTRY`] declares (see
    /// [`private_bytes_per_item`]).
    pub private_bytes: usize,
    /// The program-scope symbols of the Consts, in `sig.consts` order, where the dialect keeps
    /// them there ([`ConstPassing::Symbols`]; empty otherwise).
    pub const_symbols: Vec<String>,
}

/// The device emitter: every stub, in one dialect.
#[derive(Debug, Clone, Copy)]
pub struct DeviceCodegen<'d> {
    /// The dialect.
    pub dialect: &'d dyn Dialect,
}

/// The parameter declarations of the first kernel in `text` (`const int op2_start`, ...).
pub(crate) fn kernel_decls(text: &str) -> Vec<String> {
    let open = text.find('(').expect("a kernel has a parameter list");
    let close = open + text[open..].find(')').expect("a parameter list closes");
    text[open + 1..close]
        .split(", ")
        .filter(|d| !d.is_empty())
        .map(str::to_string)
        .collect()
}

impl Codegen for DeviceCodegen<'_> {
    type Options = (DeviceStub, DeviceOptions);
    type Unit = DeviceUnit;

    fn emit(&self, sig: &LoopSignature, (stub, options): &Self::Options) -> Result<DeviceUnit> {
        let d = self.dialect;
        let name = sig.kernel.name();
        if sig.kernel.is_cpp() {
            return Err(Op2Error::Unsupported {
                kernel: name.into(),
                reason: format!(
                    "a C++ kernel (cpp=True) runs on the host backends (seq, openmp) only, not \
                     in the {} dialect",
                    d.name()
                ),
            });
        }
        if sig.kernel.has_host_effects() {
            return Err(Op2Error::Unsupported {
                kernel: name.into(),
                reason: format!(
                    "a kernel acting on host state outside its args (a handed-through pointer) \
                     runs on the host backends (seq, openmp) only, not in the {} dialect",
                    d.name()
                ),
            });
        }
        if sig.kernel.has_build_args() {
            let k = &sig.kernel;
            return Err(Op2Error::Unsupported {
                kernel: name.into(),
                reason: format!(
                    "a kernel compiled or linked with arguments of its own ({}) runs on the host \
                     backends (seq, openmp) only: code for the {} dialect is built without them",
                    k.compile_args()
                        .iter()
                        .chain(k.link_args())
                        .cloned()
                        .collect::<Vec<_>>()
                        .join(" "),
                    d.name()
                ),
            });
        }
        if let Some(t) = sig.complex_dtype() {
            // C99's `_Complex` is the kernels' spelling; CUDA C++ and OpenCL C have no such type
            // (a device spelling would need kernels written for it), so saying so beats a
            // compiler error about the type.
            return Err(Op2Error::Unsupported {
                kernel: name.into(),
                reason: format!(
                    "complex values ({}) run on the host backends (seq, openmp) only: the {} \
                     dialect has no C99 `_Complex` type",
                    t.c_name(),
                    d.name()
                ),
            });
        }
        if *stub == DeviceStub::Atomic && d.atomic_add().is_none() {
            return Err(Op2Error::Unsupported {
                kernel: name.into(),
                reason: format!("the {} dialect has no atomics stub", d.name()),
            });
        }
        let mut s = String::new();
        let kind = match stub {
            DeviceStub::Direct => "direct",
            DeviceStub::Planned(_) => "planned, staged and coloured",
            DeviceStub::Atomic => "atomics",
            DeviceStub::Host(HostRange::Chunks) => "host scheme, chunks",
            DeviceStub::Host(HostRange::Blocks) => "host scheme, coloured blocks",
        };
        let _ = writeln!(
            s,
            "/* op2-rs generated {}: loop over kernel `{name}` ({kind}) */",
            d.name()
        );
        let reduce_atomically = atomic_reductions(sig, stub, d, options);
        let atomics = reduce_atomically
            || match stub {
                DeviceStub::Atomic => true,
                DeviceStub::Planned(b) => block_atomics(sig, b, d, options),
                _ => false,
            };
        s.push_str(&d.prelude(atomics));
        d.emit_consts(&mut s, sig, options.baked_consts.as_deref());
        s.push('\n');
        d.emit_user_kernel(&mut s, sig, stub, options)?;
        let start = s.len();
        let params = match stub {
            DeviceStub::Direct => emit_direct_stub(&mut s, sig, d, options),
            DeviceStub::Planned(b) => emit_planned_stub(&mut s, sig, b, d, options),
            DeviceStub::Atomic => emit_atomic_stub(&mut s, sig, d, options),
            DeviceStub::Host(range) => emit_host_stub(&mut s, sig, *range, d, options),
        };
        let private_bytes = private_bytes_per_item(&s[start..]);
        let mut kernels = vec![KernelDecl {
            entry: DEVICE_ENTRY,
            decls: kernel_decls(&s[start..]),
        }];
        let finish_params = (!reduction_args(sig).is_empty() && !reduce_atomically).then(|| {
            s.push('\n');
            let start = s.len();
            let params = emit_finish_kernel(&mut s, sig, d, options.tree_reductions);
            kernels.push(KernelDecl {
                entry: FINISH_ENTRY,
                decls: kernel_decls(&s[start..]),
            });
            params
        });
        d.epilogue(&mut s, sig, &kernels);
        Ok(DeviceUnit {
            unit: GeneratedUnit {
                source: s,
                entry: DEVICE_ENTRY.into(),
                kernel: name.into(),
            },
            params,
            finish_params,
            private_bytes,
            const_symbols: match d.const_passing() {
                ConstPassing::Symbols => sig.consts.iter().map(|c| const_symbol(&c.name)).collect(),
                ConstPassing::Params => Vec::new(),
            },
        })
    }
}
