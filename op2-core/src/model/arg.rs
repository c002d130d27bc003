//! Loop args: which data a kernel parameter sees, how it is reached (direct, map entry, whole row) and
//! the access mode; plus OP2-style constructors that also declare dim and type for checking.

use crate::model::access::Access;
use crate::model::carrier::{Carrier, Const, Dat, Global};
use crate::model::dtype::Scalar;
use crate::model::map::Map;
use std::sync::Arc;

/// How a Dat arg is reached from the loop's element.
#[derive(Debug, Clone)]
pub enum Via {
    /// The Dat lives on the iteration set.
    Direct,
    /// Through one entry of a map row (the index is checked against the arity at `par_loop`).
    Entry(Map, i64),
    /// Through the whole map row: the kernel gets an array of pointers.
    Row(Map),
}

/// What an arg refers to.
#[derive(Debug, Clone)]
pub enum ArgTarget {
    /// A Dat, reached directly or through a map.
    Dat {
        /// The data.
        carrier: Arc<Carrier>,
        /// How it is reached.
        via: Via,
    },
    /// A Global.
    Global(Arc<Carrier>),
    /// A Const passed explicitly (read-only).
    Const(Arc<Carrier>),
}

/// One argument of a `par_loop`, matching one kernel parameter.
#[derive(Debug, Clone)]
pub struct Arg {
    pub(crate) target: ArgTarget,
    pub(crate) access: Access,
    /// Dim and C type name the caller declared (OP2 style); checked against the data.
    pub(crate) declared: Option<(usize, String)>,
    /// A problem found while building the arg (OP2-style constructors), reported by `par_loop`.
    pub(crate) invalid: Option<String>,
    /// Asks the loop to run over the exec halo too (see [`Arg::with_exec_halo`]).
    pub(crate) exec_halo: bool,
    /// For an arg of a local iteration space: what one call of the kernel sees of it.
    pub(crate) per_entry: Option<PerEntry>,
    /// For a mixed arg: the whole-row args of the other components, whose rows follow this
    /// arg's in the one array the kernel gets.
    pub(crate) joined: Vec<Arg>,
    /// For a Dat arg: the one component of each row the kernel sees ([`Arg::component`]).
    pub(crate) component: Option<usize>,
}

/// How an arg takes part in a local iteration space (PyOP2's `op2.i`): the kernel is called
/// once per entry of the element's map row, or per block of its element matrix, with the
/// entry's indices as trailing `int` parameters.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PerEntry {
    /// A Dat through a whole map row: call `i` sees row `map[e][i]` (one dimension, the arity).
    Row,
    /// An element block of `rows` x `cols` blocks of `block.0` x `block.1` values (row-major over
    /// the whole element matrix, as op2-la stages it): call `(i, j)` fills block `(i, j)`, which
    /// starts at zero, and the calls' blocks are added in (two dimensions).
    Block {
        /// Blocks down.
        rows: usize,
        /// Blocks across.
        cols: usize,
        /// Values of one block (rows, columns).
        block: (usize, usize),
    },
    /// A Dat through a whole map row, handed to the kernel as one local buffer of the row's
    /// values, called once per element (PyOP2 0.8.3 to 0.10's `map[op2.i[0]]`): filled from the
    /// Dat for READ and RW, zeroed for WRITE and INC, and afterwards written (WRITE, RW) or added
    /// (INC) back. Entry-major (`buf[k * dim + c]`), or component-major (`buf[c * arity + k]`,
    /// PyOP2's `flatten=True`).
    Buffer {
        /// Component-major.
        flattened: bool,
    },
    /// A Dat through a whole map row as `arity * dim` pointers, one per value, component-major
    /// (`x[c * arity + k]` points at component `c` of entry `k`: PyOP2's `dat(access, map,
    /// flatten=True)`, as FFC's kernels take coordinates). The kernel reads and writes through
    /// them as through a whole row.
    FlatRow,
    /// A Dat through a whole map row, one call per value (PyOP2 0.8.2's `dat(access,
    /// map[op2.i[0]], flatten=True)`): `arity * dim` calls, call `i` seeing component `i /
    /// arity` of row `map[e][i % arity]` as a pointer to that one value (one dimension).
    FlatEntries,
}

impl Arg {
    pub(crate) fn new(target: ArgTarget, access: Access) -> Self {
        Arg {
            target,
            access,
            declared: None,
            invalid: None,
            exec_halo: false,
            per_entry: None,
            joined: Vec::new(),
            component: None,
        }
    }

