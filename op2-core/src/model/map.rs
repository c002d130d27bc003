//! Maps: connectivity from each element of one set to `arity` elements of another, validated at declaration.

use crate::model::error::{Op2Error, Result};
use crate::model::set::Set;
use std::fmt;
use std::sync::Arc;

pub(crate) struct MapInner {
    pub(crate) id: u64,
    pub(crate) runtime_id: u64,
    pub(crate) name: String,
    pub(crate) from: Set,
    pub(crate) to: Set,
    pub(crate) arity: usize,
    pub(crate) values: Vec<i32>,
    /// For a map from an extruded set: each entry's step per layer (`values` then hold the
    /// bottom layer's row of each column).
    pub(crate) offsets: Option<Arc<[i32]>>,
    /// For a map from an extruded set: [`Map::columns_exact`] for each list of entries asked.
    pub(crate) exact: std::sync::Mutex<std::collections::HashMap<Vec<usize>, bool>>,
    /// Whether negative values ("no element") are allowed: see [`Map::has_gaps`].
    pub(crate) gaps: bool,
}

/// A map from a set to another: row `e` lists the `arity` target elements of element `e`.
/// Cheap to clone (a shared handle); immutable once declared.
#[derive(Clone)]
pub struct Map(pub(crate) Arc<MapInner>);

impl Map {
    pub(crate) fn new(
        id: u64,
        from: &Set,
        to: &Set,
        arity: usize,
        values: Vec<i32>,
        name: &str,
    ) -> Result<Self> {
        Map::new_with(id, from, to, arity, values, name, false)
    }

    /// [`Map::new`], negative values allowed when `gaps` (each one "no element").
    pub(crate) fn new_with(
        id: u64,
        from: &Set,
        to: &Set,
        arity: usize,
        values: Vec<i32>,
        name: &str,
        gaps: bool,
    ) -> Result<Self> {
        if arity == 0 {
            return Err(Op2Error::ZeroDimension {
                what: "map",
                name: name.into(),
                field: "arity",
            });
        }
        let rows = from.exec_size();
        if values.len() != rows * arity {
            return Err(Op2Error::DataLength {
                what: "map",
                name: name.into(),
                expected: rows * arity,
                actual: values.len(),
                detail: format!("{rows} rows of set `{}` x arity {arity}", from.name()),
            });
        }
        let to_size = to.total_size();
        if let Some(pos) = values
            .iter()
            .position(|&v| (v < 0 && !gaps) || (v >= 0 && v as usize >= to_size))
        {
            return Err(Op2Error::MapValueOutOfRange {
                map: name.into(),
                row: pos / arity,
                entry: pos % arity,
                value: values[pos] as i64,
                to: to.name().into(),
                to_size,
            });
        }
        // A Vec grown by pushing holds up to twice its length; the Map keeps it for the whole run.
        let mut values = values;
        values.shrink_to_fit();
        Ok(Map(Arc::new(MapInner {
            id,
            runtime_id: from.runtime_id(),
            name: name.into(),
            from: from.clone(),
            to: to.clone(),
            arity,
            values,
            offsets: None,
            exact: Default::default(),
            gaps,
        })))
    }

    /// A map from the extruded set `from`: `values` holds the bottom element's row of each
    /// column (one row per element of the base set a loop runs), and in layer `k` entry `j` is
    /// `values[b * arity + j] + k * offsets[j]`. Every layer's value is checked against `to`.
    pub(crate) fn extruded(
        id: u64,
        from: &Set,
        to: &Set,
        arity: usize,
        values: Vec<i32>,
        offsets: Vec<i32>,
        name: &str,
    ) -> Result<Self> {
        let Some(ex) = from.extrusion() else {
            return Err(Op2Error::NotExtruded {
                what: format!("map `{name}`'s offsets"),
                reason: format!(
                    "only a map from an extruded set has offsets, and `{}` is not extruded",
                    from.name()
                ),
            });
        };
        if offsets.len() != arity {
            return Err(Op2Error::DataLength {
                what: "map offsets",
                name: name.into(),
                expected: arity,
                actual: offsets.len(),
                detail: format!("one offset per entry (arity {arity})"),
            });
        }
        let base = ex.base().clone();
        let rows = base.exec_size();
        if arity == 0 {
            return Err(Op2Error::ZeroDimension {
                what: "map",
                name: name.into(),
                field: "arity",
            });
        }
        if values.len() != rows * arity {
            return Err(Op2Error::DataLength {
                what: "map",
                name: name.into(),
                expected: rows * arity,
                actual: values.len(),
                detail: format!(
                    "one bottom row per column: {rows} elements of `{}` x arity {arity}",
                    base.name()
                ),
            });
        }
        let to_size = to.total_size() as i64;
        for (pos, &v) in values.iter().enumerate() {
            let (b, j) = (pos / arity, pos % arity);
            let n = ex.column_len(b) as i64;
            if n == 0 {
                continue;
            }
            let top = v as i64 + (n - 1) * offsets[j] as i64;
            for (layer, value) in [(0, v as i64), (n - 1, top)] {
                if value < 0 || value >= to_size {
                    return Err(Op2Error::MapValueOutOfRange {
                        map: name.into(),
                        row: ex.column_start(b) + layer as usize,
                        entry: j,
                        value,
                        to: to.name().into(),
                        to_size: to_size as usize,
                    });
                }
            }
        }
        let mut values = values;
        values.shrink_to_fit();
        Ok(Map(Arc::new(MapInner {
            id,
            runtime_id: from.runtime_id(),
            name: name.into(),
            from: from.clone(),
            to: to.clone(),
            arity,
            values,
            offsets: Some(offsets.into()),
            exact: Default::default(),
            gaps: false,
        })))
    }

