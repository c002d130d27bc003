//! The C emitter: kernel source, consts as file-scope variables, and a wrapper that gathers pointers
//! through maps and calls the kernel once per element (PyOP2's sequential wrapper).

use crate::batch::{HOST_INLINE, SIMD_BATCH, lanes_kernel, lanes_symbol, simd_batched};
use op2_core::{Access, ArgKind, ArgSig, Codegen, GeneratedUnit, LoopSignature};
use std::fmt::Write;

/// The C signature of every generated wrapper (its name is [`GeneratedUnit::entry`]):
/// elements `start..end`, one data pointer per arg, one values pointer per map slot, one pointer per const.
/// The wrapper is the library's only exported symbol (everything else is compiled hidden).
pub const WRAPPER_SIGNATURE: &str = "__attribute__((visibility(\"default\"))) void NAME(int64_t op2_start, int64_t op2_end, void *const *op2_args, const int32_t *const *op2_maps, const void *const *op2_consts)";

/// The C signature of the element-list entry point every host unit exports beside its wrapper
/// (its name is [`list_symbol`]): runs the element ranges `op2_ranges[2 r]..op2_ranges[2 r + 1]`
/// for `r` in `0..op2_nranges`, then the elements `op2_elems[0..op2_nelems]`, in that order, on
/// the calling thread, with the same args, maps and consts as the wrapper (ranges, and the
/// list, in SIMD batches where the loop allows: ranges keep direct data contiguous, a list
/// keeps batches full where a tile's elements are scattered). Sparse tiling runs a
/// tile's share of each loop through it, tiles on several threads at once: a null `op2_consts`
/// leaves the Consts as the last call with them set them, so that concurrent calls only read
/// the library's file-scope storage. Reductions go into the arg's own buffer (a tile's partial).
pub const LIST_SIGNATURE: &str = "__attribute__((visibility(\"default\"))) void NAME(const uint32_t *op2_ranges, int64_t op2_nranges, const uint32_t *op2_elems, int64_t op2_nelems, void *const *op2_args, const int32_t *const *op2_maps, const void *const *op2_consts)";

/// The symbol of a host unit's element-list entry point (see [`LIST_SIGNATURE`]).
pub fn list_symbol(kernel: &str) -> String {
    format!("op2_list_{kernel}")
}

/// How the host emitters shape a loop beyond its signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct HostOptions {
    /// Whether loops that allow it run in SIMD batches (see `docs/03-backends.md`); off, every
    /// element runs alone (`OP2_SIMD=0`, to measure what the batches gain).
    pub simd: bool,
}

impl Default for HostOptions {
    fn default() -> Self {
        HostOptions { simd: true }
    }
}

impl HostOptions {
    /// The options a runtime's configuration asks for.
    pub fn from_config(config: &op2_core::Config) -> Self {
        HostOptions { simd: config.simd }
    }
}

/// Emits plain C99 for the host backends.
#[derive(Debug, Clone, Copy, Default)]
pub struct CCodegen;

impl Codegen for CCodegen {
    type Options = HostOptions;
    type Unit = GeneratedUnit;

    fn emit(&self, sig: &LoopSignature, options: &HostOptions) -> op2_core::Result<GeneratedUnit> {
        let entry = format!("op2_wrap_{}", sig.kernel.name());
        let mut s = String::new();
        let _ = writeln!(
            s,
            "/* op2-rs generated code: loop over kernel `{}` */",
            sig.kernel.name()
        );
        emit_host_prelude(&mut s, sig, "")?;
        emit_compiler_workarounds(&mut s, sig);
        crate::rows::emit_row_transposes(&mut s, sig, options.simd);
        emit_consts(&mut s, sig, "static");
        emit_kernel(&mut s, sig, HOST_INLINE);
        emit_lanes_kernel(&mut s, sig, options.simd);
        open_entries(&mut s, sig);
        let _ = writeln!(s, "{} {{", WRAPPER_SIGNATURE.replace("NAME", &entry));
        emit_sequential_body(&mut s, sig, options.simd, false);
        s.push_str("}\n");
        emit_list_entry(&mut s, sig, options.simd);
        close_entries(&mut s, sig);
        Ok(GeneratedUnit {
            source: s,
            entry,
            kernel: sig.kernel.name().into(),
        })
    }
}

