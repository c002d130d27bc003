//! Real ranks: `mpirun -np N` (N = 1..=4, oversubscribed on small machines) runs this same test
//! binary's `program_of_each_rank`, which distributes a grid mesh with every partitioner and
//! input mode over MPI, verifies the invariants, exercises the communicator's primitives and
//! runs loops whose gathered results must equal values computed here independently.

use backend_seq as _;
use op2_core::comm::{Communicator, ReduceOp};
use op2_core::{DType, INC, Kernel, READ, Runtime};
use op2_mpi::{
    GlobalDat, GlobalMap, Input, MeshBuilder, Mpi, MpiError, Options, Partitioner, block_range,
    verify,
};
use std::process::Command;

/// Set in the environment of the ranks `mpirun` starts.
const CHILD: &str = "OP2_MPI_TEST_CHILD";

#[test]
fn distributed_meshes_under_mpirun_at_one_to_four_ranks() {
    let exe = std::env::current_exe().unwrap();
    // 1 to 4 ranks, then 3 ranks with all-to-all messages split into rounds of at most 512
    // (then 64) bytes per rank and halo messages into pieces of at most that many bytes (MPI's
    // 32-bit count limit, made small; at 64 the loops' halo exchanges go in pieces too): every
    // check of the program holds either way.
    for (ranks, limit) in [(1, ""), (2, ""), (3, ""), (4, ""), (3, "512"), (3, "64")] {
        let out = Command::new("mpirun")
            .args([
                "-np",
                &ranks.to_string(),
                "--oversubscribe",
                "--timeout",
                "300",
            ])
            .arg(&exe)
            .args([
                "--exact",
                "program_of_each_rank",
                "--ignored",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD, "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT", "1")
            .env("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")
            .env("OP2_MPI_TIMEOUT", "120")
            .env("OP2_MPI_MAX_MESSAGE", limit)
            .output()
            .unwrap_or_else(|e| panic!("mpirun could not start ({e}); install openmpi-bin"));
        let stdout = String::from_utf8_lossy(&out.stdout);
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            out.status.success(),
            "mpirun -np {ranks} (message limit `{limit}`) failed ({}):\n{stdout}\n{stderr}",
            out.status
        );
        for r in 0..ranks {
            assert!(
                stdout.contains(&format!("rank {r} of {ranks}: all checks passed")),
                "rank {r} of {ranks} did not finish:\n{stdout}\n{stderr}"
            );
        }
    }
}

/// A grid of `nx` x `ny` quads: nodes, cells, interior edges between neighbouring cells.
struct Grid {
    nodes: usize,
    cells: usize,
    edges: usize,
    cell_nodes: Vec<i32>,
    edge_cells: Vec<i32>,
    edge_nodes: Vec<i32>,
    xy: Vec<f64>,
    value: Vec<f64>,
}

fn grid(nx: usize, ny: usize) -> Grid {
    let node = |i: usize, j: usize| (j * (nx + 1) + i) as i32;
    let cell = |i: usize, j: usize| (j * nx + i) as i32;
    let mut cell_nodes = Vec::new();
    for j in 0..ny {
        for i in 0..nx {
            cell_nodes.extend([
                node(i, j),
                node(i + 1, j),
                node(i + 1, j + 1),
                node(i, j + 1),
            ]);
        }
    }
    let (mut edge_cells, mut edge_nodes) = (Vec::new(), Vec::new());
    for j in 0..ny {
        for i in 0..nx {
            if i + 1 < nx {
                edge_cells.extend([cell(i, j), cell(i + 1, j)]);
                edge_nodes.extend([node(i + 1, j), node(i + 1, j + 1)]);
            }
            if j + 1 < ny {
                edge_cells.extend([cell(i, j), cell(i, j + 1)]);
                edge_nodes.extend([node(i, j + 1), node(i + 1, j + 1)]);
            }
        }
    }
    let nodes = (nx + 1) * (ny + 1);
    Grid {
        nodes,
        cells: nx * ny,
        edges: edge_cells.len() / 2,
        xy: (0..nodes)
            .flat_map(|n| [(n % (nx + 1)) as f64, (n / (nx + 1)) as f64 * 0.7])
            .collect(),
        value: (0..nx * ny).map(|c| ((c * 37) % 11) as f64 - 4.0).collect(),
        cell_nodes,
        edge_cells,
        edge_nodes,
    }
}

struct Declared {
    builder: MeshBuilder,
    pcell: GlobalMap,
    pecell: GlobalMap,
    xy: GlobalDat<f64>,
    value: GlobalDat<f64>,
    acc: GlobalDat<f64>,
}

