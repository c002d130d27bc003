//! A case's sets and maps in global numbering: one process's, global ones across ranks, or
//! extruded columns over a base set (columns follow their base element, so a column is never
//! split), made local when first used.

use super::across::{Distributed, GMap, GSet};
use super::partition::not_distributed;
use op2::{Layers, Result, Runtime as Op2Runtime, Scalar};
use std::cell::OnceCell;
use std::collections::HashMap;
use std::rc::Rc;

/// What a case's set is: one process's, a global one across ranks, or columns over a base set.
pub(super) enum SetKind {
    Plain(op2::Set),
    Global(GSet, Rc<Distributed>, Op2Runtime),
    /// Extruded over a base set of either kind.
    Columns(Rc<Columns>),
}

/// A set's global size and kind.
pub(super) struct SetInner {
    /// Global size.
    pub(super) size: usize,
    pub(super) inner: SetKind,
}

/// A set of a case's mesh (cheap to clone).
#[derive(Clone)]
pub struct Set(pub(super) Rc<SetInner>);

impl Set {
    /// Number of elements in the whole mesh.
    pub fn size(&self) -> usize {
        self.0.size
    }

    /// This rank's set itself (the whole set in one process; partitioning first across
    /// ranks), for what the case runtime does not wrap (mixed sets).
    pub fn op2(&self) -> Result<op2::Set> {
        self.local()
    }

    pub(super) fn local(&self) -> Result<op2::Set> {
        match &self.0.inner {
            SetKind::Plain(s) => Ok(s.clone()),
            SetKind::Global(g, d, rt) => d.set(rt, *g),
            SetKind::Columns(c) => Ok(c.local()?.0.clone()),
        }
    }

    /// The global number of each local element (halos included): `None` in one process.
    pub(super) fn ids(&self) -> Result<Option<Vec<u64>>> {
        match &self.0.inner {
            SetKind::Plain(_) => Ok(None),
            SetKind::Global(g, d, rt) => Ok(Some(d.global_ids(rt, *g)?.to_vec())),
            SetKind::Columns(c) => Ok(c.local()?.1.clone()),
        }
    }

    /// Whether the set is split across ranks.
    pub(super) fn distributed(&self) -> bool {
        match &self.0.inner {
            SetKind::Plain(_) => false,
            SetKind::Global(..) => true,
            SetKind::Columns(c) => c.distributed(),
        }
    }

    pub(super) fn global(&self) -> Option<(GSet, &Rc<Distributed>, &Op2Runtime)> {
        match &self.0.inner {
            SetKind::Plain(_) | SetKind::Columns(_) => None,
            SetKind::Global(g, d, rt) => Some((*g, d, rt)),
        }
    }
}

/// What a case's map is, as for [`SetKind`].
pub(super) enum MapKind {
    Plain(op2::Map),
    Global(GMap, Rc<Distributed>, Op2Runtime),
    /// From an extruded set.
    Columns(Rc<ColumnMap>),
}

/// A map of a case's mesh.
pub struct Map(pub(super) MapKind);

impl Map {
    /// This rank's map itself, for what the case runtime does not wrap (mixed maps).
    pub fn op2(&self) -> Result<op2::Map> {
        self.local()
    }

    pub(super) fn local(&self) -> Result<op2::Map> {
        match &self.0 {
            MapKind::Plain(m) => Ok(m.clone()),
            MapKind::Global(g, d, rt) => d.map(rt, *g),
            MapKind::Columns(m) => m.local(),
        }
    }
}

/// Columns over a base set: `layers[b]` node layers over base element `b` (global numbering),
/// holding `layers - 1` cells or `layers` nodes each.
pub(super) struct Columns {
    pub(super) base: Set,
    pub(super) layers: Vec<usize>,
    /// Whether every column was given the same count (the runtime then gets one count, and
    /// its column walks a literal height).
    pub(super) uniform: bool,
    pub(super) cells: bool,
    pub(super) name: String,
    pub(super) rt: Op2Runtime,
    /// This rank's set, and the global number of each of its elements (across ranks).
    pub(super) local: OnceCell<(op2::Set, Option<Vec<u64>>)>,
}

impl Columns {
    pub(super) fn per_column(&self, b: usize) -> usize {
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
    pub(super) from: Set,
    pub(super) to: Set,
    pub(super) arity: usize,
    pub(super) values: Vec<i32>,
    pub(super) offsets: Vec<i32>,
    pub(super) name: String,
    pub(super) rt: Op2Runtime,
    pub(super) local: OnceCell<op2::Map>,
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
