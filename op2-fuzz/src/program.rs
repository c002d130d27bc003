//! A random program as plain data: sets, maps, Dats, Globals, Consts and the steps that use them
//! (loops with their kernels, host reads and writes). Both the reference interpreter and the op2
//! runner read it; printing it gives a program a person can rebuild by hand.

use crate::expr::{Operand, Value};
use op2::{Access, Region};
use std::fmt::{self, Write};

/// Element type of a Dat, Global or Const: each of op2's six.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    /// `double`
    F64,
    /// `float`
    F32,
    /// `int`
    I32,
    /// `uint32_t`
    U32,
    /// `int64_t`
    I64,
    /// `uint64_t`
    U64,
}

impl Ty {
    /// Every type, in the order genes pick them.
    pub const ALL: [Ty; 6] = [Ty::F64, Ty::F32, Ty::I32, Ty::U32, Ty::I64, Ty::U64];

    /// The C name kernels use.
    pub fn c_name(self) -> &'static str {
        match self {
            Ty::F64 => "double",
            Ty::F32 => "float",
            Ty::I32 => "int",
            Ty::U32 => "uint32_t",
            Ty::I64 => "int64_t",
            Ty::U64 => "uint64_t",
        }
    }

    /// Whether values are floating point.
    pub fn is_float(self) -> bool {
        matches!(self, Ty::F64 | Ty::F32)
    }

    /// Whether values are unsigned integers.
    pub fn is_unsigned(self) -> bool {
        matches!(self, Ty::U32 | Ty::U64)
    }

    /// `x` rounded to this type (every value of the program is held as an `f64`); integers
    /// wrap as C's conversions do.
    pub fn round(self, x: f64) -> f64 {
        match self {
            Ty::F64 => x,
            Ty::F32 => x as f32 as f64,
            _ => self.wrap(x as i128),
        }
    }

    /// The integer `x` as this integer type holds it (modulo its width).
    pub fn wrap(self, x: i128) -> f64 {
        match self {
            Ty::I32 => x as i32 as f64,
            Ty::U32 => x as u32 as f64,
            Ty::I64 => x as i64 as f64,
            Ty::U64 => x as u64 as f64,
            Ty::F64 | Ty::F32 => x as f64,
        }
    }

    /// The C expression `x` (an `int64_t`) reduced to a value below 65536 in magnitude that
    /// this type holds (non-negative for unsigned types).
    pub fn c_small(self, x: &str) -> String {
        if self.is_unsigned() {
            format!("((({x}) % 65536 + 65536) % 65536)")
        } else {
            format!("(({x}) % 65536)")
        }
    }

    /// What [`Ty::c_small`] computes.
    pub fn small(self, x: i64) -> i64 {
        if self.is_unsigned() {
            x.rem_euclid(65536)
        } else {
            x % 65536
        }
    }
}

/// The columns of an extruded set (PyOP2's `ExtrudedSet`) over a plain set: element `k` of
/// column `b` is element `start(b) + k`.
#[derive(Debug, Clone)]
pub struct Columns {
    /// The base set (a plain one).
    pub base: usize,
    /// Node layers per base element.
    pub layers: Vec<usize>,
    /// Declared with one count for every column (all `layers` are equal).
    pub uniform: bool,
    /// The cells between the node layers (`layers - 1` per column), else the node layers.
    pub cells: bool,
}

impl Columns {
    /// Elements in column `b`.
    pub fn len(&self, b: usize) -> usize {
        self.layers[b] - usize::from(self.cells)
    }

    /// Elements in every column.
    pub fn total(&self) -> usize {
        (0..self.layers.len()).map(|b| self.len(b)).sum()
    }

    /// Each element's column and layer, in element order.
    pub fn elements(&self) -> Vec<(usize, usize)> {
        (0..self.layers.len())
            .flat_map(|b| (0..self.len(b)).map(move |k| (b, k)))
            .collect()
    }
}

/// A subset (PyOP2's `Subset`) of a set or of another subset.
#[derive(Debug, Clone)]
pub struct SubsetSpec {
    /// The set (or subset) it selects from.
    pub parent: usize,
    /// Positions among the elements a loop over `parent` runs (sorted, each once).
    pub indices: Vec<usize>,
}

