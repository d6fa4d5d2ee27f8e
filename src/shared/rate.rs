//! Rate limits and runs at once exact across the replicas of a fleet: the same GCRA a
//! single process runs (governor's), and the same places, kept in Redis.
//!
//! A bucket is one key holding its theoretical arrival time; one Lua script reads it,
//! decides and writes it back atomically, on Redis's clock (`TIME`), so three replicas
//! whose clocks differ still admit exactly the rate between them. A bucket holds a
//! minute's worth and refills evenly, as in one process: at 2 a minute two calls pass at
//! once and the third waits 30 s. The key expires when the bucket is full again.
//!
//! A principal's places among its runs at once are leases: members of one sorted set,
//! scored by when they expire. Taking one drops the expired, counts the rest and adds one
//! if there is room, in one script; a held lease is renewed every third of
//! [`REDIS_LEASE_TTL`] and removed when the run ends. A replica that dies mid-run frees
//! its places when their leases expire, within [`REDIS_LEASE_TTL`].
//!
//! One round trip to admit a request or a run; one to take a place and one to give it
//! back. Callers name the bucket (`Principal::share`, in `access::rate`); nothing here
//! knows principals.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::Shared;
use crate::error::Error;
use crate::limits::{REDIS_LEASE_TTL, REDIS_PLACE_POLL_MAX};

/// GCRA. KEYS[1]: the bucket. ARGV[1]: microseconds between two calls at the rate
/// (a minute over the rate, fractional allowed); ARGV[2]: microseconds of a full bucket
/// (a minute). Answers 0 when admitted (the bucket updated), else the microseconds until
/// a call would be.
const GCRA: &str = r"
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local interval = tonumber(ARGV[1])
local full = tonumber(ARGV[2])
local tat = tonumber(redis.call('GET', KEYS[1]) or now)
if tat < now then tat = now end
local next_tat = tat + interval
local allowed_at = next_tat - full
if allowed_at > now then
  return math.ceil(allowed_at - now)
end
redis.call('SET', KEYS[1], string.format('%.17g', next_tat), 'PX', math.max(1, math.ceil((next_tat - now) / 1000)))
return 0
";

/// A place. KEYS[1]: the principal's places (lease id → expiry, µs). ARGV[1]: the lease
/// id; ARGV[2]: places at once; ARGV[3]: a lease's life in µs. Answers 1 when the lease
/// was taken, 0 when every place is held.
const TAKE_PLACE: &str = r"
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local life = tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', string.format('%.17g', now))
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then
  return 0
end
redis.call('ZADD', KEYS[1], string.format('%.17g', now + life), ARGV[1])
redis.call('PEXPIRE', KEYS[1], math.ceil(life / 1000))
return 1
";

/// A lease renewed. KEYS[1], ARGV[1] and ARGV[3] as [`TAKE_PLACE`]. Answers 1 when it
/// was still held, 0 when it had expired (the run goes on; its place may have been taken
/// by another meanwhile, which a lease's life renewed three times over makes rare).
const RENEW_PLACE: &str = r"
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
local life = tonumber(ARGV[3])
local held = redis.call('ZADD', KEYS[1], 'XX', 'CH', string.format('%.17g', now + life), ARGV[1])
redis.call('PEXPIRE', KEYS[1], math.ceil(life / 1000))
return held
";

/// The fleet's buckets and places.
#[derive(Debug)]
pub struct Rates {
    shared: Shared,
    gcra: redis::Script,
    take_place: redis::Script,
    renew_place: redis::Script,
    /// Woken when a place of this replica is given back, so a run waiting here tries
    /// again at once rather than at its next poll.
    freed: Arc<Notify>,
}

/// A place among a principal's runs at once, held as a lease in Redis and renewed until
/// dropped; dropping it gives the place back.
#[derive(Debug)]
pub struct Lease {
    ended: CancellationToken,
}

impl Drop for Lease {
    fn drop(&mut self) {
        self.ended.cancel();
    }
}

