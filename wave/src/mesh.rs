//! The unit square's P1 mesh for the wave example, split into strips of vertex rows across
//! ranks: each rank builds only its own strip and the rows next to it (no rank holds the whole
//! mesh), with OP2's sections (core rows first, then the owned rows next to another rank's, then
//! the halo rows) and the halo lists an exchange needs.
//!
//! Triangles come from each grid square cut along its diagonal from lower left to upper right,
//! so every vertex has up to six neighbours. The loops work vertex by vertex through a stencil
//! map: each vertex, then its neighbours counter-clockwise (east, north-east, north, west,
//! south-west, south); a neighbour off the square is the vertex itself, which makes the
//! triangles that would use it degenerate (the kernels skip them). Interior vertices are moved a
//! little (by a hash of their number, the same on every rank), so the mesh is not uniform.

use op2::{HaloNeighbour, SetHalo, SetSizes};

/// Entries of the stencil map: the vertex and its six neighbours.
pub const STENCIL: usize = 7;

/// Grid offsets of the six neighbours, counter-clockwise from east.
const NEIGHBOURS: [(i64, i64); 6] = [(1, 0), (1, 1), (0, 1), (-1, 0), (-1, -1), (0, -1)];

/// One rank's part of an `n` x `n` square grid of the unit square ((n + 1)^2 vertices).
#[derive(Debug, Clone, PartialEq)]
pub struct LocalGrid {
    /// Squares per side.
    pub n: usize,
    /// Section sizes of the vertex set (no exec halo: no loop writes through the map).
    pub sizes: SetSizes,
    /// What the vertex set exchanges with neighbour ranks.
    pub halo: SetHalo,
    /// Coordinates, two per local vertex.
    pub coords: Vec<f64>,
    /// The stencil map, [`STENCIL`] local vertices per owned vertex.
    pub stencil: Vec<i32>,
    /// Global number of each local vertex (row-major over the grid).
    pub global_ids: Vec<u64>,
}

/// The vertex rows rank `rank` of `ranks` owns: a block of the `n + 1` rows.
pub fn rows_of(n: usize, ranks: usize, rank: usize) -> std::ops::Range<usize> {
    let rows = n + 1;
    let (base, extra) = (rows / ranks, rows % ranks);
    let lo = rank * base + rank.min(extra);
    lo..lo + base + usize::from(rank < extra)
}

/// The rank owning vertex row `j`.
fn owner(n: usize, ranks: usize, j: usize) -> usize {
    (0..ranks)
        .find(|&r| rows_of(n, ranks, r).contains(&j))
        .expect("every row has an owner")
}

/// A vertex's coordinates: the grid point, moved by up to a tenth of a square inside the square.
pub fn position(n: usize, i: usize, j: usize) -> [f64; 2] {
    let h = 1.0 / n as f64;
    let interior = i > 0 && j > 0 && i < n && j < n;
    let (dx, dy) = if interior {
        let g = (j * (n + 1) + i) as u64;
        (jitter(g, 1), jitter(g, 2))
    } else {
        (0.0, 0.0)
    };
    [(i as f64 + 0.1 * dx) * h, (j as f64 + 0.1 * dy) * h]
}

/// A value in [-1, 1) from a vertex number (splitmix64), the same on every rank.
fn jitter(g: u64, salt: u64) -> f64 {
    let mut z = g
        .wrapping_mul(2)
        .wrapping_add(salt)
        .wrapping_add(0x9e37_79b9_7f4a_7c15);
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^= z >> 31;
    (z >> 11) as f64 / (1u64 << 52) as f64 - 1.0
}

