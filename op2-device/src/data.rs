//! Device-data states (PyOP2's device-data table), shared by the device backends: where each
//! carrier's valid copy lives, what a loop or a host access must allocate and transfer, and the
//! counters tests observe.

use op2_core::rows::{carrier_bytes, check_range, check_rows, gather_rows, row_bytes};
use op2_core::{
    Access, ArgKind, Carrier, DataState, DeviceStats, LoopInvocation, Op2Error, Result,
};
use std::collections::HashMap;
use std::sync::{Arc, Mutex, MutexGuard, Weak};

/// What one loop does with one carrier, summed over the args that name it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct LoopUse {
    /// Some arg reads it (READ, RW, INC, MIN, MAX).
    pub reads: bool,
    /// Some arg modifies it.
    pub writes: bool,
    /// Every arg on it is a direct WRITE and the loop covers every element, so no old value
    /// survives: the host copy need not travel to the device first. (An indirect WRITE may miss
    /// elements, whose old values must then be on the device.)
    pub overwrites_all: bool,
}

impl LoopUse {
    /// Adds one arg's access to the summary; `direct_full` says the arg is direct and the loop
    /// covers the whole set.
    pub fn add(&mut self, access: Access, direct_full: bool, first: bool) {
        let write_only = access == Access::Write && direct_full;
        self.reads |= !write_only;
        self.writes |= access.writes();
        self.overwrites_all = if first {
            write_only
        } else {
            self.overwrites_all && write_only
        };
    }
}

/// The work a transition asks for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Transfers {
    /// Allocate device memory.
    pub allocate_device: bool,
    /// Copy host to device.
    pub to_device: bool,
    /// Allocate host memory.
    pub allocate_host: bool,
    /// Copy device to host.
    pub to_host: bool,
}

/// The state table's transitions ([`DataState`] is op2-core's, since every backend reports it).
pub trait Transitions: Sized {
    /// The transfers before a loop that uses the carrier as `u` says, and the state after it.
    fn before_loop(self, u: LoopUse) -> (Transfers, Self);
    /// The transfers before the host reads (`write == false`, `data_ro()`) or may write (`data()`)
    /// the carrier, and the state after.
    fn before_host_access(self, write: bool) -> (Transfers, Self);
}

impl Transitions for DataState {
    /// The transfers before a loop that uses the carrier as `u` says, and the state after it.
    fn before_loop(self, u: LoopUse) -> (Transfers, DataState) {
        use DataState::*;
        let upload = !u.overwrites_all;
        let t = |allocate_device, to_device| Transfers {
            allocate_device,
            to_device,
            ..Transfers::default()
        };
        match (self, u.writes) {
            (DeviceUnallocated, false) => (t(true, true), Both),
            (DeviceUnallocated, true) => (t(true, upload), Device),
            (Host, false) => (t(false, true), Both),
            (Host, true) => (t(false, upload), Device),
            (Both, false) => (t(false, false), Both),
            (Both, true) | (Device, _) | (HostUnallocated, _) => (t(false, false), Device),
        }
    }

    /// The transfers before the host reads (`write == false`, `data_ro()`) or may write (`data()`)
    /// the carrier, and the state after.
    fn before_host_access(self, write: bool) -> (Transfers, DataState) {
        use DataState::*;
        let down = |allocate_host| Transfers {
            to_host: true,
            allocate_host,
            ..Transfers::default()
        };
        let after = if write { Host } else { Both };
        match self {
            Device => (down(false), after),
            HostUnallocated => (down(true), after),
            Both => (Transfers::default(), after),
            Host | DeviceUnallocated => (Transfers::default(), self),
        }
    }
}

/// Device memory as the state machine needs it; each device backend implements it.
pub trait DeviceMemory: Send + Sync {
    /// A device allocation.
    type Buffer: Send + Sync;
    /// Allocates `bytes` (at least one byte, so empty sets still get a buffer).
    fn allocate(&self, bytes: usize) -> Result<Self::Buffer>;
    /// Copies `host` to `buffer` from byte `offset` on (the buffer holds them).
    fn upload_at(&self, buffer: &Self::Buffer, offset: usize, host: &[u8]) -> Result<()>;
    /// Copies bytes `offset..offset + host.len()` of `buffer` into `host`.
    fn download_at(&self, buffer: &Self::Buffer, offset: usize, host: &mut [u8]) -> Result<()>;
    /// Copies `host` to the start of `buffer`.
    fn upload(&self, buffer: &Self::Buffer, host: &[u8]) -> Result<()> {
        self.upload_at(buffer, 0, host)
    }
    /// Copies the start of `buffer` into `host`.
    fn download(&self, buffer: &Self::Buffer, host: &mut [u8]) -> Result<()> {
        self.download_at(buffer, 0, host)
    }
}

