//! Dat algebra as PyOP2 offers it: zeroing, copying, `+ - * /` with another Dat or a scalar (into
//! a new Dat or in place), `axpy`, inner products and norms. Each operation is a loop the runtime
//! writes and records like any other, so it is lazy, runs on every backend, fuses with the loops
//! beside it, and works across ranks (an inner product is a Global reduction, summed over ranks
//! once).

use super::Runtime;
use super::shared::RuntimeShared;
use crate::model::access::{INC, READ, RW, WRITE};
use crate::model::arg::Arg;
use crate::model::carrier::Dat;
use crate::model::dtype::{DType, Scalar};
use crate::model::error::{Op2Error, Result};
use crate::model::kernel::Kernel;

/// An elementwise operation between two values.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum BinOp {
    Add,
    Sub,
    Mul,
    Div,
}

impl BinOp {
    fn name(self) -> &'static str {
        match self {
            BinOp::Add => "add",
            BinOp::Sub => "sub",
            BinOp::Mul => "mul",
            BinOp::Div => "div",
        }
    }

    fn c(self) -> &'static str {
        match self {
            BinOp::Add => "+",
            BinOp::Sub => "-",
            BinOp::Mul => "*",
            BinOp::Div => "/",
        }
    }
}

/// An arithmetic operation of PyOP2's Dat arithmetic as C computes it ([`Dat::c_arith`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ArithOp {
    /// `a + b`.
    Add,
    /// `a - b`.
    Sub,
    /// `a * b`.
    Mul,
    /// `a / b`.
    Div,
}

impl ArithOp {
    fn bin(self) -> BinOp {
        match self {
            ArithOp::Add => BinOp::Add,
            ArithOp::Sub => BinOp::Sub,
            ArithOp::Mul => BinOp::Mul,
            ArithOp::Div => BinOp::Div,
        }
    }
}

/// Whether values of `d` are integers.
fn integral(d: DType) -> bool {
    !d.is_float() && !d.is_complex()
}

/// `l op r` as C computes it for an `l` of `left`'s type and an `r` of `right`'s, converted to
/// `result`'s: the usual arithmetic conversions, except that integers add, subtract and multiply
/// in 64-bit unsigned arithmetic, so that a result C would overflow (undefined for signed
/// types) wraps instead.
fn c_expr(result: DType, left: DType, right: DType, op: BinOp, l: &str, r: &str) -> String {
    let value = if integral(left) && integral(right) && op != BinOp::Div {
        format!("(uint64_t)({l}) {} (uint64_t)({r})", op.c())
    } else {
        format!("{l} {} {r}", op.c())
    };
    format!("({})({value})", result.c_name())
}

/// The right operand of an elementwise operation.
#[derive(Clone, Copy)]
enum Operand<'a, T> {
    /// Another Dat, value by value.
    Dat(&'a Dat<T>),
    /// One value for every value.
    Scalar(T),
}

/// The runtime a Dat belongs to.
pub(crate) fn runtime_of<T: Scalar>(d: &Dat<T>) -> Result<Runtime> {
    let gone = || Op2Error::RuntimeGone {
        name: d.name().into(),
    };
    let owner = d.carrier().owner().ok_or_else(gone)?;
    let shared = owner
        .as_any()
        .downcast::<RuntimeShared>()
        .map_err(|_| gone())?;
    Ok(Runtime { shared })
}

impl Runtime {
    /// The runtime's own kernel `op` for `dtype` and `dim`, written by `source(name, c_type)`
    /// (made once per source, so its compiled code is reused).
    fn algebra_kernel(
        &self,
        op: &str,
        dtype: DType,
        dim: usize,
        source: impl FnOnce(&str, &str) -> String,
    ) -> Kernel {
        let name = format!("op2_dat_{op}_{}_{dim}", dtype.c_name().replace(' ', "_"));
        self.shared
            .written
            .get(source(&name, dtype.c_name()), None, |src| {
                Kernel::internal(&name, src)
            })
    }
}

