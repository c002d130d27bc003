//! The staged executor: loops run by section (core, owned, exec halo), halo exchanges and
//! cross-rank reductions as steps of the lazy trace. Two ranks simulated as threads
//! (`thread_communicators`) share a chain mesh partitioned by hand, and must compute on their
//! owned elements exactly what one process computes on the whole mesh. `cargo xtask test` runs
//! this file on every backend.

use op2::{
    ExchangeLists, HaloNeighbour, INC, Kernel, Op2Error, READ, RW, Runtime, SetHalo, SetSizes,
    WRITE,
};
use op2_test_support::{builder, kernel, on_rank_runtimes};

/// The loops every run does: scale the node values (so their halo goes out of date), an edge
/// value from its two nodes (read through the map: exchange), then increments from edges into
/// nodes (through the map, so the exec halo runs redundantly, reading edge values there:
/// exchange) with a sum and a maximum over the edges.
struct Loops {
    scale: Kernel,
    edge: Kernel,
    spread: Kernel,
}

fn loops() -> Loops {
    Loops {
        scale: kernel("scale", "void scale(double *x) { *x = 3.0 * *x + 1.0; }"),
        edge: kernel(
            "edge",
            "void edge(const double *a, const double *b, double *y) { *y = *a + 2.0 * *b; }",
        ),
        spread: kernel(
            "spread",
            "void spread(const double *y, double *a, double *b, double *s, double *m) {
               *a += *y; *b += 0.5 * *y; *s += *y; if (*y > *m) *m = *y; }",
        ),
    }
}

/// What a run computes: node values, edge values, node accumulators, the sum and the maximum.
struct Results {
    x: Vec<f64>,
    y: Vec<f64>,
    acc: Vec<f64>,
    sum: f64,
    max: f64,
    /// Halo exchanges the runtime made.
    exchanges: u64,
    /// Cross-rank reductions the spread loop started.
    reductions: u64,
}

/// Runs the loops on a mesh of `nodes` nodes (x values `x0`) and edges `e2n` (local numbers),
/// with the given set shapes; returns everything (halo rows included).
#[allow(clippy::too_many_arguments)]
fn run(
    rt: &Runtime,
    node_sizes: SetSizes,
    node_halo: SetHalo,
    edge_sizes: SetSizes,
    edge_halo: SetHalo,
    e2n: Vec<i32>,
    x0: &[f64],
) -> Results {
    // Each rank's memory report lists its halo lists, four bytes per element sent or received.
    let list_bytes = |h: &SetHalo| -> u64 {
        h.neighbours
            .iter()
            .map(|n| 4 * (n.send.len() + n.receive.len()) as u64)
            .sum()
    };
    let halo_bytes = [list_bytes(&node_halo), list_bytes(&edge_halo)];
    let nodes = rt
        .decl_set_with_halo(node_sizes, node_halo, "nodes")
        .unwrap();
    let edges = rt
        .decl_set_with_halo(edge_sizes, edge_halo, "edges")
        .unwrap();
    let report = rt.memory_report();
    for (set, bytes) in ["nodes", "edges"].into_iter().zip(halo_bytes) {
        let held = report
            .find(op2::MemoryKind::Halo, set)
            .map(|u| u.host_bytes);
        assert!(held.unwrap_or(0) >= bytes, "{set}: {report}");
    }
    run_on(rt, &nodes, &edges, e2n, x0)
}