/// A mixed map: one plain map per component of a mixed set, all from one iteration set.
#[derive(Debug, Clone)]
pub struct MixedMapSpec {
    /// The mixed set it maps into.
    pub set: usize,
    /// The component maps, in component order.
    pub maps: Vec<usize>,
}

/// A mixed Dat made of Dats of the program (one type), one per component of a mixed set: it
/// shares their values.
#[derive(Debug, Clone)]
pub struct MixedDatSpec {
    /// The mixed set it lives on.
    pub set: usize,
    /// The component Dats.
    pub dats: Vec<usize>,
}

/// A map between two sets.
#[derive(Debug, Clone)]
pub struct MapSpec {
    /// Iteration-side set.
    pub from: usize,
    /// Target set.
    pub to: usize,
    /// Entries per row.
    pub arity: usize,
    /// `from size * arity` values, each below the target set's size; for a map with offsets,
    /// each column's bottom row (`base size * arity` values).
    pub values: Vec<i32>,
    /// For a map from an extruded set declared with `decl_extruded_map`: how far each entry
    /// moves per layer (layer `k` of column `b` reaches `values[b * arity + j] + k *
    /// offsets[j]`).
    pub offsets: Option<Vec<i32>>,
}

/// A Dat: `dim` values of `ty` per element of `set`.
#[derive(Debug, Clone)]
pub struct DatSpec {
    /// Its set.
    pub set: usize,
    /// Element type.
    pub ty: Ty,
    /// Values per element.
    pub dim: usize,
    /// Initial values (exact in `ty`).
    pub init: Vec<f64>,
}

/// A Global or a Const: `dim` values of `ty`.
#[derive(Debug, Clone)]
pub struct SmallSpec {
    /// Element type.
    pub ty: Ty,
    /// Values.
    pub dim: usize,
    /// Initial values (exact in `ty`).
    pub init: Vec<f64>,
}

/// How a Dat arg reaches its data from element `e`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Path {
    /// Row `e` of a Dat on the iteration set.
    Direct,
    /// Row `map[e][index]`.
    Via {
        /// The map.
        map: usize,
        /// Its entry.
        index: usize,
    },
    /// Every row `map[e][0..arity]` (an array of pointers).
    Row {
        /// The map.
        map: usize,
    },
    /// A local iteration space (PyOP2's `map[op2.i[0]]`): the kernel is called once per entry
    /// `i` of the row, seeing row `map[e][i]`, with `i` as its last parameter.
    Entries {
        /// The map.
        map: usize,
    },
}

/// One loop arg.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ArgSpec {
    /// A Dat arg.
    Dat {
        /// The Dat.
        dat: usize,
        /// How it is reached.
        path: Path,
        /// Access mode.
        access: Access,
    },
    /// A Global arg.
    Global {
        /// The Global.
        global: usize,
        /// Access mode.
        access: Access,
    },
    /// A mixed Dat through a mixed map: an array of pointers, each component's rows in turn.
    Mixed {
        /// The mixed Dat.
        mdat: usize,
        /// The mixed map.
        mmap: usize,
        /// Access mode.
        access: Access,
    },
}

impl ArgSpec {
    /// The access mode.
    pub fn access(&self) -> Access {
        match *self {
            ArgSpec::Dat { access, .. }
            | ArgSpec::Global { access, .. }
            | ArgSpec::Mixed { access, .. } => access,
        }
    }
}

/// A Dat algebra operation on the host (`op2-core`'s `Dat` methods), on Dats of one set, dim
/// and type.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Algebra {
    /// `d.zero()`
    Zero(usize),
    /// `a.copy(&b)`: b = a.
    Copy(usize, usize),
    /// `a op= b`
    Assign(BinOp, usize, usize),
    /// `a op= s`
    AssignScalar(BinOp, usize, f64),
    /// `a op b` into a new Dat, read on the host.
    New(BinOp, usize, usize),
    /// `a op s` into a new Dat, read on the host.
    NewScalar(BinOp, usize, f64),
    /// `y.axpy(a, x)`: y += a x.
    Axpy(usize, f64, usize),
    /// `a.inner(&b)`, compared.
    Inner(usize, usize),
    /// `a.norm()`, compared.
    Norm(usize),
}

/// An elementwise operation of Dat algebra.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BinOp {
    /// `+`
    Add,
    /// `-`
    Sub,
    /// `*`
    Mul,
    /// `/` (floating point only)
    Div,
}