impl LocalGrid {
    /// Rank `rank`'s strip of the `n` x `n` grid split among `ranks` ranks (one rank: the whole
    /// grid, all core). A rank with no rows has an empty strip.
    pub fn new(n: usize, ranks: usize, rank: usize) -> LocalGrid {
        assert!(n >= 1 && ranks >= 1 && rank < ranks, "a grid and a rank");
        let mine = rows_of(n, ranks, rank);
        let foreign = |j: i64| j >= 0 && j <= n as i64 && !mine.contains(&(j as usize));
        // Owned rows next to another rank's rows touch the halo; the rest are core.
        let (mut core_rows, mut owned_rows) = (Vec::new(), Vec::new());
        for j in mine.clone() {
            if foreign(j as i64 - 1) || foreign(j as i64 + 1) {
                owned_rows.push(j);
            } else {
                core_rows.push(j);
            }
        }
        let halo_rows: Vec<usize> = if mine.is_empty() {
            Vec::new()
        } else {
            [mine.start as i64 - 1, mine.end as i64]
                .into_iter()
                .filter(|&j| foreign(j))
                .map(|j| j as usize)
                .collect()
        };
        let width = n + 1;
        let rows: Vec<usize> = core_rows
            .iter()
            .chain(&owned_rows)
            .chain(&halo_rows)
            .copied()
            .collect();
        let local_row = |j: usize| rows.iter().position(|&r| r == j);
        let sizes = SetSizes {
            core: core_rows.len() * width,
            owned: owned_rows.len() * width,
            exec_halo: 0,
            nonexec_halo: halo_rows.len() * width,
        };
        let owned_count = sizes.core + sizes.owned;
        let mut coords = Vec::with_capacity(rows.len() * width * 2);
        let mut global_ids = Vec::with_capacity(rows.len() * width);
        let mut stencil = Vec::with_capacity(rows.len() * width * STENCIL);
        for (r, &j) in rows.iter().enumerate() {
            for i in 0..width {
                coords.extend(position(n, i, j));
                global_ids.push((j * width + i) as u64);
                let me = (r * width + i) as i32;
                if me as usize >= owned_count {
                    // Halo vertices are never iterated: the map has rows for owned ones only.
                    continue;
                }
                stencil.push(me);
                for (di, dj) in NEIGHBOURS {
                    let (ni, nj) = (i as i64 + di, j as i64 + dj);
                    let inside = ni >= 0 && nj >= 0 && ni <= n as i64 && nj <= n as i64;
                    let local = inside.then(|| local_row(nj as usize)).flatten();
                    stencil.push(match local {
                        Some(lr) => (lr * width + ni as usize) as i32,
                        None => me,
                    });
                }
            }
        }
        // Per neighbour rank: my row next to theirs goes to them, their row next to mine comes
        // here, vertex by vertex along the row (both sides list it in the same order).
        let mut neighbours = Vec::new();
        for &h in &halo_rows {
            let rank_there = owner(n, ranks, h);
            let sent_row = if h < mine.start {
                mine.start
            } else {
                mine.end - 1
            };
            let lr_sent = local_row(sent_row).expect("an owned row");
            let lr_halo = local_row(h).expect("a halo row");
            neighbours.push(HaloNeighbour {
                rank: rank_there,
                send: (0..width).map(|i| (lr_sent * width + i) as u32).collect(),
                send_to_exec: 0,
                receive: (0..width).map(|i| (lr_halo * width + i) as u32).collect(),
            });
        }
        LocalGrid {
            n,
            sizes,
            halo: SetHalo { neighbours },
            coords,
            stencil,
            global_ids,
        }
    }

    /// Vertices held here (owned and halo).
    pub fn len(&self) -> usize {
        self.global_ids.len()
    }

    /// Whether this rank holds no vertex.
    pub fn is_empty(&self) -> bool {
        self.global_ids.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strips_cover_every_row_once() {
        for ranks in 1..6 {
            let mut all: Vec<usize> = (0..ranks).flat_map(|r| rows_of(10, ranks, r)).collect();
            all.sort_unstable();
            assert_eq!(all, (0..=10).collect::<Vec<_>>());
        }
    }

    #[test]
    fn one_rank_is_all_core_and_neighbours_are_adjacent_vertices() {
        let g = LocalGrid::new(4, 1, 0);
        assert_eq!(g.sizes.core, 25);
        assert_eq!(g.sizes.owned + g.sizes.nonexec_halo, 0);
        // Vertex (1, 1) = 6: east 7, north-east 12, north 11, west 5, south-west 0, south 1.
        assert_eq!(
            &g.stencil[6 * STENCIL..7 * STENCIL],
            &[6, 7, 12, 11, 5, 0, 1]
        );
        // Corner (0, 0): only east, north-east and north exist.
        assert_eq!(&g.stencil[..STENCIL], &[0, 1, 6, 5, 0, 0, 0]);
    }

    #[test]
    fn halos_match_between_neighbours() {
        let (n, ranks) = (6, 3);
        let grids: Vec<LocalGrid> = (0..ranks).map(|r| LocalGrid::new(n, ranks, r)).collect();
        for (r, g) in grids.iter().enumerate() {
            for nb in &g.halo.neighbours {
                let other = &grids[nb.rank];
                let back = other
                    .halo
                    .neighbours
                    .iter()
                    .find(|x| x.rank == r)
                    .expect("neighbours both ways");
                let sent: Vec<u64> = nb.send.iter().map(|&e| g.global_ids[e as usize]).collect();
                let got: Vec<u64> = back
                    .receive
                    .iter()
                    .map(|&e| other.global_ids[e as usize])
                    .collect();
                assert_eq!(sent, got);
            }
        }
    }

    #[test]
    fn more_ranks_than_rows_leaves_some_empty() {
        let g = LocalGrid::new(1, 4, 3);
        assert!(g.is_empty());
        assert!(g.halo.neighbours.is_empty());
    }
}
