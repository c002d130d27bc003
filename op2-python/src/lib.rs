//! op2-python: the native half of the `op2rs` Python package. It wraps op2's runtime and data
//! handles for the package's pure-Python PyOP2 API (`op2rs/op2.py`), which parses PyOP2's
//! argument forms and raises PyOP2's exceptions; here are only typed handles, loops and NumPy
//! views over op2's own memory.

use numpy::ndarray::ArrayView2;
use numpy::{Element, PyArray2, PyArrayMethods, PyReadonlyArray1};
use op2::{Access, Arg, Kernel, Layers, Map, Op2Error, Region, Runtime, Scalar, Set, SetSizes};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use std::sync::Arc;

mod la;
mod mixed;

pyo3::create_exception!(
    _op2,
    Op2Failure,
    PyRuntimeError,
    "An op2 error: args are (kind, message)."
);

/// An op2 error as `Op2Failure(kind, message)`: the Python layer turns `kind` (the error's
/// variant) into PyOP2's exception of that meaning.
fn fail(e: Op2Error) -> PyErr {
    failure(&e)
}

/// Any of the crates' errors as `Op2Failure(kind, message)`, `kind` its variant's name.
fn failure<E: std::fmt::Debug + std::fmt::Display>(e: &E) -> PyErr {
    let debug = format!("{e:?}");
    let kind = debug
        .split(|c: char| !c.is_alphanumeric())
        .next()
        .unwrap_or("Error")
        .to_string();
    Op2Failure::new_err((kind, e.to_string()))
}

fn access(code: u8) -> PyResult<Access> {
    Ok(match code {
        0 => Access::Read,
        1 => Access::Write,
        2 => Access::Rw,
        3 => Access::Inc,
        4 => Access::Min,
        5 => Access::Max,
        _ => {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "unknown access mode",
            ));
        }
    })
}

/// The runtime of a program (`op2.init`).
#[pyclass(module = "op2rs._op2", frozen)]
struct PyRuntime {
    rt: Runtime,
}

#[pyclass(name = "Set", module = "op2rs._op2", frozen, skip_from_py_object)]
#[derive(Clone)]
struct PySet {
    set: Set,
}

#[pymethods]
impl PySet {
    #[getter]
    fn name(&self) -> String {
        self.set.name().into()
    }
    /// (core, owned, exec halo, non-exec halo) sizes.
    #[getter]
    fn sizes(&self) -> (usize, usize, usize, usize) {
        let s = self.set.sizes();
        (s.core, s.owned, s.exec_halo, s.nonexec_halo)
    }
    #[getter]
    fn size(&self) -> usize {
        self.set.size()
    }
    #[getter]
    fn exec_size(&self) -> usize {
        self.set.exec_size()
    }
    #[getter]
    fn total_size(&self) -> usize {
        self.set.total_size()
    }
    #[getter]
    fn id(&self) -> u64 {
        self.set.id()
    }
}

#[pyclass(name = "Map", module = "op2rs._op2", frozen, skip_from_py_object)]
#[derive(Clone)]
struct PyMap {
    map: Map,
}

#[pymethods]
impl PyMap {
    #[getter]
    fn arity(&self) -> usize {
        self.map.arity()
    }
    #[getter]
    fn name(&self) -> String {
        self.map.name().into()
    }
    /// The values, one row per element a loop runs (a copy).
    fn values<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray2<i32>> {
        let v = self.map.layered_values();
        let rows = v.len() / self.map.arity();
        numpy::PyArray1::from_slice(py, &v)
            .reshape([rows, self.map.arity()])
            .expect("rows x arity values")
    }
    #[getter]
    fn offsets(&self) -> Option<Vec<i32>> {
        self.map.offsets().map(<[i32]>::to_vec)
    }
}

#[pyclass(name = "Kernel", module = "op2rs._op2", frozen)]
struct PyKernel {
    kernel: Kernel,
}