impl BinOp {
    fn symbol(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
        }
    }
}

/// One value a kernel statement writes: component `comp` of arg `arg` (of row entry `entry` for
/// whole-row args, else 0).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Place {
    /// The arg.
    pub arg: usize,
    /// Row entry (whole-row args), else 0.
    pub entry: usize,
    /// Component.
    pub comp: usize,
}

/// How a statement changes its place.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Update {
    /// `p = v`
    Assign,
    /// `p += v` (INC args) or `p = p + v` (RW args).
    Add,
    /// `if (v < p) p = v`
    Min,
    /// `if (v > p) p = v`
    Max,
}

/// One kernel statement.
#[derive(Debug, Clone, PartialEq)]
pub struct Stmt {
    /// What it writes.
    pub place: Place,
    /// How.
    pub update: Update,
    /// The value.
    pub value: Value,
}

/// One `par_loop`.
#[derive(Debug, Clone)]
pub struct LoopSpec {
    /// The kernel's name.
    pub name: String,
    /// The iteration set.
    pub set: usize,
    /// The args, in kernel-parameter order.
    pub args: Vec<ArgSpec>,
    /// The kernel body, in order.
    pub body: Vec<Stmt>,
    /// The kernel copies each parameter into a pointer of its own before using it (OpenCL then
    /// needs private copies of the args).
    pub own_pointers: bool,
    /// Which layers of an extruded set it runs (`All` for plain sets).
    pub region: Region,
}

/// One step of a program.
#[derive(Debug, Clone)]
pub enum Step {
    /// A loop.
    Loop(LoopSpec),
    /// Read a Dat on the host (forces what it depends on) and compare it.
    ReadDat(usize),
    /// Write one value of a Dat on the host.
    WriteDat {
        /// The Dat.
        dat: usize,
        /// Position in its values (element * dim + component).
        at: usize,
        /// The new value (exact in the Dat's type).
        value: f64,
    },
    /// Read a Global's value and compare it.
    ReadGlobal(usize),
    /// Set a Global's value.
    WriteGlobal(usize, Vec<f64>),
    /// Set a Const's value.
    WriteConst(usize, Vec<f64>),
    /// `Runtime::flush`.
    Flush,
    /// Dat algebra.
    Algebra(Algebra),
}

/// A whole random program.
#[derive(Debug, Clone)]
pub struct Program {
    /// Set sizes.
    pub sets: Vec<usize>,
    /// Per set, its columns when it is extruded (such sets come after their base).
    pub columns: Vec<Option<Columns>>,
    /// Per set, what it selects when it is a subset (such sets come after their parent; no
    /// Dat or map lives on one).
    pub subsets: Vec<Option<SubsetSpec>>,
    /// Mixed sets: their component sets (plain, whole).
    pub mixed_sets: Vec<Vec<usize>>,
    /// Mixed maps.
    pub mixed_maps: Vec<MixedMapSpec>,
    /// Mixed Dats.
    pub mixed_dats: Vec<MixedDatSpec>,
    /// Maps.
    pub maps: Vec<MapSpec>,
    /// Dats.
    pub dats: Vec<DatSpec>,
    /// Globals.
    pub globals: Vec<SmallSpec>,
    /// Consts (named `cst0`, `cst1`, ...).
    pub consts: Vec<SmallSpec>,
    /// What the program does, in order.
    pub steps: Vec<Step>,
    /// Whether the runtime records loops lazily.
    pub lazy: bool,
    /// Whether the runtime is dropped before the final values are read (handles outlive it).
    pub drop_first: bool,
    /// The block size (`part_size`), or the backend's own.
    pub block_size: Option<usize>,
    /// The lazy graph's optimisations (when lazy).
    pub lazy_opts: op2::LazyOptions,
    /// Every chain of loops tiled (`TilingMode::Always`) with tiles of this many elements of
    /// its first loop; else tiling where it pays.
    pub tile_always: Option<usize>,
}

/// The name of Const `k` in kernels.
pub fn const_name(k: usize) -> String {
    format!("cst{k}")
}

