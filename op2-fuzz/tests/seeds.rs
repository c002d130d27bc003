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
#[cfg(feature = "ranks")]
#[test]
fn seq_on_two_thread_ranks_agrees_with_the_reference() {
    check("seq/2-ranks");
}

#[cfg(feature = "ranks")]
#[test]
fn openmp_on_three_thread_ranks_agrees_with_the_reference() {
    check("openmp/3-ranks");
}

/// The program (seed 2070's first) on which three thread ranks once waited for each other
/// until their timeout: a rank with no neighbours on a set recorded no exchanges for it, so a
/// host write took along, on the other ranks only, an exchange they then waited on. Its shape is
/// checked first, so that a change to the generator that draws another program fails here
/// instead of passing without testing anything.
#[cfg(feature = "ranks")]
#[test]
fn three_thread_ranks_once_waited_for_each_other() {
    let target = run::target("seq/3-ranks").expect("thread ranks");
    let shape = Shape {
        distributed: true,
        ..Shape::default()
    };
    let p = op2_fuzz::first_program(2070, shape);
    assert_eq!(
        p.sets,
        [20, 16, 12],
        "the generator draws another program: {p}"
    );
    assert!(p.lazy && p.lazy_opts.early_halo && !p.lazy_opts.successive_halo);
    op2_fuzz::check(&p, &target, None).unwrap();
}

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
        subsets: vec![None; 2],
        mixed_sets: Vec::new(),
        mixed_maps: Vec::new(),
        mixed_dats: Vec::new(),
        lazy_opts: op2::LazyOptions::ALL,
        tile_always: None,
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
        subsets: vec![None; 3],
        mixed_sets: Vec::new(),
        mixed_maps: Vec::new(),
        mixed_dats: Vec::new(),
        lazy_opts: op2::LazyOptions::ALL,
        tile_always: None,
    };
    let seen = op2_fuzz::reference::run(&p);
    // Every cell once, then the top cells (0,1) and (1,0) twice more.
    assert_eq!(seen[0].values, [1.5, 3.5, 3.5]);
    // Cells (0,0) and (0,1) reach nodes 1 and 2, cell (1,0) node 4.
    assert_eq!(seen[1].values, [0.0, 10.0, 10.0, 0.0, 20.0]);
    // Thread ranks take programs of plain sets only.
    for t in run::targets().into_iter().filter(|t| t.ranks.is_none()) {
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

#[test]
fn drawn_programs_cover_the_data_model() {
    use op2::{Access, Region};
    use op2_fuzz::program::{ArgSpec, Path, Step};
    let mut seen = std::collections::HashSet::new();
    for seed in 0..300 {
        let p = op2_fuzz::first_program(seed, Shape::default());
        for d in &p.dats {
            seen.insert(format!("a Dat of {}", d.ty.c_name()));
        }
        for g in &p.globals {
            seen.insert(format!("a Global of {}", g.ty.c_name()));
        }
        if p.tile_always.is_some() {
            seen.insert("tiling always".to_string());
        }
        let o = p.lazy_opts;
        for (name, on) in [
            ("sibling_fusion", o.sibling_fusion),
            ("chain_fusion", o.chain_fusion),
            ("temporaries", o.temporaries),
            ("tiling", o.tiling),
        ] {
            seen.insert(format!("{name} {}", if on { "on" } else { "off" }));
        }
        for s in &p.steps {
            match s {
                Step::Algebra(a) => {
                    let kind = format!("{a:?}");
                    seen.insert(format!("algebra {}", &kind[..kind.find('(').unwrap_or(0)]));
                }
                Step::Loop(l) => {
                    if let Some(sub) = &p.subsets[l.set] {
                        seen.insert("a loop over a subset".into());
                        if p.subsets[sub.parent].is_some() {
                            seen.insert("a loop over a nested subset".into());
                        }
                    }
                    if l.region == Region::InteriorFacets {
                        seen.insert("interior facets".into());
                    }
                    for a in &l.args {
                        match *a {
                            ArgSpec::Mixed { .. } => {
                                seen.insert("a mixed arg".into());
                            }
                            ArgSpec::Dat {
                                path: Path::Entries { .. },
                                access,
                                ..
                            } => {
                                seen.insert(format!("a per-entry {access:?}"));
                            }
                            ArgSpec::Global {
                                global,
                                access: Access::Min,
                            } => {
                                let t = p.globals[global].ty.c_name();
                                seen.insert(format!("a MIN of {t}"));
                            }
                            _ => {}
                        }
                    }
                }
                _ => {}
            }
        }
    }
    let mut want: Vec<String> = [
        "tiling always",
        "a loop over a subset",
        "a loop over a nested subset",
        "interior facets",
        "a mixed arg",
        "a per-entry Read",
        "a per-entry Inc",
        "a per-entry Rw",
        "a per-entry Write",
        "algebra Zero",
        "algebra Copy",
        "algebra Assign",
        "algebra AssignScalar",
        "algebra New",
        "algebra NewScalar",
        "algebra Axpy",
        "algebra Inner",
        "algebra Norm",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    for t in op2_fuzz::program::Ty::ALL {
        want.push(format!("a Dat of {}", t.c_name()));
        want.push(format!("a Global of {}", t.c_name()));
        want.push(format!("a MIN of {}", t.c_name()));
    }
    for o in ["sibling_fusion", "chain_fusion", "temporaries", "tiling"] {
        want.push(format!("{o} on"));
        want.push(format!("{o} off"));
    }
    for w in want {
        assert!(seen.contains(&w), "no drawn program has {w}: {seen:?}");
    }
}

/// The reference on the rest of the data model against values worked out by hand: a nested
/// subset, a local iteration space, a mixed Dat through a mixed map, Dat algebra with an
/// unsigned wrap, an inner product and a norm; and every backend that can run here agrees.
#[test]
fn the_reference_runs_subsets_entries_mixed_and_algebra_as_c_would() {
    use op2::Access;
    use op2_fuzz::expr::{FExpr, IExpr, Value};
    use op2_fuzz::program::*;
    let dat = |set, ty, init: &[f64]| DatSpec {
        set,
        ty,
        dim: 1,
        init: init.to_vec(),
    };
    let place = |arg, entry| Place {
        arg,
        entry,
        comp: 0,
    };
    let one_loop = |name: &str, set, args, body| {
        Step::Loop(LoopSpec {
            name: name.into(),
            set,
            region: op2::Region::All,
            args,
            body,
            own_pointers: false,
        })
    };
    let p = Program {
        // s2 = s0 at [0, 2]; s3 = s2 at [1], that is element 2 of s0.
        sets: vec![3, 2, 2, 1],
        columns: vec![None; 4],
        subsets: vec![
            None,
            None,
            Some(SubsetSpec {
                parent: 0,
                indices: vec![0, 2],
            }),
            Some(SubsetSpec {
                parent: 2,
                indices: vec![1],
            }),
        ],
        maps: vec![
            MapSpec {
                from: 0,
                to: 1,
                arity: 2,
                values: vec![0, 1, 1, 1, 0, 0],
                offsets: None,
            },
            MapSpec {
                from: 0,
                to: 0,
                arity: 1,
                values: vec![2, 0, 1],
                offsets: None,
            },
        ],
        dats: vec![
            dat(0, Ty::U32, &[5.0, 6.0, 7.0]),
            dat(1, Ty::F64, &[1.0, 1.0]),
            dat(1, Ty::I64, &[10.0, 20.0]),
            dat(0, Ty::F64, &[0.0, 0.0, 0.0]),
            dat(1, Ty::F64, &[0.5, 0.25]),
        ],
        // (s1, s0) through (m0, m1): rows of three entries, d1 then d3.
        mixed_sets: vec![vec![1, 0]],
        mixed_maps: vec![MixedMapSpec {
            set: 0,
            maps: vec![0, 1],
        }],
        mixed_dats: vec![MixedDatSpec {
            set: 0,
            dats: vec![1, 3],
        }],
        globals: Vec::new(),
        consts: Vec::new(),
        steps: vec![
            // Over the nested subset: d0[2] = 7 + 3.
            one_loop(
                "sub",
                3,
                vec![ArgSpec::Dat {
                    dat: 0,
                    path: Path::Direct,
                    access: Access::Rw,
                }],
                vec![Stmt {
                    place: place(0, 0),
                    update: Update::Add,
                    value: Value::I(IExpr::Const(3)),
                }],
            ),
            // Once per entry of m0's rows (0,1) (1,1) (0,0): d2 += 1 each time.
            one_loop(
                "ent",
                0,
                vec![ArgSpec::Dat {
                    dat: 2,
                    path: Path::Entries { map: 0 },
                    access: Access::Inc,
                }],
                vec![Stmt {
                    place: place(0, 0),
                    update: Update::Add,
                    value: Value::I(IExpr::Const(1)),
                }],
            ),
            // Entry 0 (d1 at m0[e][0]: 0, 1, 0) += 1; entry 2 (d3 at m1[e]: 2, 0, 1) += 2.
            one_loop(
                "mix",
                0,
                vec![ArgSpec::Mixed {
                    mdat: 0,
                    mmap: 0,
                    access: Access::Inc,
                }],
                vec![
                    Stmt {
                        place: place(0, 0),
                        update: Update::Add,
                        value: Value::F(FExpr::Const(1.0)),
                    },
                    Stmt {
                        place: place(0, 2),
                        update: Update::Add,
                        value: Value::F(FExpr::Const(2.0)),
                    },
                ],
            ),
            Step::Algebra(Algebra::Axpy(4, 2.0, 1)),
            Step::Algebra(Algebra::Inner(4, 1)),
            Step::Algebra(Algebra::Norm(1)),
            Step::Algebra(Algebra::AssignScalar(BinOp::Sub, 0, 6.0)),
            Step::Algebra(Algebra::NewScalar(BinOp::Mul, 2, 3.0)),
        ],
        lazy: true,
        drop_first: false,
        block_size: None,
        lazy_opts: op2::LazyOptions::ALL,
        tile_always: None,
    };
    let seen = op2_fuzz::reference::run(&p);
    let values: Vec<&[f64]> = seen.iter().map(|o| o.values.as_slice()).collect();
    // d4 = (0.5, 0.25) + 2 (3, 2); inner with d1 = 6.5 * 3 + 4.25 * 2; norm of d1 = sqrt(13);
    // d2 * 3 = (13, 23) * 3.
    assert_eq!(values[0], [28.0]);
    assert_eq!(values[1], [13f64.sqrt()]);
    assert_eq!(values[2], [39.0, 69.0]);
    // Then every Dat: d0 = (5, 6, 10) - 6 in uint32_t.
    assert_eq!(values[3], [4294967295.0, 0.0, 4.0]);
    assert_eq!(values[4], [3.0, 2.0]);
    assert_eq!(values[5], [13.0, 23.0]);
    assert_eq!(values[6], [2.0, 2.0, 2.0]);
    assert_eq!(values[7], [6.5, 4.25]);
    // Thread ranks take programs of plain sets only.
    for t in run::targets().into_iter().filter(|t| t.ranks.is_none()) {
        if run::probe(&t).is_ok() {
            op2_fuzz::check(&p, &t, None).unwrap_or_else(|e| panic!("{}: {e}", t.label));
        }
    }
}
