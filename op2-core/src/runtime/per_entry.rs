//! Local iteration spaces (PyOP2's `op2.i`): kernels that compute one entry of an element vector
//! or one block of an element matrix, called for every entry. The runtime writes a kernel that
//! runs over the entries and calls the user's kernel for each, with the entry's indices as its
//! last parameters; the loop then runs that kernel like any other, on every backend.

use super::Runtime;
use crate::model::access::Access;
use crate::model::arg::{Arg, ArgTarget, PerEntry, Via};
use crate::model::carrier::Carrier;
use crate::model::dtype::DType;
use crate::model::error::{Op2Error, Result};
use crate::model::kernel::Kernel;
use crate::model::set::Set;
use std::fmt::Write;
use std::sync::Arc;

/// C declaring `{p}_f`: pointers to each value of the `n` rows of `d` values that the pointer array
/// `p` points at, component-major (every row's first value, then every row's second, ...), as
/// PyOP2's flattened per-entry forms number an element's values.
fn component_major_pointers(p: &str, n: usize, d: usize) -> String {
    format!(
        "  OP2_TYPEOF({p}[0] + 0) {p}_f[{}];\n  for (int op2_k = 0; op2_k < {n}; ++op2_k) for (int op2_c = 0; op2_c < {d}; ++op2_c) {p}_f[op2_c * {n} + op2_k] = {p}[op2_k] + op2_c;\n",
        n * d
    )
}

pub(crate) use crate::model::kernel::PASS_MACRO;

/// `kernel`'s source, after a declaration that makes it `static` and inline (`extra`, say an
/// always-inline attribute, before `void`): the runtime's kernels call it in their loops, and a
/// C compiler does not inline a large externally visible function called there by itself (a
/// column walk calling an extruded kernel ran at half speed).
///
/// The user's kernel name becomes a macro for an `op2_` name until [`end_part`] (its name may be
/// a library's: `y0`, `free`, OpenCL's `barrier`), as the code generators do for a loop's own
/// kernel.
pub(crate) fn inlined_source(kernel: &Kernel, extra: &str) -> String {
    let mut s = format!("#undef {0}\n#define {0} op2_part_{0}\n", kernel.name());
    if let Some(params) = kernel.params() {
        let list: Vec<&str> = params.iter().map(|p| p.text.as_str()).collect();
        let list = if list.is_empty() {
            "void".to_string()
        } else {
            list.join(", ")
        };
        let _ = writeln!(s, "static inline {extra}void {}({list});", kernel.name());
    }
    s.push_str(kernel.source());
    s.push('\n');
    s
}

/// Ends the macro [`inlined_source`] opened for `kernel`'s name.
pub(crate) fn end_part(kernel: &Kernel) -> String {
    format!("#undef {}\n", kernel.name())
}

/// An error unless kernel parameter `i`, when its element type can be read, holds `carrier`'s
/// (the runtime's kernels hand such parameters buffers and pointer arrays, whose shape is theirs).
fn param_type(kernel: &Kernel, i: usize, carrier: &crate::model::carrier::Carrier) -> Result<()> {
    let Some(p) = kernel.params().and_then(|p| p.get(i)) else {
        return Ok(());
    };
    match p.dtype {
        // A parameter the kernel never names cannot be misread (see `KernelParam::used`).
        Some(d) if d != carrier.dtype() && crate::runtime::validate::uses(kernel, p) => {
            Err(Op2Error::TypeMismatch {
                kernel: kernel.name().into(),
                arg: i,
                object: carrier.name.clone(),
                declared: p.text.clone(),
                declared_by: "the kernel parameter",
                actual: carrier.dtype(),
            })
        }
        _ => Ok(()),
    }
}

/// Parameter declaration `text` (`const double *x[3]`, `double A[3][3]`) with its name, the
/// last identifier outside brackets, replaced by `name`; `None` when it names nothing (a lone
/// type such as `double`).
fn renamed(text: &str, name: &str) -> Option<String> {
    let bytes = text.as_bytes();
    let (mut depth, mut words, mut last) = (0usize, 0usize, None);
    let mut k = 0;
    while k < bytes.len() {
        let b = bytes[k];
        if b == b'[' {
            depth += 1;
        } else if b == b']' {
            depth = depth.saturating_sub(1);
        } else if depth == 0 && (b.is_ascii_alphabetic() || b == b'_') {
            let start = k;
            while k < bytes.len() && (bytes[k].is_ascii_alphanumeric() || bytes[k] == b'_') {
                k += 1;
            }
            words += 1;
            last = Some((start, k));
            continue;
        }
        k += 1;
    }
    let (start, end) = last.filter(|_| words >= 2)?;
    Some(format!("{}{name}{}", &text[..start], &text[end..]))
}

