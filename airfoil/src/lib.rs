//! Airfoil, the standard OP2 benchmark: a 2-D inviscid Euler finite-volume solver on an unstructured
//! quad mesh around a NACA0012 airfoil, five loops per step. The mesh generator, the `new_grid.dat`
//! reader and writer, the solver on op2-rs, and a hand-written baseline.

#![warn(missing_docs)]

pub mod baseline;
pub mod mesh;
pub mod solver;

pub use baseline::Baseline;
pub use mesh::{Mesh, MeshError};
pub use solver::{Airfoil, Constants, LOOPS};

/// The standard mesh: I = 400, J = 600 (721,801 nodes, 720,000 cells, 1,438,600 edges).
pub const STANDARD_IJ: (usize, usize) = (400, 600);

/// OP2-Common's reference residuals on the standard mesh at iterations 100, 200, ..., 1000, as
/// printed (6 significant digits).
pub const REFERENCE_RESIDUALS: [&str; 10] = [
    "5.02186e-4",
    "3.41746e-4",
    "2.63430e-4",
    "2.16288e-4",
    "1.84659e-4",
    "1.60866e-4",
    "1.42253e-4",
    "1.27627e-4",
    "1.15810e-4",
    "1.06011e-4",
];

/// A residual printed like the reference (6 significant digits, Rust's exponent style).
pub fn format_residual(r: f64) -> String {
    format!("{r:.5e}")
}
