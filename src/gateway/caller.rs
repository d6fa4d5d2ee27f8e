//! Whom a call is made for. Every MCP session (a stdio connection, an HTTP
//! `Mcp-Session-Id`) is one `Caller`: its runs are numbered and recorded in its own
//! history, and the REPL sessions it starts are its own — another caller naming their id
//! gets `SESSION_NOT_FOUND`. Nothing a caller does is visible to another.

use std::sync::Arc;
use std::sync::atomic::{AtomicU8, AtomicU64, Ordering};

use crate::history::History;

/// One caller's state: its history, its identity as an owner of REPL sessions, and the
/// least severe log message it wants.
#[derive(Debug, Clone)]
pub struct Caller {
    history: Arc<History>,
    owner: u64,
    /// The least severe log message passed on to it, as a rank in syslog order (0: debug,
    /// every message; 7: emergency only). MCP's `logging/setLevel` sets it.
    log_level: Arc<AtomicU8>,
}

impl Caller {
    /// A new caller with an empty history, distinct from every other caller of this
    /// process.
    pub fn new() -> Caller {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Caller {
            history: Arc::default(),
            owner: NEXT.fetch_add(1, Ordering::Relaxed),
            log_level: Arc::default(),
        }
    }

    /// Its runs.
    pub fn history(&self) -> &History {
        &self.history
    }

    /// Its identity as the owner of REPL sessions.
    pub fn owner(&self) -> u64 {
        self.owner
    }

    /// From now on, only log messages of severity rank `rank` or above reach it.
    pub fn set_log_level(&self, rank: u8) {
        self.log_level.store(rank, Ordering::Relaxed);
    }

    /// The least severe log rank it wants, shared: whoever passes log messages on to this
    /// caller reads the level in force when each message arrives.
    pub fn log_level(&self) -> Arc<AtomicU8> {
        self.log_level.clone()
    }
}

impl Default for Caller {
    fn default() -> Self {
        Caller::new()
    }
}
