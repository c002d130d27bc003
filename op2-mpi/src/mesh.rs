//! Declaring a mesh to distribute: sets, maps and dats in global numbering, declared as on a
//! runtime (same names, same arguments), with how the data arrives (everywhere, on rank 0 only,
//! or a contiguous slice per rank as read from a file).

use crate::error::{MpiError, Result};
use op2_core::{DType, Dat, Runtime, Scalar, Set};
use std::any::Any;
use std::fmt;
use std::marker::PhantomData;
use std::ops::Range;

/// How the values of maps and dats reach the ranks before partitioning.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Input {
    /// Every rank hands in the whole mesh (the same values everywhere).
    Everywhere,
    /// Rank 0 hands in the whole mesh; the other ranks hand in empty slices.
    Root,
    /// Rank `r` hands in rows [`block_range`]`(size, ranks, r)` of every set's maps and dats,
    /// as a parallel file read gives them.
    Slices,
}

/// The rows of a set of `size` elements that rank `rank` of `ranks` holds in a block
/// distribution: `size * rank / ranks .. size * (rank + 1) / ranks` (sizes differ by at most one).
pub fn block_range(size: usize, ranks: usize, rank: usize) -> Range<usize> {
    let at = |r: usize| (size as u128 * r as u128 / ranks.max(1) as u128) as usize;
    at(rank)..at(rank + 1)
}

/// A set of the mesh being declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GlobalSet(pub(crate) usize);

/// A map of the mesh being declared.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct GlobalMap(pub(crate) usize);

/// A dat of the mesh being declared, holding values of type `T`.
pub struct GlobalDat<T>(pub(crate) usize, PhantomData<fn() -> T>);

impl<T> Clone for GlobalDat<T> {
    fn clone(&self) -> Self {
        *self
    }
}
impl<T> Copy for GlobalDat<T> {}
impl<T> PartialEq for GlobalDat<T> {
    fn eq(&self, other: &Self) -> bool {
        self.0 == other.0
    }
}
impl<T> Eq for GlobalDat<T> {}
impl<T> fmt::Debug for GlobalDat<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "GlobalDat({})", self.0)
    }
}

#[derive(Clone)]
pub(crate) struct SetDecl {
    pub(crate) name: String,
    pub(crate) size: usize,
}

#[derive(Clone)]
pub(crate) struct MapDecl {
    pub(crate) name: String,
    pub(crate) from: usize,
    pub(crate) to: usize,
    pub(crate) arity: usize,
    pub(crate) values: MapValues,
}

/// A map's global target numbers as handed in: 32-bit ([`MeshBuilder::decl_map`], half the
/// memory) or 64-bit ([`MeshBuilder::decl_map_i64`], for sets past 2^31 elements).
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum MapValues {
    /// 32-bit global numbers.
    I32(Vec<i32>),
    /// 64-bit global numbers.
    I64(Vec<i64>),
}

impl MapValues {
    /// Number of values.
    pub(crate) fn len(&self) -> usize {
        match self {
            MapValues::I32(v) => v.len(),
            MapValues::I64(v) => v.len(),
        }
    }

    /// Value `i`.
    pub(crate) fn get(&self, i: usize) -> i64 {
        match self {
            MapValues::I32(v) => v[i] as i64,
            MapValues::I64(v) => v[i],
        }
    }

    /// Bytes per value (4 or 8).
    pub(crate) fn width(&self) -> usize {
        match self {
            MapValues::I32(_) => 4,
            MapValues::I64(_) => 8,
        }
    }

    /// The values' bytes, as they travel between ranks.
    pub(crate) fn as_bytes(&self) -> &[u8] {
        match self {
            MapValues::I32(v) => bytemuck::cast_slice(v),
            MapValues::I64(v) => bytemuck::cast_slice(v),
        }
    }

    /// The same width, values from `bytes`.
    pub(crate) fn same_width_from(&self, bytes: &[u8]) -> MapValues {
        match self {
            MapValues::I32(_) => MapValues::I32(bytemuck::pod_collect_to_vec(bytes)),
            MapValues::I64(_) => MapValues::I64(bytemuck::pod_collect_to_vec(bytes)),
        }
    }

    /// As 32-bit values, where every value fits (for the partitioners that work on the whole
    /// mesh in one process).
    pub(crate) fn to_i32(&self) -> Option<Vec<i32>> {
        match self {
            MapValues::I32(v) => Some(v.clone()),
            MapValues::I64(v) => v.iter().map(|&x| i32::try_from(x).ok()).collect(),
        }
    }
}

