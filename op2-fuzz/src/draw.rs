//! Drawing random programs with `proptest`: a [`Genome`] of plain numbers, and [`decode`], which
//! turns any genome into a valid program. Every number is read modulo what it chooses from, so
//! when proptest shrinks a failing genome (fewer steps, fewer args, smaller numbers) the result is
//! still a valid, smaller program.
//!
//! What a loop does with each Dat follows the rules under which op2-rs promises the sequential
//! result (the README's "What one loop may do with one Dat"); the first arg on a Dat in a loop
//! picks its *role*, and later args on it follow that role:
//!
//! - **read**: READ args (direct, through map entries, whole rows);
//! - **increment**: INC args of any kind; the kernel only adds to them;
//! - **update**: RW args of any kind whose every change commutes (`p = p + v`, or a max or a
//!   min), so that the order in which elements touching one value run does not matter;
//! - **local**: direct args only (READ, RW, WRITE) on a Dat no other element touches at `e`: any
//!   statements, reading what earlier statements wrote through another arg (pointers alias);
//! - **fill**: WRITE args of any kind, each component written the same value by every element.
//!
//! Extruded sets (cells and nodes over one plain base set, one node-layer count for every
//! column or one per column, some columns empty) take part like any set: Dats on them, maps
//! from them with offsets per layer or a plain row per element, loops over them in every layer
//! or only the bottom or top one. Such a loop also reaches Dats on the base directly and through
//! maps from the base (a column's row at every layer); those are never local, since every cell
//! of a column touches them.
//!
//! Values kernels compute from are those no element changes (read Dats, READ Globals, Consts) and
//! local Dats at the element itself. Globals: READ (the value before the loop) and one kind of
//! reduction per loop (INC, MIN or MAX), each possibly passed several times.

use crate::expr::{FExpr, IExpr, Operand, Value};
use crate::program::{
    ArgSpec, Columns, DatSpec, LoopSpec, MapSpec, Path, Place, Program, SmallSpec, Step, Stmt, Ty,
    Update,
};
use op2::{Access, Region};
use proptest::collection::vec;
use proptest::prelude::*;

/// How large the drawn programs are.
#[derive(Debug, Clone, Copy)]
pub struct Shape {
    /// Largest set.
    pub max_set: usize,
    /// Fewest steps.
    pub min_steps: usize,
    /// Most steps.
    pub max_steps: usize,
}

impl Default for Shape {
    /// Sets of up to 3,000 elements, 10 to 30 steps.
    fn default() -> Self {
        Shape {
            max_set: 3000,
            min_steps: 10,
            max_steps: 30,
        }
    }
}

/// A map's numbers.
#[derive(Debug, Clone)]
pub struct MapGene {
    from: u8,
    to: u8,
    arity: u8,
    spread: u16,
    seed: u32,
}

/// An extruded mesh's numbers: cells and nodes over one base set.
#[derive(Debug, Clone)]
pub struct ColumnGene {
    base: u8,
    layers: u8,
    seed: u32,
}

/// A Dat's numbers.
#[derive(Debug, Clone)]
pub struct DatGene {
    set: u8,
    ty: u8,
    dim: u8,
    seed: u32,
}

/// A Global's or Const's numbers.
#[derive(Debug, Clone)]
pub struct SmallGene {
    ty: u8,
    dim: u8,
    seed: u32,
}

/// One arg's numbers.
#[derive(Debug, Clone)]
pub struct ArgGene {
    what: u8,
    obj: u8,
    map: u8,
    index: u8,
    access: u8,
}

/// A loop's numbers; the kernel body is decoded from `body`, a byte stream that reads as zeros
/// past its end.
#[derive(Debug, Clone)]
pub struct LoopGene {
    set: u8,
    region: u8,
    args: Vec<ArgGene>,
    body: Vec<u8>,
}

/// A step's numbers.
#[derive(Debug, Clone)]
pub enum StepGene {
    /// Nothing (what shrinking turns steps into, so that programs shrink below the fewest
    /// steps drawn).
    Skip,
    /// A loop.
    Loop(LoopGene),
    /// A host read or write, or a flush.
    Host(u8, u16, u32),
}

