//! Mixed spaces (PyOP2's `MixedSet`, `MixedDat`, `MixedMap`): an ordered tuple of sets, one Dat
//! per component, one map per component from a common iteration set. A mixed arg hands the
//! kernel one array of pointers, each component's rows in turn; the runtime writes a kernel that
//! builds it from one whole-row arg per component, so every backend runs it as an ordinary loop.
//! Each mixed set also has a flat set, every component's elements in one numbering (section by
//! section, so across ranks it has a halo like any set), on which op2-la's block matrices and
//! the solvers see a mixed Dat as one vector.

use super::Runtime;
use super::sync::lock;
use super::sync::next_id;
use crate::model::access::Access;
use crate::model::arg::{Arg, ArgTarget, PerEntry, Via};
use crate::model::carrier::{CarrierKind, Dat};
use crate::model::dtype::{DType, HostBuffer, Scalar};
use crate::model::error::{Op2Error, Result};
use crate::model::kernel::Kernel;
use crate::model::map::Map;
use crate::model::set::{HaloNeighbour, Set, SetHalo, SetSizes};
use std::fmt::Write;
use std::sync::Arc;

struct MixedSetInner {
    name: String,
    sets: Vec<Set>,
    flat: Set,
    /// First flat element of each component's part of each section (core, owned, exec halo,
    /// non-exec halo).
    starts: Vec<[usize; 4]>,
}

/// An ordered tuple of sets (PyOP2's `MixedSet`). Cheap to clone.
#[derive(Clone)]
pub struct MixedSet(Arc<MixedSetInner>);

fn sections(s: &SetSizes) -> [usize; 4] {
    [s.core, s.owned, s.exec_halo, s.nonexec_halo]
}

impl MixedSet {
    /// The components, in order.
    pub fn split(&self) -> &[Set] {
        &self.0.sets
    }

    /// The number of components.
    pub fn len(&self) -> usize {
        self.0.sets.len()
    }

    /// Whether it has no components (never: declaring one needs at least one).
    pub fn is_empty(&self) -> bool {
        self.0.sets.is_empty()
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// The set of every component's elements in one numbering: the components' core elements
    /// in order, then their owned ones, then their halos, so its sections are the sums of theirs.
    pub fn flat(&self) -> &Set {
        &self.0.flat
    }

    /// The flat element of element `e` of component `c` (`None` when there is no such
    /// component or element).
    pub fn flat_index(&self, c: usize, e: usize) -> Option<usize> {
        let sizes = sections(&self.0.sets.get(c)?.sizes());
        let mut begin = 0;
        for (s, &n) in sizes.iter().enumerate() {
            if e < begin + n {
                return Some(self.0.starts[c][s] + (e - begin));
            }
            begin += n;
        }
        None
    }

    /// [`MixedSet::flat_index`] of an element known to be there.
    fn known_index(&self, c: usize, e: usize) -> usize {
        self.flat_index(c, e)
            .expect("an element of the component (checked by the caller)")
    }
}

impl std::fmt::Debug for MixedSet {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MixedSet({:?}, {:?})", self.0.name, self.0.sets)
    }
}

struct MixedMapInner {
    name: String,
    maps: Vec<Map>,
    to: MixedSet,
    flat: Map,
}

/// One map per component of a mixed set, all from one iteration set (PyOP2's `MixedMap`).
#[derive(Clone)]
pub struct MixedMap(Arc<MixedMapInner>);

impl MixedMap {
    /// The component maps, in order.
    pub fn split(&self) -> &[Map] {
        &self.0.maps
    }

    /// The common iteration set.
    pub fn iterset(&self) -> &Set {
        self.0.maps[0].from()
    }

    /// The mixed set the components map into.
    pub fn toset(&self) -> &MixedSet {
        &self.0.to
    }

    /// Each component's arity.
    pub fn arities(&self) -> Vec<usize> {
        self.0.maps.iter().map(Map::arity).collect()
    }

