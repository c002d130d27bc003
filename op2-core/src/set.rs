//! Sets: the things a mesh is made of (nodes, edges, cells), with MPI section sizes.

use crate::error::{Op2Error, Result};
use std::fmt;
use std::sync::Arc;

/// Sizes of a set's four sections, in this order in memory: core, owned, exec halo, non-exec halo.
///
/// Without MPI every element is core. Core and owned elements belong to this process; loops iterate
/// over them. Exec-halo elements are computed redundantly by loops that write through maps;
/// non-exec-halo elements are only read.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct SetSizes {
    /// Owned elements that touch no halo data.
    pub core: usize,
    /// Owned elements that do touch halo data.
    pub owned: usize,
    /// Halo elements computed redundantly.
    pub exec_halo: usize,
    /// Halo elements only read.
    pub nonexec_halo: usize,
}

pub(crate) struct SetInner {
    pub(crate) id: u64,
    pub(crate) runtime_id: u64,
    pub(crate) name: String,
    pub(crate) sizes: SetSizes,
}

/// A set of mesh entities. Cheap to clone (a shared handle).
#[derive(Clone)]
pub struct Set(pub(crate) Arc<SetInner>);

impl Set {
    pub(crate) fn new(id: u64, runtime_id: u64, name: &str, sizes: SetSizes) -> Result<Self> {
        sizes
            .core
            .checked_add(sizes.owned)
            .and_then(|s| s.checked_add(sizes.exec_halo))
            .and_then(|s| s.checked_add(sizes.nonexec_halo))
            .ok_or_else(|| Op2Error::SetSizeOverflow {
                set: name.to_string(),
            })?;
        Ok(Set(Arc::new(SetInner {
            id,
            runtime_id,
            name: name.to_string(),
            sizes,
        })))
    }

    /// The set's name.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// Unique id of this set (unique across runtimes in one process).
    pub fn id(&self) -> u64 {
        self.0.id
    }

    /// Number of elements this process owns (core + owned): a loop's default iteration range.
    pub fn size(&self) -> usize {
        self.0.sizes.core + self.0.sizes.owned
    }

    /// Owned plus exec-halo elements: the range of loops that write through maps, and a map's rows.
    pub fn exec_size(&self) -> usize {
        self.size() + self.0.sizes.exec_halo
    }

    /// All elements including both halos: the number of rows of a Dat on this set.
    pub fn total_size(&self) -> usize {
        self.exec_size() + self.0.sizes.nonexec_halo
    }

    /// The four section sizes.
    pub fn sizes(&self) -> SetSizes {
        self.0.sizes
    }

    pub(crate) fn runtime_id(&self) -> u64 {
        self.0.runtime_id
    }
}

impl PartialEq for Set {
    fn eq(&self, other: &Self) -> bool {
        self.0.id == other.0.id
    }
}
impl Eq for Set {}

impl fmt::Debug for Set {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Set({:?}, {:?})", self.0.name, self.0.sizes)
    }
}
