//! A random program as plain data: sets, maps, Dats, Globals, Consts and the steps that use them
//! (loops with their kernels, host reads and writes). Both the reference interpreter and the op2
//! runner read it; printing it gives a program a person can rebuild by hand.

use crate::expr::{Operand, Value};
use op2::{Access, Region};
use std::fmt::{self, Write};

/// Element type of a Dat, Global or Const.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ty {
    /// `double`
    F64,
    /// `float`
    F32,
    /// `int`
    I32,
}

impl Ty {
    /// The C name kernels use.
    pub fn c_name(self) -> &'static str {
        match self {
            Ty::F64 => "double",
            Ty::F32 => "float",
            Ty::I32 => "int",
        }
    }

    /// Whether values are floating point.
    pub fn is_float(self) -> bool {
        self != Ty::I32
    }

    /// `x` rounded to this type (every value of the program is held as an `f64`).
    pub fn round(self, x: f64) -> f64 {
        match self {
            Ty::F64 => x,
            Ty::F32 => x as f32 as f64,
            Ty::I32 => x as i32 as f64,
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
}

impl ArgSpec {
    /// The access mode.
    pub fn access(&self) -> Access {
        match *self {
            ArgSpec::Dat { access, .. } | ArgSpec::Global { access, .. } => access,
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
}

/// A whole random program.
#[derive(Debug, Clone)]
pub struct Program {
    /// Set sizes.
    pub sets: Vec<usize>,
    /// Per set, its columns when it is extruded (such sets come after their base).
    pub columns: Vec<Option<Columns>>,
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
}

/// The name of Const `k` in kernels.
pub fn const_name(k: usize) -> String {
    format!("cst{k}")
}

/// One element a loop runs: its number in the loop's set, and for an extruded set its column
/// and layer (for a plain set, the element and 0).
#[derive(Debug, Clone, Copy)]
pub struct Element {
    /// Number in the set.
    pub e: usize,
    /// Column (base element).
    pub b: usize,
    /// Layer in the column.
    pub k: usize,
}

impl Program {
    /// The base set of `set` when it is extruded.
    pub fn base_of(&self, set: usize) -> Option<usize> {
        self.columns[set].as_ref().map(|c| c.base)
    }

    /// The elements loop `l` runs, in order: its region's.
    pub fn elements(&self, l: &LoopSpec) -> Vec<Element> {
        let Some(cols) = &self.columns[l.set] else {
            return (0..self.sets[l.set])
                .map(|e| Element { e, b: e, k: 0 })
                .collect();
        };
        let all = cols
            .elements()
            .into_iter()
            .enumerate()
            .map(|(e, (b, k))| Element { e, b, k });
        match l.region {
            Region::Bottom => all.filter(|x| x.k == 0).collect(),
            Region::Top => all.filter(|x| x.k + 1 == cols.len(x.b)).collect(),
            _ => all.collect(),
        }
    }

    /// The row of Dat `dat` that element `x` of a loop over `set` reaches through `path`
    /// (entry `entry` of a whole row): direct on the set or on its base, through a map from the
    /// set (with offsets or plain) or from its base (the column's row at every layer).
    pub fn row(&self, set: usize, dat: usize, path: Path, x: Element, entry: usize) -> usize {
        let (map, j) = match path {
            Path::Direct if self.dats[dat].set == set => return x.e,
            Path::Direct => return x.b,
            Path::Via { map, index } => (map, index),
            Path::Row { map } => (map, entry),
        };
        let m = &self.maps[map];
        match (&m.offsets, m.from == set) {
            (Some(off), true) => (m.values[x.b * m.arity + j] + x.k as i32 * off[j]) as usize,
            (None, true) => m.values[x.e * m.arity + j] as usize,
            _ => m.values[x.b * m.arity + j] as usize,
        }
    }
}

impl LoopSpec {
    /// The kernel's C source.
    pub fn kernel_source(&self, p: &Program) -> String {
        let mut params = Vec::new();
        let mut s = String::new();
        for (i, a) in self.args.iter().enumerate() {
            let (ty, path) = match *a {
                ArgSpec::Dat { dat, path, .. } => (p.dats[dat].ty, Some(path)),
                ArgSpec::Global { global, .. } => (p.globals[global].ty, None),
            };
            let konst = if a.access() == Access::Read {
                "const "
            } else {
                ""
            };
            let t = ty.c_name();
            let row = match path {
                Some(Path::Row { map }) => Some(p.maps[map].arity),
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
                (Update::Assign, false) => format!("{place} = (int)(({v}) % 65536);"),
                (Update::Add, float) => {
                    let v = if float {
                        format!("({t})({v})")
                    } else {
                        format!("(int)(({v}) & 1023)")
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
                        format!("(int)(({v}) % 65536)")
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
        }
    }

    fn c_place(&self, arg: usize, entry: usize, comp: usize) -> String {
        let row = matches!(
            self.args[arg],
            ArgSpec::Dat {
                path: Path::Row { .. },
                ..
            }
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
        for (i, n) in self.sets.iter().enumerate() {
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
                                };
                                format!("d{dat}{how} {}", access_name(access))
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
            }
        }
        Ok(())
    }
}
