//! The OpenCL C dialect: the user's kernel with address-space
//! qualifiers added to its parameters, consts as `__constant` data, and a `__kernel` stub (the
//! stubs themselves are shared with CUDA, in [`crate::device`]).

use crate::device::{
    BlockLayout, Dialect, StubParam, emit_direct_stub, emit_planned_stub, private_bytes_per_item,
};
use crate::emit::{close_user_names, const_symbol, open_user_names};
use op2_core::{ArgKind, DType, GeneratedUnit, LoopSignature};
use std::fmt::Write;

/// The entry point of every generated OpenCL program.
pub const OPENCL_ENTRY: &str = "op2_stub";

/// How the stub hands data to the user's kernel.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArgPassing {
    /// Pointers straight into global, local or private memory, with the matching address-space
    /// qualifier added to each kernel parameter. No copies.
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
    /// Private memory each work-item of the stub declares (see [`crate::private_bytes_per_item`]).
    pub private_bytes: usize,
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
                    const_symbol(&c.name),
                    values[0]
                );
            } else {
                let _ = writeln!(
                    s,
                    "__constant {} {}[{}] = {{{}}};",
                    c.dtype.c_name(),
                    const_symbol(&c.name),
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
        s.push('\n');
        open_user_names(&mut s, sig);
        let _ = writeln!(s, "void {name}({});", qualified.join(", "));
        s.push_str(&source);
        s.push('\n');
        close_user_names(&mut s, sig);
        s.push('\n');
        let (entry, tree) = (OPENCL_ENTRY, self.tree_reductions);
        let stub_start = s.len();
        let params = match blocks {
            None => emit_direct_stub(&mut s, sig, entry, Dialect::OpenCl, private, tree),
            Some(b) => emit_planned_stub(&mut s, sig, b, entry, Dialect::OpenCl, private, tree),
        };
        let private_bytes = private_bytes_per_item(&s[stub_start..]);
        Ok(OpenClUnit {
            private_bytes,
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{StagingLayout, StagingMode};
    use op2_core::{Access, ArgSig, ConstSig, Kernel};

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
        assert!(src.contains("__constant double op2_const_gam = 1.4;"));
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
