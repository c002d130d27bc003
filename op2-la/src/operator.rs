//! The matrix as the Krylov methods see it: products and inner products over this rank's owned
//! rows. One process multiplies its CSR matrix; across ranks, each product first brings the halo
//! part of the vector from the neighbours (the set's halo lists) and each inner product is summed
//! over all ranks, so every rank takes the same decisions.

use crate::csr::CsrRef;
use crate::error::{LaError, Result};
use crate::mat::Mat;
use op2_core::num_complex::Complex64;
use op2_core::{Communicator, Dat, ReduceOp, Set};
use std::cell::RefCell;

/// What one rank exchanges with one neighbour before a product: scalar positions in the local
/// vector (owned values first, then halo values).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Neighbour {
    /// The neighbour's rank.
    pub rank: usize,
    /// Owned positions whose values go to it, in the order it stores them.
    pub send: Vec<usize>,
    /// Halo positions whose values come from it, in the order it sends them.
    pub receive: Vec<usize>,
}

/// One rank's part of a distributed system: its owned rows over its local columns, and how to
/// bring the halo values.
pub struct RankSystem<'a> {
    /// Owned scalar rows by local scalar columns (owned first, then halo).
    pub matrix: CsrRef<'a>,
    /// The ranks' communicator.
    pub comm: &'a dyn Communicator,
    /// Halo exchange lists, one per neighbour.
    pub neighbours: &'a [Neighbour],
}

/// The neighbours of a set's halo, expanded to `block` values per element.
pub fn neighbours_of(set: &Set, block: usize) -> Vec<Neighbour> {
    let expand = |elements: &[u32]| -> Vec<usize> {
        elements
            .iter()
            .flat_map(|&e| (0..block).map(move |c| e as usize * block + c))
            .collect()
    };
    set.halo()
        .map(|h| {
            h.neighbours
                .iter()
                .map(|n| Neighbour {
                    rank: n.rank,
                    send: expand(&n.send),
                    receive: expand(&n.receive),
                })
                .collect()
        })
        .unwrap_or_default()
}

fn to_bytes(v: impl Iterator<Item = f64>) -> Vec<u8> {
    v.flat_map(f64::to_ne_bytes).collect()
}

/// Products and inner products over owned rows.
pub(crate) struct Operator<'a> {
    a: CsrRef<'a>,
    comm: Option<&'a dyn Communicator>,
    neighbours: &'a [Neighbour],
    /// The local vector: owned values, then the halo values just received.
    scratch: RefCell<Vec<f64>>,
}

impl<'a> Operator<'a> {
    /// One process: the whole matrix.
    pub(crate) fn serial(a: CsrRef<'a>) -> Self {
        Operator {
            a,
            comm: None,
            neighbours: &[],
            scratch: RefCell::new(Vec::new()),
        }
    }

    /// One rank of several.
    pub(crate) fn rank(s: &RankSystem<'a>) -> Self {
        Operator {
            a: s.matrix,
            comm: (s.comm.size() > 1).then_some(s.comm),
            neighbours: s.neighbours,
            scratch: RefCell::new(vec![0.0; s.matrix.cols]),
        }
    }

    /// Owned scalar rows.
    pub(crate) fn rows(&self) -> usize {
        self.a.rows
    }

    /// `y = A x` for owned `x` and `y`.
    pub(crate) fn mult(&self, x: &[f64], y: &mut [f64]) -> Result<()> {
        let Some(comm) = self.comm else {
            self.a.mult(x, y);
            return Ok(());
        };
        let mut local = self.scratch.borrow_mut();
        local[..x.len()].copy_from_slice(x);
        if !self.neighbours.is_empty() {
            let sends = self
                .neighbours
                .iter()
                .map(|n| (n.rank, to_bytes(n.send.iter().map(|&i| x[i]))))
                .collect();
            let receives = self
                .neighbours
                .iter()
                .map(|n| (n.rank, n.receive.len() * 8))
                .collect();
            let got = comm.begin_exchange(sends, receives)?.wait()?;
            for (n, bytes) in self.neighbours.iter().zip(got) {
                for (&i, v) in n.receive.iter().zip(bytes.chunks_exact(8)) {
                    local[i] = f64::from_ne_bytes(v.try_into().expect("8 bytes"));
                }
            }
        }
        self.a.mult(&local, y);
        Ok(())
    }

    /// `a . b` over all ranks.
    pub(crate) fn dot(&self, a: &[f64], b: &[f64]) -> Result<f64> {
        let mut s = [a.iter().zip(b).map(|(x, y)| x * y).sum::<f64>()];
        if let Some(comm) = self.comm {
            comm.all_reduce_f64(&mut s, ReduceOp::Sum)?;
        }
        Ok(s[0])
    }

    /// Across ranks, the lowest rank where `failed` (collective); `None` on one process.
    pub(crate) fn first_failed_rank(&self, failed: bool) -> Result<Option<usize>> {
        match self.comm {
            Some(c) => Ok(c.first_failed_rank(failed)?),
            None => Ok(None),
        }
    }

    /// `||a||` over all ranks.
    pub(crate) fn norm(&self, a: &[f64]) -> Result<f64> {
        Ok(self.dot(a, a)?.sqrt())
    }

