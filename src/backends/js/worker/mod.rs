//! The JavaScript worker process: `toolgate __js-worker`, started by the server (`pool.rs`)
//! under the process sandbox, never by a user. It reads frames on stdin and writes frames
//! on stdout (`wire.rs`); the server's stops arrive on a control pipe (fd 3); stderr is
//! the server's.
//!
//! The main thread does the work: it builds an engine, waits for a job, runs it and
//! answers, then builds the next engine while it waits again, so a job never waits for a
//! build. It reads its frames itself, in the same select as the run (`fetch` answers), so
//! a job reaches the engine with one wake of one thread. The watchdog thread sleeps on the
//! control pipe and wakes only when the server stops a run (its deadline, or the caller
//! cancelled): it tells the run's state to stop (the interrupt handler and the allocator
//! end the script at their next check), cancels the run's wait on promises, and answers
//! at once with the output so far — even for a script inside a native call that no check
//! reaches. The server then kills this process, which is the only stop that always works.
//!
//! Before it reads a job the worker gives up every file and network access it could have
//! (`sandbox::restrict_worker`: it needs neither, since `fetch` is made by the server) and
//! every system call it never makes (`sandbox::seal_worker`: no process, program, socket
//! or signal to another process). When stdin ends (the server is gone), the process exits.

mod alloc;
mod bytecode;
pub(super) mod engine;
mod host;
mod local;
mod program;
mod state;
mod thrown;
pub(super) mod typescript;

use std::collections::HashMap;
use std::io::{self, Read};
use std::os::fd::{AsFd, FromRawFd};
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use tokio::net::unix::pipe;
use tokio::sync::{Notify, oneshot};
use tokio_util::sync::CancellationToken;

use crate::backchannel::{Ask, Note};
use crate::backends::js::output::Captured;
use crate::backends::js::wire::{
    self, CONTROL_FD, Failure, Frames, FromWorker, Head, JsLimits, Request, STOP_BYTES, Stop, ToWorker, ToolsAsk,
};
use crate::error::Error;
use crate::limits::CLIENT_NOTES_PER_RUN;
use host::{Asked, Called, Pending, Port};
use local::Local;
use state::{Limit, RunState};

/// A `tools` request's answer on its way to the engine that asked: the value's JSON.
type CallReply = Result<Vec<u8>, Failure>;

/// A `fetch` answer on its way to the engine that asked.
type Reply = (Result<Head, Failure>, Vec<u8>);

/// What the main thread, the engine's host functions and the watchdog share.
struct Shared {
    out: Mutex<io::Stdout>,
    /// The run in progress, and which runs have begun or been stopped before they began.
    slot: Mutex<Slot>,
    /// Requests waiting for their answer, by id (of the run in progress).
    waiting: Mutex<HashMap<u32, oneshot::Sender<Reply>>>,
    /// Asks of the MCP client waiting for their answer, by id (of the run in progress).
    asks: Mutex<HashMap<u32, oneshot::Sender<Result<serde_json::Value, Failure>>>>,
    /// `tools` requests waiting for their answer, by id (of the run in progress).
    calls: Mutex<HashMap<u32, oneshot::Sender<CallReply>>>,
    /// Numbers asks and `tools` requests within the process (each run's ids are then
    /// unique too).
    next_ask: AtomicU32,
    limits: JsLimits,
    /// Bytes a `fetch` body may hold.
    body_limit: usize,
}

/// What the watchdog needs to know about runs.
#[derive(Default)]
struct Slot {
    current: Option<Current>,
    /// The number of the last run begun (the server numbers them in increasing order).
    begun: u64,
    /// A run stopped (and answered) before it began.
    stopped: Option<u64>,
}

