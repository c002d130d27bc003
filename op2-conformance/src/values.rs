//! The element types a case reports and their values widened for comparison (integers to
//! `i128`, floating point to `f64`), with the poison that marks halo rows no exchange filled.

use op2::Scalar;

/// One output's values, widened so that every element type compares the same way.
#[derive(Debug, Clone, PartialEq)]
pub enum Values {
    /// `f32` or `f64` values.
    Float(Vec<f64>),
    /// Integer values of any width.
    Int(Vec<i128>),
}

impl Values {
    /// Number of values.
    pub fn len(&self) -> usize {
        match self {
            Values::Float(v) => v.len(),
            Values::Int(v) => v.len(),
        }
    }

    /// True when there are no values.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Element types a case can report.
pub trait OutputValue: Scalar {
    /// Widens values for comparison.
    fn values(v: &[Self]) -> Values;

    /// A value no case computes: what halo rows hold across ranks until an exchange fills them,
    /// so that a missing exchange shows in the results.
    fn poison() -> Self;
}

macro_rules! output_value {
    ($variant:ident, $wide:ty, $poison:expr; $($t:ty),*) => {$(
        impl OutputValue for $t {
            fn values(v: &[Self]) -> Values {
                Values::$variant(v.iter().map(|&x| x as $wide).collect())
            }

            fn poison() -> Self {
                $poison as $t
            }
        }
    )*};
}
output_value!(Float, f64, f64::NAN; f32, f64);
output_value!(Int, i128, 0x5a5a_5a5a_i64; i32, u32, i64, u64);