/// Declares a typed Dat on a runtime from raw bytes (the type is known only at `decl_dat`).
pub(crate) type MakeDat =
    fn(&Runtime, &Set, usize, &[u8], &str) -> op2_core::Result<Box<dyn Any + Send + Sync>>;

#[derive(Clone)]
pub(crate) struct DatDecl {
    pub(crate) name: String,
    pub(crate) set: usize,
    pub(crate) dim: usize,
    pub(crate) dtype: DType,
    pub(crate) bytes: Vec<u8>,
    pub(crate) make: MakeDat,
}

fn make_dat<T: Scalar>(
    rt: &Runtime,
    set: &Set,
    dim: usize,
    bytes: &[u8],
    name: &str,
) -> op2_core::Result<Box<dyn Any + Send + Sync>> {
    let values: Vec<T> = bytemuck::pod_collect_to_vec(bytes);
    Ok(Box::new(rt.decl_dat::<T>(set, dim, values, name)?))
}

/// A mesh in global numbering, declared identically on every rank, waiting to be partitioned
/// ([`MeshBuilder::partition`]).
#[derive(Clone)]
pub struct MeshBuilder {
    pub(crate) input: Input,
    pub(crate) sets: Vec<SetDecl>,
    pub(crate) maps: Vec<MapDecl>,
    pub(crate) dats: Vec<DatDecl>,
}

impl fmt::Debug for MeshBuilder {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "MeshBuilder({})", self.summary())
    }
}

impl MeshBuilder {
    /// An empty mesh whose data arrives as `input` says.
    pub fn new(input: Input) -> Self {
        MeshBuilder {
            input,
            sets: Vec::new(),
            maps: Vec::new(),
            dats: Vec::new(),
        }
    }

    /// How data arrives.
    pub fn input(&self) -> Input {
        self.input
    }

    fn unique(&self, what: &str, name: &str, taken: bool) -> Result<()> {
        if name.is_empty() {
            return Err(MpiError::BadDeclaration(format!("a {what} needs a name")));
        }
        if taken {
            return Err(MpiError::BadDeclaration(format!(
                "two {what}s are named `{name}`"
            )));
        }
        Ok(())
    }

    fn check_set(&self, set: GlobalSet, what: &str, name: &str) -> Result<()> {
        if set.0 >= self.sets.len() {
            return Err(MpiError::BadDeclaration(format!(
                "{what} `{name}` names a set of another mesh"
            )));
        }
        Ok(())
    }

    /// Declares a set of `size` elements (its global size, on every rank whatever the input).
    /// Global numbers are 64-bit: maps into a set of more than 2^31 elements take `i64` values.
    /// What one rank holds of a set (its part and halo) must stay below 2^31 elements.
    pub fn decl_set(&mut self, size: usize, name: &str) -> Result<GlobalSet> {
        self.unique("set", name, self.sets.iter().any(|s| s.name == name))?;
        if size > i64::MAX as usize {
            return Err(MpiError::BadDeclaration(format!(
                "set `{name}` of {size} elements: global numbers are 64-bit"
            )));
        }
        self.sets.push(SetDecl {
            name: name.into(),
            size,
        });
        Ok(GlobalSet(self.sets.len() - 1))
    }

    /// Declares a map from `from` to `to` with `arity` global target numbers per element, for the
    /// rows this rank hands in (see [`Input`]). Values are checked when the mesh is partitioned.
    /// Targets past 2^31 take [`MeshBuilder::decl_map_i64`].
    pub fn decl_map(
        &mut self,
        from: GlobalSet,
        to: GlobalSet,
        arity: usize,
        values: impl Into<Vec<i32>>,
        name: &str,
    ) -> Result<GlobalMap> {
        self.push_map(from, to, arity, MapValues::I32(values.into()), name)
    }

    /// [`MeshBuilder::decl_map`] with 64-bit global numbers, for target sets of more than 2^31
    /// elements (twice the memory of 32-bit values).
    pub fn decl_map_i64(
        &mut self,
        from: GlobalSet,
        to: GlobalSet,
        arity: usize,
        values: impl Into<Vec<i64>>,
        name: &str,
    ) -> Result<GlobalMap> {
        self.push_map(from, to, arity, MapValues::I64(values.into()), name)
    }

