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
    Algebra, ArgSpec, BinOp, Columns, DatSpec, LoopSpec, MapSpec, MixedDatSpec, MixedMapSpec, Path,
    Place, Program, SmallSpec, Step, Stmt, SubsetSpec, Ty, Update,
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
    /// Programs for thread ranks: plain sets only (the genes of extruded sets, subsets and
    /// mixed spaces are left unread).
    pub distributed: bool,
}

impl Default for Shape {
    /// Sets of up to 3,000 elements, 10 to 30 steps.
    fn default() -> Self {
        Shape {
            max_set: 3000,
            min_steps: 10,
            max_steps: 30,
            distributed: false,
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

/// A subset's numbers: which set (or earlier subset) it selects from, and how many of its
/// elements.
#[derive(Debug, Clone)]
pub struct SubsetGene {
    parent: u8,
    density: u8,
    seed: u32,
}

/// A mixed set's numbers: its components, a mixed map into it and mixed Dats on it (each made
/// of new maps and Dats).
#[derive(Debug, Clone)]
pub struct MixedGene {
    sets: u8,
    from: u8,
    dats: u8,
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
    subsets: Vec<SubsetGene>,
    mixed: Vec<MixedGene>,
    /// Lazy optimisations off (two bits each) and tiling forced on.
    opts: u16,
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
    let subset =
        (any::<u8>(), any::<u8>(), any::<u32>()).prop_map(|(parent, density, seed)| SubsetGene {
            parent,
            density,
            seed,
        });
    let mixed = (any::<u8>(), any::<u8>(), any::<u8>(), any::<u32>()).prop_map(
        |(sets, from, dats, seed)| MixedGene {
            sets,
            from,
            dats,
            seed,
        },
    );
    let host =
        (any::<u8>(), any::<u16>(), any::<u32>()).prop_map(|(k, a, b)| StepGene::Host(k, a, b));
    // `Skip` first: proptest shrinks a `prop_oneof` towards its first choice.
    let step = prop_oneof![1 => Just(StepGene::Skip), 12 => looped, 3 => host];
    (
        (
            vec(any::<u16>(), 2..=4),
            vec(column, 0..=2),
            vec(subset, 0..=2),
            vec(mixed, 0..=1),
        ),
        vec(map, 1..=5),
        vec(dat, 2..=8),
        vec(small(), 0..=3),
        vec(small(), 0..=2),
        vec(step, shape.min_steps..=shape.max_steps),
        (any::<u8>(), any::<u16>()),
    )
        .prop_map(
            |(
                (sets, columns, subsets, mixed),
                maps,
                dats,
                globals,
                consts,
                steps,
                (flags, opts),
            )| Genome {
                sets,
                columns,
                subsets,
                mixed,
                opts,
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
    Ty::ALL[g as usize % Ty::ALL.len()]
}

/// A value exact in `ty`: signed integers in -50..=50, unsigned ones in 0..=100, floats
/// multiples of 1/16 in -4..=4.
fn value(ty: Ty, m: u64) -> f64 {
    if ty.is_unsigned() {
        (m % 101) as f64
    } else if !ty.is_float() {
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
    for c in if shape.distributed {
        &[][..]
    } else {
        &g.columns[..]
    } {
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
    let mut maps: Vec<MapSpec> = g
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
    let mut dats: Vec<DatSpec> = g
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
    let globals: Vec<SmallSpec> = g.globals.iter().map(|s| small(s, &Ty::ALL)).collect();
    let consts: Vec<SmallSpec> = g
        .consts
        .iter()
        .map(|s| small(s, &[Ty::F64, Ty::I32]))
        .collect();
    // Mixed sets of plain sets, each with a mixed map (new plain maps from one whole set) and
    // mixed Dats (new Dats of one type) that later loops may also use one by one.
    let (mut mixed_sets, mut mixed_maps, mut mixed_dats) = (Vec::new(), Vec::new(), Vec::new());
    for m in if shape.distributed {
        &[][..]
    } else {
        &g.mixed[..]
    } {
        let parts = 1 + m.sets as usize % 3;
        let comps: Vec<usize> = (0..parts)
            .map(|c| mix(m.seed as u64, 100 + c as u64) as usize % plain)
            .collect();
        let from = m.from as usize % ns;
        if sets[from] > 0 && comps.iter().any(|&c| sets[c] == 0) {
            continue;
        }
        let set = mixed_sets.len();
        mixed_sets.push(comps.clone());
        let component_maps = comps
            .iter()
            .enumerate()
            .map(|(c, &to)| {
                let arity = 1 + mix(m.seed as u64, 200 + c as u64) as usize % 3;
                let values = (0..sets[from] * arity)
                    .map(|i| {
                        (mix(m.seed as u64, (300 + c as u64) << 32 | i as u64) as usize
                            % sets[to].max(1)) as i32
                    })
                    .collect();
                maps.push(MapSpec {
                    from,
                    to,
                    arity,
                    values,
                    offsets: None,
                });
                maps.len() - 1
            })
            .collect();
        mixed_maps.push(MixedMapSpec {
            set,
            maps: component_maps,
        });
        for k in 0..1 + m.dats as usize % 2 {
            let ty = ty_of(mix(m.seed as u64, 400 + k as u64) as u8);
            let parts = comps
                .iter()
                .enumerate()
                .map(|(c, &on)| {
                    let dim = 1 + mix(m.seed as u64, 500 + (k * 8 + c) as u64) as usize % 3;
                    dats.push(DatSpec {
                        set: on,
                        ty,
                        dim,
                        init: values(ty, sets[on] * dim, m.seed ^ (k * 8 + c) as u32),
                    });
                    dats.len() - 1
                })
                .collect();
            mixed_dats.push(MixedDatSpec { set, dats: parts });
        }
    }
    // Subsets, each of a set or an earlier subset (so some are nested).
    let mut subsets: Vec<Option<SubsetSpec>> = vec![None; sets.len()];
    for sg in if shape.distributed {
        &[][..]
    } else {
        &g.subsets[..]
    } {
        let parent = sg.parent as usize % sets.len();
        let n = sets[parent];
        let keep = sg.density as usize % 8;
        let indices: Vec<usize> = (0..n)
            .filter(|&i| keep != 7 && (mix(sg.seed as u64, i as u64) % 7) as usize <= keep)
            .collect();
        sets.push(indices.len());
        columns.push(None);
        subsets.push(Some(SubsetSpec { parent, indices }));
    }
    let opt = |k: u32| (g.opts >> (2 * k)) & 3 != 3;
    let mut p = Program {
        sets,
        columns,
        subsets,
        mixed_sets,
        mixed_maps,
        mixed_dats,
        maps,
        dats,
        globals,
        consts,
        lazy_opts: op2::LazyOptions {
            early_halo: opt(0),
            successive_halo: opt(1),
            sibling_fusion: opt(2),
            chain_fusion: opt(3),
            temporaries: opt(4),
            tiling: opt(5),
        },
        tile_always: match (g.opts >> 12) % 8 {
            0 => Some(1),
            1 => Some(7),
            2 => Some(64),
            _ => None,
        },
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
    match kind % 8 {
        6 | 7 => decode_algebra(p, a, b).map(Step::Algebra),
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

/// A Dat algebra step on Dat `a % dats` (with one of the same set, dim and type), of a kind that
/// type takes: division for floating point only, and for 64-bit integers no products of Dats
/// (which would leave the values an `f64` holds exactly) and no differences of unsigned ones.
fn decode_algebra(p: &Program, a: usize, b: u32) -> Option<Algebra> {
    if p.dats.is_empty() {
        return None;
    }
    let x = a % p.dats.len();
    let (dx, m) = (&p.dats[x], |i: u64| mix(b as u64, i) as usize);
    let peers: Vec<usize> = (0..p.dats.len())
        .filter(|&y| {
            let d = &p.dats[y];
            d.set == dx.set && d.dim == dx.dim && d.ty == dx.ty
        })
        .collect();
    let y = peers[m(1) % peers.len()];
    let ty = dx.ty;
    let wide = matches!(ty, Ty::I64 | Ty::U64);
    let ops: Vec<BinOp> = match ty {
        Ty::F64 | Ty::F32 => vec![BinOp::Add, BinOp::Sub, BinOp::Mul, BinOp::Div],
        Ty::I32 | Ty::U32 | Ty::I64 => vec![BinOp::Add, BinOp::Sub, BinOp::Mul],
        Ty::U64 => vec![BinOp::Add, BinOp::Mul],
    };
    let op = ops[m(2) % ops.len()];
    let dat_op = if wide && op == BinOp::Mul {
        BinOp::Add
    } else {
        op
    };
    // Floats: multiples of 1/4 in -2..=2, never 0 for a division; integers: -3..=3, unsigned
    // ones 0..=3.
    let scalar = if ty.is_float() {
        let s = (m(3) % 17) as f64 / 4.0 - 2.0;
        if op == BinOp::Div && s == 0.0 { 0.5 } else { s }
    } else if ty.is_unsigned() {
        (m(3) % 4) as f64
    } else {
        (m(3) % 7) as f64 - 3.0
    };
    Some(match m(4) % 10 {
        0 => Algebra::Zero(x),
        1 => Algebra::Copy(x, y),
        2 => Algebra::Assign(dat_op, x, y),
        3 => Algebra::AssignScalar(op, x, scalar),
        4 => Algebra::New(dat_op, x, y),
        5 => Algebra::NewScalar(op, x, scalar),
        6 | 7 => Algebra::Axpy(x, scalar, y),
        8 => Algebra::Inner(x, y),
        _ => Algebra::Norm(x),
    })
}

/// Most args one loop gets.
const MAX_ARGS: usize = 8;

fn decode_loop(p: &Program, g: &LoopGene, n: usize) -> Option<LoopSpec> {
    let set = g.set as usize % p.sets.len();
    // Dats and maps live on the whole set a subset selects from.
    let root = p.root(set);
    let base = p.base_of(set);
    let is_subset = root != set;
    // A loop over an extruded set: every layer (half the loops), the bottom or the top one, or
    // over the cells' interior facets.
    let cells = p.columns[root].as_ref().is_some_and(|c| c.cells);
    let region = match (base.is_some() && !is_subset, g.region % 8) {
        (true, 2 | 6) => Region::Bottom,
        (true, 3) => Region::Top,
        (true, 5 | 7) if cells => Region::InteriorFacets,
        _ => Region::All,
    };
    let facets = region == Region::InteriorFacets;
    let mut args: Vec<ArgSpec> = Vec::new();
    let mut dat_roles: Vec<Option<Role>> = vec![None; p.dats.len()];
    let mut global_reduction: Vec<Option<Access>> = vec![None; p.globals.len()];
    // The extent of the loop's local iteration space, once a per-entry arg set it.
    let mut extent: Option<usize> = None;
    let mut has_mixed = false;
    // Maps from the set, and over an extruded set maps from its base too.
    let maps_to = |target: usize| -> Vec<usize> {
        (0..p.maps.len())
            .filter(|&m| {
                (p.maps[m].from == root || Some(p.maps[m].from) == base) && p.maps[m].to == target
            })
            .collect()
    };
    // Mixed Dats with a mixed map from the set into their mixed set (not at facets).
    let mixed: Vec<(usize, usize)> = (0..p.mixed_dats.len())
        .flat_map(|d| {
            (0..p.mixed_maps.len())
                .filter(move |&m| {
                    !facets
                        && p.mixed_maps[m].set == p.mixed_dats[d].set
                        && p.maps[p.mixed_maps[m].maps[0]].from == root
                })
                .map(move |m| (d, m))
        })
        .collect();
    let draw_role = |a: &ArgGene, own: bool| match a.access % 5 {
        0 => Role::Read,
        1 => Role::Increment,
        3 if own => Role::Local,
        4 => Role::Fill,
        _ => Role::Update([Update::Add, Update::Max, Update::Min][(a.access as usize / 5) % 3]),
    };
    let mode = |role: Role| match role {
        Role::Read => Access::Read,
        Role::Increment => Access::Inc,
        Role::Update(_) => Access::Rw,
        Role::Fill | Role::Local => Access::Write,
    };
    for a in g.args.iter().take(MAX_ARGS) {
        let what = a.what % 10;
        if what < 2 && !p.globals.is_empty() {
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
        // A mixed arg and a local iteration space do not share a drawn loop (op2 runs them, but
        // the reference interpreter does not model the joined entries).
        if what == 8 && !mixed.is_empty() && extent.is_none() {
            let (mdat, mmap) = mixed[a.obj as usize % mixed.len()];
            let parts = &p.mixed_dats[mdat].dats;
            // One role for every component (a Dat's own rows only directly, so never local).
            let role = parts
                .iter()
                .find_map(|&d| dat_roles[d])
                .unwrap_or_else(|| draw_role(a, false));
            if role == Role::Local
                || parts
                    .iter()
                    .any(|&d| dat_roles[d].is_some_and(|r| r != role))
            {
                continue;
            }
            for &d in parts {
                dat_roles[d] = Some(role);
            }
            has_mixed = true;
            args.push(ArgSpec::Mixed {
                mdat,
                mmap,
                access: mode(role),
            });
            continue;
        }
        // Direct: on the set, or on the base of an extruded one (the column's row); at facets
        // a Dat on the cells needs a map.
        let direct_on =
            |d: usize| (p.dats[d].set == root && !facets) || Some(p.dats[d].set) == base;
        let candidates: Vec<usize> = (0..p.dats.len())
            .filter(|&d| direct_on(d) || !maps_to(p.dats[d].set).is_empty())
            .collect();
        if candidates.is_empty() {
            continue;
        }
        let dat = candidates[a.obj as usize % candidates.len()];
        let direct = direct_on(dat);
        // Only a Dat on the set itself is the element's own: a base row is its whole column's.
        let own = p.dats[dat].set == root && !facets;
        let through = maps_to(p.dats[dat].set);
        let pick_map = |from: &[usize]| from[a.map as usize % from.len()];
        // Per-entry args share one extent.
        let entries: Vec<usize> = through
            .iter()
            .copied()
            .filter(|&m| extent.is_none_or(|x| x == p.row_len(set, m, facets)))
            .collect();
        let mut path = match what {
            2 | 3 if direct => Path::Direct,
            4 if !through.is_empty() => Path::Row {
                map: pick_map(&through),
            },
            7 if !entries.is_empty() && !has_mixed => Path::Entries {
                map: pick_map(&entries),
            },
            _ if !through.is_empty() => {
                let map = pick_map(&through);
                Path::Via {
                    map,
                    index: a.index as usize % p.row_len(set, map, facets),
                }
            }
            _ => Path::Direct,
        };
        let role = *dat_roles[dat].get_or_insert(draw_role(a, own));
        let access = match role {
            Role::Local => {
                path = Path::Direct;
                [Access::Read, Access::Rw, Access::Write, Access::Inc][(a.access as usize / 5) % 4]
            }
            r => mode(r),
        };
        if let Path::Entries { map } = path {
            extent = Some(p.row_len(set, map, facets));
        }
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
        ArgSpec::Mixed { mdat, .. } => dat_roles[p.mixed_dats[mdat].dats[0]],
        ArgSpec::Global { .. } => None,
    };
    let places = |a: &ArgSpec| places(p, set, facets, a);
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
        let places = places(a);
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
        for (entry, comp) in places(a) {
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
                (ArgSpec::Dat { .. } | ArgSpec::Mixed { .. }, Some(Role::Fill)) => {
                    let dat = match *a {
                        ArgSpec::Mixed { mdat, mmap, .. } => p.mixed_component(mdat, mmap, entry).0,
                        ArgSpec::Dat { dat, .. } => dat,
                        ArgSpec::Global { .. } => unreachable!("a Dat arg"),
                    };
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

/// The (row entry, component) pairs of an arg of a loop over `set` (`facets`: at interior
/// facets).
fn places(p: &Program, set: usize, facets: bool, a: &ArgSpec) -> Vec<(usize, usize)> {
    let dims: Vec<usize> = match *a {
        ArgSpec::Dat { dat, path, .. } => {
            let entries = match path {
                Path::Row { map } => p.row_len(set, map, facets),
                _ => 1,
            };
            vec![p.dats[dat].dim; entries]
        }
        ArgSpec::Global { global, .. } => vec![p.globals[global].dim],
        ArgSpec::Mixed { mdat, mmap, .. } => (0..p.mixed_arity(mmap))
            .map(|e| p.dats[p.mixed_component(mdat, mmap, e).0].dim)
            .collect(),
    };
    dims.iter()
        .enumerate()
        .flat_map(|(e, &dim)| (0..dim).map(move |c| (e, c)))
        .collect()
}

fn expr(b: &mut Bytes<'_>, ty: Ty, ops: &[(Operand, Ty)], depth: usize) -> Value {
    if ty.is_float() {
        Value::F(fexpr(b, ops, depth))
    } else {
        let ints: Vec<(Operand, Ty)> = ops.iter().copied().filter(|o| !o.1.is_float()).collect();
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
