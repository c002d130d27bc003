//! Checkpoint and restart on the suite's backend: the minimal-save rule on hand-made loop
//! sequences, restarts from random loop boundaries equal to the uninterrupted run (property
//! test), and every bad checkpoint or misuse as a typed error that overwrites nothing.

use op2::{
    CheckpointEvery, Dat, Global, INC, Kernel, MAX, Map, Op2Error, READ, RW, Runtime, Set, WRITE,
};
use op2_test_support::{assert_err, builder, kernel};
use proptest::prelude::*;
use std::path::Path;

/// A small mesh program: nodes joined by edges, the loops a user would write.
struct Program {
    nodes: Set,
    edges: Set,
    e2n: Map,
    u: Dat<f64>,
    v: Dat<f64>,
    flux: Dat<f64>,
    w: Dat<f64>,
    scratch: Dat<f64>,
    sum: Global<f64>,
    mx: Global<f64>,
    k: [Kernel; 6],
}

/// What a run leaves and what its control flow saw.
#[derive(Debug, Clone, PartialEq)]
struct Outcome {
    u: Vec<f64>,
    v: Vec<f64>,
    flux: Vec<f64>,
    scratch: Vec<f64>,
    seen: Vec<f64>,
}

const OPS: usize = 6;

impl Program {
    fn declare(rt: &Runtime, n: usize, map: &[i32]) -> op2::Result<Program> {
        let e = map.len() / 2;
        let nodes = rt.decl_set(n, "nodes")?;
        let edges = rt.decl_set(e, "edges")?;
        let u0: Vec<f64> = (0..n).map(|i| (i as f64 * 0.37).sin()).collect();
        let w0: Vec<f64> = (0..e).map(|i| 1.0 + (i % 3) as f64 * 0.25).collect();
        Ok(Program {
            e2n: rt.decl_map(&edges, &nodes, 2, map.to_vec(), "e2n")?,
            u: rt.decl_dat(&nodes, 1, &u0, "u")?,
            v: rt.decl_dat_zeros(&nodes, 1, "v")?,
            flux: rt.decl_dat_zeros(&edges, 1, "flux")?,
            w: rt.decl_dat(&edges, 1, &w0, "w")?,
            scratch: rt.decl_dat_zeros(&nodes, 1, "scratch")?,
            sum: rt.decl_global(1, &[0.0], "sum")?,
            mx: rt.decl_global(1, &[f64::NEG_INFINITY], "mx")?,
            k: [
                kernel(
                    "edge_flux",
                    "void edge_flux(const double *a, const double *b, const double *w, double *f) \
                     { *f = *w * (*a - *b); }",
                ),
                kernel(
                    "scatter",
                    "void scatter(const double *f, double *a, double *b) { *a += *f; *b -= *f; }",
                ),
                kernel(
                    "relax",
                    "void relax(const double *v, double *u, double *s) \
                     { *u += 0.1 * *v; *s += *u * *u; }",
                ),
                kernel("reset", "void reset(double *v) { *v = 0.0; }"),
                kernel("pick", "void pick(const double *f, double *s) { *s = *f; }"),
                kernel(
                    "norm",
                    "void norm(const double *u, const double *s, double *m) \
                     { double t = *u + *s; if (t > *m) *m = t; }",
                ),
            ],
            nodes,
            edges,
        })
    }

    /// Runs loop kind `op`; what the program's control flow reads afterwards goes in `seen`.
    fn run(&self, rt: &Runtime, op: usize, seen: &mut Vec<f64>) -> op2::Result<()> {
        let k = &self.k[op];
        match op {
            0 => rt
                .par_loop(
                    k,
                    &self.edges,
                    [
                        self.u.arg_via(&self.e2n, 0, READ),
                        self.u.arg_via(&self.e2n, 1, READ),
                        self.w.arg(READ),
                        self.flux.arg(WRITE),
                    ],
                )
                .map(drop),
            1 => rt
                .par_loop(
                    k,
                    &self.edges,
                    [
                        self.flux.arg(READ),
                        self.v.arg_via(&self.e2n, 0, INC),
                        self.v.arg_via(&self.e2n, 1, INC),
                    ],
                )
                .map(drop),
            2 => {
                self.sum.set_value(&[0.0])?;
                rt.par_loop(
                    k,
                    &self.nodes,
                    [self.v.arg(READ), self.u.arg(RW), self.sum.arg(INC)],
                )?;
                seen.push(self.sum.value()?[0]);
                Ok(())
            }
            3 => rt.par_loop(k, &self.nodes, [self.v.arg(WRITE)]).map(drop),
            4 => rt
                .par_loop(
                    k,
                    &self.edges,
                    [
                        self.flux.arg(READ),
                        self.scratch.arg_via(&self.e2n, 0, WRITE),
                    ],
                )
                .map(drop),
            _ => {
                rt.par_loop(
                    k,
                    &self.nodes,
                    [self.u.arg(READ), self.scratch.arg(READ), self.mx.arg(MAX)],
                )?;
                seen.push(self.mx.value()?[0]);
                Ok(())
            }
        }
    }

