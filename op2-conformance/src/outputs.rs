//! What a case returns (named arrays of values) and how a candidate's outputs are compared with the
//! reference's: integers exactly, floating point within the case's relative tolerance.

use crate::decl::{Dat, Global};
use crate::values::{OutputValue, Values};
use std::fmt;

/// The named outputs of one case run, in the order the case reported them.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Outputs {
    entries: Vec<(String, Values)>,
}

impl Outputs {
    /// No outputs yet.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds raw values under `name`.
    pub fn push<T: OutputValue>(&mut self, name: &str, values: &[T]) {
        self.entries.push((name.into(), T::values(values)));
    }

    /// Adds a Dat's values in global order (running the loops it depends on). Across ranks
    /// only rank 0 has them; the other ranks add nothing (collective: every rank calls it).
    pub fn dat<T: OutputValue>(&mut self, dat: &Dat<T>) -> op2::Result<()> {
        if let Some(v) = dat.values()? {
            self.push(dat.name(), &v);
        }
        Ok(())
    }

    /// Adds a Global's value.
    pub fn global<T: OutputValue>(&mut self, g: &Global<T>) -> op2::Result<()> {
        let v = g.value()?;
        self.push(g.name(), &v);
        Ok(())
    }

    /// The outputs in report order.
    pub fn entries(&self) -> &[(String, Values)] {
        &self.entries
    }
}

/// The first difference between reference and candidate outputs.
#[derive(Debug, Clone, PartialEq)]
pub enum Mismatch {
    /// The candidate reported different outputs (names, order or lengths).
    Shape {
        /// What differs.
        what: String,
    },
    /// A value differs beyond the tolerance.
    Value {
        /// The output's name.
        output: String,
        /// Index of the value in the output.
        index: usize,
        /// The reference's value.
        expected: String,
        /// The candidate's value.
        got: String,
    },
}

impl fmt::Display for Mismatch {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Mismatch::Shape { what } => write!(f, "{what}"),
            Mismatch::Value {
                output,
                index,
                expected,
                got,
            } => write!(f, "{output}[{index}]: expected {expected}, got {got}"),
        }
    }
}

/// Whether `got` is within `rel_tol` of `expected`, relative to the larger magnitude (and absolute
/// below 1). NaN equals NaN here: the same computation may legitimately produce it everywhere.
pub fn close(expected: f64, got: f64, rel_tol: f64) -> bool {
    if expected.is_nan() || got.is_nan() {
        return expected.is_nan() && got.is_nan();
    }
    if expected == got {
        return true;
    }
    let scale = expected.abs().max(got.abs()).max(1.0);
    (expected - got).abs() <= rel_tol * scale
}

/// Compares a candidate with the reference: integers exactly, floats within `rel_tol`.
pub fn compare(reference: &Outputs, candidate: &Outputs, rel_tol: f64) -> Result<(), Mismatch> {
    let (r, c) = (reference.entries(), candidate.entries());
    if r.len() != c.len() {
        return Err(Mismatch::Shape {
            what: format!("{} outputs, expected {}", c.len(), r.len()),
        });
    }
    for ((rn, rv), (cn, cv)) in r.iter().zip(c) {
        if rn != cn || rv.len() != cv.len() {
            return Err(Mismatch::Shape {
                what: format!(
                    "output `{cn}` with {} values, expected `{rn}` with {}",
                    cv.len(),
                    rv.len()
                ),
            });
        }
        let bad = |index: usize, expected: String, got: String| Mismatch::Value {
            output: rn.clone(),
            index,
            expected,
            got,
        };
        match (rv, cv) {
            (Values::Float(a), Values::Float(b)) => {
                if let Some(i) = (0..a.len()).find(|&i| !close(a[i], b[i], rel_tol)) {
                    return Err(bad(i, format!("{:e}", a[i]), format!("{:e}", b[i])));
                }
            }
            (Values::Int(a), Values::Int(b)) => {
                if let Some(i) = (0..a.len()).find(|&i| a[i] != b[i]) {
                    return Err(bad(i, a[i].to_string(), b[i].to_string()));
                }
            }
            _ => {
                return Err(Mismatch::Shape {
                    what: format!("output `{cn}` has a different element type"),
                });
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn outs(f: &[f64], i: &[i64]) -> Outputs {
        let mut o = Outputs::new();
        o.push("f", f);
        o.push("i", i);
        o
    }

    #[test]
    fn integers_exact_floats_within_tolerance() {
        let r = outs(&[1.0, 2.0], &[5, 6]);
        assert_eq!(
            compare(&r, &outs(&[1.0, 2.0 + 1e-14], &[5, 6]), 1e-12),
            Ok(())
        );
        let e = compare(&r, &outs(&[1.0, 2.1], &[5, 6]), 1e-12).unwrap_err();
        assert_eq!(e.to_string(), "f[1]: expected 2e0, got 2.1e0");
        let e = compare(&r, &outs(&[1.0, 2.0], &[5, 7]), 1e-12).unwrap_err();
        assert_eq!(e.to_string(), "i[1]: expected 6, got 7");
        assert!(matches!(
            compare(&r, &outs(&[1.0], &[5, 6]), 1.0),
            Err(Mismatch::Shape { .. })
        ));
        assert!(close(f64::NAN, f64::NAN, 0.0));
        assert!(!close(1.0, f64::NAN, 1.0));
    }
}