    /// The sum of the arities.
    pub fn arity(&self) -> usize {
        self.0.maps.iter().map(Map::arity).sum()
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// The components as one map into the flat set of [`MixedMap::toset`]: each row the
    /// components' rows in turn, in flat numbering (what a block matrix is assembled through).
    pub fn flat(&self) -> &Map {
        &self.0.flat
    }
}

impl std::fmt::Debug for MixedMap {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MixedMap({:?}, {:?})", self.0.name, self.0.maps)
    }
}

/// One Dat per component of a mixed set, usable as one vector (PyOP2's `MixedDat`).
#[derive(Clone)]
pub struct MixedDat<T> {
    set: MixedSet,
    dats: Vec<Dat<T>>,
}

impl<T> std::fmt::Debug for MixedDat<T> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "MixedDat({:?})", self.set.name())
    }
}

fn mismatch(what: &str, reason: String) -> Op2Error {
    Op2Error::MixedMismatch {
        what: what.into(),
        reason,
    }
}

impl<T: Scalar> MixedDat<T> {
    /// The mixed Dat made of `dats`, one per component of `set`, in order.
    pub fn from_dats(set: &MixedSet, dats: Vec<Dat<T>>) -> Result<Self> {
        if dats.len() != set.len() {
            return Err(mismatch(
                set.name(),
                format!("{} Dats for {} components", dats.len(), set.len()),
            ));
        }
        for (c, (d, s)) in dats.iter().zip(set.split()).enumerate() {
            if d.set() != s {
                return Err(mismatch(
                    set.name(),
                    format!(
                        "Dat `{}` (component {c}) lives on `{}`, not on `{}`",
                        d.name(),
                        d.set().name(),
                        s.name()
                    ),
                ));
            }
        }
        Ok(MixedDat {
            set: set.clone(),
            dats,
        })
    }

    /// The components.
    pub fn split(&self) -> &[Dat<T>] {
        &self.dats
    }

    /// The mixed set it lives on.
    pub fn set(&self) -> &MixedSet {
        &self.set
    }

    /// The arg through `map` (one map per component, into this Dat's mixed set): the kernel's
    /// parameter is one array of pointers (`double *x[n]`, `n` the sum of the arities), the
    /// first component's rows first (PyOP2's `mixed_dat(access, mixed_map)`).
    pub fn arg_row(&self, map: &MixedMap, access: Access) -> Arg {
        let mut parts = self
            .dats
            .iter()
            .zip(map.split())
            .map(|(d, m)| d.arg_row(m, access));
        let mut first = parts.next().expect("a mixed set has components");
        first.joined = parts.collect();
        if map.toset().0.flat.id() != self.set.0.flat.id() {
            first.invalid = Some(format!(
                "mixed map `{}` maps into `{}`, but the mixed Dat lives on `{}`",
                map.name(),
                map.toset().name(),
                self.set.name()
            ));
        }
        first
    }

    /// The arg through `map` as one local buffer of the element's values, called once per
    /// element (PyOP2 0.8.3 to 0.10's `mixed_dat(access, mixed_map[op2.i[0]])`): component `b`'s
    /// rows start after the values of the components before it (at `arange[b] * dim` when the
    /// components share one dim, as PyOP2 laid them out), entry by entry. Filled from the Dat
    /// for READ and RW, zeroed for WRITE and INC, and afterwards written (WRITE, RW) or added
    /// (INC) back. Non-mixed args of the loop may be buffers too ([`Dat::arg_buffer`]).
    pub fn arg_buffer(&self, map: &MixedMap, access: Access) -> Arg {
        let mut a = self.arg_row(map, access);
        a.per_entry = Some(PerEntry::Buffer { flattened: false });
        a
    }