#[pymethods]
impl PyKernel {
    #[new]
    fn new(code: &str, name: &str) -> PyResult<Self> {
        Ok(PyKernel {
            // PyOP2 never compared declared array bounds with arities (see the package's
            // README): its programs declare `double *x[2]` for maps of arity 4.
            kernel: Kernel::without_bound_checks(name, code).map_err(fail)?,
        })
    }
    #[getter]
    fn name(&self) -> String {
        self.kernel.name().into()
    }
    /// How many parameters the kernel's definition has (None when macros hide it).
    fn param_count(&self) -> Option<usize> {
        self.kernel.params().map(<[_]>::len)
    }
    /// How many of the last parameters are plain `int`s (the trailing indices of PyOP2 0.8.2's
    /// per-point kernels).
    fn trailing_ints(&self) -> usize {
        self.kernel.params().map_or(0, |p| {
            p.iter()
                .rev()
                .take_while(|q| q.dtype == Some(op2::DType::I32) && q.indirection == 0)
                .count()
        })
    }
}

/// One Dat of any element type.
enum AnyDat {
    F64(op2::Dat<f64>),
    F32(op2::Dat<f32>),
    I32(op2::Dat<i32>),
    U32(op2::Dat<u32>),
    I64(op2::Dat<i64>),
    U64(op2::Dat<u64>),
}

macro_rules! each_dat {
    ($d:expr, $x:ident => $body:expr) => {
        match $d {
            AnyDat::F64($x) => $body,
            AnyDat::F32($x) => $body,
            AnyDat::I32($x) => $body,
            AnyDat::U32($x) => $body,
            AnyDat::I64($x) => $body,
            AnyDat::U64($x) => $body,
        }
    };
}

#[pyclass(name = "Dat", module = "op2rs._op2", frozen)]
struct PyDat {
    dat: AnyDat,
}

/// Keeps a Dat's memory alive under a NumPy view of it.
#[pyclass(module = "op2rs._op2", frozen)]
struct Keep {
    _carrier: Arc<op2::Carrier>,
}

fn view<'py, T: Scalar + Element>(
    py: Python<'py>,
    d: &op2::Dat<T>,
    writable: bool,
) -> PyResult<Bound<'py, PyAny>> {
    // Forces what the values depend on and brings them home; `data()` also marks device
    // copies and halos out of date, as a write through the view may follow.
    let ptr = if writable {
        let mut w = d.data().map_err(fail)?;
        w.as_mut_ptr()
    } else {
        let r = d.data_ro().map_err(fail)?;
        r.as_ptr() as *mut T
    };
    let rows = d.set().total_size();
    let dim = d.dim();
    let keep = Bound::new(
        py,
        Keep {
            _carrier: d.carrier().clone(),
        },
    )?;
    // SAFETY: the buffer holds rows * dim values for as long as its carrier lives, and `keep`
    // (the array's base) holds the carrier; op2 never moves a Dat's host buffer.
    let arr = unsafe {
        let v = ArrayView2::from_shape_ptr((rows, dim), ptr as *const T);
        PyArray2::borrow_from_array(&v, keep.into_any())
    };
    if !writable {
        arr.readwrite().make_nonwriteable();
    }
    Ok(arr.into_any())
}

#[pymethods]
impl PyDat {
    #[getter]
    fn name(&self) -> String {
        each_dat!(&self.dat, d => d.name().into())
    }
    #[getter]
    fn dim(&self) -> usize {
        each_dat!(&self.dat, d => d.dim())
    }
    #[getter]
    fn set(&self) -> PySet {
        PySet {
            set: each_dat!(&self.dat, d => d.set().clone()),
        }
    }
    /// A NumPy array of shape (elements with halos, dim) over the Dat's own memory, after
    /// running what it depends on.
    fn view<'py>(&self, py: Python<'py>, writable: bool) -> PyResult<Bound<'py, PyAny>> {
        each_dat!(&self.dat, d => view(py, d, writable))
    }
    /// The 2-norm of every value.
    fn norm(&self) -> PyResult<f64> {
        each_dat!(&self.dat, d => d.norm().map_err(fail))
    }
    fn zero(&self) -> PyResult<()> {
        each_dat!(&self.dat, d => d.zero().map_err(fail))
    }
    #[getter]
    fn carrier_id(&self) -> u64 {
        each_dat!(&self.dat, d => d.carrier().id())
    }
}

