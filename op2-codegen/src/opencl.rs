//! The OpenCL C dialect: the user's kernel with address-space qualifiers added to its parameters,
//! Consts as hidden `__constant` parameters (OpenCL C 1.2 has no program-scope storage a host can
//! write, so values change without a new program), and the shared device stubs.

use crate::device::consts_as_params;
use crate::dialect::{ConstPassing, DeviceOptions, DeviceStub, Dialect, without_builtin_includes};
use crate::emit::{close_user_names, const_symbol, open_user_names};
use crate::layout::BlockLayout;
use op2_core::{ArgKind, DType, LoopSignature, Op2Error, Result};
use std::fmt::Write;

/// OpenCL C 1.2.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenCl;

impl Dialect for OpenCl {
    fn name(&self) -> &'static str {
        "opencl"
    }

    fn prelude(&self, _atomics: bool) -> String {
        // No contraction into fused multiply-adds: kernels evaluate as written, like the host
        // backends (`-ffp-contract=off`), so results do not depend on the device's FMA units.
        "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n#pragma OPENCL FP_CONTRACT OFF\n\
         typedef long int64_t;\ntypedef ulong uint64_t;\ntypedef int int32_t;\ntypedef uint uint32_t;\n\
         #define OP2_ROUND_UP(bytes) (((bytes) + 15) & ~15)\n\n"
            .into()
    }

    fn global(&self) -> &'static str {
        "__global "
    }

    fn shared(&self) -> &'static str {
        "__local "
    }

    fn constant(&self) -> &'static str {
        "__constant "
    }

    fn barrier(&self) -> &'static str {
        "barrier(CLK_LOCAL_MEM_FENCE)"
    }

    fn local_id(&self) -> &'static str {
        "(int)get_local_id(0)"
    }

    fn local_size(&self) -> &'static str {
        "(int)get_local_size(0)"
    }

    fn group_id(&self) -> &'static str {
        "(int)get_group_id(0)"
    }

    fn global_id(&self) -> &'static str {
        "(int)get_global_id(0)"
    }

    fn wide(&self) -> &'static str {
        "size_t"
    }

    /// OpenCL C converts `void *` to the parameter's type implicitly.
    fn pass(&self, space: &str, expr: &str) -> String {
        format!("({space}void *)({expr})")
    }

    fn kernel_head(&self, entry: &str, decl: &[String], _shared_memory: bool) -> String {
        format!("__kernel void {entry}({}) {{\n", decl.join(", "))
    }

    fn local_memory_params(&self) -> bool {
        true
    }

    fn const_passing(&self) -> ConstPassing {
        ConstPassing::Params
    }

    fn atomic_add(&self) -> Option<&'static str> {
        None
    }

    fn emit_consts(&self, s: &mut String, sig: &LoopSignature, baked: Option<&[Vec<u8>]>) {
        // Passed as parameters unless baked in as exact literals.
        let Some(values) = baked else {
            return;
        };
        for (c, bytes) in sig.consts.iter().zip(values) {
            let literals = format_values(c.dtype, bytes);
            let (t, sym) = (c.dtype.c_name(), const_symbol(&c.name));
            if c.dim == 1 {
                let _ = writeln!(s, "__constant {t} {sym} = {};", literals[0]);
            } else {
                let _ = writeln!(
                    s,
                    "__constant {t} {sym}[{}] = {{{}}};",
                    c.dim,
                    literals.join(", ")
                );
            }
        }
    }

    /// The kernel's source with its parameter list rewritten: each parameter qualified with the
    /// address space its data lives in (none for private copies), then one `__constant`
    /// parameter per Const when Consts are parameters.
    fn emit_user_kernel(
        &self,
        s: &mut String,
        sig: &LoopSignature,
        stub: &DeviceStub,
        options: &DeviceOptions,
    ) -> Result<()> {
        let name = sig.kernel.name();
        let unsupported = |reason: String| Op2Error::Unsupported {
            kernel: name.into(),
            reason,
        };
        let params = sig.kernel.params().ok_or_else(|| {
            unsupported(
                "its parameter list could not be read (hidden by a macro?), and OpenCL needs it \
                 to add address-space qualifiers"
                    .into(),
            )
        })?;
        let layout = match stub {
            DeviceStub::Planned(b) => Some(b),
            _ => None,
        };
        let mut list: Vec<String> = params
            .iter()
            .enumerate()
            .map(|(i, p)| match address_space(sig, layout, i) {
                _ if options.private_copies => p.text.clone(),
                "" => p.text.clone(),
                space => format!("{space} {}", p.text),
            })
            .collect();
        let params_mode = consts_as_params(self, options);
        if params_mode {
            list.extend(sig.consts.iter().map(|c| {
                format!(
                    "__constant const {} *{}",
                    c.dtype.c_name(),
                    const_symbol(&c.name)
                )
            }));
        }
        let mut source = rewrite_params(sig.kernel.source(), name, &list).ok_or_else(|| {
            unsupported("its definition could not be found to add address-space qualifiers".into())
        })?;
        // A fused kernel calls the loops' kernels with its own parameters: each one's
        // parameters get the address spaces of what it is passed (the first call decides for a
        // kernel called twice; a clash is a compile error, and the loops then run unfused).
        let mut rewritten = std::collections::HashSet::new();
        for (part, args) in sig.kernel.parts() {
            if !rewritten.insert(part.name()) {
                continue;
            }
            let Some(params) = part.params() else {
                continue;
            };
            let part_list: Vec<String> = params
                .iter()
                .zip(args)
                .map(|(p, &i)| match address_space(sig, layout, i) {
                    _ if options.private_copies => p.text.clone(),
                    // Not one of the loop's args: the calling kernel's own (private) data.
                    _ if i >= sig.args.len() => p.text.clone(),
                    "" => p.text.clone(),
                    space => format!("{space} {}", p.text),
                })
                .collect();
            if let Some(s) = rewrite_params(&source, part.name(), &part_list) {
                source = s;
            }
        }
        // C's 64-bit `long long` is OpenCL's `long`: OpenCL reserves `long long` (for 128 bits;
        // PoCL made it so, and an int64 Dat's kernel then read and wrote past its rows).
        let source = without_builtin_includes(
            &opencl_long_long(&source),
            &[
                "math.h",
                "tgmath.h",
                "stdbool.h",
                "stdint.h",
                "float.h",
                "limits.h",
            ],
            "OpenCL C",
        );
        open_user_names(s, sig, params_mode);
        // Always inlined: clang (PoCL's compiler) otherwise keeps a kernel such as Airfoil's
        // adt_calc a call per element ("too costly to inline"), and a loop with a call in it
        // does not vectorise. Static, so that a definition spelt `static` (as today's PyOP2
        // writes every kernel) agrees with it, and one without it keeps internal linkage.
        let _ = writeln!(
            s,
            "static __attribute__((always_inline)) void {name}({});",
            opencl_long_long(&list.join(", "))
        );
        s.push_str(&source);
        s.push('\n');
        close_user_names(s, sig);
        s.push('\n');
        Ok(())
    }
}