    fn outcome(&self, seen: Vec<f64>) -> op2::Result<Outcome> {
        Ok(Outcome {
            u: self.u.to_vec()?,
            v: self.v.to_vec()?,
            flux: self.flux.to_vec()?,
            scratch: self.scratch.to_vec()?,
            seen,
        })
    }
}

/// Declares the program on `rt` and runs `ops` (stopping after `stop` of them, as a run cut
/// short would).
fn run(rt: &Runtime, n: usize, map: &[i32], ops: &[usize], stop: usize) -> op2::Result<Outcome> {
    let p = Program::declare(rt, n, map)?;
    let mut seen = Vec::new();
    for &op in &ops[..stop.min(ops.len())] {
        p.run(rt, op, &mut seen)?;
    }
    p.outcome(seen)
}

fn close(a: &[f64], b: &[f64]) -> bool {
    a.len() == b.len()
        && a.iter()
            .zip(b)
            .all(|(x, y)| x == y || (x - y).abs() <= 1e-9 * (1.0 + x.abs().max(y.abs())))
}

/// Bit for bit on the reference, within rounding elsewhere (reductions may combine in another
/// order).
fn assert_same(got: &Outcome, want: &Outcome) {
    if op2_test_support::backend() == "seq" {
        assert_eq!(got, want);
    } else {
        for (g, w) in [
            (&got.u, &want.u),
            (&got.v, &want.v),
            (&got.flux, &want.flux),
            (&got.scratch, &want.scratch),
            (&got.seen, &want.seen),
        ] {
            assert!(close(g, w), "{g:?}\n!=\n{w:?}");
        }
    }
}

fn ring(n: usize) -> Vec<i32> {
    (0..n)
        .flat_map(|i| [i as i32, ((i + 1) % n) as i32])
        .collect()
}

fn checkpointed(path: &Path, every: CheckpointEvery) -> Runtime {
    builder()
        .checkpoint(path)
        .checkpoint_every(every)
        .build()
        .unwrap()
}

/// Runs `ops` with a checkpoint before loop `at` and returns what it saved.
fn saved_by(ops: &[usize], at: u64, map: &[i32]) -> Vec<String> {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.ckpt");
    let rt = checkpointed(&path, CheckpointEvery::Loops(at));
    let p = Program::declare(&rt, 8, map).unwrap();
    let mut seen = Vec::new();
    for &op in ops {
        p.run(&rt, op, &mut seen).unwrap();
    }
    // Completes the checkpoint (a Dat still undecided is saved as it is) and writes it.
    rt.checkpoint_wait().unwrap();
    let stats = rt.checkpoint_stats().unwrap();
    assert_eq!(stats.last_backup, Some(at));
    let mut saved = stats.saved_dats;
    saved.sort();
    saved
}

#[test]
fn the_minimal_rule_saves_what_is_read_before_it_is_overwritten() {
    let ring = ring(8);
    // Before the backup point (loop 2) loop 0 wrote flux and loop 1 incremented v; u and w
    // were never written, so they are never saved. After it, edge_flux overwrites flux
    // directly (not saved) and scatter increments v (read before written: saved).
    assert_eq!(saved_by(&[0, 1, 0, 1], 2, &ring), ["v"]);
    // reset overwrites every row of v directly before anything reads it: nothing is saved.
    assert!(saved_by(&[0, 1, 3, 0], 2, &ring).is_empty());
    // pick reads flux (saved) and writes scratch through a map that reaches every node (a
    // ring): scratch is not saved ...
    assert_eq!(saved_by(&[0, 4, 4, 5], 2, &ring), ["flux"]);
    // ... but through a map that misses nodes, the rows it skips must survive: saved.
    let partial: Vec<i32> = (0..8).flat_map(|i: i32| [i % 4, (i + 1) % 8]).collect();
    assert_eq!(saved_by(&[0, 4, 4, 5], 2, &partial), ["flux", "scratch"]);
    // relax updated u (RW) before the backup point; edge_flux reads it after: saved.
    assert_eq!(saved_by(&[2, 0, 0, 1], 2, &ring), ["u"]);
    // Everything written before is read after, or still undecided when the checkpoint is
    // completed (scratch: saved as it is).
    assert_eq!(
        saved_by(&[0, 1, 2, 4, 5, 1, 2, 0], 5, &ring),
        ["flux", "scratch", "u", "v"]
    );
}

