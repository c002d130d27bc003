//! A picture of the flow without ParaView (feature `png`): pressure around the aerofoil, one filled
//! quad per cell in a colour map, the aerofoil's outline, and a legend, drawn headlessly with
//! plotters into a PNG.

use crate::mesh::Mesh;
use crate::output::primitive;
use plotters::prelude::*;
use plotters::style::colors::colormaps::ViridisRGB;
use std::path::Path;

/// Why the picture could not be made.
#[derive(Debug, thiserror::Error)]
pub enum PictureError {
    /// `q` does not hold 4 values per cell of the mesh.
    #[error("the flow has {actual} values, the mesh's {cells} cells need {}", 4 * cells)]
    Length {
        /// Values given.
        actual: usize,
        /// Cells in the mesh.
        cells: usize,
    },
    /// A cell or boundary edge names a node the mesh does not have.
    #[error("{what} {row} refers to node {node}, outside 0..{nodes}")]
    Index {
        /// `cell` or `boundary edge`.
        what: &'static str,
        /// Its row.
        row: usize,
        /// The node it names.
        node: i32,
        /// Nodes in the mesh.
        nodes: usize,
    },
    /// The mesh has no wall (boundary kind 1) to centre the view on.
    #[error("the mesh has no wall boundary to draw")]
    NoWall,
    /// The finished picture could not be put in place (the previous file is unchanged).
    #[error(transparent)]
    Write(#[from] op2::atomic_write::WriteError),
    /// Drawing or encoding failed (for example the file could not be written).
    #[error("{path}: {reason}")]
    Draw {
        /// The file.
        path: String,
        /// What plotters said.
        reason: String,
    },
}

/// Registers the embedded DejaVu Sans as plotters' `sans-serif` (once): the picture needs no
/// system fonts, so it draws the same on a bare CI machine.
fn register_font() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        // The bytes are a valid TrueType font shipped by the `dejavu` crate.
        let _ = plotters::style::register_font(
            "sans-serif",
            FontStyle::Normal,
            dejavu::sans::regular(),
        );
    });
}

/// Renders the pressure of `q` (4 per cell, the whole mesh in its numbering) around the aerofoil
/// into a `width x height` PNG at `path`, titled `title`.
pub fn render_pressure(
    mesh: &Mesh,
    q: &[f64],
    gm1: f64,
    title: &str,
    path: &Path,
    (width, height): (u32, u32),
) -> Result<(), PictureError> {
    if q.len() != 4 * mesh.ncell() {
        return Err(PictureError::Length {
            actual: q.len(),
            cells: mesh.ncell(),
        });
    }
    for (what, values, arity) in [("cell", &mesh.cell, 4), ("boundary edge", &mesh.bedge, 2)] {
        if let Some((i, n)) = crate::mesh::first_outside(values, mesh.nnode()) {
            return Err(PictureError::Index {
                what,
                row: i / arity,
                node: n,
                nodes: mesh.nnode(),
            });
        }
    }
    // Drawn into a temporary file renamed over `path` once complete: never a half-written PNG.
    op2::atomic_write::replace_with(path, |file| {
        draw(mesh, q, gm1, title, file, path, (width, height))
    })
}

