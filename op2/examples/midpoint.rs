//! The midpoint example of PyOP2's backend documentation: for every triangle of a mesh, the centroid
//! of its three vertices, computed by one par_loop through the whole cell-to-vertex map row.
//!
//! `cargo run --release -p op2 --example midpoint [N]` meshes the unit square with 2*N*N triangles.

use op2::{Kernel, READ, WRITE};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let n: usize = std::env::args()
        .nth(1)
        .map(|s| s.parse())
        .transpose()?
        .unwrap_or(100);
    let rt = op2::init()?;

    // (n+1)^2 vertices on a grid, each grid square split into two triangles.
    let nv = (n + 1) * (n + 1);
    let mut coords = Vec::with_capacity(2 * nv);
    for j in 0..=n {
        for i in 0..=n {
            coords.extend([i as f64 / n as f64, j as f64 / n as f64]);
        }
    }
    let v = |i: usize, j: usize| (i + j * (n + 1)) as i32;
    let mut c2v = Vec::with_capacity(6 * n * n);
    for j in 0..n {
        for i in 0..n {
            c2v.extend([v(i, j), v(i + 1, j), v(i + 1, j + 1)]);
            c2v.extend([v(i, j), v(i + 1, j + 1), v(i, j + 1)]);
        }
    }

    let vertices = rt.decl_set(nv, "vertices")?;
    let cells = rt.decl_set(2 * n * n, "cells")?;
    let cell2vertex = rt.decl_map(&cells, &vertices, 3, c2v, "cell2vertex")?;
    let coordinates = rt.decl_dat(&vertices, 2, &coords, "coordinates")?;
    let midpoints = rt.decl_dat_zeros::<f64>(&cells, 2, "midpoints")?;

    let midpoint = Kernel::new(
        "midpoint",
        r#"
void midpoint(double p[2], double *coords[3]) {
  p[0] = (coords[0][0] + coords[1][0] + coords[2][0]) / 3.0;
  p[1] = (coords[0][1] + coords[1][1] + coords[2][1]) / 3.0;
}"#,
    )?;
    op2::par_loop!(
        rt,
        midpoint,
        cells,
        midpoints.arg(WRITE),
        coordinates.arg_row(&cell2vertex, READ)
    )?;

    let mid = midpoints.data_ro()?;
    // Every centroid lies inside the unit square and the centroids average to its centre.
    let (mut sx, mut sy) = (0.0, 0.0);
    for p in mid.chunks(2) {
        sx += p[0];
        sy += p[1];
    }
    let cells_n = (2 * n * n) as f64;
    println!("backend: {}", rt.backend_name());
    println!(
        "{} triangles; first midpoints: {:?}",
        2 * n * n,
        &mid[..4.min(mid.len())]
    );
    println!("mean midpoint: ({:.6}, {:.6})", sx / cells_n, sy / cells_n);
    Ok(())
}
