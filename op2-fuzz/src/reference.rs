//! The reference interpreter: runs a [`Program`] in plain Rust, element by element in order, with
//! pointer semantics (args that reach the same value see each other's writes), never calling op2.
//! What it observes at each host read, and at the end, is what every backend must observe.

use crate::expr::{Approx, Operand, Value};
use crate::program::{
    Algebra, ArgSpec, BinOp, Element, LoopSpec, Path, Program, SmallSpec, Step, Ty, Update,
};
use op2::{Access, Region};

/// Values a program shows the host at one point: a Dat or Global read between loops or at the end.
#[derive(Debug, Clone, PartialEq)]
pub struct Observation {
    /// What was read and when, for messages (`d3 at step 7`).
    pub what: String,
    /// Element type.
    pub ty: Ty,
    /// Values per element.
    pub dim: usize,
    /// The values.
    pub values: Vec<f64>,
    /// Per value, how far a correct backend may stray from it (0: not at all).
    pub errs: Vec<f64>,
}

/// One stored value: what it is, and what its error bound is made of. Since it was last assigned,
/// `adds` additions (increments, commutative updates) of terms whose magnitudes sum to `mag` went
/// into it, in an order a backend may change: each rounds by at most `eps * mag`.
#[derive(Debug, Clone, Copy)]
struct Slot {
    value: f64,
    /// Error inherited from the values computed into it.
    err: f64,
    mag: f64,
    adds: f64,
}

impl Slot {
    fn assigned(a: Approx) -> Self {
        Slot {
            value: a.value,
            err: a.err,
            mag: a.value.abs(),
            adds: 0.0,
        }
    }

    /// The value with its whole error bound, under `ty`'s rounding.
    fn approx(&self, ty: Ty) -> Approx {
        Approx {
            value: self.value,
            err: self.err + 2.0 * self.adds * eps(ty) * self.mag,
        }
    }
}

/// Unit of rounding of `ty`'s arithmetic (generous).
fn eps(ty: Ty) -> f64 {
    match ty {
        Ty::F64 => f64::EPSILON,
        Ty::F32 => f32::EPSILON as f64,
        _ => 0.0,
    }
}

/// The values of one Dat, Global or accumulator.
#[derive(Debug, Clone)]
struct Store {
    ty: Ty,
    slots: Vec<Slot>,
}

impl Store {
    fn new(ty: Ty, init: &[f64]) -> Self {
        Store {
            ty,
            slots: init
                .iter()
                .map(|&v| Slot::assigned(Approx::exact(v)))
                .collect(),
        }
    }

    fn get(&self, i: usize) -> Approx {
        self.slots[i].approx(self.ty)
    }

    fn observe(&self, what: String, dim: usize) -> Observation {
        Observation {
            what,
            ty: self.ty,
            dim,
            values: self.slots.iter().map(|s| s.value).collect(),
            errs: self.slots.iter().map(|s| s.approx(self.ty).err).collect(),
        }
    }
}

/// Where a place or operand of element `e` lives.
#[derive(Debug, Clone, Copy)]
enum Loc {
    Dat(usize, usize),
    /// Reduction accumulator of an arg.
    Acc(usize, usize),
    /// A Global's value as it was before the loop (READ args).
    Snapshot(usize, usize),
}

struct State<'p> {
    p: &'p Program,
    dats: Vec<Store>,
    globals: Vec<Store>,
    consts: Vec<Vec<f64>>,
}

/// Names of the final observations, in order: every Dat, then every Global.
pub fn final_names(p: &Program) -> Vec<String> {
    (0..p.dats.len())
        .map(|d| format!("d{d} at the end"))
        .chain((0..p.globals.len()).map(|g| format!("g{g} at the end")))
        .collect()
}

