//! What op2-vtk writes opens in a VTK reader: Python's meshio (Debian's `python3-meshio`) reads
//! the `.vtu` files and the pieces a `.pvtu` index names, and the values come back. Where meshio
//! is missing the reader tests say so and pass, unless `OP2_REQUIRE_FILE_TOOLS` is set (CI sets
//! it through `cargo xtask test`). The typed errors need no reader.

use op2_core::comm::thread_communicators;
use op2_vtk::{UnstructuredGrid, VtkError};
use std::path::Path;
use std::time::Duration;

use op2_test_support::on_ranks;
use op2_test_support::tools as support;

fn python_with_meshio() -> Option<String> {
    support::python_with("meshio", "python3-meshio")
}

fn python(py: &str, script: &str, file: &Path) -> String {
    support::run_python(py, script, &[file])
}

/// Three quads and two triangles on a 4 x 2 lattice of points.
fn mixed_grid() -> UnstructuredGrid {
    let coords: Vec<f64> = (0..8)
        .flat_map(|i| [f64::from(i % 4), f64::from(i / 4) * 0.5])
        .collect();
    UnstructuredGrid::new(&coords, 2)
        .unwrap()
        .with_cells(&[0, 1, 5, 4, 1, 2, 6, 5], 4)
        .unwrap()
        .with_cells(&[2, 3, 7, 2, 7, 6], 3)
        .unwrap()
        .with_cell_data("pressure", &[1.0, 2.5, -3.0, 4.0], 1)
        .unwrap()
        .with_cell_data("velocity", &[1., 0., 0., 1., -1., 0., 0.5, 0.5], 2)
        .unwrap()
        .with_cell_ints("rank <&\"odd\">", &[0, 1, 2, 3], 1)
        .unwrap()
        .with_point_data("height", &[0., 1., 2., 3., 4., 5., 6., 7.], 1)
        .unwrap()
}

#[test]
fn meshio_reads_the_vtu_and_its_values() {
    let Some(py) = python_with_meshio() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("mixed.vtu");
    mixed_grid().write_vtu(&file).unwrap();
    let script = r#"
import sys, meshio
m = meshio.read(sys.argv[1])
print(m.points.shape, [(c.type, len(c.data)) for c in m.cells])
print(m.points[5].tolist(), m.cells[0].data[1].tolist(), m.cells[1].data[1].tolist())
cd = m.cell_data
print([x.ravel().tolist() for x in cd["pressure"]])
print([x.tolist() for x in cd["velocity"]][1])
print([x.ravel().tolist() for x in cd['rank <&"odd">']])
print(m.point_data["height"].ravel().tolist())
"#;
    let out = python(&py, script, &file);
    let lines: Vec<&str> = out.lines().collect();
    assert_eq!(lines[0], "(8, 3) [('quad', 2), ('triangle', 2)]", "{out}");
    assert_eq!(lines[1], "[1.0, 0.5, 0.0] [1, 2, 6, 5] [2, 7, 6]", "{out}");
    assert_eq!(lines[2], "[[1.0, 2.5], [-3.0, 4.0]]", "{out}");
    assert_eq!(lines[3], "[[-1.0, 0.0], [0.5, 0.5]]", "{out}");
    assert_eq!(lines[4], "[[0, 1], [2, 3]]", "{out}");
    assert_eq!(
        lines[5], "[0.0, 1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0]",
        "{out}"
    );
}

#[test]
fn every_rank_writes_a_piece_and_the_index_names_them_all() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("flow.pvtu");
    let written = on_ranks(3, Duration::from_secs(20), |r, comm| {
        // Rank r holds r + 1 cells along a strip.
        let n = r + 1;
        let coords: Vec<f64> = (0..=n)
            .flat_map(|i| [(10 * r + i) as f64, 0.0, (10 * r + i) as f64, 1.0])
            .collect();
        let quads: Vec<i32> = (0..n as i32)
            .flat_map(|c| [2 * c, 2 * c + 2, 2 * c + 3, 2 * c + 1])
            .collect();
        let rank = vec![r as f64; n];
        UnstructuredGrid::new(&coords, 2)
            .unwrap()
            .with_cells(&quads, 4)
            .unwrap()
            .with_cell_data("rank", &rank, 1)
            .unwrap()
            .write_parallel(&path, &*comm)
    });
    for w in &written {
        assert_eq!(w.as_ref().unwrap(), &path);
    }
    for r in 0..3 {
        assert!(dir.path().join(format!("flow_{r}.vtu")).exists());
    }
    let Some(py) = python_with_meshio() else {
        return;
    };
    let script = r#"