/// The loop over every value of a row, `body` using `op2_i`. Every name in these kernels has
/// the generated code's prefix: a user's Const of the same name (Consts are visible by name in
/// every kernel that mentions them) cannot reach them.
fn each(dim: usize, body: &str) -> String {
    format!("for (int op2_i = 0; op2_i < {dim}; op2_i++) {{ {body} }}")
}

/// `l op r` in C for values of `dtype`: signed integers computed as unsigned and converted back,
/// so that overflow wraps (as the reductions across ranks do) instead of being undefined.
fn arith(dtype: DType, op: &str, l: &str, r: &str) -> String {
    match dtype {
        DType::I32 => format!("(int32_t)((uint32_t)({l}) {op} (uint32_t)({r}))"),
        DType::I64 => format!("(int64_t)((uint64_t)({l}) {op} (uint64_t)({r}))"),
        _ => format!("{l} {op} {r}"),
    }
}

impl<T: Scalar> Dat<T> {
    /// Checks that `other` (of any type) can meet this Dat in `op`: the same set and dim.
    fn matches<U: Scalar>(&self, op: &'static str, other: &Dat<U>) -> Result<()> {
        let mismatch = |reason: String| Op2Error::AlgebraMismatch {
            op,
            left: self.name().into(),
            right: Some(other.name().into()),
            reason,
        };
        if self.set().id() != other.set().id() {
            return Err(mismatch(format!(
                "they live on different sets (`{}` and `{}`)",
                self.set().name(),
                other.set().name()
            )));
        }
        if self.dim() != other.dim() {
            return Err(mismatch(format!(
                "their dims differ ({} and {})",
                self.dim(),
                other.dim()
            )));
        }
        Ok(())
    }

    /// Division is for floating-point and complex Dats (an integer divided by zero has no value
    /// in C).
    fn divisible(&self, op: BinOp) -> Result<()> {
        if op == BinOp::Div && integral(T::DTYPE) {
            return Err(Op2Error::AlgebraMismatch {
                op: "div",
                left: self.name().into(),
                right: None,
                reason: format!(
                    "division needs floating-point or complex values, not {}",
                    T::DTYPE.c_name()
                ),
            });
        }
        Ok(())
    }

    /// A loop over this Dat's set with `args`.
    fn record(&self, rt: &Runtime, k: &Kernel, args: Vec<Arg>) -> Result<()> {
        rt.par_loop(k, self.set(), args).map(drop)
    }

    /// A Global holding `s`, to pass a scalar without compiling a kernel per value. It is the
    /// runtime's own (not declared to checkpointing, which would keep every one).
    fn scalar<U: Scalar>(rt: &Runtime, s: U, name: &str) -> crate::model::carrier::Global<U> {
        crate::model::carrier::Global::from_carrier(rt.carrier(
            crate::model::carrier::CarrierKind::Global,
            name,
            1,
            crate::model::dtype::HostBuffer::from_slice(&[s]),
        ))
    }

    /// Sets every value to zero (PyOP2's `Dat.zero`): a loop, recorded like any other.
    pub fn zero(&self) -> Result<()> {
        let rt = runtime_of(self)?;
        let dim = self.dim();
        let k = rt.algebra_kernel("zero", T::DTYPE, dim, |n, c| {
            format!(
                "void {n}({c} *op2_x) {{ {} }}",
                each(dim, &format!("op2_x[op2_i] = ({c})0;"))
            )
        });
        self.record(&rt, &k, vec![self.arg(WRITE)])
    }

    /// Copies this Dat's values into `other` (PyOP2's `Dat.copy(other)`): same set and dim.
    pub fn copy(&self, other: &Dat<T>) -> Result<()> {
        self.matches("copy", other)?;
        let rt = runtime_of(self)?;
        let dim = self.dim();
        let k = rt.algebra_kernel("copy", T::DTYPE, dim, |n, c| {
            format!(
                "void {n}(const {c} *op2_a, {c} *op2_b) {{ {} }}",
                each(dim, "op2_b[op2_i] = op2_a[op2_i];")
            )
        });
        self.record(&rt, &k, vec![self.arg(READ), other.arg(WRITE)])
    }

