//! Sparsities, matrices and solves for the `op2rs` package (PyOP2's `Sparsity`, `Mat`,
//! `Solver`), over op2-la. Shapes, argument forms and PyOP2's solver parameters are parsed in
//! `op2rs/la.py`; here are the handles and the calls.

use crate::mixed::{PyMixedDat, PyMixedMap};
use crate::{AnyDat, Op2Failure, PyDat, PyMap};
use numpy::{PyArray1, PyArray2, PyArrayMethods};
use op2::la::{self, LaError, Method, Preconditioner, SolverOptions, Split};
use op2::num_complex::Complex64;
use pyo3::prelude::*;

/// An op2-la error as `Op2Failure(kind, message)`, like [`fail`]: op2's own errors keep their
/// kind, the others are named by their variant.
pub(crate) fn fail_la(e: LaError) -> PyErr {
    crate::failure(e.kind(), &e)
}

/// Row map entries and column map entries (of a boundary drop).
type Entries = (Vec<usize>, Vec<usize>);

/// The complex128 Dat a complex matrix operation needs.
fn c128_dat<'a>(d: &'a PyDat, what: &str) -> PyResult<&'a op2::Dat<Complex64>> {
    match &d.dat {
        AnyDat::C128(d) => Ok(d),
        _ => Err(Op2Failure::new_err((
            "DatType",
            format!("{what} must be a Dat of complex128 values"),
        ))),
    }
}

/// The f64 Dat a matrix operation needs (PyOP2's matrices hold doubles).
fn f64_dat<'a>(d: &'a PyDat, what: &str) -> PyResult<&'a op2::Dat<f64>> {
    match &d.dat {
        AnyDat::F64(d) => Ok(d),
        _ => Err(Op2Failure::new_err((
            "DatType",
            format!("{what} must be a Dat of float64 values"),
        ))),
    }
}

/// A matrix's pattern: `Sparsity(pairs, dims, name)` with `pairs` a list of (row map, column
/// map) and `dims` the (row, column) values per node.
#[pyclass(name = "Sparsity", module = "op2rs._op2", frozen)]
pub(crate) struct PySparsity {
    pub(crate) sp: la::Sparsity,
}

#[pymethods]
impl PySparsity {
    #[new]
    fn new(
        pairs: Vec<(PyRef<'_, PyMap>, PyRef<'_, PyMap>)>,
        dims: (usize, usize),
        name: &str,
    ) -> PyResult<Self> {
        let maps: Vec<(&op2::Map, &op2::Map)> =
            pairs.iter().map(|(r, c)| (&r.map, &c.map)).collect();
        Ok(PySparsity {
            sp: la::Sparsity::new(&maps, dims, name).map_err(fail_la)?,
        })
    }
    /// Stored entries.
    #[getter]
    fn nnz(&self) -> usize {
        self.sp.nnz()
    }
    /// Scalar rows and columns.
    #[getter]
    fn shape(&self) -> (usize, usize) {
        (self.sp.rows(), self.sp.cols())
    }
    /// CSR row offsets.
    fn rowptr<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i64>> {
        let v: Vec<i64> = self.sp.row_offsets().iter().map(|&o| o as i64).collect();
        PyArray1::from_vec(py, v)
    }
    /// CSR column indices.
    fn colidx<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i32>> {
        let v: Vec<i32> = self.sp.col_indices().iter().map(|&c| c as i32).collect();
        PyArray1::from_vec(py, v)
    }
    /// This pattern with the scalar entries (`rows[k]`, `cols[k]`) added: a pattern of its
    /// own, for one matrix that grows (`Mat.with_pattern`).
    fn with_entries(&self, rows: Vec<usize>, cols: Vec<usize>) -> PyResult<Self> {
        Ok(PySparsity {
            sp: self.sp.with_entries(&rows, &cols).map_err(fail_la)?,
        })
    }
    /// Stored entries in each scalar row.
    fn row_counts<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<i32>> {
        let v: Vec<i32> = self
            .sp
            .row_offsets()
            .windows(2)
            .map(|w| (w[1] - w[0]) as i32)
            .collect();
        PyArray1::from_vec(py, v)
    }
}

/// A matrix on a sparsity: `Mat(sparsity, name)`.
#[pyclass(name = "Mat", module = "op2rs._op2", frozen)]
pub(crate) struct PyMat {
    pub(crate) mat: la::Mat,
}

