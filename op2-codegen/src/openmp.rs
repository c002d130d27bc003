//! The C + OpenMP dialect: the wrapper runs an execution plan colour by colour, each colour's blocks
//! shared among threads, elements of a block in sequence (PyOP2's OpenMP backend), with per-thread
//! partials for Global reductions combined in thread order.

use crate::batch::{HOST_INLINE, SIMD_BATCH};
use crate::emit::{
    HostOptions, combine_into, emit_consts, emit_element_loop, emit_kernel, emit_lanes_kernel,
    emit_list_entry, emit_row_vectors, emit_wrapper_prologue, kernel_call_args, reduces_locally,
    reduction_args,
};
use op2_core::{Access, Codegen, GeneratedUnit, LoopSignature};
use std::fmt::Write;

/// The C signature of every OpenMP wrapper. Beyond [`crate::WRAPPER_SIGNATURE`]'s parameters: the
/// reduction partials (one buffer of `nthreads * dim` values per Global reduction arg, in arg
/// order), the thread count, then the plan. With `ncolours == 0` there is no plan and `start..end` is
/// shared among the threads (loops that modify nothing through maps: in chunks taken as threads come
/// free, or a static split where Globals are reduced); otherwise colour `c` runs
/// blocks `block_map[colour_offsets[c] .. colour_offsets[c + 1]]`, block `b` being elements
/// `block_offsets[b] .. block_offsets[b] + block_lengths[b]` (clipped to `start..end`).
pub const OPENMP_WRAPPER_SIGNATURE: &str = "__attribute__((visibility(\"default\"))) void NAME(int64_t op2_start, int64_t op2_end, void *const *op2_args, const int32_t *const *op2_maps, const void *const *op2_consts, void *const *op2_partials, int32_t op2_nthreads, int32_t op2_ncolours, const uint64_t *op2_colour_offsets, const uint32_t *op2_block_map, const uint32_t *op2_block_offsets, const uint32_t *op2_block_lengths)";

/// Fewest elements of a chunk that a thread takes at a time in loops without a plan.
const MIN_CHUNK: usize = 1024;

/// Emits C with OpenMP pragmas; compile with `-fopenmp`.
#[derive(Debug, Clone, Copy, Default)]
pub struct OpenMpCodegen;

impl Codegen for OpenMpCodegen {
    type Options = HostOptions;
    type Unit = GeneratedUnit;

