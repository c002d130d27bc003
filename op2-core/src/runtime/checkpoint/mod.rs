//! Checkpoint and restart: OP2-Common's automatic checkpointing, made crash-safe and independent
//! of the number of ranks.
//!
//! **Taking a checkpoint.** When [`CheckpointEvery`] says so, before a loop (the backup point)
//! the runtime runs everything pending, notes the Consts and the history of Global results, and
//! starts deciding which Dats to save. A Dat never written since it was declared is not saved
//! (the restarted program declares it again with the same values). Every other Dat is decided
//! by the first loop after the backup point that uses it: one that reads it (READ, RW, INC) or
//! writes only part of it saves its values now (they are still the backup point's: nothing has
//! written it since), one that overwrites every row (a direct WRITE over its whole set, or
//! WRITEs through maps whose values cover the whole set) means it need not be saved. A host
//! read or write of an undecided Dat saves it. Once every Dat is decided the checkpoint is
//! written by a background thread, atomically: the previous checkpoint stays valid until the
//! new one is complete on disk. The next checkpoint, `Runtime::checkpoint_wait` and dropping
//! the runtime complete one still deciding, saving the undecided Dats as they are.
//!
//! **Across ranks** every decision is taken together (a loop's is combined over the ranks, so a
//! map that covers one rank's rows but not another's saves the Dat everywhere), the Dats are
//! saved in global numbering ([`crate::Runtime::number_globally`], which op2-mpi's partitioned
//! meshes set) and rank 0 writes one file for all ranks. The declarations' fingerprint counts
//! rows over all ranks and hashes rows by global number, so a checkpoint taken on 3 ranks
//! restarts on 1, 2 or 4: each rank loads its rows, halos included, by global number.
//!
//! **Restarting.** A runtime whose checkpoint file exists reads it when it is built (a damaged,
//! foreign or newer file is a typed error there). The program then runs from the start as
//! usual, but loops before the backup point are replayed, not run: each Global they write gets
//! the value the first run computed, so the program's own control flow (residual prints,
//! convergence tests) sees what it saw the first time. Its declarations and its loops' kernels
//! are checked against the checkpoint's; a host access to a Dat those loops would have changed
//! is an [`Op2Error::CheckpointReplay`] (its value is not known yet). At the backup point the
//! saved Dats and the Consts are loaded and the loops run again.
//!
//! This module holds the checkpointer's state and decisions; `run` takes, writes and restores
//! checkpoints with the engine, and `image` is the file's format.

mod image;
mod run;

pub(crate) use run::CheckpointWork;

use crate::contract::config::{CheckpointConfig, CheckpointEvery};
use crate::model::access::Access;
use crate::model::carrier::{Carrier, CarrierKind};
use crate::model::comm::Communicator;
use crate::model::dtype::DType;
use crate::model::error::{Op2Error, Result};
use crate::model::map::Map;
use crate::model::set::Set;
use crate::model::signature::{ArgKind, ArgSig};
use image::{Decl, GlobalValue, Image, hash_bytes};
use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex, Weak};
use std::thread::JoinHandle;
use std::time::Instant;

/// Across ranks a time interval is checked every this many loops (together: the ranks' clocks
/// differ, so rank 0's decides).
const TIME_CHECK_LOOPS: u64 = 64;

/// What checkpointing has done so far ([`crate::Runtime::checkpoint_stats`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckpointStats {
    /// The checkpoint file.
    pub path: PathBuf,
    /// Checkpoints completed and handed to the writer (the last may still be being written).
    pub taken: u64,
    /// The loop (counted from 0 over `par_loop` calls) before which the last one was taken.
    pub last_backup: Option<u64>,
    /// Bytes of Dat values the last checkpoint saved (OP2-Common's minimal rule), over all
    /// ranks.
    pub saved_dat_bytes: u64,
    /// Bytes every Dat declared then holds, over all ranks (what saving them all would take).
    pub all_dat_bytes: u64,
    /// The Dats the last checkpoint saved, by name.
    pub saved_dats: Vec<String>,
    /// The whole file's size, of the last checkpoint written (on rank 0; 0 on the others).
    pub file_bytes: u64,
    /// The backup point this run restarted from, if it restarted.
    pub restored_from: Option<u64>,
    /// Loops replayed (not run) while restarting.
    pub replayed_loops: u64,
}

