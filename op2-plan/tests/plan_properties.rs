//! Plan invariants on random meshes (proptest), the documented example shape, and the star that needs
//! more than 32 colours.

use op2_core::Access;
use op2_plan::{
    CachedPlanner, MapAccess, Plan, PlanArg, PlanDetail, PlanMap, PlanRequest, StrategyChoice,
    build_plan,
};
use proptest::prelude::*;
use std::collections::{HashMap, HashSet};

/// Every invariant a plan must satisfy; panics (via prop_assert-like asserts) naming the broken one.
fn check_plan(plan: &Plan, req: &PlanRequest<'_>) {
    let (start, end) = (req.start, req.end);
    // Blocks: contiguous, cover start..end once, at most block_size each.
    let mut next = start;
    for b in 0..plan.blocks() {
        let r = plan.block_elements(b);
        assert_eq!(r.start, next, "block {b} starts where the previous ended");
        assert!(
            !r.is_empty() && r.len() <= req.block_size,
            "block {b} has {} elements",
            r.len()
        );
        next = r.end;
    }
    assert_eq!(next, end, "blocks cover every element exactly once");
    let mut seen: Vec<u32> = plan.block_map.clone();
    seen.sort_unstable();
    assert_eq!(
        seen,
        (0..plan.blocks() as u32).collect::<Vec<_>>(),
        "block map is a permutation"
    );
    for c in 0..plan.colours() {
        assert!(
            plan.colour_blocks(c)
                .iter()
                .all(|&b| plan.block_colours[b as usize] == c as u32)
        );
    }

    // What each element modifies through maps, and directly where the same data is modified
    // through a map too.
    let colours_by = PlanArg::colouring(req.args);
    let modified = |e: usize| -> Vec<(u64, i32)> {
        let mut items = Vec::new();
        for (a, _) in req.args.iter().zip(&colours_by).filter(|(_, k)| **k) {
            let Some(m) = a.map else {
                items.push((a.data, e as i32));
                continue;
            };
            let row = &m.values[e * m.arity..(e + 1) * m.arity];
            match a.entries {
                MapAccess::Entry(j) => items.push((a.data, row[j])),
                MapAccess::Row => items.extend(row.iter().map(|&v| (a.data, v))),
            }
        }
        items
    };
    let colouring = colours_by.iter().any(|&k| k);
    if !colouring && end > 0 {
        assert_eq!(
            plan.colours(),
            1,
            "a loop needing no colouring has one block colour"
        );
        assert!(plan.element_colours.iter().all(|&c| c == 0));
    }
    // Same-coloured blocks modify disjoint items.
    for c in 0..plan.colours() {
        let mut owner: HashMap<(u64, i32), u32> = HashMap::new();
        for &b in plan.colour_blocks(c) {
            for e in plan.block_elements(b as usize) {
                for item in modified(e) {
                    let o = *owner.entry(item).or_insert(b);
                    assert_eq!(
                        o, b,
                        "blocks {o} and {b} of colour {c} both modify {item:?}"
                    );
                }
            }
        }
    }
    // Same-coloured elements of a block modify disjoint items.
    for b in 0..plan.blocks() {
        let mut owner: HashMap<(u32, (u64, i32)), usize> = HashMap::new();
        for e in plan.block_elements(b) {
            let c = plan.element_colours[e - start];
            assert!(
                c < plan.block_element_colours[b],
                "element colour below the block's count"
            );
            for item in modified(e) {
                let o = *owner.entry((c, item)).or_insert(e);
                assert_eq!(
                    o, e,
                    "elements {o} and {e} of block {b}, colour {c}, both modify {item:?}"
                );
            }
        }
    }
    // Staging: sorted unique local-to-global, round trip, nothing staged that is not used.
    for (i, a) in req.args.iter().enumerate() {
        let Some(m) = a.map else {
            assert!(plan.arg_staging[i].is_none());
            continue;
        };
        let s = &plan.staging[plan.arg_staging[i].expect("indirect args are staged")];
        let entries: Vec<usize> = match a.entries {
            MapAccess::Entry(j) => vec![j],
            MapAccess::Row => (0..m.arity).collect(),
        };
        for b in 0..plan.blocks() {
            let seg =
                &s.local_to_global[s.offsets[b] as usize..(s.offsets[b] + s.sizes[b]) as usize];
            assert!(
                seg.windows(2).all(|w| w[0] < w[1]),
                "local-to-global sorted and unique"
            );
            let mut used = HashSet::new();
            for e in plan.block_elements(b) {
                for &j in &s.entries {
                    used.insert(m.values[e * m.arity + j]);
                }
                for &j in &entries {
                    let local = s.local(plan, e, j).expect("entry staged");
                    assert_eq!(
                        seg[local],
                        m.values[e * m.arity + j],
                        "global-to-local round trip"
                    );
                }
            }
            assert_eq!(
                used.len(),
                seg.len(),
                "a block stages exactly what it touches"
            );
            let bytes: usize = plan
                .staging
                .iter()
                .map(|s| (s.sizes[b] as usize * s.dim * s.elem_bytes).next_multiple_of(16))
                .sum();
            assert_eq!(plan.shared_bytes[b] as usize, bytes);
        }
    }
}

