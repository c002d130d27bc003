//! The communicator seam: what distributed execution needs from a message-passing layer — rank
//! and size, reductions, all-to-all, non-blocking exchanges whose buffers the handle owns — with
//! a one-process implementation ([`SelfCommunicator`], every runtime's default) and an in-process
//! one whose ranks are threads ([`thread_communicators`]), so distributed execution is tested
//! without `mpirun`. The MPI implementation lives in `op2-mpi`.

use crate::model::dtype::DType;
use crate::model::error::{Op2Error, Result};
use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Condvar, Mutex};
use std::time::{Duration, Instant};

/// How values are combined across ranks.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ReduceOp {
    /// Sum (integers wrap, as the C they stand for does).
    Sum,
    /// Minimum.
    Min,
    /// Maximum.
    Max,
}

/// A reduction in flight; [`PendingReduction::wait`] gives the combined values.
pub trait PendingReduction: Send {
    /// Waits for every rank's values and returns the combination (the same bytes on every rank).
    fn wait(self: Box<Self>) -> Result<Vec<u8>>;
}

/// An exchange in flight: it owns its send and receive buffers until [`PendingExchange::wait`].
pub trait PendingExchange: Send {
    /// Waits for every message; returns the received buffers in the order they were asked for.
    fn wait(self: Box<Self>) -> Result<Vec<Vec<u8>>>;
}

/// A message-passing layer as distributed execution uses it. Every rank calls the collective
/// operations in the same order.
pub trait Communicator: Send + Sync + fmt::Debug {
    /// This process's rank, `0..size`.
    fn rank(&self) -> usize;

    /// Number of ranks.
    fn size(&self) -> usize;

    /// Starts combining `values` (elements of `dtype`) with every rank's under `op`. The result
    /// is combined in rank order, so the same number of ranks always gives the same bits.
    fn begin_all_reduce(
        &self,
        values: Vec<u8>,
        dtype: DType,
        op: ReduceOp,
    ) -> Result<Box<dyn PendingReduction>>;

    /// Combines `values` across ranks in place (every rank gets the result).
    fn all_reduce(&self, values: &mut [u8], dtype: DType, op: ReduceOp) -> Result<()> {
        let combined = self.begin_all_reduce(values.to_vec(), dtype, op)?.wait()?;
        values.copy_from_slice(&combined);
        Ok(())
    }

    /// Combines `values` across ranks in place, as [`Communicator::all_reduce`] does bytes (for
    /// timings and counters: every rank must pass the same number of values).
    fn all_reduce_f64(&self, values: &mut [f64], op: ReduceOp) -> Result<()> {
        let mut bytes: Vec<u8> = values.iter().flat_map(|v| v.to_ne_bytes()).collect();
        self.all_reduce(&mut bytes, DType::F64, op)?;
        for (v, b) in values.iter_mut().zip(bytes.chunks_exact(8)) {
            *v = f64::from_ne_bytes(b.try_into().expect("8 bytes"));
        }
        Ok(())
    }

    /// The lowest rank for which `failed` is true, the same on every rank (`None` when none
    /// failed): how ranks agree to stop together after a step only some may fail (reading their
    /// part of a file, writing output), instead of leaving the others waiting in the next
    /// collective. Collective.
    fn first_failed_rank(&self, failed: bool) -> Result<Option<usize>> {
        let mut v = [if failed {
            self.rank() as f64
        } else {
            f64::INFINITY
        }];
        self.all_reduce_f64(&mut v, ReduceOp::Min)?;
        Ok(v[0].is_finite().then_some(v[0] as usize))
    }

