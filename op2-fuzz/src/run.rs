//! Running a [`Program`] through op2's public API on one backend configuration, and comparing
//! what the host sees with the reference interpreter's observations.

use crate::program::{Algebra, ArgSpec, BinOp, Path, Program, SmallSpec, Step, Ty, const_name};
use crate::reference::Observation;
use op2::{
    Access, Arg, Communicator, Const, Dat, Global, Kernel, LazyOptions, Map, MixedDat, MixedMap,
    MixedSet, Runtime, Scalar, Set, TilingMode,
};
use std::path::Path as FsPath;
use std::sync::Arc;

/// A backend configuration the fuzzer runs programs on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Target {
    /// Short label (`openmp`, `opencl/staged`, `cuda-emulator/colour`).
    pub label: String,
    /// The backend's name.
    pub backend: String,
    /// Backend settings (`builder().setting(name, value)`).
    pub settings: Vec<(String, String)>,
    /// Threads (threaded backends).
    pub threads: Option<usize>,
    /// Thread ranks, each building its own part of the mesh (programs of plain sets only).
    pub ranks: Option<usize>,
}

impl Target {
    fn new(label: &str, backend: &str, settings: &[(&str, &str)], threads: Option<usize>) -> Self {
        Target {
            label: label.into(),
            backend: backend.into(),
            settings: settings
                .iter()
                .map(|(k, v)| (k.to_string(), v.to_string()))
                .collect(),
            threads,
            ranks: None,
        }
    }

    fn on_ranks(mut self, label: &str, ranks: usize) -> Self {
        self.label = label.into();
        self.ranks = Some(ranks);
        self
    }
}

/// Every configuration the fuzzer knows: `seq`; `openmp` on 2 threads with every thread given
/// work (`omp_min_per_thread` 1); OpenCL in its host and staged schemes; the CUDA emulator and
/// `cuda` with atomics, with colouring and with staging and atomics (`staged-atomics`).
pub fn targets() -> Vec<Target> {
    let mut all = vec![
        Target::new("seq", "seq", &[], None),
        Target::new("openmp", "openmp", &[("omp_min_per_thread", "1")], Some(2)),
        Target::new("opencl", "opencl", &[("opencl_scheme", "host")], None),
        Target::new(
            "opencl/staged",
            "opencl",
            &[("opencl_scheme", "staged")],
            None,
        ),
        Target::new(
            "cuda-emulator/atomics",
            "cuda-emulator",
            &[("cuda_strategy", "atomics")],
            None,
        ),
        Target::new(
            "cuda-emulator/colour",
            "cuda-emulator",
            &[("cuda_strategy", "colour")],
            None,
        ),
        Target::new(
            "cuda/atomics",
            "cuda",
            &[("cuda_strategy", "atomics")],
            None,
        ),
        Target::new(
            "cuda-emulator/staged-atomics",
            "cuda-emulator",
            &[("cuda_strategy", "staged-atomics")],
            None,
        ),
        Target::new("cuda/colour", "cuda", &[("cuda_strategy", "colour")], None),
        Target::new(
            "cuda/staged-atomics",
            "cuda",
            &[("cuda_strategy", "staged-atomics")],
            None,
        ),
    ];
    if cfg!(feature = "ranks") {
        let seq = all[0].clone();
        let openmp = all[1].clone();
        all.push(seq.clone().on_ranks("seq/2-ranks", 2));
        all.push(seq.on_ranks("seq/3-ranks", 3));
        all.push(openmp.clone().on_ranks("openmp/2-ranks", 2));
        all.push(openmp.on_ranks("openmp/3-ranks", 3));
    }
    all
}

/// The configuration labelled `label`.
pub fn target(label: &str) -> Option<Target> {
    targets().into_iter().find(|t| t.label == label)
}

/// How a program asks for its runtime.
#[derive(Debug, Clone, Copy)]
pub struct RuntimeOptions {
    /// Loops recorded lazily.
    pub lazy: bool,
    /// The block size, else the backend's.
    pub block_size: Option<usize>,
    /// The lazy graph's optimisations.
    pub lazy_opts: LazyOptions,
    /// Every chain tiled, with tiles of this many elements.
    pub tile_always: Option<usize>,
}

impl RuntimeOptions {
    /// What `p` asks for.
    pub fn of(p: &Program) -> Self {
        RuntimeOptions {
            lazy: p.lazy,
            block_size: p.block_size,
            lazy_opts: p.lazy_opts,
            tile_always: p.tile_always,
        }
    }
}

