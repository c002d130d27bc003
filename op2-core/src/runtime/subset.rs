//! Subsets (PyOP2's `Subset`): a loop over some elements of a set. The runtime runs it as a loop
//! over the subset's own elements in which every Dat of the parent set is reached through a map
//! from the subset to the parent (a direct arg becomes an entry of that map) and every map from
//! the parent is replaced by its rows at the subset's elements. So every backend, plan and
//! rank runs subsets with no code of their own.

use super::Runtime;
use super::sync::lock;
use super::sync::next_id;
use crate::model::arg::{Arg, ArgTarget, Via};
use crate::model::carrier::CarrierKind;
use crate::model::error::{Op2Error, Result};
use crate::model::map::Map;
use crate::model::set::Set;

impl Runtime {
    /// Declares the subset of `parent` made of its elements `indices` (sorted, each once, among
    /// the elements a loop over `parent` runs), named `name` (PyOP2's `Subset(parent,
    /// indices)`). A loop over it runs only those elements: Dats of the parent are read and
    /// written at them, maps from the parent apply at them. A subset of a subset selects from
    /// the first one's elements. Across ranks each rank gives its local indices; the subset's
    /// sections are those of its elements. Dats and maps live on whole sets, not on subsets.
    pub fn decl_subset(
        &self,
        parent: &Set,
        indices: impl Into<Vec<i32>>,
        name: &str,
    ) -> Result<Set> {
        self.own("set", parent.name(), parent.runtime_id())?;
        Set::subset_of(next_id(), self.shared.id, name, parent, indices.into())
    }

    /// The map from `subset` to its superset (its elements), made once.
    fn subset_map(&self, subset: &Set) -> Result<Map> {
        self.composed(subset, None)
    }

    /// `map` (from the superset of `subset`) at the subset's elements, or (`None`) the map from
    /// the subset to its superset; made once per subset and map.
    fn composed(&self, subset: &Set, map: Option<&Map>) -> Result<Map> {
        let key = (subset.id(), map.map_or(0, Map::id));
        if let Some(m) = lock(&self.shared.state).subset_maps.get(&key) {
            return Ok(m.clone());
        }
        let (parent, indices) = (
            subset.superset().expect("a subset"),
            subset.subset_indices().expect("a subset"),
        );
        let m = match map {
            None => Map::new(
                next_id(),
                subset,
                parent,
                1,
                indices.to_vec(),
                &format!("{}->{}", subset.name(), parent.name()),
            )?,
            Some(m) => {
                let a = m.arity();
                // A map from an extruded set: its rows at every layer, one per element.
                let rows = m.layered_values();
                let values: Vec<i32> = indices
                    .iter()
                    .flat_map(|&e| rows[e as usize * a..(e as usize + 1) * a].iter().copied())
                    .collect();
                // A map with gaps stays one, so that the loop's check names it.
                Map::new_with(
                    next_id(),
                    subset,
                    m.to(),
                    a,
                    values,
                    &format!("{}@{}", m.name(), subset.name()),
                    m.has_gaps(),
                )?
            }
        };
        lock(&self.shared.state).subset_maps.insert(key, m.clone());
        Ok(m)
    }

    /// The args of a loop over `subset`, rewritten to run over its own elements: a direct arg on
    /// a Dat of the superset goes through the subset's map, and a map from the superset is
    /// taken at the subset's elements. Other args stay (and are checked as usual).
    pub(crate) fn subset_args(&self, subset: &Set, args: Vec<Arg>) -> Result<Vec<Arg>> {
        let parent = subset.superset().expect("a subset").clone();
        args.into_iter()
            .map(|mut a| {
                if let ArgTarget::Dat { carrier, via } = &mut a.target {
                    let on_parent =
                        matches!(carrier.kind(), CarrierKind::Dat(s) if s.id() == parent.id());
                    let rewritten = match &*via {
                        Via::Direct if on_parent => Via::Entry(self.subset_map(subset)?, 0),
                        Via::Entry(m, i) if m.from().id() == parent.id() => {
                            Via::Entry(self.composed(subset, Some(m))?, *i)
                        }
                        Via::Row(m) if m.from().id() == parent.id() => {
                            Via::Row(self.composed(subset, Some(m))?)
                        }
                        other => other.clone(),
                    };
                    *via = rewritten;
                }
                Ok(a)
            })
            .collect()
    }

    /// [`Op2Error::BadSubset`] when `set` is a subset: Dats and maps live on whole sets.
    pub(crate) fn whole_set(&self, set: &Set, what: &str) -> Result<()> {
        match set.superset() {
            Some(parent) => Err(Op2Error::BadSubset {
                subset: set.name().into(),
                parent: parent.name().into(),
                reason: format!(
                    "{what} live on whole sets; declare it on `{}`",
                    parent.name()
                ),
            }),
            None => Ok(()),
        }
    }
}
