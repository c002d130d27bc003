//! Preconditioners for the native Krylov solvers: Jacobi, symmetric SOR and ILU(0), each applying
//! `z = M^-1 r` with the conventions of PETSc's PCJACOBI, PCSOR and PCILU.

use crate::csr::CsrRef;
use crate::error::{LaError, Result};

/// Which preconditioner a solve uses.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Preconditioner {
    /// None: `M = I`.
    None,
    /// Point Jacobi: `M = diag(A)` (a zero diagonal entry counts as 1, as in PETSc).
    Jacobi,
    /// One symmetric SOR sweep (forward then backward) from a zero guess, with relaxation
    /// `omega` in (0, 2); symmetric, so it suits CG. PETSc's PCSOR default with omega = 1.
    Sor {
        /// Relaxation factor.
        omega: f64,
    },
    /// Incomplete LU with no fill: L and U on A's pattern.
    Ilu0,
    /// PETSc's fieldsplit over the fields of a mixed system ([`crate::solve_mixed`]): each
    /// field's diagonal block inverted approximately by ILU(0), the blocks combined additively
    /// (block Jacobi) or multiplicatively (block Gauss-Seidel, forward over the fields).
    FieldSplit(Split),
}

/// How [`Preconditioner::FieldSplit`] combines its fields (PETSc's `-pc_fieldsplit_type`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Split {
    /// Block Jacobi: every field from the same residual (symmetric for a symmetric matrix, so
    /// it suits CG).
    Additive,
    /// Block Gauss-Seidel: field `f` from the residual less what fields before it solved.
    Multiplicative,
}

impl Preconditioner {
    /// PETSc's name for it (`-pc_type`).
    pub fn petsc_name(&self) -> &'static str {
        match self {
            Preconditioner::None => "none",
            Preconditioner::Jacobi => "jacobi",
            Preconditioner::Sor { .. } => "sor",
            Preconditioner::Ilu0 => "ilu",
            Preconditioner::FieldSplit(_) => "fieldsplit",
        }
    }
}

/// A preconditioner set up for one matrix.
pub(crate) enum Applied<'a> {
    Identity,
    Jacobi(Vec<f64>),
    Sor {
        a: CsrRef<'a>,
        diag: Vec<f64>,
        /// Position of the diagonal in each row.
        diag_at: Vec<usize>,
        omega: f64,
    },
    Ilu {
        a: CsrRef<'a>,
        /// Factors on A's pattern: strictly lower part is L (unit diagonal), the rest is U.
        lu: Vec<f64>,
        diag_at: Vec<usize>,
    },
    FieldSplit {
        a: CsrRef<'a>,
        /// The field of each row.
        field_of: Vec<u32>,
        blocks: Vec<FieldBlock>,
        multiplicative: bool,
    },
}

/// One field's diagonal block of a fieldsplit, factored by ILU(0).
pub(crate) struct FieldBlock {
    /// The matrix rows (and columns) of the field, in order.
    rows: Vec<usize>,
    row_ptr: Vec<usize>,
    col_idx: Vec<u32>,
    lu: Vec<f64>,
    diag_at: Vec<usize>,
}

impl FieldBlock {
    /// The block of `a` on `rows` (each row's index within them in `at`), factored.
    fn new(a: &CsrRef<'_>, rows: Vec<usize>, at: &[usize], mat: &str) -> Result<FieldBlock> {
        let (mut row_ptr, mut col_idx, mut values) = (vec![0], Vec::new(), Vec::new());
        for &r in &rows {
            for k in a.row_ptr[r]..a.row_ptr[r + 1] {
                let c = a.col_idx[k] as usize;
                if c < at.len() && at[c] != usize::MAX && rows.get(at[c]) == Some(&c) {
                    col_idx.push(at[c] as u32);
                    values.push(a.values[k]);
                }
            }
            row_ptr.push(col_idx.len());
        }
        let n = rows.len();
        let block = CsrRef {
            rows: n,
            cols: n,
            row_ptr: &row_ptr,
            col_idx: &col_idx,
            values: &values,
        };
        let diag_at = diagonal_positions(&block, mat, "fieldsplit's ILU(0)")
            .map_err(|e| shift_row(e, &rows))?;
        let lu = ilu0(&block, &diag_at, mat).map_err(|e| shift_row(e, &rows))?;
        Ok(FieldBlock {
            rows,
            row_ptr,
            col_idx,
            lu,
            diag_at,
        })
    }
}

