//! The JavaScript worker process: `toolgate __js-worker`, started by the server (`pool.rs`)
//! under the process sandbox, never by a user. It reads frames on stdin and writes frames
//! on stdout (`wire.rs`); stderr is the server's.
//!
//! The main thread does the work: it builds an engine, waits for a job, runs it and
//! answers, then builds the next engine while it waits again, so a job never waits for a
//! build. It reads its frames itself, in the same select as the run (a stop, a `fetch`
//! answer), so a job reaches the engine with one wake of one thread. A script busy on the
//! CPU does not read frames, so the deadline does not depend on them: the interrupt
//! handler and the allocator stop a script at the deadline, and a watchdog thread —
//! asleep until the deadline of the run in progress — answers for a run that is still
//! inside a native call no check reaches, with its output so far. The server then kills
//! this process, which is the only stop that always works.
//!
//! Before it reads a job the worker gives up every file and network access it could have
//! (`sandbox::restrict_worker`: it needs neither, since `fetch` is made by the server) and
//! every system call it never makes (`sandbox::seal_worker`: no process, program, socket
//! or signal to another process).
//! When stdin ends (the server is gone), the process exits.

use std::collections::HashMap;
use std::io;
use std::os::fd::AsFd;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use tokio::net::unix::pipe;
use tokio::sync::{Notify, oneshot};
use tokio_util::sync::CancellationToken;

use super::engine::JsLimits;
use super::host::{Pending, Port};
use super::local::Local;
use super::output::Captured;
use super::state::{Limit, RunState};
use super::wire::{self, Failure, Frames, FromWorker, Head, Request, Stop, ToWorker};
use crate::error::Error;
use crate::limits::JS_WATCHDOG_MARGIN;

/// The first argument that makes `toolgate` a worker.
pub const WORKER_ARG: &str = "__js-worker";

/// A `fetch` answer on its way to the engine that asked.
type Reply = (Result<Head, Failure>, Vec<u8>);

/// What the main thread, the engine's host functions and the watchdog share.
struct Shared {
    out: Mutex<io::Stdout>,
    /// The run in progress; the watchdog waits on `started` for one.
    current: Mutex<Option<Current>>,
    started: Condvar,
    /// Requests waiting for their answer, by id (of the run in progress).
    waiting: Mutex<HashMap<u32, oneshot::Sender<Reply>>>,
    limits: JsLimits,
    /// Bytes a `fetch` body may hold.
    body_limit: usize,
}

/// The run in progress.
#[derive(Clone)]
struct Current {
    run: u64,
    until: Instant,
    state: Arc<RunState>,
    /// Set by whichever thread answers first.
    answered: Arc<AtomicBool>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(PoisonError::into_inner)
}

impl Shared {
    /// Writes one frame; the server being gone ends the process.
    fn send(&self, message: &FromWorker, body: &[u8]) {
        if wire::write(&mut *lock(&self.out), message, body).is_err() {
            std::process::exit(0);
        }
    }

    /// Answers `current` unless it has been answered.
    fn answer(&self, current: &Current, outcome: Result<Option<serde_json::Value>, Error>, captured: Captured) {
        if current.answered.swap(true, Ordering::AcqRel) {
            return;
        }
        let message = FromWorker::Done {
            run: current.run,
            outcome: outcome.map_err(wire::Failed::from),
            captured,
        };
        self.send(&message, &[]);
    }

    /// The run in progress, if any.
    fn current(&self) -> Option<Current> {
        lock(&self.current).clone()
    }
}

/// Sends an engine's requests to the server over the pipe.
struct Pipe(Arc<Shared>);

impl Port for Pipe {
    fn fetch(&self, request: Request, body: Option<Vec<u8>>, id: u32, cancel: Arc<Notify>) -> Pending {
        let shared = self.0.clone();
        Box::pin(async move {
            let gone = || Failure::type_error("fetch: the run is over".to_owned());
            let run = shared.current().ok_or_else(gone)?.run;
            let (tx, rx) = oneshot::channel();
            lock(&shared.waiting).insert(id, tx);
            shared.send(
                &FromWorker::Fetch { run, id, request },
                body.as_deref().unwrap_or_default(),
            );
            tokio::select! {
                reply = rx => match reply {
                    Ok((Ok(head), body)) => Ok((head, body)),
                    Ok((Err(failure), _)) => Err(failure),
                    Err(_) => Err(gone()),
                },
                () = cancel.notified() => {
                    lock(&shared.waiting).remove(&id);
                    shared.send(&FromWorker::Abort { run, id }, &[]);
                    Err(Failure::named("AbortError", "This operation was aborted".to_owned()))
                }
            }
        })
    }

    fn body_limit(&self) -> usize {
        self.0.body_limit
    }
}

/// The worker's entry point: serves jobs until stdin ends.
pub fn main() -> ExitCode {
    match serve() {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("toolgate: JavaScript worker: {e}");
            ExitCode::from(2)
        }
    }
}