/// One element a loop runs: its number in the loop's (root) set, and for an extruded set its
/// column and layer (for a plain set, the element and 0).
#[derive(Debug, Clone, Copy)]
pub struct Element {
    /// Number in the set.
    pub e: usize,
    /// Column (base element).
    pub b: usize,
    /// Layer in the column.
    pub k: usize,
    /// An interior facet: the pair of cell `e` (layer `k`) and the cell above it.
    pub facet: bool,
    /// The entry of a local iteration space the kernel is called for (else 0).
    pub i: usize,
}

impl Program {
    /// The base set of `set` when it is extruded (or a subset of an extruded set).
    pub fn base_of(&self, set: usize) -> Option<usize> {
        self.columns[self.root(set)].as_ref().map(|c| c.base)
    }

    /// Whether every set is a plain one (no extruded sets, subsets or mixed spaces): what thread
    /// ranks run.
    pub fn is_plain(&self) -> bool {
        self.columns.iter().all(Option::is_none)
            && self.subsets.iter().all(Option::is_none)
            && self.mixed_sets.is_empty()
    }

    /// The whole set a subset selects from (the set itself when it is not a subset).
    pub fn root(&self, mut set: usize) -> usize {
        while let Some(s) = &self.subsets[set] {
            set = s.parent;
        }
        set
    }

    /// The elements a loop over `set` runs in `region`, in order.
    pub fn set_elements(&self, set: usize, region: Region) -> Vec<Element> {
        if let Some(s) = &self.subsets[set] {
            let all = self.set_elements(s.parent, Region::All);
            return s.indices.iter().map(|&i| all[i]).collect();
        }
        let Some(cols) = &self.columns[set] else {
            return (0..self.sets[set])
                .map(|e| Element {
                    e,
                    b: e,
                    k: 0,
                    facet: false,
                    i: 0,
                })
                .collect();
        };
        let all = cols
            .elements()
            .into_iter()
            .enumerate()
            .map(|(e, (b, k))| Element {
                e,
                b,
                k,
                facet: false,
                i: 0,
            });
        match region {
            Region::Bottom => all.filter(|x| x.k == 0).collect(),
            Region::Top => all.filter(|x| x.k + 1 == cols.len(x.b)).collect(),
            Region::InteriorFacets => all
                .filter(|x| x.k + 1 < cols.len(x.b))
                .map(|x| Element { facet: true, ..x })
                .collect(),
            _ => all.collect(),
        }
    }

    /// The elements loop `l` runs, in order: its region's.
    pub fn elements(&self, l: &LoopSpec) -> Vec<Element> {
        self.set_elements(l.set, l.region)
    }

    /// How many entries a row of `map` has in a loop over `set` (`facets`: at interior facets,
    /// where a map from the cells gives two cells' rows).
    pub fn row_len(&self, set: usize, map: usize, facets: bool) -> usize {
        let m = &self.maps[map];
        if facets && m.from == self.root(set) {
            2 * m.arity
        } else {
            m.arity
        }
    }

    /// The row of Dat `dat` that element `x` of a loop over `set` reaches through `path`
    /// (entry `entry` of a whole row): direct on the set or on its base, through a map from the
    /// set (with offsets or plain) or from its base (the column's row at every layer).
    pub fn row(&self, set: usize, dat: usize, path: Path, x: Element, entry: usize) -> usize {
        let set = self.root(set);
        let (map, j) = match path {
            Path::Direct if self.dats[dat].set == set => return x.e,
            Path::Direct => return x.b,
            Path::Via { map, index } => (map, index),
            Path::Row { map } => (map, entry),
            Path::Entries { map } => (map, x.i),
        };
        let m = &self.maps[map];
        // At a facet, entries past the arity are the upper cell's.
        let (x, j) = if x.facet && m.from == set && j >= m.arity {
            (
                Element {
                    e: x.e + 1,
                    k: x.k + 1,
                    ..x
                },
                j - m.arity,
            )
        } else {
            (x, j)
        };
        match (&m.offsets, m.from == set) {
            (Some(off), true) => (m.values[x.b * m.arity + j] + x.k as i32 * off[j]) as usize,
            (None, true) => m.values[x.e * m.arity + j] as usize,
            _ => m.values[x.b * m.arity + j] as usize,
        }
    }

    /// Entry `entry` of a mixed map's row: the component's Dat of `mdat` and its row there.
    pub fn mixed_row(
        &self,
        set: usize,
        mdat: usize,
        mmap: usize,
        x: Element,
        entry: usize,
    ) -> (usize, usize) {
        let (dat, map, index) = self.mixed_component(mdat, mmap, entry);
        (dat, self.row(set, dat, Path::Via { map, index }, x, 0))
    }

