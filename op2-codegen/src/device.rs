//! What the device dialects (OpenCL C and CUDA) share: the stub parameters and the stubs themselves
//! (planned loops' block layouts are in `layout.rs`), written once against a [`Dialect`] that spells work-item
//! ids, barriers, address spaces and kernel calls. Loops through maps run one plan block per
//! work-group (thread block): indirect data is staged into local (shared) memory, elements run on
//! work-items, increments are applied colour by colour, and the host launches block colours in
//! sequence (as in the OP2 paper). Direct loops run one element per work-item.

use crate::dialect::{
    ConstPassing, DEVICE_ENTRY, DeviceOptions, DeviceStub, Dialect, FINISH_ENTRY, HostRange,
};
use crate::emit::{const_symbol, kernel_symbol, reduction_args};
use crate::layout::{BlockLayout, StagingMode};
use op2_core::{Access, ArgKind, ArgSig, LoopSignature};
use std::fmt::Write;

/// Whether a planned loop of this layout runs with atomics at both levels
/// ([`DeviceOptions::block_atomics`]): asked for, the dialect has atomics, and only increments
/// modify staged data (anything else needs the kernel to run colour by colour). Then all of a
/// plan's blocks run in one launch: the host asks this too.
pub fn block_atomics(
    sig: &LoopSignature,
    b: &BlockLayout,
    d: &dyn Dialect,
    options: &DeviceOptions,
) -> bool {
    options.block_atomics && d.atomic_add().is_some() && !b.kernel_by_colour(sig)
}

/// One parameter of a generated device stub, in order; the backend sets them from this list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StubParam {
    /// `int`: first element (direct loops) or first element to run (planned loops).
    Start,
    /// `int`: one past the last element to run.
    End,
    /// `int`: position in the plan's block map of this launch's first block.
    BlockOffset,
    /// `int`: the first element planned (per-element plan arrays start there).
    PlanStart,
    /// `int`: one past the last element planned.
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
    /// `__local` bytes for staging (the plan's largest block). OpenCL only: CUDA stubs take their
    /// shared memory from the launch.
    Shared,
    /// `__local` bytes for work-group reductions (8 per work-item). OpenCL only.
    Scratch,
    /// `int*`: map slot `m`'s values, entry-major (entry `j` of element `e` at `j * rows + e`), so
    /// that neighbouring threads read neighbouring values.
    MapValues(usize),
    /// `int`: rows of map slot `m` (the stride of [`StubParam::MapValues`]).
    MapRows(usize),
    /// `int`: partial results to combine (the final reduction kernel's).
    PartialCount,
    /// `int`: elements each work-item runs ([`crate::HostRange::Chunks`]).
    Chunk,
    /// The buffer of Const `j` (`sig.consts[j]`'s values), where the dialect passes Consts as
    /// parameters ([`crate::ConstPassing::Params`]).
    Const(usize),
}

/// Bytes of private memory one work-item (thread) of a generated stub declares: the fixed-size
/// arrays of its own (`op2_*[N]`: reduction accumulators, private increments, private copies and
/// pointer arrays), found in the stub's text. Device limits on private memory are checked against
/// it: PoCL, for one, keeps a work-group's private arrays on one thread's stack, and a stub whose
/// work-group needs more than that stack crashes inside the driver. The user kernel's own locals
/// are not counted (they are not known).
pub fn private_bytes_per_item(stub: &str) -> usize {
    const TYPES: [(&str, usize); 6] = [
        ("double", 8),
        ("float", 4),
        ("int32_t", 4),
        ("uint32_t", 4),
        ("int64_t", 8),
        ("uint64_t", 8),
    ];
    let mut total = 0;
    for statement in stub.split([';', '{', '}']) {
        let statement = statement.trim();
        // A declaration `TYPE op2_name[N]` or `QUALIFIER TYPE *op2_name[N]`.
        let Some(open) = statement.find('[') else {
            continue;
        };
        if !statement.ends_with(']') {
            continue;
        }
        let Ok(count) = statement[open + 1..statement.len() - 1]
            .trim()
            .parse::<usize>()
        else {
            continue;
        };
        let head = statement[..open].trim_end();
        let Some(name_start) = head.rfind(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
        else {
            continue;
        };
        if !head[name_start + 1..].starts_with("op2_") {
            continue;
        }
        let before = head[..=name_start].trim_end();
        let size = if before.ends_with('*') {
            8
        } else {
            match TYPES.iter().find(|(t, _)| before.ends_with(t)) {
                Some(&(_, size)) => size,
                None => continue,
            }
        };
        total += count * size;
    }
    total
}

/// Declares each arg's buffer parameter, each reduction's partials and, where the dialect passes
/// Consts as parameters, each Const's buffer.
pub(crate) fn data_params(
    sig: &LoopSignature,
    d: &dyn Dialect,
    options: &DeviceOptions,
    decl: &mut Vec<String>,
    order: &mut Vec<StubParam>,
) {
    let g = d.global();
    for (i, a) in sig.args.iter().enumerate() {
        decl.push(format!("{g}{} *op2_arg{i}", a.dtype.c_name()));
        order.push(StubParam::Data(i));
    }
    for i in reduction_args(sig) {
        decl.push(format!(
            "{g}{} *op2_arg{i}_part",
            sig.args[i].dtype.c_name()
        ));
        order.push(StubParam::Partials(i));
    }
    if consts_as_params(d, options) {
        for (j, c) in sig.consts.iter().enumerate() {
            decl.push(format!(
                "{}{} *{}",
                d.constant(),
                c.dtype.c_name(),
                const_symbol(&c.name)
            ));
            order.push(StubParam::Const(j));
        }
    }
}

/// How many declarations [`data_params`] adds.
fn data_params_count(sig: &LoopSignature, d: &dyn Dialect, options: &DeviceOptions) -> usize {
    let consts = if consts_as_params(d, options) {
        sig.consts.len()
    } else {
        0
    };
    sig.args.len() + reduction_args(sig).len() + consts
}

/// Whether this unit passes Consts as parameters.
pub(crate) fn consts_as_params(d: &dyn Dialect, options: &DeviceOptions) -> bool {
    d.const_passing() == ConstPassing::Params && options.baked_consts.is_none()
}

/// The trailing arguments of the user kernel's call that carry Consts, where they are parameters.
fn const_args(sig: &LoopSignature, d: &dyn Dialect, options: &DeviceOptions) -> Vec<String> {
    if !consts_as_params(d, options) {
        return Vec::new();
    }
    sig.consts.iter().map(|c| const_symbol(&c.name)).collect()
}

/// Private accumulators of Global reductions: INC from zero (the host or the final kernel adds the
/// old value), MIN and MAX from the current value.
pub(crate) fn emit_reduction_init(s: &mut String, sig: &LoopSignature) {
    for i in reduction_args(sig) {
        let a = &sig.args[i];
        let _ = writeln!(s, "  {} op2_arg{i}_r[{}];", a.dtype.c_name(), a.dim);
        let init = if a.access == Access::Inc {
            "0".to_string()
        } else {
            format!("op2_arg{i}[op2_k]")
        };
        let _ = writeln!(
            s,
            "  for (int op2_k = 0; op2_k < {}; op2_k++) op2_arg{i}_r[op2_k] = {init};",
            a.dim
        );
    }
}

/// C expression combining `op2_x` (so far) and `op2_y` (next) under a reduction's access.
pub(crate) fn combine_expr(access: Access) -> &'static str {
    match access {
        Access::Min => "(op2_y < op2_x ? op2_y : op2_x)",
        Access::Max => "(op2_y > op2_x ? op2_y : op2_x)",
        _ => "(op2_x + op2_y)",
    }
}

