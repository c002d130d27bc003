//! The fuzzer's fixed seeds, run by the test command: a few random programs on every backend
//! configuration that can run here, each compared with the reference interpreter. A failure is
//! shrunk and printed with its kernels. `cargo xtask fuzz` runs many more.
//!
//! Backends named in `OP2_REQUIRE_BACKENDS` (`cargo xtask test` sets it) must start; others that
//! cannot (no OpenCL driver, no GPU) are skipped with the reason.

use op2_fuzz::{Shape, Target, fuzz_seed, run};
use op2_test_support::backend_required as required;
use std::time::Duration;

/// The seed the suite draws its programs from.
const SEED: u64 = 20261125;

/// Programs per configuration.
const PROGRAMS: u32 = 3;

fn check(label: &str) {
    let target: Target = run::target(label).expect("a known configuration");
    if let Err(why) = run::probe(&target) {
        assert!(
            !required(&target.backend),
            "{label} is required here but cannot start: {why}"
        );
        eprintln!("skipping {label}: {why}");
        return;
    }
    let cache = tempfile::tempdir().expect("a temporary cache directory");
    let shape = Shape::default();
    if let Err(f) = fuzz_seed(
        &target,
        SEED,
        PROGRAMS,
        shape,
        Duration::from_secs(180),
        Some(cache.path()),
    ) {
        panic!("{label}: a random program differs from the reference\n{f}");
    }
}

#[test]
fn seq_agrees_with_the_reference() {
    check("seq");
}

#[test]
fn openmp_on_two_threads_agrees_with_the_reference() {
    check("openmp");
}

#[test]
fn opencl_host_scheme_agrees_with_the_reference() {
    check("opencl");
}

#[test]
fn opencl_staged_scheme_agrees_with_the_reference() {
    check("opencl/staged");
}

#[test]
fn cuda_emulator_with_atomics_agrees_with_the_reference() {
    check("cuda-emulator/atomics");
}

#[test]
fn cuda_emulator_colouring_agrees_with_the_reference() {
    check("cuda-emulator/colour");
}

#[test]
fn cuda_with_atomics_agrees_with_the_reference() {
    check("cuda/atomics");
}

#[test]
fn cuda_colouring_agrees_with_the_reference() {
    check("cuda/colour");
}

/// The reference interpreter itself against values worked out by hand: a loop incrementing
/// through a map with a repeated target, a Global sum, and a commutative update.
#[test]
fn the_reference_interpreter_computes_what_c_would() {
    use op2::Access;
    use op2_fuzz::expr::{FExpr, IExpr, Operand, Value};
    use op2_fuzz::program::*;
    let p = Program {
        sets: vec![3, 2],
        maps: vec![MapSpec {
            from: 0,
            to: 1,
            arity: 2,
            values: vec![0, 1, 1, 1, 0, 0],
        }],
        dats: vec![
            DatSpec {
                set: 0,
                ty: Ty::I32,
                dim: 1,
                init: vec![5.0, 6.0, 7.0],
            },
            DatSpec {
                set: 1,
                ty: Ty::I32,
                dim: 1,
                init: vec![0.0, 100.0],
            },
            DatSpec {
                set: 1,
                ty: Ty::F64,
                dim: 1,
                init: vec![1.0, 1.0],
            },
        ],
        globals: vec![SmallSpec {
            ty: Ty::F64,
            dim: 1,
            init: vec![0.5],
        }],
        consts: Vec::new(),
        steps: vec![Step::Loop(LoopSpec {
            name: "k".into(),
            set: 0,
            args: vec![
                ArgSpec::Dat {
                    dat: 0,
                    path: Path::Direct,
                    access: Access::Read,
                },
                ArgSpec::Dat {
                    dat: 1,
                    path: Path::Row { map: 0 },
                    access: Access::Inc,
                },
                ArgSpec::Global {
                    global: 0,
                    access: Access::Inc,
                },
                ArgSpec::Dat {
                    dat: 2,
                    path: Path::Via { map: 0, index: 1 },
                    access: Access::Rw,
                },
            ],
            body: vec![
                // row[0] += x; row[1] += 2 * x
                Stmt {
                    place: Place {
                        arg: 1,
                        entry: 0,
                        comp: 0,
                    },
                    update: Update::Add,
                    value: Value::I(IExpr::Load(Operand::Arg {
                        arg: 0,
                        entry: 0,
                        comp: 0,
                    })),
                },
                Stmt {
                    place: Place {
                        arg: 1,
                        entry: 1,
                        comp: 0,
                    },
                    update: Update::Add,
                    value: Value::I(IExpr::Scale(
                        2,
                        Box::new(IExpr::Load(Operand::Arg {
                            arg: 0,
                            entry: 0,
                            comp: 0,
                        })),
                    )),
                },
                // g += 0.25
                Stmt {
                    place: Place {
                        arg: 2,
                        entry: 0,
                        comp: 0,
                    },
                    update: Update::Add,
                    value: Value::F(FExpr::Const(0.25)),
                },
                // u = max(u, x)
                Stmt {
                    place: Place {
                        arg: 3,
                        entry: 0,
                        comp: 0,
                    },
                    update: Update::Max,
                    value: Value::F(FExpr::Load(Operand::Arg {
                        arg: 0,
                        entry: 0,
                        comp: 0,
                    })),
                },
            ],
            own_pointers: false,
        })],
        lazy: true,
        drop_first: false,
        block_size: None,
    };
    let seen = op2_fuzz::reference::run(&p);
    // Rows (0,1), (1,1), (0,0) with x = 5, 6, 7: target 0 gets 5 + 7 + 14, target 1 gets
    // 10 + 6 + 12 on top of 100.
    assert_eq!(seen[1].values, [26.0, 128.0]);
    // Entry 1 of each row: targets 1, 1, 0 see maxima of 5 and 6 (1), and 7 (0).
    assert_eq!(seen[2].values, [7.0, 6.0]);
    assert_eq!(seen[3].values, [0.5 + 0.75]);
    // And seq, the reference backend, agrees.
    let t = run::target("seq").unwrap();
    op2_fuzz::check(&p, &t, None).unwrap();
}
