//! What other crates ask of a backend (op2-la's assembly pass: how many host threads, whether the
//! loops work on host memory, whether the threads are OpenMP's), on each backend built in.

use op2::Runtime;

fn runtime(backend: &str, threads: usize) -> Option<Runtime> {
    op2_test_support::runtime_if_available(op2::builder().backend(backend).num_threads(threads))
}

#[test]
fn the_reference_runs_on_one_host_thread() {
    let rt = runtime("seq", 3).expect("seq always starts");
    assert_eq!(rt.host_threads(), 1);
    assert!(rt.runs_on_host_memory());
    assert!(!rt.uses_openmp_threads());
    let caps = rt.capabilities();
    assert!(caps.walks_columns && caps.keeps_operation_order && caps.fuses_loops);
}

#[cfg(feature = "openmp")]
#[test]
fn openmp_reports_its_threads_as_openmps() {
    let Some(rt) = runtime("openmp", 3) else {
        return;
    };
    assert_eq!(rt.host_threads(), 3);
    assert!(rt.runs_on_host_memory());
    assert!(rt.uses_openmp_threads());
    let caps = rt.capabilities();
    assert!(caps.walks_columns && caps.fuses_loops && !caps.keeps_operation_order);
}

#[cfg(any(feature = "opencl", feature = "cuda"))]
#[test]
fn device_backends_keep_data_in_device_memory() {
    let names = [
        #[cfg(feature = "opencl")]
        "opencl",
        #[cfg(feature = "cuda")]
        "cuda-emulator",
    ];
    for name in names {
        if let Some(rt) = runtime(name, 2) {
            assert!(!rt.runs_on_host_memory(), "{name}");
            assert!(!rt.uses_openmp_threads(), "{name}");
            assert_eq!(rt.host_threads(), 2, "{name}: the configured threads");
            let caps = rt.capabilities();
            assert!(!caps.walks_columns && caps.fuses_loops, "{name}: {caps:?}");
        }
    }
}
