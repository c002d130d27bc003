//! The MPI communicator: op2-core's [`Communicator`] over rsmpi (Open MPI), with every wait
//! bounded by a timeout so that a collective some ranks never call is an error, not a hang.
//!
//! rsmpi ties a pending request to the buffers it borrows and aborts the process when one is
//! dropped unfinished. Here each operation starts inside a short rsmpi scope and is turned into
//! its raw `MPI_Request` at once; the buffers are heap blocks owned by the pending object, which
//! polls with `MPI_Test` until done. On a timeout the request and its buffers are leaked on
//! purpose: MPI may still write into them, so freeing them would be unsound.

use crate::error::{MpiError, Result};
use mpi::Count;
use mpi::collective::CommunicatorCollectives as _;
use mpi::datatype::{Partition, PartitionMut};
use mpi::ffi;
use mpi::point_to_point::{Destination as _, Source as _};
use mpi::topology::Communicator as _;
use op2_core::comm::{Communicator, PendingExchange, PendingReduction, ReduceOp, combine};
use op2_core::{DType, Op2Error};
use std::fmt;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

/// Whether an MPI launcher started this process (Open MPI's `mpirun` sets
/// `OMPI_COMM_WORLD_SIZE`; MPICH's and PMIx-based launchers `PMI_SIZE` or `PMIX_RANK`): programs
/// that run either way decide with it whether to call [`Mpi::init`].
pub fn launched_by_mpirun() -> bool {
    ["OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_RANK"]
        .iter()
        .any(|v| std::env::var_os(v).is_some())
}

/// How many ranks MPI's world has when MPI is running in this process (started by op2-mpi or by
/// another library, such as mpi4py or petsc4py), else `None`.
pub fn running_world_size() -> Option<usize> {
    if !mpi::environment::is_initialized() || mpi::environment::is_finalized() {
        return None;
    }
    Some(mpi::topology::SimpleCommunicator::world().size() as usize)
}

/// The tag of halo-exchange messages. MPI matches messages between two ranks with one tag in the
/// order they were posted, which is the `Communicator` contract: each pair of ranks posts its
/// messages to each other in the same order (ranks need not take part in every exchange).
const HALO_TAG: i32 = 7301;

/// How long a rank waits for the others before giving up, unless `OP2_MPI_TIMEOUT` (seconds)
/// says otherwise.
const DEFAULT_TIMEOUT: Duration = Duration::from_secs(300);

/// MPI for this process: started by [`Mpi::init`], finalised when dropped. Keep it alive in
/// `main` for as long as anything communicates.
pub struct Mpi {
    world: Arc<MpiCommunicator>,
    // Dropped last: finalises MPI. `None` when another library started MPI ([`Mpi::attach`]):
    // finalising is then that library's.
    _universe: Option<mpi::environment::Universe>,
}

impl fmt::Debug for Mpi {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Mpi").field("world", &self.world).finish()
    }
}

impl Mpi {
    /// Starts MPI (`MPI_Init_thread`, serialised calls: the runtime may communicate from any
    /// thread, one call at a time). Fails when MPI was started before in this process.
    pub fn init() -> Result<Mpi> {
        let (universe, threading) = mpi::initialize_with_threading(mpi::Threading::Serialized)
            .ok_or_else(|| MpiError::Init("MPI is already initialised in this process".into()))?;
        Self::with_world(Some(universe), threading)
    }

    /// MPI's world when another library (mpi4py, a host application) started MPI in this
    /// process: op2-mpi communicates on it and leaves finalising to that library. Fails when
    /// MPI was not started, was finalised, or offers less than serialised threading.
    pub fn attach() -> Result<Mpi> {
        if !mpi::environment::is_initialized() || mpi::environment::is_finalized() {
            return Err(MpiError::Init(
                "MPI is not running in this process: nothing to attach to".into(),
            ));
        }
        Self::with_world(None, mpi::environment::threading_support())
    }