/// An error unless arg `i` may view component `c` ([`Arg::component`]): a Dat's, `c` below its
/// dim, handed over directly, through a map entry, a whole row or an element buffer.
fn viewable(kernel: &Kernel, i: usize, a: &Arg, c: usize) -> Result<()> {
    let refuse = |reason: String| Op2Error::InvalidArg {
        kernel: kernel.name().into(),
        arg: i,
        reason,
    };
    let ArgTarget::Dat { carrier, .. } = &a.target else {
        return Err(refuse(format!(
            "component {c} of a Global or Const: only a Dat's rows have components to view"
        )));
    };
    if c >= carrier.dim {
        return Err(refuse(format!(
            "component {c} of `{}`, whose rows have {} value(s)",
            carrier.name, carrier.dim
        )));
    }
    match a.per_entry {
        None | Some(PerEntry::Buffer { .. }) => Ok(()),
        Some(_) => Err(refuse(format!(
            "component {c} of `{}` in a local iteration space: view components directly, through \
             a map entry, a whole row or an element buffer",
            carrier.name
        ))),
    }
}

/// An error unless kernel parameter `i`, handed straight through by a runtime-written kernel,
/// holds `carrier`'s type and has the shape its arg gives ([`super::validate::check_shape`]).
fn passed_shape(
    kernel: &Kernel,
    i: usize,
    carrier: &crate::model::carrier::Carrier,
    row: Option<usize>,
    values: usize,
) -> Result<()> {
    param_type(kernel, i, carrier)?;
    let Some(p) = kernel.params().and_then(|p| p.get(i)) else {
        return Ok(());
    };
    super::validate::check_shape(kernel, i, p, row, values)
}

/// The length of the local buffer kernel parameter `i` gets for `values` values: `values`, or
/// more when the parameter declares more, up to `values * dim` (PyOP2's flattened buffers were
/// declared `arity * dim * dim` long), so that the kernel cannot write past it. A declaration
/// longer still is refused (the buffer lives on the stack, or in a GPU thread's registers).
pub(crate) fn buffer_len(kernel: &Kernel, i: usize, values: usize, dim: usize) -> Result<usize> {
    let Some(p) = kernel
        .params()
        .and_then(|p| p.get(i))
        .filter(|p| p.pointers == 0)
    else {
        return Ok(values.max(1));
    };
    let declared = super::validate::declared_values(&p.bounds);
    if declared > values * dim.max(1) {
        return Err(Op2Error::KernelParamBound {
            kernel: kernel.name().into(),
            arg: i,
            param: p.text.clone(),
            what: "values",
            declared,
            expected: values,
        });
    }
    Ok(values.max(declared).max(1))
}

impl Runtime {
    /// The kernel the runtime writes as `name(params)` around the user's `kernel`: `body` (its
    /// lines, the call to `kernel` among them) after `kernel`'s inlined source, made once per
    /// source. `positions` says, for each of `kernel`'s parameters, which of the new kernel's
    /// args it is handed (`usize::MAX`: the runtime's own value, such as a buffer or an index).
    pub(crate) fn wrapper_kernel(
        &self,
        kernel: &Kernel,
        name: &str,
        params: &[String],
        body: &str,
        positions: Vec<usize>,
    ) -> Kernel {
        self.wrapper_kernel_made(kernel, name, params, body, positions, |k| k)
    }

