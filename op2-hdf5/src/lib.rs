//! OP2's HDF5 mesh files: sets, maps, dats and constants declared from, and written to, files laid
//! out as OP2-Common lays them out (its `op_decl_*_hdf5`, `op_write_hdf5`, `op_fetch_data_hdf5_file`
//! and `op_write_const_hdf5`), so files move between OP2 applications and op2-rs unchanged.
//!
//! The layout, one dataset per object, named by the object (a `/` in a name makes groups):
//!
//! | object   | dataset shape      | element type                 | attributes written        |
//! |----------|--------------------|------------------------------|---------------------------|
//! | set      | `(1,)`             | 32-bit int: the set's size   | none                      |
//! | map      | `(from size, dim)` | 32-bit int                   | `size`, `dim`, `type`     |
//! | dat      | `(set size, dim)`  | the dat's type               | `size`, `dim`, `type`     |
//! | constant | `(dim,)`           | the constant's type          | `dim`, `type`             |
//!
//! As OP2's readers do, reading trusts the dataset's own shape and type, not the attributes (files
//! written by other tools often lack them). A dat or map with dim 1 may also be a 1-D dataset.
//!
//! Across MPI ranks each rank reads only its rows ([`H5File::rows`] with a block range, the slices
//! `op2::mpi::Input::Slices` expects); writing is done by one rank after gathering, since Debian's
//! HDF5 is the serial build.

use op2_core::num_complex::{Complex32, Complex64};
use op2_core::{Const, DType, Dat, Map, Op2Error, Runtime, Scalar, Set};
use std::ops::Range;
use std::path::{Path, PathBuf};

/// What went wrong reading or writing an HDF5 file; every variant names the file, and the
/// dataset where there is one.
#[derive(Debug, thiserror::Error)]
pub enum Hdf5Error {
    /// The file could not be opened (missing, not HDF5, truncated).
    #[error("{file}: cannot open as HDF5: {reason}")]
    Open {
        /// The file.
        file: PathBuf,
        /// HDF5's message.
        reason: String,
    },
    /// The file could not be created.
    #[error("{file}: cannot create: {reason}")]
    Create {
        /// The file.
        file: PathBuf,
        /// HDF5's message.
        reason: String,
    },
    /// No dataset of that name.
    #[error("{file}: no dataset `{dataset}`")]
    Missing {
        /// The file.
        file: PathBuf,
        /// The dataset asked for.
        dataset: String,
    },
    /// The dataset's shape is not the one the declaration needs.
    #[error("{file}: dataset `{dataset}` has shape {found:?}, expected {expected}")]
    Shape {
        /// The file.
        file: PathBuf,
        /// The dataset.
        dataset: String,
        /// Its shape.
        found: Vec<usize>,
        /// What was needed.
        expected: String,
    },
    /// The dataset's element type cannot become the one asked for without losing values.
    #[error("{file}: dataset `{dataset}` holds {found}, which cannot be read as {expected}")]
    Type {
        /// The file.
        file: PathBuf,
        /// The dataset.
        dataset: String,
        /// Its element type.
        found: String,
        /// The type asked for.
        expected: String,
    },
    /// A value does not fit the type asked for, or a map value points outside its target set.
    #[error("{file}: dataset `{dataset}`: {reason}")]
    Value {
        /// The file.
        file: PathBuf,
        /// The dataset.
        dataset: String,
        /// Which value and why.
        reason: String,
    },
    /// HDF5 failed reading or writing a dataset (for example a file cut short).
    #[error("{file}: dataset `{dataset}`: {reason}")]
    Io {
        /// The file.
        file: PathBuf,
        /// The dataset.
        dataset: String,
        /// HDF5's message.
        reason: String,
    },
    /// op2-rs refused the declaration made from the dataset.
    #[error("{file}: dataset `{dataset}`: {source}")]
    Declare {
        /// The file.
        file: PathBuf,
        /// The dataset.
        dataset: String,
        /// Why op2 refused it.
        source: Op2Error,
    },
    /// The object cannot be written as asked (for example a Dat holding one rank's rows).
    #[error("{file}: cannot write `{dataset}`: {reason}")]
    Unwritable {
        /// The file.
        file: PathBuf,
        /// The dataset.
        dataset: String,
        /// Why.
        reason: String,
    },
}

/// Results of this crate.
pub type Result<T> = std::result::Result<T, Hdf5Error>;