enum AnyGlobal {
    F64(op2::Global<f64>),
    F32(op2::Global<f32>),
    I32(op2::Global<i32>),
    U32(op2::Global<u32>),
    I64(op2::Global<i64>),
    U64(op2::Global<u64>),
}

macro_rules! each_global {
    ($d:expr, $x:ident => $body:expr) => {
        match $d {
            AnyGlobal::F64($x) => $body,
            AnyGlobal::F32($x) => $body,
            AnyGlobal::I32($x) => $body,
            AnyGlobal::U32($x) => $body,
            AnyGlobal::I64($x) => $body,
            AnyGlobal::U64($x) => $body,
        }
    };
}

#[pyclass(name = "Global", module = "op2rs._op2", frozen)]
struct PyGlobal {
    g: AnyGlobal,
}

#[pymethods]
impl PyGlobal {
    /// The values (a copy, after what they depend on ran).
    fn value<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        each_global!(&self.g, g => {
            let v = g.value().map_err(fail)?;
            Ok(numpy::PyArray1::from_vec(py, v).into_any())
        })
    }
    fn set_value(&self, values: &Bound<'_, PyAny>) -> PyResult<()> {
        each_global!(&self.g, g => {
            let v = self::values(values)?;
            g.set_value(&v).map_err(fail)
        })
    }
}

#[pyclass(name = "Const", module = "op2rs._op2", frozen)]
struct PyConst {
    c: AnyConst,
}

enum AnyConst {
    F64(op2::Const<f64>),
    F32(op2::Const<f32>),
    I32(op2::Const<i32>),
    U32(op2::Const<u32>),
    I64(op2::Const<i64>),
    U64(op2::Const<u64>),
}

macro_rules! each_const {
    ($d:expr, $x:ident => $body:expr) => {
        match $d {
            AnyConst::F64($x) => $body,
            AnyConst::F32($x) => $body,
            AnyConst::I32($x) => $body,
            AnyConst::U32($x) => $body,
            AnyConst::I64($x) => $body,
            AnyConst::U64($x) => $body,
        }
    };
}

#[pymethods]
impl PyConst {
    fn value<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        each_const!(&self.c, c => {
            let v = c.value().map_err(fail)?;
            Ok(numpy::PyArray1::from_vec(py, v).into_any())
        })
    }
    fn set_value(&self, values: &Bound<'_, PyAny>) -> PyResult<()> {
        each_const!(&self.c, c => {
            let v = self::values(values)?;
            c.set_value(&v).map_err(fail)
        })
    }
}

/// `$make!(rust type, variant)` for the NumPy type name `$dtype`; a `TypeError` naming `$what`
/// for the others.
macro_rules! by_dtype {
    ($dtype:expr, $what:literal, $make:ident) => {
        match $dtype {
            "float64" => $make!(f64, F64),
            "float32" => $make!(f32, F32),
            "int32" => $make!(i32, I32),
            "uint32" => $make!(u32, U32),
            "int64" => $make!(i64, I64),
            "uint64" => $make!(u64, U64),
            other => {
                return Err(pyo3::exceptions::PyTypeError::new_err(format!(
                    "op2 has no {} of {other}",
                    $what
                )));
            }
        }
    };
}

// After `by_dtype`, which it uses.
#[cfg(feature = "mpi")]
mod distributed;

/// Values from a one-dimensional NumPy array of `T` (the Python layer converts what programs
/// pass: lists, other types, other shapes).
fn values<T: Element + Copy>(data: &Bound<'_, PyAny>) -> PyResult<Vec<T>> {
    let a = data.extract::<PyReadonlyArray1<'_, T>>()?;
    Ok(a.as_array().iter().copied().collect())
}