/// Everything a program is decoded from.
#[derive(Debug, Clone)]
pub struct Genome {
    sets: Vec<u16>,
    columns: Vec<ColumnGene>,
    maps: Vec<MapGene>,
    dats: Vec<DatGene>,
    globals: Vec<SmallGene>,
    consts: Vec<SmallGene>,
    steps: Vec<StepGene>,
    flags: u8,
}

/// The strategy drawing genomes of programs of `shape`.
pub fn genomes(shape: Shape) -> impl Strategy<Value = Genome> {
    let map = (
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        any::<u16>(),
        any::<u32>(),
    )
        .prop_map(|(from, to, arity, spread, seed)| MapGene {
            from,
            to,
            arity,
            spread,
            seed,
        });
    let dat = (any::<u8>(), any::<u8>(), any::<u8>(), any::<u32>())
        .prop_map(|(set, ty, dim, seed)| DatGene { set, ty, dim, seed });
    let small = || {
        (any::<u8>(), any::<u8>(), any::<u32>()).prop_map(|(ty, dim, seed)| SmallGene {
            ty,
            dim,
            seed,
        })
    };
    let arg = (
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
        any::<u8>(),
    )
        .prop_map(|(what, obj, map, index, access)| ArgGene {
            what,
            obj,
            map,
            index,
            access,
        });
    let looped = (
        any::<u8>(),
        any::<u8>(),
        vec(arg, 1..=7),
        vec(any::<u8>(), 0..400),
    )
        .prop_map(|(set, region, args, body)| {
            StepGene::Loop(LoopGene {
                set,
                region,
                args,
                body,
            })
        });
    let column = (any::<u8>(), any::<u8>(), any::<u32>())
        .prop_map(|(base, layers, seed)| ColumnGene { base, layers, seed });
    let host =
        (any::<u8>(), any::<u16>(), any::<u32>()).prop_map(|(k, a, b)| StepGene::Host(k, a, b));
    // `Skip` first: proptest shrinks a `prop_oneof` towards its first choice.
    let step = prop_oneof![1 => Just(StepGene::Skip), 12 => looped, 3 => host];
    (
        (vec(any::<u16>(), 2..=4), vec(column, 0..=2)),
        vec(map, 1..=5),
        vec(dat, 2..=8),
        vec(small(), 0..=3),
        vec(small(), 0..=2),
        vec(step, shape.min_steps..=shape.max_steps),
        any::<u8>(),
    )
        .prop_map(
            |((sets, columns), maps, dats, globals, consts, steps, flags)| Genome {
                sets,
                columns,
                maps,
                dats,
                globals,
                consts,
                steps,
                flags,
            },
        )
}

/// A well-mixed 64-bit value from a seed and a position (splitmix64).
fn mix(seed: u64, i: u64) -> u64 {
    let mut z = seed
        .wrapping_add(i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
        .wrapping_add(0x9E37_79B9_7F4A_7C15);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

fn ty_of(g: u8) -> Ty {
    [Ty::F64, Ty::F32, Ty::I32][g as usize % 3]
}

/// A value exact in `ty`: integers in -50..=50, floats multiples of 1/16 in -4..=4.
fn value(ty: Ty, m: u64) -> f64 {
    if ty == Ty::I32 {
        (m % 101) as f64 - 50.0
    } else {
        ((m % 129) as f64 - 64.0) / 16.0
    }
}

fn values(ty: Ty, n: usize, seed: u32) -> Vec<f64> {
    (0..n)
        .map(|i| value(ty, mix(seed as u64, i as u64)))
        .collect()
}

fn set_size(g: u16, max: usize) -> usize {
    let r = g as usize / 10;
    match g % 10 {
        0 => 0,
        1 => 1,
        2..=4 => 2 + r % 40,
        5..=7 => (40 + r % 600).min(max),
        _ => (600 + r % max.saturating_sub(600).max(1)).min(max),
    }
}

/// Reads bytes; zeros past the end.
struct Bytes<'a> {
    data: &'a [u8],
    pos: usize,
}

impl Bytes<'_> {
    fn next(&mut self) -> usize {
        let b = self.data.get(self.pos).copied().unwrap_or(0);
        self.pos += 1;
        b as usize
    }
}

