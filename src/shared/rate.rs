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
//! One round trip to admit a request; one to begin a run (its bucket, its number in its
//! session and its place, [`Rates::begin`]); giving a place back travels with the
//! replica's next exchange ([`Shared::later`]). Callers name the bucket (`Principal::share`, in `access::rate`); nothing here
//! knows principals.

use std::sync::Arc;
use std::time::Duration;

use tokio::sync::Notify;
use tokio_util::sync::CancellationToken;

use super::Shared;
use crate::error::Error;
use crate::limits::{REDIS_LEASE_TTL, REDIS_PLACE_POLL_MAX};

/// The GCRA step, a Lua function other scripts begin with: `gcra(bucket, interval,
/// full, now)` takes one call from `bucket` — `interval`, microseconds between two calls
/// at the rate (a minute over the rate, fractional allowed); `full`, microseconds of a
/// full bucket (a minute) — and answers 0 when admitted (the bucket updated), else the
/// microseconds until a call would be.
pub(super) const GCRA_STEP: &str = r"
local function gcra(bucket, interval, full, now)
  local tat = tonumber(redis.call('GET', bucket) or now)
  if tat < now then tat = now end
  local next_tat = tat + interval
  local allowed_at = next_tat - full
  if allowed_at > now then
    return math.ceil(allowed_at - now)
  end
  redis.call('SET', bucket, string.format('%.17g', next_tat), 'PX', math.max(1, math.ceil((next_tat - now) / 1000)))
  return 0
end
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000000 + tonumber(time[2])
";

/// GCRA alone. KEYS[1]: the bucket. ARGV[1], ARGV[2]: `interval` and `full` of
/// [`GCRA_STEP`]. Answers as `gcra` does.
const GCRA: &str = "return gcra(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), now)";

/// A run begun: one call from the run bucket, then (when admitted) the run's number and,
/// when asked, a place — one round trip where three were. KEYS[1]: the bucket; KEYS[2]:
/// the session's last run number; KEYS[3]: when its history began; KEYS[4]: the
/// principal's places. ARGV[1], ARGV[2]: as [`GCRA`]; ARGV[3]: `1` to number the run;
/// ARGV[4]: when the history began (RFC 3339); ARGV[5]: the history's life in ms;
/// ARGV[6]: `1` to take a place; ARGV[7]: the lease id; ARGV[8]: places at once;
/// ARGV[9]: a lease's life in µs. Answers {wait, number or false, 1 when a place was
/// taken}; when refused (wait > 0) nothing else is done.
const BEGIN: &str = r"
local wait = gcra(KEYS[1], tonumber(ARGV[1]), tonumber(ARGV[2]), now)
if wait > 0 then
  return {wait, false, 0}
end
local number = false
if ARGV[3] == '1' then
  number = redis.call('INCR', KEYS[2])
  redis.call('PEXPIRE', KEYS[2], ARGV[5])
  redis.call('SET', KEYS[3], ARGV[4], 'NX', 'PX', ARGV[5])
end
local placed = 0
if ARGV[6] == '1' then
  local life = tonumber(ARGV[9])
  redis.call('ZREMRANGEBYSCORE', KEYS[4], '-inf', string.format('%.17g', now))
  if redis.call('ZCARD', KEYS[4]) < tonumber(ARGV[8]) then
    redis.call('ZADD', KEYS[4], string.format('%.17g', now + life), ARGV[7])
    redis.call('PEXPIRE', KEYS[4], math.ceil(life / 1000))
    placed = 1
  end
end
return {0, number, placed}
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
    begin: redis::Script,
    take_place: redis::Script,
    renew_place: redis::Script,
    /// Woken when a place of this replica is given back, so a run waiting here tries
    /// again at once rather than at its next poll.
    freed: Arc<Notify>,
}

/// One of the fleet's buckets, as scripts take from it (`rate:<name>:<per minute>`).
#[derive(Debug, Clone)]
pub struct Bucket {
    /// Its key.
    pub(super) key: String,
    /// Microseconds between two calls at its rate (fractional), as text.
    pub(super) interval: String,
    /// Microseconds of a full bucket (a minute).
    pub(super) full: u64,
}

/// A session's run numbers in the fleet (`history::shelf` names the keys): the key
/// counted, the key saying when the session's history began, what it says, and how long
/// both live past the last run.
#[derive(Debug, Clone)]
pub struct Counter {
    /// The session's last run number (`INCR`ed).
    pub next: String,
    /// When the session's history began.
    pub began: String,
    /// When it began, RFC 3339, written unless already there.
    pub began_at: String,
    /// How long both keys live past the last run, in ms.
    pub life_ms: u64,
}

/// A run begun in the fleet ([`Rates::begin`]): its number, when it asked for one, and
/// its place, when one was free at once.
#[derive(Debug)]
pub struct Begun {
    /// The run's number in its session.
    pub number: Option<u64>,
    /// Its place among its principal's runs at once.
    pub lease: Option<Lease>,
}

/// A place among a principal's runs at once, held as a lease in Redis and renewed until
/// dropped; dropping it gives the place back.
#[derive(Debug)]
pub struct Lease {
    /// Stops the renewals.
    ended: CancellationToken,
    shared: Shared,
    /// The principal's places, and this lease's id among them.
    key: String,
    id: String,
    /// Woken once the place is given back.
    freed: Arc<Notify>,
}

