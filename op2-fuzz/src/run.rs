//! Running a [`Program`] through op2's public API on one backend configuration, and comparing
//! what the host sees with the reference interpreter's observations.

use crate::program::{ArgSpec, Path, Program, Step, Ty, const_name};
use crate::reference::{self, Observation};
use op2::{Access, Arg, Const, Dat, Global, Kernel, Map, Runtime, Scalar, Set};
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::path::Path as FsPath;

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
        }
    }
}

/// Every configuration the fuzzer knows: `seq`; `openmp` on 2 threads with every thread given
/// work (`omp_min_per_thread` 1); OpenCL in its host and staged schemes; the CUDA emulator and
/// `cuda` with atomics, with colouring and with staging and atomics (`staged-atomics`).
pub fn targets() -> Vec<Target> {
    vec![
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
    ]
}

/// The configuration labelled `label`.
pub fn target(label: &str) -> Option<Target> {
    targets().into_iter().find(|t| t.label == label)
}

/// A runtime for `t` (lazy or eager, block size when given, compiled code cached in `cache`).
pub fn runtime(
    t: &Target,
    lazy: bool,
    block_size: Option<usize>,
    cache: Option<&FsPath>,
) -> op2::Result<Runtime> {
    let mut b = op2::builder().backend(&t.backend).lazy(lazy);
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
    runtime(t, true, None, None)
        .map(drop)
        .map_err(|e| e.to_string())
}

enum DatH {
    F64(Dat<f64>),
    F32(Dat<f32>),
    I32(Dat<i32>),
}

enum GlobalH {
    F64(Global<f64>),
    F32(Global<f32>),
    I32(Global<i32>),
}

enum ConstH {
    F64(Const<f64>),
    I32(Const<i32>),
}

fn cast<A: Copy, B>(v: &[A], f: impl Fn(A) -> B) -> Vec<B> {
    v.iter().map(|&x| f(x)).collect()
}

impl DatH {
    fn arg(&self, path: Path, maps: &[Map], access: Access) -> Arg {
        fn one<T: Scalar>(d: &Dat<T>, path: Path, maps: &[Map], access: Access) -> Arg {
            match path {
                Path::Direct => d.arg(access),
                Path::Via { map, index } => d.arg_via(&maps[map], index, access),
                Path::Row { map } => d.arg_row(&maps[map], access),
            }
        }
        match self {
            DatH::F64(d) => one(d, path, maps, access),
            DatH::F32(d) => one(d, path, maps, access),
            DatH::I32(d) => one(d, path, maps, access),
        }
    }

    fn read(&self) -> op2::Result<Vec<f64>> {
        Ok(match self {
            DatH::F64(d) => d.to_vec()?,
            DatH::F32(d) => cast(&d.to_vec()?, |x| x as f64),
            DatH::I32(d) => cast(&d.to_vec()?, |x| x as f64),
        })
    }

    fn write(&self, at: usize, v: f64) -> op2::Result<()> {
        match self {
            DatH::F64(d) => d.data()?[at] = v,
            DatH::F32(d) => d.data()?[at] = v as f32,
            DatH::I32(d) => d.data()?[at] = v as i32,
        }
        Ok(())
    }
}

impl GlobalH {
    fn arg(&self, access: Access) -> Arg {
        match self {
            GlobalH::F64(g) => g.arg(access),
            GlobalH::F32(g) => g.arg(access),
            GlobalH::I32(g) => g.arg(access),
        }
    }

    fn read(&self) -> op2::Result<Vec<f64>> {
        Ok(match self {
            GlobalH::F64(g) => g.value()?,
            GlobalH::F32(g) => cast(&g.value()?, |x| x as f64),
            GlobalH::I32(g) => cast(&g.value()?, |x| x as f64),
        })
    }

    fn write(&self, v: &[f64]) -> op2::Result<()> {
        match self {
            GlobalH::F64(g) => g.set_value(v),
            GlobalH::F32(g) => g.set_value(&cast(v, |x| x as f32)),
            GlobalH::I32(g) => g.set_value(&cast(v, |x| x as i32)),
        }
    }
}