/// What a loop does with one Dat (see the module's documentation).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Role {
    Read,
    Increment,
    Update(Update),
    Local,
    Fill,
}

/// Turns any genome into a valid program.
pub fn decode(g: &Genome, shape: Shape) -> Program {
    let mut sets: Vec<usize> = g.sets.iter().map(|&s| set_size(s, shape.max_set)).collect();
    let mut columns: Vec<Option<Columns>> = vec![None; sets.len()];
    // Each extruded mesh: its cells, then its nodes, after the plain sets.
    let plain = sets.len();
    for c in &g.columns {
        let base = c.base as usize % plain;
        let nb = sets[base];
        let uniform = c.layers % 2 == 0;
        let layers: Vec<usize> = if uniform {
            vec![2 + (c.layers as usize / 2) % 5; nb]
        } else {
            (0..nb)
                .map(|b| 1 + mix(c.seed as u64, b as u64) as usize % 6)
                .collect()
        };
        for cells in [true, false] {
            let cols = Columns {
                base,
                layers: layers.clone(),
                uniform,
                cells,
            };
            sets.push(cols.total());
            columns.push(Some(cols));
        }
    }
    let ns = sets.len();
    let maps: Vec<MapSpec> = g
        .maps
        .iter()
        .filter_map(|m| {
            let (from, to) = (m.from as usize % ns, m.to as usize % ns);
            let (nf, nt) = (sets[from], sets[to]);
            // Nothing to point at (an extruded map has bottom rows even for empty columns).
            if (nf > 0 || columns[from].is_some()) && nt == 0 {
                return None;
            }
            let arity = 1 + m.arity as usize % 4;
            // A third of the maps reach any target; the others crowd onto a few (repeated targets).
            let spread = if m.spread % 3 == 0 {
                nt.max(1)
            } else {
                1 + (m.spread as usize / 3) % nt.max(1)
            };
            let base = mix(m.seed as u64, u64::MAX) as usize % nt.max(1);
            let pick = |i: usize, room: usize| {
                ((mix(m.seed as u64, i as u64) as usize % spread + base) % room.max(1)) as i32
            };
            // Two thirds of the maps from an extruded set step by offsets per layer: each
            // column's bottom row, each entry moving 0, 1 or 2 rows a layer where every layer
            // stays inside the target.
            if let Some(cols) = columns[from].as_ref().filter(|_| (m.arity / 4) % 3 != 0) {
                let tallest = (0..cols.layers.len()).map(|b| cols.len(b)).max();
                let offsets: Vec<i32> = (0..arity)
                    .map(|j| {
                        let o = mix(m.seed as u64, (1 << 40) + j as u64) as usize % 3;
                        if o * tallest.unwrap_or(1).saturating_sub(1) < nt {
                            o as i32
                        } else {
                            0
                        }
                    })
                    .collect();
                let values = (0..cols.layers.len() * arity)
                    .map(|i| {
                        let (b, j) = (i / arity, i % arity);
                        let climb = offsets[j] as usize * cols.len(b).saturating_sub(1);
                        pick(i, nt - climb.min(nt - 1))
                    })
                    .collect();
                return Some(MapSpec {
                    from,
                    to,
                    arity,
                    values,
                    offsets: Some(offsets),
                });
            }
            let values = (0..nf * arity).map(|i| pick(i, nt)).collect();
            Some(MapSpec {
                from,
                to,
                arity,
                values,
                offsets: None,
            })
        })
        .collect();
    let dats: Vec<DatSpec> = g
        .dats
        .iter()
        .map(|d| {
            let set = d.set as usize % ns;
            let ty = ty_of(d.ty);
            let dim = 1 + d.dim as usize % 5;
            DatSpec {
                set,
                ty,
                dim,
                init: values(ty, sets[set] * dim, d.seed),
            }
        })
        .collect();
    let small = |s: &SmallGene, types: &[Ty]| {
        let ty = types[s.ty as usize % types.len()];
        let dim = 1 + s.dim as usize % 3;
        SmallSpec {
            ty,
            dim,
            init: values(ty, dim, s.seed),
        }
    };
    let globals: Vec<SmallSpec> = g
        .globals
        .iter()
        .map(|s| small(s, &[Ty::F64, Ty::F32, Ty::I32]))
        .collect();
    let consts: Vec<SmallSpec> = g
        .consts
        .iter()
        .map(|s| small(s, &[Ty::F64, Ty::I32]))
        .collect();
    let mut p = Program {
        sets,
        columns,
        maps,
        dats,
        globals,
        consts,
        steps: Vec::new(),
        lazy: g.flags & 1 == 0,
        drop_first: g.flags & 2 != 0,
        block_size: [
            None,
            Some(1),
            Some(2),
            Some(3),
            Some(16),
            Some(32),
            Some(64),
            Some(256),
        ][(g.flags as usize >> 2) % 8],
    };
    for (n, s) in g.steps.iter().enumerate() {
        let step = match s {
            StepGene::Loop(l) => decode_loop(&p, l, n).map(Step::Loop),
            StepGene::Host(k, a, b) => decode_host(&p, *k, *a as usize, *b),
            StepGene::Skip => None,
        };
        p.steps.extend(step);
    }
    p
}

