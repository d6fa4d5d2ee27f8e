//! Notifications across a fleet: a session's standalone SSE stream (its GET) is open on
//! one replica, while the calls that log, or the resources it subscribed to, may be
//! served on another. This passes a notification to the replica that holds the stream.
//!
//! The replica holding a session's stream records itself as the session's `listener` in
//! the session's hash (`session:<id>`, `sessions.rs`) when the stream opens
//! ([`Notes::claim`]), and clears it when the last of its streams closes, unless another
//! replica claimed it since ([`Notes::release`]). Each replica subscribes to one channel
//! of its own (`notes:<replica>`, [`Notes::listen`]). A replica with a notification for a
//! session whose stream it does not hold reads the listener and publishes to it in one
//! script ([`Notes::pass`]): one round trip, and only for a notification that would
//! otherwise reach no one (none for a tool call that sends none).
//!
//! Pub/sub delivers at most once: a notification published while the listener's
//! subscription is being made again (Redis restarted, the connection lost) is lost, as it
//! would be on a stream that broke. A notification no replica listens for is left to the
//! sender (which keeps it for a resume and sends it on no open stream). A notification
//! larger than [`REDIS_NOTE_BYTES`] is not passed on.
//!
//! The same channel carries a client's answer to a request a replica sent it (sampling,
//! elicitation, roots) when the client posted it to another replica ([`Notes::answer`]):
//! the request's id names the replica that sent it.
//!
//! Knows no rmcp type: messages are JSON text, sessions their ids.

use std::sync::Arc;

use futures::StreamExt;

use super::Shared;
use crate::error::Error;
use crate::limits::{REDIS_NOTE_BYTES, REDIS_WATCH_EVERY};

/// A session's stream claimed. KEYS[1]: the session's hash. ARGV[1]: this replica.
/// Answers 1, or 0 when the fleet holds no such session.
const CLAIM: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
redis.call('HSET', KEYS[1], 'listener', ARGV[1])
return 1
";

/// A session's stream given up. KEYS[1]: the session's hash. ARGV[1]: this replica.
const RELEASE: &str = r"
if redis.call('HGET', KEYS[1], 'listener') == ARGV[1] then
  redis.call('HDEL', KEYS[1], 'listener')
end
return 1
";

/// A notification passed on. KEYS[1]: the session's hash. ARGV[1]: this replica; ARGV[2]:
/// the prefix of replicas' channels; ARGV[3]: the parcel. Answers how many subscribers
/// received it: 0 when no other replica listens for the session.
const PASS: &str = r"
local listener = redis.call('HGET', KEYS[1], 'listener')
if not listener or listener == ARGV[1] then
  return 0
end
return redis.call('PUBLISH', ARGV[2] .. listener, ARGV[3])
";

/// What another replica passed to this one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Parcel {
    /// A notification for the session's standalone stream, held here.
    Note,
    /// The client's answer to a request this replica sent it (sampling, elicitation,
    /// roots), which the client posted to another replica.
    Answer,
}

/// What a replica does with what another passed to it: what it is, the session's id and
/// the message's JSON.
pub type Deliver = Arc<dyn Fn(Parcel, &str, &str) + Send + Sync>;

/// The notifications of a fleet's sessions, as this replica passes and receives them.
#[derive(Debug)]
pub struct Notes {
    shared: Shared,
    /// This replica's name in the fleet (random, drawn at start).
    replica: String,
    claim: redis::Script,
    release: redis::Script,
    pass: redis::Script,
}

impl Notes {
    /// The notifications of the fleet whose Redis is `shared`, for a replica named anew.
    pub fn new(shared: Shared) -> Notes {
        let mut random = [0u8; 12];
        if getrandom::fill(&mut random).is_err() {
            // No OS randomness: the process and the clock still tell replicas apart.
            let now = std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map_or(0, |d| d.as_nanos());
            random[..4].copy_from_slice(&std::process::id().to_le_bytes());
            random[4..].copy_from_slice(&(now as u64).to_le_bytes());
        }
        let replica = random.iter().map(|b| format!("{b:02x}")).collect();
        Notes {
            shared,
            replica,
            claim: redis::Script::new(CLAIM),
            release: redis::Script::new(RELEASE),
            pass: redis::Script::new(PASS),
        }
    }

    fn session_key(&self, id: &str) -> String {
        super::sessions::session_key(&self.shared, id)
    }

    /// This replica's name in the fleet: 24 lowercase hex digits.
    pub fn replica(&self) -> &str {
        &self.replica
    }

    fn channels(&self) -> String {
        self.shared.key("notes:")
    }

    /// Records this replica as the one holding session `id`'s standalone stream.
    pub async fn claim(&self, id: &str) -> Result<(), Error> {
        let mut call = self.claim.key(self.session_key(id));
        call.arg(&self.replica);
        self.shared.script::<u8>(&call).await.map(drop)
    }

    /// Clears this replica as the holder of session `id`'s standalone stream, unless
    /// another replica holds it now.
    pub async fn release(&self, id: &str) -> Result<(), Error> {
        let mut call = self.release.key(self.session_key(id));
        call.arg(&self.replica);
        self.shared.script::<u8>(&call).await.map(drop)
    }

