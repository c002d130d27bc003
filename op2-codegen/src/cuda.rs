//! The CUDA dialect (after the OP2 paper): the user's kernel compiled as an inlined `__device__`
//! function (NVRTC's `-default-device`; the kernel's text is never rewritten), Consts as
//! `__constant__` symbols the device fills, `extern "C" __global__` stubs (the shared device
//! stubs, and the atomics stub with `atomicAdd`), and a second kernel, `op2_finish`, folding
//! reduction partials on the device.
//!
//! Every unit also carries, behind `#ifdef OP2_CUDA_EMULATION`, trampolines that let the same
//! source run on the host under [`CUDA_EMULATION_PRELUDE`] (tests without a GPU).

use crate::device_codegen::DeviceUnit;
use crate::dialect::{
    ConstPassing, DEVICE_ENTRY, DeviceOptions, DeviceStub, Dialect, FINISH_ENTRY, KernelDecl,
    without_builtin_includes,
};
use crate::emit::{const_symbol, emit_consts, emit_kernel};
use op2_core::{Access, LoopSignature, Result};
use std::fmt::Write;

/// The host entry point of a unit compiled for emulation: `int op2_emu_entry(int what, unsigned
/// grid, unsigned block, unsigned long shared_bytes, void **params, char *err, int err_len)`, where
/// `what` is one of the `EMULATION_*` operations. Returns 0, or non-zero with a message in `err`.
pub const CUDA_EMULATION_ENTRY: &str = "op2_emu_entry";
/// Emulation operation: run the stub over `grid` blocks of `block` threads.
pub const EMULATION_LAUNCH_STUB: i32 = 0;
/// Emulation operation: run the finishing kernel.
pub const EMULATION_LAUNCH_FINISH: i32 = 1;
/// Emulation operation: copy the bytes at `params[0]` into Const number `grid`.
pub const EMULATION_SET_CONST: i32 = 2;

/// The source of a CUDA unit to compile on the host under the emulation prelude.
pub fn emulation_source(unit: &DeviceUnit) -> String {
    format!("{CUDA_EMULATION_PRELUDE}\n{}", unit.unit.source)
}

/// CUDA C++, compiled by NVRTC.
#[derive(Debug, Clone, Copy, Default)]
pub struct Cuda;

impl Dialect for Cuda {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn prelude(&self, atomics: bool) -> String {
        let mut p = CUDA_PRELUDE.to_string();
        if atomics {
            p.push_str(ATOMIC_ADDS);
        }
        p
    }