/// [`run`]'s loops on sets already declared.
fn run_on(rt: &Runtime, nodes: &op2::Set, edges: &op2::Set, e2n: Vec<i32>, x0: &[f64]) -> Results {
    let l = loops();
    let (nodes, edges) = (nodes.clone(), edges.clone());
    let m = rt.decl_map(&edges, &nodes, 2, e2n, "e2n").unwrap();
    let x = rt.decl_dat(&nodes, 1, x0, "x").unwrap();
    let y = rt.decl_dat_zeros::<f64>(&edges, 1, "y").unwrap();
    let acc = rt.decl_dat_zeros::<f64>(&nodes, 1, "acc").unwrap();
    let sum = rt.decl_global(1, &[0.25f64], "sum").unwrap();
    let max = rt.decl_global(1, &[-1.0f64], "max").unwrap();
    rt.par_loop(&l.scale, &nodes, [x.arg(RW)]).unwrap();
    rt.par_loop(
        &l.edge,
        &edges,
        [x.arg_via(&m, 0, READ), x.arg_via(&m, 1, READ), y.arg(WRITE)],
    )
    .unwrap();
    rt.par_loop(
        &l.spread,
        &edges,
        [
            y.arg(READ),
            acc.arg_via(&m, 0, INC),
            acc.arg_via(&m, 1, INC),
            sum.arg(INC),
            max.arg(op2::MAX),
        ],
    )
    .unwrap();
    Results {
        sum: sum.value().unwrap()[0],
        max: max.value().unwrap()[0],
        x: x.to_vec().unwrap(),
        y: y.to_vec().unwrap(),
        acc: acc.to_vec().unwrap(),
        exchanges: rt.halo_exchanges(),
        reductions: rt
            .timings()
            .iter()
            .find(|t| t.kernel == "spread")
            .map_or(0, |t| t.reductions),
    }
}

/// One rank's part of a chain of `n` edges and `n + 1` nodes: rank 0 owns edges and nodes
/// `0..m`, rank 1 the rest. (node sections, node halo, edge sections, edge halo, edge-to-node
/// map, node values).
pub(super) type ChainPart = (SetSizes, SetHalo, SetSizes, SetHalo, Vec<i32>, Vec<f64>);

pub(super) fn chain_part(rank: usize, n: usize, m: usize) -> ChainPart {
    // Rank 0. Edges: 0..m-1 core, m-1 owned (it reaches node m, rank 1's), no exec halo.
    // Nodes: 0..m owned, node m (local m) a non-exec halo element read by edge m-1.
    // Rank 1. Edges: m..n core (local 0..n-m), edge m-1 exec halo (local n-m: it increments
    // node m). Nodes: m..=n owned (local 0..=n-m), node m-1 non-exec halo (local n-m+1).
    if rank == 0 {
        let nodes = SetSizes {
            core: m,
            nonexec_halo: 1,
            ..SetSizes::default()
        };
        let node_halo = SetHalo {
            neighbours: vec![HaloNeighbour {
                rank: 1,
                send: vec![(m - 1) as u32],
                send_to_exec: 0,
                receive: vec![m as u32],
            }],
        };
        let edges = SetSizes {
            core: m - 1,
            owned: 1,
            ..SetSizes::default()
        };
        let edge_halo = SetHalo {
            neighbours: vec![HaloNeighbour {
                rank: 1,
                send: vec![(m - 1) as u32],
                send_to_exec: 1,
                receive: vec![],
            }],
        };
        let e2n: Vec<i32> = (0..m as i32).flat_map(|e| [e, e + 1]).collect();
        (
            nodes,
            node_halo,
            edges,
            edge_halo,
            e2n,
            initial(n + 1)[..=m].to_vec(),
        )
    } else {
        let owned = n - m + 1;
        let nodes = SetSizes {
            core: owned,
            nonexec_halo: 1,
            ..SetSizes::default()
        };
        let node_halo = SetHalo {
            neighbours: vec![HaloNeighbour {
                rank: 0,
                send: vec![0],
                send_to_exec: 0,
                receive: vec![owned as u32],
            }],
        };
        let edges = SetSizes {
            core: n - m,
            exec_halo: 1,
            ..SetSizes::default()
        };
        let edge_halo = SetHalo {
            neighbours: vec![HaloNeighbour {
                rank: 0,
                send: vec![],
                send_to_exec: 0,
                receive: vec![(n - m) as u32],
            }],
        };
        let mut e2n: Vec<i32> = (0..(n - m) as i32).flat_map(|e| [e, e + 1]).collect();
        e2n.extend([owned as i32, 0]);
        let mut x0: Vec<f64> = initial(n + 1)[m..].to_vec();
        x0.push(initial(n + 1)[m - 1]);
        (nodes, node_halo, edges, edge_halo, e2n, x0)
    }
}