    /// Starts MPI ([`Mpi::init`]), or attaches to it ([`Mpi::attach`]) when another library
    /// started it before.
    pub fn init_or_attach() -> Result<Mpi> {
        if mpi::environment::is_initialized() {
            Self::attach()
        } else {
            Self::init()
        }
    }

    fn with_world(
        universe: Option<mpi::environment::Universe>,
        threading: mpi::Threading,
    ) -> Result<Mpi> {
        if threading < mpi::Threading::Serialized {
            let who = if universe.is_some() {
                "the MPI library offers"
            } else {
                // PETSc starts MPI funnelled when it starts first; mpi4py asks for Multiple.
                "another library (petsc4py?) started MPI with"
            };
            return Err(MpiError::Init(format!(
                "{who} threading level {threading:?}; op2-mpi needs Serialized (start MPI \
                 through mpi4py, `from mpi4py import MPI`, before petsc4py)"
            )));
        }
        let timeout = std::env::var("OP2_MPI_TIMEOUT")
            .ok()
            .and_then(|s| s.trim().parse::<f64>().ok())
            .filter(|s| s.is_finite() && *s > 0.0)
            .map_or(DEFAULT_TIMEOUT, Duration::from_secs_f64);
        let world = mpi::topology::SimpleCommunicator::world();
        let world = Arc::new(MpiCommunicator {
            inner: Arc::new(Inner {
                rank: world.rank() as usize,
                size: world.size() as usize,
                comm: Mutex::new(World(world)),
                timeout,
                max_message: std::env::var("OP2_MPI_MAX_MESSAGE")
                    .ok()
                    .and_then(|s| s.trim().parse::<usize>().ok())
                    .filter(|&n| n > 0)
                    .map_or(i32::MAX as usize, |n| n.min(i32::MAX as usize)),
            }),
        });
        Ok(Mpi {
            world,
            _universe: universe,
        })
    }

    /// Whether this object started MPI and finalises it when dropped (not when another library
    /// started it: [`Mpi::attach`]).
    pub fn finalises(&self) -> bool {
        self._universe.is_some()
    }

    /// Every rank of the job (`MPI_COMM_WORLD`).
    pub fn world(&self) -> Arc<MpiCommunicator> {
        self.world.clone()
    }
}

/// `MPI_COMM_WORLD` behind a lock.
struct World(mpi::topology::SimpleCommunicator);

// SAFETY: MPI was initialised with (at least) serialised threading, and every MPI call made
// through a `World` holds the `Mutex` around it, so no two threads call MPI at once.
unsafe impl Send for World {}

/// The ranks of an MPI job as op2-core's [`Communicator`].
pub struct MpiCommunicator {
    inner: Arc<Inner>,
}

/// What pending operations share with their communicator.
struct Inner {
    rank: usize,
    size: usize,
    comm: Mutex<World>,
    timeout: Duration,
    /// The most bytes one rank sends or receives in one all-to-all round, and in one piece of a
    /// halo message: MPI's 32-bit count, or `OP2_MPI_MAX_MESSAGE` (bytes), which the tests set
    /// low to exercise the split.
    max_message: usize,
}

impl fmt::Debug for MpiCommunicator {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "MpiCommunicator(rank {} of {})",
            self.inner.rank, self.inner.size
        )
    }
}

fn comm_error(reason: String) -> Op2Error {
    Op2Error::Communication { reason }
}

fn count(len: usize, what: &str) -> op2_core::Result<Count> {
    Count::try_from(len).map_err(|_| {
        comm_error(format!(
            "{what} of {len} bytes exceeds MPI's 2 GiB message limit"
        ))
    })
}

/// How a message of `len` bytes is cut for MPI: pieces of at most `max` bytes, in order, and one
/// empty piece for an empty message (the receiver posts one receive for it).
fn pieces(len: usize, max: usize) -> impl Iterator<Item = std::ops::Range<usize>> {
    let max = max.max(1);
    (0..len.div_ceil(max).max(1)).map(move |k| k * max..((k + 1) * max).min(len))
}