    /// [`Runtime::wrapper_kernel`], the new kernel changed by `finish` when first made (the
    /// source must say what `finish` does, since kernels are kept by source).
    pub(crate) fn wrapper_kernel_made(
        &self,
        kernel: &Kernel,
        name: &str,
        params: &[String],
        body: &str,
        positions: Vec<usize>,
        finish: impl FnOnce(Kernel) -> Kernel,
    ) -> Kernel {
        let mut src = String::from(PASS_MACRO);
        src.push_str(&inlined_source(kernel, ""));
        let _ = writeln!(src, "\nvoid {name}({}) {{", params.join(", "));
        src.push_str(body);
        src.push_str("}\n");
        src.push_str(&end_part(kernel));
        let part = kernel.clone();
        self.shared.written.get(src, Some(kernel), |src| {
            finish(Kernel::fused(name, src, vec![(part, positions)]))
        })
    }

    /// `kernel`, whose last parameter is an `int` taking each element's layer (PyOP2's
    /// `pass_layer_arg=True`), as a kernel the runtime writes over `args` and `layers` (the
    /// layer of every element of the loop's extruded set), calling it with the layer's value.
    /// Args handed to the user's kernel one element at a time (direct, map entries, whole rows,
    /// element buffers) may come with it; per-entry and mixed ones may not.
    pub(crate) fn lower_layer_arg(
        &self,
        kernel: &Kernel,
        args: Vec<Arg>,
        layers: Arc<Carrier>,
    ) -> Result<(Kernel, Vec<Arg>)> {
        let n = args.len();
        if let Some(p) = kernel.params() {
            if p.len() != n + 1 {
                return Err(Op2Error::KernelParamCount {
                    kernel: kernel.name().into(),
                    params: p.len(),
                    args: n + 1,
                });
            }
            let last = &p[n];
            if last.indirection != 0 || !matches!(last.dtype, Some(DType::I32)) {
                return Err(Op2Error::KernelParamShape {
                    kernel: kernel.name().into(),
                    arg: n,
                    param: last.text.clone(),
                    expected: "an `int` taking the layer",
                });
            }
        }
        let (mut params, mut call, mut positions) = (Vec::new(), Vec::new(), Vec::new());
        for (i, a) in args.iter().enumerate() {
            let p = format!("op2_a{i}");
            if !a.joined.is_empty() || !matches!(a.per_entry, None | Some(PerEntry::Buffer { .. }))
            {
                return Err(Op2Error::IterationSpace {
                    kernel: kernel.name().into(),
                    reason: format!(
                        "arg {i}: the layer is passed to kernels called once per element, with \
                         args of one element (direct, through map entries, whole rows or \
                         buffers), not per entry or mixed"
                    ),
                });
            }
            let (carrier, row) = match &a.target {
                ArgTarget::Dat {
                    carrier,
                    via: Via::Row(m),
                } if a.per_entry.is_none() => (carrier, Some(m.arity())),
                ArgTarget::Dat { carrier, .. } => (carrier, None),
                ArgTarget::Global(c) | ArgTarget::Const(c) => (c, None),
            };
            let ctype = carrier.dtype().c_name();
            // The user's own declaration, renamed, where it can be read: the passes after this
            // one (padded rows, buffers, typed 2-D arrays) then see the user's shapes and
            // bounds through this kernel, and check them as for any loop.
            // A parameter the kernel never uses is declared with the arg's own type (its
            // declared type may be another, which the kernel never reads).
            let declared = kernel
                .params()
                .and_then(|ps| ps.get(i))
                .filter(|q| crate::runtime::validate::uses(kernel, q))
                .and_then(|q| renamed(&q.text, &p));
            params.push(declared.unwrap_or_else(|| {
                format!("{ctype} *{}{p}", if row.is_some() { "*" } else { "" })
            }));
            call.push(format!("OP2_PASS({p})"));
            positions.push(i);
        }
        params.push("const int32_t *op2_layer".into());
        call.push("op2_layer[0]".into());
        positions.push(usize::MAX);
        let body = format!("  {}({});\n", kernel.name(), call.join(", "));
        let name = format!("op2_layer_{}", kernel.name());
        // Its parameters are the user's: so is their bounds' leniency (and the source says
        // which, so that the kernels of a strict and a lenient user kernel are two).
        let lenient = !kernel.checks_bounds();
        let body = if lenient {
            format!("  /* lenient bounds */\n{body}")
        } else {
            body
        };
        let k = self.wrapper_kernel_made(kernel, &name, &params, &body, positions, |k| {
            if lenient {
                k.without_own_bound_checks()
            } else {
                k
            }
        });
        let mut lowered = args;
        lowered.push(crate::model::carrier::Dat::<i32>::from_carrier(layers).arg(Access::Read));
        Ok((k, lowered))
    }