#[derive(Debug, Clone)]
struct RandomLoop {
    elements: usize,
    targets: usize,
    maps: Vec<(usize, Vec<i32>)>, // arity, values
    args: Vec<(u64, Option<usize>, Option<usize>, Access)>, // data, map (None = direct), entry (None = row), access
    block_size: usize,
}

fn random_loop() -> impl Strategy<Value = RandomLoop> {
    (
        0usize..150,
        1usize..40,
        prop::collection::vec(1usize..=4, 1..3),
    )
        .prop_flat_map(|(elements, targets, arities)| {
            let maps: Vec<_> = arities
                .iter()
                .map(|&a| {
                    prop::collection::vec(0..targets as i32, elements * a).prop_map(move |v| (a, v))
                })
                .collect();
            let nmaps = arities.len();
            let access =
                prop::sample::select(vec![Access::Read, Access::Write, Access::Rw, Access::Inc]);
            let arg = (
                1u64..4,
                prop::option::weighted(0.8, 0..nmaps),
                prop::option::of(0usize..4),
                access,
            );
            let block = prop::sample::select(vec![1usize, 2, 3, 7, 32, 64, elements.max(1) + 5]);
            (maps, prop::collection::vec(arg, 1..5), block).prop_map(
                move |(maps, args, block_size)| {
                    let args = args
                        .into_iter()
                        .map(|(d, m, j, acc)| (d, m, m.and(j).map(|j| j % maps[m.unwrap()].0), acc))
                        .collect();
                    RandomLoop {
                        elements,
                        targets,
                        maps,
                        args,
                        block_size,
                    }
                },
            )
        })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn random_plans_are_valid(l in random_loop()) {
        // Data may be reached directly too (it is on the iteration set): its items cover both.
        let target_size = l.targets.max(l.elements);
        let maps: Vec<PlanMap<'_>> = l.maps.iter().enumerate()
            .map(|(i, (a, v))| PlanMap { id: i as u64 + 10, name: "m", values: v, arity: *a, target_size })
            .collect();
        let args: Vec<PlanArg<'_>> = l.args.iter().map(|&(data, m, j, access)| PlanArg {
            data, dim: 2, elem_bytes: 8, map: m.map(|m| maps[m]),
            entries: j.map_or(MapAccess::Row, MapAccess::Entry), access,
        }).collect();
        let req = PlanRequest { set: 1, start: 0, end: l.elements, block_size: l.block_size, args: &args, detail: PlanDetail::Full };
        let plan = build_plan(&req).unwrap();
        check_plan(&plan, &req);
        // A section of the set (the owned or exec-halo elements under MPI) plans alone.
        let section = PlanRequest { start: l.elements / 3, ..req.clone() };
        check_plan(&build_plan(&section).unwrap(), &section);
        // A host backend's lean plan: the same blocks and block colours, nothing per element,
        // no staging.
        let lean = build_plan(&PlanRequest { detail: PlanDetail::BlockColours, ..req.clone() }).unwrap();
        prop_assert_eq!(&lean.block_offsets, &plan.block_offsets);
        prop_assert_eq!(&lean.block_lengths, &plan.block_lengths);
        prop_assert_eq!(&lean.block_colours, &plan.block_colours);
        prop_assert_eq!(&lean.block_map, &plan.block_map);
        prop_assert_eq!(&lean.colour_offsets, &plan.colour_offsets);
        prop_assert!(lean.element_colours.is_empty() && lean.block_element_colours.is_empty());
        prop_assert!(lean.staging.is_empty() && lean.shared_bytes.is_empty());
        prop_assert!(lean.arg_staging.iter().all(Option::is_none));
        prop_assert_eq!(lean.arg_staging.len(), args.len());
    }
}

/// A loop with one arg through one map (`arity` entries per row into `target_size` items, `dim` values
/// of 8 bytes each), planned and checked against every invariant.
struct OneArg<'a> {
    values: &'a [i32],
    arity: usize,
    target_size: usize,
    dim: usize,
    entries: MapAccess,
    access: Access,
}

