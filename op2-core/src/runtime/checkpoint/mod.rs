//! Checkpoint and restart: OP2-Common's automatic checkpointing, made crash-safe.
//!
//! **Taking a checkpoint.** When [`CheckpointEvery`] says so, before a loop (the backup point)
//! the runtime runs everything pending, notes the Consts and the history of Global results, and
//! starts deciding which Dats to save. A Dat never written since it was declared is not saved
//! (the restarted program declares it again with the same values). Every other Dat is decided
//! by the first loop after the backup point that uses it: one that reads it (READ, RW, INC) or
//! writes only part of it saves its values now (they are still the backup point's: nothing has
//! written it since), one that overwrites every row (a direct WRITE over its whole set, or
//! WRITEs through maps whose values cover the whole set) means it need not be saved. A host
//! read or write of an undecided Dat saves it. Once every Dat is decided (or the runtime is
//! dropped, after which nothing reads them) the checkpoint is written by a background thread,
//! atomically: the previous checkpoint stays valid until the new one is complete on disk.
//!
//! **Restarting.** A runtime whose checkpoint file exists reads it when it is built (a damaged,
//! foreign or newer file is a typed error there). The program then runs from the start as
//! usual, but loops before the backup point are replayed, not run: each Global they write gets
//! the value the first run computed, so the program's own control flow (residual prints,
//! convergence tests) sees what it saw the first time. Its declarations and its loops' kernels
//! are checked against the checkpoint's; a host access to a Dat those loops would have changed
//! is an [`Op2Error::CheckpointReplay`] (its value is not known yet). At the backup point the
//! saved Dats and the Consts are loaded and the loops run again.

mod image;

use super::execute::{RuntimeShared, lock};
use crate::access::Access;
use crate::arg::{Arg, ArgTarget};
use crate::carrier::{Carrier, CarrierKind, HALO_BOTH};
use crate::config::{CheckpointConfig, CheckpointEvery};
use crate::error::{Op2Error, Result};
use crate::map::Map;
use crate::set::Set;
use crate::signature::{ArgKind, ArgSig};
pub(crate) use image::GlobalValue;
use image::{Decl, Image, SavedDat, hash_bytes};
use std::collections::{HashMap, HashSet};
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::thread::JoinHandle;
use std::time::Instant;

/// What checkpointing has done so far ([`crate::Runtime::checkpoint_stats`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct CheckpointStats {
    /// The checkpoint file.
    pub path: PathBuf,
    /// Checkpoints completed and handed to the writer (the last may still be being written).
    pub taken: u64,
    /// The loop (counted from 0 over `par_loop` calls) before which the last one was taken.
    pub last_backup: Option<u64>,
    /// Bytes of Dat values the last checkpoint saved (OP2-Common's minimal rule).
    pub saved_dat_bytes: u64,
    /// Bytes every Dat declared then holds (what saving them all would have taken).
    pub all_dat_bytes: u64,
    /// The Dats the last checkpoint saved, by name.
    pub saved_dats: Vec<String>,
    /// The whole file's size, of the last checkpoint written.
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

/// The restart in progress: the checkpoint read at start, until its backup point.
struct Replay {
    image: Image,
    /// Dats the replayed loops wrote: their host values are not the first run's.
    stale: HashSet<u64>,
    /// Next history entry to replay.
    next: usize,
}

/// A checkpoint being taken: decided Dats are in `image.dats`, the rest in `undecided`.
struct Deciding {
    image: Image,
    /// Dats not yet decided, with their declaration ordinals.
    undecided: Vec<(u32, Arc<Carrier>)>,
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
    decls: Vec<Decl>,
    /// Every Dat declared, in order (their ordinals).
    dats: Vec<Weak<Carrier>>,
    /// Dats written (by a loop or on the host) since they were declared.
    dirty: HashSet<u64>,
    /// When the last checkpoint was taken (or the run started).
    since: Instant,
    deciding: Option<Deciding>,
    replay: Option<Replay>,
    /// The backup point this run was restored at (no new checkpoint is taken there).
    restored_at: Option<u64>,
    /// The checkpoint being written in the background: its stats once it is on disk.
    writer: Option<JoinHandle<Result<u64>>>,
    stats: CheckpointStats,
}