impl Rates {
    /// The buckets and places of the fleet whose Redis is `shared`.
    pub fn new(shared: Shared) -> Rates {
        Rates {
            shared,
            gcra: redis::Script::new(GCRA),
            take_place: redis::Script::new(TAKE_PLACE),
            renew_place: redis::Script::new(RENEW_PLACE),
            freed: Arc::new(Notify::new()),
        }
    }

    /// Takes one call from the bucket `bucket` (`requests:…`, `runs:…`) at `per_minute`:
    /// `Ok(None)` when admitted, `Ok(Some(wait))` when refused until then,
    /// `SHARED_STATE_UNAVAILABLE` when Redis cannot say.
    pub async fn take(&self, bucket: &str, per_minute: u32) -> Result<Option<Duration>, Error> {
        if per_minute == 0 {
            return Ok(Some(Duration::from_secs(60)));
        }
        let minute_us: u64 = 60_000_000;
        let interval = minute_us as f64 / f64::from(per_minute);
        let key = self.shared.key(&format!("rate:{bucket}:{per_minute}"));
        let mut call = self.gcra.key(key);
        call.arg(format!("{interval:.6}")).arg(minute_us);
        let wait_us: u64 = self.shared.script(&call).await?;
        Ok((wait_us > 0).then(|| Duration::from_micros(wait_us)))
    }

    /// One of the `at_once` places named `places`, waited for up to `wait`: `Ok(None)`
    /// when none came free in time, `SHARED_STATE_UNAVAILABLE` when Redis cannot say.
    pub async fn place(&self, places: &str, at_once: usize, wait: Duration) -> Result<Option<Lease>, Error> {
        let key = self.shared.key(&format!("places:{places}"));
        let id = lease_id();
        let life_us = u64::try_from(REDIS_LEASE_TTL.as_micros()).unwrap_or(u64::MAX);
        let deadline = tokio::time::Instant::now() + wait;
        let mut pause = Duration::from_millis(5);
        loop {
            let freed = self.freed.notified();
            let mut call = self.take_place.key(&key);
            call.arg(&id).arg(at_once).arg(life_us);
            let taken: u8 = self.shared.script(&call).await?;
            if taken == 1 {
                return Ok(Some(self.hold(key, id, life_us)));
            }
            let now = tokio::time::Instant::now();
            if now >= deadline {
                return Ok(None);
            }
            // Another replica's run ending wakes no one here: poll, backing off.
            tokio::select! {
                () = freed => {}
                () = tokio::time::sleep(pause.min(deadline - now)) => {}
            }
            pause = (pause * 2).min(REDIS_PLACE_POLL_MAX);
        }
    }

    /// The lease `id` in `key`, renewed until dropped, then removed.
    fn hold(&self, key: String, id: String, life_us: u64) -> Lease {
        let ended = CancellationToken::new();
        let (shared, renew, freed, stop) = (
            self.shared.clone(),
            self.renew_place.clone(),
            self.freed.clone(),
            ended.clone(),
        );
        tokio::spawn(async move {
            let mut every = tokio::time::interval(REDIS_LEASE_TTL / 3);
            every.tick().await;
            loop {
                tokio::select! {
                    () = stop.cancelled() => break,
                    _ = every.tick() => {
                        let mut call = renew.key(&key);
                        call.arg(&id).arg(0).arg(life_us);
                        if let Ok(0) = shared.script::<u8>(&call).await {
                            tracing::warn!("a run's place among its principal's runs at once had expired in Redis; renewed");
                        }
                    }
                }
            }
            let _ = shared.query::<i64>(redis::cmd("ZREM").arg(&key).arg(&id)).await;
            freed.notify_waiters();
        });
        Lease { ended }
    }
}

/// A lease id no other run of the fleet holds: 128 random bits.
fn lease_id() -> String {
    let mut bytes = [0u8; 16];
    if getrandom::fill(&mut bytes).is_err() {
        // No randomness: the clock and a counter still tell this process's leases apart.
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let n = NEXT.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0);
        return format!("{}-{nanos}-{n}", std::process::id());
    }
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