    /// `kernel` with its buffer args ([`PerEntry::Buffer`]) gathered into local buffers before
    /// each call and scattered after it, as a kernel the runtime writes over whole-row args.
    pub(crate) fn lower_buffers(
        &self,
        kernel: &Kernel,
        args: Vec<Arg>,
    ) -> Result<(Kernel, Vec<Arg>)> {
        let bad = |reason: String| Op2Error::IterationSpace {
            kernel: kernel.name().into(),
            reason,
        };
        if args.iter().any(|a| {
            matches!(
                a.per_entry,
                Some(PerEntry::Row | PerEntry::FlatEntries | PerEntry::Block { .. })
            )
        }) {
            return Err(bad(
                "buffer args (one call per element) and per-entry args (one call per entry) \
                 cannot share a loop"
                    .into(),
            ));
        }
        if let Some(p) = kernel.params()
            && p.len() != args.len()
        {
            return Err(Op2Error::KernelParamCount {
                kernel: kernel.name().into(),
                params: p.len(),
                args: args.len(),
            });
        }
        let (mut params, mut call, mut before, mut after) =
            (Vec::new(), Vec::new(), String::new(), String::new());
        let mut positions = Vec::new();
        let mut lowered = Vec::with_capacity(args.len());
        for (i, mut a) in args.into_iter().enumerate() {
            let p = format!("op2_a{i}");
            let (dtype, row) = match &a.target {
                ArgTarget::Dat { carrier, via } => (carrier.dtype(), matches!(via, Via::Row(_))),
                ArgTarget::Global(c) | ArgTarget::Const(c) => (c.dtype(), false),
            };
            let ctype = dtype.c_name();
            let component = a.component.take();
            if let Some(c) = component {
                viewable(kernel, i, &a, c)?;
                // The other components stay: the row is read and written back, never only
                // written (a WRITE would let the runtime skip bringing it in).
                if a.access == Access::Write {
                    a.access = Access::Rw;
                }
            }
            match (a.per_entry.take(), &a.target) {
                (
                    Some(PerEntry::Buffer { flattened }),
                    ArgTarget::Dat {
                        carrier,
                        via: Via::Row(m),
                    },
                ) => {
                    param_type(kernel, i, carrier)?;
                    // Checked here: the access becomes RW below, past the runtime's own check.
                    super::validate::ordered(kernel, i, carrier, a.access)?;
                    let n = m.arity();
                    // A component view packs component `c` of each row: one value per entry.
                    let (d, first, at) = match component {
                        Some(c) => (1, c, "op2_k".to_string()),
                        None if flattened => (carrier.dim, 0, format!("op2_c * {n} + op2_k")),
                        None => (carrier.dim, 0, format!("op2_k * {} + op2_c", carrier.dim)),
                    };
                    let each = format!(
                        "for (int op2_k = 0; op2_k < {n}; ++op2_k) for (int op2_c = {first}; op2_c < {}; ++op2_c)",
                        first + d
                    );
                    params.push(format!("{ctype} **{p}"));
                    // Zeroed beyond the values (a kernel may declare more, see buffer_len).
                    let len = buffer_len(kernel, i, n * d, d)?;
                    let _ = writeln!(before, "  {ctype} {p}_b[{len}] = {{0}};");
                    let _ = match a.access {
                        Access::Read | Access::Rw | Access::Min | Access::Max => {
                            writeln!(before, "  {each} {p}_b[{at}] = {p}[op2_k][op2_c];")
                        }
                        _ => writeln!(before, "  {each} {p}_b[{at}] = 0;"),
                    };
                    let _ = match a.access {
                        Access::Inc => {
                            writeln!(after, "  {each} {p}[op2_k][op2_c] += {p}_b[{at}];")
                        }
                        Access::Write | Access::Rw => {
                            writeln!(after, "  {each} {p}[op2_k][op2_c] = {p}_b[{at}];")
                        }
                        // Today's PyOP2's MIN and MAX through a map: each value combined back
                        // with the one in the Dat, which the loop then reads and writes (RW:
                        // elements sharing a row run apart, as for any indirect RW).
                        Access::Min | Access::Max => {
                            let op = if a.access == Access::Min { "<" } else { ">" };
                            writeln!(
                                after,
                                "  {each} if ({p}_b[{at}] {op} {p}[op2_k][op2_c]) {p}[op2_k][op2_c] = {p}_b[{at}];"
                            )
                        }
                        Access::Read => Ok(()),
                    };
                    if matches!(a.access, Access::Min | Access::Max) {
                        a.access = Access::Rw;
                    }
                    call.push(format!("OP2_PASS({p}_b)"));
                    positions.push(usize::MAX);
                }
                (
                    Some(PerEntry::FlatRow),
                    ArgTarget::Dat {
                        carrier,
                        via: Via::Row(m),
                    },
                ) => {
                    param_type(kernel, i, carrier)?;
                    let (n, d) = (m.arity(), carrier.dim);
                    params.push(format!("{ctype} **{p}"));
                    before.push_str(&component_major_pointers(&p, n, d));
                    call.push(format!("OP2_PASS({p}_f)"));
                    // The pointers point into the arg's own data.
                    positions.push(i);
                }
                (Some(_), _) => {
                    return Err(bad(format!(
                        "arg {i}: a buffer or flattened row only through a whole map row"
                    )));
                }
                (None, ArgTarget::Dat { carrier, via }) if component.is_some() => {
                    let c = component.expect("matched");
                    let arity = match via {
                        Via::Row(m) => Some(m.arity()),
                        _ => None,
                    };
                    passed_shape(kernel, i, carrier, arity, 1)?;
                    match arity {
                        // Each row's pointer moved to its component.
                        Some(n) => {
                            params.push(format!("{ctype} **{p}"));
                            let _ = writeln!(
                                before,
                                "  {ctype} *{p}_v[{n}];\n  for (int op2_k = 0; op2_k < {n}; ++op2_k) {p}_v[op2_k] = {p}[op2_k] + {c};"
                            );
                            call.push(format!("OP2_PASS({p}_v)"));
                        }
                        None => {
                            params.push(format!("{ctype} *{p}"));
                            call.push(format!("OP2_PASS({p} + {c})"));
                        }
                    }
                    // The pointers point into the arg's own data.
                    positions.push(i);
                }
                (None, target) => {
                    let (carrier, arity) = match target {
                        ArgTarget::Dat {
                            carrier,
                            via: Via::Row(m),
                        } => (carrier, Some(m.arity())),
                        ArgTarget::Dat { carrier, .. } => (carrier, None),
                        ArgTarget::Global(c) | ArgTarget::Const(c) => (c, None),
                    };
                    passed_shape(kernel, i, carrier, arity, carrier.dim)?;
                    params.push(format!("{ctype} *{}{p}", if row { "*" } else { "" }));
                    call.push(format!("OP2_PASS({p})"));
                    positions.push(i);
                }
            }
            lowered.push(a);
        }
        let _ = writeln!(before, "  {}({});", kernel.name(), call.join(", "));
        before.push_str(&after);
        let name = format!("op2_buffers_{}", kernel.name());
        let k = self.wrapper_kernel(kernel, &name, &params, &before, positions);
        Ok((k, lowered))
    }