#[pymethods]
impl PyRuntime {
    #[new]
    #[pyo3(signature = (backend=None, lazy=true))]
    fn new(backend: Option<&str>, lazy: bool) -> PyResult<Self> {
        let mut b = op2::builder().lazy(lazy);
        if let Some(name) = backend {
            b = b.backend(name);
        }
        // Under mpirun, every rank's runtime spans MPI's world.
        #[cfg(feature = "mpi")]
        if let Some(world) = distributed::world()? {
            b = b.communicator(world);
        }
        Ok(PyRuntime {
            rt: b.build().map_err(fail)?,
        })
    }

    #[getter]
    fn backend(&self) -> String {
        self.rt.backend_name().into()
    }

    /// This process's rank among the runtime's ranks.
    #[getter]
    fn rank(&self) -> usize {
        self.rt.communicator().rank()
    }

    /// How many ranks the runtime spans.
    #[getter]
    fn ranks(&self) -> usize {
        self.rt.communicator().size()
    }

    fn decl_set(&self, sizes: (usize, usize, usize, usize), name: &str) -> PyResult<PySet> {
        let s = SetSizes {
            core: sizes.0,
            owned: sizes.1,
            exec_halo: sizes.2,
            nonexec_halo: sizes.3,
        };
        Ok(PySet {
            set: self.rt.decl_set_sections(s, name).map_err(fail)?,
        })
    }

    fn decl_extruded_set(&self, base: &PySet, layers: usize, name: &str) -> PyResult<PySet> {
        Ok(PySet {
            set: self
                .rt
                .decl_extruded_set(&base.set, Layers::Uniform(layers), name)
                .map_err(fail)?,
        })
    }

    fn decl_subset(
        &self,
        parent: &PySet,
        indices: &Bound<'_, PyAny>,
        name: &str,
    ) -> PyResult<PySet> {
        let idx: Vec<i32> = values(indices)?;
        Ok(PySet {
            set: self.rt.decl_subset(&parent.set, idx, name).map_err(fail)?,
        })
    }

    #[pyo3(signature = (from, to, arity, data, name, offsets=None))]
    fn decl_map(
        &self,
        from: &PySet,
        to: &PySet,
        arity: usize,
        data: &Bound<'_, PyAny>,
        name: &str,
        offsets: Option<Vec<i32>>,
    ) -> PyResult<PyMap> {
        let v: Vec<i32> = values(data)?;
        let map = match offsets {
            Some(o) => self
                .rt
                .decl_extruded_map(&from.set, &to.set, arity, v, o, name),
            None => self.rt.decl_map(&from.set, &to.set, arity, v, name),
        };
        Ok(PyMap {
            map: map.map_err(fail)?,
        })
    }

    /// A Dat of `dtype` (a NumPy type name) on `set`, `dim` values per element, from `data`
    /// (`None`: zeros).
    fn decl_dat(
        &self,
        set: &PySet,
        dim: usize,
        dtype: &str,
        data: Option<&Bound<'_, PyAny>>,
        name: &str,
    ) -> PyResult<PyDat> {
        macro_rules! make {
            ($t:ty, $v:ident) => {{
                let d = match data {
                    Some(x) => self
                        .rt
                        .decl_dat::<$t>(&set.set, dim, values::<$t>(x)?, name),
                    None => self.rt.decl_dat_zeros::<$t>(&set.set, dim, name),
                };
                AnyDat::$v(d.map_err(fail)?)
            }};
        }
        let dat = by_dtype!(dtype, "Dats", make);
        Ok(PyDat { dat })
    }

    fn decl_global(
        &self,
        dim: usize,
        dtype: &str,
        data: &Bound<'_, PyAny>,
        name: &str,
    ) -> PyResult<PyGlobal> {
        macro_rules! make {
            ($t:ty, $v:ident) => {
                AnyGlobal::$v(
                    self.rt
                        .decl_global::<$t>(dim, &values::<$t>(data)?, name)
                        .map_err(fail)?,
                )
            };
        }
        let g = by_dtype!(dtype, "Globals", make);
        Ok(PyGlobal { g })
    }