/// A zeroed buffer of `len` bytes that is never empty: Open MPI refuses a collective whose send
/// and receive buffers are the same address, which two empty `Vec`s are (both dangling).
fn buffer(len: usize) -> Vec<u8> {
    vec![0u8; len.max(1)]
}

/// A started MPI operation: raw requests plus every buffer they use, owned until they finish.
struct InFlight {
    requests: Vec<ffi::MPI_Request>,
    /// Per request (where known): the bytes a receive must bring. MPI delivers a shorter
    /// message without complaint; ranks that disagree on a halo list are caught here.
    expect: Vec<Option<usize>>,
    /// Kept alive (and unmoved: heap blocks) until the requests finish.
    buffers: Vec<Vec<u8>>,
    /// Buffers of typed reductions (8-byte aligned for every element type).
    words: Vec<Vec<u64>>,
    counts: Vec<Vec<Count>>,
    what: &'static str,
    deadline: Instant,
    timeout: Duration,
}

// SAFETY: the raw requests are handles MPI lets any thread complete (threading is at least
// serialised, and tests happen under the communicator's lock).
unsafe impl Send for InFlight {}

impl InFlight {
    /// Polls until every request finished, or leaks everything and fails at the deadline.
    fn finish(&mut self, comm: &Inner) -> op2_core::Result<()> {
        let mut spins = 0u32;
        let mut short: Option<String> = None;
        loop {
            let mut done = 0;
            {
                let _lock = comm.lock();
                for (i, r) in self.requests.iter_mut().enumerate() {
                    if *r == unsafe { ffi::RSMPI_REQUEST_NULL } {
                        done += 1;
                        continue;
                    }
                    let mut flag = 0;
                    // SAFETY: a plain C struct MPI fills in.
                    let mut status: ffi::MPI_Status = unsafe { std::mem::zeroed() };
                    // SAFETY: `r` is a live request started by this object, whose buffers it
                    // still owns; MPI_Test sets it to MPI_REQUEST_NULL when it completes.
                    let rc = unsafe { ffi::MPI_Test(r, &mut flag, &mut status) };
                    if rc != 0 {
                        return Err(comm_error(format!(
                            "MPI_Test failed ({rc}) in {}",
                            self.what
                        )));
                    }
                    if flag != 0 {
                        done += 1;
                        if let Some(expected) = self.expect.get(i).copied().flatten() {
                            let mut got = 0;
                            // SAFETY: the status of the receive that just completed, of bytes.
                            unsafe { ffi::MPI_Get_count(&status, ffi::RSMPI_UINT8_T, &mut got) };
                            if got as usize != expected {
                                short.get_or_insert(format!(
                                    "{}: a message of {got} bytes where {expected} were expected \
                                     (ranks that disagree on what they exchange)",
                                    self.what
                                ));
                            }
                        }
                    }
                }
            }
            if done == self.requests.len() {
                self.requests.clear();
                return short.map_or(Ok(()), |why| Err(comm_error(why)));
            }
            if Instant::now() >= self.deadline {
                // MPI may still use the buffers and count arrays: never free them.
                std::mem::forget(std::mem::take(&mut self.buffers));
                std::mem::forget(std::mem::take(&mut self.words));
                std::mem::forget(std::mem::take(&mut self.counts));
                self.requests.clear();
                return Err(comm_error(format!(
                    "{} did not complete within {:?} (another rank never took part, or is stuck)",
                    self.what, self.timeout
                )));
            }
            spins += 1;
            if spins < 200 {
                std::hint::spin_loop();
            } else {
                std::thread::sleep(Duration::from_micros(if spins < 2000 { 20 } else { 500 }));
            }
        }
    }
}

impl Drop for InFlight {
    fn drop(&mut self) {
        if !self.requests.is_empty() {
            // Dropped unfinished (an error elsewhere): the buffers must outlive MPI's use.
            std::mem::forget(std::mem::take(&mut self.buffers));
            std::mem::forget(std::mem::take(&mut self.words));
            std::mem::forget(std::mem::take(&mut self.counts));
        }
    }
}

