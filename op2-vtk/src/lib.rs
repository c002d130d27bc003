//! VTK output for ParaView and every other VTK reader: a mesh (points and cells) with cell and
//! point data written as a VTK XML unstructured grid (`.vtu`), and across ranks one piece per rank
//! plus the parallel index (`.pvtu`) that ParaView opens as one mesh.
//!
//! Arrays are stored as base64-encoded binary inside the XML (`format="binary"`, 64-bit headers),
//! which every VTK reader since VTK 5 understands and which is about a third the size of ASCII.
//!
//! ```no_run
//! # fn main() -> Result<(), op2_vtk::VtkError> {
//! // Two triangles on four points in the plane, a pressure per cell.
//! let grid = op2_vtk::UnstructuredGrid::new(&[0., 0., 1., 0., 1., 1., 0., 1.], 2)?
//!     .with_cells(&[0, 1, 2, 0, 2, 3], 3)?
//!     .with_cell_data("pressure", &[1.0, 2.0], 1)?;
//! grid.write_vtu(std::path::Path::new("two.vtu"))?;
//! # Ok(()) }
//! ```

use base64::Engine as _;
use op2_core::comm::Communicator;
use op2_core::{Dat, Map, Op2Error};
use std::fmt::Write as _;
use std::path::{Path, PathBuf};

/// Why a grid could not be built or written.
#[derive(Debug, thiserror::Error)]
pub enum VtkError {
    /// An array's length does not match the points or cells it describes.
    #[error("{what} `{name}`: {actual} values, expected {expected} ({detail})")]
    Length {
        /// Points, cells, cell data or point data.
        what: &'static str,
        /// The array's name.
        name: String,
        /// Values expected.
        expected: usize,
        /// Values given.
        actual: usize,
        /// How the expected count comes about.
        detail: String,
    },
    /// A cell refers to a point that does not exist.
    #[error("cell {cell}: point {value} is outside 0..{points}")]
    PointIndex {
        /// The cell.
        cell: usize,
        /// The point index it holds.
        value: i64,
        /// Points in the grid.
        points: usize,
    },
    /// A dimension or arity VTK cannot represent.
    #[error("{0}")]
    Unsupported(String),
    /// Two arrays of the same kind with one name (VTK would show only one).
    #[error("{what} `{name}` is given twice")]
    Duplicate {
        /// Cell data or point data.
        what: &'static str,
        /// The name.
        name: String,
    },
    /// The file could not be written.
    #[error("{path}: {source}")]
    Io {
        /// The file.
        path: PathBuf,
        /// The error.
        source: std::io::Error,
    },
    /// Reading a Dat or talking to other ranks failed.
    #[error(transparent)]
    Op2(#[from] Op2Error),
    /// Another rank failed to write its piece (its own error says why).
    #[error("rank {0} could not write its piece")]
    OtherRank(usize),
}

/// Results of this crate.
pub type Result<T> = std::result::Result<T, VtkError>;

/// Values of one data array.
#[derive(Debug, Clone, PartialEq)]
enum Values {
    F64(Vec<f64>),
    I32(Vec<i32>),
}

impl Values {
    fn len(&self) -> usize {
        match self {
            Values::F64(v) => v.len(),
            Values::I32(v) => v.len(),
        }
    }
    fn vtk_type(&self) -> &'static str {
        match self {
            Values::F64(_) => "Float64",
            Values::I32(_) => "Int32",
        }
    }
    fn bytes(&self) -> &[u8] {
        match self {
            Values::F64(v) => bytemuck::cast_slice(v),
            Values::I32(v) => bytemuck::cast_slice(v),
        }
    }
}

/// A named array with `components` values per point or cell.
#[derive(Debug, Clone, PartialEq)]
struct Field {
    name: String,
    components: usize,
    values: Values,
}