    /// Sends `sends[r]` to rank `r` (one per rank) and returns what each rank sent here.
    fn all_to_all_v(&self, sends: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>>;

    /// Starts gathering `values` (the same length on every rank) from every rank; the handle
    /// gives every rank's values in rank order. A loop's reductions travel together this way, one
    /// message for all its Globals whatever their types and operations. The default waits at
    /// once (through [`Communicator::all_to_all_v`]); layers that can should not.
    fn begin_all_gather(&self, values: Vec<u8>) -> Result<Box<dyn PendingExchange>> {
        let len = values.len();
        let got = self.all_to_all_v(vec![values; self.size()])?;
        for (from, v) in got.iter().enumerate() {
            check_length(from, len, v.len())?;
        }
        Ok(Box::new(Ready(got)))
    }

    /// Starts sending each `(rank, bytes)` of `sends` and receiving `(rank, bytes)` of
    /// `receives` (posted before anything is waited for); the handle owns the buffers. Not a
    /// collective: messages match per pair of ranks, in the order each pair posts them (MPI's
    /// rule), so a rank with nothing to exchange with some rank leaves it out, and ranks that take
    /// no part in an exchange do not call this at all. An implementation that numbers exchanges
    /// across all ranks would deadlock there.
    fn begin_exchange(
        &self,
        sends: Vec<(usize, Vec<u8>)>,
        receives: Vec<(usize, usize)>,
    ) -> Result<Box<dyn PendingExchange>>;

    /// The communicator as `Any`, where its layer lets libraries reach the concrete type (a
    /// partitioner that calls MPI itself needs the MPI communicator behind it). `None` by
    /// default.
    fn as_any(&self) -> Option<&dyn std::any::Any> {
        None
    }

    /// Waits until every rank reaches the barrier.
    fn barrier(&self) -> Result<()> {
        self.all_to_all_v(vec![Vec::new(); self.size()]).map(drop)
    }
}

/// Combines `b` into `a` (elements of `dtype`) under `op`. Complex values combine part by part
/// (a sum; MIN and MAX on them are refused before any loop runs).
pub fn combine(a: &mut [u8], b: &[u8], dtype: DType, op: ReduceOp) {
    macro_rules! fold {
        ($t:ty, $add:expr) => {{
            let size = std::mem::size_of::<$t>();
            for (x, y) in a.chunks_exact_mut(size).zip(b.chunks_exact(size)) {
                let (xv, yv) = (
                    <$t>::from_ne_bytes(x.try_into().unwrap()),
                    <$t>::from_ne_bytes(y.try_into().unwrap()),
                );
                let r = match op {
                    ReduceOp::Sum => $add(xv, yv),
                    ReduceOp::Min => {
                        if yv < xv {
                            yv
                        } else {
                            xv
                        }
                    }
                    ReduceOp::Max => {
                        if yv > xv {
                            yv
                        } else {
                            xv
                        }
                    }
                };
                x.copy_from_slice(&r.to_ne_bytes());
            }
        }};
    }
    match dtype {
        DType::F64 => fold!(f64, |x: f64, y: f64| x + y),
        DType::F32 => fold!(f32, |x: f32, y: f32| x + y),
        DType::I32 => fold!(i32, i32::wrapping_add),
        DType::U32 => fold!(u32, u32::wrapping_add),
        DType::I64 => fold!(i64, i64::wrapping_add),
        DType::U64 => fold!(u64, u64::wrapping_add),
        DType::C64 => fold!(f32, |x: f32, y: f32| x + y),
        DType::C128 => fold!(f64, |x: f64, y: f64| x + y),
    }
}

/// The communicator of a program that runs as one process: rank 0 of 1.
#[derive(Debug, Clone, Copy, Default)]
pub struct SelfCommunicator;

struct Ready<T>(T);

impl PendingReduction for Ready<Vec<u8>> {
    fn wait(self: Box<Self>) -> Result<Vec<u8>> {
        Ok(self.0)
    }
}

impl PendingExchange for Ready<Vec<Vec<u8>>> {
    fn wait(self: Box<Self>) -> Result<Vec<Vec<u8>>> {
        Ok(self.0)
    }
}

fn bad_rank(rank: usize, size: usize) -> Op2Error {
    Op2Error::Communication {
        reason: format!("rank {rank} named, but there are {size}"),
    }
}

impl Communicator for SelfCommunicator {
    fn rank(&self) -> usize {
        0
    }

