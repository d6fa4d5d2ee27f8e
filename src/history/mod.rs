//! Run history: every run made for one caller (an MCP session), in memory only, bounded,
//! with inputs redacted and payloads capped before they are stored. Each session has its
//! own, numbering its own runs, so no session can read another's.
//!
//! **Invariant:** history never touches disk. Run payloads are user data and often
//! secrets; losing them on restart costs nothing the call did not already return.
//!
//! A session of a fleet's replica (`TOOLGATE_REDIS`) keeps its history in Redis too
//! (`shelf.rs`): runs are numbered there, each record (redacted and capped here, before
//! it leaves the process) is pushed there, and a read of the history first loads it from
//! there, so every replica answers the same. Redis is memory too; an operator who turns
//! its persistence on writes the records to its disk (`docs/guides/operators.md`).

pub mod diff;
pub mod redact;
mod render;
pub mod shelf;

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};
use std::time::SystemTime;

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::error::Error;
use crate::limits::{HISTORY_MEASURE_BYTES, HISTORY_RUNS};
use crate::shared::rate::Counter;
use redact::{Mode, Secrets};
use shelf::Shelf;

/// What every history answer says about its scope.
pub const SCOPE: &str = "This history covers only the runs of this MCP session since it began (over stdio, this connection; over HTTP, this Mcp-Session-Id, which belongs to the principal that first called in it; a stateless request keeps none); no other session or principal can read it, and it is kept in memory (a fleet's replicas keep it in their shared Redis) and never written to disk by this server.";

/// How a run ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Status {
    /// It returned a result.
    Ok,
    /// It failed with this code.
    Error(String),
}

impl Status {
    /// `"ok"` or the error code, for listings.
    pub fn label(&self) -> &str {
        match self {
            Status::Ok => "ok",
            Status::Error(code) => code,
        }
    }
}

/// One stored run.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub struct Record {
    /// `r1`, `r2`, ...
    pub id: String,
    /// The tool.
    pub slug: String,
    /// How it ended.
    pub status: Status,
    /// Wall time.
    pub duration_ms: u64,
    /// When it started (RFC 3339, UTC).
    pub started_at: String,
    /// The params, redacted; a string holding the first characters of the JSON when
    /// truncated; for a call refused before it ran (or one whose secrets could not all
    /// be found), an object saying so (`"not_kept"`) with the input's size.
    pub input: Value,
    /// The result (or the error body), capped the same way.
    pub result: Value,
    /// True if and only if the input or the result was cut at the cap, or the input was
    /// not kept.
    pub truncated: bool,
    /// The principal it ran for over HTTP (a key's id or `anonymous`, never the key);
    /// `None` over stdio.
    pub principal: Option<String>,
    /// The id of the HTTP request it came in (its access log line's `request_id`).
    pub request_id: Option<String>,
    /// The run whose code made this call (code mode: `tools.call` in a snippet).
    pub parent_run_id: Option<String>,
    /// The trace the run belongs to, when traces are exported (`OTEL_*` settings).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace_id: Option<String>,
}

/// A run as it finished, to be recorded.
#[derive(Debug)]
pub struct Finished<'a> {
    /// Its id.
    pub id: String,
    /// The tool.
    pub slug: &'a str,
    /// When it started.
    pub started: SystemTime,
    /// Wall time.
    pub duration_ms: u64,
    /// The params as sent (redacted here, before storage), or what stands for them.
    pub input: Sent<'a>,
    /// How it ended.
    pub ended: Ended<'a>,
    /// The principal it ran for, over HTTP.
    pub principal: Option<&'a str>,
    /// The HTTP request it came in.
    pub request_id: Option<&'a str>,
    /// The run whose code made the call, when code did.
    pub parent_run_id: Option<&'a str>,
    /// The trace it belongs to, when traces are exported.
    pub trace_id: Option<String>,
}