/// Combines `input` (one value per work-item, of C type `t`) across the work-group through the
/// scratch memory `op2_scratch`, then work-item 0 runs `output(result)`. A tree (log2 steps, for
/// GPUs; needs `op2_p`, the power of two at or above the group size) or one work-item in order (one
/// barrier, for CPU devices). No barrier sits inside a loop unless `tree` is set (CPU
/// implementations such as PoCL run such loops far slower).
pub(crate) fn emit_group_combine(
    s: &mut String,
    d: &dyn Dialect,
    tree: bool,
    t: &str,
    access: Access,
    input: &str,
    output: impl FnOnce(&str) -> String,
) {
    let (sh, barrier) = (d.shared(), d.barrier());
    let combine = combine_expr(access);
    let _ = writeln!(
        s,
        "  {{\n    {sh}{t} *op2_r = ({sh}{t} *)op2_scratch;\n    \
         op2_r[op2_lid] = {input};\n    {barrier};"
    );
    if tree {
        let _ = writeln!(
            s,
            "    for (int op2_s = op2_p >> 1; op2_s > 0; op2_s >>= 1) {{\n      \
             if (op2_lid < op2_s && op2_lid + op2_s < op2_lsize) {{\n        \
             {t} op2_x = op2_r[op2_lid], op2_y = op2_r[op2_lid + op2_s];\n        \
             op2_r[op2_lid] = {combine};\n      }}\n      \
             {barrier};\n    }}\n    \
             if (op2_lid == 0) {{ {} }}",
            output("op2_r[0]")
        );
    } else {
        let _ = writeln!(
            s,
            "    if (op2_lid == 0) {{\n      {t} op2_x = op2_r[0];\n      \
             for (int op2_j = 1; op2_j < op2_lsize; op2_j++) {{ {t} op2_y = op2_r[op2_j]; op2_x = {combine}; }}\n      \
             {}\n    }}",
            output("op2_x")
        );
    }
    let _ = writeln!(s, "    {barrier};\n  }}");
}

/// Whether a flat stub (direct or atomics) of this loop combines its reductions into the
/// Globals atomically ([`DeviceOptions::atomic_reductions`]): asked for, the loop reduces, the
/// dialect has an atomic operation for each of its reductions, and no arg reaches a reduced
/// Global otherwise (a READ must see the value from before the loop, which blocks finishing
/// early would already have changed; a Global reduced two ways combines in the final kernel's
/// order). Such a unit has no final kernel.
pub fn atomic_reductions(
    sig: &LoopSignature,
    stub: &DeviceStub,
    d: &dyn Dialect,
    options: &DeviceOptions,
) -> bool {
    let reductions = reduction_args(sig);
    let class = |i: usize| sig.data.get(i).copied().unwrap_or(i);
    options.atomic_reductions
        && matches!(stub, DeviceStub::Direct | DeviceStub::Atomic)
        && !reductions.is_empty()
        && reductions.iter().all(|&i| {
            d.atomic_reduce(sig.args[i].access).is_some()
                && (0..sig.args.len())
                    .filter(|&j| class(j) == class(i))
                    .all(|j| reductions.contains(&j) && sig.args[j].access == sig.args[i].access)
        })
}

/// Combines each reduction accumulator across the work-group; work-item 0 writes the partial of
/// work-group `slot`, or with `atomic` combines it into the Global itself (components unrolled
/// or looped, see [`for_components`]).
pub(crate) fn emit_reduction_finish(
    s: &mut String,
    sig: &LoopSignature,
    slot: &str,
    tree: bool,
    d: &dyn Dialect,
    atomic: bool,
) {
    let reds = reduction_args(sig);
    if reds.is_empty() {
        return;
    }
    if tree {
        s.push_str("  int op2_p = 1;\n  while (op2_p < op2_lsize) op2_p <<= 1;\n");
    }
    let wide = d.wide();
    for i in reds {
        let a = &sig.args[i];
        for_components(s, a.dim, |s, k| {
            emit_group_combine(
                s,
                d,
                tree,
                a.dtype.c_name(),
                a.access,
                &format!("op2_arg{i}_r[{k}]"),
                |r| match d.atomic_reduce(a.access).filter(|_| atomic) {
                    Some(f) => format!("{f}(&op2_arg{i}[{k}], {r});"),
                    None => format!(
                        "op2_arg{i}_part[({wide})({slot}) * {dim} + {k}] = {r};",
                        dim = a.dim
                    ),
                },
            )
        });
    }
}

/// Most components of a reduction whose group combines are unrolled.
const UNROLLED_COMPONENTS: usize = 8;

/// Emits `body` once per component `0..dim` of a reduction, given the component's C expression:
/// unrolled for a few components (no barrier inside a loop, which CPU devices run far slower), a
/// loop for many (a Global of dim 100,000 would otherwise become megabytes of source).
pub(crate) fn for_components(s: &mut String, dim: usize, mut body: impl FnMut(&mut String, &str)) {
    if dim <= UNROLLED_COMPONENTS {
        for k in 0..dim {
            body(s, &k.to_string());
        }
    } else {
        let _ = writeln!(
            s,
            "  for (int op2_comp = 0; op2_comp < {dim}; op2_comp++) {{"
        );
        body(s, "op2_comp");
        s.push_str("  }\n");
    }
}

/// Statements around one kernel call: copies into private arrays before, and back after.
///
/// Args on one Dat reaching one value must see each other's writes, as pointers into one array
/// do on the host. So where some arg on a Dat modifies it (other than by increments only), the
/// copies of that Dat's args are matched at run time: a copy whose source another, earlier copy
/// already holds is not used, the kernel gets a pointer to the earlier one, and only copies that
/// no later one replaced are stored back. Increments alone need no matching: each copy starts at
/// zero and is added back.
#[derive(Default)]
pub(crate) struct Around {
    copies: Vec<PrivateCopy>,
}

/// One private copy of `n` values.
struct PrivateCopy {
    /// The data's class ([`LoopSignature::data`]): copies of one class may alias.
    class: usize,
    access: Access,
    n: usize,
    /// The copy's first value (`op2_arg3_c + 4`).
    copy: String,
    /// The pointer the kernel gets (`op2_arg3_cp`, `op2_arg3_cv[1]`).
    pointer: String,
    /// A pointer to the values copied.
    src: String,
}

impl Around {
    /// Gives arg `i` (of data class `class`) a private copy `op2_arg{i}_c` of the `n` values at
    /// `src`; returns its declarations and what the call passes.
    pub(crate) fn copy(
        &mut self,
        i: usize,
        class: usize,
        a: &ArgSig,
        n: usize,
        src: &str,
    ) -> (String, String) {
        let pointer = format!("op2_arg{i}_cp");
        self.copies.push(PrivateCopy {
            class,
            access: a.access,
            n,
            copy: format!("op2_arg{i}_c"),
            pointer: pointer.clone(),
            src: src.to_string(),
        });
        let t = a.dtype.c_name();
        (
            format!("{t} op2_arg{i}_c[{n}]; {t} *{pointer} = op2_arg{i}_c;"),
            pointer,
        )
    }

    /// Registers `copy` (declared by the caller, `n` values) of the values at `src`, handed to
    /// the kernel as `pointer`.
    fn copy_part(
        &mut self,
        class: usize,
        access: Access,
        copy: String,
        pointer: String,
        n: usize,
        src: String,
    ) {
        self.copies.push(PrivateCopy {
            class,
            access,
            n,
            copy,
            pointer,
            src,
        });
    }

