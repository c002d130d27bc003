//! Kernel expressions as small trees: printed as C, and evaluated by the reference interpreter the
//! way C evaluates them (floating point in `double`, integers in `int64_t`), with a bound on the
//! rounding error a different order of sums could introduce.

/// A value a kernel reads: a component of one of its args (`entry` of a whole row, else 0) or of a
/// Const.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Operand {
    /// Component `comp` of arg `arg` (row entry `entry`).
    Arg {
        /// The arg.
        arg: usize,
        /// Row entry, else 0.
        entry: usize,
        /// Component.
        comp: usize,
    },
    /// Component `comp` of a Const.
    Const {
        /// The Const.
        konst: usize,
        /// Component.
        comp: usize,
    },
}

/// A floating-point expression, evaluated in `double`.
#[derive(Debug, Clone, PartialEq)]
pub enum FExpr {
    /// A literal (a multiple of 1/16, exact in every type).
    Const(f64),
    /// An operand converted to `double`.
    Load(Operand),
    /// `a + b`
    Add(Box<FExpr>, Box<FExpr>),
    /// `a - b`
    Sub(Box<FExpr>, Box<FExpr>),
    /// `c * a`
    Scale(f64, Box<FExpr>),
    /// `squash(a * b)`: a product kept below 1 in magnitude, so that values never overflow.
    Mul(Box<FExpr>, Box<FExpr>),
    /// `a / (1 + |a|)`
    Squash(Box<FExpr>),
    /// `a < b ? a : b`
    Min(Box<FExpr>, Box<FExpr>),
    /// `a > b ? a : b`
    Max(Box<FExpr>, Box<FExpr>),
}

/// An integer expression, evaluated in `int64_t` (operands are `int` values).
#[derive(Debug, Clone, PartialEq)]
pub enum IExpr {
    /// A literal.
    Const(i64),
    /// An integer operand.
    Load(Operand),
    /// `a + b`
    Add(Box<IExpr>, Box<IExpr>),
    /// `a - b`
    Sub(Box<IExpr>, Box<IExpr>),
    /// `k * a`
    Scale(i64, Box<IExpr>),
    /// `a & 255`
    Mask(Box<IExpr>),
    /// `a < b ? a : b`
    Min(Box<IExpr>, Box<IExpr>),
    /// `a > b ? a : b`
    Max(Box<IExpr>, Box<IExpr>),
}

/// The value of a statement: floating point for float targets, integer for `int` targets.
#[derive(Debug, Clone, PartialEq)]
pub enum Value {
    /// For `double` and `float` targets.
    F(FExpr),
    /// For `int` targets.
    I(IExpr),
}

/// A value and a bound on how far another correct evaluation may put it: the same operations with
/// their products fused or their sums (increments) in another order.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Approx {
    /// The value.
    pub value: f64,
    /// Bound on the absolute difference from the value another correct evaluation computes.
    pub err: f64,
}

impl Approx {
    /// An exact value.
    pub fn exact(value: f64) -> Self {
        Approx { value, err: 0.0 }
    }
}

/// Rounding of one `double` operation, relative to the magnitudes it combines (generous: a
/// device may fuse a product into a sum, or divide less exactly).
const ULP: f64 = 2.0 * f64::EPSILON;

fn lit(x: f64) -> String {
    if x < 0.0 {
        format!("({x:?})")
    } else {
        format!("{x:?}")
    }
}

fn squash(x: f64) -> f64 {
    x / (1.0 + if x < 0.0 { -x } else { x })
}

fn squash_c(x: &str) -> String {
    format!("({x} / (1.0 + ({x} < 0.0 ? -{x} : {x})))")
}

impl FExpr {
    /// The value as C computes it in `double`, with its error bound; `load` reads an operand.
    pub fn eval(&self, load: &dyn Fn(&Operand) -> Approx) -> Approx {
        match self {
            FExpr::Const(x) => Approx::exact(*x),
            FExpr::Load(o) => load(o),
            FExpr::Add(a, b) | FExpr::Sub(a, b) => {
                let (a, b) = (a.eval(load), b.eval(load));
                let value = if matches!(self, FExpr::Add(..)) {
                    a.value + b.value
                } else {
                    a.value - b.value
                };
                Approx {
                    value,
                    err: a.err + b.err + ULP * (a.value.abs() + b.value.abs()),
                }
            }
            FExpr::Scale(k, a) => {
                let a = a.eval(load);
                Approx {
                    value: k * a.value,
                    err: k.abs() * a.err + ULP * (k * a.value).abs(),
                }
            }
            FExpr::Mul(a, b) => {
                let (a, b) = (a.eval(load), b.eval(load));
                let product = a.value * b.value;
                let err = a.value.abs() * b.err + b.value.abs() * a.err + a.err * b.err;
                // squash's slope is at most 1 and its result below 1 in magnitude.
                Approx {
                    value: squash(product),
                    err: err + ULP * product.abs() + 3.0 * ULP,
                }
            }
            FExpr::Squash(a) => {
                let a = a.eval(load);
                Approx {
                    value: squash(a.value),
                    err: a.err + 3.0 * ULP,
                }
            }
            FExpr::Min(a, b) | FExpr::Max(a, b) => {
                let (a, b) = (a.eval(load), b.eval(load));
                let value = match self {
                    FExpr::Min(..) if a.value < b.value => a.value,
                    FExpr::Max(..) if a.value > b.value => a.value,
                    _ => b.value,
                };
                Approx {
                    value,
                    err: a.err.max(b.err),
                }
            }
        }
    }
}