/// The shape of a cell, with VTK's number for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum CellType {
    /// One point.
    Vertex = 1,
    /// Two points.
    Line = 3,
    /// Three points.
    Triangle = 5,
    /// Any number of points, in order around a planar face.
    Polygon = 7,
    /// Four points, in order around.
    Quad = 9,
    /// Four points.
    Tetra = 10,
    /// Eight points: the bottom face, then the top face, in VTK's order.
    Hexahedron = 12,
    /// Six points: two triangles.
    Wedge = 13,
    /// Five points: the base, then the apex.
    Pyramid = 14,
}

impl CellType {
    /// The points a cell of this type has (`None`: any number, at least 3).
    fn points(self) -> Option<usize> {
        match self {
            CellType::Vertex => Some(1),
            CellType::Line => Some(2),
            CellType::Triangle => Some(3),
            CellType::Polygon => None,
            CellType::Quad | CellType::Tetra => Some(4),
            CellType::Hexahedron => Some(8),
            CellType::Wedge => Some(6),
            CellType::Pyramid => Some(5),
        }
    }
}

/// A mesh with data, ready to write.
#[derive(Debug, Clone, PartialEq)]
pub struct UnstructuredGrid {
    /// x, y, z per point.
    points: Vec<f64>,
    /// Coordinates given per point (2-D meshes' cells are chosen by arity).
    dim: usize,
    connectivity: Vec<i64>,
    offsets: Vec<i64>,
    types: Vec<u8>,
    cell_data: Vec<Field>,
    point_data: Vec<Field>,
}

impl UnstructuredGrid {
    /// A grid on points given as `dim` coordinates each (`dim` 1, 2 or 3; missing coordinates are
    /// 0), with no cells yet.
    pub fn new(coords: &[f64], dim: usize) -> Result<Self> {
        if !(1..=3).contains(&dim) {
            return Err(VtkError::Unsupported(format!(
                "points need 1, 2 or 3 coordinates, not {dim}"
            )));
        }
        if coords.len() % dim != 0 {
            return Err(VtkError::Length {
                what: "points",
                name: "coordinates".into(),
                expected: coords.len() / dim * dim,
                actual: coords.len(),
                detail: format!("whole points of {dim} coordinates"),
            });
        }
        let points = coords
            .chunks(dim)
            .flat_map(|p| [0, 1, 2].map(|i| p.get(i).copied().unwrap_or(0.0)))
            .collect();
        Ok(UnstructuredGrid {
            points,
            dim,
            connectivity: Vec::new(),
            offsets: Vec::new(),
            types: Vec::new(),
            cell_data: Vec::new(),
            point_data: Vec::new(),
        })
    }

    /// A grid from op2 handles: the points are every row of `coords` (on this rank: owned and
    /// halo rows, so that cells at a partition boundary are whole), the cells the owned rows of
    /// `cells`, a map into `coords`' set.
    pub fn from_dats(coords: &Dat<f64>, cells: &Map) -> Result<Self> {
        if cells.to().id() != coords.set().id() {
            return Err(VtkError::Unsupported(format!(
                "map `{}` points into set `{}`, but the coordinates `{}` live on `{}`",
                cells.name(),
                cells.to().name(),
                coords.name(),
                coords.set().name()
            )));
        }
        let owned = cells.from().size() * cells.arity();
        // A map from an extruded set: every layer's rows (its own values are bottom rows).
        let values = cells.layered_values();
        UnstructuredGrid::new(&coords.to_vec()?, coords.dim())?
            .with_cells(&values[..owned], cells.arity())
    }

    /// Points in the grid.
    pub fn num_points(&self) -> usize {
        self.points.len() / 3
    }

    /// Cells in the grid.
    pub fn num_cells(&self) -> usize {
        self.types.len()
    }

