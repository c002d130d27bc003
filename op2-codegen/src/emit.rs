//! The C emitter: kernel source, consts as file-scope variables, and a wrapper that gathers pointers
//! through maps and calls the kernel once per element (PyOP2's sequential wrapper).

use op2_core::{ArgKind, ArgSig, Codegen, GeneratedUnit, LoopSignature};
use std::fmt::Write;

/// The C signature of every generated wrapper (its name is [`GeneratedUnit::entry`]):
/// elements `start..end`, one data pointer per arg, one values pointer per map slot, one pointer per const.
/// The wrapper is the library's only exported symbol (everything else is compiled hidden).
pub const WRAPPER_SIGNATURE: &str = "__attribute__((visibility(\"default\"))) void NAME(int64_t start, int64_t end, void *const *args, const int32_t *const *maps, const void *const *consts)";

/// Emits plain C99 for the host backends.
#[derive(Debug, Clone, Copy, Default)]
pub struct CCodegen;

impl Codegen for CCodegen {
    fn emit(&self, sig: &LoopSignature) -> GeneratedUnit {
        let entry = format!("op2_wrap_{}", sig.kernel.name());
        let mut s = String::new();
        let _ = writeln!(
            s,
            "/* op2-rs generated code: loop over kernel `{}` */",
            sig.kernel.name()
        );
        s.push_str("#include <stdint.h>\n#include <math.h>\n\n");
        emit_consts(&mut s, sig, "static");
        emit_kernel(&mut s, sig, HOST_INLINE);
        let _ = writeln!(s, "{} {{", WRAPPER_SIGNATURE.replace("NAME", &entry));
        emit_wrapper_prologue(&mut s, sig);
        emit_row_vectors(&mut s, sig, "  ");
        // Reductions accumulate in a local copy: the kernel's pointers are all `double *` (say), so
        // through the Global's own buffer the compiler must assume every Dat store may change the
        // sum, and keeps it in memory. A local whose address never escapes the unit stays in
        // registers, and the loop vectorises. Same additions in the same order, so same result.
        let reductions = reduction_args(sig);
        let mut call = kernel_call_args(sig, "n");
        for &i in &reductions {
            let a = &sig.args[i];
            let _ = writeln!(s, "  {} arg{i}_l[{}];", a.dtype.c_name(), a.dim);
            let _ = writeln!(
                s,
                "  for (int k = 0; k < {}; k++) arg{i}_l[k] = arg{i}[k];",
                a.dim
            );
            call[i] = format!("(void *)arg{i}_l");
        }
        s.push_str("  for (int64_t n = start; n < end; n++) {\n");
        emit_gathers(&mut s, sig, "n", "    ");
        let _ = writeln!(s, "    {}({});", sig.kernel.name(), call.join(", "));
        s.push_str("  }\n");
        for &i in &reductions {
            let _ = writeln!(
                s,
                "  for (int k = 0; k < {}; k++) arg{i}[k] = arg{i}_l[k];",
                sig.args[i].dim
            );
        }
        s.push_str("}\n");
        GeneratedUnit {
            source: s,
            entry,
            kernel: sig.kernel.name().into(),
        }
    }
}

/// Positions of the Global reduction args (INC, MIN, MAX).
pub(crate) fn reduction_args(sig: &LoopSignature) -> Vec<usize> {
    sig.reduction_args()
}

/// The kernel, preceded by a declaration that makes it `static` and always inlined: GCC does not
/// inline a large externally visible function called once (Airfoil's `adt_calc` stayed a call, 30%
/// slower than the same loop written in Rust), and inlining is what lets it see through the
/// wrapper's pointers. A definition after a `static` declaration keeps internal linkage in C.
/// `inline` spells how: [`HOST_INLINE`] in C, CUDA's `__device__ __forceinline__` on devices.
pub(crate) fn emit_kernel(s: &mut String, sig: &LoopSignature, inline: &str) {
    if let Some(params) = sig.kernel.params() {
        let list: Vec<&str> = params.iter().map(|p| p.text.as_str()).collect();
        let _ = writeln!(
            s,
            "static {inline} void {}({});",
            sig.kernel.name(),
            if list.is_empty() {
                "void".to_string()
            } else {
                list.join(", ")
            }
        );
    }
    s.push_str(sig.kernel.source());
    s.push_str("\n\n");
}

/// How a host unit inlines the kernel.
pub(crate) const HOST_INLINE: &str = "inline __attribute__((always_inline))";