    fn decl_const(
        &self,
        dim: usize,
        dtype: &str,
        data: &Bound<'_, PyAny>,
        name: &str,
    ) -> PyResult<PyConst> {
        macro_rules! make {
            ($t:ty, $v:ident) => {
                AnyConst::$v(
                    self.rt
                        .decl_const::<$t>(dim, &values::<$t>(data)?, name)
                        .map_err(fail)?,
                )
            };
        }
        let c = by_dtype!(dtype, "Consts", make);
        Ok(PyConst { c })
    }

    /// Frees Const `c`'s name (loops recorded before run first).
    fn remove_const(&self, c: &PyConst) -> PyResult<()> {
        each_const!(&c.c, c => self.rt.remove_const(c).map_err(fail))
    }

    /// Records `kernel` over `set` with `args`, each a tuple: `(0, dat, access, how, map,
    /// index)` with `how` 0 direct, 1 map entry `index`, 2 the whole row, 3 a call per entry,
    /// 4 a local buffer, 5 a flattened buffer, 6 a flattened row; or `(1, global, access)`.
    /// Small integers rather than names: this runs on every call. `region` is one of
    /// `all`, `bottom`, `top`, `facets`. Returns whether the loop is still pending.
    #[pyo3(signature = (kernel, set, args, region="all"))]
    fn par_loop(
        &self,
        kernel: &PyKernel,
        set: &PySet,
        args: &Bound<'_, PyAny>,
        region: &str,
    ) -> PyResult<bool> {
        let (built, mats) = build_args(args)?;
        let region = match region {
            "all" => Region::All,
            "bottom" => Region::Bottom,
            "top" => Region::Top,
            "facets" => Region::InteriorFacets,
            other => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "unknown region {other}"
                )));
            }
        };
        if !mats.is_empty() {
            if region != Region::All {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "matrix loops run over every element",
                ));
            }
            // op2-la runs the loop now (the matrix is host data); PyOP2 assembled every
            // matrix at the end of each loop that had it.
            let assembled: Vec<op2::la::Mat> = mats.iter().map(|(_, m)| m.mat().clone()).collect();
            let mut all: Vec<op2::la::LoopArg> = built.into_iter().map(Into::into).collect();
            for (at, m) in mats {
                all.insert(at, m.into());
            }
            op2::la::par_loop(&self.rt, &kernel.kernel, &set.set, all).map_err(la::fail_la)?;
            for m in assembled {
                m.assemble();
            }
            return Ok(false);
        }
        let h = self
            .rt
            .par_loop_region(&kernel.kernel, &set.set, region, built)
            .map_err(fail)?;
        Ok(h.is_pending())
    }

    /// Runs every pending loop.
    fn flush(&self) -> PyResult<()> {
        self.rt.flush().map_err(fail)
    }

    /// For the overhead benchmark: seconds to record `calls` loops of `kernel` over `set` with
    /// `args` (as [`PyRuntime::par_loop`] takes them) from Rust, running what is pending every
    /// `batch` calls: the cost of the same loops with no Python in between.
    fn time_loop(
        &self,
        kernel: &PyKernel,
        set: &PySet,
        args: &Bound<'_, PyAny>,
        calls: usize,
        batch: usize,
    ) -> PyResult<f64> {
        let (built, mats) = build_args(args)?;
        if !mats.is_empty() {
            return Err(pyo3::exceptions::PyValueError::new_err(
                "time_loop takes no matrix args",
            ));
        }
        let start = std::time::Instant::now();
        for i in 0..calls {
            self.rt
                .par_loop(&kernel.kernel, &set.set, built.clone())
                .map_err(fail)?;
            if (i + 1) % batch.max(1) == 0 {
                self.rt.flush().map_err(fail)?;
            }
        }
        self.rt.flush().map_err(fail)?;
        Ok(start.elapsed().as_secs_f64())
    }

    /// Loops recorded and not yet run.
    fn pending(&self) -> usize {
        self.rt.pending_graph().count_kind(op2::NodeKind::Loop)
    }
}

/// Matrix args, with their places among a loop's args.
type MatArgs = Vec<(usize, op2::la::MatArg)>;