    /// The arg through `map` called once per entry (PyOP2 0.8.2's `mixed_dat(access,
    /// mixed_map[op2.i[0]])` with a kernel ending in `int i`): call `i` gets the row of entry `i`
    /// of the components' entries in turn (`i` from 0 to the sum of the arities). Non-mixed
    /// args of the loop may be per entry too ([`Dat::arg_entries`]) over as many entries.
    pub fn arg_entries(&self, map: &MixedMap, access: Access) -> Arg {
        let mut a = self.arg_row(map, access);
        a.per_entry = Some(PerEntry::Row);
        a
    }

    /// Sets every value to zero (each component's loop).
    pub fn zero(&self) -> Result<()> {
        self.dats.iter().try_for_each(Dat::zero)
    }

    /// Copies `other`'s values into this one, component by component.
    pub fn copy(&self, other: &MixedDat<T>) -> Result<()> {
        self.same(other)?;
        self.dats
            .iter()
            .zip(&other.dats)
            .try_for_each(|(d, o)| d.copy(o))
    }

    /// `self += a * x`, component by component.
    pub fn axpy(&self, a: T, x: &MixedDat<T>) -> Result<()> {
        self.same(x)?;
        self.dats
            .iter()
            .zip(&x.dats)
            .try_for_each(|(d, o)| d.axpy(a, o))
    }

    /// The inner product with `other` over every component (reduced over ranks), in `f64`
    /// (each component's in its own type first). Complex components' products are complex:
    /// refused here ([`Op2Error::AlgebraMismatch`]); sum each component's [`Dat::inner`].
    pub fn inner(&self, other: &MixedDat<T>) -> Result<f64> {
        self.same(other)?;
        if T::DTYPE.is_complex() {
            return Err(Op2Error::AlgebraMismatch {
                op: "inner",
                left: self.dats.first().map_or("", |d| d.name()).into(),
                right: other.dats.first().map(|d| d.name().into()),
                reason: "the inner product of complex values is complex, not an f64: sum the \
                         components' Dat::inner"
                    .into(),
            });
        }
        let mut sum = 0.0;
        for (d, o) in self.dats.iter().zip(&other.dats) {
            sum += super::algebra::to_f64(d.inner(o)?);
        }
        Ok(sum)
    }

    /// The 2-norm over every component.
    pub fn norm(&self) -> Result<f64> {
        let mut sq = 0.0;
        for d in &self.dats {
            let n = d.norm()?;
            sq += n * n;
        }
        Ok(sq.sqrt())
    }

    /// Every component's values (halos included), the first component's first.
    pub fn to_vec(&self) -> Result<Vec<T>> {
        let mut out = Vec::new();
        for d in &self.dats {
            out.extend(d.to_vec()?);
        }
        Ok(out)
    }

    /// A new Dat on the flat set holding every component's values (each component's dim must
    /// be the same): the mixed Dat as one vector.
    pub fn to_flat(&self) -> Result<Dat<T>> {
        let dim = self.common_dim()?;
        let rt = super::algebra::runtime_of(&self.dats[0])?;
        let flat = self.set.flat();
        let mut values = vec![<T as bytemuck::Zeroable>::zeroed(); flat.total_size() * dim];
        for (c, d) in self.dats.iter().enumerate() {
            let v = d.data_ro()?;
            for e in 0..d.set().total_size() {
                let f = self.set.known_index(c, e);
                values[f * dim..(f + 1) * dim].copy_from_slice(&v[e * dim..(e + 1) * dim]);
            }
        }
        let c = rt.carrier(
            CarrierKind::Dat(flat.clone()),
            &format!("{}@flat", self.set.name()),
            dim,
            HostBuffer::from_slice(&values),
        );
        Ok(Dat::from_carrier(c))
    }