/// The body of the sequential wrapper or (`ranges`) of the element-list entry.
fn emit_sequential_body(s: &mut String, sig: &LoopSignature, simd: bool, ranges: bool) {
    emit_wrapper_prologue(s, sig, ranges);
    emit_row_vectors(s, sig, "  ");
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
        call[i] = format!("OP2_PASS(op2_arg{i}_l)");
    }
    if ranges {
        s.push_str(
            "  for (int64_t op2_r = 0; op2_r < op2_nranges; op2_r++) {\n    \
             const int64_t op2_lo = op2_ranges[2 * op2_r], op2_hi = op2_ranges[2 * op2_r + 1];\n",
        );
        emit_element_loop(s, sig, &call, "op2_lo", "op2_hi", "    ", simd, None);
        s.push_str("  }\n");
        emit_element_loop(
            s,
            sig,
            &call,
            "0",
            "op2_nelems",
            "  ",
            simd,
            Some("op2_elems"),
        );
    } else {
        emit_element_loop(s, sig, &call, "op2_start", "op2_end", "  ", simd, None);
    }
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
}

/// The element-list entry point ([`LIST_SIGNATURE`]).
pub(crate) fn emit_list_entry(s: &mut String, sig: &LoopSignature, simd: bool) {
    let _ = writeln!(
        s,
        "\n{} {{",
        LIST_SIGNATURE.replace("NAME", &list_symbol(sig.kernel.name()))
    );
    emit_sequential_body(s, sig, simd, true);
    s.push_str("}\n");
}