fn declare(g: &Grid, input: Input, ranks: usize, rank: usize) -> Declared {
    let rows = |n: usize| match input {
        Input::Everywhere => 0..n,
        Input::Root if rank == 0 => 0..n,
        Input::Root => 0..0,
        Input::Slices => block_range(n, ranks, rank),
    };
    let mut b = MeshBuilder::new(input);
    let nodes = b.decl_set(g.nodes, "nodes").unwrap();
    let cells = b.decl_set(g.cells, "cells").unwrap();
    let edges = b.decl_set(g.edges, "edges").unwrap();
    let (rc, re, rn) = (rows(g.cells), rows(g.edges), rows(g.nodes));
    let pcell = b
        .decl_map(
            cells,
            nodes,
            4,
            &g.cell_nodes[rc.start * 4..rc.end * 4],
            "pcell",
        )
        .unwrap();
    let pecell = b
        .decl_map(
            edges,
            cells,
            2,
            &g.edge_cells[re.start * 2..re.end * 2],
            "pecell",
        )
        .unwrap();
    b.decl_map(
        edges,
        nodes,
        2,
        &g.edge_nodes[re.start * 2..re.end * 2],
        "penode",
    )
    .unwrap();
    let xy = b
        .decl_dat(nodes, 2, &g.xy[rn.start * 2..rn.end * 2], "xy")
        .unwrap();
    let value = b.decl_dat(cells, 1, &g.value[rc.clone()], "value").unwrap();
    let acc = b
        .decl_dat(nodes, 1, &vec![0.0f64; rn.len()], "acc")
        .unwrap();
    Declared {
        builder: b,
        pcell,
        pecell,
        xy,
        value,
        acc,
    }
}

/// Every partitioner (PT-Scotch where op2-mpi was built with it).
fn partitioners(d: &Declared) -> Vec<Partitioner> {
    let mut all = vec![
        Partitioner::Blocks,
        Partitioner::Metis { map: d.pecell },
        Partitioner::Metis { map: d.pcell },
        Partitioner::Geometric { coords: d.xy },
    ];
    if cfg!(feature = "ptscotch") {
        all.push(Partitioner::PtScotch { map: d.pecell });
        all.push(Partitioner::PtScotch { map: d.pcell });
    }
    all
}

/// The communicator's own operations, checked against values each rank can compute.
fn check_primitives(comm: &dyn Communicator) {
    let (rank, size) = (comm.rank(), comm.size());
    // All-reduce: sums in rank order, minimum, maximum, integers.
    let mine: Vec<f64> = vec![rank as f64 + 0.5, -(rank as f64)];
    let mut bytes = bytemuck::cast_slice(&mine).to_vec();
    comm.all_reduce(&mut bytes, DType::F64, ReduceOp::Sum)
        .unwrap();
    let sum: Vec<f64> = bytemuck::pod_collect_to_vec(&bytes);
    let n = size as f64;
    assert_eq!(
        sum,
        vec![n * (n - 1.0) / 2.0 + 0.5 * n, -(n * (n - 1.0) / 2.0)]
    );
    let mut bytes = bytemuck::cast_slice(&[rank as i64 * 3 - 1]).to_vec();
    comm.all_reduce(&mut bytes, DType::I64, ReduceOp::Max)
        .unwrap();
    assert_eq!(
        bytemuck::pod_read_unaligned::<i64>(&bytes),
        size as i64 * 3 - 4
    );
    // All-to-all with a different length to every rank (some empty).
    let sends = (0..size)
        .map(|p| vec![rank as u8; (rank + p) % 3])
        .collect();
    let got = comm.all_to_all_v(sends).unwrap();
    for (p, g) in got.iter().enumerate() {
        assert_eq!(g, &vec![p as u8; (p + rank) % 3]);
    }
    // A ring of point-to-point messages, twice in flight at once.
    let (next, prev) = ((rank + 1) % size, (rank + size - 1) % size);
    let a = comm
        .begin_exchange(vec![(next, vec![rank as u8; 5])], vec![(prev, 5)])
        .unwrap();
    let b = comm
        .begin_exchange(vec![(next, vec![7; 2])], vec![(prev, 2)])
        .unwrap();
    assert_eq!(a.wait().unwrap(), vec![vec![prev as u8; 5]]);
    assert_eq!(b.wait().unwrap(), vec![vec![7u8; 2]]);
    // Long messages, two to the same rank and an empty one in one exchange: under the 512- and
    // 64-byte limits of the last two runs they go in pieces (10 and 79 of 5,000 bytes), which
    // must arrive as the whole message does in one.
    let long = |from: usize, salt: usize| -> Vec<u8> {
        (0..5000)
            .map(|i| ((i * 31 + from * 7 + salt) % 251) as u8)
            .collect()
    };
    let got = comm
        .begin_exchange(
            vec![(next, long(rank, 1)), (next, vec![]), (next, long(rank, 2))],
            vec![(prev, 5000), (prev, 0), (prev, 5000)],
        )
        .unwrap()
        .wait()
        .unwrap();
    assert_eq!(got, vec![long(prev, 1), vec![], long(prev, 2)]);
    // An all-gather (how a loop's reductions travel), with an exchange in flight beside it.
    let x = comm
        .begin_exchange(vec![(next, vec![9; 1])], vec![(prev, 1)])
        .unwrap();
    let g = comm
        .begin_all_gather(vec![rank as u8, 2 * rank as u8])
        .unwrap();
    let expected: Vec<Vec<u8>> = (0..size).map(|r| vec![r as u8, 2 * r as u8]).collect();
    assert_eq!(g.wait().unwrap(), expected);
    assert_eq!(x.wait().unwrap(), vec![vec![9u8]]);
    // A message shorter than its receive expects is an error, not silently short data.
    if size > 1 {
        let short = comm
            .begin_exchange(vec![(next, vec![1; 2])], vec![(prev, 3)])
            .unwrap()
            .wait();
        assert!(
            matches!(short, Err(op2_core::Op2Error::Communication { .. })),
            "{short:?}"
        );
    }
    comm.barrier().unwrap();
}

