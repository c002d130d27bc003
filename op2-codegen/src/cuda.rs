//! The CUDA dialect (after the OP2 paper): the user's kernel compiled as an inlined
//! `__device__` function (NVRTC's `-default-device`; the kernel's text is never rewritten), Consts
//! as `__constant__` symbols the backend fills, and an `extern "C" __global__` stub per loop: the
//! direct and planned (staged, coloured) stubs shared with OpenCL, or a stub that increments
//! indirect data with `atomicAdd` in one launch. Loops that reduce into Globals get a second
//! kernel, `op2_finish`, that folds the per-block partials into the Global on the device.
//!
//! Every unit also carries, behind `#ifdef OP2_CUDA_EMULATION`, trampolines that let the same
//! source run on the host under [`CUDA_EMULATION_PRELUDE`] (tests without a GPU).

use crate::device::{
    BlockLayout, Dialect, StubParam, combine_expr, data_params, emit_direct_stub,
    emit_group_combine, emit_planned_stub, emit_reduction_finish, emit_reduction_init,
    for_components, private_bytes_per_item,
};
use crate::emit::{const_symbol, emit_consts, emit_kernel, kernel_symbol, reduction_args};
use op2_core::{Access, ArgKind, GeneratedUnit, LoopSignature};
use std::fmt::Write;

/// The loop's kernel in every generated CUDA unit.
pub const CUDA_ENTRY: &str = "op2_stub";

/// The kernel that folds reduction partials into the Globals (one block).
pub const CUDA_FINISH_ENTRY: &str = "op2_finish";

/// The host entry point of a unit compiled for emulation: `int op2_emu_entry(int what, unsigned
/// grid, unsigned block, unsigned long shared_bytes, void **params, char *err, int err_len)`, where
/// `what` is one of the `EMULATION_*` operations. Returns 0, or non-zero with a message in `err`.
pub const CUDA_EMULATION_ENTRY: &str = "op2_emu_entry";
/// Emulation operation: run [`CUDA_ENTRY`] over `grid` blocks of `block` threads.
pub const EMULATION_LAUNCH_STUB: i32 = 0;
/// Emulation operation: run [`CUDA_FINISH_ENTRY`].
pub const EMULATION_LAUNCH_FINISH: i32 = 1;
/// Emulation operation: copy the bytes at `params[0]` into Const number `grid`.
pub const EMULATION_SET_CONST: i32 = 2;

/// Which stub a CUDA program runs.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub enum CudaStub {
    /// One element per thread, no maps.
    Direct,
    /// One plan block per thread block: indirect data staged in shared memory, increments
    /// accumulated in registers and applied colour by colour, block colours launched in turn.
    Planned(BlockLayout),
    /// One element per thread, indirect data read straight from global memory through maps
    /// uploaded entry-major, increments added with `atomicAdd`: no plan, one launch.
    Atomic,
}

/// An emitted CUDA program.
#[derive(Debug, Clone)]
pub struct CudaUnit {
    /// Source, entry ([`CUDA_ENTRY`]) and kernel name.
    pub unit: GeneratedUnit,
    /// [`CUDA_ENTRY`]'s parameters in order.
    pub params: Vec<StubParam>,
    /// [`CUDA_FINISH_ENTRY`]'s parameters, when the loop reduces into Globals.
    pub finish_params: Option<Vec<StubParam>>,
    /// Private (local) memory each thread of [`CUDA_ENTRY`] declares (see
    /// [`crate::private_bytes_per_item`]).
    pub private_bytes: usize,
}

impl CudaUnit {
    /// The source to compile on the host under the emulation prelude.
    pub fn emulation_source(&self) -> String {
        format!("{CUDA_EMULATION_PRELUDE}\n{}", self.unit.source)
    }
}

/// The CUDA emitter.
#[derive(Debug, Clone, Copy, Default)]
pub struct CudaCodegen;

/// A stub's parameters and their C declarations.
struct StubSignature {
    params: Vec<StubParam>,
    decls: Vec<String>,
}