    /// The component Dat of `mdat` that entry `entry` of `mmap`'s rows reaches, and that
    /// component's map and entry in it.
    pub fn mixed_component(
        &self,
        mdat: usize,
        mmap: usize,
        mut entry: usize,
    ) -> (usize, usize, usize) {
        let md = &self.mixed_dats[mdat];
        for (&dat, &map) in md.dats.iter().zip(&self.mixed_maps[mmap].maps) {
            let arity = self.maps[map].arity;
            if entry < arity {
                return (dat, map, entry);
            }
            entry -= arity;
        }
        unreachable!("an entry of the mixed map's row")
    }

    /// The entries of a mixed map's row.
    pub fn mixed_arity(&self, mmap: usize) -> usize {
        let mm = &self.mixed_maps[mmap];
        mm.maps.iter().map(|&m| self.maps[m].arity).sum()
    }
}

impl LoopSpec {
    /// The kernel's C source.
    pub fn kernel_source(&self, p: &Program) -> String {
        let mut params = Vec::new();
        let mut s = String::new();
        let facets = self.region == Region::InteriorFacets;
        for (i, a) in self.args.iter().enumerate() {
            let ty = self.arg_ty(p, i);
            let konst = if a.access() == Access::Read {
                "const "
            } else {
                ""
            };
            let t = ty.c_name();
            let row = match *a {
                ArgSpec::Dat {
                    path: Path::Row { map },
                    ..
                } => Some(p.row_len(self.set, map, facets)),
                ArgSpec::Mixed { mmap, .. } => Some(p.mixed_arity(mmap)),
                _ => None,
            };
            match row {
                Some(arity) => {
                    params.push(format!("{konst}{t} *a{i}[{arity}]"));
                    if self.own_pointers {
                        for j in 0..arity {
                            let _ = writeln!(s, "  {konst}{t} *p{i}_{j} = a{i}[{j}];");
                        }
                    }
                }
                None => {
                    params.push(format!("{konst}{t} *a{i}"));
                    if self.own_pointers {
                        let _ = writeln!(s, "  {konst}{t} *p{i}_0 = a{i};");
                    }
                }
            }
        }
        for st in &self.body {
            let place = self.c_place(st.place.arg, st.place.entry, st.place.comp);
            let ty = self.arg_ty(p, st.place.arg);
            let t = ty.c_name();
            let (steps, v) = st.value.c_steps(&|o| self.c_operand(p, o));
            let line = match (st.update, ty.is_float()) {
                (Update::Assign, true) => format!("{place} = ({t})({v});"),
                (Update::Assign, false) => format!("{place} = ({t}){};", ty.c_small(&v)),
                (Update::Add, float) => {
                    let v = if float {
                        format!("({t})({v})")
                    } else {
                        format!("({t})(({v}) & 1023)")
                    };
                    if self.args[st.place.arg].access() == Access::Inc {
                        format!("{place} += {v};")
                    } else if float {
                        format!("{place} = ({t})((double){place} + (double){v});")
                    } else {
                        format!("{place} = {place} + {v};")
                    }
                }
                (Update::Min | Update::Max, float) => {
                    let v = if float {
                        format!("({t})({v})")
                    } else {
                        format!("({t}){}", ty.c_small(&v))
                    };
                    let cmp = if st.update == Update::Min { "<" } else { ">" };
                    format!("{{ {t} v = {v}; if (v {cmp} {place}) {place} = v; }}")
                }
            };
            if steps.is_empty() {
                let _ = writeln!(s, "  {line}");
            } else {
                let _ = writeln!(s, "  {{ {} {line} }}", steps.join(" "));
            }
        }
        if self.per_entry() {
            params.push("int i".into());
        }
        format!(
            "void {}({}) {{\n{s}}}\n",
            self.name,
            if params.is_empty() {
                "void".to_string()
            } else {
                params.join(", ")
            }
        )
    }

    /// The element type of arg `i`.
    pub fn arg_ty(&self, p: &Program, i: usize) -> Ty {
        match self.args[i] {
            ArgSpec::Dat { dat, .. } => p.dats[dat].ty,
            ArgSpec::Global { global, .. } => p.globals[global].ty,
            ArgSpec::Mixed { mdat, .. } => p.dats[p.mixed_dats[mdat].dats[0]].ty,
        }
    }