import sys, os, meshio, xml.etree.ElementTree as ET
index = ET.parse(sys.argv[1]).getroot()
assert index.get("type") == "PUnstructuredGrid"
grid = index.find("PUnstructuredGrid")
names = [a.get("Name") for a in grid.find("PCellData")]
cells, ranks = 0, []
for piece in grid.findall("Piece"):
    m = meshio.read(os.path.join(os.path.dirname(sys.argv[1]), piece.get("Source")))
    cells += sum(len(c.data) for c in m.cells)
    ranks += [int(v) for v in m.cell_data["rank"][0].ravel()]
print(names, cells, ranks)
"#;
    assert_eq!(python(&py, script, &path), "['rank'] 6 [0, 1, 1, 2, 2, 2]");
}

#[test]
fn bad_grids_are_typed_errors() {
    assert!(matches!(
        UnstructuredGrid::new(&[0.0; 6], 4),
        Err(VtkError::Unsupported(_))
    ));
    assert!(matches!(
        UnstructuredGrid::new(&[0.0; 5], 2),
        Err(VtkError::Length { .. })
    ));
    let g = UnstructuredGrid::new(&[0.0; 8], 2).unwrap();
    let e = g.clone().with_cells(&[0, 1, 4], 3).unwrap_err();
    assert!(matches!(e, VtkError::PointIndex { value: 4, .. }), "{e}");
    assert!(matches!(
        g.clone().with_cells(&[0, 1, -1], 3),
        Err(VtkError::PointIndex { .. })
    ));
    assert!(matches!(
        g.clone().with_cells(&[0, 1, 2], 0),
        Err(VtkError::Length { .. })
    ));
    let g = g.with_cells(&[0, 1, 2, 3], 4).unwrap();
    assert!(matches!(
        g.clone().with_cell_data("p", &[1.0, 2.0], 1),
        Err(VtkError::Length { .. })
    ));
    assert!(matches!(
        g.clone().with_point_data("p", &[1.0; 4], 0),
        Err(VtkError::Length { .. })
    ));
    let twice = g.clone().with_cell_data("p", &[1.0], 1).unwrap();
    assert!(matches!(
        twice.with_cell_data("p", &[2.0], 1),
        Err(VtkError::Duplicate { .. })
    ));
    // 3-D cells of four or more points need their type named.
    let cube = UnstructuredGrid::new(&[0.0; 24], 3).unwrap();
    assert!(matches!(
        cube.clone().with_cells(&[0, 1, 2, 3], 4),
        Err(VtkError::Unsupported(_))
    ));
    let tet = cube
        .clone()
        .with_cells_of(&[0, 1, 2, 3], 4, op2_vtk::CellType::Tetra)
        .unwrap();
    assert_eq!(tet.num_cells(), 1);
    assert!(matches!(
        cube.with_cells_of(&[0, 1, 2], 3, op2_vtk::CellType::Hexahedron),
        Err(VtkError::Unsupported(_))
    ));
    let dir = tempfile::tempdir().unwrap();
    assert!(matches!(g.write_vtu(dir.path()), Err(VtkError::Io { .. })));
    let e = g
        .write_vtu(Path::new("/nonexistent-dir/x.vtu"))
        .unwrap_err();
    assert!(matches!(e, VtkError::Io { .. }) && e.to_string().contains("nonexistent-dir"));
}

#[test]
fn one_rank_writes_a_vtu_named_as_asked() {
    let dir = tempfile::tempdir().unwrap();
    let comm = &thread_communicators(1, Duration::from_secs(5))[0];
    let g = UnstructuredGrid::new(&[0.0, 0.0], 2).unwrap();
    for (asked, written) in [
        ("a.vtu", "a.vtu"),
        ("b.pvtu", "b.vtu"),
        ("run.v2", "run.v2.vtu"),
        ("plain", "plain.vtu"),
    ] {
        let got = g.write_parallel(&dir.path().join(asked), comm).unwrap();
        assert_eq!(got, dir.path().join(written));
        assert!(got.exists());
    }
}

#[test]
fn a_rank_that_cannot_write_fails_every_rank() {
    let dir = tempfile::tempdir().unwrap();
    let results = on_ranks(2, Duration::from_secs(20), |r, comm| {
        // Rank 1 is pointed at a directory that does not exist.
        let path = if r == 1 {
            dir.path().join("missing/flow.pvtu")
        } else {
            dir.path().join("flow.pvtu")
        };
        UnstructuredGrid::new(&[0.0, 0.0], 2)
            .unwrap()
            .write_parallel(&path, &*comm)
    });
    assert!(
        matches!(results[0], Err(VtkError::OtherRank(1))),
        "{results:?}"
    );
    assert!(
        matches!(results[1], Err(VtkError::Io { .. })),
        "{results:?}"
    );
}
