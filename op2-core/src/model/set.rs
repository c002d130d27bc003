//! Sets: the things a mesh is made of (nodes, edges, cells), with MPI section sizes.

use crate::model::error::{Op2Error, Result};
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

/// What this rank and one neighbour exchange for a set: the owned elements this rank sends, in
/// the order the neighbour stores them, and the halo elements it receives, in the order the
/// neighbour sends them (local element numbers). Both lists put the exec-halo elements (of the
/// receiving rank) first, so that an exchange of one section sends and receives a part of each.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HaloNeighbour {
    /// The neighbour's rank.
    pub rank: usize,
    /// Owned elements whose values go to the neighbour.
    pub send: Vec<u32>,
    /// How many of the first `send` elements the neighbour holds in its exec halo (the rest are
    /// in its non-exec halo): the neighbour's count of exec-halo elements in its `receive` list
    /// from this rank.
    pub send_to_exec: usize,
    /// Halo elements (exec or non-exec) whose values come from the neighbour, exec ones first.
    pub receive: Vec<u32>,
}

impl HaloNeighbour {
    /// The elements sent for the halo sections `sections` ([`crate::model::trace::section`] bits
    /// `EXEC_HALO`, `NONEXEC_HALO`) of the neighbour.
    pub fn send_for(&self, sections: u8) -> &[u32] {
        use crate::model::trace::section::{EXEC_HALO, NONEXEC_HALO};
        let split = self.send_to_exec.min(self.send.len());
        match (sections & EXEC_HALO != 0, sections & NONEXEC_HALO != 0) {
            (true, true) => &self.send,
            (true, false) => &self.send[..split],
            (false, true) => &self.send[split..],
            (false, false) => &[],
        }
    }

    /// The elements received into the halo sections `sections` of a set whose exec halo ends at
    /// element `exec_end`.
    pub fn receive_for(&self, sections: u8, exec_end: usize) -> &[u32] {
        use crate::model::trace::section::{EXEC_HALO, NONEXEC_HALO};
        let split = self
            .receive
            .iter()
            .take_while(|&&e| (e as usize) < exec_end)
            .count();
        match (sections & EXEC_HALO != 0, sections & NONEXEC_HALO != 0) {
            (true, true) => &self.receive,
            (true, false) => &self.receive[..split],
            (false, true) => &self.receive[split..],
            (false, false) => &[],
        }
    }
}

/// What one rank sends and receives for a set, as PyOP2's hand-built `Halo` gives it: per
/// neighbour rank, the owned elements it sends and the halo elements it receives, in matching
/// order on the two ranks, exec and non-exec halo mixed.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ExchangeLists {
    /// `(rank, owned elements sent there)`.
    pub sends: Vec<(usize, Vec<u32>)>,
    /// `(rank, halo elements received from there)`.
    pub receives: Vec<(usize, Vec<u32>)>,
}

