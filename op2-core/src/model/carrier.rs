//! Data carriers: Dats (data on a set), Globals (reduction targets and small read-only arrays) and
//! Consts (named values visible in every kernel), sharing one untyped core, plus their host guards.

use crate::model::comm::Communicator;
use crate::model::dtype::{DType, HostBuffer, Scalar};
use crate::model::error::{Op2Error, Result};
use crate::model::set::Set;
use crate::model::trace::section;
use std::fmt;
use std::marker::PhantomData;
use std::ops::{Deref, DerefMut};
use std::sync::atomic::{AtomicBool, AtomicU8, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard, RwLockWriteGuard, Weak};

/// What a carrier is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CarrierKind {
    /// Data on a set: `set.total_size() * dim` values.
    Dat(Set),
    /// A global: `dim` values, a loop arg of mode READ, INC, MIN or MAX.
    Global,
    /// A named const: `dim` values visible by name in every kernel.
    Const,
}

/// Both halo sections ([`section`] bits), as a Dat's staleness.
pub(crate) const HALO_BOTH: u8 = section::EXEC_HALO | section::NONEXEC_HALO;

/// What a carrier needs from the runtime that declared it: the model reaches the runtime only
/// through this trait, so the data model never depends on how loops are recorded or run.
pub(crate) trait CarrierOwner: Send + Sync {
    /// Runs the pending work a host read (`write == false`) or write of `carrier` must follow,
    /// then lets the backend bring the carrier's data home.
    fn force_for_host(&self, carrier: &Carrier, write: bool) -> Result<()>;
    /// The communicator of the ranks the runtime runs on.
    fn communicator(&self) -> Arc<dyn Communicator>;
    /// The owner itself, for the runtime to find its own type again (Dat algebra records loops
    /// on the runtime a Dat belongs to).
    fn as_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync>;
}

/// The type behind the dangling owner of carriers that belong to no user-visible runtime (scratch
/// copies, reduction partials): `Weak::<NoOwner>::new()` never upgrades, so these methods never
/// run; they exist because a `Weak<dyn CarrierOwner>` needs a concrete type to start from.
struct NoOwner;

impl CarrierOwner for NoOwner {
    fn force_for_host(&self, _: &Carrier, _: bool) -> Result<()> {
        Ok(())
    }
    fn communicator(&self) -> Arc<dyn Communicator> {
        Arc::new(crate::model::comm::SelfCommunicator)
    }
    fn as_any(self: Arc<Self>) -> Arc<dyn std::any::Any + Send + Sync> {
        self
    }
}

/// The untyped core of a Dat, Global or Const: identity, shape and host data.
/// Backends see this type; users hold the typed handles.
pub struct Carrier {
    pub(crate) id: u64,
    pub(crate) runtime_id: u64,
    pub(crate) name: String,
    pub(crate) kind: CarrierKind,
    pub(crate) dim: usize,
    /// Kept beside the buffer so that reading it never waits for the buffer's lock.
    pub(crate) dtype: DType,
    pub(crate) host: RwLock<HostBuffer>,
    /// The runtime that declared it; dangling once that runtime is dropped (or for carriers of
    /// the runtime's own use).
    pub(crate) rt: Weak<dyn CarrierOwner>,
    /// Which halo sections of a Dat are out of date ([`section`] bits), as of
    /// the loops recorded so far (the trace exchanges a stale section before a loop that reads
    /// it, and marks sections stale after a write). New Dats start out of date, as OP2's do:
    /// whatever the caller put in their halo rows, the first loop that reads them through a map
    /// gets the owners' values.
    pub(crate) halo_stale: AtomicU8,
    /// Whether the host copy's storage was given back (a device holds the only valid data and the
    /// program never asked for the values on the host). Changed only under the host lock.
    host_released: AtomicBool,
    /// Whether the program asked for the values on the host (its host copy is then kept).
    host_wanted: AtomicBool,
    /// A temporary Dat's state: [`TEMPORARY_NOT`], [`TEMPORARY_LIVE`] or [`TEMPORARY_RELEASED`].
    pub(crate) temporary: AtomicU8,
}

/// Not a temporary Dat.
pub(crate) const TEMPORARY_NOT: u8 = 0;
/// A temporary Dat in use.
pub(crate) const TEMPORARY_LIVE: u8 = 1;
/// A temporary Dat released: using it is an error.
pub(crate) const TEMPORARY_RELEASED: u8 = 2;

