//! Airfoil's files: OP2's `new_grid.h5` written and read back with identical residuals, a file
//! made by h5py read, VTK output opened by meshio with the values computed here independently, and
//! the PNG picture.

use op2_test_support::seq;
use op2_test_support::tools as support;

use airfoil::{Airfoil, Constants, Mesh};

/// OP2's HDF5 files (feature `hdf5`).
#[cfg(feature = "hdf5")]
mod hdf5 {
    use super::*;
    use airfoil::MeshError;

    /// Residuals of `steps` iterations on `mesh` with constants `c`.
    fn residuals(mesh: &Mesh, c: &Constants, steps: usize) -> Vec<f64> {
        let a = Airfoil::new(&seq(), mesh, c).unwrap();
        (0..steps).map(|_| a.step().unwrap()).collect()
    }

    #[test]
    fn standard_mesh_round_trips_through_hdf5_with_identical_residuals() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("new_grid.h5");
        let mesh = Mesh::generate(airfoil::STANDARD_IJ.0, airfoil::STANDARD_IJ.1);
        mesh.save(&path, &Constants::default()).unwrap();
        assert!(airfoil::mesh::is_hdf5(&path));
        let back = Mesh::load(&path).unwrap();
        assert!(back == mesh, "the mesh read back differs");
        let c = Constants::read_hdf5(&path)
            .unwrap()
            .expect("constants written");
        assert_eq!(c, Constants::default());
        // 100 iterations on the mesh read from the file print OP2-Common's first residual.
        let rms = residuals(&back, &c, 100);
        assert_eq!(
            airfoil::format_residual(rms[99]),
            airfoil::REFERENCE_RESIDUALS[0]
        );
    }

    #[test]
    fn small_mesh_round_trip_keeps_every_bit_of_the_residuals() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("small.hdf5");
        let mesh = Mesh::generate(20, 30);
        mesh.save(&path, &Constants::default()).unwrap();
        let back = Mesh::read_hdf5(&path).unwrap();
        let (a, b) = (
            residuals(&mesh, &Constants::default(), 20),
            residuals(&back, &Constants::default(), 20),
        );
        assert_eq!(
            a.iter().map(|v| v.to_bits()).collect::<Vec<_>>(),
            b.iter().map(|v| v.to_bits()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn reads_an_airfoil_file_h5py_made_from_the_text_format() {
        let Some(py) = support::python_with("h5py", "python3-h5py") else {
            return;
        };
        let dir = tempfile::tempdir().unwrap();
        let (text, h5) = (dir.path().join("grid.dat"), dir.path().join("grid.h5"));
        let mesh = Mesh::generate(6, 8);
        mesh.write(&text).unwrap();
        // OP2's convert_mesh in Python: the text file's numbers into OP2's datasets, no constants.
        let script = r#"
import sys, h5py, numpy as np
lines = open(sys.argv[1]).read().split("\n")
nnode, ncell, nedge, nbedge = map(int, lines[0].split())
rows = lambda a, n: np.array([l.split() for l in lines[a:a + n]])
x = rows(1, nnode).astype(np.float64)
cell = rows(1 + nnode, ncell).astype(np.int32)
edge = rows(1 + nnode + ncell, nedge).astype(np.int32)
bedge = rows(1 + nnode + ncell + nedge, nbedge).astype(np.int32)
with h5py.File(sys.argv[2], "w") as f:
    for name, n in [("nodes", nnode), ("cells", ncell), ("edges", nedge), ("bedges", nbedge)]:
        f[name] = np.array([n], dtype=np.int32)
    f["p_x"] = x
    f["pcell"] = cell
    f["pedge"] = edge[:, :2]
    f["pecell"] = edge[:, 2:]
    f["pbedge"] = bedge[:, :2]
    f["pbecell"] = bedge[:, 2:3]
    f["p_bound"] = bedge[:, 3]
"#;
        support::run_python(&py, script, &[&text, &h5]);
        let read = Mesh::load(&h5).unwrap();
        assert!(
            read == Mesh::read(&text).unwrap(),
            "h5py's file holds another mesh"
        );
        assert_eq!(Constants::read_hdf5(&h5).unwrap(), None);
    }

    #[test]
    fn broken_airfoil_files_are_typed_errors_naming_the_dataset() {
        use op2::hdf5::H5File;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("broken.h5");
        let mesh = Mesh::generate(4, 5);
        mesh.save(&path, &Constants::default()).unwrap();
        // A cell pointing past the last node.
        let f = H5File::open_rw(&path).unwrap();
        let mut cell = mesh.cell.clone();
        cell[5] = mesh.nnode() as i32;
        f.write_map_values("pcell", 4, &cell).unwrap();
        drop(f);
        let e = Mesh::read_hdf5(&path).unwrap_err();
        assert!(
            matches!(&e, MeshError::Index { map, entry: 5, .. } if map == "pcell"),
            "{e}"
        );
        // A file without the boundary kinds.
        let partial = dir.path().join("partial.h5");
        let f = H5File::create(&partial).unwrap();
        for (name, n) in [("nodes", 1), ("cells", 0), ("edges", 0), ("bedges", 0)] {
            f.write_set(name, n).unwrap();
        }
        drop(f);
        let e = Mesh::read_hdf5(&partial).unwrap_err();
        assert!(
            e.to_string().contains("`p_x`") && e.to_string().contains("partial.h5"),
            "{e}"
        );
    }
}

/// Pressure computed here from the conserved state, independently of `airfoil::output`.
fn pressure(q: &[f64], gm1: f64) -> Vec<f64> {
    q.chunks(4)
        .map(|c| gm1 * (c[3] - 0.5 * (c[1] * c[1] + c[2] * c[2]) / c[0]))
        .collect()
}

#[test]
fn vtk_output_opens_in_meshio_with_the_flow() {
    let dir = tempfile::tempdir().unwrap();
    let mesh = Mesh::generate(6, 8);
    let c = Constants::default();
    let rt = seq();
    let a = Airfoil::new(&rt, &mesh, &c).unwrap();
    for _ in 0..5 {
        a.step().unwrap();
    }
    let file = airfoil::output::write_vtk(&a, &c, &dir.path().join("flow.vtu")).unwrap();
    assert_eq!(file, dir.path().join("flow.vtu"));
    let Some(py) = support::python_with("meshio", "python3-meshio") else {
        return;
    };
    let script = r#"
import sys, meshio
m = meshio.read(sys.argv[1])
print(len(m.points), [(c.type, len(c.data)) for c in m.cells])
print(" ".join(repr(v) for v in m.cell_data["pressure"][0].ravel()))
print(" ".join(repr(v) for v in m.cell_data["velocity"][0][7]))
print(repr(m.points[9][0]), repr(m.points[9][1]))
"#;
    let out = support::run_python(&py, script, &[&file]);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(
        lines[0],
        format!("{} [('quad', {})]", mesh.nnode(), mesh.ncell())
    );
    let q = a.q().unwrap();
    let got: Vec<f64> = lines[1].split(' ').map(|v| v.parse().unwrap()).collect();
    let expected = pressure(&q, c.gm1);
    assert_eq!(got.len(), expected.len());
    for (g, e) in got.iter().zip(&expected) {
        assert!((g - e).abs() <= 1e-14 * e.abs(), "{g} vs {e}");
    }
    let vel: Vec<f64> = lines[2].split(' ').map(|v| v.parse().unwrap()).collect();
    assert_eq!(vel, vec![q[29] / q[28], q[30] / q[28], 0.0]);
    assert_eq!(lines[3], format!("{:?} {:?}", mesh.x[18], mesh.x[19]));
}

#[cfg(feature = "png")]
#[test]
fn the_picture_is_a_png_of_the_size_asked_for() {
    let dir = tempfile::tempdir().unwrap();
    let mesh = Mesh::generate(10, 12);
    let c = Constants::default();
    let a = Airfoil::new(&seq(), &mesh, &c).unwrap();
    for _ in 0..3 {
        a.step().unwrap();
    }
    let path = dir.path().join("p.png");
    let q = a.q().unwrap();
    airfoil::picture::render_pressure(&mesh, &q, c.gm1, "test", &path, (640, 400)).unwrap();
    let png = std::fs::read(&path).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    // IHDR: width and height, big-endian, after the chunk's length and name.
    assert_eq!(&png[16..24], &[0, 0, 2, 128, 0, 0, 1, 144]);
    // Misuse: a flow of the wrong length, a file that cannot be written.
    use airfoil::picture::PictureError;
    let e = airfoil::picture::render_pressure(&mesh, &q[4..], c.gm1, "t", &path, (64, 64));
    assert!(matches!(e, Err(PictureError::Length { .. })), "{e:?}");
    let e = airfoil::picture::render_pressure(
        &mesh,
        &q,
        c.gm1,
        "t",
        &dir.path().join("missing/p.png"),
        (64, 64),
    );
    assert!(matches!(e, Err(PictureError::Draw { .. })), "{e:?}");
    // A diverged flow (not-a-number pressure) still draws, in grey.
    let mut nan = q.clone();
    nan[0] = f64::NAN;
    airfoil::picture::render_pressure(&mesh, &nan, c.gm1, "t", &path, (64, 64)).unwrap();
    // A mesh naming a node it does not have is an error, not a panic.
    let mut bad = mesh.clone();
    bad.cell[6] = -1;
    let e = airfoil::picture::render_pressure(&bad, &q, c.gm1, "t", &path, (64, 64));
    assert!(
        matches!(
            e,
            Err(PictureError::Index {
                row: 1,
                node: -1,
                ..
            })
        ),
        "{e:?}"
    );
}
