//! What cases declare their meshes and run their loops through: in one process, straight onto a
//! runtime; across ranks (feature `mpi`), in global numbering onto an op2-mpi `MeshBuilder`,
//! partitioned (collectively, on every rank at the same point of the case) the first time a loop
//! or a result needs local objects. A case is written once, in global numbering, and runs both ways: its
//! outputs come back in global order (on rank 0), so they compare with the one-process reference.
// Without `mpi` the distributed types are empty: the code that uses them cannot run.
#![cfg_attr(not(feature = "mpi"), allow(unreachable_code, unused_variables))]

use crate::values::OutputValue;
use across::Distributed;
use mesh::{MapKind, SetInner, SetKind};
use op2::{Access, Arg, Const, Kernel, Op2Error, Result, Runtime as Op2Runtime, Scalar};
use partition::not_distributed;
use std::cell::OnceCell;
use std::rc::Rc;

// The distributed half needs op2-mpi (feature `mpi`); without it, its types are empty and the
// one-process path is all there is.
#[cfg(feature = "mpi")]
mod across;
mod columns;
mod mesh;
mod partition;

pub use mesh::{Map, Set};
pub use partition::{NOT_DISTRIBUTED, Partition};
#[cfg(not(feature = "mpi"))]
mod across {
    use op2::{Result, Runtime, Scalar};

    /// Never made without the `mpi` feature.
    pub(super) enum Distributed {}
    /// Never made without the `mpi` feature.
    #[derive(Clone, Copy)]
    pub(super) enum GSet {}
    /// Never made without the `mpi` feature.
    #[derive(Clone, Copy)]
    pub(super) enum GMap {}

    impl Distributed {
        pub(super) fn decl_set(&self, _: usize, _: &str) -> Result<GSet> {
            match *self {}
        }
        pub(super) fn decl_map(
            &self,
            _: GSet,
            _: GSet,
            _: usize,
            _: Vec<i32>,
            _: &str,
        ) -> Result<GMap> {
            match *self {}
        }
        pub(super) fn set(&self, _: &Runtime, _: GSet) -> Result<op2::Set> {
            match *self {}
        }
        pub(super) fn map(&self, _: &Runtime, _: GMap) -> Result<op2::Map> {
            match *self {}
        }
        pub(super) fn global_ids(&self, _: &Runtime, _: GSet) -> Result<&[u64]> {
            match *self {}
        }
        pub(super) fn gather<T: Scalar>(
            &self,
            _: &Runtime,
            _: &op2::Dat<T>,
        ) -> Result<Option<Vec<T>>> {
            match *self {}
        }
    }
}

/// The runtime a case runs on: one process, or one rank of several (see the module's text).
pub struct CaseRuntime {
    rt: Op2Runtime,
    dist: Option<Rc<Distributed>>,
}

impl CaseRuntime {
    /// Cases straight onto `rt` (one process).
    pub fn single(rt: Op2Runtime) -> Self {
        CaseRuntime { rt, dist: None }
    }

    /// Cases across the ranks of `rt`'s communicator, partitioned by `partition` (feature
    /// `mpi`).
    #[cfg(feature = "mpi")]
    pub fn distributed(rt: Op2Runtime, partition: Partition) -> Self {
        CaseRuntime {
            rt,
            dist: Some(Rc::new(Distributed::new(partition))),
        }
    }

    /// The runtime underneath: for cases that need the whole API in one process
    /// ([`Op2Error::Unsupported`] with [`NOT_DISTRIBUTED`] across ranks).
    pub fn plain(&self) -> Result<&Op2Runtime> {
        match self.dist {
            None => Ok(&self.rt),
            Some(_) => Err(not_distributed("the case uses the runtime directly")),
        }
    }

    /// The runtime underneath, on either path (for flushing and inspecting).
    pub fn runtime(&self) -> &Op2Runtime {
        &self.rt
    }

    /// A set of `size` elements (global size across ranks).
    pub fn decl_set(&self, size: usize, name: &str) -> Result<Set> {
        let inner = match &self.dist {
            None => SetKind::Plain(self.rt.decl_set(size, name)?),
            Some(d) => SetKind::Global(d.decl_set(size, name)?, d.clone(), self.rt.clone()),
        };
        Ok(Set(Rc::new(SetInner { size, inner })))
    }

    /// A map from `from` to `to`, `arity` entries per element, in global numbering.
    pub fn decl_map(
        &self,
        from: &Set,
        to: &Set,
        arity: usize,
        values: impl Into<Vec<i32>>,
        name: &str,
    ) -> Result<Map> {
        match (&self.dist, &from.0.inner, &to.0.inner) {
            (None, SetKind::Plain(f), SetKind::Plain(t)) => Ok(Map(MapKind::Plain(
                self.rt.decl_map(f, t, arity, values, name)?,
            ))),
            (Some(d), SetKind::Global(f, ..), SetKind::Global(t, ..)) => {
                let g = d.decl_map(*f, *t, arity, values.into(), name)?;
                Ok(Map(MapKind::Global(g, d.clone(), self.rt.clone())))
            }
            _ => Err(not_distributed("sets of another case runtime")),
        }
    }

