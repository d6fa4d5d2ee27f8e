//! `Js`: the JavaScript backend as the rest of toolgate sees it. Every run gets a fresh
//! engine (runtime + context) that no other run has touched, but the engine is built
//! *before* the call arrives: building one (allocator, context, console and web shims)
//! costs about 250 µs here while compiling and running a trivial snippet costs ~20 µs,
//! so a few spares are kept ready and replaced in the background after each use.
//!
//! A run happens on a blocking thread (a CPU-bound script never stalls the async server)
//! inside the server's own tokio runtime, so `fetch` and the outer timeout use its I/O
//! and timer drivers. The answer is sent before the used engine is dropped, so freeing it
//! is off the caller's path too.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};

use tokio::runtime::Handle;
use tokio::sync::oneshot;
use tokio_util::sync::CancellationToken;

use super::bytecode::Scripts;
use super::engine::{Engine, JsLimits};
use super::fetch::Fetcher;
use super::output::Captured;
use super::program::{self, Program};
use crate::error::Error;
use crate::limits::{FETCH_BODY_BYTES, JS_SPARE_ENGINES};

/// What a successful tool run produced.
#[derive(Debug)]
pub struct JsOutput {
    /// `run`'s return value as JSON (`null` for undefined).
    pub result: serde_json::Value,
    /// Captured console output.
    pub captured: Captured,
}

/// What a snippet produced: its outcome and, whatever the outcome, its output.
#[derive(Debug)]
pub struct SnippetOutput {
    /// Its return value (`None` for undefined) — JSON when it serialises, else the text
    /// `console.log` would print — or the error that ended it.
    pub outcome: Result<Option<serde_json::Value>, Error>,
    /// Captured console output, kept on every path.
    pub captured: Captured,
}

/// The JavaScript backend of one process: its limits, the shared HTTP side of `fetch`,
/// and the spare engines.
pub struct Js {
    limits: JsLimits,
    fetcher: Arc<Fetcher>,
    scripts: Arc<Scripts>,
    spares: Arc<Mutex<Vec<Engine>>>,
    refilling: Arc<AtomicBool>,
}

impl std::fmt::Debug for Js {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Js")
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// One run's result and output.
type Ran = (Result<Option<serde_json::Value>, Error>, Captured);

impl Js {
    /// A backend running every script within `limits`. No engine is built until the
    /// first run, so a process that never runs JavaScript pays nothing for it.
    pub fn new(limits: JsLimits) -> Js {
        Js {
            limits,
            fetcher: Arc::new(Fetcher::new(limits.fetch_timeout, FETCH_BODY_BYTES)),
            scripts: Arc::default(),
            spares: Arc::default(),
            refilling: Arc::default(),
        }
    }

    /// Runs a tool script: evaluates `code` (named `filename` in stack traces), then
    /// awaits `run(params)`.
    pub async fn run_tool(
        &self,
        code: Arc<str>,
        filename: String,
        params: serde_json::Value,
        _cancel: &CancellationToken,
    ) -> Result<JsOutput, Error> {
        let program = Program::Tool {
            filename,
            params: params.to_string(),
        };
        let (outcome, captured) = self.execute(code, program).await;
        Ok(JsOutput {
            result: outcome?.unwrap_or(serde_json::Value::Null),
            captured,
        })
    }

    /// Runs a TypeScript tool script: types erased (lines kept), then as [`Js::run_tool`].
    pub async fn run_typescript_tool(
        &self,
        code: &Arc<str>,
        filename: String,
        params: serde_json::Value,
        cancel: &CancellationToken,
    ) -> Result<JsOutput, Error> {
        let js = self.scripts.typescript(&filename, code)?;
        self.run_tool(js, filename, params, cancel).await
    }

    /// Runs a snippet as the body of an async function: the JS-VM seed's
    /// `run_javascript`, or with `typescript` its `run_typescript` (types erased first,
    /// lines kept).
    pub async fn run_snippet(&self, code: &str, typescript: bool, _cancel: &CancellationToken) -> SnippetOutput {
        let (outcome, captured) = match program::snippet(code, typescript) {
            Ok((wrapped, program)) => self.execute(Arc::from(wrapped), program).await,
            Err(e) => (Err(e), Captured::default()),
        };
        SnippetOutput { outcome, captured }
    }