impl CudaCodegen {
    /// Emits the program for `sig` running `stub`.
    pub fn emit(&self, sig: &LoopSignature, stub: &CudaStub) -> CudaUnit {
        let name = sig.kernel.name();
        let mut s = String::new();
        let kind = match stub {
            CudaStub::Direct => "direct",
            CudaStub::Planned(_) => "planned, staged and coloured",
            CudaStub::Atomic => "atomics",
        };
        let _ = writeln!(
            s,
            "/* op2-rs generated CUDA: loop over kernel `{name}` ({kind}) */"
        );
        s.push_str(CUDA_PRELUDE);
        if *stub == CudaStub::Atomic {
            s.push_str(ATOMIC_ADDS);
        }
        emit_consts(&mut s, sig, "__constant__");
        // A static, always-inlined declaration first, as the C emitter does: the definition that
        // follows keeps internal linkage, and the stub sees through its pointers.
        s.push('\n');
        emit_kernel(&mut s, sig, "__device__ __forceinline__");
        let d = Dialect::Cuda;
        let start = s.len();
        let params = match stub {
            CudaStub::Direct => emit_direct_stub(&mut s, sig, CUDA_ENTRY, d, false, true),
            CudaStub::Planned(b) => emit_planned_stub(&mut s, sig, b, CUDA_ENTRY, d, false, true),
            CudaStub::Atomic => emit_atomic_stub(&mut s, sig),
        };
        let private_bytes = private_bytes_per_item(&s[start..]);
        let stub_sig = StubSignature {
            decls: stub_decls(&s[start..]),
            params,
        };
        let finish = (!reduction_args(sig).is_empty()).then(|| {
            s.push('\n');
            let start = s.len();
            let params = emit_finish_kernel(&mut s, sig);
            StubSignature {
                decls: stub_decls(&s[start..]),
                params,
            }
        });
        emit_emulation_trampolines(&mut s, sig, &stub_sig, finish.as_ref());
        CudaUnit {
            unit: GeneratedUnit {
                source: s,
                entry: CUDA_ENTRY.into(),
                kernel: name.into(),
            },
            params: stub_sig.params,
            finish_params: finish.map(|f| f.params),
            private_bytes,
        }
    }
}

/// Definitions every unit starts with. NVRTC compiles without system headers, so the fixed-width
/// types the kernel contract allows are defined here (as on LP64 hosts); `restrict` is C99 only.
const CUDA_PRELUDE: &str = r#"typedef long int64_t;
typedef unsigned long uint64_t;
typedef int int32_t;
typedef unsigned int uint32_t;
typedef unsigned int uint;
typedef unsigned short ushort;
#define restrict __restrict__
#define OP2_ROUND_UP(bytes) (((bytes) + 15) & ~15)
#ifndef INFINITY
#define INFINITY __int_as_float(0x7f800000)
#endif
#ifndef NAN
#define NAN __int_as_float(0x7fffffff)
#endif
/* Hands a pointer to a kernel parameter of any pointer type: C99 kernels take `const double *`,
   `double *x[3]` and so on, and C++ converts `void *` to none of them implicitly. */
struct op2_any {
  void *p;
  template <typename T> __device__ __forceinline__ operator T *() const { return (T *)p; }
};
"#;

/// `atomicAdd` for every element type: 64-bit integers through the unsigned overload (two's
/// complement addition wraps alike).
const ATOMIC_ADDS: &str = r#"static __device__ __forceinline__ void op2_atomic_add(double *p, double v) { atomicAdd(p, v); }
__device__ __forceinline__ void op2_atomic_add(float *p, float v) { atomicAdd(p, v); }
__device__ __forceinline__ void op2_atomic_add(int *p, int v) { atomicAdd(p, v); }
__device__ __forceinline__ void op2_atomic_add(unsigned int *p, unsigned int v) { atomicAdd(p, v); }
__device__ __forceinline__ void op2_atomic_add(long *p, long v) { atomicAdd((unsigned long long *)p, (unsigned long long)v); }
__device__ __forceinline__ void op2_atomic_add(unsigned long *p, unsigned long v) { atomicAdd((unsigned long long *)p, (unsigned long long)v); }
"#;