impl Inner {
    fn lock(&self) -> MutexGuard<'_, World> {
        self.comm.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn in_flight(&self, what: &'static str) -> InFlight {
        InFlight {
            requests: Vec::new(),
            expect: Vec::new(),
            buffers: Vec::new(),
            words: Vec::new(),
            counts: Vec::new(),
            what,
            deadline: Instant::now() + self.timeout,
            timeout: self.timeout,
        }
    }

    /// A reduction MPI combines itself (`MPI_Iallreduce`), for integers: the result does not
    /// depend on the order of combining, so it needs no gather of every rank's values.
    fn native_all_reduce(
        &self,
        values: &[u8],
        dtype: DType,
        reduce: ReduceOp,
    ) -> op2_core::Result<InFlight> {
        let len = values.len();
        count(len, "all-reduce")?;
        let mut send = vec![0u64; len.div_ceil(8).max(1)];
        bytemuck::cast_slice_mut::<u64, u8>(&mut send)[..len].copy_from_slice(values);
        let mut received = vec![0u64; send.len()];
        let mut op = self.in_flight("all-reduce");
        let operation = match reduce {
            ReduceOp::Sum => mpi::collective::SystemOperation::sum(),
            ReduceOp::Min => mpi::collective::SystemOperation::min(),
            ReduceOp::Max => mpi::collective::SystemOperation::max(),
        };
        {
            let world = self.lock();
            macro_rules! start {
                ($t:ty) => {{
                    let n = len / std::mem::size_of::<$t>();
                    let s: &[$t] = &bytemuck::cast_slice::<u64, $t>(&send)[..n];
                    let r: &mut [$t] = &mut bytemuck::cast_slice_mut::<u64, $t>(&mut received)[..n];
                    mpi::request::scope(|scope| {
                        let request = world.0.immediate_all_reduce_into(scope, s, r, operation);
                        // SAFETY: as in `all_gather` (the word buffers move into `op`).
                        op.requests.push(unsafe { request.into_raw() }.0);
                    });
                }};
            }
            match dtype {
                DType::F64 => start!(f64),
                DType::F32 => start!(f32),
                DType::I32 => start!(i32),
                DType::U32 => start!(u32),
                DType::I64 => start!(i64),
                DType::U64 => start!(u64),
                // Complex values go through the gather (`begin_all_reduce`); a sum of them is
                // the sum of their parts all the same.
                DType::C64 => start!(f32),
                DType::C128 => start!(f64),
            }
        }
        op.words.push(send);
        op.words.push(received);
        Ok(op)
    }

    /// One `MPI_Ialltoallv` of `sends`, receiving `receive_lens[p]` bytes from each rank `p`.
    fn all_to_all_round(
        &self,
        sends: Vec<Vec<u8>>,
        receive_lens: &[usize],
    ) -> op2_core::Result<Vec<Vec<u8>>> {
        let send_counts = sends
            .iter()
            .map(|s| count(s.len(), "all-to-all"))
            .collect::<op2_core::Result<Vec<Count>>>()?;
        let receive_counts = receive_lens
            .iter()
            .map(|&n| count(n, "all-to-all"))
            .collect::<op2_core::Result<Vec<Count>>>()?;
        let displacements = |c: &[Count]| -> op2_core::Result<Vec<Count>> {
            let mut at = 0usize;
            c.iter()
                .map(|&n| {
                    let d = count(at, "all-to-all")?;
                    at += n as usize;
                    Ok(d)
                })
                .collect()
        };
        let send_displs = displacements(&send_counts)?;
        let receive_displs = displacements(&receive_counts)?;
        let total: usize = receive_lens.iter().sum();
        count(total, "all-to-all")?;
        count(sends.iter().map(Vec::len).sum(), "all-to-all")?;
        let mut send_buf: Vec<u8> = sends.concat();
        // The pieces are copied: free them before the receive buffer is allocated.
        drop(sends);
        if send_buf.is_empty() {
            send_buf.push(0);
        }
        let mut receive_buf = buffer(total);
        let mut op = self.in_flight("all-to-all");
        {
            let world = self.lock();
            let send = Partition::new(&send_buf[..], &send_counts[..], &send_displs[..]);
            let mut receive = PartitionMut::new(
                &mut receive_buf[..],
                &receive_counts[..],
                &receive_displs[..],
            );
            mpi::request::scope(|scope| {
                let request =
                    world
                        .0
                        .immediate_all_to_all_varcount_into(scope, &send, &mut receive);
                // SAFETY: as in `all_gather`; the count arrays move into `op` too.
                op.requests.push(unsafe { request.into_raw() }.0);
            });
        }
        op.buffers.push(send_buf);
        op.buffers.push(receive_buf);
        op.counts = vec![send_counts, receive_counts, send_displs, receive_displs];
        op.finish(self)?;
        let receive_buf = op.buffers.pop().unwrap_or_default();
        // The send buffer goes before the pieces are copied out.
        drop(op);
        let mut out = Vec::with_capacity(self.size);
        let mut at = 0;
        for &n in receive_lens {
            out.push(receive_buf[at..at + n].to_vec());
            at += n;
        }
        Ok(out)
    }

