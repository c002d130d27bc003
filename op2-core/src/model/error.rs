//! The one error type of op2-rs: every misuse and every failure is a variant naming the objects involved.

use crate::model::access::Access;
use crate::model::dtype::DType;
use std::path::PathBuf;

/// Shorthand for results whose error is [`Op2Error`].
pub type Result<T, E = Op2Error> = std::result::Result<T, E>;

/// Everything that can go wrong when declaring data, building loops or running them.
#[derive(Debug, thiserror::Error, strum::IntoStaticStr, strum::VariantNames)]
#[non_exhaustive]
pub enum Op2Error {
    /// A set's section sizes overflow `usize`.
    #[error("set `{set}`: section sizes overflow")]
    SetSizeOverflow {
        /// The set's name.
        set: String,
    },
    /// A map or dat was declared with arity or dim zero.
    #[error("{what} `{name}`: {field} must be at least 1")]
    ZeroDimension {
        /// "map", "dat", "global" or "const".
        what: &'static str,
        /// The object's name.
        name: String,
        /// "arity" or "dim".
        field: &'static str,
    },
    /// The data given to a declaration has the wrong length.
    #[error("{what} `{name}`: expected {expected} values ({detail}), got {actual}")]
    DataLength {
        /// "map", "dat", "global" or "const".
        what: &'static str,
        /// The object's name.
        name: String,
        /// How many values were expected.
        expected: usize,
        /// How many values were given.
        actual: usize,
        /// How `expected` was computed, for the reader.
        detail: String,
    },
    /// A map value points outside its target set.
    #[error(
        "map `{map}`: value {value} at row {row}, entry {entry} is outside target set `{to}` (size {to_size})"
    )]
    MapValueOutOfRange {
        /// The map's name.
        map: String,
        /// The row (element of the source set).
        row: usize,
        /// The entry within the row.
        entry: usize,
        /// The offending value.
        value: i64,
        /// The target set's name.
        to: String,
        /// The target set's total size (including halos).
        to_size: usize,
    },
    /// An object of one runtime was used with another.
    #[error("{what} `{name}` belongs to another op2 runtime")]
    ForeignObject {
        /// The kind of object.
        what: &'static str,
        /// Its name.
        name: String,
    },
    /// An indirect arg's map does not start at the loop's iteration set.
    #[error(
        "arg {arg} of loop `{kernel}`: map `{map}` goes from set `{map_from}`, but the loop iterates over `{iter_set}`"
    )]
    MapFromMismatch {
        /// The kernel's name.
        kernel: String,
        /// The arg's position.
        arg: usize,
        /// The map's name.
        map: String,
        /// The map's source set.
        map_from: String,
        /// The loop's iteration set.
        iter_set: String,
    },
    /// A loop reaches data through a map with gaps (negative values: no element).
    #[error(
        "arg {arg} of loop `{kernel}`: map `{map}` has gaps (negative values, \"no element\"); only matrices take such maps, a loop's data need an element at every entry"
    )]
    MapWithGaps {
        /// The kernel's name.
        kernel: String,
        /// The arg's position.
        arg: usize,
        /// The map's name.
        map: String,
    },
    /// An indirect arg's dat does not live on the map's target set.
    #[error(
        "arg {arg} of loop `{kernel}`: dat `{dat}` lives on set `{dat_set}`, but map `{map}` points to `{map_to}`"
    )]
    DatSetMismatch {
        /// The kernel's name.
        kernel: String,
        /// The arg's position.
        arg: usize,
        /// The dat's name.
        dat: String,
        /// The dat's set.
        dat_set: String,
        /// The map's name.
        map: String,
        /// The map's target set.
        map_to: String,
    },
    /// A direct arg's dat does not live on the loop's iteration set.
    #[error(
        "arg {arg} of loop `{kernel}`: direct dat `{dat}` lives on set `{dat_set}`, but the loop iterates over `{iter_set}`"
    )]
    DirectSetMismatch {
        /// The kernel's name.
        kernel: String,
        /// The arg's position.
        arg: usize,
        /// The dat's name.
        dat: String,
        /// The dat's set.
        dat_set: String,
        /// The loop's iteration set.
        iter_set: String,
    },
    /// The dim an arg declares differs from its object's dim.
    #[error(
        "arg {arg} of loop `{kernel}`: `{object}` has dim {actual}, the arg declares dim {declared}"
    )]
    DimMismatch {
        /// The kernel's name.
        kernel: String,
        /// The arg's position.
        arg: usize,
        /// The dat or global's name.
        object: String,
        /// The dim the arg declares.
        declared: usize,
        /// The object's dim.
        actual: usize,
    },
    /// The type an arg declares (or the kernel parameter has) differs from its object's type.
    #[error(
        "arg {arg} of loop `{kernel}`: `{object}` holds {actual}, but {declared_by} expects `{declared}`"
    )]
    TypeMismatch {
        /// The kernel's name.
        kernel: String,
        /// The arg's position.
        arg: usize,
        /// The dat or global's name.
        object: String,
        /// The type declared by the arg or the kernel's parameter.
        declared: String,
        /// Who declared it: "the arg" or "the kernel parameter".
        declared_by: &'static str,
        /// The object's element type.
        actual: DType,
    },
    /// MIN or MAX used on a Dat (they are reductions, for Globals only).
    #[error(
        "arg {arg} of loop `{kernel}`: {access:?} is a reduction for globals; dat `{dat}` cannot use it"
    )]
    ReductionOnDat {
        /// The kernel's name.
        kernel: String,
        /// The arg's position.
        arg: usize,
        /// The dat's name.
        dat: String,
        /// The access mode used.
        access: Access,
    },
    /// MIN or MAX on complex values, which have no order.
    #[error(
        "arg {arg} of loop `{kernel}`: {access:?} needs ordered values, and `{object}` holds complex ones ({dtype})"
    )]
    UnorderedReduction {
        /// The kernel's name.
        kernel: String,
        /// The arg's position.
        arg: usize,
        /// The Global's or Dat's name.
        object: String,
        /// MIN or MAX.
        access: Access,
        /// Its complex element type.
        dtype: DType,
    },
    /// A Const used with an access that writes.
    #[error("arg {arg} of loop `{kernel}`: const `{name}` is read-only, {access:?} is not allowed")]
    ConstWrite {
        /// The kernel's name.
        kernel: String,
        /// The arg's position.
        arg: usize,
        /// The const's name.
        name: String,
        /// The access mode used.
        access: Access,
    },
    /// A Global used with WRITE or RW (globals are READ or reductions).
    #[error(
        "arg {arg} of loop `{kernel}`: global `{global}` supports READ, INC, MIN and MAX, not {access:?}"
    )]
    GlobalAccess {
        /// The kernel's name.
        kernel: String,
        /// The arg's position.
        arg: usize,
        /// The global's name.
        global: String,
        /// The access mode used.
        access: Access,
    },
    /// A map entry index outside `0..arity`.
    #[error("arg {arg} of loop `{kernel}`: index {index} is outside map `{map}` of arity {arity}")]
    MapIndexOutOfRange {
        /// The kernel's name.
        kernel: String,
        /// The arg's position.
        arg: usize,
        /// The map's name.
        map: String,
        /// The index used.
        index: i64,
        /// The map's arity.
        arity: usize,
    },
    /// An OP2-style arg names a map for a direct access or no map for an indirect one.
    #[error("arg {arg} of loop `{kernel}`: {reason}")]
    InvalidArg {
        /// The kernel's name.
        kernel: String,
        /// The arg's position.
        arg: usize,
        /// What is wrong.
        reason: String,
    },
    /// The kernel's parameter list does not have one parameter per arg.
    #[error("kernel `{kernel}` takes {params} parameters but the loop passes {args} args")]
    KernelParamCount {
        /// The kernel's name.
        kernel: String,
        /// Parameters in its C signature.
        params: usize,
        /// Args given to `par_loop`.
        args: usize,
    },
    /// A kernel parameter's shape does not fit its arg (pointer vs array of pointers).
    #[error("arg {arg} of loop `{kernel}`: the kernel parameter `{param}` should be {expected}")]
    KernelParamShape {
        /// The kernel's name.
        kernel: String,
        /// The arg's position.
        arg: usize,
        /// The parameter as written.
        param: String,
        /// What the arg needs ("a pointer" or "an array of pointers").
        expected: &'static str,
    },
    /// The kernel source does not define a function with the kernel's name.
    #[error("kernel `{kernel}`: the source defines no function named `{kernel}`")]
    KernelNotFound {
        /// The kernel's name.
        kernel: String,
    },
    /// A name that must be a C identifier is not one.
    #[error("{what} name `{name}` is not a C identifier")]
    InvalidIdentifier {
        /// "kernel" or "const".
        what: &'static str,
        /// The offending name.
        name: String,
    },
    /// A user's name that generated code, C, C++, OpenCL C or CUDA already uses.
    #[error("{what} name `{name}` is reserved: {reason}")]
    ReservedIdentifier {
        /// "kernel" or "const".
        what: &'static str,
        /// The offending name.
        name: String,
        /// Why it is reserved.
        reason: String,
    },
    /// A kernel parameter declares an array bound that differs from the arg's arity or dim.
    #[error(
        "arg {arg} of loop `{kernel}`: the kernel parameter `{param}` declares {declared} {what}, but the arg has {expected}"
    )]
    KernelParamBound {
        /// The kernel's name.
        kernel: String,
        /// The arg's position.
        arg: usize,
        /// The parameter as written.
        param: String,
        /// "pointers" (a whole map row's arity) or "values" (the data's dim).
        what: &'static str,
        /// The bound the parameter declares.
        declared: usize,
        /// The arity or dim of the arg.
        expected: usize,
    },
    /// A loop's kernel has the name of a Const of its runtime, so the kernel could not tell them
    /// apart.
    #[error("kernel `{kernel}` has the name of const `{name}`; rename one of them")]
    NameClash {
        /// The kernel's name.
        kernel: String,
        /// The const's name.
        name: String,
    },
    /// Two consts with one name.
    #[error("const `{name}` is already declared")]
    DuplicateConst {
        /// The name.
        name: String,
    },
    /// Host data is borrowed (a `data()`/`data_ro()` guard is alive) while a loop needs it.
    #[error(
        "{what} `{name}` is borrowed on the host (a data guard is alive) while loop `{kernel}` needs it"
    )]
    DataBorrowed {
        /// "dat" or "global".
        what: &'static str,
        /// Its name.
        name: String,
        /// The loop's kernel.
        kernel: String,
    },
    /// A Dat's only valid copy was on a device whose runtime is gone, and it was not copied home
    /// (the copy home failed when the runtime was dropped).
    #[error(
        "{what} `{name}`: its values were on the device of a runtime that is gone, and copying them \
         home failed when it was dropped; the data is lost"
    )]
    HostDataLost {
        /// "dat".
        what: &'static str,
        /// Its name.
        name: String,
    },
    /// A temporary Dat was used after [`crate::Runtime::release_temporary`] gave its memory back.
    #[error("temporary dat `{name}` was used after it was released ({context})")]
    TemporaryReleased {
        /// Its name.
        name: String,
        /// Where: a loop's kernel, or a host access.
        context: String,
    },
    /// [`crate::Runtime::remove_const`] was given a Const removed before.
    #[error("const `{name}` was removed from the namespace already")]
    ConstRemoved {
        /// Its name.
        name: String,
    },
    /// [`crate::Runtime::release_temporary`] was given a Dat that is not a temporary.
    #[error("dat `{name}` is not a temporary (declare it with decl_temporary to release it)")]
    NotTemporary {
        /// Its name.
        name: String,
    },
    /// A subset declared with indices that are not sorted, repeated, or out of range, or used
    /// where a whole set is needed.
    #[error("subset `{subset}` of `{parent}`: {reason}")]
    BadSubset {
        /// The subset's name.
        subset: String,
        /// The set it selects from.
        parent: String,
        /// What is wrong.
        reason: String,
    },
    /// A local iteration space whose args disagree on its extent, or whose kernel's signature
    /// does not match it.
    #[error("kernel `{kernel}`'s local iteration space: {reason}")]
    IterationSpace {
        /// The kernel.
        kernel: String,
        /// What is wrong.
        reason: String,
    },
    /// Mixed sets, maps or Dats whose components do not fit together.
    #[error("mixed `{what}`: {reason}")]
    MixedMismatch {
        /// The mixed object or arg.
        what: String,
        /// What is wrong.
        reason: String,
    },
    /// An extruded set declared with layers that do not fit its base set.
    #[error("extruded set `{set}` over `{base}`: {reason}")]
    BadExtrusion {
        /// The extruded set's name.
        set: String,
        /// The base set's name.
        base: String,
        /// What is wrong.
        reason: String,
    },
    /// Something only extruded sets have (map offsets, an iteration region) used with a set that
    /// is not extruded, or an extruded map used where it cannot be.
    #[error("{what}: {reason}")]
    NotExtruded {
        /// What was asked (`map `m`'s offsets`, `loop `k` over the bottom layer`).
        what: String,
        /// Why it cannot be.
        reason: String,
    },
    /// Dat algebra between Dats that do not match, or an operation their type does not have.
    #[error("dat algebra `{op}` on `{left}`{}: {reason}", right.as_ref().map(|r| format!(" and `{r}`")).unwrap_or_default())]
    AlgebraMismatch {
        /// The operation (`add`, `inner`, ...).
        op: &'static str,
        /// The Dat it was called on.
        left: String,
        /// The other Dat, when there is one.
        right: Option<String>,
        /// What does not match.
        reason: String,
    },
    /// A Dat's runtime is gone, so nothing can be recorded on it (its host data stays readable).
    #[error("dat `{name}`: its runtime is gone, so no loop can be recorded on it")]
    RuntimeGone {
        /// The Dat's name.
        name: String,
    },
    /// No backend has this name.
    #[error("unknown backend `{name}`; available: {}", available.join(", "))]
    UnknownBackend {
        /// The requested name.
        name: String,
        /// The registered backends.
        available: Vec<String>,
    },
    /// A first-party backend whose Cargo feature is off.
    #[error(
        "backend `{name}` is not compiled in: enable the `{feature}` feature of the `op2` crate"
    )]
    BackendNotEnabled {
        /// The requested name.
        name: String,
        /// The feature to enable.
        feature: String,
    },
    /// A registered backend that cannot run here (no device, no library).
    #[error("backend `{name}` is unavailable: {reason}")]
    BackendUnavailable {
        /// The backend's name.
        name: String,
        /// Why.
        reason: String,
    },
    /// A loop needs more of a device's resources than the device has (local or shared memory per
    /// block, private memory per work-item or work-group, ...).
    #[error(
        "loop `{kernel}` on backend `{backend}` needs {needed} bytes of {resource}, but {device} has {available}: {hint}"
    )]
    DeviceLimit {
        /// The backend.
        backend: String,
        /// The loop's kernel.
        kernel: String,
        /// The device's name.
        device: String,
        /// What runs out, e.g. "private memory per work-item".
        resource: &'static str,
        /// Bytes the loop needs.
        needed: usize,
        /// Bytes the device has.
        available: usize,
        /// What the user can do about it.
        hint: String,
    },
    /// An environment variable or builder setting has an invalid value.
    #[error("configuration `{key}` = `{value}`: {reason}")]
    Config {
        /// The variable or setting.
        key: String,
        /// Its value.
        value: String,
        /// Why it is rejected.
        reason: String,
    },
    /// The C compiler could not be run.
    #[error("could not run the C compiler `{cc}`: {reason}")]
    CompilerNotFound {
        /// The compiler command.
        cc: String,
        /// The OS error.
        reason: String,
    },
    /// Generated code failed to compile.
    #[error(
        "kernel `{kernel}` failed to compile with `{cc}`; generated source kept at {}\n{message}",
        source_path.display()
    )]
    Compile {
        /// The kernel's name.
        kernel: String,
        /// The compiler command.
        cc: String,
        /// The compiler's diagnostics.
        message: String,
        /// Where the generated source was kept.
        source_path: PathBuf,
    },
    /// A compiled library could not be loaded.
    #[error("could not load compiled code {}: {reason}", path.display())]
    Load {
        /// The shared library.
        path: PathBuf,
        /// The loader's message.
        reason: String,
    },
    /// A filesystem operation failed.
    #[error("{context} ({}): {source}", path.display())]
    Io {
        /// What was being done.
        context: &'static str,
        /// The path involved.
        path: PathBuf,
        /// The OS error.
        #[source]
        source: std::io::Error,
    },
    /// A call into a device driver or runtime library (OpenCL, the CUDA driver, NVRTC) failed: the
    /// library's own error is the [`std::error::Error::source`], so that a driver failure can be
    /// told from a misuse.
    #[error("backend `{backend}`, loop `{kernel}`: {call} failed: {source}")]
    Driver {
        /// The backend.
        backend: String,
        /// The loop's kernel, or the operation (a copy, an allocation).
        kernel: String,
        /// Which library the call went to.
        call: &'static str,
        /// The library's error.
        #[source]
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// A kernel's compile or link arguments ([`crate::Kernel::with_link_args`],
    /// [`crate::Kernel::with_compile_args`]) that no compiler takes.
    #[error("kernel `{kernel}`: bad compile or link arguments: {reason}")]
    LinkArgs {
        /// The kernel's name.
        kernel: String,
        /// What is wrong.
        reason: String,
    },
    /// A kernel the target language of a backend cannot express.
    #[error("kernel `{kernel}` cannot be generated for this backend: {reason}")]
    Unsupported {
        /// The kernel's name.
        kernel: String,
        /// Why.
        reason: String,
    },
    /// Ranks could not communicate: a message of the wrong size, a rank that does not exist, or
    /// a collective some ranks never joined (a wait that timed out).
    #[error("communication failed: {reason}")]
    Communication {
        /// What went wrong.
        reason: String,
    },
    /// A set's halo lists (what each neighbour rank sends and receives) do not fit its sections.
    #[error("set `{set}`: {reason}")]
    BadHalo {
        /// The set's name.
        set: String,
        /// What is wrong.
        reason: String,
    },
    /// A backend failed while running a loop.
    #[error("backend `{backend}` failed running `{kernel}`: {reason}")]
    Execution {
        /// The backend.
        backend: String,
        /// The kernel.
        kernel: String,
        /// What happened.
        reason: String,
    },
    /// A checkpoint file cannot be used: truncated, its checksum does not match, or it is not a
    /// checkpoint at all. Nothing was overwritten.
    #[error("checkpoint {}: {reason} (delete it to start afresh)", path.display())]
    CheckpointCorrupt {
        /// The checkpoint file.
        path: PathBuf,
        /// What is wrong with it.
        reason: String,
    },
    /// A checkpoint file written by a newer op2-rs, in a format this one does not read.
    #[error("checkpoint {}: format version {found}, this op2-rs reads up to {supported}", path.display())]
    CheckpointVersion {
        /// The checkpoint file.
        path: PathBuf,
        /// The file's format version.
        found: u32,
        /// The newest version this build reads.
        supported: u32,
    },
    /// The restarted program is not the one that wrote the checkpoint: a declaration (set, map,
    /// Dat, Const: name, sizes or values) or the sequence of loops differs.
    #[error("checkpoint {}: written by a different program or mesh: {what}", path.display())]
    CheckpointMismatch {
        /// The checkpoint file.
        path: PathBuf,
        /// The first difference found.
        what: String,
    },
    /// While a restarted program replays the loops before its checkpoint (without running them),
    /// it read or wrote a Dat on the host whose value those loops would have changed: that value
    /// is not known until the checkpoint's values are loaded.
    #[error(
        "dat `{name}` accessed on the host before loop {backup} while restarting from checkpoint \
         {}: the loops before it are replayed without running, so its value is not known yet",
        path.display()
    )]
    CheckpointReplay {
        /// The Dat.
        name: String,
        /// The loop (counted from 0) at which the checkpoint's values are loaded.
        backup: u64,
        /// The checkpoint file.
        path: PathBuf,
    },
    /// Another job still holds the checkpoint (its lock file): a run of the same program that
    /// is still going, or the ranks of one killed a moment ago that are not gone yet. Waited for
    /// [`crate::CheckpointConfig::lock_timeout`]; nothing was read or written.
    #[error(
        "checkpoint {}: in use by another job ({holder}), which holds {}; waited {waited:?}          for it to end: stop it, or wait and start again",
        path.display(),
        lock.display()
    )]
    CheckpointInUse {
        /// The checkpoint file.
        path: PathBuf,
        /// Its lock file.
        lock: PathBuf,
        /// What the lock file says of its holder (its host and process id), when it says.
        holder: String,
        /// How long this run waited.
        waited: std::time::Duration,
    },
    /// Writing a checkpoint failed (the previous checkpoint is still valid).
    #[error("checkpoint {}: could not write it: {reason} (the previous checkpoint is kept)", path.display())]
    CheckpointWrite {
        /// The checkpoint file.
        path: PathBuf,
        /// Why.
        reason: String,
    },
}

impl Op2Error {
    /// The variant's name (`"MapValueOutOfRange"`, ...), which bindings map to their own
    /// exceptions; [`strum::VariantNames::VARIANTS`] lists every one.
    pub fn kind(&self) -> &'static str {
        self.into()
    }
}
