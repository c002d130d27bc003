//! The backend contract (`Backend`, `PreparedLoop`, `Codegen`) and the registry that lets backend
//! crates, first- or third-party, register themselves with `register_backend!`.

use crate::carrier::Carrier;
use crate::config::Config;
use crate::device::{DataState, DeviceStats};
use crate::error::{Op2Error, Result};
use crate::map::Map;
use crate::set::Set;
use crate::signature::LoopSignature;
use std::ffi::c_void;
use std::sync::{Arc, OnceLock};

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
        crate::device::check_rows(carrier, rows, out.len())?;
        self.host_access(carrier, false)?;
        let guard = carrier.lock_for_loop("halo exchange", false)?;
        crate::device::gather_rows(guard.bytes(), row_bytes(carrier), rows, out);
        Ok(())
    }

    /// Writes `data` at byte `offset` of the carrier's current data, the rest unchanged (received
    /// halo rows). The default makes the host copy the valid one first; device backends write
    /// the range where the valid copy is.
    fn write_bytes(&self, carrier: &Carrier, offset: usize, data: &[u8]) -> Result<()> {
        crate::device::check_range(carrier, offset, data.len())?;
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

    /// Transfer counters of a device backend; `None` for host backends.
    fn device_stats(&self) -> Option<DeviceStats> {
        None
    }

    /// Where a carrier's valid data lives on a device backend; `None` for host backends.
    fn data_state(&self, _carrier: u64) -> Option<DataState> {
        None
    }
}

/// Compiled code for one loop signature.
pub trait PreparedLoop: Send + Sync {
    /// Runs the loop over `inv.start..inv.end` of the iteration set.
    fn run(&self, inv: &LoopInvocation<'_>) -> Result<()>;
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

/// A registered backend: how to make one, and which Cargo feature of `op2` brings it in.
pub struct BackendFactory {
    /// The name users select (`OP2_BACKEND=name`).
    pub name: &'static str,
    /// The `op2` Cargo feature that links it (empty for third-party backends).
    pub feature: &'static str,
    /// One line for listings.
    pub description: &'static str,
    /// Makes the backend; errors with [`Op2Error::BackendUnavailable`] when it cannot run here.
    pub create: fn(&Config) -> Result<Box<dyn Backend>>,
    /// The backend's own settings: the runtime reads their environment variables, takes them from
    /// `builder().setting(name, value)`, checks them, and passes them in [`Config::settings`].
    pub settings: &'static [crate::settings::Setting],
}

inventory::collect!(BackendFactory);

/// Registers a backend from its crate: `op2_core::register_backend!(BackendFactory { .. });`.
/// The crate that defines the backend never names `inventory` itself.
#[macro_export]
macro_rules! register_backend {
    ($factory:expr) => {
        $crate::__private::inventory::submit! { $factory }
    };
}

/// Backends this build knows of whether or not it links them, with the Cargo feature of the
/// `op2` facade that brings each in: the facade declares its first-party list here (it is the
/// one place that list is written), so that asking for one that is not compiled in says which
/// feature to turn on.
static KNOWN: OnceLock<&'static [(&'static str, &'static str)]> = OnceLock::new();

/// Declares the backends this build knows of, as `(name, feature)` (the facade does; the first
/// declaration stays).
pub fn declare_known_backends(list: &'static [(&'static str, &'static str)]) {
    let _ = KNOWN.set(list);
}

/// The backends declared with [`declare_known_backends`] (empty when none were).
pub fn known_backends() -> &'static [(&'static str, &'static str)] {
    KNOWN.get().copied().unwrap_or(&[])
}

/// Every backend registered in this binary, sorted by name.
pub fn registered_backends() -> Vec<&'static BackendFactory> {
    let mut all: Vec<_> = inventory::iter::<BackendFactory>.into_iter().collect();
    all.sort_by_key(|f| f.name);
    all.dedup_by_key(|f| f.name);
    all
}

/// Finds a registered backend by name, with the errors a user needs when it is missing.
pub fn find_backend(name: &str) -> Result<&'static BackendFactory> {
    let all = registered_backends();
    if let Some(f) = all.iter().find(|f| f.name == name) {
        return Ok(f);
    }
    if let Some((_, feature)) = known_backends().iter().find(|(n, _)| *n == name) {
        return Err(Op2Error::BackendNotEnabled {
            name: name.into(),
            feature: (*feature).into(),
        });
    }
    Err(Op2Error::UnknownBackend {
        name: name.into(),
        available: all.iter().map(|f| f.name.to_string()).collect(),
    })
}

/// Bytes of one row of a carrier: its dim times its element size.
pub(crate) fn row_bytes(carrier: &Carrier) -> usize {
    carrier.dim() * carrier.dtype().size()
}
