//! The backend contract: `Backend` (run a loop's prepared code, move data home), `PreparedLoop`,
//! `Codegen`, and what a device backend reports about its data (`DataState`, `DeviceStats`).

use crate::contract::config::Config;
use crate::contract::rows::{check_range, check_rows, gather_rows, row_bytes};
use crate::model::carrier::Carrier;
use crate::model::error::Result;
use crate::model::map::Map;
use crate::model::set::Set;
use crate::model::signature::LoopSignature;
use std::any::Any;
use std::ffi::c_void;
use std::panic::{AssertUnwindSafe, catch_unwind, resume_unwind};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};

/// The first panic among threads working together ([`Backend::run_team`]'s team, sparse
/// tiling's tiles), kept to be raised again on the thread that started them. A panic must not
/// unwind through C frames (an OpenMP parallel region), and a thread unwinding past a barrier
/// would leave the others waiting at it for ever: each piece of work runs under
/// [`FirstPanic::run`], and once one panicked the pieces left are skipped.
#[derive(Default)]
pub struct FirstPanic {
    failed: AtomicBool,
    payload: Mutex<Option<Box<dyn Any + Send>>>,
}

impl FirstPanic {
    /// Runs `f` unless a piece of work panicked already; keeps its panic if it does.
    pub fn run(&self, f: impl FnOnce()) {
        if self.failed.load(Ordering::Relaxed) {
            return;
        }
        if let Err(payload) = catch_unwind(AssertUnwindSafe(f)) {
            self.failed.store(true, Ordering::Relaxed);
            self.payload
                .lock()
                .unwrap_or_else(|poisoned| poisoned.into_inner())
                .get_or_insert(payload);
        }
    }

    /// Goes on with the panic kept, if any, on the calling thread.
    pub fn resume(self) {
        let payload = self
            .payload
            .into_inner()
            .unwrap_or_else(|poisoned| poisoned.into_inner());
        if let Some(payload) = payload {
            resume_unwind(payload);
        }
    }
}

/// What a backend can do and how it runs, as data read once when a runtime starts (wgpu-hal and
/// cubecl describe their backends the same way): the runtime and the crates above it read these
/// fields instead of asking the backend one question each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Capabilities {
    /// The data loops see is the host copy itself (host backends). Work beside the loops may then
    /// use and reset the host copy directly, as op2-la's assembly pass does with its staging,
    /// instead of running a loop to zero it.
    pub host_memory: bool,
    /// How many host threads work on a loop, so that work beside the loops (op2-la's assembly
    /// pass, sparse tiling) uses as many.
    pub host_threads: usize,
    /// Its host threads are OpenMP's: work beside the loops then runs on OpenMP's threads too
    /// (op2-la's assembly pass has an OpenMP version), since two thread pools that spin on the
    /// same cores slow each other down.
    pub openmp_threads: bool,
    /// It runs loops over extruded sets column by column: the runtime then hands it a loop over
    /// the base set whose kernel walks each column's layers, reaching data by pointer steps from
    /// each column's bottom row (so the pointers a kernel gets must point into the Dats
    /// themselves, not into staged copies, SIMD lanes or gathered rows: such a loop's kernel says
    /// so with [`crate::model::kernel::Kernel::steps_pointers`]). Otherwise it gets a loop over
    /// every extruded element with maps made for every layer.
    pub walks_columns: bool,
    /// Loops fused by the lazy graph may run on it (as one generated loop whose kernel calls each
    /// loop's kernel in turn). A backend whose code generation cannot call a kernel from another
    /// says false, and such loops run one after another.
    pub fuses_loops: bool,
    /// It is a reference whose order of floating-point operations must not change on its own:
    /// the lazy graph then tiles chains only when told to (`OP2_TILING=always`), never because
    /// it measured a gain.
    pub keeps_operation_order: bool,
}

