//! The SSE events of a fleet's sessions, in Redis (rmcp's `EventStore`), so a client whose
//! stream broke resumes it with `Last-Event-ID` on any replica.
//!
//! Each SSE stream is one Redis stream (`events:<token>`), its entries the JSON-RPC
//! messages sent on it, the newest [`REDIS_EVENTS_PER_STREAM`] kept, the key living
//! [`REDIS_EVENTS_TTL`] past its last event. An event's id is `<token>.<entry>`: the token
//! is a keyed hash of rmcp's stream id (a secret this replica drew at start), so an id
//! cannot be made up for another client's stream, and it names whether the stream is a
//! request's (`r…`) or the session's standalone one (`c…`). A priming event (no message)
//! is not written: its id is the stream's start. An event larger than
//! [`REDIS_EVENT_BYTES`] is delivered but kept as a placeholder a resume skips.
//!
//! A resume replays the entries after the id; for a request's stream it then follows the
//! stream (polling, backing off to [`REDIS_EVENTS_POLL_MAX`]) until the request's answer
//! has been sent, for at most [`REDIS_EVENTS_FOLLOW`] — the answer may still be coming
//! from the replica running the call — or [`REDIS_EVENTS_FOLLOW_UNKEPT`] while the stream
//! has no event kept at all (a call with nothing sent yet, or an id made up). While Redis cannot be written, events are still
//! delivered on the live stream, with an id no resume finds (the failure counted and said
//! as every Redis failure is); nothing is lost but the resumability.
//!
//! One round trip per event sent (none for a priming event), carrying the writes waiting
//! on this replica (a call's record and place: `Shared::later`); one per poll of a resume.

use std::time::Duration;

use rmcp::model::ServerJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::{
    EventId, EventStore, EventStoreError, EventStream, ServerSseMessage,
};
use serde::{Deserialize, Serialize};
use sha2::{Digest, Sha256};

use super::Shared;
use crate::limits::{
    REDIS_EVENT_BYTES, REDIS_EVENTS_FOLLOW, REDIS_EVENTS_FOLLOW_UNKEPT, REDIS_EVENTS_PER_STREAM, REDIS_EVENTS_POLL_MAX,
    REDIS_EVENTS_TTL,
};

/// The fleet's SSE events.
#[derive(Debug)]
pub struct Events {
    shared: Shared,
    /// Keys this replica's stream tokens.
    secret: [u8; 32],
}

/// One kept event: its message (none for a placeholder) and retry hint.
#[derive(Deserialize)]
struct Kept {
    #[serde(default)]
    m: Option<ServerJsonRpcMessage>,
    #[serde(default)]
    r: Option<u64>,
}

/// An event as it is kept ([`Kept`] written), its message borrowed rather than copied.
#[derive(Serialize)]
struct Keeping<'a> {
    m: &'a ServerJsonRpcMessage,
    #[serde(skip_serializing_if = "Option::is_none")]
    r: Option<u64>,
}

/// Why a `Last-Event-ID` names no kept event.
#[derive(Debug, thiserror::Error)]
#[error("Last-Event-ID does not name an event of this server")]
struct Unknown;

impl Events {
    /// The events of the fleet whose Redis is `shared`.
    pub fn new(shared: Shared) -> Events {
        let mut secret = [0u8; 32];
        if getrandom::fill(&mut secret).is_err() {
            // No OS randomness: the clock and the process still key this replica's tokens.
            let seed = format!(
                "{}:{:?}",
                std::process::id(),
                std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH)
            );
            secret.copy_from_slice(Sha256::digest(seed.as_bytes()).as_slice());
        }
        Events { shared, secret }
    }

    /// The token of rmcp's stream `stream_id`: its kind, then 128 bits of a keyed hash.
    fn token(&self, stream_id: &str) -> String {
        let kind = if stream_id.ends_with(":common") { 'c' } else { 'r' };
        let mut hash = Sha256::new();
        hash.update(self.secret);
        hash.update(stream_id.as_bytes());
        let sum = hash.finalize();
        let hex: String = sum.iter().take(16).map(|b| format!("{b:02x}")).collect();
        format!("{kind}{hex}")
    }

    fn key(&self, token: &str) -> String {
        self.shared.key(&format!("events:{token}"))
    }
}

