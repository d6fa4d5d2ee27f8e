//! `Js`: the JavaScript backend as the rest of toolgate sees it. Every run happens in a
//! worker process (`client.rs`, `worker.rs`) under the process sandbox, in an engine no
//! other run touched, and the server holds the limits from outside: at the deadline, or
//! when the call is cancelled, it tells the worker to stop, takes the answer the worker
//! gives from a thread the script cannot block, and kills the worker — so the CPU stops
//! even when the script is inside a native call that no interrupt check reaches (QuickJS
//! checks between bytecodes only: `'a'.repeat(1e7).indexOf(…)` ran 142 s past a 30 s
//! deadline in the engine's own thread). A worker whose run ended cleanly (a value or a
//! thrown error) serves again, since its next run gets a fresh engine; one whose run hit
//! a limit is killed and replaced. Idle workers wait with their next engine built.
//!
//! Why processes and not a watchdog thread: a thread cannot stop another thread that is
//! inside a native call, and `pthread_cancel`/signals would leave QuickJS's heap half
//! updated. Measured here (release, stdio, back to back): a trivial `run_javascript`
//! costs about 0.1 ms more through a worker than in the server's own thread; see README.
//!
//! `fetch` is made here, not in the worker (which has no network): the worker asks over
//! the pipe and this side makes the request under the address policy and the limits of
//! `fetch.rs`, at most [`FETCH_IN_FLIGHT`] per run at once, holding at most
//! [`FETCH_RUN_BYTES`] of their bodies at once.
//!
//! **Places.** A run reserves its heap cap and its fetch allowance ([`FETCH_RUN_BYTES`])
//! from the memory budget all runs share (`total_heap_bytes`), so what the workers' heaps
//! and the server's fetch buffers hold together never passes it; with every run
//! reserving the same, that budget and the cap on runs at once make one count of places
//! (by default min(8, 2,112 MiB / 528 MiB) = 4), shared by the parties runs are made for
//! under the rule of [`crate::backends::share`]: one principal holds at most half of them, so
//! two principals cannot hold them all and a third starts at once.

use std::collections::{HashMap, VecDeque};
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use futures::StreamExt;
use futures::future::BoxFuture;
use futures::stream::FuturesUnordered;
use tokio::sync::{Notify, Semaphore};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::calls::{Calls, ask_tools, encoded};
use super::client::Worker;
use super::fetch::{Fetched, Fetcher};
use super::policy::FetchAllow;
use super::tell::Notes;
use crate::backchannel::{self, BackChannel};
use crate::backends::js::output::Captured;
use crate::backends::js::wire::JsLimits;
use crate::backends::js::wire::Ran;
use crate::backends::js::wire::{Failure, FromWorker, Job, Stop, ToWorker};
use crate::backends::seam::Tools;
use crate::backends::share::{Party, Permit, Pool};
use crate::error::Error;
use crate::limits::{
    CLIENT_ASKS_IN_FLIGHT, FETCH_BODY_BYTES, FETCH_IN_FLIGHT, FETCH_RUN_BYTES, JS_SPARE_WORKERS, JS_WORKER_RUNS,
    JS_WORKER_STOP_GRACE,
};

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
    /// Captured console output, kept on every path the worker answered.
    pub captured: Captured,
}

/// The JavaScript backend of one process: its limits, the places runs take, the HTTP
/// side of `fetch`, and the idle workers.
pub struct Js {
    limits: JsLimits,
    /// This binary, started in worker mode.
    program: PathBuf,
    /// The places of the runs at once, each with its share of the memory budget.
    places: Pool,
    fetcher: Arc<Fetcher>,
    /// Started workers waiting for a run, oldest first (it has had longest to build its
    /// next engine).
    idle: Arc<Mutex<VecDeque<Worker>>>,
    refilling: Arc<AtomicBool>,
    /// Numbers runs, so a frame about an earlier run is never taken for the current one.
    next_run: AtomicU64,
    /// Runs waiting for their places, for `/metrics`.
    waiting: Arc<AtomicI64>,
}