/// A runtime for `t` as `o` asks (compiled code cached in `cache`), as one rank of `comm`
/// when given.
pub fn runtime(
    t: &Target,
    o: RuntimeOptions,
    cache: Option<&FsPath>,
    comm: Option<Arc<dyn Communicator>>,
) -> op2::Result<Runtime> {
    let mut b = op2::builder()
        .backend(&t.backend)
        .lazy(o.lazy)
        .lazy_optimisations(o.lazy_opts);
    if let Some(size) = o.tile_always {
        b = b.tiling(TilingMode::Always).tile_size(size);
    }
    if let Some(c) = comm {
        b = b.communicator(c);
    }
    let block_size = o.block_size;
    for (k, v) in &t.settings {
        b = b.setting(k, v);
    }
    if let Some(n) = t.threads {
        b = b.num_threads(n);
    }
    if let Some(bs) = block_size {
        b = b.part_size(bs);
    }
    if let Some(dir) = cache {
        b = b.cache_dir(dir);
    }
    b.build()
}

/// Whether `t` can run here; why not otherwise.
pub fn probe(t: &Target) -> Result<(), String> {
    let o = RuntimeOptions {
        lazy: true,
        block_size: None,
        lazy_opts: LazyOptions::ALL,
        tile_always: None,
    };
    runtime(t, o, None, None)
        .map(drop)
        .map_err(|e| e.to_string())
}

/// One handle per element type: the fuzzer's values are `f64`s, op2's handles are typed.
macro_rules! typed {
    ($name:ident, $handle:ident) => {
        pub(crate) enum $name {
            F64($handle<f64>),
            F32($handle<f32>),
            I32($handle<i32>),
            U32($handle<u32>),
            I64($handle<i64>),
            U64($handle<u64>),
        }
    };
}

/// `$body` with `$h` bound to the typed handle inside `$e` (of enum `$name`).
macro_rules! each_type {
    ($name:ident, $e:expr, $h:ident => $body:expr) => {
        match $e {
            $name::F64($h) => $body,
            $name::F32($h) => $body,
            $name::I32($h) => $body,
            $name::U32($h) => $body,
            $name::I64($h) => $body,
            $name::U64($h) => $body,
        }
    };
}

typed!(DatH, Dat);
typed!(GlobalH, Global);
typed!(MixedH, MixedDat);

enum ConstH {
    F64(Const<f64>),
    I32(Const<i32>),
}

/// A program value (an `f64`) as `T` (exact: drawn values are).
pub(crate) fn to<T: Scalar + FromF64>(v: &[f64]) -> Vec<T> {
    v.iter().map(|&x| T::from_f64(x)).collect()
}

/// Conversions of the fuzzer's `f64`s into op2's element types, as C's casts do.
pub(crate) trait FromF64: Copy {
    fn from_f64(x: f64) -> Self;
    fn into_f64(self) -> f64;
}

macro_rules! from_f64 {
    ($($t:ty),*) => {$(
        impl FromF64 for $t {
            fn from_f64(x: f64) -> Self {
                x as $t
            }
            fn into_f64(self) -> f64 {
                self as f64
            }
        }
    )*};
}
from_f64!(f64, f32, i32, u32, i64, u64);

fn back<T: FromF64>(v: Vec<T>) -> Vec<f64> {
    v.into_iter().map(FromF64::into_f64).collect()
}

impl DatH {
    fn declare(
        rt: &Runtime,
        set: &Set,
        d: &crate::program::DatSpec,
        name: &str,
    ) -> op2::Result<Self> {
        Ok(match d.ty {
            Ty::F64 => DatH::F64(rt.decl_dat(set, d.dim, to::<f64>(&d.init), name)?),
            Ty::F32 => DatH::F32(rt.decl_dat(set, d.dim, to::<f32>(&d.init), name)?),
            Ty::I32 => DatH::I32(rt.decl_dat(set, d.dim, to::<i32>(&d.init), name)?),
            Ty::U32 => DatH::U32(rt.decl_dat(set, d.dim, to::<u32>(&d.init), name)?),
            Ty::I64 => DatH::I64(rt.decl_dat(set, d.dim, to::<i64>(&d.init), name)?),
            Ty::U64 => DatH::U64(rt.decl_dat(set, d.dim, to::<u64>(&d.init), name)?),
        })
    }