    /// Sets every component's values from `flat`, a Dat on the flat set.
    pub fn set_from_flat(&self, flat: &Dat<T>) -> Result<()> {
        let dim = self.common_dim()?;
        if flat.set() != self.set.flat() || flat.dim() != dim {
            return Err(mismatch(
                self.set.name(),
                format!(
                    "Dat `{}` is not a Dat of dim {dim} on the flat set `{}`",
                    flat.name(),
                    self.set.flat().name()
                ),
            ));
        }
        let v = flat.data_ro()?;
        for (c, d) in self.dats.iter().enumerate() {
            let mut w = d.data()?;
            for e in 0..d.set().total_size() {
                let f = self.set.known_index(c, e);
                w[e * dim..(e + 1) * dim].copy_from_slice(&v[f * dim..(f + 1) * dim]);
            }
        }
        Ok(())
    }

    fn common_dim(&self) -> Result<usize> {
        let dim = self.dats[0].dim();
        match self.dats.iter().find(|d| d.dim() != dim) {
            Some(d) => Err(mismatch(
                self.set.name(),
                format!(
                    "as one vector every component needs one dim: `{}` has {dim}, `{}` {}",
                    self.dats[0].name(),
                    d.name(),
                    d.dim()
                ),
            )),
            None => Ok(dim),
        }
    }

    fn same(&self, other: &MixedDat<T>) -> Result<()> {
        if self.set.0.flat.id() != other.set.0.flat.id() {
            return Err(mismatch(
                self.set.name(),
                format!("the other mixed Dat lives on `{}`", other.set.name()),
            ));
        }
        Ok(())
    }
}

impl Runtime {
    /// Declares the mixed set of `sets` (whole sets, at least one), named `name`.
    pub fn decl_mixed_set(&self, sets: &[&Set], name: &str) -> Result<MixedSet> {
        if sets.is_empty() {
            return Err(mismatch(name, "a mixed set needs at least one set".into()));
        }
        for s in sets {
            self.own("set", s.name(), s.runtime_id())?;
            self.whole_set(s, "mixed sets")?;
        }
        let per: Vec<[usize; 4]> = sets.iter().map(|s| sections(&s.sizes())).collect();
        let mut starts = vec![[0usize; 4]; sets.len()];
        let mut at = 0;
        let mut totals = [0usize; 4];
        for s in 0..4 {
            for (c, p) in per.iter().enumerate() {
                starts[c][s] = at;
                at += p[s];
                totals[s] += p[s];
            }
        }
        let sizes = SetSizes {
            core: totals[0],
            owned: totals[1],
            exec_halo: totals[2],
            nonexec_halo: totals[3],
        };
        let index = |c: usize, e: usize| -> u32 {
            let mut begin = 0;
            for (s, &n) in per[c].iter().enumerate() {
                if e < begin + n {
                    return (starts[c][s] + e - begin) as u32;
                }
                begin += n;
            }
            unreachable!("halo lists were checked against the set")
        };
        // Each neighbour's lists: every component's exec-halo part, then every component's
        // non-exec part (so exec-halo elements still come first), in component order on both
        // sides of the pair.
        let mut ranks: Vec<usize> = sets
            .iter()
            .filter_map(|s| s.halo())
            .flat_map(|h| h.neighbours.iter().map(|n| n.rank))
            .collect();
        ranks.sort_unstable();
        ranks.dedup();
        let neighbours: Vec<HaloNeighbour> = ranks
            .iter()
            .map(|&rank| {
                let mut send = (Vec::new(), Vec::new());
                let mut receive = (Vec::new(), Vec::new());
                for (c, s) in sets.iter().enumerate() {
                    let Some(n) = s
                        .halo()
                        .and_then(|h| h.neighbours.iter().find(|n| n.rank == rank))
                    else {
                        continue;
                    };
                    let split = n.send_to_exec.min(n.send.len());
                    send.0
                        .extend(n.send[..split].iter().map(|&e| index(c, e as usize)));
                    send.1
                        .extend(n.send[split..].iter().map(|&e| index(c, e as usize)));
                    let exec_end = s.exec_size();
                    for &e in &n.receive {
                        let to = if (e as usize) < exec_end {
                            &mut receive.0
                        } else {
                            &mut receive.1
                        };
                        to.push(index(c, e as usize));
                    }
                }
                let send_to_exec = send.0.len();
                send.0.extend(send.1);
                receive.0.extend(receive.1);
                HaloNeighbour {
                    rank,
                    send: send.0,
                    send_to_exec,
                    receive: receive.0,
                }
            })
            .collect();
        let flat_name = format!("{name}@flat");
        let flat = if neighbours.is_empty() {
            Set::new(next_id(), self.shared.id, &flat_name, sizes)?
        } else {
            Set::with_halo(
                next_id(),
                self.shared.id,
                &flat_name,
                sizes,
                SetHalo { neighbours },
            )?
        };
        lock(&self.shared.declared).set(&flat.0);
        Ok(MixedSet(Arc::new(MixedSetInner {
            name: name.into(),
            sets: sets.iter().map(|&s| s.clone()).collect(),
            flat,
            starts,
        })))
    }