/// A zero pivot in a field's block reported at the matrix's row.
fn shift_row(e: LaError, rows: &[usize]) -> LaError {
    match e {
        LaError::ZeroPivot {
            mat,
            preconditioner,
            row,
        } => LaError::ZeroPivot {
            mat,
            preconditioner,
            row: rows[row],
        },
        other => other,
    }
}

/// `z = (LU)^-1 r` for ILU(0) factors `lu` on the pattern `row_ptr`, `col_idx`.
fn ilu_solve(
    row_ptr: &[usize],
    col_idx: &[u32],
    lu: &[f64],
    diag_at: &[usize],
    r: &[f64],
    z: &mut [f64],
) {
    // L y = r (unit diagonal), then U z = y.
    let n = r.len();
    for i in 0..n {
        let mut s = r[i];
        for k in row_ptr[i]..diag_at[i] {
            s -= lu[k] * z[col_idx[k] as usize];
        }
        z[i] = s;
    }
    for i in (0..n).rev() {
        let mut s = z[i];
        for k in diag_at[i] + 1..row_ptr[i + 1] {
            s -= lu[k] * z[col_idx[k] as usize];
        }
        z[i] = s / lu[diag_at[i]];
    }
}

fn diagonal_positions(a: &CsrRef<'_>, mat: &str, which: &'static str) -> Result<Vec<usize>> {
    (0..a.rows)
        .map(|r| {
            let (lo, hi) = (a.row_ptr[r], a.row_ptr[r + 1]);
            a.col_idx[lo..hi]
                .binary_search(&(r as u32))
                .map(|i| lo + i)
                .map_err(|_| LaError::ZeroPivot {
                    mat: mat.into(),
                    preconditioner: which,
                    row: r,
                })
        })
        .collect()
}