/// What a call sent, as history is to keep it.
#[derive(Debug, Clone, Copy)]
pub enum Sent<'a> {
    /// Params that were read: checked against the tool's schema (the run went ahead or
    /// failed validation). Kept redacted, within the payload cap.
    Checked(&'a Value),
    /// A call refused before anything ran (its principal's scope or rate, a
    /// cancellation): only its size is kept, so a refusal costs the server next to
    /// nothing whatever was sent.
    Refused(Size<'a>),
}

/// The size of a call's params, to be measured.
#[derive(Debug, Clone, Copy)]
pub enum Size<'a> {
    /// Parsed params, measured as JSON up to [`HISTORY_MEASURE_BYTES`].
    Of(&'a Value),
    /// A body not parsed, of this many bytes.
    Bytes(usize),
}

/// How a run ended, with its payload.
#[derive(Debug)]
pub enum Ended<'a> {
    /// The tool's result.
    Ok(&'a Value),
    /// The error code and body.
    Failed {
        /// The stable code.
        code: &'a str,
        /// `{error, code}`.
        body: &'a Value,
    },
}

impl Record {
    /// The run as the index lists it: id, tool, status, duration, start time, and the
    /// principal it ran for when it came over HTTP.
    pub fn summary(&self) -> Value {
        let mut summary = serde_json::json!({
            "id": self.id,
            "slug": self.slug,
            "status": self.status.label(),
            "duration_ms": self.duration_ms,
            "started_at": self.started_at,
        });
        self.name_principal(&mut summary);
        summary
    }

    /// Adds `"principal"` and `"request_id"` to `body` (an object) when the run came
    /// over HTTP, `"parent_run_id"` when a snippet's code made it, and `"trace_id"` when
    /// traces are exported.
    pub fn name_principal(&self, body: &mut Value) {
        let Some(object) = body.as_object_mut() else { return };
        let named = [
            ("principal", &self.principal),
            ("request_id", &self.request_id),
            ("parent_run_id", &self.parent_run_id),
            ("trace_id", &self.trace_id),
        ];
        for (key, value) in named {
            if let Some(value) = value {
                object.insert(key.to_owned(), Value::String(value.clone()));
            }
        }
    }
}

/// The history of one session.
#[derive(Debug)]
pub struct History {
    started_at: Mutex<String>,
    runs: Mutex<VecDeque<Record>>,
    /// The number of the next run (`r1`, `r2`, …).
    next: AtomicU64,
    /// Where a replica's session keeps it across the fleet.
    shelf: Option<Shelf>,
}

impl Default for History {
    fn default() -> Self {
        process_started_at();
        History {
            started_at: Mutex::new(rfc3339(SystemTime::now())),
            runs: Mutex::new(VecDeque::new()),
            next: AtomicU64::new(1),
            shelf: None,
        }
    }
}

/// When this server process began (RFC 3339, UTC): the time of its first history.
pub fn process_started_at() -> &'static str {
    static STARTED: OnceLock<String> = OnceLock::new();
    STARTED.get_or_init(|| rfc3339(SystemTime::now()))
}

impl History {
    /// An empty history of a fleet's session, kept in Redis on `shelf` too.
    pub fn shelved(shelf: Shelf) -> History {
        History {
            shelf: Some(shelf),
            ..History::default()
        }
    }

    /// Binds a fleet's session history to its session `id` (`Mcp-Session-Id`), once
    /// known; nothing for a history of this process alone.
    pub fn bind(&self, id: &str) {
        if let Some(shelf) = &self.shelf {
            shelf.bind(id);
        }
    }

