//! REPL sessions: one long-lived `nx` process (no file argument) per session, so globals
//! survive between evaluations, under the same sandbox as a run.
//!
//! The protocol: code is flattened to one line (the REPL reads one
//! statement per line); after it the session sends `print("<marker>")` with a one-time
//! random marker and reads stdout until the marker appears. The output is everything
//! before it, less the REPL's `> ` prompt, removed by position only — the two bytes right
//! before the marker — so output that itself contains `> ` survives. Then it reads on to
//! the prompt after the marker, leaving the stream clean for the next call. An error line
//! does not end the session; a deadline does (the code may loop forever), and so does the
//! process exiting. At most [`limits::REPL_SESSIONS`] live at once, at most
//! [`limits::REPL_SESSIONS_PER_PRINCIPAL`] of them for one [`Party`] (so one caller, or
//! two, cannot hold them all); one idle for
//! [`limits::REPL_IDLE`] is closed; each has its own folder, removed when it ends, and
//! every session ends with the server.
//!
//! A session is a process of the toolgate that started it, so its id names that process
//! (`nx-<process>-<random>`): an id of another process — another replica of a fleet, or
//! this server before a restart — is answered with an error saying so
//! ([`Error::SessionElsewhere`]), not as an id that never existed.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};
use std::time::{Duration, Instant};

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{ChildStdin, ChildStdout};

use super::limits;
use super::{Invocation, RUNTIME};
use crate::backends::process::{self, Arg, Confinement, Launched, Spec, Workdir, output};
use crate::backends::share::Party;
use crate::error::Error;
use crate::sandbox::Rlimits;

/// What one evaluation produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Evaluated {
    /// The session answered: its output (prompt removed) and whether it was cut.
    Output {
        /// What the code printed.
        output: String,
        /// True if and only if the output was cut at its cap.
        truncated: bool,
    },
    /// The session is gone (deadline passed or the process exited); why.
    Killed(String),
}

/// The live REPL sessions of one server.
#[derive(Debug, Default)]
pub struct Sessions {
    inner: Arc<Inner>,
}

#[derive(Debug)]
struct Inner {
    state: Mutex<State>,
    /// How long a session may sit unused. By default, [`limits::REPL_IDLE`].
    idle: Duration,
}

impl Default for Inner {
    fn default() -> Self {
        Inner {
            state: Mutex::default(),
            idle: limits::REPL_IDLE,
        }
    }
}

#[derive(Debug, Default)]
struct State {
    live: HashMap<String, Arc<Session>>,
    /// The parties of the sessions being started, counted against the caps.
    starting: Vec<Party>,
    reaper: bool,
}

#[derive(Debug)]
struct Session {
    /// The caller that started it: no other caller can reach it.
    owner: u64,
    /// Whose share of the sessions it counts against.
    party: Party,
    /// The process group, to kill without waiting for a running evaluation.
    group: i32,
    last_used: Mutex<Instant>,
    io: tokio::sync::Mutex<Option<Io>>,
}

/// The process and its pipes; dropping it kills the group and removes the folder.
#[derive(Debug)]
struct Io {
    stdin: ChildStdin,
    stdout: ChildStdout,
    /// Bytes read past the last answer.
    pending: Vec<u8>,
    _launched: Launched,
}

impl Sessions {
    /// Starts a session for the caller `owner`, counted against `party`'s share, running
    /// `nx` as `nx` says; its id on success.
    pub async fn start(&self, owner: u64, party: &Party, nx: &Invocation) -> Result<String, Error> {
        {
            let mut state = lock(&self.inner.state);
            let held = state.live.values().filter(|s| s.party == *party).count()
                + state.starting.iter().filter(|p| *p == party).count();
            if held >= limits::REPL_SESSIONS_PER_PRINCIPAL {
                return Err(Error::SessionShare {
                    share: limits::REPL_SESSIONS_PER_PRINCIPAL,
                    limit: limits::REPL_SESSIONS,
                });
            }
            if state.live.len() + state.starting.len() >= limits::REPL_SESSIONS {
                return Err(Error::SessionLimit {
                    limit: limits::REPL_SESSIONS,
                });
            }
            state.starting.push(party.clone());
        }
        let started = start_process(owner, party, nx).await;
        let mut state = lock(&self.inner.state);
        if let Some(at) = state.starting.iter().position(|p| p == party) {
            state.starting.swap_remove(at);
        }
        let session = started?;
        let id = format!("nx-{}-{}", process_tag(), random_hex(8));
        state.live.insert(id.clone(), Arc::new(session));
        if !state.reaper {
            state.reaper = true;
            tokio::spawn(reap(Arc::downgrade(&self.inner)));
        }
        Ok(id)
    }