impl Capabilities {
    /// A host backend's usual answers: host memory, the configured thread count
    /// (`OMP_NUM_THREADS`, else every core the process may use), threads of its own (not
    /// OpenMP's), no column walks, loops fused, no fixed order of operations. Backends change
    /// the fields that differ (`Capabilities { walks_columns: true, ..Capabilities::new(config) }`).
    pub fn new(config: &Config) -> Capabilities {
        Capabilities {
            host_memory: true,
            host_threads: config.host_threads(),
            openmp_threads: false,
            walks_columns: false,
            fuses_loops: true,
            keeps_operation_order: false,
        }
    }
}

/// An execution backend: turns loop signatures into runnable code and runs it.
pub trait Backend: Send + Sync {
    /// The registered name (`seq`, `openmp`, ...).
    fn name(&self) -> &str;

    /// Generates and compiles (or fetches from a cache) the code for a loop signature. Called when a
    /// loop is recorded, so compile errors surface at `par_loop`.
    fn prepare(&self, sig: &LoopSignature) -> Result<Arc<dyn PreparedLoop>>;

    /// Called before the host reads (`write == false`) or writes a carrier, after pending loops ran;
    /// device backends copy data home here. Host backends keep the default.
    fn host_access(&self, _carrier: &Carrier, _write: bool) -> Result<()> {
        Ok(())
    }

    /// Copies rows `rows` (each `carrier.dim()` values) of the carrier's current data into `out`,
    /// one after another (for packing halo messages). The default brings the whole carrier home
    /// first (nothing to do on host backends); device backends copy home just the rows' range.
    fn gather_rows(&self, carrier: &Carrier, rows: &[u32], out: &mut [u8]) -> Result<()> {
        check_rows(carrier, rows, out.len())?;
        self.host_access(carrier, false)?;
        let guard = carrier.lock_for_loop("halo exchange", false)?;
        gather_rows(guard.bytes(), row_bytes(carrier), rows, out);
        Ok(())
    }

    /// Writes `data` at byte `offset` of the carrier's current data, the rest unchanged (received
    /// halo rows). The default makes the host copy the valid one first; device backends write
    /// the range where the valid copy is.
    fn write_bytes(&self, carrier: &Carrier, offset: usize, data: &[u8]) -> Result<()> {
        check_range(carrier, offset, data.len())?;
        self.host_access(carrier, true)?;
        let mut guard = carrier.lock_for_loop("halo exchange", true)?;
        let host = guard.bytes_mut().expect("a write lock gives mutable bytes");
        host[offset..offset + data.len()].copy_from_slice(data);
        Ok(())
    }

    /// Called once when the runtime goes away, after its pending loops ran: a device backend
    /// copies home every carrier whose valid data it holds, since the user's handles (`Dat`,
    /// `Global`) outlive the runtime and read the host copy from then on. Host backends keep the
    /// default.
    fn release(&self) -> Result<()> {
        Ok(())
    }

    /// What the backend can do and how it runs ([`Capabilities`]), read once when a runtime
    /// starts. The default: [`Capabilities::new`], with host memory unless the backend counts
    /// device transfers ([`Backend::device_stats`]).
    fn capabilities(&self, config: &Config) -> Capabilities {
        Capabilities {
            host_memory: self.device_stats().is_none(),
            ..Capabilities::new(config)
        }
    }

    /// Runs `work(t, team)` on a team of up to `n` of the backend's own host threads at once, `t`
    /// from 0 to `team - 1` where `team` is how many it started, and returns when all have
    /// returned; `false` (the default) when the backend has no threads of its own, and the caller
    /// starts its own. Sparse tiling runs its tiles this way: on the OpenMP backend, std threads
    /// beside OpenMP's (which spin a while after each loop, waiting for the next) shared two cores
    /// three ways and made tiled chains up to 1.3 times slower.
    fn run_team(&self, n: usize, work: &(dyn Fn(usize, usize) + Sync)) -> bool {
        let _ = (n, work);
        false
    }

    /// Transfer counters of a device backend; `None` for host backends.
    fn device_stats(&self) -> Option<DeviceStats> {
        None
    }

    /// Where a carrier's valid data lives on a device backend; `None` for host backends.
    fn data_state(&self, _carrier: u64) -> Option<DataState> {
        None
    }

    /// Called after each loop (its host data unlocked) with the loop's carriers: a device backend
    /// gives back host copies that no longer hold valid data ([`Carrier::release_host`]).
    fn loop_done(&self, _carriers: &[Arc<Carrier>]) {}