    fn arg(&self, path: Path, maps: &[Map], access: Access) -> Arg {
        fn one<T: Scalar>(d: &Dat<T>, path: Path, maps: &[Map], access: Access) -> Arg {
            match path {
                Path::Direct => d.arg(access),
                Path::Via { map, index } => d.arg_via(&maps[map], index, access),
                Path::Row { map } => d.arg_row(&maps[map], access),
                Path::Entries { map } => d.arg_entries(&maps[map], access),
            }
        }
        each_type!(DatH, self, d => one(d, path, maps, access))
    }

    fn read(&self) -> op2::Result<Vec<f64>> {
        each_type!(DatH, self, d => Ok(back(d.to_vec()?)))
    }

    /// Writes value `at` (across ranks every rank takes the Dat for writing, the owner of
    /// the element writes: `None` elsewhere).
    fn write(&self, at: Option<usize>, v: f64) -> op2::Result<()> {
        each_type!(DatH, self, d => {
            let mut data = d.data()?;
            if let Some(at) = at {
                data[at] = FromF64::from_f64(v);
            }
            Ok(())
        })
    }

    /// Collective: the whole Dat in global order on rank 0.
    #[cfg(feature = "ranks")]
    pub(crate) fn gather(&self, mesh: &op2::mpi::LocalMesh) -> op2::Result<Option<Vec<f64>>> {
        let e = |e: op2::mpi::MpiError| op2::Op2Error::Communication {
            reason: e.to_string(),
        };
        each_type!(DatH, self, d => Ok(mesh.gather(d).map_err(e)?.map(back)))
    }

    /// Dat algebra with `other` (of the same type: the program says so); what it shows.
    fn algebra(&self, a: Algebra, other: Option<&DatH>) -> op2::Result<AlgebraOut> {
        fn one<T: Scalar + FromF64>(
            x: &Dat<T>,
            y: Option<&Dat<T>>,
            a: Algebra,
        ) -> op2::Result<AlgebraOut>
        where
            Dat<T>: IntoDatH,
        {
            let y = || y.expect("a second Dat");
            let binop = |op: BinOp, x: &Dat<T>, y: &Dat<T>| -> op2::Result<Dat<T>> {
                match op {
                    BinOp::Add => x.add(y),
                    BinOp::Sub => x.sub(y),
                    BinOp::Mul => x.mul(y),
                    BinOp::Div => x.div(y),
                }
            };
            let scalar = |op: BinOp, s: f64| -> op2::Result<Dat<T>> {
                let s = T::from_f64(s);
                match op {
                    BinOp::Add => x.add_scalar(s),
                    BinOp::Sub => x.sub_scalar(s),
                    BinOp::Mul => x.mul_scalar(s),
                    BinOp::Div => x.div_scalar(s),
                }
            };
            match a {
                Algebra::Zero(_) => x.zero()?,
                Algebra::Copy(..) => x.copy(y())?,
                Algebra::Assign(op, ..) => match op {
                    BinOp::Add => x.add_assign(y())?,
                    BinOp::Sub => x.sub_assign(y())?,
                    BinOp::Mul => x.mul_assign(y())?,
                    BinOp::Div => x.div_assign(y())?,
                },
                Algebra::AssignScalar(op, _, s) => {
                    let s = T::from_f64(s);
                    match op {
                        BinOp::Add => x.add_scalar_assign(s)?,
                        BinOp::Sub => x.sub_scalar_assign(s)?,
                        BinOp::Mul => x.mul_scalar_assign(s)?,
                        BinOp::Div => x.div_scalar_assign(s)?,
                    }
                }
                Algebra::New(op, ..) => return Ok(AlgebraOut::Dat(binop(op, x, y())?.into_h())),
                Algebra::NewScalar(op, _, s) => {
                    return Ok(AlgebraOut::Dat(scalar(op, s)?.into_h()));
                }
                Algebra::Axpy(_, s, _) => x.axpy(T::from_f64(s), y())?,
                Algebra::Inner(..) => return Ok(AlgebraOut::Scalar(x.inner(y())?.into_f64())),
                Algebra::Norm(_) => return Ok(AlgebraOut::Scalar(x.norm()?)),
            }
            Ok(AlgebraOut::Nothing)
        }
        macro_rules! pair {
            ($($v:ident),*) => {
                match (self, other) {
                    $(
                        (DatH::$v(x), Some(DatH::$v(y))) => one(x, Some(y), a),
                        (DatH::$v(x), None) => one(x, None, a),
                    )*
                    _ => unreachable!("algebra on Dats of one type"),
                }
            };
        }
        pair!(F64, F32, I32, U32, I64, U64)
    }
}

