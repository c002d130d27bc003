//! The OpenCL C dialect (seed 003's device backends): the user's kernel with address-space
//! qualifiers added to its parameters, consts as `__constant` data, and a `__kernel` stub. Loops
//! through maps run one plan block per work-group: indirect data is staged into `__local` memory,
//! elements run on work-items, increments are applied colour by colour, and the host launches block
//! colours in sequence. Direct loops run one element per work-item, straight from global memory.

use crate::emit::reduction_args;
use op2_core::{Access, ArgKind, DType, GeneratedUnit, LoopSignature};
use std::fmt::Write;

/// The entry point of every generated OpenCL program.
pub const OPENCL_ENTRY: &str = "op2_stub";

/// How one staging area (a unique Dat and map pair) is filled and emptied.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum StagingMode {
    /// Only read: staged in, never written back.
    Read,
    /// Only incremented: starts at zero, added back to global memory.
    Increment,
    /// Read and written (RW, WRITE, or mixed modes): staged in, stored back.
    ReadWrite,
}

impl StagingMode {
    /// The mode of an area whose args have these access modes.
    pub fn of(accesses: impl IntoIterator<Item = Access>) -> Self {
        let (mut read, mut inc, mut other) = (false, false, false);
        for a in accesses {
            match a {
                Access::Read => read = true,
                Access::Inc => inc = true,
                _ => other = true,
            }
        }
        match (read, inc, other) {
            (_, false, false) => StagingMode::Read,
            (false, true, false) => StagingMode::Increment,
            _ => StagingMode::ReadWrite,
        }
    }
}

/// One staging area of a plan, as the generated code needs it.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct StagingLayout {
    /// Element type of the staged data.
    pub dtype: DType,
    /// Values per staged item.
    pub dim: usize,
    /// The map entries staged, in the plan's slot order.
    pub entries: Vec<usize>,
    /// Whether block-local indices are 32-bit (else 16-bit).
    pub wide_indices: bool,
    /// How the area is filled and emptied.
    pub mode: StagingMode,
    /// An arg on this data, whose buffer the stub stages from and to.
    pub source_arg: usize,
}

/// The block structure of a planned loop: which args share which staging area. This depends on
/// which args name the same Dat, so it is part of a program's key beside the signature.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct BlockLayout {
    /// The staging areas, in the plan's order.
    pub stagings: Vec<StagingLayout>,
    /// For each arg: its staging area, if it is indirect.
    pub arg_staging: Vec<Option<usize>>,
}

impl BlockLayout {
    /// Whether the kernel itself must run colour by colour inside a block: some arg modifies staged
    /// data that is also read or written otherwise (RW, WRITE), so two elements of a block that
    /// touch one item must not run at the same time. Pure increments are instead accumulated in
    /// registers and only their addition is coloured (the OP2 scheme).
    pub fn kernel_by_colour(&self, sig: &LoopSignature) -> bool {
        sig.args.iter().zip(&self.arg_staging).any(|(a, s)| {
            s.is_some_and(|s| a.access.writes() && self.stagings[s].mode == StagingMode::ReadWrite)
        })
    }

    /// Whether indirect arg `i` increments a private copy (applied colour by colour afterwards).
    fn private_increment(&self, sig: &LoopSignature, i: usize) -> bool {
        match self.arg_staging[i] {
            Some(s) => {
                self.stagings[s].mode == StagingMode::Increment && !self.kernel_by_colour(sig)
            }
            None => false,
        }
    }
}

/// One parameter of the generated `__kernel`, in order; the backend sets them from this list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StubParam {
    /// `int`: first element (direct loops) or first element to run (planned loops).
    Start,
    /// `int`: one past the last element to run.
    End,
    /// `int`: position in the plan's block map of this launch's first block.
    BlockOffset,
    /// `int`: elements planned (the stride of the block-local index arrays).
    PlanEnd,
    /// `uint*`: the plan's blocks ordered by colour.
    BlockMap,
    /// `uint*`: first element of each block.
    BlockOffsets,
    /// `uint*`: elements of each block.
    BlockLengths,
    /// `uint*`: colour of each element within its block.
    ElementColours,
    /// `uint*`: element colours of each block.
    BlockElementColours,
    /// The buffer of arg `i` (a Dat's or a Global's data).
    Data(usize),
    /// `int*`: staging area `s`'s local-to-global indices, all blocks concatenated.
    StagingItems(usize),
    /// `uint*`: start of each block's segment of [`StubParam::StagingItems`].
    StagingOffsets(usize),
    /// `uint*`: items each block stages.
    StagingSizes(usize),
    /// `ushort*` or `uint*`: block-local index of each staged map entry of each element.
    StagingLocal(usize),
    /// Reduction arg `i`'s per-work-group partial results (`dim` values per work-group).
    Partials(usize),
    /// `__local` bytes for staging (the plan's largest block).
    Shared,
    /// `__local` bytes for work-group reductions (8 per work-item).
    Scratch,
}