    fn size(&self) -> usize {
        1
    }

    fn begin_all_reduce(
        &self,
        values: Vec<u8>,
        _dtype: DType,
        _op: ReduceOp,
    ) -> Result<Box<dyn PendingReduction>> {
        Ok(Box::new(Ready(values)))
    }

    fn all_to_all_v(&self, sends: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>> {
        if sends.len() != 1 {
            return Err(bad_rank(sends.len().saturating_sub(1), 1));
        }
        Ok(sends)
    }

    fn begin_exchange(
        &self,
        sends: Vec<(usize, Vec<u8>)>,
        receives: Vec<(usize, usize)>,
    ) -> Result<Box<dyn PendingExchange>> {
        // Messages to oneself arrive at once, in order.
        let mut mine: Vec<Vec<u8>> = Vec::new();
        for (rank, bytes) in sends {
            if rank != 0 {
                return Err(bad_rank(rank, 1));
            }
            mine.push(bytes);
        }
        let mut got = Vec::with_capacity(receives.len());
        let mut queue = mine.into_iter();
        for (rank, bytes) in receives {
            if rank != 0 {
                return Err(bad_rank(rank, 1));
            }
            let m = queue.next().ok_or_else(|| Op2Error::Communication {
                reason: "a receive from rank 0 with no matching send".into(),
            })?;
            check_length(0, bytes, m.len())?;
            got.push(m);
        }
        Ok(Box::new(Ready(got)))
    }
}

fn check_length(from: usize, expected: usize, got: usize) -> Result<()> {
    if expected != got {
        return Err(Op2Error::Communication {
            reason: format!("expected {expected} bytes from rank {from}, got {got}"),
        });
    }
    Ok(())
}

/// A message between simulated ranks: what it is for, and its bytes.
type Tag = (&'static str, u64);

#[derive(Default)]
struct Mailbox {
    /// Messages by (sender, tag), in arrival order.
    messages: HashMap<(usize, Tag), Vec<Vec<u8>>>,
}

struct World {
    boxes: Vec<(Mutex<Mailbox>, Condvar)>,
    timeout: Duration,
}

impl World {
    fn send(&self, from: usize, to: usize, tag: Tag, bytes: Vec<u8>) {
        let (m, cv) = &self.boxes[to];
        m.lock()
            .unwrap_or_else(|e| e.into_inner())
            .messages
            .entry((from, tag))
            .or_default()
            .push(bytes);
        cv.notify_all();
    }

    fn receive(&self, me: usize, from: usize, tag: Tag) -> Result<Vec<u8>> {
        let (m, cv) = &self.boxes[me];
        let deadline = Instant::now() + self.timeout;
        let mut mailbox = m.lock().unwrap_or_else(|e| e.into_inner());
        loop {
            if let Some(q) = mailbox.messages.get_mut(&(from, tag)) {
                if !q.is_empty() {
                    return Ok(q.remove(0));
                }
            }
            let now = Instant::now();
            if now >= deadline {
                return Err(Op2Error::Communication {
                    reason: format!(
                        "rank {me} waited {:?} for `{}` #{} from rank {from}: a collective called \
                         on some ranks only, or ranks that declared different things",
                        self.timeout, tag.0, tag.1
                    ),
                });
            }
            mailbox = cv
                .wait_timeout(mailbox, deadline - now)
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }
}

/// One simulated rank of a group made by [`thread_communicators`]: every rank runs on a thread
/// of one process, messages go through shared mailboxes. A receive that waits longer than the
/// group's timeout is an [`Op2Error::Communication`], not a hang.
pub struct ThreadCommunicator {
    rank: usize,
    world: Arc<World>,
    /// Sequence numbers of this rank's collectives, per kind (every rank counts alike, as it
    /// calls them in the same order).
    counters: Mutex<HashMap<&'static str, u64>>,
    /// Point-to-point message counts per (direction, peer rank).
    pairs: Mutex<HashMap<(&'static str, usize), u64>>,
}

impl fmt::Debug for ThreadCommunicator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "ThreadCommunicator(rank {} of {})",
            self.rank,
            self.world.boxes.len()
        )
    }
}

/// `size` communicating ranks for threads of one process; a receive gives up after `timeout`.
pub fn thread_communicators(size: usize, timeout: Duration) -> Vec<ThreadCommunicator> {
    let world = Arc::new(World {
        boxes: (0..size.max(1))
            .map(|_| (Mutex::new(Mailbox::default()), Condvar::new()))
            .collect(),
        timeout,
    });
    (0..size.max(1))
        .map(|rank| ThreadCommunicator {
            rank,
            world: world.clone(),
            counters: Mutex::new(HashMap::new()),
            pairs: Mutex::new(HashMap::new()),
        })
        .collect()
}

impl ThreadCommunicator {
    fn next(&self, kind: &'static str) -> Tag {
        let mut c = self.counters.lock().unwrap_or_else(|e| e.into_inner());
        let n = c.entry(kind).or_insert(0);
        *n += 1;
        (kind, *n)
    }