impl ExchangeLists {
    /// The [`SetHalo`] of a set of `sizes` (collective across `comm`'s ranks): each rank puts
    /// the elements it receives in exec-halo-first order and tells the sender the new order and
    /// how many go to its exec halo, so that exchanges of one halo section send and receive
    /// matching parts. Lists that do not fit, on any rank, fail every rank.
    pub fn into_halo(
        self,
        comm: &dyn crate::model::comm::Communicator,
        sizes: SetSizes,
        name: &str,
    ) -> Result<SetHalo> {
        let bad = |reason: String| Op2Error::BadHalo {
            set: name.into(),
            reason,
        };
        let (me, ranks) = (comm.rank(), comm.size());
        let owned = sizes.core + sizes.owned;
        let exec_end = owned + sizes.exec_halo;
        let total = exec_end + sizes.nonexec_halo;
        let local = || -> Result<()> {
            for (what, lists) in [("sends to", &self.sends), ("receives from", &self.receives)] {
                let mut seen = Vec::new();
                for (rank, _) in lists.iter() {
                    if *rank >= ranks || *rank == me || seen.contains(rank) {
                        return Err(bad(format!(
                            "rank {me} {what} rank {rank} (ranks 0..{ranks}, each once, not itself)"
                        )));
                    }
                    seen.push(*rank);
                }
            }
            for (rank, list) in &self.receives {
                if let Some(&e) = list
                    .iter()
                    .find(|&&e| (e as usize) < owned || e as usize >= total)
                {
                    return Err(bad(format!(
                        "element {e} received from rank {rank} is not a halo element (halo: {owned}..{total})"
                    )));
                }
            }
            Ok(())
        };
        let agreed = |r: Result<()>| -> Result<()> {
            match (comm.first_failed_rank(r.is_err())?, r) {
                (None, r) | (Some(_), r @ Err(_)) => r,
                (Some(rank), Ok(())) => Err(bad(format!(
                    "rank {rank}'s exchange lists do not fit (its own error says why)"
                ))),
            }
        };
        agreed(local())?;
        // To each sender: the exec count, then the order (indices into its list) it sends in.
        let mut out = vec![Vec::new(); ranks];
        let mut receives = Vec::with_capacity(self.receives.len());
        for (rank, list) in &self.receives {
            let (exec, rest): (Vec<usize>, Vec<usize>) =
                (0..list.len()).partition(|&i| (list[i] as usize) < exec_end);
            let msg = &mut out[*rank];
            msg.extend_from_slice(&(exec.len() as u32).to_ne_bytes());
            for &i in exec.iter().chain(&rest) {
                msg.extend_from_slice(&(i as u32).to_ne_bytes());
            }
            let ordered: Vec<u32> = exec.iter().chain(&rest).map(|&i| list[i]).collect();
            receives.push((*rank, ordered));
        }
        let got = comm.all_to_all_v(out)?;
        let mut neighbours = Vec::new();
        let matched = (|| -> Result<()> {
            for (rank, msg) in got.iter().enumerate() {
                let words: Vec<u32> = msg
                    .chunks_exact(4)
                    .map(|c| u32::from_ne_bytes(c.try_into().expect("4 bytes")))
                    .collect();
                let send = self.sends.iter().find(|(r, _)| *r == rank).map(|(_, l)| l);
                let receive = receives.iter().find(|(r, _)| *r == rank).map(|(_, l)| l);
                let (send, send_to_exec) = match (send, words.split_first()) {
                    (None, None) => (Vec::new(), 0),
                    (Some(list), Some((&exec, order))) if order.len() == list.len() => (
                        order.iter().map(|&i| list[i as usize]).collect(),
                        exec as usize,
                    ),
                    (list, order) => {
                        return Err(bad(format!(
                            "rank {me} sends {} elements to rank {rank}, which receives {}",
                            list.map_or(0, Vec::len),
                            order.map_or(0, |(_, o)| o.len())
                        )));
                    }
                };
                if send.is_empty() && receive.is_none_or(Vec::is_empty) {
                    continue;
                }
                neighbours.push(HaloNeighbour {
                    rank,
                    send,
                    send_to_exec,
                    receive: receive.cloned().unwrap_or_default(),
                });
            }
            Ok(())
        })();
        agreed(matched)?;
        Ok(SetHalo { neighbours })
    }
}

/// A set's halo on this rank: per neighbour rank, what a halo exchange sends and receives.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SetHalo {
    /// The neighbours, each once.
    pub neighbours: Vec<HaloNeighbour>,
}

pub(crate) struct SetInner {
    pub(crate) id: u64,
    pub(crate) runtime_id: u64,
    pub(crate) name: String,
    pub(crate) sizes: SetSizes,
    pub(crate) halo: Option<Arc<SetHalo>>,
    /// For a subset: the set it selects from (never itself a subset) and the selected elements.
    pub(crate) subset: Option<(Set, Arc<[i32]>)>,
    /// For an extruded set: its columns.
    pub(crate) extrusion: Option<Arc<Extrusion>>,
}

/// How a set is built from columns over a base set: element `k` of column `b` (base element `b`)
/// is element `column_start(b) + k` of the extruded set, so each column's elements are
/// contiguous and the columns follow the base set's order (and so its sections).
#[derive(Debug)]
pub struct Extrusion {
    base: Set,
    /// Node layers per column, as declared (one value for every column when uniform).
    layers: Layers,
    /// Elements per column: `layers - 1` for cells, `layers` for the nodes of the columns.
    per_layer_offset: usize,
    /// First element of each column, and the total after the last (`base.total_size() + 1`).
    starts: Vec<usize>,
}

/// The node layers of an extruded set's columns (PyOP2's `layers`: a column of `layers` node
/// layers holds `layers - 1` cells).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Layers {
    /// The same number of node layers in every column.
    Uniform(usize),
    /// Node layers of each column, one entry per element of the base set (halos included).
    PerColumn(Vec<usize>),
}

impl From<usize> for Layers {
    fn from(layers: usize) -> Self {
        Layers::Uniform(layers)
    }
}

impl From<Vec<usize>> for Layers {
    fn from(layers: Vec<usize>) -> Self {
        Layers::PerColumn(layers)
    }
}

impl Extrusion {
    /// The set extruded.
    pub fn base(&self) -> &Set {
        &self.base
    }

    /// The node layers as declared.
    pub fn layers(&self) -> &Layers {
        &self.layers
    }

    /// Elements in column `b`.
    pub fn column_len(&self, b: usize) -> usize {
        self.starts[b + 1] - self.starts[b]
    }

    /// First element of column `b`.
    pub fn column_start(&self, b: usize) -> usize {
        self.starts[b]
    }

