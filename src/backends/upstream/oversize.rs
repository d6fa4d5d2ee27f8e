//! Messages from an upstream over [`UPSTREAM_MESSAGE_BYTES`]: they are never held whole,
//! and never dropped in silence. rmcp's own transports discard an over-long line (or
//! SSE event) and carry on, so the call it answered waited for its idle timeout
//! (`UPSTREAM_CALL_IDLE`, 300 s); toolgate's transports (`child.rs`, `web.rs`) instead
//! fail that call at once with an error naming the limit.
//!
//! Over stdio, an over-long line is streamed past keeping only its length and a few KiB
//! of each end ([`Overlong`]); its `id` is read there. A response whose `id` shows is
//! answered with an error for that `id` (the call fails, the connection stays); a
//! notification or request of the server is dropped with a warning; anything else
//! ends the connection, so every call in flight fails at once (and the server is
//! restarted) instead of one waiting forever. Over HTTP, the failure of the request's
//! own answer (body or SSE event over the limit) is noted here by request id.
//!
//! The `id` reading mirrors `transport::triage` (the server side's), which this layer
//! cannot import.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use rmcp::model::{ErrorCode, ErrorData, NumberOrString, RequestId};
use serde_json::Value;

use crate::limits::UPSTREAM_MESSAGE_BYTES;

/// What went wrong with the answers of one link's calls, by request id, and with its
/// connection, for the calls to say.
#[derive(Debug, Default)]
pub(super) struct Oversize {
    calls: Mutex<HashMap<String, String>>,
    connection: Mutex<Option<String>>,
}

impl Oversize {
    /// Notes why the answer to request `id` could not be read.
    pub(super) fn note_call(&self, id: &RequestId, why: String) {
        let mut calls = self.calls.lock().unwrap_or_else(PoisonError::into_inner);
        // Bounded: an entry is taken by its call as it fails; one whose call was gone
        // already is all that can stay, and the set starts over rather than grow.
        if calls.len() >= 1024 {
            calls.clear();
        }
        calls.insert(key(id), why);
    }

    /// Why the answer to request `id` could not be read, when that was noted.
    pub(super) fn take_call(&self, id: &RequestId) -> Option<String> {
        self.calls
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&key(id))
    }

    /// Notes why the connection is being ended.
    pub(super) fn note_connection(&self, why: String) {
        *self.connection.lock().unwrap_or_else(PoisonError::into_inner) = Some(why);
    }

    /// Why the connection was ended, when this module ended it.
    pub(super) fn connection(&self) -> Option<String> {
        self.connection.lock().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// A new connection: what the last one noted no longer holds.
    pub(super) fn reset(&self) {
        *self.connection.lock().unwrap_or_else(PoisonError::into_inner) = None;
        self.calls.lock().unwrap_or_else(PoisonError::into_inner).clear();
    }
}

fn key(id: &RequestId) -> String {
    match id {
        NumberOrString::Number(n) => format!("n{n}"),
        NumberOrString::String(s) => format!("s{s}"),
    }
}

/// The sentence a call fails with when its answer was `len` bytes.
pub(super) fn over_limit(len: u64) -> String {
    format!(
        "its answer was {len} bytes, over the limit of {UPSTREAM_MESSAGE_BYTES} bytes for one message from an upstream server; it was discarded unread"
    )
}

/// What is kept of an over-long line of the upstream's stdout (`crate::message::LineEnds`).
pub(super) use crate::message::LineEnds as Overlong;

/// What an over-long line was, as far as its ends show.
#[derive(Debug, PartialEq)]
pub(super) enum Seen {
    /// A response (`result` or `error`) to request `id`.
    Answer(RequestId),
    /// A notification or request of the server (it has a `method`).
    Message,
    /// Neither shows.
    Unknown,
}

/// What the line `over` was.
pub(super) fn seen(over: &Overlong) -> Seen {
    let head = Head::read(over.head());
    if head.method {
        return Seen::Message;
    }
    let id = head
        .id
        .or_else(|| crate::message::trailing_id(over.tail()).as_ref().and_then(request_id));
    match id {
        Some(id) if head.answer => Seen::Answer(id),
        _ => Seen::Unknown,
    }
}