/// Returns true if and only if `last_event_id` names an event of a session's standalone
/// stream (its GET) kept here: a resume of it replays what followed and ends, so the
/// caller continues it live.
pub fn is_standalone(last_event_id: &str) -> bool {
    parse(last_event_id).is_some_and(|(token, _)| token.starts_with('c'))
}

/// `last` read as a kept event's token and entry, checked character by character.
fn parse(last: &str) -> Option<(&str, &str)> {
    let (token, entry) = last.split_once('.')?;
    let kind_ok = token.starts_with('c') || token.starts_with('r');
    let token_ok = kind_ok && token.len() == 33 && token[1..].bytes().all(|b| b.is_ascii_hexdigit());
    let (ms, seq) = entry.split_once('-')?;
    let entry_ok = !ms.is_empty()
        && !seq.is_empty()
        && ms.len() <= 20
        && seq.len() <= 20
        && ms.bytes().all(|b| b.is_ascii_digit())
        && seq.bytes().all(|b| b.is_ascii_digit());
    (token_ok && entry_ok).then_some((token, entry))
}

/// The event kept as `entry` of the stream `token`, as rmcp sends it; `None` for a
/// placeholder. Also whether it answers its request (the stream's last).
fn revive(token: &str, entry: &str, text: &str) -> (Option<ServerSseMessage>, bool) {
    let Ok(kept) = serde_json::from_str::<Kept>(text) else {
        return (None, false);
    };
    let answers = matches!(
        kept.m,
        Some(ServerJsonRpcMessage::Response(_) | ServerJsonRpcMessage::Error(_))
    );
    if kept.m.is_none() && kept.r.is_none() {
        return (None, false);
    }
    let mut event = ServerSseMessage::default();
    event.event_id = Some(format!("{token}.{entry}"));
    event.message = kept.m.map(std::sync::Arc::new);
    event.retry = kept.r.map(Duration::from_millis);
    (Some(event), answers)
}

#[async_trait::async_trait]
impl EventStore for Events {
    async fn store_event(&self, stream_id: &str, event: &ServerSseMessage) -> Result<EventId, EventStoreError> {
        let token = self.token(stream_id);
        let Some(message) = &event.message else {
            // A priming event: nothing to replay; a resume from it starts at the beginning.
            return Ok(format!("{token}.0-0"));
        };
        let retry = event.retry.map(|r| u64::try_from(r.as_millis()).unwrap_or(u64::MAX));
        let mut text = serde_json::to_string(&Keeping { m: message, r: retry })?;
        if text.len() > REDIS_EVENT_BYTES {
            tracing::warn!(
                "an SSE event of {} bytes is sent but not kept for a resume (at most {REDIS_EVENT_BYTES})",
                text.len()
            );
            text = "{}".to_owned();
        }
        let key = self.key(&token);
        let ttl_ms = u64::try_from(REDIS_EVENTS_TTL.as_millis()).unwrap_or(u64::MAX);
        let mut pipeline = redis::pipe();
        pipeline
            .cmd("XADD")
            .arg(&key)
            .arg("MAXLEN")
            .arg(REDIS_EVENTS_PER_STREAM)
            .arg("*")
            .arg("e")
            .arg(text)
            .cmd("PEXPIRE")
            .arg(&key)
            .arg(ttl_ms);
        match self.shared.pipeline::<(String, redis::Value)>(&pipeline).await {
            Ok((entry, _)) => Ok(format!("{token}.{entry}")),
            // Delivered all the same; only its resume is lost (Redis's failure is
            // counted and said by `Shared`).
            Err(_) => Ok(format!("{token}.unkept")),
        }
    }