#[pymethods]
impl PyMat {
    /// A matrix of float64 values, or of complex128 ones (`complex`).
    #[new]
    #[pyo3(signature = (sparsity, name, complex=false))]
    fn new(sparsity: &PySparsity, name: &str, complex: bool) -> Self {
        PyMat {
            mat: if complex {
                la::Mat::new_complex(&sparsity.sp, name)
            } else {
                la::Mat::new(&sparsity.sp, name)
            },
        }
    }
    /// Whether it holds complex values.
    #[getter]
    fn complex(&self) -> bool {
        self.mat.is_complex()
    }
    /// Its pattern (the Sparsity's, or the one it grew to).
    #[getter]
    fn sparsity(&self) -> PySparsity {
        PySparsity {
            sp: self.mat.sparsity().clone(),
        }
    }
    /// A new matrix on `sparsity` (holding every entry of this one's) with this matrix's
    /// values; this one is left as it is.
    fn with_pattern(&self, sparsity: &PySparsity) -> PyResult<Self> {
        Ok(PyMat {
            mat: self.mat.with_pattern(&sparsity.sp).map_err(fail_la)?,
        })
    }
    /// The loop argument assembling into this matrix with `access` through `rows` and `cols`
    /// in `form`; `boundary`, `(bottom, top)` with each `None` or `(row map entries, column
    /// map entries)`, leaves those out of the bottom and top cells of extruded columns
    /// ([`la::MatArg::dropping_boundary`], PyOP2's `bt_masks`).
    #[pyo3(signature = (access, rows, cols, form, boundary=None))]
    fn arg(
        &self,
        access: crate::AccessMode,
        rows: &PyMap,
        cols: &PyMap,
        form: crate::MatForm,
        boundary: Option<(Option<Entries>, Option<Entries>)>,
    ) -> PyResult<crate::PyLoopArg> {
        let (acc, r, c) = (access.into(), &rows.map, &cols.map);
        let arg = match form {
            crate::MatForm::Element => self.mat.arg(acc, r, c),
            crate::MatForm::Entries => self.mat.arg_entries(acc, r, c),
            crate::MatForm::Flattened => self.mat.arg_flattened(acc, r, c),
            crate::MatForm::EntriesFlattened => self.mat.arg_entries_flattened(acc, r, c),
        };
        let arg = match boundary {
            Some((bottom, top)) => arg
                .dropping_boundary(la::BoundaryDrop { bottom, top })
                .map_err(fail_la)?,
            None => arg,
        };
        Ok(crate::PyLoopArg::mat(arg))
    }
    /// The loop argument assembling into this block matrix with `access` through the mixed
    /// maps `rows` and `cols`: the kernel gets the whole element matrix, the row maps' entries
    /// in turn down and the columns' across ([`crate::MatForm::Element`]), or one entry per
    /// call with its indices last (`Entries`, PyOP2 0.8.2's).
    #[pyo3(signature = (access, rows, cols, form=crate::MatForm::Element))]
    fn arg_mixed(
        &self,
        access: crate::AccessMode,
        rows: &PyMixedMap,
        cols: &PyMixedMap,
        form: crate::MatForm,
    ) -> PyResult<crate::PyLoopArg> {
        let (acc, r, c) = (access.into(), &rows.map, &cols.map);
        Ok(crate::PyLoopArg::mat(match form {
            crate::MatForm::Element => self.mat.arg_mixed(acc, r, c),
            crate::MatForm::Entries => self.mat.arg_mixed_entries(acc, r, c),
            _ => {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "a mixed matrix is assembled per element or per entry, not flattened",
                ));
            }
        }))
    }
    /// `y = A x` for a matrix of mixed spaces, `x` and `y` mixed Dats of float64.
    fn mult_mixed(&self, x: &PyMixedDat, y: &PyMixedDat) -> PyResult<()> {
        self.mat.assemble();
        self.mat
            .mult_mixed(x.f64("x")?, y.f64("y")?)
            .map_err(fail_la)
    }
    fn zero(&self) {
        self.mat.zero();
    }
    /// Finishes pending insertions.
    fn assemble(&self) {
        self.mat.assemble();
    }
    /// Zeroes scalar `rows` and puts `diagonal` on their diagonal (strong boundary conditions).
    fn zero_rows(&self, rows: Vec<usize>, diagonal: f64) -> PyResult<()> {
        self.mat.assemble();
        self.mat.zero_rows(&rows, diagonal).map_err(fail_la)
    }
    /// Adds (`add`) or sets each value of `values` on the diagonal entry of scalar row `rows[k]`.
    fn diagonal_entries(&self, rows: Vec<usize>, values: Vec<f64>, add: bool) -> PyResult<()> {
        self.mat.assemble();
        for (&r, &v) in rows.iter().zip(&values) {
            let c = [Complex64::new(v, 0.0)];
            let res = match (self.mat.is_complex(), add) {
                (false, true) => self.mat.add_values(&[r], &[r], &[v]),
                (false, false) => self.mat.set_values(&[r], &[r], &[v]),
                (true, true) => self.mat.add_complex_values(&[r], &[r], &c),
                (true, false) => self.mat.set_complex_values(&[r], &[r], &c),
            };
            res.map_err(fail_la)?;
        }
        self.mat.assemble();
        Ok(())
    }
    /// Adds (`add`) or inserts the dense row-major `values` at scalar `rows` and `cols`
    /// (PETSc's `MatSetValues`; every entry must be in the pattern). A complex matrix's values
    /// come as real and imaginary parts in turn.
    fn entries(
        &self,
        rows: Vec<usize>,
        cols: Vec<usize>,
        values: Vec<f64>,
        add: bool,
    ) -> PyResult<()> {
        self.mat.assemble();
        let res = if self.mat.is_complex() {
            if !values.len().is_multiple_of(2) {
                return Err(pyo3::exceptions::PyValueError::new_err(
                    "a complex matrix's values come as (real, imaginary) pairs",
                ));
            }
            let c: Vec<Complex64> = values
                .chunks(2)
                .map(|p| Complex64::new(p[0], p[1]))
                .collect();
            if add {
                self.mat.add_complex_values(&rows, &cols, &c)
            } else {
                self.mat.set_complex_values(&rows, &cols, &c)
            }
        } else if add {
            self.mat.add_values(&rows, &cols, &values)
        } else {
            self.mat.set_values(&rows, &cols, &values)
        };
        res.map_err(fail_la)?;
        self.mat.assemble();
        Ok(())
    }
    /// The stored values in CSR order (a copy; a complex matrix's real and imaginary parts in
    /// turn).
    fn array<'py>(&self, py: Python<'py>) -> Bound<'py, PyArray1<f64>> {
        self.mat.assemble();
        PyArray1::from_vec(py, self.mat.values())
    }
    /// The stored values in CSR order as a NumPy array over the matrix's own memory (what a
    /// PETSc handle made with `createAIJWithArrays` shares): writes through either are the
    /// matrix's. The array keeps the matrix alive.
    fn values_view<'py>(slf: Bound<'py, Self>) -> PyResult<Bound<'py, PyArray1<f64>>> {
        let (ptr, len) = {
            let m = &slf.get().mat;
            // A complex matrix's values are two f64 each.
            (
                m.values_ptr(),
                m.sparsity().nnz() * (1 + m.is_complex() as usize),
            )
        };
        // SAFETY: op2-la never moves a matrix's values (their length is the pattern's, fixed
        // at creation), and the array's base is this PyMat, which holds the matrix. Python
        // code runs on one thread at a time under the GIL, and every native call that writes
        // the values holds the GIL too.
        let arr = unsafe {
            let v = numpy::ndarray::ArrayView1::from_shape_ptr(len, ptr as *const f64);
            PyArray1::borrow_from_array(&v, slf.into_any())
        };
        Ok(arr)
    }
    /// The whole matrix, dense (a copy; a complex matrix's rows hold each column's real and
    /// imaginary parts in turn).
    fn dense<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyArray2<f64>>> {
        self.mat.assemble();
        let (r, c) = (
            self.mat.rows(),
            self.mat.cols() * (1 + self.mat.is_complex() as usize),
        );
        let flat: Vec<f64> = self.mat.to_dense().into_iter().flatten().collect();
        PyArray1::from_vec(py, flat).reshape([r, c])
    }
    /// `y = A x` with Dats of complex128 (a complex matrix's, or a real one's), in one process.
    fn mult_complex(&self, x: &PyDat, y: &PyDat) -> PyResult<()> {
        self.mat.assemble();
        self.mat
            .mult_complex(c128_dat(x, "x")?, c128_dat(y, "y")?)
            .map_err(fail_la)
    }
    /// `y = A x` with Dats of float64.
    fn mult(&self, x: &PyDat, y: &PyDat) -> PyResult<()> {
        self.mat.assemble();
        self.mat
            .mult(f64_dat(x, "x")?, f64_dat(y, "y")?)
            .map_err(fail_la)
    }
    /// Solves `A x = b` with op2-la's Krylov solvers and `options`. Returns (converged,
    /// reason, iterations, last residual norm).
    fn solve(
        &self,
        x: &PyDat,
        b: &PyDat,
        options: &PySolverOptions,
    ) -> PyResult<(bool, String, usize, f64)> {
        self.mat.assemble();
        let report = la::solve(
            &self.mat,
            f64_dat(b, "b")?,
            f64_dat(x, "x")?,
            &options.options,
        )
        .map_err(fail_la)?;
        Ok(summary(&report))
    }
}

