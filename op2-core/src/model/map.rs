//! Maps: connectivity from each element of one set to `arity` elements of another, validated at declaration.

use crate::error::{Op2Error, Result};
use crate::set::Set;
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
        if let Some(pos) = values.iter().position(|&v| v < 0 || v as usize >= to_size) {
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
        })))
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