    fn global(&self) -> &'static str {
        ""
    }

    fn shared(&self) -> &'static str {
        ""
    }

    fn constant(&self) -> &'static str {
        "const "
    }

    fn barrier(&self) -> &'static str {
        "__syncthreads()"
    }

    fn local_id(&self) -> &'static str {
        "(int)threadIdx.x"
    }

    fn local_size(&self) -> &'static str {
        "(int)blockDim.x"
    }

    fn group_id(&self) -> &'static str {
        "(int)blockIdx.x"
    }

    fn global_id(&self) -> &'static str {
        "(int)(blockIdx.x * blockDim.x + threadIdx.x)"
    }

    /// NVRTC has no `size_t` without headers.
    fn wide(&self) -> &'static str {
        "long"
    }

    /// C++ converts `void *` to no other pointer implicitly: `op2_any`'s conversion operator
    /// produces whatever pointer type the parameter has (`const double *`, `double **`, ...), so
    /// the kernel's own parameter list is never rewritten.
    fn pass(&self, _space: &str, expr: &str) -> String {
        format!("op2_any{{(void *)({expr})}}")
    }

    /// Stubs are `extern "C"` (unmangled names for the driver) and declare the launch's dynamic
    /// shared memory.
    fn kernel_head(&self, entry: &str, decl: &[String], shared_memory: bool) -> String {
        let mut s = format!(
            "extern \"C\" __global__ void {entry}({}) {{\n",
            decl.join(", ")
        );
        if shared_memory {
            s.push_str("  extern __shared__ __align__(16) char op2_shared[];\n");
        }
        s
    }

    fn local_memory_params(&self) -> bool {
        false
    }

    fn const_passing(&self) -> ConstPassing {
        ConstPassing::Symbols
    }

    fn atomic_add(&self) -> Option<&'static str> {
        Some("op2_atomic_add")
    }

    fn atomic_reduce(&self, access: Access) -> Option<&'static str> {
        match access {
            Access::Inc => Some("op2_atomic_add"),
            Access::Min => Some("op2_atomic_min"),
            Access::Max => Some("op2_atomic_max"),
            _ => None,
        }
    }

    /// Each load of a loop over reduction partials otherwise waits for the one before it to come
    /// back from memory (one block folds thousands of partials).
    fn unroll_hint(&self) -> &'static str {
        "#pragma unroll 4\n  "
    }

    fn emit_consts(&self, s: &mut String, sig: &LoopSignature, _baked: Option<&[Vec<u8>]>) {
        // Symbols whatever the values: the device copies them in.
        emit_consts(s, sig, "__constant__");
    }

    fn emit_user_kernel(
        &self,
        s: &mut String,
        sig: &LoopSignature,
        _stub: &DeviceStub,
        _options: &DeviceOptions,
    ) -> Result<()> {
        // A static, always-inlined declaration first, as the C emitter does: the definition that
        // follows keeps internal linkage, and the stub sees through its pointers.
        // NVRTC has no C library: `#include <math.h>` (CUDA's math functions are built in)
        // would not compile.
        let mut kernel = String::new();
        emit_kernel(&mut kernel, sig, "__device__ __forceinline__");
        s.push_str(&without_builtin_includes(&kernel, &["math.h"], "CUDA"));
        Ok(())
    }

    fn epilogue(&self, s: &mut String, sig: &LoopSignature, kernels: &[KernelDecl]) {
        emit_emulation_trampolines(s, sig, kernels);
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
__device__ __forceinline__ void op2_atomic_min(int *p, int v) { atomicMin(p, v); }
__device__ __forceinline__ void op2_atomic_min(unsigned int *p, unsigned int v) { atomicMin(p, v); }
__device__ __forceinline__ void op2_atomic_min(long *p, long v) { atomicMin((long long *)p, (long long)v); }
__device__ __forceinline__ void op2_atomic_min(unsigned long *p, unsigned long v) { atomicMin((unsigned long long *)p, (unsigned long long)v); }
__device__ __forceinline__ void op2_atomic_max(int *p, int v) { atomicMax(p, v); }
__device__ __forceinline__ void op2_atomic_max(unsigned int *p, unsigned int v) { atomicMax(p, v); }
__device__ __forceinline__ void op2_atomic_max(long *p, long v) { atomicMax((long long *)p, (long long)v); }
__device__ __forceinline__ void op2_atomic_max(unsigned long *p, unsigned long v) { atomicMax((unsigned long long *)p, (unsigned long long)v); }
/* Floating-point MIN and MAX by compare-and-swap: a value replaces the stored one when it
   compares lower (higher), as the final kernel's `y < x ? y : x` does (NaN never replaces). */
__device__ __forceinline__ void op2_atomic_min(double *p, double v) {
  unsigned long long *a = (unsigned long long *)p, old = *a, seen;
  while (v < __longlong_as_double((long long)old)) { seen = old; old = atomicCAS(a, seen, (unsigned long long)__double_as_longlong(v)); if (old == seen) break; }
}
__device__ __forceinline__ void op2_atomic_max(double *p, double v) {
  unsigned long long *a = (unsigned long long *)p, old = *a, seen;
  while (v > __longlong_as_double((long long)old)) { seen = old; old = atomicCAS(a, seen, (unsigned long long)__double_as_longlong(v)); if (old == seen) break; }
}
__device__ __forceinline__ void op2_atomic_min(float *p, float v) {
  unsigned int *a = (unsigned int *)p, old = *a, seen;
  while (v < __int_as_float((int)old)) { seen = old; old = atomicCAS(a, seen, (unsigned int)__float_as_int(v)); if (old == seen) break; }
}
__device__ __forceinline__ void op2_atomic_max(float *p, float v) {
  unsigned int *a = (unsigned int *)p, old = *a, seen;
  while (v > __int_as_float((int)old)) { seen = old; old = atomicCAS(a, seen, (unsigned int)__float_as_int(v)); if (old == seen) break; }
}
"#;

/// The C type of a parameter declaration (`const int op2_start` -> `const int`).
fn decl_type(decl: &str) -> &str {
    decl.trim_end_matches(|c: char| c.is_ascii_alphanumeric() || c == '_')
        .trim_end()
}

/// Host trampolines (compiled only under [`CUDA_EMULATION_PRELUDE`]): each kernel called with its
/// arguments read from a `void **` array, as `cuLaunchKernel` passes them, and the Consts' setter.
fn emit_emulation_trampolines(s: &mut String, sig: &LoopSignature, kernels: &[KernelDecl]) {
    s.push_str("\n#ifdef OP2_CUDA_EMULATION\n");
    for k in kernels {
        let args: Vec<String> = k
            .decls
            .iter()
            .enumerate()
            .map(|(j, d)| format!("*({} *)op2_p[{j}]", decl_type(d)))
            .collect();
        let _ = writeln!(
            s,
            "static void op2_emu_{0}(void **op2_p) {{ {0}({1}); }}",
            k.entry,
            args.join(", ")
        );
    }
    let _ = writeln!(
        s,
        "extern \"C\" __attribute__((visibility(\"default\"))) int {CUDA_EMULATION_ENTRY}(int op2_what, \
         unsigned op2_grid, unsigned op2_block, unsigned long op2_shared_bytes, void **op2_p, \
         char *op2_err, int op2_err_len) {{\n  switch (op2_what) {{\n  case {EMULATION_LAUNCH_STUB}: \
         return op2_emu_run(op2_emu_{DEVICE_ENTRY}, op2_p, op2_grid, op2_block, op2_shared_bytes, op2_err, op2_err_len);"
    );
    if kernels.iter().any(|k| k.entry == FINISH_ENTRY) {
        let _ = writeln!(
            s,
            "  case {EMULATION_LAUNCH_FINISH}: return op2_emu_run(op2_emu_{FINISH_ENTRY}, op2_p, \
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
template <typename T> static inline T atomicMin(T *p, T v) { T o = *p; if (v < o) *p = v; return o; }
template <typename T> static inline T atomicMax(T *p, T v) { T o = *p; if (v > o) *p = v; return o; }
template <typename T> static inline T atomicCAS(T *p, T expected, T v) { T o = *p; if (o == expected) *p = v; return o; }
static inline double __longlong_as_double(long long i) { double d; memcpy(&d, &i, sizeof d); return d; }
static inline long long __double_as_longlong(double d) { long long i; memcpy(&i, &d, sizeof i); return i; }
static inline int __float_as_int(float f) { int i; memcpy(&i, &f, sizeof i); return i; }
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
    use crate::device::{
        StagedRow, StubParam, block_atomics, direct_staging_bytes, staged_direct_rows,
    };
    use crate::device_codegen::DeviceCodegen;
    use crate::layout::{BlockLayout, StagingLayout, StagingMode};
    use op2_core::{Access, ArgKind, ArgSig, Codegen, ConstSig, DType, Kernel};

    fn emit(sig: &LoopSignature, stub: DeviceStub) -> DeviceUnit {
        let options = DeviceOptions {
            tree_reductions: true,
            ..DeviceOptions::default()
        };
        DeviceCodegen { dialect: &Cuda }
            .emit(sig, &(stub, options))
            .unwrap()
    }

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
            data: vec![0, 1, 1, 3],
        }
    }

    #[test]
    fn atomic_stub_adds_increments_through_entry_major_maps() {
        let sig = res_calc_like();
        let u = emit(&sig, DeviceStub::Atomic);
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

    fn direct(access: Access, dim: usize) -> ArgSig {
        ArgSig {
            kind: ArgKind::Direct,
            dtype: DType::F64,
            dim,
            access,
        }
    }

    #[test]
    fn small_direct_rows_are_staged_when_asked() {
        let k = Kernel::new(
            "upd",
            "void upd(const double *a, double *b, double *c, const double *d, double *e) { b[0] = a[0] + c[0] + *d + e[1]; }",
        )
        .unwrap();
        let sig = LoopSignature {
            kernel: k,
            // a (dim 4, READ), b (dim 4, WRITE), c (dim 1), d and e: one Dat passed twice.
            args: vec![
                direct(Access::Read, 4),
                direct(Access::Write, 4),
                direct(Access::Rw, 1),
                direct(Access::Read, 2),
                direct(Access::Rw, 2),
            ],
            consts: Vec::new(),
            n_maps: 0,
            data: vec![0, 1, 2, 3, 3],
        };
        let options = DeviceOptions {
            tree_reductions: true,
            stage_direct_rows: true,
            ..DeviceOptions::default()
        };
        let staged = staged_direct_rows(&sig, &Cuda, &options);
        assert_eq!(
            staged,
            [
                StagedRow { arg: 0, pitch: 5 },
                StagedRow { arg: 1, pitch: 5 }
            ]
        );
        // Two areas of 5 doubles per thread, each rounded up to 16 bytes.
        assert_eq!(direct_staging_bytes(&sig, &staged, 3), 2 * 128);
        assert_eq!(
            direct_staging_bytes(
                &sig,
                &staged_direct_rows(&sig, &Cuda, &DeviceOptions::default()),
                3
            ),
            0
        );
        let u = DeviceCodegen { dialect: &Cuda }
            .emit(&sig, &(DeviceStub::Direct, options.clone()))
            .unwrap();
        let src = &u.unit.source;
        // READ rows come in, WRITE rows only go out; the kernel gets the staged row.
        assert!(
            src.contains(
                "op2_arg0_s[op2_w / 4 * 5 + op2_w % 4] = op2_arg0[(long)op2_sfirst * 4 + op2_w];"
            ),
            "{src}"
        );
        assert!(
            !src.contains("op2_arg1_s[op2_w / 4 * 5 + op2_w % 4] = op2_arg1["),
            "{src}"
        );
        assert!(src.contains(
            "op2_arg1[(long)op2_sfirst * 4 + op2_w] = op2_arg1_s[op2_w / 4 * 5 + op2_w % 4];"
        ));
        assert!(!src.contains("op2_arg0[(long)op2_sfirst * 4 + op2_w] = "));
        assert!(src.contains("(void *)(op2_arg1_s + op2_slid * 5)"));
        assert!(src.contains("(void *)(op2_arg3 + (long)op2_e * 2)"));
        assert!(src.contains("extern __shared__ __align__(16) char op2_shared[];"));
        // The OpenCL dialect takes local memory as parameters: nothing is staged there.
        assert!(staged_direct_rows(&sig, &crate::OpenCl, &options).is_empty());
    }

    #[test]
    fn block_atomics_add_atomically_at_both_levels_in_one_launch() {
        let sig = res_calc_like();
        let layout = BlockLayout::of_signature(&sig, 256);
        let options = DeviceOptions {
            tree_reductions: true,
            block_atomics: true,
            ..DeviceOptions::default()
        };
        assert!(block_atomics(&sig, &layout, &Cuda, &options));
        let u = DeviceCodegen { dialect: &Cuda }
            .emit(
                &sig,
                &(DeviceStub::Planned(layout.clone()), options.clone()),
            )
            .unwrap();
        let src = &u.unit.source;
        assert!(
            src.contains("op2_atomic_add(&op2_d[op2_k], op2_arg1_l[0 + op2_k]);"),
            "{src}"
        );
        assert!(src.contains("op2_atomic_add(&op2_arg1[(long)op2_s1_map[op2_k / 1] * 1 + op2_k % 1], op2_s1[op2_k]);"), "{src}");
        assert!(!src.contains("for (int op2_c = 0;"), "{src}");
        // Without it: colours, plain additions.
        let plain = emit(&sig, DeviceStub::Planned(layout.clone()));
        assert!(plain.unit.source.contains("for (int op2_c = 0;"));
        assert!(!plain.unit.source.contains("op2_atomic_add"));
        // A loop that writes staged data other than by increments keeps its colours.
        let mut rw = sig.clone();
        rw.args[1].access = Access::Rw;
        let rw_layout = BlockLayout::of_signature(&rw, 256);
        assert!(!block_atomics(&rw, &rw_layout, &Cuda, &options));
    }

    #[test]
    fn atomic_reductions_leave_no_final_kernel() {
        let mut sig = res_calc_like();
        let options = DeviceOptions {
            tree_reductions: true,
            atomic_reductions: true,
            ..DeviceOptions::default()
        };
        let emit_with = |sig: &LoopSignature| {
            DeviceCodegen { dialect: &Cuda }
                .emit(sig, &(DeviceStub::Atomic, options.clone()))
                .unwrap()
        };
        let u = emit_with(&sig);
        assert!(u.finish_params.is_none());
        assert!(
            u.unit
                .source
                .contains("if (op2_lid == 0) { op2_atomic_add(&op2_arg3[0], op2_r[0]); }"),
            "{}",
            u.unit.source
        );
        assert!(!u.unit.source.contains("op2_finish"));
        sig.args[3].access = Access::Max;
        let u = emit_with(&sig);
        assert!(
            u.unit
                .source
                .contains("op2_atomic_max(&op2_arg3[0], op2_r[0]);")
        );
        // The Global also read by another arg: partials and a final kernel, as without.
        sig.args.push(ArgSig {
            kind: ArgKind::Global,
            dtype: DType::F64,
            dim: 1,
            access: Access::Read,
        });
        sig.data.push(3);
        let u = emit_with(&sig);
        assert!(u.finish_params.is_some());
        assert!(!u.unit.source.contains("op2_atomic_max(&op2_arg3"));
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
        let u = emit(&sig, DeviceStub::Planned(blocks));
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
        let u = emit(&sig, DeviceStub::Direct);
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
