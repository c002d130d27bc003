//! The Airfoil mesh: the O-type grid around a NACA0012 airfoil built in a square-root-transformed
//! plane (I = 400, J = 600 gives OP2's standard 720,000-cell mesh), and the `new_grid.dat` format.

use std::f64::consts::FRAC_PI_2;
use std::io::{BufRead, BufReader};
use std::path::Path;

/// A mesh as Airfoil uses it (0-based indices, row-major).
#[derive(Debug, Clone, PartialEq)]
pub struct Mesh {
    /// Node coordinates, 2 per node.
    pub x: Vec<f64>,
    /// Cell-to-node, 4 per cell.
    pub cell: Vec<i32>,
    /// Interior edge-to-node, 2 per edge.
    pub edge: Vec<i32>,
    /// Interior edge-to-cell, 2 per edge.
    pub ecell: Vec<i32>,
    /// Boundary edge-to-node, 2 per boundary edge.
    pub bedge: Vec<i32>,
    /// Boundary edge-to-cell, 1 per boundary edge.
    pub becell: Vec<i32>,
    /// Boundary kind per boundary edge: 1 wall, 2 far field.
    pub bound: Vec<i32>,
}

/// Why a mesh file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum MeshError {
    /// The file could not be opened or read.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: String,
        /// The I/O error.
        source: std::io::Error,
    },
    /// A line does not hold what the format says.
    #[error("{path}:{line}: {reason}")]
    Malformed {
        /// The file.
        path: String,
        /// 1-based line number.
        line: usize,
        /// What is wrong.
        reason: String,
    },
    /// A map entry points outside its target set.
    #[error("{path}: map `{map}` entry {entry} is {value}, outside 0..{limit}")]
    Index {
        /// The file.
        path: String,
        /// The map.
        map: String,
        /// Which entry (row-major).
        entry: usize,
        /// Its value.
        value: i64,
        /// The target set's size.
        limit: usize,
    },
    /// An HDF5 file could not be read or written (the error names the file and dataset).
    #[cfg(feature = "hdf5")]
    #[error(transparent)]
    Hdf5(#[from] op2::hdf5::Hdf5Error),
    /// Another rank could not read its slice of the file (its own error says why).
    #[error("{path}: another rank could not read its slice")]
    OtherRank {
        /// The file.
        path: String,
    },
    /// The mesh read from a file could not be partitioned across ranks.
    #[cfg(feature = "mpi")]
    #[error(transparent)]
    Mpi(#[from] op2::mpi::MpiError),
    /// The mesh's maps do not fit its sets, so it cannot be renumbered.
    #[error("cannot renumber the mesh: {0}")]
    Renumber(#[from] op2::renumber::RenumberError),
    /// The file is HDF5 but this build has no HDF5 support.
    #[error("{path} is an HDF5 file: build Airfoil with `--features hdf5` to read it")]
    NeedsHdf5 {
        /// The file.
        path: String,
    },
}

/// The first entry of `values` outside `0..limit`, with its position: a map pointing past its
/// target set. (Used by the HDF5 reader and the picture, each behind its feature.)
#[cfg(any(feature = "hdf5", feature = "png"))]
pub(crate) fn first_outside(values: &[i32], limit: usize) -> Option<(usize, i32)> {
    values
        .iter()
        .position(|&v| v < 0 || v as usize >= limit)
        .map(|i| (i, values[i]))
}

/// The first bytes of every HDF5 file.
const HDF5_SIGNATURE: &[u8; 8] = b"\x89HDF\r\n\x1a\n";

/// Whether `path` is an HDF5 file (so `--mesh` takes either format): its signature at byte 0, or
/// after a user block (512, 1024, 2048, ... bytes, as HDF5 allows).
pub fn is_hdf5(path: &Path) -> bool {
    use std::io::{Read, Seek, SeekFrom};
    let Ok(mut f) = std::fs::File::open(path) else {
        return false;
    };
    let len = f.metadata().map_or(0, |m| m.len());
    let mut at = 0u64;
    while at + 8 <= len {
        let mut head = [0u8; 8];
        if f.seek(SeekFrom::Start(at)).is_err() || f.read_exact(&mut head).is_err() {
            return false;
        }
        if &head == HDF5_SIGNATURE {
            return true;
        }
        at = if at == 0 { 512 } else { 2 * at };
    }
    false
}

/// Whether a file name asks for HDF5 (`.h5`, `.hdf5`, `.hdf`, `.he5`) rather than the text format.
pub fn wants_hdf5(path: &Path) -> bool {
    path.extension().is_some_and(|e| {
        ["h5", "hdf5", "hdf", "he5"]
            .iter()
            .any(|x| e.eq_ignore_ascii_case(x))
    })
}

impl Mesh {
    /// Nodes.
    pub fn nnode(&self) -> usize {
        self.x.len() / 2
    }
    /// Cells.
    pub fn ncell(&self) -> usize {
        self.cell.len() / 4
    }
    /// Interior edges.
    pub fn nedge(&self) -> usize {
        self.edge.len() / 2
    }
    /// Boundary edges.
    pub fn nbedge(&self) -> usize {
        self.bedge.len() / 2
    }

    /// Generates the O-grid with `3 * ni` cells around and `nj` cells outwards.
    pub fn generate(ni: usize, nj: usize) -> Mesh {
        let xb = boundary_abscissae(ni);
        let yb = surface_ordinates(ni, &xb);
        let nx = 3 * ni; // cells around
        let node = |i: usize, j: usize| (i + j * (nx + 1)) as i32;
        let cell = |i: usize, j: usize| (i + nx * j) as i32;

        let mut x = Vec::with_capacity(2 * (nx + 1) * (nj + 1));
        for j in 0..=nj {
            for i in 0..=nx {
                let yg = linspace_at(yb[i], 3.0, nj + 1, j);
                // w = xb + i yg; the node is w^2.
                let (re, im) = (xb[i] * xb[i] - yg * yg, 2.0 * xb[i] * yg);
                x.push(round6(re));
                x.push(round6(im));
            }
        }
        let mut cells = Vec::with_capacity(4 * nx * nj);
        for j in 0..nj {
            for i in 0..nx {
                cells.extend([
                    node(i, j),
                    node(i + 1, j),
                    node(i + 1, j + 1),
                    node(i, j + 1),
                ]);
            }
        }
        let (mut edge, mut ecell) = (Vec::new(), Vec::new());
        for j in 0..nj {
            for i in 0..nx {
                if j == 0 && i < ni {
                    // The cut line behind the trailing edge joins the first and last columns.
                    edge.extend([node(i, 0), node(i + 1, 0)]);
                    ecell.extend([cell(nx - 1 - i, 0), cell(i, 0)]);
                }
                if j + 1 < nj {
                    edge.extend([node(i, j + 1), node(i + 1, j + 1)]);
                    ecell.extend([cell(i, j), cell(i, j + 1)]);
                }
                if i + 1 < nx {
                    edge.extend([node(i + 1, j), node(i + 1, j + 1)]);
                    ecell.extend([cell(i + 1, j), cell(i, j)]);
                }
            }
        }
        let (mut bedge, mut becell, mut bound) = (Vec::new(), Vec::new(), Vec::new());
        let mut b = |n1: i32, n2: i32, c: i32, kind: i32| {
            bedge.extend([n1, n2]);
            becell.push(c);
            bound.push(kind);
        };
        for i in ni..2 * ni {
            b(node(i + 1, 0), node(i, 0), cell(i, 0), 1);
        }
        for j in 0..nj {
            b(node(nx, j + 1), node(nx, j), cell(nx - 1, j), 2);
        }
        for i in (0..nx).rev() {
            b(node(i, nj), node(i + 1, nj), cell(i, nj - 1), 2);
        }
        for j in (0..nj).rev() {
            b(node(0, j), node(0, j + 1), cell(0, j), 2);
        }
        Mesh {
            x,
            cell: cells,
            edge,
            ecell,
            bedge,
            becell,
            bound,
        }
    }

    /// Writes `new_grid.dat`: `nnode ncell nedge nbedge`, then the coordinates, the cells, the edges
    /// (`n1 n2 c1 c2`) and the boundary edges (`n1 n2 cell bound`), 0-based.
    pub fn write(&self, path: &Path) -> std::io::Result<()> {
        // Streamed into a temporary file renamed over `path` when complete (no second copy of
        // the mesh as text in memory; a crash or a full disk keeps the previous file).
        op2::atomic_write::write_with(path, |s| {
            writeln!(
                s,
                "{} {} {} {}",
                self.nnode(),
                self.ncell(),
                self.nedge(),
                self.nbedge()
            )?;
            for p in self.x.chunks(2) {
                writeln!(s, "{:.6} {:.6}", p[0], p[1])?;
            }
            for c in self.cell.chunks(4) {
                writeln!(s, "{} {} {} {}", c[0], c[1], c[2], c[3])?;
            }
            for (n, c) in self.edge.chunks(2).zip(self.ecell.chunks(2)) {
                writeln!(s, "{} {} {} {}", n[0], n[1], c[0], c[1])?;
            }
            for ((n, c), k) in self.bedge.chunks(2).zip(&self.becell).zip(&self.bound) {
                writeln!(s, "{} {} {} {}", n[0], n[1], c, k)?;
            }
            Ok(())
        })
        .map_err(|e| e.into_io_error())
    }

    /// The same mesh numbered for locality, as OP2's `op_renumber` does: cells in reverse
    /// Cuthill-McKee order (cells joined through shared nodes), nodes, edges and boundary edges
    /// after the cells they touch. Loops then gather from nearby memory. A mesh whose maps do
    /// not fit its sets is an error.
    pub fn renumbered(&self) -> Result<Mesh, MeshError> {
        self.clone().into_renumbered()
    }

    /// [`Mesh::renumbered`] in place: each array is permuted where it lies, so renumbering
    /// needs a byte per row beside the mesh instead of a second mesh.
    pub fn into_renumbered(mut self) -> Result<Mesh, MeshError> {
        use op2::renumber::{MapRef, locality_order, permute_rows_in_place, renumber_map_in_place};
        // Sets: 0 nodes, 1 cells, 2 edges, 3 boundary edges.
        let sizes = [self.nnode(), self.ncell(), self.nedge(), self.nbedge()];
        let maps = [
            (1, 0, 4, &self.cell),
            (2, 0, 2, &self.edge),
            (2, 1, 2, &self.ecell),
            (3, 0, 2, &self.bedge),
            (3, 1, 1, &self.becell),
        ]
        .map(|(from, to, arity, values)| MapRef {
            from,
            to,
            arity,
            values,
        });
        let order = locality_order(&sizes, &maps, 1)?;
        let [nodes, cells, edges, bedges] = [0, 1, 2, 3].map(|s| order[s].as_slice());
        permute_rows_in_place(&mut self.x, 2, nodes)?;
        renumber_map_in_place(&mut self.cell, 4, cells, nodes)?;
        renumber_map_in_place(&mut self.edge, 2, edges, nodes)?;
        renumber_map_in_place(&mut self.ecell, 2, edges, cells)?;
        renumber_map_in_place(&mut self.bedge, 2, bedges, nodes)?;
        renumber_map_in_place(&mut self.becell, 1, bedges, cells)?;
        permute_rows_in_place(&mut self.bound, 1, bedges)?;
        Ok(self)
    }

    /// Reads a mesh file in either format: OP2's HDF5 layout (recognised by its first bytes; needs
    /// the `hdf5` feature) or `new_grid.dat`.
    pub fn load(path: &Path) -> Result<Mesh, MeshError> {
        if is_hdf5(path) {
            #[cfg(feature = "hdf5")]
            return Mesh::read_hdf5(path);
            #[cfg(not(feature = "hdf5"))]
            return Err(MeshError::NeedsHdf5 {
                path: path.display().to_string(),
            });
        }
        Mesh::read(path)
    }

    /// Writes the mesh as HDF5 when the name ends in `.h5` or `.hdf5` (with the initial flow and
    /// constants of `c`, as OP2's `new_grid.h5`), else as `new_grid.dat`.
    pub fn save(&self, path: &Path, c: &crate::Constants) -> Result<(), MeshError> {
        if wants_hdf5(path) {
            #[cfg(feature = "hdf5")]
            return self.write_hdf5(path, c);
            #[cfg(not(feature = "hdf5"))]
            {
                let _ = c;
                return Err(MeshError::NeedsHdf5 {
                    path: path.display().to_string(),
                });
            }
        }
        self.write(path).map_err(|source| MeshError::Io {
            path: path.display().to_string(),
            source,
        })
    }

    /// Reads `new_grid.dat`, checking every line and every index.
    pub fn read(path: &Path) -> Result<Mesh, MeshError> {
        let name = path.display().to_string();
        let file = std::fs::File::open(path).map_err(|source| MeshError::Io {
            path: name.clone(),
            source,
        })?;
        let mut lines = BufReader::new(file).lines().enumerate();
        let mut next = |what: &str, count: usize| -> Result<(usize, Vec<String>), MeshError> {
            let (i, l) = lines.next().ok_or_else(|| MeshError::Malformed {
                path: name.clone(),
                line: 0,
                reason: format!("file ends before {what}"),
            })?;
            let l = l.map_err(|source| MeshError::Io {
                path: name.clone(),
                source,
            })?;
            let fields: Vec<String> = l.split_whitespace().map(String::from).collect();
            if fields.len() != count {
                return Err(MeshError::Malformed {
                    path: name.clone(),
                    line: i + 1,
                    reason: format!("expected {count} fields ({what}), found {}", fields.len()),
                });
            }
            Ok((i + 1, fields))
        };
        let bad = |line: usize, reason: String| MeshError::Malformed {
            path: path.display().to_string(),
            line,
            reason,
        };
        let ints = |line: usize, f: &[String], limits: &[usize]| -> Result<Vec<i32>, MeshError> {
            f.iter()
                .zip(limits)
                .map(|(v, &lim)| match v.parse::<i64>() {
                    Ok(n) if n >= 0 && (n as usize) < lim => Ok(n as i32),
                    Ok(n) => Err(bad(line, format!("index {n} outside 0..{lim}"))),
                    Err(_) => Err(bad(line, format!("`{v}` is not an integer"))),
                })
                .collect()
        };
        let (l, h) = next("the header `nnode ncell nedge nbedge`", 4)?;
        let counts = ints(l, &h, &[usize::MAX; 4])?;
        let [nnode, ncell, nedge, nbedge] = [0, 1, 2, 3].map(|i| counts[i] as usize);
        let mut m = Mesh {
            x: Vec::with_capacity(2 * nnode),
            cell: Vec::with_capacity(4 * ncell),
            edge: Vec::with_capacity(2 * nedge),
            ecell: Vec::with_capacity(2 * nedge),
            bedge: Vec::with_capacity(2 * nbedge),
            becell: Vec::with_capacity(nbedge),
            bound: Vec::with_capacity(nbedge),
        };
        for _ in 0..nnode {
            let (l, f) = next("a node `x y`", 2)?;
            for v in &f {
                m.x.push(
                    v.parse()
                        .map_err(|_| bad(l, format!("`{v}` is not a number")))?,
                );
            }
        }
        for _ in 0..ncell {
            let (l, f) = next("a cell's 4 nodes", 4)?;
            m.cell.extend(ints(l, &f, &[nnode; 4])?);
        }
        for _ in 0..nedge {
            let (l, f) = next("an edge `n1 n2 c1 c2`", 4)?;
            let v = ints(l, &f, &[nnode, nnode, ncell, ncell])?;
            m.edge.extend(&v[..2]);
            m.ecell.extend(&v[2..]);
        }
        for _ in 0..nbedge {
            let (l, f) = next("a boundary edge `n1 n2 cell bound`", 4)?;
            let v = ints(l, &f, &[nnode, nnode, ncell, usize::MAX])?;
            m.bedge.extend(&v[..2]);
            m.becell.push(v[2]);
            m.bound.push(v[3]);
        }
        Ok(m)
    }
}

/// `mesh` with its nodes, cells, edges and boundary edges numbered in a pseudo-random order
/// (fixed by `seed`), as a mesh generator that does not care about order writes them: file-order
/// blocks are then a poor partition, which is what real partitioners are for.
pub fn shuffled(mesh: &Mesh, seed: u64) -> Mesh {
    let mut state = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let mut permutation = |n: usize| -> Vec<usize> {
        // Fisher-Yates over a 64-bit linear congruential generator.
        let mut p: Vec<usize> = (0..n).collect();
        for i in (1..n).rev() {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            p.swap(i, ((state >> 33) % (i as u64 + 1)) as usize);
        }
        p
    };
    // new_of[old] and old_of[new].
    let (node_old, cell_old, edge_old, bedge_old) = (
        permutation(mesh.nnode()),
        permutation(mesh.ncell()),
        permutation(mesh.nedge()),
        permutation(mesh.nbedge()),
    );
    let invert = |old_of: &[usize]| {
        let mut new_of = vec![0i32; old_of.len()];
        for (new, &old) in old_of.iter().enumerate() {
            new_of[old] = new as i32;
        }
        new_of
    };
    let (node_new, cell_new) = (invert(&node_old), invert(&cell_old));
    let rows = |values: &[i32], arity: usize, old_of: &[usize], renumber: &[i32]| -> Vec<i32> {
        old_of
            .iter()
            .flat_map(|&o| {
                values[o * arity..(o + 1) * arity]
                    .iter()
                    .map(|&v| renumber[v as usize])
            })
            .collect()
    };
    Mesh {
        x: node_old
            .iter()
            .flat_map(|&o| [mesh.x[2 * o], mesh.x[2 * o + 1]])
            .collect(),
        cell: rows(&mesh.cell, 4, &cell_old, &node_new),
        edge: rows(&mesh.edge, 2, &edge_old, &node_new),
        ecell: rows(&mesh.ecell, 2, &edge_old, &cell_new),
        bedge: rows(&mesh.bedge, 2, &bedge_old, &node_new),
        becell: rows(&mesh.becell, 1, &bedge_old, &cell_new),
        bound: bedge_old.iter().map(|&o| mesh.bound[o]).collect(),
    }
}

/// The value `k` of `n` evenly spaced from `a` to `b` inclusive (as numpy's linspace computes it).
fn linspace_at(a: f64, b: f64, n: usize, k: usize) -> f64 {
    if k + 1 == n {
        b
    } else {
        a + k as f64 * ((b - a) / (n - 1) as f64)
    }
}

/// Rounds to 6 decimals the way `%.6f` prints (the reference mesh was written so).
fn round6(v: f64) -> f64 {
    format!("{v:.6}")
        .parse()
        .expect("a formatted number parses")
}

/// `3 ni + 1` abscissae evenly spaced from -3 to 3.
fn boundary_abscissae(ni: usize) -> Vec<f64> {
    (0..=3 * ni)
        .map(|i| linspace_at(-3.0, 3.0, 3 * ni + 1, i))
        .collect()
}

/// The airfoil surface in the transformed plane: 0 off the airfoil, the not-a-knot spline through
/// the transformed NACA0012 curve at indices `ni + 1 ..= 2 ni - 1`.
fn surface_ordinates(ni: usize, xb: &[f64]) -> Vec<f64> {
    const NS: usize = 100;
    let (mut zr, mut zi) = (Vec::with_capacity(NS), Vec::with_capacity(NS));
    for k in 0..NS {
        let t = linspace_at(0.0, FRAC_PI_2, NS, k);
        let x = t.sin().powi(2);
        let mut y = 0.594689181
            * (0.298222773 * x.sqrt() - 0.127125232 * x - 0.357907906 * x * x
                + 0.291984971 * x.powi(3)
                - 0.105174696 * x.powi(4));
        if k == NS - 1 {
            y = 0.0;
        }
        let (re, im) = complex_sqrt(x - 0.0077, y);
        zr.push(re);
        zi.push(im);
    }
    // Reversed negated conjugates, then z without its first point.
    let mut cx: Vec<f64> = zr.iter().rev().map(|r| -r).collect();
    let mut cy: Vec<f64> = zi.iter().rev().copied().collect();
    cx.extend(&zr[1..]);
    cy.extend(&zi[1..]);
    let spline = NotAKnotSpline::new(&cx, &cy);
    let mut yb = vec![0.0; xb.len()];
    for i in ni + 1..2 * ni {
        yb[i] = spline.eval(xb[i]);
    }
    yb
}

/// The principal square root of `re + i im`.
fn complex_sqrt(re: f64, im: f64) -> (f64, f64) {
    let r = re.hypot(im);
    let a = ((r + re) / 2.0).sqrt();
    let b = ((r - re) / 2.0).sqrt();
    (a, if im < 0.0 { -b } else { b })
}

/// A cubic spline with not-a-knot ends (MATLAB's `spline`, SciPy's default `CubicSpline`).
struct NotAKnotSpline {
    x: Vec<f64>,
    y: Vec<f64>,
    /// Second derivatives at the knots.
    m: Vec<f64>,
}

impl NotAKnotSpline {
    fn new(x: &[f64], y: &[f64]) -> Self {
        let n = x.len();
        let h: Vec<f64> = x.windows(2).map(|w| w[1] - w[0]).collect();
        // Dense system (n is small): rows 0 and n-1 are the not-a-knot conditions (third derivative
        // continuous at the second and the second-to-last knots), the others the usual continuity.
        let mut a = vec![vec![0.0; n]; n];
        let mut rhs = vec![0.0; n];
        a[0][0] = h[1];
        a[0][1] = -(h[0] + h[1]);
        a[0][2] = h[0];
        for i in 1..n - 1 {
            a[i][i - 1] = h[i - 1];
            a[i][i] = 2.0 * (h[i - 1] + h[i]);
            a[i][i + 1] = h[i];
            rhs[i] = 6.0 * ((y[i + 1] - y[i]) / h[i] - (y[i] - y[i - 1]) / h[i - 1]);
        }
        a[n - 1][n - 3] = h[n - 2];
        a[n - 1][n - 2] = -(h[n - 3] + h[n - 2]);
        a[n - 1][n - 1] = h[n - 3];
        let m = solve(a, rhs);
        NotAKnotSpline {
            x: x.to_vec(),
            y: y.to_vec(),
            m,
        }
    }

    fn eval(&self, t: f64) -> f64 {
        let n = self.x.len();
        // The interval holding t (the end intervals extend outwards).
        let i = match self.x.partition_point(|&v| v <= t) {
            0 => 0,
            p if p >= n => n - 2,
            p => p - 1,
        };
        let (x0, x1) = (self.x[i], self.x[i + 1]);
        let h = x1 - x0;
        let (a, b) = (x1 - t, t - x0);
        self.m[i] * a * a * a / (6.0 * h)
            + self.m[i + 1] * b * b * b / (6.0 * h)
            + (self.y[i] / h - self.m[i] * h / 6.0) * a
            + (self.y[i + 1] / h - self.m[i + 1] * h / 6.0) * b
    }
}

/// Gaussian elimination with partial pivoting.
fn solve(mut a: Vec<Vec<f64>>, mut b: Vec<f64>) -> Vec<f64> {
    let n = b.len();
    for col in 0..n {
        let p = (col..n)
            .max_by(|&i, &j| a[i][col].abs().total_cmp(&a[j][col].abs()))
            .expect("non-empty range");
        a.swap(col, p);
        b.swap(col, p);
        for r in col + 1..n {
            let f = a[r][col] / a[col][col];
            if f != 0.0 {
                let (upper, lower) = a.split_at_mut(r);
                for (x, p) in lower[0][col..].iter_mut().zip(&upper[col][col..]) {
                    *x -= f * p;
                }
                b[r] -= f * b[col];
            }
        }
    }
    let mut x = vec![0.0; n];
    for r in (0..n).rev() {
        let s: f64 = (r + 1..n).map(|c| a[r][c] * x[c]).sum();
        x[r] = (b[r] - s) / a[r][r];
    }
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spline_reproduces_cubics_exactly() {
        // A not-a-knot spline through samples of a cubic is that cubic.
        let f = |x: f64| 0.5 * x * x * x - 2.0 * x * x + x - 3.0;
        let xs: Vec<f64> = (0..9).map(|i| (i as f64 * 0.37).powf(1.3)).collect();
        let ys: Vec<f64> = xs.iter().map(|&x| f(x)).collect();
        let s = NotAKnotSpline::new(&xs, &ys);
        for t in [0.01, 0.5, 1.1, 2.0, 2.9] {
            assert!(
                (s.eval(t) - f(t)).abs() < 1e-9,
                "{t}: {} vs {}",
                s.eval(t),
                f(t)
            );
        }
    }

    #[test]
    fn complex_sqrt_is_principal() {
        let (a, b) = complex_sqrt(-0.0077, 0.0);
        assert!(a.abs() < 1e-15 && (b - 0.0077f64.sqrt()).abs() < 1e-15);
        let (a, b) = complex_sqrt(3.0, 4.0);
        assert!((a - 2.0).abs() < 1e-15 && (b - 1.0).abs() < 1e-15);
    }

    #[test]
    fn small_grid_counts_and_closed_cells() {
        let (ni, nj) = (4, 5);
        let m = Mesh::generate(ni, nj);
        assert_eq!(m.nnode(), (3 * ni + 1) * (nj + 1));
        assert_eq!(m.ncell(), 3 * ni * nj);
        assert_eq!(m.nedge(), ni + 3 * ni * (nj - 1) + (3 * ni - 1) * nj);
        assert_eq!(m.nbedge(), ni + 2 * nj + 3 * ni);
        assert_eq!(m.bound.iter().filter(|&&b| b == 1).count(), ni);
        // Every cell has 4 sides: each side is an interior edge (counted from both cells) or a
        // boundary edge.
        let mut sides = vec![0; m.ncell()];
        for &c in m.ecell.iter().chain(&m.becell) {
            sides[c as usize] += 1;
        }
        assert!(sides.iter().all(|&s| s == 4), "{sides:?}");
    }
}