/// The loop over elements `lo..hi` (C expressions) calling the kernel with `call` (the args'
/// expressions for element `op2_n`). Loops that [`simd_batched`] allows run in batches of
/// [`SIMD_BATCH`]: each indirect arg's values are first copied into a lane array (a gather the
/// compiler need not prove safe), or zeroed for increments, then the kernel runs once per lane
/// under `omp simd`, so that arithmetic the kernel spells per element (Airfoil's `adt_calc`:
/// five square roots and two divisions per cell; `res_calc`: two divisions per edge) runs on
/// whole vectors; then each lane's increments are added to the Dats, lane by lane and arg by
/// arg, the order one element at a time adds them in. The remainder runs one element at a
/// time. Results are the same bits as element by element for kernels that add into each
/// component of an increment once (as OP2's do): a lane's `0 + f` is `f`, added to the Dat
/// in the same order. A kernel adding twice into one component rounds `r + (a + b)` where
/// element by element gives `(r + a) + b`.
#[allow(clippy::too_many_arguments)]
pub(crate) fn emit_element_loop(
    s: &mut String,
    sig: &LoopSignature,
    call: &[String],
    lo: &str,
    hi: &str,
    indent: &str,
    simd: bool,
    list: Option<&str>,
) {
    let kernel = kernel_symbol(sig.kernel.name());
    // Positions `lo..hi` are the elements themselves, or index the element list `list`.
    let element = |position: &str| match list {
        Some(elems) => format!("(int64_t){elems}[{position}]"),
        None => format!("({position})"),
    };
    let plain = |s: &mut String, from: &str, indent: &str| {
        let _ = writeln!(
            s,
            "{indent}for (int64_t op2_p = {from}; op2_p < {hi}; op2_p++) {{\n\
             {indent}  const int64_t op2_n = {};",
            element("op2_p")
        );
        emit_gathers(s, sig, "op2_n", &format!("{indent}  "));
        let _ = writeln!(s, "{indent}  {kernel}({});\n{indent}}}", call.join(", "));
    };
    if !(simd && simd_batched(sig)) {
        plain(s, lo, indent);
        return;
    }
    let w = SIMD_BATCH;
    let _ = writeln!(
        s,
        "{indent}int64_t op2_b0 = {lo};\n\
         {indent}for (; op2_b0 + {w} <= {hi}; op2_b0 += {w}) {{"
    );
    // Component-major lanes when the kernel could be rewritten for them: the gathers then
    // fill whole vectors (one per component) and the kernel loads them as such.
    let strided = lanes_kernel(sig).map(|l| l.strided);
    let soa = strided.is_some();
    let mut lanes = call.to_vec();
    let mut gather = String::new();
    let mut scatter = String::new();
    let mut rows_out = String::new();
    for (i, a) in sig.args.iter().enumerate() {
        let direct_row = strided.as_ref().is_some_and(|st| st[i]) && crate::batch::direct_rows(a);
        if direct_row {
            // A direct row read by every lane: gathered whole like one through a map (its rows
            // are consecutive, but a vector load of a component across lanes is strided).
            let (t, d) = (a.dtype.c_name(), a.dim);
            let _ = writeln!(
                s,
                "{indent}  int64_t op2_arg{i}_o[{w}];\n\
                 {indent}  for (int op2_l = 0; op2_l < {w}; op2_l++) op2_arg{i}_o[op2_l] = {} * {d};\n\
                 {indent}  {t} op2_arg{i}_g[{d}][{w}];",
                element("op2_b0 + op2_l")
            );
            lanes[i] = format!("OP2_PASS(&op2_arg{i}_g[0][op2_l])");
            let _ = writeln!(
                gather,
                "{indent}  {}",
                crate::rows::gather_call(
                    a,
                    &format!("op2_arg{i}_g"),
                    &format!("op2_arg{i}"),
                    &format!("op2_arg{i}_o")
                )
            );
        }
        if let ArgKind::Indirect { map, arity, index } = a.kind {
            let (t, d) = (a.dtype.c_name(), a.dim);
            let row = format!(
                "(int64_t)op2_map{map}[{} * {arity} + {index}] * {d}",
                element("op2_b0 + op2_l")
            );
            // Whole rows in and out, turned around by shuffles (see `crate::rows`).
            let by_rows = soa && crate::batch::transposable(a);
            if by_rows {
                let _ = writeln!(
                    s,
                    "{indent}  int64_t op2_arg{i}_o[{w}];\n\
                     {indent}  for (int op2_l = 0; op2_l < {w}; op2_l++) op2_arg{i}_o[op2_l] = {row};"
                );
            }
            let lane = if soa {
                let _ = writeln!(s, "{indent}  {t} op2_arg{i}_g[{d}][{w}];");
                lanes[i] = format!("OP2_PASS(&op2_arg{i}_g[0][op2_l])");
                "op2_arg{i}_g[op2_k][op2_l]".replace("{i}", &i.to_string())
            } else {
                let _ = writeln!(s, "{indent}  {t} op2_arg{i}_g[{w}][{d}];");
                lanes[i] = format!("OP2_PASS(op2_arg{i}_g[op2_l])");
                "op2_arg{i}_g[op2_l][op2_k]".replace("{i}", &i.to_string())
            };
            let value = if a.access == Access::Inc {
                if by_rows {
                    let _ = writeln!(
                        rows_out,
                        "{indent}  {} op2_arg{i}_v[{w}];\n{indent}  {}",
                        crate::rows::row_type(a),
                        crate::rows::rows_call(
                            a,
                            &format!("op2_arg{i}_g"),
                            &format!("op2_arg{i}_v")
                        )
                    );
                    let _ = writeln!(
                        scatter,
                        "{indent}    {}",
                        crate::rows::add_call(
                            a,
                            &format!("op2_arg{i} + op2_arg{i}_o[op2_l]"),
                            &format!("op2_arg{i}_v[op2_l]")
                        )
                    );
                } else {
                    let _ = writeln!(
                        scatter,
                        "{indent}    for (int op2_k = 0; op2_k < {d}; op2_k++) op2_arg{i}[{row} + op2_k] += {lane};"
                    );
                }
                format!("({t})0")
            } else if by_rows {
                let _ = writeln!(
                    gather,
                    "{indent}  {}",
                    crate::rows::gather_call(
                        a,
                        &format!("op2_arg{i}_g"),
                        &format!("op2_arg{i}"),
                        &format!("op2_arg{i}_o")
                    )
                );
                continue;
            } else {
                format!("op2_arg{i}[{row} + op2_k]")
            };
            // Component by component, lanes innermost: with component-major lanes each
            // component's gather is one vector (a hardware gather where there is one).
            let _ = writeln!(
                gather,
                "{indent}  for (int op2_k = 0; op2_k < {d}; op2_k++) {{\n\
                 {indent}    #pragma omp simd\n\
                 {indent}    for (int op2_l = 0; op2_l < {w}; op2_l++) {lane} = {value};\n\
                 {indent}  }}"
            );
        }
    }
    s.push_str(&gather);
    let kernel_called = if soa {
        lanes_symbol(sig.kernel.name())
    } else {
        kernel.clone()
    };
    let _ = writeln!(
        s,
        "{indent}  #pragma omp simd\n\
         {indent}  for (int op2_l = 0; op2_l < {w}; op2_l++) {{\n\
         {indent}    const int64_t op2_n = {};\n\
         {indent}    {kernel_called}({});\n\
         {indent}  }}",
        element("op2_b0 + op2_l"),
        lanes.join(", ")
    );
    s.push_str(&rows_out);
    if !scatter.is_empty() {
        // Lane by lane, in element order: lanes that hit one element add in turn.
        let _ = write!(
            s,
            "{indent}  for (int op2_l = 0; op2_l < {w}; op2_l++) {{\n{scatter}{indent}  }}\n"
        );
    }
    let _ = writeln!(s, "{indent}}}");
    plain(s, "op2_b0", indent);
}