/// What a step of Dat algebra gives the host to read.
enum AlgebraOut {
    Nothing,
    /// A new Dat.
    Dat(DatH),
    /// An inner product or a norm.
    Scalar(f64),
}

/// A typed Dat as the fuzzer's handle.
trait IntoDatH {
    fn into_h(self) -> DatH;
}

macro_rules! into_dat_h {
    ($($t:ty => $v:ident),*) => {$(
        impl IntoDatH for Dat<$t> {
            fn into_h(self) -> DatH {
                DatH::$v(self)
            }
        }
    )*};
}
into_dat_h!(f64 => F64, f32 => F32, i32 => I32, u32 => U32, i64 => I64, u64 => U64);

impl GlobalH {
    fn declare(rt: &Runtime, g: &SmallSpec, name: &str) -> op2::Result<Self> {
        Ok(match g.ty {
            Ty::F64 => GlobalH::F64(rt.decl_global(g.dim, &to::<f64>(&g.init), name)?),
            Ty::F32 => GlobalH::F32(rt.decl_global(g.dim, &to::<f32>(&g.init), name)?),
            Ty::I32 => GlobalH::I32(rt.decl_global(g.dim, &to::<i32>(&g.init), name)?),
            Ty::U32 => GlobalH::U32(rt.decl_global(g.dim, &to::<u32>(&g.init), name)?),
            Ty::I64 => GlobalH::I64(rt.decl_global(g.dim, &to::<i64>(&g.init), name)?),
            Ty::U64 => GlobalH::U64(rt.decl_global(g.dim, &to::<u64>(&g.init), name)?),
        })
    }

    fn arg(&self, access: Access) -> Arg {
        each_type!(GlobalH, self, g => g.arg(access))
    }

    fn read(&self) -> op2::Result<Vec<f64>> {
        each_type!(GlobalH, self, g => Ok(back(g.value()?)))
    }

    fn write(&self, v: &[f64]) -> op2::Result<()> {
        each_type!(GlobalH, self, g => g.set_value(&to(v)))
    }
}

impl MixedH {
    /// The mixed Dat of `parts` (Dats of one type) on `set`.
    fn of(set: &MixedSet, parts: Vec<&DatH>) -> op2::Result<Self> {
        macro_rules! join {
            ($($v:ident),*) => {
                match parts[0] {
                    $(DatH::$v(_) => MixedH::$v(MixedDat::from_dats(
                        set,
                        parts
                            .iter()
                            .map(|d| match d {
                                DatH::$v(d) => d.clone(),
                                _ => unreachable!("components of one type"),
                            })
                            .collect(),
                    )?),)*
                }
            };
        }
        Ok(join!(F64, F32, I32, U32, I64, U64))
    }

    fn arg(&self, map: &MixedMap, access: Access) -> Arg {
        each_type!(MixedH, self, d => d.arg_row(map, access))
    }
}

/// A program's objects declared on a runtime.
pub(crate) struct Declared {
    pub(crate) sets: Vec<Set>,
    pub(crate) maps: Vec<Map>,
    pub(crate) dats: Vec<DatH>,
    /// The distributed mesh the sets, maps and Dats belong to, across ranks.
    pub(crate) mesh: Option<Box<dyn Spread>>,
}

/// What a run across ranks adds to a program's objects (the thread ranks' distributed mesh):
/// which local element of this rank is a global one it owns, and the host's view of a Dat.
pub(crate) trait Spread {
    /// The local number of global element `e` of set `set` when this rank owns it.
    fn owned(&self, set: usize, e: usize) -> Option<usize>;
    /// Collective: the whole of `d` in global order on rank 0 (empty on the others).
    fn gather(&self, d: &DatH) -> op2::Result<Vec<f64>>;
}

fn ctx(what: String) -> impl Fn(op2::Op2Error) -> String {
    move |e: op2::Op2Error| format!("{what}: {e}")
}

/// Runs `p` in one process on `t`'s backend; what the host saw.
pub(crate) fn run_in_one_process(
    p: &Program,
    t: &Target,
    cache: Option<&FsPath>,
) -> Result<Vec<Vec<f64>>, String> {
    let rt = runtime(t, RuntimeOptions::of(p), cache, None).map_err(ctx("runtime".into()))?;
    let d = declare(p, &rt)?;
    run_steps(p, rt, d)
}