    /// Whether the map was declared with gaps ([`crate::Runtime::decl_map_with_gaps`]): its
    /// negative values mean "no element". Only matrices take such maps (their patterns and
    /// assembly leave those entries out); loops refuse them for data.
    pub fn has_gaps(&self) -> bool {
        self.0.gaps
    }

    /// For a map from an extruded set: each entry's step per layer.
    pub fn offsets(&self) -> Option<&[i32]> {
        self.0.offsets.as_deref()
    }

    /// For a map from an extruded set to an extruded set, whether a plan coloured by the
    /// bottom rows' `entries` keeps apart every two columns that reach a common element through
    /// those entries at some layers. It holds when each entry's layers stay in the target
    /// column of its bottom value, and every column whose entries reach a target column has,
    /// among them, the smallest bottom value any column reaches it with: two columns that meet
    /// in a target column then share that value. Found once per list of entries.
    pub fn columns_exact(&self, entries: &[usize]) -> bool {
        let key = entries.to_vec();
        if let Some(&known) = self
            .0
            .exact
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(&key)
        {
            return known;
        }
        let exact = self.find_columns_exact(entries);
        self.0
            .exact
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .insert(key, exact);
        exact
    }

    fn find_columns_exact(&self, entries: &[usize]) -> bool {
        let (Some(offsets), Some(ex), Some(target)) = (
            self.offsets(),
            self.0.from.extrusion(),
            self.0.to.extrusion(),
        ) else {
            return false;
        };
        let a = self.0.arity;
        let rows = ex.base().exec_size();
        // The target column of each written entry's bottom value (None: an empty column).
        let mut keys = vec![None; rows * entries.len()];
        let mut least: std::collections::HashMap<usize, i32> = std::collections::HashMap::new();
        for b in 0..rows {
            let n = ex.column_len(b) as i64;
            if n == 0 {
                continue;
            }
            for (q, &j) in entries.iter().enumerate() {
                let v = self.0.values[b * a + j];
                let top = (v as i64 + (n - 1) * offsets[j] as i64) as usize;
                let c = target.column_of(v as usize);
                if target.column_of(top) != c {
                    return false;
                }
                keys[b * entries.len() + q] = Some(c);
                least.entry(c).and_modify(|m| *m = (*m).min(v)).or_insert(v);
            }
        }
        (0..rows).all(|b| {
            let row: Vec<i32> = entries.iter().map(|&j| self.0.values[b * a + j]).collect();
            keys[b * entries.len()..(b + 1) * entries.len()]
                .iter()
                .flatten()
                .all(|c| row.contains(&least[c]))
        })
    }

    /// For a map from an extruded set, its rows at every layer (one row per element of the
    /// extruded set a loop runs); for any other map, its values.
    pub fn layered_values(&self) -> std::borrow::Cow<'_, [i32]> {
        let (Some(offsets), Some(ex)) = (self.offsets(), self.0.from.extrusion()) else {
            return std::borrow::Cow::Borrowed(&self.0.values);
        };
        let a = self.0.arity;
        let rows = ex.base().exec_size();
        let mut out = Vec::with_capacity(self.0.from.exec_size() * a);
        for b in 0..rows {
            let row = &self.0.values[b * a..(b + 1) * a];
            for k in 0..ex.column_len(b) as i32 {
                out.extend(row.iter().zip(offsets.iter()).map(|(&v, &o)| v + k * o));
            }
        }
        std::borrow::Cow::Owned(out)
    }

    /// The map's name.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// Unique id of this map.
    pub fn id(&self) -> u64 {
        self.0.id
    }

    /// The source set.
    pub fn from(&self) -> &Set {
        &self.0.from
    }

    /// The target set.
    pub fn to(&self) -> &Set {
        &self.0.to
    }

    /// Targets per source element.
    pub fn arity(&self) -> usize {
        self.0.arity
    }

    /// All values, row-major (`values()[e * arity + j]`).
    pub fn values(&self) -> &[i32] {
        &self.0.values
    }

    pub(crate) fn runtime_id(&self) -> u64 {
        self.0.runtime_id
    }
}

impl PartialEq for Map {
    fn eq(&self, other: &Self) -> bool {
        self.0.id == other.0.id
    }
}
impl Eq for Map {}

impl fmt::Debug for Map {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "Map({:?}: {} -> {}, arity {})",
            self.0.name,
            self.0.from.name(),
            self.0.to.name(),
            self.0.arity
        )
    }
}
