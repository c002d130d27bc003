//! Every CUDA unit the conformance suite makes the backend generate, under both strategies and
//! with small blocks, compiles to PTX through NVRTC, and the same units run correctly on the host
//! emulator (compared with the sequential reference). No GPU needed: NVRTC runs anywhere.
//!
//! Without NVRTC this test says so and checks the emulator only, unless `OP2_REQUIRE_NVRTC` is set
//! (`cargo xtask test` installs NVRTC and sets it), when a missing NVRTC fails it.

use backend_cuda::{Nvrtc, NvrtcCheck, ptx_stats};
use op2_conformance::{Outcome, run_suite};
use op2_core::{Backend, BackendFactory, Config, Result};
use std::path::PathBuf;
use std::sync::OnceLock;

/// A cache directory of this test run's own, so that NVRTC compiles every unit here.
fn cache_dir() -> PathBuf {
    static DIR: OnceLock<tempfile::TempDir> = OnceLock::new();
    DIR.get_or_init(|| tempfile::tempdir().unwrap())
        .path()
        .to_path_buf()
}

fn nvrtc_required() -> bool {
    std::env::var_os("OP2_REQUIRE_NVRTC").is_some_and(|v| !v.is_empty() && v != "0")
}

fn emulator(config: &Config, strategy: &str, part_size: Option<usize>) -> Result<Box<dyn Backend>> {
    let mut c = config.clone();
    c.settings.set("cuda_strategy", strategy);
    c.part_size = part_size.or(c.part_size);
    c.cache_dir = cache_dir();
    let found = Nvrtc::get(c.settings.path("nvrtc").as_deref()).is_ok();
    let check = if found || nvrtc_required() {
        NvrtcCheck::Required
    } else {
        NvrtcCheck::Off
    };
    Ok(Box::new(backend_cuda::emulated(&c, check)?))
}

op2_core::register_backend!(BackendFactory {
    name: "cuda-ptx-colour",
    feature: "",
    description: "test: cuda-emulator, colour strategy, every unit also through NVRTC",
    create: |c| emulator(c, "colour", None),
    settings: &[],
});

op2_core::register_backend!(BackendFactory {
    name: "cuda-ptx-colour-b16",
    feature: "",
    description: "test: as cuda-ptx-colour with 16-element blocks (many blocks and colours)",
    create: |c| emulator(c, "colour", Some(16)),
    settings: &[],
});

op2_core::register_backend!(BackendFactory {
    name: "cuda-ptx-atomics",
    feature: "",
    description: "test: cuda-emulator, atomics strategy, every unit also through NVRTC",
    create: |c| emulator(c, "atomics", None),
    settings: &[],
});

op2_core::register_backend!(BackendFactory {
    name: "cuda-ptx-staged-atomics",
    feature: "",
    description: "test: cuda-emulator, staged-atomics strategy with 16-element blocks, every unit also through NVRTC",
    create: |c| emulator(c, "staged-atomics", Some(16)),
    settings: &[],
});

#[test]
fn every_conformance_kernel_compiles_to_ptx_and_conforms() {
    std::hint::black_box(&backend_cuda::LINKED);
    if let Err(why) = op2_conformance::probe("cuda-ptx-colour") {
        assert!(
            !op2_test_support::backend_required("cuda-emulator"),
            "the emulator is required here: {why}"
        );
        eprintln!("skipped: {why}");
        return;
    }
    let config = Config::from_env().unwrap();
    let nvrtc = match Nvrtc::get(config.settings.path("nvrtc").as_deref()) {
        Ok(n) => {
            eprintln!(
                "NVRTC {}.{} from {} (architectures {:?})",
                n.version.0, n.version.1, n.location, n.archs
            );
            true
        }
        Err(why) if nvrtc_required() => panic!("OP2_REQUIRE_NVRTC is set, but: {why}"),
        Err(why) => {
            eprintln!("NVRTC not found, checking the emulator only: {why}");
            false
        }
    };
    let before = ptx_stats();
    let mut bad = Vec::new();
    let mut cases = 0;
    for backend in [
        "cuda-ptx-colour",
        "cuda-ptx-colour-b16",
        "cuda-ptx-atomics",
        "cuda-ptx-staged-atomics",
    ] {
        for r in run_suite(backend, 12) {
            cases += 1;
            if r.outcome != Outcome::Pass {
                bad.push(format!("{backend} / {}: {}", r.case, r.outcome));
            }
        }
    }
    assert!(
        bad.is_empty(),
        "{} of {cases}:\n{}",
        bad.len(),
        bad.join("\n")
    );
    if nvrtc {
        let done = ptx_stats();
        let compiled = done.compiles - before.compiles;
        eprintln!(
            "{compiled} CUDA units compiled to PTX ({} more found in memory)",
            done.memory_hits - before.memory_hits
        );
        // 32 named cases and random loops, each with one or more loops, under two strategies:
        // far more than 60 distinct units; fewer means units went unchecked.
        assert!(compiled >= 60, "only {compiled} units reached NVRTC");
        assert_eq!(done.disk_hits, before.disk_hits, "a fresh cache directory");
    }
}
