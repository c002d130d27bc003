//! Random meshes and loops drawn with `proptest` from a fixed seed: the same loops on every run and
//! machine, so a failure replays; proptest shrinks a failing loop to a small one before reporting it.

use crate::decl::CaseRuntime;
use crate::outputs::{Outputs, compare};
use crate::values::OutputValue;
use op2::{DType, INC, Kernel, MAX, READ, Result, WRITE};
use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};

/// The fixed seed of the random cases.
pub const SEED: [u8; 32] = *b"op2-rs conformance: random loops";

/// One random loop: a map between two random sets, and a kernel reading a direct Dat, incrementing
/// a Dat through the map (whole row or entry by entry), gathering another through it, writing a
/// direct output and reducing into two Globals.
#[derive(Debug, Clone)]
pub struct RandomLoop {
    /// Element type of every Dat and Global (a real type: the loop reduces with MAX).
    pub dtype: DType,
    /// Size of the iteration set.
    pub from: usize,
    /// Size of the target set.
    pub to: usize,
    /// Map arity.
    pub arity: usize,
    /// Map values, `from * arity` of them.
    pub map: Vec<i32>,
    /// Dim of the direct input.
    pub dim_in: usize,
    /// Dim of the incremented Dat.
    pub dim_inc: usize,
    /// Whole-row args (`true`) or one arg per map entry.
    pub row: bool,
    /// How many times the loop runs (lazily chained).
    pub repeats: usize,
    /// Seed of the data values (small integers, exact in every type).
    pub data_seed: u64,
}

/// The strategy drawing [`RandomLoop`]s.
pub fn random_loop() -> impl Strategy<Value = RandomLoop> {
    (
        prop_oneof![
            Just(DType::F64),
            Just(DType::F32),
            Just(DType::I32),
            Just(DType::I64),
            Just(DType::U32),
            Just(DType::U64)
        ],
        0usize..600,
        1usize..40,
        1usize..=4,
        1usize..=3,
        1usize..=2,
        any::<bool>(),
        1usize..=3,
        any::<u64>(),
    )
        .prop_flat_map(
            |(dtype, from, to, arity, dim_in, dim_inc, row, repeats, data_seed)| {
                proptest::collection::vec(0..to as i32, from * arity).prop_map(move |map| {
                    RandomLoop {
                        dtype,
                        from,
                        to,
                        arity,
                        map,
                        dim_in,
                        dim_inc,
                        row,
                        repeats,
                        data_seed,
                    }
                })
            },
        )
}