    /// Declares the mixed map of `maps` into the components of `to`, in order: every map from
    /// the same iteration set, map `c` into component `c`.
    pub fn decl_mixed_map(&self, to: &MixedSet, maps: &[&Map], name: &str) -> Result<MixedMap> {
        if maps.len() != to.len() {
            return Err(mismatch(
                name,
                format!(
                    "{} maps for the {} components of `{}`",
                    maps.len(),
                    to.len(),
                    to.name()
                ),
            ));
        }
        let from = maps[0].from();
        for (c, (m, s)) in maps.iter().zip(to.split()).enumerate() {
            self.own("map", m.name(), m.runtime_id())?;
            if m.from() != from {
                return Err(mismatch(
                    name,
                    format!(
                        "map `{}` is from `{}` but map `{}` from `{}`: a mixed map's components share their iteration set",
                        maps[0].name(),
                        from.name(),
                        m.name(),
                        m.from().name()
                    ),
                ));
            }
            if m.to() != s {
                return Err(mismatch(
                    name,
                    format!(
                        "map `{}` (component {c}) maps into `{}`, not `{}`",
                        m.name(),
                        m.to().name(),
                        s.name()
                    ),
                ));
            }
            if m.offsets().is_some() {
                return Err(mismatch(
                    name,
                    format!("map `{}` is extruded; mixed maps take plain maps", m.name()),
                ));
            }
        }
        let arity: usize = maps.iter().map(|m| m.arity()).sum();
        let rows = from.exec_size();
        let mut values = Vec::with_capacity(rows * arity);
        for e in 0..rows {
            for (c, m) in maps.iter().enumerate() {
                let a = m.arity();
                values.extend(
                    m.values()[e * a..(e + 1) * a]
                        .iter()
                        // A gap of a map with gaps stays one (loops refuse such maps for
                        // data; matrices leave the entries out).
                        .map(|&v| {
                            if v < 0 {
                                -1
                            } else {
                                to.known_index(c, v as usize) as i32
                            }
                        }),
                );
            }
        }
        let flat = Map::new_with(
            next_id(),
            from,
            to.flat(),
            arity,
            values,
            &format!("{name}@flat"),
            maps.iter().any(|m| m.has_gaps()),
        )?;
        lock(&self.shared.declared).map(&flat.0);
        Ok(MixedMap(Arc::new(MixedMapInner {
            name: name.into(),
            maps: maps.iter().map(|&m| m.clone()).collect(),
            to: to.clone(),
            flat,
        })))
    }