/// Runs `work` on two thread ranks, each with a runtime on the suite's backend; both results.
fn two_ranks<R: Send>(work: impl Fn(Runtime, usize) -> R + Sync) -> (R, R) {
    let mut both = on_rank_runtimes(2, builder, |rank, rt| work(rt, rank)).into_iter();
    (both.next().unwrap(), both.next().unwrap())
}

pub(super) fn core(n: usize) -> SetSizes {
    SetSizes {
        core: n,
        ..SetSizes::default()
    }
}

/// Node values of the whole chain.
pub(super) fn initial(n: usize) -> Vec<f64> {
    (0..n).map(|i| ((i * 7) % 11) as f64 - 3.5).collect()
}

/// PyOP2's hand-built halos: per neighbour the elements sent and received in matching order,
/// exec and non-exec halo mixed. The ranks agree on exec-first lists (the receiver's order goes
/// to the sender) and the chain computes as with lists written exec-first by hand; lists whose
/// lengths disagree fail both ranks.
#[test]
fn exchange_lists_in_any_order_become_the_halo() {
    // Rank 0 receives 4 elements from rank 1 in mixed order (2, 3 exec halo; 4, 5 non-exec);
    // rank 1 sends its owned 10..14 in that order.
    let sizes = |rank: usize| {
        if rank == 0 {
            SetSizes {
                core: 2,
                exec_halo: 2,
                nonexec_halo: 2,
                ..SetSizes::default()
            }
        } else {
            core(14)
        }
    };
    let lists = |rank: usize, sent: usize| {
        if rank == 0 {
            ExchangeLists {
                sends: vec![],
                receives: vec![(1, vec![5, 2, 4, 3])],
            }
        } else {
            ExchangeLists {
                sends: vec![(0, (10..10 + sent as u32).collect())],
                receives: vec![],
            }
        }
    };
    let halos = op2_test_support::on_ranks(2, std::time::Duration::from_secs(60), |rank, comm| {
        lists(rank, 4).into_halo(&*comm, sizes(rank), "s").unwrap()
    });
    assert_eq!(
        halos[0].neighbours,
        vec![HaloNeighbour {
            rank: 1,
            send: vec![],
            send_to_exec: 0,
            receive: vec![2, 3, 5, 4],
        }]
    );
    assert_eq!(
        halos[1].neighbours,
        vec![HaloNeighbour {
            rank: 0,
            send: vec![11, 13, 10, 12],
            send_to_exec: 2,
            receive: vec![],
        }]
    );
    // Three sent for four received: both ranks refuse, neither waits.
    let errs = op2_test_support::on_ranks(2, std::time::Duration::from_secs(60), |rank, comm| {
        lists(rank, 3)
            .into_halo(&*comm, sizes(rank), "s")
            .unwrap_err()
    });
    for e in errs {
        assert!(matches!(e, Op2Error::BadHalo { .. }), "{e}");
    }
    // A rank listing itself, or a non-halo element, fails every rank.
    let errs = op2_test_support::on_ranks(2, std::time::Duration::from_secs(60), |rank, comm| {
        let mut l = lists(rank, 4);
        if rank == 1 {
            l.receives = vec![(1, vec![0])];
        }
        l.into_halo(&*comm, sizes(rank), "s")
            .unwrap_err()
            .to_string()
    });
    assert!(
        errs[1].contains("rank 1 receives from rank 1"),
        "{}",
        errs[1]
    );
    assert!(errs[0].contains("rank 1's exchange lists"), "{}", errs[0]);
    // The chain of the next test, its lists handed over in reverse order.
    const N: usize = 30;
    const M: usize = 11;
    let (h0, h1) = two_ranks(|rt, rank| {
        let (ns, nh, es, eh, e2n, x0) = chain_part(rank, N, M);
        run(&rt, ns, nh, es, eh, e2n, &x0)
    });
    let (l0, l1) = two_ranks(|rt, rank| {
        let (ns, nh, es, eh, e2n, x0) = chain_part(rank, N, M);
        let reversed = |h: &SetHalo| ExchangeLists {
            sends: h
                .neighbours
                .iter()
                .map(|n| (n.rank, n.send.iter().rev().copied().collect()))
                .collect(),
            receives: h
                .neighbours
                .iter()
                .map(|n| (n.rank, n.receive.iter().rev().copied().collect()))
                .collect(),
        };
        let nodes = rt
            .decl_set_with_exchanges(ns, reversed(&nh), "nodes")
            .unwrap();
        let edges = rt
            .decl_set_with_exchanges(es, reversed(&eh), "edges")
            .unwrap();
        run_on(&rt, &nodes, &edges, e2n, &x0)
    });
    for (h, l) in [(&h0, &l0), (&h1, &l1)] {
        assert_eq!((&h.x, &h.y, &h.acc), (&l.x, &l.y, &l.acc));
        assert_eq!((h.sum, h.max, h.exchanges), (l.sum, l.max, l.exchanges));
    }
}

