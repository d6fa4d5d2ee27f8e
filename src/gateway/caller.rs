//! Whom a call is made for. Every MCP session (a stdio connection, an HTTP
//! `Mcp-Session-Id`) is one `Caller`: its runs are numbered and recorded in its own
//! history, and the REPL sessions it starts are its own — another caller naming their id
//! gets `SESSION_NOT_FOUND`. Nothing a caller does is visible to another.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use crate::history::History;

/// One caller's state: its history and its identity as an owner of REPL sessions.
#[derive(Debug, Clone)]
pub struct Caller {
    history: Arc<History>,
    owner: u64,
}

impl Caller {
    /// A new caller with an empty history, distinct from every other caller of this
    /// process.
    pub fn new() -> Caller {
        static NEXT: AtomicU64 = AtomicU64::new(1);
        Caller {
            history: Arc::default(),
            owner: NEXT.fetch_add(1, Ordering::Relaxed),
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
}

impl Default for Caller {
    fn default() -> Self {
        Caller::new()
    }
}