/// Runs `p` and returns what the host sees: each read step's values, then every Dat and Global at
/// the end.
pub fn run(p: &Program) -> Vec<Observation> {
    let mut st = State {
        p,
        dats: p.dats.iter().map(|d| Store::new(d.ty, &d.init)).collect(),
        globals: p
            .globals
            .iter()
            .map(|g| Store::new(g.ty, &g.init))
            .collect(),
        consts: p.consts.iter().map(|c| c.init.clone()).collect(),
    };
    let mut seen = Vec::new();
    for (n, step) in p.steps.iter().enumerate() {
        match step {
            Step::Loop(l) => st.run_loop(l),
            Step::ReadDat(d) => seen.push(st.dat_observation(*d, format!("d{d} at step {n}"))),
            Step::WriteDat { dat, at, value } => {
                st.dats[*dat].slots[*at] = Slot::assigned(Approx::exact(*value))
            }
            Step::ReadGlobal(g) => {
                seen.push(st.global_observation(*g, format!("g{g} at step {n}")))
            }
            Step::WriteGlobal(g, v) => st.globals[*g] = Store::new(p.globals[*g].ty, v),
            Step::WriteConst(c, v) => st.consts[*c] = v.clone(),
            Step::Flush => {}
            Step::Algebra(a) => seen.extend(st.algebra(*a, n)),
        }
    }
    let mut names = final_names(p).into_iter();
    for d in 0..p.dats.len() {
        seen.push(st.dat_observation(d, names.next().expect("a name per Dat")));
    }
    for g in 0..p.globals.len() {
        seen.push(st.global_observation(g, names.next().expect("a name per Global")));
    }
    seen
}

impl State<'_> {
    fn dat_observation(&self, d: usize, what: String) -> Observation {
        self.dats[d].observe(what, self.p.dats[d].dim)
    }

    fn global_observation(&self, g: usize, what: String) -> Observation {
        let spec: &SmallSpec = &self.p.globals[g];
        self.globals[g].observe(what, spec.dim)
    }

    fn loc(&self, l: &LoopSpec, x: Element, arg: usize, entry: usize, comp: usize) -> Loc {
        match l.args[arg] {
            ArgSpec::Dat { dat, path, .. } => {
                let dim = self.p.dats[dat].dim;
                Loc::Dat(dat, self.p.row(l.set, dat, path, x, entry) * dim + comp)
            }
            ArgSpec::Global { global, access } => {
                if access == Access::Read {
                    Loc::Snapshot(global, comp)
                } else {
                    Loc::Acc(arg, comp)
                }
            }
            ArgSpec::Mixed { mdat, mmap, .. } => {
                let (dat, row) = self.p.mixed_row(l.set, mdat, mmap, x, entry);
                Loc::Dat(dat, row * self.p.dats[dat].dim + comp)
            }
        }
    }

    fn run_loop(&mut self, l: &LoopSpec) {
        let p = self.p;
        let snapshot = self.globals.clone();
        // Each reduction arg accumulates on its own: sums from zero, MIN and MAX from the value.
        let mut accs: Vec<Option<Store>> = l
            .args
            .iter()
            .map(|a| match *a {
                ArgSpec::Global { global, access } if access.is_reduction() => {
                    Some(if access == Access::Inc {
                        Store::new(p.globals[global].ty, &vec![0.0; p.globals[global].dim])
                    } else {
                        self.globals[global].clone()
                    })
                }
                _ => None,
            })
            .collect();
        // A local iteration space calls the kernel once per entry of the row.
        let facets = l.region == Region::InteriorFacets;
        let extent = l
            .args
            .iter()
            .find_map(|a| match *a {
                ArgSpec::Dat {
                    path: Path::Entries { map },
                    ..
                } => Some(p.row_len(l.set, map, facets)),
                _ => None,
            })
            .unwrap_or(1);
        let calls = p
            .elements(l)
            .into_iter()
            .flat_map(|x| (0..extent).map(move |i| Element { i, ..x }));
        for e in calls {
            for s in &l.body {
                let ty = l.arg_ty(p, s.place.arg);
                let read = |o: &Operand, accs: &[Option<Store>]| -> Approx {
                    match *o {
                        Operand::Const { konst, comp } => Approx::exact(self.consts[konst][comp]),
                        Operand::Arg { arg, entry, comp } => {
                            match self.loc(l, e, arg, entry, comp) {
                                Loc::Dat(d, i) => self.dats[d].get(i),
                                Loc::Snapshot(g, c) => snapshot[g].get(c),
                                Loc::Acc(a, c) => accs[a].as_ref().expect("accumulator").get(c),
                            }
                        }
                    }
                };
                let value = match &s.value {
                    Value::F(f) => f.eval(&|o| read(o, &accs)),
                    Value::I(i) => Approx::exact(i.eval(&|o| read(o, &accs).value as i64) as f64),
                };
                let inc = l.args[s.place.arg].access() == Access::Inc;
                let loc = self.loc(l, e, s.place.arg, s.place.entry, s.place.comp);
                let (store, i) = match loc {
                    Loc::Dat(d, i) => (&mut self.dats[d], i),
                    Loc::Acc(a, c) => (accs[a].as_mut().expect("accumulator"), c),
                    Loc::Snapshot(..) => unreachable!("READ Globals are never written"),
                };
                store.slots[i] = apply(ty, s.update, inc, store.slots[i], value);
            }
        }
        // Reductions land in arg order.
        for (a, acc) in l.args.iter().zip(accs) {
            let (ArgSpec::Global { global, access }, Some(acc)) = (*a, acc) else {
                continue;
            };
            let ty = p.globals[global].ty;
            let g = &mut self.globals[global];
            for (slot, part) in g.slots.iter_mut().zip(&acc.slots) {
                *slot = match access {
                    Access::Inc => {
                        let mut sum = add(
                            ty,
                            *slot,
                            Approx {
                                value: part.value,
                                err: part.err,
                            },
                        );
                        // The partial's own additions may be regrouped with the rest.
                        sum.adds += part.adds;
                        sum.mag += part.mag;
                        sum
                    }
                    Access::Min => pick(ty, *slot, part.approx(ty), part.value < slot.value),
                    _ => pick(ty, *slot, part.approx(ty), part.value > slot.value),
                };
            }
        }
    }
}