fn decode_host(p: &Program, kind: u8, a: usize, b: u32) -> Option<Step> {
    let m = mix(b as u64, 7);
    match kind % 6 {
        0 => (!p.dats.is_empty()).then(|| Step::ReadDat(a % p.dats.len())),
        1 if !p.dats.is_empty() => {
            let dat = a % p.dats.len();
            let d = &p.dats[dat];
            let len = d.init.len();
            (len > 0).then(|| Step::WriteDat {
                dat,
                at: b as usize % len,
                value: value(d.ty, m),
            })
        }
        2 => (!p.globals.is_empty()).then(|| Step::ReadGlobal(a % p.globals.len())),
        3 => (!p.globals.is_empty()).then(|| {
            let g = a % p.globals.len();
            let s = &p.globals[g];
            Step::WriteGlobal(g, values(s.ty, s.dim, b))
        }),
        4 => (!p.consts.is_empty()).then(|| {
            let c = a % p.consts.len();
            let s = &p.consts[c];
            Step::WriteConst(c, values(s.ty, s.dim, b))
        }),
        _ => Some(Step::Flush),
    }
}

/// Most args one loop gets.
const MAX_ARGS: usize = 8;

fn decode_loop(p: &Program, g: &LoopGene, n: usize) -> Option<LoopSpec> {
    let set = g.set as usize % p.sets.len();
    let base = p.base_of(set);
    // A loop over an extruded set: every layer (half the loops), the bottom or the top one.
    let region = match (base, g.region % 4) {
        (Some(_), 2) => Region::Bottom,
        (Some(_), 3) => Region::Top,
        _ => Region::All,
    };
    let mut args: Vec<ArgSpec> = Vec::new();
    let mut dat_roles: Vec<Option<Role>> = vec![None; p.dats.len()];
    let mut global_reduction: Vec<Option<Access>> = vec![None; p.globals.len()];
    // Maps from the set, and over an extruded set maps from its base too.
    let maps_to = |target: usize| -> Vec<usize> {
        (0..p.maps.len())
            .filter(|&m| {
                (p.maps[m].from == set || Some(p.maps[m].from) == base) && p.maps[m].to == target
            })
            .collect()
    };
    for a in g.args.iter().take(MAX_ARGS) {
        if a.what % 5 == 4 && !p.globals.is_empty() {
            let global = a.obj as usize % p.globals.len();
            let want = [Access::Read, Access::Inc, Access::Min, Access::Max][a.access as usize % 4];
            let access = if want == Access::Read {
                Access::Read
            } else {
                *global_reduction[global].get_or_insert(want)
            };
            args.push(ArgSpec::Global { global, access });
            continue;
        }
        // Direct: on the set, or on the base of an extruded one (the column's row).
        let direct_on = |d: usize| p.dats[d].set == set || Some(p.dats[d].set) == base;
        let candidates: Vec<usize> = (0..p.dats.len())
            .filter(|&d| direct_on(d) || !maps_to(p.dats[d].set).is_empty())
            .collect();
        if candidates.is_empty() {
            continue;
        }
        let dat = candidates[a.obj as usize % candidates.len()];
        let direct = direct_on(dat);
        // Only a Dat on the set itself is the element's own: a base row is its whole column's.
        let own = p.dats[dat].set == set;
        let through = maps_to(p.dats[dat].set);
        let pick_map = || through[a.map as usize % through.len()];
        let mut path = match a.what % 4 {
            0 if direct => Path::Direct,
            3 if !through.is_empty() => Path::Row { map: pick_map() },
            _ if !through.is_empty() => {
                let map = pick_map();
                Path::Via {
                    map,
                    index: a.index as usize % p.maps[map].arity,
                }
            }
            _ => Path::Direct,
        };
        let role = *dat_roles[dat].get_or_insert(match a.access % 5 {
            0 => Role::Read,
            1 => Role::Increment,
            3 if own => Role::Local,
            4 => Role::Fill,
            _ => Role::Update([Update::Add, Update::Max, Update::Min][(a.access as usize / 5) % 3]),
        });
        let access = match role {
            Role::Read => Access::Read,
            Role::Increment => Access::Inc,
            Role::Update(_) => Access::Rw,
            Role::Fill => Access::Write,
            Role::Local => {
                path = Path::Direct;
                [Access::Read, Access::Rw, Access::Write, Access::Inc][(a.access as usize / 5) % 4]
            }
        };
        args.push(ArgSpec::Dat { dat, path, access });
    }
    if args.is_empty() {
        return None;
    }
    let mut bytes = Bytes {
        data: &g.body,
        pos: 0,
    };
    let own_pointers = bytes.next() % 8 == 7;
    let mut l = LoopSpec {
        name: format!("fz{n}"),
        set,
        args,
        body: Vec::new(),
        own_pointers,
        region,
    };
    let role_of = |a: &ArgSpec| match *a {
        ArgSpec::Dat { dat, .. } => dat_roles[dat],
        ArgSpec::Global { .. } => None,
    };
    // What kernels may read: values no element changes, and local Dats at the element itself.
    let mut stable: Vec<(Operand, Ty)> = Vec::new();
    let mut fixed: Vec<(Operand, Ty)> = Vec::new();
    for (k, c) in p.consts.iter().enumerate() {
        for comp in 0..c.dim {
            let o = (Operand::Const { konst: k, comp }, c.ty);
            stable.push(o);
            fixed.push(o);
        }
    }
    for (i, a) in l.args.iter().enumerate() {
        let ty = l.arg_ty(p, i);
        let places = places(p, a);
        match (*a, role_of(a)) {
            (
                ArgSpec::Global {
                    access: Access::Read,
                    ..
                },
                _,
            ) => {
                for (entry, comp) in places {
                    let o = (
                        Operand::Arg {
                            arg: i,
                            entry,
                            comp,
                        },
                        ty,
                    );
                    stable.push(o);
                    fixed.push(o);
                }
            }
            (_, Some(Role::Read)) => stable.extend(places.into_iter().map(|(entry, comp)| {
                (
                    Operand::Arg {
                        arg: i,
                        entry,
                        comp,
                    },
                    ty,
                )
            })),
            // Not through WRITE or INC args: a kernel does not read those.
            (
                ArgSpec::Dat {
                    access: Access::Read | Access::Rw,
                    ..
                },
                Some(Role::Local),
            ) => stable.extend(places.into_iter().map(|(entry, comp)| {
                (
                    Operand::Arg {
                        arg: i,
                        entry,
                        comp,
                    },
                    ty,
                )
            })),
            _ => {}
        }
    }
    // One value per (Dat, component) for filled Dats: every element writes the same.
    let mut fills: Vec<Vec<Option<Value>>> = p.dats.iter().map(|d| vec![None; d.dim]).collect();
    let mut body = Vec::new();
    for (i, a) in l.args.iter().enumerate() {
        let ty = l.arg_ty(p, i);
        for (entry, comp) in places(p, a) {
            let place = Place {
                arg: i,
                entry,
                comp,
            };
            let update = match (*a, role_of(a)) {
                (ArgSpec::Global { access, .. }, _) => match access {
                    Access::Inc => Update::Add,
                    Access::Min => Update::Min,
                    Access::Max => Update::Max,
                    _ => continue,
                },
                (_, Some(Role::Increment)) => Update::Add,
                (_, Some(Role::Update(u))) => u,
                (ArgSpec::Dat { dat, .. }, Some(Role::Fill)) => {
                    let v = fills[dat][comp]
                        .get_or_insert_with(|| expr(&mut bytes, ty, &fixed, 2))
                        .clone();
                    body.push(Stmt {
                        place,
                        update: Update::Assign,
                        value: v,
                    });
                    continue;
                }
                (ArgSpec::Dat { access, .. }, Some(Role::Local)) => match access {
                    Access::Write => Update::Assign,
                    Access::Inc => Update::Add,
                    Access::Rw => [Update::Assign, Update::Add, Update::Max][bytes.next() % 3],
                    _ => continue,
                },
                _ => continue,
            };
            // Increments and updates skip some values; local WRITEs write every component.
            if update != Update::Assign && bytes.next() % 4 == 3 {
                continue;
            }
            body.push(Stmt {
                place,
                update,
                value: expr(&mut bytes, ty, &stable, 3),
            });
        }
    }
    // Any order: aliasing local args see each other's writes in the order the kernel makes them.
    for k in (1..body.len()).rev() {
        body.swap(k, bytes.next() % (k + 1));
    }
    l.body = body;
    Some(l)
}