    /// Whether the copies of `class` are matched by source (see the type's documentation).
    fn matched(&self, class: usize) -> bool {
        let of_class = || self.copies.iter().filter(|c| c.class == class);
        of_class().count() > 1
            && of_class().any(|c| c.access.writes())
            && !of_class().all(|c| c.access == Access::Inc)
    }

    /// Wraps `call` with the copies.
    pub(crate) fn wrap(&self, call: &str) -> String {
        if self.copies.is_empty() {
            return call.to_string();
        }
        let (mut pre, mut alias, mut post) = (String::new(), String::new(), String::new());
        let each =
            |n: usize, body: String| format!(" for (int op2_k = 0; op2_k < {n}; op2_k++) {body};");
        for (x, c) in self.copies.iter().enumerate() {
            let (copy, src, n) = (&c.copy, &c.src, c.n);
            let matched = self.matched(c.class);
            if c.access == Access::Inc && !matched {
                // An increment starts from zero and is added back, so that two args on the same
                // data each count.
                pre.push_str(&each(n, format!("({copy})[op2_k] = 0")));
                post.push_str(&each(n, format!("({src})[op2_k] += ({copy})[op2_k]")));
                continue;
            }
            pre.push_str(&each(n, format!("({copy})[op2_k] = ({src})[op2_k]")));
            if !matched {
                if c.access.writes() {
                    post.push_str(&each(n, format!("({src})[op2_k] = ({copy})[op2_k]")));
                }
                continue;
            }
            // The first earlier copy of the same values, if any, stands for this one.
            let earlier: Vec<&PrivateCopy> = self.copies[..x]
                .iter()
                .filter(|e| e.class == c.class)
                .collect();
            for (j, e) in earlier.iter().enumerate() {
                let _ = write!(
                    alias,
                    " {}if ({src} == {}) {} = {};",
                    if j > 0 { "else " } else { "" },
                    e.src,
                    c.pointer,
                    e.pointer
                );
            }
            post.push_str(&format!(
                " if ({} == {copy}){}",
                c.pointer,
                each(n, format!("({src})[op2_k] = ({copy})[op2_k]"))
            ));
        }
        format!("{{{pre}{alias} {call};{post} }}")
    }
}

/// Hands whole-row arg `i` (of `arity` rows, pointers already in `op2_arg{i}_vec`) to the kernel
/// as private copies: declares the copy and its row pointers (`op2_arg{i}_cv`), registers the copy
/// in and, where the arg modifies them, back with `around`, and returns what the call passes.
#[allow(clippy::too_many_arguments)]
fn row_private_copies(
    s: &mut String,
    around: &mut Around,
    d: &dyn Dialect,
    i: usize,
    class: usize,
    a: &ArgSig,
    arity: usize,
    indent: &str,
) -> String {
    let (t, dim) = (a.dtype.c_name(), a.dim);
    let _ = writeln!(
        s,
        "{indent}{t} op2_arg{i}_c[{}];\n{indent}{t} *op2_arg{i}_cv[{arity}];",
        arity * dim
    );
    for j in 0..arity {
        let _ = writeln!(
            s,
            "{indent}op2_arg{i}_cv[{j}] = op2_arg{i}_c + {};",
            j * dim
        );
        around.copy_part(
            class,
            a.access,
            format!("op2_arg{i}_c + {}", j * dim),
            format!("op2_arg{i}_cv[{j}]"),
            dim,
            format!("op2_arg{i}_vec[{j}]"),
        );
    }
    d.pass("", &format!("op2_arg{i}_cv"))
}

/// Largest row, in bytes, that a stub stages through shared memory: wider rows already fill
/// whole sectors when each thread reads its own.
const STAGED_ROW_BYTES: usize = 128;

/// Shared memory the staged rows of one thread may take, in bytes: at the 256 threads of a
/// direct launch a block then needs at most 48 KiB, what a launch may have without opting in.
const STAGED_BYTES_PER_THREAD: usize = 192;

/// A direct arg whose rows a flat stub stages through shared memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StagedRow {
    /// The arg.
    pub arg: usize,
    /// Elements from one row's start to the next in shared memory: the dim, or one more when
    /// the dim is even, so that the rows of neighbouring threads fall in different banks.
    pub pitch: usize,
}

/// The direct args whose rows the direct and atomics stubs stage through shared memory
/// ([`DeviceOptions::stage_direct_rows`]), in arg order.
///
/// Threads reading their own rows of a few values each read at a stride of the row, so every
/// load and store instruction of a warp touches the rows of all its threads: four 8-byte loads
/// of a 32-byte row fetch each sector four times, and stores write sectors in pieces. Staged,
/// a block's rows are read and written once each, consecutive threads on consecutive values.
/// Rows are staged when they have at least two values and at most 128 bytes, while a thread's
/// rows fit in 192 bytes (48 KiB for a block of 256), and only when no other arg of the loop
/// reaches the same data (a staged copy would not see that arg's writes, nor it the copy's).
/// Rows are read in unless the arg is WRITE (the kernel writes every value: device backends do
/// not even upload such a Dat) and written back unless it only reads.
pub fn staged_direct_rows(
    sig: &LoopSignature,
    d: &dyn Dialect,
    options: &DeviceOptions,
) -> Vec<StagedRow> {
    if !options.stage_direct_rows || d.local_memory_params() {
        return Vec::new();
    }
    let class = |i: usize| sig.data.get(i).copied().unwrap_or(i);
    let mut staged = Vec::new();
    let mut bytes = 0;
    for (i, a) in sig.args.iter().enumerate() {
        if a.kind != ArgKind::Direct || a.dim < 2 || a.dim * a.dtype.size() > STAGED_ROW_BYTES {
            continue;
        }
        if (0..sig.args.len()).any(|j| j != i && class(j) == class(i)) {
            continue;
        }
        let pitch = a.dim | 1;
        let row = pitch * a.dtype.size();
        if bytes + row > STAGED_BYTES_PER_THREAD {
            continue;
        }
        bytes += row;
        staged.push(StagedRow { arg: i, pitch });
    }
    staged
}

/// Shared memory a direct or atomics launch of `threads` threads needs for `staged`, the
/// loop's staged rows ([`staged_direct_rows`]): each area rounded up to 16 bytes, as the stub
/// lays them out.
pub fn direct_staging_bytes(sig: &LoopSignature, staged: &[StagedRow], threads: usize) -> usize {
    staged
        .iter()
        .map(|r| (r.pitch * sig.args[r.arg].dtype.size() * threads).next_multiple_of(16))
        .sum()
}

/// Lays the staged rows out in shared memory and copies the block's rows in, every thread of
/// the block taking part (so it comes before any thread leaves the element range), then waits.
fn emit_staged_rows_in(s: &mut String, sig: &LoopSignature, d: &dyn Dialect, staged: &[StagedRow]) {
    if staged.is_empty() {
        return;
    }
    let wide = d.wide();
    let _ = writeln!(
        s,
        "  const int op2_slid = {};\n  const int op2_slsize = {};\n  \
         const int op2_sfirst = op2_start + {} * op2_slsize;\n  \
         const int op2_srows = op2_end - op2_sfirst < op2_slsize ? op2_end - op2_sfirst : op2_slsize;\n  \
         char *op2_stage = op2_shared;",
        d.local_id(),
        d.local_size(),
        d.group_id()
    );
    for r in staged {
        let (i, p) = (r.arg, r.pitch);
        let a = &sig.args[i];
        let (t, dim) = (a.dtype.c_name(), a.dim);
        let _ = writeln!(
            s,
            "  {t} *op2_arg{i}_s = ({t} *)op2_stage;\n  \
             op2_stage += OP2_ROUND_UP({p} * {} * op2_slsize);",
            a.dtype.size()
        );
        if a.access != Access::Write {
            let _ = writeln!(
                s,
                "  for (int op2_w = op2_slid; op2_w < op2_srows * {dim}; op2_w += op2_slsize) \
                 op2_arg{i}_s[op2_w / {dim} * {p} + op2_w % {dim}] = op2_arg{i}[({wide})op2_sfirst * {dim} + op2_w];"
            );
        }
    }
    let _ = writeln!(s, "  {};", d.barrier());
}