/// Runs `p` on `t` and returns what the host saw, in the reference's order; an op2 error or a
/// panic is the failure's message.
pub fn execute(p: &Program, t: &Target, cache: Option<&FsPath>) -> Result<Vec<Vec<f64>>, String> {
    match catch_unwind(AssertUnwindSafe(|| execute_inner(p, t, cache))) {
        Ok(r) => r,
        Err(panic) => {
            let msg = panic
                .downcast_ref::<String>()
                .cloned()
                .or_else(|| panic.downcast_ref::<&str>().map(|s| s.to_string()))
                .unwrap_or_else(|| "(no message)".into());
            Err(format!("panicked: {msg}"))
        }
    }
}

fn execute_inner(p: &Program, t: &Target, cache: Option<&FsPath>) -> Result<Vec<Vec<f64>>, String> {
    let ctx = |what: String| move |e: op2::Op2Error| format!("{what}: {e}");
    let rt = runtime(t, p.lazy, p.block_size, cache).map_err(ctx("runtime".into()))?;
    // Extruded sets come after their base.
    let mut sets: Vec<Set> = Vec::with_capacity(p.sets.len());
    for (i, &n) in p.sets.iter().enumerate() {
        let name = format!("s{i}");
        let set = match &p.columns[i] {
            None => rt.decl_set(n, &name),
            Some(c) => {
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
        .map(|(i, d)| {
            let (s, name) = (&sets[d.set], format!("d{i}"));
            Ok(match d.ty {
                Ty::F64 => DatH::F64(rt.decl_dat(s, d.dim, &d.init, &name)?),
                Ty::F32 => DatH::F32(rt.decl_dat(s, d.dim, cast(&d.init, |x| x as f32), &name)?),
                Ty::I32 => DatH::I32(rt.decl_dat(s, d.dim, cast(&d.init, |x| x as i32), &name)?),
            })
        })
        .collect::<op2::Result<_>>()
        .map_err(ctx("decl_dat".into()))?;
    let globals: Vec<GlobalH> = p
        .globals
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let name = format!("g{i}");
            Ok(match g.ty {
                Ty::F64 => GlobalH::F64(rt.decl_global(g.dim, &g.init, &name)?),
                Ty::F32 => {
                    GlobalH::F32(rt.decl_global(g.dim, &cast(&g.init, |x| x as f32), &name)?)
                }
                Ty::I32 => {
                    GlobalH::I32(rt.decl_global(g.dim, &cast(&g.init, |x| x as i32), &name)?)
                }
            })
        })
        .collect::<op2::Result<_>>()
        .map_err(ctx("decl_global".into()))?;
    let consts: Vec<ConstH> = p
        .consts
        .iter()
        .enumerate()
        .map(|(i, c)| {
            let name = const_name(i);
            Ok(match c.ty {
                Ty::I32 => {
                    ConstH::I32(rt.decl_const(c.dim, &cast(&c.init, |x| x as i32), &name)?)
                }
                _ => ConstH::F64(rt.decl_const(c.dim, &c.init, &name)?),
            })
        })
        .collect::<op2::Result<_>>()
        .map_err(ctx("decl_const".into()))?;
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
                    })
                    .collect();
                rt.par_loop_region(&k, &sets[l.set], l.region, args)
                    .map_err(at("par_loop"))?;
            }
            Step::ReadDat(d) => seen.push(dats[*d].read().map_err(at("read"))?),
            Step::WriteDat { dat, at: i, value } => {
                dats[*dat].write(*i, *value).map_err(at("host write"))?
            }
            Step::ReadGlobal(g) => seen.push(globals[*g].read().map_err(at("value"))?),
            Step::WriteGlobal(g, v) => globals[*g].write(v).map_err(at("set_value"))?,
            Step::WriteConst(c, v) => match &consts[*c] {
                ConstH::F64(k) => k.set_value(v),
                ConstH::I32(k) => k.set_value(&cast(v, |x| x as i32)),
            }
            .map_err(at("const set_value"))?,
            Step::Flush => rt.flush().map_err(at("flush"))?,
        }
    }
    if p.drop_first {
        drop(rt);
    }
    for d in &dats {
        seen.push(d.read().map_err(ctx("final read".into()))?);
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

/// Runs `p` on `t` and on the reference; the differences, or an error or panic, as a message.
pub fn check(p: &Program, t: &Target, cache: Option<&FsPath>) -> Result<(), String> {
    let want = reference::run(p);
    let got = execute(p, t, cache)?;
    compare(&want, &got)
}