/// Declares `p`'s objects on `rt` (one process).
fn declare(p: &Program, rt: &Runtime) -> Result<Declared, String> {
    // Extruded sets come after their base, subsets after their parent.
    let mut sets: Vec<Set> = Vec::with_capacity(p.sets.len());
    for (i, &n) in p.sets.iter().enumerate() {
        let name = format!("s{i}");
        let set = match (&p.columns[i], &p.subsets[i]) {
            (_, Some(sub)) => {
                let indices: Vec<i32> = sub.indices.iter().map(|&x| x as i32).collect();
                rt.decl_subset(&sets[sub.parent], indices, &name)
            }
            (None, None) => rt.decl_set(n, &name),
            (Some(c), None) => {
                let layers: op2::Layers = if c.uniform {
                    c.layers.first().copied().unwrap_or(2).into()
                } else {
                    c.layers.clone().into()
                };
                if c.cells {
                    rt.decl_extruded_set(&sets[c.base], layers, &name)
                } else {
                    rt.decl_extruded_nodes(&sets[c.base], layers, &name)
                }
            }
        };
        sets.push(set.map_err(ctx("decl_set".into()))?);
    }
    let maps: Vec<Map> = p
        .maps
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let (from, to, name) = (&sets[m.from], &sets[m.to], format!("m{i}"));
            match &m.offsets {
                Some(o) => {
                    rt.decl_extruded_map(from, to, m.arity, m.values.clone(), o.clone(), &name)
                }
                None => rt.decl_map(from, to, m.arity, m.values.clone(), &name),
            }
        })
        .collect::<op2::Result<_>>()
        .map_err(ctx("decl_map".into()))?;
    let dats: Vec<DatH> = p
        .dats
        .iter()
        .enumerate()
        .map(|(i, d)| DatH::declare(rt, &sets[d.set], d, &format!("d{i}")))
        .collect::<op2::Result<_>>()
        .map_err(ctx("decl_dat".into()))?;
    Ok(Declared {
        sets,
        maps,
        dats,
        mesh: None,
    })
}