#[test]
fn two_ranks_compute_what_one_process_computes() {
    // A chain of N + 1 nodes and N edges (e joins e and e + 1). Rank 0 owns edges 0..M and nodes
    // 0..M; rank 1 owns edges M..N and nodes M..=N.
    const N: usize = 40;
    const M: usize = 17;
    let whole: Vec<f64> = initial(N + 1);
    let one = run(
        &builder().build().unwrap(),
        core(N + 1),
        SetHalo::default(),
        core(N),
        SetHalo::default(),
        (0..N as i32).flat_map(|e| [e, e + 1]).collect(),
        &whole,
    );

    let (r0, r1) = two_ranks(|rt, rank| {
        let (ns, nh, es, eh, e2n, x0) = chain_part(rank, N, M);
        run(&rt, ns, nh, es, eh, e2n, &x0)
    });

    // Owned values are the one process's, exactly (the same additions in the same order).
    assert_eq!(r0.x[..M], one.x[..M], "rank 0 nodes");
    assert_eq!(r1.x[..=N - M], one.x[M..], "rank 1 nodes");
    assert_eq!(r0.y[..M], one.y[..M], "rank 0 edges");
    assert_eq!(r1.y[..N - M], one.y[M..], "rank 1 edges");
    assert_eq!(r0.acc[..M], one.acc[..M], "rank 0 accumulators");
    assert_eq!(r1.acc[..=N - M], one.acc[M..], "rank 1 accumulators");
    // Halos hold their owners' values after the exchanges the loops needed.
    assert_eq!(r0.x[M], one.x[M], "rank 0's halo node, exchanged");
    assert_eq!(
        r1.x[N - M + 1],
        one.x[M - 1],
        "rank 1's halo node, exchanged"
    );
    assert_eq!(
        r1.y[N - M],
        one.y[M - 1],
        "rank 1's exec-halo edge, exchanged"
    );
    // Exactly the exchanges needed: x before the edge loop reads it through the map, y before the
    // exec halo reads it; none in one process.
    assert_eq!((one.exchanges, r0.exchanges, r1.exchanges), (0, 2, 2));
    // One cross-rank reduction for both Globals of the spread loop (a sum and a maximum travel
    // in one message) on each rank; none in one process.
    assert_eq!((one.reductions, r0.reductions, r1.reductions), (0, 1, 1));
    // Reductions: every edge once (the redundant one not twice), the same on both ranks.
    for r in [&r0, &r1] {
        assert!(
            (r.sum - one.sum).abs() <= 1e-12 * one.sum.abs(),
            "{} != {}",
            r.sum,
            one.sum
        );
        assert_eq!(r.max, one.max);
    }
}