    /// Elements in every column, when all columns hold the same number.
    pub fn uniform_len(&self) -> Option<usize> {
        match self.layers {
            Layers::Uniform(l) => Some(l - self.per_layer_offset),
            Layers::PerColumn(_) => None,
        }
    }

    /// Whether the elements are cells (`layers - 1` per column) rather than nodes (`layers`).
    pub fn is_cells(&self) -> bool {
        self.per_layer_offset == 1
    }

    /// The column of element `e` of the extruded set.
    pub fn column_of(&self, e: usize) -> usize {
        self.starts.partition_point(|&s| s <= e) - 1
    }
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
            halo: None,
            subset: None,
            extrusion: None,
        })))
    }

    /// A subset of `parent`: the elements `indices` of it (sorted, each once, among the
    /// elements a loop over `parent` runs: owned and exec halo). A subset of a subset selects
    /// from the first subset's elements and becomes a subset of its parent. Its sections are
    /// those of its elements in the parent (core ones first, as the indices are sorted).
    pub(crate) fn subset_of(
        id: u64,
        runtime_id: u64,
        name: &str,
        parent: &Set,
        indices: Vec<i32>,
    ) -> Result<Self> {
        let bad = |reason: String| Op2Error::BadSubset {
            subset: name.into(),
            parent: parent.name().into(),
            reason,
        };
        let limit = parent.exec_size();
        if let Some(w) = indices.windows(2).position(|w| w[0] >= w[1]) {
            return Err(bad(format!(
                "the indices must be sorted and each given once: {} then {} at positions {w} and {}",
                indices[w],
                indices[w + 1],
                w + 1
            )));
        }
        if let Some(p) = indices.iter().position(|&i| i < 0 || i as usize >= limit) {
            return Err(bad(format!(
                "index {} at position {p} is not an element of `{}` a loop runs (0..{limit})",
                indices[p],
                parent.name()
            )));
        }
        let (root, indices): (Set, Vec<i32>) = match &parent.0.subset {
            Some((root, selected)) => (
                root.clone(),
                indices.iter().map(|&i| selected[i as usize]).collect(),
            ),
            None => (parent.clone(), indices),
        };
        let r = root.sizes();
        let below = |end: usize| indices.partition_point(|&i| (i as usize) < end);
        let core = below(r.core);
        let owned = below(r.core + r.owned) - core;
        let exec_halo = indices.len() - core - owned;
        Ok(Set(Arc::new(SetInner {
            id,
            runtime_id,
            name: name.to_string(),
            sizes: SetSizes {
                core,
                owned,
                exec_halo,
                nonexec_halo: 0,
            },
            halo: None,
            subset: Some((root, indices.into())),
            extrusion: None,
        })))
    }

    /// The set made of columns over `base`: `layers` node layers per column, holding `layers - 1`
    /// cells (`cells`) or `layers` nodes each. Its sections and halo are the base set's, column
    /// by column, so across ranks a column is never split.
    pub(crate) fn extruded(
        id: u64,
        runtime_id: u64,
        name: &str,
        base: &Set,
        layers: Layers,
        cells: bool,
    ) -> Result<Self> {
        let bad = |reason: String| Op2Error::BadExtrusion {
            set: name.into(),
            base: base.name().into(),
            reason,
        };
        if base.is_subset() || base.extrusion().is_some() {
            return Err(bad(
                "the base of an extruded set is a whole set that is not itself extruded".into(),
            ));
        }
        let least = if cells { 2 } else { 1 };
        let total = base.total_size();
        let per_column: Box<dyn Fn(usize) -> usize> = match &layers {
            Layers::Uniform(l) => {
                if *l < least {
                    return Err(bad(format!(
                        "{l} layers: an extruded set needs at least {least}"
                    )));
                }
                let l = *l;
                Box::new(move |_| l)
            }
            Layers::PerColumn(v) => {
                if v.len() != total {
                    return Err(bad(format!(
                        "{} layer counts given for the {total} elements of `{}` (halos included)",
                        v.len(),
                        base.name()
                    )));
                }
                // A column may hold no cells (one node layer), but not no nodes.
                if let Some(b) = v.iter().position(|&l| l == 0) {
                    return Err(bad(format!("column {b} has 0 layers (at least 1)")));
                }
                Box::new(move |b| v[b])
            }
        };
        let offset = usize::from(cells);
        let mut starts = Vec::with_capacity(total + 1);
        let mut at = 0usize;
        starts.push(0);
        for b in 0..total {
            at = at
                .checked_add(per_column(b).saturating_sub(offset))
                .ok_or_else(|| Op2Error::SetSizeOverflow { set: name.into() })?;
            starts.push(at);
        }
        drop(per_column);
        if at > i32::MAX as usize {
            return Err(bad(format!(
                "{at} elements: more than a map value (i32) can reach"
            )));
        }
        let b = base.sizes();
        let s = |e: usize| starts[e];
        let sizes = SetSizes {
            core: s(b.core),
            owned: s(b.core + b.owned) - s(b.core),
            exec_halo: s(b.core + b.owned + b.exec_halo) - s(b.core + b.owned),
            nonexec_halo: s(total) - s(b.core + b.owned + b.exec_halo),
        };
        // Each element of a base list becomes its column, in order: both ranks of a pair agree
        // on the columns' lengths, so their lists stay matched.
        let halo = base.halo().map(|h| SetHalo {
            neighbours: h
                .neighbours
                .iter()
                .map(|n| {
                    let expand = |list: &[u32]| -> Vec<u32> {
                        list.iter()
                            .flat_map(|&e| (s(e as usize) as u32)..(s(e as usize + 1) as u32))
                            .collect()
                    };
                    HaloNeighbour {
                        rank: n.rank,
                        send: expand(&n.send),
                        send_to_exec: expand(&n.send[..n.send_to_exec.min(n.send.len())]).len(),
                        receive: expand(&n.receive),
                    }
                })
                .collect(),
        });
        let mut set = match halo {
            Some(h) => Set::with_halo(id, runtime_id, name, sizes, h)?,
            None => Set::new(id, runtime_id, name, sizes)?,
        };
        Arc::get_mut(&mut set.0).expect("just made").extrusion = Some(Arc::new(Extrusion {
            base: base.clone(),
            layers,
            per_layer_offset: offset,
            starts,
        }));
        Ok(set)
    }

    /// For an extruded set: its columns over the base set.
    pub fn extrusion(&self) -> Option<&Extrusion> {
        self.0.extrusion.as_deref()
    }

    /// For a subset: the set it selects from (a set that is not a subset itself).
    pub fn superset(&self) -> Option<&Set> {
        self.0.subset.as_ref().map(|(p, _)| p)
    }

    /// For a subset: its elements, as element numbers of [`Set::superset`].
    pub fn subset_indices(&self) -> Option<&[i32]> {
        self.0.subset.as_ref().map(|(_, i)| &i[..])
    }

    /// Whether this set is a subset of another.
    pub fn is_subset(&self) -> bool {
        self.0.subset.is_some()
    }

    /// A set whose halo elements are exchanged with neighbour ranks as `halo` says; the lists
    /// are checked against the sections (sends from owned elements, receives into halo elements,
    /// each halo element from one neighbour).
    pub(crate) fn with_halo(
        id: u64,
        runtime_id: u64,
        name: &str,
        sizes: SetSizes,
        halo: SetHalo,
    ) -> Result<Self> {
        let set = Set::new(id, runtime_id, name, sizes)?;
        let bad = |reason: String| Op2Error::BadHalo {
            set: name.into(),
            reason,
        };
        let (owned, total) = (set.size(), set.total_size());
        let mut received = vec![false; total];
        let mut ranks = Vec::new();
        for n in &halo.neighbours {
            if ranks.contains(&n.rank) {
                return Err(bad(format!("rank {} is listed twice", n.rank)));
            }
            ranks.push(n.rank);
            if let Some(&e) = n.send.iter().find(|&&e| e as usize >= owned) {
                return Err(bad(format!(
                    "element {e} sent to rank {} is not owned (owned: 0..{owned})",
                    n.rank
                )));
            }
            if n.send_to_exec > n.send.len() {
                return Err(bad(format!(
                    "{} of the {} elements sent to rank {} said to be for its exec halo",
                    n.send_to_exec,
                    n.send.len(),
                    n.rank
                )));
            }
            let exec_end = set.exec_size();
            if n.receive
                .windows(2)
                .any(|w| w[0] as usize >= exec_end && (w[1] as usize) < exec_end)
            {
                return Err(bad(format!(
                    "the elements received from rank {} do not list the exec halo's first",
                    n.rank
                )));
            }
            for &e in &n.receive {
                let e = e as usize;
                if e < owned || e >= total {
                    return Err(bad(format!(
                        "element {e} received from rank {} is not a halo element (halo: {owned}..{total})",
                        n.rank
                    )));
                }
                if std::mem::replace(&mut received[e], true) {
                    return Err(bad(format!("halo element {e} is received twice")));
                }
            }
        }
        let mut inner = Arc::try_unwrap(set.0).unwrap_or_else(|_| unreachable!("just made"));
        inner.halo = (!halo.neighbours.is_empty()).then(|| Arc::new(halo));
        Ok(Set(Arc::new(inner)))
    }

    /// The set's halo exchange lists, when it has neighbours.
    pub fn halo(&self) -> Option<&SetHalo> {
        self.0.halo.as_deref()
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