/// The declarations in the parameter list of the first kernel in `stub`.
fn stub_decls(stub: &str) -> Vec<String> {
    let open = stub.find('(').expect("a stub has a parameter list");
    let close = open
        + stub[open..]
            .find(')')
            .expect("a stub's parameter list closes");
    stub[open + 1..close]
        .split(", ")
        .map(str::to_string)
        .collect()
}

/// One element per thread straight from global memory; indirect increments go to a private copy
/// that is added with `atomicAdd` after the call.
fn emit_atomic_stub(s: &mut String, sig: &LoopSignature) -> Vec<StubParam> {
    let d = Dialect::Cuda;
    let mut decls = vec![
        "const int op2_start".to_string(),
        "const int op2_end".into(),
    ];
    let mut params = vec![StubParam::Start, StubParam::End];
    data_params(sig, d, &mut decls, &mut params);
    for m in 0..sig.n_maps {
        decls.push(format!("const int *op2_map{m}"));
        decls.push(format!("const int op2_map{m}_rows"));
        params.extend([StubParam::MapValues(m), StubParam::MapRows(m)]);
    }
    let reductions = !reduction_args(sig).is_empty();
    s.push_str(&d.kernel_head(CUDA_ENTRY, &decls, reductions));
    if reductions {
        s.push_str(
            "  const int op2_lid = (int)threadIdx.x;\n  const int op2_lsize = (int)blockDim.x;\n  \
             char *op2_scratch = op2_shared;\n",
        );
    }
    s.push_str("  const int op2_e = op2_start + (int)(blockIdx.x * blockDim.x + threadIdx.x);\n");
    emit_reduction_init(s, sig);
    s.push_str("  if (op2_e < op2_end) {\n");
    let target = |map: usize, entry: usize| {
        format!("(long)op2_map{map}[(long){entry} * op2_map{map}_rows + op2_e]")
    };
    let mut call = Vec::new();
    let mut atomics = String::new();
    for (i, a) in sig.args.iter().enumerate() {
        let (t, dim) = (a.dtype.c_name(), a.dim);
        let increments = a.access == Access::Inc;
        match a.kind {
            ArgKind::Direct => call.push(d.pass("", &format!("op2_arg{i} + (long)op2_e * {dim}"))),
            ArgKind::Global if a.access.is_reduction() => {
                call.push(d.pass("", &format!("op2_arg{i}_r")))
            }
            ArgKind::Global => call.push(d.pass("", &format!("op2_arg{i}"))),
            ArgKind::Indirect { map, index, .. } if increments => {
                let _ = writeln!(
                    s,
                    "    {t} op2_arg{i}_l[{dim}];\n    for (int op2_k = 0; op2_k < {dim}; op2_k++) op2_arg{i}_l[op2_k] = 0;"
                );
                call.push(d.pass("", &format!("op2_arg{i}_l")));
                let _ = writeln!(
                    atomics,
                    "    for (int op2_k = 0; op2_k < {dim}; op2_k++) op2_atomic_add(&op2_arg{i}[{} * {dim} + op2_k], op2_arg{i}_l[op2_k]);",
                    target(map, index)
                );
            }
            ArgKind::Indirect { map, index, .. } => {
                call.push(d.pass("", &format!("op2_arg{i} + {} * {dim}", target(map, index))))
            }
            ArgKind::Row { map, arity } => {
                let _ = writeln!(s, "    {t} *op2_arg{i}_vec[{arity}];");
                if increments {
                    let n = arity * dim;
                    let _ = writeln!(
                        s,
                        "    {t} op2_arg{i}_l[{n}];\n    for (int op2_k = 0; op2_k < {n}; op2_k++) op2_arg{i}_l[op2_k] = 0;"
                    );
                    for j in 0..arity {
                        let _ =
                            writeln!(s, "    op2_arg{i}_vec[{j}] = op2_arg{i}_l + {};", j * dim);
                        let _ = writeln!(
                            atomics,
                            "    for (int op2_k = 0; op2_k < {dim}; op2_k++) op2_atomic_add(&op2_arg{i}[{} * {dim} + op2_k], op2_arg{i}_l[{} + op2_k]);",
                            target(map, j),
                            j * dim
                        );
                    }
                } else {
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
    let _ = writeln!(
        s,
        "    {}({});",
        kernel_symbol(sig.kernel.name()),
        call.join(", ")
    );
    s.push_str(&atomics);
    s.push_str("  }\n");
    emit_reduction_finish(s, sig, "(int)blockIdx.x", true, d);
    s.push_str("}\n");
    params
}

/// One block folds every reduction's partials (in a fixed order, so a given launch shape always
/// gives the same bits) and combines them with the Global's value on the device.
fn emit_finish_kernel(s: &mut String, sig: &LoopSignature) -> Vec<StubParam> {
    let d = Dialect::Cuda;
    let mut decls = vec!["const int op2_nparts".to_string()];
    let mut params = vec![StubParam::PartialCount];
    for i in reduction_args(sig) {
        let t = sig.args[i].dtype.c_name();
        decls.push(format!("{t} *op2_arg{i}"));
        decls.push(format!("const {t} *op2_arg{i}_part"));
        params.extend([StubParam::Data(i), StubParam::Partials(i)]);
    }
    s.push_str(&d.kernel_head(CUDA_FINISH_ENTRY, &decls, true));
    s.push_str(
        "  const int op2_lid = (int)threadIdx.x;\n  const int op2_lsize = (int)blockDim.x;\n  \
         char *op2_scratch = op2_shared;\n  int op2_p = 1;\n  while (op2_p < op2_lsize) op2_p <<= 1;\n",
    );
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
                "  {{\n  {t} op2_v = {init};\n  \
                 for (int op2_j = op2_lid; op2_j < op2_nparts; op2_j += op2_lsize) {{ \
                 {t} op2_x = op2_v, op2_y = op2_arg{i}_part[(long)op2_j * {dim} + {k}]; op2_v = {combine}; }}",
                dim = a.dim
            );
            emit_group_combine(s, d, true, t, a.access, "op2_v", |r| match a.access {
                Access::Inc => format!("op2_arg{i}[{k}] += {r};"),
                _ => format!(
                    "{t} op2_x = op2_arg{i}[{k}], op2_y = {r}; op2_arg{i}[{k}] = {combine};"
                ),
            });
            s.push_str("  }\n");
        });
    }
    s.push_str("}\n");
    params
}

