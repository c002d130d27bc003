//! op2-python: the native half of the `op2rs` Python package. It wraps op2's runtime and data
//! handles for the package's pure-Python PyOP2 API (`python/op2rs/`), which parses PyOP2's
//! argument forms and raises PyOP2's exceptions; here are typed handles (loop arguments made
//! once as [`PyLoopArg`]s, access modes and forms as enums), loops, the error kinds the
//! Python layer maps, and NumPy views over op2's own memory.

use numpy::ndarray::ArrayView2;
use numpy::{Element, PyArray2, PyArrayMethods, PyReadonlyArray1};
use op2::num_complex::{Complex32, Complex64};
use op2::{Access, Arg, Kernel, Layers, Map, Op2Error, Region, Runtime, Scalar, Set, SetSizes};
use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
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
/// variant, [`Op2Error::kind`]) into PyOP2's exception of that meaning.
fn fail(e: Op2Error) -> PyErr {
    failure(e.kind(), &e)
}

/// An error of any of the crates as `Op2Failure(kind, message)`.
fn failure(kind: &'static str, e: &dyn std::fmt::Display) -> PyErr {
    Op2Failure::new_err((kind, e.to_string()))
}

/// Every error kind the native module can raise (the variants of op2's, op2-la's and, with
/// MPI, op2-mpi's errors): the Python layer's table of exceptions is checked against it.
#[pyfunction]
fn error_kinds() -> Vec<&'static str> {
    use strum::VariantNames;
    let mut kinds: Vec<&'static str> = Op2Error::VARIANTS.to_vec();
    kinds.extend(op2::la::LaError::VARIANTS);
    #[cfg(feature = "mpi")]
    kinds.extend(op2::mpi::MpiError::VARIANTS);
    kinds
}

/// An access mode, as the Python layer's `op2.READ` ... `op2.MAX` carry it.
#[pyclass(
    name = "AccessMode",
    module = "op2rs._op2",
    eq,
    eq_int,
    frozen,
    from_py_object
)]
#[derive(Clone, Copy, PartialEq, Eq)]
enum AccessMode {
    Read,
    Write,
    Rw,
    Inc,
    Min,
    Max,
}

impl From<AccessMode> for Access {
    fn from(a: AccessMode) -> Access {
        match a {
            AccessMode::Read => Access::Read,
            AccessMode::Write => Access::Write,
            AccessMode::Rw => Access::Rw,
            AccessMode::Inc => Access::Inc,
            AccessMode::Min => Access::Min,
            AccessMode::Max => Access::Max,
        }
    }
}

/// How a Dat arg reaches its kernel.
#[pyclass(
    name = "ArgForm",
    module = "op2rs._op2",
    eq,
    eq_int,
    frozen,
    from_py_object
)]
#[derive(Clone, Copy, PartialEq, Eq)]
enum ArgForm {
    /// The element's own row (no map).
    Direct,
    /// The row of one map entry (`map[k]`).
    Entry,
    /// An array of pointers to the rows of the whole map row (`map`).
    Row,
    /// One call per map entry, its index last (PyOP2 0.8.2's `map[op2.i[0]]`).
    Entries,
    /// The whole map row's values in a local buffer, node by node (0.8.3-0.10's `op2.i`).
    Buffer,
    /// The same buffer component by component (`flatten=True`).
    BufferFlattened,
    /// One pointer per value, component by component (`map, flatten=True`).
    RowFlattened,
    /// One call per value, component by component, its index last (PyOP2 0.8.2's
    /// `map[op2.i[0]], flatten=True`).
    EntriesFlattened,
}

/// `(rank, local element numbers)` lists, one per neighbour rank (a hand-built halo's sends or
/// receives).
type PerRank = Vec<(usize, Vec<u32>)>;

/// How a matrix arg hands the kernel its block.
#[pyclass(
    name = "MatForm",
    module = "op2rs._op2",
    eq,
    eq_int,
    frozen,
    from_py_object
)]
#[derive(Clone, Copy, PartialEq, Eq)]
enum MatForm {
    /// The element matrix, once per element.
    Element,
    /// One block per entry, the entry's indices last (PyOP2 0.8.2).
    Entries,
    /// The element matrix with rows and columns component by component (`flatten=True`).
    Flattened,
    /// One scalar entry of the flattened element matrix per call, its indices last (PyOP2
    /// 0.8.2's `flatten=True`).
    EntriesFlattened,
}