impl<'a> Applied<'a> {
    pub(crate) fn new(
        pc: Preconditioner,
        a: CsrRef<'a>,
        mat: &str,
        fields: Option<&[u32]>,
    ) -> Result<Applied<'a>> {
        Ok(match pc {
            Preconditioner::FieldSplit(split) => {
                let field_of = match fields {
                    Some(f) if f.len() == a.rows => f.to_vec(),
                    _ => {
                        return Err(LaError::Option {
                            option: "preconditioner",
                            value: "fieldsplit".into(),
                            why: "it needs the fields of a mixed system: solve it with solve_mixed",
                        });
                    }
                };
                let nfields = field_of.iter().max().map_or(0, |&f| f as usize + 1);
                let mut rows = vec![Vec::new(); nfields];
                let mut at = vec![usize::MAX; a.rows];
                for (r, &f) in field_of.iter().enumerate() {
                    at[r] = rows[f as usize].len();
                    rows[f as usize].push(r);
                }
                let blocks = rows
                    .into_iter()
                    .map(|r| FieldBlock::new(&a, r, &at, mat))
                    .collect::<Result<Vec<_>>>()?;
                Applied::FieldSplit {
                    a,
                    field_of,
                    blocks,
                    multiplicative: split == Split::Multiplicative,
                }
            }
            Preconditioner::None => Applied::Identity,
            Preconditioner::Jacobi => Applied::Jacobi(
                a.diagonal()
                    .into_iter()
                    .map(|d| if d == 0.0 { 1.0 } else { 1.0 / d })
                    .collect(),
            ),
            Preconditioner::Sor { omega } => {
                if !(omega > 0.0 && omega < 2.0) {
                    return Err(LaError::Option {
                        option: "omega",
                        value: omega.to_string(),
                        why: "SOR converges only for 0 < omega < 2",
                    });
                }
                let diag_at = diagonal_positions(&a, mat, "SOR")?;
                let diag: Vec<f64> = diag_at.iter().map(|&p| a.values[p]).collect();
                if let Some(row) = diag.iter().position(|&d| d == 0.0) {
                    return Err(LaError::ZeroPivot {
                        mat: mat.into(),
                        preconditioner: "SOR",
                        row,
                    });
                }
                Applied::Sor {
                    a,
                    diag,
                    diag_at,
                    omega,
                }
            }
            Preconditioner::Ilu0 => {
                let diag_at = diagonal_positions(&a, mat, "ILU(0)")?;
                let lu = ilu0(&a, &diag_at, mat)?;
                Applied::Ilu { a, lu, diag_at }
            }
        })
    }

    /// `z = M^-1 r`.
    pub(crate) fn apply(&self, r: &[f64], z: &mut [f64]) {
        match self {
            Applied::Identity => z.copy_from_slice(r),
            Applied::Jacobi(inv) => {
                for ((z, r), d) in z.iter_mut().zip(r).zip(inv) {
                    *z = r * d;
                }
            }
            Applied::Sor {
                a,
                diag,
                diag_at,
                omega,
            } => {
                // Forward sweep from z = 0, then a backward sweep from its result.
                let n = a.rows;
                z.fill(0.0);
                for i in 0..n {
                    let mut s = r[i];
                    for k in a.row_ptr[i]..a.row_ptr[i + 1] {
                        if k != diag_at[i] {
                            s -= a.values[k] * z[a.col_idx[k] as usize];
                        }
                    }
                    z[i] = (1.0 - omega) * z[i] + omega * s / diag[i];
                }
                for i in (0..n).rev() {
                    let mut s = r[i];
                    for k in a.row_ptr[i]..a.row_ptr[i + 1] {
                        if k != diag_at[i] {
                            s -= a.values[k] * z[a.col_idx[k] as usize];
                        }
                    }
                    z[i] = (1.0 - omega) * z[i] + omega * s / diag[i];
                }
            }
            Applied::Ilu { a, lu, diag_at } => {
                ilu_solve(a.row_ptr, a.col_idx, lu, diag_at, r, z);
            }
            Applied::FieldSplit {
                a,
                field_of,
                blocks,
                multiplicative,
            } => {
                z.fill(0.0);
                for (f, b) in blocks.iter().enumerate() {
                    // The field's residual, less (block Gauss-Seidel) the coupling to the
                    // fields already solved.
                    let rhs: Vec<f64> = b
                        .rows
                        .iter()
                        .map(|&i| {
                            let mut s = r[i];
                            if *multiplicative {
                                for k in a.row_ptr[i]..a.row_ptr[i + 1] {
                                    let c = a.col_idx[k] as usize;
                                    if c < field_of.len() && (field_of[c] as usize) < f {
                                        s -= a.values[k] * z[c];
                                    }
                                }
                            }
                            s
                        })
                        .collect();
                    let mut out = vec![0.0; rhs.len()];
                    ilu_solve(&b.row_ptr, &b.col_idx, &b.lu, &b.diag_at, &rhs, &mut out);
                    for (&i, v) in b.rows.iter().zip(out) {
                        z[i] = v;
                    }
                }
            }
        }
    }
}

/// ILU(0) by rows (the IKJ order): for each row i and each k < i stored in it, eliminate with row
/// k's U part, keeping only entries on A's pattern.
fn ilu0(a: &CsrRef<'_>, diag_at: &[usize], mat: &str) -> Result<Vec<f64>> {
    let mut lu = a.values.to_vec();
    // Position of each column in the current row, or usize::MAX.
    let mut at = vec![usize::MAX; a.cols];
    for i in 0..a.rows {
        let (lo, hi) = (a.row_ptr[i], a.row_ptr[i + 1]);
        for k in lo..hi {
            at[a.col_idx[k] as usize] = k;
        }
        for k in lo..diag_at[i] {
            let j = a.col_idx[k] as usize;
            let pivot = lu[diag_at[j]];
            if pivot == 0.0 || !pivot.is_finite() {
                return Err(LaError::ZeroPivot {
                    mat: mat.into(),
                    preconditioner: "ILU(0)",
                    row: j,
                });
            }
            let l = lu[k] / pivot;
            lu[k] = l;
            for m in diag_at[j] + 1..a.row_ptr[j + 1] {
                let p = at[a.col_idx[m] as usize];
                if p != usize::MAX {
                    lu[p] -= l * lu[m];
                }
            }
        }
        for k in lo..hi {
            at[a.col_idx[k] as usize] = usize::MAX;
        }
        if lu[diag_at[i]] == 0.0 {
            return Err(LaError::ZeroPivot {
                mat: mat.into(),
                preconditioner: "ILU(0)",
                row: i,
            });
        }
    }
    Ok(lu)
}