impl std::fmt::Debug for Js {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Js")
            .field("limits", &self.limits)
            .field("program", &self.program)
            .finish_non_exhaustive()
    }
}

/// A run's place among the concurrent runs, with its share of the memory budget.
type Places = Permit;

/// One run counted as waiting for its places while this lives (a run given up while
/// waiting stops counting too).
struct Waiting<'a>(&'a AtomicI64);

impl<'a> Waiting<'a> {
    fn count(waiting: &'a AtomicI64) -> Waiting<'a> {
        waiting.fetch_add(1, Ordering::Relaxed);
        Waiting(waiting)
    }
}

impl Drop for Waiting<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// Bytes in whole MiB, rounded up, as the heap budget counts them.
fn mib(bytes: usize) -> u32 {
    u32::try_from(bytes.div_ceil(1024 * 1024)).unwrap_or(u32::MAX)
}

/// The places of a backend within `limits`: its runs at once, and no more than the memory
/// budget holds when each run reserves its heap cap and its fetch allowance (a run whose
/// reservation is the whole budget or more gets the budget: one place).
fn places(limits: &JsLimits) -> usize {
    let total = mib(limits.total_heap_bytes).max(1);
    let each = mib(limits.heap_bytes.saturating_add(FETCH_RUN_BYTES)).clamp(1, total);
    limits.concurrent_runs.max(1).min((total / each).max(1) as usize)
}

/// How a conversation with a worker ended, and whether the worker may serve again.
struct Ended {
    ran: Ran,
    reusable: bool,
}

impl Js {
    /// A backend running every script within `limits` in workers started from
    /// `program` (this binary: `std::env::current_exe()`). No worker starts until the
    /// first run or [`Js::prewarm`].
    pub fn new(limits: JsLimits, program: PathBuf) -> Js {
        let js = Js {
            limits,
            program,
            places: Pool::new(places(&limits)),
            fetcher: Arc::new(Fetcher::new(
                limits.fetch_timeout,
                FETCH_BODY_BYTES,
                FetchAllow::default(),
            )),
            idle: Arc::default(),
            refilling: Arc::default(),
            next_run: AtomicU64::new(1),
            waiting: Arc::default(),
        };
        js.watch();
        js
    }

    /// Has `/metrics` read this pool's use when it renders: places, runs holding one,
    /// runs waiting, idle workers. The probe holds only shared counters, not the pool.
    fn watch(&self) {
        let (pool, waiting, idle) = (self.places.clone(), self.waiting.clone(), Arc::downgrade(&self.idle));
        crate::metrics::get().watch_pool(move || {
            let count = |n: usize| i64::try_from(n).unwrap_or(i64::MAX);
            crate::metrics::PoolUse {
                places: count(pool.capacity()),
                running: count(pool.in_use()),
                waiting: waiting.load(Ordering::Relaxed),
                idle: idle.upgrade().map_or(0, |idle| {
                    count(idle.lock().unwrap_or_else(PoisonError::into_inner).len())
                }),
            }
        });
    }

    /// The same backend with `allow` as the exceptions to `fetch`'s address policy. By
    /// default (without this call), no internal address is reachable.
    #[must_use]
    pub fn with_fetch_allow(mut self, allow: FetchAllow) -> Js {
        self.fetcher = Arc::new(Fetcher::new(self.limits.fetch_timeout, FETCH_BODY_BYTES, allow));
        self
    }

    /// The same backend passing the run's trace context to the hosts `trace` names (by
    /// default, none). Call after [`Js::with_fetch_allow`].
    #[must_use]
    pub fn with_fetch_trace(mut self, trace: crate::telemetry::FetchTrace) -> Js {
        self.fetcher = Arc::new(self.fetcher.with_trace(trace));
        self
    }

    /// The limits of each run.
    pub fn limits(&self) -> &JsLimits {
        &self.limits
    }

    /// Starts the idle workers now, in the background, so the first call does not wait
    /// for one. Must be called inside a tokio runtime.
    pub fn prewarm(&self) {
        self.refill();
    }

