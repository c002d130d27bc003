//! Distributing meshes over simulated ranks (threads with op2-core's in-process communicator):
//! random meshes under every partitioner and input mode, checked by `verify` against the global
//! data; misuse gives the same typed error on every rank; loops on the distributed mesh compute
//! what one process computes.

use backend_seq as _;
use op2_core::{INC, Kernel, READ, Runtime};
use op2_mpi::{Input, MeshBuilder, MpiError, Options, Partitioner, block_range, verify};
use op2_test_support::on_ranks;
use proptest::prelude::*;
use std::time::Duration;

/// A mesh in global numbering, independent of any builder.
#[derive(Debug, Clone)]
struct Mesh {
    sets: Vec<usize>,
    /// (from, to, arity, values)
    maps: Vec<(usize, usize, usize, Vec<i32>)>,
    /// (set, dim, values): one f64 dat per set, the first also used as coordinates when dim <= 3.
    dats: Vec<(usize, usize, Vec<f64>)>,
    /// An integer dat on set 0.
    ints: Vec<i32>,
}

/// Handles of a declared mesh.
struct Declared {
    builder: MeshBuilder,
    sets: Vec<op2_mpi::GlobalSet>,
    maps: Vec<op2_mpi::GlobalMap>,
    dats: Vec<op2_mpi::GlobalDat<f64>>,
}

/// Declares `mesh` as rank `rank` of `ranks` hands it in under `input`.
fn declare(mesh: &Mesh, input: Input, ranks: usize, rank: usize) -> Declared {
    let rows = |set: usize| match input {
        Input::Everywhere => 0..mesh.sets[set],
        Input::Root if rank == 0 => 0..mesh.sets[set],
        Input::Root => 0..0,
        Input::Slices => block_range(mesh.sets[set], ranks, rank),
    };
    let mut b = MeshBuilder::new(input);
    let sets: Vec<_> = mesh
        .sets
        .iter()
        .enumerate()
        .map(|(i, &n)| b.decl_set(n, &format!("set{i}")).unwrap())
        .collect();
    let maps = mesh
        .maps
        .iter()
        .enumerate()
        .map(|(i, (from, to, arity, values))| {
            let r = rows(*from);
            b.decl_map(
                sets[*from],
                sets[*to],
                *arity,
                &values[r.start * arity..r.end * arity],
                &format!("map{i}"),
            )
            .unwrap()
        })
        .collect();
    let dats = mesh
        .dats
        .iter()
        .enumerate()
        .map(|(i, (set, dim, values))| {
            let r = rows(*set);
            b.decl_dat(
                sets[*set],
                *dim,
                &values[r.start * dim..r.end * dim],
                &format!("dat{i}"),
            )
            .unwrap()
        })
        .collect();
    let r = rows(0);
    b.decl_dat(sets[0], 1, &mesh.ints[r], "ints").unwrap();
    Declared {
        builder: b,
        sets,
        maps,
        dats,
    }
}

fn mesh_strategy() -> impl Strategy<Value = Mesh> {
    prop::collection::vec(1usize..40, 1..=3)
        .prop_flat_map(|sets| {
            let n = sets.len();
            let map = (0..n, 0..n, 1usize..=4);
            (Just(sets), prop::collection::vec(map, 0..=4))
        })
        .prop_flat_map(|(sets, shapes)| {
            let maps: Vec<_> = shapes
                .into_iter()
                .map(|(from, to, arity)| {
                    let values = prop::collection::vec(0..sets[to] as i32, sets[from] * arity);
                    (Just(from), Just(to), Just(arity), values)
                })
                .collect();
            let dats: Vec<_> = sets
                .iter()
                .enumerate()
                .map(|(s, &n)| {
                    (1usize..=3).prop_flat_map(move |dim| {
                        (
                            Just(s),
                            Just(dim),
                            prop::collection::vec(-1e3f64..1e3, n * dim),
                        )
                    })
                })
                .collect();
            let ints = prop::collection::vec(any::<i32>(), sets[0]);
            (Just(sets), maps, dats, ints)
        })
        .prop_map(|(sets, maps, dats, ints)| Mesh {
            sets,
            maps,
            dats,
            ints,
        })
}