/// What `par_loop` does with a loop.
pub(crate) enum LoopFate {
    /// Record and run it; it is loop number `.0`.
    Run(u64),
    /// It comes before the backup point of the checkpoint being restarted from: its Globals
    /// were replayed, nothing runs.
    Replayed,
}

/// The checkpointing subsystem as a runtime holds it: the checkpointer and the history of
/// Globals, both present exactly when checkpointing is configured. Its work (`run`) takes the
/// engine and nothing else of the runtime.
pub(crate) struct Checkpointing {
    checkpointer: Option<Mutex<Checkpointer>>,
    history: Option<Mutex<History>>,
}

impl Checkpointing {
    /// Checkpointing as `config` says (idle when `None`): see [`Checkpointer::new`].
    pub(crate) fn new(
        config: Option<&CheckpointConfig>,
        comm: &dyn Communicator,
    ) -> Result<Checkpointing> {
        let checkpointer = match config {
            Some(c) => Some(Mutex::new(Checkpointer::new(c.clone(), comm)?)),
            None => None,
        };
        Ok(Checkpointing {
            history: checkpointer
                .as_ref()
                .map(|_| Mutex::new(History::default())),
            checkpointer,
        })
    }

    /// Whether checkpointing is on (then every loop's Globals are kept for replaying).
    pub(crate) fn is_on(&self) -> bool {
        self.checkpointer.is_some()
    }
}

/// The values loops left in the Globals they write, for replaying (see [`Checkpointing`]).
#[derive(Default)]
pub(crate) struct History {
    values: Vec<GlobalValue>,
    /// Why a value could not be recorded: the next checkpoint fails with it rather than miss
    /// the value.
    error: Option<String>,
}

/// Global numbers of a set's local elements (every element, halos included), set by
/// [`crate::Runtime::number_globally`].
pub(crate) struct Numbering {
    gids: Vec<u64>,
    /// Elements this rank owns (the first ones): the rows it saves.
    owned: usize,
    /// Rows of the whole set over all ranks: every number is below it.
    global_rows: u64,
}

/// How a set's rows are numbered for checkpoints.
#[derive(Clone)]
enum Rows {
    /// One process, no numbering: every row, in order.
    Identity(usize),
    Numbered(Arc<Numbering>),
}

impl Rows {
    /// Rows this rank saves and counts.
    fn owned(&self) -> usize {
        match self {
            Rows::Identity(n) => *n,
            Rows::Numbered(n) => n.owned,
        }
    }
    /// The global number of local row `i`.
    fn gid(&self, i: usize) -> u64 {
        match self {
            Rows::Identity(_) => i as u64,
            Rows::Numbered(n) => n.gids[i],
        }
    }
}

/// A hash of rows that depends neither on their order nor on which ranks hold them: the
/// wrapping sum of each row's hash, the row prefixed by its global number (summed over the
/// ranks afterwards).
#[derive(Default)]
struct RowHash {
    sum: u64,
    row: Vec<u8>,
}

impl RowHash {
    /// Adds row `gid`, whose bytes after the number `fill` appends.
    fn add(&mut self, gid: u64, fill: impl FnOnce(&mut Vec<u8>)) {
        self.row.clear();
        self.row.extend_from_slice(&gid.to_le_bytes());
        fill(&mut self.row);
        self.sum = self.sum.wrapping_add(hash_bytes(0, &self.row));
    }
}

/// A declared object, as checkpoints fingerprint it.
enum Source {
    Set(Set),
    Map(Map),
    /// A Dat: its hash over its owned rows (by global number) when it was declared.
    Dat {
        set: Set,
        dim: usize,
        dtype: DType,
        hash: u64,
    },
    /// A Global or Const: the same on every rank.
    Replicated {
        sizes: Vec<u64>,
        hash: u64,
    },
}