/// The (row entry, component) pairs of an arg.
fn places(p: &Program, a: &ArgSpec) -> Vec<(usize, usize)> {
    let (entries, dim) = match *a {
        ArgSpec::Dat { dat, path, .. } => (
            match path {
                Path::Row { map } => p.maps[map].arity,
                _ => 1,
            },
            p.dats[dat].dim,
        ),
        ArgSpec::Global { global, .. } => (1, p.globals[global].dim),
    };
    (0..entries)
        .flat_map(|e| (0..dim).map(move |c| (e, c)))
        .collect()
}

fn expr(b: &mut Bytes<'_>, ty: Ty, ops: &[(Operand, Ty)], depth: usize) -> Value {
    if ty.is_float() {
        Value::F(fexpr(b, ops, depth))
    } else {
        let ints: Vec<(Operand, Ty)> = ops.iter().copied().filter(|o| o.1 == Ty::I32).collect();
        Value::I(iexpr(b, &ints, depth))
    }
}

fn fexpr(b: &mut Bytes<'_>, ops: &[(Operand, Ty)], depth: usize) -> FExpr {
    let k = b.next();
    if depth == 0 || k % 8 < 3 {
        return if !ops.is_empty() && (k / 8) % 4 != 0 {
            FExpr::Load(ops[b.next() % ops.len()].0)
        } else {
            FExpr::Const((b.next() as f64 - 128.0) / 16.0)
        };
    }
    let sub = |b: &mut Bytes<'_>| Box::new(fexpr(b, ops, depth - 1));
    match k % 8 {
        3 => FExpr::Add(sub(b), sub(b)),
        4 => FExpr::Sub(sub(b), sub(b)),
        5 => FExpr::Scale((b.next() % 33) as f64 / 8.0 - 2.0, sub(b)),
        6 => FExpr::Mul(sub(b), sub(b)),
        _ => match (k / 8) % 3 {
            0 => FExpr::Squash(sub(b)),
            1 => FExpr::Min(sub(b), sub(b)),
            _ => FExpr::Max(sub(b), sub(b)),
        },
    }
}

fn iexpr(b: &mut Bytes<'_>, ops: &[(Operand, Ty)], depth: usize) -> IExpr {
    let k = b.next();
    if depth == 0 || k % 8 < 3 {
        return if !ops.is_empty() && (k / 8) % 4 != 0 {
            IExpr::Load(ops[b.next() % ops.len()].0)
        } else {
            IExpr::Const((b.next() % 17) as i64 - 8)
        };
    }
    let sub = |b: &mut Bytes<'_>| Box::new(iexpr(b, ops, depth - 1));
    match k % 8 {
        3 => IExpr::Add(sub(b), sub(b)),
        4 => IExpr::Sub(sub(b), sub(b)),
        5 => IExpr::Scale((b.next() % 7) as i64 - 3, sub(b)),
        6 => IExpr::Mask(sub(b)),
        _ => match (k / 8) % 2 {
            0 => IExpr::Min(sub(b), sub(b)),
            _ => IExpr::Max(sub(b), sub(b)),
        },
    }
}
