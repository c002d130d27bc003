//! Loop signatures: everything about a loop that shapes its generated code (kernel, arg kinds, types,
//! dims, arities, access modes, consts) and nothing about its data. Compiled code is keyed by it.

use crate::model::access::Access;
use crate::model::dtype::DType;
use crate::model::kernel::Kernel;

/// How the generated code reaches one arg.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArgKind {
    /// Row `e` of a Dat on the iteration set.
    Direct,
    /// Row `map[e][index]`; `map` is the loop's map slot (maps shared by args share a slot).
    Indirect {
        /// Map slot.
        map: usize,
        /// The map's arity.
        arity: usize,
        /// The map entry.
        index: usize,
    },
    /// All rows `map[e][0..arity]`, as an array of pointers.
    Row {
        /// Map slot.
        map: usize,
        /// The map's arity.
        arity: usize,
    },
    /// A Global or an explicitly passed Const: the same `dim` values for every element.
    Global,
}

/// One arg's part of a signature.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct ArgSig {
    /// How it is reached.
    pub kind: ArgKind,
    /// Element type.
    pub dtype: DType,
    /// Values per element.
    pub dim: usize,
    /// Access mode.
    pub access: Access,
}

impl ArgSig {
    /// Whether the arg goes through a map.
    pub fn is_indirect(&self) -> bool {
        matches!(self.kind, ArgKind::Indirect { .. } | ArgKind::Row { .. })
    }
}

/// A Const the kernel mentions, declared in the generated unit.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ConstSig {
    /// The C name.
    pub name: String,
    /// Element type.
    pub dtype: DType,
    /// Values (1 = a scalar in C, more = an array).
    pub dim: usize,
}

/// The shape of a loop: what code generation needs, and the key of compiled code.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct LoopSignature {
    /// The kernel.
    pub kernel: Kernel,
    /// One entry per kernel parameter.
    pub args: Vec<ArgSig>,
    /// The consts the kernel mentions, in declaration order.
    pub consts: Vec<ConstSig>,
    /// Number of distinct maps the args use.
    pub n_maps: usize,
    /// For each arg, the position of the first arg that names the same data (its own position
    /// when no earlier arg does): args on one Dat share staging on devices, so this shapes device
    /// code.
    pub data: Vec<usize>,
}

impl LoopSignature {
    /// The [`LoopSignature::data`] of args naming data `ids` (one id per arg).
    pub fn data_classes(ids: &[u64]) -> Vec<usize> {
        ids.iter()
            .enumerate()
            .map(|(i, id)| ids[..i].iter().position(|x| x == id).unwrap_or(i))
            .collect()
    }

    /// The first complex element type among the args and Consts, if any (code generators that
    /// cannot spell complex values refuse such loops).
    pub fn complex_dtype(&self) -> Option<DType> {
        self.args
            .iter()
            .map(|a| a.dtype)
            .chain(self.consts.iter().map(|c| c.dtype))
            .find(|t| t.is_complex())
    }

    /// True when no arg goes through a map.
    pub fn is_direct(&self) -> bool {
        !self.args.iter().any(ArgSig::is_indirect)
    }

    /// True when some arg modifies data through a map (such loops need colouring when parallel, and
    /// run over the exec halo under MPI).
    pub fn has_indirect_writes(&self) -> bool {
        self.args
            .iter()
            .any(|a| a.is_indirect() && a.access.writes())
    }

    /// True when some Global arg is a reduction (INC, MIN, MAX).
    pub fn has_reductions(&self) -> bool {
        !self.reduction_args().is_empty()
    }

    /// Positions of the Global args that are reductions (INC, MIN, MAX).
    pub fn reduction_args(&self) -> Vec<usize> {
        (0..self.args.len())
            .filter(|&i| self.args[i].kind == ArgKind::Global && self.args[i].access.is_reduction())
            .collect()
    }
}
