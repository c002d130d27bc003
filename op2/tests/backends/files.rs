//! OP2's HDF5 files and VTK output through the facade, on every backend built in: a mesh declared
//! from a file, loops run on it, results written back with `write_dat` and as VTK, each backend's
//! file compared with values computed here independently.

use op2::hdf5::H5File;
use op2::vtk::UnstructuredGrid;
use op2::{INC, Kernel, READ, RW};

/// A fan of `n` triangles' edges around node 0 of a ring: nodes on a circle, edges from the centre
/// to each ring node and between neighbours on the ring.
fn write_mesh(path: &std::path::Path, n: usize) -> (Vec<f64>, Vec<i32>) {
    let mut x = vec![0.0, 0.0];
    for i in 0..n {
        let t = i as f64 / n as f64 * std::f64::consts::TAU;
        x.extend([t.cos(), t.sin()]);
    }
    let mut edge = Vec::new();
    for i in 0..n as i32 {
        edge.extend([0, 1 + i, 1 + i, 1 + (i + 1) % n as i32]);
    }
    let f = H5File::create(path).unwrap();
    f.write_set("nodes", n + 1).unwrap();
    f.write_set("edges", 2 * n).unwrap();
    f.write_map_values("pedge", 2, &edge).unwrap();
    f.write_dat_values("p_x", 2, &x).unwrap();
    f.write_const("scale", &[0.5f64]).unwrap();
    (x, edge)
}

#[test]
fn a_mesh_from_hdf5_runs_and_writes_back_on_every_backend() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("fan.h5");
    let n = 37;
    let (x, edge) = write_mesh(&path, n);
    // Expected: each node gets scale * (length of each edge it touches), then doubled.
    let mut expected = vec![0.0f64; n + 1];
    for e in edge.chunks(2) {
        let (a, b) = (e[0] as usize, e[1] as usize);
        let len = ((x[2 * a] - x[2 * b]).powi(2) + (x[2 * a + 1] - x[2 * b + 1]).powi(2)).sqrt();
        expected[a] += 0.5 * len;
        expected[b] += 0.5 * len;
    }
    expected.iter_mut().for_each(|v| *v *= 2.0);

    let mut ran = Vec::new();
    for rt in op2_test_support::runtimes() {
        let backend = rt.backend_name().to_string();
        let f = H5File::open_rw(&path).unwrap();
        let nodes = f.decl_set(&rt, "nodes").unwrap();
        let edges = f.decl_set(&rt, "edges").unwrap();
        let pedge = f.decl_map(&rt, &edges, &nodes, 2, "pedge").unwrap();
        let p_x = f.decl_dat::<f64>(&rt, &nodes, 2, "p_x").unwrap();
        f.decl_const::<f64>(&rt, 1, "scale").unwrap();
        let w = rt.decl_dat_zeros::<f64>(&nodes, 1, "weight").unwrap();
        let spread = Kernel::new(
            "spread",
            "void spread(const double *a, const double *b, double *wa, double *wb) { \
             double dx = a[0] - b[0], dy = a[1] - b[1], l = scale * sqrt(dx * dx + dy * dy); \
             *wa += l; *wb += l; }",
        )
        .unwrap();
        let double = Kernel::new("twice", "void twice(double *w) { *w *= 2.0; }").unwrap();
        rt.par_loop(
            &spread,
            &edges,
            [
                p_x.arg_via(&pedge, 0, READ),
                p_x.arg_via(&pedge, 1, READ),
                w.arg_via(&pedge, 0, INC),
                w.arg_via(&pedge, 1, INC),
            ],
        )
        .unwrap();
        rt.par_loop(&double, &nodes, [w.arg(RW)]).unwrap();
        // Written under a name per backend, read back from the file.
        let name = format!("results/{backend}");
        f.write_dat_as(&rt, &w, &name).unwrap();
        let got = f.values::<f64>(&name, n + 1, 1).unwrap();
        for (i, (g, e)) in got.iter().zip(&expected).enumerate() {
            assert!(
                (g - e).abs() <= 1e-13 * e.abs(),
                "{backend}, node {i}: {g} vs {e}"
            );
        }
        // And as VTK: the edges as lines with the weight per node.
        let vtu = dir.path().join(format!("{backend}.vtu"));
        UnstructuredGrid::from_dats(&p_x, &pedge)
            .unwrap()
            .with_point_data("weight", &w.to_vec().unwrap(), 1)
            .unwrap()
            .write_vtu(&vtu)
            .unwrap();
        let text = std::fs::read_to_string(&vtu).unwrap();
        assert!(text.contains(&format!(
            "NumberOfPoints=\"{}\" NumberOfCells=\"{}\"",
            n + 1,
            2 * n
        )));
        ran.push(backend);
    }
    assert!(ran.iter().any(|b| b == "seq"), "{ran:?}");
}