struct Declared {
    kind: &'static str,
    name: String,
    occurrence: u32,
    source: Source,
}

/// The restart in progress: the checkpoint read at start, until its backup point.
struct Replay {
    image: Image,
    /// Dats the replayed loops wrote: their host values are not the first run's.
    stale: HashSet<u64>,
    /// Next history entry to replay.
    next: usize,
}

/// A Dat a checkpoint has not decided about yet.
struct Undecided {
    dat: Arc<Carrier>,
    occurrence: u32,
    /// Its rows on this rank, saved (as the host read or wrote it here).
    saved: Option<Vec<u8>>,
}

/// A Dat a checkpoint saves: this rank's owned rows.
struct Saved {
    dat: Arc<Carrier>,
    occurrence: u32,
    bytes: Vec<u8>,
}

/// A checkpoint being taken.
struct Deciding {
    image: Image,
    undecided: Vec<Undecided>,
    saved: Vec<Saved>,
    /// A host access could not save a Dat (on this rank): reported at the next agreed step.
    error: Option<Op2Error>,
}

/// The checkpointing state of one runtime.
pub(crate) struct Checkpointer {
    config: CheckpointConfig,
    /// `par_loop` calls so far, replayed ones included: the next loop's number.
    loops: u64,
    /// Calls per kernel name, for [`CheckpointEvery::Kernel`].
    calls: HashMap<String, u64>,
    /// Hash of the kernel names of every loop so far, in order.
    loops_hash: u64,
    /// Everything declared so far, in order.
    declared: Vec<Declared>,
    /// Every Dat declared, with its occurrence among Dats of its name.
    dats: Vec<(Weak<Carrier>, u32)>,
    /// Numberings by set id.
    numbering: HashMap<u64, Arc<Numbering>>,
    /// Dats written (by a loop or on the host) since they were declared.
    dirty: HashSet<u64>,
    /// When the last checkpoint was taken (or the run started).
    since: Instant,
    deciding: Option<Deciding>,
    replay: Option<Replay>,
    /// The backup point this run was restored at (no new checkpoint is taken there).
    restored_at: Option<u64>,
    /// The checkpoint being written in the background (rank 0): its size once it is on disk.
    writer: Option<JoinHandle<Result<u64>>>,
    /// Loading the checkpoint failed part way: the runtime's data is neither the first run's
    /// nor the declared, so every later loop fails with this.
    broken: Option<String>,
    stats: CheckpointStats,
    /// Rank 0's hold on the checkpoint's lock file, for as long as this run may write it (see
    /// [`take_lock`]); last, so that it is let go after everything else.
    _lock: Option<std::fs::File>,
}

/// What an attempt at a lock found.
enum Lock {
    Taken,
    /// Another open file holds it.
    Busy,
    /// The file system (or the platform) cannot lock.
    Unsupported,
}

/// An exclusive `flock(2)` on `file`, without waiting. Unlike `fcntl` locks, a `flock` belongs to
/// the open file, so two runtimes of one process exclude each other as two processes do.
#[cfg(unix)]
fn try_lock(file: &std::fs::File) -> Lock {
    use std::os::fd::AsRawFd;
    // SAFETY: flock only reads the descriptor, which `file` keeps open for the call.
    let r = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if r == 0 {
        return Lock::Taken;
    }
    match std::io::Error::last_os_error().raw_os_error() {
        Some(libc::EWOULDBLOCK) => Lock::Busy,
        Some(libc::EINTR) => try_lock(file),
        _ => Lock::Unsupported,
    }
}

#[cfg(not(unix))]
fn try_lock(_file: &std::fs::File) -> Lock {
    Lock::Unsupported
}

/// The lock file of the checkpoint `path`: `<path>.lock`, beside it.
fn lock_path(path: &Path) -> PathBuf {
    let mut name = path.as_os_str().to_owned();
    name.push(".lock");
    PathBuf::from(name)
}