    /// `kernel` over `set` with `args`, some of them per entry, as a kernel that walks the
    /// entries and args that hand it whole rows and whole blocks.
    pub(crate) fn lower_entries(
        &self,
        kernel: &Kernel,
        set: &Set,
        args: Vec<Arg>,
    ) -> Result<(Kernel, Vec<Arg>)> {
        let bad = |reason: String| Op2Error::IterationSpace {
            kernel: kernel.name().into(),
            reason,
        };
        // The extent: one dimension (a map's arity) or two (blocks down and across).
        let mut extent: Option<(usize, Option<usize>, usize)> = None;
        for (i, a) in args.iter().enumerate() {
            let this = match (a.per_entry, &a.target) {
                (None, _) => continue,
                (
                    Some(PerEntry::Row),
                    ArgTarget::Dat {
                        via: Via::Row(m), ..
                    },
                ) => (m.arity(), None),
                (
                    Some(PerEntry::FlatEntries),
                    ArgTarget::Dat {
                        carrier,
                        via: Via::Row(m),
                    },
                ) => (m.arity() * carrier.dim, None),
                (
                    Some(PerEntry::Block { rows, cols, block }),
                    ArgTarget::Dat {
                        carrier,
                        via: Via::Direct,
                    },
                ) => {
                    // The generated code adds every call's block into the element's blocks:
                    // they must be exactly the Dat's row, and be both read and written.
                    let values = rows * cols * block.0 * block.1;
                    if values == 0 || carrier.dim != values {
                        return Err(bad(format!(
                            "arg {i}: {rows} x {cols} blocks of {} x {} values need a Dat of dim                              {values} (non-zero), and `{}` has dim {}",
                            block.0, block.1, carrier.name, carrier.dim
                        )));
                    }
                    if !matches!(a.access, Access::Inc | Access::Rw) {
                        return Err(bad(format!(
                            "arg {i}: each call's block is added into the element's blocks, so its                              access is INC or RW, not {:?}",
                            a.access
                        )));
                    }
                    (rows, Some(cols))
                }
                _ => {
                    return Err(bad(format!(
                        "arg {i}: per entry only through a whole map row, or as a direct element block"
                    )));
                }
            };
            match extent {
                None => extent = Some((this.0, this.1, i)),
                Some((r, c, first)) if (r, c) != this => {
                    let show = |(r, c): (usize, Option<usize>)| match c {
                        None => format!("{r} entries"),
                        Some(c) => format!("{r} x {c} blocks"),
                    };
                    return Err(bad(format!(
                        "arg {first} runs over {} but arg {i} over {}",
                        show((r, c)),
                        show(this)
                    )));
                }
                Some(_) => {}
            }
        }
        let (rows, cols, _) = extent.expect("called with a per-entry arg");
        let dims = 1 + usize::from(cols.is_some());
        // The kernel: one parameter per arg, then `dims` ints.
        if let Some(params) = kernel.params() {
            if params.len() != args.len() + dims {
                return Err(bad(format!(
                    "the kernel has {} parameters; its {} args and {dims} trailing int index{} need {}",
                    params.len(),
                    args.len(),
                    if dims == 1 { "" } else { "es" },
                    args.len() + dims
                )));
            }
            for (k, p) in params[args.len()..].iter().enumerate() {
                if p.dtype != Some(DType::I32) || p.indirection != 0 {
                    return Err(bad(format!(
                        "parameter {} (`{}`) should be an `int` index of the iteration space",
                        args.len() + k,
                        p.text
                    )));
                }
            }
            // Each arg as one call sees it: a row through a map entry, a block of values.
            let mut maps = Vec::new();
            for (i, a) in args.iter().enumerate() {
                let view = match (a.per_entry, &a.target) {
                    (
                        Some(PerEntry::FlatEntries),
                        ArgTarget::Dat {
                            carrier,
                            via: Via::Row(_),
                        },
                    ) => {
                        // One value: a pointer, or an array of at most one.
                        passed_shape(kernel, i, carrier, None, 1)?;
                        continue;
                    }
                    (
                        Some(PerEntry::Row),
                        ArgTarget::Dat {
                            carrier,
                            via: Via::Row(m),
                        },
                    ) => Arg {
                        target: ArgTarget::Dat {
                            carrier: carrier.clone(),
                            via: Via::Entry(m.clone(), 0),
                        },
                        ..a.clone()
                    },
                    (
                        Some(PerEntry::Block {
                            block: (br, bc), ..
                        }),
                        ArgTarget::Dat { carrier, .. },
                    ) => {
                        // One block's values, as a pointer or an array of any shape
                        // (`double A[1][1]`, `double *A`) holding at most the block.
                        passed_shape(kernel, i, carrier, None, br * bc)?;
                        continue;
                    }
                    _ => a.clone(),
                };
                // Sets are checked when the loop is recorded (a direct Dat may live on an
                // extruded set's base or a subset's superset): here only what the kernel sees.
                let view_set = match &view.target {
                    ArgTarget::Dat {
                        via: Via::Entry(m, _) | Via::Row(m),
                        ..
                    } => m.from().clone(),
                    ArgTarget::Dat { carrier, .. } => match carrier.kind() {
                        crate::model::carrier::CarrierKind::Dat(s) => s.clone(),
                        _ => set.clone(),
                    },
                    _ => set.clone(),
                };
                let (sig, carrier) = super::validate::check_arg(
                    self.shared.id,
                    kernel,
                    &view_set,
                    i,
                    &view,
                    &mut maps,
                )?;
                super::validate::check_param(kernel, i, &params[i], &sig, &carrier)?;
            }
        }
        let mut params = Vec::new();
        let mut call = Vec::new();
        let mut prelude = String::new();
        let mut before = String::new();
        let mut after = String::new();
        let mut lowered = Vec::with_capacity(args.len());
        let per_entry: Vec<Option<PerEntry>> = args.iter().map(|a| a.per_entry).collect();
        for (i, a) in args.into_iter().enumerate() {
            let p = format!("op2_a{i}");
            let ctype = match &a.target {
                ArgTarget::Dat { carrier, .. }
                | ArgTarget::Global(carrier)
                | ArgTarget::Const(carrier) => carrier.dtype().c_name(),
            };
            let row = matches!(
                &a.target,
                ArgTarget::Dat {
                    via: Via::Row(_),
                    ..
                }
            );
            match a.per_entry {
                Some(PerEntry::Row) => {
                    params.push(format!("{ctype} **{p}"));
                    call.push(format!("OP2_PASS({p}[op2_i])"));
                }
                Some(PerEntry::FlatEntries) => {
                    let (n, d) = match &a.target {
                        ArgTarget::Dat {
                            carrier,
                            via: Via::Row(m),
                        } => (m.arity(), carrier.dim),
                        _ => unreachable!("checked with the extent"),
                    };
                    params.push(format!("{ctype} **{p}"));
                    // Pointers to the element's values, component-major, made once per element.
                    prelude.push_str(&component_major_pointers(&p, n, d));
                    call.push(format!("OP2_PASS({p}_f[op2_i])"));
                }
                Some(PerEntry::Block {
                    cols,
                    block: (br, bc),
                    ..
                }) => {
                    params.push(format!("{ctype} *{p}"));
                    let n = br * bc;
                    let _ = writeln!(before, "      {ctype} {p}_t[{n}] = {{0}};");
                    call.push(format!("OP2_PASS({p}_t)"));
                    let _ = writeln!(
                        after,
                        "      for (int op2_a = 0; op2_a < {br}; ++op2_a)\n        for (int op2_b = 0; op2_b < {bc}; ++op2_b)\n          {p}[(op2_i * {br} + op2_a) * {} + op2_j * {bc} + op2_b] += {p}_t[op2_a * {bc} + op2_b];",
                        cols * bc
                    );
                }
                None => {
                    params.push(format!("{ctype} *{}{p}", if row { "*" } else { "" }));
                    call.push(format!("OP2_PASS({p})"));
                }
                Some(PerEntry::Buffer { .. } | PerEntry::FlatRow) => {
                    unreachable!("buffer and flattened-row args are lowered first")
                }
            }
            let mut a = a;
            a.per_entry = None;
            lowered.push(a);
        }
        call.push("op2_i".into());
        let name = format!("op2_entries_{}", kernel.name());
        let mut src = String::from(PASS_MACRO);
        src.push_str(&inlined_source(kernel, ""));
        let _ = writeln!(src, "\nvoid {name}({}) {{", params.join(", "));
        src.push_str(&prelude);
        let _ = writeln!(src, "  for (int op2_i = 0; op2_i < {rows}; ++op2_i) {{");
        match cols {
            Some(c) => {
                call.push("op2_j".into());
                let _ = writeln!(src, "    for (int op2_j = 0; op2_j < {c}; ++op2_j) {{");
            }
            None => src.push_str("    {\n      const int op2_j = 0; (void)op2_j;\n"),
        }
        src.push_str(&before);
        let _ = writeln!(src, "      {}({});", kernel.name(), call.join(", "));
        src.push_str(&after);
        src.push_str("    }\n  }\n}\n");
        src.push_str(&end_part(kernel));
        // The user's kernel is a part of it, called with each arg's own data (a row of a
        // whole-row parameter is still that parameter's data), or with the walk's buffers and
        // indices (its own).
        let positions: Vec<usize> = (0..lowered.len())
            .map(|i| match per_entry[i] {
                Some(PerEntry::Block { .. }) => usize::MAX,
                _ => i,
            })
            .chain(std::iter::repeat_n(usize::MAX, dims))
            .collect();
        let part = kernel.clone();
        let k = self.shared.written.get(src, Some(kernel), |src| {
            Kernel::fused(&name, src, vec![(part, positions)])
        });
        Ok((k, lowered))
    }
}