impl Checkpointer {
    /// Checkpointing as `config` says; reads the checkpoint to restart from if its file exists.
    pub(crate) fn new(config: CheckpointConfig) -> Result<Checkpointer> {
        let replay = if config.path.exists() {
            Some(Replay {
                image: Image::read(&config.path)?,
                stale: HashSet::new(),
                next: 0,
            })
        } else {
            None
        };
        Ok(Checkpointer {
            stats: CheckpointStats {
                path: config.path.clone(),
                ..CheckpointStats::default()
            },
            config,
            loops: 0,
            calls: HashMap::new(),
            loops_hash: 0,
            decls: Vec::new(),
            dats: Vec::new(),
            dirty: HashSet::new(),
            since: Instant::now(),
            deciding: None,
            replay,
            restored_at: None,
            writer: None,
        })
    }

    fn mismatch(&self, what: String) -> Op2Error {
        Op2Error::CheckpointMismatch {
            path: self.config.path.clone(),
            what,
        }
    }

    /// Notes a declaration; while restarting it must match the checkpoint's.
    fn declare(&mut self, decl: Decl) -> Result<()> {
        if let Some(r) = &self.replay {
            let k = self.decls.len();
            match r.image.decls.get(k) {
                Some(d) if *d == decl => {}
                Some(d) => {
                    return Err(self.mismatch(format!(
                        "declaration {k} is {}, the checkpoint's is {}{}",
                        decl.describe(),
                        d.describe(),
                        if d.kind == decl.kind && d.name == decl.name && d.sizes == decl.sizes {
                            " with other values"
                        } else {
                            ""
                        }
                    )));
                }
                None => {
                    return Err(self.mismatch(format!(
                        "{} is declared before loop {}, where the checkpoint's program had \
                         declared only {k} objects",
                        decl.describe(),
                        r.image.backup
                    )));
                }
            }
        }
        self.decls.push(decl);
        Ok(())
    }

