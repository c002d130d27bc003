//! Airfoil's peak resident memory while tiling inspects its chains: the standard mesh on
//! `openmp` (2 threads) with every chain tiled (`TilingMode::Always`, so the inspections run
//! whatever this machine's cache), at most 1.2 times the declared bytes, the budget
//! docs/12-memory.md states. A test binary of its own, so that the process's peak (`VmHWM`) is
//! this test's alone.

use airfoil::{Airfoil, Constants, Mesh};
use op2::TilingMode;
use op2_test_support::{backend_required, runtime_if_available};

/// The process's peak resident memory in bytes (Linux's `VmHWM`).
fn peak_resident_bytes() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

#[test]
fn tiling_inspections_stay_within_the_memory_budget() {
    if !op2::backends().iter().any(|b| b.name == "openmp") {
        assert!(
            !backend_required("openmp"),
            "openmp is required but not built in"
        );
        eprintln!("openmp is not built in: nothing to check");
        return;
    }
    let Some(rt) = runtime_if_available(
        op2::builder()
            .backend("openmp")
            .num_threads(2)
            .tiling(TilingMode::Always),
    ) else {
        return;
    };
    let Some(before) = peak_resident_bytes() else {
        eprintln!("no /proc/self/status here: nothing to check");
        return;
    };
    let a = Airfoil::from_mesh(&rt, Mesh::generate(400, 600), &Constants::default()).unwrap();
    for _ in 0..4 {
        a.step().unwrap();
    }
    rt.flush().unwrap();
    let stats = rt.lazy_stats();
    let peak = peak_resident_bytes().unwrap() as f64;
    let declared = rt.memory_report().declared_bytes() as f64;
    eprintln!(
        "peak {:.1} MiB resident ({:.1} MiB before the mesh) for {:.1} MiB declared ({:.2}x), {} inspections",
        peak / 1048576.0,
        before as f64 / 1048576.0,
        declared / 1048576.0,
        peak / declared,
        stats.tiling_inspections
    );
    assert!(
        stats.tiling_inspections > 0,
        "no chain was inspected: {stats:?}"
    );
    assert!(
        peak <= 1.2 * declared,
        "peak resident memory {:.1} MiB is {:.2}x the {:.1} MiB declared (budget 1.2x)",
        peak / 1048576.0,
        peak / declared,
        declared / 1048576.0
    );
}