/// The C type of a parameter declaration (`const int op2_start` -> `const int`).
fn decl_type(decl: &str) -> &str {
    decl.trim_end_matches(|c: char| c.is_ascii_alphanumeric() || c == '_')
        .trim_end()
}

/// Host trampolines (compiled only under [`CUDA_EMULATION_PRELUDE`]): each kernel called with its
/// arguments read from a `void **` array, as `cuLaunchKernel` passes them, and the Consts' setter.
fn emit_emulation_trampolines(
    s: &mut String,
    sig: &LoopSignature,
    stub: &StubSignature,
    finish: Option<&StubSignature>,
) {
    s.push_str("\n#ifdef OP2_CUDA_EMULATION\n");
    let mut trampoline = |entry: &str, decls: &[String]| {
        let args: Vec<String> = decls
            .iter()
            .enumerate()
            .map(|(j, d)| format!("*({} *)op2_p[{j}]", decl_type(d)))
            .collect();
        let _ = writeln!(
            s,
            "static void op2_emu_{entry}(void **op2_p) {{ {entry}({}); }}",
            args.join(", ")
        );
    };
    trampoline(CUDA_ENTRY, &stub.decls);
    if let Some(f) = finish {
        trampoline(CUDA_FINISH_ENTRY, &f.decls);
    }
    let _ = writeln!(
        s,
        "extern \"C\" __attribute__((visibility(\"default\"))) int {CUDA_EMULATION_ENTRY}(int op2_what, \
         unsigned op2_grid, unsigned op2_block, unsigned long op2_shared_bytes, void **op2_p, \
         char *op2_err, int op2_err_len) {{\n  switch (op2_what) {{\n  case {EMULATION_LAUNCH_STUB}: \
         return op2_emu_run(op2_emu_{CUDA_ENTRY}, op2_p, op2_grid, op2_block, op2_shared_bytes, op2_err, op2_err_len);"
    );
    if finish.is_some() {
        let _ = writeln!(
            s,
            "  case {EMULATION_LAUNCH_FINISH}: return op2_emu_run(op2_emu_{CUDA_FINISH_ENTRY}, op2_p, \
             op2_grid, op2_block, op2_shared_bytes, op2_err, op2_err_len);"
        );
    }
    let _ = writeln!(s, "  case {EMULATION_SET_CONST}:\n    switch (op2_grid) {{");
    for (j, c) in sig.consts.iter().enumerate() {
        let _ = writeln!(
            s,
            "    case {j}: ::memcpy((void *)&{n}, op2_p[0], sizeof({n})); return 0;",
            n = const_symbol(&c.name)
        );
    }
    s.push_str(
        "    }\n  }\n  snprintf(op2_err, (size_t)op2_err_len, \"no emulation operation %d (%u)\", op2_what, op2_grid);\n  \
         return 1;\n}\n#endif\n",
    );
}

