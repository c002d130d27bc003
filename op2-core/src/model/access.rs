//! Access modes: how a loop uses each arg (OP2's OP_READ, OP_WRITE, OP_RW, OP_INC, OP_MIN, OP_MAX).

/// How a kernel uses the data behind one arg.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Access {
    /// Read only.
    Read,
    /// Written without being read; the previous value is irrelevant.
    Write,
    /// Read and written.
    Rw,
    /// Incremented: the kernel adds into the target; the library prevents races.
    Inc,
    /// Global minimum reduction: the kernel lowers its copy (`if (v < *g) *g = v;`).
    Min,
    /// Global maximum reduction: the kernel raises its copy.
    Max,
}

impl Access {
    /// Whether the kernel may read the target's previous value.
    pub fn reads(self) -> bool {
        !matches!(self, Access::Write)
    }

    /// Whether the kernel may change the target.
    pub fn writes(self) -> bool {
        !matches!(self, Access::Read)
    }

    /// Whether this is a reduction (INC, MIN, MAX) whose partial results can be combined.
    pub fn is_reduction(self) -> bool {
        matches!(self, Access::Inc | Access::Min | Access::Max)
    }
}

/// OP2-style names for the access modes.
pub use Access::{Inc as INC, Max as MAX, Min as MIN, Read as READ, Rw as RW, Write as WRITE};
