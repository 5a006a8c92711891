//! Memory accounting per thread, for the per-document memory bound
//! (`parsing.maxMemoryBytesPerDocument`).
//!
//! A document is parsed on a thread of its own; [`CountingAllocator`]
//! keeps, per thread, the bytes that thread has allocated and not freed,
//! and the parser compares them with the bound between pages
//! ([`Budget`]). An allocator cannot refuse memory without aborting the
//! process, so the bound is checked after each page, not on each
//! allocation: a document goes over it by at most one page's worth (and
//! PDF streams inflate to at most 100 MiB each).
//!
//! The count needs the allocator installed as the program's global
//! allocator, which the `trellis` binary does. A program that embeds the
//! library without it gets no count: [`Budget::used`] stays 0 and only the
//! other bounds (file size, pages, time) hold.

use std::alloc::{GlobalAlloc, Layout};
use std::cell::Cell;
use std::sync::atomic::{AtomicBool, Ordering};

use mimalloc::MiMalloc;

thread_local! {
    /// Bytes this thread has allocated minus those it has freed (memory
    /// freed on another thread than the one that allocated it makes one
    /// count low and the other high; a parse frees its own).
    static LIVE: Cell<isize> = const { Cell::new(0) };
}

/// Set once an allocation has gone through [`CountingAllocator`].
static COUNTING: AtomicBool = AtomicBool::new(false);

/// mimalloc, counting live bytes per thread.
pub struct CountingAllocator;

fn add(delta: isize) {
    if !COUNTING.load(Ordering::Relaxed) {
        COUNTING.store(true, Ordering::Relaxed);
    }
    // `try_with`: the thread's count is gone while the thread is being
    // torn down, and allocations then are not a document's.
    let _ = LIVE.try_with(|live| live.set(live.get().wrapping_add(delta)));
}

// SAFETY: every call is passed to `MiMalloc` unchanged; the count is a
// thread-local `Cell` with a const initialiser and no destructor, which
// does not allocate.
unsafe impl GlobalAlloc for CountingAllocator {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller's contract is passed on unchanged.
        let ptr = unsafe { MiMalloc.alloc(layout) };
        if !ptr.is_null() {
            add(layout.size() as isize);
        }
        ptr
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as above.
        let ptr = unsafe { MiMalloc.alloc_zeroed(layout) };
        if !ptr.is_null() {
            add(layout.size() as isize);
        }
        ptr
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: as above.
        unsafe { MiMalloc.dealloc(ptr, layout) };
        add(-(layout.size() as isize));
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as above.
        let new = unsafe { MiMalloc.realloc(ptr, layout, new_size) };
        if !new.is_null() {
            add(new_size as isize - layout.size() as isize);
        }
        new
    }
}

/// Whether allocations are being counted (the allocator is installed).
pub fn counting() -> bool {
    // Any program has allocated by the time it asks.
    COUNTING.load(Ordering::Relaxed)
}

/// Memory the current thread has taken since the budget began.
#[derive(Debug)]
pub struct Budget {
    start: isize,
    limit: u64,
}

impl Budget {
    /// A budget of `limit` bytes for what the current thread allocates
    /// from now on.
    pub fn begin(limit: u64) -> Budget {
        Budget {
            start: LIVE.with(Cell::get),
            limit,
        }
    }

    /// Bytes allocated on this thread since the budget began, and not
    /// freed (0 when allocations are not counted).
    pub fn used(&self) -> u64 {
        let now = LIVE.with(Cell::get);
        u64::try_from(now.saturating_sub(self.start)).unwrap_or(0)
    }

    pub fn exceeded(&self) -> bool {
        self.used() > self.limit
    }

    pub fn limit(&self) -> u64 {
        self.limit
    }
}