    /// Evaluates `code` in the caller `owner`'s session `id` within `timeout`. Another
    /// caller's session is not found, as if it did not exist.
    pub async fn eval(&self, owner: u64, id: &str, code: &str, timeout: Duration) -> Result<Evaluated, Error> {
        let session = lock(&self.inner.state)
            .live
            .get(id)
            .filter(|s| s.owner == owner)
            .cloned()
            .ok_or_else(|| not_found(id))?;
        let mut guard = session.io.lock().await;
        let Some(io) = guard.as_mut() else {
            return Err(Error::SessionNotFound { id: id.to_owned() });
        };
        *lock(&session.last_used) = Instant::now();
        let answer = evaluate(io, code, timeout).await;
        if let Evaluated::Killed(_) = &answer {
            guard.take();
            lock(&self.inner.state).live.remove(id);
        }
        *lock(&session.last_used) = Instant::now();
        Ok(answer)
    }

    /// Ends the caller `owner`'s session `id`; false when it has none of that id.
    pub async fn stop(&self, owner: u64, id: &str) -> bool {
        let session = {
            let mut state = lock(&self.inner.state);
            match state.live.get(id) {
                Some(s) if s.owner == owner => state.live.remove(id),
                _ => None,
            }
        };
        let Some(session) = session else {
            return false;
        };
        process::kill_group(session.group);
        session.io.lock().await.take();
        true
    }

    /// How many sessions are live.
    pub fn len(&self) -> usize {
        lock(&self.inner.state).live.len()
    }

    /// Returns true if and only if no session is live.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Ends every session (the server is exiting).
    pub async fn close_all(&self) {
        let all: Vec<Arc<Session>> = lock(&self.inner.state).live.drain().map(|(_, s)| s).collect();
        for session in all {
            process::kill_group(session.group);
            session.io.lock().await.take();
        }
    }

    /// Ends every session of the caller `owner` (its MCP session has ended).
    pub async fn close_owned(&self, owner: u64) {
        let owned: Vec<Arc<Session>> = {
            let mut state = lock(&self.inner.state);
            let ids: Vec<String> = state
                .live
                .iter()
                .filter(|(_, s)| s.owner == owner)
                .map(|(id, _)| id.clone())
                .collect();
            ids.iter().filter_map(|id| state.live.remove(id)).collect()
        };
        for session in owned {
            process::kill_group(session.group);
            session.io.lock().await.take();
        }
    }
}

/// Locks a std mutex, recovering from a panic in another holder (the data are plain).
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|poisoned| poisoned.into_inner())
}

