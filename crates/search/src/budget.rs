//! What one index build may spend: a time budget and a count of index entries (postings
//! and typo-map keys), the honest proxy for its memory. Checked between documents and
//! between words, so a build over budget stops soon after passing it, never runs on.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// The budget of one build, shared by its threads.
#[derive(Debug)]
pub struct Budget {
    started: Instant,
    time: Duration,
    entries: usize,
    used: AtomicUsize,
}

/// Why a build was abandoned.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OverBudget {
    /// It ran longer than its time budget.
    Time {
        /// The budget.
        limit: Duration,
    },
    /// It would have held more entries than allowed.
    Entries {
        /// The budget.
        limit: usize,
    },
}

impl std::fmt::Display for OverBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OverBudget::Time { limit } => write!(f, "building it took longer than {} ms", limit.as_millis()),
            OverBudget::Entries { limit } => {
                write!(f, "its search index would hold more than {limit} entries")
            }
        }
    }
}

impl Budget {
    /// A budget of `time` from now and `entries` index entries.
    pub fn new(time: Duration, entries: usize) -> Budget {
        Budget {
            started: Instant::now(),
            time,
            entries,
            used: AtomicUsize::new(0),
        }
    }

    /// Time since the budget was made (since the build started).
    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// No limit: for callers that build the operator's own catalogue on purpose
    /// (`catalogue eval`, `catalogue check`, benchmarks).
    pub fn unlimited() -> Budget {
        Budget::new(Duration::MAX, usize::MAX)
    }

    /// Counts `n` more entries, then fails if either budget is spent.
    pub fn charge(&self, n: usize) -> Result<(), OverBudget> {
        let used = self.used.fetch_add(n, Ordering::Relaxed).saturating_add(n);
        if used > self.entries {
            return Err(OverBudget::Entries { limit: self.entries });
        }
        self.check_time()
    }

    /// Fails if the time budget is spent.
    pub fn check_time(&self) -> Result<(), OverBudget> {
        if self.started.elapsed() > self.time {
            return Err(OverBudget::Time { limit: self.time });
        }
        Ok(())
    }

    /// Entries counted so far.
    pub fn used(&self) -> usize {
        self.used.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn entries_and_time_are_both_enforced() {
        let budget = Budget::new(Duration::from_secs(60), 10);
        assert_eq!(budget.charge(10), Ok(()));
        assert_eq!(budget.charge(1), Err(OverBudget::Entries { limit: 10 }));
        let spent = Budget::new(Duration::ZERO, 10);
        let mut tries = 0u64;
        let err = loop {
            match spent.check_time() {
                Err(e) => break e,
                Ok(()) => tries += 1,
            }
            assert!(tries < 1_000_000_000, "a zero budget never ran out");
        };
        assert_eq!(err, OverBudget::Time { limit: Duration::ZERO });
        assert_eq!(Budget::unlimited().charge(usize::MAX), Ok(()));
    }
}
