//! What the engine's thread and the worker's watchdog thread (which acts on the server's
//! stop) share about one run: its deadline, the limit that ended it first, and its
//! captured output.
//!
//! Three parties read the deadline: QuickJS's interrupt handler, the capped allocator
//! (which refuses every allocation once it has passed, so a script spending its time in
//! large native calls such as `new Array(1e5).fill(1)` stops at its next allocation
//! rather than at its next interrupt poll, which QuickJS makes only every 10,000
//! branches or calls), and the watchdog thread, which answers the server's stop with the
//! output so far even when the engine's thread is inside a long native call (the server
//! then kills the worker).
//!
//! Which limit ended the run is decided once, by the first to fire: the deadline, the
//! heap cap, or the caller cancelling. The heap cap also stops the script, so one that
//! caught its out-of-memory error cannot run on to the deadline; either way it fails with
//! the heap limit, because the cap came first; a script that reached the deadline first fails
//! with the deadline even if freeing its heap afterwards would have hit the cap.

use std::sync::atomic::{AtomicBool, AtomicU8, AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant};

use crate::backends::js::output::Captured;
use crate::error::Error;

/// "No deadline yet": the engine is waiting for its run.
const NO_DEADLINE: u64 = u64::MAX;

/// `ended` before any limit fired.
const RUNNING: u8 = 0;

/// A limit that can end a run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub(super) enum Limit {
    /// The wall-clock deadline passed.
    Deadline = 1,
    /// The allocator refused to pass the heap cap.
    Heap = 2,
    /// The caller cancelled the call.
    Cancelled = 3,
}

impl Limit {
    fn from_u8(v: u8) -> Option<Limit> {
        match v {
            1 => Some(Limit::Deadline),
            2 => Some(Limit::Heap),
            3 => Some(Limit::Cancelled),
            _ => None,
        }
    }
}

/// The state of one run shared by its engine and its caller.
#[derive(Debug)]
pub(super) struct RunState {
    born: Instant,
    /// Nanoseconds after `born` at which the run must stop.
    deadline: AtomicU64,
    /// The [`Limit`] that fired first, or [`RUNNING`].
    ended: AtomicU8,
    /// Set once the engine is built. Until then the allocator ignores the deadline:
    /// QuickJS's runtime cannot be created with a refusing allocator (rquickjs 0.14
    /// reads the null runtime it would return), and a run already over when its engine
    /// is built still ends at once through the interrupt handler.
    ready: AtomicBool,
    /// Set once the interrupt handler has asked QuickJS to stop the script: from then on
    /// the allocator admits the little the engine needs to raise its uncatchable
    /// "interrupted" error (an error it cannot allocate becomes a catchable `null`).
    interrupting: AtomicBool,
    /// The console output, read by whichever side answers.
    captured: Mutex<Captured>,
}

impl RunState {
    /// A state with no deadline yet (an engine waiting for its run).
    pub(super) fn new() -> RunState {
        RunState {
            born: Instant::now(),
            deadline: AtomicU64::new(NO_DEADLINE),
            ended: AtomicU8::new(RUNNING),
            ready: AtomicBool::new(false),
            interrupting: AtomicBool::new(false),
            captured: Mutex::default(),
        }
    }

    /// Starts the clock: the run must stop at `at`.
    /// A run already stopped (the server's stop can arrive before the run begins) stays
    /// stopped.
    pub(super) fn arm(&self, at: Instant) {
        let nanos = u64::try_from(at.saturating_duration_since(self.born).as_nanos()).unwrap_or(NO_DEADLINE - 1);
        let _ = self
            .deadline
            .compare_exchange(NO_DEADLINE, nanos, Ordering::AcqRel, Ordering::Acquire);
    }

    /// Returns true if and only if the deadline has passed (or the run was stopped);
    /// the first time, records the deadline as what ended the run unless something else
    /// already had.
    pub(super) fn passed(&self) -> bool {
        let deadline = self.deadline.load(Ordering::Acquire);
        if deadline == NO_DEADLINE {
            return false;
        }
        let late = self.born.elapsed() >= Duration::from_nanos(deadline);
        if late {
            self.record(Limit::Deadline);
        }
        late
    }

    /// Records `limit` as what ended the run, unless another limit fired before it.
    pub(super) fn record(&self, limit: Limit) {
        let _ = self
            .ended
            .compare_exchange(RUNNING, limit as u8, Ordering::AcqRel, Ordering::Acquire);
    }

    /// Ends the run now for `limit` (unless another limit fired before it): the
    /// interrupt handler and the allocator see the deadline as passed from here on.
    pub(super) fn stop(&self, limit: Limit) {
        self.record(limit);
        self.deadline.store(0, Ordering::Release);
    }

    /// The limit that fired first, if any did.
    pub(super) fn ended(&self) -> Option<Limit> {
        Limit::from_u8(self.ended.load(Ordering::Acquire))
    }

    /// Called when the engine is built (see `ready`).
    pub(super) fn mark_ready(&self) {
        self.ready.store(true, Ordering::Release);
    }

    /// Returns true if and only if the engine is built.
    pub(super) fn ready(&self) -> bool {
        self.ready.load(Ordering::Acquire)
    }

    /// Called by the interrupt handler when it stops the script.
    pub(super) fn interrupt(&self) {
        self.interrupting.store(true, Ordering::Release);
    }

    /// Returns true if and only if the script has been told to stop.
    pub(super) fn interrupting(&self) -> bool {
        self.interrupting.load(Ordering::Acquire)
    }

    /// The output captured so far, taken (each run's output is answered once).
    pub(super) fn take_captured(&self) -> Captured {
        std::mem::take(&mut *self.captured.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// Runs `f` on the captured output (the console writes through this).
    pub(super) fn with_captured<T>(&self, f: impl FnOnce(&mut Captured) -> T) -> T {
        f(&mut self.captured.lock().unwrap_or_else(PoisonError::into_inner))
    }

    /// The error of the limit that ended the run, if one did.
    pub(super) fn verdict(&self, wall_clock: Duration, heap_bytes: usize) -> Option<Error> {
        self.ended().map(|limit| match limit {
            Limit::Deadline => Error::Timeout {
                what: "The JavaScript".to_owned(),
                after: wall_clock,
            },
            Limit::Heap => Error::ResourceLimit {
                what: "The tool's JavaScript heap".to_owned(),
                limit: format!("{} MiB", heap_bytes / (1024 * 1024)),
            },
            Limit::Cancelled => Error::Cancelled,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_limit_to_fire_is_the_one_reported() {
        let state = RunState::new();
        assert!(!state.passed(), "no deadline before the run");
        state.arm(Instant::now() + Duration::from_secs(3600));
        assert!(!state.passed());
        state.record(Limit::Heap);
        state.stop(Limit::Cancelled);
        assert!(state.passed(), "stopping makes the deadline pass");
        assert_eq!(state.ended(), Some(Limit::Heap));
        let state = RunState::new();
        state.arm(Instant::now());
        assert!(state.passed());
        state.record(Limit::Heap);
        assert_eq!(state.ended(), Some(Limit::Deadline));
    }
}