    /// Whether the loop has a local iteration space (per-entry args).
    pub fn per_entry(&self) -> bool {
        self.args.iter().any(|a| {
            matches!(
                a,
                ArgSpec::Dat {
                    path: Path::Entries { .. },
                    ..
                }
            )
        })
    }

    fn c_place(&self, arg: usize, entry: usize, comp: usize) -> String {
        let row = matches!(
            self.args[arg],
            ArgSpec::Dat {
                path: Path::Row { .. },
                ..
            } | ArgSpec::Mixed { .. }
        );
        match (self.own_pointers, row) {
            (true, _) => format!("p{arg}_{entry}[{comp}]"),
            (false, true) => format!("a{arg}[{entry}][{comp}]"),
            (false, false) => format!("a{arg}[{comp}]"),
        }
    }

    fn c_operand(&self, p: &Program, o: &Operand) -> String {
        match *o {
            Operand::Arg { arg, entry, comp } => self.c_place(arg, entry, comp),
            Operand::Const { konst, comp } => {
                if p.consts[konst].dim == 1 {
                    const_name(konst)
                } else {
                    format!("{}[{comp}]", const_name(konst))
                }
            }
        }
    }
}

fn access_name(a: Access) -> &'static str {
    match a {
        Access::Read => "READ",
        Access::Write => "WRITE",
        Access::Rw => "RW",
        Access::Inc => "INC",
        Access::Min => "MIN",
        Access::Max => "MAX",
    }
}

fn short_values(v: &[f64]) -> String {
    let shown: Vec<String> = v.iter().take(12).map(|x| format!("{x}")).collect();
    let more = if v.len() > 12 {
        format!(", ... ({} in all)", v.len())
    } else {
        String::new()
    };
    format!("[{}{more}]", shown.join(", "))
}