    fn emit(&self, sig: &LoopSignature, options: &HostOptions) -> op2_core::Result<GeneratedUnit> {
        let simd = options.simd;
        let entry = format!("op2_omp_{}", sig.kernel.name());
        let reductions = reduction_args(sig);
        let mut call = kernel_call_args(sig, "op2_n");
        for &i in &reductions {
            call[i] = format!("OP2_PASS(op2_arg{i}_l)");
        }

        let mut s = String::new();
        let _ = writeln!(
            s,
            "/* op2-rs generated code (OpenMP): loop over kernel `{}` */",
            sig.kernel.name()
        );
        crate::emit::emit_host_prelude(&mut s, sig, "#include <omp.h>\n")?;
        crate::emit::emit_compiler_workarounds(&mut s, sig);
        crate::rows::emit_row_transposes(&mut s, sig, simd);
        emit_consts(&mut s, sig, "static");
        emit_kernel(&mut s, sig, HOST_INLINE);
        emit_lanes_kernel(&mut s, sig, simd);
        crate::emit::open_entries(&mut s, sig);
        let _ = writeln!(s, "{} {{", OPENMP_WRAPPER_SIGNATURE.replace("NAME", &entry));
        emit_wrapper_prologue(&mut s, sig, false);
        // One partial per thread and reduction (the backend allocates them, `nthreads * dim`
        // values per reduction arg, in reduction order), starting from the identity (INC) or the
        // current value (MIN, MAX: combining with it again changes nothing). Slots of threads the
        // runtime did not start stay neutral.
        for (j, &i) in reductions.iter().enumerate() {
            let a = &sig.args[i];
            let t = a.dtype.c_name();
            let d = a.dim;
            let _ = writeln!(s, "  {t} *op2_arg{i}_part = ({t} *)op2_partials[{j}];");
            let init = if a.access == Access::Inc {
                format!("({t})0")
            } else {
                format!("op2_arg{i}[op2_k % {d}]")
            };
            let _ = writeln!(
                s,
                "  for (int64_t op2_k = 0; op2_k < (int64_t)op2_nthreads * {d}; op2_k++) op2_arg{i}_part[op2_k] = {init};"
            );
        }
        // firstprivate copies the pointers into locals of each thread's outlined function. Read
        // from the shared context instead, they would be reloaded after every store through a
        // kernel pointer (which might alias the context), costing the loop its registers.
        let mut private: Vec<String> = (0..sig.args.len()).map(|i| format!("op2_arg{i}")).collect();
        private.extend((0..sig.n_maps).map(|m| format!("op2_map{m}")));
        private.extend(
            [
                "op2_start",
                "op2_end",
                "op2_ncolours",
                "op2_colour_offsets",
                "op2_block_map",
                "op2_block_offsets",
                "op2_block_lengths",
            ]
            .map(String::from),
        );
        let _ = writeln!(
            s,
            "  #pragma omp parallel num_threads(op2_nthreads) firstprivate({})\n  {{",
            private.join(", ")
        );
        s.push_str("    const int op2_tid = omp_get_thread_num();\n");
        s.push_str("    const int op2_nt = omp_get_num_threads();\n");
        emit_row_vectors(&mut s, sig, "    ");
        // Each thread accumulates in a local copy of its partial (registers, for small ones), or
        // in its partial itself when it is too large for the thread's stack.
        for &i in &reductions {
            let a = &sig.args[i];
            let t = a.dtype.c_name();
            if reduces_locally(a) {
                let _ = writeln!(s, "    {t} op2_arg{i}_l[{}];", a.dim);
                let _ = writeln!(
                    s,
                    "    for (int op2_k = 0; op2_k < {0}; op2_k++) op2_arg{i}_l[op2_k] = op2_arg{i}_part[(int64_t)op2_tid * {0} + op2_k];",
                    a.dim
                );
            } else {
                let _ = writeln!(
                    s,
                    "    {t} *op2_arg{i}_l = op2_arg{i}_part + (int64_t)op2_tid * {};",
                    a.dim
                );
            }
        }
        s.push_str("    if (op2_ncolours == 0) {\n");
        s.push_str("      const int64_t op2_len = op2_end - op2_start;\n");
        if reductions.is_empty() {
            // Chunks handed out as threads come free (see the coloured case), about 16 per
            // thread, a multiple of the SIMD batch.
            let _ = writeln!(
                s,
                "      int64_t op2_chunk = op2_len / (16 * (int64_t)op2_nt);\n      \
                 op2_chunk = op2_chunk < {MIN_CHUNK} ? {MIN_CHUNK} : op2_chunk - op2_chunk % {SIMD_BATCH};\n      \
                 #pragma omp for schedule(dynamic, 1)\n      \
                 for (int64_t op2_lo = op2_start; op2_lo < op2_end; op2_lo += op2_chunk) {{\n        \
                 const int64_t op2_hi = op2_end - op2_lo < op2_chunk ? op2_end : op2_lo + op2_chunk;"
            );
            emit_element_loop(
                &mut s, sig, &call, "op2_lo", "op2_hi", "        ", simd, None,
            );
            s.push_str("      }\n");
        } else {
            s.push_str("      const int64_t op2_lo = op2_start + op2_len * op2_tid / op2_nt;\n");
            s.push_str(
                "      const int64_t op2_hi = op2_start + op2_len * (op2_tid + 1) / op2_nt;\n",
            );
            emit_element_loop(&mut s, sig, &call, "op2_lo", "op2_hi", "      ", simd, None);
        }
        s.push_str("    } else {\n");
        s.push_str("      for (int32_t op2_c = 0; op2_c < op2_ncolours; op2_c++) {\n");
        // `omp for` ends with a barrier: a colour's writes are done before the next colour starts.
        // Blocks go to whichever thread is free: a thread slowed by another process (this is
        // common on shared machines) then takes fewer. Reductions keep a static split, so that
        // a given thread count always sums the same elements per thread.
        if reductions.is_empty() {
            s.push_str("        #pragma omp for schedule(dynamic, 1)\n");
        } else {
            s.push_str("        #pragma omp for schedule(static)\n");
        }
        s.push_str(
            "        for (int64_t op2_b = (int64_t)op2_colour_offsets[op2_c]; op2_b < (int64_t)op2_colour_offsets[op2_c + 1]; op2_b++) {\n",
        );
        s.push_str("          const uint32_t op2_blk = op2_block_map[op2_b];\n");
        s.push_str("          int64_t op2_first = op2_block_offsets[op2_blk];\n");
        s.push_str("          int64_t op2_last = op2_first + op2_block_lengths[op2_blk];\n");
        s.push_str("          if (op2_first < op2_start) op2_first = op2_start;\n");
        s.push_str("          if (op2_last > op2_end) op2_last = op2_end;\n");
        emit_element_loop(
            &mut s,
            sig,
            &call,
            "op2_first",
            "op2_last",
            "          ",
            simd,
            None,
        );
        s.push_str("        }\n      }\n    }\n");
        for &i in reductions
            .iter()
            .filter(|&&i| reduces_locally(&sig.args[i]))
        {
            let _ = writeln!(
                s,
                "    for (int op2_k = 0; op2_k < {0}; op2_k++) op2_arg{i}_part[(int64_t)op2_tid * {0} + op2_k] = op2_arg{i}_l[op2_k];",
                sig.args[i].dim
            );
        }
        s.push_str("  }\n");
        // Combine in thread order, so that a given thread count always gives the same result.
        for &i in &reductions {
            let a = &sig.args[i];
            let d = a.dim;
            let combine = combine_into(
                a.access,
                &format!("op2_arg{i}[op2_k]"),
                &format!("op2_arg{i}_part[(int64_t)op2_t * {d} + op2_k]"),
            );
            let _ = writeln!(
                s,
                "  for (int op2_t = 0; op2_t < op2_nthreads; op2_t++)\n    for (int op2_k = 0; op2_k < {d}; op2_k++) {combine}"
            );
        }
        s.push_str("}\n");
        emit_list_entry(&mut s, sig, simd);
        crate::emit::close_entries(&mut s, sig);
        Ok(GeneratedUnit {
            source: s,
            entry,
            kernel: sig.kernel.name().into(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use op2_core::{ArgKind, ArgSig, DType, Kernel};

    #[test]
    fn reductions_use_thread_partials_and_rows_thread_private_vectors() {
        let k = Kernel::new("k", "void k(double *x[2], double *g, int *m) {}").unwrap();
        let sig = LoopSignature {
            kernel: k,
            args: vec![
                ArgSig {
                    kind: ArgKind::Row { map: 0, arity: 2 },
                    dtype: DType::F64,
                    dim: 1,
                    access: Access::Inc,
                },
                ArgSig {
                    kind: ArgKind::Global,
                    dtype: DType::F64,
                    dim: 1,
                    access: Access::Inc,
                },
                ArgSig {
                    kind: ArgKind::Global,
                    dtype: DType::I32,
                    dim: 1,
                    access: Access::Max,
                },
            ],
            consts: vec![],
            n_maps: 1,
            data: vec![0, 1, 2],
        };
        let u = OpenMpCodegen.emit(&sig, &HostOptions::default()).unwrap();
        let region = u.source.find("#pragma omp parallel").unwrap();
        // The row vector is declared inside the parallel region, so each thread has its own.
        assert!(u.source[region..].contains("double *op2_arg0_vec[2];"));
        assert!(!u.source[..region].contains("op2_arg0_vec[2];"));
        assert!(u.source.contains(
            "op2_kernel_k(OP2_PASS(op2_arg0_vec), OP2_PASS(op2_arg1_l), OP2_PASS(op2_arg2_l));"
        ));
        assert!(u.source.contains("op2_arg1_part[op2_k] = (double)0;"));
        assert!(
            u.source
                .contains("double *op2_arg1_part = (double *)op2_partials[0];")
        );
        assert!(
            u.source
                .contains("op2_arg2_part[op2_k] = op2_arg2[op2_k % 1];")
        );
        assert!(u.source.contains("#pragma omp for schedule(static)"));
    }

    #[test]
    fn loops_without_reductions_hand_out_work_dynamically() {
        let k = Kernel::new("k", "void k(const double *x, double *y[2]) {}").unwrap();
        let sig = LoopSignature {
            kernel: k,
            args: vec![
                ArgSig {
                    kind: ArgKind::Direct,
                    dtype: DType::F64,
                    dim: 1,
                    access: Access::Read,
                },
                ArgSig {
                    kind: ArgKind::Row { map: 0, arity: 2 },
                    dtype: DType::F64,
                    dim: 1,
                    access: Access::Inc,
                },
            ],
            consts: Vec::new(),
            n_maps: 1,
            data: vec![0, 1],
        };
        let src = OpenMpCodegen
            .emit(&sig, &HostOptions::default())
            .unwrap()
            .source;
        // Plan blocks of a colour and chunks of unplanned runs both go to the first free thread.
        assert_eq!(
            src.matches("#pragma omp for schedule(dynamic, 1)").count(),
            2,
            "{src}"
        );
        assert!(!src.contains("schedule(static)"));
        assert!(src.contains("op2_chunk = op2_chunk < 1024 ? 1024 : op2_chunk - op2_chunk % 8;"));
    }
}