    /// The tag of the next point-to-point message sent to (`direction` "exchange to") or
    /// received from ("exchange from") `peer`: numbered per pair, so the sender's n-th message
    /// to a rank is that rank's n-th receive from it.
    fn next_between(&self, direction: &'static str, peer: usize) -> Tag {
        let mut c = self.pairs.lock().unwrap_or_else(|e| e.into_inner());
        let n = c.entry((direction, peer)).or_insert(0);
        *n += 1;
        ("exchange", *n)
    }
}

struct ThreadReduction {
    rank: usize,
    size: usize,
    world: Arc<World>,
    tag: Tag,
    mine: Vec<u8>,
    dtype: DType,
    op: ReduceOp,
}

impl PendingReduction for ThreadReduction {
    fn wait(self: Box<Self>) -> Result<Vec<u8>> {
        // Combined in rank order on every rank: the same bits everywhere.
        let mut total: Option<Vec<u8>> = None;
        for from in 0..self.size {
            let v = if from == self.rank {
                self.mine.clone()
            } else {
                self.world.receive(self.rank, from, self.tag)?
            };
            check_length(from, self.mine.len(), v.len())?;
            match &mut total {
                None => total = Some(v),
                Some(t) => combine(t, &v, self.dtype, self.op),
            }
        }
        Ok(total.unwrap_or_default())
    }
}

struct ThreadGather {
    rank: usize,
    size: usize,
    world: Arc<World>,
    tag: Tag,
    mine: Vec<u8>,
}

impl PendingExchange for ThreadGather {
    fn wait(self: Box<Self>) -> Result<Vec<Vec<u8>>> {
        (0..self.size)
            .map(|from| {
                if from == self.rank {
                    return Ok(self.mine.clone());
                }
                let v = self.world.receive(self.rank, from, self.tag)?;
                check_length(from, self.mine.len(), v.len())?;
                Ok(v)
            })
            .collect()
    }
}

struct ThreadExchange {
    rank: usize,
    world: Arc<World>,
    /// Per receive: the sender, the bytes expected, the message's tag.
    receives: Vec<(usize, usize, Tag)>,
}

impl PendingExchange for ThreadExchange {
    fn wait(self: Box<Self>) -> Result<Vec<Vec<u8>>> {
        self.receives
            .iter()
            .map(|&(from, bytes, tag)| {
                let m = self.world.receive(self.rank, from, tag)?;
                check_length(from, bytes, m.len())?;
                Ok(m)
            })
            .collect()
    }
}

impl Communicator for ThreadCommunicator {
    fn rank(&self) -> usize {
        self.rank
    }

    fn size(&self) -> usize {
        self.world.boxes.len()
    }

    fn begin_all_reduce(
        &self,
        values: Vec<u8>,
        dtype: DType,
        op: ReduceOp,
    ) -> Result<Box<dyn PendingReduction>> {
        let tag = self.next("all_reduce");
        for to in (0..self.size()).filter(|&r| r != self.rank) {
            self.world.send(self.rank, to, tag, values.clone());
        }
        Ok(Box::new(ThreadReduction {
            rank: self.rank,
            size: self.size(),
            world: self.world.clone(),
            tag,
            mine: values,
            dtype,
            op,
        }))
    }