    /// When this session's history began (RFC 3339, UTC).
    pub fn session_started_at(&self) -> String {
        self.started_at
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// The id of the next run: numbered across the fleet for a bound fleet session
    /// ([`History::bind`]), else as [`History::next_id`]. `SHARED_STATE_UNAVAILABLE`
    /// when Redis cannot number it.
    pub async fn number(&self) -> Result<String, Error> {
        let Some(shelf) = &self.shelf else {
            return Ok(self.next_id());
        };
        match shelf.number(&self.session_started_at()).await? {
            Some(n) => Ok(format!("r{n}")),
            None => Ok(self.next_id()),
        }
    }

    /// The keys numbering a bound fleet session's runs, for a run numbered as it is let
    /// in (`Gateway::begin`); `None` otherwise.
    pub fn counter(&self) -> Option<Counter> {
        self.shelf.as_ref()?.counter(&self.session_started_at())
    }

    /// [`History::record`], and for a bound fleet session the record written to Redis
    /// with the replica's next exchange (`Shelf::keep`), so the next request, on any
    /// replica, reads it. A record that cannot be written is said on stderr (and counted
    /// in `toolgate_redis_errors_total`): the run happened and its answer goes out, but
    /// the fleet's history lacks it.
    pub async fn keep(&self, run: Finished<'_>) {
        let record = self.record(run);
        if let Some(shelf) = &self.shelf
            && let Err(e) = shelf.keep(&record)
        {
            tracing::error!(
                "run {} is missing from its session's history in the fleet: {e}",
                record.id
            );
        }
    }

    /// For a bound fleet session, loads the history from Redis in place of what this
    /// replica holds, so a read answers what the whole fleet recorded.
    pub async fn refresh(&self) -> Result<(), Error> {
        let Some(shelf) = &self.shelf else { return Ok(()) };
        let Some(shelved) = shelf.load().await? else {
            return Ok(());
        };
        if let Some(began) = shelved.began {
            *self
                .started_at
                .lock()
                .unwrap_or_else(std::sync::PoisonError::into_inner) = began;
        }
        let mut runs = self.runs.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        *runs = shelved.runs.into();
        Ok(())
    }

    /// The id of the next run made for this session: `r1`, `r2`, …
    pub fn next_id(&self) -> String {
        format!("r{}", self.next.fetch_add(1, Ordering::Relaxed))
    }

    /// Stores a run, dropping the oldest beyond [`HISTORY_RUNS`], and returns it as
    /// stored. Secret-keyed input
    /// values are masked, and masked again wherever else the run's text holds them. The
    /// work is bounded whatever the run (see [`redact`]): a refused call keeps only its
    /// size, and an input too large to check for secrets keeps no text at all.
    pub fn record(&self, run: Finished<'_>) -> Record {
        let (status, result) = match run.ended {
            Ended::Ok(result) => (Status::Ok, result),
            Ended::Failed { code, body } => (Status::Error(code.to_owned()), body),
        };
        let (input, result, truncated) = match run.input {
            Sent::Refused(size) => {
                let why = format!(
                    "refused before it ran ({}): only the input's size is kept",
                    status.label()
                );
                let (result, _) = redact::store(result, Mode::Result, &Secrets::none());
                (not_kept(why, size), result, true)
            }
            Sent::Checked(input) => {
                let secrets = redact::secret_values(input);
                match secrets.unscanned() {
                    Some(why) => {
                        let input = not_kept(why.describe(), Size::Of(input));
                        let result =
                            serde_json::json!({"not_kept": "the result may echo a secret of the input not found"});
                        (input, result, true)
                    }
                    None => {
                        let (input, input_cut) = redact::store(input, Mode::Input, &secrets);
                        let (result, result_cut) = redact::store(result, Mode::Result, &secrets);
                        (input, result, input_cut || result_cut)
                    }
                }
            }
        };
        let record = Record {
            id: run.id,
            slug: run.slug.to_owned(),
            status,
            duration_ms: run.duration_ms,
            started_at: rfc3339(run.started),
            input,
            result,
            truncated,
            principal: run.principal.map(str::to_owned),
            request_id: run.request_id.map(str::to_owned),
            parent_run_id: run.parent_run_id.map(str::to_owned),
            trace_id: run.trace_id,
        };
        let mut runs = self.runs.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if runs.len() == HISTORY_RUNS {
            runs.pop_front();
        }
        runs.push_back(record.clone());
        record
    }

    /// Every stored run, newest first.
    pub fn newest_first(&self) -> Vec<Record> {
        let runs = self.runs.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        runs.iter().rev().cloned().collect()
    }

    /// One run by id (`r7`), or by position from the newest (`-1`, `-2`, ...).
    pub fn get(&self, wanted: &str) -> Option<Record> {
        let runs = self.runs.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        match wanted.strip_prefix('-').and_then(|n| n.parse::<usize>().ok()) {
            Some(back) if back >= 1 => runs.len().checked_sub(back).and_then(|i| runs.get(i)).cloned(),
            _ => runs.iter().find(|r| r.id == wanted).cloned(),
        }
    }
}

/// What stands for an input history does not keep: why, and its size in bytes of JSON
/// (`input_bytes`), or, past [`HISTORY_MEASURE_BYTES`], the bound it is over
/// (`input_bytes_over`).
fn not_kept(why: String, size: Size<'_>) -> Value {
    let bytes = match size {
        Size::Bytes(n) => Some(n),
        Size::Of(value) => redact::measure(value, HISTORY_MEASURE_BYTES),
    };
    let mut note = serde_json::Map::new();
    note.insert("not_kept".into(), Value::String(why));
    match bytes {
        Some(n) => note.insert("input_bytes".into(), n.into()),
        None => note.insert("input_bytes_over".into(), HISTORY_MEASURE_BYTES.into()),
    };
    Value::Object(note)
}

fn rfc3339(t: SystemTime) -> String {
    humantime::format_rfc3339_millis(t).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn record(h: &History, n: usize, input: Value) {
        let result = json!({ "n": n });
        let ended = Ended::Ok(&result);
        h.record(Finished {
            principal: None,
            request_id: None,
            parent_run_id: None,
            trace_id: None,
            id: format!("r{n}"),
            slug: "echo",
            started: SystemTime::now(),
            duration_ms: 1,
            input: Sent::Checked(&input),
            ended,
        });
    }

    #[test]
    fn sixty_runs_leave_the_newest_fifty() {
        let h = History::default();
        for n in 1..=60 {
            record(&h, n, json!({}));
        }
        let runs = h.newest_first();
        assert_eq!(runs.len(), 50);
        assert_eq!(runs[0].id, "r60");
        assert_eq!(runs[49].id, "r11");
        assert!(h.get("r10").is_none());
        assert_eq!(h.get("-1").unwrap().id, "r60");
        assert_eq!(h.get("-2").unwrap().id, "r59");
        assert!(h.get("-51").is_none());
        assert!(h.get("-0").is_none());
    }

    #[test]
    fn payloads_are_capped_and_the_cut_recorded() {
        let h = History::default();
        record(&h, 1, json!({"text": "x".repeat(20_000)}));
        let r = h.get("r1").unwrap();
        assert!(r.truncated);
        assert_eq!(
            r.input.as_str().unwrap().chars().count(),
            crate::limits::HISTORY_PAYLOAD_CHARS
        );
        record(&h, 2, json!({"text": "short"}));
        assert!(!h.get("r2").unwrap().truncated);
    }

    #[test]
    fn inputs_are_redacted_before_storage() {
        let h = History::default();
        record(&h, 1, json!({"api_key": "sk-live-123", "message": "hi"}));
        let r = h.get("r1").unwrap();
        assert_eq!(r.input["api_key"], redact::MASK);
        assert_eq!(r.input["message"], "hi");
    }

    #[test]
    fn an_input_secret_quoted_in_the_error_or_result_is_not_stored() {
        let h = History::default();
        let input = json!({"pwd": "hunter2-longer", "note": "mine is hunter2-longer"});
        let body = json!({"error": "/pwd: \"hunter2-longer\" is longer than 5 characters", "code": "INVALID_PARAMS"});
        h.record(Finished {
            principal: None,
            request_id: None,
            parent_run_id: None,
            trace_id: None,
            id: "r1".into(),
            slug: "echo",
            started: SystemTime::now(),
            duration_ms: 1,
            input: Sent::Checked(&input),
            ended: Ended::Failed {
                code: "INVALID_PARAMS",
                body: &body,
            },
        });
        let stored = serde_json::to_string(&h.get("r1").unwrap()).unwrap();
        assert!(!stored.contains("hunter2"), "{stored}");
        assert!(stored.contains("is longer than 5 characters"), "{stored}");
    }

    fn record_failed(h: &History, input: Sent<'_>, code: &str) -> Record {
        let body = json!({"error": "refused", "code": code});
        h.record(Finished {
            principal: Some("anonymous"),
            request_id: None,
            parent_run_id: None,
            trace_id: None,
            id: h.next_id(),
            slug: "base64-codec",
            started: SystemTime::now(),
            duration_ms: 0,
            input,
            ended: Ended::Failed { code, body: &body },
        });
        h.get("-1").unwrap()
    }

    #[test]
    fn a_refused_call_keeps_its_code_and_size_not_its_input() {
        let h = History::default();
        let input = json!({"password": "hunter2-long", "input": "x".repeat(1_000)});
        let r = record_failed(&h, Sent::Refused(Size::Of(&input)), "RATE_LIMITED");
        assert_eq!(r.status.label(), "RATE_LIMITED");
        assert_eq!(r.input["input_bytes"], input.to_string().len());
        assert!(
            r.input["not_kept"].as_str().unwrap().contains("RATE_LIMITED"),
            "{}",
            r.input
        );
        assert!(r.truncated);
        assert!(!serde_json::to_string(&r).unwrap().contains("xxxx"));
        let r = record_failed(&h, Sent::Refused(Size::Bytes(14_000_000)), "FORBIDDEN");
        assert_eq!(r.input["input_bytes"], 14_000_000);
        let huge = json!({"input": "x".repeat(HISTORY_MEASURE_BYTES + 1)});
        let r = record_failed(&h, Sent::Refused(Size::Of(&huge)), "CANCELLED");
        assert_eq!(r.input["input_bytes_over"], HISTORY_MEASURE_BYTES);
    }

    #[test]
    fn an_input_with_too_many_secrets_keeps_no_text_of_the_run() {
        let h = History::default();
        let many: Vec<String> = (0..5_000).map(|i| format!("pw-{i:08}")).collect();
        let input = json!({"password": many, "note": "pw-00000001"});
        let result = json!({"echo": "pw-00000002"});
        h.record(Finished {
            principal: None,
            request_id: None,
            parent_run_id: None,
            trace_id: None,
            id: "r1".into(),
            slug: "echo",
            started: SystemTime::now(),
            duration_ms: 1,
            input: Sent::Checked(&input),
            ended: Ended::Ok(&result),
        });
        let r = h.get("r1").unwrap();
        let stored = serde_json::to_string(&r).unwrap();
        assert!(!stored.contains("pw-0"), "{stored}");
        assert!(
            r.input["not_kept"]
                .as_str()
                .unwrap()
                .contains("256 distinct secret values"),
            "{}",
            r.input
        );
        assert_eq!(r.input["input_bytes_over"], HISTORY_MEASURE_BYTES);
        assert!(r.result["not_kept"].is_string());
        assert!(r.truncated);
    }
}