/// An operation of PyOP2's Dat arithmetic ([`op2::ArithOp`]).
#[pyclass(
    name = "Arith",
    module = "op2rs._op2",
    eq,
    eq_int,
    frozen,
    from_py_object
)]
#[derive(Clone, Copy, PartialEq, Eq)]
enum Arith {
    Add,
    Sub,
    Mul,
    Div,
}

impl From<Arith> for op2::ArithOp {
    fn from(a: Arith) -> op2::ArithOp {
        match a {
            Arith::Add => op2::ArithOp::Add,
            Arith::Sub => op2::ArithOp::Sub,
            Arith::Mul => op2::ArithOp::Mul,
            Arith::Div => op2::ArithOp::Div,
        }
    }
}

/// One argument of a loop, made once by the Python layer (a Dat's, Global's, mixed Dat's or
/// matrix's `arg`) and handed to every loop that uses it.
#[pyclass(name = "LoopArg", module = "op2rs._op2", frozen)]
struct PyLoopArg {
    arg: LoopArg,
}

/// What a [`PyLoopArg`] holds.
#[derive(Clone)]
enum LoopArg {
    /// An arg of op2 itself.
    Data(Arg),
    /// A matrix arg (op2-la runs such loops).
    Mat(op2::la::MatArg),
}

#[pymethods]
impl PyLoopArg {
    /// The same arg handing the kernel only component `c` of each of the Dat's rows
    /// ([`op2::Arg::component`], today's PyOP2's `DatView`).
    fn component(&self, c: usize) -> PyResult<PyLoopArg> {
        match &self.arg {
            LoopArg::Data(a) => Ok(PyLoopArg::data(a.clone().component(c))),
            LoopArg::Mat(_) => Err(pyo3::exceptions::PyTypeError::new_err(
                "a matrix arg has no components to view",
            )),
        }
    }
}

