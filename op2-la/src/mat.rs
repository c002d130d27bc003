//! Matrices on a sparsity (PyOP2's `Mat`): CSR values over the pattern, filled by assembly loops or
//! by hand, with PETSc's life cycle (insert or add, then `assemble`), Dirichlet rows, and the
//! matrix-vector product on Dats.

use crate::csr::{CsrRef, check_len};
use crate::error::{LaError, Result};
use crate::sparsity::Sparsity;
use op2_core::num_complex::Complex64;
use op2_core::{Access, Dat, Map, Scalar};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};

/// A sparse matrix with the pattern of a [`Sparsity`], values in compressed sparse rows (scalar
/// rows; block sizes above 1 store each node's block row by row). Cheap to clone: clones share the
/// matrix.
///
/// Life cycle as in PETSc: entries are added (`INC` loops, [`Mat::add_values`]) or inserted
/// (`WRITE` loops, [`Mat::set_values`]), never both without [`Mat::assemble`] in between; products,
/// solves and [`Mat::zero_rows`] need an assembled matrix.
///
/// A complex matrix ([`Mat::new_complex`]) holds `Complex64` values: its loops' kernels get
/// `double _Complex` element blocks, [`Mat::add_complex_values`] and [`Mat::complex_values`]
/// write and read it, [`Mat::mult_complex`] multiplies complex Dats in one process. Its real
/// accessors ([`Mat::values`], [`Mat::values_ptr`], [`Mat::to_dense`]) give each value's real
/// and imaginary parts in turn; the solvers, preconditioners and PETSc's are real and refuse it
/// ([`LaError::Complex`]).
#[derive(Clone)]
pub struct Mat(pub(crate) Arc<MatData>);

pub(crate) struct MatData {
    pub(crate) name: String,
    pub(crate) sparsity: Sparsity,
    /// Complex values: each stored as two f64, real part first.
    pub(crate) complex: bool,
    pub(crate) state: Mutex<MatState>,
}

/// Pending insertions since the last assembly.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Pending {
    Nothing,
    Add,
    Insert,
}

impl Pending {
    fn describe(self) -> &'static str {
        match self {
            Pending::Nothing => "nothing",
            Pending::Add => "adding values",
            Pending::Insert => "inserting values",
        }
    }
}

pub(crate) struct MatState {
    /// The stored values in CSR order; a complex matrix's as real and imaginary parts in turn.
    pub(crate) values: Vec<f64>,
    pub(crate) pending: Pending,
    pub(crate) assembled: bool,
    /// Where each element's block goes, per (iteration set, row map, column map).
    /// Assembly plans by (set, row map, column map, component-major block).
    pub(crate) plans: HashMap<PlanKey, Arc<crate::plan::AssemblyPlan>>,
    /// Per-element staging for loops, per (iteration set, arg position).
    pub(crate) blocks: HashMap<(u64, usize), Staging>,
    /// The stagings an assembly left all zero (so the next loop needs no zeroing pass).
    pub(crate) clean: std::collections::HashSet<(u64, usize)>,
}

/// The per-element blocks a loop's kernel writes for a matrix: of its scalar type.
#[derive(Clone)]
pub(crate) enum Staging {
    Real(Dat<f64>),
    Complex(Dat<Complex64>),
}

impl Staging {
    /// Values per element.
    pub(crate) fn dim(&self) -> usize {
        match self {
            Staging::Real(d) => d.dim(),
            Staging::Complex(d) => d.dim(),
        }
    }

    /// The loop argument reaching it with `access`.
    pub(crate) fn arg(&self, access: Access) -> op2_core::Arg {
        match self {
            Staging::Real(d) => d.arg(access),
            Staging::Complex(d) => d.arg(access),
        }
    }
}

/// A Mat argument of an assembly loop (see [`crate::par_loop()`]): the kernel receives the element's
/// dense block, `(row arity x row block size)` rows by `(column arity x column block size)` columns,
/// row-major and zeroed, as a `double *` (or `double A[R*C]`) parameter; entry `(i*bs + a, j*bs + b)`
/// belongs to row node `row_map[e][i]` component `a`, column node `col_map[e][j]` component `b`.
#[derive(Clone)]
pub struct MatArg {
    pub(crate) mat: Mat,
    pub(crate) access: Access,
    pub(crate) row_map: Map,
    pub(crate) col_map: Map,
    /// Whether the kernel computes one block per call (a local iteration space).
    pub(crate) per_entry: bool,
    /// Whether the element block's rows and columns go component by component
    /// ([`Mat::arg_flattened`]) rather than node by node.
    pub(crate) component_major: bool,
    /// Entries left out in the bottom and top cells of extruded columns
    /// ([`MatArg::dropping_boundary`]).
    pub(crate) boundary: Option<Arc<BoundaryDrop>>,
}