    fn push_map(
        &mut self,
        from: GlobalSet,
        to: GlobalSet,
        arity: usize,
        values: MapValues,
        name: &str,
    ) -> Result<GlobalMap> {
        self.unique("map", name, self.maps.iter().any(|m| m.name == name))?;
        self.check_set(from, "map", name)?;
        self.check_set(to, "map", name)?;
        if arity == 0 {
            return Err(MpiError::BadDeclaration(format!(
                "map `{name}` has arity 0"
            )));
        }
        self.maps.push(MapDecl {
            name: name.into(),
            from: from.0,
            to: to.0,
            arity,
            values,
        });
        Ok(GlobalMap(self.maps.len() - 1))
    }

    /// Declares a dat of `dim` values per element of `set`, for the rows this rank hands in.
    pub fn decl_dat<T: Scalar>(
        &mut self,
        set: GlobalSet,
        dim: usize,
        data: &[T],
        name: &str,
    ) -> Result<GlobalDat<T>> {
        self.unique("dat", name, self.dats.iter().any(|d| d.name == name))?;
        self.check_set(set, "dat", name)?;
        if dim == 0 {
            return Err(MpiError::BadDeclaration(format!("dat `{name}` has dim 0")));
        }
        self.dats.push(DatDecl {
            name: name.into(),
            set: set.0,
            dim,
            dtype: T::DTYPE,
            bytes: bytemuck::cast_slice(data).to_vec(),
            make: make_dat::<T>,
        });
        Ok(GlobalDat(self.dats.len() - 1, PhantomData))
    }

    /// The global size of a set.
    pub fn set_size(&self, set: GlobalSet) -> usize {
        self.sets[set.0].size
    }

    /// The declarations in one line (names, sizes, shapes, types; no values): ranks compare it
    /// to find a mesh declared differently somewhere.
    pub fn summary(&self) -> String {
        let mut s = format!("input {:?}; sets", self.input);
        for d in &self.sets {
            s += &format!(" {}[{}]", d.name, d.size);
        }
        s += "; maps";
        for m in &self.maps {
            s += &format!(
                " {}:{}->{}x{}",
                m.name, self.sets[m.from].name, self.sets[m.to].name, m.arity
            );
        }
        s += "; dats";
        for d in &self.dats {
            s += &format!(
                " {}:{}x{}:{}",
                d.name,
                self.sets[d.set].name,
                d.dim,
                d.dtype.c_name()
            );
        }
        s
    }

    /// The rows of `set` this rank hands in as `input` says.
    pub(crate) fn rows_given(&self, set: usize, ranks: usize, rank: usize) -> Range<usize> {
        let size = self.sets[set].size;
        match self.input {
            Input::Everywhere => 0..size,
            Input::Root if rank == 0 => 0..size,
            Input::Root => 0..0,
            Input::Slices => block_range(size, ranks, rank),
        }
    }

    /// Checks every map's and dat's length against the rows this rank hands in.
    pub(crate) fn check_lengths(&self, ranks: usize, rank: usize) -> Result<()> {
        let describe = |rows: &Range<usize>, set: usize| match self.input {
            Input::Everywhere => {
                format!("all {} rows of set `{}`", rows.len(), self.sets[set].name)
            }
            Input::Root if rank == 0 => {
                format!(
                    "all {} rows of set `{}` on rank 0",
                    rows.len(),
                    self.sets[set].name
                )
            }
            Input::Root => "nothing off rank 0 with Input::Root".to_string(),
            Input::Slices => format!(
                "rows {}..{} of set `{}`",
                rows.start, rows.end, self.sets[set].name
            ),
        };
        for m in &self.maps {
            let rows = self.rows_given(m.from, ranks, rank);
            if m.values.len() != rows.len() * m.arity {
                return Err(MpiError::DataLength {
                    what: "map",
                    name: m.name.clone(),
                    rank,
                    expected: rows.len() * m.arity,
                    actual: m.values.len(),
                    detail: format!("{} x arity {}", describe(&rows, m.from), m.arity),
                });
            }
        }
        for d in &self.dats {
            let rows = self.rows_given(d.set, ranks, rank);
            let given = d.bytes.len() / d.dtype.size();
            if given != rows.len() * d.dim {
                return Err(MpiError::DataLength {
                    what: "dat",
                    name: d.name.clone(),
                    rank,
                    expected: rows.len() * d.dim,
                    actual: given,
                    detail: format!("{} x dim {}", describe(&rows, d.set), d.dim),
                });
            }
        }
        Ok(())
    }
}

/// Downcasts a declared dat back to its type.
pub(crate) fn typed<T: Scalar>(dat: &(dyn Any + Send + Sync)) -> Dat<T> {
    dat.downcast_ref::<Dat<T>>()
        .expect("a GlobalDat<T> is declared as a Dat<T>")
        .clone()
}