impl Carrier {
    pub(crate) fn new(
        id: u64,
        runtime_id: u64,
        rt: Weak<dyn CarrierOwner>,
        kind: CarrierKind,
        name: &str,
        dim: usize,
        host: HostBuffer,
    ) -> Arc<Self> {
        Arc::new(Carrier {
            id,
            runtime_id,
            name: name.into(),
            kind,
            dim,
            dtype: host.dtype(),
            host: RwLock::new(host),
            rt,
            halo_stale: AtomicU8::new(HALO_BOTH),
            host_released: AtomicBool::new(false),
            host_wanted: AtomicBool::new(false),
            temporary: AtomicU8::new(TEMPORARY_NOT),
        })
    }

    /// A carrier belonging to no runtime's user, for the runtime's own use (reduction partials of
    /// one rank, scratch copies): like `like`, with `host` as its data.
    pub(crate) fn detached(like: &Carrier, id: u64, what: &str, host: HostBuffer) -> Arc<Self> {
        Carrier::new(
            id,
            like.runtime_id,
            Weak::<NoOwner>::new(),
            like.kind.clone(),
            &format!("{} ({what})", like.name),
            like.dim,
            host,
        )
    }

    /// Unique id of this carrier.
    pub fn id(&self) -> u64 {
        self.id
    }

    /// Its name.
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Dat, Global or Const.
    pub fn kind(&self) -> &CarrierKind {
        &self.kind
    }

    /// Values per element.
    pub fn dim(&self) -> usize {
        self.dim
    }

    /// Element type.
    pub fn dtype(&self) -> DType {
        self.dtype
    }

    /// "dat", "global" or "const", for messages.
    pub fn what(&self) -> &'static str {
        match self.kind {
            CarrierKind::Dat(_) => "dat",
            CarrierKind::Global => "global",
            CarrierKind::Const => "const",
        }
    }

    /// Locks the host data for a loop (shared when the loop only reads it); errors instead of blocking
    /// when a host guard that conflicts is alive.
    pub fn lock_for_loop(&self, kernel: &str, write: bool) -> Result<LoopLock<'_>> {
        let borrowed = || Op2Error::DataBorrowed {
            what: self.what(),
            name: self.name.clone(),
            kernel: kernel.into(),
        };
        // A poisoned lock only means a panic happened elsewhere; the data is plain numbers, still usable.
        if write {
            match self.host.try_write() {
                Ok(g) => Ok(LoopLock::Write(g)),
                Err(std::sync::TryLockError::Poisoned(p)) => Ok(LoopLock::Write(p.into_inner())),
                Err(std::sync::TryLockError::WouldBlock) => Err(borrowed()),
            }
        } else {
            match self.host.try_read() {
                Ok(g) => Ok(LoopLock::Read(g)),
                Err(std::sync::TryLockError::Poisoned(p)) => Ok(LoopLock::Read(p.into_inner())),
                Err(std::sync::TryLockError::WouldBlock) => Err(borrowed()),
            }
        }
    }

    /// Whether the host copy holds no storage now: a device backend holds the only valid data
    /// ([`Carrier::release_host`]). Its [`LoopLock`] then has no bytes.
    pub fn host_released(&self) -> bool {
        self.host_released.load(Ordering::Acquire)
    }

    /// Gives back a Dat's host storage, for a device backend whose copy is the only valid one:
    /// unless the program asked for the values on the host (reading or writing them), which
    /// keeps the host copy for next time, or the host data is locked now. Returns whether the
    /// storage is released. [`Carrier::lock_host_restored`] allocates it again.
    pub fn release_host(&self) -> bool {
        if !matches!(self.kind, CarrierKind::Dat(_)) || self.host_wanted.load(Ordering::Relaxed) {
            return self.host_released();
        }
        let Ok(mut g) = self.host.try_write() else {
            return self.host_released();
        };
        g.release();
        self.host_released.store(true, Ordering::Release);
        true
    }

    /// Locks the host data for writing, its storage allocated again (zero-filled) when it was
    /// released: for a device backend about to copy the valid data home into it.
    pub fn lock_host_restored(&self, kernel: &str) -> Result<LoopLock<'_>> {
        let mut lock = self.lock_for_loop(kernel, true)?;
        if let LoopLock::Write(g) = &mut lock {
            if g.is_released() {
                g.restore();
                self.host_released.store(false, Ordering::Release);
            }
        }
        Ok(lock)
    }

    /// Notes that the host copy holds storage again (a temporary given its memory).
    pub(crate) fn mark_host_allocated(&self) {
        self.host_released.store(false, Ordering::Release);
    }

    /// Notes that the host copy holds no storage (a temporary that gave its memory back).
    pub(crate) fn mark_host_released(&self) {
        self.host_released.store(true, Ordering::Release);
    }

    /// [`Op2Error::TemporaryReleased`] when this is a released temporary; `context` says where.
    pub(crate) fn check_not_released(&self, context: &str) -> Result<()> {
        if self.temporary.load(Ordering::Acquire) == TEMPORARY_RELEASED {
            return Err(Op2Error::TemporaryReleased {
                name: self.name.clone(),
                context: context.into(),
            });
        }
        Ok(())
    }

    /// Whether this is a temporary Dat ([`crate::Runtime::decl_temporary`]).
    pub fn is_temporary(&self) -> bool {
        self.temporary.load(Ordering::Acquire) != TEMPORARY_NOT
    }

    /// The runtime this belongs to, as its owner trait object (`None` once it is dropped).
    pub(crate) fn owner(&self) -> Option<Arc<dyn CarrierOwner>> {
        self.rt.upgrade()
    }

    /// The communicator of the runtime this belongs to (`None` once that runtime is dropped).
    pub fn communicator(&self) -> Option<Arc<dyn Communicator>> {
        self.rt.upgrade().map(|owner| owner.communicator())
    }

    /// Runs whatever pending work the host access needs, then lets the backend bring data home.
    fn prepare_host_access(self: &Arc<Self>, write: bool) -> Result<()> {
        self.check_not_released(if write { "host write" } else { "host read" })?;
        self.host_wanted.store(true, Ordering::Relaxed);
        if let Some(rt) = self.rt.upgrade() {
            rt.force_for_host(self, write)?;
        }
        if write {
            // The caller may change owned rows that other ranks hold as halo.
            self.halo_stale.store(HALO_BOTH, Ordering::Relaxed);
        }
        Ok(())
    }

    /// A copy of the values, after the pending loops that write them ran.
    fn values<T: Scalar>(self: &Arc<Self>) -> Result<Vec<T>> {
        self.prepare_host_access(false)?;
        Ok(self.read_guard()?.as_slice::<T>().to_vec())
    }

    /// Replaces all `dim` values, after the pending loops that use them ran.
    fn set_values<T: Scalar>(self: &Arc<Self>, values: &[T]) -> Result<()> {
        check_len(self.what(), &self.name, self.dim, values.len())?;
        self.prepare_host_access(true)?;
        self.write_guard()?
            .as_mut_slice::<T>()
            .copy_from_slice(values);
        Ok(())
    }

    fn read_guard(&self) -> Result<RwLockReadGuard<'_, HostBuffer>> {
        let g = self.host.try_read().map_err(|_| Op2Error::DataBorrowed {
            what: self.what(),
            name: self.name.clone(),
            kernel: "host read".into(),
        })?;
        self.present(&g)?;
        Ok(g)
    }

    fn write_guard(&self) -> Result<RwLockWriteGuard<'_, HostBuffer>> {
        let g = self.host.try_write().map_err(|_| Op2Error::DataBorrowed {
            what: self.what(),
            name: self.name.clone(),
            kernel: "host write".into(),
        })?;
        self.present(&g)?;
        Ok(g)
    }

    /// The host copy is there for a host access: a released one is restored by the backend's copy
    /// home, so one still released means its runtime went away without bringing the data home.
    fn present(&self, host: &HostBuffer) -> Result<()> {
        if host.is_released() {
            return Err(Op2Error::HostDataLost {
                what: self.what(),
                name: self.name.clone(),
            });
        }
        Ok(())
    }
}