    /// Runs `program` in a spare engine (or a new one when none is ready) on a blocking
    /// thread, then tops the spares up.
    async fn execute(&self, code: Arc<str>, program: Program) -> Ran {
        let spare = self.spares.lock().unwrap_or_else(PoisonError::into_inner).pop();
        let handle = Handle::current();
        let (limits, fetcher, scripts) = (self.limits, self.fetcher.clone(), self.scripts.clone());
        let (tx, rx) = oneshot::channel::<Ran>();
        tokio::task::spawn_blocking(move || {
            // Every spare was built by this backend, with these limits.
            let engine = match spare {
                Some(engine) => Ok(engine),
                None => handle.block_on(Engine::new(limits, fetcher)),
            };
            match engine {
                Ok(engine) => {
                    let ran = handle.block_on(engine.run(&code, &program, &scripts));
                    // The caller has its answer before the engine is freed.
                    let _ = tx.send(ran);
                    drop(engine);
                }
                Err(e) => {
                    let _ = tx.send((Err(e), Captured::default()));
                }
            }
        });
        self.refill();
        rx.await.unwrap_or_else(|_| {
            (
                Err(Error::Internal(
                    "the JavaScript thread ended without an answer".to_owned(),
                )),
                Captured::default(),
            )
        })
    }

    /// Builds spares in the background until there are [`JS_SPARE_ENGINES`], unless a
    /// refill is already running.
    fn refill(&self) {
        if self.refilling.swap(true, Ordering::AcqRel) {
            return;
        }
        let (spares, refilling) = (self.spares.clone(), self.refilling.clone());
        let (limits, fetcher) = (self.limits, self.fetcher.clone());
        let handle = Handle::current();
        tokio::task::spawn_blocking(move || {
            while spares.lock().unwrap_or_else(PoisonError::into_inner).len() < JS_SPARE_ENGINES {
                match handle.block_on(Engine::new(limits, fetcher.clone())) {
                    Ok(engine) => spares.lock().unwrap_or_else(PoisonError::into_inner).push(engine),
                    Err(e) => {
                        tracing::warn!("cannot prepare a JavaScript engine: {e}");
                        break;
                    }
                }
            }
            refilling.store(false, Ordering::Release);
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    fn js() -> Js {
        Js::new(JsLimits {
            heap_bytes: 64 << 20,
            wall_clock: Duration::from_secs(20),
            output_chars: 1000,
            fetch_timeout: Duration::from_secs(5),
        })
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn cached_scripts_keep_sloppy_semantics_and_lines_on_every_run() {
        let js = js();
        // Sloppy mode: assigning an undeclared name creates a global (strict would throw).
        let code: Arc<str> = Arc::from(
            "function run(p) {\n  total = p.n + 1;\n  if (p.n < 0) throw new Error('negative');\n  return total;\n}",
        );
        for n in [1, 2] {
            let out = js
                .run_tool(
                    code.clone(),
                    "t.js".into(),
                    serde_json::json!({"n": n}),
                    &CancellationToken::new(),
                )
                .await;
            assert_eq!(out.map(|o| o.result).ok(), Some(serde_json::json!(n + 1)));
        }
        let Err(Error::Execution { message }) = js
            .run_tool(
                code.clone(),
                "t.js".into(),
                serde_json::json!({"n": -1}),
                &CancellationToken::new(),
            )
            .await
        else {
            panic!("a throw is an execution error");
        };
        assert!(message.contains("negative") && message.contains("t.js:3"), "{message}");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_script_that_does_not_compile_reports_its_syntax_error() {
        let js = js();
        let code: Arc<str> = Arc::from("function run(p) {\n  return p +;\n}");
        let Err(Error::Execution { message }) = js
            .run_tool(code, "bad.js".into(), serde_json::json!({}), &CancellationToken::new())
            .await
        else {
            panic!("a syntax error is an execution error");
        };
        assert!(
            message.starts_with("SyntaxError") && message.contains("bad.js:2"),
            "{message}"
        );
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn every_run_gets_a_fresh_engine() {
        let js = js();
        for _ in 0..4 {
            let out = js
                .run_snippet(
                    "const seen = globalThis.mark; globalThis.mark = 1; return seen ?? null;",
                    false,
                    &CancellationToken::new(),
                )
                .await;
            assert_eq!(
                out.outcome.ok(),
                Some(Some(serde_json::Value::Null)),
                "nothing leaks between runs"
            );
        }
    }
}