/// Starts `nx` in REPL mode and reads past its banner to the first prompt.
async fn start_process(owner: u64, party: &Party, nx: &Invocation) -> Result<Session, Error> {
    let spec = Spec {
        runtime: RUNTIME.to_owned(),
        program: nx.program.clone(),
        args: nx.pre_args.iter().cloned().map(Arg::Text).collect(),
        files: Vec::new(),
        workdir: Workdir::Temp,
        env: super::sandboxed_env(),
        parent_env: None,
        timeout: limits::REPL_IDLE,
        output_bytes: limits::NYX_OUTPUT_BYTES,
        sandbox: Some(Confinement {
            rlimits: Rlimits::with_cpu_seconds(limits::REPL_CPU_SECONDS),
            read_paths: nx.read_paths.clone(),
        }),
        temp_root: None,
    };
    let mut launched = process::launch(&spec, true)?;
    let (Some(stdin), Some(stdout), stderr) = (
        launched.child.stdin.take(),
        launched.child.stdout.take(),
        launched.child.stderr.take(),
    ) else {
        return Err(Error::Internal("the REPL's pipes were not opened".into()));
    };
    // Nobody reads the REPL's stderr; drain it so the process never blocks on it.
    if let Some(mut stderr) = stderr {
        tokio::spawn(async move {
            let mut sink = vec![0u8; 4096];
            while matches!(stderr.read(&mut sink).await, Ok(n) if n > 0) {}
        });
    }
    let group = launched.group;
    let mut io = Io {
        stdin,
        stdout,
        pending: Vec::new(),
        _launched: launched,
    };
    match read_until(&mut io, b"> ", limits::REPL_START_TIMEOUT).await {
        Ok(_) => {
            io.pending.clear();
            Ok(Session {
                owner,
                party: party.clone(),
                group,
                last_used: Mutex::new(Instant::now()),
                io: tokio::sync::Mutex::new(Some(io)),
            })
        }
        Err(why) => Err(Error::Execution {
            message: format!("NyxilumNode did not start a REPL: {why}"),
        }),
    }
}

/// One evaluation on a live session.
async fn evaluate(io: &mut Io, code: &str, timeout: Duration) -> Evaluated {
    let flat = code.replace("\r\n", " ").replace(['\n', '\r'], " ");
    let flat = flat.trim();
    if flat.is_empty() {
        return Evaluated::Output {
            output: String::new(),
            truncated: false,
        };
    }
    let marker = format!("NX_REPL_{}", random_hex(16));
    let line = format!("{flat}\nprint(\"{marker}\")\n");
    let deadline = tokio::time::Instant::now() + timeout;
    let written = async {
        io.stdin.write_all(line.as_bytes()).await?;
        io.stdin.flush().await
    };
    if let Err(e) = written.await {
        return Evaluated::Killed(format!("the REPL process is gone ({e}); start a new session"));
    }
    let left = deadline.saturating_duration_since(tokio::time::Instant::now());
    let scanned = match read_until(io, marker.as_bytes(), left).await {
        Ok(scan) => scan,
        Err(why) => return Evaluated::Killed(killed_message(&why, timeout)),
    };
    let mut before = scanned.before;
    let mut total = scanned.total;
    // The prompt printed before the marker line is always the last two bytes.
    if before.ends_with(b"> ") {
        before.truncate(before.len() - 2);
        total = total.saturating_sub(2);
    }
    // Read on to the prompt after the marker, so the next call starts clean.
    let after = format!("{marker}\n> ");
    let left = deadline.saturating_duration_since(tokio::time::Instant::now());
    io.pending.splice(0..0, marker.bytes());
    if let Err(why) = read_until(io, after.as_bytes(), left).await {
        return Evaluated::Killed(killed_message(&why, timeout));
    }
    io.pending.clear();
    let captured = output::finish(before, limits::NYX_OUTPUT_BYTES, total);
    Evaluated::Output {
        output: captured.text,
        truncated: captured.truncated || scanned.dropped,
    }
}

fn killed_message(why: &str, timeout: Duration) -> String {
    if why == TIMED_OUT {
        format!(
            "The code did not finish within {} ms (an infinite loop?); the session was killed. Start a new one with nyxilum_repl_start.",
            timeout.as_millis()
        )
    } else {
        format!("The REPL ended ({why}); the session is gone. Start a new one with nyxilum_repl_start.")
    }
}

const TIMED_OUT: &str = "timed out";

/// What came before a needle.
struct Scan {
    /// The bytes before it (with a middle part dropped when there were too many).
    before: Vec<u8>,
    /// Bytes before it in all.
    total: u64,
    /// True if and only if a middle part was dropped.
    dropped: bool,
}

