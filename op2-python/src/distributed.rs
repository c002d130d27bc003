//! Across MPI ranks (feature `mpi`): MPI started for the runtime when `mpirun` launched the
//! process, and op2-mpi's partition step for the `op2rs` package's `DistributedMesh` — a mesh
//! declared in global numbering on every rank, partitioned collectively, each rank getting its
//! sets in sections, its maps in local numbers and its Dats with their halo values.

use crate::{AnyDat, Op2Failure, PyDat, PyMap, PyRuntime, PySet, values};
use numpy::PyArray1;
use op2::mpi::{self, GlobalDat, GlobalMap, GlobalSet, Input, MeshBuilder, Mpi, MpiError};
use op2::num_complex::{Complex32, Complex64};
use pyo3::prelude::*;
use std::sync::{Arc, Mutex};

/// MPI for this process, started at most once and finalised by [`finalize_mpi`] (the package
/// registers it with `atexit`): MPI cannot start again after it finished.
static MPI: Mutex<Option<Arc<Mpi>>> = Mutex::new(None);

/// Whether MPI was started before (and finalised since): then it cannot start again.
static FINALISED: Mutex<bool> = Mutex::new(false);

pub(crate) fn fail_mpi(e: MpiError) -> PyErr {
    crate::failure(e.kind(), &e)
}

/// The communicator a runtime starts with: MPI's world when an MPI launcher started this
/// process (MPI is started now if it was not), else none (one process).
pub(crate) fn world() -> PyResult<Option<Arc<dyn op2::Communicator>>> {
    if !mpi::launched_by_mpirun() {
        return Ok(None);
    }
    let mut g = MPI.lock().unwrap_or_else(|e| e.into_inner());
    if g.is_none() && mpi::running_world_size() == Some(1) {
        // Another library (petsc4py, mpi4py) started MPI in a process of its own, which sets
        // the launcher's variables too: one rank, nothing to communicate, so the runtime runs
        // as one process whatever threading that library asked for.
        return Ok(None);
    }
    if g.is_none() {
        if *FINALISED.lock().unwrap_or_else(|e| e.into_inner()) {
            return Err(Op2Failure::new_err((
                "MpiFinalised",
                "MPI was finalised in this process: it cannot start again".to_string(),
            )));
        }
        // mpi4py (imported first) may have started MPI: then op2 shares its world.
        *g = Some(Arc::new(Mpi::init_or_attach().map_err(fail_mpi)?));
    }
    let comm: Arc<dyn op2::Communicator> = g.as_ref().expect("started above").world();
    Ok(Some(comm))
}

/// Whether op2 started MPI in this process and will finalise it ([`finalize_mpi`]).
#[pyfunction]
pub(crate) fn mpi_is_ours() -> bool {
    MPI.lock()
        .unwrap_or_else(|e| e.into_inner())
        .as_ref()
        .is_some_and(|m| m.finalises())
}

/// Finalises MPI if it was started (at interpreter exit, after the runtime is gone).
#[pyfunction]
pub(crate) fn finalize_mpi() {
    let m = MPI.lock().unwrap_or_else(|e| e.into_inner()).take();
    if m.is_some() {
        *FINALISED.lock().unwrap_or_else(|e| e.into_inner()) = true;
    }
    drop(m);
}

/// A Dat of the global mesh, of any element type.
#[derive(Clone, Copy)]
enum AnyGlobalDat {
    F64(GlobalDat<f64>),
    F32(GlobalDat<f32>),
    I32(GlobalDat<i32>),
    U32(GlobalDat<u32>),
    I64(GlobalDat<i64>),
    U64(GlobalDat<u64>),
    C64(GlobalDat<Complex32>),
    C128(GlobalDat<Complex64>),
}

/// A mesh in global numbering, declared identically on every rank: `MeshBuilder(input)` with
/// `input` `everywhere` (every rank hands in all values), `root` (rank 0 does; the others
/// hand in nothing) or `slices` (each rank its block of every set's rows). Sets, maps and Dats are numbered in declaration order.
#[pyclass(name = "MeshBuilder", module = "op2rs._op2")]
pub(crate) struct PyMeshBuilder {
    mesh: Option<MeshBuilder>,
    sets: Vec<GlobalSet>,
    maps: Vec<GlobalMap>,
    dats: Vec<AnyGlobalDat>,
}

