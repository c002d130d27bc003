//! The C emitter: kernel source, consts as file-scope variables, and a wrapper that gathers pointers
//! through maps and calls the kernel once per element (PyOP2's sequential wrapper).

use op2_core::{Access, ArgKind, ArgSig, Codegen, GeneratedUnit, LoopSignature};
use std::fmt::Write;

/// The C signature of every generated wrapper (its name is [`GeneratedUnit::entry`]):
/// elements `start..end`, one data pointer per arg, one values pointer per map slot, one pointer per const.
/// The wrapper is the library's only exported symbol (everything else is compiled hidden).
pub const WRAPPER_SIGNATURE: &str = "__attribute__((visibility(\"default\"))) void NAME(int64_t op2_start, int64_t op2_end, void *const *op2_args, const int32_t *const *op2_maps, const void *const *op2_consts)";

/// Emits plain C99 for the host backends.
#[derive(Debug, Clone, Copy, Default)]
pub struct CCodegen;

impl Codegen for CCodegen {
    type Options = ();
    type Unit = GeneratedUnit;

    fn emit(&self, sig: &LoopSignature, _options: &()) -> op2_core::Result<GeneratedUnit> {
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
        // registers, and the loop vectorises. Each reduction arg is its own contribution (a Global
        // passed twice with INC counts both): sums start from zero and are added to the Global
        // at the end, MIN and MAX start from its value and are combined with it at the end.
        // A Global too large for the stack (a histogram, say) is reduced in place: on one thread
        // the kernel's additions into it, and MIN and MAX lowering it, mean the same.
        let reductions: Vec<usize> = reduction_args(sig)
            .into_iter()
            .filter(|&i| reduces_locally(&sig.args[i]))
            .collect();
        let mut call = kernel_call_args(sig, "op2_n");
        for &i in &reductions {
            let a = &sig.args[i];
            let _ = writeln!(s, "  {} op2_arg{i}_l[{}];", a.dtype.c_name(), a.dim);
            let init = match a.access {
                Access::Inc => format!("({})0", a.dtype.c_name()),
                _ => format!("op2_arg{i}[op2_k]"),
            };
            let _ = writeln!(
                s,
                "  for (int op2_k = 0; op2_k < {}; op2_k++) op2_arg{i}_l[op2_k] = {init};",
                a.dim
            );
            call[i] = format!("(void *)op2_arg{i}_l");
        }
        s.push_str("  for (int64_t op2_n = op2_start; op2_n < op2_end; op2_n++) {\n");
        emit_gathers(&mut s, sig, "op2_n", "    ");
        let _ = writeln!(
            s,
            "    {}({});",
            kernel_symbol(sig.kernel.name()),
            call.join(", ")
        );
        s.push_str("  }\n");
        for &i in &reductions {
            let _ = writeln!(
                s,
                "  for (int op2_k = 0; op2_k < {}; op2_k++) {}",
                sig.args[i].dim,
                combine_into(
                    sig.args[i].access,
                    &format!("op2_arg{i}[op2_k]"),
                    &format!("op2_arg{i}_l[op2_k]")
                )
            );
        }
        s.push_str("}\n");
        Ok(GeneratedUnit {
            source: s,
            entry,
            kernel: sig.kernel.name().into(),
        })
    }
}

/// Largest reduction (in bytes) the host wrappers accumulate in a local array, on the stack of the
/// thread that runs the loop; larger ones are accumulated in place (one thread) or in the
/// partials the backend allocates (threads).
pub(crate) const LOCAL_REDUCTION_BYTES: usize = 4096;

/// Whether reduction arg `a` is accumulated in a local array.
pub(crate) fn reduces_locally(a: &ArgSig) -> bool {
    a.dim * a.dtype.size() <= LOCAL_REDUCTION_BYTES
}

/// A C statement folding `part` into `target` under a reduction's access: INC adds, MIN and MAX
/// keep the extreme.
pub(crate) fn combine_into(access: Access, target: &str, part: &str) -> String {
    match access {
        Access::Min => format!("if ({part} < {target}) {target} = {part};"),
        Access::Max => format!("if ({part} > {target}) {target} = {part};"),
        _ => format!("{target} += {part};"),
    }
}

/// Positions of the Global reduction args (INC, MIN, MAX).
pub(crate) fn reduction_args(sig: &LoopSignature) -> Vec<usize> {
    sig.reduction_args()
}

/// The C symbol of Const `name` in generated units. The user's code sees the Const by its own
/// name through a macro that holds only around that code (see [`emit_kernel`]), so a Const may be
/// named like anything the headers, the dialect or the generated stub use (`y0`, `free`, `min`,
/// `barrier`, `start`, ...).
pub fn const_symbol(name: &str) -> String {
    format!("op2_const_{name}")
}

/// The C symbol of the user's kernel function in generated units (see [`const_symbol`]).
pub fn kernel_symbol(name: &str) -> String {
    format!("op2_kernel_{name}")
}

