//! Airfoil, the standard OP2 benchmark: a 2-D inviscid Euler finite-volume solver on an unstructured
//! quad mesh around a NACA0012 airfoil, five loops per step. The mesh generator, the `new_grid.dat`
//! reader and writer, the solver on op2-rs, and a hand-written baseline.

#![warn(missing_docs)]

pub mod baseline;
#[cfg(feature = "mpi")]
pub mod distributed;
#[cfg(feature = "hdf5")]
pub mod hdf5;
pub mod mesh;
pub mod output;
#[cfg(feature = "png")]
pub mod picture;
pub mod solver;

pub use baseline::Baseline;
pub use mesh::{Mesh, MeshError};
pub use solver::{Airfoil, Constants, DeclaredMesh, LOOPS};

/// The standard mesh: I = 400, J = 600 (721,801 nodes, 720,000 cells, 1,438,600 edges).
pub const STANDARD_IJ: (usize, usize) = (400, 600);

/// OP2-Common's reference residuals on the standard mesh at iterations 100, 200, ..., 1000, as
/// printed (6 significant digits).
pub const REFERENCE_RESIDUALS: [&str; 10] = [
    "5.02186e-04",
    "3.41746e-04",
    "2.63430e-04",
    "2.16288e-04",
    "1.84659e-04",
    "1.60866e-04",
    "1.42253e-04",
    "1.27627e-04",
    "1.15810e-04",
    "1.06011e-04",
];

/// A residual printed as OP2-Common prints it, C's `%10.5e`: six significant digits and an
/// exponent of at least two digits (`5.02186e-04`), right-aligned in ten columns, so that outputs
/// can be compared with OP2's line by line.
pub fn format_residual(r: f64) -> String {
    if !r.is_finite() {
        // C prints `inf`, `-inf` and `nan`.
        let word = if r.is_nan() {
            "nan"
        } else if r < 0.0 {
            "-inf"
        } else {
            "inf"
        };
        return format!("{word:>10}");
    }
    let rust = format!("{r:.5e}");
    let (mantissa, exponent) = rust
        .split_once('e')
        .expect("`e` formatting has an exponent");
    let (sign, digits) = match exponent.strip_prefix('-') {
        Some(d) => ('-', d),
        None => ('+', exponent),
    };
    format!("{:>10}", format!("{mantissa}e{sign}{digits:0>2}"))
}

#[cfg(test)]
mod tests {
    use super::format_residual;

    #[test]
    fn residuals_print_like_c() {
        // Expected strings are what C's printf("%10.5e") prints.
        assert_eq!(format_residual(5.021859e-4), "5.02186e-04");
        assert_eq!(format_residual(1.0), "1.00000e+00");
        assert_eq!(format_residual(-2.5e-12), "-2.50000e-12");
        assert_eq!(format_residual(6.02e23), "6.02000e+23");
        assert_eq!(format_residual(1.5e-300), "1.50000e-300");
        assert_eq!(format_residual(0.0), "0.00000e+00");
        assert_eq!(format_residual(f64::INFINITY), "       inf");
        assert_eq!(format_residual(f64::NAN), "       nan");
    }
}
