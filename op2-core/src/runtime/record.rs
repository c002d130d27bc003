//! A recorded loop: the signature, prepared code, set, data and maps a loop step runs with. The
//! bottom of the runtime: steps, fusion and tiling read records; nothing here reads them back.

use crate::contract::backend::PreparedLoop;
use crate::model::carrier::Carrier;
use crate::model::map::Map;
use crate::model::set::Set;
use crate::model::signature::LoopSignature;
use std::sync::Arc;

/// A recorded loop with everything needed to run it.
pub struct LoopRecord {
    pub(crate) sig: Arc<LoopSignature>,
    pub(crate) prepared: Arc<dyn PreparedLoop>,
    pub(crate) set: Set,
    pub(crate) carriers: Vec<Arc<Carrier>>,
    pub(crate) maps: Vec<Map>,
    pub(crate) consts: Vec<Arc<Carrier>>,
    /// Bytes the loop moves by OP2's convention (see [`crate::runtime::timing::LoopTiming::bytes`]).
    pub(crate) bytes: u64,
    /// Whether it runs over the exec halo too (it writes through maps, or an arg asked).
    pub(crate) exec: bool,
    /// Its number among the runtime's loops (counted when checkpointing; 0 otherwise).
    pub(crate) ordinal: u64,
}

impl LoopRecord {
    /// The loop's signature.
    pub fn signature(&self) -> &LoopSignature {
        &self.sig
    }
}