impl OneArg<'_> {
    fn plan(&self, end: usize, block_size: usize) -> Plan {
        let m = PlanMap {
            id: 1,
            name: "m",
            values: self.values,
            arity: self.arity,
            target_size: self.target_size,
        };
        let args = [PlanArg {
            data: 1,
            dim: self.dim,
            elem_bytes: 8,
            map: Some(m),
            entries: self.entries,
            access: self.access,
        }];
        let req = PlanRequest {
            set: 1,
            start: 0,
            end,
            block_size,
            args: &args,
            detail: PlanDetail::Full,
        };
        let plan = build_plan(&req).unwrap();
        check_plan(&plan, &req);
        plan
    }
}

/// Every element increments the one and only node.
fn star(n: usize, block_size: usize) -> Plan {
    let values = vec![0i32; n];
    let arg = OneArg {
        values: &values,
        arity: 1,
        target_size: 1,
        dim: 1,
        entries: MapAccess::Entry(0),
        access: Access::Inc,
    };
    arg.plan(n, block_size)
}

#[test]
fn star_needs_more_than_32_element_colours() {
    let plan = star(100, 100);
    assert_eq!(plan.blocks(), 1);
    assert_eq!(
        plan.stats.max_element_colours, 100,
        "every element conflicts with every other"
    );
    let mut colours = plan.element_colours.clone();
    colours.sort_unstable();
    assert_eq!(
        colours,
        (0..100).collect::<Vec<u32>>(),
        "passes offset by 32, 64, 96"
    );
}

#[test]
fn star_needs_more_than_32_block_colours() {
    let plan = star(70, 1);
    assert_eq!((plan.blocks(), plan.colours()), (70, 70));
    assert_eq!(plan.stats.max_element_colours, 1);
}

#[test]
fn documented_example_shape_gives_two_blocks() {
    // 12 elements, 36 targets, arity 3: element e touches 3e, 3e+1, 3e+2 (no sharing).
    let values: Vec<i32> = (0..36).collect();
    let arg = OneArg {
        values: &values,
        arity: 3,
        target_size: 36,
        dim: 2,
        entries: MapAccess::Row,
        access: Access::Inc,
    };
    let plan = arg.plan(12, 6);
    assert_eq!(plan.blocks(), 2);
    assert_eq!(plan.colours(), 1, "blocks share no target");
    assert_eq!(plan.stats.max_element_colours, 1);
    assert_eq!(plan.staging[0].sizes, [18, 18]);
    assert_eq!(plan.shared_bytes, [18 * 2 * 8, 18 * 2 * 8]);
    assert!(matches!(
        plan.staging[0].global_to_local,
        op2_plan::LocalIndices::U16(_)
    ));
}

#[test]
fn read_only_indirect_loop_has_one_colour() {
    let values: Vec<i32> = (0..20).map(|i| i % 3).collect();
    let arg = OneArg {
        values: &values,
        arity: 2,
        target_size: 3,
        dim: 1,
        entries: MapAccess::Row,
        access: Access::Read,
    };
    let plan = arg.plan(10, 3);
    assert_eq!((plan.blocks(), plan.colours()), (4, 1));
}

#[test]
fn planner_reuses_plans_for_equivalent_loops() {
    let values: Vec<i32> = (0..20).map(|i| i % 5).collect();
    let m = PlanMap {
        id: 1,
        name: "m",
        values: &values,
        arity: 2,
        target_size: 5,
    };
    let arg = |data| PlanArg {
        data,
        dim: 1,
        elem_bytes: 8,
        map: Some(m),
        entries: MapAccess::Entry(0),
        access: Access::Inc,
    };
    let planner = CachedPlanner::new(StrategyChoice::default());
    let a = [arg(1)];
    let b = [arg(2)]; // other data, same shape: same plan
    let p1 = planner
        .plan(&PlanRequest {
            set: 1,
            start: 0,
            end: 10,
            block_size: 4,
            args: &a,
            detail: PlanDetail::Full,
        })
        .unwrap();
    let p2 = planner
        .plan(&PlanRequest {
            set: 1,
            start: 0,
            end: 10,
            block_size: 4,
            args: &b,
            detail: PlanDetail::Full,
        })
        .unwrap();
    assert!(std::sync::Arc::ptr_eq(&p1, &p2));
    planner
        .plan(&PlanRequest {
            set: 1,
            start: 0,
            end: 10,
            block_size: 5,
            args: &a,
            detail: PlanDetail::Full,
        })
        .unwrap();
    let stats = planner.stats();
    assert_eq!((stats.built, stats.reused), (2, 1));
}

