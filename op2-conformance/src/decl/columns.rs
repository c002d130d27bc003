//! Extruded sets and maps, and subsets, for cases written in global numbering: in one process
//! straight onto the runtime; across ranks made from this rank's part of the base set once the
//! mesh is partitioned (columns follow their base element, so a column is never split).

use super::{CaseArg, CaseRuntime, Map, MapKind, Set, SetInner, SetKind, not_distributed};
use op2::{Arg, Kernel, Layers, Region, Result, Runtime as Op2Runtime, Scalar};
use std::cell::OnceCell;
use std::collections::HashMap;
use std::rc::Rc;

/// Columns over a base set: `layers[b]` node layers over base element `b` (global numbering),
/// holding `layers - 1` cells or `layers` nodes each.
pub(super) struct Columns {
    base: Set,
    layers: Vec<usize>,
    /// Whether every column was given the same count (the runtime then gets one count, and
    /// its column walks a literal height).
    uniform: bool,
    cells: bool,
    name: String,
    rt: Op2Runtime,
    /// This rank's set, and the global number of each of its elements (across ranks).
    local: OnceCell<(op2::Set, Option<Vec<u64>>)>,
}

impl Columns {
    fn per_column(&self, b: usize) -> usize {
        self.layers[b] - usize::from(self.cells)
    }

    /// This rank's extruded set and its elements' global numbers.
    pub(super) fn local(&self) -> Result<&(op2::Set, Option<Vec<u64>>)> {
        if let Some(l) = self.local.get() {
            return Ok(l);
        }
        let base = self.base.local()?;
        let ids = self.base.ids()?;
        let column = |lb: usize| ids.as_ref().map_or(lb, |ids| ids[lb] as usize);
        let layers: Layers = match (self.uniform, self.layers.first()) {
            (true, Some(&l)) => Layers::Uniform(l),
            _ => Layers::PerColumn(
                (0..base.total_size())
                    .map(|lb| self.layers[column(lb)])
                    .collect(),
            ),
        };
        let set = if self.cells {
            self.rt.decl_extruded_set(&base, layers, &self.name)?
        } else {
            self.rt.decl_extruded_nodes(&base, layers, &self.name)?
        };
        // Element k of a column is the global column's first element plus k.
        let global = ids.as_ref().map(|_| {
            let mut start = Vec::with_capacity(self.layers.len());
            let mut at = 0u64;
            for b in 0..self.layers.len() {
                start.push(at);
                at += self.per_column(b) as u64;
            }
            (0..base.total_size())
                .flat_map(|lb| {
                    let (g, first) = (column(lb), start[column(lb)]);
                    (0..self.per_column(g) as u64).map(move |k| first + k)
                })
                .collect()
        });
        Ok(self.local.get_or_init(|| (set, global)))
    }

    /// Whether the base set is split across ranks.
    pub(super) fn distributed(&self) -> bool {
        self.base.distributed()
    }
}

/// A map from columns: the bottom row of each global base element and a step per entry.
pub(super) struct ColumnMap {
    from: Set,
    to: Set,
    arity: usize,
    values: Vec<i32>,
    offsets: Vec<i32>,
    name: String,
    rt: Op2Runtime,
    local: OnceCell<op2::Map>,
}

impl ColumnMap {
    /// This rank's map: each local column's bottom row, its values translated to local numbers.
    pub(super) fn local(&self) -> Result<op2::Map> {
        if let Some(m) = self.local.get() {
            return Ok(m.clone());
        }
        let SetKind::Columns(from) = &self.from.0.inner else {
            unreachable!("checked at declaration")
        };
        let (from_local, _) = from.local()?;
        let base = from.base.local()?;
        let base_ids = from.base.ids()?;
        let to_local = self.to.local()?;
        let to_ids = self.to.ids()?;
        // Bottom values translate to local numbers; steps stay as given, which holds within
        // a column of an extruded target (its layers stay together on every rank).
        if to_ids.is_some()
            && !matches!(self.to.0.inner, SetKind::Columns(_))
            && self.offsets.iter().any(|&o| o != 0)
        {
            return Err(not_distributed(
                "across ranks, a map with offsets must map into an extruded set",
            ));
        }
        let lookup: Option<HashMap<u64, i32>> = to_ids.as_ref().map(|ids| {
            ids.iter()
                .enumerate()
                .map(|(l, &g)| (g, l as i32))
                .collect()
        });
        let a = self.arity;
        let mut rows = Vec::with_capacity(base.exec_size() * a);
        for lb in 0..base.exec_size() {
            let g = base_ids.as_ref().map_or(lb, |ids| ids[lb] as usize);
            let empty = from.per_column(g) == 0;
            for &v in &self.values[g * a..(g + 1) * a] {
                rows.push(match &lookup {
                    None => v,
                    // A column with no cells is never walked: any value does.
                    Some(_) if empty => 0,
                    // Missing here: the declaration reports the value out of range.
                    Some(l) => l.get(&(v as u64)).copied().unwrap_or(-1),
                });
            }
        }
        let m = self.rt.decl_extruded_map(
            from_local,
            &to_local,
            a,
            rows,
            self.offsets.clone(),
            &self.name,
        )?;
        Ok(self.local.get_or_init(|| m).clone())
    }
}

/// Collective: the owned rows of `dat` (on `set`, whose elements have global numbers `ids`)
/// from every rank, in global order on rank 0.
pub(super) fn gather<T: Scalar>(
    rt: &Op2Runtime,
    dat: &op2::Dat<T>,
    ids: &[u64],
    global_len: usize,
) -> Result<Option<Vec<T>>> {
    let owned = dat.set().size();
    let dim = dat.dim();
    let values = dat.to_vec()?;
    let mut bytes: Vec<u8> = (owned as u64).to_le_bytes().to_vec();
    for id in &ids[..owned] {
        bytes.extend(id.to_le_bytes());
    }
    bytes.extend_from_slice(bytemuck::cast_slice(&values[..owned * dim]));
    // Every rank's rows to rank 0 (lengths differ: an all-to-all with empty messages elsewhere).
    let comm = rt.communicator();
    let mut sends = vec![Vec::new(); comm.size()];
    sends[0] = bytes;
    let all = comm.all_to_all_v(sends)?;
    if comm.rank() != 0 {
        return Ok(None);
    }
    let mut out = vec![T::zeroed(); global_len * dim];
    let size = std::mem::size_of::<T>();
    for part in all {
        let n = u64::from_le_bytes(part[..8].try_into().expect("8 bytes")) as usize;
        let (ids, vals) = part[8..].split_at(8 * n);
        for (i, id) in ids.chunks(8).enumerate() {
            let g = u64::from_le_bytes(id.try_into().expect("8 bytes")) as usize;
            for c in 0..dim {
                let at = (i * dim + c) * size;
                out[g * dim + c] = bytemuck::pod_read_unaligned(&vals[at..at + size]);
            }
        }
    }
    Ok(Some(out))
}

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