/// Which map entries' rows and columns a loop over an extruded set leaves out of its bottom
/// and top cells (PyOP2's `bt_masks` with `_extruded_bcs`): `(row map entries, column map
/// entries)` per end, `None` for an end kept whole.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct BoundaryDrop {
    /// Dropped in the bottom cell of every column.
    pub bottom: Option<(Vec<usize>, Vec<usize>)>,
    /// Dropped in the top cell of every column.
    pub top: Option<(Vec<usize>, Vec<usize>)>,
}

/// What an assembly plan depends on: the set, the row and column maps, a component-major
/// block, and the entries dropped at extruded boundaries.
pub(crate) type PlanKey = (u64, u64, u64, bool, Option<Arc<BoundaryDrop>>);

impl MatArg {
    /// The matrix it assembles into.
    pub fn mat(&self) -> &Mat {
        &self.mat
    }

    /// The same arg, with the element block's rows of row map entries `bottom.0` and its
    /// columns of column map entries `bottom.1` left out in the bottom cell of every column of
    /// an extruded iteration set, and likewise `top` in the top cell (PyOP2's boundary masks:
    /// the kernel still computes them; the matrix gets nothing there, and its caller puts what
    /// it wants on those rows, as a Dirichlet condition). Entries past the arities, or a row
    /// map not from an extruded set, are refused.
    pub fn dropping_boundary(mut self, drop: BoundaryDrop) -> Result<MatArg> {
        let bad = |reason: String| LaError::BoundaryDrop {
            mat: self.mat.0.name.clone(),
            reason,
        };
        if self.row_map.from().extrusion().is_none() {
            return Err(bad(format!(
                "row map `{}` goes from `{}`, which is not extruded",
                self.row_map.name(),
                self.row_map.from().name()
            )));
        }
        for (rows, cols) in drop.bottom.iter().chain(&drop.top) {
            for (entries, map) in [(rows, &self.row_map), (cols, &self.col_map)] {
                if let Some(&k) = entries.iter().find(|&&k| k >= map.arity()) {
                    return Err(bad(format!(
                        "entry {k} of map `{}`, whose arity is {}",
                        map.name(),
                        map.arity()
                    )));
                }
            }
        }
        self.boundary = (drop != BoundaryDrop::default()).then(|| Arc::new(drop));
        Ok(self)
    }

    /// Rows and columns of the element block.
    pub fn block_shape(&self) -> (usize, usize) {
        let (br, bc) = self.mat.0.sparsity.dims();
        (self.row_map.arity() * br, self.col_map.arity() * bc)
    }
}

impl fmt::Debug for MatArg {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "MatArg({:?}, {:?}, {:?}, {:?})",
            self.mat.0.name,
            self.access,
            self.row_map.name(),
            self.col_map.name()
        )
    }
}

impl Mat {
    /// A matrix on `sparsity`, all entries zero, not yet assembled.
    pub fn new(sparsity: &Sparsity, name: &str) -> Mat {
        Mat::of_kind(sparsity, name, false)
    }

    /// A matrix of complex values on `sparsity` (PyOP2's `Mat(sparsity, dtype=complex128)`), all
    /// entries zero, not yet assembled.
    pub fn new_complex(sparsity: &Sparsity, name: &str) -> Mat {
        Mat::of_kind(sparsity, name, true)
    }

    fn of_kind(sparsity: &Sparsity, name: &str, complex: bool) -> Mat {
        Mat(Arc::new(MatData {
            name: name.into(),
            sparsity: sparsity.clone(),
            complex,
            state: Mutex::new(MatState {
                values: vec![0.0; sparsity.nnz() * (1 + complex as usize)],
                pending: Pending::Nothing,
                assembled: false,
                plans: HashMap::new(),
                blocks: HashMap::new(),
                clean: Default::default(),
            }),
        }))
    }