fn options_for(d: &Declared, choice: usize, renumber: bool) -> Options {
    let p = match choice % 3 {
        1 if !d.maps.is_empty() => Partitioner::Metis {
            map: d.maps[choice / 3 % d.maps.len()],
        },
        2 => Partitioner::Geometric { coords: d.dats[0] },
        _ => Partitioner::Blocks,
    };
    Options::new(p).renumber(renumber)
}

/// The set a partitioner splits (none for blocks), for the expected too-many-parts error.
fn first_set(mesh: &Mesh, choice: usize) -> Option<usize> {
    match choice % 3 {
        1 if !mesh.maps.is_empty() => Some(mesh.maps[choice / 3 % mesh.maps.len()].1),
        2 => Some(0),
        _ => None,
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn every_distribution_keeps_the_invariants(
        mesh in mesh_strategy(),
        ranks in 1usize..=4,
        choice in 0usize..12,
        input in 0usize..3,
        renumber in any::<bool>(),
    ) {
        let input = [Input::Everywhere, Input::Root, Input::Slices][input];
        let too_many = first_set(&mesh, choice).is_some_and(|s| ranks > 1 && ranks > mesh.sets[s]);
        let results = on_ranks(ranks, Duration::from_secs(30), |rank, comm| {
            let here = declare(&mesh, input, ranks, rank);
            let whole = declare(&mesh, Input::Everywhere, ranks, rank);
            let options = options_for(&here, choice, renumber);
            let d = here.builder.distribute(&*comm, &options)?;
            verify(&whole.builder, &d, &*comm)?;
            // Timings differ between ranks; everything else must agree.
            Ok::<_, MpiError>(op2_mpi::PartitionReport { seconds: 0.0, ..d.report })
        });
        for r in &results {
            match r {
                Err(MpiError::TooManyParts { .. }) | Err(MpiError::OtherRank { .. }) if too_many => {}
                Ok(report) if !too_many => {
                    prop_assert_eq!(report, &results[0].as_ref().unwrap().clone());
                    let owned: usize = report.sets[0].1.iter().map(|s| s.core + s.owned).sum();
                    prop_assert_eq!(owned, mesh.sets[0]);
                }
                other => prop_assert!(false, "unexpected: {other:?} (too many parts: {too_many})"),
            }
        }
    }
}

/// A strip of `n` quads: nodes 2(n+1), cells n, edges between neighbouring cells n-1 with their
/// shared nodes; coordinates on the nodes.
fn strip(n: usize) -> Mesh {
    let nodes = 2 * (n + 1);
    let cells: Vec<i32> = (0..n as i32)
        .flat_map(|c| [2 * c, 2 * c + 1, 2 * c + 3, 2 * c + 2])
        .collect();
    let edge_cells: Vec<i32> = (0..n as i32 - 1).flat_map(|e| [e, e + 1]).collect();
    let edge_nodes: Vec<i32> = (0..n as i32 - 1)
        .flat_map(|e| [2 * e + 2, 2 * e + 3])
        .collect();
    let xy: Vec<f64> = (0..nodes)
        .flat_map(|i| [(i / 2) as f64, (i % 2) as f64])
        .collect();
    Mesh {
        sets: vec![nodes, n, n - 1],
        maps: vec![
            (1, 0, 4, cells),
            (2, 1, 2, edge_cells),
            (2, 0, 2, edge_nodes),
        ],
        dats: vec![
            (0, 2, xy),
            (1, 1, (0..n).map(|c| c as f64 * 0.5 + 1.0).collect()),
            (2, 1, vec![0.0; n - 1]),
        ],
        ints: (0..nodes as i32).collect(),
    }
}

fn errors(results: Vec<Result<op2_mpi::Distributed, MpiError>>) -> Vec<MpiError> {
    results
        .into_iter()
        .map(|r| r.expect_err("every rank must fail"))
        .collect()
}

#[test]
fn a_map_value_out_of_range_on_one_rank_fails_every_rank_alike() {
    let mut mesh = strip(12);
    // The last cell's last node: only rank 2's slice holds it.
    *mesh.maps[0].3.last_mut().unwrap() = 999;
    let errs = errors(on_ranks(3, Duration::from_secs(30), |rank, comm| {
        declare(&mesh, Input::Slices, 3, rank)
            .builder
            .distribute(&*comm, &Options::new(Partitioner::Blocks))
    }));
    for e in errs {
        match e {
            MpiError::MapValueOutOfRange {
                map, value, row, ..
            } => {
                assert_eq!((map.as_str(), value, row), ("map0", 999, 11));
            }
            other => panic!("{other}"),
        }
    }
}

#[test]
fn data_of_the_wrong_length_on_one_rank_fails_every_rank() {
    let mesh = strip(10);
    let errs = errors(on_ranks(2, Duration::from_secs(30), |rank, comm| {
        let mut d = declare(&mesh, Input::Slices, 2, rank);
        if rank == 1 {
            // One extra row of the cell values.
            d.builder = MeshBuilder::new(Input::Slices);
            let nodes = d.builder.decl_set(22, "set0").unwrap();
            let cells = d.builder.decl_set(10, "set1").unwrap();
            let edges = d.builder.decl_set(9, "set2").unwrap();
            let r = block_range(10, 2, 1);
            d.builder
                .decl_map(
                    cells,
                    nodes,
                    4,
                    &mesh.maps[0].3[r.start * 4..r.end * 4],
                    "map0",
                )
                .unwrap();
            let r = block_range(9, 2, 1);
            d.builder
                .decl_map(
                    edges,
                    cells,
                    2,
                    &mesh.maps[1].3[r.start * 2..r.end * 2],
                    "map1",
                )
                .unwrap();
            d.builder
                .decl_map(
                    edges,
                    nodes,
                    2,
                    &mesh.maps[2].3[r.start * 2..r.end * 2],
                    "map2",
                )
                .unwrap();
            let r = block_range(22, 2, 1);
            d.builder
                .decl_dat(nodes, 2, &mesh.dats[0].2[r.start * 2..r.end * 2], "dat0")
                .unwrap();
            d.builder.decl_dat(cells, 1, &[1.0f64; 6], "dat1").unwrap();
            d.builder
                .decl_dat(edges, 1, &vec![0.0f64; block_range(9, 2, 1).len()], "dat2")
                .unwrap();
            d.builder
                .decl_dat(nodes, 1, &mesh.ints[block_range(22, 2, 1)], "ints")
                .unwrap();
        }
        d.builder
            .distribute(&*comm, &Options::new(Partitioner::Blocks))
    }));
    assert!(
        matches!(&errs[1], MpiError::DataLength { what: "dat", name, rank: 1, expected: 5, actual: 6, .. } if name == "dat1"),
        "{}",
        errs[1]
    );
    assert!(
        matches!(&errs[0], MpiError::OtherRank { rank: 1, reason } if reason.contains("dat1")),
        "{}",
        errs[0]
    );
}

#[test]
fn ranks_that_declare_different_meshes_all_say_so() {
    let errs = errors(on_ranks(3, Duration::from_secs(30), |rank, comm| {
        let mut b = MeshBuilder::new(Input::Everywhere);
        b.decl_set(if rank == 2 { 5 } else { 4 }, "nodes").unwrap();
        b.distribute(&*comm, &Options::new(Partitioner::Blocks))
    }));
    for e in errs {
        assert!(
            matches!(&e, MpiError::MismatchedDeclarations { theirs, ours, .. } if theirs != ours),
            "{e}"
        );
    }
}

#[test]
fn more_parts_than_elements_is_refused_everywhere() {
    let mesh = strip(3);
    let errs = errors(on_ranks(4, Duration::from_secs(30), |rank, comm| {
        let d = declare(&mesh, Input::Everywhere, 4, rank);
        // Edge-to-cell: METIS splits the 3 cells.
        let map = d.maps[1];
        d.builder
            .distribute(&*comm, &Options::new(Partitioner::Metis { map }))
    }));
    for e in errs {
        assert!(
            matches!(
                &e,
                MpiError::TooManyParts {
                    parts: 4,
                    size: 3,
                    ..
                } | MpiError::OtherRank { .. }
            ),
            "{e}"
        );
        assert!(e.to_string().contains("4 parts asked for"), "{e}");
    }
}

#[test]
fn a_partition_step_some_ranks_skip_times_out_with_an_error() {
    let mesh = strip(8);
    let results = on_ranks(2, Duration::from_millis(300), |rank, comm| {
        if rank == 1 {
            return None;
        }
        let d = declare(&mesh, Input::Everywhere, 2, rank);
        Some(
            d.builder
                .distribute(&*comm, &Options::new(Partitioner::Blocks)),
        )
    });
    let err = results[0].as_ref().unwrap().as_ref().unwrap_err();
    assert!(
        matches!(err, MpiError::Op2(op2_core::Op2Error::Communication { .. })),
        "{err}"
    );
}

#[test]
fn misuse_of_the_builder_is_refused() {
    let mut b = MeshBuilder::new(Input::Everywhere);
    let s = b.decl_set(3, "s").unwrap();
    assert!(matches!(
        b.decl_set(3, "s"),
        Err(MpiError::BadDeclaration(_))
    ));
    assert!(matches!(
        b.decl_map(s, s, 0, vec![], "m"),
        Err(MpiError::BadDeclaration(_))
    ));
    assert!(matches!(
        b.decl_dat::<f64>(s, 0, &[], "d"),
        Err(MpiError::BadDeclaration(_))
    ));
    let mut other = MeshBuilder::new(Input::Everywhere);
    other.decl_set(1, "a").unwrap();
    let foreign = other.decl_set(1, "b").unwrap();
    assert!(matches!(
        b.decl_map(s, foreign, 1, vec![0, 0, 0], "m"),
        Err(MpiError::BadDeclaration(_))
    ));
    let coords = b.decl_dat(s, 4, &[0.0f64; 12], "xyzw").unwrap();
    let e = b
        .plan(2, &Options::new(Partitioner::Geometric { coords }))
        .unwrap_err();
    assert!(e.to_string().contains("dim 4"), "{e}");
    // Planning in one process numbers elements in 32 bits: a set past 2^31 is refused by name
    // (distributing it across ranks takes 64-bit global numbers).
    let mut huge = MeshBuilder::new(Input::Everywhere);
    huge.decl_set(3_000_000_000, "huge").unwrap();
    let e = huge
        .plan(4, &Options::new(Partitioner::Blocks))
        .unwrap_err();
    assert!(
        matches!(&e, MpiError::BadDeclaration(m) if m.contains("`huge`") && m.contains("2^31")),
        "{e}"
    );
}

/// One process over the whole strip against 1..=4 ranks, each partitioner: cell values summed
/// into nodes through the cell map, then the nodes' sum read back by the edges.
#[test]
fn loops_over_a_distributed_mesh_compute_what_one_process_computes() {
    let mesh = strip(30);
    let gather_kernel = Kernel::new(
        "to_nodes",
        "void to_nodes(const double *c, double *a, double *b, double *d, double *e) { *a += *c; *b += *c; *d += *c; *e += 2.0 * *c; }",
    )
    .unwrap();
    let read_kernel = Kernel::new(
        "edge_value",
        "void edge_value(const double *a, const double *b, const double *c, double *y) { *y = *a * *b + *c; }",
    )
    .unwrap();
    let run = |rt: &Runtime, ranks: usize, choice: usize| -> (Vec<f64>, Vec<f64>) {
        let rank = rt.communicator().rank();
        let d = declare(&mesh, Input::Everywhere, ranks, rank);
        let options = options_for(&d, choice, choice % 2 == 1);
        let (pcell, ecell, enode) = (d.maps[0], d.maps[1], d.maps[2]);
        let (dc, dy) = (d.dats[1], d.dats[2]);
        let mut builder = d.builder;
        let acc_handle = builder
            .decl_dat(d.sets[0], 1, &vec![0.0f64; mesh.sets[0]], "acc")
            .unwrap();
        let local = builder.partition(rt, &options).unwrap();
        let (pcell, ecell, enode) = (local.map(pcell), local.map(ecell), local.map(enode));
        let (c, y, acc) = (local.dat(dc), local.dat(dy), local.dat(acc_handle));
        rt.par_loop(
            &gather_kernel,
            pcell.from(),
            [
                c.arg(READ),
                acc.arg_via(&pcell, 0, INC),
                acc.arg_via(&pcell, 1, INC),
                acc.arg_via(&pcell, 2, INC),
                acc.arg_via(&pcell, 3, INC),
            ],
        )
        .unwrap();
        rt.par_loop(
            &read_kernel,
            enode.from(),
            [
                acc.arg_via(&enode, 0, READ),
                acc.arg_via(&enode, 1, READ),
                c.arg_via(&ecell, 0, READ),
                y.arg(op2_core::WRITE),
            ],
        )
        .unwrap();
        let acc = local.gather(&acc).unwrap();
        let y = local.gather(&y).unwrap();
        (acc.unwrap_or_default(), y.unwrap_or_default())
    };
    let one = {
        let rt = Runtime::builder().backend("seq").build().unwrap();
        run(&rt, 1, 0)
    };
    // Independently: node sums of the cells around them.
    let mut expected = vec![0.0; mesh.sets[0]];
    for (cell, nodes) in mesh.maps[0].3.chunks(4).enumerate() {
        let v = mesh.dats[1].2[cell];
        for (k, &n) in nodes.iter().enumerate() {
            expected[n as usize] += if k == 3 { 2.0 * v } else { v };
        }
    }
    assert_eq!(one.0, expected);
    for ranks in 2..=4 {
        for choice in [0, 1, 2, 5] {
            let got = on_ranks(ranks, Duration::from_secs(30), |_, comm| {
                let rt = Runtime::builder()
                    .backend("seq")
                    .communicator(comm)
                    .build()
                    .unwrap();
                run(&rt, ranks, choice)
            });
            assert_eq!(got[0], one, "{ranks} ranks, partitioner choice {choice}");
        }
    }
}

/// `verify` is what the property test trusts, so it must catch each kind of damage.
#[test]
fn verify_finds_each_broken_invariant() {
    let mesh = strip(16);
    type Damage = fn(&mut op2_mpi::Distributed);
    let damages: [(&str, Damage); 5] = [
        ("wrong global target", |d| {
            let v = &mut d.maps[0].values;
            v.swap(0, 1);
        }),
        ("reaches halo element", |d| {
            let s = &mut d.sets[1].sizes;
            s.core += s.owned;
            s.owned = 0;
        }),
        ("holds other values", |d| d.dats[1].bytes[0] ^= 1),
        // Halo elements claimed as owned: caught by the halo lists before the ownership count.
        ("received wrongly", |d| {
            let s = &mut d.sets[0].sizes;
            s.owned += s.exec_halo + s.nonexec_halo;
            s.exec_halo = 0;
            s.nonexec_halo = 0;
        }),
        ("sends", |d| {
            for n in &mut d.sets[0].halo.neighbours {
                n.send.reverse();
            }
        }),
    ];
    for (what, damage) in damages {
        let results = on_ranks(2, Duration::from_secs(30), |rank, comm| {
            let d = declare(&mesh, Input::Everywhere, 2, rank);
            let whole = declare(&mesh, Input::Everywhere, 2, rank);
            let mut dist = d
                .builder
                .distribute(&*comm, &Options::new(Partitioner::Blocks))
                .unwrap();
            verify(&whole.builder, &dist, &*comm).unwrap();
            if rank == 0 {
                damage(&mut dist);
            }
            verify(&whole.builder, &dist, &*comm)
        });
        for r in results {
            let e = r.expect_err(what).to_string();
            assert!(
                e.contains(what) || e.contains("rank 0 failed"),
                "{what}: {e}"
            );
        }
    }
}

#[test]
fn empty_meshes_and_empty_sets_distribute_to_nothing() {
    let results = on_ranks(3, Duration::from_secs(30), |_, comm| {
        let empty = MeshBuilder::new(Input::Everywhere)
            .distribute(&*comm, &Options::new(Partitioner::Blocks).renumber(true))
            .unwrap();
        assert!(empty.sets.is_empty() && empty.maps.is_empty());
        // A set of 0 elements beside a real one: blocks give every rank nothing of it.
        let mut b = MeshBuilder::new(Input::Everywhere);
        let none = b.decl_set(0, "none").unwrap();
        let some = b.decl_set(6, "some").unwrap();
        b.decl_map(none, some, 2, vec![], "m").unwrap();
        b.decl_dat::<f64>(none, 3, &[], "d").unwrap();
        let whole = b.clone();
        let d = b
            .distribute(&*comm, &Options::new(Partitioner::Blocks).renumber(true))
            .unwrap();
        verify(&whole, &d, &*comm).unwrap();
        (d.sets[0].global.len(), d.sets[1].sizes.core)
    });
    assert_eq!(results, vec![(0, 2); 3]);
}

#[test]
fn maps_with_64_bit_numbers_distribute_as_32_bit_ones_do() {
    let mesh = strip(40);
    for choice in [0, 2] {
        let results = on_ranks(3, Duration::from_secs(30), |rank, comm| {
            let narrow = declare(&mesh, Input::Slices, 3, rank);
            let options = options_for(&narrow, choice, choice == 2);
            let want = narrow.builder.distribute(&*comm, &options)?;
            // The same mesh with every map handed in as i64.
            let mut wide = MeshBuilder::new(Input::Slices);
            let sets: Vec<_> = mesh
                .sets
                .iter()
                .enumerate()
                .map(|(i, &n)| wide.decl_set(n, &format!("set{i}")).unwrap())
                .collect();
            for (i, (from, to, arity, values)) in mesh.maps.iter().enumerate() {
                let r = block_range(mesh.sets[*from], 3, rank);
                let v: Vec<i64> = values[r.start * arity..r.end * arity]
                    .iter()
                    .map(|&x| x as i64)
                    .collect();
                wide.decl_map_i64(sets[*from], sets[*to], *arity, v, &format!("map{i}"))
                    .unwrap();
            }
            let mut coords = None;
            for (i, (set, dim, values)) in mesh.dats.iter().enumerate() {
                let r = block_range(mesh.sets[*set], 3, rank);
                let d = wide
                    .decl_dat(
                        sets[*set],
                        *dim,
                        &values[r.start * dim..r.end * dim],
                        &format!("dat{i}"),
                    )
                    .unwrap();
                coords.get_or_insert(d);
            }
            let r = block_range(mesh.sets[0], 3, rank);
            wide.decl_dat(sets[0], 1, &mesh.ints[r], "ints").unwrap();
            let options = if choice == 2 {
                Options::new(Partitioner::Geometric {
                    coords: coords.unwrap(),
                })
                .renumber(true)
            } else {
                Options::new(Partitioner::Blocks)
            };
            let got = wide.distribute(&*comm, &options)?;
            Ok::<_, MpiError>((want, got))
        });
        for r in results {
            let (want, got) = r.unwrap();
            for (w, g) in want.sets.iter().zip(&got.sets) {
                assert_eq!(w, g);
            }
            for (w, g) in want.maps.iter().zip(&got.maps) {
                assert_eq!(w, g);
            }
            for (w, g) in want.dats.iter().zip(&got.dats) {
                assert_eq!(w.bytes, g.bytes);
            }
        }
    }
}

/// Three ranks where only some have neighbours on a set: `one` has a single element, owned by
/// rank 2 and in rank 1's exec halo, so rank 0 has none. Every combination of the two exchange
/// skips (successive, early) gives the values one process computes, and no rank waits for
/// another: every rank records the same exchanges (`op2-fuzz`'s
/// `three_thread_ranks_once_waited_for_each_other` keeps the program that once hung).
#[test]
fn ranks_without_neighbours_on_a_set_record_the_same_exchanges() {
    use op2_core::{LazyOptions, RW};
    let spread = Kernel::new(
        "spread",
        "void spread(double *n[3], double *a) { n[0][0] += *a; n[1][0] += 2.0 * *a; n[2][0] += 3.0; *a = *a + 1.0; }",
    )
    .unwrap();
    let smooth = Kernel::new(
        "smooth",
        "void smooth(double *n[2]) { n[0][0] = n[0][0] + 1.0; n[1][0] = n[1][0] + 0.5; }",
    )
    .unwrap();
    let look = Kernel::new(
        "look",
        "void look(const double *n0, const double *n2, const double *a, double *s) { *s += *n0 + *n2 + *a; }",
    )
    .unwrap();
    let one_nodes: Vec<i32> = vec![4, 3, 3];
    let pairs: Vec<i32> = vec![4, 1, 5, 1, 3, 5, 5, 2, 2, 0, 0, 5, 2, 4, 1, 5];
    let run = |early: bool, successive: bool, ranks: usize| {
        on_ranks(ranks, Duration::from_secs(20), |_, comm| {
            let rt = Runtime::builder()
                .backend("seq")
                .lazy(true)
                .lazy_optimisations(LazyOptions {
                    early_halo: early,
                    successive_halo: successive,
                    ..LazyOptions::ALL
                })
                .communicator(comm)
                .build()
                .unwrap();
            let mut b = MeshBuilder::new(Input::Everywhere);
            let one = b.decl_set(1, "one").unwrap();
            let nodes = b.decl_set(8, "nodes").unwrap();
            let to_nodes = b
                .decl_map(one, nodes, 3, &one_nodes[..], "to_nodes")
                .unwrap();
            let pair = b.decl_map(nodes, nodes, 2, &pairs[..], "pair").unwrap();
            let a = b.decl_dat(one, 1, &[5.0f64][..], "a").unwrap();
            let n = b.decl_dat(nodes, 1, &[1.0f64; 8][..], "n").unwrap();
            let m = b
                .partition(&rt, &Options::new(Partitioner::Blocks))
                .unwrap();
            let (tn, pm) = (m.map(to_nodes), m.map(pair));
            let (ad, nd) = (m.dat(a), m.dat(n));
            let sum = rt.decl_global(1, &[0.0f64], "sum").unwrap();
            rt.par_loop(&spread, &m.set(one), [nd.arg_row(&tn, INC), ad.arg(RW)])
                .unwrap();
            rt.par_loop(&smooth, &m.set(nodes), [nd.arg_row(&pm, RW)])
                .unwrap();
            // A host write of the nodes' Dat on every rank (the owner of node 3 changes it).
            {
                let local = m.global_ids(nodes).iter().position(|&g| g == 3);
                let owned = m.set(nodes).size();
                let mut data = nd.data().unwrap();
                if let Some(e) = local.filter(|&e| e < owned) {
                    data[e] = 16.0;
                }
            }
            rt.par_loop(
                &look,
                &m.set(one),
                [
                    nd.arg_via(&tn, 0, READ),
                    nd.arg_via(&tn, 2, READ),
                    ad.arg(READ),
                    sum.arg(INC),
                ],
            )
            .unwrap();
            (
                m.gather(&nd).unwrap(),
                m.gather(&ad).unwrap(),
                sum.value().unwrap(),
            )
        })
        .into_iter()
        .next()
        .unwrap()
    };
    let (want_n, want_a, want_sum) = run(true, true, 1);
    for (early, successive) in [(true, false), (false, true), (true, true), (false, false)] {
        let (n, a, sum) = run(early, successive, 3);
        let label = format!("early {early}, successive {successive}");
        assert_eq!(n, want_n, "{label}");
        assert_eq!(a, want_a, "{label}");
        assert_eq!(sum, want_sum, "{label}");
    }
}