/// After the kernel: waits for every thread, copies back the staged rows the kernel may have
/// changed, and waits again before reductions reuse the shared memory.
fn emit_staged_rows_out(
    s: &mut String,
    sig: &LoopSignature,
    d: &dyn Dialect,
    staged: &[StagedRow],
) {
    if staged.is_empty() {
        return;
    }
    let (wide, barrier) = (d.wide(), d.barrier());
    let _ = writeln!(s, "  {barrier};");
    for r in staged.iter().filter(|r| sig.args[r.arg].access.writes()) {
        let (i, p, dim) = (r.arg, r.pitch, sig.args[r.arg].dim);
        let _ = writeln!(
            s,
            "  for (int op2_w = op2_slid; op2_w < op2_srows * {dim}; op2_w += op2_slsize) \
             op2_arg{i}[({wide})op2_sfirst * {dim} + op2_w] = op2_arg{i}_s[op2_w / {dim} * {p} + op2_w % {dim}];"
        );
    }
    if !reduction_args(sig).is_empty() {
        let _ = writeln!(s, "  {barrier};");
    }
}

/// What the kernel gets for arg `i` when its rows are staged.
fn staged_row(staged: &[StagedRow], i: usize) -> Option<String> {
    staged
        .iter()
        .find(|r| r.arg == i)
        .map(|r| format!("op2_arg{i}_s + op2_slid * {}", r.pitch))
}

/// The head of a stub that runs one element per work-item over `op2_start..op2_end` (the direct
/// and atomics stubs): its parameters (with each map's values and row count when `maps`), the
/// reduction scratch, the work-item's element `op2_e`, the reduction accumulators and the
/// staged rows, copied in. Returns the parameters in order and the staged rows.
fn open_flat_stub(
    s: &mut String,
    sig: &LoopSignature,
    d: &dyn Dialect,
    options: &DeviceOptions,
    entry: &str,
    maps: bool,
) -> (Vec<StubParam>, Vec<StagedRow>) {
    let mut decls = vec![
        "const int op2_start".to_string(),
        "const int op2_end".into(),
    ];
    let mut params = vec![StubParam::Start, StubParam::End];
    data_params(sig, d, options, &mut decls, &mut params);
    if maps {
        for m in 0..sig.n_maps {
            decls.push(format!("{}const int *op2_map{m}", d.global()));
            decls.push(format!("const int op2_map{m}_rows"));
            params.extend([StubParam::MapValues(m), StubParam::MapRows(m)]);
        }
    }
    let reductions = !reduction_args(sig).is_empty();
    if reductions && d.local_memory_params() {
        decls.push(format!("{}char *op2_scratch", d.shared()));
        params.push(StubParam::Scratch);
    }
    let staged = staged_direct_rows(sig, d, options);
    s.push_str(&d.kernel_head(entry, &decls, reductions || !staged.is_empty()));
    if reductions {
        let _ = writeln!(
            s,
            "  const int op2_lid = {};\n  const int op2_lsize = {};",
            d.local_id(),
            d.local_size()
        );
        if !d.local_memory_params() {
            s.push_str("  char *op2_scratch = op2_shared;\n");
        }
    }
    let _ = writeln!(s, "  const int op2_e = op2_start + {};", d.global_id());
    emit_reduction_init(s, sig);
    emit_staged_rows_in(s, sig, d, &staged);
    (params, staged)
}

/// One element per work-item, straight from global memory; `private` hands the kernel private
/// copies (OpenCL's [`crate::ArgPassing::PrivateCopies`]).
pub(crate) fn emit_direct_stub(
    s: &mut String,
    sig: &LoopSignature,
    d: &dyn Dialect,
    options: &DeviceOptions,
) -> Vec<StubParam> {
    let (entry, private, tree) = (
        DEVICE_ENTRY,
        options.private_copies,
        options.tree_reductions,
    );
    let (order, staged) = open_flat_stub(s, sig, d, options, entry, false);
    let wide = d.wide();
    let mut around = Around::default();
    let mut call = Vec::new();
    for (i, a) in sig.args.iter().enumerate() {
        let src = match a.kind {
            ArgKind::Global if a.access.is_reduction() => {
                call.push(d.pass("", &format!("op2_arg{i}_r")));
                continue;
            }
            ArgKind::Direct if staged_row(&staged, i).is_some() => {
                call.push(d.pass("", &staged_row(&staged, i).unwrap_or_default()));
                continue;
            }
            ArgKind::Direct => format!("op2_arg{i} + ({wide})op2_e * {}", a.dim),
            _ => format!("op2_arg{i}"),
        };
        if private {
            let (decl, pointer) = around.copy(i, sig.data[i], a, a.dim, &src);
            let _ = writeln!(s, "  {decl}");
            call.push(d.pass("", &pointer));
        } else {
            call.push(d.pass(d.global(), &src));
        }
    }
    call.extend(const_args(sig, d, options));
    let call = format!("{}({})", kernel_symbol(sig.kernel.name()), call.join(", "));
    let _ = writeln!(s, "  if (op2_e < op2_end) {};", around.wrap(&call));
    emit_staged_rows_out(s, sig, d, &staged);
    let atomic = atomic_reductions(sig, &DeviceStub::Direct, d, options);
    emit_reduction_finish(s, sig, d.group_id(), tree, d, atomic);
    s.push_str("}\n");
    order
}

/// The block-local index (position in area `k`'s segment of the block) of map entry `entry` of
/// the current element `op2_e`.
fn local_index(b: &BlockLayout, d: &dyn Dialect, k: usize, entry: usize) -> String {
    let slot = b.stagings[k]
        .entries
        .iter()
        .position(|&x| x == entry)
        .expect("the plan stages every entry an arg reaches");
    let wide = d.wide();
    format!("op2_s{k}_local[({wide}){slot} * op2_plan_len + (op2_e - op2_plan_start)]")
}

/// The staged item of map entry `entry` of the current element `op2_e` in staging area `k`.
fn staged_item(b: &BlockLayout, d: &dyn Dialect, k: usize, entry: usize) -> String {
    let (wide, dim) = (d.wide(), b.stagings[k].dim);
    format!("op2_s{k}[({wide}){} * {dim}]", local_index(b, d, k, entry))
}

/// Map entry `entry` of the current element `op2_e` in area `k`, left in global memory
/// ([`StagingMode::Global`]): arg `i`'s buffer at the plan's local-to-global item.
fn global_item(b: &BlockLayout, d: &dyn Dialect, k: usize, entry: usize, i: usize) -> String {
    let (wide, dim) = (d.wide(), b.stagings[k].dim);
    format!(
        "op2_arg{i}[({wide})op2_s{k}_map[{}] * {dim}]",
        local_index(b, d, k, entry)
    )
}

/// The item of map entry `entry` of the current element for arg `i` of area `k`: staged, or in
/// global memory ([`StagingMode::Global`]).
fn arg_item(b: &BlockLayout, d: &dyn Dialect, k: usize, entry: usize, i: usize) -> String {
    if b.stagings[k].mode == StagingMode::Global {
        global_item(b, d, k, entry, i)
    } else {
        staged_item(b, d, k, entry)
    }
}