#[test]
fn a_host_read_after_the_backup_point_saves_the_dat() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("host.ckpt");
    let rt = checkpointed(&path, CheckpointEvery::Loops(2));
    let p = Program::declare(&rt, 6, &ring(6)).unwrap();
    let mut seen = Vec::new();
    p.run(&rt, 0, &mut seen).unwrap();
    p.run(&rt, 4, &mut seen).unwrap();
    // Loop 2 is due a checkpoint; a loop of reset (over v, never written) comes first.
    p.run(&rt, 3, &mut seen).unwrap();
    let before = p.flux.to_vec().unwrap();
    let scratch = p.scratch.to_vec().unwrap();
    p.run(&rt, 0, &mut seen).unwrap();
    // Both were read on the host before anything wrote them again: both saved.
    let s = rt.checkpoint_stats().unwrap();
    assert_eq!(s.last_backup, Some(2));
    assert_eq!(s.saved_dats.len(), 2, "{s:?}");
    rt.checkpoint_wait().unwrap();
    drop(p);
    drop(rt);
    // ... the restarted program sees the saved flux where it read it.
    let rt = checkpointed(&path, CheckpointEvery::Loops(2));
    let p = Program::declare(&rt, 6, &ring(6)).unwrap();
    let mut seen = Vec::new();
    p.run(&rt, 0, &mut seen).unwrap();
    p.run(&rt, 4, &mut seen).unwrap();
    p.run(&rt, 3, &mut seen).unwrap();
    assert_eq!(p.flux.to_vec().unwrap(), before);
    assert_eq!(p.scratch.to_vec().unwrap(), scratch);
    assert_eq!(rt.checkpoint_stats().unwrap().restored_from, Some(2));
}