    /// Adds cells of `arity` points each (`connectivity` row-major), their shape chosen by arity:
    /// 1 a vertex, 2 a line, 3 a triangle, 4 a quadrilateral, more a polygon, with points in order
    /// around it. With 3-D points four or more points are ambiguous (a quad or a tetrahedron?):
    /// say which with [`UnstructuredGrid::with_cells_of`].
    pub fn with_cells(self, connectivity: &[i32], arity: usize) -> Result<Self> {
        let kind = match arity {
            1 => CellType::Vertex,
            2 => CellType::Line,
            3 => CellType::Triangle,
            _ if self.dim == 3 => {
                return Err(VtkError::Unsupported(format!(
                    "cells of {arity} points on 3-D points: name their type with with_cells_of"
                )));
            }
            4 => CellType::Quad,
            _ => CellType::Polygon,
        };
        self.push_cells(connectivity, arity, kind)
    }

    /// Adds cells of one type (`connectivity` row-major, `arity` points each, which must be the
    /// type's number of points; a polygon takes any number from 3).
    pub fn with_cells_of(self, connectivity: &[i32], arity: usize, kind: CellType) -> Result<Self> {
        let fits = match kind.points() {
            Some(n) => n == arity,
            None => arity >= 3,
        };
        if !fits {
            return Err(VtkError::Unsupported(format!(
                "a {kind:?} cell cannot have {arity} points"
            )));
        }
        self.push_cells(connectivity, arity, kind)
    }

    fn push_cells(mut self, connectivity: &[i32], arity: usize, kind: CellType) -> Result<Self> {
        if arity == 0 || connectivity.len() % arity != 0 {
            return Err(VtkError::Length {
                what: "cells",
                name: "connectivity".into(),
                expected: connectivity
                    .len()
                    .checked_div(arity)
                    .map_or(0, |n| n * arity),
                actual: connectivity.len(),
                detail: format!("whole cells of {arity} points"),
            });
        }
        let first = self.num_cells();
        let points = self.num_points();
        for (i, &p) in connectivity.iter().enumerate() {
            if p < 0 || p as usize >= points {
                return Err(VtkError::PointIndex {
                    cell: first + i / arity,
                    value: i64::from(p),
                    points,
                });
            }
        }
        let mut end = self.offsets.last().copied().unwrap_or(0);
        for cell in connectivity.chunks(arity) {
            self.connectivity.extend(cell.iter().map(|&p| i64::from(p)));
            end += arity as i64;
            self.offsets.push(end);
            self.types.push(kind as u8);
        }
        Ok(self)
    }

    fn add(&mut self, point: bool, name: &str, values: Values, components: usize) -> Result<()> {
        let (what, count, list) = if point {
            ("point data", self.num_points(), &mut self.point_data)
        } else {
            ("cell data", self.types.len(), &mut self.cell_data)
        };
        let expected = count.saturating_mul(components);
        if components == 0 || values.len() != expected {
            return Err(VtkError::Length {
                what,
                name: name.into(),
                expected,
                actual: values.len(),
                detail: format!("{count} x {components} components"),
            });
        }
        if list.iter().any(|f| f.name == name) {
            return Err(VtkError::Duplicate {
                what,
                name: name.into(),
            });
        }
        list.push(Field {
            name: name.into(),
            components,
            values,
        });
        Ok(())
    }

    /// Adds a cell array: `components` values per cell (1 a scalar, 2 or 3 a vector).
    pub fn with_cell_data(mut self, name: &str, values: &[f64], components: usize) -> Result<Self> {
        self.add(false, name, Values::F64(values.to_vec()), components)?;
        Ok(self)
    }

    /// Adds an integer cell array (flags, partition numbers).
    pub fn with_cell_ints(mut self, name: &str, values: &[i32], components: usize) -> Result<Self> {
        self.add(false, name, Values::I32(values.to_vec()), components)?;
        Ok(self)
    }

    /// Adds a point array: `components` values per point.
    pub fn with_point_data(
        mut self,
        name: &str,
        values: &[f64],
        components: usize,
    ) -> Result<Self> {
        self.add(true, name, Values::F64(values.to_vec()), components)?;
        Ok(self)
    }

