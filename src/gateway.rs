//! The core path every call takes: snapshot → resolve → validate → execute.
//!
//! Both the MCP server and the catalogue HTTP server drive tools through this one type,
//! so resolution, validation and the execution rule cannot drift between them. It speaks
//! toolgate types only; protocol mapping stays in `mcp` and `operator`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use serde_json::Value;

use crate::catalogue::{Snapshot, Store, Tool};
use crate::error::Error;
use crate::exec::{Executor, Outcome};

/// A finished run.
#[derive(Debug, Clone)]
pub struct Run {
    /// The tool that ran (its full slug, whatever abbreviation was asked for).
    pub slug: String,
    /// This process's id for the run: `r1`, `r2`, ...
    pub id: String,
    /// What it produced.
    pub outcome: Outcome,
}

/// The catalogue and the executor of one server.
#[derive(Debug)]
pub struct Gateway {
    store: Store,
    exec: Executor,
    next_run: AtomicU64,
}

impl Gateway {
    /// A gateway over `store`, running calls with `exec`.
    pub fn new(store: Store, exec: Executor) -> Gateway {
        Gateway {
            store,
            exec,
            next_run: AtomicU64::new(1),
        }
    }

    /// The current catalogue snapshot (refreshed when it has expired).
    pub async fn snapshot(&self) -> Result<Arc<Snapshot>, Error> {
        self.store.snapshot().await
    }

    /// Resolves `wanted` (exact or unambiguous abbreviation), validates, runs.
    pub async fn run(&self, wanted: &str, params: Value) -> Result<Run, Error> {
        let snapshot = self.snapshot().await?;
        let tool = snapshot.resolve(wanted)?.clone();
        self.run_tool(&snapshot, &tool, params).await
    }

    /// Validates and runs a tool already resolved from `snapshot`.
    pub async fn run_tool(&self, snapshot: &Snapshot, tool: &Tool, params: Value) -> Result<Run, Error> {
        tool.validator.check(tool.slug(), &params)?;
        let id = format!("r{}", self.next_run.fetch_add(1, Ordering::Relaxed));
        tracing::debug!(run = %id, slug = tool.slug(), "running");
        let outcome = self.exec.run(snapshot.origin(), self.store.api(), tool, params).await?;
        Ok(Run {
            slug: tool.slug().to_owned(),
            id,
            outcome,
        })
    }
}
