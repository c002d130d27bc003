//! The lazy trace: recorded computations with the data (and data sections) each reads and writes,
//! and the dependency rule that decides what must run before a given access (PyOP2's lazy evaluation).

use std::collections::HashMap;

/// Section bits of a carrier's data: which parts of a set a computation touches.
pub mod section {
    /// Core elements.
    pub const CORE: u8 = 1;
    /// Owned elements next to halos.
    pub const OWNED: u8 = 2;
    /// Exec-halo elements.
    pub const EXEC_HALO: u8 = 4;
    /// Non-exec-halo elements.
    pub const NONEXEC_HALO: u8 = 8;
    /// The message buffer of a halo exchange (orders sends before receives).
    pub const NET: u8 = 16;
    /// Every section.
    pub const ALL: u8 = CORE | OWNED | EXEC_HALO | NONEXEC_HALO | NET;
}

/// One use of a carrier's data by a computation.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DataUse {
    /// The carrier's id.
    pub id: u64,
    /// Which sections ([`section`] bits).
    pub sections: u8,
}

/// A pending computation: something to run, with what it reads and writes.
#[derive(Debug)]
pub struct Pending<T> {
    /// What to run.
    pub work: T,
    /// Data it reads.
    pub reads: Vec<DataUse>,
    /// Data it writes.
    pub writes: Vec<DataUse>,
}

/// Pending computations in program order.
#[derive(Debug)]
pub struct Trace<T> {
    pending: Vec<Pending<T>>,
}

impl<T> Default for Trace<T> {
    fn default() -> Self {
        Trace {
            pending: Vec::new(),
        }
    }
}

#[derive(Default)]
struct UseSet(HashMap<u64, u8>);

impl UseSet {
    fn add(&mut self, uses: &[DataUse]) {
        for u in uses {
            *self.0.entry(u.id).or_insert(0) |= u.sections;
        }
    }

    fn hits(&self, uses: &[DataUse]) -> bool {
        uses.iter()
            .any(|u| self.0.get(&u.id).is_some_and(|s| s & u.sections != 0))
    }
}

/// What some computations read and write, to tell whether a later one must wait for them.
#[derive(Default)]
pub struct Footprint {
    reads: UseSet,
    writes: UseSet,
}

impl Footprint {
    /// Adds a computation's reads and writes.
    pub fn add<T>(&mut self, p: &Pending<T>) {
        self.reads.add(&p.reads);
        self.writes.add(&p.writes);
    }

    /// Whether `p`, coming later in program order, must run after the computations added: it
    /// reads what they write, or writes what they read or write.
    pub fn must_precede<T>(&self, p: &Pending<T>) -> bool {
        self.writes.hits(&p.reads) || self.writes.hits(&p.writes) || self.reads.hits(&p.writes)
    }
}

impl<T> Trace<T> {
    /// Puts computations back before everything pending, in the order given (for work taken out
    /// that could not run: it keeps its place ahead of what was recorded after it).
    pub fn requeue_front(&mut self, mut ps: Vec<Pending<T>>) {
        ps.append(&mut self.pending);
        self.pending = ps;
    }

    /// Appends a computation.
    pub fn push(&mut self, p: Pending<T>) {
        self.pending.push(p);
    }

    /// The pending computations, in program order.
    pub fn iter(&self) -> impl Iterator<Item = &Pending<T>> {
        self.pending.iter()
    }

    /// Number of pending computations.
    pub fn len(&self) -> usize {
        self.pending.len()
    }

    /// Whether nothing is pending.
    pub fn is_empty(&self) -> bool {
        self.pending.is_empty()
    }

    /// Removes and returns everything, in order.
    pub fn take_all(&mut self) -> Vec<Pending<T>> {
        std::mem::take(&mut self.pending)
    }

    /// Removes and returns, in program order, the computations that must run before an access that
    /// reads `reads` and writes `writes`: those writing what is read (read after write), reading or
    /// writing what is written (write after read, write after write), and, transitively, what those
    /// depend on. The rest stays pending in order.
    pub fn take_needed(&mut self, reads: &[DataUse], writes: &[DataUse]) -> Vec<Pending<T>> {
        let mut need_read = UseSet::default();
        let mut need_write = UseSet::default();
        need_read.add(reads);
        need_write.add(writes);
        let mut required = vec![false; self.pending.len()];
        for (i, p) in self.pending.iter().enumerate().rev() {
            if need_read.hits(&p.writes) || need_write.hits(&p.writes) || need_write.hits(&p.reads)
            {
                required[i] = true;
                need_read.add(&p.reads);
                need_write.add(&p.writes);
            }
        }
        let mut taken = Vec::new();
        let mut kept = Vec::new();
        for (p, r) in self.pending.drain(..).zip(required) {
            if r { taken.push(p) } else { kept.push(p) }
        }
        self.pending = kept;
        taken
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u(id: u64) -> DataUse {
        DataUse {
            id,
            sections: section::ALL,
        }
    }

    fn trace(specs: &[(&str, &[u64], &[u64])]) -> Trace<String> {
        let mut t = Trace::default();
        for (name, r, w) in specs {
            t.push(Pending {
                work: name.to_string(),
                reads: r.iter().map(|&i| u(i)).collect(),
                writes: w.iter().map(|&i| u(i)).collect(),
            });
        }
        t
    }

    fn names(v: Vec<Pending<String>>) -> Vec<String> {
        v.into_iter().map(|p| p.work).collect()
    }

    #[test]
    fn read_takes_writers_and_their_inputs() {
        // a: writes 1; b: writes 2; c: reads 1 writes 3; d: reads 2 writes 4
        let mut t = trace(&[
            ("a", &[], &[1]),
            ("b", &[], &[2]),
            ("c", &[1], &[3]),
            ("d", &[2], &[4]),
        ]);
        assert_eq!(names(t.take_needed(&[u(3)], &[])), ["a", "c"]);
        assert_eq!(t.len(), 2);
        assert_eq!(names(t.take_all()), ["b", "d"]);
    }

    #[test]
    fn footprint_orders_dependants_only() {
        let t = trace(&[
            ("a", &[1], &[2]),
            ("b", &[2], &[]),
            ("c", &[], &[1]),
            ("d", &[3], &[4]),
        ]);
        let mut f = Footprint::default();
        f.add(&t.pending[0]);
        let after: Vec<bool> = t.pending[1..].iter().map(|p| f.must_precede(p)).collect();
        assert_eq!(after, [true, true, false]);
        let mut t = t;
        let d = t.pending.pop().unwrap();
        t.requeue_front(vec![d]);
        assert_eq!(t.pending[0].work, "d");
    }

    #[test]
    fn write_takes_earlier_readers() {
        let mut t = trace(&[("a", &[1], &[2]), ("b", &[3], &[4])]);
        assert_eq!(names(t.take_needed(&[], &[u(1)])), ["a"]);
    }

    #[test]
    fn sections_that_do_not_overlap_are_independent() {
        let mut t = Trace::default();
        t.push(Pending {
            work: "core",
            reads: vec![],
            writes: vec![DataUse {
                id: 1,
                sections: section::CORE,
            }],
        });
        let taken = t.take_needed(
            &[DataUse {
                id: 1,
                sections: section::EXEC_HALO,
            }],
            &[],
        );
        assert!(taken.is_empty());
        assert_eq!(t.len(), 1);
    }
}
