//! The core path every call takes: snapshot → resolve → validate → execute.
//!
//! Both the MCP server and the catalogue HTTP server drive tools through this one type,
//! so resolution, validation and the execution rule cannot drift between them. It speaks
//! toolgate types only; protocol mapping stays in `mcp` and `operator`.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime};

use serde_json::Value;
use tokio_util::sync::CancellationToken;

use crate::catalogue::{Snapshot, Store, Tool};
use crate::error::Error;
use crate::exec::{Executor, Outcome};
use crate::history::{Ended, Finished, History};

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
    history: History,
}

impl Gateway {
    /// A gateway over `store`, running calls with `exec`.
    pub fn new(store: Store, exec: Executor) -> Gateway {
        Gateway {
            store,
            exec,
            next_run: AtomicU64::new(1),
            history: History::default(),
        }
    }

    /// The current catalogue snapshot (refreshed when it has expired).
    pub async fn snapshot(&self) -> Result<Arc<Snapshot>, Error> {
        self.store.snapshot().await
    }

    /// Builds a local catalogue's snapshot now rather than on first use; an HTTP
    /// catalogue is left to its first request.
    pub async fn prepare(&self) {
        self.store.prepare().await;
    }

    /// Resolves `wanted` (exact or unambiguous abbreviation), validates, runs.
    pub async fn run(&self, wanted: &str, params: Value) -> Result<Run, Error> {
        let snapshot = self.snapshot().await?;
        let tool = snapshot.resolve(wanted)?.clone();
        self.run_tool(&snapshot, &tool, params).await
    }

    /// Validates and runs a tool already resolved from `snapshot`, and records the run
    /// (whatever its end, a validation failure included) in the history.
    pub async fn run_tool(&self, snapshot: &Snapshot, tool: &Tool, params: Value) -> Result<Run, Error> {
        let id = self.next_id();
        let (started, clock) = (SystemTime::now(), Instant::now());
        tracing::debug!(run = %id, slug = tool.slug(), "running");
        let outcome = match tool.validator.check(tool.slug(), &params) {
            Ok(()) => {
                self.exec
                    .run(snapshot.origin(), self.store.api(), tool, params.clone())
                    .await
            }
            Err(e) => Err(e),
        };
        let ended = outcome.as_ref().map(|o| Some(&o.result));
        self.record(&id, tool.slug(), started, clock, &params, ended);
        outcome.map(|outcome| Run {
            slug: tool.slug().to_owned(),
            id,
            outcome,
        })
    }

    /// Runs a JavaScript (or, with `typescript`, TypeScript) snippet — the `run_javascript`
    /// and `run_typescript` tools — in a fresh engine, and records it in the history like
    /// any other run.
    pub async fn run_snippet(
        &self,
        code: String,
        typescript: bool,
    ) -> (String, std::time::Duration, crate::exec::js::SnippetOutput) {
        let id = self.next_id();
        let (started, clock) = (SystemTime::now(), Instant::now());
        let out = self
            .exec
            .js()
            .run_snippet(&code, typescript, &CancellationToken::new())
            .await;
        let took = clock.elapsed();
        let slug = if typescript { "run_typescript" } else { "run_javascript" };
        let ended = out.outcome.as_ref().map(Option::as_ref);
        self.record(&id, slug, started, clock, &serde_json::json!({ "code": code }), ended);
        (id, took, out)
    }

    /// The next run id: `r1`, `r2`, ...
    fn next_id(&self) -> String {
        format!("r{}", self.next_run.fetch_add(1, Ordering::Relaxed))
    }

    /// Records a finished run: its result (`None` for nothing returned) or its error.
    fn record(
        &self,
        id: &str,
        slug: &str,
        started: SystemTime,
        clock: Instant,
        input: &Value,
        ended: Result<Option<&Value>, &Error>,
    ) {
        let duration_ms = clock.elapsed().as_millis() as u64;
        let body;
        let ended = match ended {
            Ok(result) => Ended::Ok(result.unwrap_or(&Value::Null)),
            Err(e) => {
                body = serde_json::json!({ "error": e.to_string(), "code": e.code() });
                Ended::Failed {
                    code: e.code(),
                    body: &body,
                }
            }
        };
        self.history.record(Finished {
            id: id.to_owned(),
            slug,
            started,
            duration_ms,
            input,
            ended,
        });
    }

    /// How often the catalogue can change under this gateway: the cache lifetime of an
    /// HTTP catalogue, `None` for local catalogues, which never change.
    pub fn refresh_interval(&self) -> Option<std::time::Duration> {
        self.store.api().map(|_| self.store.ttl())
    }

    /// The NyxilumNode backend (the `nyxilum_*` tools and REPL sessions).
    pub fn nyxilum(&self) -> &crate::exec::nyxilum::Nyxilum {
        self.exec.nyxilum()
    }

    /// Records a runtime tool's call (`nyxilum_run`, ...) in the history like any other
    /// run, and returns its run id.
    pub fn record_call(
        &self,
        slug: &str,
        input: &Value,
        started: SystemTime,
        clock: Instant,
        ended: Result<&Value, &Error>,
    ) -> String {
        let id = self.next_id();
        self.record(&id, slug, started, clock, input, ended.map(Some));
        id
    }

    /// This process's run history.
    pub fn history(&self) -> &History {
        &self.history
    }
}