    /// Each rank's `values` (all the same length), concatenated in rank order.
    fn all_gather(&self, values: Vec<u8>, what: &'static str) -> op2_core::Result<InFlight> {
        count(values.len() * self.size, what)?;
        let mut op = self.in_flight(what);
        let len = values.len();
        let mut values = values;
        values.resize(len.max(1), 0);
        let mut received = buffer(len * self.size);
        {
            let world = self.lock();
            mpi::request::scope(|scope| {
                let request = world.0.immediate_all_gather_into(
                    scope,
                    &values[..len],
                    &mut received[..len * self.size],
                );
                // SAFETY: the buffers move into `op` (heap blocks: their addresses stay) and
                // live until the request finishes or are leaked.
                op.requests.push(unsafe { request.into_raw() }.0);
            });
        }
        op.buffers.push(values);
        op.buffers.push(received);
        Ok(op)
    }
}

/// An all-reduce in flight: every rank's values gathered, combined in rank order at the end
/// (so the same number of ranks always gives the same bits).
/// An all-reduce: every rank's values gathered, then combined in rank order here (the same
/// bits on every rank).
struct MpiReduction {
    gather: MpiGather,
    dtype: DType,
    reduce: ReduceOp,
}

/// A reduction MPI combines itself.
struct NativeReduction {
    comm: Arc<Inner>,
    len: usize,
    op: InFlight,
}

impl PendingReduction for NativeReduction {
    fn wait(mut self: Box<Self>) -> op2_core::Result<Vec<u8>> {
        let comm = self.comm.clone();
        self.op.finish(&comm)?;
        let words = self.op.words.pop().unwrap_or_default();
        Ok(bytemuck::cast_slice::<u64, u8>(&words)[..self.len].to_vec())
    }
}

impl PendingReduction for MpiReduction {
    fn wait(self: Box<Self>) -> op2_core::Result<Vec<u8>> {
        let mut ranks = Box::new(self.gather).wait()?.into_iter();
        let mut result = ranks.next().unwrap_or_default();
        for values in ranks {
            combine(&mut result, &values, self.dtype, self.reduce);
        }
        Ok(result)
    }
}

/// Every rank's values of an all-gather, in rank order.
struct MpiGather {
    comm: Arc<Inner>,
    len: usize,
    op: InFlight,
}

impl PendingExchange for MpiGather {
    fn wait(mut self: Box<Self>) -> op2_core::Result<Vec<Vec<u8>>> {
        let comm = self.comm.clone();
        self.op.finish(&comm)?;
        let gathered = self.op.buffers.pop().unwrap_or_default();
        Ok((0..comm.size)
            .map(|r| gathered[r * self.len..(r + 1) * self.len].to_vec())
            .collect())
    }
}

struct MpiExchange {
    comm: Arc<Inner>,
    op: InFlight,
    receives: usize,
}