/// The error that answers request `id` in place of the line `over`.
pub(super) fn answer(over: &Overlong) -> ErrorData {
    ErrorData::new(ErrorCode::INTERNAL_ERROR, over_limit(over.len), None)
}

/// The top-level members that open an object, read with a real JSON parser until the
/// text runs out (the cut falls inside a long value).
#[derive(Debug, Default)]
struct Head {
    id: Option<RequestId>,
    method: bool,
    answer: bool,
}

impl Head {
    fn read(head: &[u8]) -> Head {
        use serde::de::{Deserializer, IgnoredAny, MapAccess, Visitor};
        struct Members<'a>(&'a mut Head);
        impl<'de> Visitor<'de> for Members<'_> {
            type Value = ();
            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<(), A::Error> {
                while let Some(key) = map.next_key::<std::borrow::Cow<'de, str>>()? {
                    match &*key {
                        "id" => self.0.id = request_id(&map.next_value::<Value>()?),
                        "method" => {
                            self.0.method = true;
                            return Ok(());
                        }
                        "result" | "error" => {
                            self.0.answer = true;
                            map.next_value::<IgnoredAny>()?;
                        }
                        _ => {
                            map.next_value::<IgnoredAny>()?;
                        }
                    }
                }
                Ok(())
            }
        }
        let mut found = Head::default();
        let _ = serde_json::Deserializer::from_slice(head).deserialize_map(Members(&mut found));
        found
    }
}

/// A JSON-RPC id: a string or an integer.
fn request_id(value: &Value) -> Option<RequestId> {
    match value {
        Value::String(s) => Some(NumberOrString::String(s.as_str().into())),
        Value::Number(n) => n.as_i64().map(NumberOrString::Number),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn seen(line: &str, keep: usize) -> Seen {
        let mut over = Overlong::new(keep);
        for chunk in line.as_bytes().chunks(7) {
            over.push(chunk);
        }
        assert_eq!(over.len, line.len() as u64);
        super::seen(&over)
    }

    #[test]
    fn an_overlong_answer_shows_its_id_at_either_end() {
        let big = "a".repeat(500);
        let python = format!(r#"{{"jsonrpc":"2.0","id":3,"result":{{"content":[{{"text":"{big}"}}]}}}}"#);
        let typescript = format!(r#"{{"result":{{"content":[{{"text":"{big}","id":9}}]}},"jsonrpc":"2.0","id":"q"}}"#);
        let error = format!(r#"{{"jsonrpc":"2.0","id":4,"error":{{"code":1,"message":"{big}"}}}}"#);
        assert_eq!(seen(&python, 64), Seen::Answer(NumberOrString::Number(3)));
        assert_eq!(seen(&typescript, 64), Seen::Answer(NumberOrString::String("q".into())));
        assert_eq!(seen(&error, 64), Seen::Answer(NumberOrString::Number(4)));
        let log = format!(r#"{{"jsonrpc":"2.0","method":"notifications/message","params":{{"data":"{big}"}}}}"#);
        assert_eq!(seen(&log, 64), Seen::Message);
        let request =
            format!(r#"{{"jsonrpc":"2.0","id":1,"method":"sampling/createMessage","params":{{"x":"{big}"}}}}"#);
        assert_eq!(seen(&request, 64), Seen::Message);
        let nested = format!(r#"{{"result":{{"s":"{big}","id":9}}}}"#);
        assert_eq!(seen(&nested, 64), Seen::Unknown, "a nested id is not the answer's");
        assert_eq!(seen(&"x".repeat(300), 64), Seen::Unknown);
    }

    #[test]
    fn a_noted_call_is_told_once_and_a_new_connection_forgets() {
        let over = Oversize::default();
        let id = NumberOrString::Number(7);
        over.note_call(&id, "too big".into());
        assert_eq!(over.take_call(&NumberOrString::String("7".into())), None);
        assert_eq!(over.take_call(&id).as_deref(), Some("too big"));
        assert_eq!(over.take_call(&id), None);
        over.note_connection("ended".into());
        assert_eq!(over.connection().as_deref(), Some("ended"));
        over.reset();
        assert_eq!(over.connection(), None);
    }
}