    /// The access mode.
    pub fn access(&self) -> Access {
        self.access
    }

    /// What the arg refers to.
    pub fn target(&self) -> &ArgTarget {
        &self.target
    }

    /// Makes the loop also run over its set's exec halo under MPI, as loops that increment through
    /// maps do: for per-element results that feed owned data elsewhere (element matrices that
    /// op2-la adds into owned rows), computed redundantly instead of being sent. The exec-halo rows
    /// of a Dat written directly this way are then current on this rank. Without MPI it changes
    /// nothing.
    pub fn with_exec_halo(mut self) -> Self {
        self.exec_halo = true;
        for j in &mut self.joined {
            j.exec_halo = true;
        }
        self
    }

    /// Makes this arg, a Dat's element block (direct, `rows * block.0` x `cols * block.1` values
    /// per element), part of a two-dimensional local iteration space: the kernel is called for
    /// each block `(i, j)` with a zeroed `block.0` x `block.1` buffer and `int i, int j` as its
    /// last parameters, and each call's buffer is added into its block. op2-la's per-entry
    /// matrix args are built this way.
    pub fn per_entry_block(mut self, rows: usize, cols: usize, block: (usize, usize)) -> Self {
        self.per_entry = Some(PerEntry::Block { rows, cols, block });
        self
    }

    /// The arg's part in a local iteration space, if any.
    pub fn per_entry(&self) -> Option<PerEntry> {
        self.per_entry
    }

    /// Whether [`Arg::with_exec_halo`] was asked.
    pub fn runs_exec_halo(&self) -> bool {
        self.exec_halo
    }

    /// Hands the kernel only component `c` of each row of this Dat arg, as a Dat of dim 1 would
    /// be (today's PyOP2's `DatView`): a pointer to the component for a direct arg or a map
    /// entry, an array of such pointers for a whole row, and the row's components `c` packed
    /// for an element buffer. The other components are left as they are (a WRITE runs as RW,
    /// so that they are kept). `c` must be below the Dat's dim, checked at `par_loop`.
    pub fn component(mut self, c: usize) -> Self {
        self.component = Some(c);
        self
    }

    /// The component [`Arg::component`] chose, if any.
    pub fn viewed_component(&self) -> Option<usize> {
        self.component
    }

    /// Also checks, at `par_loop`, that the data has this dim and C type (`"double"`, `"int"`, ...).
    pub fn declare(mut self, dim: usize, c_type: &str) -> Self {
        self.declared = Some((dim, c_type.to_string()));
        self
    }
}

/// OP2's `OP_ID`: the index that marks a direct arg in [`op_arg_dat`].
pub const OP_ID: i32 = -1;

/// OP2's `op_arg_dat(dat, idx, map, dim, type, access)`.
///
/// `idx` is a map entry `0..arity`; `-1` ([`OP_ID`]) with no map is a direct arg; `-arity` with a map is
/// the whole row (as in OP2's vector args). `dim` and `c_type` are checked against the Dat at
/// `par_loop`.
pub fn op_arg_dat<T: Scalar>(
    dat: &Dat<T>,
    idx: i32,
    map: Option<&Map>,
    dim: usize,
    c_type: &str,
    access: Access,
) -> Arg {
    let carrier = dat.carrier().clone();
    let mut invalid = None;
    let via = match map {
        None => {
            if idx != OP_ID {
                invalid = Some(format!(
                    "index {idx} given without a map (a direct arg uses OP_ID = -1)"
                ));
            }
            Via::Direct
        }
        Some(m) if idx < 0 && idx.unsigned_abs() as usize == m.arity() => Via::Row(m.clone()),
        Some(m) => Via::Entry(m.clone(), idx as i64),
    };
    Arg {
        target: ArgTarget::Dat { carrier, via },
        access,
        declared: Some((dim, c_type.into())),
        invalid,
        exec_halo: false,
        per_entry: None,
        joined: Vec::new(),
        component: None,
    }
}

/// OP2's `op_arg_gbl(global, dim, type, access)`.
pub fn op_arg_gbl<T: Scalar>(global: &Global<T>, dim: usize, c_type: &str, access: Access) -> Arg {
    global.arg(access).declare(dim, c_type)
}

// The arg builders of the data handles live here, beside `Arg`, so that the carriers need not
// know about loop args.

