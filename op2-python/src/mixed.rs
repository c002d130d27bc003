//! Mixed spaces for the `op2rs` package (PyOP2's `MixedSet`, `MixedMap`, `MixedDat`): handles
//! over op2's mixed sets, maps and Dats, and the loop arg that hands a kernel one pointer array
//! across the components (block matrices and mixed solves are in `la.rs`).

use crate::{AnyDat, Op2Failure, PyDat, PyMap, PySet, fail};
use op2::num_complex::{Complex32, Complex64};
use op2::{MixedDat, MixedMap, MixedSet};
use pyo3::prelude::*;

/// An ordered tuple of sets.
#[pyclass(name = "MixedSet", module = "op2rs._op2", frozen)]
pub(crate) struct PyMixedSet {
    pub(crate) set: MixedSet,
}

/// One map per component of a mixed set, from one iteration set.
#[pyclass(name = "MixedMap", module = "op2rs._op2", frozen)]
pub(crate) struct PyMixedMap {
    pub(crate) map: MixedMap,
}

/// One Dat per component of a mixed set, all of one type.
pub(crate) enum AnyMixedDat {
    F64(MixedDat<f64>),
    F32(MixedDat<f32>),
    I32(MixedDat<i32>),
    U32(MixedDat<u32>),
    I64(MixedDat<i64>),
    U64(MixedDat<u64>),
    C64(MixedDat<Complex32>),
    C128(MixedDat<Complex64>),
}

#[pyclass(name = "MixedDat", module = "op2rs._op2", frozen)]
pub(crate) struct PyMixedDat {
    pub(crate) dat: AnyMixedDat,
}

#[pymethods]
impl PyMixedDat {
    /// The mixed Dat of `dats` (one per component of `set`, in order, of one type).
    #[new]
    fn new(set: &PyMixedSet, dats: Vec<PyRef<'_, PyDat>>) -> PyResult<Self> {
        macro_rules! collect {
            ($v:ident) => {{
                let mut typed = Vec::with_capacity(dats.len());
                for d in &dats {
                    match &d.dat {
                        AnyDat::$v(x) => typed.push(x.clone()),
                        _ => {
                            return Err(Op2Failure::new_err((
                                "DataLength",
                                "the Dats of a MixedDat must hold one type".to_string(),
                            )));
                        }
                    }
                }
                AnyMixedDat::$v(MixedDat::from_dats(&set.set, typed).map_err(fail)?)
            }};
        }
        let first = dats.first().ok_or_else(|| {
            pyo3::exceptions::PyValueError::new_err("a MixedDat needs at least one Dat")
        })?;
        let dat = match &first.dat {
            AnyDat::F64(_) => collect!(F64),
            AnyDat::F32(_) => collect!(F32),
            AnyDat::I32(_) => collect!(I32),
            AnyDat::U32(_) => collect!(U32),
            AnyDat::I64(_) => collect!(I64),
            AnyDat::U64(_) => collect!(U64),
            AnyDat::C64(_) => collect!(C64),
            AnyDat::C128(_) => collect!(C128),
        };
        Ok(PyMixedDat { dat })
    }
    /// The loop argument reaching this mixed Dat with `access` through the mixed map `map`:
    /// one pointer array across the components ([`crate::ArgForm::Row`]), one local buffer of
    /// the element's values (`Buffer`, PyOP2 0.8.3-0.10's `mixed_dat(access,
    /// mixed_map[op2.i[0]])`) or one call per entry (`Entries`, 0.8.2's).
    #[pyo3(signature = (access, map, form=crate::ArgForm::Row))]
    fn arg(
        &self,
        access: crate::AccessMode,
        map: &PyMixedMap,
        form: crate::ArgForm,
    ) -> PyResult<crate::PyLoopArg> {
        let (acc, m) = (access.into(), &map.map);
        macro_rules! arg {
            ($d:expr) => {
                match form {
                    crate::ArgForm::Row => $d.arg_row(m, acc),
                    crate::ArgForm::Buffer => $d.arg_buffer(m, acc),
                    crate::ArgForm::Entries => $d.arg_entries(m, acc),
                    _ => {
                        return Err(pyo3::exceptions::PyValueError::new_err(
                            "a mixed Dat is reached as a row, a buffer or per entry",
                        ));
                    }
                }
            };
        }
        Ok(crate::PyLoopArg::data(match &self.dat {
            AnyMixedDat::F64(d) => arg!(d),
            AnyMixedDat::F32(d) => arg!(d),
            AnyMixedDat::I32(d) => arg!(d),
            AnyMixedDat::U32(d) => arg!(d),
            AnyMixedDat::I64(d) => arg!(d),
            AnyMixedDat::U64(d) => arg!(d),
            AnyMixedDat::C64(d) => arg!(d),
            AnyMixedDat::C128(d) => arg!(d),
        }))
    }
    /// The float64 values in the mixed set's flat numbering (a matrix of mixed spaces
    /// numbers its rows so): every component's, placed as the flat set places its elements.
    fn flat_values(&self) -> PyResult<Vec<f64>> {
        let flat = self.f64("the Dat")?.to_flat().map_err(fail)?;
        flat.to_vec().map_err(fail)
    }
}