    /// A new matrix on `sparsity`, a pattern holding every entry of this one's (one
    /// [`Sparsity::with_entries`] made from it, say), with this matrix's values at their entries
    /// and zero at the others, assembled. This matrix is assembled first and left as it is (its
    /// values never move, so views of them stay valid). A pattern of another shape, or missing
    /// one of this matrix's entries, is [`LaError::NotInPattern`] (or [`LaError::Index`]).
    pub fn with_pattern(&self, sparsity: &Sparsity) -> Result<Mat> {
        self.assemble();
        let old = &self.0.sparsity;
        for (what, new, had) in [
            ("row count", sparsity.rows(), old.rows()),
            ("column count", sparsity.cols(), old.cols()),
        ] {
            if new != had {
                return Err(LaError::Index {
                    mat: self.0.name.clone(),
                    what,
                    index: new,
                    size: had,
                });
            }
        }
        let width = 1 + self.0.complex as usize;
        let grown = Mat::of_kind(sparsity, &self.0.name, self.0.complex);
        {
            let from = self.lock();
            let mut to = grown.lock();
            for r in 0..old.rows() {
                for (k, &c) in old.row(r).iter().enumerate() {
                    let at =
                        sparsity
                            .position(r, c as usize)
                            .ok_or_else(|| LaError::NotInPattern {
                                mat: self.0.name.clone(),
                                row: r,
                                col: c as usize,
                            })?;
                    let src = (old.row_offsets()[r] + k) * width;
                    to.values[at * width..(at + 1) * width]
                        .copy_from_slice(&from.values[src..src + width]);
                }
            }
            to.assembled = true;
        }
        Ok(grown)
    }

