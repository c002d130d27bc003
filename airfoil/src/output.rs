//! What Airfoil's results look like outside the solver: density, velocity and pressure per cell
//! from the conserved state, written as VTK for ParaView (one `.vtu`, or per-rank pieces and a
//! `.pvtu` index across ranks).

use crate::solver::{Airfoil, Constants};
use op2::vtk::{UnstructuredGrid, VtkError};
use std::path::{Path, PathBuf};

/// Density, velocity (3 per cell, z = 0, as ParaView's vector filters expect) and pressure of the conserved state `q` (4 per cell: density,
/// momentum x and y, total energy per volume), for a gas with `gm1 = gamma - 1`.
pub fn primitive(q: &[f64], gm1: f64) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let n = q.len() / 4;
    let (mut rho, mut vel, mut p) = (
        Vec::with_capacity(n),
        Vec::with_capacity(3 * n),
        Vec::with_capacity(n),
    );
    for c in q.chunks_exact(4) {
        let (u, v) = (c[1] / c[0], c[2] / c[0]);
        rho.push(c[0]);
        vel.extend([u, v, 0.0]);
        p.push(gm1 * (c[3] - 0.5 * c[0] * (u * u + v * v)));
    }
    (rho, vel, p)
}

/// Writes the flow as VTK: points are the nodes, cells the quads, with cell data `density`,
/// `velocity` and `pressure`. Collective across ranks (see [`UnstructuredGrid::write_parallel`]);
/// returns the file to open in ParaView.
pub fn write_vtk(airfoil: &Airfoil, c: &Constants, path: &Path) -> Result<PathBuf, VtkError> {
    let owned = airfoil.cell_map().from().size();
    let q = airfoil.q()?;
    let (rho, vel, p) = primitive(&q[..4 * owned], c.gm1);
    UnstructuredGrid::from_dats(airfoil.x_dat(), airfoil.cell_map())?
        .with_cell_data("density", &rho, 1)?
        .with_cell_data("velocity", &vel, 3)?
        .with_cell_data("pressure", &p, 1)?
        .write_parallel(path, airfoil.runtime().communicator().as_ref())
}