    /// `self op rhs` for every value: into a new Dat (`into_new`, named after both operands,
    /// returned) or into `self`. One kernel per operation, operand kind, target, dtype and dim.
    fn elementwise(
        &self,
        op: BinOp,
        rhs: Operand<'_, T>,
        into_new: bool,
    ) -> Result<Option<Dat<T>>> {
        if let Operand::Dat(other) = rhs {
            self.matches(op.name(), other)?;
        }
        self.divisible(op)?;
        let rt = runtime_of(self)?;
        let dim = self.dim();
        let (right, rhs_name, rhs_arg) = match rhs {
            Operand::Dat(other) => ("op2_b[op2_i]", other.name().to_string(), other.arg(READ)),
            Operand::Scalar(s) => (
                "op2_b[0]",
                "scalar".into(),
                Self::scalar(&rt, s, "op2_scalar").arg(READ),
            ),
        };
        let kind = match (rhs, into_new) {
            (Operand::Dat(_), true) => op.name().to_string(),
            (Operand::Dat(_), false) => format!("{}_assign", op.name()),
            (Operand::Scalar(_), true) => format!("{}_scalar", op.name()),
            (Operand::Scalar(_), false) => format!("{}_scalar_assign", op.name()),
        };
        let k = rt.algebra_kernel(&kind, T::DTYPE, dim, |n, c| {
            let (params, target) = if into_new {
                (
                    format!("const {c} *op2_a, const {c} *op2_b, {c} *op2_r"),
                    "op2_r",
                )
            } else {
                (format!("{c} *op2_a, const {c} *op2_b"), "op2_a")
            };
            let value = arith(T::DTYPE, op.c(), "op2_a[op2_i]", right);
            format!(
                "void {n}({params}) {{ {} }}",
                each(dim, &format!("{target}[op2_i] = {value};"))
            )
        });
        if !into_new {
            self.record(&rt, &k, vec![self.arg(RW), rhs_arg])?;
            return Ok(None);
        }
        let out = rt.decl_dat_zeros::<T>(
            self.set(),
            dim,
            &format!("{}_{}_{rhs_name}", self.name(), op.name()),
        )?;
        self.record(&rt, &k, vec![self.arg(READ), rhs_arg, out.arg(WRITE)])?;
        Ok(Some(out))
    }

    /// `self op other` into a new Dat.
    fn binary(&self, op: BinOp, other: &Dat<T>) -> Result<Dat<T>> {
        Ok(self
            .elementwise(op, Operand::Dat(other), true)?
            .expect("a new Dat"))
    }

    /// `self op= other`.
    fn binary_assign(&self, op: BinOp, other: &Dat<T>) -> Result<()> {
        self.elementwise(op, Operand::Dat(other), false).map(drop)
    }

    /// `self op s` (every value) into a new Dat.
    fn scalar_op(&self, op: BinOp, s: T) -> Result<Dat<T>> {
        Ok(self
            .elementwise(op, Operand::Scalar(s), true)?
            .expect("a new Dat"))
    }

    /// `self op= s` (every value).
    fn scalar_assign(&self, op: BinOp, s: T) -> Result<()> {
        self.elementwise(op, Operand::Scalar(s), false).map(drop)
    }

    /// `self + other`, value by value, into a new Dat (PyOP2's `a + b`).
    pub fn add(&self, other: &Dat<T>) -> Result<Dat<T>> {
        self.binary(BinOp::Add, other)
    }

    /// `self - other` into a new Dat.
    pub fn sub(&self, other: &Dat<T>) -> Result<Dat<T>> {
        self.binary(BinOp::Sub, other)
    }

    /// `self * other`, value by value, into a new Dat.
    pub fn mul(&self, other: &Dat<T>) -> Result<Dat<T>> {
        self.binary(BinOp::Mul, other)
    }

    /// `self / other`, value by value, into a new Dat (f64 and f32 Dats).
    pub fn div(&self, other: &Dat<T>) -> Result<Dat<T>> {
        self.binary(BinOp::Div, other)
    }

