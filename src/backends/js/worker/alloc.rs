//! A heap cap and a deadline QuickJS cannot talk its way around.
//!
//! QuickJS lets script code catch its out-of-memory error and carry on, so a cap enforced
//! only inside the engine can be hidden from the host. This allocator counts every byte
//! the engine holds, refuses an allocation that would pass the cap, and records in the
//! run's [`RunState`] that it did: a run that hit the cap first is a `RESOURCE_LIMIT`
//! failure whatever the script made of it.
//!
//! Once the engine is built, it also refuses every allocation after the run's deadline
//! has passed (or the run was stopped), so a script
//! whose time goes to large native calls (which QuickJS's interrupt poll, run every
//! 10,000 branches or calls, does not see) stops at its next allocation. Once the
//! interrupt handler has fired it admits allocations again, up to the cap plus
//! [`JS_INTERRUPT_RESERVE_BYTES`], so QuickJS can build the uncatchable error that
//! unwinds the script.

use std::sync::Arc;

use rquickjs::allocator::{Allocator, RustAllocator};

use super::state::{Limit, RunState};
use crate::limits::JS_INTERRUPT_RESERVE_BYTES;

/// Wraps [`RustAllocator`] with a byte budget and the run's deadline.
pub(crate) struct CappedAllocator {
    used: usize,
    limit: usize,
    state: Arc<RunState>,
}

impl CappedAllocator {
    /// An allocator that refuses to hold more than `limit` bytes, or anything new once
    /// `state`'s deadline has passed, and records in `state` which limit refused first.
    pub(crate) fn new(limit: usize, state: Arc<RunState>) -> Self {
        CappedAllocator { used: 0, limit, state }
    }

    fn admit(&mut self, more: usize) -> bool {
        let total = self.used.checked_add(more);
        if self.state.interrupting() {
            // The script is being unwound: let QuickJS build its interrupt error.
            return total.is_some_and(|t| t <= self.limit.saturating_add(JS_INTERRUPT_RESERVE_BYTES));
        }
        if self.state.ready() && self.state.passed() {
            return false;
        }
        match total {
            Some(total) if total <= self.limit => true,
            _ => {
                // The run has failed: stop the script at its next interrupt check too, so
                // one that catches its out-of-memory error cannot carry on to the deadline.
                self.state.stop(Limit::Heap);
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
