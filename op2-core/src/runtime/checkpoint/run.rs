//! Checkpointing's work, with the engine: declarations checked against a checkpoint, loops
//! replayed or run, Dats decided and saved, a checkpoint written in the background and restored
//! at the backup point.

use super::image::{Decl, GlobalValue, Image, SavedDat, hash_bytes};
use super::{
    CheckpointStats, Checkpointer, Counting, Deciding, Declared, DeclaredAs, LoopFate, Numbering,
    RowHash, Rows, Saved, Source, TIME_CHECK_LOOPS, Undecided, agree, any_rank, check_filled,
    covers_owned_rows, mismatch, same_everywhere, sum_over_ranks,
};
use super::{Checkpointing, History};
use crate::contract::config::CheckpointEvery;
use crate::model::arg::{Arg, ArgTarget};
use crate::model::carrier::{Carrier, CarrierKind, HALO_BOTH};
use crate::model::error::{Op2Error, Result};
use crate::model::map::Map;
use crate::model::set::Set;
use crate::model::signature::ArgSig;
use crate::runtime::engine::{Engine, StepRunner};
use crate::runtime::sync::lock;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// The bytes of a carrier's host data, brought home from a device first.
fn host_bytes(shared: &Engine, c: &Carrier) -> Result<Vec<u8>> {
    shared.backend.host_access(c, false)?;
    Ok(c.lock_for_loop("checkpoint", false)?.bytes().to_vec())
}

/// Overwrites a carrier's host data through `fill` (given the host bytes; the backend then
/// treats the host copy as the valid one).
fn overwrite(
    shared: &Engine,
    c: &Carrier,
    fill: impl FnOnce(&mut [u8]) -> Result<()>,
) -> Result<()> {
    shared.backend.host_access(c, true)?;
    let mut lock = c.lock_for_loop("checkpoint restore", true)?;
    fill(lock.bytes_mut().expect("a write lock gives mutable bytes"))?;
    c.halo_stale.store(HALO_BOTH, Ordering::Relaxed);
    Ok(())
}

/// Checkpointing at work: its state and the engine it works with.
pub(crate) struct CheckpointWork<'a> {
    rt: &'a dyn StepRunner,
    engine: &'a Engine,
    state: &'a Checkpointing,
}

impl Checkpointing {
    /// This subsystem working with the runtime `rt`.
    pub(crate) fn with<'a>(&'a self, rt: &'a dyn StepRunner) -> CheckpointWork<'a> {
        CheckpointWork {
            rt,
            engine: rt.engine(),
            state: self,
        }
    }
}

