//! Memory by owner: what a runtime holds for each Dat, Map, Global and Const (host and device
//! copies), for plans, halo lists and compiled code, gathered into one [`MemoryReport`]. This
//! module holds the report's types and the runtime's list of what it declared; the runtime's
//! front (`memory_report`) gathers the report.

use crate::model::carrier::Carrier;
use crate::model::map::MapInner;
use crate::model::set::SetInner;
use std::fmt;
use std::sync::{Arc, Weak};

/// What a [`MemoryUse`] is held for.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum MemoryKind {
    /// A Dat's values.
    Dat,
    /// A Map's values.
    Map,
    /// A Global's values.
    Global,
    /// A Const's values.
    Const,
    /// A plan (blocks, colours, staging maps) of loops over one set section.
    Plan,
    /// A set's halo lists (what an exchange sends and receives).
    Halo,
    /// Compiled code.
    Code,
    /// Anything else a backend holds (reduction partials, device constants, ...).
    Other,
}

impl MemoryKind {
    /// Whether this is a declared object (Dat, Map, Global, Const): the program's own data.
    pub fn is_declared(self) -> bool {
        matches!(
            self,
            MemoryKind::Dat | MemoryKind::Map | MemoryKind::Global | MemoryKind::Const
        )
    }
}

impl fmt::Display for MemoryKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(match self {
            MemoryKind::Dat => "dat",
            MemoryKind::Map => "map",
            MemoryKind::Global => "global",
            MemoryKind::Const => "const",
            MemoryKind::Plan => "plan",
            MemoryKind::Halo => "halo",
            MemoryKind::Code => "code",
            MemoryKind::Other => "other",
        })
    }
}

/// The bytes one owner holds.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryUse {
    /// What it is.
    pub kind: MemoryKind,
    /// Its name: the Dat's or Map's, `plan: SET a..b`, a description.
    pub name: String,
    /// Bytes in this process's memory.
    pub host_bytes: u64,
    /// Bytes in device memory.
    pub device_bytes: u64,
    /// For a declared object, the size of its data (elements times values times value size),
    /// whether or not a host copy holds it now; 0 for the rest.
    pub declared_bytes: u64,
}

/// A runtime's memory, owner by owner ([`crate::Runtime::memory_report`]).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct MemoryReport {
    /// One row per owner: declared objects in order of declaration, then what the backend holds.
    pub uses: Vec<MemoryUse>,
}

impl MemoryReport {
    /// The size of the declared objects' data (Dats, Maps, Globals, Consts): the program's data,
    /// against which the rest is overhead.
    pub fn declared_bytes(&self) -> u64 {
        self.sum(|_| true, |u| u.declared_bytes)
    }

    /// All host bytes listed.
    pub fn host_bytes(&self) -> u64 {
        self.sum(|_| true, |u| u.host_bytes)
    }

    /// All device bytes listed.
    pub fn device_bytes(&self) -> u64 {
        self.sum(|_| true, |u| u.device_bytes)
    }

    /// Host and device bytes of one kind.
    pub fn of_kind(&self, kind: MemoryKind) -> (u64, u64) {
        (
            self.sum(|u| u.kind == kind, |u| u.host_bytes),
            self.sum(|u| u.kind == kind, |u| u.device_bytes),
        )
    }

    /// The row named `name` of `kind`, if any.
    pub fn find(&self, kind: MemoryKind, name: &str) -> Option<&MemoryUse> {
        self.uses.iter().find(|u| u.kind == kind && u.name == name)
    }

    fn sum(&self, keep: impl Fn(&MemoryUse) -> bool, bytes: impl Fn(&MemoryUse) -> u64) -> u64 {
        self.uses.iter().filter(|u| keep(u)).map(bytes).sum()
    }
}

impl fmt::Display for MemoryReport {
    /// A table: one row per owner, then totals by kind.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let mb = |b: u64| b as f64 / 1e6;
        writeln!(
            f,
            "  {:<8} {:<40} {:>10} {:>10}",
            "kind", "owner", "host MB", "device MB"
        )?;
        for u in &self.uses {
            writeln!(
                f,
                "  {:<8} {:<40} {:>10.2} {:>10.2}",
                u.kind.to_string(),
                u.name,
                mb(u.host_bytes),
                mb(u.device_bytes)
            )?;
        }
        let mut kinds: Vec<MemoryKind> = self.uses.iter().map(|u| u.kind).collect();
        kinds.sort();
        kinds.dedup();
        for k in kinds {
            let (h, d) = self.of_kind(k);
            writeln!(
                f,
                "  {:<8} {:<40} {:>10.2} {:>10.2}",
                "total",
                k.to_string(),
                mb(h),
                mb(d)
            )?;
        }
        write!(
            f,
            "  {:<8} {:<40} {:>10.2} {:>10.2}",
            "total",
            "everything",
            mb(self.host_bytes()),
            mb(self.device_bytes())
        )
    }
}

/// Everything a runtime declared, held weakly (dropping a handle frees its memory; the report
/// lists what is still alive).
#[derive(Default)]
pub(crate) struct Declared {
    pub(crate) sets: Vec<Weak<SetInner>>,
    pub(crate) carriers: Vec<Weak<Carrier>>,
    pub(crate) maps: Vec<Weak<MapInner>>,
    /// Entries alive at the last sweep: the lists are swept of dead entries when they double.
    pub(crate) alive_at_sweep: usize,
}

impl Declared {
    pub(crate) fn set(&mut self, set: &Arc<SetInner>) {
        self.sets.push(Arc::downgrade(set));
        self.sweep();
    }

    pub(crate) fn carrier(&mut self, carrier: &Arc<Carrier>) {
        self.carriers.push(Arc::downgrade(carrier));
        self.sweep();
    }

    pub(crate) fn map(&mut self, map: &Arc<MapInner>) {
        self.maps.push(Arc::downgrade(map));
        self.sweep();
    }

    /// Drops dead entries once the lists have doubled since the last sweep, so a program that
    /// declares and drops temporaries forever keeps bounded lists.
    fn sweep(&mut self) {
        let len = self.sets.len() + self.carriers.len() + self.maps.len();
        if len <= 2 * self.alive_at_sweep.max(32) {
            return;
        }
        self.sets.retain(|w| w.strong_count() > 0);
        self.carriers.retain(|w| w.strong_count() > 0);
        self.maps.retain(|w| w.strong_count() > 0);
        self.alive_at_sweep = self.sets.len() + self.carriers.len() + self.maps.len();
    }
}

/// The entries still alive.
pub(crate) fn live<T>(v: &[Weak<T>]) -> Vec<Arc<T>> {
    v.iter().filter_map(Weak::upgrade).collect()
}
