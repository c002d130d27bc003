//! Extruded sets (PyOP2's `ExtrudedSet`): columns of layers over a base set, maps that step by an
//! offset per layer, iteration regions, and how a loop over one runs. On backends that walk
//! columns (the host ones) a loop becomes a loop over the base set whose kernel, written here,
//! reads each column's map row once and calls the user's kernel layer by layer, bottom to top;
//! elsewhere, and where that order could race, it runs over the extruded set with each map's
//! rows at every layer (made once). Either way plans, halos, ranks and every backend see an
//! ordinary loop. This module holds the regions and what the runtime made once for extruded
//! loops; the runtime's front (`extruded`) turns a loop over an extruded set into that ordinary
//! loop.

use crate::model::carrier::Carrier;
use crate::model::map::Map;
use crate::model::set::Set;
use std::collections::HashMap;
use std::sync::Arc;

/// Which layers of an extruded set a loop runs (PyOP2's iteration regions).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Region {
    /// Every element of every column.
    #[default]
    All,
    /// The bottom element of each column.
    Bottom,
    /// The top element of each column.
    Top,
    /// Each pair of vertically adjacent cells, once: maps give the lower cell's row followed by
    /// the upper cell's (twice the arity), so a kernel sees both sides of the facet between them.
    /// Over a subset of an extruded set's cells, the facets whose cells below and above are
    /// both in the subset.
    InteriorFacets,
}

/// What the runtime made for extruded loops, made once each.
#[derive(Default)]
pub(crate) struct ExtrusionCache {
    /// Derived maps, by (kind, map or set id, the other id or 0).
    pub(crate) maps: HashMap<(u8, u64, u64), Map>,
    /// The interior-facet set of each extruded set (by the set's id).
    pub(crate) facets: HashMap<u64, Set>,
    /// The interior facets between two cells of a subset of an extruded set's cells, as a
    /// subset of its facet set (by the subset's id).
    pub(crate) facet_subsets: HashMap<u64, Set>,
    /// Bottom and top subsets (by set id and region).
    pub(crate) ends: HashMap<(u64, Region), Set>,
    /// Elements per column of sets whose columns differ (by set id), as a Dat on the base set.
    pub(crate) lengths: HashMap<u64, Arc<Carrier>>,
    /// Each element's layer in its column (by set id), as a Dat on the extruded set, for loops
    /// that pass the layer to their kernel.
    pub(crate) layers: HashMap<u64, Arc<Carrier>>,
}

pub(crate) const ROWS_AT_EVERY_LAYER: u8 = 0;
pub(crate) const BOTTOM_ROWS: u8 = 1;
pub(crate) const COLUMN_STARTS: u8 = 2;
pub(crate) const BASE_AT_LAYERS: u8 = 3;
pub(crate) const FACET_ROWS: u8 = 4;
pub(crate) const COLUMNS_OF: u8 = 5;
/// The map from each executed element of a set to itself (halo refresh).
pub(crate) const COVERING: u8 = 6;