    /// Adds a Dat on the cells as cell data: its owned rows, one per cell, named after the Dat.
    pub fn with_cell_dat(self, dat: &Dat<f64>) -> Result<Self> {
        let rows = dat.set().size() * dat.dim();
        let values = dat.to_vec()?;
        let name = dat.name().to_string();
        self.with_cell_data(&name, &values[..rows.min(values.len())], dat.dim())
    }

    /// The `.vtu` document.
    pub fn to_vtu(&self) -> String {
        let mut s = String::with_capacity(64 + self.points.len() * 12);
        s.push_str(
            "<?xml version=\"1.0\"?>\n<VTKFile type=\"UnstructuredGrid\" version=\"1.0\" \
             byte_order=\"LittleEndian\" header_type=\"UInt64\">\n  <UnstructuredGrid>\n",
        );
        let _ = writeln!(
            s,
            "    <Piece NumberOfPoints=\"{}\" NumberOfCells=\"{}\">",
            self.num_points(),
            self.num_cells()
        );
        s.push_str("      <Points>\n");
        let points = bytemuck::cast_slice(&self.points);
        data_array(&mut s, "Points", "Float64", 3, points);
        s.push_str("      </Points>\n      <Cells>\n");
        let connectivity = bytemuck::cast_slice(&self.connectivity);
        data_array(&mut s, "connectivity", "Int64", 1, connectivity);
        let offsets = bytemuck::cast_slice(&self.offsets);
        data_array(&mut s, "offsets", "Int64", 1, offsets);
        data_array(&mut s, "types", "UInt8", 1, &self.types);
        s.push_str("      </Cells>\n");
        for (tag, fields) in [
            ("PointData", &self.point_data),
            ("CellData", &self.cell_data),
        ] {
            let _ = writeln!(s, "      <{tag}>");
            for f in fields {
                let (t, bytes) = (f.values.vtk_type(), f.values.bytes());
                data_array(&mut s, &f.name, t, f.components, bytes);
            }
            let _ = writeln!(s, "      </{tag}>");
        }
        s.push_str("    </Piece>\n  </UnstructuredGrid>\n</VTKFile>\n");
        s
    }

    /// Writes the grid as one `.vtu` file at `path` (as given), atomically: the previous file stays
    /// until the new one is complete on disk.
    pub fn write_vtu(&self, path: &Path) -> Result<()> {
        // Written whole or not at all: a crash or a full disk keeps the previous file.
        op2_atomic_write::write_file(path, self.to_vtu().as_bytes()).map_err(write_error)
    }

    /// The `.pvtu` index of `pieces` (file names relative to the index), each holding a grid with
    /// this grid's arrays.
    pub fn to_pvtu(&self, pieces: &[String]) -> String {
        let mut s = String::from(
            "<?xml version=\"1.0\"?>\n<VTKFile type=\"PUnstructuredGrid\" version=\"1.0\" \
             byte_order=\"LittleEndian\" header_type=\"UInt64\">\n  \
             <PUnstructuredGrid GhostLevel=\"0\">\n    <PPoints>\n      \
             <PDataArray type=\"Float64\" NumberOfComponents=\"3\"/>\n    </PPoints>\n",
        );
        for (tag, fields) in [
            ("PPointData", &self.point_data),
            ("PCellData", &self.cell_data),
        ] {
            let _ = writeln!(s, "    <{tag}>");
            for f in fields {
                let _ = writeln!(
                    s,
                    "      <PDataArray type=\"{}\" Name=\"{}\" NumberOfComponents=\"{}\"/>",
                    f.values.vtk_type(),
                    xml_escape(&f.name),
                    f.components
                );
            }
            let _ = writeln!(s, "    </{tag}>");
        }
        for p in pieces {
            let _ = writeln!(s, "    <Piece Source=\"{}\"/>", xml_escape(p));
        }
        s.push_str("  </PUnstructuredGrid>\n</VTKFile>\n");
        s
    }