/// A solve's outcome as the Python layer reads it: (converged, reason, iterations, last residual).
pub(crate) fn summary(r: &la::SolveReport) -> (bool, String, usize, f64) {
    (
        r.converged(),
        format!("{:?}", r.reason),
        r.iterations,
        r.residual(),
    )
}

/// A solve's settings from PyOP2's parameters: `method` is its `ksp_type` (`cg`, `gmres`,
/// `bcgs`/`bicgstab`), `pc` its `pc_type` (`none`, `jacobi`, `sor`, `ilu`, and for mixed
/// systems `fieldsplit` or `fieldsplit_multiplicative`).
#[pyclass(name = "SolverOptions", module = "op2rs._op2", frozen)]
pub(crate) struct PySolverOptions {
    pub(crate) options: SolverOptions,
}

#[pymethods]
impl PySolverOptions {
    #[new]
    #[allow(clippy::too_many_arguments)]
    fn new(
        method: &str,
        pc: &str,
        rtol: f64,
        atol: f64,
        dtol: f64,
        max_it: usize,
        restart: usize,
        nonzero_guess: bool,
    ) -> PyResult<Self> {
        let bad = |what: &str, v: &str| {
            Op2Failure::new_err((
                "SolverOption",
                format!("{what} {v:?} is not one op2rs has (see docs/14-python.md)"),
            ))
        };
        let method = match method {
            "cg" => Method::Cg,
            "gmres" => Method::Gmres { restart },
            "bcgs" | "bicgstab" => Method::BiCgStab,
            other => return Err(bad("ksp_type", other)),
        };
        let preconditioner = match pc {
            "none" => Preconditioner::None,
            "jacobi" | "diagonal" => Preconditioner::Jacobi,
            "sor" => Preconditioner::Sor { omega: 1.0 },
            "ilu" => Preconditioner::Ilu0,
            "fieldsplit" => Preconditioner::FieldSplit(Split::Additive),
            "fieldsplit_multiplicative" => Preconditioner::FieldSplit(Split::Multiplicative),
            other => return Err(bad("pc_type", other)),
        };
        let mut options = SolverOptions::new(method, preconditioner)
            .rtol(rtol)
            .atol(atol)
            .max_iterations(max_it);
        options.dtol = dtol;
        options.nonzero_initial_guess = nonzero_guess;
        Ok(PySolverOptions { options })
    }
}

/// The block sparsity of a row and a column mixed map, `dims` values per element down and
/// across in every component.
#[pyfunction]
#[pyo3(signature = (rows, cols, name, dims=(1, 1)))]
pub(crate) fn mixed_sparsity(
    rows: &PyMixedMap,
    cols: &PyMixedMap,
    name: &str,
    dims: (usize, usize),
) -> PyResult<PySparsity> {
    Ok(PySparsity {
        sp: la::Sparsity::mixed_blocks(&rows.map, &cols.map, dims, name).map_err(fail_la)?,
    })
}

/// Solves the mixed system `mat x = b` with `options`. Returns (converged, reason, iterations,
/// residual).
#[pyfunction]
pub(crate) fn solve_mixed(
    mat: &PyMat,
    x: &PyMixedDat,
    b: &PyMixedDat,
    options: &PySolverOptions,
) -> PyResult<(bool, String, usize, f64)> {
    mat.mat.assemble();
    let report =
        la::solve_mixed(&mat.mat, b.f64("b")?, x.f64("x")?, &options.options).map_err(fail_la)?;
    Ok(summary(&report))
}