#[test]
fn redundant_elements_of_one_process_do_not_count_in_reductions() {
    // One process whose edge set has an exec halo: a loop writing through the map runs it, but a
    // reduction counts owned edges only.
    let rt = builder().build().unwrap();
    let nodes = rt.decl_set(4, "nodes").unwrap();
    let edges = rt
        .decl_set_sections(
            SetSizes {
                core: 2,
                owned: 0,
                exec_halo: 1,
                nonexec_halo: 0,
            },
            "edges",
        )
        .unwrap();
    let m = rt
        .decl_map(&edges, &nodes, 2, vec![0, 1, 1, 2, 2, 3], "e2n")
        .unwrap();
    let acc = rt.decl_dat_zeros::<i32>(&nodes, 1, "acc").unwrap();
    let count = rt.decl_global(1, &[0i32], "count").unwrap();
    let k = kernel(
        "touch",
        "void touch(int *a, int *b, int *c) { *a += 1; *b += 1; *c += 1; }",
    );
    rt.par_loop(
        &k,
        &edges,
        [
            acc.arg_via(&m, 0, INC),
            acc.arg_via(&m, 1, INC),
            count.arg(INC),
        ],
    )
    .unwrap();
    assert_eq!(acc.to_vec().unwrap(), [1, 2, 2, 1], "the exec halo ran");
    assert_eq!(count.value().unwrap(), [2], "only owned edges counted");
    assert_eq!(rt.pending_loops(), 0);
    assert_eq!(rt.executed_loops(), 1);
}

#[test]
fn halo_lists_that_do_not_fit_the_sections_are_errors() {
    let rt = builder().build().unwrap();
    let sizes = SetSizes {
        core: 3,
        owned: 0,
        exec_halo: 0,
        nonexec_halo: 2,
    };
    let bad = |send: Vec<u32>, receive: Vec<u32>| {
        rt.decl_set_with_halo(
            sizes,
            SetHalo {
                neighbours: vec![HaloNeighbour {
                    rank: 1,
                    send_to_exec: 0,
                    send,
                    receive,
                }],
            },
            "s",
        )
    };
    for (send, receive) in [
        (vec![3], vec![3]),    // sends a halo element
        (vec![0], vec![1]),    // receives into an owned element
        (vec![0], vec![5]),    // receives past the set
        (vec![0], vec![3, 3]), // receives one element twice
    ] {
        assert!(
            matches!(
                bad(send.clone(), receive.clone()),
                Err(op2::Op2Error::BadHalo { .. })
            ),
            "{send:?} {receive:?}"
        );
    }
    assert!(bad(vec![0, 2], vec![3, 4]).is_ok());
    // The count of sent elements for the neighbour's exec halo, and the order of what is received
    // (exec halo first), are checked too.
    let with = |sizes: SetSizes, send_to_exec: usize, receive: Vec<u32>| {
        rt.decl_set_with_halo(
            sizes,
            SetHalo {
                neighbours: vec![HaloNeighbour {
                    rank: 1,
                    send: vec![0],
                    send_to_exec,
                    receive,
                }],
            },
            "t",
        )
    };
    let split = SetSizes {
        core: 3,
        exec_halo: 1,
        nonexec_halo: 1,
        ..SetSizes::default()
    };
    assert!(matches!(
        with(split, 2, vec![3, 4]),
        Err(op2::Op2Error::BadHalo { .. })
    ));
    assert!(matches!(
        with(split, 1, vec![4, 3]),
        Err(op2::Op2Error::BadHalo { .. })
    ));
    assert!(with(split, 1, vec![3, 4]).is_ok());
}

/// One rank of two: `k` owned nodes (the last one sent to the other rank), the other rank's
/// last node as a non-exec halo node (local `k`), and one owned edge joining nodes `k - 1` and
/// `k`.
fn edge_to_neighbour(rt: &Runtime, rank: usize, k: usize) -> (op2::Set, op2::Set, op2::Map) {
    let nodes = rt
        .decl_set_with_halo(
            SetSizes {
                core: k - 1,
                owned: 1,
                nonexec_halo: 1,
                ..SetSizes::default()
            },
            SetHalo {
                neighbours: vec![HaloNeighbour {
                    rank: 1 - rank,
                    send: vec![(k - 1) as u32],
                    send_to_exec: 0,
                    receive: vec![k as u32],
                }],
            },
            "nodes",
        )
        .unwrap();
    let edges = rt
        .decl_set_sections(
            SetSizes {
                owned: 1,
                ..SetSizes::default()
            },
            "edges",
        )
        .unwrap();
    let m = rt
        .decl_map(&edges, &nodes, 2, vec![(k - 1) as i32, k as i32], "e2n")
        .unwrap();
    (nodes, edges, m)
}

