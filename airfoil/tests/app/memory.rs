//! Airfoil's memory on every backend: a generated mesh declared (the runtime takes its arrays
//! over) and run holds at most a stated overhead above the declared bytes, measured by the
//! binary's counting allocator on this test's own thread (tests running beside do not disturb
//! it). Device copies are allowed on top where the device's memory is this process's (the CUDA
//! emulator), as the runtime's report lists them.

use airfoil::{Airfoil, Constants, Mesh};
use op2_test_support::memory::{reset_thread_heap_peak, thread_heap_now, thread_heap_peak};
use op2_test_support::runtimes;

/// Allowed above the declared bytes: compiled-kernel bookkeeping, generated source, loop records,
/// small per-loop arrays. Fixed, so it is a share of a small mesh, not of the standard one.
const FIXED_SLACK: f64 = 1.5e6;

#[test]
fn airfoil_holds_little_more_than_its_declared_data_on_every_backend() {
    for rt in runtimes() {
        let name = rt.backend_name().to_string();
        let start = thread_heap_now();
        reset_thread_heap_peak();
        let mesh = Mesh::generate(200, 300);
        let a = Airfoil::from_mesh(&rt, mesh, &Constants::default()).unwrap();
        for _ in 0..3 {
            a.step().unwrap();
        }
        rt.flush().unwrap();
        let peak = (thread_heap_peak() - start) as f64;
        let report = rt.memory_report();
        let declared = report.declared_bytes() as f64;
        // openmp: the threads' partial results and the colouring's plan; devices: their copies.
        let share = if name == "openmp" { 1.2 } else { 1.1 };
        let device = report.device_bytes() as f64;
        let allowed = share * declared + FIXED_SLACK + device;
        eprintln!(
            "{name}: peak {:.2} MB on this thread, {:.2} MB declared, {:.2} MB on the device",
            peak / 1e6,
            declared / 1e6,
            device / 1e6
        );
        assert!(
            peak <= allowed,
            "{name}: peak {:.2} MB on this thread for {:.2} MB declared (allowed {:.2} MB):\n{report}",
            peak / 1e6,
            declared / 1e6,
            allowed / 1e6
        );
        // The mesh and the flow are declared: about 30 MB at 180,000 cells.
        assert!(declared > 25e6, "{name}: {report}");
    }
}