/// The address space of area `k`'s items (see [`arg_item`]).
fn area_space<'d>(b: &BlockLayout, d: &'d dyn Dialect, k: usize) -> &'d str {
    if b.stagings[k].mode == StagingMode::Global {
        d.global()
    } else {
        d.shared()
    }
}

/// One plan block per work-group: stage in, run the elements (colour by colour where they modify
/// staged data), apply private increments colour by colour, stage out, reduce.
pub(crate) fn emit_planned_stub(
    s: &mut String,
    sig: &LoopSignature,
    b: &BlockLayout,
    d: &dyn Dialect,
    options: &DeviceOptions,
) -> Vec<StubParam> {
    let barrier = d.barrier();
    // The dialect's atomic addition where blocks run with atomics at both levels.
    let atomic_add = if block_atomics(sig, b, d, options) {
        d.atomic_add()
    } else {
        None
    };
    let (decl, order) = planned_params(sig, b, d, options);
    s.push_str(&d.kernel_head(DEVICE_ENTRY, &decl, true));
    emit_stage_in(s, sig, b, d, atomic_add.is_some());
    emit_reduction_init(s, sig);
    // Every work-item runs the same number of rounds, so all of them reach every barrier.
    s.push_str(
        "  for (int op2_i0 = 0; op2_i0 < op2_nelem; op2_i0 += op2_lsize) {\n    \
         const int op2_i = op2_i0 + op2_lid;\n    \
         const int op2_e = op2_first + op2_i;\n    \
         const int op2_active = op2_i < op2_nelem && op2_e >= op2_start && op2_e < op2_end;\n    \
         const int op2_col = op2_active ? (int)op2_element_colours[op2_e - op2_plan_start] : -1;\n",
    );
    let (mut call, around) = emit_element_args(s, sig, b, d, options.private_copies);
    call.extend(const_args(sig, d, options));
    let call = around.wrap(&format!(
        "{}({})",
        kernel_symbol(sig.kernel.name()),
        call.join(", ")
    ));
    emit_element_call(s, sig, b, d, &call, atomic_add);
    let _ = writeln!(s, "  }}\n  {barrier};");
    emit_stage_out(s, b, d, atomic_add);
    emit_reduction_finish(s, sig, "op2_slot", options.tree_reductions, d, false);
    s.push_str("}\n");
    order
}

/// The planned stub's parameters (declarations, and what each one is): the range and the plan,
/// the data, each staging area's items, offsets, sizes and local indices, and local memory
/// where the dialect takes it as parameters.
fn planned_params(
    sig: &LoopSignature,
    b: &BlockLayout,
    d: &dyn Dialect,
    options: &DeviceOptions,
) -> (Vec<String>, Vec<StubParam>) {
    let g = d.global();
    let mut decl: Vec<String> = vec![
        "const int op2_start".into(),
        "const int op2_end".into(),
        "const int op2_block_offset".into(),
        "const int op2_plan_start".into(),
        "const int op2_plan_end".into(),
        format!("{g}const uint *op2_block_map"),
        format!("{g}const uint *op2_block_offsets"),
        format!("{g}const uint *op2_block_lengths"),
        format!("{g}const uint *op2_element_colours"),
        format!("{g}const uint *op2_block_ncolours"),
    ];
    let mut order = vec![
        StubParam::Start,
        StubParam::End,
        StubParam::BlockOffset,
        StubParam::PlanStart,
        StubParam::PlanEnd,
        StubParam::BlockMap,
        StubParam::BlockOffsets,
        StubParam::BlockLengths,
        StubParam::ElementColours,
        StubParam::BlockElementColours,
    ];
    data_params(sig, d, options, &mut decl, &mut order);
    for (k, st) in b.stagings.iter().enumerate() {
        let local_t = if st.wide_indices { "uint" } else { "ushort" };
        decl.push(format!("{g}const int *op2_s{k}_items"));
        decl.push(format!("{g}const uint *op2_s{k}_offsets"));
        decl.push(format!("{g}const uint *op2_s{k}_sizes"));
        decl.push(format!("{g}const {local_t} *op2_s{k}_local"));
        order.extend([
            StubParam::StagingItems(k),
            StubParam::StagingOffsets(k),
            StubParam::StagingSizes(k),
            StubParam::StagingLocal(k),
        ]);
    }
    let reductions = !reduction_args(sig).is_empty();
    if d.local_memory_params() {
        decl.push(format!("{}char *op2_shared", d.shared()));
        order.push(StubParam::Shared);
        if reductions {
            decl.push(format!("{}char *op2_scratch", d.shared()));
            order.push(StubParam::Scratch);
        }
    }
    (decl, order)
}

/// The block's start: which block this work-group runs, its elements, and each staging area
/// filled from global memory (zeros for increments), then a barrier.
fn emit_stage_in(
    s: &mut String,
    sig: &LoopSignature,
    b: &BlockLayout,
    d: &dyn Dialect,
    atomics: bool,
) {
    let (g, sh, wide, barrier) = (d.global(), d.shared(), d.wide(), d.barrier());
    let reductions = !reduction_args(sig).is_empty();
    // Blocks of all colours in one launch run in the plan's own order, neighbours beside
    // neighbours (the block map orders them by colour).
    let block = if atomics {
        "(uint)op2_slot"
    } else {
        "op2_block_map[op2_slot]"
    };
    let _ = writeln!(
        s,
        "  const int op2_lid = {};\n  const int op2_lsize = {};\n  \
         const int op2_slot = op2_block_offset + {};\n  \
         const uint op2_b = {block};\n  \
         const int op2_first = op2_block_offsets[op2_b];\n  \
         const int op2_nelem = op2_block_lengths[op2_b];\n  \
         const int op2_ncol = op2_block_ncolours[op2_b];\n  \
         const int op2_plan_len = op2_plan_end - op2_plan_start;\n  int op2_bytes = 0;",
        d.local_id(),
        d.local_size(),
        d.group_id()
    );
    // Staging areas, laid out as the plan counted them (each rounded up to 16 bytes).
    for (k, st) in b.stagings.iter().enumerate() {
        let t = st.dtype.c_name();
        let (dim, src) = (st.dim, st.source_arg);
        let _ = writeln!(
            s,
            "  {g}const int *op2_s{k}_map = op2_s{k}_items + op2_s{k}_offsets[op2_b];"
        );
        if st.mode == StagingMode::Global {
            continue;
        }
        let _ = writeln!(
            s,
            "  const int op2_s{k}_n = op2_s{k}_sizes[op2_b];\n  \
             {sh}{t} *op2_s{k} = ({sh}{t} *)(op2_shared + op2_bytes);\n  \
             op2_bytes += OP2_ROUND_UP(op2_s{k}_n * {dim} * (int)sizeof({t}));"
        );
        let fill = match st.mode {
            StagingMode::Increment => "0".to_string(),
            _ => {
                format!("op2_arg{src}[({wide})op2_s{k}_map[op2_k / {dim}] * {dim} + op2_k % {dim}]")
            }
        };
        let _ = writeln!(
            s,
            "  for (int op2_k = op2_lid; op2_k < op2_s{k}_n * {dim}; op2_k += op2_lsize) \
             op2_s{k}[op2_k] = {fill};"
        );
    }
    if reductions && !d.local_memory_params() {
        // Reduction scratch follows this block's staging: the launch gives the plan's largest
        // staging plus 8 bytes per thread.
        s.push_str("  char *op2_scratch = op2_shared + op2_bytes;\n");
    }
    let _ = writeln!(s, "  {barrier};");
}