    /// The owned-by-owned block (what local preconditioners see), as owned arrays.
    pub(crate) fn local_block(&self) -> (Vec<usize>, Vec<u32>, Vec<f64>) {
        let a = self.a;
        let n = a.rows as u32;
        let mut row_ptr = Vec::with_capacity(a.rows + 1);
        let (mut cols, mut vals) = (Vec::new(), Vec::new());
        row_ptr.push(0);
        for r in 0..a.rows {
            for k in a.row_ptr[r]..a.row_ptr[r + 1] {
                if a.col_idx[k] < n {
                    cols.push(a.col_idx[k]);
                    vals.push(a.values[k]);
                }
            }
            row_ptr.push(cols.len());
        }
        (row_ptr, cols, vals)
    }

    /// Whether the matrix is exactly its local block (one process).
    pub(crate) fn is_serial(&self) -> bool {
        self.comm.is_none()
    }

    /// The matrix.
    pub(crate) fn matrix(&self) -> CsrRef<'a> {
        self.a
    }
}

impl Mat {
    /// Checks `x` and `y` of `y = A x`: shaped as the columns and the rows, and two Dats.
    fn check_product<T: op2_core::Scalar>(&self, x: &Dat<T>, y: &Dat<T>) -> Result<()> {
        self.check_vector("x", x, false)?;
        self.check_vector("y", y, true)?;
        if x.id() == y.id() {
            return Err(LaError::Option {
                option: "y",
                value: y.name().into(),
                why: "x and y must be different Dats",
            });
        }
        Ok(())
    }

    /// `y = A x` with Dats as vectors: `x` on the column set with the column block size, `y` on
    /// the row set with the row block size (forces pending loops that write `x`). Across ranks
    /// every rank calls it together: each computes its owned rows of `y`, with the halo part of
    /// `x` brought from its neighbours.
    pub fn mult(&self, x: &Dat<f64>, y: &Dat<f64>) -> Result<()> {
        self.check_product(x, y)?;
        let comm = ranks_of(x)?;
        let sp = &self.0.sparsity;
        let owned_cols = sp.col_set().size() * sp.dims().1;
        let xs = x.data_ro()?[..owned_cols].to_vec();
        let mut ys = y.data()?;
        let rows = self.rows();
        if let Some(comm) = comm.filter(|c| c.size() > 1) {
            let neighbours = neighbours_of(sp.col_set(), sp.dims().1);
            self.with_csr("mult", |a| {
                let system = RankSystem {
                    matrix: a,
                    comm: &*comm,
                    neighbours: &neighbours,
                };
                Operator::rank(&system).mult(&xs, &mut ys[..rows])
            })?
        } else {
            self.mult_slices(&xs, &mut ys[..rows])
        }
    }

    /// `y = A x` with complex Dats as vectors (shaped as [`Mat::mult`]'s), for a complex matrix
    /// or a real one, in one process (across ranks the Dats' halo parts would be needed:
    /// refused).
    pub fn mult_complex(&self, x: &Dat<Complex64>, y: &Dat<Complex64>) -> Result<()> {
        self.check_product(x, y)?;
        if x.communicator().is_some_and(|c| c.size() > 1) {
            return Err(LaError::Option {
                option: "x",
                value: x.name().into(),
                why: "complex products run in one process",
            });
        }
        let sp = &self.0.sparsity;
        let xs = x.data_ro()?[..sp.cols()].to_vec();
        let a = {
            let st = self.lock();
            if !st.assembled {
                return Err(LaError::Unassembled {
                    mat: self.0.name.clone(),
                    operation: "mult_complex",
                });
            }
            drop(st);
            self.complex_values()
        };
        let mut ys = y.data()?;
        let (ptr, cols) = (sp.row_offsets(), sp.col_indices());
        for (r, out) in ys[..sp.rows()].iter_mut().enumerate() {
            *out = (ptr[r]..ptr[r + 1])
                .map(|k| a[k] * xs[cols[k] as usize])
                .sum();
        }
        Ok(())
    }

    /// `y = A x` for a matrix of mixed spaces ([`Sparsity::mixed`](crate::Sparsity::mixed)) with
    /// mixed Dats as vectors: `x` on the column spaces, `y` on the row spaces, each of one value
    /// per element. The components are joined into Dats on the flat sets, multiplied as
    /// [`Mat::mult`] does, and `y`'s components set from the product.
    pub fn mult_mixed(
        &self,
        x: &op2_core::MixedDat<f64>,
        y: &op2_core::MixedDat<f64>,
    ) -> Result<()> {
        if x.split()
            .iter()
            .zip(y.split())
            .any(|(a, b)| a.id() == b.id())
        {
            return Err(LaError::Option {
                option: "y",
                value: y.set().name().into(),
                why: "x and y must be different Dats",
            });
        }
        let (xf, yf) = (x.to_flat()?, y.to_flat()?);
        self.mult(&xf, &yf)?;
        y.set_from_flat(&yf)?;
        Ok(())
    }
}

/// The ranks a Dat is spread over: `None` for one process, including a Dat whose runtime was
/// dropped but which has no halo (its data is whole); a dropped runtime's halo Dat is an error,
/// since its other ranks cannot be reached.
pub(crate) fn ranks_of(d: &Dat<f64>) -> Result<Option<std::sync::Arc<dyn op2_core::Communicator>>> {
    match d.communicator() {
        Some(c) => Ok(Some(c)),
        None if d.set().halo().is_none() => Ok(None),
        None => Err(LaError::NoRuntime {
            what: "Dat",
            name: d.name().into(),
        }),
    }
}