    /// `map`, whose targets are elements of component `c` of `to`, as a map into `to`'s flat
    /// set (the same rows, each value the flat element of its target, gaps kept): what
    /// assembles one block `(i, j)` of a matrix on mixed spaces, whatever the loop's iteration
    /// set.
    pub fn decl_component_map(
        &self,
        to: &MixedSet,
        c: usize,
        map: &Map,
        name: &str,
    ) -> Result<Map> {
        self.own("map", map.name(), map.runtime_id())?;
        let component = to.split().get(c).ok_or_else(|| {
            mismatch(
                name,
                format!(
                    "`{}` has no component {c} ({} components)",
                    to.name(),
                    to.len()
                ),
            )
        })?;
        if map.to() != component {
            return Err(mismatch(
                name,
                format!(
                    "map `{}` maps into `{}`, not into component {c} of `{}` (`{}`)",
                    map.name(),
                    map.to().name(),
                    to.name(),
                    component.name()
                ),
            ));
        }
        if map.offsets().is_some() {
            return Err(mismatch(
                name,
                format!(
                    "map `{}` is extruded; mixed maps take plain maps",
                    map.name()
                ),
            ));
        }
        // A gap ("no element") stays one.
        let values = map
            .values()
            .iter()
            .map(|&v| {
                if v < 0 {
                    -1
                } else {
                    to.known_index(c, v as usize) as i32
                }
            })
            .collect();
        let flat = Map::new_with(
            next_id(),
            map.from(),
            to.flat(),
            map.arity(),
            values,
            name,
            map.has_gaps(),
        )?;
        lock(&self.shared.declared).map(&flat.0);
        Ok(flat)
    }

    /// Declares a mixed Dat of zeros on `set`, `dims[c]` values per element of component `c`,
    /// its components named `name_c`.
    pub fn decl_mixed_dat<T: Scalar>(
        &self,
        set: &MixedSet,
        dims: &[usize],
        name: &str,
    ) -> Result<MixedDat<T>> {
        if dims.len() != set.len() {
            return Err(mismatch(
                name,
                format!("{} dims for {} components", dims.len(), set.len()),
            ));
        }
        let dats = set
            .split()
            .iter()
            .zip(dims)
            .enumerate()
            .map(|(c, (s, &d))| self.decl_dat_zeros(s, d, &format!("{name}_{c}")))
            .collect::<Result<Vec<_>>>()?;
        MixedDat::from_dats(set, dats)
    }

