//! Recursive coordinate bisection on distributed coordinates: every rank holds the points of its
//! home block, and every split is found with reductions only (bounding boxes, then an exact
//! radix select of the cut point), so no rank ever sees more than its own points. The parts are
//! those the one-process [`crate::partition::bisection`] gives: the same splits along the same
//! axes at the same points, with ties between equal coordinates broken by global number.

use crate::error::Result;
use crate::setup::all_reduce_words;
use op2_core::comm::{Communicator, ReduceOp};

/// A node of the bisection tree still being split, or a leaf.
#[derive(Debug, Clone, Copy)]
struct Group {
    /// The first part of the group.
    first: usize,
    /// How many parts it splits into.
    parts: usize,
    /// Its points, over all ranks.
    size: u64,
}

/// Orders doubles as integers: negative below positive, and -0.0 equal to 0.0 (as the
/// comparison of the one-process bisection treats them).
fn order_key(x: f64) -> u64 {
    let x = if x == 0.0 { 0.0 } else { x };
    let b = x.to_bits();
    if b >> 63 == 1 { !b } else { b | 1 << 63 }
}

/// The double whose [`order_key`] is `k`.
fn from_order_key(k: u64) -> f64 {
    f64::from_bits(if k >> 63 == 1 { k & !(1 << 63) } else { !k })
}

/// Sums `counts` over ranks.
fn all_sum(comm: &dyn Communicator, counts: &mut [u64]) -> Result<()> {
    all_reduce_words(comm, counts, ReduceOp::Sum)
}

/// The part of each of this rank's points (`dim` coordinates each; global numbers `first_id..`)
/// when the `total` points of all ranks are split into `parts` by recursive coordinate
/// bisection. Collective.
pub(crate) fn bisection_distributed(
    comm: &dyn Communicator,
    coords: &[f64],
    dim: usize,
    first_id: u64,
    total: usize,
    parts: usize,
) -> Result<Vec<u32>> {
    let dim = dim.max(1);
    let n = coords.len() / dim;
    let mut groups = vec![Group {
        first: 0,
        parts,
        size: total as u64,
    }];
    let mut of = vec![0u32; n];
    let key = |i: usize, axis: usize| -> u128 {
        (order_key(coords[i * dim + axis]) as u128) << 64 | (first_id + i as u64) as u128
    };
    loop {
        // Slot of each group among those still splitting (every rank computes the same).
        let mut slot = vec![usize::MAX; groups.len()];
        let mut active = Vec::new();
        for (g, grp) in groups.iter().enumerate() {
            if grp.parts > 1 && grp.size > 1 {
                slot[g] = active.len();
                active.push(g);
            }
        }
        if active.is_empty() {
            break;
        }
        let na = active.len();

        // Bounding boxes, then the axis of longest extent (the first on ties). The bounds
        // travel as order keys, integers, whose minimum and maximum are those of the numbers.
        let mut lo_keys = vec![u64::MAX; na * dim];
        let mut hi_keys = vec![0u64; na * dim];
        for (i, &g) in of.iter().enumerate() {
            let a = slot[g as usize];
            if a != usize::MAX {
                for x in 0..dim {
                    let k = order_key(coords[i * dim + x]);
                    lo_keys[a * dim + x] = lo_keys[a * dim + x].min(k);
                    hi_keys[a * dim + x] = hi_keys[a * dim + x].max(k);
                }
            }
        }
        all_reduce_words(comm, &mut lo_keys, ReduceOp::Min)?;
        all_reduce_words(comm, &mut hi_keys, ReduceOp::Max)?;
        let lo: Vec<f64> = lo_keys.into_iter().map(from_order_key).collect();
        let hi: Vec<f64> = hi_keys.into_iter().map(from_order_key).collect();
        let axis: Vec<usize> = (0..na)
            .map(|a| {
                let mut best = (0, f64::NEG_INFINITY);
                for x in 0..dim {
                    let w = hi[a * dim + x] - lo[a * dim + x];
                    if w > best.1 {
                        best = (x, w);
                    }
                }
                best.0
            })
            .collect();

        // The cut: the k-th smallest key of each group, found a byte at a time from the top.
        let mut remaining: Vec<u64> = active
            .iter()
            .map(|&g| {
                let grp = groups[g];
                (grp.size as u128 * (grp.parts / 2) as u128 / grp.parts as u128) as u64
            })
            .collect();
        let cut = remaining.clone();
        let mut prefix = vec![0u128; na];
        for round in 0..16u32 {
            let shift = 120 - 8 * round;
            let mut hist = vec![0u64; na * 256];
            for (i, &g) in of.iter().enumerate() {
                let a = slot[g as usize];
                if a == usize::MAX {
                    continue;
                }
                let k = key(i, axis[a]);
                if round == 0 || k >> (shift + 8) == prefix[a] >> (shift + 8) {
                    hist[a * 256 + ((k >> shift) & 255) as usize] += 1;
                }
            }
            all_sum(comm, &mut hist)?;
            for a in 0..na {
                let mut below = 0u64;
                for byte in 0..256 {
                    let h = hist[a * 256 + byte];
                    if below + h > remaining[a] {
                        prefix[a] |= (byte as u128) << shift;
                        remaining[a] -= below;
                        break;
                    }
                    below += h;
                }
            }
        }

        // Keys below the cut point go left: exactly `cut` points of each group.
        let mut children = vec![(0u32, 0u32); na];
        for (a, &g) in active.iter().enumerate() {
            let grp = groups[g];
            let left = grp.parts / 2;
            children[a] = (groups.len() as u32, groups.len() as u32 + 1);
            groups.push(Group {
                first: grp.first,
                parts: left,
                size: cut[a],
            });
            groups.push(Group {
                first: grp.first + left,
                parts: grp.parts - left,
                size: grp.size - cut[a],
            });
            // Split: its points now belong to the children.
            groups[g].parts = 0;
        }
        for (i, g) in of.iter_mut().enumerate() {
            let a = slot[*g as usize];
            if a != usize::MAX {
                *g = if key(i, axis[a]) < prefix[a] {
                    children[a].0
                } else {
                    children[a].1
                };
            }
        }
    }
    Ok(of
        .iter()
        .map(|&g| groups[g as usize].first as u32)
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn order_keys_sort_as_the_numbers_do() {
        let xs = [-1e300, -2.5, -1e-300, 0.0, 1e-300, 3.0, 1e300];
        for w in xs.windows(2) {
            assert!(order_key(w[0]) < order_key(w[1]), "{} < {}", w[0], w[1]);
        }
        assert_eq!(order_key(-0.0), order_key(0.0));
        for x in xs {
            assert_eq!(from_order_key(order_key(x)), x);
        }
    }
}
