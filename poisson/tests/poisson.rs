//! The Poisson problem on every backend built in: the order of convergence and the reference's
//! iterations, the reference's matrix bit for bit on host backends, and across thread ranks (feature
//! `mpi`) the one-process errors, products and a failure on one rank stopping every rank.

#[cfg(feature = "mpi")]
use op2_test_support::on_rank_runtimes;
use op2_test_support::runtimes;
use poisson as problem;

#[cfg(feature = "mpi")]
use op2::la::LaError;
use op2::la::{self, Mat, Method, Preconditioner, SolverOptions, Sparsity};
use op2::{INC, READ, Runtime};

#[test]
fn every_backend_converges_at_order_two_with_the_references_iterations() {
    let options = SolverOptions::new(Method::Cg, Preconditioner::Jacobi).rtol(1e-10);
    let mut reference: Option<Vec<f64>> = None;
    for rt in runtimes() {
        let b = rt.backend_name().to_string();
        let outcomes: Vec<problem::Outcome> = [8, 16, 32]
            .into_iter()
            .map(|n| problem::solve(&rt, n, &options).unwrap())
            .collect();
        let orders = problem::orders(&outcomes);
        assert!(
            orders.iter().all(|o| (1.9..=2.1).contains(o)),
            "{b}: orders {orders:?}"
        );
        // The same iterations as the reference (the matrices agree).
        let its: Vec<f64> = outcomes
            .iter()
            .map(|o| o.report.iterations as f64)
            .chain(outcomes.iter().map(|o| o.l2_error))
            .collect();
        match &reference {
            None => reference = Some(its),
            Some(r) => {
                for (x, y) in r.iter().zip(&its) {
                    assert!((x - y).abs() <= 1e-9 * x.abs(), "{b}: {its:?} vs seq {r:?}");
                }
            }
        }
    }
}

/// Across 2 and 3 thread ranks, on every host backend, the Poisson problem assembles (exec halo
/// computed redundantly), solves (halo exchanges in products, reductions in inner products) and
/// measures the same error as one process; CG with global Jacobi takes the same iterations, the
/// block preconditioners still converge at order 2.
#[cfg(feature = "mpi")]
#[test]
fn poisson_across_thread_ranks_matches_one_process() {
    let options = SolverOptions::new(Method::Cg, Preconditioner::Jacobi).rtol(1e-10);
    let serial: Vec<problem::Outcome> = [8, 16, 32]
        .into_iter()
        .map(|n| problem::solve(&runtimes()[0], n, &options).unwrap())
        .collect();
    let backends: Vec<String> = runtimes()
        .iter()
        .map(|r| r.backend_name().to_string())
        .filter(|b| b != "cuda")
        .collect();
    for backend in &backends {
        for ranks in [2, 3] {
            let got = on_rank_runtimes(
                ranks,
                || op2::builder().backend(backend),
                |_, rt| {
                    [8, 16, 32]
                        .into_iter()
                        .map(|n| {
                            let o = problem::solve(&rt, n, &options).unwrap();
                            (o.l2_error, o.report.iterations, o.rows, o.nnz)
                        })
                        .collect::<Vec<_>>()
                },
            );
            eprintln!("{backend}, {ranks} ranks: {:?}", got[0]);
            for rank in &got {
                for ((err, its, rows, nnz), s) in rank.iter().zip(&serial) {
                    let what = format!("{backend}, {ranks} ranks, n {}", s.n);
                    assert!(
                        (err - s.l2_error).abs() <= 1e-9 * s.l2_error,
                        "{what}: {err} vs {}",
                        s.l2_error
                    );
                    assert!(
                        its.abs_diff(s.report.iterations) <= 1,
                        "{what}: {its} vs {}",
                        s.report.iterations
                    );
                    assert_eq!((*rows, *nnz), (s.rows, s.nnz), "{what}");
                }
            }
        }
    }
    // Block preconditioners across ranks: still order 2.
    for pc in [Preconditioner::Sor { omega: 1.0 }, Preconditioner::Ilu0] {
        let o = SolverOptions::new(Method::Gmres { restart: 30 }, pc).rtol(1e-10);
        let got = on_rank_runtimes(
            2,
            || op2::builder().backend("seq"),
            |_, rt| {
                let outs: Vec<problem::Outcome> = [8, 16, 32]
                    .into_iter()
                    .map(|n| problem::solve(&rt, n, &o).unwrap())
                    .collect();
                problem::orders(&outs)
            },
        );
        for orders in got {
            assert!(
                orders.iter().all(|o| (1.9..=2.1).contains(o)),
                "{pc:?}: {orders:?}"
            );
        }
    }
}