/// Takes the checkpoint's lock (an advisory lock on `<file>.lock`, which the system lets go
/// when its holder's process ends, however it ends), waiting up to the configured time for
/// another job to end: one still running, or the ranks of a job killed a moment ago, which may
/// still be finishing a checkpoint of theirs. Taken before any rank reads the file and held
/// while the run may write it, so that a job never reads a file another is replacing and two
/// jobs never write one. `None` where the file system cannot lock (the run goes on unguarded,
/// as before locks).
fn take_lock(config: &CheckpointConfig) -> Result<Option<std::fs::File>> {
    use std::io::Write;
    let lock = lock_path(&config.path);
    let file = std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(false)
        .open(&lock)
        .map_err(|e| Op2Error::CheckpointWrite {
            path: config.path.clone(),
            reason: format!("cannot open its lock file {}: {e}", lock.display()),
        })?;
    let start = Instant::now();
    loop {
        match try_lock(&file) {
            Lock::Taken => break,
            Lock::Busy if start.elapsed() < config.lock_timeout => {
                std::thread::sleep(std::time::Duration::from_millis(20));
            }
            Lock::Busy => {
                let said = std::fs::read_to_string(&lock).unwrap_or_default();
                let said = said.trim();
                return Err(Op2Error::CheckpointInUse {
                    path: config.path.clone(),
                    lock,
                    holder: if said.is_empty() {
                        "it has not said who it is".into()
                    } else {
                        said.into()
                    },
                    waited: start.elapsed(),
                });
            }
            Lock::Unsupported => return Ok(None),
        }
    }
    // Who holds it, for the message of a job that waits for it in vain.
    let host = std::fs::read_to_string("/proc/sys/kernel/hostname").unwrap_or_default();
    let _ = file.set_len(0).and_then(|()| {
        (&file).write_all(format!("process {} on {}\n", std::process::id(), host.trim()).as_bytes())
    });
    Ok(Some(file))
}

fn mismatch(path: &std::path::Path, what: String) -> Op2Error {
    Op2Error::CheckpointMismatch {
        path: path.to_path_buf(),
        what,
    }
}

/// Makes a result of this rank every rank's: when any rank failed, every rank returns an error
/// (its own, or one naming the first rank that failed), so no rank goes on to a collective the
/// others never reach. Collective across ranks.
fn agree<T>(comm: &dyn Communicator, path: &std::path::Path, r: Result<T>) -> Result<T> {
    if comm.size() == 1 {
        return r;
    }
    match (comm.first_failed_rank(r.is_err())?, r) {
        (None, r) | (Some(_), r @ Err(_)) => r,
        (Some(rank), Ok(_)) => Err(Op2Error::CheckpointWrite {
            path: path.to_path_buf(),
            reason: format!("rank {rank} failed (its own error says why)"),
        }),
    }
}

/// Whether `value` is the same on every rank. Collective across ranks.
fn same_everywhere(comm: &dyn Communicator, value: u64) -> Result<bool> {
    if comm.size() == 1 {
        return Ok(true);
    }
    let all = comm
        .begin_all_gather(value.to_le_bytes().to_vec())?
        .wait()?;
    Ok(all.iter().all(|v| v[..] == value.to_le_bytes()))
}