    /// `self += other` (PyOP2's `a += b`).
    pub fn add_assign(&self, other: &Dat<T>) -> Result<()> {
        self.binary_assign(BinOp::Add, other)
    }

    /// `self -= other`.
    pub fn sub_assign(&self, other: &Dat<T>) -> Result<()> {
        self.binary_assign(BinOp::Sub, other)
    }

    /// `self *= other`, value by value.
    pub fn mul_assign(&self, other: &Dat<T>) -> Result<()> {
        self.binary_assign(BinOp::Mul, other)
    }

    /// `self /= other`, value by value (f64 and f32 Dats).
    pub fn div_assign(&self, other: &Dat<T>) -> Result<()> {
        self.binary_assign(BinOp::Div, other)
    }

    /// `self + s` for every value, into a new Dat (PyOP2's `a + 2.0`).
    pub fn add_scalar(&self, s: T) -> Result<Dat<T>> {
        self.scalar_op(BinOp::Add, s)
    }

    /// `self - s` into a new Dat.
    pub fn sub_scalar(&self, s: T) -> Result<Dat<T>> {
        self.scalar_op(BinOp::Sub, s)
    }

    /// `self * s` into a new Dat.
    pub fn mul_scalar(&self, s: T) -> Result<Dat<T>> {
        self.scalar_op(BinOp::Mul, s)
    }

    /// `self / s` into a new Dat (f64 and f32 Dats).
    pub fn div_scalar(&self, s: T) -> Result<Dat<T>> {
        self.scalar_op(BinOp::Div, s)
    }

    /// `self += s` for every value.
    pub fn add_scalar_assign(&self, s: T) -> Result<()> {
        self.scalar_assign(BinOp::Add, s)
    }

    /// `self -= s` for every value.
    pub fn sub_scalar_assign(&self, s: T) -> Result<()> {
        self.scalar_assign(BinOp::Sub, s)
    }

    /// `self *= s` for every value.
    pub fn mul_scalar_assign(&self, s: T) -> Result<()> {
        self.scalar_assign(BinOp::Mul, s)
    }

    /// `self /= s` for every value (f64 and f32 Dats).
    pub fn div_scalar_assign(&self, s: T) -> Result<()> {
        self.scalar_assign(BinOp::Div, s)
    }

    /// `self += a * x` (BLAS's axpy): same set and dim.
    pub fn axpy(&self, a: T, x: &Dat<T>) -> Result<()> {
        self.matches("axpy", x)?;
        let rt = runtime_of(self)?;
        let dim = self.dim();
        let g = Self::scalar(&rt, a, "op2_scalar");
        let k = rt.algebra_kernel("axpy", T::DTYPE, dim, |n, c| {
            format!(
                "void {n}({c} *op2_y, const {c} *op2_s, const {c} *op2_x) {{ {} }}",
                each(
                    dim,
                    &format!(
                        "op2_y[op2_i] = {};",
                        arith(
                            T::DTYPE,
                            "+",
                            "op2_y[op2_i]",
                            &arith(T::DTYPE, "*", "op2_s[0]", "op2_x[op2_i]")
                        )
                    )
                )
            )
        });
        self.record(&rt, &k, vec![self.arg(RW), g.arg(READ), x.arg(READ)])
    }

    /// The inner product: the sum over every owned element and value of `self * other`, with
    /// `other` conjugated where complex (PyOP2's `Dat.inner`), summed over ranks once. Forces
    /// what the two Dats depend on.
    pub fn inner(&self, other: &Dat<T>) -> Result<T> {
        self.matches("inner", other)?;
        let rt = runtime_of(self)?;
        let dim = self.dim();
        let sum = Self::scalar(&rt, T::ZERO, "op2_inner");
        let b = match T::DTYPE {
            DType::C128 => "conj(op2_b[op2_i])",
            DType::C64 => "conjf(op2_b[op2_i])",
            _ => "op2_b[op2_i]",
        };
        let k = rt.algebra_kernel("inner", T::DTYPE, dim, |n, c| {
            format!(
                "void {n}(const {c} *op2_a, const {c} *op2_b, {c} *op2_g) {{ {} }}",
                each(
                    dim,
                    &format!(
                        "op2_g[0] = {};",
                        arith(
                            T::DTYPE,
                            "+",
                            "op2_g[0]",
                            &arith(T::DTYPE, "*", "op2_a[op2_i]", b)
                        )
                    )
                )
            )
        });
        self.record(&rt, &k, vec![self.arg(READ), other.arg(READ), sum.arg(INC)])?;
        Ok(sum.value()?[0])
    }