/// Each arg as the element's kernel call passes it (staged items, private increments, private
/// copies), declaring what the call needs; returns the call's arguments and what goes around it.
fn emit_element_args(
    s: &mut String,
    sig: &LoopSignature,
    b: &BlockLayout,
    d: &dyn Dialect,
    private_copies: bool,
) -> (Vec<String>, Around) {
    let (g, wide) = (d.global(), d.wide());
    let mut call = Vec::new();
    let mut around = Around::default();
    for (i, a) in sig.args.iter().enumerate() {
        let t = a.dtype.c_name();
        let private = b.private_increment(sig, i);
        match a.kind {
            // Direct Dats always (INC ones too); Globals unless reduced (those have accumulators).
            ArgKind::Direct | ArgKind::Global
                if private_copies && !(a.kind == ArgKind::Global && a.access.is_reduction()) =>
            {
                let src = match a.kind {
                    ArgKind::Direct => format!("op2_arg{i} + ({wide})op2_e * {}", a.dim),
                    _ => format!("op2_arg{i}"),
                };
                let (decl, pointer) = around.copy(i, sig.data[i], a, a.dim, &src);
                let _ = writeln!(s, "    {decl}");
                call.push(d.pass("", &pointer));
            }
            ArgKind::Direct => {
                call.push(d.pass(g, &format!("op2_arg{i} + ({wide})op2_e * {}", a.dim)))
            }
            ArgKind::Global if a.access.is_reduction() => {
                call.push(d.pass("", &format!("op2_arg{i}_r")))
            }
            ArgKind::Global => call.push(d.pass(g, &format!("op2_arg{i}"))),
            ArgKind::Indirect { index, .. } => {
                let k = b.arg_staging[i].expect("indirect args are staged");
                if private {
                    let _ = writeln!(
                        s,
                        "    {t} op2_arg{i}_l[{d}];\n    for (int op2_k = 0; op2_k < {d}; op2_k++) op2_arg{i}_l[op2_k] = 0;",
                        d = a.dim
                    );
                    call.push(d.pass("", &format!("op2_arg{i}_l")));
                } else {
                    // An inactive work-item points at the area's (or buffer's) start: it never
                    // calls the kernel, but the pointer must be valid to form.
                    let (item, space) = (arg_item(b, d, k, index, i), area_space(b, d, k));
                    let base = if b.in_global_memory(i) {
                        format!("op2_arg{i}")
                    } else {
                        format!("op2_s{k}")
                    };
                    let _ = writeln!(
                        s,
                        "    {space}{t} *op2_arg{i}_p = {base};\n    if (op2_active) op2_arg{i}_p = &{item};"
                    );
                    if private_copies {
                        let (decl, pointer) =
                            around.copy(i, sig.data[i], a, a.dim, &format!("op2_arg{i}_p"));
                        let _ = writeln!(s, "    {decl}");
                        call.push(d.pass("", &pointer));
                    } else {
                        call.push(d.pass(space, &format!("op2_arg{i}_p")));
                    }
                }
            }
            ArgKind::Row { arity, .. } => {
                let k = b.arg_staging[i].expect("indirect args are staged");
                if private {
                    let _ = writeln!(
                        s,
                        "    {t} op2_arg{i}_l[{n}];\n    for (int op2_k = 0; op2_k < {n}; op2_k++) op2_arg{i}_l[op2_k] = 0;\n    {t} *op2_arg{i}_vec[{arity}];",
                        n = arity * a.dim
                    );
                    for j in 0..arity {
                        let _ =
                            writeln!(s, "    op2_arg{i}_vec[{j}] = op2_arg{i}_l + {};", j * a.dim);
                    }
                } else {
                    let space = area_space(b, d, k);
                    let _ = writeln!(
                        s,
                        "    {space}{t} *op2_arg{i}_vec[{arity}];\n    if (op2_active) {{"
                    );
                    for j in 0..arity {
                        let _ = writeln!(
                            s,
                            "      op2_arg{i}_vec[{j}] = &{};",
                            arg_item(b, d, k, j, i)
                        );
                    }
                    s.push_str("    }\n");
                    if private_copies {
                        call.push(row_private_copies(
                            s,
                            &mut around,
                            d,
                            i,
                            sig.data[i],
                            a,
                            arity,
                            "    ",
                        ));
                        continue;
                    }
                }
                call.push(d.pass("", &format!("op2_arg{i}_vec")));
            }
        }
    }
    (call, around)
}

/// The element's kernel call: colour by colour where the kernel modifies staged data, else at
/// once, its private increments then added into the staged items (atomically with block
/// atomics, else colour by colour).
fn emit_element_call(
    s: &mut String,
    sig: &LoopSignature,
    b: &BlockLayout,
    d: &dyn Dialect,
    call: &str,
    atomic_add: Option<&str>,
) {
    let (sh, barrier) = (d.shared(), d.barrier());
    let by_colour = b.kernel_by_colour(sig);
    if by_colour {
        let _ = writeln!(
            s,
            "    for (int op2_c = 0; op2_c < op2_ncol; op2_c++) {{\n      \
             if (op2_col == op2_c) {call};\n      {barrier};\n    }}"
        );
    } else {
        let _ = writeln!(s, "    if (op2_active) {call};");
        let privates: Vec<usize> = (0..sig.args.len())
            .filter(|&i| b.private_increment(sig, i))
            .collect();
        if !privates.is_empty() {
            // Each private increment added into its staged item: atomically as soon as the
            // element has it (block atomics), else colour by colour.
            let mut adds = String::new();
            for &i in &privates {
                let a = &sig.args[i];
                let k = b.arg_staging[i].expect("indirect args are staged");
                for (entry, off) in increment_entries(a) {
                    let value = format!("op2_arg{i}_l[{off} + op2_k]");
                    let add = match atomic_add {
                        Some(f) => format!("{f}(&op2_d[op2_k], {value})"),
                        None => format!("op2_d[op2_k] += {value}"),
                    };
                    let _ = writeln!(
                        adds,
                        "        {{ {sh}{t} *op2_d = &{}; for (int op2_k = 0; op2_k < {d}; op2_k++) {add}; }}",
                        staged_item(b, d, k, entry),
                        t = a.dtype.c_name(),
                        d = a.dim
                    );
                }
            }
            if atomic_add.is_some() {
                let _ = write!(s, "    if (op2_active) {{\n{adds}    }}\n");
            } else {
                let _ = write!(
                    s,
                    "    for (int op2_c = 0; op2_c < op2_ncol; op2_c++) {{\n      if (op2_col == op2_c) {{\n\
                     {adds}      }}\n      {barrier};\n    }}\n"
                );
            }
        }
    }
}

/// The staged areas written back: increments added (atomically where blocks of every colour run
/// at once), read-write items stored; read-only areas left.
fn emit_stage_out(s: &mut String, b: &BlockLayout, d: &dyn Dialect, atomic_add: Option<&str>) {
    let wide = d.wide();
    for (k, st) in b.stagings.iter().enumerate() {
        let (dim, src) = (st.dim, st.source_arg);
        let target =
            format!("op2_arg{src}[({wide})op2_s{k}_map[op2_k / {dim}] * {dim} + op2_k % {dim}]");
        let store = match (st.mode, atomic_add) {
            (StagingMode::Read | StagingMode::Global, _) => continue,
            // Blocks of every colour run at once: two may add to one item.
            (StagingMode::Increment, Some(add)) => format!("{add}(&{target}, op2_s{k}[op2_k])"),
            (StagingMode::Increment, None) => format!("{target} += op2_s{k}[op2_k]"),
            (StagingMode::ReadWrite, _) => format!("{target} = op2_s{k}[op2_k]"),
        };
        let _ = writeln!(
            s,
            "  for (int op2_k = op2_lid; op2_k < op2_s{k}_n * {dim}; op2_k += op2_lsize) {store};"
        );
    }
}