/// `old + v` in `ty`'s arithmetic (C's `+=` on that type): one more addition whose place among
/// the others a backend may change.
fn add(ty: Ty, old: Slot, v: Approx) -> Slot {
    let value = match ty {
        Ty::F64 => old.value + v.value,
        Ty::F32 => (old.value as f32 + v.value as f32) as f64,
        _ => ty.wrap(old.value as i128 + v.value as i128),
    };
    Slot {
        value,
        err: old.err + v.err,
        mag: old.mag + v.value.abs(),
        adds: old.adds + 1.0,
    }
}

/// The old value or a candidate, as a MIN or MAX keeps one: exact, so a fresh slot.
fn pick(ty: Ty, old: Slot, new: Approx, take: bool) -> Slot {
    let err = old.approx(ty).err.max(new.err);
    let value = if take { new.value } else { old.value };
    Slot::assigned(Approx { value, err })
}

/// One statement's effect, exactly as the printed C computes it.
fn apply(ty: Ty, update: Update, inc: bool, old: Slot, v: Approx) -> Slot {
    if !ty.is_float() {
        let v = v.value as i64;
        let small = ty.wrap(ty.small(v) as i128);
        let new = match update {
            Update::Assign => small,
            Update::Add => ty.wrap(old.value as i128 + (v & 1023) as i128),
            Update::Min => old.value.min(small),
            Update::Max => old.value.max(small),
        };
        return Slot::assigned(Approx::exact(new));
    }
    // `(T)v`: rounding to `float` may move a value that carries an error by one more ulp.
    let cast = Approx {
        value: ty.round(v.value),
        err: v.err + eps(ty) * v.value.abs(),
    };
    match update {
        Update::Assign => Slot::assigned(cast),
        // INC: `p += (T)v` in T's arithmetic.
        Update::Add if inc => add(ty, old, cast),
        // RW: `p = (T)((double)p + (double)(T)v)`.
        Update::Add => Slot {
            value: ty.round(old.value + cast.value),
            err: old.err + cast.err,
            mag: old.mag + cast.value.abs(),
            adds: old.adds + 1.0,
        },
        Update::Min => pick(ty, old, cast, cast.value < old.value),
        Update::Max => pick(ty, old, cast, cast.value > old.value),
    }
}

/// `x op y` in `ty`'s arithmetic, as Dat algebra computes it (integers wrap), with its error.
fn binop(ty: Ty, op: BinOp, x: Approx, y: Approx) -> Approx {
    if !ty.is_float() {
        let (a, b) = (x.value as i128, y.value as i128);
        let r = match op {
            BinOp::Add => a + b,
            BinOp::Sub => a - b,
            BinOp::Mul => a.wrapping_mul(b),
            BinOp::Div => unreachable!("no integer division is drawn"),
        };
        return Approx::exact(ty.wrap(r));
    }
    let exact = match op {
        BinOp::Add => x.value + y.value,
        BinOp::Sub => x.value - y.value,
        BinOp::Mul => x.value * y.value,
        BinOp::Div => x.value / y.value,
    };
    let value = ty.round(exact);
    let carried = match op {
        BinOp::Add | BinOp::Sub => x.err + y.err,
        BinOp::Mul => x.value.abs() * y.err + y.value.abs() * x.err + x.err * y.err,
        BinOp::Div if y.value.abs() <= y.err => f64::INFINITY,
        BinOp::Div => (x.err + value.abs() * y.err) / (y.value.abs() - y.err),
    };
    Approx {
        value,
        err: carried + 2.0 * eps(ty) * exact.abs(),
    }
}

