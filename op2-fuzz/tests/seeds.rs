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
fn cuda_emulator_staged_atomics_agrees_with_the_reference() {
    check("cuda-emulator/staged-atomics");
}

#[test]
fn cuda_with_atomics_agrees_with_the_reference() {
    check("cuda/atomics");
}

#[test]
fn cuda_colouring_agrees_with_the_reference() {
    check("cuda/colour");
}

#[test]
fn cuda_staged_atomics_agrees_with_the_reference() {
    check("cuda/staged-atomics");
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
        columns: vec![None, None],
        maps: vec![MapSpec {
            from: 0,
            to: 1,
            arity: 2,
            values: vec![0, 1, 1, 1, 0, 0],
            offsets: None,
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
            region: op2::Region::All,
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

/// The reference over an extruded set against values worked out by hand: a direct INC on every
/// cell (the loop that once landed on the wrong cells on seq and openmp), an increment through
/// an extruded map into the nodes, a base Dat read directly, and the top layer alone; and every
/// backend that can run here agrees.
#[test]
fn the_reference_walks_extruded_columns_as_c_would() {
    use op2::{Access, Region};
    use op2_fuzz::expr::{FExpr, Operand, Value};
    use op2_fuzz::program::*;
    // Base of 2 columns with 3 and 2 node layers: cells (0,0) (0,1) (1,0); nodes 0-2 and 3-4.
    let layers = vec![3, 2];
    let cols = |cells| Columns {
        base: 0,
        layers: layers.clone(),
        uniform: false,
        cells,
    };
    let load = |arg| {
        Value::F(FExpr::Load(Operand::Arg {
            arg,
            entry: 0,
            comp: 0,
        }))
    };
    let add = |arg, value| Stmt {
        place: Place {
            arg,
            entry: 0,
            comp: 0,
        },
        update: Update::Add,
        value,
    };
    let step = |region, body| {
        Step::Loop(LoopSpec {
            name: "k".into(),
            set: 1,
            region,
            args: vec![
                ArgSpec::Dat {
                    dat: 0,
                    path: Path::Direct,
                    access: Access::Inc,
                },
                ArgSpec::Dat {
                    dat: 1,
                    path: Path::Via { map: 0, index: 0 },
                    access: Access::Inc,
                },
                ArgSpec::Dat {
                    dat: 2,
                    path: Path::Direct,
                    access: Access::Read,
                },
            ],
            body,
            own_pointers: false,
        })
    };
    let f64_dat = |set, init: Vec<f64>| DatSpec {
        set,
        ty: Ty::F64,
        dim: 1,
        init,
    };
    let p = Program {
        sets: vec![2, 3, 5],
        columns: vec![None, Some(cols(true)), Some(cols(false))],
        // Each cell's upper node in its own column: bottom rows 1 and 4, one node per layer.
        maps: vec![MapSpec {
            from: 1,
            to: 2,
            arity: 1,
            values: vec![1, 4],
            offsets: Some(vec![1]),
        }],
        dats: vec![
            f64_dat(1, vec![0.5; 3]),
            f64_dat(2, vec![0.0; 5]),
            f64_dat(0, vec![10.0, 20.0]),
        ],
        globals: Vec::new(),
        consts: Vec::new(),
        steps: vec![
            // cell += 1; node above += the column's base value.
            step(
                Region::All,
                vec![add(0, Value::F(FExpr::Const(1.0))), add(1, load(2))],
            ),
            step(Region::Top, vec![add(0, Value::F(FExpr::Const(2.0)))]),
        ],
        lazy: true,
        drop_first: false,
        block_size: None,
    };
    let seen = op2_fuzz::reference::run(&p);
    // Every cell once, then the top cells (0,1) and (1,0) twice more.
    assert_eq!(seen[0].values, [1.5, 3.5, 3.5]);
    // Cells (0,0) and (0,1) reach nodes 1 and 2, cell (1,0) node 4.
    assert_eq!(seen[1].values, [0.0, 10.0, 10.0, 0.0, 20.0]);
    for t in run::targets() {
        if run::probe(&t).is_ok() {
            op2_fuzz::check(&p, &t, None).unwrap_or_else(|e| panic!("{}: {e}", t.label));
        }
    }
}

/// The drawn programs reach extruded sets as users write loops over them: loops over cells in
/// each region, direct increments on the cells, Dats on the base, maps with offsets and from
/// the base (what the fuzzer could not draw when a direct INC over cells went wrong).
#[test]
fn drawn_programs_cover_loops_over_extruded_sets() {
    use op2::{Access, Region};
    use op2_fuzz::program::{ArgSpec, Path, Step};
    let mut seen = std::collections::HashSet::new();
    for seed in 0..200 {
        let p = op2_fuzz::first_program(seed, Shape::default());
        for s in &p.steps {
            let Step::Loop(l) = s else { continue };
            let Some(base) = p.base_of(l.set) else {
                continue;
            };
            seen.insert(format!("region {:?}", l.region));
            for a in &l.args {
                let ArgSpec::Dat { dat, path, access } = *a else {
                    continue;
                };
                let on = p.dats[dat].set;
                match path {
                    Path::Direct if on == l.set && access == Access::Inc => {
                        seen.insert("direct INC on the cells".into());
                    }
                    Path::Direct if on == base => {
                        seen.insert("direct on the base".into());
                    }
                    Path::Via { map, .. } | Path::Row { map } => {
                        let m = &p.maps[map];
                        seen.insert(match (m.from == base, m.offsets.is_some()) {
                            (true, _) => "a map from the base".into(),
                            (false, true) => "a map with offsets".into(),
                            (false, false) => "a plain map from the set".into(),
                        });
                    }
                    _ => {}
                }
            }
        }
    }
    for want in [
        format!("region {:?}", Region::All),
        format!("region {:?}", Region::Bottom),
        format!("region {:?}", Region::Top),
        "direct INC on the cells".into(),
        "direct on the base".into(),
        "a map from the base".into(),
        "a map with offsets".into(),
        "a plain map from the set".into(),
    ] {
        assert!(
            seen.contains(&want),
            "no drawn program has {want}: {seen:?}"
        );
    }
}