/// The map entries an indirect INC arg adds to, each with its offset in the arg's private
/// increments (`op2_arg{i}_l`).
fn increment_entries(a: &ArgSig) -> Vec<(usize, usize)> {
    match a.kind {
        ArgKind::Indirect { index, .. } => vec![(index, 0)],
        ArgKind::Row { arity, .. } => (0..arity).map(|j| (j, j * a.dim)).collect(),
        _ => unreachable!("only indirect args increment privately"),
    }
}

/// One element per work-item straight from global memory; indirect increments go to a private
/// copy that is added atomically after the call (dialects with [`Dialect::atomic_add`]).
pub(crate) fn emit_atomic_stub(
    s: &mut String,
    sig: &LoopSignature,
    d: &dyn Dialect,
    options: &DeviceOptions,
) -> Vec<StubParam> {
    let atomic_add = d
        .atomic_add()
        .expect("the atomics stub is emitted for dialects that have atomics");
    let (g, wide) = (d.global(), d.wide());
    let (params, staged) = open_flat_stub(s, sig, d, options, DEVICE_ENTRY, true);
    s.push_str("  if (op2_e < op2_end) {\n");
    let target = |map: usize, entry: usize| {
        format!("({wide})op2_map{map}[({wide}){entry} * op2_map{map}_rows + op2_e]")
    };
    let mut call = Vec::new();
    let mut atomics = String::new();
    for (i, a) in sig.args.iter().enumerate() {
        let (t, dim) = (a.dtype.c_name(), a.dim);
        let increments = a.access == Access::Inc;
        match a.kind {
            ArgKind::Direct => call.push(match staged_row(&staged, i) {
                Some(row) => d.pass("", &row),
                None => d.pass(g, &format!("op2_arg{i} + ({wide})op2_e * {dim}")),
            }),
            ArgKind::Global if a.access.is_reduction() => {
                call.push(d.pass("", &format!("op2_arg{i}_r")))
            }
            ArgKind::Global => call.push(d.pass(g, &format!("op2_arg{i}"))),
            ArgKind::Indirect { map, index, .. } if increments => {
                let _ = writeln!(
                    s,
                    "    {t} op2_arg{i}_l[{dim}];\n    for (int op2_k = 0; op2_k < {dim}; op2_k++) op2_arg{i}_l[op2_k] = 0;"
                );
                call.push(d.pass("", &format!("op2_arg{i}_l")));
                let _ = writeln!(
                    atomics,
                    "    for (int op2_k = 0; op2_k < {dim}; op2_k++) {atomic_add}(&op2_arg{i}[{} * {dim} + op2_k], op2_arg{i}_l[op2_k]);",
                    target(map, index)
                );
            }
            ArgKind::Indirect { map, index, .. } => {
                call.push(d.pass(g, &format!("op2_arg{i} + {} * {dim}", target(map, index))))
            }
            ArgKind::Row { map, arity } => {
                if increments {
                    let n = arity * dim;
                    let _ = writeln!(
                        s,
                        "    {t} *op2_arg{i}_vec[{arity}];\n    {t} op2_arg{i}_l[{n}];\n    for (int op2_k = 0; op2_k < {n}; op2_k++) op2_arg{i}_l[op2_k] = 0;"
                    );
                    for j in 0..arity {
                        let _ =
                            writeln!(s, "    op2_arg{i}_vec[{j}] = op2_arg{i}_l + {};", j * dim);
                        let _ = writeln!(
                            atomics,
                            "    for (int op2_k = 0; op2_k < {dim}; op2_k++) {atomic_add}(&op2_arg{i}[{} * {dim} + op2_k], op2_arg{i}_l[{} + op2_k]);",
                            target(map, j),
                            j * dim
                        );
                    }
                } else {
                    let _ = writeln!(s, "    {g}{t} *op2_arg{i}_vec[{arity}];");
                    for j in 0..arity {
                        let _ = writeln!(
                            s,
                            "    op2_arg{i}_vec[{j}] = op2_arg{i} + {} * {dim};",
                            target(map, j)
                        );
                    }
                }
                call.push(d.pass("", &format!("op2_arg{i}_vec")));
            }
        }
    }
    call.extend(const_args(sig, d, options));
    let _ = writeln!(
        s,
        "    {}({});",
        kernel_symbol(sig.kernel.name()),
        call.join(", ")
    );
    s.push_str(&atomics);
    s.push_str("  }\n");
    emit_staged_rows_out(s, sig, d, &staged);
    let atomic = atomic_reductions(sig, &DeviceStub::Atomic, d, options);
    emit_reduction_finish(s, sig, d.group_id(), true, d, atomic);
    s.push_str("}\n");
    params
}