impl IExpr {
    /// The value as C computes it in `int64_t`; `load` reads an operand.
    pub fn eval(&self, load: &dyn Fn(&Operand) -> i64) -> i64 {
        match self {
            IExpr::Const(k) => *k,
            IExpr::Load(o) => load(o),
            IExpr::Add(a, b) => a.eval(load).wrapping_add(b.eval(load)),
            IExpr::Sub(a, b) => a.eval(load).wrapping_sub(b.eval(load)),
            IExpr::Scale(k, a) => k.wrapping_mul(a.eval(load)),
            IExpr::Mask(a) => a.eval(load) & 255,
            IExpr::Min(a, b) => a.eval(load).min(b.eval(load)),
            IExpr::Max(a, b) => a.eval(load).max(b.eval(load)),
        }
    }
}

impl Value {
    /// C source of the value as declarations of temporaries (`t0`, `t1`, ...: one per operation,
    /// so that no subexpression is written twice) and the expression that uses them.
    pub fn c_steps(&self, operand: &dyn Fn(&Operand) -> String) -> (Vec<String>, String) {
        let mut steps = Vec::new();
        let result = match self {
            Value::F(e) => e.ssa(operand, &mut steps),
            Value::I(e) => e.ssa(operand, &mut steps),
        };
        (steps, result)
    }
}

/// Declares temporary `t{n}` of type `t` as `value`, and returns its name.
fn temp(steps: &mut Vec<String>, t: &str, value: String) -> String {
    let name = format!("t{}", steps.len());
    steps.push(format!("{t} {name} = {value};"));
    name
}

impl FExpr {
    fn ssa(&self, operand: &dyn Fn(&Operand) -> String, steps: &mut Vec<String>) -> String {
        let sub = |e: &FExpr, steps: &mut Vec<String>| e.ssa(operand, steps);
        let value = match self {
            FExpr::Const(x) => return lit(*x),
            FExpr::Load(o) => return format!("((double){})", operand(o)),
            FExpr::Add(a, b) => format!("{} + {}", sub(a, steps), sub(b, steps)),
            FExpr::Sub(a, b) => format!("{} - {}", sub(a, steps), sub(b, steps)),
            FExpr::Scale(k, a) => format!("{} * {}", lit(*k), sub(a, steps)),
            FExpr::Mul(a, b) => {
                let (a, b) = (sub(a, steps), sub(b, steps));
                let p = temp(steps, "double", format!("{a} * {b}"));
                squash_c(&p)
            }
            FExpr::Squash(a) => {
                let a = sub(a, steps);
                squash_c(&a)
            }
            FExpr::Min(a, b) => {
                let (a, b) = (sub(a, steps), sub(b, steps));
                format!("{a} < {b} ? {a} : {b}")
            }
            FExpr::Max(a, b) => {
                let (a, b) = (sub(a, steps), sub(b, steps));
                format!("{a} > {b} ? {a} : {b}")
            }
        };
        temp(steps, "double", value)
    }
}

impl IExpr {
    fn ssa(&self, operand: &dyn Fn(&Operand) -> String, steps: &mut Vec<String>) -> String {
        let sub = |e: &IExpr, steps: &mut Vec<String>| e.ssa(operand, steps);
        let value = match self {
            IExpr::Const(k) => return format!("((int64_t)({k}))"),
            IExpr::Load(o) => return format!("((int64_t){})", operand(o)),
            IExpr::Add(a, b) => format!("{} + {}", sub(a, steps), sub(b, steps)),
            IExpr::Sub(a, b) => format!("{} - {}", sub(a, steps), sub(b, steps)),
            IExpr::Scale(k, a) => format!("((int64_t)({k})) * {}", sub(a, steps)),
            IExpr::Mask(a) => format!("{} & 255", sub(a, steps)),
            IExpr::Min(a, b) => {
                let (a, b) = (sub(a, steps), sub(b, steps));
                format!("{a} < {b} ? {a} : {b}")
            }
            IExpr::Max(a, b) => {
                let (a, b) = (sub(a, steps), sub(b, steps));
                format!("{a} > {b} ? {a} : {b}")
            }
        };
        temp(steps, "int64_t", value)
    }
}