/// The `type` attribute: a fixed-length string (OP2 writes 10 bytes for maps; 16 holds every name
/// we write, `unsigned long` included, and readers take any length).
type TypeName = hdf5::types::FixedAscii<16>;

/// An HDF5 file in OP2's layout.
pub struct H5File {
    /// The open file; taken when it is closed.
    file: Option<hdf5::File>,
    path: PathBuf,
    /// For a file [`H5File::create`] made: the temporary file it is written as, renamed over
    /// `path` when it is closed.
    pending: Option<op2_atomic_write::PendingFile>,
}

impl Drop for H5File {
    fn drop(&mut self) {
        if let Err(e) = self.finish() {
            eprintln!("op2-hdf5: {e}");
        }
    }
}

impl std::fmt::Debug for H5File {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("H5File").field("path", &self.path).finish()
    }
}

/// The element type of a dataset, in the words OP2 uses (`double`, `int`, ...).
fn type_words(t: &hdf5::types::TypeDescriptor) -> String {
    use hdf5::types::{FloatSize, IntSize, TypeDescriptor as T};
    match t {
        T::Float(FloatSize::U8) => "double".into(),
        T::Float(FloatSize::U4) => "float".into(),
        T::Integer(IntSize::U4) => "int".into(),
        T::Integer(IntSize::U8) => "long".into(),
        T::Unsigned(IntSize::U4) => "unsigned int".into(),
        T::Unsigned(IntSize::U8) => "unsigned long".into(),
        other => other.to_string(),
    }
}

/// OP2's name of a dat's element type (the value of its `type` attribute).
fn op2_type_name(d: DType) -> &'static str {
    match d {
        DType::F64 => "double",
        DType::F32 => "float",
        DType::I32 => "int",
        DType::U32 => "unsigned",
        DType::I64 => "long",
        DType::U64 => "unsigned long",
        DType::C64 => "float complex",
        DType::C128 => "double complex",
    }
}

impl H5File {
    /// Opens an existing file for reading (any number of processes may read it at once).
    pub fn open(path: impl AsRef<Path>) -> Result<H5File> {
        Self::open_with(path.as_ref(), false)
    }

    /// Opens an existing file for reading and adding or overwriting datasets
    /// (one process at a time).
    pub fn open_rw(path: impl AsRef<Path>) -> Result<H5File> {
        Self::open_with(path.as_ref(), true)
    }

    fn open_with(path: &Path, write: bool) -> Result<H5File> {
        let path = path.to_path_buf();
        if !path.exists() {
            return Err(Hdf5Error::Open {
                reason: "no such file".into(),
                file: path,
            });
        }
        let mode = if write {
            hdf5::file::OpenMode::ReadWrite
        } else {
            hdf5::file::OpenMode::Read
        };
        // A file this process still has open (through another library) keeps the locking flags
        // it was opened with.
        let file = unlocked()
            .open_as(&path, mode)
            .or_else(|first| hdf5::File::open_as(&path, mode).map_err(|_| first));
        let file = file.map_err(|e| Hdf5Error::Open {
            file: path.clone(),
            reason: e.to_string(),
        })?;
        close_on_exec(&file);
        Ok(H5File {
            file: Some(file),
            path,
            pending: None,
        })
    }

    /// Creates a file that replaces the one at `path`, if any, when it is closed
    /// ([`H5File::close`], or dropped): until then it is written as a temporary file beside
    /// `path`, so a crash or a full disk never leaves a half-written file (OP2's
    /// `op_write_hdf5` truncates the old file first). Readers see the new file once it is closed.
    pub fn create(path: impl AsRef<Path>) -> Result<H5File> {
        let path = path.as_ref().to_path_buf();
        let create_error = |reason: String| Hdf5Error::Create {
            file: path.clone(),
            reason,
        };
        let pending =
            op2_atomic_write::PendingFile::new(&path).map_err(|e| create_error(e.to_string()))?;
        let file = unlocked()
            .create(pending.temp_path())
            .map_err(|e| create_error(e.to_string()))?;
        close_on_exec(&file);
        Ok(H5File {
            file: Some(file),
            path,
            pending: Some(pending),
        })
    }

    /// Closes the file; one [`H5File::create`] made is synced and renamed over its path now
    /// (dropping the handle does the same, printing a failure instead of returning it).
    pub fn close(mut self) -> Result<()> {
        self.finish()
    }