impl RandomLoop {
    fn kernel(&self) -> Result<Kernel> {
        let t = self.dtype.c_name();
        let a = self.arity;
        // Whole-row args arrive as arrays of pointers; per-entry args one by one, collected into
        // local arrays so that the body is the same.
        let (inc_params, gather_params, prelude) = if self.row {
            (
                format!("{t} *tgt[{a}]"),
                format!("{t} *g[{a}]"),
                String::new(),
            )
        } else {
            let names = |n: &str| (0..a).map(|j| format!("{n}_{j}")).collect::<Vec<_>>();
            let params = |n: &str| {
                names(n)
                    .iter()
                    .map(|p| format!("{t} *{p}"))
                    .collect::<Vec<_>>()
                    .join(", ")
            };
            let local = |n: &str| format!("{t} *{n}[{a}] = {{{}}};", names(n).join(", "));
            (
                params("tgt"),
                params("g"),
                format!("{}\n  {}", local("tgt"), local("g")),
            )
        };
        let (inc_ref, gath_ref) = ("tgt[j]", "g[j]");
        let src = format!(
            "void rnd(const {t} *src, {inc_params}, {gather_params}, {t} *out, {t} *sum, {t} *hi) {{
  {prelude}
  {t} s = 0;
  for (int d = 0; d < {din}; d++) s += src[d] * ({t})(d + 1);
  for (int j = 0; j < {a}; j++)
    for (int d = 0; d < {dinc}; d++) {inc_ref}[d] += s + ({t})(j + d);
  {t} o = 0;
  for (int j = 0; j < {a}; j++) o += {gath_ref}[0] * ({t})(j + 1);
  *out = o + s;
  *sum += s;
  if (o > *hi) *hi = o;
}}",
            din = self.dim_in,
            dinc = self.dim_inc,
        );
        Kernel::new("rnd", &src)
    }

    /// Runs the loop on `rt` and reports every Dat and Global.
    pub fn run(&self, rt: &CaseRuntime) -> Result<Outputs> {
        match self.dtype {
            DType::F64 => self.run_typed(rt, |v| v as f64),
            DType::F32 => self.run_typed(rt, |v| v as f32),
            DType::I32 => self.run_typed(rt, |v| v as i32),
            DType::I64 => self.run_typed(rt, |v| v as i64),
            DType::U32 => self.run_typed(rt, |v| v),
            DType::U64 => self.run_typed(rt, |v| v as u64),
            DType::C64 | DType::C128 => Err(op2::Op2Error::Unsupported {
                kernel: "rnd".into(),
                reason: "a random loop reduces with MAX, and complex values have no order".into(),
            }),
        }
    }

    fn run_typed<T: OutputValue>(&self, rt: &CaseRuntime, of: fn(u32) -> T) -> Result<Outputs> {
        let mut state = self.data_seed | 1;
        let mut small = move || {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            of((state % 10) as u32)
        };
        let from = rt.decl_set(self.from, "from")?;
        let to = rt.decl_set(self.to, "to")?;
        let m = rt.decl_map(&from, &to, self.arity, self.map.clone(), "m")?;
        let src: Vec<T> = (0..self.from * self.dim_in).map(|_| small()).collect();
        let src = rt.decl_dat(&from, self.dim_in, &src, "src")?;
        let tgt: Vec<T> = (0..self.to * self.dim_inc).map(|_| small()).collect();
        let tgt = rt.decl_dat(&to, self.dim_inc, &tgt, "tgt")?;
        let g: Vec<T> = (0..self.to).map(|_| small()).collect();
        let g = rt.decl_dat(&to, 1, &g, "g")?;
        let out = rt.decl_dat_zeros::<T>(&from, 1, "out")?;
        let sum = rt.decl_global(1, &[small()], "sum")?;
        let hi = rt.decl_global(1, &[T::ZERO], "hi")?;
        let k = self.kernel()?;
        for _ in 0..self.repeats {
            let mut args = vec![src.arg(READ)];
            if self.row {
                args.push(tgt.arg_row(&m, INC));
                args.push(g.arg_row(&m, READ));
            } else {
                args.extend((0..self.arity).map(|j| tgt.arg_via(&m, j, INC)));
                args.extend((0..self.arity).map(|j| g.arg_via(&m, j, READ)));
            }
            args.extend([out.arg(WRITE), sum.arg(INC), hi.arg(MAX)]);
            rt.par_loop(&k, &from, args)?;
        }
        let mut o = Outputs::new();
        o.dat(&tgt)?;
        o.dat(&out)?;
        o.global(&sum)?;
        o.global(&hi)?;
        Ok(o)
    }
}

/// Runs `cases` random loops on the reference and the candidate runtime and compares them (floats
/// within `1e-5` relative: f32 sums may be reordered). Returns the first failure, shrunk, as text.
pub fn check_random(
    reference: &CaseRuntime,
    candidate: &CaseRuntime,
    cases: u32,
) -> std::result::Result<(), String> {
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 200,
        ..Config::default()
    };
    let mut runner =
        TestRunner::new_with_rng(config, TestRng::from_seed(RngAlgorithm::ChaCha, &SEED));
    runner
        .run(&random_loop(), |l| {
            let r = l
                .run(reference)
                .map_err(|e| TestCaseError::fail(format!("reference: {e}")))?;
            let c = l
                .run(candidate)
                .map_err(|e| TestCaseError::fail(format!("candidate: {e}")))?;
            compare(&r, &c, 1e-5).map_err(|m| TestCaseError::fail(m.to_string()))
        })
        .map_err(|e| e.to_string())
}