/// How the stub hands data to the user's kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArgPassing {
    /// Pointers straight into global, local or private memory, with the matching address-space
    /// qualifier added to each kernel parameter (seed 003). No copies.
    Qualified,
    /// Every pointer parameter gets a private copy of its values (written back when modified),
    /// and the kernel's parameters stay unqualified. For kernels that keep parameters in their
    /// own unqualified pointer variables, which OpenCL C 1.2 places in `__private`: without a
    /// generic address space such kernels compile only this way. After inlining the copies are
    /// register moves.
    PrivateCopies,
}

/// The OpenCL C emitter.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenClCodegen {
    /// Combine Global reductions across a work-group with a tree (log2 steps, for GPUs) rather
    /// than by one work-item in order (one barrier, for CPU devices).
    pub tree_reductions: bool,
}

/// An emitted OpenCL program and the parameter order of its stub.
#[derive(Debug, Clone)]
pub struct OpenClUnit {
    /// Source, entry ([`OPENCL_ENTRY`]) and kernel name.
    pub unit: GeneratedUnit,
    /// The stub's parameters in order.
    pub params: Vec<StubParam>,
}

/// Why a kernel cannot be emitted as OpenCL.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OpenClEmitError(pub String);

impl OpenClCodegen {
    /// Emits the program for `sig` with the consts' current values (`consts[i]` holds the bytes of
    /// `sig.consts[i]`), for a planned loop its block layout, and the way args reach the kernel.
    pub fn emit(
        &self,
        sig: &LoopSignature,
        consts: &[&[u8]],
        blocks: Option<&BlockLayout>,
        passing: ArgPassing,
    ) -> Result<OpenClUnit, OpenClEmitError> {
        let private = passing == ArgPassing::PrivateCopies;
        let name = sig.kernel.name();
        let mut s = String::new();
        let _ = writeln!(
            s,
            "/* op2-rs generated OpenCL C: loop over kernel `{name}` */"
        );
        // No contraction into fused multiply-adds: kernels evaluate as written, like the host
        // backends (`-ffp-contract=off`), so results do not depend on the device's FMA units.
        s.push_str(
            "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#pragma OPENCL FP_CONTRACT OFF\n",
        );
        s.push_str(
            "typedef long int64_t;\ntypedef ulong uint64_t;\ntypedef int int32_t;\ntypedef uint uint32_t;\n",
        );
        s.push_str("#define OP2_ROUND_UP(bytes) (((bytes) + 15) & ~15)\n\n");
        for (c, bytes) in sig.consts.iter().zip(consts) {
            let values = format_values(c.dtype, bytes);
            if c.dim == 1 {
                let _ = writeln!(
                    s,
                    "__constant {} {} = {};",
                    c.dtype.c_name(),
                    c.name,
                    values[0]
                );
            } else {
                let _ = writeln!(
                    s,
                    "__constant {} {}[{}] = {{{}}};",
                    c.dtype.c_name(),
                    c.name,
                    c.dim,
                    values.join(", ")
                );
            }
        }
        let params = sig.kernel.params().ok_or_else(|| {
            OpenClEmitError(format!(
                "kernel `{name}`: its parameter list could not be read (hidden by a macro?), and \
                 OpenCL needs it to add address-space qualifiers"
            ))
        })?;
        let qualified: Vec<String> = params
            .iter()
            .enumerate()
            .map(|(i, p)| match address_space(sig, blocks, i) {
                _ if private => p.text.clone(),
                "" => p.text.clone(),
                space => format!("{space} {}", p.text),
            })
            .collect();
        let source = rewrite_params(sig.kernel.source(), name, &qualified).ok_or_else(|| {
            OpenClEmitError(format!(
                "kernel `{name}`: could not find its definition to add address-space qualifiers"
            ))
        })?;
        let _ = writeln!(s, "\nvoid {name}({});", qualified.join(", "));
        s.push_str(&source);
        s.push_str("\n\n");
        let params = match blocks {
            None => emit_direct_stub(&mut s, sig, private, self.tree_reductions),
            Some(b) => emit_planned_stub(&mut s, sig, b, private, self.tree_reductions),
        };
        Ok(OpenClUnit {
            unit: GeneratedUnit {
                source: s,
                entry: OPENCL_ENTRY.into(),
                kernel: name.into(),
            },
            params,
        })
    }
}