impl PyLoopArg {
    fn data(arg: Arg) -> Self {
        PyLoopArg {
            arg: LoopArg::Data(arg),
        }
    }
    fn mat(arg: op2::la::MatArg) -> Self {
        PyLoopArg {
            arg: LoopArg::Mat(arg),
        }
    }
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
    /// The kernel `name` of `code`, C++ when `cpp` (today's `cpp=True`), its loops compiled
    /// with `compile_args` and linked with `link_args` (today's `ldargs`); `host_effects`: it
    /// acts on host state outside its args (today's `PassthroughArg`), so its loops run element
    /// after element on one thread.
    #[new]
    #[pyo3(signature = (code, name, cpp=false, link_args=Vec::new(), compile_args=Vec::new(), host_effects=false))]
    fn new(
        code: &str,
        name: &str,
        cpp: bool,
        link_args: Vec<String>,
        compile_args: Vec<String>,
        host_effects: bool,
    ) -> PyResult<Self> {
        // PyOP2 never compared declared array bounds with arities (see the package's
        // README): its programs declare `double *x[2]` for maps of arity 4.
        let mut kernel = Kernel::without_bound_checks(name, code).map_err(fail)?;
        if cpp {
            kernel = kernel.cpp();
        }
        if !link_args.is_empty() {
            kernel = kernel.with_link_args(link_args).map_err(fail)?;
        }
        if !compile_args.is_empty() {
            kernel = kernel.with_compile_args(compile_args).map_err(fail)?;
        }
        if host_effects {
            kernel = kernel.with_host_effects();
        }
        Ok(PyKernel { kernel })
    }
    /// What the kernel's loops are linked with.
    #[getter]
    fn link_args(&self) -> Vec<String> {
        self.kernel.link_args().to_vec()
    }
    /// What the kernel's loops are compiled with besides the backend's flags.
    #[getter]
    fn compile_args(&self) -> Vec<String> {
        self.kernel.compile_args().to_vec()
    }
    /// Each parameter as written in the definition (None when macros hide it).
    fn param_texts(&self) -> Option<Vec<String>> {
        self.kernel
            .params()
            .map(|p| p.iter().map(|q| q.text.clone()).collect())
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
    C64(op2::Dat<Complex32>),
    C128(op2::Dat<Complex64>),
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
            AnyDat::C64($x) => $body,
            AnyDat::C128($x) => $body,
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
    /// The inner product with `other` (a Dat of the same type, set and dim), `other`
    /// conjugated where complex ([`op2::Dat::inner`]), summed over ranks.
    fn inner<'py>(&self, py: Python<'py>, other: &PyDat) -> PyResult<Bound<'py, PyAny>> {
        macro_rules! same {
            ($($v:ident),*) => {
                match (&self.dat, &other.dat) {
                    $((AnyDat::$v(a), AnyDat::$v(b)) => {
                        let v = a.inner(b).map_err(fail)?;
                        Ok(numpy::PyArray1::from_vec(py, vec![v]).into_any())
                    })*
                    _ => Err(pyo3::exceptions::PyTypeError::new_err(
                        "an inner product needs two Dats of one type",
                    )),
                }
            };
        }
        same!(F64, F32, I32, U32, I64, U64, C64, C128)
    }
    fn zero(&self) -> PyResult<()> {
        each_dat!(&self.dat, d => d.zero().map_err(fail))
    }
    /// PyOP2's `self op other` as C computes it ([`op2::Dat::c_arith`]): into `out`, or in place
    /// without it. `other` is a Dat of any type on the same set and dim.
    #[pyo3(signature = (op, other, out=None))]
    fn arith(&self, op: Arith, other: &PyDat, out: Option<&PyDat>) -> PyResult<()> {
        let op = op2::ArithOp::from(op);
        each_dat!(&self.dat, a => each_dat!(&other.dat, b => match out {
            None => a.c_arith_assign(op, b),
            Some(o) => each_dat!(&o.dat, r => a.c_arith(op, b, r)),
        }))
        .map_err(fail)
    }
    /// PyOP2's `self op s` for a scalar `value` of NumPy type `dtype` (as C computes it, see
    /// [`op2::Dat::c_arith_scalar`]): into `out`, or in place without it.
    #[pyo3(signature = (op, value, dtype, out=None))]
    fn arith_scalar(
        &self,
        op: Arith,
        value: &Bound<'_, PyAny>,
        dtype: &str,
        out: Option<&PyDat>,
    ) -> PyResult<()> {
        let op = op2::ArithOp::from(op);
        macro_rules! with {
            ($t:ty) => {{
                let s: $t = value.extract()?;
                each_dat!(&self.dat, a => match out {
                    None => a.c_arith_scalar_assign(op, s),
                    Some(o) => each_dat!(&o.dat, r => a.c_arith_scalar(op, s, r)),
                })
                .map_err(fail)
            }};
        }
        match dtype {
            "float64" => with!(f64),
            "float32" => with!(f32),
            "int32" => with!(i32),
            "uint32" => with!(u32),
            "int64" => with!(i64),
            "uint64" => with!(u64),
            "complex64" => with!(Complex32),
            "complex128" => with!(Complex64),
            other => Err(pyo3::exceptions::PyTypeError::new_err(format!(
                "a scalar of type {other} is not one op2-rs holds"
            ))),
        }
    }
    /// Copies the values into `other` (PyOP2's `Dat.copy`), converting them to its type as C
    /// does when it holds another.
    fn copy(&self, other: &PyDat) -> PyResult<()> {
        macro_rules! same {
            ($($v:ident),*) => {
                match (&self.dat, &other.dat) {
                    $((AnyDat::$v(a), AnyDat::$v(b)) => return a.copy(b).map_err(fail),)*
                    _ => {}
                }
            };
        }
        same!(F64, F32, I32, U32, I64, U64, C64, C128);
        each_dat!(&self.dat, a => each_dat!(&other.dat, b => a.c_arith_scalar(op2::ArithOp::Add, 0i32, b)))
            .map_err(fail)
    }
    /// The loop argument reaching this Dat with `access` in `form`, through `map` (entry
    /// `index` for [`ArgForm::Entry`]) unless direct.
    #[pyo3(signature = (access, form, map=None, index=0))]
    fn arg(
        &self,
        access: AccessMode,
        form: ArgForm,
        map: Option<&PyMap>,
        index: usize,
    ) -> PyResult<PyLoopArg> {
        let acc = Access::from(access);
        if form == ArgForm::Direct {
            return Ok(PyLoopArg::data(each_dat!(&self.dat, d => d.arg(acc))));
        }
        let m = &map
            .ok_or_else(|| pyo3::exceptions::PyValueError::new_err("this form needs a map"))?
            .map;
        Ok(PyLoopArg::data(each_dat!(&self.dat, d => match form {
            ArgForm::Direct => unreachable!("handled above"),
            ArgForm::Entry => d.arg_via(m, index, acc),
            ArgForm::Row => d.arg_row(m, acc),
            ArgForm::Entries => d.arg_entries(m, acc),
            ArgForm::Buffer => d.arg_buffer(m, acc),
            ArgForm::BufferFlattened => d.arg_buffer_flattened(m, acc),
            ArgForm::RowFlattened => d.arg_row_flattened(m, acc),
            ArgForm::EntriesFlattened => d.arg_entries_flattened(m, acc),
        })))
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
    C64(op2::Global<Complex32>),
    C128(op2::Global<Complex64>),
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
            AnyGlobal::C64($x) => $body,
            AnyGlobal::C128($x) => $body,
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
    /// The loop argument reaching this Global with `access`.
    fn arg(&self, access: AccessMode) -> PyLoopArg {
        PyLoopArg::data(each_global!(&self.g, g => g.arg(access.into())))
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
    C64(op2::Const<Complex32>),
    C128(op2::Const<Complex64>),
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
            AnyConst::C64($x) => $body,
            AnyConst::C128($x) => $body,
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
            "complex64" => $make!(Complex32, C64),
            "complex128" => $make!(Complex64, C128),
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

    /// A set of section sizes (core, owned, exec halo, non-exec halo); with `exchanges`
    /// (`(sends, receives)`, each a list of `(rank, elements)`, PyOP2's hand-built `Halo`)
    /// its halo, agreed with the other ranks (collective).
    #[pyo3(signature = (sizes, name, exchanges=None))]
    fn decl_set(
        &self,
        sizes: (usize, usize, usize, usize),
        name: &str,
        exchanges: Option<(PerRank, PerRank)>,
    ) -> PyResult<PySet> {
        let s = SetSizes {
            core: sizes.0,
            owned: sizes.1,
            exec_halo: sizes.2,
            nonexec_halo: sizes.3,
        };
        let set = match exchanges {
            Some((sends, receives)) => {
                self.rt
                    .decl_set_with_exchanges(s, op2::ExchangeLists { sends, receives }, name)
            }
            None => self.rt.decl_set_sections(s, name),
        };
        Ok(PySet {
            set: set.map_err(fail)?,
        })
    }

    /// An extruded set over `base`: `layers` node layers in every column (an int), or each
    /// column's own (a list, one per element of `base`, halos included).
    fn decl_extruded_set(
        &self,
        base: &PySet,
        layers: &Bound<'_, PyAny>,
        name: &str,
    ) -> PyResult<PySet> {
        let layers = match layers.extract::<usize>() {
            Ok(n) => Layers::Uniform(n),
            Err(_) => Layers::PerColumn(layers.extract::<Vec<usize>>()?),
        };
        Ok(PySet {
            set: self
                .rt
                .decl_extruded_set(&base.set, layers, name)
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

    /// A map: `offsets` for one from an extruded set; `gaps` for one whose negative values
    /// mean "no element" (matrices only; not with `offsets`).
    #[pyo3(signature = (from, to, arity, data, name, offsets=None, gaps=false))]
    #[allow(clippy::too_many_arguments)]
    fn decl_map(
        &self,
        from: &PySet,
        to: &PySet,
        arity: usize,
        data: &Bound<'_, PyAny>,
        name: &str,
        offsets: Option<Vec<i32>>,
        gaps: bool,
    ) -> PyResult<PyMap> {
        let v: Vec<i32> = values(data)?;
        let map = match (offsets, gaps) {
            (Some(_), true) => {
                return Err(pyo3::exceptions::PyNotImplementedError::new_err(format!(
                    "map `{name}`: an extruded map with gaps (negative values)"
                )));
            }
            (Some(o), false) => self
                .rt
                .decl_extruded_map(&from.set, &to.set, arity, v, o, name),
            (None, true) => self
                .rt
                .decl_map_with_gaps(&from.set, &to.set, arity, v, name),
            (None, false) => self.rt.decl_map(&from.set, &to.set, arity, v, name),
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

    /// Records `kernel` over `set` with `args` (each made once by a carrier's `arg`). `region`
    /// is one of `all`, `bottom`, `top`, `facets`; `layer`: the kernel's last parameter takes
    /// each element's layer. Returns whether the loop is still pending.
    #[pyo3(signature = (kernel, set, args, region="all", layer=false))]
    fn par_loop(
        &self,
        kernel: &PyKernel,
        set: &PySet,
        args: Vec<PyRef<'_, PyLoopArg>>,
        region: &str,
        layer: bool,
    ) -> PyResult<bool> {
        let (built, mats) = build_args(&args);
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
            if layer {
                return Err(pyo3::exceptions::PyNotImplementedError::new_err(
                    "the layer is not passed to matrix loops",
                ));
            }
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
        let h = if layer {
            self.rt
                .par_loop_with_layer(&kernel.kernel, &set.set, region, built)
        } else {
            self.rt
                .par_loop_region(&kernel.kernel, &set.set, region, built)
        }
        .map_err(fail)?;
        Ok(h.is_pending())
    }

    /// Runs every pending loop.
    fn flush(&self) -> PyResult<()> {
        self.rt.flush().map_err(fail)
    }

    /// Brings `dat`'s halo rows up to date from their owners (every rank calls it together);
    /// nothing in one process or for a set without a halo.
    fn refresh_halo(&self, dat: &PyDat) -> PyResult<()> {
        each_dat!(&dat.dat, d => self.rt.refresh_halo(d).map_err(fail))
    }

    /// For the overhead benchmark: seconds to record `calls` loops of `kernel` over `set` with
    /// `args` (as [`PyRuntime::par_loop`] takes them) from Rust, running what is pending every
    /// `batch` calls: the cost of the same loops with no Python in between.
    fn time_loop(
        &self,
        kernel: &PyKernel,
        set: &PySet,
        args: Vec<PyRef<'_, PyLoopArg>>,
        calls: usize,
        batch: usize,
    ) -> PyResult<f64> {
        let (built, mats) = build_args(&args);
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

/// A loop's args as op2 and op2-la take them: op2's args, and the matrix args apart with their
/// places among the args.
fn build_args(args: &[PyRef<'_, PyLoopArg>]) -> (Vec<Arg>, MatArgs) {
    let mut built: Vec<Arg> = Vec::with_capacity(args.len());
    let mut mats: MatArgs = Vec::new();
    for a in args {
        match &a.arg {
            LoopArg::Data(arg) => built.push(arg.clone()),
            LoopArg::Mat(m) => mats.push((built.len() + mats.len(), m.clone())),
        }
    }
    (built, mats)
}

/// The module: `op2rs._op2`.
#[pymodule]
fn _op2(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyRuntime>()?;
    m.add_class::<AccessMode>()?;
    m.add_class::<ArgForm>()?;
    m.add_class::<MatForm>()?;
    m.add_class::<Arith>()?;
    m.add_class::<PyLoopArg>()?;
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
        m.add_function(wrap_pyfunction!(distributed::mpi_is_ours, m)?)?;
    }
    m.add("HAS_MPI", cfg!(feature = "mpi"))?;
    m.add_class::<mixed::PyMixedSet>()?;
    m.add_class::<mixed::PyMixedMap>()?;
    m.add_class::<mixed::PyMixedDat>()?;
    m.add_function(wrap_pyfunction!(mixed::decl_mixed_set, m)?)?;
    m.add_function(wrap_pyfunction!(mixed::decl_mixed_map, m)?)?;
    m.add_function(wrap_pyfunction!(mixed::decl_component_map, m)?)?;
    m.add_function(wrap_pyfunction!(mixed::mixed_map_flat, m)?)?;
    m.add_function(wrap_pyfunction!(mixed::mixed_flat_indices, m)?)?;
    m.add_function(wrap_pyfunction!(la::mixed_sparsity, m)?)?;
    m.add_function(wrap_pyfunction!(la::solve_mixed, m)?)?;
    m.add("Op2Failure", m.py().get_type::<Op2Failure>())?;
    m.add_function(wrap_pyfunction!(error_kinds, m)?)?;
    Ok(())
}