/// The kernel's copy for component-major lanes ([`lanes_kernel`]), where the host unit runs
/// SIMD batches (`simd`) and the rewrite applies; with the user's names open, as around the
/// kernel itself.
pub(crate) fn emit_lanes_kernel(s: &mut String, sig: &LoopSignature, simd: bool) {
    if let Some(lanes) = lanes_kernel(sig).filter(|_| simd) {
        open_user_names(s, sig, false);
        let _ = writeln!(s, "static {HOST_INLINE} void {}", lanes.source);
        close_user_names(s, sig);
        s.push('\n');
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

/// Pragmas that keep a host C compiler clear of its known wrong-code bugs on this loop.
///
/// GCC 12's straight-line (SLP) vectoriser miscompiles a loop that keeps two or more MIN or MAX
/// partials of a small unsigned type in a local array while the loop also stores elsewhere: with
/// AVX-512 (`-march=native` on such a CPU) every component of a `uint32_t` MIN came out as the
/// least of all of them (`op2-fuzz` found it; GCC 12.2 `-O3 -march=x86-64-v4`). A unit with a
/// MIN or MAX Global reduction turns that pass off for its own functions; loop vectorisation,
/// which the SIMD batches use, stays on. Clang also defines `__GNUC__` but has no such option,
/// hence the guard.
pub(crate) fn emit_compiler_workarounds(s: &mut String, sig: &LoopSignature) {
    let min_max = reduction_args(sig)
        .into_iter()
        .any(|i| matches!(sig.args[i].access, Access::Min | Access::Max));
    if min_max {
        s.push_str(
            "#if defined(__GNUC__) && !defined(__clang__)\n\
             #pragma GCC optimize (\"no-tree-slp-vectorize\")\n#endif\n",
        );
    }
}

/// The opening of a host unit: the C library headers (and `extra`, say `<omp.h>`), `<complex.h>`
/// where a loop wants it ([`complex_header`]), and `OP2_PASS(x)`, how a pointer reaches the
/// kernel whatever its parameter's spelling: through `void *` in C. A C++ kernel
/// ([`op2_core::Kernel::cpp`]) makes the unit C++: `OP2_PASS` then goes through `op2_any`,
/// which converts to any pointer type (C++ converts no `void *` by itself), and `restrict` is
/// GCC's `__restrict__`. Complex values in a C++ unit are refused: C99's `_Complex` is not C++'s.
pub(crate) fn emit_host_prelude(
    s: &mut String,
    sig: &LoopSignature,
    extra: &str,
) -> op2_core::Result<()> {
    s.push_str("#include <stdint.h>\n#include <math.h>\n");
    s.push_str(extra);
    if !sig.kernel.is_cpp() {
        s.push_str(complex_header(sig));
        s.push_str("#define OP2_PASS(x) ((void *)(x))\n#define OP2_TYPEOF(x) __typeof__(x)\n\n");
        return Ok(());
    }
    if let Some(t) = sig.complex_dtype() {
        return Err(op2_core::Op2Error::Unsupported {
            kernel: sig.kernel.name().into(),
            reason: format!(
                "a C++ kernel over complex values ({}): C99's `_Complex` is not a C++ type",
                t.c_name()
            ),
        });
    }
    s.push_str(
        "struct op2_any { void *p; template <class T> operator T *() const { return (T *)p; } };\n\
         #define OP2_PASS(x) op2_any{(void *)(x)}\n#define OP2_TYPEOF(x) decltype(x)\n\
         #define restrict __restrict__\n\n",
    );
    Ok(())
}

/// Before a unit's entry points: C linkage in a C++ unit, so that they keep their names.
pub(crate) fn open_entries(s: &mut String, sig: &LoopSignature) {
    if sig.kernel.is_cpp() {
        s.push_str("extern \"C\" {\n");
    }
}

/// After a unit's entry points (see [`open_entries`]).
pub(crate) fn close_entries(s: &mut String, sig: &LoopSignature) {
    if sig.kernel.is_cpp() {
        s.push_str("}\n");
    }
}

/// `#include <complex.h>` for a host unit whose args or Consts hold complex values, or whose
/// kernel speaks of complex numbers (`double complex z`, `I`, `conj`): C99's header defines
/// `complex` and `I` as macros, so it is left out of every other unit, where a kernel may use
/// those names for its own.
pub(crate) fn complex_header(sig: &LoopSignature) -> &'static str {
    // Identifiers, comments left out: `complexity`, or a comment naming complex numbers, is
    // not a kernel using them.
    let k = &sig.kernel;
    if sig.complex_dtype().is_some() || k.mentions("complex") || k.mentions("_Complex") {
        "#include <complex.h>\n"
    } else {
        ""
    }
}

/// Positions of the Global reduction args (INC, MIN, MAX).
pub(crate) fn reduction_args(sig: &LoopSignature) -> Vec<usize> {
    sig.reduction_args()
}

/// The C symbol of Const `name` in generated units. The user's code sees the Const by its own
/// name through a macro that holds only around that code (see `emit_kernel`), so a Const may be
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

/// Copies consts in (`optional_consts`: only when `op2_consts` is not null) and names each
/// arg's and map's pointer.
pub(crate) fn emit_wrapper_prologue(s: &mut String, sig: &LoopSignature, optional_consts: bool) {
    if optional_consts && !sig.consts.is_empty() {
        s.push_str("  if (op2_consts) {\n");
    }
    for (i, c) in sig.consts.iter().enumerate() {
        let _ = writeln!(
            s,
            "  __builtin_memcpy(&{0}, op2_consts[{i}], sizeof({0}));",
            const_symbol(&c.name)
        );
    }
    if optional_consts && !sig.consts.is_empty() {
        s.push_str("  }\n");
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
        ArgKind::Direct => format!("OP2_PASS(op2_arg{i} + {n} * {})", a.dim),
        ArgKind::Indirect { map, arity, index } => {
            format!(
                "OP2_PASS(op2_arg{i} + (int64_t)op2_map{map}[{n} * {arity} + {index}] * {})",
                a.dim
            )
        }
        ArgKind::Row { .. } => format!("OP2_PASS(op2_arg{i}_vec)"),
        ArgKind::Global => format!("OP2_PASS(op2_arg{i})"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::batch::simd_reads_only;
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
        let u = CCodegen.emit(&sig, &HostOptions::default()).unwrap();
        assert_eq!(u.entry, "op2_wrap_midpoint");
        assert!(u.source.contains("static float op2_const_scale;"));
        assert!(u.source.contains("#define scale op2_const_scale"));
        assert!(
            u.source
                .contains("op2_arg1_vec[2] = op2_arg1 + (int64_t)op2_map0[op2_n * 3 + 2] * 2;")
        );
        assert!(u.source.contains(
            "op2_kernel_midpoint(OP2_PASS(op2_arg0 + op2_n * 2), OP2_PASS(op2_arg1_vec));"
        ));
    }

    #[test]
    fn loops_that_read_or_increment_through_maps_run_in_simd_batches() {
        let k = Kernel::new(
            "k",
            "void k(const double *a, const double *b, double *o) { o[0] = a[0] + *b; }",
        )
        .unwrap();
        let arg = |kind, access| ArgSig {
            kind,
            dtype: DType::F64,
            dim: 2,
            access,
        };
        let via = |index| ArgKind::Indirect {
            map: 0,
            arity: 2,
            index,
        };
        let sig = |o_access, data: Vec<usize>| LoopSignature {
            kernel: k.clone(),
            args: vec![
                arg(via(0), Access::Read),
                arg(via(1), Access::Read),
                arg(ArgKind::Direct, o_access),
            ],
            consts: Vec::new(),
            n_maps: 1,
            data,
        };
        let emit =
            |sig: &LoopSignature| CCodegen.emit(sig, &HostOptions::default()).unwrap().source;
        let batched = sig(Access::Write, vec![0, 0, 1]);
        assert!(simd_batched(&batched) && simd_reads_only(&batched));
        let src = emit(&batched);
        // Lanes component-major; rows of 2 gathered whole and transposed.
        assert!(src.contains("double op2_arg1_g[2][8];"), "{src}");
        assert!(
            src.contains("op2_arg1_o[op2_l] = (int64_t)op2_map0[(op2_b0 + op2_l) * 2 + 1] * 2;"),
            "{src}"
        );
        assert!(
            src.contains("op2_rows_in2_double(op2_arg1_g, op2_arg1, op2_arg1_o);"),
            "{src}"
        );
        assert!(src.contains("static inline __attribute__((always_inline)) void op2_rows_in2_double(double op2_g[2][8]"), "{src}");
        // Before the user's code, so that none of its macros reach the transposes.
        assert!(src.find("op2_rows_in2_double").unwrap() < src.find("void k(").unwrap());
        assert!(src.contains("#pragma omp simd"));
        // A direct row read: gathered whole as well, from consecutive elements.
        let mut direct = batched.clone();
        direct.args[2].access = Access::Read;
        let srcd = emit(&direct);
        assert!(
            srcd.contains("op2_arg2_o[op2_l] = (op2_b0 + op2_l) * 2;"),
            "{srcd}"
        );
        assert!(
            srcd.contains("op2_rows_in2_double(op2_arg2_g, op2_arg2, op2_arg2_o);"),
            "{srcd}"
        );
        assert!(srcd.contains("OP2_PASS(&op2_arg2_g[0][op2_l]));"), "{srcd}");
        // A direct row the kernel hands on stays in place, and the rows through the map keep
        // their lanes.
        let mut handed = direct.clone();
        handed.kernel = Kernel::new(
            "k",
            "static double first(const double *x) { return x[0]; }\n\
             void k(const double *a, const double *b, const double *o) { first(o) + a[0] + *b; }",
        )
        .unwrap();
        let lanes = lanes_kernel(&handed).expect("lanes for the args through the map");
        assert_eq!(lanes.strided, [true, true, false]);
        let srch = emit(&handed);
        assert!(srch.contains(
            "op2_lanes_k(OP2_PASS(&op2_arg0_g[0][op2_l]), OP2_PASS(&op2_arg1_g[0][op2_l]), OP2_PASS(op2_arg2 + op2_n * 2));"
        ), "{srch}");
        assert!(!srch.contains("op2_arg2_g"), "{srch}");
        // Rows of 3 have no whole-row vector: a component at a time.
        let mut three = batched.clone();
        for a in &mut three.args {
            a.dim = 3;
        }
        let src3 = emit(&three);
        assert!(src3.contains(
            "op2_arg1_g[op2_k][op2_l] = op2_arg1[(int64_t)op2_map0[(op2_b0 + op2_l) * 2 + 1] * 3 + op2_k];"
        ), "{src3}");
        assert!(!src3.contains("op2_rows_"), "{src3}");
        // The kernel rewritten for them, and called per lane.
        assert!(src.contains(
            "static inline __attribute__((always_inline)) void op2_lanes_k(const double *a, const double *b, double *o) { o[0] = a[(0) * 8] + b[0]; }"
        ), "{src}");
        assert!(src.contains(
            "op2_lanes_k(OP2_PASS(&op2_arg0_g[0][op2_l]), OP2_PASS(&op2_arg1_g[0][op2_l]), OP2_PASS(op2_arg2 + op2_n * 2));"
        ), "{src}");
        // The remainder, one element at a time, with the kernel as written.
        assert!(src.contains("for (int64_t op2_p = op2_b0; op2_p < op2_end; op2_p++) {"));
        assert!(
            src.contains("op2_kernel_k(OP2_PASS(op2_arg0 + (int64_t)op2_map0[op2_n * 2 + 0] * 2)")
        );
        // The element-range entry: ranges, then a list whose batches gather through it.
        assert!(src.contains("void op2_list_k(const uint32_t *op2_ranges"));
        assert!(
            src.contains("op2_map0[(int64_t)op2_elems[op2_b0 + op2_l] * 2 + 1]"),
            "{src}"
        );
        // Without SIMD, one element at a time.
        let plain = CCodegen
            .emit(&batched, &HostOptions { simd: false })
            .unwrap()
            .source;
        assert!(!plain.contains("omp simd") && !plain.contains("op2_rows_"));
        // A kernel the rewrite cannot follow keeps lane-major lanes.
        let mut opaque = batched.clone();
        opaque.kernel = Kernel::new(
            "k",
            "static double f(const double *p) { return p[1]; }\n\
             void k(const double *a, const double *b, double *o) { o[0] = f(a); }",
        )
        .unwrap();
        let src = emit(&opaque);
        assert!(src.contains("double op2_arg1_g[8][2];") && !src.contains("op2_lanes_k"));
        // Written data that another arg reads through the map: lanes would see stale values.
        assert!(!simd_batched(&sig(Access::Rw, vec![0, 0, 0])));
        // Increments through maps into data no other arg uses: zeroed lanes, then added lane
        // by lane.
        let mut inc = sig(Access::Write, vec![0, 1, 2]);
        inc.args[1].access = Access::Inc;
        assert!(simd_batched(&inc) && !simd_reads_only(&inc));
        let src = emit(&inc);
        assert!(
            src.contains(
                "for (int op2_l = 0; op2_l < 8; op2_l++) op2_arg1_g[op2_k][op2_l] = (double)0;"
            ),
            "{src}"
        );
        // Rows of 2: the lanes transposed into rows, each added whole in lane order.
        assert!(src.contains("op2_row2_double op2_arg1_v[8];"), "{src}");
        assert!(
            src.contains("op2_rows_out2_double(op2_arg1_g, op2_arg1_v);"),
            "{src}"
        );
        assert!(
            src.contains("op2_rows_add2_double(op2_arg1 + op2_arg1_o[op2_l], op2_arg1_v[op2_l]);"),
            "{src}"
        );
        // Rows of 3: component by component.
        let mut inc3 = inc.clone();
        for a in &mut inc3.args {
            a.dim = 3;
        }
        let src3 = emit(&inc3);
        assert!(src3.contains(
            "for (int op2_k = 0; op2_k < 3; op2_k++) op2_arg1[(int64_t)op2_map0[(op2_b0 + op2_l) * 2 + 1] * 3 + op2_k] += op2_arg1_g[op2_k][op2_l];"
        ), "{src3}");
        // An increment into data another arg reads stays one element at a time.
        let mut inc_read = sig(Access::Write, vec![0, 0, 1]);
        inc_read.args[1].access = Access::Inc;
        assert!(!simd_batched(&inc_read));
        assert!(!emit(&inc_read).contains("omp simd"));
        let mut write_via = sig(Access::Write, vec![0, 1, 2]);
        write_via.args[1].access = Access::Write;
        assert!(!simd_batched(&write_via));
        let mut red = sig(Access::Write, vec![0, 0, 1]);
        red.args[2] = arg(ArgKind::Global, Access::Inc);
        assert!(!simd_batched(&red));
        // Lane arrays of a huge dim would not fit a thread's stack.
        let mut wide = sig(Access::Write, vec![0, 0, 1]);
        wide.args[0].dim = 100_000;
        assert!(!simd_batched(&wide));
        let mut row = sig(Access::Write, vec![0, 0, 1]);
        row.args[0] = arg(ArgKind::Row { map: 0, arity: 2 }, Access::Read);
        assert!(!simd_batched(&row));
    }
}