/// CUDA on the host, for running generated units without a GPU: blocks run one after another, the
/// threads of a block as coroutines (`ucontext`) that switch at `__syncthreads()`, so a barrier
/// some threads of a block never reach is reported instead of hanging. Shared memory is filled
/// with `0xff` bytes (NaN, -1) before each block, so data read before it was staged shows up.
/// Atomics are plain additions (one thread runs at a time).
pub const CUDA_EMULATION_PRELUDE: &str = r#"/* op2-rs: CUDA emulated on the host */
#define OP2_CUDA_EMULATION 1
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <ucontext.h>
#define __global__
#define __device__
#define __host__
#define __forceinline__ inline
#define __constant__
#define __shared__
#define __align__(n) __attribute__((aligned(n)))
#define __restrict__ __restrict
struct op2_dim3 { unsigned int x, y, z; };
static op2_dim3 threadIdx, blockIdx, blockDim, gridDim;
enum { OP2_EMU_SHARED_BYTES = 256 * 1024, OP2_EMU_STACK_BYTES = 128 * 1024, OP2_EMU_MAX_THREADS = 1024 };
__attribute__((aligned(16))) char op2_shared[OP2_EMU_SHARED_BYTES];
static inline float __int_as_float(int i) { float f; memcpy(&f, &i, sizeof f); return f; }
static inline double atomicAdd(double *p, double v) { double o = *p; *p = o + v; return o; }
static inline float atomicAdd(float *p, float v) { float o = *p; *p = o + v; return o; }
static inline int atomicAdd(int *p, int v) { int o = *p; *p = (int)((unsigned int)o + (unsigned int)v); return o; }
static inline unsigned int atomicAdd(unsigned int *p, unsigned int v) { unsigned int o = *p; *p = o + v; return o; }
static inline unsigned long long atomicAdd(unsigned long long *p, unsigned long long v) { unsigned long long o = *p; *p = o + v; return o; }
struct op2_emu_thread { ucontext_t ctx; int state; /* 0 runnable, 1 at a barrier, 2 returned */ };
static op2_emu_thread op2_emu_threads[OP2_EMU_MAX_THREADS];
static char *op2_emu_stacks;
static unsigned op2_emu_current;
static ucontext_t op2_emu_main;
static void (*op2_emu_kernel)(void **);
static void **op2_emu_params;
static void op2_emu_body(void) {
  op2_emu_kernel(op2_emu_params);
  op2_emu_threads[op2_emu_current].state = 2;
}
static void __syncthreads(void) {
  op2_emu_thread *t = &op2_emu_threads[op2_emu_current];
  t->state = 1;
  swapcontext(&t->ctx, &op2_emu_main);
}
static int op2_emu_run(void (*kernel)(void **), void **params, unsigned grid, unsigned block,
                       unsigned long shared, char *err, int err_len) {
  if (block == 0 || block > OP2_EMU_MAX_THREADS) {
    snprintf(err, (size_t)err_len, "a block of %u threads (1 to %d allowed)", block, OP2_EMU_MAX_THREADS);
    return 1;
  }
  if (shared > OP2_EMU_SHARED_BYTES) {
    snprintf(err, (size_t)err_len, "%lu bytes of shared memory (at most %d)", shared, OP2_EMU_SHARED_BYTES);
    return 1;
  }
  if (!op2_emu_stacks) {
    op2_emu_stacks = (char *)malloc((size_t)OP2_EMU_MAX_THREADS * OP2_EMU_STACK_BYTES);
    if (!op2_emu_stacks) { snprintf(err, (size_t)err_len, "no memory for thread stacks"); return 1; }
  }
  op2_emu_kernel = kernel;
  op2_emu_params = params;
  gridDim.x = grid; gridDim.y = gridDim.z = 1;
  blockDim.x = block; blockDim.y = blockDim.z = 1;
  for (unsigned b = 0; b < grid; b++) {
    blockIdx.x = b; blockIdx.y = blockIdx.z = 0;
    memset(op2_shared, 0xff, shared);
    for (unsigned t = 0; t < block; t++) {
      op2_emu_thread *th = &op2_emu_threads[t];
      getcontext(&th->ctx);
      th->ctx.uc_stack.ss_sp = op2_emu_stacks + (size_t)t * OP2_EMU_STACK_BYTES;
      th->ctx.uc_stack.ss_size = OP2_EMU_STACK_BYTES;
      th->ctx.uc_link = &op2_emu_main;
      makecontext(&th->ctx, (void (*)(void))op2_emu_body, 0);
      th->state = 0;
    }
    for (;;) {
      unsigned waiting = 0, done = 0;
      for (unsigned t = 0; t < block; t++) {
        if (op2_emu_threads[t].state == 2) { done++; continue; }
        op2_emu_threads[t].state = 0;
        op2_emu_current = t;
        threadIdx.x = t; threadIdx.y = threadIdx.z = 0;
        swapcontext(&op2_emu_main, &op2_emu_threads[t].ctx);
        if (op2_emu_threads[t].state == 1) waiting++; else done++;
      }
      if (done == block) break;
      if (waiting != block) {
        snprintf(err, (size_t)err_len, "block %u: __syncthreads() reached by %u of %u threads, the others returned", b, waiting, block);
        return 1;
      }
    }
  }
  return 0;
}
"#;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::device::{StagingLayout, StagingMode};
    use op2_core::{ArgSig, ConstSig, DType, Kernel};

    fn res_calc_like() -> LoopSignature {
        let k = Kernel::new(
            "flux",
            "void flux(const double *x[2], double *r0, double *r1, double *s) { r0[0] += x[0][0] * gam; r1[0] -= x[1][0]; *s += 1; }",
        )
        .unwrap();
        let inc = |index| ArgSig {
            kind: ArgKind::Indirect {
                map: 1,
                arity: 2,
                index,
            },
            dtype: DType::F64,
            dim: 1,
            access: Access::Inc,
        };
        LoopSignature {
            kernel: k,
            args: vec![
                ArgSig {
                    kind: ArgKind::Row { map: 0, arity: 2 },
                    dtype: DType::F64,
                    dim: 2,
                    access: Access::Read,
                },
                inc(0),
                inc(1),
                ArgSig {
                    kind: ArgKind::Global,
                    dtype: DType::F64,
                    dim: 1,
                    access: Access::Inc,
                },
            ],
            consts: vec![ConstSig {
                name: "gam".into(),
                dtype: DType::F64,
                dim: 1,
            }],
            n_maps: 2,
        }
    }

    #[test]
    fn atomic_stub_adds_increments_through_entry_major_maps() {
        let sig = res_calc_like();
        let u = CudaCodegen.emit(&sig, &CudaStub::Atomic);
        let src = &u.unit.source;
        assert!(src.contains("__constant__ double op2_const_gam;"), "{src}");
        assert!(src.contains("#define gam op2_const_gam"));
        assert!(src.contains(
            "static __device__ __forceinline__ void flux(const double * x[2], double * r0, double * r1, double * s);"
        ));
        assert!(src.contains(
            "op2_atomic_add(&op2_arg1[(long)op2_map1[(long)0 * op2_map1_rows + op2_e] * 1 + op2_k], op2_arg1_l[op2_k]);"
        ));
        assert!(src.contains(
            "op2_arg0_vec[1] = op2_arg0 + (long)op2_map0[(long)1 * op2_map0_rows + op2_e] * 2;"
        ));
        assert_eq!(
            u.params,
            [
                StubParam::Start,
                StubParam::End,
                StubParam::Data(0),
                StubParam::Data(1),
                StubParam::Data(2),
                StubParam::Data(3),
                StubParam::Partials(3),
                StubParam::MapValues(0),
                StubParam::MapRows(0),
                StubParam::MapValues(1),
                StubParam::MapRows(1),
            ]
        );
        assert_eq!(
            u.finish_params.as_deref(),
            Some(
                &[
                    StubParam::PartialCount,
                    StubParam::Data(3),
                    StubParam::Partials(3)
                ][..]
            )
        );
        // The trampoline reads every parameter with its declared type.
        assert!(src.contains(
            "static void op2_emu_op2_stub(void **op2_p) { op2_stub(*(const int *)op2_p[0], *(const int *)op2_p[1], *(double * *)op2_p[2]"
        ));
        assert!(src.contains(
            "case 0: ::memcpy((void *)&op2_const_gam, op2_p[0], sizeof(op2_const_gam)); return 0;"
        ));
    }

    #[test]
    fn planned_stub_uses_launch_shared_memory_and_thread_ids() {
        let sig = res_calc_like();
        let blocks = BlockLayout {
            stagings: vec![
                StagingLayout {
                    dtype: DType::F64,
                    dim: 2,
                    entries: vec![0, 1],
                    wide_indices: false,
                    mode: StagingMode::Read,
                    source_arg: 0,
                },
                StagingLayout {
                    dtype: DType::F64,
                    dim: 1,
                    entries: vec![0, 1],
                    wide_indices: true,
                    mode: StagingMode::Increment,
                    source_arg: 1,
                },
            ],
            arg_staging: vec![Some(0), Some(1), Some(1), None],
        };
        let u = CudaCodegen.emit(&sig, &CudaStub::Planned(blocks));
        let src = &u.unit.source[..u.unit.source.find("#ifdef OP2_CUDA_EMULATION").unwrap()];
        assert!(src.contains("extern \"C\" __global__ void op2_stub("));
        assert!(src.contains("extern __shared__ __align__(16) char op2_shared[];"));
        assert!(src.contains("__syncthreads();"));
        assert!(!src.contains("__local") && !src.contains("__global ") && !src.contains("size_t"));
        assert!(src.contains("char *op2_scratch = op2_shared + op2_bytes;"));
        assert!(!u.params.contains(&StubParam::Shared) && !u.params.contains(&StubParam::Scratch));
        assert!(src.contains("const uint *op2_s1_local"));
    }

    #[test]
    fn finish_kernel_combines_with_the_global() {
        let mut sig = res_calc_like();
        sig.args[3].access = Access::Max;
        let u = CudaCodegen.emit(&sig, &CudaStub::Direct);
        let src = &u.unit.source;
        assert!(src.contains("extern \"C\" __global__ void op2_finish(const int op2_nparts, double *op2_arg3, const double *op2_arg3_part)"));
        assert!(src.contains("double op2_v = op2_arg3[0];"));
        assert!(src.contains("op2_arg3[0] = (op2_y > op2_x ? op2_y : op2_x);"));
        assert!(!src.contains("op2_atomic_add"));
    }

    #[test]
    fn declarations_give_their_types() {
        assert_eq!(decl_type("const int op2_start"), "const int");
        assert_eq!(decl_type("double *op2_arg0"), "double *");
        assert_eq!(decl_type("const ushort *op2_s0_local"), "const ushort *");
    }
}