/// `y = a + 2 b` for an edge joining nodes `a` and `b`.
fn edge_kernel() -> Kernel {
    kernel(
        "edge",
        "void edge(const double *a, const double *b, double *y) { *y = *a + 2.0 * *b; }",
    )
}

/// Two ranks of one node each, each holding the other's node as halo, and one edge each joining
/// its node (local 0) to the halo node (local 1): `y = own + 2 * other`.
fn two_node_rank(rt: &Runtime, rank: usize, own: f64) -> (Vec<f64>, Vec<f64>, u64) {
    let (nodes, edges, m) = edge_to_neighbour(rt, rank, 1);
    // The halo row starts as garbage: the first loop must fetch the owner's value.
    let x = rt.decl_dat(&nodes, 1, [own, f64::NAN], "x").unwrap();
    let y = rt.decl_dat_zeros::<f64>(&edges, 1, "y").unwrap();
    let edge = edge_kernel();
    let args = || [x.arg_via(&m, 0, READ), x.arg_via(&m, 1, READ), y.arg(WRITE)];
    rt.par_loop(&edge, &edges, args()).unwrap();
    let first = y.to_vec().unwrap();
    // A host write to the owned row: the other rank's next loop must see it.
    x.data().unwrap()[0] = 10.0 * own;
    rt.par_loop(&edge, &edges, args()).unwrap();
    let second = y.to_vec().unwrap();
    // A loop that reads the halo again without anything written in between exchanges nothing.
    rt.par_loop(&edge, &edges, args()).unwrap();
    assert_eq!(y.to_vec().unwrap(), second);
    // The counters say the same per Dat and per loop: two exchanges of x, one 8-byte message
    // each way per exchange; y (never read through a map) none.
    let traffic = rt.halo_traffic();
    assert_eq!(traffic.len(), 1, "{traffic:?}");
    assert_eq!(traffic[0].name, "x");
    let t = traffic[0].traffic;
    assert_eq!((t.exchanges, t.messages, t.bytes), (2, 2, 16));
    assert!(t.wait_seconds >= 0.0);
    let timings = rt.timings();
    assert_eq!(timings.len(), 1);
    assert_eq!(timings[0].calls, 3);
    assert_eq!(timings[0].halo.exchanges, 2);
    assert_eq!(timings[0].halo.bytes, 16);
    assert_eq!(timings[0].reductions, 0);
    (first, second, rt.halo_exchanges())
}

#[test]
fn new_dats_and_host_writes_leave_the_halo_out_of_date() {
    let (r0, r1) = two_ranks(|rt, rank| two_node_rank(&rt, rank, rank as f64 + 1.0));
    assert_eq!(r0.0, [1.0 + 2.0 * 2.0], "rank 0, first loop");
    assert_eq!(r1.0, [2.0 + 2.0 * 1.0], "rank 1, first loop");
    assert_eq!(r0.1, [10.0 + 2.0 * 20.0], "rank 0, after both host writes");
    assert_eq!(r1.1, [20.0 + 2.0 * 10.0], "rank 1, after both host writes");
    assert_eq!((r0.2, r1.2), (2, 2), "one exchange per out-of-date halo");
}