    async fn replay_events_after(&self, last_event_id: &str) -> Result<EventStream, EventStoreError> {
        let (token, entry) = parse(last_event_id).ok_or(Unknown)?;
        let (token, mut after) = (token.to_owned(), entry.to_owned());
        let key = self.key(&token);
        let follow = token.starts_with('r');
        let shared = self.shared.clone();
        let (sender, mut receiver) = tokio::sync::mpsc::channel::<ServerSseMessage>(16);
        tokio::spawn(async move {
            let began = tokio::time::Instant::now();
            let until = began + REDIS_EVENTS_FOLLOW;
            let mut pause = Duration::from_millis(10);
            // The first read takes the event resumed after too: if it was the answer,
            // there is nothing to follow.
            let resumed = after.clone();
            let mut from = after.clone();
            loop {
                let mut read = redis::pipe();
                read.cmd("XRANGE")
                    .arg(&key)
                    .arg(&from)
                    .arg("+")
                    .arg("COUNT")
                    .arg(REDIS_EVENTS_PER_STREAM)
                    .cmd("EXISTS")
                    .arg(&key);
                type Read = (Vec<(String, Vec<(String, String)>)>, u8);
                let Ok((entries, exists)) = shared.pipeline::<Read>(&read).await else {
                    return;
                };
                // A stream with no event kept yet may be a call still running, or an id
                // made up: followed a little, then left to the client's next resume.
                if exists == 0 && tokio::time::Instant::now() >= began + REDIS_EVENTS_FOLLOW_UNKEPT {
                    return;
                }
                let mut moved = false;
                for (id, fields) in entries {
                    let text = fields.into_iter().find(|(f, _)| f == "e").map(|(_, v)| v);
                    let (event, answers) = revive(&token, &id, text.as_deref().unwrap_or("{}"));
                    let again = id == resumed;
                    after = id;
                    moved = true;
                    if let Some(event) = event.filter(|_| !again)
                        && sender.send(event).await.is_err()
                    {
                        return;
                    }
                    if answers {
                        return;
                    }
                }
                from = format!("({after}");
                let now = tokio::time::Instant::now();
                if !follow || now >= until || sender.is_closed() {
                    return;
                }
                if moved {
                    pause = Duration::from_millis(10);
                }
                tokio::time::sleep(pause.min(until - now)).await;
                pause = (pause * 2).min(REDIS_EVENTS_POLL_MAX);
            }
        });
        Ok(Box::pin(futures::stream::poll_fn(move |cx| receiver.poll_recv(cx))))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_event_id_is_read_strictly() {
        let token = format!("r{}", "a".repeat(32));
        assert_eq!(parse(&format!("{token}.1700-0")), Some((token.as_str(), "1700-0")));
        assert_eq!(parse(&format!("{token}.0-0")), Some((token.as_str(), "0-0")));
        for bad in [
            String::new(),
            "0".to_owned(),
            format!("{token}.unkept"),
            format!("x{}.1-0", "a".repeat(32)),
            format!("r{}.1-0", "a".repeat(31)),
            format!("{token}.1-0 +"),
            format!("{token}.-1-0"),
            format!("{token}.1"),
        ] {
            assert_eq!(parse(&bad), None, "{bad}");
        }
    }

    #[test]
    fn a_kept_answer_ends_a_follow_and_a_placeholder_is_skipped() {
        let answer = r#"{"m":{"jsonrpc":"2.0","id":3,"result":{}}}"#;
        let (event, answers) = revive("rtok", "5-0", answer);
        assert!(answers);
        assert_eq!(event.and_then(|e| e.event_id).as_deref(), Some("rtok.5-0"));
        let note =
            r#"{"m":{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}}"#;
        let (event, answers) = revive("rtok", "6-0", note);
        assert!(!answers && event.is_some());
        assert!(matches!(revive("rtok", "7-0", "{}"), (None, false)));
    }
}