    /// Whether a checkpoint is due before a loop of `kernel`.
    fn due(&self, kernel: &str) -> bool {
        if self.loops == 0 || self.restored_at == Some(self.loops) {
            return false;
        }
        match &self.config.every {
            CheckpointEvery::Loops(n) => self.loops % n == 0,
            CheckpointEvery::Time(d) => self.since.elapsed() >= *d,
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

    /// Fails with the background writer's error, if it finished with one; `wait` waits for it.
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

/// The bytes of a carrier's host data, brought home from a device first.
fn host_bytes(shared: &RuntimeShared, c: &Carrier) -> Result<Vec<u8>> {
    shared.backend.host_access(c, false)?;
    Ok(c.lock_for_loop("checkpoint", false)?.bytes().to_vec())
}

/// Overwrites a carrier's host data (the backend then treats the host copy as the valid one).
fn overwrite(
    shared: &RuntimeShared,
    c: &Carrier,
    bytes: &[u8],
    path: &std::path::Path,
) -> Result<()> {
    shared.backend.host_access(c, true)?;
    let mut lock = c.lock_for_loop("checkpoint restore", true)?;
    let host = lock.bytes_mut().expect("a write lock gives mutable bytes");
    if host.len() != bytes.len() {
        return Err(Op2Error::CheckpointMismatch {
            path: path.to_path_buf(),
            what: format!(
                "{} `{}` holds {} bytes, the checkpoint {}",
                c.what(),
                c.name(),
                host.len(),
                bytes.len()
            ),
        });
    }
    host.copy_from_slice(bytes);
    c.halo_stale.store(HALO_BOTH, Ordering::Relaxed);
    Ok(())
}

/// Whether the loop's WRITE args on `dat` together write every row of it.
fn covers_every_row(
    dat: &Carrier,
    set: &Set,
    sigs: &[ArgSig],
    carriers: &[Arc<Carrier>],
    maps: &[Map],
) -> bool {
    let CarrierKind::Dat(dset) = dat.kind() else {
        return false;
    };
    let rows = dset.total_size();
    let mut hit = vec![false; rows];
    let elements = set.size();
    for (sig, c) in sigs.iter().zip(carriers) {
        if c.id != dat.id || sig.access != Access::Write {
            continue;
        }
        match sig.kind {
            // A direct arg on the iteration set writes rows 0..size: all of them where the set
            // has no halo rows.
            ArgKind::Direct if set.id() == dset.id() && set.total_size() == elements => {
                return true;
            }
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
    hit.iter().all(|&h| h)
}

impl RuntimeShared {
    fn checkpointer(&self) -> Option<std::sync::MutexGuard<'_, Checkpointer>> {
        self.checkpoint.as_ref().map(lock)
    }

    /// Notes a declared set, map, Dat, Global or Const (checked against the checkpoint while
    /// restarting).
    pub(crate) fn checkpoint_declare(
        &self,
        kind: &str,
        name: &str,
        sizes: Vec<u64>,
        values: &[u8],
        dat: Option<&Arc<Carrier>>,
    ) -> Result<()> {
        let Some(mut ck) = self.checkpointer() else {
            return Ok(());
        };
        ck.declare(Decl {
            kind: kind.into(),
            name: name.into(),
            sizes,
            hash: hash_bytes(0, values),
        })?;
        if let Some(d) = dat {
            ck.dats.push(Arc::downgrade(d));
        }
        Ok(())
    }

    /// Before a loop is recorded: replays it while restarting, loads the checkpoint at its
    /// backup point, decides which Dats the checkpoint being taken saves, and takes a new one
    /// when it is due.
    pub(crate) fn checkpoint_before_loop(
        &self,
        kernel: &str,
        set: &Set,
        args: &[Arg],
        sigs: &[ArgSig],
        carriers: &[Arc<Carrier>],
        maps: &[Map],
    ) -> Result<LoopFate> {
        if self.checkpoint.is_none() {
            return Ok(LoopFate::Run(0));
        }
        // The order of locks everywhere: exec, then the checkpointer, then state or history.
        let _order = lock(&self.exec);
        let mut guard = self.checkpointer().expect("checked above");
        let ck = &mut *guard;
        ck.reap_writer(false)?;
        let index = ck.loops;

        if let Some(replay) = &mut ck.replay {
            if index < replay.image.backup {
                // Replayed: the Globals it writes get the first run's values.
                while let Some(g) = replay.image.history.get(replay.next) {
                    if g.at > index {
                        break;
                    }
                    if g.at == index {
                        let c = carriers
                            .get(g.arg as usize)
                            .filter(|c| matches!(c.kind(), CarrierKind::Global));
                        let Some(c) = c else {
                            return Err(Op2Error::CheckpointMismatch {
                                path: ck.config.path.clone(),
                                what: format!(
                                    "the kernels of the loops are not the checkpoint's: loop \
                                     {index} (`{kernel}`) has no Global at arg {}, as the \
                                     checkpoint's loop {index} had",
                                    g.arg
                                ),
                            });
                        };
                        overwrite(self, c, &g.bytes, &ck.config.path)?;
                    }
                    replay.next += 1;
                }
                for (sig, c) in sigs.iter().zip(carriers) {
                    if matches!(c.kind(), CarrierKind::Dat(_)) && sig.access.writes() {
                        replay.stale.insert(c.id);
                        ck.dirty.insert(c.id);
                    }
                }
                ck.advance(kernel);
                ck.stats.replayed_loops += 1;
                return Ok(LoopFate::Replayed);
            }
            self.load_checkpoint(ck)?;
        }

        let due = ck.due(kernel);
        if due {
            if let Some(d) = ck.deciding.take() {
                // The last one is still undecided about some Dats: their values have not
                // changed since its backup point, so they are saved as they are now.
                self.complete(ck, d, true)?;
            }
            // The backup point: everything recorded so far runs first.
            let work = lock(&self.state).trace.take_all();
            self.run_pending(work)?;
            self.start_checkpoint(ck, index)?;
        }
        if let Some(mut d) = ck.deciding.take() {
            self.decide(&mut d, set, sigs, carriers, maps)?;
            if d.undecided.is_empty() {
                self.complete(ck, d, false)?;
            } else {
                ck.deciding = Some(d);
            }
        }
        for (arg, (sig, c)) in args.iter().zip(sigs.iter().zip(carriers)) {
            if matches!(arg.target, ArgTarget::Dat { .. }) && sig.access.writes() {
                ck.dirty.insert(c.id);
            }
        }
        ck.advance(kernel);
        Ok(LoopFate::Run(index))
    }

    /// The backup point of a restart: checks the declarations and loops so far against the
    /// checkpoint's, loads its Dats and Consts, and ends the replay.
    fn load_checkpoint(&self, ck: &mut Checkpointer) -> Result<()> {
        let replay = ck.replay.take().expect("called while restarting");
        let image = &replay.image;
        if ck.decls.len() != image.decls.len() {
            let what = format!(
                "the checkpoint's program declared {} objects before loop {}, this one {}",
                image.decls.len(),
                image.backup,
                ck.decls.len()
            );
            return Err(ck.mismatch(what));
        }
        if ck.loops_hash != image.loops_hash {
            let what = format!(
                "the kernels of loops 0..{} are not the checkpoint's",
                image.backup
            );
            return Err(ck.mismatch(what));
        }
        for saved in &image.dats {
            let dat = ck.dats.get(saved.ordinal as usize).and_then(Weak::upgrade);
            let Some(dat) = dat.filter(|d| d.name() == saved.name) else {
                let what = format!("dat `{}` is not declared or was dropped", saved.name);
                return Err(ck.mismatch(what));
            };
            overwrite(self, &dat, &saved.bytes, &ck.config.path)?;
        }
        let consts = lock(&self.state).consts.clone();
        for (name, bytes) in &image.consts {
            let Some(c) = consts.iter().find(|c| c.name() == name) else {
                return Err(ck.mismatch(format!("const `{name}` is not declared")));
            };
            overwrite(self, c, bytes, &ck.config.path)?;
        }
        // The next checkpoint replays the loops before this one's backup point too.
        if let Some(history) = &self.history {
            let mut h = lock(history);
            let later = std::mem::take(&mut *h);
            h.extend(image.history.iter().cloned());
            h.extend(later);
        }
        ck.restored_at = Some(image.backup);
        ck.stats.restored_from = Some(image.backup);
        ck.since = Instant::now();
        Ok(())
    }

    /// Starts a checkpoint at backup point `index` (everything recorded before it has run).
    fn start_checkpoint(&self, ck: &mut Checkpointer, index: u64) -> Result<()> {
        let mut undecided = Vec::new();
        let mut all_dat_bytes = 0;
        for (ordinal, d) in ck.dats.iter().enumerate() {
            let Some(d) = d.upgrade() else { continue };
            all_dat_bytes += d.lock_for_loop("checkpoint", false)?.bytes().len() as u64;
            if ck.dirty.contains(&d.id) {
                undecided.push((ordinal as u32, d));
            }
        }
        let consts = lock(&self.state).consts.clone();
        let consts = consts
            .iter()
            .map(|c| Ok((c.name().to_string(), host_bytes(self, c)?)))
            .collect::<Result<Vec<_>>>()?;
        let mut history = lock(
            self.history
                .as_ref()
                .expect("history is kept when checkpointing"),
        )
        .clone();
        // Loops can run out of program order (a host read forces only what it needs).
        history.sort_by_key(|g| (g.at, g.arg));
        ck.deciding = Some(Deciding {
            image: Image {
                backup: index,
                loops_hash: ck.loops_hash,
                decls: ck.decls.clone(),
                history,
                consts,
                dats: Vec::new(),
                all_dat_bytes,
            },
            undecided,
        });
        ck.since = Instant::now();
        Ok(())
    }

    /// Decides the undecided Dats a loop uses: saved when it reads them or writes only part.
    fn decide(
        &self,
        d: &mut Deciding,
        set: &Set,
        sigs: &[ArgSig],
        carriers: &[Arc<Carrier>],
        maps: &[Map],
    ) -> Result<()> {
        let mut k = 0;
        while k < d.undecided.len() {
            let (ordinal, dat) = &d.undecided[k];
            let uses: Vec<&ArgSig> = sigs
                .iter()
                .zip(carriers)
                .filter(|(_, c)| c.id == dat.id)
                .map(|(s, _)| s)
                .collect();
            if uses.is_empty() {
                k += 1;
                continue;
            }
            let reads = uses.iter().any(|s| s.access.reads());
            if reads || !covers_every_row(dat, set, sigs, carriers, maps) {
                d.image.dats.push(SavedDat {
                    ordinal: *ordinal,
                    name: dat.name().to_string(),
                    bytes: host_bytes(self, dat)?,
                });
            }
            d.undecided.swap_remove(k);
        }
        Ok(())
    }

    /// Finishes a checkpoint: the undecided Dats are saved (`save_rest`, when the program goes
    /// on) or left out (it ends: nothing reads them), and the file is written in the background.
    fn complete(&self, ck: &mut Checkpointer, mut d: Deciding, save_rest: bool) -> Result<()> {
        if save_rest {
            for (ordinal, dat) in std::mem::take(&mut d.undecided) {
                d.image.dats.push(SavedDat {
                    ordinal,
                    name: dat.name().to_string(),
                    bytes: host_bytes(self, &dat)?,
                });
            }
        }
        d.image.dats.sort_by_key(|s| s.ordinal);
        // One write at a time, in order: the newer must not be overtaken by the older.
        ck.reap_writer(true)?;
        let image = d.image;
        ck.stats.taken += 1;
        ck.stats.last_backup = Some(image.backup);
        ck.stats.saved_dat_bytes = image.dats.iter().map(|s| s.bytes.len() as u64).sum();
        ck.stats.all_dat_bytes = image.all_dat_bytes;
        ck.stats.saved_dats = image.dats.iter().map(|s| s.name.clone()).collect();
        let path = ck.config.path.clone();
        ck.writer = Some(std::thread::spawn(move || {
            let mut written = 0u64;
            op2_atomic_write::write_with(&path, |w| {
                let mut counting = Counting { out: w, n: 0 };
                image.write(&mut counting)?;
                written = counting.n;
                Ok(())
            })
            .map_err(|e| Op2Error::CheckpointWrite {
                path: path.clone(),
                reason: e.to_string(),
            })?;
            Ok(written)
        }));
        Ok(())
    }

    /// A host access to `carrier`: refused for a Dat whose value replayed loops would have
    /// changed; saves an undecided Dat first; a write makes a Dat dirty.
    pub(crate) fn checkpoint_host_access(&self, carrier: &Carrier, write: bool) -> Result<()> {
        let Some(mut guard) = self.checkpointer() else {
            return Ok(());
        };
        let ck = &mut *guard;
        if !matches!(carrier.kind(), CarrierKind::Dat(_)) {
            return Ok(());
        }
        if let Some(r) = &ck.replay {
            if r.stale.contains(&carrier.id) {
                return Err(Op2Error::CheckpointReplay {
                    name: carrier.name().into(),
                    backup: r.image.backup,
                    path: ck.config.path.clone(),
                });
            }
        }
        if let Some(d) = &mut ck.deciding {
            if let Some(k) = d.undecided.iter().position(|(_, c)| c.id == carrier.id) {
                let (ordinal, dat) = d.undecided.swap_remove(k);
                d.image.dats.push(SavedDat {
                    ordinal,
                    name: dat.name().to_string(),
                    bytes: host_bytes(self, &dat)?,
                });
            }
            if d.undecided.is_empty() {
                let d = ck.deciding.take().expect("checked above");
                self.complete(ck, d, false)?;
            }
        }
        if write {
            ck.dirty.insert(carrier.id);
        }
        Ok(())
    }

    /// After a loop ran (and its reductions finished): the values of the Globals it wrote.
    pub(crate) fn checkpoint_globals(
        &self,
        at: u64,
        globals: &[(usize, &Arc<Carrier>)],
    ) -> Result<()> {
        let Some(history) = &self.history else {
            return Ok(());
        };
        let mut values = Vec::with_capacity(globals.len());
        for (arg, c) in globals {
            values.push(GlobalValue {
                at,
                arg: *arg as u32,
                bytes: host_bytes(self, c)?,
            });
        }
        lock(history).extend(values);
        Ok(())
    }

    /// When the runtime goes away: completes the checkpoint being taken and waits for the
    /// writer. The Dats still undecided are saved as they are: this run used them no more, but
    /// a program stopped early (fewer iterations than planned) may be restarted to go further.
    pub(crate) fn checkpoint_finish(&self) -> Result<()> {
        let _order = lock(&self.exec);
        let Some(mut guard) = self.checkpointer() else {
            return Ok(());
        };
        let ck = &mut *guard;
        if let Some(d) = ck.deciding.take() {
            self.complete(ck, d, true)?;
        }
        ck.reap_writer(true)?;
        if let Some(r) = &ck.replay {
            eprintln!(
                "op2: the program ended after {} loops, before the checkpoint's backup point \
                 (loop {}) in {}",
                ck.loops,
                r.image.backup,
                ck.config.path.display()
            );
        }
        Ok(())
    }

    /// What checkpointing has done so far.
    pub(crate) fn checkpoint_stats(&self) -> Option<CheckpointStats> {
        self.checkpointer().map(|ck| ck.stats.clone())
    }

    /// Completes the checkpoint being taken (saving the Dats still undecided as they are) and
    /// waits until it is on disk.
    pub(crate) fn checkpoint_wait(&self) -> Result<()> {
        let _order = lock(&self.exec);
        let Some(mut guard) = self.checkpointer() else {
            return Ok(());
        };
        let ck = &mut *guard;
        if let Some(d) = ck.deciding.take() {
            self.complete(ck, d, true)?;
        }
        ck.reap_writer(true)
    }
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
