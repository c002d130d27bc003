//! The host emulator is only evidence if it catches what a GPU would punish: a `__syncthreads()`
//! some threads of a block never reach, shared memory read before anything was staged into it,
//! device memory read before it was written. Each test hands it a unit with one such fault.

use backend_cuda::{EmulatedGpu, NvrtcCheck};
use op2_codegen::{DEVICE_ENTRY as CUDA_ENTRY, DeviceUnit, StubParam};
use op2_core::{Config, GeneratedUnit, Op2Error};
use op2_device::DeviceMemory;
use op2_device::{Device, Entry, LaunchArg, LaunchShape};

/// The emulator, or `None` (with the reason) where it cannot run here (no C++ compiler) and
/// `OP2_REQUIRE_BACKENDS` does not name it.
fn gpu() -> Option<(EmulatedGpu, tempfile::TempDir)> {
    let dir = tempfile::tempdir().unwrap();
    let config = Config {
        cache_dir: dir.path().to_path_buf(),
        ..Config::default()
    };
    match EmulatedGpu::new(&config, NvrtcCheck::Off) {
        Ok(g) => Some((g, dir)),
        Err(e) if !op2_test_support::backend_required("cuda-emulator") => {
            eprintln!("skipped: {e}");
            None
        }
        Err(e) => panic!("the emulator is required here: {e}"),
    }
}

/// A unit whose stub is `body`, taking one `double *out`, with the emulation trampolines.
fn unit(name: &str, body: &str) -> DeviceUnit {
    let source = format!(
        "extern \"C\" __global__ void {CUDA_ENTRY}(double *out) {{\n{body}\n}}\n\
         #ifdef OP2_CUDA_EMULATION\n\
         static void op2_emu_stub(void **p) {{ {CUDA_ENTRY}(*(double **)p[0]); }}\n\
         extern \"C\" __attribute__((visibility(\"default\"))) int op2_emu_entry(int what, unsigned g, \
         unsigned b, unsigned long s, void **p, char *e, int n) {{\n\
           if (what == 0) return op2_emu_run(op2_emu_stub, p, g, b, s, e, n);\n\
           snprintf(e, (size_t)n, \"no operation %d\", what); return 1;\n}}\n#endif\n"
    );
    DeviceUnit {
        unit: GeneratedUnit {
            source,
            entry: CUDA_ENTRY.into(),
            kernel: name.into(),
        },
        params: vec![StubParam::Data(0)],
        finish_params: None,
        private_bytes: 0,
        const_symbols: Vec::new(),
    }
}

fn run(
    g: &EmulatedGpu,
    u: &DeviceUnit,
    blocks: u32,
    threads: u32,
    shared: u32,
) -> (Vec<f64>, Result<(), Op2Error>) {
    let out = g.allocate(8 * (blocks * threads) as usize).unwrap();
    let p = g.compile(u).unwrap();
    let shape = LaunchShape {
        groups: blocks,
        threads,
        local_bytes: shared,
    };
    let r = g.launch(&p, Entry::Stub, shape, &[LaunchArg::Buffer(&out)]);
    let mut bytes = vec![0u8; 8 * (blocks * threads) as usize];
    g.download(&out, &mut bytes).unwrap();
    let values = bytes
        .chunks_exact(8)
        .map(|c| f64::from_ne_bytes(c.try_into().unwrap()))
        .collect();
    (values, r)
}

#[test]
fn threads_and_blocks_see_their_ids_and_share_memory_across_a_barrier() {
    let Some((g, _dir)) = gpu() else { return };
    // Each thread stores its id in shared memory; after the barrier it reads its neighbour's.
    let u = unit(
        "ids",
        "  extern __shared__ __align__(16) char op2_shared[];\n\
           double *s = (double *)op2_shared;\n\
           s[threadIdx.x] = blockIdx.x * 100 + threadIdx.x;\n\
           __syncthreads();\n\
           out[blockIdx.x * blockDim.x + threadIdx.x] = s[(threadIdx.x + 1) % blockDim.x];",
    );
    let (v, r) = run(&g, &u, 3, 4, 32);
    r.unwrap();
    let expect: Vec<f64> = (0..3)
        .flat_map(|b| (0..4).map(move |t| (b * 100 + (t + 1) % 4) as f64))
        .collect();
    assert_eq!(v, expect);
}

#[test]
fn a_barrier_some_threads_skip_is_reported() {
    let Some((g, _dir)) = gpu() else { return };
    let u = unit(
        "diverge",
        "  if (threadIdx.x == 2) return;\n  __syncthreads();\n  out[threadIdx.x] = 1;",
    );
    let (_, r) = run(&g, &u, 1, 4, 0);
    match r {
        Err(Op2Error::Execution { reason, .. }) => {
            assert!(
                reason.contains("__syncthreads() reached by 3 of 4 threads"),
                "{reason}"
            )
        }
        other => panic!("divergent barrier not reported: {other:?}"),
    }
}

#[test]
fn unstaged_shared_memory_and_unwritten_device_memory_read_as_nan() {
    let Some((g, _dir)) = gpu() else { return };
    let u = unit(
        "stale",
        "  extern __shared__ __align__(16) char op2_shared[];\n\
           if (threadIdx.x == 0) out[0] = ((double *)op2_shared)[1];",
    );
    let (v, r) = run(&g, &u, 1, 2, 16);
    r.unwrap();
    assert!(v[0].is_nan(), "shared memory is poisoned: {v:?}");
    assert!(v[1].is_nan(), "device memory starts as garbage: {v:?}");
}

#[test]
fn oversized_launches_are_errors() {
    let Some((g, _dir)) = gpu() else { return };
    let u = unit("big", "  out[0] = 0;");
    let (_, r) = run(&g, &u, 1, 2048, 0);
    assert!(
        matches!(r, Err(Op2Error::Execution { ref reason, .. }) if reason.contains("2048 threads"))
    );
    let (_, r) = run(&g, &u, 1, 1, 1 << 20);
    assert!(
        matches!(r, Err(Op2Error::Execution { ref reason, .. }) if reason.contains("shared memory"))
    );
}
