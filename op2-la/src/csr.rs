//! A borrowed CSR matrix (rows, their sorted columns and values): what solvers, preconditioners
//! and operators work on, whoever holds the arrays.

use crate::error::{LaError, Result};

/// A borrowed CSR matrix: what solvers and preconditioners work on.
#[derive(Debug, Clone, Copy)]
pub struct CsrRef<'a> {
    /// Scalar rows.
    pub rows: usize,
    /// Scalar columns.
    pub cols: usize,
    /// `rows + 1` offsets into `col_idx` and `values`.
    pub row_ptr: &'a [usize],
    /// Column of each entry, sorted within rows.
    pub col_idx: &'a [u32],
    /// Value of each entry.
    pub values: &'a [f64],
}

impl CsrRef<'_> {
    /// Checks the arrays fit together (`rows + 1` non-decreasing offsets ending at the number of
    /// entries, as many values as columns, every column below `cols`), so that solvers given a
    /// hand-built matrix refuse it instead of reading outside it.
    pub fn check(&self, matrix_name: &str) -> Result<()> {
        let bad = |why: String| LaError::Csr {
            mat: matrix_name.into(),
            why,
        };
        if self.row_ptr.len() != self.rows + 1 {
            return Err(bad(format!(
                "{} row offsets for {} rows (needs rows + 1)",
                self.row_ptr.len(),
                self.rows
            )));
        }
        if self.row_ptr[0] != 0 || self.row_ptr.windows(2).any(|w| w[0] > w[1]) {
            return Err(bad("row offsets must start at 0 and never decrease".into()));
        }
        let nnz = self.row_ptr[self.rows];
        if self.col_idx.len() != nnz || self.values.len() != nnz {
            return Err(bad(format!(
                "the offsets end at {nnz}, with {} columns and {} values",
                self.col_idx.len(),
                self.values.len()
            )));
        }
        if let Some(c) = self.col_idx.iter().find(|&&c| c as usize >= self.cols) {
            return Err(bad(format!("column {c} outside 0..{}", self.cols)));
        }
        Ok(())
    }

    /// `y = A x`.
    pub fn mult(&self, x: &[f64], y: &mut [f64]) {
        for (yr, bounds) in y.iter_mut().zip(self.row_ptr.windows(2)).take(self.rows) {
            let (cols, vals) = (
                &self.col_idx[bounds[0]..bounds[1]],
                &self.values[bounds[0]..bounds[1]],
            );
            *yr = cols
                .iter()
                .zip(vals)
                .map(|(&c, &v)| v * x[c as usize])
                .sum();
        }
    }

    /// The diagonal (0 where a row stores none).
    pub fn diagonal(&self) -> Vec<f64> {
        (0..self.rows)
            .map(|r| {
                let cols = &self.col_idx[self.row_ptr[r]..self.row_ptr[r + 1]];
                cols.binary_search(&(r as u32))
                    .map(|i| self.values[self.row_ptr[r] + i])
                    .unwrap_or(0.0)
            })
            .collect()
    }
}

/// A length check: `len` values of `what` where `expected` are needed.
pub(crate) fn check_len(what: &'static str, len: usize, expected: usize) -> Result<()> {
    if len != expected {
        return Err(LaError::Length {
            what,
            len,
            expected,
        });
    }
    Ok(())
}