/// Opens the user's names: each Const the kernel mentions, and the kernel itself, become macros
/// for their `op2_` symbols until [`close_user_names`]. A header macro of the same name
/// (`M_PI`, say) is set aside for the user's code. With `const_pointers`, the Consts' symbols are
/// pointers (parameters): a scalar Const reads through its pointer.
pub(crate) fn open_user_names(s: &mut String, sig: &LoopSignature, const_pointers: bool) {
    for c in &sig.consts {
        let sym = const_symbol(&c.name);
        let target = if const_pointers && c.dim == 1 {
            format!("(*{sym})")
        } else {
            sym
        };
        let _ = writeln!(s, "#undef {0}\n#define {0} {target}", c.name);
    }
    let name = sig.kernel.name();
    let _ = writeln!(s, "#undef {name}\n#define {name} {}", kernel_symbol(name));
}

/// Ends the macros of [`open_user_names`]: the generated code after the user's sees only
/// `op2_` names and the library's own.
pub(crate) fn close_user_names(s: &mut String, sig: &LoopSignature) {
    for name in user_names(sig) {
        let _ = writeln!(s, "#undef {name}");
    }
}

fn user_names(sig: &LoopSignature) -> impl Iterator<Item = &str> {
    sig.consts
        .iter()
        .map(|c| c.name.as_str())
        .chain(std::iter::once(sig.kernel.name()))
}

/// The kernel, preceded by a declaration that makes it `static` and always inlined: GCC does not
/// inline a large externally visible function called once (Airfoil's `adt_calc` stayed a call, 30%
/// slower than the same loop written in Rust), and inlining is what lets it see through the
/// wrapper's pointers. A definition after a `static` declaration keeps internal linkage in C.
/// `inline` spells how: [`HOST_INLINE`] in C, CUDA's `__device__ __forceinline__` on devices.
/// The user's names are macros for their `op2_` symbols around it ([`open_user_names`]).
pub(crate) fn emit_kernel(s: &mut String, sig: &LoopSignature, inline: &str) {
    open_user_names(s, sig, false);
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
    s.push('\n');
    close_user_names(s, sig);
    s.push('\n');
}

/// How a host unit inlines the kernel.
pub(crate) const HOST_INLINE: &str = "inline __attribute__((always_inline))";

/// File-scope declarations of the consts the kernel mentions, under their `op2_` symbols, with
/// `storage` (`static` in C: the wrapper fills them on entry; `__constant__` in CUDA: the backend
/// copies them in).
pub(crate) fn emit_consts(s: &mut String, sig: &LoopSignature, storage: &str) {
    for c in &sig.consts {
        let sym = const_symbol(&c.name);
        if c.dim == 1 {
            let _ = writeln!(s, "{storage} {} {sym};", c.dtype.c_name());
        } else {
            let _ = writeln!(s, "{storage} {} {sym}[{}];", c.dtype.c_name(), c.dim);
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
            "  __builtin_memcpy(&{0}, op2_consts[{i}], sizeof({0}));",
            const_symbol(&c.name)
        );
    }
    for (i, a) in sig.args.iter().enumerate() {
        let _ = writeln!(
            s,
            "  {0} *op2_arg{i} = ({0} *)op2_args[{i}];",
            a.dtype.c_name()
        );
    }
    for m in 0..sig.n_maps {
        let _ = writeln!(s, "  const int32_t *op2_map{m} = op2_maps[{m}];");
    }
}

/// Declares the pointer arrays of whole-row args (per thread when emitted inside a parallel region).
pub(crate) fn emit_row_vectors(s: &mut String, sig: &LoopSignature, indent: &str) {
    for (i, a) in sig.args.iter().enumerate() {
        if let ArgKind::Row { arity, .. } = a.kind {
            let _ = writeln!(s, "{indent}{} *op2_arg{i}_vec[{arity}];", a.dtype.c_name());
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
                    "{indent}op2_arg{i}_vec[{j}] = op2_arg{i} + (int64_t)op2_map{map}[{n} * {arity} + {j}] * {};",
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
        ArgKind::Direct => format!("(void *)(op2_arg{i} + {n} * {})", a.dim),
        ArgKind::Indirect { map, arity, index } => {
            format!(
                "(void *)(op2_arg{i} + (int64_t)op2_map{map}[{n} * {arity} + {index}] * {})",
                a.dim
            )
        }
        ArgKind::Row { .. } => format!("(void *)op2_arg{i}_vec"),
        ArgKind::Global => format!("(void *)op2_arg{i}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use op2_core::{ConstSig, DType, Kernel};

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
            data: vec![0, 1],
        };
        let u = CCodegen.emit(&sig, &()).unwrap();
        assert_eq!(u.entry, "op2_wrap_midpoint");
        assert!(u.source.contains("static float op2_const_scale;"));
        assert!(u.source.contains("#define scale op2_const_scale"));
        assert!(
            u.source
                .contains("op2_arg1_vec[2] = op2_arg1 + (int64_t)op2_map0[op2_n * 3 + 2] * 2;")
        );
        assert!(u.source.contains(
            "op2_kernel_midpoint((void *)(op2_arg0 + op2_n * 2), (void *)op2_arg1_vec);"
        ));
    }
}