impl fmt::Debug for Carrier {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}({:?}, dim {})", self.what(), self.name, self.dim)
    }
}

/// Host data locked for the duration of one loop.
pub enum LoopLock<'a> {
    /// The loop only reads the data.
    Read(RwLockReadGuard<'a, HostBuffer>),
    /// The loop may write the data.
    Write(RwLockWriteGuard<'a, HostBuffer>),
}

impl LoopLock<'_> {
    /// Pointer to the data for generated code; code must not write through it for a `Read` lock.
    pub fn pointer(&mut self) -> *mut std::ffi::c_void {
        match self {
            LoopLock::Read(g) => g.as_ptr().cast_mut(),
            LoopLock::Write(g) => g.as_mut_ptr(),
        }
    }

    /// The data's bytes.
    pub fn bytes(&self) -> &[u8] {
        match self {
            LoopLock::Read(g) => g.as_bytes(),
            LoopLock::Write(g) => g.as_bytes(),
        }
    }

    /// The data's bytes, writable under a `Write` lock (`None` under a `Read` lock).
    pub fn bytes_mut(&mut self) -> Option<&mut [u8]> {
        match self {
            LoopLock::Read(_) => None,
            LoopLock::Write(g) => Some(g.as_bytes_mut()),
        }
    }
}

/// Read-only view of host data; pending loops that write it have run.
pub struct HostRead<'a, T> {
    guard: RwLockReadGuard<'a, HostBuffer>,
    _t: PhantomData<fn() -> T>,
}

impl<T: Scalar> Deref for HostRead<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.guard.as_slice()
    }
}