    /// The 2-norm: the square root of [`Dat::inner`] with itself (its real part for complex
    /// Dats; PyOP2's `Dat.norm`).
    pub fn norm(&self) -> Result<f64> {
        let s = self.inner(self)?;
        Ok(to_f64(s).sqrt())
    }
}

/// The right operand of [`Dat::c_arith`] and its kin, its type erased: a Dat's arg (value by
/// value) or a Global's holding one scalar.
struct COperand {
    arg: Arg,
    dtype: DType,
    scalar: bool,
}

impl<T: Scalar> Dat<T> {
    /// PyOP2's Dat arithmetic (`a + b`, `a * 2.5`, `a += b`): `self op other` value by value as C
    /// computes it for the two types (the usual arithmetic conversions), stored as `out`'s type
    /// into `out` (same set and dim). `other` may hold another type than `self`: an `i32` Dat
    /// times an `f64` Dat is computed in double and truncated back. Integers add, subtract and
    /// multiply wrapping; dividing by an integer Dat is refused (a zero in it has no value in
    /// C). A loop, recorded like any other.
    pub fn c_arith<U: Scalar, R: Scalar>(
        &self,
        op: ArithOp,
        other: &Dat<U>,
        out: &Dat<R>,
    ) -> Result<()> {
        let rhs = self.c_dat_operand(op, other)?;
        self.c_elementwise(op, rhs, Some((out.arg(WRITE), R::DTYPE, out)))
    }

    /// `self op= other` as [`Dat::c_arith`] computes it, stored back as this Dat's type.
    pub fn c_arith_assign<U: Scalar>(&self, op: ArithOp, other: &Dat<U>) -> Result<()> {
        let rhs = self.c_dat_operand(op, other)?;
        self.c_elementwise::<T>(op, rhs, None)
    }

    /// `self op s` for every value as C computes it for the two types (PyOP2 handed a scalar to
    /// its kernel as a Global of NumPy's type for it), into `out`. An integer division by zero
    /// is refused; one by -1 is a wrapping negation.
    pub fn c_arith_scalar<U: Scalar, R: Scalar>(
        &self,
        op: ArithOp,
        s: U,
        out: &Dat<R>,
    ) -> Result<()> {
        let (op, rhs) = self.c_scalar_operand(op, s)?;
        self.c_elementwise(op, rhs, Some((out.arg(WRITE), R::DTYPE, out)))
    }

    /// `self op= s` as [`Dat::c_arith_scalar`] computes it, stored back as this Dat's type.
    pub fn c_arith_scalar_assign<U: Scalar>(&self, op: ArithOp, s: U) -> Result<()> {
        let (op, rhs) = self.c_scalar_operand(op, s)?;
        self.c_elementwise::<T>(op, rhs, None)
    }

    fn c_dat_operand<U: Scalar>(&self, op: ArithOp, other: &Dat<U>) -> Result<COperand> {
        self.matches(op.bin().name(), other)?;
        if op == ArithOp::Div && integral(T::DTYPE) && integral(U::DTYPE) {
            return Err(Op2Error::AlgebraMismatch {
                op: "div",
                left: self.name().into(),
                right: Some(other.name().into()),
                reason: format!(
                    "dividing {} values by a Dat of {} values: a zero in it has no value in C",
                    T::DTYPE.c_name(),
                    U::DTYPE.c_name()
                ),
            });
        }
        Ok(COperand {
            arg: other.arg(READ),
            dtype: U::DTYPE,
            scalar: false,
        })
    }