/// For a kernel made without bound checks ([`Kernel::without_bound_checks`], PyOP2's): the
/// args whose kernel parameter declares an array of more pointers than the whole map row the
/// arg hands it (`double *q[4]` through a map of arity 2, as PyOP2's `airfoil_vector` demo
/// declares), as `(arg, declared pointers, arity)`. Empty when the loop has none, or has args
/// of other forms (per-entry, mixed), which keep their own checks.
pub(crate) fn short_rows(kernel: &Kernel, args: &[Arg]) -> Vec<(usize, usize, usize)> {
    let Some(params) = kernel.params() else {
        return Vec::new();
    };
    if kernel.checks_bounds()
        || params.len() != args.len()
        || args
            .iter()
            .any(|a| a.per_entry.is_some() || !a.joined.is_empty() || a.component.is_some())
        // Element matrices (`double A[3][3]`) go through the buffers' kernel instead.
        || params.iter().any(|p| p.pointers == 0 && p.bounds.len() >= 2)
    {
        return Vec::new();
    }
    args.iter()
        .zip(params)
        .enumerate()
        .filter_map(|(i, (a, p))| match (&a.target, p.pointers, &p.bounds[..]) {
            (
                ArgTarget::Dat {
                    via: Via::Row(m), ..
                },
                1,
                [Some(declared)],
            ) if *declared > m.arity() => Some((i, *declared, m.arity())),
            _ => None,
        })
        .collect()
}

