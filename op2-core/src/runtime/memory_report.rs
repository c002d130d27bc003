//! The memory report gathered: what is alive among what a runtime declared, with the backend's
//! own holdings, owner by owner.

use crate::contract::backend::{BackendMemory, MemoryOwner};
use crate::model::carrier::CarrierKind;
use crate::runtime::Runtime;
use crate::runtime::memory::{MemoryKind, MemoryReport, MemoryUse, live};
use crate::runtime::sync::lock;
use std::collections::HashMap;

impl Runtime {
    /// This runtime's memory, owner by owner: each live Dat, Map, Global and Const (its host
    /// copy, and its device copy on a device backend), each cached plan, each set's halo lists,
    /// compiled code and whatever else the backend holds. Forces nothing.
    ///
    /// Host bytes are what this runtime and its backend hold for each owner, not the process's
    /// whole memory (the program's own arrays, the allocator's slack, libraries).
    pub fn memory_report(&self) -> MemoryReport {
        // The live objects, then the lock let go: a host lock is never waited for under it.
        let (sets, carriers, maps) = {
            let d = lock(&self.shared.declared);
            (live(&d.sets), live(&d.carriers), live(&d.maps))
        };
        let mut uses = Vec::new();
        // Rows by owner id, so the backend's copies join their owner's row.
        let mut carrier_rows: HashMap<u64, usize> = HashMap::new();
        let mut map_rows: HashMap<u64, usize> = HashMap::new();
        let mut set_names: HashMap<u64, String> = HashMap::new();
        for set in sets {
            set_names.insert(set.id, set.name.clone());
            if let Some(halo) = &set.halo {
                let lists: usize = halo
                    .neighbours
                    .iter()
                    .map(|n| n.send.capacity() + n.receive.capacity())
                    .sum();
                uses.push(MemoryUse {
                    kind: MemoryKind::Halo,
                    name: set.name.clone(),
                    host_bytes: (lists * std::mem::size_of::<u32>()) as u64,
                    device_bytes: 0,
                    declared_bytes: 0,
                });
            }
        }
        for c in carriers {
            let kind = match c.kind {
                CarrierKind::Dat(_) => MemoryKind::Dat,
                CarrierKind::Global => MemoryKind::Global,
                CarrierKind::Const => MemoryKind::Const,
            };
            // Never waits: a host guard held now (perhaps by the caller) leaves the size to what
            // the flags say.
            let host = match c.host.try_read() {
                Ok(g) => g.held_bytes(),
                Err(std::sync::TryLockError::Poisoned(p)) => p.into_inner().held_bytes(),
                Err(std::sync::TryLockError::WouldBlock) if c.host_released() => 0,
                Err(std::sync::TryLockError::WouldBlock) => {
                    crate::contract::rows::carrier_bytes(&c)
                }
            };
            carrier_rows.insert(c.id, uses.len());
            uses.push(MemoryUse {
                kind,
                name: c.name.clone(),
                host_bytes: host as u64,
                device_bytes: 0,
                declared_bytes: crate::contract::rows::carrier_bytes(&c) as u64,
            });
        }
        for m in maps {
            map_rows.insert(m.id, uses.len());
            uses.push(MemoryUse {
                kind: MemoryKind::Map,
                name: m.name.clone(),
                host_bytes: (m.values.capacity() * std::mem::size_of::<i32>()) as u64,
                device_bytes: 0,
                declared_bytes: (m.values.len() * std::mem::size_of::<i32>()) as u64,
            });
        }
        for BackendMemory {
            owner,
            host_bytes,
            device_bytes,
        } in self.shared.backend.memory()
        {
            let row = match &owner {
                MemoryOwner::Carrier(id) => carrier_rows.get(id),
                MemoryOwner::Map(id) => map_rows.get(id),
                _ => None,
            };
            if let Some(&row) = row {
                uses[row].host_bytes += host_bytes;
                uses[row].device_bytes += device_bytes;
                continue;
            }
            let (kind, name) = match owner {
                MemoryOwner::Carrier(id) => (MemoryKind::Other, format!("released data #{id}")),
                MemoryOwner::Map(id) => (MemoryKind::Other, format!("released map #{id}")),
                MemoryOwner::Plan { set, start, end } => (
                    MemoryKind::Plan,
                    format!(
                        "plan: {} {start}..{end}",
                        set_names
                            .get(&set)
                            .cloned()
                            .unwrap_or_else(|| format!("set #{set}"))
                    ),
                ),
                MemoryOwner::Code(what) => (MemoryKind::Code, what),
                MemoryOwner::Other(what) => (MemoryKind::Other, what),
            };
            uses.push(MemoryUse {
                kind,
                name,
                host_bytes,
                device_bytes,
                declared_bytes: 0,
            });
        }
        let pooled = self.shared.temporaries.held_bytes();
        if pooled > 0 {
            uses.push(MemoryUse {
                kind: MemoryKind::Other,
                name: "released temporaries, kept for reuse".into(),
                host_bytes: pooled,
                device_bytes: 0,
                declared_bytes: 0,
            });
        }
        MemoryReport { uses }
    }
}