    /// Passes `message` (JSON) for session `id` to the replica holding its standalone
    /// stream: true when one received it; false when none other listens for the session,
    /// or the message is larger than [`REDIS_NOTE_BYTES`].
    pub async fn pass(&self, id: &str, message: &str) -> Result<bool, Error> {
        if message.len() > REDIS_NOTE_BYTES {
            tracing::warn!(
                "a notification of {} bytes is not passed to the replica holding its session's stream (at most {REDIS_NOTE_BYTES})",
                message.len()
            );
            return Ok(false);
        }
        let mut call = self.pass.key(self.session_key(id));
        call.arg(&self.replica)
            .arg(self.channels())
            .arg(parcel(Parcel::Note, id, message));
        let received: u64 = self.shared.script(&call).await?;
        Ok(received > 0)
    }

    /// Passes the client's `answer` (JSON) in session `id` to `replica`, which sent the
    /// request it answers: true when that replica received it. A name that is not a
    /// replica's (the client wrote it) reaches no one.
    pub async fn answer(&self, replica: &str, id: &str, answer: &str) -> Result<bool, Error> {
        if !is_replica(replica) || answer.len() > REDIS_NOTE_BYTES {
            return Ok(false);
        }
        let channel = format!("{}{replica}", self.channels());
        let publish = redis::cmd("PUBLISH")
            .arg(channel)
            .arg(parcel(Parcel::Answer, id, answer))
            .clone();
        let received: u64 = self.shared.query(&publish).await?;
        Ok(received > 0)
    }

    /// Receives, for as long as the process runs, the notifications other replicas pass
    /// to this one, handing each to `deliver`; subscribes again (every
    /// [`REDIS_WATCH_EVERY`]) while Redis cannot be reached.
    pub fn listen(&self, deliver: Deliver) {
        let shared = self.shared.clone();
        let channel = format!("{}{}", self.channels(), self.replica);
        tokio::spawn(async move {
            let mut lost = false;
            loop {
                let subscribed = match shared.subscriber().await {
                    Ok(mut pubsub) => match pubsub.subscribe(&channel).await {
                        Ok(()) => Some(pubsub),
                        Err(e) => {
                            tracing::debug!("notifications from other replicas: cannot subscribe: {e}");
                            None
                        }
                    },
                    Err(_) => None,
                };
                if let Some(mut pubsub) = subscribed {
                    if lost {
                        tracing::info!("notifications from other replicas are received again");
                    }
                    let mut messages = pubsub.on_message();
                    while let Some(message) = messages.next().await {
                        let Ok(payload) = message.get_payload::<String>() else {
                            continue;
                        };
                        if let Some((kind, id, message)) = unparcel(&payload) {
                            deliver(kind, id, message);
                        }
                    }
                    lost = true;
                    tracing::warn!(
                        "notifications from other replicas: the subscription to Redis ended; subscribing again (notifications passed meanwhile are lost)"
                    );
                }
                // Not a synchronisation: the pause before trying Redis again.
                tokio::time::sleep(REDIS_WATCH_EVERY).await;
            }
        });
    }
}

/// Returns true if and only if `name` is shaped as a replica's name (24 lowercase hex
/// digits).
pub fn is_replica(name: &str) -> bool {
    name.len() == 24 && name.bytes().all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

/// Session `id`'s `message` as one pub/sub payload: its kind (`n` or `a`), the id
/// (visible ASCII, as rmcp makes it and the HTTP layer checks), a line feed, the message.
fn parcel(kind: Parcel, id: &str, message: &str) -> String {
    let kind = match kind {
        Parcel::Note => 'n',
        Parcel::Answer => 'a',
    };
    format!("{kind}{id}\n{message}")
}

/// A payload read back as its kind, its session's id and message.
fn unparcel(payload: &str) -> Option<(Parcel, &str, &str)> {
    let (head, message) = payload.split_once('\n')?;
    let kind = match head.as_bytes().first()? {
        b'n' => Parcel::Note,
        b'a' => Parcel::Answer,
        _ => return None,
    };
    let id = &head[1..];
    (!id.is_empty()).then_some((kind, id, message))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_parcel_reads_back_as_its_kind_session_and_message() {
        let text = parcel(Parcel::Note, "3f2a-11", "{\"a\":\"x\\ny\"}");
        assert_eq!(unparcel(&text), Some((Parcel::Note, "3f2a-11", "{\"a\":\"x\\ny\"}")));
        let text = parcel(Parcel::Answer, "s", "{}");
        assert_eq!(unparcel(&text), Some((Parcel::Answer, "s", "{}")));
        assert_eq!(unparcel("no line feed"), None);
        assert_eq!(unparcel("n\n{}"), None);
        assert_eq!(unparcel("xs\n{}"), None);
    }

    #[test]
    fn only_a_replicas_shape_names_a_replica() {
        assert!(is_replica("0123456789abcdef01234567"));
        for bad in [
            "",
            "0123456789ABCDEF01234567",
            "0123456789abcdef0123456",
            "0123456789abcdef0123456g",
        ] {
            assert!(!is_replica(bad), "{bad}");
        }
    }
}