impl Checkpointer {
    /// Checkpointing as `config` says; reads the checkpoint to restart from if its file exists.
    /// Across ranks (collective) every rank must see the same file, or none: a rank that cannot
    /// read it fails them all, and ranks that see different files are an error.
    pub(crate) fn new(config: CheckpointConfig, comm: &dyn Communicator) -> Result<Checkpointer> {
        let path = &config.path;
        if path.is_dir() {
            return Err(Op2Error::Config {
                key: "OP2_CHECKPOINT".into(),
                value: path.display().to_string(),
                reason: "is a directory: name the checkpoint file".into(),
            });
        }
        // Rank 0 holds the lock before any rank reads: then no job is replacing the file (the
        // ranks of a killed job may still be writing one), and none will while this one runs.
        let lock = if comm.rank() == 0 {
            take_lock(&config)
        } else {
            Ok(None)
        };
        let lock = agree(comm, path, lock)?;
        let read = if path.exists() {
            Image::read(path).map(Some)
        } else {
            Ok(None)
        };
        let read = agree(comm, path, read)?;
        if !same_everywhere(comm, read.as_ref().map_or(0, |(_, hash)| *hash))? {
            return Err(mismatch(
                path,
                "the ranks do not see the same checkpoint file (is the path on a disk of one node?)"
                    .into(),
            ));
        }
        let replay = read.map(|(image, _)| Replay {
            image,
            stale: HashSet::new(),
            next: 0,
        });
        Ok(Checkpointer {
            stats: CheckpointStats {
                path: config.path.clone(),
                ..CheckpointStats::default()
            },
            config,
            loops: 0,
            calls: HashMap::new(),
            loops_hash: 0,
            declared: Vec::new(),
            dats: Vec::new(),
            numbering: HashMap::new(),
            dirty: HashSet::new(),
            since: Instant::now(),
            deciding: None,
            replay,
            restored_at: None,
            writer: None,
            broken: None,
            _lock: lock,
        })
    }

    fn rows(&self, set: &Set) -> Rows {
        match self.numbering.get(&set.id()) {
            Some(n) => Rows::Numbered(n.clone()),
            None => Rows::Identity(set.total_size()),
        }
    }

    /// The fingerprint of one declaration on this rank: sizes and hash over its own rows
    /// (`partial`: they are summed over the ranks), or the whole (Globals, Consts).
    fn fingerprint(&self, d: &Declared) -> (Decl, bool) {
        let mut decl = Decl {
            kind: d.kind.into(),
            name: d.name.clone(),
            occurrence: d.occurrence,
            sizes: Vec::new(),
            hash: 0,
        };
        let partial = match &d.source {
            Source::Set(set) => {
                decl.sizes = vec![self.rows(set).owned() as u64];
                true
            }
            Source::Map(map) => {
                let (from, to) = (self.rows(map.from()), self.rows(map.to()));
                let arity = map.arity();
                // A map from an extruded set holds bottom rows: its rows at every layer.
                let values = map.layered_values();
                let mut h = RowHash::default();
                for e in 0..from.owned() {
                    h.add(from.gid(e), |row| {
                        for &v in &values[e * arity..(e + 1) * arity] {
                            // A gap (a matrix map's "no element") has no global number.
                            let gid = if v < 0 { u64::MAX } else { to.gid(v as usize) };
                            row.extend_from_slice(&gid.to_le_bytes());
                        }
                    });
                }
                decl.sizes = vec![from.owned() as u64, arity as u64];
                decl.hash = h.sum;
                true
            }
            Source::Dat {
                set,
                dim,
                dtype,
                hash,
            } => {
                decl.sizes = vec![self.rows(set).owned() as u64, *dim as u64, *dtype as u64];
                decl.hash = *hash;
                true
            }
            Source::Replicated { sizes, hash } => {
                decl.sizes = sizes.clone();
                decl.hash = *hash;
                false
            }
        };
        (decl, partial)
    }

    /// Whether a checkpoint is due before a loop of `kernel` (on this rank's clock).
    fn due(&self, kernel: &str, ranks: usize) -> bool {
        if self.loops == 0 || self.restored_at == Some(self.loops) {
            return false;
        }
        match &self.config.every {
            CheckpointEvery::Loops(n) => self.loops % n == 0,
            CheckpointEvery::Time(d) => {
                (ranks == 1 || self.loops % TIME_CHECK_LOOPS == 0) && self.since.elapsed() >= *d
            }
            CheckpointEvery::Kernel { kernel: k, every } => {
                k == kernel && self.calls.get(k).is_some_and(|c| *c > 0 && c % every == 0)
            }
        }
    }

    /// Counts a loop of `kernel`.
    fn advance(&mut self, kernel: &str) {
        self.loops += 1;
        *self.calls.entry(kernel.to_string()).or_default() += 1;
        self.loops_hash = hash_bytes(self.loops_hash, kernel.as_bytes());
    }

