//! What the lazy graph did: nodes recorded and run, forcings, and what each optimisation saved
//! (exchanges removed, loops fused, temporaries' memory reused), and the time sends overlapped
//! other work.

/// Counters of the lazy graph since the runtime started ([`crate::Runtime::lazy_stats`]).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct LazyStats {
    /// Nodes recorded (loop parts, halo sends and receives, reduction steps, temporaries'
    /// allocations and releases).
    pub nodes_recorded: u64,
    /// Nodes run (a fused node counts once).
    pub nodes_run: u64,
    /// Times pending work was forced (by an access, a flush, the runtime's end).
    pub forces: u64,
    /// Exchanges not recorded because the Dat's halo was up to date since an exchange that ran
    /// (seed 002's early halo skip).
    pub early_exchanges_removed: u64,
    /// Exchanges not recorded because a pending exchange of the Dat already brings its halo up
    /// to date (seed 002's successive exchanges).
    pub successive_exchanges_removed: u64,
    /// Bytes this rank did not send thanks to the two above.
    pub exchange_bytes_saved: u64,
    /// Loops fused with an independent loop over the same set (sibling fusion).
    pub sibling_fusions: u64,
    /// Loops fused with the loop before them that they depend on (direct-chain fusion).
    pub chain_fusions: u64,
    /// Bytes of Dat rows that fused loops did not stream from memory again (a Dat used by
    /// several loops of a fused node is read once).
    pub fusion_bytes_saved: u64,
    /// Temporaries given memory.
    pub temporaries_allocated: u64,
    /// Of those, how many reused a released temporary's memory instead of allocating.
    pub temporaries_reused: u64,
    /// Bytes of temporaries' memory reused instead of allocated.
    pub temporary_bytes_reused: u64,
    /// Seconds spent choosing what a forcing runs, grouping fused loops and ordering the nodes
    /// (the graph's own cost, not running the nodes).
    pub schedule_seconds: f64,
    /// Nodes those forcings ordered.
    pub nodes_scheduled: u64,
    /// Halo receives waited for.
    pub receives: u64,
    /// Chains of loops run tile by tile (sparse tiling).
    pub tiled_chains: u64,
    /// Loops those chains ran.
    pub tiled_loops: u64,
    /// Tiles those chains ran (a tile runs its share of every loop of its chain).
    pub tiles_run: u64,
    /// Levels those chains ran (a level's tiles run at once on the threads).
    pub tile_levels: u64,
    /// Chains inspected for tiling (each chain shape once; later runs reuse the inspection).
    pub tiling_inspections: u64,
    /// Of those, how many were refused as not paying (their loops run one by one).
    pub tiling_refused: u64,
    /// Seconds spent inspecting chains.
    pub tiling_seconds: f64,
    /// Seconds between posting sends and needing their receives, summed over exchanges: the
    /// time messages travelled while other work ran.
    pub overlap_seconds: f64,
}