    /// Runs a tool script for `party`: evaluates `code` (named `filename` in stack
    /// traces), then awaits `run(params)`. Cancelling `cancel` stops the run as its
    /// deadline would and fails it with [`Error::Cancelled`].
    pub async fn run_tool(
        &self,
        code: Arc<str>,
        filename: String,
        params: serde_json::Value,
        party: &Party,
        cancel: &CancellationToken,
    ) -> Result<JsOutput, Error> {
        self.tool(code, filename, params, false, (party, cancel)).await
    }

    /// Runs a TypeScript tool script: types erased (lines kept), then as [`Js::run_tool`].
    pub async fn run_typescript_tool(
        &self,
        code: &Arc<str>,
        filename: String,
        params: serde_json::Value,
        party: &Party,
        cancel: &CancellationToken,
    ) -> Result<JsOutput, Error> {
        self.tool(code.clone(), filename, params, true, (party, cancel)).await
    }

    async fn tool(
        &self,
        code: Arc<str>,
        filename: String,
        params: serde_json::Value,
        typescript: bool,
        (party, cancel): (&Party, &CancellationToken),
    ) -> Result<JsOutput, Error> {
        let job = Job::Tool {
            filename,
            code: code.to_string(),
            params: params.to_string(),
            typescript,
        };
        let (outcome, captured) = self.execute(job, party, cancel, None).await;
        Ok(JsOutput {
            result: outcome?.unwrap_or(serde_json::Value::Null),
            captured,
        })
    }

    /// Runs a snippet as the body of an async function:
    /// `run_javascript`, or with `typescript` `run_typescript` (types erased first,
    /// lines kept), for `party`. Cancelling `cancel` stops it as in [`Js::run_tool`].
    /// Its `tools` global reaches `tools` (none: every request of it is refused).
    pub async fn run_snippet(
        &self,
        code: &str,
        typescript: bool,
        (party, cancel): (&Party, &CancellationToken),
        tools: Option<&dyn Tools>,
    ) -> SnippetOutput {
        let job = Job::Snippet {
            code: code.to_owned(),
            typescript,
        };
        let (outcome, captured) = self.execute(job, party, cancel, tools).await;
        SnippetOutput { outcome, captured }
    }

    /// Runs `job` in an idle worker (or a new one), then tops the idle workers up.
    /// Answers when the worker does, or at the deadline or cancellation plus at most
    /// [`JS_WORKER_STOP_GRACE`].
    async fn execute(&self, job: Job, party: &Party, cancel: &CancellationToken, tools: Option<&dyn Tools>) -> Ran {
        // The run in a worker, its wait for a place, its fetches and its code's tool calls
        // under it.
        let kind = match &job {
            Job::Snippet { .. } => "snippet",
            _ => "tool",
        };
        let span = tracing::info_span!("javascript", toolgate.job = kind, error.type = tracing::field::Empty);
        let ran = self
            .execute_in_span(job, party, cancel, tools)
            .instrument(span.clone())
            .await;
        if let Err(e) = &ran.0 {
            span.record("error.type", e.code());
        }
        ran
    }