impl PyMeshBuilder {
    fn mesh(&mut self) -> PyResult<&mut MeshBuilder> {
        self.mesh.as_mut().ok_or_else(|| {
            Op2Failure::new_err((
                "Partitioned",
                "this mesh was partitioned already; declare a new one".to_string(),
            ))
        })
    }
    fn set(&self, i: usize) -> PyResult<GlobalSet> {
        self.sets
            .get(i)
            .copied()
            .ok_or_else(|| pyo3::exceptions::PyIndexError::new_err("no such set"))
    }
}

#[pymethods]
impl PyMeshBuilder {
    #[new]
    fn new(input: &str) -> PyResult<Self> {
        let input = match input {
            "everywhere" => Input::Everywhere,
            "root" => Input::Root,
            "slices" => Input::Slices,
            other => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "input must be `everywhere`, `root` or `slices`, not {other:?}"
                )));
            }
        };
        Ok(PyMeshBuilder {
            mesh: Some(MeshBuilder::new(input)),
            sets: Vec::new(),
            maps: Vec::new(),
            dats: Vec::new(),
        })
    }

    fn decl_set(&mut self, size: usize, name: &str) -> PyResult<usize> {
        let s = self.mesh()?.decl_set(size, name).map_err(fail_mpi)?;
        self.sets.push(s);
        Ok(self.sets.len() - 1)
    }

    fn decl_map(
        &mut self,
        from: usize,
        to: usize,
        arity: usize,
        data: &Bound<'_, PyAny>,
        name: &str,
    ) -> PyResult<usize> {
        let (f, t) = (self.set(from)?, self.set(to)?);
        let v: Vec<i32> = values(data)?;
        let m = self
            .mesh()?
            .decl_map(f, t, arity, v, name)
            .map_err(fail_mpi)?;
        self.maps.push(m);
        Ok(self.maps.len() - 1)
    }

    fn decl_dat(
        &mut self,
        set: usize,
        dim: usize,
        dtype: &str,
        data: &Bound<'_, PyAny>,
        name: &str,
    ) -> PyResult<usize> {
        let s = self.set(set)?;
        macro_rules! make {
            ($t:ty, $v:ident) => {{
                let v: Vec<$t> = values(data)?;
                AnyGlobalDat::$v(self.mesh()?.decl_dat(s, dim, &v, name).map_err(fail_mpi)?)
            }};
        }
        let d = by_dtype!(dtype, "Dats", make);
        self.dats.push(d);
        Ok(self.dats.len() - 1)
    }

    /// The collective partition step, on `rt`'s ranks: `partitioner` is `metis` or
    /// `ptscotch` (cutting the graph map `by` induces on its target set), `geometric`
    /// (recursive coordinate bisection of float64 Dat `by`'s set) or `blocks`.
    #[pyo3(signature = (rt, partitioner, by=None, renumber=false))]
    fn partition(
        &mut self,
        rt: &PyRuntime,
        partitioner: &str,
        by: Option<usize>,
        renumber: bool,
    ) -> PyResult<PyLocalMesh> {
        let need = || {
            by.ok_or_else(|| {
                pyo3::exceptions::PyValueError::new_err(format!(
                    "the {partitioner} partitioner needs a map or coordinates"
                ))
            })
        };
        let p = match partitioner {
            "metis" => mpi::Partitioner::Metis {
                map: *self
                    .maps
                    .get(need()?)
                    .ok_or_else(|| pyo3::exceptions::PyIndexError::new_err("no such map"))?,
            },
            // Without op2-mpi's `ptscotch` feature (this package's), partitioning fails with
            // op2-mpi's error naming it.
            "ptscotch" => mpi::Partitioner::PtScotch {
                map: *self
                    .maps
                    .get(need()?)
                    .ok_or_else(|| pyo3::exceptions::PyIndexError::new_err("no such map"))?,
            },
            "geometric" => match self.dats.get(need()?) {
                Some(AnyGlobalDat::F64(d)) => mpi::Partitioner::Geometric { coords: *d },
                _ => {
                    return Err(pyo3::exceptions::PyTypeError::new_err(
                        "geometric partitioning needs a float64 Dat of coordinates",
                    ));
                }
            },
            "blocks" => mpi::Partitioner::Blocks,
            other => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "partitioner must be metis, ptscotch, geometric or blocks, not {other:?}"
                )));
            }
        };
        let mesh = self.mesh()?.clone();
        let local = mesh
            .partition(&rt.rt, &mpi::Options::new(p).renumber(renumber))
            .map_err(fail_mpi)?;
        // The declarations are consumed: a second partition would declare everything again.
        self.mesh = None;
        Ok(PyLocalMesh {
            local,
            sets: self.sets.clone(),
            maps: self.maps.clone(),
            dats: self.dats.clone(),
        })
    }
}