    pub(crate) fn lock(&self) -> MutexGuard<'_, MatState> {
        // A panic while holding the lock leaves plain numbers behind; keep using them.
        self.0.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.0.name
    }

    /// Whether it holds complex values ([`Mat::new_complex`]).
    pub fn is_complex(&self) -> bool {
        self.0.complex
    }

    /// f64 per stored value: 2 for a complex matrix.
    pub(crate) fn width(&self) -> usize {
        1 + self.0.complex as usize
    }

    fn kind(complex: bool) -> &'static str {
        if complex { "complex" } else { "real" }
    }

    /// Errors unless the matrix holds `complex` values, for `operation`.
    fn holds(&self, complex: bool, operation: &'static str) -> Result<()> {
        if self.0.complex != complex {
            return Err(LaError::ScalarKind {
                mat: self.0.name.clone(),
                operation,
                given: Mat::kind(complex),
                holds: Mat::kind(self.0.complex),
            });
        }
        Ok(())
    }

    /// Errors for a complex matrix: `operation` is real only.
    pub(crate) fn real_only(&self, operation: &'static str) -> Result<()> {
        if self.0.complex {
            return Err(LaError::Complex {
                mat: self.0.name.clone(),
                operation,
            });
        }
        Ok(())
    }

    /// Its pattern.
    pub fn sparsity(&self) -> &Sparsity {
        &self.0.sparsity
    }

    /// Scalar rows.
    pub fn rows(&self) -> usize {
        self.0.sparsity.rows()
    }

    /// Scalar columns.
    pub fn cols(&self) -> usize {
        self.0.sparsity.cols()
    }

    /// The argument that assembles element blocks into this matrix in a loop: `INC` adds them,
    /// `WRITE` inserts them (where elements share an entry, the last element's value stays).
    /// `row_map` and `col_map` must be one of the sparsity's pairs; checked by the loop.
    pub fn arg(&self, access: Access, row_map: &Map, col_map: &Map) -> MatArg {
        MatArg {
            mat: self.clone(),
            access,
            row_map: row_map.clone(),
            col_map: col_map.clone(),
            per_entry: false,
            component_major: false,
            boundary: None,
        }
    }

    /// The argument of PyOP2's `mat(access, (rmap[op2.i[0]], cmap[op2.i[1]]), flatten=True)`
    /// with a kernel called once per element: like [`Mat::arg`], but the block's rows go
    /// component by component, so entry `(a * Ar + i, b * Ac + j)` (`Ar`, `Ac` the arities)
    /// belongs to row node `row_map[e][i]` component `a` and column node `col_map[e][j]`
    /// component `b`. For one value per node it is [`Mat::arg`].
    pub fn arg_flattened(&self, access: Access, row_map: &Map, col_map: &Map) -> MatArg {
        MatArg {
            component_major: true,
            ..self.arg(access, row_map, col_map)
        }
    }

    /// The argument through mixed maps (a matrix of [`Sparsity::mixed`]): the kernel gets the
    /// whole element matrix, its rows the row maps' entries in turn (component by component)
    /// and its columns likewise, each block `(i, j)` going to block `(i, j)` of the matrix.
    pub fn arg_mixed(
        &self,
        access: Access,
        rows: &op2_core::MixedMap,
        cols: &op2_core::MixedMap,
    ) -> MatArg {
        self.arg(access, rows.flat(), cols.flat())
    }

    /// The argument of a kernel over a local iteration space (PyOP2's `mat(access,
    /// (row_map[op2.i[0]], col_map[op2.i[1]]))`): the kernel is called for each pair `(i, j)`
    /// of row and column map entries, with a zeroed block (`double A[1][1]` for a scalar
    /// matrix, `dims` values for a block matrix) and `int i, int j` as its last parameters;
    /// each call's block is placed as [`Mat::arg`]'s element block would be.
    pub fn arg_entries(&self, access: Access, row_map: &Map, col_map: &Map) -> MatArg {
        MatArg {
            per_entry: true,
            ..self.arg(access, row_map, col_map)
        }
    }

    /// PyOP2 0.8.2's `mat(access, (row_map[op2.i[0]], col_map[op2.i[1]]), flatten=True)`: the
    /// kernel is called once per scalar entry of the element matrix, `(Ar * r)` by `(Ac * c)`
    /// calls (`Ar`, `Ac` the arities, `(r, c)` the block dims), each with a zeroed `double
    /// A[1][1]` and `int i, int j`. Call `(i, j)` is entry `(i, j)` of [`Mat::arg_flattened`]'s
    /// element matrix: row node `row_map[e][i % Ar]` component `i / Ar`, and likewise across.
    pub fn arg_entries_flattened(&self, access: Access, row_map: &Map, col_map: &Map) -> MatArg {
        MatArg {
            per_entry: true,
            component_major: true,
            ..self.arg(access, row_map, col_map)
        }
    }

    /// [`Mat::arg_entries`] through mixed maps (PyOP2 0.8.2's per-point kernels on a mixed
    /// matrix): a call per pair of entries of the mixed rows and columns, its indices counting
    /// through the row maps' entries in turn (block `b`'s entries start at the arities before
    /// it), and likewise across.
    pub fn arg_mixed_entries(
        &self,
        access: Access,
        rows: &op2_core::MixedMap,
        cols: &op2_core::MixedMap,
    ) -> MatArg {
        self.arg_entries(access, rows.flat(), cols.flat())
    }

    /// Sets every stored entry to zero (the pattern stays; so does the assembled state).
    pub fn zero(&self) {
        self.lock().values.fill(0.0);
    }

    /// Finishes pending insertions (PETSc's `MatAssemblyBegin/End`): afterwards the matrix can be
    /// multiplied, solved with, and have rows zeroed.
    pub fn assemble(&self) {
        let mut st = self.lock();
        st.pending = Pending::Nothing;
        st.assembled = true;
    }

    /// Whether the matrix is assembled (no insertions pending).
    pub fn is_assembled(&self) -> bool {
        self.lock().assembled
    }

    /// Records that values are about to be added (`add`) or inserted.
    pub(crate) fn begin(&self, st: &mut MatState, add: bool) -> Result<()> {
        st.pending = self.mode_after(st, add)?;
        st.assembled = false;
        Ok(())
    }

    /// Checks mode compatibility without changing anything (loops check before they run).
    pub(crate) fn check_mode(&self, add: bool) -> Result<()> {
        self.mode_after(&self.lock(), add).map(drop)
    }

    /// The pending mode once values are added (`add`) or inserted; mixing them is an error.
    fn mode_after(&self, st: &MatState, add: bool) -> Result<Pending> {
        let now = if add { Pending::Add } else { Pending::Insert };
        if st.pending != Pending::Nothing && st.pending != now {
            return Err(LaError::MixedModes {
                mat: self.0.name.clone(),
                now: now.describe(),
                before: st.pending.describe(),
            });
        }
        Ok(now)
    }

    /// `block` holds [`Mat::width`] f64 per value.
    fn dense_block(&self, rows: &[usize], cols: &[usize], block: &[f64], add: bool) -> Result<()> {
        let w = self.width();
        if block.len() != rows.len() * cols.len() * w {
            return Err(LaError::Length {
                what: "block of values",
                len: block.len() / w,
                expected: rows.len() * cols.len(),
            });
        }
        let sp = &self.0.sparsity;
        // Find every position first, so a bad index changes nothing.
        let mut positions = Vec::with_capacity(block.len());
        for &r in rows {
            self.check_index("row", r, sp.rows())?;
            for &c in cols {
                self.check_index("column", c, sp.cols())?;
                positions.push(sp.position(r, c).ok_or(LaError::NotInPattern {
                    mat: self.0.name.clone(),
                    row: r,
                    col: c,
                })?);
            }
        }
        let mut st = self.lock();
        self.begin(&mut st, add)?;
        for (p, v) in positions.into_iter().zip(block.chunks(w)) {
            let stored = &mut st.values[p * w..(p + 1) * w];
            for (s, v) in stored.iter_mut().zip(v) {
                if add {
                    *s += v;
                } else {
                    *s = *v;
                }
            }
        }
        Ok(())
    }

    /// Adds the dense `rows.len() x cols.len()` row-major `block` at scalar rows and columns
    /// (PETSc's `MatSetValues` with `ADD_VALUES`). A real matrix's.
    pub fn add_values(&self, rows: &[usize], cols: &[usize], block: &[f64]) -> Result<()> {
        self.holds(false, "add_values")?;
        self.dense_block(rows, cols, block, true)
    }

    /// Inserts the dense row-major `block` (`INSERT_VALUES`). A real matrix's.
    pub fn set_values(&self, rows: &[usize], cols: &[usize], block: &[f64]) -> Result<()> {
        self.holds(false, "set_values")?;
        self.dense_block(rows, cols, block, false)
    }

    /// [`Mat::add_values`] of a complex matrix.
    pub fn add_complex_values(
        &self,
        rows: &[usize],
        cols: &[usize],
        block: &[Complex64],
    ) -> Result<()> {
        self.holds(true, "add_complex_values")?;
        self.dense_block(rows, cols, bytemuck::cast_slice(block), true)
    }

    /// [`Mat::set_values`] of a complex matrix.
    pub fn set_complex_values(
        &self,
        rows: &[usize],
        cols: &[usize],
        block: &[Complex64],
    ) -> Result<()> {
        self.holds(true, "set_complex_values")?;
        self.dense_block(rows, cols, bytemuck::cast_slice(block), false)
    }

    fn check_index(&self, what: &'static str, index: usize, size: usize) -> Result<()> {
        if index >= size {
            return Err(LaError::Index {
                mat: self.0.name.clone(),
                what,
                index,
                size,
            });
        }
        Ok(())
    }

    fn assembled(&self, operation: &'static str) -> Result<MutexGuard<'_, MatState>> {
        let st = self.lock();
        if !st.assembled {
            return Err(LaError::Unassembled {
                mat: self.0.name.clone(),
                operation,
            });
        }
        Ok(st)
    }

    /// Zeroes scalar `rows` and puts `diagonal` on their diagonal, for Dirichlet conditions
    /// (PETSc's `MatZeroRows`; a complex matrix's diagonal is `diagonal + 0i`). Needs an
    /// assembled, square matrix; leaves it assembled.
    pub fn zero_rows(&self, rows: &[usize], diagonal: f64) -> Result<()> {
        let sp = &self.0.sparsity;
        self.square("zero_rows")?;
        for &r in rows {
            self.check_index("row", r, sp.rows())?;
        }
        let mut st = self.assembled("zero_rows")?;
        let offsets = sp.row_offsets();
        let w = self.width();
        for &r in rows {
            st.values[offsets[r] * w..offsets[r + 1] * w].fill(0.0);
            // Square patterns always store the diagonal.
            let d = sp
                .position(r, r)
                .expect("square sparsities store the diagonal");
            st.values[d * w] = diagonal;
        }
        Ok(())
    }

    fn square(&self, _operation: &'static str) -> Result<()> {
        if !self.0.sparsity.is_square() {
            return Err(LaError::NotSquare {
                mat: self.0.name.clone(),
                rows: self.rows(),
                cols: self.cols(),
            });
        }
        Ok(())
    }

    /// The value at scalar (`row`, `col`): zero where the pattern has no entry. A real matrix's.
    pub fn value(&self, row: usize, col: usize) -> Result<f64> {
        self.holds(false, "value")?;
        self.complex_value(row, col).map(|v| v.re)
    }

    /// The value at scalar (`row`, `col`) as a complex number (a real matrix's has no imaginary
    /// part): zero where the pattern has no entry.
    pub fn complex_value(&self, row: usize, col: usize) -> Result<Complex64> {
        let sp = &self.0.sparsity;
        self.check_index("row", row, sp.rows())?;
        self.check_index("column", col, sp.cols())?;
        let w = self.width();
        Ok(sp.position(row, col).map_or(Complex64::default(), |p| {
            let st = self.lock();
            Complex64::new(
                st.values[p * w],
                if w == 2 { st.values[p * w + 1] } else { 0.0 },
            )
        }))
    }

    /// The stored values, in CSR order (see [`Sparsity::row_offsets`], [`Sparsity::col_indices`]);
    /// a complex matrix's real and imaginary parts in turn.
    pub fn values(&self) -> Vec<f64> {
        self.lock().values.clone()
    }

    /// The stored values as complex numbers, in CSR order (a real matrix's with no imaginary
    /// parts).
    pub fn complex_values(&self) -> Vec<Complex64> {
        let st = self.lock();
        if self.0.complex {
            bytemuck::cast_slice(&st.values).to_vec()
        } else {
            st.values.iter().map(|&v| Complex64::new(v, 0.0)).collect()
        }
    }

    /// Where the stored values live (CSR order, [`Sparsity::nnz`] of them; twice as many f64 for
    /// a complex matrix, real part first), for handing the
    /// storage to a library that reads and writes it in place (the Python package's PETSc
    /// handle shares it). The values never move while the matrix lives. Reading or writing
    /// through the pointer while a loop or a call on another thread uses the matrix is a data
    /// race: callers keep such use to one thread.
    pub fn values_ptr(&self) -> *mut f64 {
        self.lock().values.as_mut_ptr()
    }

    /// The whole matrix as dense rows (for small matrices: tests, printing); a complex matrix's
    /// rows hold each column's real and imaginary parts in turn.
    pub fn to_dense(&self) -> Vec<Vec<f64>> {
        let st = self.lock();
        let sp = &self.0.sparsity;
        let w = self.width();
        let mut dense = vec![vec![0.0; sp.cols() * w]; sp.rows()];
        for (r, row) in dense.iter_mut().enumerate() {
            for k in sp.row_offsets()[r]..sp.row_offsets()[r + 1] {
                let c = sp.col_indices()[k] as usize;
                row[c * w..(c + 1) * w].copy_from_slice(&st.values[k * w..(k + 1) * w]);
            }
        }
        dense
    }

    /// The whole matrix as dense rows of complex numbers (a real matrix's with no imaginary
    /// parts).
    pub fn to_dense_complex(&self) -> Vec<Vec<Complex64>> {
        let values = self.complex_values();
        let sp = &self.0.sparsity;
        let mut dense = vec![vec![Complex64::default(); sp.cols()]; sp.rows()];
        for (r, row) in dense.iter_mut().enumerate() {
            for k in sp.row_offsets()[r]..sp.row_offsets()[r + 1] {
                row[sp.col_indices()[k] as usize] = values[k];
            }
        }
        dense
    }

    /// Runs `f` on the assembled matrix as CSR (what solvers read). A real matrix's.
    pub fn with_csr<R>(
        &self,
        operation: &'static str,
        f: impl FnOnce(CsrRef<'_>) -> R,
    ) -> Result<R> {
        self.real_only(operation)?;
        let st = self.assembled(operation)?;
        let sp = &self.0.sparsity;
        Ok(f(CsrRef {
            rows: sp.rows(),
            cols: sp.cols(),
            row_ptr: sp.row_offsets(),
            col_idx: sp.col_indices(),
            values: &st.values,
        }))
    }

    /// `y = A x` on slices of scalar values.
    pub fn mult_slices(&self, x: &[f64], y: &mut [f64]) -> Result<()> {
        check_len("x", x.len(), self.cols())?;
        check_len("y", y.len(), self.rows())?;
        self.with_csr("mult", |a| a.mult(x, y))
    }

    /// Checks that `dat` is a vector over the rows (`rows`) or the columns.
    pub(crate) fn check_vector<T: Scalar>(
        &self,
        role: &'static str,
        dat: &Dat<T>,
        rows: bool,
    ) -> Result<()> {
        let sp = &self.0.sparsity;
        let (set, dim) = if rows {
            (sp.row_set(), sp.dims().0)
        } else {
            (sp.col_set(), sp.dims().1)
        };
        if dat.set() != set || dat.dim() != dim {
            return Err(LaError::VectorShape {
                mat: self.0.name.clone(),
                role,
                dat: dat.name().into(),
                set: dat.set().name().into(),
                dim: dat.dim(),
                expected_set: set.name().into(),
                expected_dim: dim,
            });
        }
        Ok(())
    }
}

impl fmt::Debug for Mat {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Mat({:?} on {:?})", self.0.name, self.0.sparsity)
    }
}
