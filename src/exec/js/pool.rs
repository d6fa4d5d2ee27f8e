//! `Js`: the JavaScript backend as the rest of toolgate sees it. Every run gets a fresh
//! engine (runtime + context) that no other run has touched, but the engine is built
//! *before* the call arrives: building one (allocator, context, console and web shims)
//! costs about 250 µs here while compiling and running a trivial snippet costs ~20 µs,
//! so a few spares are kept ready and replaced in the background after each use.
//!
//! A run happens on a blocking thread (a CPU-bound script never stalls the async server)
//! inside the server's own tokio runtime, so `fetch` uses its I/O and timer drivers.
//! The caller does not depend on that thread to answer: it waits for the engine's
//! answer, the deadline (counted from the call) or its cancellation token, whichever
//! comes first, and answers from the run's shared state, so a script stuck in a long
//! native call, a garbage collection over a huge heap, or the freeing of that heap
//! cannot delay the answer. The engine is told to stop at the same moment and ends on
//! its own thread; it is dropped there, off the caller's path.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use tokio::runtime::Handle;
use tokio::sync::{OwnedSemaphorePermit, Semaphore, oneshot};
use tokio_util::sync::CancellationToken;

use super::bytecode::Scripts;
use super::engine::{Engine, JsLimits};
use super::fetch::Fetcher;
use super::output::Captured;
use super::policy::FetchAllow;
use super::program::{self, Program};
use super::state::{Limit, RunState};
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
    /// One permit per run at once.
    runs: Arc<Semaphore>,
    /// One permit per MiB of the heap budget all running engines share.
    heap: Arc<Semaphore>,
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

/// A run's place among the concurrent runs and its share of the heap budget.
type Places = (OwnedSemaphorePermit, OwnedSemaphorePermit);

/// Bytes in whole MiB, rounded up, as the heap budget counts them.
fn mib(bytes: usize) -> u32 {
    u32::try_from(bytes.div_ceil(1024 * 1024)).unwrap_or(u32::MAX)
}

/// One run's result and output.
type Ran = (Result<Option<serde_json::Value>, Error>, Captured);

impl Js {
    /// A backend running every script within `limits`. No engine is built until the
    /// first run, so a process that never runs JavaScript pays nothing for it.
    pub fn new(limits: JsLimits) -> Js {
        Js {
            limits,
            runs: Arc::new(Semaphore::new(limits.concurrent_runs.max(1))),
            heap: Arc::new(Semaphore::new(mib(limits.total_heap_bytes).max(1) as usize)),
            fetcher: Arc::new(Fetcher::new(
                limits.fetch_timeout,
                FETCH_BODY_BYTES,
                FetchAllow::default(),
            )),
            scripts: Arc::default(),
            spares: Arc::default(),
            refilling: Arc::default(),
        }
    }

    /// The same backend with `allow` as the exceptions to `fetch`'s address policy. By
    /// default (without this call), no internal address is reachable.
    #[must_use]
    pub fn with_fetch_allow(mut self, allow: FetchAllow) -> Js {
        self.fetcher = Arc::new(Fetcher::new(self.limits.fetch_timeout, FETCH_BODY_BYTES, allow));
        self
    }