    /// A Dat with `dim` values per element of `set`, in global order.
    pub fn decl_dat<T: OutputValue>(
        &self,
        set: &Set,
        dim: usize,
        data: &[T],
        name: &str,
    ) -> Result<Dat<T>> {
        let inner = match &set.0.inner {
            SetKind::Plain(s) => DatKind::Plain(self.rt.decl_dat(s, dim, data, name)?),
            SetKind::Columns(_) if !set.distributed() => {
                DatKind::Plain(self.rt.decl_dat(&set.local()?, dim, data, name)?)
            }
            SetKind::Global(..) | SetKind::Columns(_) => {
                // The runtime's checks, on the global size (each rank declares its part later).
                if dim == 0 {
                    return Err(Op2Error::ZeroDimension {
                        what: "dat",
                        name: name.into(),
                        field: "dim",
                    });
                }
                let expected = set.0.size.saturating_mul(dim);
                if expected != data.len() {
                    return Err(Op2Error::DataLength {
                        what: "dat",
                        name: name.into(),
                        expected,
                        actual: data.len(),
                        detail: format!("{} elements x dim {dim}", set.0.size),
                    });
                }
                DatKind::Global {
                    values: data.to_vec(),
                    local: OnceCell::new(),
                }
            }
        };
        Ok(Dat(Rc::new(DatInner {
            name: name.into(),
            dim,
            set: set.clone(),
            rt: self.rt.clone(),
            inner,
        })))
    }

    /// A Dat of zeros.
    pub fn decl_dat_zeros<T: OutputValue>(
        &self,
        set: &Set,
        dim: usize,
        name: &str,
    ) -> Result<Dat<T>> {
        let zeros = vec![T::ZERO; set.0.size.saturating_mul(dim)];
        self.decl_dat(set, dim, &zeros, name)
    }

    /// A Global (the same value on every rank).
    pub fn decl_global<T: Scalar>(&self, dim: usize, data: &[T], name: &str) -> Result<Global<T>> {
        Ok(Global(self.rt.decl_global(dim, data, name)?))
    }

    /// A Const (the same value on every rank).
    pub fn decl_const<T: Scalar>(&self, dim: usize, data: &[T], name: &str) -> Result<Const<T>> {
        self.rt.decl_const(dim, data, name)
    }

    /// Runs `kernel` over `set` (its owned elements on each rank) with `args`.
    pub fn par_loop(
        &self,
        kernel: &Kernel,
        set: &Set,
        args: impl IntoIterator<Item = CaseArg>,
    ) -> Result<()> {
        let set = set.local()?;
        let args = args
            .into_iter()
            .map(|a| a.0)
            .collect::<Result<Vec<Arg>>>()?;
        self.rt.par_loop(kernel, &set, args).map(drop)
    }
}

enum DatKind<T> {
    Plain(op2::Dat<T>),
    /// Across ranks: the global values until the first need, then this rank's Dat.
    Global {
        values: Vec<T>,
        local: OnceCell<op2::Dat<T>>,
    },
}

struct DatInner<T> {
    name: String,
    dim: usize,
    set: Set,
    rt: Op2Runtime,
    inner: DatKind<T>,
}

/// A Dat of a case's mesh.
pub struct Dat<T>(Rc<DatInner<T>>);

/// An argument of [`CaseRuntime::par_loop`] (an error to report there when its objects could not
/// be made local).
pub struct CaseArg(Result<Arg>);

impl CaseArg {
    /// The arg as an element block of a two-dimensional local iteration space
    /// ([`Arg::per_entry_block`]).
    pub fn per_entry_block(self, rows: usize, cols: usize, block: (usize, usize)) -> CaseArg {
        CaseArg(self.0.map(|a| a.per_entry_block(rows, cols, block)))
    }
}

impl<T: OutputValue> Dat<T> {
    /// The Dat's name.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// This rank's Dat (declared from the global values on first need).
    fn local(&self) -> Result<op2::Dat<T>> {
        match &self.0.inner {
            DatKind::Plain(d) => Ok(d.clone()),
            DatKind::Global { values, local } => {
                if let Some(d) = local.get() {
                    return Ok(d.clone());
                }
                let set = self.0.set.local()?;
                let ids = self
                    .0
                    .set
                    .ids()?
                    .expect("a global Dat has a distributed set");
                let dim = self.0.dim;
                // Owned rows from the global values; halo rows poisoned, so that a loop reading
                // them before an exchange filled them computes something visibly wrong.
                let owned = set.size();
                let rows: Vec<T> = ids
                    .iter()
                    .enumerate()
                    .flat_map(|(local, &id)| {
                        let id = id as usize;
                        values[id * dim..(id + 1) * dim]
                            .iter()
                            .map(move |&v| if local < owned { v } else { T::poison() })
                    })
                    .collect();
                let d = self.0.rt.decl_dat(&set, dim, &rows, &self.0.name)?;
                Ok(local.get_or_init(|| d).clone())
            }
        }
    }