    fn c_scalar_operand<U: Scalar>(&self, op: ArithOp, s: U) -> Result<(ArithOp, COperand)> {
        let rt = runtime_of(self)?;
        let mut op = op;
        if op == ArithOp::Div && integral(T::DTYPE) && integral(U::DTYPE) {
            if to_f64(s) == 0.0 {
                return Err(Op2Error::AlgebraMismatch {
                    op: "div",
                    left: self.name().into(),
                    right: None,
                    reason: "an integer division by zero has no value in C".into(),
                });
            }
            if to_f64(s) == -1.0 {
                // C's division overflows for the most negative value; the wrapping product by
                // the same -1 does not.
                op = ArithOp::Mul;
            }
        }
        let g = Self::scalar(&rt, s, "op2_scalar");
        Ok((
            op,
            COperand {
                arg: g.arg(READ),
                dtype: U::DTYPE,
                scalar: true,
            },
        ))
    }

    /// The loop of the `c_arith` family: into `out` (its arg, type and Dat, checked against
    /// this one), or in place when `out` is `None`.
    fn c_elementwise<R: Scalar>(
        &self,
        op: ArithOp,
        rhs: COperand,
        out: Option<(Arg, DType, &Dat<R>)>,
    ) -> Result<()> {
        let rt = runtime_of(self)?;
        let dim = self.dim();
        if let Some((_, _, o)) = &out {
            self.matches(op.bin().name(), *o)?;
        }
        let result = out.as_ref().map_or(T::DTYPE, |(_, d, _)| *d);
        let right = if rhs.scalar {
            "op2_b[0]"
        } else {
            "op2_b[op2_i]"
        };
        let (bt, rt_name) = (rhs.dtype, result.c_name().replace(' ', "_"));
        let kind = format!(
            "c_{}_{}{}_{}",
            op.bin().name(),
            bt.c_name().replace(' ', "_"),
            if rhs.scalar { "_scalar" } else { "" },
            if out.is_some() {
                rt_name
            } else {
                "assign".into()
            }
        );
        let k = rt.algebra_kernel(&kind, T::DTYPE, dim, |n, c| {
            let b = bt.c_name();
            let value = c_expr(result, T::DTYPE, bt, op.bin(), "op2_a[op2_i]", right);
            let (params, target) = if out.is_some() {
                (
                    format!(
                        "const {c} *op2_a, const {b} *op2_b, {} *op2_r",
                        result.c_name()
                    ),
                    "op2_r",
                )
            } else {
                (format!("{c} *op2_a, const {b} *op2_b"), "op2_a")
            };
            format!(
                "void {n}({params}) {{ {} }}",
                each(dim, &format!("{target}[op2_i] = {value};"))
            )
        });
        match out {
            Some((arg, _, _)) => self.record(&rt, &k, vec![self.arg(READ), rhs.arg, arg]),
            None => self.record(&rt, &k, vec![self.arg(RW), rhs.arg]),
        }
    }
}

/// A value of any Dat type as an `f64` (for the norm): a complex value's real part.
pub(crate) fn to_f64<T: Scalar>(v: T) -> f64 {
    let b = bytemuck::bytes_of(&v);
    let four = || -> [u8; 4] { b[..4].try_into().expect("a 4-byte dtype") };
    let eight = || -> [u8; 8] { b[..8].try_into().expect("an 8-byte dtype") };
    match T::DTYPE {
        DType::F64 => f64::from_ne_bytes(eight()),
        DType::F32 => f64::from(f32::from_ne_bytes(four())),
        DType::I32 => f64::from(i32::from_ne_bytes(four())),
        DType::U32 => f64::from(u32::from_ne_bytes(four())),
        DType::I64 => i64::from_ne_bytes(eight()) as f64,
        DType::U64 => u64::from_ne_bytes(eight()) as f64,
        DType::C64 => f64::from(f32::from_ne_bytes(four())),
        DType::C128 => f64::from_ne_bytes(eight()),
    }
}