impl State<'_> {
    /// One step of Dat algebra; what it shows the host (a new Dat, an inner product or a norm).
    fn algebra(&mut self, a: Algebra, n: usize) -> Vec<Observation> {
        let p = self.p;
        let ty_of = |d: usize| p.dats[d].ty;
        let scalar = |d: usize, s: f64| Approx::exact(ty_of(d).round(s));
        let each = |st: &Self, x: usize, f: &dyn Fn(usize, Approx) -> Approx| -> Vec<Approx> {
            (0..st.dats[x].slots.len())
                .map(|i| f(i, st.dats[x].get(i)))
                .collect()
        };
        let store = |st: &mut Self, x: usize, v: Vec<Approx>| {
            st.dats[x].slots = v.into_iter().map(Slot::assigned).collect();
        };
        let show = |what: String, ty: Ty, dim: usize, v: Vec<Approx>| Observation {
            what,
            ty,
            dim,
            values: v.iter().map(|a| a.value).collect(),
            errs: v.iter().map(|a| a.err).collect(),
        };
        match a {
            Algebra::Zero(x) => {
                let zeros = vec![Approx::exact(0.0); self.dats[x].slots.len()];
                store(self, x, zeros);
                vec![]
            }
            Algebra::Copy(x, y) => {
                self.dats[y] = self.dats[x].clone();
                vec![]
            }
            Algebra::Assign(op, x, y) | Algebra::New(op, x, y) => {
                let other = self.dats[y].clone();
                let v = each(self, x, &|i, a| binop(ty_of(x), op, a, other.get(i)));
                if let Algebra::New(..) = a {
                    let what = format!("d{x} {op:?} d{y} at step {n}");
                    return vec![show(what, ty_of(x), p.dats[x].dim, v)];
                }
                store(self, x, v);
                vec![]
            }
            Algebra::AssignScalar(op, x, s) | Algebra::NewScalar(op, x, s) => {
                let v = each(self, x, &|_, a| binop(ty_of(x), op, a, scalar(x, s)));
                if let Algebra::NewScalar(..) = a {
                    let what = format!("d{x} {op:?} {s} at step {n}");
                    return vec![show(what, ty_of(x), p.dats[x].dim, v)];
                }
                store(self, x, v);
                vec![]
            }
            Algebra::Axpy(y, s, x) => {
                let xs = self.dats[x].clone();
                let ty = ty_of(y);
                let v = each(self, y, &|i, a| {
                    let prod = binop(ty, BinOp::Mul, scalar(y, s), xs.get(i));
                    binop(ty, BinOp::Add, a, prod)
                });
                store(self, y, v);
                vec![]
            }
            Algebra::Inner(x, y) => {
                let v = self.inner(x, y);
                vec![show(
                    format!("d{x}.inner(d{y}) at step {n}"),
                    ty_of(x),
                    1,
                    vec![v],
                )]
            }
            Algebra::Norm(x) => {
                let s = self.inner(x, x);
                let root = |v: f64| v.max(0.0).sqrt();
                let v = Approx {
                    value: s.value.sqrt(),
                    err: root(s.value + s.err) - root(s.value - s.err)
                        + 4.0 * f64::EPSILON * root(s.value),
                };
                vec![show(
                    format!("d{x}.norm() at step {n}"),
                    Ty::F64,
                    1,
                    vec![v],
                )]
            }
        }
    }

    /// The sum of `x * y` over every value, in `x`'s type (integers wrap), with the error an
    /// order of additions a backend may choose adds.
    fn inner(&self, x: usize, y: usize) -> Approx {
        let ty = self.p.dats[x].ty;
        let (a, b) = (&self.dats[x], &self.dats[y]);
        let n = a.slots.len();
        if !ty.is_float() {
            let sum = (0..n)
                .map(|i| (a.get(i).value as i128).wrapping_mul(b.get(i).value as i128))
                .fold(0i128, |s, t| s.wrapping_add(t));
            return Approx::exact(ty.wrap(sum));
        }
        let mut value = 0.0;
        let (mut mag, mut carried) = (0.0, 0.0);
        for i in 0..n {
            let t = binop(ty, BinOp::Mul, a.get(i), b.get(i));
            value = ty.round(value + t.value);
            mag += t.value.abs();
            carried += t.err;
        }
        Approx {
            value,
            err: carried + 2.0 * (n as f64 + 1.0) * eps(ty) * mag,
        }
    }
}