    /// The background writer's result, once it finished (`wait`: waiting for it).
    fn reap_writer(&mut self, wait: bool) -> Result<()> {
        if self
            .writer
            .as_ref()
            .is_some_and(|w| wait || w.is_finished())
        {
            let w = self.writer.take().expect("checked just above");
            let bytes = w.join().map_err(|_| Op2Error::CheckpointWrite {
                path: self.config.path.clone(),
                reason: "the writer thread panicked".into(),
            })??;
            self.stats.file_bytes = bytes;
        }
        Ok(())
    }
}

/// Every rank's `values`, summed element by element (wrapping), on every rank.
fn sum_over_ranks(comm: &dyn Communicator, values: &mut [u64]) -> Result<()> {
    if comm.size() == 1 {
        return Ok(());
    }
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    let all = comm.begin_all_gather(bytes)?.wait()?;
    values.fill(0);
    for message in all {
        for (v, b) in values.iter_mut().zip(message.chunks_exact(8)) {
            *v = v.wrapping_add(u64::from_le_bytes(b.try_into().expect("8 bytes")));
        }
    }
    Ok(())
}

/// Whether any rank says yes, for each of `flags`, on every rank.
fn any_rank(comm: &dyn Communicator, flags: &[bool]) -> Result<Vec<bool>> {
    let mut v: Vec<u64> = flags.iter().map(|&f| u64::from(f)).collect();
    sum_over_ranks(comm, &mut v)?;
    Ok(v.iter().map(|&n| n > 0).collect())
}

/// Whether the loop's WRITE args on `dat` together write every row this rank owns.
fn covers_owned_rows(
    dat: &Carrier,
    owned: usize,
    set: &Set,
    sigs: &[ArgSig],
    carriers: &[Arc<Carrier>],
    maps: &[Map],
) -> bool {
    let CarrierKind::Dat(dset) = dat.kind() else {
        return false;
    };
    let mut hit = vec![false; dset.total_size()];
    let elements = set.size();
    for (sig, c) in sigs.iter().zip(carriers) {
        if c.id != dat.id || sig.access != Access::Write {
            continue;
        }
        match sig.kind {
            // A direct arg on the iteration set writes the rows of its elements.
            ArgKind::Direct if set.id() == dset.id() && elements >= owned => return true,
            ArgKind::Indirect { map, arity, index } => {
                for e in 0..elements {
                    if let Some(&v) = maps[map].values().get(e * arity + index) {
                        hit[v as usize] = true;
                    }
                }
            }
            ArgKind::Row { map, .. } => {
                let arity = maps[map].arity();
                for &v in &maps[map].values()[..elements * arity] {
                    hit[v as usize] = true;
                }
            }
            _ => {}
        }
    }
    hit[..owned].iter().all(|&h| h)
}

/// Every global row must come from exactly one rank's owned rows: numbers given twice, or not at
/// all, would save zeros or one rank's copy over another's.
fn check_filled(path: &std::path::Path, dat: &str, filled: &[u32]) -> Result<()> {
    match filled.iter().position(|&n| n != 1) {
        None => Ok(()),
        Some(g) => Err(Op2Error::CheckpointWrite {
            path: path.to_path_buf(),
            reason: format!(
                "dat `{dat}`: global row {g} is owned {} times over the ranks (the set's global \
                 numbers must give each row to one rank)",
                filled[g]
            ),
        }),
    }
}

/// How a declaration reaches [`run::CheckpointWork::checkpoint_declare`].
pub(crate) enum DeclaredAs<'a> {
    Set(&'a Set),
    Map(&'a Map),
    Dat {
        dat: &'a Arc<Carrier>,
        values: &'a [u8],
    },
    /// A Global or Const: its sizes and values.
    Replicated {
        sizes: Vec<u64>,
        values: &'a [u8],
    },
}

/// Counts the bytes written through it.
struct Counting<'a> {
    out: &'a mut dyn std::io::Write,
    n: u64,
}

impl std::io::Write for Counting<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.out.write(buf)?;
        self.n += n as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.out.flush()
    }
}