/// Node sums of the cells around them (the last corner counted twice), computed here.
fn expected_acc(g: &Grid) -> Vec<f64> {
    let mut acc = vec![0.0; g.nodes];
    for (c, nodes) in g.cell_nodes.chunks(4).enumerate() {
        for (k, &n) in nodes.iter().enumerate() {
            acc[n as usize] += if k == 3 { 2.0 * g.value[c] } else { g.value[c] };
        }
    }
    acc
}

#[test]
#[ignore = "each rank's program: `distributed_meshes_under_mpirun_at_one_to_four_ranks` runs it under mpirun"]
fn program_of_each_rank() {
    let mpi = Mpi::init().unwrap();
    let comm = mpi.world();
    let (rank, ranks) = (comm.rank(), comm.size());
    check_primitives(&*comm);

    let g = grid(24, 16);
    let spread = Kernel::new(
        "spread",
        "void spread(const double *v, double *a, double *b, double *c, double *d) { *a += *v; *b += *v; *c += *v; *d += 2.0 * *v; }",
    )
    .unwrap();
    let expected = expected_acc(&g);
    let rt = Runtime::builder()
        .backend("seq")
        .communicator(comm.clone())
        .build()
        .unwrap();
    for input in [Input::Everywhere, Input::Root, Input::Slices] {
        for choice in 0..partitioners(&declare(&g, input, ranks, rank)).len() {
            for renumber in [false, true] {
                let whole = declare(&g, Input::Everywhere, ranks, rank);
                let here = declare(&g, input, ranks, rank);
                let p = partitioners(&here)[choice];
                let options = Options::new(p).renumber(renumber);
                let what = format!("{input:?}, {}, renumber {renumber}", p.name());
                let d = here.builder.distribute(&*comm, &options).unwrap();
                verify(&whole.builder, &d, &*comm).unwrap_or_else(|e| panic!("{what}: {e}"));

                // Loops on the local mesh; results gathered to rank 0.
                let here = declare(&g, input, ranks, rank);
                let (pcell, value, acc, xy) = (here.pcell, here.value, here.acc, here.xy);
                let local = here.builder.partition(&rt, &options).unwrap();
                let pcell = local.map(pcell);
                let (v, a) = (local.dat(value), local.dat(acc));
                rt.par_loop(
                    &spread,
                    pcell.from(),
                    [
                        v.arg(READ),
                        a.arg_via(&pcell, 0, INC),
                        a.arg_via(&pcell, 1, INC),
                        a.arg_via(&pcell, 2, INC),
                        a.arg_via(&pcell, 3, INC),
                    ],
                )
                .unwrap();
                let got = local.gather(&a).unwrap();
                let coords = local.gather(&local.dat(xy)).unwrap();
                if rank == 0 {
                    assert_eq!(got.unwrap(), expected, "{what}");
                    assert_eq!(coords.unwrap(), g.xy, "{what}");
                } else {
                    assert!(got.is_none() && coords.is_none());
                }
            }
        }
    }

    // A bad map value in one rank's slice: every rank gets the same typed error.
    let mut bad = grid(6, 4);
    *bad.cell_nodes.last_mut().unwrap() = -3;
    let here = declare(&bad, Input::Slices, ranks, rank);
    match here
        .builder
        .distribute(&*comm, &Options::new(Partitioner::Blocks))
    {
        Err(MpiError::MapValueOutOfRange {
            map,
            value: -3,
            row: 23,
            ..
        }) => assert_eq!(map, "pcell"),
        other => panic!("rank {rank}: {other:?}"),
    }
    // More parts than cells: one cell, split by METIS on the edge-to-cell graph.
    if ranks > 1 {
        let tiny = grid(1, 1);
        let here = declare(&tiny, Input::Everywhere, ranks, rank);
        let p = Partitioner::Metis { map: here.pecell };
        match here.builder.distribute(&*comm, &Options::new(p)) {
            Err(MpiError::TooManyParts { parts, size: 1, .. }) => assert_eq!(parts, ranks),
            other => panic!("rank {rank}: {other:?}"),
        }
    }
    comm.barrier().unwrap();
    println!("rank {rank} of {ranks}: all checks passed");
    drop(mpi);
}