#[test]
fn plans_differ_when_direct_args_differ() {
    // A plan's per-arg tables are indexed by position: `[x direct, d via m]` and `[d via m]` must
    // not share one (the device code generator once panicked on the first loop's plan).
    let values: Vec<i32> = (0..20).map(|i| i % 5).collect();
    let m = PlanMap {
        id: 1,
        name: "m",
        values: &values,
        arity: 2,
        target_size: 5,
    };
    let via = PlanArg {
        data: 2,
        dim: 1,
        elem_bytes: 8,
        map: Some(m),
        entries: MapAccess::Row,
        access: Access::Inc,
    };
    let direct = PlanArg {
        data: 1,
        map: None,
        access: Access::Rw,
        ..via.clone()
    };
    let planner = CachedPlanner::new(StrategyChoice::default());
    let request = |args| PlanRequest {
        set: 1,
        start: 0,
        end: 10,
        block_size: 4,
        args,
        detail: PlanDetail::Full,
    };
    let with = [direct.clone(), via.clone()];
    let without = [via.clone()];
    let after = [via.clone(), direct.clone()];
    let p1 = planner.plan(&request(&with)).unwrap();
    let p2 = planner.plan(&request(&without)).unwrap();
    let p3 = planner.plan(&request(&after)).unwrap();
    assert_eq!(p1.arg_staging, [None, Some(0)]);
    assert_eq!(p2.arg_staging, [Some(0)]);
    assert_eq!(p3.arg_staging, [Some(0), None]);
    assert_eq!(planner.stats().built, 3);
}

#[test]
fn a_direct_increment_beside_one_through_a_map_is_coloured_with_it() {
    // Element e increments d[e] directly and d[m[e]] through the map: e and the element whose
    // map entry is e must not share a colour.
    let n = 64;
    let values: Vec<i32> = (0..n as i32).map(|i| (i * 7 + 3) % n as i32).collect();
    let m = PlanMap {
        id: 1,
        name: "m",
        values: &values,
        arity: 1,
        target_size: n,
    };
    let via = PlanArg {
        data: 1,
        dim: 1,
        elem_bytes: 4,
        map: Some(m),
        entries: MapAccess::Entry(0),
        access: Access::Inc,
    };
    let direct = PlanArg {
        map: None,
        ..via.clone()
    };
    let args = [via, direct];
    assert_eq!(PlanArg::colouring(&args), [true, true]);
    let req = PlanRequest {
        set: 1,
        start: 0,
        end: n,
        block_size: 4,
        args: &args,
        detail: PlanDetail::Full,
    };
    let plan = build_plan(&req).unwrap();
    check_plan(&plan, &req);
    assert!(plan.colours() > 1);
    // A direct READ beside it, or a direct INC on data modified only directly, adds nothing.
    let read = PlanArg {
        access: Access::Read,
        ..args[1].clone()
    };
    let other = PlanArg {
        data: 2,
        ..args[1].clone()
    };
    assert_eq!(
        PlanArg::colouring(&[args[0].clone(), read, other]),
        [true, false, false]
    );
}

#[test]
fn bad_requests_are_errors_not_panics() {
    let values = vec![0i32, 9];
    let m = PlanMap {
        id: 1,
        name: "m",
        values: &values,
        arity: 1,
        target_size: 5,
    };
    let arg = PlanArg {
        data: 1,
        dim: 1,
        elem_bytes: 8,
        map: Some(m),
        entries: MapAccess::Entry(0),
        access: Access::Inc,
    };
    let args = [arg.clone()];
    assert!(
        build_plan(&PlanRequest {
            set: 1,
            start: 0,
            end: 2,
            block_size: 0,
            args: &args,
            detail: PlanDetail::Full,
        })
        .is_err(),
        "block size 0"
    );
    assert!(
        build_plan(&PlanRequest {
            set: 1,
            start: 0,
            end: 2,
            block_size: 4,
            args: &args,
            detail: PlanDetail::Full,
        })
        .is_err(),
        "value 9 >= 5"
    );
    assert!(
        build_plan(&PlanRequest {
            set: 1,
            start: 0,
            end: 3,
            block_size: 4,
            args: &args,
            detail: PlanDetail::Full,
        })
        .is_err(),
        "too few rows"
    );
    let wrong = [PlanArg {
        entries: MapAccess::Entry(1),
        ..arg
    }];
    assert!(
        build_plan(&PlanRequest {
            set: 1,
            start: 0,
            end: 1,
            block_size: 4,
            args: &wrong,
            detail: PlanDetail::Full,
        })
        .is_err(),
        "entry >= arity"
    );
}