    /// This rank's Dat itself (the whole Dat in one process), for what the case runtime does
    /// not wrap (Dat algebra).
    pub fn op2(&self) -> Result<op2::Dat<T>> {
        self.local()
    }

    /// A direct argument.
    pub fn arg(&self, access: Access) -> CaseArg {
        CaseArg(self.local().map(|d| d.arg(access)))
    }

    /// An argument through entry `index` of `map`.
    pub fn arg_via(&self, map: &Map, index: usize, access: Access) -> CaseArg {
        CaseArg(
            self.local()
                .and_then(|d| Ok(d.arg_via(&map.local()?, index, access))),
        )
    }

    /// A local-iteration-space argument through `map` (one entry per call).
    pub fn arg_entries(&self, map: &Map, access: Access) -> CaseArg {
        CaseArg(
            self.local()
                .and_then(|d| Ok(d.arg_entries(&map.local()?, access))),
        )
    }

    /// A whole-row argument as one local buffer (PyOP2 0.8.3 to 0.10's `op2.i`).
    pub fn arg_buffer(&self, map: &Map, access: Access) -> CaseArg {
        CaseArg(
            self.local()
                .and_then(|d| Ok(d.arg_buffer(&map.local()?, access))),
        )
    }

    /// An argument through every entry of `map`.
    pub fn arg_row(&self, map: &Map, access: Access) -> CaseArg {
        CaseArg(
            self.local()
                .and_then(|d| Ok(d.arg_row(&map.local()?, access))),
        )
    }

    /// OP2's `op_arg_dat` on this Dat.
    pub fn op_arg(
        &self,
        index: i32,
        map: Option<&Map>,
        dim: usize,
        type_name: &str,
        access: Access,
    ) -> CaseArg {
        CaseArg(self.local().and_then(|d| {
            let map = map.map(Map::local).transpose()?;
            Ok(op2::op_arg_dat(
                &d,
                index,
                map.as_ref(),
                dim,
                type_name,
                access,
            ))
        }))
    }

    /// Every value in global order: `Some` in one process and on rank 0 across ranks (`None` on
    /// the other ranks). Collective across ranks.
    pub fn values(&self) -> Result<Option<Vec<T>>> {
        let d = self.local()?;
        match (&self.0.set.0.inner, self.0.set.global()) {
            (SetKind::Columns(_), _) => match self.0.set.ids()? {
                None => Ok(Some(d.to_vec()?)),
                Some(ids) => mesh::gather(&self.0.rt, &d, &ids, self.0.set.size()),
            },
            (_, None) => Ok(Some(d.to_vec()?)),
            (_, Some((_, dist, rt))) => dist.gather(rt, &d),
        }
    }

    /// Sets the values of element `element` (global number) from the host. Collective across
    /// ranks: every rank takes write access (so every rank knows the halo is out of date), the
    /// owner writes.
    pub fn write_element(&self, element: usize, values: &[T]) -> Result<()> {
        let d = self.local()?;
        let dim = self.0.dim;
        if element >= self.0.set.size() || values.len() != dim {
            return Err(Op2Error::DataLength {
                what: "dat",
                name: self.0.name.clone(),
                expected: dim,
                actual: values.len(),
                detail: format!(
                    "one element's values, of element {element} of {}",
                    self.0.set.size()
                ),
            });
        }
        let row = match self.0.set.ids()? {
            None => Some(element),
            Some(ids) => {
                let owned = d.set().size();
                ids[..owned].iter().position(|&id| id == element as u64)
            }
        };
        let mut data = d.data()?;
        if let Some(r) = row {
            data[r * dim..(r + 1) * dim].copy_from_slice(values);
        }
        Ok(())
    }
}

/// A Global of a case (the same value on every rank; everything else as [`op2::Global`]).
pub struct Global<T>(op2::Global<T>);

impl<T: Scalar> Global<T> {
    /// A reduction or read argument.
    pub fn arg(&self, access: Access) -> CaseArg {
        CaseArg(Ok(self.0.arg(access)))
    }

    /// OP2's `op_arg_gbl` on this Global.
    pub fn op_arg(&self, dim: usize, type_name: &str, access: Access) -> CaseArg {
        CaseArg(Ok(op2::op_arg_gbl(&self.0, dim, type_name, access)))
    }
}

impl<T> std::ops::Deref for Global<T> {
    type Target = op2::Global<T>;

    fn deref(&self) -> &op2::Global<T> {
        &self.0
    }
}