/// `source` with every `long long` (two words, any blanks between) spelt `long`, OpenCL's
/// 64-bit integer. Comments and literals are rewritten too, which changes nothing a kernel does.
fn opencl_long_long(source: &str) -> String {
    let bytes = source.as_bytes();
    let word = |i: usize| i < bytes.len() && (bytes[i].is_ascii_alphanumeric() || bytes[i] == b'_');
    let mut out = String::with_capacity(source.len());
    let mut i = 0;
    while i < bytes.len() {
        if source[i..].starts_with("long") && (i == 0 || !word(i - 1)) && !word(i + 4) {
            let mut j = i + 4;
            while j < bytes.len() && bytes[j].is_ascii_whitespace() {
                j += 1;
            }
            if j > i + 4 && source[j..].starts_with("long") && !word(j + 4) {
                out.push_str("long");
                i = j + 4;
                continue;
            }
        }
        let c = source[i..].chars().next().expect("in bounds");
        out.push(c);
        i += c.len_utf8();
    }
    out
}

/// The address space of kernel parameter `i`'s data.
fn address_space(sig: &LoopSignature, blocks: Option<&BlockLayout>, i: usize) -> &'static str {
    let Some(a) = sig.args.get(i) else {
        return "";
    };
    match a.kind {
        ArgKind::Direct => "__global",
        ArgKind::Global if a.access.is_reduction() => "",
        ArgKind::Global => "__global",
        ArgKind::Indirect { .. } | ArgKind::Row { .. } => match blocks {
            Some(b) if b.private_increment(sig, i) => "",
            Some(b) if b.in_global_memory(i) => "__global",
            Some(_) => "__local",
            // Without a plan (the atomics stub), indirect data is read from global memory.
            None => "__global",
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
            // C99's spelling; device code generation refuses complex values before this.
            DType::C64 | DType::C128 => {
                let half = b.len() / 2;
                let part = |p: &[u8]| match dtype {
                    DType::C64 => {
                        float_literal(f64::from(f32::from_ne_bytes(p.try_into().unwrap())), "f")
                    }
                    _ => float_literal(f64::from_ne_bytes(p.try_into().unwrap()), ""),
                };
                format!("({} + {} * _Complex_I)", part(&b[..half]), part(&b[half..]))
            }
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::StubParam;
    use crate::device_codegen::DeviceCodegen;
    use crate::dialect::HostRange;
    use crate::layout::{StagingLayout, StagingMode};
    use op2_core::{Access, ArgSig, Codegen, ConstSig, Kernel};

    #[test]
    fn long_long_is_opencls_long() {
        assert_eq!(
            opencl_long_long(
                "unsigned long  long *x, long long y, longlong z, long q, long\nlong w"
            ),
            "unsigned long *x, long y, longlong z, long q, long w"
        );
    }

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
            data: vec![0, 1, 1],
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
        let emit = |options: DeviceOptions| {
            DeviceCodegen { dialect: &OpenCl }
                .emit(&sig, &(DeviceStub::Planned(blocks.clone()), options))
                .unwrap()
        };
        // Consts as hidden parameters: a new value needs no new program.
        let u = emit(DeviceOptions::default());
        let src = &u.unit.source;
        assert!(src.contains("#define gam (*op2_const_gam)"), "{src}");
        assert!(src.contains(
            "void flux(__global const double * x, double * r0, double * r1, __constant const double *op2_const_gam) {"
        ));
        assert!(src.contains("__constant double *op2_const_gam"));
        assert!(u.params.contains(&StubParam::Const(0)));
        // Baked in, the old way (kernels whose helper functions use Consts).
        let baked = emit(DeviceOptions {
            baked_consts: Some(vec![1.4f64.to_ne_bytes().to_vec()]),
            ..DeviceOptions::default()
        });
        assert!(
            baked
                .unit
                .source
                .contains("__constant double op2_const_gam = 1.4;")
        );
        assert!(!baked.params.contains(&StubParam::Const(0)));
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
        assert_eq!(u.finish_params, None);
    }

    #[test]
    fn host_scheme_runs_a_range_per_work_item_from_global_memory() {
        let k = Kernel::new(
            "edge",
            "void edge(const double *x[2], double *r, double *lo, const double *w) \
             { r[0] += w[0] * (x[0][0] - x[1][0]); if (r[0] < lo[0]) lo[0] = r[0]; }",
        )
        .unwrap();
        let arg = |kind, dim, access| ArgSig {
            kind,
            dtype: DType::F64,
            dim,
            access,
        };
        let sig = LoopSignature {
            kernel: k,
            args: vec![
                arg(ArgKind::Row { map: 0, arity: 2 }, 1, Access::Read),
                arg(
                    ArgKind::Indirect {
                        map: 1,
                        arity: 1,
                        index: 0,
                    },
                    1,
                    Access::Inc,
                ),
                arg(ArgKind::Global, 1, Access::Min),
                arg(ArgKind::Direct, 1, Access::Read),
            ],
            consts: Vec::new(),
            n_maps: 2,
            data: vec![0, 1, 2, 3],
        };
        let emit = |range, private_copies| {
            DeviceCodegen { dialect: &OpenCl }
                .emit(
                    &sig,
                    &(
                        DeviceStub::Host(range),
                        DeviceOptions {
                            private_copies,
                            ..DeviceOptions::default()
                        },
                    ),
                )
                .unwrap()
        };
        let blocks = emit(HostRange::Blocks, false);
        let src = &blocks.unit.source;
        // Nothing staged, no barrier: every arg from global memory, increments straight to it.
        assert!(
            !src.contains("__local") && !src.contains("barrier"),
            "{src}"
        );
        assert!(src.contains(
            "void edge(__global const double * x[2], __global double * r, double * lo, __global const double * w)"
        ), "{src}");
        assert!(src.contains("op2_arg1 + (size_t)op2_map1[(size_t)0 * op2_map1_rows + op2_e] * 1"));
        assert!(src.contains(
            "op2_arg0_vec[1] = op2_arg0 + (size_t)op2_map0[(size_t)1 * op2_map0_rows + op2_e] * 1;"
        ));
        assert!(src.contains("const uint op2_b = op2_block_map[op2_slot];"));
        // The user's kernel inlined; `restrict` where no other parameter reaches the buffer.
        assert!(src.contains("static __attribute__((always_inline)) void edge("));
        assert!(src.contains("__global double *restrict op2_arg1"), "{src}");
        assert!(src.contains("__global const int *restrict op2_map0"));
        // Increments through maps: no SIMD lanes.
        assert!(!src.contains("vectorize(assume_safety)"));
        assert!(src.contains("op2_arg2_part[(size_t)op2_slot * 1 + op2_k] = op2_arg2_r[op2_k];"));
        assert_eq!(
            &blocks.params[..6],
            &[
                StubParam::Start,
                StubParam::End,
                StubParam::BlockOffset,
                StubParam::BlockMap,
                StubParam::BlockOffsets,
                StubParam::BlockLengths
            ]
        );
        assert!(blocks.params.contains(&StubParam::MapRows(1)));
        assert!(blocks.finish_params.is_some());
        let chunks = emit(HostRange::Chunks, false);
        assert_eq!(chunks.params[2], StubParam::Chunk);
        assert!(chunks.unit.source.contains(
            "const size_t op2_first = ((size_t)op2_start) + (size_t)op2_slot * op2_chunk;"
        ));
        // Reads through maps and direct writes only: lanes are safe, and clang is told so.
        let lanes = LoopSignature {
            kernel: Kernel::new(
                "diff",
                "void diff(const double *a, double *o) { o[0] = a[0]; }",
            )
            .unwrap(),
            args: vec![
                arg(
                    ArgKind::Indirect {
                        map: 0,
                        arity: 2,
                        index: 1,
                    },
                    1,
                    Access::Read,
                ),
                arg(ArgKind::Direct, 1, Access::Write),
            ],
            consts: Vec::new(),
            n_maps: 1,
            data: vec![0, 1],
        };
        let src = DeviceCodegen { dialect: &OpenCl }
            .emit(
                &lanes,
                &(
                    DeviceStub::Host(HostRange::Chunks),
                    DeviceOptions::default(),
                ),
            )
            .unwrap()
            .unit
            .source;
        assert!(
            src.contains("  #pragma clang loop vectorize(assume_safety)\n  for (size_t op2_e"),
            "{src}"
        );
        // Private copies: every arg copied in, what is modified copied (INC: added) back.
        let copies = emit(HostRange::Blocks, true).unit.source;
        assert!(
            copies.contains(
                "void edge(const double * x[2], double * r, double * lo, const double * w)"
            ),
            "{copies}"
        );
        assert!(copies.contains("(op2_arg1_c)[op2_k] = 0;"), "{copies}");
        assert!(copies.contains("+= (op2_arg1_c)[op2_k];"), "{copies}");
        assert!(
            copies.contains("op2_arg0_cv[1] = op2_arg0_c + 1;"),
            "{copies}"
        );
    }
}