fn serve() -> Result<(), String> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| format!("cannot start the async runtime: {e}"))?;
    runtime.block_on(async {
        let stdin = io::stdin()
            .as_fd()
            .try_clone_to_owned()
            .and_then(pipe::Receiver::from_owned_fd)
            .map_err(|e| format!("stdin must be a pipe: {e}"))?;
        let mut frames = Frames::new(stdin, 0);
        let setup = frames.next::<ToWorker>().await;
        let Ok(Some((ToWorker::Setup { limits, body_limit }, _))) = setup else {
            return Err("the first frame must be the setup".to_owned());
        };
        // Give up files and the network for good, before the watchdog thread exists
        // (landlock binds the calling thread and the threads it starts later).
        crate::sandbox::restrict_worker().map_err(|e| format!("cannot restrict the worker: {e}"))?;
        let shared = Arc::new(Shared {
            out: Mutex::new(io::stdout()),
            current: Mutex::default(),
            started: Condvar::new(),
            waiting: Mutex::default(),
            limits,
            body_limit,
        });
        let watched = shared.clone();
        std::thread::Builder::new()
            .name("watchdog".to_owned())
            .spawn(move || watchdog(&watched))
            .map_err(|e| format!("cannot start the watchdog thread: {e}"))?;
        // Both threads exist: no new process, program or thread from here on.
        crate::sandbox::seal_worker().map_err(|e| format!("cannot seal the worker: {e}"))?;
        frames.set_body_cap(body_limit);
        let local = Local::new(limits, Arc::new(Pipe(shared.clone())));
        loop {
            let engine = local.prepare().await;
            let (run, job, deadline) = loop {
                match frames.next::<ToWorker>().await {
                    Ok(Some((ToWorker::Run { run, job, deadline }, _))) => break (run, job, deadline),
                    // A stop or an answer about a run that is over.
                    Ok(Some(_)) => {}
                    Ok(None) => return Ok(()),
                    Err(e) => return Err(e.to_string()),
                }
            };
            let until = Instant::now() + deadline;
            let engine = match engine {
                Ok(engine) => engine,
                Err(e) => {
                    let failed = FromWorker::Done {
                        run,
                        outcome: Err(e.into()),
                        captured: Captured::default(),
                    };
                    shared.send(&failed, &[]);
                    continue;
                }
            };
            let current = Current {
                run,
                until,
                state: engine.state().clone(),
                answered: Arc::default(),
            };
            *lock(&shared.current) = Some(current.clone());
            shared.started.notify_one();
            let halt = CancellationToken::new();
            let (outcome, captured) = {
                let mut ran = std::pin::pin!(local.run(&engine, &job, until, &halt));
                loop {
                    tokio::select! {
                        biased;
                        ran = &mut ran => break ran,
                        frame = frames.next::<ToWorker>() => match frame {
                            Ok(Some((ToWorker::Stop { run: r, why }, _))) if r == run => {
                                current.state.stop(match why {
                                    Stop::Deadline => Limit::Deadline,
                                    Stop::Cancelled => Limit::Cancelled,
                                });
                                halt.cancel();
                            }
                            Ok(Some((ToWorker::Fetched { run: r, id, reply }, body))) if r == run => {
                                if let Some(tx) = lock(&shared.waiting).remove(&id) {
                                    let _ = tx.send((reply, body));
                                }
                            }
                            Ok(Some(_)) => {}
                            // The server is gone: nobody waits for this run.
                            Ok(None) => return Ok(()),
                            Err(e) => return Err(e.to_string()),
                        },
                    }
                }
            };
            shared.answer(&current, outcome, captured);
            *lock(&shared.current) = None;
            lock(&shared.waiting).clear();
            // Freed after the answer is sent, off the caller's path.
            drop(engine);
        }
    })
}

/// The watchdog thread: for each run, asleep until its deadline plus
/// [`JS_WATCHDOG_MARGIN`]; if the run is still in progress then (a script inside a native
/// call that no check reaches), it stops the run's state and answers with the output so
/// far, so the server has the answer before it kills this process.
fn watchdog(shared: &Shared) {
    let mut current = lock(&shared.current);
    loop {
        let Some(run) = current.clone() else {
            current = shared.started.wait(current).unwrap_or_else(PoisonError::into_inner);
            continue;
        };
        let due = run.until + JS_WATCHDOG_MARGIN;
        let now = Instant::now();
        if now < due {
            current = shared
                .started
                .wait_timeout(current, due - now)
                .unwrap_or_else(PoisonError::into_inner)
                .0;
            continue;
        }
        drop(current);
        run.state.stop(Limit::Deadline);
        let error = run
            .state
            .verdict(shared.limits.wall_clock, shared.limits.heap_bytes)
            .unwrap_or(Error::Timeout {
                what: "The JavaScript".to_owned(),
                after: shared.limits.wall_clock,
            });
        shared.answer(&run, Err(error), run.state.take_captured());
        // Wait for the main thread to move on (or for the server to kill this process).
        current = lock(&shared.current);
        while current.as_ref().is_some_and(|c| c.run == run.run) {
            current = shared.started.wait(current).unwrap_or_else(PoisonError::into_inner);
        }
    }
}
