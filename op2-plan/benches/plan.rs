//! Criterion benchmark: planning an Airfoil-sized edge loop (720,000 quad cells, 1,438,200 interior
//! edges, two INC args through edge-to-cell), from scratch and from the plan cache.

use criterion::{Criterion, criterion_group, criterion_main};
use op2_core::Access;
use op2_plan::{
    CachedPlanner, DEFAULT_BLOCK_SIZE, MapAccess, PlanArg, PlanDetail, PlanMap, PlanRequest,
    StrategyChoice, build_plan,
};

const NX: usize = 600;
const NY: usize = 1200;

/// Interior edges of an NX x NY structured quad mesh, j outer and i inner, as (cell, cell) pairs.
fn edge_to_cell() -> Vec<i32> {
    let cell = |i: usize, j: usize| (i + NX * j) as i32;
    let mut m = Vec::with_capacity(4 * NX * NY);
    for j in 0..NY {
        for i in 0..NX {
            if i + 1 < NX {
                m.extend([cell(i, j), cell(i + 1, j)]);
            }
            if j + 1 < NY {
                m.extend([cell(i, j), cell(i, j + 1)]);
            }
        }
    }
    m
}

fn plan_edges(c: &mut Criterion) {
    let values = edge_to_cell();
    let nedges = values.len() / 2;
    let e2c = PlanMap {
        id: 1,
        name: "edge2cell",
        values: &values,
        arity: 2,
        target_size: NX * NY,
    };
    let arg = |data, j, access| PlanArg {
        data,
        dim: 4,
        elem_bytes: 8,
        map: Some(e2c),
        entries: MapAccess::Entry(j),
        access,
    };
    // res_calc's shape: read x and q through both ends, increment res through both ends.
    let args = [
        arg(2, 0, Access::Read),
        arg(2, 1, Access::Read),
        arg(1, 0, Access::Inc),
        arg(1, 1, Access::Inc),
    ];
    let req = PlanRequest {
        set: 1,
        start: 0,
        end: nedges,
        block_size: DEFAULT_BLOCK_SIZE,
        args: &args,
        detail: PlanDetail::Full,
    };
    let plan = build_plan(&req).unwrap();
    eprintln!("edge loop plan ({nedges} edges): {}", plan.stats);

    let mut g = c.benchmark_group("plan_720k_cells");
    g.sample_size(10);
    g.bench_function("build", |b| b.iter(|| build_plan(&req).unwrap()));
    let planner = CachedPlanner::new(StrategyChoice::default());
    planner.plan(&req).unwrap();
    g.bench_function("cached", |b| b.iter(|| planner.plan(&req).unwrap()));
    g.finish();
}

mod harness {
    //! Criterion's generated entry points (its macros emit undocumented items).
    #![allow(missing_docs)]
    use super::*;
    criterion_group!(benches, plan_edges);
}
criterion_main!(harness::benches);
