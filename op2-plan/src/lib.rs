//! op2-plan: the parallel execution plan (PyOP2's "Parallel Execution Plan").
//!
//! The iteration set is cut into contiguous mini-partitions (blocks). For every unique (Dat, Map) pair
//! accessed indirectly, each block gets its sorted unique target indices (local-to-global) and every
//! map entry its block-local index (global-to-local), so device backends can stage data into shared
//! memory. A two-level greedy colouring (32-bit masks, further passes offset by 32) makes elements of
//! one colour inside a block, and blocks of one colour, free of conflicting indirect writes. Plans are
//! computed from sets, maps and access modes only, never from data, and cached by [`CachedPlanner`],
//! which implements op2-core's [`Planner`] trait (range-aware, and the one place a backend's
//! [`Strategy`] is chosen).

#![warn(missing_docs)]

mod buffers;
mod build;
mod planner;

pub use buffers::PlanBuffers;
pub use build::build_plan;
pub use op2_core::plan::{
    LocalIndices, MapAccess, Plan, PlanArg, PlanDetail, PlanMap, PlanRequest, PlanStats, Planner,
    Staging, Strategy,
};
pub use planner::{
    CachedPlanner, DEFAULT_BLOCK_SIZE, LocalMemoryFit, PlannerStats, StrategyChoice, block_size,
};