/// Reads stdout until `needle` appears, within `timeout`. What follows the needle stays
/// in `pending`, beginning right after the needle. The buffer is bounded: past the output
/// cap only a window big enough to find the needle (and the prompt before it) is kept.
async fn read_until(io: &mut Io, needle: &[u8], timeout: Duration) -> Result<Scan, String> {
    let deadline = tokio::time::Instant::now() + timeout;
    let keep_head = limits::NYX_OUTPUT_BYTES + 4;
    let window = needle.len() + 8;
    let mut buf = std::mem::take(&mut io.pending);
    let mut total: u64 = buf.len() as u64;
    let mut dropped = false;
    let mut searched_to: usize = 0;
    let mut chunk = vec![0u8; 16 * 1024];
    loop {
        let from = searched_to.saturating_sub(needle.len());
        if let Some(at) = find(&buf[from..], needle).map(|i| i + from) {
            io.pending = buf.split_off(at + needle.len());
            buf.truncate(at);
            let total = total - (io.pending.len() + needle.len()) as u64;
            return Ok(Scan {
                before: buf,
                total,
                dropped,
            });
        }
        searched_to = buf.len();
        if buf.len() > keep_head + 2 * window {
            buf.drain(keep_head..buf.len() - window);
            searched_to = buf.len();
            dropped = true;
        }
        let n = match tokio::time::timeout_at(deadline, io.stdout.read(&mut chunk)).await {
            Err(_) => return Err(TIMED_OUT.to_owned()),
            Ok(Err(e)) => return Err(format!("reading its output failed: {e}")),
            Ok(Ok(0)) => return Err("the process exited".to_owned()),
            Ok(Ok(n)) => n,
        };
        total += n as u64;
        buf.extend_from_slice(&chunk[..n]);
    }
}

fn find(haystack: &[u8], needle: &[u8]) -> Option<usize> {
    haystack.windows(needle.len()).position(|w| w == needle)
}

/// This process's part of its REPL session ids: 32 random bits, drawn once.
fn process_tag() -> &'static str {
    static TAG: std::sync::OnceLock<String> = std::sync::OnceLock::new();
    TAG.get_or_init(|| random_hex(4))
}

/// Returns true if and only if `id` has the shape of a REPL session id of another
/// toolgate process (`nx-<8 hex>-<16 hex>` whose process part is not this one's).
pub(super) fn elsewhere(id: &str) -> bool {
    let mut parts = id.split('-');
    let hex = |s: &str, n: usize| s.len() == n && s.bytes().all(|b| b.is_ascii_hexdigit());
    match (parts.next(), parts.next(), parts.next(), parts.next()) {
        (Some("nx"), Some(process), Some(random), None) => {
            hex(process, 8) && hex(random, 16) && process != process_tag()
        }
        _ => false,
    }
}

/// The error for a REPL session id this process does not hold.
fn not_found(id: &str) -> Error {
    if elsewhere(id) {
        Error::SessionElsewhere { id: id.to_owned() }
    } else {
        Error::SessionNotFound { id: id.to_owned() }
    }
}

/// `bytes` random bytes in hex, from the operating system.
fn random_hex(bytes: usize) -> String {
    let mut buf = vec![0u8; bytes];
    if getrandom::fill(&mut buf).is_err() {
        // No OS randomness: fall back to the clock and a per-process counter, still one-time.
        static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = COUNTER.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let t = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        return format!("{t:x}{n:x}");
    }
    buf.iter().map(|b| format!("{b:02x}")).collect()
}

/// Closes idle sessions every [`limits::REPL_REAP_EVERY`] until the sessions are dropped.
async fn reap(inner: Weak<Inner>) {
    let every = limits::REPL_REAP_EVERY;
    let mut tick = tokio::time::interval_at(tokio::time::Instant::now() + every, every);
    loop {
        tick.tick().await;
        let Some(inner) = inner.upgrade() else { return };
        reap_idle(&inner);
    }
}