/// A product across ranks: each rank's owned rows of `A x` equal the serial product's rows for
/// the same global nodes (compared after gathering to rank 0).
#[cfg(feature = "mpi")]
#[test]
fn products_across_thread_ranks_match_the_serial_product() {
    use op2::mpi::{Input, MeshBuilder, Options, Partitioner};
    let n = 6;
    let serial = {
        let rt = runtimes().remove(0);
        let m = problem::unit_square(&rt, n).unwrap();
        let a = problem::stiffness(&rt, &m.cells, &m.c2n, &m.coords).unwrap();
        let xs: Vec<f64> = (0..m.nodes.size())
            .map(|i| (i as f64 * 0.37).sin())
            .collect();
        let x = rt.decl_dat(&m.nodes, 1, &xs, "x").unwrap();
        let y = rt.decl_dat_zeros::<f64>(&m.nodes, 1, "y").unwrap();
        a.mult(&x, &y).unwrap();
        (xs, y.to_vec().unwrap())
    };
    let gathered = on_rank_runtimes(
        3,
        || op2::builder().backend("seq"),
        |_, rt| {
            // The same mesh, partitioned, with x declared in global order.
            let whole =
                problem::unit_square(&op2::builder().backend("seq").build().unwrap(), n).unwrap();
            let c2n_global = whole.c2n.values().to_vec();
            let xy = whole.coords.to_vec().unwrap();
            let mut mesh = MeshBuilder::new(Input::Everywhere);
            let nodes = mesh.decl_set(whole.nodes.size(), "nodes").unwrap();
            let cells = mesh.decl_set(whole.cells.size(), "cells").unwrap();
            let map = mesh.decl_map(cells, nodes, 3, c2n_global, "c2n").unwrap();
            let coords = mesh.decl_dat(nodes, 2, &xy, "coords").unwrap();
            let xd = mesh.decl_dat(nodes, 1, &serial.0, "x").unwrap();
            // Pairs of neighbouring cells: a map into the cells gives them a non-exec halo, which
            // the staging of element blocks has rows for and assembly must skip.
            let ncells = whole.cells.size();
            let pairs = mesh.decl_set(ncells - 1, "pairs").unwrap();
            let p2c: Vec<i32> = (0..ncells as i32 - 1).flat_map(|c| [c, c + 1]).collect();
            mesh.decl_map(pairs, cells, 2, p2c, "p2c").unwrap();
            let local = mesh
                .partition(&rt, &Options::new(Partitioner::Metis { map }))
                .unwrap();
            let (c2n, cells, coords, x) = (
                local.map(map),
                local.set(cells),
                local.dat(coords),
                local.dat(xd),
            );
            let a = problem::stiffness(&rt, &cells, &c2n, &coords).unwrap();
            let y = rt.decl_dat_zeros::<f64>(&local.set(nodes), 1, "y").unwrap();
            a.mult(&x, &y).unwrap();
            (local.gather(&y).unwrap(), cells.sizes().nonexec_halo)
        },
    );
    assert!(
        gathered.iter().any(|(_, nonexec)| *nonexec > 0),
        "some rank's cells have a non-exec halo"
    );
    let gathered: Vec<Option<Vec<f64>>> = gathered.into_iter().map(|(y, _)| y).collect();
    let y = gathered[0].as_ref().expect("rank 0 gathers");
    for (i, (g, s)) in y.iter().zip(&serial.1).enumerate() {
        assert!((g - s).abs() <= 1e-12, "node {i}: {g} vs {s}");
    }
}

/// The owner-computes pass adds each entry's contributions in element order on every backend and
/// thread count, so host backends build the reference's matrix bit for bit (devices compute the
/// element blocks with their own compilers; theirs must agree to rounding).
#[test]
fn host_backends_assemble_the_references_matrix_bit_for_bit() {
    let mut reference: Option<Vec<f64>> = None;
    let mut configs: Vec<Runtime> = runtimes();
    if op2::backends().iter().any(|b| b.name == "openmp") {
        for t in [1, 3] {
            configs.push(
                op2::builder()
                    .backend("openmp")
                    .num_threads(t)
                    .build()
                    .unwrap(),
            );
        }
    }
    for rt in configs {
        let b = format!(
            "{} ({:?} threads)",
            rt.backend_name(),
            rt.config().num_threads
        );
        let m = problem::unit_square(&rt, 24).unwrap();
        let sp = Sparsity::new(&[(&m.c2n, &m.c2n)], (1, 1), "bits").unwrap();
        let a = Mat::new(&sp, "A");
        // Twice: the second loop reuses the staging the first left zeroed.
        for _ in 0..2 {
            la::par_loop!(
                rt,
                problem::kernels().unwrap().stiffness,
                m.cells,
                a.arg(INC, &m.c2n, &m.c2n),
                m.coords.arg_row(&m.c2n, READ)
            )
            .unwrap();
        }
        a.assemble();
        let v = a.values();
        match &reference {
            None => reference = Some(v),
            Some(r) => {
                let host = rt.device_stats().is_none();
                for (i, (x, y)) in v.iter().zip(r).enumerate() {
                    if host {
                        assert_eq!(x.to_bits(), y.to_bits(), "{b}: entry {i}: {x} vs {y}");
                    } else {
                        assert!((x - y).abs() <= 1e-13 * y.abs().max(1.0), "{b}: entry {i}");
                    }
                }
            }
        }
    }
}

/// A preconditioner that one rank cannot build (a zero pivot in its block) stops every rank with
/// a typed error, at once, instead of leaving the others waiting in the solve's first reduction.
#[cfg(feature = "mpi")]
#[test]
fn a_failure_on_one_rank_stops_every_rank() {
    let started = std::time::Instant::now();
    let got = on_rank_runtimes(
        2,
        || op2::builder().backend("seq"),
        |_, rt| {
            let m = problem::unit_square(&rt, 8).unwrap();
            let a = problem::stiffness(&rt, &m.cells, &m.c2n, &m.coords).unwrap();
            if rt.communicator().rank() == 0 {
                a.zero_rows(&[0], 0.0).unwrap();
            }
            let b = rt
                .decl_dat(&m.nodes, 1, vec![1.0; m.nodes.total_size()], "b")
                .unwrap();
            let x = rt.decl_dat_zeros::<f64>(&m.nodes, 1, "x").unwrap();
            la::solve(
                &a,
                &b,
                &x,
                &SolverOptions::new(Method::Gmres { restart: 30 }, Preconditioner::Ilu0),
            )
        },
    );
    assert!(
        matches!(got[0], Err(LaError::ZeroPivot { row: 0, .. })),
        "{:?}",
        got[0]
    );
    assert!(
        matches!(got[1], Err(LaError::OtherRank { rank: 0, .. })),
        "{:?}",
        got[1]
    );
    assert!(started.elapsed() < std::time::Duration::from_secs(60));
}