    /// [`Js::execute`] inside its span.
    async fn execute_in_span(
        &self,
        job: Job,
        party: &Party,
        cancel: &CancellationToken,
        tools: Option<&dyn Tools>,
    ) -> Ran {
        let until = Instant::now() + self.limits.wall_clock;
        // A place among the runs and this run's heap from the shared budget, within the
        // run's own deadline, held until its worker has answered or been killed.
        let places = tokio::select! {
            biased;
            () = cancel.cancelled() => return (Err(Error::Cancelled), Captured::default()),
            () = tokio::time::sleep_until(until.into()) => {
                return (Err(self.queue_timeout()), Captured::default());
            }
            places = self.places(party).instrument(tracing::info_span!(target: crate::telemetry::exported::STEP, "queue", toolgate.queue = "javascript")) => places,
        };
        let _places: Places = match places {
            Ok(p) => p,
            Err(e) => return (Err(e), Captured::default()),
        };
        let taken = self.idle.lock().unwrap_or_else(PoisonError::into_inner).pop_front();
        let mut worker = match taken {
            Some(worker) => worker,
            None => match Worker::spawn(&self.program, self.limits, FETCH_BODY_BYTES).await {
                Ok(worker) => worker,
                Err(e) => return (Err(e), Captured::default()),
            },
        };
        // Topped up only when none is left: a client calling back to back is then served
        // by two workers in turn, each building its next engine while the other runs.
        if self.idle.lock().unwrap_or_else(PoisonError::into_inner).is_empty() {
            self.refill();
        }
        let run = self.next_run.fetch_add(1, Ordering::Relaxed);
        // The MCP client of the call this run belongs to (none outside an MCP call).
        let channel = backchannel::current();
        let mut notes = Notes::new(channel.clone());
        let ended = self
            .converse(&mut worker, (run, job, until), cancel, (&mut notes, channel), tools)
            .await;
        notes.finish().await;
        worker.runs += 1;
        if ended.reusable && worker.runs < JS_WORKER_RUNS {
            let mut idle = self.idle.lock().unwrap_or_else(PoisonError::into_inner);
            if idle.len() < self.limits.concurrent_runs.max(JS_SPARE_WORKERS) {
                idle.push_back(worker);
            }
        }
        // Otherwise `worker` is dropped here: killed, before its places are given back.
        ended.ran
    }

    /// One run's conversation with `worker` ([`Js::talk`]), then the end of the tool
    /// calls its code left running: cancelled (an upstream is told) and waited for at
    /// most [`JS_WORKER_STOP_GRACE`], so a run that ended — or was killed at its deadline
    /// — leaves no inner call running.
    async fn converse(
        &self,
        worker: &mut Worker,
        job: (u64, Job, Instant),
        cancel: &CancellationToken,
        client: (&mut Notes, Option<Arc<dyn BackChannel>>),
        tools: Option<&dyn Tools>,
    ) -> Ended {
        let inner = cancel.child_token();
        let mut calls: Calls<'_> = FuturesUnordered::new();
        let ended = self
            .talk(worker, job, cancel, client, (tools, &inner, &mut calls))
            .await;
        inner.cancel();
        if !calls.is_empty() {
            let drained = async { while calls.next().await.is_some() {} };
            let _ = tokio::time::timeout(JS_WORKER_STOP_GRACE, drained).await;
        }
        ended
    }

