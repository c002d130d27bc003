//! Why distributing a mesh failed: one typed error, the same on every rank where the cause is
//! visible to all of them.

use op2_core::Op2Error;

/// A distributed-mesh failure.
#[derive(Debug, thiserror::Error, strum::IntoStaticStr, strum::VariantNames)]
pub enum MpiError {
    /// A map holds a value outside its target set.
    #[error(
        "map `{map}`: entry {entry} (row {row}) is {value}, outside set `{to}` of {size} elements"
    )]
    MapValueOutOfRange {
        /// The map.
        map: String,
        /// Index into the map's global values (row x arity + column).
        entry: usize,
        /// The row (an element of the map's source set, global number).
        row: usize,
        /// The value found.
        value: i64,
        /// The target set.
        to: String,
        /// The target set's global size.
        size: usize,
    },
    /// Data handed in has the wrong length for how the mesh says data arrives.
    #[error(
        "{what} `{name}` on rank {rank}: {expected} values expected ({detail}), {actual} given"
    )]
    DataLength {
        /// `map` or `dat`.
        what: &'static str,
        /// Its name.
        name: String,
        /// The rank that handed it in.
        rank: usize,
        /// Values expected.
        expected: usize,
        /// Values given.
        actual: usize,
        /// Where the expectation comes from.
        detail: String,
    },
    /// More parts asked for than the set METIS or bisection splits has elements (blocks accept
    /// it: ranks then own nothing of a small set).
    #[error("{parts} parts asked for, but set `{set}` has only {size} elements")]
    TooManyParts {
        /// Parts asked for (the number of ranks).
        parts: usize,
        /// The set being partitioned.
        set: String,
        /// Its size.
        size: usize,
    },
    /// The ranks did not declare the same mesh.
    #[error("rank {rank} declared a different mesh: {theirs}; this rank: {ours}")]
    MismatchedDeclarations {
        /// The first rank that differs from rank 0 (or from this rank).
        rank: usize,
        /// Its declarations, summarised.
        theirs: String,
        /// This rank's, summarised.
        ours: String,
    },
    /// A declaration is unusable on its own (a zero arity or dim, an unknown handle, a repeated
    /// name, a partitioner that needs something the mesh lacks).
    #[error("{0}")]
    BadDeclaration(String),
    /// The partitioning library failed.
    #[error("partitioner {partitioner} failed: {reason}")]
    Partitioner {
        /// Which partitioner.
        partitioner: &'static str,
        /// What it said.
        reason: String,
    },
    /// Another rank failed; its error is quoted so every rank reports the same cause.
    #[error("rank {rank} failed: {reason}")]
    OtherRank {
        /// The rank that failed first.
        rank: usize,
        /// Its error.
        reason: String,
    },
    /// MPI could not be started (already started and finalised, or the launcher is missing).
    #[error("MPI could not be initialised: {0}")]
    Init(String),
    /// A distribution breaks one of its invariants ([`crate::verify`]).
    #[error("invariant broken on rank {rank}: {reason}")]
    Invariant {
        /// The rank that found it.
        rank: usize,
        /// What is wrong.
        reason: String,
    },
    /// Declaring the local mesh, or communicating, failed in the core library.
    #[error(transparent)]
    Op2(#[from] Op2Error),
}

/// Results of this crate.
pub type Result<T> = std::result::Result<T, MpiError>;

impl MpiError {
    /// The variant's name, or for an error of op2 itself its [`Op2Error::kind`]: which
    /// bindings map to their own exceptions.
    pub fn kind(&self) -> &'static str {
        match self {
            MpiError::Op2(e) => e.kind(),
            other => other.into(),
        }
    }
}