    /// Runs a tool script: evaluates `code` (named `filename` in stack traces), then
    /// awaits `run(params)`. Cancelling `cancel` stops the run as its deadline would and
    /// fails it with [`Error::Cancelled`].
    pub async fn run_tool(
        &self,
        code: Arc<str>,
        filename: String,
        params: serde_json::Value,
        cancel: &CancellationToken,
    ) -> Result<JsOutput, Error> {
        let program = Program::Tool {
            filename,
            params: params.to_string(),
        };
        let (outcome, captured) = self.execute(code, program, cancel).await;
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
    /// lines kept). Cancelling `cancel` stops it as in [`Js::run_tool`].
    pub async fn run_snippet(&self, code: &str, typescript: bool, cancel: &CancellationToken) -> SnippetOutput {
        let (outcome, captured) = match program::snippet(code, typescript) {
            Ok((wrapped, program)) => self.execute(Arc::from(wrapped), program, cancel).await,
            Err(e) => (Err(e), Captured::default()),
        };
        SnippetOutput { outcome, captured }
    }

    /// Runs `program` in a spare engine (or a new one when none is ready) on a blocking
    /// thread, then tops the spares up. Answers when the engine does, at the deadline,
    /// or when `cancel` is cancelled, whichever comes first.
    async fn execute(&self, code: Arc<str>, program: Program, cancel: &CancellationToken) -> Ran {
        let until = Instant::now() + self.limits.wall_clock;
        // A place among the runs and this run's heap from the shared budget, within the
        // run's own deadline. They are held until the engine's thread ends.
        let places = tokio::select! {
            biased;
            () = cancel.cancelled() => return (Err(Error::Cancelled), Captured::default()),
            () = tokio::time::sleep_until(until.into()) => {
                return (Err(self.queue_timeout()), Captured::default());
            }
            places = self.places() => places,
        };
        let places = match places {
            Ok(p) => p,
            Err(e) => return (Err(e), Captured::default()),
        };
        let spare = self.spares.lock().unwrap_or_else(PoisonError::into_inner).pop();
        let state = spare
            .as_ref()
            .map_or_else(|| Arc::new(RunState::new()), |e| e.state().clone());
        state.arm(until);
        // Whatever ends the wait below (or drops it), the engine stops then too.
        let halt = Stopper {
            state: state.clone(),
            halt: CancellationToken::new(),
        };
        let handle = Handle::current();
        let (limits, fetcher, scripts) = (self.limits, self.fetcher.clone(), self.scripts.clone());
        let (tx, rx) = oneshot::channel();
        let (engine_state, engine_halt) = (state.clone(), halt.halt.clone());
        tokio::task::spawn_blocking(move || {
            // Every spare was built by this backend, with these limits.
            let engine = match spare {
                Some(engine) => Ok(engine),
                None => handle.block_on(Engine::new(limits, fetcher, engine_state)),
            };
            match engine {
                Ok(engine) => {
                    let ran = handle.block_on(engine.run(&code, &program, &scripts, until, &engine_halt));
                    // The caller has its answer before the engine is freed.
                    let _ = tx.send(ran);
                    drop(engine);
                    drop(places);
                }
                Err(e) => {
                    let _ = tx.send(Err(e));
                }
            }
        });
        self.refill();
        let outcome = tokio::select! {
            biased;
            ran = rx => ran.unwrap_or_else(|_| Err(Error::Internal("the JavaScript thread ended without an answer".to_owned()))),
            () = cancel.cancelled() => {
                state.stop(Limit::Cancelled);
                Err(self.verdict(&state))
            }
            () = tokio::time::sleep_until(until.into()) => {
                state.stop(Limit::Deadline);
                Err(self.verdict(&state))
            }
            // The heap cap (or the interrupt handler, a little past the deadline) fired:
            // the run has failed, whatever the script makes of it.
            () = state.fired() => Err(self.verdict(&state)),
        };
        drop(halt);
        (outcome, state.take_captured())
    }

    /// A place among the concurrent runs and this run's heap from the shared budget.
    async fn places(&self) -> Result<Places, Error> {
        let closed = |_| Error::Internal("the JavaScript run limiter is closed".to_owned());
        let run = self.runs.clone().acquire_owned().await.map_err(closed)?;
        let want = mib(self.limits.heap_bytes).clamp(1, mib(self.limits.total_heap_bytes).max(1));
        let heap = self.heap.clone().acquire_many_owned(want).await.map_err(closed)?;
        Ok((run, heap))
    }

    /// The failure of a run that waited its whole deadline for a place.
    fn queue_timeout(&self) -> Error {
        Error::Timeout {
            what: format!(
                "The JavaScript (waiting for a place: at most {} runs and {} MiB of heap at once)",
                self.limits.concurrent_runs,
                mib(self.limits.total_heap_bytes)
            ),
            after: self.limits.wall_clock,
        }
    }

    /// Places free now, for tests: (runs, MiB of heap).
    #[cfg(test)]
    fn free(&self) -> (usize, usize) {
        (self.runs.available_permits(), self.heap.available_permits())
    }

    /// The error of the limit that ended a run the caller stopped waiting for.
    fn verdict(&self, state: &RunState) -> Error {
        state
            .verdict(self.limits.wall_clock, self.limits.heap_bytes)
            .unwrap_or_else(|| Error::Internal("the run stopped with no limit".to_owned()))
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
                match handle.block_on(Engine::new(limits, fetcher.clone(), Arc::new(RunState::new()))) {
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

/// Stops a run's engine when dropped: when its caller has answered, or stopped waiting
/// because its own future was dropped (a client that went away).
struct Stopper {
    state: Arc<RunState>,
    halt: CancellationToken,
}

impl Drop for Stopper {
    fn drop(&mut self) {
        // After an answer from the engine this changes nothing: its limits are decided.
        self.state.stop(Limit::Cancelled);
        self.halt.cancel();
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
            result_chars: 1000,
            concurrent_runs: 1,
            total_heap_bytes: 64 << 20,
            fetch_timeout: Duration::from_secs(5),
        })
    }

    fn none() -> CancellationToken {
        CancellationToken::new()
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn cancelling_a_run_stops_it_and_says_so() {
        // A 20 s deadline: only the cancellation can end these runs early.
        let js = js();
        let cancel = CancellationToken::new();
        let canceller = cancel.clone();
        tokio::spawn(async move {
            tokio::task::yield_now().await;
            canceller.cancel();
        });
        let out = js
            .run_snippet("console.log('started'); while (true) {}", false, &cancel)
            .await;
        assert!(matches!(out.outcome, Err(Error::Cancelled)), "{:?}", out.outcome);
        let cancel = CancellationToken::new();
        let canceller = cancel.clone();
        tokio::spawn(async move { canceller.cancel() });
        let code: Arc<str> = Arc::from("function run() { while (true) {} }");
        let out = js
            .run_tool(code, "spin.js".into(), serde_json::json!({}), &cancel)
            .await;
        assert!(matches!(out, Err(Error::Cancelled)), "{out:?}");
        // The backend still runs scripts afterwards.
        let out = js.run_snippet("return 1;", false, &none()).await;
        assert_eq!(out.outcome.ok(), Some(Some(serde_json::json!(1))));
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
                .run_tool(code.clone(), "t.js".into(), serde_json::json!({"n": n}), &none())
                .await;
            assert_eq!(out.map(|o| o.result).ok(), Some(serde_json::json!(n + 1)));
        }
        let Err(Error::Execution { message }) = js
            .run_tool(code.clone(), "t.js".into(), serde_json::json!({"n": -1}), &none())
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
        let Err(Error::Execution { message }) =
            js.run_tool(code, "bad.js".into(), serde_json::json!({}), &none()).await
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
                    &none(),
                )
                .await;
            assert_eq!(
                out.outcome.ok(),
                Some(Some(serde_json::Value::Null)),
                "nothing leaks between runs"
            );
        }
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_run_waits_for_a_place_and_takes_it_when_it_frees() {
        // One place (and a heap budget of one run): the second run must wait.
        let js = Arc::new(js());
        let hold = CancellationToken::new();
        let first = {
            let (js, hold) = (js.clone(), hold.clone());
            tokio::spawn(async move { js.run_snippet("await new Promise(() => {})", false, &hold).await })
        };
        while js.free() != (0, 0) {
            tokio::task::yield_now().await;
        }
        let mut second = {
            let js = js.clone();
            tokio::spawn(async move { js.run_snippet("return 2", false, &none()).await })
        };
        // Unlimited, the second run would answer in about a millisecond.
        let waited = tokio::time::timeout(Duration::from_millis(300), &mut second).await;
        assert!(
            waited.is_err(),
            "the second run ran while the first held the only place"
        );
        hold.cancel();
        assert!(matches!(first.await.unwrap().outcome, Err(Error::Cancelled)));
        assert_eq!(second.await.unwrap().outcome.ok(), Some(Some(serde_json::json!(2))));
    }
}