#[test]
fn restarting_equals_the_uninterrupted_run() {
    let ops: Vec<usize> = (0..40).map(|i| [0, 1, 2, 4, 5, 3][i % 6]).collect();
    let map = ring(10);
    let want = run(&builder().build().unwrap(), 10, &map, &ops, ops.len()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("ring.ckpt");
    // Stops after 23 loops (the last checkpoint was before loop 20), then runs to the end.
    let rt = checkpointed(&path, CheckpointEvery::Loops(5));
    run(&rt, 10, &map, &ops, 23).unwrap();
    let first = rt.checkpoint_stats().unwrap();
    assert_eq!((first.taken, first.last_backup), (4, Some(20)));
    assert!(first.saved_dat_bytes < first.all_dat_bytes, "{first:?}");
    drop(rt);
    let rt = checkpointed(&path, CheckpointEvery::Loops(5));
    let got = run(&rt, 10, &map, &ops, ops.len()).unwrap();
    let s = rt.checkpoint_stats().unwrap();
    assert_eq!(s.restored_from, Some(20));
    assert_eq!(s.replayed_loops, 20);
    assert_same(&got, &want);
    // Checkpointing goes on after the restart: before loops 25, 30 and 35.
    assert_eq!(s.last_backup, Some(35));
    drop(rt);
    assert!(op2::atomic_write::leftover_temporaries(&path).is_empty());
}

#[test]
fn checkpoints_by_kernel_and_by_time() {
    let ops: Vec<usize> = (0..24).map(|i| [0, 1, 2][i % 3]).collect();
    let map = ring(7);
    let want = run(&builder().build().unwrap(), 7, &map, &ops, ops.len()).unwrap();
    let dir = tempfile::tempdir().unwrap();
    for (name, every, stop, backup) in [
        // Before every 3rd call of relax after its first: relax is loop 2, 5, 8, ...; its 4th
        // call (after 3 calls) is loop 11.
        (
            "kernel",
            CheckpointEvery::Kernel {
                kernel: "relax".into(),
                every: 3,
            },
            13,
            11,
        ),
        // Every zero seconds: before every loop after the first.
        (
            "time",
            CheckpointEvery::Time(std::time::Duration::ZERO),
            9,
            8,
        ),
    ] {
        let path = dir.path().join(name);
        let rt = checkpointed(&path, every.clone());
        run(&rt, 7, &map, &ops, stop).unwrap();
        assert_eq!(
            rt.checkpoint_stats().unwrap().last_backup,
            Some(backup),
            "{name}"
        );
        drop(rt);
        let rt = checkpointed(&path, every);
        let got = run(&rt, 7, &map, &ops, ops.len()).unwrap();
        assert_eq!(rt.checkpoint_stats().unwrap().restored_from, Some(backup));
        assert_same(&got, &want);
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 24, ..ProptestConfig::default() })]

    /// Random programs, checkpoint intervals and stopping points (a run stopped, restarted and
    /// stopped again, then restarted to the end): the last run always ends as the uninterrupted
    /// run does, and its control flow sees the same Global values on the way.
    #[test]
    fn restart_from_any_loop_boundary(
        ops in prop::collection::vec(0..OPS, 1..30),
        every in 1u64..8,
        stop_frac in 0.0f64..1.0,
        again_frac in 0.0f64..1.0,
        n in 2usize..12,
        seed in any::<u64>(),
    ) {
        let mut dice = op2_test_support::Dice::new(seed | 1);
        let map: Vec<i32> = (0..2 * n + 3)
            .map(|_| dice.below(n as u64) as i32)
            .collect::<Vec<_>>()[..2 * (n + 1)]
            .to_vec();
        let want = run(&builder().build().unwrap(), n, &map, &ops, ops.len()).unwrap();
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.ckpt");
        let stop = 1 + (stop_frac * ops.len() as f64) as usize;
        let rt = checkpointed(&path, CheckpointEvery::Loops(every));
        run(&rt, n, &map, &ops, stop).unwrap();
        drop(rt);
        prop_assert_eq!(path.exists(), stop as u64 > every);
        // Restarted, and stopped again further on.
        let again = stop + (again_frac * (ops.len() - stop.min(ops.len())) as f64) as usize;
        let rt = checkpointed(&path, CheckpointEvery::Loops(every));
        let partial = run(&rt, n, &map, &ops, again).unwrap();
        drop(rt);
        prop_assert_eq!(&partial.seen[..], &want.seen[..partial.seen.len()]);
        let rt = checkpointed(&path, CheckpointEvery::Loops(every));
        let got = run(&rt, n, &map, &ops, ops.len()).unwrap();
        let restored = rt.checkpoint_stats().unwrap().restored_from;
        prop_assert_eq!(restored.is_some(), again as u64 > every);
        assert_same(&got, &want);
    }
}

/// A checkpoint of the ring program taken before loop 6, and its bytes.
fn a_checkpoint(dir: &Path) -> (std::path::PathBuf, Vec<u8>) {
    let path = dir.join("good.ckpt");
    let ops = [0, 1, 2, 0, 1, 2, 0, 1, 2];
    let rt = checkpointed(&path, CheckpointEvery::Loops(6));
    run(&rt, 6, &ring(6), &ops, ops.len()).unwrap();
    drop(rt);
    let bytes = std::fs::read(&path).unwrap();
    (path, bytes)
}

