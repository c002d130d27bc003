//! How the distributed harness splits a case's mesh, and the error meaning a case cannot run
//! across ranks.

use op2::Op2Error;

/// The kernel name of [`Op2Error::Unsupported`] errors meaning "this case cannot run across
/// ranks" (the runner reports the case as skipped there).
pub const NOT_DISTRIBUTED: &str = "(not across ranks)";

/// How the distributed harness partitions each case's mesh.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Partition {
    /// Contiguous blocks of every set in declaration order.
    Blocks,
    /// METIS on the graph of the case's first map (blocks when it declares none), renumbered.
    Metis,
}

impl Partition {
    /// The name the runner and the tables use.
    pub fn name(self) -> &'static str {
        match self {
            Partition::Blocks => "blocks",
            Partition::Metis => "metis",
        }
    }

    /// The partition called `name`.
    pub fn from_name(name: &str) -> Option<Partition> {
        [Partition::Blocks, Partition::Metis]
            .into_iter()
            .find(|p| p.name() == name)
    }
}

/// The error saying a case cannot run across ranks, and why.
pub(super) fn not_distributed(reason: &str) -> Op2Error {
    Op2Error::Unsupported {
        kernel: NOT_DISTRIBUTED.into(),
        reason: reason.into(),
    }
}