/// The run in progress.
#[derive(Clone)]
struct Current {
    run: u64,
    state: Arc<RunState>,
    /// Ends the run's wait on promises.
    halt: CancellationToken,
    /// Set by whichever thread answers first.
    answered: Arc<AtomicBool>,
    /// Notes to the MCP client sent so far.
    notes: Arc<AtomicUsize>,
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
        lock(&self.slot).current.clone()
    }

    /// Acts on the server's stop of run `run`: the run in progress stops and is answered
    /// with its output so far; a run not begun yet is answered now and skipped when it
    /// arrives; a run already over is left alone.
    fn stop(&self, run: u64, why: Stop) {
        let current = {
            let mut slot = lock(&self.slot);
            match &slot.current {
                Some(c) if c.run == run => Some(c.clone()),
                _ if run > slot.begun => {
                    slot.stopped = Some(run);
                    None
                }
                _ => return,
            }
        };
        let limit = match why {
            Stop::Deadline => Limit::Deadline,
            Stop::Cancelled => Limit::Cancelled,
        };
        let Some(current) = current else {
            let error = match why {
                Stop::Deadline => Error::Timeout {
                    what: "The JavaScript".to_owned(),
                    after: self.limits.wall_clock,
                },
                Stop::Cancelled => Error::Cancelled,
            };
            let message = FromWorker::Done {
                run,
                outcome: Err(error.into()),
                captured: Captured::default(),
            };
            self.send(&message, &[]);
            return;
        };
        current.state.stop(limit);
        current.halt.cancel();
        let error = current
            .state
            .verdict(self.limits.wall_clock, self.limits.heap_bytes)
            .unwrap_or(Error::Cancelled);
        self.answer(&current, Err(error), current.state.take_captured());
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

    fn note(&self, note: Note) -> Result<(), Failure> {
        let current = self
            .0
            .current()
            .ok_or_else(|| Failure::type_error("mcp: the run is over".to_owned()))?;
        if current.notes.fetch_add(1, Ordering::Relaxed) >= CLIENT_NOTES_PER_RUN {
            return Err(Failure::type_error(format!(
                "mcp: a run may send its client at most {CLIENT_NOTES_PER_RUN} log and progress notes"
            )));
        }
        self.0.send(&FromWorker::Note { run: current.run, note }, &[]);
        Ok(())
    }

    fn ask(&self, ask: Ask, params: serde_json::Value) -> Asked {
        let shared = self.0.clone();
        Box::pin(async move {
            let gone = || Failure::type_error("mcp: the run is over".to_owned());
            let run = shared.current().ok_or_else(gone)?.run;
            let id = shared.next_ask.fetch_add(1, Ordering::Relaxed);
            let (tx, rx) = oneshot::channel();
            lock(&shared.asks).insert(id, tx);
            shared.send(&FromWorker::Ask { run, id, ask, params }, &[]);
            rx.await.unwrap_or_else(|_| Err(gone()))
        })
    }

    fn tools(&self, ask: ToolsAsk) -> Called {
        let shared = self.0.clone();
        Box::pin(async move {
            let gone = || Failure::type_error("tools: the run is over".to_owned());
            let run = shared.current().ok_or_else(gone)?.run;
            let id = shared.next_ask.fetch_add(1, Ordering::Relaxed);
            let (tx, rx) = oneshot::channel();
            lock(&shared.calls).insert(id, tx);
            shared.send(&FromWorker::Tools { run, id, ask }, &[]);
            rx.await.unwrap_or_else(|_| Err(gone()))
        })
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
            slot: Mutex::default(),
            waiting: Mutex::default(),
            asks: Mutex::default(),
            calls: Mutex::default(),
            next_ask: AtomicU32::new(1),
            limits,
            body_limit,
        });
        let control = control_pipe()?;
        let watched = shared.clone();
        std::thread::Builder::new()
            .name("watchdog".to_owned())
            .spawn(move || watchdog(&watched, control))
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
                state: engine.state().clone(),
                halt: CancellationToken::new(),
                answered: Arc::default(),
                notes: Arc::default(),
            };
            {
                let mut slot = lock(&shared.slot);
                slot.begun = run;
                if slot.stopped == Some(run) {
                    // Stopped (and answered) before it began.
                    continue;
                }
                slot.current = Some(current.clone());
            }
            let (outcome, captured) = {
                let mut ran = std::pin::pin!(local.run(&engine, &job, until, &current.halt));
                loop {
                    tokio::select! {
                        biased;
                        ran = &mut ran => break ran,
                        frame = frames.next::<ToWorker>() => match frame {
                            Ok(Some((ToWorker::Fetched { run: r, id, reply }, body))) if r == run => {
                                if let Some(tx) = lock(&shared.waiting).remove(&id) {
                                    let _ = tx.send((reply, body));
                                }
                            }
                            Ok(Some((ToWorker::Answered { run: r, id, reply }, _))) if r == run => {
                                if let Some(tx) = lock(&shared.asks).remove(&id) {
                                    let _ = tx.send(reply);
                                }
                            }
                            Ok(Some((ToWorker::Called { run: r, id, reply }, body))) if r == run => {
                                if let Some(tx) = lock(&shared.calls).remove(&id) {
                                    let _ = tx.send(reply.map(|()| body));
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
            lock(&shared.slot).current = None;
            lock(&shared.waiting).clear();
            lock(&shared.asks).clear();
            lock(&shared.calls).clear();
            // Freed after the answer is sent, off the caller's path.
            drop(engine);
        }
    })
}

/// The control pipe the server opened as [`CONTROL_FD`].
fn control_pipe() -> Result<std::fs::File, String> {
    // SAFETY: `libc::stat` is plain data, for which all zeroes is a valid value.
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: fstat on a descriptor number writes only into the struct given.
    if unsafe { libc::fstat(CONTROL_FD, &mut stat) } != 0 || stat.st_mode & libc::S_IFMT != libc::S_IFIFO {
        return Err(format!("descriptor {CONTROL_FD} must be the server's control pipe"));
    }
    // SAFETY: the descriptor is open (fstat succeeded), a pipe, and owned by nothing else
    // in this process: the server made it for this worker alone.
    Ok(unsafe { std::fs::File::from_raw_fd(CONTROL_FD) })
}

/// The watchdog thread: acts on each stop the server sends on the control pipe, until the
/// server closes it.
fn watchdog(shared: &Shared, mut control: std::fs::File) {
    let mut message = [0u8; STOP_BYTES];
    while control.read_exact(&mut message).is_ok() {
        let [a, b, c, d, e, f, g, h, why] = message;
        let why = if why == 1 { Stop::Cancelled } else { Stop::Deadline };
        shared.stop(u64::from_le_bytes([a, b, c, d, e, f, g, h]), why);
    }
}