struct Entry<B> {
    state: DataState,
    buffer: Option<Arc<B>>,
    /// The buffer's size in bytes (0 without one).
    bytes: usize,
    /// Dropped carriers free their device memory at the next loop.
    carrier: Weak<Carrier>,
}

/// Every carrier's device copy and state, for one device backend.
pub struct DeviceData<M: DeviceMemory> {
    memory: M,
    entries: Mutex<HashMap<u64, Entry<M::Buffer>>>,
    stats: Mutex<DeviceStats>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl<M: DeviceMemory> DeviceData<M> {
    /// No carrier on the device yet.
    pub fn new(memory: M) -> Self {
        DeviceData {
            memory,
            entries: Mutex::new(HashMap::new()),
            stats: Mutex::new(DeviceStats::default()),
        }
    }

    /// The device memory.
    pub fn memory(&self) -> &M {
        &self.memory
    }

    /// The carrier's state ([`DataState::DeviceUnallocated`] when the backend never saw it).
    pub fn state(&self, carrier: u64) -> DataState {
        lock(&self.entries)
            .get(&carrier)
            .map_or(DataState::DeviceUnallocated, |e| e.state)
    }

    /// The counters so far.
    pub fn stats(&self) -> DeviceStats {
        *lock(&self.stats)
    }

    /// Device bytes held per carrier id (dropped carriers' too, until [`Self::forget_dropped`]).
    pub fn device_bytes(&self) -> Vec<(u64, usize)> {
        let mut held: Vec<(u64, usize)> = lock(&self.entries)
            .iter()
            .filter(|(_, e)| e.buffer.is_some())
            .map(|(&id, e)| (id, e.bytes))
            .collect();
        held.sort_unstable();
        held
    }

    /// Gives back the host storage of each Dat among `carriers` whose only valid copy is on the
    /// device, unless the program asked for its values on the host ([`Carrier::release_host`]).
    pub fn release_stale_hosts(&self, carriers: &[Arc<Carrier>]) {
        let entries = lock(&self.entries);
        for c in carriers {
            if entries
                .get(&c.id())
                .is_some_and(|e| e.state == DataState::Device && e.buffer.is_some())
            {
                c.release_host();
            }
        }
    }

    /// Frees the device memory of carriers that no longer exist.
    pub fn forget_dropped(&self) {
        lock(&self.entries).retain(|_, e| e.carrier.strong_count() > 0);
    }

    /// Makes the carrier's device copy valid for a loop that uses it as `u`: allocates and copies
    /// from `host` (the loop-locked host data) as the state table says, and returns the buffer.
    pub fn for_loop(
        &self,
        carrier: &Arc<Carrier>,
        host: &[u8],
        u: LoopUse,
    ) -> Result<Arc<M::Buffer>> {
        let mut entries = lock(&self.entries);
        let entry = entries.entry(carrier.id()).or_insert_with(|| Entry {
            state: DataState::DeviceUnallocated,
            buffer: None,
            bytes: 0,
            carrier: Arc::downgrade(carrier),
        });
        let (t, next) = entry.state.before_loop(u);
        if t.allocate_device || entry.buffer.is_none() {
            entry.buffer = Some(Arc::new(self.memory.allocate(host.len().max(1))?));
            entry.bytes = host.len().max(1);
            lock(&self.stats).allocations += 1;
        }
        let buffer = entry.buffer.clone().expect("allocated just above");
        if t.to_device && host.len() < carrier_bytes(carrier) {
            return Err(Op2Error::Execution {
                backend: "device".into(),
                kernel: carrier.name().into(),
                reason: format!(
                    "internal: `{}` must be uploaded but its host copy holds no data",
                    carrier.name()
                ),
            });
        }
        if t.to_device {
            if !host.is_empty() {
                self.memory.upload(&buffer, host)?;
            }
            let mut s = lock(&self.stats);
            s.to_device += 1;
            s.bytes_to_device += host.len() as u64;
        }
        entry.state = next;
        Ok(buffer)
    }

    /// Makes every arg's data valid on the device for one run of a loop, per carrier once (what
    /// all the args on a carrier do decides its transfers), and returns each arg's buffer.
    pub fn for_invocation(&self, inv: &LoopInvocation<'_>) -> Result<Vec<Arc<M::Buffer>>> {
        let whole_set = inv.start == 0 && inv.end >= inv.set.total_size();
        let mut uses: Vec<(u64, LoopUse)> = Vec::new();
        for (a, c) in inv.sig.args.iter().zip(inv.carriers) {
            let direct_full = a.kind == ArgKind::Direct && whole_set;
            match uses.iter_mut().find(|(id, _)| *id == c.id()) {
                Some((_, u)) => u.add(a.access, direct_full, false),
                None => {
                    let mut u = LoopUse::default();
                    u.add(a.access, direct_full, true);
                    uses.push((c.id(), u));
                }
            }
        }
        let mut buffers: Vec<Arc<M::Buffer>> = Vec::with_capacity(inv.carriers.len());
        for (i, c) in inv.carriers.iter().enumerate() {
            if let Some(j) = inv.carriers[..i].iter().position(|d| d.id() == c.id()) {
                buffers.push(buffers[j].clone());
                continue;
            }
            let u = uses
                .iter()
                .find(|(id, _)| *id == c.id())
                .map(|(_, u)| *u)
                .expect("every carrier was summed above");
            // A released host copy holds no bytes (the device's copy is the valid one, and the
            // state table uploads nothing from it).
            let len = if c.host_released() {
                0
            } else {
                carrier_bytes(c)
            };
            // SAFETY: the runtime locked this carrier's host data for the loop; it holds `len`
            // bytes.
            let host = unsafe { std::slice::from_raw_parts(inv.args[i] as *const u8, len) };
            buffers.push(self.for_loop(c, host, u)?);
        }
        Ok(buffers)
    }

    /// Copies home the data of every live carrier whose valid copy is on the device only: the
    /// backend is going away, and handles to the data may outlive it.
    pub fn copy_all_home(&self) -> Result<()> {
        let live: Vec<Arc<Carrier>> = lock(&self.entries)
            .values()
            .filter(|e| matches!(e.state, DataState::Device | DataState::HostUnallocated))
            .filter_map(|e| e.carrier.upgrade())
            .collect();
        // Every one is tried: one that fails does not leave the others' data on the device.
        let mut first_error = None;
        for c in live {
            if let Err(e) = self.host_access(&c, false) {
                first_error.get_or_insert(e);
            }
        }
        first_error.map_or(Ok(()), Err)
    }

    /// Copies rows `rows` of the carrier's current data into `out`, one after another: from the
    /// device when only its copy is valid (the range spanning the rows comes home, into scratch
    /// memory; the host copy and the state stay as they were), else from the host. Halo
    /// exchanges pack what they send this way.
    pub fn read_rows(&self, carrier: &Carrier, rows: &[u32], out: &mut [u8]) -> Result<()> {
        check_rows(carrier, rows, out.len())?;
        let row = row_bytes(carrier);
        let entries = lock(&self.entries);
        let on_device = entries
            .get(&carrier.id())
            .filter(|e| matches!(e.state, DataState::Device | DataState::HostUnallocated))
            .and_then(|e| e.buffer.clone());
        match on_device {
            Some(buffer) if !rows.is_empty() => {
                let first = *rows.iter().min().expect("not empty") as usize;
                let last = *rows.iter().max().expect("not empty") as usize;
                let mut span = vec![0u8; (last + 1 - first) * row];
                if !span.is_empty() {
                    self.memory.download_at(&buffer, first * row, &mut span)?;
                }
                let mut s = lock(&self.stats);
                s.to_host += 1;
                s.bytes_to_host += span.len() as u64;
                drop(s);
                let shifted: Vec<u32> = rows.iter().map(|&r| r - first as u32).collect();
                gather_rows(&span, row, &shifted, out);
                Ok(())
            }
            Some(_) => Ok(()),
            None => {
                drop(entries);
                let guard = carrier.lock_for_loop("halo exchange", false)?;
                gather_rows(guard.bytes(), row, rows, out);
                Ok(())
            }
        }
    }

    /// Writes `data` at byte `offset` of the carrier's current data, the rest unchanged: into the
    /// host copy, and into the device copy when it holds valid data (so it stays valid: a halo
    /// exchange's received rows travel alone, not the whole Dat).
    pub fn write_range(&self, carrier: &Carrier, offset: usize, data: &[u8]) -> Result<()> {
        check_range(carrier, offset, data.len())?;
        let mut entries = lock(&self.entries);
        let entry = entries.get_mut(&carrier.id());
        let device = entry
            .as_ref()
            .filter(|e| {
                matches!(
                    e.state,
                    DataState::Device | DataState::Both | DataState::HostUnallocated
                )
            })
            .and_then(|e| e.buffer.clone());
        if let Some(buffer) = &device {
            if !data.is_empty() {
                self.memory.upload_at(buffer, offset, data)?;
            }
            let mut s = lock(&self.stats);
            s.to_device += 1;
            s.bytes_to_device += data.len() as u64;
        }
        // The host copy: always written where it is the valid one (or both are); where only the
        // device's is valid the host's other rows are stale anyway, so writing these is harmless.
        let mut guard = carrier.lock_for_loop("halo exchange", true)?;
        let host = guard.bytes_mut().expect("a write lock gives mutable bytes");
        // A released host copy has no rows to write (the device took them above).
        if let Some(rows) = host.get_mut(offset..offset + data.len()) {
            rows.copy_from_slice(data);
        }
        Ok(())
    }

    /// Brings the carrier's data home before the host reads or writes it.
    pub fn host_access(&self, carrier: &Carrier, write: bool) -> Result<()> {
        let mut entries = lock(&self.entries);
        let Some(entry) = entries.get_mut(&carrier.id()) else {
            return Ok(());
        };
        let (t, next) = entry.state.before_host_access(write);
        if t.to_host {
            let buffer = entry
                .buffer
                .clone()
                .expect("a carrier valid on the device has a device buffer");
            let mut guard = carrier.lock_host_restored("device-to-host copy")?;
            let host = guard.bytes_mut().expect("a write lock gives mutable bytes");
            if !host.is_empty() {
                self.memory.download(&buffer, host)?;
            }
            let mut s = lock(&self.stats);
            s.to_host += 1;
            s.bytes_to_host += host.len() as u64;
        }
        entry.state = next;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use DataState::*;

    fn used(reads: bool, writes: bool, overwrites_all: bool) -> LoopUse {
        LoopUse {
            reads,
            writes,
            overwrites_all,
        }
    }

    #[test]
    fn loop_transitions_follow_the_state_table() {
        let read = used(true, false, false);
        let rw = used(true, true, false);
        let write_only = used(false, true, true);
        let t = |s: DataState, u| {
            let (t, n) = s.before_loop(u);
            (t.allocate_device, t.to_device, n)
        };
        assert_eq!(t(DeviceUnallocated, read), (true, true, Both));
        assert_eq!(t(DeviceUnallocated, rw), (true, true, Device));
        assert_eq!(t(DeviceUnallocated, write_only), (true, false, Device));
        assert_eq!(t(Device, read), (false, false, Device));
        assert_eq!(t(Device, rw), (false, false, Device));
        assert_eq!(t(Host, read), (false, true, Both));
        assert_eq!(t(Host, rw), (false, true, Device));
        assert_eq!(t(Host, write_only), (false, false, Device));
        assert_eq!(t(Both, read), (false, false, Both));
        assert_eq!(t(Both, rw), (false, false, Device));
        assert_eq!(t(HostUnallocated, read), (false, false, Device));
    }

    #[test]
    fn host_access_transitions_follow_the_state_table() {
        let t = |s: DataState, w| {
            let (t, n) = s.before_host_access(w);
            (t.to_host, t.allocate_host, n)
        };
        assert_eq!(t(Device, true), (true, false, Host));
        assert_eq!(t(Device, false), (true, false, Both));
        assert_eq!(t(Both, true), (false, false, Host));
        assert_eq!(t(Both, false), (false, false, Both));
        assert_eq!(t(Host, false), (false, false, Host));
        assert_eq!(
            t(DeviceUnallocated, true),
            (false, false, DeviceUnallocated)
        );
        assert_eq!(t(HostUnallocated, false), (true, true, Both));
    }

    #[test]
    fn loop_use_sums_args() {
        let mut u = LoopUse::default();
        u.add(Access::Write, true, true);
        assert_eq!(u, used(false, true, true));
        u.add(Access::Read, false, false);
        assert_eq!(u, used(true, true, false));
        let mut v = LoopUse::default();
        v.add(Access::Write, false, true);
        assert!(!v.overwrites_all && v.reads && v.writes);
    }
}
