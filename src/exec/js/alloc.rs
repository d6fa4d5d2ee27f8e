//! A heap cap QuickJS cannot talk its way around.
//!
//! QuickJS lets script code catch its out-of-memory error and carry on, so a cap enforced
//! only inside the engine can be hidden from the host. This allocator counts every byte
//! the engine holds, refuses an allocation that would pass the cap, and records that it
//! did in a flag the host reads after the run: a run that hit the cap is a
//! `RESOURCE_LIMIT` failure whatever the script made of it.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use rquickjs::allocator::{Allocator, RustAllocator};

/// Wraps [`RustAllocator`] with a byte budget.
pub(crate) struct CappedAllocator {
    used: usize,
    limit: usize,
    hit: Arc<AtomicBool>,
}

impl CappedAllocator {
    /// An allocator that refuses to hold more than `limit` bytes and sets `hit` when it
    /// refuses.
    pub(crate) fn new(limit: usize, hit: Arc<AtomicBool>) -> Self {
        CappedAllocator { used: 0, limit, hit }
    }

    fn admit(&mut self, more: usize) -> bool {
        match self.used.checked_add(more) {
            Some(total) if total <= self.limit => true,
            _ => {
                self.hit.store(true, Ordering::Relaxed);
                false
            }
        }
    }
}

// SAFETY: every call is forwarded to RustAllocator, which upholds the trait's contract;
// this wrapper only refuses some requests by returning null, which the contract allows.
unsafe impl Allocator for CappedAllocator {
    fn alloc(&mut self, size: usize) -> *mut u8 {
        if !self.admit(size) {
            return std::ptr::null_mut();
        }
        let ptr = RustAllocator.alloc(size);
        if !ptr.is_null() {
            // SAFETY: ptr was just returned by RustAllocator.
            self.used += unsafe { RustAllocator::usable_size(ptr) };
        }
        ptr
    }

    fn calloc(&mut self, count: usize, size: usize) -> *mut u8 {
        let Some(total) = count.checked_mul(size) else {
            return std::ptr::null_mut();
        };
        if !self.admit(total) {
            return std::ptr::null_mut();
        }
        let ptr = RustAllocator.calloc(count, size);
        if !ptr.is_null() {
            // SAFETY: ptr was just returned by RustAllocator.
            self.used += unsafe { RustAllocator::usable_size(ptr) };
        }
        ptr
    }

    unsafe fn dealloc(&mut self, ptr: *mut u8) {
        if ptr.is_null() {
            return;
        }
        // SAFETY: the caller guarantees ptr came from this allocator, i.e. RustAllocator.
        let size = unsafe { RustAllocator::usable_size(ptr) };
        self.used = self.used.saturating_sub(size);
        // SAFETY: as above.
        unsafe { RustAllocator.dealloc(ptr) }
    }

    unsafe fn realloc(&mut self, ptr: *mut u8, new_size: usize) -> *mut u8 {
        if ptr.is_null() {
            return self.alloc(new_size);
        }
        // SAFETY: the caller guarantees ptr came from this allocator.
        let old = unsafe { RustAllocator::usable_size(ptr) };
        if new_size > old && !self.admit(new_size - old) {
            return std::ptr::null_mut();
        }
        // SAFETY: as above.
        let new = unsafe { RustAllocator.realloc(ptr, new_size) };
        if !new.is_null() {
            // SAFETY: new was just returned by RustAllocator.
            let now = unsafe { RustAllocator::usable_size(new) };
            self.used = self.used.saturating_sub(old) + now;
        }
        new
    }

    unsafe fn usable_size(ptr: *mut u8) -> usize {
        // SAFETY: forwarded with the caller's guarantee.
        unsafe { RustAllocator::usable_size(ptr) }
    }
}