#[test]
fn bad_checkpoints_are_typed_errors_and_nothing_is_overwritten() {
    let dir = tempfile::tempdir().unwrap();
    let (path, good) = a_checkpoint(dir.path());
    let every = CheckpointEvery::Loops(6);
    let restart = |p: &Path| {
        builder()
            .checkpoint(p)
            .checkpoint_every(every.clone())
            .build()
    };

    // Truncated, damaged, foreign, newer.
    std::fs::write(&path, &good[..good.len() / 2]).unwrap();
    assert_err!(restart(&path), Op2Error::CheckpointCorrupt { .. });
    let mut flipped = good.clone();
    let mid = flipped.len() / 2;
    flipped[mid] ^= 0x10;
    std::fs::write(&path, &flipped).unwrap();
    let e = restart(&path).unwrap_err();
    assert!(matches!(e, Op2Error::CheckpointCorrupt { .. }), "{e}");
    assert!(e.to_string().contains("good.ckpt"), "{e}");
    std::fs::write(&path, b"<?xml version=\"1.0\"?><VTKFile/>").unwrap();
    assert_err!(restart(&path), Op2Error::CheckpointCorrupt { .. });
    let mut newer = good.clone();
    newer[8..12].copy_from_slice(&99u32.to_le_bytes());
    std::fs::write(&path, &newer).unwrap();
    assert_err!(
        restart(&path),
        Op2Error::CheckpointVersion { found: 99, .. }
    );
    assert_eq!(std::fs::read(&path).unwrap(), newer, "left as it was");

    // A different mesh: the map's values differ (same sizes), found at its declaration.
    std::fs::write(&path, &good).unwrap();
    let rt = restart(&path).unwrap();
    let mut other = ring(6);
    other.swap(0, 1);
    let e = Program::declare(&rt, 6, &other)
        .err()
        .expect("a different mesh");
    assert!(matches!(e, Op2Error::CheckpointMismatch { .. }), "{e}");
    assert!(
        e.to_string().contains("e2n") && e.to_string().contains("other values"),
        "{e}"
    );
    drop(rt);
    // A different size.
    let rt = restart(&path).unwrap();
    assert_err!(
        Program::declare(&rt, 7, &ring(7)),
        Op2Error::CheckpointMismatch { .. }
    );
    drop(rt);
    // A different program: other loops before the backup point, found when it is reached.
    let rt = restart(&path).unwrap();
    let e = run(&rt, 6, &ring(6), &[0, 1, 2, 0, 1, 0, 0], 7).unwrap_err();
    assert!(matches!(e, Op2Error::CheckpointMismatch { .. }), "{e}");
    assert!(e.to_string().contains("kernels"), "{e}");
    drop(rt);
    assert_eq!(
        std::fs::read(&path).unwrap(),
        good,
        "no failed restart wrote a checkpoint"
    );
}

#[test]
fn host_reads_of_replayed_dats_are_refused_until_the_backup_point() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = a_checkpoint(dir.path());
    let rt = checkpointed(&path, CheckpointEvery::Loops(6));
    let p = Program::declare(&rt, 6, &ring(6)).unwrap();
    let mut seen = Vec::new();
    // w is never written: its value is the declared one, readable at any time.
    assert_eq!(p.w.to_vec().unwrap().len(), 6);
    p.run(&rt, 0, &mut seen).unwrap();
    // flux was written by a replayed loop: its value is not known before loop 6.
    let e = p.flux.to_vec().unwrap_err();
    match &e {
        Op2Error::CheckpointReplay { name, backup, .. } => {
            assert_eq!((name.as_str(), *backup), ("flux", 6));
        }
        other => panic!("{other}"),
    }
    assert_err!(p.flux.data(), Op2Error::CheckpointReplay { .. });
    // Globals replay the first run's values: the program's control flow goes on.
    for op in [1, 2, 0, 1, 2] {
        p.run(&rt, op, &mut seen).unwrap();
    }
    assert_eq!(seen.len(), 2);
    // Loop 6 loads the checkpoint: from then on everything is readable.
    p.run(&rt, 0, &mut seen).unwrap();
    assert_eq!(p.flux.to_vec().unwrap().len(), 6);
}

#[test]
fn checkpoint_misuse_is_a_typed_error() {
    // A directory for the file.
    let here = tempfile::tempdir().unwrap();
    assert_err!(
        builder().checkpoint(here.path()).build(),
        Op2Error::Config { .. }
    );
    // An interval without a file.
    assert_err!(
        builder()
            .checkpoint_every(CheckpointEvery::Loops(3))
            .build(),
        Op2Error::Config { .. }
    );
    // A directory that does not exist: typed, when the runtime is built (its lock file cannot
    // be made there, and neither could the checkpoint).
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("missing/dir/run.ckpt");
    let e = builder().checkpoint(&path).build().unwrap_err();
    assert!(matches!(e, Op2Error::CheckpointWrite { .. }), "{e}");
    assert!(e.to_string().contains("run.ckpt"), "{e}");
    // A lock timeout without a file.
    assert_err!(
        builder()
            .checkpoint_lock_timeout(std::time::Duration::from_secs(1))
            .build(),
        Op2Error::Config { .. }
    );
    // Across ranks the saved Dats' sets need global numbers: without them, a typed error on
    // every rank at the backup point (no hang).
    let results = op2_test_support::on_ranks(2, std::time::Duration::from_secs(60), |_, comm| {
        let rt = builder()
            .checkpoint(dir.path().join("ranks.ckpt"))
            .checkpoint_every(CheckpointEvery::Loops(2))
            .communicator(comm)
            .build()
            .unwrap();
        let p = Program::declare(&rt, 4, &ring(4)).unwrap();
        let mut seen = Vec::new();
        [0, 1, 2]
            .into_iter()
            .try_for_each(|op| p.run(&rt, op, &mut seen))
    });
    for r in results {
        match r {
            Err(Op2Error::CheckpointWrite { reason, .. }) => {
                assert!(reason.contains("global numbers"), "{reason}");
            }
            other => panic!("{other:?}"),
        }
    }
}

