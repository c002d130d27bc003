//! Airfoil: the standard mesh's sizes, the mesh file round trip and its errors, and the solver on
//! every backend against the hand-written baseline on a small mesh.

use airfoil::{Airfoil, Baseline, Constants, Mesh, MeshError};

#[test]
fn standard_mesh_has_op2s_sizes() {
    let m = Mesh::generate(400, 600);
    assert_eq!(
        (m.nnode(), m.ncell(), m.nedge(), m.nbedge()),
        (721_801, 720_000, 1_438_600, 2_800)
    );
    // Nodes are rounded to 6 decimals, like the reference file.
    assert!(
        m.x.iter()
            .all(|v| (v * 1e6 - (v * 1e6).round()).abs() < 1e-6)
    );
    // The airfoil wall (bound 1) is the unit chord around the origin after the transform.
    let wall: Vec<usize> = (0..m.nbedge()).filter(|&b| m.bound[b] == 1).collect();
    assert_eq!(wall.len(), 400);
    for b in wall {
        let n = m.bedge[2 * b] as usize;
        let (x, y) = (m.x[2 * n], m.x[2 * n + 1]);
        assert!((-0.01..=1.0).contains(&x) && y.abs() < 0.07, "({x}, {y})");
    }
}

#[test]
fn mesh_file_round_trips() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("new_grid.dat");
    let m = Mesh::generate(6, 7);
    m.write(&path).unwrap();
    assert_eq!(Mesh::read(&path).unwrap(), m);
}

#[test]
fn malformed_mesh_files_name_the_line() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("bad.dat");
    let cases: [(&str, usize, &str); 4] = [
        ("2 1 0 0\n0 0\n1 x\n0 1 1 0\n", 3, "not a number"),
        ("2 1 0 0\n0 0\n1 1\n0 1 5 0\n", 4, "index 5 outside 0..2"),
        ("2 1 0 0\n0 0\n1 1 1\n", 3, "expected 2 fields"),
        ("2 1 0 0\n0 0\n", 0, "file ends before"),
    ];
    for (text, line, reason) in cases {
        std::fs::write(&path, text).unwrap();
        match Mesh::read(&path) {
            Err(MeshError::Malformed {
                line: l, reason: r, ..
            }) => {
                assert_eq!(l, line, "{text:?}: {r}");
                assert!(r.contains(reason), "{r}");
            }
            other => panic!("expected a malformed-file error, got {other:?}"),
        }
    }
    assert!(matches!(
        Mesh::read(&dir.path().join("missing.dat")),
        Err(MeshError::Io { .. })
    ));
}

/// Residuals and final state of `iters` iterations on `backend`.
/// `None` when the backend cannot run here (a device backend on a machine without the device;
/// `cargo xtask test` requires the device backends it installs drivers for, in conformance).
fn solve(backend: &str, mesh: &Mesh, iters: usize) -> Option<(Vec<f64>, Vec<f64>)> {
    let rt = match op2::builder().backend(backend).build() {
        Err(op2::Op2Error::BackendUnavailable { reason, .. }) if backend != "seq" => {
            eprintln!("{backend}: unavailable here, not checked: {reason}");
            return None;
        }
        other => other.unwrap(),
    };
    let a = Airfoil::new(&rt, mesh, &Constants::default()).unwrap();
    let r = (0..iters).map(|_| a.step().unwrap()).collect();
    Some((r, a.q().unwrap()))
}

#[test]
fn every_backend_matches_the_hand_written_solver() {
    let mesh = Mesh::generate(20, 30);
    let mut base = Baseline::new(&mesh, Constants::default());
    let expected: Vec<f64> = (0..30).map(|_| base.step()).collect();
    let backends: Vec<&str> = op2::backends().iter().map(|b| b.name).collect();
    assert!(backends.contains(&"seq"));
    for backend in backends {
        let Some((res, q)) = solve(backend, &mesh, 30) else {
            continue;
        };
        for (i, (a, b)) in res.iter().zip(&expected).enumerate() {
            assert!(
                (a - b).abs() <= 1e-10 * b.abs(),
                "{backend} iteration {i}: {a} vs {b}"
            );
        }
        for (i, (a, b)) in q.iter().zip(base.q()).enumerate() {
            assert!(
                (a - b).abs() <= 1e-10 * b.abs().max(1.0),
                "{backend} q[{i}]: {a} vs {b}"
            );
        }
    }
}

#[test]
fn renumbering_a_shuffled_mesh_restores_locality_and_keeps_the_flow() {
    use airfoil::mesh::shuffled;
    let mesh = Mesh::generate(20, 30);
    let scrambled = shuffled(&mesh, 11);
    let renumbered = scrambled.renumbered().unwrap();
    // Locality: the mean distance in numbering between an edge's two cells.
    let spread = |m: &Mesh| {
        m.ecell
            .chunks(2)
            .map(|c| f64::from((c[0] - c[1]).unsigned_abs()))
            .sum::<f64>()
            / m.nedge() as f64
    };
    assert!(
        spread(&renumbered) * 10.0 < spread(&scrambled),
        "{} vs {}",
        spread(&renumbered),
        spread(&scrambled)
    );
    assert!(
        spread(&renumbered) <= 2.0 * spread(&mesh),
        "{}",
        spread(&renumbered)
    );
    // The same mesh: counts, and the coordinates and boundary kinds as multisets.
    assert_eq!(
        [
            renumbered.nnode(),
            renumbered.ncell(),
            renumbered.nedge(),
            renumbered.nbedge()
        ],
        [mesh.nnode(), mesh.ncell(), mesh.nedge(), mesh.nbedge()]
    );
    let sorted = |v: &[f64]| {
        let mut p: Vec<(u64, u64)> = v
            .chunks(2)
            .map(|p| (p[0].to_bits(), p[1].to_bits()))
            .collect();
        p.sort_unstable();
        p
    };
    assert_eq!(sorted(&renumbered.x), sorted(&mesh.x));
    // The same flow: residuals agree with the original numbering's to rounding.
    let c = Constants::default();
    let steps = |m: &Mesh| {
        let rt = op2::builder().backend("seq").build().unwrap();
        let a = Airfoil::new(&rt, m, &c).unwrap();
        (0..10).map(|_| a.step().unwrap()).collect::<Vec<f64>>()
    };
    for (a, b) in steps(&mesh).iter().zip(steps(&renumbered)) {
        assert!((a - b).abs() <= 1e-12 * a.abs(), "{a} vs {b}");
    }
    // A mesh whose maps do not fit its sets is an error, not a panic.
    let mut broken = mesh.clone();
    broken.ecell[3] = mesh.ncell() as i32;
    assert!(matches!(broken.renumbered(), Err(MeshError::Renumber(_))));
}
