//! Extruded sets and maps, and subsets, for cases written in global numbering: in one process
//! straight onto the runtime; across ranks made from this rank's part of the base set once the
//! mesh is partitioned (columns follow their base element, so a column is never split).

use super::mesh::{ColumnMap, Columns, Map, MapKind, Set, SetInner, SetKind};
use super::partition::not_distributed;
use super::{CaseArg, CaseRuntime};
use op2::{Arg, Kernel, Layers, Region, Result};
use std::cell::OnceCell;
use std::rc::Rc;

impl CaseRuntime {
    /// The extruded cells over `base`: `layers` node layers per column (one count or one per
    /// base element, global numbering), `layers - 1` cells each.
    pub fn decl_extruded_set(
        &self,
        base: &Set,
        layers: impl Into<Layers>,
        name: &str,
    ) -> Result<Set> {
        self.columns(base, layers.into(), true, name)
    }

    /// The nodes of the columns over `base`: `layers` per column.
    pub fn decl_extruded_nodes(
        &self,
        base: &Set,
        layers: impl Into<Layers>,
        name: &str,
    ) -> Result<Set> {
        self.columns(base, layers.into(), false, name)
    }

    fn columns(&self, base: &Set, layers: Layers, cells: bool, name: &str) -> Result<Set> {
        let (layers, uniform) = match layers {
            Layers::Uniform(l) => (vec![l; base.size()], true),
            Layers::PerColumn(v) => (v, false),
        };
        let c = Columns {
            base: base.clone(),
            layers,
            uniform,
            cells,
            name: name.into(),
            rt: self.rt.clone(),
            local: OnceCell::new(),
        };
        let size = (0..c.layers.len()).map(|b| c.per_column(b)).sum();
        let set = Set(Rc::new(SetInner {
            size,
            inner: SetKind::Columns(Rc::new(c)),
        }));
        // In one process the runtime checks the declaration now.
        if !set.distributed() {
            set.local()?;
        }
        Ok(set)
    }

    /// A map from the extruded set `from` to `to`: `values` holds the bottom row of each base
    /// element (global numbering of `to`), and layer `k` adds `k * offsets[j]` to entry `j`.
    pub fn decl_extruded_map(
        &self,
        from: &Set,
        to: &Set,
        arity: usize,
        values: impl Into<Vec<i32>>,
        offsets: impl Into<Vec<i32>>,
        name: &str,
    ) -> Result<Map> {
        if !matches!(from.0.inner, SetKind::Columns(_)) {
            return Err(not_distributed(
                "offsets on a map from a set that is not extruded",
            ));
        }
        let m = ColumnMap {
            from: from.clone(),
            to: to.clone(),
            arity,
            values: values.into(),
            offsets: offsets.into(),
            name: name.into(),
            rt: self.rt.clone(),
            local: OnceCell::new(),
        };
        let distributed = from.distributed() || to.distributed();
        let map = Map(MapKind::Columns(Rc::new(m)));
        if !distributed {
            map.local()?;
        }
        Ok(map)
    }

    /// The subset of `parent` made of its elements `indices` (global numbers, sorted): across
    /// ranks each rank's subset holds those of its elements a loop runs.
    pub fn decl_subset(&self, parent: &Set, indices: &[usize], name: &str) -> Result<Set> {
        let local = parent.local()?;
        let mine: Vec<i32> = match parent.ids()? {
            None => indices.iter().map(|&i| i as i32).collect(),
            Some(ids) => {
                let wanted: std::collections::HashSet<u64> =
                    indices.iter().map(|&i| i as u64).collect();
                (0..local.exec_size())
                    .filter(|&l| wanted.contains(&ids[l]))
                    .map(|l| l as i32)
                    .collect()
            }
        };
        let s = self.rt.decl_subset(&local, mine, name)?;
        Ok(Set(Rc::new(SetInner {
            size: indices.len(),
            inner: SetKind::Plain(s),
        })))
    }

    /// Runs `kernel` over `region` of the extruded `set` with `args`.
    pub fn par_loop_region(
        &self,
        kernel: &Kernel,
        set: &Set,
        region: Region,
        args: impl IntoIterator<Item = CaseArg>,
    ) -> Result<()> {
        let set = set.local()?;
        let args = args
            .into_iter()
            .map(|a| a.0)
            .collect::<Result<Vec<Arg>>>()?;
        self.rt
            .par_loop_region(kernel, &set, region, args)
            .map(drop)
    }
}