/// Draws the picture into `file` (`path` is the name errors give).
fn draw(
    mesh: &Mesh,
    q: &[f64],
    gm1: f64,
    title: &str,
    file: &Path,
    path: &Path,
    (width, height): (u32, u32),
) -> Result<(), PictureError> {
    register_font();
    let draw_err = |e: &dyn std::fmt::Display| PictureError::Draw {
        path: path.display().to_string(),
        reason: e.to_string(),
    };
    let (_, _, pressure) = primitive(q, gm1);
    let node = |n: i32| (mesh.x[2 * n as usize], mesh.x[2 * n as usize + 1]);

    // The view: the wall's bounding box, widened to show the flow around it, in the plot's aspect.
    let wall: Vec<(i32, i32)> = mesh
        .bedge
        .chunks(2)
        .zip(&mesh.bound)
        .filter(|(_, b)| **b == 1)
        .map(|(e, _)| (e[0], e[1]))
        .collect();
    if wall.is_empty() {
        return Err(PictureError::NoWall);
    }
    let (mut x0, mut x1) = (f64::INFINITY, f64::NEG_INFINITY);
    let (mut y0, mut y1) = (f64::INFINITY, f64::NEG_INFINITY);
    for &(a, b) in &wall {
        for (x, y) in [node(a), node(b)] {
            (x0, x1, y0, y1) = (x0.min(x), x1.max(x), y0.min(y), y1.max(y));
        }
    }
    let chord = (x1 - x0).max(f64::MIN_POSITIVE);
    let legend_width = 150u32;
    let plot = (width.saturating_sub(legend_width).max(1), height.max(1));
    let (vx0, vx1) = (x0 - 0.45 * chord, x1 + 0.45 * chord);
    let half_height = 0.5 * (vx1 - vx0) * f64::from(plot.1) / f64::from(plot.0);
    let yc = 0.5 * (y0 + y1);
    let (vy0, vy1) = (yc - half_height, yc + half_height);
    let in_view = |c: &[i32]| {
        c.iter().any(|&n| {
            let (x, y) = node(n);
            (vx0..=vx1).contains(&x) && (vy0..=vy1).contains(&y)
        })
    };

    // The colour range of the cells in view.
    let (mut p0, mut p1) = (f64::INFINITY, f64::NEG_INFINITY);
    for (c, &p) in mesh.cell.chunks(4).zip(&pressure) {
        if in_view(c) && p.is_finite() {
            (p0, p1) = (p0.min(p), p1.max(p));
        }
    }
    if p0 >= p1 || !p0.is_finite() {
        // A uniform (or empty) field still gets a legend.
        (p0, p1) = (p0.min(0.0) - 0.5, p1.max(0.0) + 0.5);
    }
    // Cells whose pressure is not a number (a diverged run) are grey, not a colour-map lookup.
    let colour = |p: f64| {
        if p.is_finite() {
            ViridisRGB.get_color_normalized(p, p0, p1)
        } else {
            RGBColor(128, 128, 128)
        }
    };

    let root = BitMapBackend::new(file, (width, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| draw_err(&e))?;
    let (left, right) = root.split_horizontally(plot.0);
    let mut chart = ChartBuilder::on(&left)
        .caption(title, ("sans-serif", 22))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(65)
        .build_cartesian_2d(vx0..vx1, vy0..vy1)
        .map_err(|e| draw_err(&e))?;
    chart
        .configure_mesh()
        .disable_mesh()
        .x_desc("x")
        .y_desc("y")
        .label_style(("sans-serif", 15))
        .axis_desc_style(("sans-serif", 16))
        .draw()
        .map_err(|e| draw_err(&e))?;
    let cells = mesh
        .cell
        .chunks(4)
        .zip(&pressure)
        .filter(|(c, _)| in_view(c))
        .map(|(c, &p)| {
            // Vertices held inside the view: plotters leaves out shapes that cross the frame,
            // which would show as gaps along the edges.
            let corners: Vec<(f64, f64)> = c
                .iter()
                .map(|&n| {
                    let (x, y) = node(n);
                    (x.clamp(vx0, vx1), y.clamp(vy0, vy1))
                })
                .collect();
            Polygon::new(corners, colour(p).filled())
        });
    chart.draw_series(cells).map_err(|e| draw_err(&e))?;
    let outline = wall
        .iter()
        .map(|&(a, b)| PathElement::new(vec![node(a), node(b)], BLACK.stroke_width(2)));
    chart.draw_series(outline).map_err(|e| draw_err(&e))?;

    // The legend: a colour bar with the pressure scale.
    let mut bar = ChartBuilder::on(&right)
        .caption("pressure", ("sans-serif", 18))
        .margin_top(40)
        .margin_bottom(40)
        .margin_left(10)
        .margin_right(10)
        .y_label_area_size(80)
        .build_cartesian_2d(0.0..1.0, p0..p1)
        .map_err(|e| draw_err(&e))?;
    bar.configure_mesh()
        .disable_mesh()
        .disable_x_axis()
        .y_labels(8)
        .y_label_style(("sans-serif", 15))
        .y_label_formatter(&|v| format!("{v:.3}"))
        .draw()
        .map_err(|e| draw_err(&e))?;
    const STEPS: usize = 200;
    let steps = (0..STEPS).map(|i| {
        let (a, b) = (
            p0 + (p1 - p0) * i as f64 / STEPS as f64,
            p0 + (p1 - p0) * (i + 1) as f64 / STEPS as f64,
        );
        Rectangle::new([(0.0, a), (1.0, b)], colour(0.5 * (a + b)).filled())
    });
    bar.draw_series(steps).map_err(|e| draw_err(&e))?;
    root.present().map_err(|e| draw_err(&e))?;
    Ok(())
}