/// A loop's args from op2.py's tuples (see [`PyRuntime::par_loop`]): op2's args, and the
/// matrix args apart.
fn build_args(args: &Bound<'_, PyAny>) -> PyResult<(Vec<Arg>, MatArgs)> {
    let mut built: Vec<Arg> = Vec::new();
    // Matrix args, with their places among the args.
    let mut mats: MatArgs = Vec::new();
    for a in args.try_iter()? {
        let a = a?;
        let t = a.cast::<PyTuple>()?;
        // The numbering is op2.py's `_KIND_*` and `_DIRECT`..`_ROW_FLAT`.
        let kind: u8 = t.get_item(0)?.extract()?;
        let arg = match kind {
            0 => {
                let d = t.get_item(1)?;
                let d = d.cast::<PyDat>()?.get();
                let acc = access(t.get_item(2)?.extract()?)?;
                let how: u8 = t.get_item(3)?.extract()?;
                let map = t.get_item(4)?;
                let map = if map.is_none() {
                    None
                } else {
                    Some(map.cast::<PyMap>()?.get().map.clone())
                };
                let need = || {
                    map.as_ref()
                        .ok_or_else(|| pyo3::exceptions::PyValueError::new_err("a map is needed"))
                };
                each_dat!(&d.dat, d => match how {
                    0 => d.arg(acc),
                    1 => d.arg_via(need()?, t.get_item(5)?.extract()?, acc),
                    2 => d.arg_row(need()?, acc),
                    3 => d.arg_entries(need()?, acc),
                    4 => d.arg_buffer(need()?, acc),
                    5 => d.arg_buffer_flattened(need()?, acc),
                    6 => d.arg_row_flattened(need()?, acc),
                    other => {
                        return Err(pyo3::exceptions::PyValueError::new_err(format!(
                            "unknown arg form {other}"
                        )));
                    }
                })
            }
            1 => {
                let g = t.get_item(1)?;
                let g = g.cast::<PyGlobal>()?.get();
                let acc = access(t.get_item(2)?.extract()?)?;
                each_global!(&g.g, g => g.arg(acc))
            }
            2 => {
                mats.push((built.len() + mats.len(), la::mat_arg(t)?));
                continue;
            }
            3 => mixed::mixed_arg(t)?,
            4 => {
                mats.push((built.len() + mats.len(), mixed::mixed_mat_arg(t)?));
                continue;
            }
            other => {
                return Err(pyo3::exceptions::PyValueError::new_err(format!(
                    "unknown arg kind {other}"
                )));
            }
        };
        built.push(arg);
    }
    Ok((built, mats))
}

/// The module: `op2rs._op2`.
#[pymodule]
fn _op2(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyRuntime>()?;
    m.add_class::<PySet>()?;
    m.add_class::<PyMap>()?;
    m.add_class::<PyKernel>()?;
    m.add_class::<PyDat>()?;
    m.add_class::<PyGlobal>()?;
    m.add_class::<PyConst>()?;
    m.add_class::<Keep>()?;
    m.add_class::<la::PySparsity>()?;
    m.add_class::<la::PyMat>()?;
    m.add_class::<la::PySolverOptions>()?;
    #[cfg(feature = "mpi")]
    {
        m.add_class::<distributed::PyMeshBuilder>()?;
        m.add_class::<distributed::PyLocalMesh>()?;
        m.add_function(wrap_pyfunction!(distributed::finalize_mpi, m)?)?;
    }
    m.add("HAS_MPI", cfg!(feature = "mpi"))?;
    m.add_class::<mixed::PyMixedSet>()?;
    m.add_class::<mixed::PyMixedMap>()?;
    m.add_class::<mixed::PyMixedDat>()?;
    m.add_function(wrap_pyfunction!(mixed::decl_mixed_set, m)?)?;
    m.add_function(wrap_pyfunction!(mixed::decl_mixed_map, m)?)?;
    m.add_function(wrap_pyfunction!(mixed::mixed_sparsity, m)?)?;
    m.add_function(wrap_pyfunction!(mixed::solve_mixed, m)?)?;
    m.add("Op2Failure", m.py().get_type::<Op2Failure>())?;
    Ok(())
}
