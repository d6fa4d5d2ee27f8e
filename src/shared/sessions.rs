//! The MCP sessions of a fleet, in Redis: which sessions exist, who owns each, what its
//! client sent in `initialize`, and how many a holder has — so any replica serves any
//! session's request, refuses it to anyone but its owner, and counts a principal's
//! sessions across the fleet.
//!
//! One hash per session (`session:<id>`: `owner`, `holder`, and `state`, rmcp's
//! [`SessionState`] as JSON) and one sorted set per holder (`sessions:<holder>`: session
//! id → when it expires, µs on Redis's clock). Both live as long as the session may idle
//! (`TOOLGATE_HTTP_SESSION_IDLE_MS`) and every request naming the session renews them
//! ([`Ledger::touch`]), so a session used on any replica lives on every replica, and one
//! no replica has seen used for that long is gone everywhere. A `DELETE` on any replica
//! ends it everywhere ([`SessionStore::delete`]); a replica that merely lets its copy go
//! (idle, shut down, killed) leaves the fleet's session alone.
//!
//! The hash holds what every replica must honour for the session besides: the log level
//! it asked for (`level`, [`record_level`]; read back with the owner by every request)
//! and the replica holding its standalone SSE stream (`listener`, `notes.rs`).
//!
//! One round trip to admit a session, one to record its `initialize`, one per request to
//! renew it and read its owner and log level — the same that takes the request from its
//! principal's bucket ([`Ledger::enter`]). Callers name owners and holders as strings; nothing here
//! knows a principal.

use std::time::Duration;

use rmcp::transport::streamable_http_server::session::{SessionState, SessionStore, SessionStoreError};

use super::Shared;
use super::rate::{Bucket, GCRA_STEP};
use crate::error::Error;

/// A session admitted. KEYS[1]: the holder's sessions; KEYS[2]: the session's hash.
/// ARGV[1]: the session id; ARGV[2]: its owner; ARGV[3]: its holder; ARGV[4]: sessions a
/// holder may have; ARGV[5]: a session's life in µs. Answers 1 when admitted, 0 when the
/// holder already has ARGV[4].
const ADMIT: &str = r"
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local life = tonumber(ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%.17g', now))
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[4]) then
  return 0
end
redis.call('ZADD', KEYS[1], string.format('%.17g', now + life), ARGV[1])
redis.call('PEXPIRE', KEYS[1], math.ceil(life / 1000))
redis.call('HSET', KEYS[2], 'owner', ARGV[2], 'holder', ARGV[3])
redis.call('PEXPIRE', KEYS[2], math.ceil(life / 1000))
return 1
";

/// A request naming a session, in one round trip: one call from its principal's request
/// bucket (when asked), then the session renewed. KEYS[1]: the session's hash; KEYS[2]:
/// the bucket (the hash again when none). ARGV[1]: the session id; ARGV[2]: a session's
/// life in µs; ARGV[3]: the prefix of holders' sets; ARGV[4]: `1` to take from the
/// bucket; ARGV[5], ARGV[6]: the bucket's `interval` and `full` (`rate::GCRA_STEP`).
/// Answers {wait, owner, level}: wait > 0 when the bucket refuses (nothing else done);
/// owner false when the fleet holds no such session (never made, deleted, or expired);
/// level false until the session asks for one.
const ENTER: &str = r"
if ARGV[4] == '1' then
  local wait = gcra(KEYS[2], tonumber(ARGV[5]), tonumber(ARGV[6]), now)
  if wait > 0 then
    return {wait, false, false}
  end
end
local found = redis.call('HMGET', KEYS[1], 'owner', 'holder', 'level')
if not found[1] or not found[2] then
  return {0, false, false}
end
local life = tonumber(ARGV[2])
redis.call('PEXPIRE', KEYS[1], math.ceil(life / 1000))
local held = ARGV[3] .. found[2]
redis.call('ZADD', held, 'XX', string.format('%.17g', now + life), ARGV[1])
redis.call('PEXPIRE', held, math.ceil(life / 1000))
return {0, found[1], found[3] or false}
";

/// A session's log level recorded. KEYS[1]: its hash. ARGV[1]: the level's rank. Answers
/// 0 when the fleet holds no such session.
const LEVEL: &str = r"
if redis.call('EXISTS', KEYS[1]) == 0 then
  return 0
end
redis.call('HSET', KEYS[1], 'level', ARGV[1])
return 1
";

/// A session ended. KEYS[1]: its hash. ARGV[1]: the session id; ARGV[2]: the prefix of
/// holders' sets.
const END: &str = r"
local holder = redis.call('HGET', KEYS[1], 'holder')
if holder then
  redis.call('ZREM', ARGV[2] .. holder, ARGV[1])
end
redis.call('DEL', KEYS[1])
return 1
";

/// A session as a request naming it finds it in the fleet.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Touched {
    /// Who owns it.
    pub owner: String,
    /// The rank of the least severe log message it wants (`logging/setLevel`, recorded
    /// by [`record_level`]); `None` until it asks.
    pub level: Option<u8>,
}

/// What a request naming session `id` found, read by the access layer in the round trip
/// that admitted the request (`access::rate::Limiter::request`), for the session layer
/// to use rather than asking again: the session as [`Ledger::touch`] answers it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Seen {
    /// The session the request names.
    pub id: String,
    /// What the fleet holds of it: `None` when no such session.
    pub touched: Option<Touched>,
}