impl PendingExchange for MpiExchange {
    fn wait(mut self: Box<Self>) -> op2_core::Result<Vec<Vec<u8>>> {
        let comm = self.comm.clone();
        self.op.finish(&comm)?;
        let buffers = std::mem::take(&mut self.op.buffers);
        Ok(buffers.into_iter().take(self.receives).collect())
    }
}

impl MpiCommunicator {
    /// Runs `f` with the raw MPI communicator, holding the lock that serialises MPI calls (for
    /// C libraries that communicate themselves, such as PT-Scotch and ParMETIS).
    #[cfg(any(feature = "ptscotch", feature = "parmetis"))]
    pub(crate) fn with_raw<R>(&self, f: impl FnOnce(ffi::MPI_Comm) -> R) -> R {
        use mpi::raw::AsRaw as _;
        let world = self.inner.lock();
        f(world.0.as_raw())
    }
}

impl Communicator for MpiCommunicator {
    fn rank(&self) -> usize {
        self.inner.rank
    }

    fn as_any(&self) -> Option<&dyn std::any::Any> {
        Some(self)
    }

    fn size(&self) -> usize {
        self.inner.size
    }

    fn begin_all_reduce(
        &self,
        values: Vec<u8>,
        dtype: DType,
        op: ReduceOp,
    ) -> op2_core::Result<Box<dyn PendingReduction>> {
        // Floating-point values are combined here in rank order with op2-core's `combine`, so
        // that every rank gets the same bits as one process would (sums depend on the order;
        // MPI's minimum and maximum treat NaN and -0.0 their own way). Integers are exact in
        // any order: MPI combines them, without a gather of every rank's values. Complex values
        // are floating-point pairs.
        if !(dtype.is_float() || dtype.is_complex()) {
            return Ok(Box::new(NativeReduction {
                comm: self.inner.clone(),
                len: values.len(),
                op: self.inner.native_all_reduce(&values, dtype, op)?,
            }));
        }
        Ok(Box::new(MpiReduction {
            gather: MpiGather {
                comm: self.inner.clone(),
                len: values.len(),
                op: self.inner.all_gather(values, "all-reduce")?,
            },
            dtype,
            reduce: op,
        }))
    }

    fn begin_all_gather(&self, values: Vec<u8>) -> op2_core::Result<Box<dyn PendingExchange>> {
        Ok(Box::new(MpiGather {
            comm: self.inner.clone(),
            len: values.len(),
            op: self.inner.all_gather(values, "all-gather")?,
        }))
    }

    fn all_to_all_v(&self, sends: Vec<Vec<u8>>) -> op2_core::Result<Vec<Vec<u8>>> {
        let me = &*self.inner;
        if sends.len() != me.size {
            return Err(comm_error(format!(
                "all-to-all with {} buffers for {} ranks",
                sends.len(),
                me.size
            )));
        }
        // MPI counts bytes in 32-bit integers: per round each pair moves at most `chunk` bytes,
        // so that no rank sends or receives more than the limit in one round.
        let chunk = (me.max_message / me.size).max(1);
        let my_rounds = sends
            .iter()
            .map(|s| s.len().div_ceil(chunk))
            .max()
            .unwrap_or(0)
            .max(1);
        // First the sizes (and how many rounds each rank's largest message needs), then the bytes.
        let mut sizes = Vec::with_capacity(me.size * 16);
        for s in &sends {
            sizes.extend_from_slice(&(s.len() as u64).to_ne_bytes());
            sizes.extend_from_slice(&(my_rounds as u64).to_ne_bytes());
        }
        let mut counts_op = me.in_flight("all-to-all (sizes)");
        let mut received_sizes = vec![0u8; sizes.len()];
        {
            let world = me.lock();
            mpi::request::scope(|scope| {
                let request =
                    world
                        .0
                        .immediate_all_to_all_into(scope, &sizes[..], &mut received_sizes[..]);
                // SAFETY: as in `all_gather`.
                counts_op.requests.push(unsafe { request.into_raw() }.0);
            });
        }
        counts_op.buffers.push(sizes);
        counts_op.buffers.push(received_sizes);
        counts_op.finish(me)?;
        let received_sizes = counts_op.buffers.pop().unwrap_or_default();
        let words: Vec<usize> = received_sizes
            .chunks_exact(8)
            .map(|c| u64::from_ne_bytes(c.try_into().unwrap()) as usize)
            .collect();
        let receive_lens: Vec<usize> = words.iter().step_by(2).copied().collect();
        // Every rank sees every rank's round count: all agree on the largest.
        let rounds = words.iter().skip(1).step_by(2).copied().max().unwrap_or(1);
        if rounds <= 1 {
            return me.all_to_all_round(sends, &receive_lens);
        }
        let mut out: Vec<Vec<u8>> = receive_lens
            .iter()
            .map(|&n| Vec::with_capacity(n))
            .collect();
        for r in 0..rounds {
            let piece = |len: usize| (r * chunk).min(len)..((r + 1) * chunk).min(len);
            let pieces = sends.iter().map(|s| s[piece(s.len())].to_vec()).collect();
            let lens: Vec<usize> = receive_lens.iter().map(|&n| piece(n).len()).collect();
            for (o, got) in out.iter_mut().zip(me.all_to_all_round(pieces, &lens)?) {
                o.extend_from_slice(&got);
            }
        }
        Ok(out)
    }