    /// The memory this backend holds now, owner by owner: device copies of data and maps, plans,
    /// compiled code, scratch. The host copies of Dats, Maps, Globals and Consts belong to the
    /// runtime and are not listed here ([`crate::Runtime::memory_report`] adds them).
    fn memory(&self) -> Vec<BackendMemory> {
        Vec::new()
    }
}

/// Who a backend's memory is held for (see [`Backend::memory`]).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryOwner {
    /// A Dat's, Global's or Const's copy, by carrier id.
    Carrier(u64),
    /// A Map's copy (for example entry-major on a device), by map id.
    Map(u64),
    /// A plan of a loop over elements `start..end` of set `set` (by set id).
    Plan {
        /// The iteration set's id.
        set: u64,
        /// The first element planned.
        start: usize,
        /// One past the last.
        end: usize,
    },
    /// Compiled code (loaded libraries, device programs), described.
    Code(String),
    /// Anything else (reduction partials, constants on a device, ...), described.
    Other(String),
}

/// Bytes one owner holds in a backend: on the host (in this process's memory) and on the device.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BackendMemory {
    /// Who holds it.
    pub owner: MemoryOwner,
    /// Bytes in host memory.
    pub host_bytes: u64,
    /// Bytes in device memory (0 on host backends).
    pub device_bytes: u64,
}

/// Compiled code for one loop signature.
pub trait PreparedLoop: Send + Sync {
    /// Runs the loop over `inv.start..inv.end` of the iteration set.
    fn run(&self, inv: &LoopInvocation<'_>) -> Result<()>;

    /// The same code run over lists of element ranges on the calling thread, when the backend has
    /// it: the lazy graph's sparse tiling runs each tile's share of each loop of a chain
    /// through it. `None` (the default): chains run loop by loop.
    fn element_lists(&self) -> Option<&dyn ElementListLoop> {
        None
    }
}

/// A loop's code over a list of elements (see [`PreparedLoop::element_lists`]).
pub trait ElementListLoop: Send + Sync {
    /// Exclusive use of the storage the loop's Consts are copied into (shared by every runtime
    /// of the process that runs the same code), for as long as list runs rely on Consts set by
    /// [`ElementListLoop::run_ranges`] with `consts`; `None` when the loop has none. Callers
    /// that hold several take them in the order of [`ElementListLoop::consts_key`].
    fn lock_consts(&self) -> Option<std::sync::MutexGuard<'static, ()>>;

    /// A number that orders the locks of [`ElementListLoop::lock_consts`] (0 when none).
    fn consts_key(&self) -> usize;

    /// Runs the element ranges `ranges` (`[start, end)` each), then the elements `elements`,
    /// in that order, on the calling thread.
    ///
    /// # Safety
    ///
    /// `args`, `maps` and `consts` are as for [`PreparedLoop::run`]: one pointer per arg (a
    /// reduction arg's points to where this run accumulates), per map slot and per Const, each
    /// valid for every access the elements make. `consts: None` uses the Consts an
    /// earlier call set, under the lock of [`ElementListLoop::lock_consts`]. Calls may run at
    /// once on several threads only where their elements write no data another reads or
    /// writes.
    unsafe fn run_ranges(
        &self,
        ranges: &[[u32; 2]],
        elements: &[u32],
        args: &[*mut c_void],
        maps: &[*const i32],
        consts: Option<&[*const c_void]>,
    );
}

/// One run of a prepared loop: the data behind the signature.
pub struct LoopInvocation<'a> {
    /// The signature the code was prepared for.
    pub sig: &'a LoopSignature,
    /// The iteration set.
    pub set: &'a Set,
    /// First element to run.
    pub start: usize,
    /// One past the last element to run.
    pub end: usize,
    /// Host pointer to each arg's data (Dat rows, Global or Const values), locked for this run.
    pub args: &'a [*mut c_void],
    /// The carrier behind each arg.
    pub carriers: &'a [Arc<Carrier>],
    /// The maps, one per map slot of the signature.
    pub maps: &'a [Map],
    /// Host pointer to each const of the signature, locked for this run.
    pub consts: &'a [*const c_void],
}