    /// Writes this rank's part of a mesh split across `comm`'s ranks. One rank: a `.vtu` (`path`,
    /// with `.vtu` put in place of `.pvtu` or added to another name). More: each rank writes
    /// `STEM_RANK.vtu` beside `path`, and rank 0 the index `STEM.pvtu`, which ParaView opens as one
    /// mesh. Collective: every rank must call it, and every rank returns an error when any rank
    /// could not write. Returns the file to open.
    pub fn write_parallel(&self, path: &Path, comm: &dyn Communicator) -> Result<PathBuf> {
        let (rank, ranks) = (comm.rank(), comm.size());
        if ranks <= 1 {
            let file = with_ending(path, "vtu");
            self.write_vtu(&file)?;
            return Ok(file);
        }
        let index = with_ending(path, "pvtu");
        let stem = index
            .file_stem()
            .map(|s| s.to_string_lossy().into_owned())
            .unwrap_or_else(|| "out".into());
        let piece_name = |r: usize| format!("{stem}_{r}.vtu");
        let dir = index.parent().unwrap_or(Path::new(""));
        let mut written = self.write_vtu(&dir.join(piece_name(rank)));
        if written.is_ok() && rank == 0 {
            let pieces: Vec<String> = (0..ranks).map(piece_name).collect();
            written = op2_atomic_write::write_file(&index, self.to_pvtu(&pieces).as_bytes())
                .map_err(write_error);
        }
        // Every rank learns the lowest rank that failed, so all return alike.
        let failed = comm.first_failed_rank(written.is_err())?;
        written?;
        match failed {
            Some(r) => Err(VtkError::OtherRank(r)),
            None => Ok(index),
        }
    }
}

/// `path` ending in `.ending`: a `.vtu` or `.pvtu` ending is replaced, any other kept and added to
/// (`run.v2` becomes `run.v2.vtu`, not `run.vtu`).
/// A failed atomic write as [`VtkError::Io`] (the target keeps its previous contents).
fn write_error(e: op2_atomic_write::WriteError) -> VtkError {
    VtkError::Io {
        path: e.path().to_path_buf(),
        source: e.into_io_error(),
    }
}

fn with_ending(path: &Path, ending: &str) -> PathBuf {
    match path.extension().and_then(|e| e.to_str()) {
        Some("vtu" | "pvtu") => path.with_extension(ending),
        _ => {
            let mut s = path.as_os_str().to_owned();
            s.push(".");
            s.push(ending);
            PathBuf::from(s)
        }
    }
}

/// One `<DataArray>` in VTK's binary encoding: the byte count as a little-endian u64, then the
/// bytes, all base64.
fn data_array(s: &mut String, name: &str, vtk_type: &str, components: usize, bytes: &[u8]) {
    let mut raw = Vec::with_capacity(8 + bytes.len());
    raw.extend_from_slice(&(bytes.len() as u64).to_le_bytes());
    raw.extend_from_slice(bytes);
    let _ = write!(
        s,
        "        <DataArray type=\"{vtk_type}\" Name=\"{}\" NumberOfComponents=\"{components}\" \
         format=\"binary\">\n          ",
        xml_escape(name)
    );
    base64::engine::general_purpose::STANDARD.encode_string(&raw, s);
    s.push_str("\n        </DataArray>\n");
}

/// `text` safe inside an XML attribute.
fn xml_escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&apos;"),
            '\t' | '\n' | '\r' => {
                let _ = write!(out, "&#{};", c as u32);
            }
            // XML 1.0 has no way to write the other control characters.
            c if (c as u32) < 0x20 => out.push('\u{fffd}'),
            c => out.push(c),
        }
    }
    out
}