    /// The conversation itself: the job, the requests it makes (of the network, of the
    /// MCP client through `client`, and of other tools through `tools`, pushed onto
    /// `calls` and cancelled by `inner`), and its answer — or, at the deadline or on
    /// cancellation, a stop and the answer to that.
    async fn talk<'t>(
        &self,
        worker: &mut Worker,
        (run, job, until): (u64, Job, Instant),
        cancel: &CancellationToken,
        client: (&mut Notes, Option<Arc<dyn BackChannel>>),
        (tools, inner, calls): (Option<&'t dyn Tools>, &'t CancellationToken, &mut Calls<'t>),
    ) -> Ended {
        let (notes, channel) = client;
        let deadline = until.saturating_duration_since(Instant::now());
        if !worker.send(&ToWorker::Run { run, job, deadline }, &[]).await {
            return self.lost(worker, None).await;
        }
        let in_flight = Arc::new(Semaphore::new(FETCH_IN_FLIGHT));
        // The bytes of fetch bodies this run may hold at once, reserved with its place.
        let buffers = Arc::new(Semaphore::new(FETCH_RUN_BYTES));
        let mut fetches: FuturesUnordered<BoxFuture<'static, (u32, Result<Fetched, Failure>)>> =
            FuturesUnordered::new();
        let mut aborts: HashMap<u32, Arc<Notify>> = HashMap::new();
        let mut asks: FuturesUnordered<BoxFuture<'static, (u32, Result<serde_json::Value, Failure>)>> =
            FuturesUnordered::new();
        let mut stopped: Option<Stop> = None;
        let mut grace = tokio::time::Instant::from(until) + JS_WORKER_STOP_GRACE;
        loop {
            tokio::select! {
                biased;
                frame = worker.recv() => match frame {
                    None => return self.lost(worker, stopped).await,
                    Some((FromWorker::Done { run: r, outcome, captured }, _)) if r == run => {
                        let outcome = outcome.map_err(Error::from);
                        // A run that met a limit (or an internal fault) costs its worker.
                        let clean = matches!(outcome, Ok(_) | Err(Error::Execution { .. }));
                        return Ended {
                            ran: (outcome, captured.capped(self.limits.output_chars)),
                            reusable: clean && stopped.is_none(),
                        };
                    }
                    Some((FromWorker::Fetch { run: r, id, request }, body)) if r == run && stopped.is_none() => {
                        let cancel = Arc::new(Notify::new());
                        aborts.insert(id, cancel.clone());
                        let body = request.has_body.then_some(body);
                        let (fetcher, in_flight, buffers) = (self.fetcher.clone(), in_flight.clone(), buffers.clone());
                        let span = super::fetch::span(&request);
                        fetches.push(Box::pin(async move {
                            let answer = fetcher
                                .fetch(&request, body, cancel, (in_flight, buffers))
                                .instrument(span.clone())
                                .await;
                            super::fetch::ended(&span, &answer);
                            (id, answer)
                        }));
                    }
                    Some((FromWorker::Note { run: r, note }, _)) if r == run && stopped.is_none() => notes.send(note),
                    Some((FromWorker::Ask { run: r, id, ask, params }, _)) if r == run && stopped.is_none() => {
                        let refused = match (&channel, asks.len() < CLIENT_ASKS_IN_FLIGHT) {
                            (Some(channel), true) => {
                                let asked = channel.ask(ask, params);
                                asks.push(Box::pin(async move {
                                    (id, asked.await.map_err(|m| Failure::named("McpError", m.to_string())))
                                }));
                                None
                            }
                            (None, _) => Some("this run has no MCP client to ask (it was not started by an MCP tool call)".to_owned()),
                            (Some(_), false) => Some(format!(
                                "a run may have at most {CLIENT_ASKS_IN_FLIGHT} requests waiting on its client"
                            )),
                        };
                        if let Some(why) = refused {
                            let reply = Err(Failure::type_error(format!("{}: {why}", ask.method())));
                            if !worker.send(&ToWorker::Answered { run, id, reply }, &[]).await {
                                return self.lost(worker, stopped).await;
                            }
                        }
                    }
                    Some((FromWorker::Tools { run: r, id, ask }, _)) if r == run && stopped.is_none() => match tools {
                        Some(tools) => {
                            let asked = ask_tools(tools, ask, inner);
                            calls.push(Box::pin(async move { (id, asked.await) }));
                        }
                        None => {
                            let why = "tools: only run_javascript and run_typescript snippets call tools".to_owned();
                            let reply = Err(Failure::type_error(why));
                            if !worker.send(&ToWorker::Called { run, id, reply }, &[]).await {
                                return self.lost(worker, stopped).await;
                            }
                        }
                    },
                    Some((FromWorker::Abort { run: r, id }, _)) if r == run => {
                        if let Some(cancel) = aborts.remove(&id) {
                            cancel.notify_one();
                        }
                    }
                    // About an earlier run, or a request made while stopping.
                    Some(_) => {}
                },
                Some((id, answer)) = fetches.next(), if !fetches.is_empty() => {
                    aborts.remove(&id);
                    let (reply, body, held) = match answer {
                        Ok(((head, body), held)) => (Ok(head), body, Some(held)),
                        Err(failure) => (Err(failure), Vec::new(), None),
                    };
                    if !worker.send(&ToWorker::Fetched { run, id, reply }, &body).await {
                        return self.lost(worker, stopped).await;
                    }
                    // The body is the worker's now (inside its heap cap): its bytes are
                    // no longer held here.
                    drop((body, held));
                }
                Some((id, answer)) = calls.next(), if !calls.is_empty() => {
                    // A run being stopped ends as its stop says: a call its stop
                    // cancelled must not reach the script as a failure it could report.
                    if stopped.is_some() {
                        continue;
                    }
                    let (reply, body) = match answer.and_then(|value| encoded(&value)) {
                        Ok(json) => (Ok(()), json),
                        Err(e) => (Err(Failure::tool(&e)), Vec::new()),
                    };
                    // Held here only while it crosses the pipe; the worker's heap holds it
                    // from then on, within the snippet's heap cap.
                    if !worker.send(&ToWorker::Called { run, id, reply }, &body).await {
                        return self.lost(worker, stopped).await;
                    }
                }
                Some((id, reply)) = asks.next(), if !asks.is_empty() => {
                    if !worker.send(&ToWorker::Answered { run, id, reply }, &[]).await {
                        return self.lost(worker, stopped).await;
                    }
                }
                () = cancel.cancelled(), if stopped.is_none() => {
                    stopped = Some(Stop::Cancelled);
                    grace = tokio::time::Instant::now() + JS_WORKER_STOP_GRACE;
                    let told = worker.stop(run, Stop::Cancelled);
                    inner.cancel();
                    if !told {
                        return self.lost(worker, stopped).await;
                    }
                }
                () = tokio::time::sleep_until(until.into()), if stopped.is_none() => {
                    stopped = Some(Stop::Deadline);
                    let told = worker.stop(run, Stop::Deadline);
                    inner.cancel();
                    if !told {
                        return self.lost(worker, stopped).await;
                    }
                }
                () = tokio::time::sleep_until(grace), if stopped.is_some() => {
                    return self.lost(worker, stopped).await;
                }
            }
        }
    }

