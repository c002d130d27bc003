//! The matrix as the Krylov methods see it: products and inner products over this rank's owned
//! rows. One process multiplies its CSR matrix; across ranks, each product first brings the halo
//! part of the vector from the neighbours (the set's halo lists) and each inner product is summed
//! over all ranks, so every rank takes the same decisions.

use crate::error::Result;
use crate::mat::CsrRef;
use op2_core::{Communicator, ReduceOp, Set};
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