/// The host scheme for CPU devices: one work-item per work-group runs a whole chunk or plan block
/// of elements in turn (a CPU runs work-items of a group one after another anyway, so wide groups
/// only add staging and barriers), every arg straight from global memory through the entry-major
/// maps. A block of a coloured plan shares no item it modifies with the blocks launched beside it,
/// so increments go straight to their targets, as on the host. Reductions accumulate privately and
/// each work-item writes its own partial (slot: the block's place in the plan, or the chunk).
pub(crate) fn emit_host_stub(
    s: &mut String,
    sig: &LoopSignature,
    range: HostRange,
    d: &dyn Dialect,
    options: &DeviceOptions,
) -> Vec<StubParam> {
    let (g, wide) = (d.global(), d.wide());
    let mut decls = vec![
        "const int op2_start".to_string(),
        "const int op2_end".into(),
    ];
    let mut params = vec![StubParam::Start, StubParam::End];
    match range {
        HostRange::Chunks => {
            decls.push("const int op2_chunk".into());
            params.push(StubParam::Chunk);
        }
        HostRange::Blocks => {
            decls.extend([
                "const int op2_block_offset".to_string(),
                format!("{g}const uint *op2_block_map"),
                format!("{g}const uint *op2_block_offsets"),
                format!("{g}const uint *op2_block_lengths"),
            ]);
            params.extend([
                StubParam::BlockOffset,
                StubParam::BlockMap,
                StubParam::BlockOffsets,
                StubParam::BlockLengths,
            ]);
        }
    }
    data_params(sig, d, options, &mut decls, &mut params);
    // `restrict` on every buffer no other parameter reaches while either writes: the compiler
    // may then keep values in registers across the kernel's stores and vectorise the loop.
    let base = decls.len() - data_params_count(sig, d, options);
    for (i, a) in sig.args.iter().enumerate() {
        let shared_and_written = sig.args.iter().enumerate().any(|(j, b)| {
            j != i && sig.data[j] == sig.data[i] && (a.access.writes() || b.access.writes())
        });
        if !shared_and_written {
            let decl = &mut decls[base + i];
            *decl = decl.replace(" *op2_arg", " *restrict op2_arg");
        }
    }
    for m in 0..sig.n_maps {
        decls.push(format!("{g}const int *restrict op2_map{m}"));
        decls.push(format!("const int op2_map{m}_rows"));
        params.extend([StubParam::MapValues(m), StubParam::MapRows(m)]);
    }
    s.push_str(&d.kernel_head(DEVICE_ENTRY, &decls, false));
    // Bounds in 64 bits: a chunk's end may pass `int` on the last work-item of a huge set.
    match range {
        HostRange::Chunks => {
            let _ = writeln!(
                s,
                "  const int op2_slot = {};\n  \
                 const {wide} op2_first = (({wide})op2_start) + ({wide})op2_slot * op2_chunk;\n  \
                 const {wide} op2_chunk_end = op2_first + op2_chunk;\n  \
                 const {wide} op2_last = op2_chunk_end < op2_end ? op2_chunk_end : op2_end;",
                d.group_id()
            );
        }
        HostRange::Blocks => {
            let _ = writeln!(
                s,
                "  const int op2_slot = op2_block_offset + {};\n  \
                 const uint op2_b = op2_block_map[op2_slot];\n  \
                 {wide} op2_first = op2_block_offsets[op2_b];\n  \
                 {wide} op2_last = op2_first + op2_block_lengths[op2_b];\n  \
                 if (op2_first < op2_start) op2_first = op2_start;\n  \
                 if (op2_last > op2_end) op2_last = op2_end;",
                d.group_id()
            );
        }
    }
    emit_reduction_init(s, sig);
    // Elements that may run as SIMD lanes (see `simd_reads_only`: lanes that increment
    // through maps could hit one element): clang, which CPU OpenCL implementations such as
    // PoCL compile with, then vectorises the loop, gathers and all.
    if crate::batch::simd_reads_only(sig) {
        s.push_str("  #pragma clang loop vectorize(assume_safety)\n");
    }
    let _ = writeln!(
        s,
        "  for ({wide} op2_e = op2_first; op2_e < op2_last; op2_e++) {{"
    );
    let target = |map: usize, entry: usize| {
        format!("({wide})op2_map{map}[({wide}){entry} * op2_map{map}_rows + op2_e]")
    };
    let private_copies = options.private_copies;
    let mut around = Around::default();
    let mut call = Vec::new();
    for (i, a) in sig.args.iter().enumerate() {
        let (t, dim) = (a.dtype.c_name(), a.dim);
        let src = match a.kind {
            ArgKind::Global if a.access.is_reduction() => {
                call.push(d.pass("", &format!("op2_arg{i}_r")));
                continue;
            }
            ArgKind::Global => format!("op2_arg{i}"),
            ArgKind::Direct => format!("op2_arg{i} + op2_e * {dim}"),
            ArgKind::Indirect { map, index, .. } => {
                format!("op2_arg{i} + {} * {dim}", target(map, index))
            }
            ArgKind::Row { map, arity } => {
                let _ = writeln!(s, "    {g}{t} *op2_arg{i}_vec[{arity}];");
                for j in 0..arity {
                    let _ = writeln!(
                        s,
                        "    op2_arg{i}_vec[{j}] = op2_arg{i} + {} * {dim};",
                        target(map, j)
                    );
                }
                if private_copies {
                    call.push(row_private_copies(
                        s,
                        &mut around,
                        d,
                        i,
                        sig.data[i],
                        a,
                        arity,
                        "    ",
                    ));
                } else {
                    call.push(d.pass("", &format!("op2_arg{i}_vec")));
                }
                continue;
            }
        };
        if private_copies {
            let (decl, pointer) = around.copy(i, sig.data[i], a, dim, &src);
            let _ = writeln!(s, "    {decl}");
            call.push(d.pass("", &pointer));
        } else {
            call.push(d.pass(g, &src));
        }
    }
    call.extend(const_args(sig, d, options));
    let call = around.wrap(&format!(
        "{}({})",
        kernel_symbol(sig.kernel.name()),
        call.join(", ")
    ));
    let _ = writeln!(s, "    {call};\n  }}");
    for i in reduction_args(sig) {
        let dim = sig.args[i].dim;
        let _ = writeln!(
            s,
            "  for (int op2_k = 0; op2_k < {dim}; op2_k++) \
             op2_arg{i}_part[({wide})op2_slot * {dim} + op2_k] = op2_arg{i}_r[op2_k];"
        );
    }
    s.push_str("}\n");
    params
}

/// One work-group folds every reduction's partials (in a fixed order, so a given launch shape
/// always gives the same bits) and combines them with the Global's value on the device: with a
/// tree over the group on GPUs, or, with `tree` off (CPU devices, where barriers in loops are
/// slow to compile and to run), by its first work-item alone, in partial order, with no barrier.
pub(crate) fn emit_finish_kernel(
    s: &mut String,
    sig: &LoopSignature,
    d: &dyn Dialect,
    tree: bool,
) -> Vec<StubParam> {
    let (g, wide) = (d.global(), d.wide());
    let mut decls = vec!["const int op2_nparts".to_string()];
    let mut params = vec![StubParam::PartialCount];
    for i in reduction_args(sig) {
        let t = sig.args[i].dtype.c_name();
        decls.push(format!("{g}{t} *op2_arg{i}"));
        decls.push(format!("{g}const {t} *op2_arg{i}_part"));
        params.extend([StubParam::Data(i), StubParam::Partials(i)]);
    }
    if tree && d.local_memory_params() {
        decls.push(format!("{}char *op2_scratch", d.shared()));
        params.push(StubParam::Scratch);
    }
    s.push_str(&d.kernel_head(FINISH_ENTRY, &decls, tree));
    let _ = writeln!(
        s,
        "  const int op2_lid = {};\n  const int op2_lsize = {};",
        d.local_id(),
        d.local_size()
    );
    if tree {
        if !d.local_memory_params() {
            s.push_str("  char *op2_scratch = op2_shared;\n");
        }
        s.push_str("  int op2_p = 1;\n  while (op2_p < op2_lsize) op2_p <<= 1;\n");
    } else {
        s.push_str("  if (op2_lid != 0) return;\n");
    }
    for i in reduction_args(sig) {
        let a = &sig.args[i];
        let t = a.dtype.c_name();
        let combine = combine_expr(a.access);
        for_components(s, a.dim, |s, k| {
            // MIN and MAX may start from the Global itself (they are idempotent); sums from zero.
            let init = if a.access == Access::Inc {
                "0".to_string()
            } else {
                format!("op2_arg{i}[{k}]")
            };
            let _ = writeln!(
                s,
                "  {{\n  {t} op2_v = {init};\n  {unroll}\
                 for (int op2_j = op2_lid; op2_j < op2_nparts; op2_j += op2_lsize) {{ \
                 {t} op2_x = op2_v, op2_y = op2_arg{i}_part[({wide})op2_j * {dim} + {k}]; op2_v = {combine}; }}",
                dim = a.dim,
                unroll = d.unroll_hint()
            );
            let apply = |r: &str| match a.access {
                Access::Inc => format!("op2_arg{i}[{k}] += {r};"),
                _ => format!(
                    "{t} op2_x = op2_arg{i}[{k}], op2_y = {r}; op2_arg{i}[{k}] = {combine};"
                ),
            };
            if tree {
                emit_group_combine(s, d, true, t, a.access, "op2_v", apply);
            } else {
                let _ = writeln!(s, "  {}", apply("op2_v"));
            }
            s.push_str("  }\n");
        });
    }
    s.push_str("}\n");
    params
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn private_bytes_count_the_stubs_own_arrays() {
        let stub = "  double op2_arg1_r[3];\n  for (int op2_k = 0; op2_k < 3; op2_k++) op2_arg1_r[op2_k] = 0;\n\
                    {    float op2_arg0_l[16];\n    __local double *op2_arg2_vec[4];\n    int64_t op2_arg3_c[2]; }\n\
                    extern __shared__ __align__(16) char op2_shared[];\n  double x[5];";
        assert_eq!(private_bytes_per_item(stub), 3 * 8 + 16 * 4 + 4 * 8 + 2 * 8);
    }
}