impl Drop for Lease {
    /// Gives the place back with the replica's next exchange with Redis — queued here,
    /// at once, so the SSE event of the run's answer, written next, carries it — and
    /// wakes this replica's runs waiting for a place once Redis has it.
    fn drop(&mut self) {
        self.ended.cancel();
        let mut give_back = redis::cmd("ZREM");
        give_back.arg(&self.key).arg(&self.id);
        let given = self.shared.later("a run's place given back", [give_back]);
        let freed = self.freed.clone();
        if let Ok(runtime) = tokio::runtime::Handle::try_current() {
            runtime.spawn(async move {
                let _ = given.await;
                freed.notify_waiters();
            });
        }
    }
}

impl Rates {
    /// The buckets and places of the fleet whose Redis is `shared`.
    pub fn new(shared: Shared) -> Rates {
        Rates {
            shared,
            gcra: redis::Script::new(&format!("{GCRA_STEP}{GCRA}")),
            begin: redis::Script::new(&format!("{GCRA_STEP}{BEGIN}")),
            take_place: redis::Script::new(TAKE_PLACE),
            renew_place: redis::Script::new(RENEW_PLACE),
            freed: Arc::new(Notify::new()),
        }
    }

    /// The bucket `name` (`requests:…`, `runs:…`) at `per_minute`, for a script that
    /// takes from it with something else ([`super::sessions::Ledger::enter`]); `None` at
    /// 0 a minute, which admits nothing.
    pub fn bucket(&self, name: &str, per_minute: u32) -> Option<Bucket> {
        // GCRA's arguments: microseconds between two calls (fractional), and of a full
        // bucket (a minute).
        let minute_us: u64 = 60_000_000;
        (per_minute > 0).then(|| Bucket {
            key: self.shared.key(&format!("rate:{name}:{per_minute}")),
            interval: format!("{:.6}", minute_us as f64 / f64::from(per_minute)),
            full: minute_us,
        })
    }

    /// Takes one call from the bucket `bucket` (`requests:…`, `runs:…`) at `per_minute`:
    /// `Ok(None)` when admitted, `Ok(Some(wait))` when refused until then,
    /// `SHARED_STATE_UNAVAILABLE` when Redis cannot say.
    pub async fn take(&self, bucket: &str, per_minute: u32) -> Result<Option<Duration>, Error> {
        let Some(bucket) = self.bucket(bucket, per_minute) else {
            return Ok(Some(Duration::from_secs(60)));
        };
        let mut call = self.gcra.key(&bucket.key);
        call.arg(&bucket.interval).arg(bucket.full);
        let wait_us: u64 = self.shared.script(&call).await?;
        Ok((wait_us > 0).then(|| Duration::from_micros(wait_us)))
    }

    /// Begins a run, in one round trip: one call from the bucket `bucket` at
    /// `per_minute`, then, when admitted, the next number of `counter` (when given) and
    /// one of the `at_once` places named `places` if one is free now (when given; else
    /// the caller waits for one with [`Rates::place`]). `Ok(Err(wait))` when the bucket
    /// refuses until then (nothing else is done), `SHARED_STATE_UNAVAILABLE` when Redis
    /// cannot say.
    pub async fn begin(
        &self,
        bucket: &str,
        per_minute: u32,
        counter: Option<&Counter>,
        places: Option<(&str, usize)>,
    ) -> Result<Result<Begun, Duration>, Error> {
        let Some(bucket) = self.bucket(bucket, per_minute) else {
            return Ok(Err(Duration::from_secs(60)));
        };
        let place_key = places.map(|(name, _)| self.shared.key(&format!("places:{name}")));
        let id = lease_id();
        let life_us = u64::try_from(REDIS_LEASE_TTL.as_micros()).unwrap_or(u64::MAX);
        let bucket_key = bucket.key.as_str();
        let mut call = self.begin.key(bucket_key);
        // Keys a part does not use are named all the same (the bucket's), so the script
        // declares every key it may touch.
        call.key(counter.map_or(bucket_key, |c| c.next.as_str()))
            .key(counter.map_or(bucket_key, |c| c.began.as_str()))
            .key(place_key.as_deref().unwrap_or(bucket_key))
            .arg(&bucket.interval)
            .arg(bucket.full)
            .arg(u8::from(counter.is_some()))
            .arg(counter.map_or("", |c| c.began_at.as_str()))
            .arg(counter.map_or(1, |c| c.life_ms.max(1)))
            .arg(u8::from(places.is_some()))
            .arg(&id)
            .arg(places.map_or(0, |(_, at_once)| at_once))
            .arg(life_us);
        let (wait_us, number, placed): (u64, Option<u64>, u8) = self.shared.script(&call).await?;
        if wait_us > 0 {
            return Ok(Err(Duration::from_micros(wait_us)));
        }
        let lease = match place_key {
            Some(key) if placed == 1 => Some(self.hold(key, id, life_us)),
            _ => None,
        };
        Ok(Ok(Begun { number, lease }))
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
        let lease = Lease {
            ended: ended.clone(),
            shared: self.shared.clone(),
            key: key.clone(),
            id: id.clone(),
            freed: self.freed.clone(),
        };
        let (shared, renew, stop) = (self.shared.clone(), self.renew_place.clone(), ended);
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
        });
        lease
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