    /// `kernel`'s args with each mixed arg spread into one whole-row arg per component, and the
    /// kernel the runtime writes to join them back into the one array the user's kernel takes.
    pub(crate) fn lower_joined(
        &self,
        kernel: &Kernel,
        args: Vec<Arg>,
    ) -> Result<(Kernel, Vec<Arg>)> {
        let bad = |i: usize, reason: String| Op2Error::MixedMismatch {
            what: format!("arg {i} of loop `{}`", kernel.name()),
            reason,
        };
        // Local buffers (once per element, PyOP2 0.8.3-0.10's op2.i) and calls per entry of whole
        // rows (0.8.2's, with a trailing int index) are written here, for mixed and other args
        // alike; not both in one loop, and no other per-entry form.
        let per_point = args
            .iter()
            .any(|a| matches!(a.per_entry, Some(PerEntry::Row)));
        let space = |reason: String| Op2Error::IterationSpace {
            kernel: kernel.name().into(),
            reason,
        };
        if args.iter().any(|a| match a.per_entry {
            None => false,
            Some(PerEntry::Buffer { .. }) => per_point,
            Some(PerEntry::Row) => false,
            Some(_) => true,
        }) {
            return Err(Op2Error::MixedMismatch {
                what: format!("loop `{}`", kernel.name()),
                reason: "with mixed args, a local iteration space is either one buffer of the \
                         element's values or one call per entry of whole rows (a kernel with a \
                         trailing int index), not both and not element blocks"
                    .into(),
            });
        }
        // Per entry: every such arg runs over the same entries (a mixed arg over all its
        // components' entries in turn).
        let mut extent: Option<usize> = None;
        for (i, a) in args.iter().enumerate() {
            if a.per_entry != Some(PerEntry::Row) {
                continue;
            }
            let arity = |a: &Arg| match &a.target {
                ArgTarget::Dat {
                    via: Via::Row(m), ..
                } => Some(m.arity()),
                _ => None,
            };
            let n = std::iter::once(a)
                .chain(&a.joined)
                .map(arity)
                .sum::<Option<usize>>()
                .ok_or_else(|| space(format!("arg {i}: per entry only through whole map rows")))?;
            match extent {
                None => extent = Some(n),
                Some(e) if e != n => {
                    return Err(space(format!(
                        "arg {i} runs over {n} entries, another arg over {e}"
                    )));
                }
                Some(_) => {}
            }
        }
        let params = kernel.params();
        let index_params = usize::from(per_point);
        if let Some(p) = params {
            if p.len() != args.len() + index_params {
                return Err(Op2Error::KernelParamCount {
                    kernel: kernel.name().into(),
                    params: p.len(),
                    args: args.len() + index_params,
                });
            }
            if per_point
                && (p[args.len()].dtype != Some(DType::I32) || p[args.len()].indirection != 0)
            {
                return Err(space(format!(
                    "parameter {} (`{}`) should be the `int` index of the entry",
                    args.len(),
                    p[args.len()].text
                )));
            }
        }
        let mut wrapper_params = Vec::new();
        let mut call = Vec::new();
        let mut setup = String::new();
        let mut after = String::new();
        let mut positions = Vec::new();
        let mut lowered = Vec::new();
        for (i, mut a) in args.into_iter().enumerate() {
            let joined = std::mem::take(&mut a.joined);
            let ctype = |a: &Arg| match &a.target {
                ArgTarget::Dat { carrier, .. }
                | ArgTarget::Global(carrier)
                | ArgTarget::Const(carrier) => carrier.dtype(),
            };
            let dtype = ctype(&a);
            let first = lowered.len();
            let taken = a.per_entry.take();
            let buffer = match taken {
                Some(PerEntry::Buffer { flattened }) => Some(flattened),
                _ => None,
            };
            if let Some(flattened) = buffer {
                // The element's values of every component in one buffer, component after
                // component, each entry by entry (or, for one component, component-major).
                if flattened && !joined.is_empty() {
                    return Err(bad(i, "a mixed arg's buffer cannot be flattened".into()));
                }
                let parts: Vec<Arg> = std::iter::once(a).chain(joined).collect();
                let p = format!("op2_j{i}_b");
                let (mut gather, mut scatter, mut total, mut widest) =
                    (String::new(), String::new(), 0, 1);
                for (q, part) in parts.iter().enumerate() {
                    let ArgTarget::Dat {
                        carrier,
                        via: Via::Row(m),
                    } = &part.target
                    else {
                        return Err(bad(i, "a buffer only through a whole map row".into()));
                    };
                    if carrier.dtype() != dtype {
                        return Err(bad(
                            i,
                            format!(
                                "its components hold {} and {}: a kernel parameter has one type",
                                dtype.c_name(),
                                carrier.dtype().c_name()
                            ),
                        ));
                    }
                    let (n, d, w) = (m.arity(), carrier.dim, first + q);
                    wrapper_params.push(format!("{} **op2_a{w}", dtype.c_name()));
                    let at = if flattened {
                        format!("{total} + op2_c * {n} + op2_k")
                    } else {
                        format!("{total} + op2_k * {d} + op2_c")
                    };
                    let each = format!(
                        "for (int op2_k = 0; op2_k < {n}; ++op2_k) for (int op2_c = 0; op2_c < {d}; ++op2_c)"
                    );
                    let _ = match part.access {
                        Access::Read | Access::Rw => {
                            writeln!(gather, "  {each} {p}[{at}] = op2_a{w}[op2_k][op2_c];")
                        }
                        _ => Ok(()),
                    };
                    let _ = match part.access {
                        Access::Inc => {
                            writeln!(scatter, "  {each} op2_a{w}[op2_k][op2_c] += {p}[{at}];")
                        }
                        Access::Write | Access::Rw => {
                            writeln!(scatter, "  {each} op2_a{w}[op2_k][op2_c] = {p}[{at}];")
                        }
                        _ => Ok(()),
                    };
                    total += n * d;
                    widest = widest.max(d);
                }
                let len = super::per_entry::buffer_len(kernel, i, total, widest)?;
                let _ = writeln!(setup, "  {} {p}[{len}] = {{0}};", dtype.c_name());
                setup.push_str(&gather);
                after.push_str(&scatter);
                call.push(format!("OP2_PASS({p})"));
                // The kernel's pointer is the runtime's own buffer, not the arg's data.
                positions.push(usize::MAX);
                lowered.extend(parts);
                continue;
            }
            // A whole row called entry by entry: the entry's pointer.
            let entry = if taken == Some(PerEntry::Row) {
                "[op2_p]"
            } else {
                ""
            };
            if joined.is_empty() {
                let row = matches!(
                    &a.target,
                    ArgTarget::Dat {
                        via: Via::Row(_),
                        ..
                    }
                );
                wrapper_params.push(format!(
                    "{} *{}op2_a{first}",
                    dtype.c_name(),
                    if row { "*" } else { "" }
                ));
                call.push(format!("OP2_PASS(op2_a{first}{entry})"));
                positions.push(first);
                lowered.push(a);
                continue;
            }
            let parts: Vec<Arg> = std::iter::once(a).chain(joined).collect();
            let mut total = 0;
            let mut fill = String::new();
            for (q, p) in parts.iter().enumerate() {
                if ctype(p) != dtype {
                    return Err(bad(
                        i,
                        format!(
                            "its components hold {} and {}: a kernel parameter has one type",
                            dtype.c_name(),
                            ctype(p).c_name()
                        ),
                    ));
                }
                let ArgTarget::Dat {
                    via: Via::Row(m), ..
                } = &p.target
                else {
                    unreachable!("mixed args are whole rows")
                };
                let w = first + q;
                wrapper_params.push(format!("{} **op2_a{w}", dtype.c_name()));
                let _ = writeln!(
                    fill,
                    "  for (int op2_q = 0; op2_q < {0}; ++op2_q) op2_j{i}[{total} + op2_q] = op2_a{w}[op2_q];",
                    m.arity()
                );
                total += m.arity();
            }
            if let Some(p) = params.and_then(|p| p.get(i))
                && let Some(Some(bound)) = p.bounds.first()
                && *bound != total
                && p.pointers == 1
                && kernel.checks_bounds()
            {
                return Err(Op2Error::KernelParamBound {
                    kernel: kernel.name().into(),
                    arg: i,
                    param: p.text.clone(),
                    what: "pointers",
                    declared: *bound,
                    expected: total,
                });
            }
            let _ = writeln!(setup, "  {} *op2_j{i}[{total}];", dtype.c_name());
            setup.push_str(&fill);
            call.push(format!("OP2_PASS(op2_j{i}{entry})"));
            positions.push(first);
            lowered.extend(parts);
        }
        if per_point {
            // The trailing index is the runtime's own value, not one of the loop's args.
            positions.push(usize::MAX);
        }
        match extent {
            // One call per entry, the entry's index last.
            Some(n) if per_point => {
                let _ = writeln!(
                    setup,
                    "  for (int op2_p = 0; op2_p < {n}; ++op2_p) {}({}, op2_p);",
                    kernel.name(),
                    call.join(", ")
                );
            }
            _ => {
                let _ = writeln!(setup, "  {}({});", kernel.name(), call.join(", "));
            }
        }
        setup.push_str(&after);
        let name = format!("op2_mixed_{}", kernel.name());
        let k = self.wrapper_kernel(kernel, &name, &wrapper_params, &setup, positions);
        Ok((k, lowered))
    }
}