#[test]
fn intervals_and_global_numbers_are_checked() {
    for every in [
        CheckpointEvery::Loops(0),
        CheckpointEvery::Kernel {
            kernel: "relax".into(),
            every: 0,
        },
        CheckpointEvery::Kernel {
            kernel: "not a kernel".into(),
            every: 3,
        },
    ] {
        assert_err!(
            builder()
                .checkpoint("x.ckpt")
                .checkpoint_every(every)
                .build(),
            Op2Error::Config { .. }
        );
    }
    let dir = tempfile::tempdir().unwrap();
    let rt = checkpointed(&dir.path().join("n.ckpt"), CheckpointEvery::Loops(2));
    let set = rt.decl_set(3, "cells").unwrap();
    // One number per element, each below the set's rows.
    assert_err!(
        rt.number_globally(&set, vec![0, 1]),
        Op2Error::DataLength { .. }
    );
    assert_err!(
        rt.number_globally(&set, vec![0, 1, 3]),
        Op2Error::DataLength { .. }
    );
    // Two elements with one number: found when the checkpoint is assembled, not saved as zeros.
    rt.number_globally(&set, vec![0, 1, 1]).unwrap();
    let d = rt.decl_dat(&set, 1, [1.0, 2.0, 3.0], "d").unwrap();
    let k = kernel("bump", "void bump(double *x) { *x += 1.0; }");
    rt.par_loop(&k, &set, [d.arg(RW)]).unwrap();
    rt.par_loop(&k, &set, [d.arg(RW)]).unwrap();
    let e = rt
        .par_loop(&k, &set, [d.arg(RW)])
        .and_then(|_| rt.checkpoint_wait())
        .unwrap_err();
    assert!(matches!(e, Op2Error::CheckpointWrite { .. }), "{e}");
    assert!(
        e.to_string().contains("global row 1 is owned 2 times"),
        "{e}"
    );
}

#[test]
fn ranks_that_see_different_checkpoint_files_stop_together() {
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = a_checkpoint(dir.path());
    // Rank 0 finds the checkpoint, rank 1 (a disk of its own) does not.
    let results =
        op2_test_support::on_ranks(2, std::time::Duration::from_secs(60), |rank, comm| {
            let p = if rank == 0 {
                path.clone()
            } else {
                dir.path().join("elsewhere.ckpt")
            };
            builder()
                .checkpoint(p)
                .communicator(comm)
                .build()
                .map(|_| ())
        });
    for r in results {
        match r {
            Err(Op2Error::CheckpointMismatch { what, .. }) => {
                assert!(what.contains("same checkpoint file"), "{what}")
            }
            other => panic!("{other:?}"),
        }
    }
    // A damaged file on one rank: both fail, neither hangs.
    let damaged = dir.path().join("damaged.ckpt");
    std::fs::write(&damaged, b"OP2CKPT\0 but nothing after").unwrap();
    let results =
        op2_test_support::on_ranks(2, std::time::Duration::from_secs(60), |rank, comm| {
            let p = if rank == 0 {
                damaged.clone()
            } else {
                path.clone()
            };
            builder()
                .checkpoint(p)
                .communicator(comm)
                .build()
                .map(|_| ())
        });
    assert!(
        matches!(results[0], Err(Op2Error::CheckpointCorrupt { .. })),
        "{:?}",
        results[0]
    );
    assert!(results[1].is_err(), "rank 1 must stop too");
}