/// This rank's part of a partitioned mesh.
#[pyclass(name = "LocalMesh", module = "op2rs._op2", frozen)]
pub(crate) struct PyLocalMesh {
    local: mpi::LocalMesh,
    sets: Vec<GlobalSet>,
    maps: Vec<GlobalMap>,
    dats: Vec<AnyGlobalDat>,
}

fn no_such(what: &str) -> PyErr {
    pyo3::exceptions::PyIndexError::new_err(format!("no such {what}"))
}

#[pymethods]
impl PyLocalMesh {
    fn set(&self, i: usize) -> PyResult<PySet> {
        let s = self.sets.get(i).ok_or_else(|| no_such("set"))?;
        Ok(PySet {
            set: self.local.set(*s),
        })
    }
    fn map(&self, i: usize) -> PyResult<PyMap> {
        let m = self.maps.get(i).ok_or_else(|| no_such("map"))?;
        Ok(PyMap {
            map: self.local.map(*m),
        })
    }
    fn dat(&self, i: usize) -> PyResult<PyDat> {
        let d = self.dats.get(i).ok_or_else(|| no_such("dat"))?;
        let dat = match *d {
            AnyGlobalDat::F64(d) => AnyDat::F64(self.local.dat(d)),
            AnyGlobalDat::F32(d) => AnyDat::F32(self.local.dat(d)),
            AnyGlobalDat::I32(d) => AnyDat::I32(self.local.dat(d)),
            AnyGlobalDat::U32(d) => AnyDat::U32(self.local.dat(d)),
            AnyGlobalDat::I64(d) => AnyDat::I64(self.local.dat(d)),
            AnyGlobalDat::U64(d) => AnyDat::U64(self.local.dat(d)),
            AnyGlobalDat::C64(d) => AnyDat::C64(self.local.dat(d)),
            AnyGlobalDat::C128(d) => AnyDat::C128(self.local.dat(d)),
        };
        Ok(PyDat { dat })
    }
    /// The global numbers of set `i`'s local elements.
    fn global_ids<'py>(&self, py: Python<'py>, i: usize) -> PyResult<Bound<'py, PyArray1<u64>>> {
        let s = self.sets.get(i).ok_or_else(|| no_such("set"))?;
        Ok(PyArray1::from_slice(py, self.local.global_ids(*s)))
    }
    /// Collective: every rank's owned values of `dat` in global order, flat, on rank 0 (None
    /// elsewhere).
    fn gather<'py>(&self, py: Python<'py>, dat: &PyDat) -> PyResult<Option<Bound<'py, PyAny>>> {
        macro_rules! gather {
            ($d:ident) => {
                self.local
                    .gather($d)
                    .map_err(fail_mpi)?
                    .map(|v| PyArray1::from_vec(py, v).into_any())
            };
        }
        Ok(match &dat.dat {
            AnyDat::F64(d) => gather!(d),
            AnyDat::F32(d) => gather!(d),
            AnyDat::I32(d) => gather!(d),
            AnyDat::U32(d) => gather!(d),
            AnyDat::I64(d) => gather!(d),
            AnyDat::U64(d) => gather!(d),
            AnyDat::C64(d) => gather!(d),
            AnyDat::C128(d) => gather!(d),
        })
    }
    /// The partition in a line: partitioner, edge cut, seconds.
    fn report(&self) -> String {
        let r = self.local.report();
        format!(
            "{} partition: edge cut {}, {:.3} s",
            r.partitioner, r.edge_cut, r.seconds
        )
    }
}