impl fmt::Display for Program {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        writeln!(
            f,
            "program (lazy: {}, runtime dropped before the final reads: {}, block size: {})",
            self.lazy,
            self.drop_first,
            self.block_size
                .map_or("the backend's".to_string(), |b| b.to_string())
        )?;
        writeln!(
            f,
            "  lazy optimisations: {:?}; tiling: {}",
            self.lazy_opts,
            self.tile_always
                .map_or("where it pays".to_string(), |t| format!(
                    "always, tiles of {t}"
                ))
        )?;
        for (i, n) in self.sets.iter().enumerate() {
            if let Some(sub) = &self.subsets[i] {
                writeln!(
                    f,
                    "  set s{i}: the subset of s{} at {}",
                    sub.parent,
                    short_values(&sub.indices.iter().map(|&x| x as f64).collect::<Vec<_>>())
                )?;
                continue;
            }
            match &self.columns[i] {
                None => writeln!(f, "  set s{i}: {n} elements")?,
                Some(c) => writeln!(
                    f,
                    "  set s{i}: {n} elements, the {} of columns over s{} with node layers {}",
                    if c.cells { "cells" } else { "nodes" },
                    c.base,
                    if c.uniform {
                        c.layers.first().map_or("-".into(), |l| l.to_string())
                    } else {
                        format!("{:?}", c.layers)
                    }
                )?,
            }
        }
        for (i, m) in self.maps.iter().enumerate() {
            let shown: Vec<String> = m.values.iter().take(24).map(|v| v.to_string()).collect();
            let more = if m.values.len() > 24 {
                format!(", ... ({} in all)", m.values.len())
            } else {
                String::new()
            };
            let offsets = m
                .offsets
                .as_ref()
                .map_or(String::new(), |o| format!(", offsets {o:?}, bottom rows"));
            writeln!(
                f,
                "  map m{i}: s{} -> s{}, arity {}{offsets}, values [{}{more}]",
                m.from,
                m.to,
                m.arity,
                shown.join(", ")
            )?;
        }
        for (i, d) in self.dats.iter().enumerate() {
            writeln!(
                f,
                "  dat d{i}: on s{}, {} x {}, initial {}",
                d.set,
                d.ty.c_name(),
                d.dim,
                short_values(&d.init)
            )?;
        }
        for (i, m) in self.mixed_sets.iter().enumerate() {
            let parts: Vec<String> = m.iter().map(|s| format!("s{s}")).collect();
            writeln!(f, "  mixed set ms{i}: ({})", parts.join(", "))?;
        }
        for (i, m) in self.mixed_maps.iter().enumerate() {
            let parts: Vec<String> = m.maps.iter().map(|s| format!("m{s}")).collect();
            writeln!(
                f,
                "  mixed map mm{i}: into ms{}, ({})",
                m.set,
                parts.join(", ")
            )?;
        }
        for (i, m) in self.mixed_dats.iter().enumerate() {
            let parts: Vec<String> = m.dats.iter().map(|s| format!("d{s}")).collect();
            writeln!(
                f,
                "  mixed dat md{i}: on ms{}, ({})",
                m.set,
                parts.join(", ")
            )?;
        }
        for (i, g) in self.globals.iter().enumerate() {
            writeln!(
                f,
                "  global g{i}: {} x {}, initial {:?}",
                g.ty.c_name(),
                g.dim,
                g.init
            )?;
        }
        for (i, c) in self.consts.iter().enumerate() {
            writeln!(
                f,
                "  const {}: {} x {}, initial {:?}",
                const_name(i),
                c.ty.c_name(),
                c.dim,
                c.init
            )?;
        }
        for (n, step) in self.steps.iter().enumerate() {
            match step {
                Step::Loop(l) => {
                    let args: Vec<String> = l
                        .args
                        .iter()
                        .map(|a| match *a {
                            ArgSpec::Dat { dat, path, access } => {
                                let how = match path {
                                    Path::Direct => String::new(),
                                    Path::Via { map, index } => format!(" via m{map}[{index}]"),
                                    Path::Row { map } => format!(" row m{map}"),
                                    Path::Entries { map } => format!(" via m{map}[i]"),
                                };
                                format!("d{dat}{how} {}", access_name(access))
                            }
                            ArgSpec::Mixed { mdat, mmap, access } => {
                                format!("md{mdat} row mm{mmap} {}", access_name(access))
                            }
                            ArgSpec::Global { global, access } => {
                                format!("g{global} {}", access_name(access))
                            }
                        })
                        .collect();
                    let region = if l.region == Region::All {
                        String::new()
                    } else {
                        format!(" ({:?})", l.region)
                    };
                    writeln!(
                        f,
                        "  step {n}: par_loop {} over s{}{region}: [{}]",
                        l.name,
                        l.set,
                        args.join(", ")
                    )?;
                    for line in l.kernel_source(self).lines() {
                        writeln!(f, "      {line}")?;
                    }
                }
                Step::ReadDat(d) => writeln!(f, "  step {n}: read d{d} on the host")?,
                Step::WriteDat { dat, at, value } => {
                    writeln!(f, "  step {n}: host write d{dat}[{at}] = {value}")?
                }
                Step::ReadGlobal(g) => writeln!(f, "  step {n}: read g{g}")?,
                Step::WriteGlobal(g, v) => writeln!(f, "  step {n}: set g{g} to {v:?}")?,
                Step::WriteConst(c, v) => {
                    writeln!(f, "  step {n}: set {} to {v:?}", const_name(*c))?
                }
                Step::Flush => writeln!(f, "  step {n}: flush")?,
                Step::Algebra(a) => {
                    let what = match *a {
                        Algebra::Zero(d) => format!("d{d}.zero()"),
                        Algebra::Copy(a, b) => format!("d{a}.copy(d{b})"),
                        Algebra::Assign(op, a, b) => format!("d{a} {}= d{b}", op.symbol()),
                        Algebra::AssignScalar(op, a, s) => format!("d{a} {}= {s}", op.symbol()),
                        Algebra::New(op, a, b) => format!("read d{a} {} d{b}", op.symbol()),
                        Algebra::NewScalar(op, a, s) => format!("read d{a} {} {s}", op.symbol()),
                        Algebra::Axpy(y, a, x) => format!("d{y}.axpy({a}, d{x})"),
                        Algebra::Inner(a, b) => format!("read d{a}.inner(d{b})"),
                        Algebra::Norm(a) => format!("read d{a}.norm()"),
                    };
                    writeln!(f, "  step {n}: {what}")?
                }
            }
        }
        Ok(())
    }
}