/// A restart while the job that writes the checkpoint is still there (the ranks of a killed job
/// that are not gone yet, still writing): once, its ranks read the file at different moments,
/// one before and one after that job replaced it, and the restart was refused ("the ranks do not
/// see the same checkpoint file"). Now the restart waits for the other job's lock before any rank
/// reads, and every rank reads the newer file. Made deterministic: rank 1 starts only after the
/// other job has replaced the checkpoint.
#[test]
fn a_restart_waits_for_the_job_still_writing_its_checkpoint() {
    use std::sync::mpsc;
    use std::time::{Duration, Instant};
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("run.ckpt");
    let ops = [0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2, 0, 1, 2];
    // The first job: a checkpoint before loop 6 on disk, and it goes on.
    let first = checkpointed(&path, CheckpointEvery::Loops(6));
    let p = Program::declare(&first, 6, &ring(6)).unwrap();
    let mut seen = Vec::new();
    for &op in &ops[..8] {
        p.run(&first, op, &mut seen).unwrap();
    }
    first.checkpoint_wait().unwrap();
    let older = std::fs::read(&path).unwrap();
    let (go, wait) = mpsc::channel::<()>();
    let wait = std::sync::Mutex::new(wait);
    let ended = std::sync::Mutex::new(None::<Instant>);
    let results = std::thread::scope(|s| {
        let restart = s.spawn(|| {
            op2_test_support::on_ranks(2, Duration::from_secs(120), |rank, comm| {
                if rank == 1 {
                    // Rank 1 starts late: after the first job's next checkpoint.
                    wait.lock().unwrap().recv().unwrap();
                }
                let rt = builder()
                    .checkpoint(&path)
                    .checkpoint_lock_timeout(Duration::from_secs(60))
                    .communicator(comm)
                    .build()?;
                Ok::<_, Op2Error>((Instant::now(), rt.checkpoint_stats().is_some()))
            })
        });
        // Rank 0 of the restart is waiting now; the first job writes its next checkpoint
        // (before loop 12), replacing the file, and ends.
        std::thread::sleep(Duration::from_millis(300));
        for &op in &ops[8..] {
            p.run(&first, op, &mut seen).unwrap();
        }
        first.checkpoint_wait().unwrap();
        assert_ne!(
            std::fs::read(&path).unwrap(),
            older,
            "the first job wrote again"
        );
        go.send(()).unwrap();
        drop(p);
        *ended.lock().unwrap() = Some(Instant::now());
        drop(first);
        restart.join().unwrap()
    });
    let ended = ended.lock().unwrap().expect("the first job ended");
    for (rank, r) in results.into_iter().enumerate() {
        let (built, _) = r.unwrap_or_else(|e| panic!("rank {rank}: {e}"));
        assert!(
            built >= ended,
            "rank {rank} started before the first job ended"
        );
    }
}

/// A second job on a checkpoint another job holds waits for it, then stops with a typed error
/// naming the holder (on every rank); once the holder is gone it starts.
#[test]
fn a_second_job_on_a_held_checkpoint_is_refused_by_name() {
    use std::time::Duration;
    let dir = tempfile::tempdir().unwrap();
    let (path, _) = a_checkpoint(dir.path());
    let holder = builder().checkpoint(&path).build().unwrap();
    let started = std::time::Instant::now();
    let e = builder()
        .checkpoint(&path)
        .checkpoint_lock_timeout(Duration::from_millis(200))
        .build()
        .unwrap_err();
    assert!(started.elapsed() >= Duration::from_millis(200));
    match &e {
        Op2Error::CheckpointInUse { holder, lock, .. } => {
            assert!(
                holder.contains(&format!("process {}", std::process::id())),
                "{e}"
            );
            assert!(lock.to_string_lossy().ends_with("good.ckpt.lock"), "{e}");
        }
        other => panic!("{other}"),
    }
    // Across ranks every rank stops, none waits for ever.
    let results = op2_test_support::on_ranks(2, Duration::from_secs(60), |_, comm| {
        builder()
            .checkpoint(&path)
            .checkpoint_lock_timeout(Duration::from_millis(100))
            .communicator(comm)
            .build()
            .map(|_| ())
    });
    assert!(
        matches!(results[0], Err(Op2Error::CheckpointInUse { .. })),
        "{:?}",
        results[0]
    );
    assert!(results[1].is_err(), "rank 1 must stop too");
    drop(holder);
    builder().checkpoint(&path).build().unwrap();
}