/// Runs `p`'s steps on its declared objects; what the host saw (on rank 0; other ranks see
/// empty reads of Dats).
pub(crate) fn run_steps(p: &Program, rt: Runtime, d: Declared) -> Result<Vec<Vec<f64>>, String> {
    let Declared {
        sets,
        maps,
        dats,
        mesh,
    } = d;
    let globals: Vec<GlobalH> = p
        .globals
        .iter()
        .enumerate()
        .map(|(i, g)| GlobalH::declare(&rt, g, &format!("g{i}")))
        .collect::<op2::Result<_>>()
        .map_err(ctx("decl_global".into()))?;
    let consts: Vec<ConstH> = p
        .consts
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let name = const_name(i);
            Ok(match c.ty {
                Ty::I32 => ConstH::I32(rt.decl_const(c.dim, &to::<i32>(&c.init), &name)?),
                _ => ConstH::F64(rt.decl_const(c.dim, &c.init, &name)?),
            })
        })
        .collect::<op2::Result<_>>()
        .map_err(ctx("decl_const".into()))?;
    let mixed_sets: Vec<MixedSet> = p
        .mixed_sets
        .iter()
        .enumerate()
        .map(|(i, parts)| {
            let parts: Vec<&Set> = parts.iter().map(|&s| &sets[s]).collect();
            rt.decl_mixed_set(&parts, &format!("ms{i}"))
        })
        .collect::<op2::Result<_>>()
        .map_err(ctx("decl_mixed_set".into()))?;
    let mixed_maps: Vec<MixedMap> = p
        .mixed_maps
        .iter()
        .enumerate()
        .map(|(i, m)| {
            let parts: Vec<&Map> = m.maps.iter().map(|&k| &maps[k]).collect();
            rt.decl_mixed_map(&mixed_sets[m.set], &parts, &format!("mm{i}"))
        })
        .collect::<op2::Result<_>>()
        .map_err(ctx("decl_mixed_map".into()))?;
    let mixed_dats: Vec<MixedH> = p
        .mixed_dats
        .iter()
        .map(|m| {
            MixedH::of(
                &mixed_sets[m.set],
                m.dats.iter().map(|&d| &dats[d]).collect(),
            )
        })
        .collect::<op2::Result<_>>()
        .map_err(ctx("MixedDat::from_dats".into()))?;
    // A Dat as the host sees it: the whole of it (gathered on rank 0 across ranks).
    let read = |d: &DatH| -> op2::Result<Vec<f64>> {
        match &mesh {
            None => d.read(),
            Some(m) => m.gather(d),
        }
    };
    let mut seen = Vec::new();
    for (n, step) in p.steps.iter().enumerate() {
        let at = |what: &str| ctx(format!("step {n} ({what})"));
        match step {
            Step::Loop(l) => {
                let k = Kernel::new(&l.name, &l.kernel_source(p)).map_err(at("Kernel::new"))?;
                let args: Vec<Arg> = l
                    .args
                    .iter()
                    .map(|a| match *a {
                        ArgSpec::Dat { dat, path, access } => dats[dat].arg(path, &maps, access),
                        ArgSpec::Global { global, access } => globals[global].arg(access),
                        ArgSpec::Mixed { mdat, mmap, access } => {
                            mixed_dats[mdat].arg(&mixed_maps[mmap], access)
                        }
                    })
                    .collect();
                rt.par_loop_region(&k, &sets[l.set], l.region, args)
                    .map_err(at("par_loop"))?;
            }
            Step::ReadDat(d) => seen.push(read(&dats[*d]).map_err(at("read"))?),
            Step::WriteDat { dat, at: i, value } => {
                let local = match &mesh {
                    None => Some(*i),
                    Some(m) => {
                        let (dim, set) = (p.dats[*dat].dim, p.dats[*dat].set);
                        m.owned(set, *i / dim).map(|e| e * dim + *i % dim)
                    }
                };
                dats[*dat].write(local, *value).map_err(at("host write"))?
            }
            Step::ReadGlobal(g) => seen.push(globals[*g].read().map_err(at("value"))?),
            Step::WriteGlobal(g, v) => globals[*g].write(v).map_err(at("set_value"))?,
            Step::WriteConst(c, v) => match &consts[*c] {
                ConstH::F64(k) => k.set_value(v),
                ConstH::I32(k) => k.set_value(&to::<i32>(v)),
            }
            .map_err(at("const set_value"))?,
            Step::Flush => rt.flush().map_err(at("flush"))?,
            Step::Algebra(a) => {
                let (x, y) = match *a {
                    Algebra::Zero(x) | Algebra::Norm(x) => (x, None),
                    Algebra::AssignScalar(_, x, _) | Algebra::NewScalar(_, x, _) => (x, None),
                    Algebra::Copy(x, y)
                    | Algebra::Assign(_, x, y)
                    | Algebra::New(_, x, y)
                    | Algebra::Axpy(x, _, y)
                    | Algebra::Inner(x, y) => (x, Some(&dats[y])),
                };
                match dats[x].algebra(*a, y).map_err(at("Dat algebra"))? {
                    AlgebraOut::Nothing => {}
                    AlgebraOut::Dat(d) => seen.push(read(&d).map_err(at("read"))?),
                    AlgebraOut::Scalar(v) => seen.push(vec![v]),
                }
            }
        }
    }
    if p.drop_first {
        drop(rt);
    }
    for d in &dats {
        seen.push(read(d).map_err(ctx("final read".into()))?);
    }
    for g in &globals {
        seen.push(g.read().map_err(ctx("final value".into()))?);
    }
    Ok(seen)
}

/// The first differences between what a backend saw and the reference's observations.
pub fn compare(want: &[Observation], got: &[Vec<f64>]) -> Result<(), String> {
    let mut out = Vec::new();
    for (w, g) in want.iter().zip(got) {
        if w.values.len() != g.len() {
            out.push(format!(
                "{}: {} values, expected {}",
                w.what,
                g.len(),
                w.values.len()
            ));
            continue;
        }
        let wrong: Vec<usize> = (0..g.len())
            .filter(|&i| {
                let (a, b) = (g[i], w.values[i]);
                !((a - b).abs() <= 2.0 * w.errs[i] || (a.is_nan() && b.is_nan()))
            })
            .collect();
        if !wrong.is_empty() {
            let dim = w.dim.max(1);
            let shown: Vec<String> = wrong
                .iter()
                .take(4)
                .map(|&i| {
                    format!(
                        "[{} comp {}] {} (expected {} within {:e})",
                        i / dim,
                        i % dim,
                        g[i],
                        w.values[i],
                        2.0 * w.errs[i]
                    )
                })
                .collect();
            out.push(format!(
                "{}: {} of {} values wrong: {}",
                w.what,
                wrong.len(),
                g.len(),
                shown.join("; ")
            ));
        }
    }
    if got.len() != want.len() {
        out.push(format!(
            "{} observations, expected {}",
            got.len(),
            want.len()
        ));
    }
    if out.is_empty() {
        Ok(())
    } else {
        Err(out.join("\n"))
    }
}
