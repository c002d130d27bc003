//! Why a sparsity, a matrix operation, an assembly loop or a solve was refused.

use op2_core::{Access, Op2Error};

/// Errors of `op2-la`. Each names the objects involved.
#[derive(Debug, thiserror::Error, strum::IntoStaticStr, strum::VariantNames)]
pub enum LaError {
    /// An error from op2 itself (a loop arg, a kernel, a backend).
    #[error(transparent)]
    Op2(#[from] Op2Error),
    /// Real values for a complex matrix, or complex ones for a real matrix.
    #[error("matrix {mat}: {operation} takes {given} values, but the matrix holds {holds} ones")]
    ScalarKind {
        /// The matrix.
        mat: String,
        /// What was asked.
        operation: &'static str,
        /// "real" or "complex": what the call gives or reads.
        given: &'static str,
        /// "real" or "complex": what the matrix holds.
        holds: &'static str,
    },
    /// An operation that complex matrices do not have (op2-la's solvers, preconditioners and
    /// PETSc's are real; products across ranks too).
    #[error("matrix {mat}: {operation} is for real matrices; this one holds complex values")]
    Complex {
        /// The matrix.
        mat: String,
        /// What was asked.
        operation: &'static str,
    },
    /// A sparsity needs at least one (row map, column map) pair.
    #[error("sparsity {name}: no (row map, column map) pairs given")]
    NoMaps {
        /// The sparsity.
        name: String,
    },
    /// A block size of zero.
    #[error("sparsity {name}: block sizes must be at least 1, got {rows} x {cols}")]
    ZeroBlock {
        /// The sparsity.
        name: String,
        /// Values per row node.
        rows: usize,
        /// Values per column node.
        cols: usize,
    },
    /// The maps of one pair start from different iteration sets.
    #[error(
        "sparsity {name}: row map {row_map} goes from set {row_from} but column map {col_map} from set {col_from}; a pair must share its iteration set"
    )]
    PairSets {
        /// The sparsity.
        name: String,
        /// Row map.
        row_map: String,
        /// Its source set.
        row_from: String,
        /// Column map.
        col_map: String,
        /// Its source set.
        col_from: String,
    },
    /// Pairs disagree on the row or the column set.
    #[error(
        "sparsity {name}: {which} map {map} goes to set {set}, but the first pair's goes to {expected}"
    )]
    TargetSets {
        /// The sparsity.
        name: String,
        /// "row" or "column".
        which: &'static str,
        /// The map.
        map: String,
        /// Its target set.
        set: String,
        /// The first pair's target set.
        expected: String,
    },
    /// The matrix would have more entries than an index can address.
    #[error("{what} {name}: {count} entries are more than {limit} this build can index")]
    TooLarge {
        /// "sparsity" or "assembly".
        what: &'static str,
        /// Its name.
        name: String,
        /// Entries needed.
        count: u128,
        /// The limit.
        limit: u128,
    },
    /// A Mat arg whose maps are not a (row map, column map) pair of the matrix's sparsity.
    #[error(
        "loop {kernel}, arg {arg}: matrix {mat} is not built over maps ({row_map}, {col_map}); its sparsity has pairs {pairs}"
    )]
    MapsNotInSparsity {
        /// The kernel.
        kernel: String,
        /// The arg position.
        arg: usize,
        /// The matrix.
        mat: String,
        /// Row map given.
        row_map: String,
        /// Column map given.
        col_map: String,
        /// The sparsity's pairs, as text.
        pairs: String,
    },
    /// A Mat arg over a set its maps do not start from.
    #[error("loop {kernel} over set {set}, arg {arg}: matrix {mat}'s maps start from set {from}")]
    MatSet {
        /// The kernel.
        kernel: String,
        /// The loop's set.
        set: String,
        /// The arg position.
        arg: usize,
        /// The matrix.
        mat: String,
        /// The maps' source set.
        from: String,
    },
    /// A Mat arg with an access mode other than INC or WRITE.
    #[error(
        "loop {kernel}, arg {arg}: matrix {mat} is accessed {access:?}; a matrix arg is INC (add the element matrix) or WRITE (insert it)"
    )]
    MatAccess {
        /// The kernel.
        kernel: String,
        /// The arg position.
        arg: usize,
        /// The matrix.
        mat: String,
        /// The access given.
        access: Access,
    },
    /// Adding and inserting without an assembly between them (PETSc refuses the same).
    #[error(
        "matrix {mat}: {now} after {before} without assemble() in between; finish one mode with assemble() first"
    )]
    MixedModes {
        /// The matrix.
        mat: String,
        /// What was asked now.
        now: &'static str,
        /// What came before.
        before: &'static str,
    },
    /// An operation that needs an assembled matrix found one with pending insertions.
    #[error("matrix {mat}: {operation} needs an assembled matrix; call assemble() first")]
    Unassembled {
        /// The matrix.
        mat: String,
        /// What was asked.
        operation: &'static str,
    },
    /// A row or column index outside the matrix.
    #[error("matrix {mat}: {what} {index} outside 0..{size}")]
    Index {
        /// The matrix.
        mat: String,
        /// "row" or "column".
        what: &'static str,
        /// The index.
        index: usize,
        /// The bound.
        size: usize,
    },
    /// Setting or adding an entry the sparsity has no room for.
    #[error("matrix {mat}: entry ({row}, {col}) is not in the sparsity pattern")]
    NotInPattern {
        /// The matrix.
        mat: String,
        /// Row.
        row: usize,
        /// Column.
        col: usize,
    },
    /// A Dat used as a vector that does not fit the matrix.
    #[error(
        "matrix {mat}: {role} {dat} is on set {set} with dim {dim}, expected set {expected_set} with dim {expected_dim}"
    )]
    VectorShape {
        /// The matrix.
        mat: String,
        /// "x" or "b", "y"...
        role: &'static str,
        /// The Dat.
        dat: String,
        /// Its set.
        set: String,
        /// Its dim.
        dim: usize,
        /// The set the matrix needs.
        expected_set: String,
        /// The dim it needs.
        expected_dim: usize,
    },
    /// A slice used as a vector of the wrong length.
    #[error("{what}: length {len}, expected {expected}")]
    Length {
        /// What was given.
        what: &'static str,
        /// Its length.
        len: usize,
        /// The length needed.
        expected: usize,
    },
    /// CSR arrays that do not fit together (a hand-built [`crate::CsrRef`]).
    #[error("matrix {mat}: bad CSR arrays: {why}")]
    Csr {
        /// The matrix.
        mat: String,
        /// What is wrong.
        why: String,
    },
    /// A solve on a matrix that is not square.
    #[error("matrix {mat} is {rows} x {cols}; a solve needs a square matrix")]
    NotSquare {
        /// The matrix.
        mat: String,
        /// Rows.
        rows: usize,
        /// Columns.
        cols: usize,
    },
    /// Boundary entries to drop ([`crate::MatArg::dropping_boundary`]) that do not fit the arg.
    #[error("matrix {mat}: cannot drop extruded boundary entries: {reason}")]
    BoundaryDrop {
        /// The matrix.
        mat: String,
        /// What does not fit.
        reason: String,
    },
    /// Solver settings out of range.
    #[error("solver option {option} = {value}: {why}")]
    Option {
        /// The option.
        option: &'static str,
        /// Its value as text.
        value: String,
        /// Why it is refused.
        why: &'static str,
    },
    /// ILU(0) or SOR met a zero (or missing) diagonal entry.
    #[error("matrix {mat}: {preconditioner} found a zero pivot in row {row}")]
    ZeroPivot {
        /// The matrix.
        mat: String,
        /// The preconditioner.
        preconditioner: &'static str,
        /// The row.
        row: usize,
    },
    /// A solve that stopped without converging, when asked as an error ([`crate::SolveReport::check`]).
    #[error(
        "solve with {method} did not converge: {reason:?} after {iterations} iterations (residual {residual:e})"
    )]
    NotConverged {
        /// The method.
        method: String,
        /// Why it stopped.
        reason: crate::ConvergedReason,
        /// Iterations done.
        iterations: usize,
        /// The last residual norm.
        residual: f64,
    },
    /// A solver that works on one process was asked to solve across ranks.
    #[error(
        "matrix {mat} is spread over ranks, and the {solver} solver solves on one process only"
    )]
    Serial {
        /// The solver.
        solver: String,
        /// The matrix.
        mat: String,
    },
    /// A distributed operation on data whose runtime is gone.
    #[error("{what} {name}: its runtime was dropped, so its ranks cannot be reached")]
    NoRuntime {
        /// "Dat".
        what: &'static str,
        /// Its name.
        name: String,
    },
    /// Another rank failed to set up its part of a solve (its own error says why).
    #[error("matrix {mat}: rank {rank} could not set up its part of the solve")]
    OtherRank {
        /// The first rank that failed.
        rank: usize,
        /// The matrix.
        mat: String,
    },
    /// A failure inside PETSc.
    #[error("PETSc: {call} failed with error code {code}")]
    Petsc {
        /// The PETSc call.
        call: String,
        /// PETSc's error code.
        code: i32,
    },
}

/// Results of `op2-la`.
pub type Result<T, E = LaError> = std::result::Result<T, E>;

impl LaError {
    /// The variant's name, or for an error of op2 itself its [`Op2Error::kind`]: which
    /// bindings map to their own exceptions.
    pub fn kind(&self) -> &'static str {
        match self {
            LaError::Op2(e) => e.kind(),
            other => other.into(),
        }
    }
}
