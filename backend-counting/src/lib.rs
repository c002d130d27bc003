//! backend-counting: an example of a backend crate written outside op2-rs. It wraps another backend
//! (its own setting `counting_inner`, `OP2_COUNTING_INNER`, default `seq`, declared to the runtime
//! like any first-party backend's), counts the loops it prepares and runs, and registers
//! itself as `counting` with `op2::register_backend!`. Its tests run the conformance suite with one
//! line, `op2_conformance::conformance_tests!("counting", backend_counting::LINKED);`.

#![warn(missing_docs)]

use op2::{
    Backend, BackendFactory, Carrier, Config, LoopInvocation, LoopSignature, PreparedLoop, Setting,
    SettingKind,
};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

static PREPARED: AtomicU64 = AtomicU64::new(0);
static RUNS: AtomicU64 = AtomicU64::new(0);

/// Loops prepared and runs made by every `counting` backend of this process so far.
pub fn counts() -> (u64, u64) {
    (
        PREPARED.load(Ordering::Relaxed),
        RUNS.load(Ordering::Relaxed),
    )
}

/// Wraps a backend and counts its calls.
pub struct CountingBackend {
    inner: Box<dyn Backend>,
}

impl CountingBackend {
    /// Wraps the backend named by its `counting_inner` setting (`OP2_COUNTING_INNER`, default
    /// `seq`), made with `config`.
    pub fn new(config: &Config) -> op2::Result<Self> {
        let inner = config.setting("counting_inner").unwrap_or("seq");
        Ok(CountingBackend {
            inner: (op2::find_backend(inner)?.create)(config)?,
        })
    }

    /// The wrapped backend's name.
    pub fn inner_name(&self) -> &str {
        self.inner.name()
    }
}

impl Backend for CountingBackend {
    fn name(&self) -> &str {
        "counting"
    }

    fn prepare(&self, sig: &LoopSignature) -> op2::Result<Arc<dyn PreparedLoop>> {
        PREPARED.fetch_add(1, Ordering::Relaxed);
        Ok(Arc::new(CountingLoop(self.inner.prepare(sig)?)))
    }

    fn host_access(&self, carrier: &Carrier, write: bool) -> op2::Result<()> {
        self.inner.host_access(carrier, write)
    }

    /// The wrapped backend's memory and threads; the rest as any backend's (this one promises
    /// neither column walks nor an order of operations it does not control).
    fn capabilities(&self, config: &op2::Config) -> op2::Capabilities {
        let inner = self.inner.capabilities(config);
        op2::Capabilities {
            host_memory: inner.host_memory,
            host_threads: inner.host_threads,
            openmp_threads: inner.openmp_threads,
            ..op2::Capabilities::new(config)
        }
    }

    fn run_team(&self, n: usize, work: &(dyn Fn(usize, usize) + Sync)) -> bool {
        self.inner.run_team(n, work)
    }

    fn gather_rows(&self, carrier: &Carrier, rows: &[u32], out: &mut [u8]) -> op2::Result<()> {
        self.inner.gather_rows(carrier, rows, out)
    }

    fn write_bytes(&self, carrier: &Carrier, offset: usize, data: &[u8]) -> op2::Result<()> {
        self.inner.write_bytes(carrier, offset, data)
    }

    fn release(&self) -> op2::Result<()> {
        self.inner.release()
    }

    fn device_stats(&self) -> Option<op2::DeviceStats> {
        self.inner.device_stats()
    }

    fn data_state(&self, carrier: u64) -> Option<op2::DataState> {
        self.inner.data_state(carrier)
    }

    fn memory(&self) -> Vec<op2::BackendMemory> {
        self.inner.memory()
    }

    fn loop_done(&self, carriers: &[std::sync::Arc<op2::Carrier>]) {
        self.inner.loop_done(carriers)
    }
}

struct CountingLoop(Arc<dyn PreparedLoop>);

impl PreparedLoop for CountingLoop {
    fn run(&self, inv: &LoopInvocation<'_>) -> op2::Result<()> {
        RUNS.fetch_add(1, Ordering::Relaxed);
        self.0.run(inv)
    }
}

fn create(config: &Config) -> op2::Result<Box<dyn Backend>> {
    Ok(Box::new(CountingBackend::new(config)?))
}

op2::register_backend!(BackendFactory {
    name: "counting",
    feature: "",
    description: "example third-party backend: counts the calls of another backend",
    create,
    settings: &[Setting {
        name: "counting_inner",
        env: "OP2_COUNTING_INNER",
        kind: SettingKind::Text,
        default: "seq",
        doc: "the backend whose calls are counted",
    }],
});

/// Any item of this crate keeps it, with its registration, in a binary: tests name this one.
pub static LINKED: &str = "backend-counting";