/// Closes every session unused for the idle limit; returns how many it closed.
fn reap_idle(inner: &Inner) -> usize {
    let idle: Vec<(String, Arc<Session>)> = lock(&inner.state)
        .live
        .iter()
        .filter(|(_, s)| lock(&s.last_used).elapsed() >= inner.idle)
        .map(|(id, s)| (id.clone(), s.clone()))
        .collect();
    let mut closed = 0;
    for (id, session) in idle {
        // A session in the middle of an evaluation is not idle.
        let Ok(mut io) = session.io.try_lock() else { continue };
        tracing::debug!("closing REPL session {id}: idle for {:?}", inner.idle);
        io.take();
        lock(&inner.state).live.remove(&id);
        closed += 1;
    }
    closed
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::backends::nyxilum::Locator;

    fn standin() -> Invocation {
        let locator = Locator {
            node_path: Some(std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/standin/nx")),
            ecosystem_root: std::path::PathBuf::from("/nonexistent"),
        };
        locator.locate().expect("the stand-in nx")
    }

    #[tokio::test]
    async fn an_idle_session_is_closed_and_a_busy_one_is_not() {
        let sessions = Sessions {
            inner: Arc::new(Inner {
                idle: Duration::ZERO,
                ..Inner::default()
            }),
        };
        let nx = standin();
        let idle = sessions.start(1, &Party::named("p"), &nx).await.unwrap();
        let busy = sessions.start(1, &Party::named("p"), &nx).await.unwrap();
        let held = lock(&sessions.inner.state).live.get(&busy).cloned().unwrap();
        let guard = held.io.lock().await;
        assert_eq!(reap_idle(&sessions.inner), 1);
        drop(guard);
        assert!(matches!(
            sessions.eval(1, &idle, "print(1)", Duration::from_secs(5)).await,
            Err(Error::SessionNotFound { .. })
        ));
        assert_eq!(sessions.len(), 1);
        sessions.close_all().await;
        assert!(sessions.is_empty());
    }

    #[tokio::test]
    async fn another_callers_session_is_not_found_and_cannot_be_stopped() {
        let sessions = Sessions::default();
        let id = sessions.start(1, &Party::named("p"), &standin()).await.unwrap();
        assert!(matches!(
            sessions.eval(2, &id, "print(1)", Duration::from_secs(5)).await,
            Err(Error::SessionNotFound { .. })
        ));
        assert!(!sessions.stop(2, &id).await, "only its owner stops it");
        assert!(matches!(
            sessions.eval(1, &id, "print(1)", Duration::from_secs(5)).await,
            Ok(Evaluated::Output { .. })
        ));
        assert!(sessions.stop(1, &id).await);
    }

    #[tokio::test]
    async fn a_large_output_is_cut_and_the_session_goes_on() {
        let sessions = Sessions::default();
        let id = sessions.start(1, &Party::named("p"), &standin()).await.unwrap();
        let flood = "for i in 0..5000 { print(\"line ${i} of a flood\") }";
        match sessions.eval(1, &id, flood, Duration::from_secs(20)).await.unwrap() {
            Evaluated::Output { output, truncated } => {
                assert!(truncated);
                assert!(output.len() <= limits::NYX_OUTPUT_BYTES && output.starts_with("line 0 of a flood\n"));
            }
            other => panic!("{other:?}"),
        }
        let after = sessions
            .eval(1, &id, "print(\"still here\")", Duration::from_secs(5))
            .await
            .unwrap();
        assert_eq!(
            after,
            Evaluated::Output {
                output: "still here\n".into(),
                truncated: false
            }
        );
        sessions.close_all().await;
    }

    #[tokio::test]
    async fn one_party_holds_its_share_and_another_still_starts_one() {
        let sessions = Sessions::default();
        let nx = standin();
        let (a, b) = (Party::named("a"), Party::named("b"));
        for owner in [1, 2] {
            sessions.start(owner, &a, &nx).await.unwrap();
        }
        let refused = sessions.start(3, &a, &nx).await.unwrap_err();
        assert!(
            matches!(refused, Error::SessionShare { share: 2, limit: 5 }),
            "{refused}"
        );
        assert!(refused.to_string().contains("at most 2 of the 5"), "{refused}");
        sessions.start(4, &b, &nx).await.unwrap();
        sessions.close_all().await;
    }
}