/// One rank of two holding `k` nodes (the last one sent to the other rank) and the other's last
/// node as halo, one edge joining them. Returns the edge value, and on device backends the bytes
/// copied each way by the exchange and the node Dat's state after it.
fn big_rank(rt: &Runtime, rank: usize, k: usize) -> (f64, Option<(u64, u64, op2::DataState)>) {
    let (nodes, edges, m) = edge_to_neighbour(rt, rank, k);
    let x0: Vec<f64> = (0..=k).map(|i| (i + 1000 * rank) as f64).collect();
    let x = rt.decl_dat(&nodes, 1, &x0, "x").unwrap();
    let y = rt.decl_dat_zeros::<f64>(&edges, 1, "y").unwrap();
    // On a device the scaled values live on the device only; the exchange must not bring the
    // whole Dat home, nor send it back.
    let scale = kernel("scale", "void scale(double *x) { *x = 2.0 * *x; }");
    rt.par_loop(&scale, &nodes, [x.arg(RW)]).unwrap();
    rt.flush().unwrap();
    let before = rt.device_stats();
    rt.par_loop(
        &edge_kernel(),
        &edges,
        [x.arg_via(&m, 0, READ), x.arg_via(&m, 1, READ), y.arg(WRITE)],
    )
    .unwrap();
    rt.flush().unwrap();
    let moved = before.zip(rt.device_stats()).map(|(b, a)| {
        (
            a.bytes_to_host - b.bytes_to_host,
            a.bytes_to_device - b.bytes_to_device,
            rt.data_state(x.id()).unwrap(),
        )
    });
    (y.to_vec().unwrap()[0], moved)
}

#[test]
fn halo_exchanges_move_only_halo_rows_on_devices() {
    const K: usize = 20_000;
    let (r0, r1) = two_ranks(|rt, rank| big_rank(&rt, rank, K));
    // Node K-1 of each rank (value K - 1 + 1000 r), scaled, plus twice the other rank's.
    let own = |r: usize| 2.0 * (K - 1 + 1000 * r) as f64;
    assert_eq!(r0.0, own(0) + 2.0 * own(1));
    assert_eq!(r1.0, own(1) + 2.0 * own(0));
    for (rank, r) in [(0, r0), (1, r1)] {
        if let Some((to_host, to_device, state)) = r.1 {
            // One row out, one row in (and the small edge Dat), not the 160 kB node Dat.
            assert!(to_host <= 64, "rank {rank}: {to_host} bytes copied home");
            assert!(
                to_device <= 64,
                "rank {rank}: {to_device} bytes copied to the device"
            );
            assert_eq!(state, op2::DataState::Device, "rank {rank}");
        }
    }
}

/// `Runtime::refresh_halo` (PyOP2's `data_with_halos`): values written on the host reach the
/// neighbours' halo rows without a loop; without it the halo rows keep their old values.
#[test]
fn a_halo_refresh_brings_host_written_values_to_the_neighbours() {
    let (n, m) = (12, 5);
    let halos = op2_test_support::on_rank_runtimes(2, builder, |rank, rt| {
        let (ns, nh, es, eh, ..) = chain_part(rank, n, m);
        let nodes = rt.decl_set_with_halo(ns, nh, "nodes").unwrap();
        let edges = rt.decl_set_with_halo(es, eh, "edges").unwrap();
        let first = if rank == 0 { 0 } else { m };
        let mut halo_rows = Vec::new();
        // Nodes: a non-exec halo row on each rank; edges: an exec halo row on rank 1.
        for (set, offset) in [(&nodes, 0.5), (&edges, 100.5)] {
            let x = rt.decl_dat_zeros::<f64>(set, 1, "x").unwrap();
            let owned = set.size();
            x.data().unwrap()[..owned]
                .iter_mut()
                .enumerate()
                .for_each(|(i, v)| *v = (first + i) as f64 + offset);
            let before = x.data_ro().unwrap()[owned..].to_vec();
            rt.refresh_halo(&x).unwrap();
            halo_rows.push((before, x.data_ro().unwrap()[owned..].to_vec()));
        }
        halo_rows
    });
    // Rank 0's halo node is node m (rank 1's first); rank 1's is node m - 1, and its exec halo
    // edge is edge m - 1 (rank 0's last). Rank 0 has no edge halo.
    assert_eq!(halos[0][0].0, vec![0.0]);
    assert_eq!(halos[0][0].1, vec![m as f64 + 0.5]);
    assert_eq!(halos[1][0].1, vec![(m - 1) as f64 + 0.5]);
    assert_eq!(halos[1][1].0, vec![0.0]);
    assert_eq!(halos[1][1].1, vec![(m - 1) as f64 + 100.5]);
    assert!(halos[0][1].1.is_empty());
}