impl CheckpointWork<'_> {
    fn checkpointer(&self) -> Option<std::sync::MutexGuard<'_, Checkpointer>> {
        self.state.checkpointer.as_ref().map(lock)
    }

    fn history(&self) -> Option<&std::sync::Mutex<History>> {
        self.state.history.as_ref()
    }

    /// The global numbers of `set`'s local elements, when checkpointing and it has them.
    pub(crate) fn checkpoint_gids(&self, set: &Set) -> Option<Vec<u64>> {
        self.checkpointer()
            .and_then(|ck| ck.numbering.get(&set.id()).map(|n| n.gids.clone()))
    }

    /// Gives `set`'s local elements global numbers (see `Runtime::number_globally`).
    pub(crate) fn checkpoint_number(&self, set: &Set, gids: Vec<u64>) -> Result<()> {
        if gids.len() != set.total_size() {
            return Err(Op2Error::DataLength {
                what: "set",
                name: set.name().into(),
                expected: set.total_size(),
                actual: gids.len(),
                detail: "one global number per local element, halos included".into(),
            });
        }
        if let Some(mut ck) = self.checkpointer() {
            let owned = set.size();
            let mut rows = [owned as u64];
            sum_over_ranks(&*self.engine.comm, &mut rows)?;
            let global_rows = rows[0];
            let bad = gids.iter().position(|&g| g >= global_rows);
            let checked = match bad {
                Some(i) => Err(Op2Error::DataLength {
                    what: "set",
                    name: set.name().into(),
                    expected: global_rows as usize,
                    actual: gids[i] as usize + 1,
                    detail: format!(
                        "global number {} of element {i} is not below the set's {global_rows} \
                         rows over all ranks",
                        gids[i]
                    ),
                }),
                None => Ok(()),
            };
            agree(&*self.engine.comm, &ck.config.path, checked)?;
            ck.numbering.insert(
                set.id(),
                Arc::new(Numbering {
                    gids,
                    owned,
                    global_rows,
                }),
            );
        }
        Ok(())
    }

    /// Notes a declared set, map, Dat, Global or Const; while restarting it must be one the
    /// checkpoint's program declared (on one process checked whole now, across ranks at the
    /// backup point).
    pub(crate) fn checkpoint_declare(
        &self,
        kind: &'static str,
        name: &str,
        what: DeclaredAs<'_>,
    ) -> Result<()> {
        let Some(mut guard) = self.checkpointer() else {
            return Ok(());
        };
        let ck = &mut *guard;
        let occurrence = ck
            .declared
            .iter()
            .filter(|d| d.kind == kind && d.name == name)
            .count() as u32;
        let source = match what {
            DeclaredAs::Set(s) => Source::Set(s.clone()),
            DeclaredAs::Map(m) => Source::Map(m.clone()),
            DeclaredAs::Dat { dat, values } => {
                let CarrierKind::Dat(set) = dat.kind() else {
                    unreachable!("a Dat's carrier")
                };
                let rows = ck.rows(set);
                let row = values.len() / set.total_size().max(1);
                let mut h = RowHash::default();
                for i in 0..rows.owned() {
                    h.add(rows.gid(i), |b| {
                        b.extend_from_slice(&values[i * row..(i + 1) * row])
                    });
                }
                ck.dats.push((Arc::downgrade(dat), occurrence));
                Source::Dat {
                    set: set.clone(),
                    dim: dat.dim(),
                    dtype: dat.dtype(),
                    hash: h.sum,
                }
            }
            DeclaredAs::Replicated { sizes, values } => Source::Replicated {
                sizes,
                hash: hash_bytes(0, values),
            },
        };
        let declared = Declared {
            kind,
            name: name.into(),
            occurrence,
            source,
        };
        if let Some(r) = &ck.replay {
            let (now, partial) = ck.fingerprint(&declared);
            let path = &ck.config.path;
            match r.image.decls.iter().find(|d| d.key() == now.key()) {
                None => {
                    return Err(mismatch(
                        path,
                        format!(
                            "{} is declared, the checkpoint's program has no such {kind}",
                            now.describe()
                        ),
                    ));
                }
                // Sets are numbered after they are declared: checked at the backup point.
                Some(d)
                    if (!partial || self.engine.comm.size() == 1) && kind != "set" && *d != now =>
                {
                    return Err(mismatch(
                        path,
                        format!(
                            "{} is declared, the checkpoint's is {}{}",
                            now.describe(),
                            d.describe(),
                            if d.sizes == now.sizes {
                                " with other values"
                            } else {
                                ""
                            }
                        ),
                    ));
                }
                Some(_) => {}
            }
        }
        ck.declared.push(declared);
        Ok(())
    }

    /// Every declaration's fingerprint, over all ranks (collective across ranks), sorted.
    fn fingerprints(&self, ck: &Checkpointer) -> Result<Vec<Decl>> {
        let mut decls = Vec::with_capacity(ck.declared.len());
        let mut partials = Vec::new();
        for d in &ck.declared {
            let (decl, partial) = ck.fingerprint(d);
            if partial {
                partials.push(decls.len());
            }
            decls.push(decl);
        }
        let mut values: Vec<u64> = partials
            .iter()
            .flat_map(|&i| [decls[i].sizes[0], decls[i].hash])
            .collect();
        sum_over_ranks(&*self.engine.comm, &mut values)?;
        for (k, &i) in partials.iter().enumerate() {
            decls[i].sizes[0] = values[2 * k];
            decls[i].hash = values[2 * k + 1];
        }
        decls.sort();
        Ok(decls)
    }

    /// Before a loop is recorded: replays it while restarting, loads the checkpoint at its
    /// backup point, decides which Dats the checkpoint being taken saves, and takes a new one
    /// when it is due. Across ranks every rank calls this for the same loops, in order.
    pub(crate) fn checkpoint_before_loop(
        &self,
        kernel: &str,
        set: &Set,
        args: &[Arg],
        sigs: &[ArgSig],
        carriers: &[Arc<Carrier>],
        maps: &[Map],
    ) -> Result<LoopFate> {
        if self.state.checkpointer.is_none() {
            return Ok(LoopFate::Run(0));
        }
        // The order of locks everywhere: exec, then the checkpointer, then state or history.
        let _order = lock(&self.engine.exec);
        let mut guard = self.checkpointer().expect("checked above");
        let ck = &mut *guard;
        if let Some(why) = &ck.broken {
            return Err(mismatch(&ck.config.path, why.clone()));
        }
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
                            return Err(mismatch(
                                &ck.config.path,
                                format!(
                                    "the kernels of the loops are not the checkpoint's: loop \
                                     {index} (`{kernel}`) has no Global at arg {}, as the \
                                     checkpoint's loop {index} had",
                                    g.arg
                                ),
                            ));
                        };
                        let path = &ck.config.path;
                        overwrite(self.engine, c, |host| {
                            if host.len() != g.bytes.len() {
                                return Err(mismatch(
                                    path,
                                    format!("global `{}` has another size", c.name()),
                                ));
                            }
                            host.copy_from_slice(&g.bytes);
                            Ok(())
                        })?;
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
            if let Err(e) = self.load_checkpoint(ck) {
                ck.broken = Some(format!("loading it failed: {e}"));
                return Err(e);
            }
        }

        let ranks = self.engine.comm.size();
        let mut due = ck.due(kernel, ranks);
        if matches!(ck.config.every, CheckpointEvery::Time(_))
            && ranks > 1
            && index % TIME_CHECK_LOOPS == 0
            && index > 0
        {
            // Rank 0's clock decides for all.
            let mine = [due && self.engine.comm.rank() == 0];
            due = any_rank(&*self.engine.comm, &mine)?[0];
        }
        if due {
            if let Some(d) = ck.deciding.take() {
                // The last one is still undecided about some Dats: their values have not
                // changed since its backup point, so they are saved as they are now.
                self.complete(ck, d)?;
            }
            // A failed background write is every rank's error.
            let written = ck.reap_writer(false);
            agree(&*self.engine.comm, &ck.config.path, written)?;
            // The backup point: everything recorded so far runs first.
            let ran = self.rt.run_pending();
            agree(&*self.engine.comm, &ck.config.path, ran)?;
            self.start_checkpoint(ck, index)?;
        } else if ranks == 1 {
            ck.reap_writer(false)?;
        }
        if let Some(mut d) = ck.deciding.take() {
            self.decide(ck, &mut d, set, sigs, carriers, maps)?;
            let done = d.undecided.iter().all(|u| u.saved.is_some());
            let done = if ranks > 1 && !d.undecided.is_empty() {
                !any_rank(&*self.engine.comm, &[!done])?[0]
            } else {
                done
            };
            if done {
                self.complete(ck, d)?;
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
    /// checkpoint's, loads its Dats (each rank its rows, by global number) and Consts, and ends
    /// the replay. Collective across ranks.
    fn load_checkpoint(&self, ck: &mut Checkpointer) -> Result<()> {
        let replay = ck.replay.take().expect("called while restarting");
        let image = &replay.image;
        let path = ck.config.path.clone();
        let now = self.fingerprints(ck)?;
        if now != image.decls {
            let first = image
                .decls
                .iter()
                .zip(&now)
                .find(|(a, b)| a != b)
                .map(|(a, b)| {
                    format!(
                        "{} is declared, the checkpoint's is {}",
                        b.describe(),
                        a.describe()
                    )
                })
                .unwrap_or_else(|| {
                    format!(
                        "the checkpoint's program declared {} objects before loop {}, this one {}",
                        image.decls.len(),
                        image.backup,
                        now.len()
                    )
                });
            return Err(mismatch(&path, first));
        }
        if ck.loops_hash != image.loops_hash {
            return Err(mismatch(
                &path,
                format!(
                    "the kernels of loops 0..{} are not the checkpoint's",
                    image.backup
                ),
            ));
        }
        // Rows that do not fit are this rank's error; every rank learns that one failed.
        let mut loaded = Ok(());
        for saved in &image.dats {
            let dat = ck
                .dats
                .iter()
                .filter(|(_, k)| *k == saved.occurrence)
                .filter_map(|(d, _)| d.upgrade())
                .find(|d| d.name() == saved.name);
            let Some(dat) = dat else {
                loaded = Err(mismatch(
                    &path,
                    format!("dat `{}` is not declared or was dropped", saved.name),
                ));
                break;
            };
            let CarrierKind::Dat(set) = dat.kind() else {
                unreachable!("a Dat's carrier")
            };
            let rows = ck.rows(set);
            let row = saved.row_bytes as usize;
            loaded = overwrite(self.engine, &dat, |host| {
                if Some(host.len()) != set.total_size().checked_mul(row) {
                    return Err(mismatch(
                        &path,
                        format!("dat `{}` has rows of another size", saved.name),
                    ));
                }
                for i in 0..set.total_size() {
                    let g = rows.gid(i) as usize;
                    let src = g
                        .checked_mul(row)
                        .and_then(|a| saved.bytes.get(a..a.checked_add(row)?));
                    let Some(src) = src else {
                        return Err(mismatch(
                            &path,
                            format!(
                                "dat `{}`: global row {g} is not in the checkpoint ({} rows)",
                                saved.name,
                                saved.bytes.len() / row.max(1)
                            ),
                        ));
                    };
                    host[i * row..(i + 1) * row].copy_from_slice(src);
                }
                Ok(())
            });
            if loaded.is_err() {
                break;
            }
        }
        if loaded.is_ok() {
            let consts = lock(&self.engine.consts).clone();
            for (name, bytes) in &image.consts {
                let Some(c) = consts.iter().find(|c| c.name() == name) else {
                    loaded = Err(mismatch(&path, format!("const `{name}` is not declared")));
                    break;
                };
                loaded = overwrite(self.engine, c, |host| {
                    if host.len() != bytes.len() {
                        return Err(mismatch(&path, format!("const `{name}` has another size")));
                    }
                    host.copy_from_slice(bytes);
                    Ok(())
                });
                if loaded.is_err() {
                    break;
                }
            }
        }
        if self
            .engine
            .comm
            .first_failed_rank(loaded.is_err())?
            .is_some()
        {
            loaded?;
            return Err(mismatch(
                &path,
                "another rank could not load its rows".into(),
            ));
        }
        // The next checkpoint replays the loops before this one's backup point too.
        if let Some(history) = self.history() {
            let mut h = lock(history);
            let later = std::mem::take(&mut h.values);
            h.values.extend(image.history.iter().cloned());
            h.values.extend(later);
        }
        ck.restored_at = Some(image.backup);
        ck.stats.restored_from = Some(image.backup);
        ck.since = Instant::now();
        Ok(())
    }

    /// Starts a checkpoint at backup point `index` (everything recorded before it has run).
    /// Collective across ranks: which Dats are dirty is agreed (a host write on one rank makes
    /// a Dat dirty everywhere).
    fn start_checkpoint(&self, ck: &mut Checkpointer, index: u64) -> Result<()> {
        // Every Dat ever declared, by declaration: the same list on every rank (checked), so
        // the flags below line up. A Dat dropped on any rank is left out everywhere.
        let path = ck.config.path.clone();
        if !same_everywhere(&*self.engine.comm, ck.dats.len() as u64)? {
            return Err(mismatch(
                &path,
                "the ranks declared different numbers of Dats".into(),
            ));
        }
        let alive: Vec<Option<(Arc<Carrier>, u32)>> = ck
            .dats
            .iter()
            .map(|(d, k)| d.upgrade().map(|d| (d, *k)))
            .collect();
        // A released temporary's values mean nothing any more: as good as dropped.
        let dropped: Vec<bool> = alive
            .iter()
            .map(|d| {
                d.as_ref().is_none_or(|(d, _)| {
                    d.temporary.load(Ordering::Acquire) == crate::model::carrier::TEMPORARY_RELEASED
                })
            })
            .collect();
        let dropped = any_rank(&*self.engine.comm, &dropped)?;
        let dirty: Vec<bool> = alive
            .iter()
            .map(|d| d.as_ref().is_some_and(|(d, _)| ck.dirty.contains(&d.id)))
            .collect();
        let dirty = any_rank(&*self.engine.comm, &dirty)?;
        let mut all: Vec<u64> = alive
            .iter()
            .map(|d| match d.as_ref().map(|(d, _)| (d, d.kind())) {
                Some((d, CarrierKind::Dat(set))) => {
                    (ck.rows(set).owned() * d.dim() * d.dtype().size()) as u64
                }
                _ => 0,
            })
            .collect();
        sum_over_ranks(&*self.engine.comm, &mut all)?;
        let undecided = alive
            .into_iter()
            .zip(dirty.iter().zip(&dropped))
            .filter_map(|(d, (&dirty, &dropped))| {
                let (dat, occurrence) = d.filter(|_| dirty && !dropped)?;
                Some(Undecided {
                    dat,
                    occurrence,
                    saved: None,
                })
            })
            .collect();
        let consts = lock(&self.engine.consts).clone();
        let consts = consts
            .iter()
            .map(|c| Ok((c.name().to_string(), host_bytes(self.engine, c)?)))
            .collect::<Result<Vec<_>>>();
        let history = self.history().expect("history is kept when checkpointing");
        let history = {
            let h = lock(history);
            match &h.error {
                Some(why) => Err(Op2Error::CheckpointWrite {
                    path: ck.config.path.clone(),
                    reason: format!("a Global's value could not be recorded: {why}"),
                }),
                None => Ok(h.values.clone()),
            }
        };
        let (consts, mut history) = agree(
            &*self.engine.comm,
            &ck.config.path,
            consts.and_then(|c| Ok((c, history?))),
        )?;
        // Loops can run out of program order (a host read forces only what it needs).
        history.sort_by_key(|g| (g.at, g.arg));
        ck.deciding = Some(Deciding {
            error: None,
            image: Image {
                backup: index,
                loops_hash: ck.loops_hash,
                decls: self.fingerprints(ck)?,
                history,
                consts,
                dats: Vec::new(),
                all_dat_bytes: all.iter().sum(),
            },
            undecided,
            saved: Vec::new(),
        });
        ck.since = Instant::now();
        Ok(())
    }

    /// This rank's owned rows of a Dat.
    fn owned_bytes(&self, ck: &Checkpointer, dat: &Carrier) -> Result<Vec<u8>> {
        let CarrierKind::Dat(set) = dat.kind() else {
            unreachable!("a Dat's carrier")
        };
        // Rows are saved by global number: across ranks a saved Dat's set needs one.
        if self.engine.comm.size() > 1 && !ck.numbering.contains_key(&set.id()) {
            return Err(Op2Error::CheckpointWrite {
                path: ck.config.path.clone(),
                reason: format!(
                    "dat `{}` must be saved, but its set `{}` has no global numbers \
                     (Runtime::number_globally; op2-mpi's partitioned meshes have them)",
                    dat.name(),
                    set.name()
                ),
            });
        }
        let mut bytes = host_bytes(self.engine, dat)?;
        let row = dat.dim() * dat.dtype().size();
        bytes.truncate(ck.rows(set).owned() * row);
        Ok(bytes)
    }

    /// Decides the undecided Dats a loop uses: saved when it reads them, writes only part of
    /// their rows, or a rank saved them already. Collective across ranks.
    fn decide(
        &self,
        ck: &Checkpointer,
        d: &mut Deciding,
        set: &Set,
        sigs: &[ArgSig],
        carriers: &[Arc<Carrier>],
        maps: &[Map],
    ) -> Result<()> {
        let used: Vec<usize> = (0..d.undecided.len())
            .filter(|&k| carriers.iter().any(|c| c.id == d.undecided[k].dat.id))
            .collect();
        if used.is_empty() {
            return Ok(());
        }
        let mut needs = Vec::with_capacity(used.len());
        for &k in &used {
            let u = &d.undecided[k];
            let CarrierKind::Dat(dset) = u.dat.kind() else {
                unreachable!("a Dat's carrier")
            };
            let reads = sigs
                .iter()
                .zip(carriers)
                .any(|(s, c)| c.id == u.dat.id && s.access.reads());
            let owned = ck.rows(dset).owned();
            needs.push(
                u.saved.is_some()
                    || reads
                    || !covers_owned_rows(&u.dat, owned, set, sigs, carriers, maps),
            );
        }
        let needs = any_rank(&*self.engine.comm, &needs)?;
        let mut result = match d.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        };
        // Removed from the back, so the positions still to come stay valid.
        for (&k, &need) in used.iter().zip(&needs).rev() {
            let u = d.undecided.remove(k);
            if need {
                result = result.and(self.save(ck, &mut d.saved, u));
            }
        }
        agree(&*self.engine.comm, &ck.config.path, result)
    }

    /// Saves a decided Dat: the rows a host access saved, or its rows now.
    fn save(&self, ck: &Checkpointer, saved: &mut Vec<Saved>, u: Undecided) -> Result<()> {
        let bytes = match u.saved {
            Some(b) => b,
            None => self.owned_bytes(ck, &u.dat)?,
        };
        saved.push(Saved {
            dat: u.dat,
            occurrence: u.occurrence,
            bytes,
        });
        Ok(())
    }

    /// Finishes a checkpoint: the Dats still undecided are saved as they are (their values are
    /// the backup point's), every rank's rows go to rank 0 in global numbering, and rank 0
    /// writes the file in the background. Collective across ranks.
    fn complete(&self, ck: &mut Checkpointer, mut d: Deciding) -> Result<()> {
        let path = ck.config.path.clone();
        let mut result = match d.error.take() {
            Some(e) => Err(e),
            None => Ok(()),
        };
        for u in std::mem::take(&mut d.undecided) {
            result = result.and(self.save(ck, &mut d.saved, u));
        }
        agree(&*self.engine.comm, &path, result)?;
        // The same order on every rank.
        d.saved
            .sort_by(|a, b| (a.dat.name(), a.occurrence).cmp(&(b.dat.name(), b.occurrence)));
        let mut image = d.image;
        let lead = self.engine.comm.rank() == 0;
        let assembled = self.assemble(ck, &d.saved);
        image.dats = agree(&*self.engine.comm, &path, assembled)?;
        // One write at a time, in order: the newer must not be overtaken by the older.
        let written = if lead { ck.reap_writer(true) } else { Ok(()) };
        agree(&*self.engine.comm, &path, written)?;
        ck.stats.taken += 1;
        ck.stats.last_backup = Some(image.backup);
        ck.stats.saved_dats = d.saved.iter().map(|s| s.dat.name().to_string()).collect();
        ck.stats.all_dat_bytes = image.all_dat_bytes;
        let mut saved_bytes = [d.saved.iter().map(|s| s.bytes.len() as u64).sum::<u64>()];
        sum_over_ranks(&*self.engine.comm, &mut saved_bytes)?;
        ck.stats.saved_dat_bytes = saved_bytes[0];
        if !lead {
            return Ok(());
        }
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

    /// The saved Dats in global numbering, on rank 0 (empty on the others): each rank sends its
    /// owned rows with their global numbers.
    fn assemble(&self, ck: &Checkpointer, saved: &[Saved]) -> Result<Vec<SavedDat>> {
        let ranks = self.engine.comm.size();
        let layout = |s: &Saved| {
            let CarrierKind::Dat(set) = s.dat.kind() else {
                unreachable!("a Dat's carrier")
            };
            (ck.rows(set), s.dat.dim() * s.dat.dtype().size())
        };
        if ranks == 1 {
            return saved
                .iter()
                .map(|s| {
                    let (rows, row) = layout(s);
                    let bytes = match rows {
                        Rows::Identity(_) => s.bytes.clone(),
                        Rows::Numbered(n) => {
                            let mut b = vec![0u8; n.global_rows as usize * row];
                            let mut filled = vec![0u32; n.global_rows as usize];
                            for i in 0..n.owned {
                                let g = n.gids[i] as usize;
                                filled[g] += 1;
                                b[g * row..(g + 1) * row]
                                    .copy_from_slice(&s.bytes[i * row..(i + 1) * row]);
                            }
                            check_filled(&ck.config.path, s.dat.name(), &filled)?;
                            b
                        }
                    };
                    Ok(SavedDat {
                        name: s.dat.name().into(),
                        occurrence: s.occurrence,
                        row_bytes: row as u64,
                        bytes,
                    })
                })
                .collect();
        }
        // Per Dat: this rank's owned rows, their global numbers, then their bytes.
        let mut message = Vec::new();
        let mut totals = Vec::with_capacity(saved.len());
        for s in saved {
            let (rows, _) = layout(s);
            let owned = rows.owned();
            totals.push(owned as u64);
            message.extend_from_slice(&(owned as u64).to_le_bytes());
            for i in 0..owned {
                message.extend_from_slice(&rows.gid(i).to_le_bytes());
            }
            message.extend_from_slice(&s.bytes);
        }
        sum_over_ranks(&*self.engine.comm, &mut totals)?;
        let mut sends = vec![Vec::new(); ranks];
        sends[0] = message;
        let got = self.engine.comm.all_to_all_v(sends)?;
        if self.engine.comm.rank() != 0 {
            return Ok(Vec::new());
        }
        let mut out: Vec<SavedDat> = saved
            .iter()
            .zip(&totals)
            .map(|(s, &rows)| {
                let row = layout(s).1;
                SavedDat {
                    name: s.dat.name().into(),
                    occurrence: s.occurrence,
                    row_bytes: row as u64,
                    bytes: vec![0u8; rows as usize * row],
                }
            })
            .collect();
        let broken = |from: usize| Op2Error::Communication {
            reason: format!("rank {from} sent a checkpoint message that does not parse"),
        };
        let mut filled: Vec<Vec<u32>> = out
            .iter()
            .map(|d| vec![0u32; d.bytes.len() / (d.row_bytes as usize).max(1)])
            .collect();
        for (from, m) in got.iter().enumerate() {
            let mut at = 0usize;
            let mut take = |n: usize| -> Result<&[u8]> {
                let s = m.get(at..at + n).ok_or_else(|| broken(from))?;
                at += n;
                Ok(s)
            };
            for (d, filled) in out.iter_mut().zip(&mut filled) {
                let row = d.row_bytes as usize;
                let n = u64::from_le_bytes(take(8)?.try_into().expect("8 bytes")) as usize;
                let gids: Vec<usize> = take(8 * n)?
                    .chunks_exact(8)
                    .map(|b| u64::from_le_bytes(b.try_into().expect("8 bytes")) as usize)
                    .collect();
                let bytes = take(n * row)?;
                for (i, g) in gids.into_iter().enumerate() {
                    let dst = g
                        .checked_mul(row)
                        .and_then(|a| d.bytes.get_mut(a..a + row))
                        .ok_or_else(|| broken(from))?;
                    dst.copy_from_slice(&bytes[i * row..(i + 1) * row]);
                    filled[g] += 1;
                }
            }
        }
        for (d, filled) in out.iter().zip(&filled) {
            check_filled(&ck.config.path, &d.name, filled)?;
        }
        Ok(out)
    }

    /// A host access to `carrier`: refused for a Dat whose value replayed loops would have
    /// changed; an undecided Dat is saved first (on this rank; the others save it when the
    /// next loop that uses it decides); a write makes a Dat dirty.
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
        if let Some(mut d) = ck.deciding.take() {
            if let Some(u) = d
                .undecided
                .iter_mut()
                .find(|u| u.dat.id == carrier.id && u.saved.is_none())
            {
                // A failure is reported at the next step the ranks take together (a rank
                // alone returning here would leave the others waiting in this access's loops).
                match self.owned_bytes(ck, &u.dat) {
                    Ok(b) => u.saved = Some(b),
                    Err(e) => {
                        d.error.get_or_insert(e);
                    }
                }
            }
            // On one process the checkpoint is complete once every Dat is saved or decided
            // (across ranks that is agreed at the next loop).
            if self.engine.comm.size() == 1
                && d.error.is_none()
                && d.undecided.iter().all(|u| u.saved.is_some())
            {
                self.complete(ck, d)?;
            } else {
                ck.deciding = Some(d);
            }
        }
        if write {
            ck.dirty.insert(carrier.id);
        }
        Ok(())
    }

    /// After a loop ran (and its reductions finished): the values of the Globals it wrote. The
    /// loop has run, so a failure here is kept for the next checkpoint to report (returning it
    /// would count the loop as failed and run it again).
    pub(crate) fn checkpoint_globals(&self, at: u64, globals: &[(usize, &Arc<Carrier>)]) {
        let Some(history) = self.history() else {
            return;
        };
        let mut h = lock(history);
        for (arg, c) in globals {
            match host_bytes(self.engine, c) {
                Ok(bytes) => h.values.push(GlobalValue {
                    at,
                    arg: *arg as u32,
                    bytes,
                }),
                Err(e) => {
                    h.error
                        .get_or_insert(format!("global `{}` after loop {at}: {e}", c.name()));
                }
            }
        }
    }

    /// Completes the checkpoint being taken (saving the Dats still undecided as they are) and
    /// waits until it is on disk. Collective across ranks (a failure is every rank's).
    pub(crate) fn checkpoint_wait(&self) -> Result<()> {
        let _order = lock(&self.engine.exec);
        let Some(mut guard) = self.checkpointer() else {
            return Ok(());
        };
        let ck = &mut *guard;
        let mut result = match ck.deciding.take() {
            Some(d) => self.complete(ck, d),
            None => Ok(()),
        };
        if result.is_ok() {
            result = ck.reap_writer(true);
        }
        if self.engine.comm.size() > 1
            && self
                .engine
                .comm
                .first_failed_rank(result.is_err())?
                .is_some()
        {
            result?;
            return Err(Op2Error::CheckpointWrite {
                path: ck.config.path.clone(),
                reason: "another rank failed".into(),
            });
        }
        result
    }

    /// When the runtime goes away: completes the checkpoint being taken and waits for the
    /// writer. The Dats still undecided are saved as they are: this run used them no more, but
    /// a program stopped early (fewer iterations than planned) may be restarted to go further.
    pub(crate) fn checkpoint_finish(&self) -> Result<()> {
        if let Some(ck) = self.checkpointer() {
            if let Some(r) = &ck.replay {
                eprintln!(
                    "op2: the program ended after {} loops, before the checkpoint's backup point \
                     (loop {}) in {}",
                    ck.loops,
                    r.image.backup,
                    ck.config.path.display()
                );
            }
        }
        self.checkpoint_wait()
    }

    /// What checkpointing has done so far.
    pub(crate) fn checkpoint_stats(&self) -> Option<CheckpointStats> {
        self.checkpointer().map(|ck| ck.stats.clone())
    }
}