impl PyMixedDat {
    pub(crate) fn f64(&self, what: &str) -> PyResult<&MixedDat<f64>> {
        match &self.dat {
            AnyMixedDat::F64(d) => Ok(d),
            _ => Err(Op2Failure::new_err((
                "DatType",
                format!("{what} must be a MixedDat of float64 values"),
            ))),
        }
    }
}

/// The native functions on mixed objects, as module functions (their classes stay plain).
#[pyfunction]
pub(crate) fn decl_mixed_set(
    rt: &crate::PyRuntime,
    sets: Vec<PyRef<'_, PySet>>,
    name: &str,
) -> PyResult<PyMixedSet> {
    let s: Vec<&op2::Set> = sets.iter().map(|s| &s.set).collect();
    Ok(PyMixedSet {
        set: rt.rt.decl_mixed_set(&s, name).map_err(fail)?,
    })
}

/// `map` (into component `c` of `to`) as a map into `to`'s flat set: the maps through which a
/// loop assembles block `(c, _)` (or `(_, c)`) of a matrix on mixed spaces.
#[pyfunction]
pub(crate) fn decl_component_map(
    rt: &crate::PyRuntime,
    to: &PyMixedSet,
    c: usize,
    map: &PyMap,
    name: &str,
) -> PyResult<PyMap> {
    Ok(PyMap {
        map: rt
            .rt
            .decl_component_map(&to.set, c, &map.map, name)
            .map_err(fail)?,
    })
}

/// The flat elements of component `c`'s first `n` elements (a mixed set's flat numbering
/// puts every component's core elements first: a component's elements need not be together).
#[pyfunction]
pub(crate) fn mixed_flat_indices(set: &PyMixedSet, c: usize, n: usize) -> PyResult<Vec<usize>> {
    (0..n)
        .map(|e| {
            set.set.flat_index(c, e).ok_or_else(|| {
                pyo3::exceptions::PyIndexError::new_err(format!(
                    "`{}` has no element {e} in component {c}",
                    set.set.name()
                ))
            })
        })
        .collect()
}

/// The mixed map's components as one map into the flat set of its mixed set.
#[pyfunction]
pub(crate) fn mixed_map_flat(map: &PyMixedMap) -> PyMap {
    PyMap {
        map: map.map.flat().clone(),
    }
}

#[pyfunction]
pub(crate) fn decl_mixed_map(
    rt: &crate::PyRuntime,
    to: &PyMixedSet,
    maps: Vec<PyRef<'_, PyMap>>,
    name: &str,
) -> PyResult<PyMixedMap> {
    let m: Vec<&op2::Map> = maps.iter().map(|m| &m.map).collect();
    Ok(PyMixedMap {
        map: rt.rt.decl_mixed_map(&to.set, &m, name).map_err(fail)?,
    })
}