impl<T: Scalar> Dat<T> {
    /// Direct arg: element `e` of the loop sees this Dat's row `e`.
    pub fn arg(&self, access: Access) -> Arg {
        Arg::new(
            ArgTarget::Dat {
                carrier: self.carrier().clone(),
                via: Via::Direct,
            },
            access,
        )
    }

    /// Indirect arg: element `e` sees the row `map[e][index]` of this Dat.
    pub fn arg_via(&self, map: &Map, index: usize, access: Access) -> Arg {
        let index = i64::try_from(index).unwrap_or(i64::MAX);
        Arg::new(
            ArgTarget::Dat {
                carrier: self.carrier().clone(),
                via: Via::Entry(map.clone(), index),
            },
            access,
        )
    }

    /// Local-iteration-space arg (PyOP2's `dat(access, map[op2.i[0]])`): the kernel is called
    /// once per entry `i` of the element's map row, seeing row `map[e][i]` of this Dat and `i`
    /// as its last parameter (`int i`).
    pub fn arg_entries(&self, map: &Map, access: Access) -> Arg {
        let mut a = self.arg_row(map, access);
        a.per_entry = Some(PerEntry::Row);
        a
    }

    /// [`Dat::arg_entries`] one value at a time, component-major (PyOP2 0.8.2's `dat(access,
    /// map[op2.i[0]], flatten=True)`): the kernel is called `arity * dim` times per element,
    /// call `i` seeing component `i / arity` of row `map[e][i % arity]` and `i` as its last
    /// parameter. For a Dat of dim 1 it is [`Dat::arg_entries`]. [`PerEntry::FlatEntries`].
    pub fn arg_entries_flattened(&self, map: &Map, access: Access) -> Arg {
        let mut a = self.arg_row(map, access);
        a.per_entry = Some(PerEntry::FlatEntries);
        a
    }

    /// Whole-row arg as one local buffer (PyOP2 0.8.3 to 0.10's `dat(access, map[op2.i[0]])`):
    /// the kernel, called once per element, gets `T buf[arity * dim]`, entry `k`'s values at
    /// `buf[k * dim..]`, gathered before the call (READ, RW, MIN, MAX) or zeroed (WRITE, INC),
    /// and written, added or (MIN, MAX: today's PyOP2's reductions into a Dat through a map)
    /// combined back after it. [`PerEntry::Buffer`].
    pub fn arg_buffer(&self, map: &Map, access: Access) -> Arg {
        let mut a = self.arg_row(map, access);
        a.per_entry = Some(PerEntry::Buffer { flattened: false });
        a
    }

    /// [`Dat::arg_buffer`] with the buffer component-major (`buf[c * arity + k]`, PyOP2's
    /// `flatten=True`).
    pub fn arg_buffer_flattened(&self, map: &Map, access: Access) -> Arg {
        let mut a = self.arg_row(map, access);
        a.per_entry = Some(PerEntry::Buffer { flattened: true });
        a
    }

    /// Whole-row arg with one pointer per value, component-major (PyOP2's `dat(access, map,
    /// flatten=True)`): the kernel's `T *x[arity * dim]` has `x[c * arity + k]` pointing at
    /// component `c` of row `map[e][k]`. [`PerEntry::FlatRow`].
    pub fn arg_row_flattened(&self, map: &Map, access: Access) -> Arg {
        let mut a = self.arg_row(map, access);
        a.per_entry = Some(PerEntry::FlatRow);
        a
    }

    /// Whole-row arg: element `e` sees an array of `arity` pointers, to rows `map[e][0..arity]`.
    pub fn arg_row(&self, map: &Map, access: Access) -> Arg {
        Arg::new(
            ArgTarget::Dat {
                carrier: self.carrier().clone(),
                via: Via::Row(map.clone()),
            },
            access,
        )
    }
}

impl<T: Scalar> Global<T> {
    /// Loop arg with mode READ, INC, MIN or MAX.
    pub fn arg(&self, access: Access) -> Arg {
        Arg::new(ArgTarget::Global(self.carrier().clone()), access)
    }
}

impl<T: Scalar> Const<T> {
    /// The const as an explicit loop arg (READ only, like OP2's `op_arg_gbl` of a constant).
    pub fn arg(&self, access: Access) -> Arg {
        Arg::new(ArgTarget::Const(self.carrier().clone()), access)
    }
}