    fn begin_all_gather(&self, values: Vec<u8>) -> Result<Box<dyn PendingExchange>> {
        let tag = self.next("all_gather");
        for to in (0..self.size()).filter(|&r| r != self.rank) {
            self.world.send(self.rank, to, tag, values.clone());
        }
        Ok(Box::new(ThreadGather {
            rank: self.rank,
            size: self.size(),
            world: self.world.clone(),
            tag,
            mine: values,
        }))
    }

    fn all_to_all_v(&self, sends: Vec<Vec<u8>>) -> Result<Vec<Vec<u8>>> {
        if sends.len() != self.size() {
            return Err(bad_rank(sends.len(), self.size()));
        }
        let tag = self.next("all_to_all");
        let mut mine = Vec::new();
        for (to, bytes) in sends.into_iter().enumerate() {
            if to == self.rank {
                mine = bytes;
            } else {
                self.world.send(self.rank, to, tag, bytes);
            }
        }
        (0..self.size())
            .map(|from| {
                if from == self.rank {
                    Ok(std::mem::take(&mut mine))
                } else {
                    self.world.receive(self.rank, from, tag)
                }
            })
            .collect()
    }

    fn begin_exchange(
        &self,
        sends: Vec<(usize, Vec<u8>)>,
        receives: Vec<(usize, usize)>,
    ) -> Result<Box<dyn PendingExchange>> {
        let size = self.size();
        let ranks = sends
            .iter()
            .map(|(r, _)| *r)
            .chain(receives.iter().map(|(r, _)| *r));
        for r in ranks {
            if r >= size {
                return Err(bad_rank(r, size));
            }
        }
        // Point-to-point messages match as MPI's do: in the order each pair of ranks posts them,
        // whatever else either rank exchanges with others meanwhile (a rank with no neighbours
        // for a set takes no part in that set's exchanges).
        for (to, bytes) in sends {
            let tag = self.next_between("exchange to", to);
            self.world.send(self.rank, to, tag, bytes);
        }
        let receives = receives
            .into_iter()
            .map(|(from, bytes)| (from, bytes, self.next_between("exchange from", from)))
            .collect();
        Ok(Box::new(ThreadExchange {
            rank: self.rank,
            world: self.world.clone(),
            receives,
        }))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn f64s(v: &[f64]) -> Vec<u8> {
        v.iter().flat_map(|x| x.to_ne_bytes()).collect()
    }

    /// What each rank saw: its reduction, its exchange's messages, its all-to-all's.
    type Seen = (Vec<u8>, Vec<Vec<u8>>, Vec<Vec<u8>>);

    #[test]
    fn thread_ranks_reduce_and_exchange() {
        let comms = thread_communicators(3, Duration::from_secs(10));
        let results: Vec<Seen> = std::thread::scope(|s| {
            let handles: Vec<_> = comms
                .iter()
                .map(|c| {
                    s.spawn(move || {
                        let r = c.rank();
                        let mut v = f64s(&[r as f64 + 1.0, -(r as f64)]);
                        c.all_reduce(&mut v, DType::F64, ReduceOp::Sum).unwrap();
                        // Ring: send to the next rank, receive from the previous.
                        let next = (r + 1) % 3;
                        let prev = (r + 2) % 3;
                        let pending = c
                            .begin_exchange(
                                vec![(next, vec![r as u8; r + 1])],
                                vec![(prev, prev + 1)],
                            )
                            .unwrap();
                        let mut m = f64s(&[r as f64]);
                        c.all_reduce(&mut m, DType::F64, ReduceOp::Max).unwrap();
                        let got = pending.wait().unwrap();
                        let all = c
                            .all_to_all_v((0..3).map(|to| vec![(10 * r + to) as u8]).collect())
                            .unwrap();
                        (v, got, all)
                    })
                })
                .collect();
            handles.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for (r, (v, got, all)) in results.iter().enumerate() {
            assert_eq!(v, &f64s(&[6.0, -3.0]));
            let prev = (r + 2) % 3;
            assert_eq!(got, &vec![vec![prev as u8; prev + 1]]);
            assert_eq!(
                all,
                &(0..3)
                    .map(|from| vec![(10 * from + r) as u8])
                    .collect::<Vec<_>>()
            );
        }
    }

    #[test]
    fn a_collective_on_one_rank_only_times_out() {
        let comms = thread_communicators(2, Duration::from_millis(200));
        let mut v = f64s(&[1.0]);
        assert!(matches!(
            comms[0].all_reduce(&mut v, DType::F64, ReduceOp::Sum),
            Err(Op2Error::Communication { .. })
        ));
    }

    #[test]
    fn one_process_is_its_own_world() {
        let c = SelfCommunicator;
        let mut v = f64s(&[2.5]);
        c.all_reduce(&mut v, DType::F64, ReduceOp::Min).unwrap();
        assert_eq!(v, f64s(&[2.5]));
        assert!(c.begin_exchange(vec![(1, vec![])], vec![]).is_err());
    }

    #[test]
    fn exchanges_match_per_pair_of_ranks_like_mpi() {
        // Ranks 0 and 1 exchange, then 1 and 2 (rank 0 takes no part), then 0 and 1 again:
        // rank 0's second exchange is rank 1's third, and they must still meet.
        let comms = thread_communicators(3, Duration::from_secs(10));
        let got: Vec<Vec<Vec<u8>>> = std::thread::scope(|s| {
            let hs: Vec<_> = comms
                .iter()
                .map(|c| {
                    s.spawn(move || {
                        let r = c.rank();
                        let mut seen = Vec::new();
                        let mut swap = |peer: usize, round: u8| {
                            let p = c
                                .begin_exchange(vec![(peer, vec![round, r as u8])], vec![(peer, 2)])
                                .unwrap();
                            seen.extend(p.wait().unwrap());
                        };
                        if r < 2 {
                            swap(1 - r, 1);
                        }
                        if r > 0 {
                            swap(3 - r, 2);
                        }
                        if r < 2 {
                            swap(1 - r, 3);
                        }
                        seen
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(got[0], [vec![1, 1], vec![3, 1]]);
        assert_eq!(got[1], [vec![1, 0], vec![2, 2], vec![3, 0]]);
        assert_eq!(got[2], [vec![2, 1]]);
    }

    #[test]
    fn f64_reductions_combine_every_rank() {
        let comms = thread_communicators(3, Duration::from_secs(10));
        let got: Vec<Vec<f64>> = std::thread::scope(|s| {
            let hs: Vec<_> = comms
                .iter()
                .map(|c| {
                    s.spawn(move || {
                        let r = c.rank() as f64;
                        let mut v = [r, -r, 0.5];
                        c.all_reduce_f64(&mut v, ReduceOp::Max).unwrap();
                        let mut w = [r, 1.0];
                        c.all_reduce_f64(&mut w, ReduceOp::Sum).unwrap();
                        v.iter().chain(&w).copied().collect()
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        for g in got {
            assert_eq!(g, [2.0, 0.0, 0.5, 3.0, 3.0]);
        }
    }

    #[test]
    fn every_rank_learns_the_first_that_failed() {
        let comms = thread_communicators(3, Duration::from_secs(10));
        let got: Vec<(Option<usize>, Option<usize>)> = std::thread::scope(|s| {
            let hs: Vec<_> = comms
                .iter()
                .map(|c| {
                    s.spawn(move || {
                        let none = c.first_failed_rank(false).unwrap();
                        (none, c.first_failed_rank(c.rank() >= 1).unwrap())
                    })
                })
                .collect();
            hs.into_iter().map(|h| h.join().unwrap()).collect()
        });
        assert_eq!(got, vec![(None, Some(1)); 3]);
    }
}