    fn finish(&mut self) -> Result<()> {
        let Some(file) = self.file.take() else {
            return Ok(());
        };
        let closed = file.close().map_err(|e| self.io("/", e));
        match self.pending.take() {
            // A file that did not close cleanly is not installed: the old one stays.
            Some(pending) => {
                closed?;
                pending.commit().map_err(|e| Hdf5Error::Create {
                    file: self.path.clone(),
                    reason: e.to_string(),
                })
            }
            None => closed,
        }
    }

    fn h5(&self) -> &hdf5::File {
        self.file
            .as_ref()
            .expect("an H5File's file is taken only when it is closed")
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Whether a dataset (or group) of that name exists.
    pub fn contains(&self, name: &str) -> bool {
        // `link_exists` on a path whose parent group is missing is an HDF5 error: check each level.
        let levels = levels(name);
        !levels.is_empty() && levels.iter().all(|at| self.h5().link_exists(at))
    }

    fn dataset(&self, name: &str) -> Result<hdf5::Dataset> {
        if !self.contains(name) {
            return Err(self.missing(name));
        }
        self.h5().dataset(name).map_err(|_| self.missing(name))
    }

    fn missing(&self, name: &str) -> Hdf5Error {
        Hdf5Error::Missing {
            file: self.path.clone(),
            dataset: name.into(),
        }
    }

    fn io(&self, name: &str, e: impl std::fmt::Display) -> Hdf5Error {
        Hdf5Error::Io {
            file: self.path.clone(),
            dataset: name.into(),
            reason: e.to_string(),
        }
    }

    fn shape_error(&self, name: &str, found: Vec<usize>, expected: String) -> Hdf5Error {
        Hdf5Error::Shape {
            file: self.path.clone(),
            dataset: name.into(),
            found,
            expected,
        }
    }

    fn declare_error(&self, name: &str, source: Op2Error) -> Hdf5Error {
        Hdf5Error::Declare {
            file: self.path.clone(),
            dataset: name.into(),
            source,
        }
    }

    /// A dataset's rows and values per row: `(n, dim)` for a 2-D dataset, `(n, 1)` for a 1-D one.
    pub fn shape(&self, name: &str) -> Result<(usize, usize)> {
        self.shape_of(name, &self.dataset(name)?)
    }

    fn shape_of(&self, name: &str, ds: &hdf5::Dataset) -> Result<(usize, usize)> {
        let shape = ds.shape();
        match shape.as_slice() {
            // A scalar (h5py's `f["gam"] = 1.4`) is one row of one value.
            [] => Ok((1, 1)),
            [n] => Ok((*n, 1)),
            [n, d] => Ok((*n, *d)),
            _ => Err(self.shape_error(name, shape, "1 or 2 dimensions".into())),
        }
    }

    /// A set's size: the single integer held by the dataset named after the set
    /// (OP2's `op_decl_set_hdf5`).
    pub fn set_size(&self, name: &str) -> Result<usize> {
        let ds = self.dataset(name)?;
        let shape = ds.shape();
        if ds.size() != 1 || shape.len() > 1 {
            return Err(self.shape_error(name, shape, "(1,): one integer, the set's size".into()));
        }
        let t = self.descriptor(name, &ds)?;
        let v: Vec<i64> = self.read_integers(name, &ds, &t, None)?;
        usize::try_from(v[0]).map_err(|_| Hdf5Error::Value {
            file: self.path.clone(),
            dataset: name.into(),
            reason: format!("a set size cannot be negative ({})", v[0]),
        })
    }

    /// Rows `rows` of a dataset with `dim` values per row, as `T`: what a rank reads of a map or dat
    /// before partitioning. Integers convert to any integer type they fit (checked value by value);
    /// floats to floats at least as wide; anything else is a [`Hdf5Error::Type`].
    pub fn rows<T: Scalar>(&self, name: &str, rows: Range<usize>, dim: usize) -> Result<Vec<T>> {
        self.read_rows(name, &self.dataset(name)?, rows, dim)
    }

    /// [`H5File::rows`] of a dataset already open.
    fn read_rows<T: Scalar>(
        &self,
        name: &str,
        ds: &hdf5::Dataset,
        rows: Range<usize>,
        dim: usize,
    ) -> Result<Vec<T>> {
        let (n, d) = self.shape_of(name, ds)?;
        if d != dim {
            return Err(self.shape_error(name, ds.shape(), format!("{dim} value(s) per row")));
        }
        if rows.start > rows.end || rows.end > n {
            return Err(self.shape_error(
                name,
                ds.shape(),
                format!("at least {} rows (reading rows {rows:?})", rows.end),
            ));
        }
        let selection = Some(rows);
        let t = self.descriptor(name, ds)?;
        let unsigned_64 = matches!(
            t,
            hdf5::types::TypeDescriptor::Unsigned(hdf5::types::IntSize::U8)
        );
        if T::DTYPE.is_float() {
            self.read_floats(name, ds, &t, selection)
        } else if T::DTYPE.is_complex() {
            self.read_complex(name, ds, &t, selection)
        } else if T::DTYPE == DType::U64 && unsigned_64 {
            // Straight through: values past i64's range are valid u64s.
            Ok(bytemuck_vec(self.read_as::<u64>(name, ds, selection)?))
        } else {
            let wide: Vec<i64> = self.read_integers(name, ds, &t, selection)?;
            integers_as::<T>(wide).map_err(|v| Hdf5Error::Value {
                file: self.path.clone(),
                dataset: name.into(),
                reason: format!("{v} does not fit {}", op2_type_name(T::DTYPE)),
            })
        }
    }

    /// All rows of a dataset that must have exactly `n` rows of `dim` values.
    pub fn values<T: Scalar>(&self, name: &str, n: usize, dim: usize) -> Result<Vec<T>> {
        let ds = self.dataset(name)?;
        if self.shape_of(name, &ds)? != (n, dim) {
            return Err(self.shape_error(name, ds.shape(), format!("({n}, {dim})")));
        }
        self.read_rows(name, &ds, 0..n, dim)
    }

    fn descriptor(&self, name: &str, ds: &hdf5::Dataset) -> Result<hdf5::types::TypeDescriptor> {
        ds.dtype()
            .and_then(|t| t.to_descriptor())
            .map_err(|e| self.io(name, e))
    }

    fn type_error(&self, name: &str, found: &hdf5::types::TypeDescriptor, want: &str) -> Hdf5Error {
        Hdf5Error::Type {
            file: self.path.clone(),
            dataset: name.into(),
            found: type_words(found),
            expected: want.into(),
        }
    }

    /// Reads (rows of) an integer dataset as 64-bit integers.
    fn read_integers(
        &self,
        name: &str,
        ds: &hdf5::Dataset,
        t: &hdf5::types::TypeDescriptor,
        rows: Option<Range<usize>>,
    ) -> Result<Vec<i64>> {
        use hdf5::types::{IntSize, TypeDescriptor as T};
        match t {
            T::Integer(_) | T::Unsigned(IntSize::U1 | IntSize::U2 | IntSize::U4) => {
                self.read_as::<i64>(name, ds, rows)
            }
            T::Unsigned(IntSize::U8) => self
                .read_as::<u64>(name, ds, rows)?
                .into_iter()
                .map(|v| {
                    i64::try_from(v).map_err(|_| Hdf5Error::Value {
                        file: self.path.clone(),
                        dataset: name.into(),
                        reason: format!("{v} is too large"),
                    })
                })
                .collect(),
            other => Err(self.type_error(name, other, "integers")),
        }
    }

    /// Reads (rows of) a floating-point dataset as `T` (f32 or f64), refusing to narrow.
    fn read_floats<T: Scalar>(
        &self,
        name: &str,
        ds: &hdf5::Dataset,
        t: &hdf5::types::TypeDescriptor,
        rows: Option<Range<usize>>,
    ) -> Result<Vec<T>> {
        use hdf5::types::{FloatSize, TypeDescriptor as D};
        let fits = matches!(
            (t, T::DTYPE),
            (D::Float(_), DType::F64) | (D::Float(FloatSize::U4), DType::F32)
        );
        if !fits {
            return Err(self.type_error(name, t, op2_type_name(T::DTYPE)));
        }
        match T::DTYPE {
            DType::F64 => Ok(bytemuck_vec(self.read_as::<f64>(name, ds, rows)?)),
            _ => Ok(bytemuck_vec(self.read_as::<f32>(name, ds, rows)?)),
        }
    }

    /// Reads (rows of) a complex dataset (h5py's compound of floats `r` and `i`) as `T`
    /// (complex64 or complex128), refusing to narrow.
    fn read_complex<T: Scalar>(
        &self,
        name: &str,
        ds: &hdf5::Dataset,
        t: &hdf5::types::TypeDescriptor,
        rows: Option<Range<usize>>,
    ) -> Result<Vec<T>> {
        use hdf5::types::{FloatSize, TypeDescriptor as D};
        let parts: Vec<(&str, &D)> = match t {
            D::Compound(c) => c.fields.iter().map(|f| (f.name.as_str(), &f.ty)).collect(),
            _ => Vec::new(),
        };
        let fits = match parts.as_slice() {
            [("r", D::Float(r)), ("i", D::Float(i))] if r == i => {
                T::DTYPE == DType::C128 || *r == FloatSize::U4
            }
            _ => false,
        };
        if !fits {
            return Err(self.type_error(name, t, op2_type_name(T::DTYPE)));
        }
        match T::DTYPE {
            DType::C128 => Ok(bytemuck_vec(self.read_as::<Complex64>(name, ds, rows)?)),
            _ => Ok(bytemuck_vec(self.read_as::<Complex32>(name, ds, rows)?)),
        }
    }

    fn read_as<H: hdf5::H5Type + Copy>(
        &self,
        name: &str,
        ds: &hdf5::Dataset,
        rows: Option<Range<usize>>,
    ) -> Result<Vec<H>> {
        let read = match (rows, ds.ndim()) {
            (None, _) => ds.read_raw::<H>(),
            (Some(r), 0) if r.is_empty() => Ok(Vec::new()),
            (Some(_), 0) => ds.read_raw::<H>(),
            (Some(r), 1) => ds
                .read_slice_1d::<H, _>(r)
                .map(|a| a.iter().copied().collect()),
            (Some(r), _) => ds
                .read_slice_2d::<H, _>((r, ..))
                .map(|a| a.iter().copied().collect()),
        };
        read.map_err(|e| self.io(name, e))
    }

    /// Declares the set `name` on `rt` with the size the file holds (OP2's `op_decl_set_hdf5`).
    pub fn decl_set(&self, rt: &Runtime, name: &str) -> Result<Set> {
        let size = self.set_size(name)?;
        rt.decl_set(size, name)
            .map_err(|e| self.declare_error(name, e))
    }

    /// Declares the map `name` from `from` to `to` with `dim` entries per element; the dataset must
    /// have `from`'s size rows of `dim` integers, each inside `to` (OP2's `op_decl_map_hdf5`).
    pub fn decl_map(
        &self,
        rt: &Runtime,
        from: &Set,
        to: &Set,
        dim: usize,
        name: &str,
    ) -> Result<Map> {
        let values: Vec<i32> = self.values(name, from.size(), dim)?;
        rt.decl_map(from, to, dim, values, name)
            .map_err(|e| self.declare_error(name, e))
    }

    /// Declares the dat `name` on `set` with `dim` values per element of type `T`
    /// (OP2's `op_decl_dat_hdf5`).
    pub fn decl_dat<T: Scalar>(
        &self,
        rt: &Runtime,
        set: &Set,
        dim: usize,
        name: &str,
    ) -> Result<Dat<T>> {
        let values: Vec<T> = self.values(name, set.total_size(), dim)?;
        rt.decl_dat(set, dim, values, name)
            .map_err(|e| self.declare_error(name, e))
    }

    /// The values of the constant `name`, which must have `dim` of them (OP2's `op_get_const_hdf5`).
    pub fn const_values<T: Scalar>(&self, name: &str, dim: usize) -> Result<Vec<T>> {
        let ds = self.dataset(name)?;
        if ds.size() != dim || ds.ndim() > 2 {
            return Err(self.shape_error(name, ds.shape(), format!("({dim},)")));
        }
        let n = ds.shape().first().copied().unwrap_or(1);
        let per_row = ds.size() / n.max(1);
        self.read_rows::<T>(name, &ds, 0..n, per_row)
    }

    /// Declares the constant `name` with the `dim` values the file holds.
    pub fn decl_const<T: Scalar>(&self, rt: &Runtime, dim: usize, name: &str) -> Result<Const<T>> {
        let values = self.const_values::<T>(name, dim)?;
        rt.decl_const(dim, &values, name)
            .map_err(|e| self.declare_error(name, e))
    }

    /// Creates the groups a `/`-separated name needs.
    fn parent_groups(&self, name: &str) -> Result<()> {
        let mut levels = levels(name);
        levels.pop();
        for at in levels {
            if !self.h5().link_exists(&at) {
                self.h5().create_group(&at).map_err(|e| self.io(name, e))?;
            }
        }
        Ok(())
    }

    /// Writes `values` (`rows x dim`) as dataset `name`, replacing one of the same shape and type
    /// (as OP2's `op_fetch_data_hdf5_file` overwrites) and refusing one that differs.
    fn write_dataset<H: hdf5::H5Type>(
        &self,
        name: &str,
        shape: &[usize],
        values: &[H],
    ) -> Result<hdf5::Dataset> {
        let refuse = |reason: String| Hdf5Error::Unwritable {
            file: self.path.clone(),
            dataset: name.into(),
            reason,
        };
        if name.split('/').all(|p| p.is_empty()) {
            return Err(refuse("a dataset needs a name".into()));
        }
        let ds = if self.contains(name) {
            let ds = self.dataset(name)?;
            let t = self.descriptor(name, &ds)?;
            if ds.shape() != shape || t != H::type_descriptor() {
                return Err(refuse(format!(
                    "the file already has it with shape {:?} and type {}, not {shape:?} and {}",
                    ds.shape(),
                    type_words(&t),
                    type_words(&H::type_descriptor())
                )));
            }
            ds
        } else {
            self.parent_groups(name)?;
            self.h5()
                .new_dataset::<H>()
                .shape(shape)
                .create(name)
                .map_err(|e| self.io(name, e))?
        };
        ds.write_raw(values).map_err(|e| self.io(name, e))?;
        Ok(ds)
    }

    /// [`H5File::write_dataset`] for any op2 element type, as the HDF5 type of the same layout.
    fn write_scalars<T: Scalar>(
        &self,
        name: &str,
        shape: &[usize],
        values: &[T],
    ) -> Result<hdf5::Dataset> {
        // T is the type its DType names (Scalar is sealed), so each cast is to T itself.
        match T::DTYPE {
            DType::F64 => self.write_dataset::<f64>(name, shape, bytemuck::cast_slice(values)),
            DType::F32 => self.write_dataset::<f32>(name, shape, bytemuck::cast_slice(values)),
            DType::I32 => self.write_dataset::<i32>(name, shape, bytemuck::cast_slice(values)),
            DType::U32 => self.write_dataset::<u32>(name, shape, bytemuck::cast_slice(values)),
            DType::I64 => self.write_dataset::<i64>(name, shape, bytemuck::cast_slice(values)),
            DType::U64 => self.write_dataset::<u64>(name, shape, bytemuck::cast_slice(values)),
            // h5py's layout: a compound of `r` and `i`.
            DType::C64 => {
                self.write_dataset::<Complex32>(name, shape, bytemuck::cast_slice(values))
            }
            DType::C128 => {
                self.write_dataset::<Complex64>(name, shape, bytemuck::cast_slice(values))
            }
        }
    }

    /// Writes an integer attribute as OP2 does: a one-element array.
    fn int_attr(&self, ds: &hdf5::Dataset, dataset: &str, attr: &str, value: usize) -> Result<()> {
        let v = i32::try_from(value).map_err(|_| Hdf5Error::Unwritable {
            file: self.path.clone(),
            dataset: dataset.into(),
            reason: format!("attribute `{attr}` = {value} does not fit a 32-bit int"),
        })?;
        let a = match ds.attr(attr) {
            Ok(a) => a,
            Err(_) => ds
                .new_attr::<i32>()
                .shape(1)
                .create(attr)
                .map_err(|e| self.io(dataset, e))?,
        };
        a.write_raw(&[v]).map_err(|e| self.io(dataset, e))
    }

    /// The `type` attribute's value, made before any data is written so that a failure leaves
    /// no dataset without its attributes.
    fn type_name(&self, dataset: &str, type_name: &str) -> Result<TypeName> {
        TypeName::from_ascii(type_name).map_err(|e| self.io(dataset, e))
    }

    /// Writes the `type` attribute: a fixed-length string, as OP2's readers expect.
    fn type_attr(&self, ds: &hdf5::Dataset, dataset: &str, s: TypeName) -> Result<()> {
        let a = match ds.attr("type") {
            Ok(a) => a,
            Err(_) => ds
                .new_attr::<TypeName>()
                .create("type")
                .map_err(|e| self.io(dataset, e))?,
        };
        a.write_scalar(&s).map_err(|e| self.io(dataset, e))
    }

    /// Writes a set's size as OP2 does: a one-element integer dataset named after the set.
    pub fn write_set(&self, name: &str, size: usize) -> Result<()> {
        let v = i32::try_from(size).map_err(|_| Hdf5Error::Unwritable {
            file: self.path.clone(),
            dataset: name.into(),
            reason: format!("size {size} does not fit OP2's 32-bit int"),
        })?;
        self.write_dataset(name, &[1], &[v]).map(drop)
    }

    /// Writes a map's values (`from_size x dim`, row-major) with OP2's attributes.
    pub fn write_map_values(&self, name: &str, dim: usize, values: &[i32]) -> Result<()> {
        let rows = self.whole_rows(name, dim, values.len())?;
        let t = self.type_name(name, "int")?;
        let ds = self.write_dataset(name, &[rows, dim], values)?;
        self.int_attr(&ds, name, "size", rows)?;
        self.int_attr(&ds, name, "dim", dim)?;
        self.type_attr(&ds, name, t)
    }

    /// Writes a dat's values (`size x dim`, row-major) with OP2's attributes (`size` is the bytes
    /// per element, as OP2 records it).
    pub fn write_dat_values<T: Scalar>(&self, name: &str, dim: usize, values: &[T]) -> Result<()> {
        let rows = self.whole_rows(name, dim, values.len())?;
        let t = self.type_name(name, op2_type_name(T::DTYPE))?;
        let bytes = dim.saturating_mul(T::DTYPE.size());
        let ds = self.write_scalars(name, &[rows, dim], values)?;
        self.int_attr(&ds, name, "size", bytes)?;
        self.int_attr(&ds, name, "dim", dim)?;
        self.type_attr(&ds, name, t)
    }

    /// Writes a constant (OP2's `op_write_const_hdf5`).
    pub fn write_const<T: Scalar>(&self, name: &str, values: &[T]) -> Result<()> {
        if values.is_empty() {
            return Err(Hdf5Error::Unwritable {
                file: self.path.clone(),
                dataset: name.into(),
                reason: "a constant needs at least one value".into(),
            });
        }
        let t = self.type_name(name, op2_type_name(T::DTYPE))?;
        let ds = self.write_scalars(name, &[values.len()], values)?;
        self.int_attr(&ds, name, "dim", values.len())?;
        self.type_attr(&ds, name, t)
    }

    fn whole_rows(&self, name: &str, dim: usize, len: usize) -> Result<usize> {
        if dim == 0 || len % dim != 0 {
            return Err(Hdf5Error::Unwritable {
                file: self.path.clone(),
                dataset: name.into(),
                reason: format!("{len} values are not whole rows of {dim}"),
            });
        }
        Ok(len / dim)
    }

    /// Refuses sets split across ranks: their rows are one rank's, in local numbering (a rank
    /// without neighbours has no halo, so the communicator decides).
    fn whole(&self, rt: &Runtime, name: &str, set: &Set) -> Result<()> {
        if rt.communicator().size() > 1 || set.total_size() != set.size() || set.halo().is_some() {
            return Err(Hdf5Error::Unwritable {
                file: self.path.clone(),
                dataset: name.into(),
                reason: format!(
                    "set `{}` is one rank's part of a distributed set; gather the values \
                     (op2::mpi::LocalMesh::gather) and write them with write_dat_values",
                    set.name()
                ),
            });
        }
        Ok(())
    }

    /// Writes a map of a one-process mesh declared on `rt` (as `op_write_hdf5` writes maps).
    pub fn write_map(&self, rt: &Runtime, map: &Map) -> Result<()> {
        self.whole(rt, map.name(), map.from())?;
        // A map from an extruded set is written with every layer's rows, as OP2 would hold it.
        self.write_map_values(
            map.name(),
            map.arity(),
            &map.layered_values()[..map.from().size() * map.arity()],
        )
    }

    /// Writes a Dat of a one-process mesh declared on `rt`, after the loops that write it ran
    /// (OP2's `op_fetch_data_hdf5_file`). Across ranks: gather first, write from one rank with
    /// [`H5File::write_dat_values`].
    pub fn write_dat<T: Scalar>(&self, rt: &Runtime, dat: &Dat<T>) -> Result<()> {
        self.write_dat_as(rt, dat, dat.name())
    }

    /// [`H5File::write_dat`] under another dataset name (OP2's `op_fetch_data_hdf5_file_path`),
    /// for example one per time step.
    pub fn write_dat_as<T: Scalar>(&self, rt: &Runtime, dat: &Dat<T>, name: &str) -> Result<()> {
        self.whole(rt, name, dat.set())?;
        let values = dat.to_vec().map_err(|e| self.declare_error(name, e))?;
        self.write_dat_values(name, dat.dim(), &values)
    }

    /// Makes sure everything written is on disk.
    pub fn flush(&self) -> Result<()> {
        self.h5().flush().map_err(|e| self.io("/", e))
    }
}

/// The paths from the root down to `name` (`a/b/c`: `a`, `a/b`, `a/b/c`); empty parts dropped.
fn levels(name: &str) -> Vec<String> {
    let mut at = String::new();
    name.split('/')
        .filter(|p| !p.is_empty())
        .map(|part| {
            if !at.is_empty() {
                at.push('/');
            }
            at.push_str(part);
            at.clone()
        })
        .collect()
}

/// Opening without HDF5's file locks. HDF5 opens files without close-on-exec, so a process started
/// in the moment between HDF5 opening a file and [`close_on_exec`] marking it (the C compiler op2
/// runs for a kernel on another thread, a Python script) would inherit the descriptor and hold
/// its lock until it exits, locking this process out of a file it has long closed. Ranks reading
/// one file and a writer closing before the readers open need no lock.
fn unlocked() -> hdf5::file::FileBuilder {
    let mut b = hdf5::File::with_options();
    b.with_fapl(|fapl| fapl.file_locking(false));
    b
}

/// Marks an open file's descriptor close-on-exec. HDF5 opens files without it, so every process
/// started while a file is open (the C compiler op2 runs for kernels, a Python script) would
/// inherit the descriptor with HDF5's lock on it and keep the file locked after we close it.
fn close_on_exec(file: &hdf5::File) {
    use hdf5::file::FileDriver;
    let sec2 = file
        .access_plist()
        .is_ok_and(|p| matches!(p.driver(), FileDriver::Sec2));
    if !sec2 {
        // Other drivers' handles are not a bare descriptor.
        return;
    }
    hdf5::sync::sync(|| {
        let mut handle: *mut std::ffi::c_void = std::ptr::null_mut();
        // SAFETY: the file is open, so its id is valid, and HDF5 writes one pointer to `handle`.
        let status = unsafe {
            hdf5_sys::h5f::H5Fget_vfd_handle(file.id(), hdf5_sys::h5p::H5P_DEFAULT, &mut handle)
        };
        if status < 0 || handle.is_null() {
            return;
        }
        // SAFETY: for the sec2 driver the handle points at the `int` descriptor it reads and
        // writes through, alive while the file is open; fcntl only changes its flags.
        unsafe {
            let fd = *(handle as *const libc::c_int);
            let flags = libc::fcntl(fd, libc::F_GETFD);
            if flags >= 0 {
                libc::fcntl(fd, libc::F_SETFD, flags | libc::FD_CLOEXEC);
            }
        }
    });
}

/// 64-bit integers as the integer type `T`; the first value that does not fit is the error.
fn integers_as<T: Scalar>(wide: Vec<i64>) -> std::result::Result<Vec<T>, i64> {
    fn narrow<N: TryFrom<i64> + bytemuck::Pod, T: bytemuck::Pod>(
        wide: &[i64],
    ) -> std::result::Result<Vec<T>, i64> {
        let v = wide
            .iter()
            .map(|&x| N::try_from(x).map_err(|_| x))
            .collect::<std::result::Result<Vec<N>, i64>>()?;
        Ok(bytemuck_vec(v))
    }
    match T::DTYPE {
        DType::I32 => narrow::<i32, T>(&wide),
        DType::U32 => narrow::<u32, T>(&wide),
        DType::I64 => Ok(bytemuck_vec(wide)),
        DType::U64 => narrow::<u64, T>(&wide),
        DType::F64 | DType::F32 | DType::C64 | DType::C128 => {
            unreachable!("floats are read by read_floats, complex values by read_complex")
        }
    }
}

/// Reinterprets a vector of one plain type as another of the same size (f64 as T = f64).
fn bytemuck_vec<S: bytemuck::Pod, T: bytemuck::Pod>(v: Vec<S>) -> Vec<T> {
    bytemuck::cast_slice(&v).to_vec()
}
