//! Measuring memory in tests and benches: a counting global allocator (what Rust code allocates:
//! now, at the peak, and per thread) and the kernel's high-water mark of resident memory (what C
//! and driver libraries allocate too).
//!
//! A binary installs the allocator with
//! `#[global_allocator] static A: CountingAllocator = CountingAllocator;`; without it the
//! counters stay at zero.

use std::alloc::{GlobalAlloc, Layout, System};
use std::cell::Cell;
use std::sync::atomic::{AtomicUsize, Ordering};

/// The system allocator, counting: bytes held now, the most held at once, and bytes each thread
/// allocated.
pub struct CountingAllocator;

static CURRENT: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

thread_local! {
    /// Bytes this thread allocated so far (never decreases: a test compares two readings).
    static THREAD_ALLOCATED: Cell<usize> = const { Cell::new(0) };
    /// Bytes this thread allocated less those it freed (negative when it frees others' memory).
    static THREAD_NET: Cell<isize> = const { Cell::new(0) };
    /// The most [`THREAD_NET`] reached since the thread's last [`reset_thread_heap_peak`].
    static THREAD_PEAK: Cell<isize> = const { Cell::new(0) };
}

fn grew(bytes: usize) {
    let now = CURRENT.fetch_add(bytes, Ordering::Relaxed) + bytes;
    PEAK.fetch_max(now, Ordering::Relaxed);
    // `try_with`: a thread's allocations while its locals are torn down are not counted.
    let _ = THREAD_ALLOCATED.try_with(|c| c.set(c.get() + bytes));
    let _ = THREAD_NET.try_with(|n| {
        n.set(n.get() + bytes as isize);
        let _ = THREAD_PEAK.try_with(|p| p.set(p.get().max(n.get())));
    });
}

fn shrank(bytes: usize) {
    CURRENT.fetch_sub(bytes, Ordering::Relaxed);
    let _ = THREAD_NET.try_with(|n| n.set(n.get() - bytes as isize));
}

/// Counts a fresh allocation (when it succeeded) and passes it on.
fn allocated(p: *mut u8, layout: Layout) -> *mut u8 {
    if !p.is_null() {
        grew(layout.size());
    }
    p
}

// SAFETY: every call goes to the system allocator with the caller's own arguments; the counters
// around them are atomics and a const-initialised thread-local, neither of which allocates.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as given.
        allocated(unsafe { System.alloc(layout) }, layout)
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: forwarded as given.
        allocated(unsafe { System.alloc_zeroed(layout) }, layout)
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: forwarded as given.
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: forwarded as given.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            shrank(layout.size());
            grew(new_size);
        }
        p
    }
}

/// Bytes allocated through the allocator and not yet freed.
pub fn heap_now() -> usize {
    CURRENT.load(Ordering::Relaxed)
}

/// The most bytes held at once since the process started.
pub fn heap_peak() -> usize {
    PEAK.load(Ordering::Relaxed)
}

/// Bytes the calling thread allocated so far (cumulative).
pub fn thread_allocated() -> usize {
    THREAD_ALLOCATED.with(Cell::get)
}

/// Bytes the calling thread holds now: what it allocated less what it freed.
pub fn thread_heap_now() -> isize {
    THREAD_NET.with(Cell::get)
}

/// The most [`thread_heap_now`] reached since the last [`reset_thread_heap_peak`] on this thread:
/// a peak that other threads' work (tests running beside) does not disturb.
pub fn thread_heap_peak() -> isize {
    THREAD_PEAK.with(Cell::get)
}

/// Starts this thread's peak from what it holds now.
pub fn reset_thread_heap_peak() {
    THREAD_PEAK.with(|p| p.set(thread_heap_now()));
}

/// The process's peak resident memory in bytes (`VmHWM`), on Linux.
pub fn peak_rss() -> Option<u64> {
    status_kb("VmHWM:").map(|kb| kb * 1024)
}

/// The process's resident memory now in bytes (`VmRSS`), on Linux.
pub fn rss() -> Option<u64> {
    status_kb("VmRSS:").map(|kb| kb * 1024)
}

fn status_kb(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with(field))?;
    line[field.len()..]
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()
}