/// The address space of kernel parameter `i`'s data.
fn address_space(sig: &LoopSignature, blocks: Option<&BlockLayout>, i: usize) -> &'static str {
    let a = &sig.args[i];
    match a.kind {
        ArgKind::Direct => "__global",
        ArgKind::Global if a.access.is_reduction() => "",
        ArgKind::Global => "__global",
        ArgKind::Indirect { .. } | ArgKind::Row { .. } => match blocks {
            Some(b) if b.private_increment(sig, i) => "",
            _ => "__local",
        },
    }
}

/// Replaces the parameter list of every top-level declaration or definition of `name` in `source`
/// (comments and literals skipped). `None` when no definition is found.
pub fn rewrite_params(source: &str, name: &str, params: &[String]) -> Option<String> {
    let bytes = source.as_bytes();
    let mut out = String::with_capacity(source.len() + 64);
    let mut depth = 0usize;
    let mut i = 0;
    let mut copied = 0;
    let mut found_definition = false;
    while i < bytes.len() {
        let c = bytes[i];
        if c == b'/' && bytes.get(i + 1) == Some(&b'/') {
            i = source[i..].find('\n').map_or(bytes.len(), |n| i + n);
            continue;
        }
        if c == b'/' && bytes.get(i + 1) == Some(&b'*') {
            i = source[i + 2..]
                .find("*/")
                .map_or(bytes.len(), |n| i + 2 + n + 2);
            continue;
        }
        if c == b'"' || c == b'\'' {
            let mut j = i + 1;
            while j < bytes.len() && bytes[j] != c {
                j += if bytes[j] == b'\\' { 2 } else { 1 };
            }
            i = j + 1;
            continue;
        }
        match c {
            b'{' => depth += 1,
            b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
        let starts_ident = (c.is_ascii_alphabetic() || c == b'_')
            && (i == 0 || !(bytes[i - 1].is_ascii_alphanumeric() || bytes[i - 1] == b'_'));
        if depth == 0 && starts_ident && source[i..].starts_with(name) {
            let after = i + name.len();
            let ident_ends = bytes
                .get(after)
                .is_none_or(|b| !(b.is_ascii_alphanumeric() || *b == b'_'));
            let open = after + source[after..].len() - source[after..].trim_start().len();
            if ident_ends && bytes.get(open) == Some(&b'(') {
                let close = matching_paren(bytes, open)?;
                let rest = source[close + 1..].trim_start();
                if rest.starts_with('{') || rest.starts_with(';') {
                    found_definition |= rest.starts_with('{');
                    out.push_str(&source[copied..=open]);
                    if params.is_empty() {
                        out.push_str("void");
                    } else {
                        out.push_str(&params.join(", "));
                    }
                    copied = close;
                    i = close;
                    continue;
                }
            }
        }
        i += 1;
    }
    out.push_str(&source[copied..]);
    found_definition.then_some(out)
}

fn matching_paren(bytes: &[u8], open: usize) -> Option<usize> {
    let mut depth = 0;
    for (j, &b) in bytes.iter().enumerate().skip(open) {
        match b {
            b'(' => depth += 1,
            b')' => {
                depth -= 1;
                if depth == 0 {
                    return Some(j);
                }
            }
            _ => {}
        }
    }
    None
}

/// C literals for the values in `bytes`, exact for every type (Rust prints the shortest decimal
/// that reads back to the same float).
fn format_values(dtype: DType, bytes: &[u8]) -> Vec<String> {
    let chunks = bytes.chunks_exact(dtype.size());
    chunks
        .map(|b| match dtype {
            DType::F64 => float_literal(f64::from_ne_bytes(b.try_into().unwrap()), ""),
            DType::F32 => float_literal(f64::from(f32::from_ne_bytes(b.try_into().unwrap())), "f"),
            DType::I32 => match i32::from_ne_bytes(b.try_into().unwrap()) {
                i32::MIN => "(-2147483647 - 1)".into(),
                v => v.to_string(),
            },
            DType::U32 => format!("{}u", u32::from_ne_bytes(b.try_into().unwrap())),
            DType::I64 => match i64::from_ne_bytes(b.try_into().unwrap()) {
                i64::MIN => "(-9223372036854775807L - 1)".into(),
                v => format!("{v}L"),
            },
            DType::U64 => format!("{}UL", u64::from_ne_bytes(b.try_into().unwrap())),
        })
        .collect()
}

fn float_literal(v: f64, suffix: &str) -> String {
    if v.is_nan() {
        "NAN".into()
    } else if v.is_infinite() {
        if v > 0.0 { "INFINITY" } else { "(-INFINITY)" }.into()
    } else if suffix == "f" {
        format!("{:?}f", v as f32)
    } else {
        format!("{v:?}")
    }
}

/// Declares each arg's buffer parameter and each reduction's partials.
fn data_params(sig: &LoopSignature, decl: &mut Vec<String>, order: &mut Vec<StubParam>) {
    for (i, a) in sig.args.iter().enumerate() {
        decl.push(format!("__global {} *arg{i}", a.dtype.c_name()));
        order.push(StubParam::Data(i));
    }
    for i in reduction_args(sig) {
        decl.push(format!(
            "__global {} *arg{i}_part",
            sig.args[i].dtype.c_name()
        ));
        order.push(StubParam::Partials(i));
    }
}

/// Private accumulators of Global reductions: INC from zero (the host adds the old value), MIN and
/// MAX from the current value.
fn emit_reduction_init(s: &mut String, sig: &LoopSignature) {
    for i in reduction_args(sig) {
        let a = &sig.args[i];
        let _ = writeln!(s, "  {} arg{i}_r[{}];", a.dtype.c_name(), a.dim);
        let init = if a.access == Access::Inc {
            "0".to_string()
        } else {
            format!("arg{i}[op2_k]")
        };
        let _ = writeln!(
            s,
            "  for (int op2_k = 0; op2_k < {}; op2_k++) arg{i}_r[op2_k] = {init};",
            a.dim
        );
    }
}

/// Combines each accumulator across the work-group; work-item 0 writes the partial of work-group
/// `slot`. Components are unrolled here so that no barrier sits inside a loop of the generated
/// code (CPU implementations such as PoCL run such loops far slower).
fn emit_reduction_finish(s: &mut String, sig: &LoopSignature, slot: &str, tree: bool) {
    let reds = reduction_args(sig);
    if reds.is_empty() {
        return;
    }
    if tree {
        s.push_str("  int op2_p = 1;\n  while (op2_p < op2_lsize) op2_p <<= 1;\n");
    }
    for i in reds {
        let a = &sig.args[i];
        let t = a.dtype.c_name();
        let combine = match a.access {
            Access::Min => "(op2_y < op2_x ? op2_y : op2_x)",
            Access::Max => "(op2_y > op2_x ? op2_y : op2_x)",
            _ => "(op2_x + op2_y)",
        };
        for k in 0..a.dim {
            let _ = writeln!(
                s,
                "  {{\n    __local {t} *op2_r = (__local {t} *)op2_scratch;\n    \
                 op2_r[op2_lid] = arg{i}_r[{k}];\n    barrier(CLK_LOCAL_MEM_FENCE);"
            );
            if tree {
                let _ = writeln!(
                    s,
                    "    for (int op2_s = op2_p >> 1; op2_s > 0; op2_s >>= 1) {{\n      \
                     if (op2_lid < op2_s && op2_lid + op2_s < op2_lsize) {{\n        \
                     {t} op2_x = op2_r[op2_lid], op2_y = op2_r[op2_lid + op2_s];\n        \
                     op2_r[op2_lid] = {combine};\n      }}\n      \
                     barrier(CLK_LOCAL_MEM_FENCE);\n    }}\n    \
                     if (op2_lid == 0) arg{i}_part[(size_t)({slot}) * {dim} + {k}] = op2_r[0];",
                    dim = a.dim
                );
            } else {
                let _ = writeln!(
                    s,
                    "    if (op2_lid == 0) {{\n      {t} op2_x = op2_r[0];\n      \
                     for (int op2_j = 1; op2_j < op2_lsize; op2_j++) {{ {t} op2_y = op2_r[op2_j]; op2_x = {combine}; }}\n      \
                     arg{i}_part[(size_t)({slot}) * {dim} + {k}] = op2_x;\n    }}",
                    dim = a.dim
                );
            }
            s.push_str("    barrier(CLK_LOCAL_MEM_FENCE);\n  }\n");
        }
    }
}

/// Statements around one kernel call: copies into private arrays before, and back after.
#[derive(Default)]
struct Around {
    pre: String,
    post: String,
}

impl Around {
    /// Gives arg `i` a private copy `arg{i}_c` of the `n` values at `src` (written back when the arg
    /// modifies them); returns its declaration.
    fn copy(&mut self, i: usize, a: &op2_core::ArgSig, n: usize, src: &str) -> String {
        let _ = write!(
            self.pre,
            " for (int op2_k = 0; op2_k < {n}; op2_k++) arg{i}_c[op2_k] = ({src})[op2_k];"
        );
        if a.access.writes() {
            let _ = write!(
                self.post,
                " for (int op2_k = 0; op2_k < {n}; op2_k++) ({src})[op2_k] = arg{i}_c[op2_k];"
            );
        }
        format!("{} arg{i}_c[{n}];", a.dtype.c_name())
    }

    /// Wraps `call` with the copies.
    fn wrap(&self, call: &str) -> String {
        if self.pre.is_empty() && self.post.is_empty() {
            call.to_string()
        } else {
            format!("{{{} {call};{} }}", self.pre, self.post)
        }
    }
}

fn emit_direct_stub(
    s: &mut String,
    sig: &LoopSignature,
    private: bool,
    tree: bool,
) -> Vec<StubParam> {
    let mut decl = vec![
        "const int op2_start".to_string(),
        "const int op2_end".into(),
    ];
    let mut order = vec![StubParam::Start, StubParam::End];
    data_params(sig, &mut decl, &mut order);
    let reductions = !reduction_args(sig).is_empty();
    if reductions {
        decl.push("__local char *op2_scratch".into());
        order.push(StubParam::Scratch);
    }
    let _ = writeln!(s, "__kernel void {OPENCL_ENTRY}({}) {{", decl.join(", "));
    if reductions {
        s.push_str(
            "  const int op2_lid = get_local_id(0);\n  const int op2_lsize = get_local_size(0);\n",
        );
    }
    s.push_str("  const int op2_e = op2_start + (int)get_global_id(0);\n");
    emit_reduction_init(s, sig);
    let mut around = Around::default();
    let mut call = Vec::new();
    for (i, a) in sig.args.iter().enumerate() {
        let src = match a.kind {
            ArgKind::Global if a.access.is_reduction() => {
                call.push(format!("(void *)arg{i}_r"));
                continue;
            }
            ArgKind::Direct => format!("arg{i} + (size_t)op2_e * {}", a.dim),
            _ => format!("arg{i}"),
        };
        if private {
            let decl = around.copy(i, a, a.dim, &src);
            let _ = writeln!(s, "  {decl}");
            call.push(format!("(void *)arg{i}_c"));
        } else {
            call.push(format!("(__global void *)({src})"));
        }
    }
    let call = format!("{}({})", sig.kernel.name(), call.join(", "));
    let _ = writeln!(s, "  if (op2_e < op2_end) {};", around.wrap(&call));
    emit_reduction_finish(s, sig, "get_group_id(0)", tree);
    s.push_str("}\n");
    order
}

fn emit_planned_stub(
    s: &mut String,
    sig: &LoopSignature,
    b: &BlockLayout,
    private_copies: bool,
    tree: bool,
) -> Vec<StubParam> {
    let mut decl: Vec<String> = [
        "const int op2_start",
        "const int op2_end",
        "const int op2_block_offset",
        "const int op2_plan_end",
        "__global const uint *op2_block_map",
        "__global const uint *op2_block_offsets",
        "__global const uint *op2_block_lengths",
        "__global const uint *op2_element_colours",
        "__global const uint *op2_block_ncolours",
    ]
    .iter()
    .map(|x| x.to_string())
    .collect();
    let mut order = vec![
        StubParam::Start,
        StubParam::End,
        StubParam::BlockOffset,
        StubParam::PlanEnd,
        StubParam::BlockMap,
        StubParam::BlockOffsets,
        StubParam::BlockLengths,
        StubParam::ElementColours,
        StubParam::BlockElementColours,
    ];
    data_params(sig, &mut decl, &mut order);
    for (k, st) in b.stagings.iter().enumerate() {
        let local_t = if st.wide_indices { "uint" } else { "ushort" };
        decl.push(format!("__global const int *op2_s{k}_items"));
        decl.push(format!("__global const uint *op2_s{k}_offsets"));
        decl.push(format!("__global const uint *op2_s{k}_sizes"));
        decl.push(format!("__global const {local_t} *op2_s{k}_local"));
        order.extend([
            StubParam::StagingItems(k),
            StubParam::StagingOffsets(k),
            StubParam::StagingSizes(k),
            StubParam::StagingLocal(k),
        ]);
    }
    decl.push("__local char *op2_shared".into());
    order.push(StubParam::Shared);
    let reductions = !reduction_args(sig).is_empty();
    if reductions {
        decl.push("__local char *op2_scratch".into());
        order.push(StubParam::Scratch);
    }
    let _ = writeln!(s, "__kernel void {OPENCL_ENTRY}({}) {{", decl.join(", "));
    s.push_str(
        "  const int op2_lid = get_local_id(0);\n  const int op2_lsize = get_local_size(0);\n  \
         const int op2_slot = op2_block_offset + (int)get_group_id(0);\n  \
         const uint op2_b = op2_block_map[op2_slot];\n  \
         const int op2_first = op2_block_offsets[op2_b];\n  \
         const int op2_nelem = op2_block_lengths[op2_b];\n  \
         const int op2_ncol = op2_block_ncolours[op2_b];\n  int op2_bytes = 0;\n",
    );
    // Staging areas, laid out as the plan counted them (each rounded up to 16 bytes).
    for (k, st) in b.stagings.iter().enumerate() {
        let t = st.dtype.c_name();
        let (dim, src) = (st.dim, st.source_arg);
        let _ = writeln!(
            s,
            "  const int op2_s{k}_n = op2_s{k}_sizes[op2_b];\n  \
             __global const int *op2_s{k}_map = op2_s{k}_items + op2_s{k}_offsets[op2_b];\n  \
             __local {t} *op2_s{k} = (__local {t} *)(op2_shared + op2_bytes);\n  \
             op2_bytes += OP2_ROUND_UP(op2_s{k}_n * {dim} * (int)sizeof({t}));"
        );
        let fill = match st.mode {
            StagingMode::Increment => "0".to_string(),
            _ => format!("arg{src}[(size_t)op2_s{k}_map[op2_k / {dim}] * {dim} + op2_k % {dim}]"),
        };
        let _ = writeln!(
            s,
            "  for (int op2_k = op2_lid; op2_k < op2_s{k}_n * {dim}; op2_k += op2_lsize) \
             op2_s{k}[op2_k] = {fill};"
        );
    }
    s.push_str("  barrier(CLK_LOCAL_MEM_FENCE);\n");
    emit_reduction_init(s, sig);
    let by_colour = b.kernel_by_colour(sig);
    // Every work-item runs the same number of rounds, so all of them reach every barrier.
    s.push_str(
        "  for (int op2_i0 = 0; op2_i0 < op2_nelem; op2_i0 += op2_lsize) {\n    \
         const int op2_i = op2_i0 + op2_lid;\n    \
         const int op2_e = op2_first + op2_i;\n    \
         const int op2_active = op2_i < op2_nelem && op2_e >= op2_start && op2_e < op2_end;\n    \
         const int op2_col = op2_active ? (int)op2_element_colours[op2_e] : -1;\n",
    );
    let local = |k: usize, entry: usize| {
        let st = &b.stagings[k];
        let slot = st
            .entries
            .iter()
            .position(|&x| x == entry)
            .expect("the plan stages every entry an arg reaches");
        format!(
            "op2_s{k}[(size_t)op2_s{k}_local[(size_t){slot} * op2_plan_end + op2_e] * {}]",
            st.dim
        )
    };
    let mut call = Vec::new();
    let mut around = Around::default();
    for (i, a) in sig.args.iter().enumerate() {
        let t = a.dtype.c_name();
        let private = b.private_increment(sig, i);
        match a.kind {
            ArgKind::Direct | ArgKind::Global if private_copies && !a.access.is_reduction() => {
                let src = match a.kind {
                    ArgKind::Direct => format!("arg{i} + (size_t)op2_e * {}", a.dim),
                    _ => format!("arg{i}"),
                };
                let decl = around.copy(i, a, a.dim, &src);
                let _ = writeln!(s, "    {decl}");
                call.push(format!("(void *)arg{i}_c"));
            }
            ArgKind::Direct => call.push(format!(
                "(__global void *)(arg{i} + (size_t)op2_e * {})",
                a.dim
            )),
            ArgKind::Global if a.access.is_reduction() => call.push(format!("(void *)arg{i}_r")),
            ArgKind::Global => call.push(format!("(__global void *)arg{i}")),
            ArgKind::Indirect { index, .. } => {
                let k = b.arg_staging[i].expect("indirect args are staged");
                if private {
                    let _ = writeln!(
                        s,
                        "    {t} arg{i}_l[{d}];\n    for (int op2_k = 0; op2_k < {d}; op2_k++) arg{i}_l[op2_k] = 0;",
                        d = a.dim
                    );
                    call.push(format!("(void *)arg{i}_l"));
                } else {
                    let _ = writeln!(
                        s,
                        "    __local {t} *arg{i}_p = op2_s{k};\n    if (op2_active) arg{i}_p = &{};",
                        local(k, index)
                    );
                    if private_copies {
                        let decl = around.copy(i, a, a.dim, &format!("arg{i}_p"));
                        let _ = writeln!(s, "    {decl}");
                        call.push(format!("(void *)arg{i}_c"));
                    } else {
                        call.push(format!("(__local void *)arg{i}_p"));
                    }
                }
            }
            ArgKind::Row { arity, .. } => {
                let k = b.arg_staging[i].expect("indirect args are staged");
                if private {
                    let _ = writeln!(
                        s,
                        "    {t} arg{i}_l[{n}];\n    for (int op2_k = 0; op2_k < {n}; op2_k++) arg{i}_l[op2_k] = 0;\n    {t} *arg{i}_vec[{arity}];",
                        n = arity * a.dim
                    );
                    for j in 0..arity {
                        let _ = writeln!(s, "    arg{i}_vec[{j}] = arg{i}_l + {};", j * a.dim);
                    }
                } else {
                    let _ = writeln!(
                        s,
                        "    __local {t} *arg{i}_vec[{arity}];\n    if (op2_active) {{"
                    );
                    for j in 0..arity {
                        let _ = writeln!(s, "      arg{i}_vec[{j}] = &{};", local(k, j));
                    }
                    s.push_str("    }\n");
                    if private_copies {
                        let d = a.dim;
                        let _ = writeln!(
                            s,
                            "    {t} arg{i}_c[{}];\n    {t} *arg{i}_cv[{arity}];",
                            arity * d
                        );
                        for j in 0..arity {
                            let _ = writeln!(s, "    arg{i}_cv[{j}] = arg{i}_c + {};", j * d);
                            let _ = write!(
                                around.pre,
                                " for (int op2_k = 0; op2_k < {d}; op2_k++) arg{i}_c[{} + op2_k] = arg{i}_vec[{j}][op2_k];",
                                j * d
                            );
                            if a.access.writes() {
                                let _ = write!(
                                    around.post,
                                    " for (int op2_k = 0; op2_k < {d}; op2_k++) arg{i}_vec[{j}][op2_k] = arg{i}_c[{} + op2_k];",
                                    j * d
                                );
                            }
                        }
                        call.push(format!("(void *)arg{i}_cv"));
                        continue;
                    }
                }
                call.push(format!("(void *)arg{i}_vec"));
            }
        }
    }
    let call = around.wrap(&format!("{}({})", sig.kernel.name(), call.join(", ")));
    if by_colour {
        let _ = writeln!(
            s,
            "    for (int op2_c = 0; op2_c < op2_ncol; op2_c++) {{\n      \
             if (op2_col == op2_c) {call};\n      barrier(CLK_LOCAL_MEM_FENCE);\n    }}"
        );
    } else {
        let _ = writeln!(s, "    if (op2_active) {call};");
        let privates: Vec<usize> = (0..sig.args.len())
            .filter(|&i| b.private_increment(sig, i))
            .collect();
        if !privates.is_empty() {
            s.push_str(
                "    for (int op2_c = 0; op2_c < op2_ncol; op2_c++) {\n      if (op2_col == op2_c) {\n",
            );
            for i in privates {
                let a = &sig.args[i];
                let k = b.arg_staging[i].expect("indirect args are staged");
                let entries: Vec<(usize, usize)> = match a.kind {
                    ArgKind::Indirect { index, .. } => vec![(index, 0)],
                    ArgKind::Row { arity, .. } => (0..arity).map(|j| (j, j * a.dim)).collect(),
                    _ => unreachable!("only indirect args increment privately"),
                };
                for (entry, off) in entries {
                    let _ = writeln!(
                        s,
                        "        {{ __local {t} *op2_d = &{}; for (int op2_k = 0; op2_k < {d}; op2_k++) op2_d[op2_k] += arg{i}_l[{off} + op2_k]; }}",
                        local(k, entry),
                        t = a.dtype.c_name(),
                        d = a.dim
                    );
                }
            }
            s.push_str("      }\n      barrier(CLK_LOCAL_MEM_FENCE);\n    }\n");
        }
    }
    s.push_str("  }\n  barrier(CLK_LOCAL_MEM_FENCE);\n");
    for (k, st) in b.stagings.iter().enumerate() {
        let (dim, src) = (st.dim, st.source_arg);
        let target =
            format!("arg{src}[(size_t)op2_s{k}_map[op2_k / {dim}] * {dim} + op2_k % {dim}]");
        let op = match st.mode {
            StagingMode::Read => continue,
            StagingMode::Increment => "+=",
            StagingMode::ReadWrite => "=",
        };
        let _ = writeln!(
            s,
            "  for (int op2_k = op2_lid; op2_k < op2_s{k}_n * {dim}; op2_k += op2_lsize) \
             {target} {op} op2_s{k}[op2_k];"
        );
    }
    emit_reduction_finish(s, sig, "op2_slot", tree);
    s.push_str("}\n");
    order
}

#[cfg(test)]
mod tests {
    use super::*;
    use op2_core::{ArgSig, ConstSig, Kernel};

    #[test]
    fn rewrites_definition_and_prototype_only() {
        let src = "/* inc(x) */ void inc(double *a, const double *b);\n\
                   void inc(double *a, const double *b) { a[0] += b[0]; /* inc( */ }";
        let out = rewrite_params(
            src,
            "inc",
            &[
                "__local double *a".into(),
                "__global const double *b".into(),
            ],
        )
        .unwrap();
        assert_eq!(
            out.matches("inc(__local double *a, __global const double *b)")
                .count(),
            2,
            "{out}"
        );
        assert!(out.contains("/* inc(x) */") && out.contains("/* inc( */"));
        assert!(rewrite_params("void other(double *a) {}", "inc", &[]).is_none());
    }

    #[test]
    fn consts_are_exact_literals() {
        assert_eq!(format_values(DType::F64, &1.4f64.to_ne_bytes()), ["1.4"]);
        assert_eq!(format_values(DType::F32, &0.1f32.to_ne_bytes()), ["0.1f"]);
        assert_eq!(
            format_values(DType::I32, &i32::MIN.to_ne_bytes()),
            ["(-2147483647 - 1)"]
        );
        assert_eq!(format_values(DType::U64, &7u64.to_ne_bytes()), ["7UL"]);
        let v: f64 = format_values(DType::F64, &(1.0f64 / 3.0).to_ne_bytes())[0]
            .parse()
            .unwrap();
        assert_eq!(v, 1.0 / 3.0);
    }

    #[test]
    fn planned_increment_loop_accumulates_privately() {
        let k = Kernel::new(
            "flux",
            "void flux(const double *x, double *r0, double *r1) { r0[0] += x[0]; r1[0] -= x[0]; }",
        )
        .unwrap();
        let inc = |index| ArgSig {
            kind: ArgKind::Indirect {
                map: 0,
                arity: 2,
                index,
            },
            dtype: DType::F64,
            dim: 1,
            access: Access::Inc,
        };
        let sig = LoopSignature {
            kernel: k,
            args: vec![
                ArgSig {
                    kind: ArgKind::Direct,
                    dtype: DType::F64,
                    dim: 1,
                    access: Access::Read,
                },
                inc(0),
                inc(1),
            ],
            consts: vec![ConstSig {
                name: "gam".into(),
                dtype: DType::F64,
                dim: 1,
            }],
            n_maps: 1,
        };
        let blocks = BlockLayout {
            stagings: vec![StagingLayout {
                dtype: DType::F64,
                dim: 1,
                entries: vec![0, 1],
                wide_indices: false,
                mode: StagingMode::Increment,
                source_arg: 1,
            }],
            arg_staging: vec![None, Some(0), Some(0)],
        };
        let u = OpenClCodegen::default()
            .emit(
                &sig,
                &[&1.4f64.to_ne_bytes()],
                Some(&blocks),
                ArgPassing::Qualified,
            )
            .unwrap();
        let src = &u.unit.source;
        assert!(src.contains("__constant double gam = 1.4;"));
        assert!(src.contains("void flux(__global const double * x, double * r0, double * r1) {"));
        assert!(src.contains("op2_s0[op2_k] = 0;"));
        assert!(src.contains("+= op2_s0[op2_k];"));
        assert!(!blocks.kernel_by_colour(&sig));
        assert_eq!(
            u.params
                .iter()
                .filter(|p| matches!(p, StubParam::Data(_)))
                .count(),
            3
        );
        assert_eq!(u.params.last(), Some(&StubParam::Shared));
    }
}