/// File-scope declarations of the consts the kernel mentions, with `storage` (`static` in C: the
/// wrapper fills them on entry; `__constant__` in CUDA: the backend copies them in).
pub(crate) fn emit_consts(s: &mut String, sig: &LoopSignature, storage: &str) {
    for c in &sig.consts {
        if c.dim == 1 {
            let _ = writeln!(s, "{storage} {} {};", c.dtype.c_name(), c.name);
        } else {
            let _ = writeln!(s, "{storage} {} {}[{}];", c.dtype.c_name(), c.name, c.dim);
        }
    }
    if !sig.consts.is_empty() {
        s.push('\n');
    }
}

/// Copies consts in and names each arg's and map's pointer.
pub(crate) fn emit_wrapper_prologue(s: &mut String, sig: &LoopSignature) {
    for (i, c) in sig.consts.iter().enumerate() {
        let _ = writeln!(
            s,
            "  __builtin_memcpy(&{0}, consts[{i}], sizeof({0}));",
            c.name
        );
    }
    for (i, a) in sig.args.iter().enumerate() {
        let _ = writeln!(s, "  {0} *arg{i} = ({0} *)args[{i}];", a.dtype.c_name());
    }
    for m in 0..sig.n_maps {
        let _ = writeln!(s, "  const int32_t *map{m} = maps[{m}];");
    }
}

/// Declares the pointer arrays of whole-row args (per thread when emitted inside a parallel region).
pub(crate) fn emit_row_vectors(s: &mut String, sig: &LoopSignature, indent: &str) {
    for (i, a) in sig.args.iter().enumerate() {
        if let ArgKind::Row { arity, .. } = a.kind {
            let _ = writeln!(s, "{indent}{} *arg{i}_vec[{arity}];", a.dtype.c_name());
        }
    }
}

/// Fills the pointer arrays of whole-row args for element `n`.
pub(crate) fn emit_gathers(s: &mut String, sig: &LoopSignature, n: &str, indent: &str) {
    for (i, a) in sig.args.iter().enumerate() {
        if let ArgKind::Row { map, arity } = a.kind {
            for j in 0..arity {
                let _ = writeln!(
                    s,
                    "{indent}arg{i}_vec[{j}] = arg{i} + (int64_t)map{map}[{n} * {arity} + {j}] * {};",
                    a.dim
                );
            }
        }
    }
}

/// The expressions passed to the kernel for element `n`. Pointers go through `void *` so that a
/// kernel may spell its parameter types its own way (`long` for `int64_t`, added `const`).
pub(crate) fn kernel_call_args(sig: &LoopSignature, n: &str) -> Vec<String> {
    sig.args
        .iter()
        .enumerate()
        .map(|(i, a)| arg_expr(i, a, n))
        .collect()
}

fn arg_expr(i: usize, a: &ArgSig, n: &str) -> String {
    match a.kind {
        ArgKind::Direct => format!("(void *)(arg{i} + {n} * {})", a.dim),
        ArgKind::Indirect { map, arity, index } => {
            format!(
                "(void *)(arg{i} + (int64_t)map{map}[{n} * {arity} + {index}] * {})",
                a.dim
            )
        }
        ArgKind::Row { .. } => format!("(void *)arg{i}_vec"),
        ArgKind::Global => format!("(void *)arg{i}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use op2_core::{Access, ConstSig, DType, Kernel};

    #[test]
    fn midpoint_wrapper_gathers_through_the_map() {
        let k = Kernel::new("midpoint", "void midpoint(double p[2], double *c[3]) {}").unwrap();
        let sig = LoopSignature {
            kernel: k,
            args: vec![
                ArgSig {
                    kind: ArgKind::Direct,
                    dtype: DType::F64,
                    dim: 2,
                    access: Access::Write,
                },
                ArgSig {
                    kind: ArgKind::Row { map: 0, arity: 3 },
                    dtype: DType::F64,
                    dim: 2,
                    access: Access::Read,
                },
            ],
            consts: vec![ConstSig {
                name: "scale".into(),
                dtype: DType::F32,
                dim: 1,
            }],
            n_maps: 1,
        };
        let u = CCodegen.emit(&sig);
        assert_eq!(u.entry, "op2_wrap_midpoint");
        assert!(u.source.contains("static float scale;"));
        assert!(
            u.source
                .contains("arg1_vec[2] = arg1 + (int64_t)map0[n * 3 + 2] * 2;")
        );
        assert!(
            u.source
                .contains("midpoint((void *)(arg0 + n * 2), (void *)arg1_vec);")
        );
    }
}