/// The log level a fleet's session asked for, as the HTTP layer read it from the fleet
/// for the request being served (an extension of that request), so the handler on this
/// replica honours a `logging/setLevel` another replica received: the rank of the least
/// severe message the session wants.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct AskedLevel(pub u8);

/// The key of session `id`'s hash in the fleet whose Redis is `shared`.
pub(super) fn session_key(shared: &Shared, id: &str) -> String {
    shared.key(&format!("session:{id}"))
}

/// Records that session `id` wants log messages of rank `rank` and above, so every
/// replica honours its `logging/setLevel` (each reads it with [`Ledger::touch`]). Nothing
/// is recorded for a session the fleet does not hold.
pub async fn record_level(shared: &Shared, id: &str, rank: u8) -> Result<(), Error> {
    let script = redis::Script::new(LEVEL);
    let mut call = script.key(session_key(shared, id));
    call.arg(rank);
    shared.script::<u8>(&call).await.map(drop)
}

/// The fleet's sessions.
#[derive(Debug)]
pub struct Ledger {
    shared: Shared,
    /// How long a session lives in Redis past its last use (its idle expiry).
    life: Duration,
    admit: redis::Script,
    enter: redis::Script,
    end: redis::Script,
}

impl Ledger {
    /// The sessions of the fleet whose Redis is `shared`, each living `life` past its
    /// last use.
    pub fn new(shared: Shared, life: Duration) -> Ledger {
        Ledger {
            shared,
            life,
            admit: redis::Script::new(ADMIT),
            enter: redis::Script::new(&format!("{GCRA_STEP}{ENTER}")),
            end: redis::Script::new(END),
        }
    }

    fn session_key(&self, id: &str) -> String {
        session_key(&self.shared, id)
    }

    fn holders_prefix(&self) -> String {
        self.shared.key("sessions:")
    }

    fn life_us(&self) -> u64 {
        u64::try_from(self.life.as_micros()).unwrap_or(u64::MAX)
    }

    /// Records session `id` as `owner`'s, counted against `holder`, unless `holder`
    /// already has `at_most` live sessions in the fleet: true when admitted.
    pub async fn admit(&self, id: &str, owner: &str, holder: &str, at_most: usize) -> Result<bool, Error> {
        let mut call = self.admit.key(format!("{}{holder}", self.holders_prefix()));
        call.key(self.session_key(id))
            .arg(id)
            .arg(owner)
            .arg(holder)
            .arg(at_most)
            .arg(self.life_us());
        let admitted: u8 = self.shared.script(&call).await?;
        Ok(admitted == 1)
    }

    /// Renews session `id` (it was just used) and answers its owner and the log level
    /// it asked for; `None` when the fleet holds no such session.
    pub async fn touch(&self, id: &str) -> Result<Option<Touched>, Error> {
        match self.enter(id, None).await? {
            Ok(touched) => Ok(touched),
            // Without a bucket nothing can refuse.
            Err(_) => Ok(None),
        }
    }

    /// [`Ledger::touch`] after one call from `bucket`, in the same round trip: the
    /// admission of a request naming session `id`. `Ok(Err(wait))` when the bucket
    /// refuses until then (the session is then neither read nor renewed).
    pub async fn enter(&self, id: &str, bucket: Option<&Bucket>) -> Result<Result<Option<Touched>, Duration>, Error> {
        let session = self.session_key(id);
        let mut call = self.enter.key(&session);
        match bucket {
            Some(bucket) => {
                call.key(&bucket.key)
                    .arg(id)
                    .arg(self.life_us())
                    .arg(self.holders_prefix())
                    .arg(1)
                    .arg(&bucket.interval)
                    .arg(bucket.full);
            }
            None => {
                call.key(&session)
                    .arg(id)
                    .arg(self.life_us())
                    .arg(self.holders_prefix())
                    .arg(0)
                    .arg(0)
                    .arg(0);
            }
        }
        let (wait_us, owner, level): (u64, Option<String>, Option<u8>) = self.shared.script(&call).await?;
        if wait_us > 0 {
            return Ok(Err(Duration::from_micros(wait_us)));
        }
        Ok(Ok(owner.map(|owner| Touched { owner, level })))
    }

    /// Ends session `id` in the fleet: no replica serves it again.
    pub async fn end(&self, id: &str) -> Result<(), Error> {
        let mut call = self.end.key(self.session_key(id));
        call.arg(id).arg(self.holders_prefix());
        self.shared.script::<u8>(&call).await.map(drop)
    }
}

/// rmcp's store of sessions' `initialize` parameters, restored on a replica that has not
/// seen the session yet.
#[async_trait::async_trait]
impl SessionStore for Ledger {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let state: Option<String> = self
            .shared
            .query(redis::cmd("HGET").arg(self.session_key(session_id)).arg("state"))
            .await?;
        match state {
            None => Ok(None),
            Some(text) => Ok(Some(serde_json::from_str(&text)?)),
        }
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let key = self.session_key(session_id);
        let text = serde_json::to_string(state)?;
        let life_ms = u64::try_from(self.life.as_millis()).unwrap_or(u64::MAX).max(1);
        let mut pipeline = redis::pipe();
        pipeline
            .cmd("HSET")
            .arg(&key)
            .arg("state")
            .arg(text)
            .cmd("PEXPIRE")
            .arg(&key)
            .arg(life_ms);
        self.shared.pipeline::<()>(&pipeline).await?;
        Ok(())
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        Ok(self.end(session_id).await?)
    }
}