impl Runtime {
    /// `kernel` with the pointer arrays of `short` args ([`short_rows`]) padded to the length
    /// the kernel declares: a kernel the runtime writes copies each row's pointers and points
    /// the rest at a zeroed row of its own, made for every call. C ignores a parameter's array
    /// bound, so such kernels ran under PyOP2; here one that reads past the row it is given
    /// reads zeros, and writes there go nowhere, instead of reaching memory it was not given.
    pub(crate) fn lower_padded_rows(
        &self,
        kernel: &Kernel,
        args: Vec<Arg>,
        short: &[(usize, usize, usize)],
    ) -> Result<(Kernel, Vec<Arg>)> {
        let (mut params, mut call, mut before) = (Vec::new(), Vec::new(), String::new());
        let mut positions = Vec::with_capacity(args.len());
        for (i, a) in args.iter().enumerate() {
            let p = format!("op2_a{i}");
            let (carrier, arity) = match &a.target {
                ArgTarget::Dat {
                    carrier,
                    via: Via::Row(m),
                } => (carrier, Some(m.arity())),
                ArgTarget::Dat { carrier, .. } => (carrier, None),
                ArgTarget::Global(c) | ArgTarget::Const(c) => (c, None),
            };
            let ctype = carrier.dtype().c_name();
            params.push(format!(
                "{ctype} *{}{p}",
                if arity.is_some() { "*" } else { "" }
            ));
            positions.push(i);
            match short.iter().find(|(at, ..)| *at == i) {
                Some(&(_, declared, arity)) => {
                    param_type(kernel, i, carrier)?;
                    let dim = carrier.dim.max(1);
                    let _ = writeln!(
                        before,
                        "  {ctype} {p}_z[{dim}] = {{0}};\n  OP2_TYPEOF({p}[0] + 0) {p}_r[{declared}];\n  for (int op2_k = 0; op2_k < {declared}; ++op2_k) {p}_r[op2_k] = op2_k < {arity} ? {p}[op2_k] : {p}_z;"
                    );
                    call.push(format!("OP2_PASS({p}_r)"));
                }
                None => {
                    passed_shape(kernel, i, carrier, arity, carrier.dim)?;
                    call.push(format!("OP2_PASS({p})"));
                }
            }
        }
        let _ = writeln!(before, "  {}({});", kernel.name(), call.join(", "));
        let name = format!("op2_padded_{}", kernel.name());
        let k = self.wrapper_kernel(kernel, &name, &params, &before, positions);
        Ok((k, args))
    }
}