impl LoopInvocation<'_> {
    /// Each const's bytes (`sig.consts[i]`'s `dim` values), as locked for this run.
    pub fn const_bytes(&self) -> Vec<&[u8]> {
        self.sig
            .consts
            .iter()
            .zip(self.consts)
            // SAFETY: the runtime locked each const for the run; each holds `dim` values of its
            // type, and the locks outlive the invocation.
            .map(|(c, p)| unsafe {
                std::slice::from_raw_parts(*p as *const u8, c.dim * c.dtype.size())
            })
            .collect()
    }

    /// Pointers to each map slot's values, in slot order.
    pub fn map_pointers(&self) -> Vec<*const i32> {
        self.maps.iter().map(|m| m.values().as_ptr()).collect()
    }
}

/// One generated compilation unit.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GeneratedUnit {
    /// The full source.
    pub source: String,
    /// The entry point's symbol.
    pub entry: String,
    /// The kernel it wraps (for messages and file names).
    pub kernel: String,
}

/// A code generator: turns a loop's signature into generated code. Every emitter implements it,
/// with the options and output its target needs (the host C emitters take none and give a
/// [`GeneratedUnit`]; the device emitter takes the stub and how args and Consts are passed, and
/// gives the unit with its stubs' parameter lists).
pub trait Codegen {
    /// What shapes the code beyond the signature.
    type Options;
    /// What the emitter produces.
    type Unit;
    /// Emits the code of `sig`; an error when the target cannot express the kernel.
    fn emit(&self, sig: &LoopSignature, options: &Self::Options) -> Result<Self::Unit>;
}

/// Where a carrier's valid data lives on a device backend (PyOP2's device-data flags).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum DataState {
    /// No device memory yet; the host copy is the data.
    DeviceUnallocated,
    /// No host memory yet; the device copy is the data. op2-rs carriers always own host memory, so
    /// the first-party backends never start here; the transitions exist for backends that create
    /// data on the device.
    HostUnallocated,
    /// Valid on the device only.
    Device,
    /// Valid on the host only.
    Host,
    /// Valid on both.
    Both,
}

/// Transfer counters of a device backend.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct DeviceStats {
    /// Device allocations.
    pub allocations: u64,
    /// Host-to-device copies.
    pub to_device: u64,
    /// Device-to-host copies.
    pub to_host: u64,
    /// Bytes copied host to device.
    pub bytes_to_device: u64,
    /// Bytes copied device to host.
    pub bytes_to_host: u64,
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::Barrier;
    use std::sync::atomic::AtomicUsize;

    /// A team whose one thread panics in a tile still meets at every barrier (no hang), skips
    /// the tiles left, and the panic reaches the caller.
    #[test]
    fn a_panicking_tile_ends_the_team_and_reaches_the_caller() {
        let levels = 5;
        let panicked = FirstPanic::default();
        let barrier = Barrier::new(3);
        let ran = AtomicUsize::new(0);
        std::thread::scope(|scope| {
            for thread in 0..3 {
                let (panicked, barrier, ran) = (&panicked, &barrier, &ran);
                scope.spawn(move || {
                    for level in 0..levels {
                        panicked.run(|| {
                            assert!(!(thread == 1 && level == 2), "tile failed");
                            ran.fetch_add(1, Ordering::Relaxed);
                        });
                        barrier.wait();
                    }
                });
            }
        });
        // Levels 0 and 1 ran on all three threads, level 2 on at most the two others.
        let ran = ran.load(Ordering::Relaxed);
        assert!((6..=8).contains(&ran), "{ran}");
        let err = catch_unwind(AssertUnwindSafe(|| panicked.resume())).unwrap_err();
        let message = err.downcast_ref::<&str>().copied().unwrap_or_default();
        assert_eq!(message, "tile failed");
    }

    #[test]
    fn a_team_without_panics_resumes_quietly() {
        let panicked = FirstPanic::default();
        let mut ran = false;
        panicked.run(|| ran = true);
        assert!(ran);
        panicked.resume();
    }
}