/// Mutable view of host data; pending loops that read or write it have run, and the data is marked
/// modified on the host.
pub struct HostWrite<'a, T> {
    guard: RwLockWriteGuard<'a, HostBuffer>,
    _t: PhantomData<fn() -> T>,
}

impl<T: Scalar> Deref for HostWrite<'_, T> {
    type Target = [T];
    fn deref(&self) -> &[T] {
        self.guard.as_slice()
    }
}

impl<T: Scalar> DerefMut for HostWrite<'_, T> {
    fn deref_mut(&mut self) -> &mut [T] {
        self.guard.as_mut_slice()
    }
}

macro_rules! handle_common {
    ($ty:ident) => {
        impl<T: Scalar> $ty<T> {
            /// Its name.
            pub fn name(&self) -> &str {
                &self.carrier.name
            }

            /// Values per element.
            pub fn dim(&self) -> usize {
                self.carrier.dim
            }

            /// Unique id.
            pub fn id(&self) -> u64 {
                self.carrier.id
            }

            /// The untyped core, for backends and tools.
            pub fn carrier(&self) -> &Arc<Carrier> {
                &self.carrier
            }

            pub(crate) fn from_carrier(carrier: Arc<Carrier>) -> Self {
                $ty {
                    carrier,
                    _t: PhantomData,
                }
            }
        }

        impl<T> Clone for $ty<T> {
            fn clone(&self) -> Self {
                $ty {
                    carrier: self.carrier.clone(),
                    _t: PhantomData,
                }
            }
        }

        impl<T> fmt::Debug for $ty<T> {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                self.carrier.fmt(f)
            }
        }
    };
}

/// Data on a set: `dim` values of type `T` per element. Cheap to clone (a shared handle).
pub struct Dat<T> {
    carrier: Arc<Carrier>,
    _t: PhantomData<fn() -> T>,
}
handle_common!(Dat);

impl<T: Scalar> Dat<T> {
    /// The set the data lives on.
    pub fn set(&self) -> &Set {
        match &self.carrier.kind {
            CarrierKind::Dat(s) => s,
            _ => unreachable!("a Dat handle always wraps a dat carrier"),
        }
    }

    /// The communicator of the runtime the Dat belongs to: its ranks hold the other parts of a
    /// distributed Dat (`None` once that runtime is dropped).
    pub fn communicator(&self) -> Option<Arc<dyn Communicator>> {
        self.carrier.communicator()
    }

    /// Read-only host view. Runs pending loops that write this Dat first.
    pub fn data_ro(&self) -> Result<HostRead<'_, T>> {
        self.carrier.prepare_host_access(false)?;
        Ok(HostRead {
            guard: self.carrier.read_guard()?,
            _t: PhantomData,
        })
    }

    /// Mutable host view. Runs pending loops that read or write this Dat first.
    pub fn data(&self) -> Result<HostWrite<'_, T>> {
        self.carrier.prepare_host_access(true)?;
        Ok(HostWrite {
            guard: self.carrier.write_guard()?,
            _t: PhantomData,
        })
    }

    /// A copy of the host data (after pending writers ran).
    pub fn to_vec(&self) -> Result<Vec<T>> {
        Ok(self.data_ro()?.to_vec())
    }
}

/// A global: a reduction target (INC, MIN, MAX) or a small read-only array (READ).
pub struct Global<T> {
    carrier: Arc<Carrier>,
    _t: PhantomData<fn() -> T>,
}
handle_common!(Global);

impl<T: Scalar> Global<T> {
    /// The current values, after the pending loops that write this global ran.
    pub fn value(&self) -> Result<Vec<T>> {
        self.carrier.values()
    }

    /// Sets the values (after pending loops that use this global ran).
    pub fn set_value(&self, values: &[T]) -> Result<()> {
        self.carrier.set_values(values)
    }
}

/// A named constant visible by name in every kernel (a scalar when dim is 1, an array otherwise).
pub struct Const<T> {
    carrier: Arc<Carrier>,
    _t: PhantomData<fn() -> T>,
}
handle_common!(Const);

impl<T: Scalar> Const<T> {
    /// The current values.
    pub fn value(&self) -> Result<Vec<T>> {
        self.carrier.values()
    }

    /// Changes the values; loops recorded before this call still see the old ones.
    pub fn set_value(&self, values: &[T]) -> Result<()> {
        self.carrier.set_values(values)
    }
}

pub(crate) fn check_len(
    what: &'static str,
    name: &str,
    expected: usize,
    actual: usize,
) -> Result<()> {
    if expected != actual {
        return Err(Op2Error::DataLength {
            what,
            name: name.into(),
            expected,
            actual,
            detail: format!("dim {expected}"),
        });
    }
    Ok(())
}
