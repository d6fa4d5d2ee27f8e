//! What a call produced, for every family alike, and its structured body.
//!
//! The body is built here, once, from the family's [`Answer`] and the entry's [`Shape`]:
//! the run envelope for catalogue tools, a snippet's fields, flat bodies — and the same
//! failure fields (`success:false, error, code, retryable,
//! run_id`) on every one of them, so each advertised output schema admits it.

use std::borrow::Cow;
use std::time::Duration;

use serde_json::{Map, Value, json};

use crate::backends::{Answer, Form};
use crate::error::Error;
use crate::registry::Shape;

/// An answer's flat fields (empty unless it is a flat body).
fn fields(answer: &Answer) -> Map<String, Value> {
    match &answer.form {
        Form::Flat { fields, .. } => fields.clone(),
        _ => Map::new(),
    }
}

/// A finished call of any tool: numbered, timed and recorded.
#[derive(Debug)]
pub struct Run {
    /// This process's id for the run: `r1`, `r2`, ...
    pub id: String,
    /// The tool that ran (its full name, whatever abbreviation was asked for).
    pub name: String,
    /// How its answer is laid out.
    pub shape: Shape,
    /// Wall time of the whole call, as the gateway saw it.
    pub duration: Duration,
    /// What the family answered.
    pub answer: Answer,
}

impl Run {
    /// Returns true if and only if the call succeeded.
    pub fn is_ok(&self) -> bool {
        self.answer.ended.is_ok()
    }

    /// The error that ended it, if one did.
    pub fn error(&self) -> Option<&Error> {
        self.answer.ended.as_ref().err()
    }

    /// The structured body (MCP's `structuredContent`, the API's run answer).
    pub fn body(&self) -> Value {
        let p = &self.answer;
        let mut body = Map::new();
        body.insert("success".into(), json!(p.ended.is_ok()));
        body.extend(match (self.shape, p.reached) {
            (_, false) => Map::new(),
            (Shape::Envelope | Shape::Passthrough, true) => self.envelope(),
            (Shape::Snippet, true) => self.snippet(),
            (Shape::Flat, true) => self.flat(),
        });
        if let Err(e) = &p.ended {
            body.entry("error").or_insert_with(|| json!(e.to_string()));
            failure_fields(e, &mut body);
        }
        body.insert("run_id".into(), json!(self.id));
        Value::Object(body)
    }

    /// What the history keeps of the run: the result (or the error and its code), never
    /// the timings, so two identical runs compare identical. Borrowed where it can be: a
    /// result is not copied to be recorded (history reads only as much as it stores).
    pub fn recorded(&self) -> Cow<'_, Value> {
        let p = &self.answer;
        Cow::Owned(match (&p.ended, self.shape) {
            (Ok(v), Shape::Envelope | Shape::Snippet | Shape::Passthrough) => return Cow::Borrowed(v),
            (Ok(v), Shape::Flat) => {
                let mut all = fields(p);
                if let Value::Object(own) = v {
                    all.extend(own.clone());
                }
                all.remove("durationMs");
                Value::Object(all)
            }
            (Err(e), _) => {
                let mut all = fields(p);
                all.remove("durationMs");
                all.insert("error".into(), json!(e.to_string()));
                all.insert("code".into(), json!(e.code()));
                Value::Object(all)
            }
        })
    }

    fn envelope(&self) -> Map<String, Value> {
        let (p, o) = (&self.answer, &self.answer.output);
        let mut v = Map::new();
        if let Ok(result) = &p.ended {
            v.insert("result".into(), result.clone());
            v.insert("duration_ms".into(), json!(self.duration.as_millis() as u64));
        }
        if !o.stdout.is_empty() {
            v.insert("stdout".into(), json!(o.stdout));
        }
        if !o.stderr.is_empty() {
            v.insert("stderr".into(), json!(o.stderr));
        }
        if o.truncated {
            v.insert("truncated".into(), json!(true));
        }
        v
    }

    fn snippet(&self) -> Map<String, Value> {
        let (p, o) = (&self.answer, &self.answer.output);
        let result = p.ended.as_ref().cloned().unwrap_or(Value::Null);
        let timed_out = matches!(p.ended, Err(Error::Timeout { .. }));
        let error = p.ended.as_ref().err().map(snippet_error);
        let mut v = Map::new();
        v.insert("stdout".into(), json!(o.stdout));
        v.insert("stderr".into(), json!(o.stderr));
        v.insert("result".into(), result);
        v.insert("error".into(), json!(error));
        v.insert("duration_ms".into(), json!(self.duration.as_millis() as u64));
        v.insert("truncated".into(), json!(o.truncated || o.result_cut.is_some()));
        v.insert("timed_out".into(), json!(timed_out));
        v
    }

    fn flat(&self) -> Map<String, Value> {
        let p = &self.answer;
        let mut v = fields(p);
        if let Ok(Value::Object(own)) = &p.ended {
            v.extend(own.clone());
        }
        v
    }
}

/// A snippet's error as `run_javascript` words it (its timeout sentence).
pub fn snippet_error(e: &Error) -> String {
    match e {
        Error::Timeout { after, .. } => format!("Script execution timed out after {} seconds.", after.as_secs_f64()),
        other => other.to_string(),
    }
}

/// The failure fields of `e` besides its message: code, retry flag and what the code
/// carries (retry-after, close matches, a batch's bad items).
pub fn failure_fields(e: &Error, body: &mut Map<String, Value>) {
    body.insert("code".into(), json!(e.code()));
    body.insert("retryable".into(), json!(e.retryable()));
    if let Some(after) = e.retry_after() {
        body.insert("retry_after_ms".into(), json!(after.as_millis() as u64));
    }
    if let Error::ToolNotFound { candidates, .. } | Error::AmbiguousSlug { candidates, .. } = e {
        body.insert("candidates".into(), json!(candidates));
    }
    if let Error::BatchInvalid { problems } = e {
        body.insert(
            "items".into(),
            problems
                .iter()
                .map(|p| json!({"index": p.index, "slug": p.slug, "code": p.code, "error": p.message}))
                .collect(),
        );
    }
}

/// The failure body of an error that is not a run (meta-tool misuse, a batch refused):
/// `{success:false, error, code, retryable, ...}`.
pub fn failure_body(e: &Error) -> Value {
    let mut body = Map::new();
    body.insert("success".into(), json!(false));
    body.insert("error".into(), json!(e.to_string()));
    failure_fields(e, &mut body);
    Value::Object(body)
}