    fn begin_exchange(
        &self,
        sends: Vec<(usize, Vec<u8>)>,
        receives: Vec<(usize, usize)>,
    ) -> op2_core::Result<Box<dyn PendingExchange>> {
        let me = &*self.inner;
        for rank in sends
            .iter()
            .map(|(r, _)| *r)
            .chain(receives.iter().map(|(r, _)| *r))
        {
            if rank >= me.size {
                return Err(comm_error(format!(
                    "rank {rank} named, but there are {}",
                    me.size
                )));
            }
        }
        // A message longer than MPI's 32-bit count (or `OP2_MPI_MAX_MESSAGE`) goes as several,
        // each piece at most the limit: sender and receiver cut the same length the same way,
        // and MPI delivers messages between two ranks with one tag in the order posted, so the
        // pieces land in place.
        let max = me.max_message;
        let mut op = me.in_flight("halo exchange");
        let mut buffers: Vec<Vec<u8>> = receives.iter().map(|&(_, n)| vec![0u8; n]).collect();
        let mut send_buffers: Vec<Vec<u8>> = Vec::with_capacity(sends.len());
        {
            let world = me.lock();
            // Receives first, so no message waits for its receive to be posted.
            for ((rank, _), buf) in receives.iter().zip(buffers.iter_mut()) {
                for piece in pieces(buf.len(), max) {
                    op.expect.push(Some(piece.len()));
                    let part = &mut buf[piece];
                    mpi::request::scope(|scope| {
                        let request = world
                            .0
                            .process_at_rank(*rank as i32)
                            .immediate_receive_into_with_tag(scope, part, HALO_TAG);
                        // SAFETY: as in `all_gather`: `part` lies in a heap block `op` keeps,
                        // unmoved, until the request finishes.
                        op.requests.push(unsafe { request.into_raw() }.0);
                    });
                }
            }
            for (rank, bytes) in sends {
                for piece in pieces(bytes.len(), max) {
                    op.expect.push(None);
                    mpi::request::scope(|scope| {
                        let request = world
                            .0
                            .process_at_rank(rank as i32)
                            .immediate_send_with_tag(scope, &bytes[piece], HALO_TAG);
                        // SAFETY: as in `all_gather`.
                        op.requests.push(unsafe { request.into_raw() }.0);
                    });
                }
                send_buffers.push(bytes);
            }
        }
        let receives = buffers.len();
        buffers.extend(send_buffers);
        op.buffers = buffers;
        Ok(Box::new(MpiExchange {
            comm: self.inner.clone(),
            op,
            receives,
        }))
    }
}