    /// The end of a run whose worker did not answer: the limit the server stopped it
    /// for, or, when nothing stopped it, what became of the worker.
    async fn lost(&self, worker: &mut Worker, stopped: Option<Stop>) -> Ended {
        let error = match stopped {
            Some(Stop::Deadline) => Error::Timeout {
                what: "The JavaScript".to_owned(),
                after: self.limits.wall_clock,
            },
            Some(Stop::Cancelled) => Error::Cancelled,
            None => Error::Internal(format!(
                "the JavaScript worker process ended before answering ({}); it is replaced",
                worker.ended().await
            )),
        };
        Ended {
            ran: (Err(error), Captured::default()),
            reusable: false,
        }
    }

    /// A place among the concurrent runs, with this run's share of the memory budget,
    /// under the share rule for `party`.
    async fn places(&self, party: &Party) -> Result<Places, Error> {
        let _waiting = Waiting::count(&self.waiting);
        self.places
            .acquire(party)
            .await
            .ok_or_else(|| Error::Internal("the JavaScript run limiter is closed".to_owned()))
    }

    /// The failure of a run that waited its whole deadline for a place.
    fn queue_timeout(&self) -> Error {
        Error::Timeout {
            what: format!(
                "The JavaScript (waiting for a place: {} runs at once, for at most {} runs and {} MiB of heap and fetch bodies, and one caller may hold at most half of them)",
                self.places.capacity(),
                self.limits.concurrent_runs,
                mib(self.limits.total_heap_bytes)
            ),
            after: self.limits.wall_clock,
        }
    }

    /// Starts workers in the background until [`JS_SPARE_WORKERS`] are idle, unless a
    /// refill is already running.
    fn refill(&self) {
        if self.refilling.swap(true, Ordering::AcqRel) {
            return;
        }
        let (idle, refilling) = (self.idle.clone(), self.refilling.clone());
        let (program, limits) = (self.program.clone(), self.limits);
        tokio::spawn(async move {
            while idle.lock().unwrap_or_else(PoisonError::into_inner).len() < JS_SPARE_WORKERS {
                match Worker::spawn(&program, limits, FETCH_BODY_BYTES).await {
                    Ok(worker) => idle.lock().unwrap_or_else(PoisonError::into_inner).push_back(worker),
                    Err(e) => {
                        tracing::warn!("{e}");
                        break;
                    }
                }
            }
            refilling.store(false, Ordering::Release);
        });
    }
}
