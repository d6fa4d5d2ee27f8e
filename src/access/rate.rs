//! How much a principal may do: token buckets (governor's GCRA) for its requests and for
//! its runs, and a cap on its runs at once, so one caller cannot starve the rest.
//!
//! A key is one bucket wherever it calls from; anonymous callers are told apart by their
//! network ([`network`]): an IPv4 address (an IPv4-mapped IPv6 address counts as the
//! IPv4 one), or an IPv6 /64 — the block one subscriber is given, so the 2^64 addresses
//! of one /64 are one anonymous principal, not 2^64 buckets. A bucket holds a
//! minute's worth (the burst is the rate a minute) and refills evenly: at 2 a minute, two
//! calls pass at once and the third waits 30 s.
//!
//! Runs beyond the cap at once are queued, not refused: they wait for one of the
//! principal's places for at most [`Rates::queue_wait`] (the run deadline), then answer
//! `RATE_LIMITED`. A batch or a relaying toolgate that sends many runs at once is slowed,
//! not failed, and the other principals keep their share of the workers.
//!
//! A replica of a fleet (`TOOLGATE_REDIS`) keeps the same buckets and places in Redis
//! instead (`shared::rate`), so the limits hold across every replica: three replicas
//! admit a principal's rate between them, not three times it. When Redis cannot say,
//! the request or run is refused with `SHARED_STATE_UNAVAILABLE` (retryable); nothing
//! falls back to this process's own buckets.
//!
//! Nothing here knows HTTP or MCP: `access::enforce` turns a refused request into a 429,
//! and the gateway turns a refused run into a `RATE_LIMITED` run.

use std::collections::HashMap;
use std::net::IpAddr;
use std::num::NonZeroU32;
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

use governor::clock::{Clock, DefaultClock};
use governor::{DefaultKeyedRateLimiter, Quota, RateLimiter};
use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::Principal;
use crate::error::Error;
use crate::limits::{ANONYMOUS_PER_MINUTE, JS_CONCURRENT_RUNS, JS_WALL_CLOCK, RATE_PRUNE_EVERY, REQUESTS_PER_MINUTE};
use crate::shared::Shared;
use crate::shared::rate::{Counter, Lease, Rates as SharedRates};
use crate::shared::sessions::{Ledger, Seen};

/// The rates in force for every principal (a key's own run rate is in the keys file).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Rates {
    /// Requests a minute each principal may make (`TOOLGATE_REQUESTS_PER_MINUTE`). By
    /// default, [`REQUESTS_PER_MINUTE`].
    pub requests_per_minute: u32,
    /// Runs a minute each anonymous client address may make
    /// (`TOOLGATE_ANONYMOUS_PER_MINUTE`). By default, [`ANONYMOUS_PER_MINUTE`].
    pub anonymous_per_minute: u32,
    /// Runs one principal may have going at once (`TOOLGATE_PRINCIPAL_CONCURRENT_RUNS`).
    /// By default, half of the JavaScript runs at once, at least 1.
    pub runs_at_once: usize,
    /// How long a run beyond [`Rates::runs_at_once`] waits for a place before it is
    /// refused. By default, the JavaScript deadline.
    pub queue_wait: Duration,
}

impl Default for Rates {
    fn default() -> Self {
        Rates {
            requests_per_minute: REQUESTS_PER_MINUTE,
            anonymous_per_minute: ANONYMOUS_PER_MINUTE,
            runs_at_once: (JS_CONCURRENT_RUNS / 2).max(1),
            queue_wait: JS_WALL_CLOCK,
        }
    }
}

/// Whose bucket a call draws from.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
enum Holder {
    /// A key, by its id.
    Key(Arc<str>),
    /// An anonymous caller, by its network ([`network`]).
    Address(Option<IpAddr>),
}

impl Holder {
    fn of(principal: &Principal) -> Holder {
        if principal.anonymous {
            Holder::Address(principal.address.map(network))
        } else {
            Holder::Key(principal.id.clone())
        }
    }
}

/// Bits of an IPv6 address that name the network an anonymous caller is told apart by:
/// a /64 is what one subscriber (a home, a server) is given, and is the smallest block
/// routing hands out, so every address in it is one caller.
pub const IPV6_NETWORK_BITS: u8 = 64;

/// The network `address` is counted as: an IPv4 address as it is, an IPv4-mapped IPv6
/// address (`::ffff:a.b.c.d`, how a dual-stack socket sees an IPv4 client) as that IPv4
/// address, any other IPv6 address as its /64 (the rest of its bits zero).
pub fn network(address: IpAddr) -> IpAddr {
    match address {
        IpAddr::V4(v4) => IpAddr::V4(v4),
        IpAddr::V6(v6) => match v6.to_ipv4_mapped() {
            Some(v4) => IpAddr::V4(v4),
            None => {
                let bits = u128::from(v6);
                let mask = u128::MAX << (128 - u32::from(IPV6_NETWORK_BITS));
                IpAddr::V6(std::net::Ipv6Addr::from(bits & mask))
            }
        },
    }
}

impl Principal {
    /// What this principal shares the server's places as (JavaScript places, REPL
    /// slots): its key's id, or, for an anonymous caller, its network ([`network`]).
    /// Opaque text, so the places need know nothing of keys or addresses.
    pub fn share(&self) -> String {
        match Holder::of(self) {
            Holder::Key(id) => format!("key:{id}"),
            Holder::Address(Some(IpAddr::V6(net))) => format!("anonymous:{net}/{IPV6_NETWORK_BITS}"),
            Holder::Address(Some(IpAddr::V4(net))) => format!("anonymous:{net}"),
            Holder::Address(None) => "anonymous".to_owned(),
        }
    }
}

/// Keyed buckets, one limiter per rate (principals with the same rate share a limiter,
/// each with its own bucket in it).
#[derive(Debug, Default)]
struct Buckets {
    by_rate: Mutex<HashMap<NonZeroU32, Arc<DefaultKeyedRateLimiter<Holder>>>>,
}

impl Buckets {
    /// Takes one token from `holder`'s bucket at `per_minute`, or says how long until
    /// one is there.
    fn take(&self, holder: &Holder, per_minute: u32) -> Result<(), Duration> {
        let Some(rate) = NonZeroU32::new(per_minute) else {
            return Err(Duration::from_secs(60));
        };
        let limiter = {
            let mut by_rate = self.by_rate.lock().unwrap_or_else(|p| p.into_inner());
            by_rate
                .entry(rate)
                .or_insert_with(|| Arc::new(RateLimiter::keyed(Quota::per_minute(rate))))
                .clone()
        };
        limiter
            .check_key(holder)
            .map_err(|not_until| not_until.wait_time_from(DefaultClock::default().now()))
    }

    /// Forgets every bucket that is full again (indistinguishable from a new one).
    fn prune(&self) {
        let mut by_rate = self.by_rate.lock().unwrap_or_else(|p| p.into_inner());
        by_rate.retain(|_, limiter| {
            limiter.retain_recent();
            limiter.shrink_to_fit();
            !limiter.is_empty()
        });
    }
}

/// The refusal of a run of `principal` past its rate, retryable after `wait`.
fn run_rate_limited(principal: &Principal, wait: Duration) -> Error {
    Error::RateLimited {
        what: format!(
            "\"{}\" may start {} a minute and has used them",
            principal.id,
            crate::plural::count(principal.per_minute as usize, "run", "runs")
        ),
        retry_after: Some(wait),
    }
}

/// What beginning a run took besides its bucket's token ([`Limiter::begin`]): for a
/// fleet's replica, its number and its place when they came in the same round trip.
#[derive(Debug, Default)]
pub struct Started {
    /// The run's number in its session, counted in the fleet.
    pub number: Option<u64>,
    /// Its place among its principal's runs at once, when one was free at once.
    pub place: Option<Place>,
}

/// One principal's place among its runs at once, given back when dropped.
#[derive(Debug)]
pub struct Place {
    _permit: Option<OwnedSemaphorePermit>,
    _lease: Option<Lease>,
}

/// Why a request was not admitted.
#[derive(Debug)]
pub enum Refused {
    /// Its principal's bucket is empty until this long from now.
    Wait(Duration),
    /// The fleet's Redis could not say (`SHARED_STATE_UNAVAILABLE`).
    Unavailable(Error),
}

/// The buckets and run places of one server, shared by both of its layers (the access
/// middleware for requests, the gateway for runs).
#[derive(Debug)]
pub struct Limiter {
    rates: Rates,
    requests: Buckets,
    runs: Buckets,
    places: Mutex<HashMap<Holder, Arc<Semaphore>>>,
    /// The fleet's buckets and places, in place of the ones above, for a replica.
    shared: Option<SharedRates>,
    /// A replica's sessions in the fleet, renewed in the round trip that admits a
    /// request naming one ([`Limiter::renewing`]).
    sessions: OnceLock<Arc<Ledger>>,
}

impl Limiter {
    /// A limiter enforcing `rates`, with every bucket full.
    pub fn new(rates: Rates) -> Limiter {
        Limiter {
            rates,
            requests: Buckets::default(),
            runs: Buckets::default(),
            places: Mutex::default(),
            shared: None,
            sessions: OnceLock::new(),
        }
    }

    /// A limiter enforcing `rates` across the fleet whose Redis is `shared`.
    pub fn shared(rates: Rates, shared: Shared) -> Limiter {
        Limiter {
            shared: Some(SharedRates::new(shared)),
            ..Limiter::new(rates)
        }
    }

    /// The rates in force.
    pub fn rates(&self) -> Rates {
        self.rates
    }

    /// Renews the fleet's sessions in `ledger` in the round trip that admits a request
    /// naming one ([`Limiter::request`]); set once, by the MCP server of a replica.
    pub fn renewing(&self, ledger: Arc<Ledger>) {
        let _ = self.sessions.set(ledger);
    }

    /// Admits one request of `principal`, or says how long until it may make one (or
    /// that the fleet's Redis cannot say). A replica's request naming MCP session
    /// `session` renews it in the same round trip (when [`Limiter::renewing`]) and
    /// answers what it found, for the session layer.
    pub async fn request(&self, principal: &Principal, session: Option<&str>) -> Result<Option<Seen>, Refused> {
        let per_minute = self.rates.requests_per_minute;
        let Some(shared) = &self.shared else {
            return self
                .requests
                .take(&Holder::of(principal), per_minute)
                .map(|()| None)
                .map_err(Refused::Wait);
        };
        let name = format!("requests:{}", principal.share());
        if let (Some(id), Some(ledger)) = (session, self.sessions.get()) {
            let Some(bucket) = shared.bucket(&name, per_minute) else {
                return Err(Refused::Wait(Duration::from_secs(60)));
            };
            return match ledger.enter(id, Some(&bucket)).await {
                Ok(Ok(touched)) => Ok(Some(Seen {
                    id: id.to_owned(),
                    touched,
                })),
                Ok(Err(wait)) => Err(Refused::Wait(wait)),
                Err(e) => Err(Refused::Unavailable(e)),
            };
        }
        match shared.take(&name, per_minute).await {
            Ok(None) => Ok(None),
            Ok(Some(wait)) => Err(Refused::Wait(wait)),
            Err(e) => Err(Refused::Unavailable(e)),
        }
    }

    /// Admits one run of `principal`: a token from its run bucket (at its own rate), then
    /// one of its places, waited for at most [`Rates::queue_wait`]. Refused with
    /// `RATE_LIMITED` and when to retry.
    pub async fn run(&self, principal: &Principal) -> Result<Place, Error> {
        self.take(principal).await?;
        self.place(principal).await
    }

    /// Begins a run of `principal`: one run from its bucket as [`Limiter::take`], and for
    /// a fleet's replica, in the same round trip, the run's number in its session (when
    /// `counter` names it) and, when `place` asks, one of its places if one is free now
    /// (else the run waits for one later with [`Limiter::place`]). One process numbers
    /// and places its runs itself: `Started::default()`.
    pub async fn begin(&self, principal: &Principal, counter: Option<&Counter>, place: bool) -> Result<Started, Error> {
        let Some(shared) = &self.shared else {
            self.take(principal).await?;
            return Ok(Started::default());
        };
        let share = principal.share();
        let places = place.then_some((share.as_str(), self.rates.runs_at_once));
        let begun = shared
            .begin(&format!("runs:{share}"), principal.per_minute, counter, places)
            .await?;
        match begun {
            Ok(begun) => Ok(Started {
                number: begun.number,
                place: begun.lease.map(|lease| Place {
                    _permit: None,
                    _lease: Some(lease),
                }),
            }),
            Err(wait) => Err(run_rate_limited(principal, wait)),
        }
    }

    /// Takes one run from `principal`'s run bucket (at its own rate), at once: the first
    /// step of admitting a run, made before anything of the call is read or checked, so
    /// a principal past its rate costs nothing more. Refused with `RATE_LIMITED` and when
    /// to retry.
    pub async fn take(&self, principal: &Principal) -> Result<(), Error> {
        let taken = match &self.shared {
            None => self.runs.take(&Holder::of(principal), principal.per_minute),
            Some(shared) => match shared
                .take(&format!("runs:{}", principal.share()), principal.per_minute)
                .await?
            {
                None => Ok(()),
                Some(wait) => Err(wait),
            },
        };
        taken.map_err(|wait| run_rate_limited(principal, wait))
    }

    /// One of `principal`'s places among its runs at once, waited for at most
    /// [`Rates::queue_wait`]; `RATE_LIMITED` past it.
    pub async fn place(&self, principal: &Principal) -> Result<Place, Error> {
        let (at_once, wait) = (self.rates.runs_at_once, self.rates.queue_wait);
        if let Some(shared) = &self.shared {
            return match shared.place(&principal.share(), at_once, wait).await? {
                Some(lease) => Ok(Place {
                    _permit: None,
                    _lease: Some(lease),
                }),
                None => Err(self.no_place(principal)),
            };
        }
        let holder = Holder::of(principal);
        let places = {
            let mut all = self.places.lock().unwrap_or_else(|p| p.into_inner());
            all.entry(holder)
                .or_insert_with(|| Arc::new(Semaphore::new(self.rates.runs_at_once)))
                .clone()
        };
        match tokio::time::timeout(wait, places.acquire_owned()).await {
            Ok(Ok(permit)) => Ok(Place {
                _permit: Some(permit),
                _lease: None,
            }),
            // The semaphore is never closed; were it, nothing would hold the run back.
            Ok(Err(_)) => Ok(Place {
                _permit: None,
                _lease: None,
            }),
            Err(_) => Err(self.no_place(principal)),
        }
    }

    /// The refusal of a run that waited [`Rates::queue_wait`] for a place in vain.
    fn no_place(&self, principal: &Principal) -> Error {
        Error::RateLimited {
            what: format!(
                "\"{}\" already has {} going and none ended within {} ms",
                principal.id,
                crate::plural::count(self.rates.runs_at_once, "run", "runs"),
                self.rates.queue_wait.as_millis()
            ),
            retry_after: Some(Duration::from_secs(1)),
        }
    }

    /// Forgets full buckets and idle run places, so memory follows the callers seen
    /// lately rather than every address ever seen.
    pub fn prune(&self) {
        self.requests.prune();
        self.runs.prune();
        let mut places = self.places.lock().unwrap_or_else(|p| p.into_inner());
        places.retain(|_, s| Arc::strong_count(s) > 1 || s.available_permits() < self.rates.runs_at_once);
    }

    /// Prunes every [`RATE_PRUNE_EVERY`] for as long as the limiter is in use.
    pub fn spawn_pruning(self: &Arc<Self>) {
        let weak = Arc::downgrade(self);
        tokio::spawn(async move {
            let mut every = tokio::time::interval(RATE_PRUNE_EVERY);
            every.tick().await;
            loop {
                every.tick().await;
                match weak.upgrade() {
                    Some(limiter) => limiter.prune(),
                    None => return,
                }
            }
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::access::Scope;

    fn principal(id: &str, per_minute: u32, anonymous: bool, address: [u8; 4]) -> Principal {
        Principal {
            id: Arc::from(id),
            scopes: vec![Scope::Run],
            per_minute,
            anonymous,
            address: Some(IpAddr::from(address)),
            tools: None,
        }
    }

    fn rates(runs_at_once: usize) -> Rates {
        Rates {
            requests_per_minute: 3,
            anonymous_per_minute: 2,
            runs_at_once,
            queue_wait: Duration::from_secs(30),
        }
    }

    #[tokio::test]
    async fn a_principal_past_its_rate_is_refused_with_when_to_retry_and_others_are_not() {
        let limiter = Limiter::new(rates(8));
        let a = principal("a", 2, false, [10, 0, 0, 1]);
        let a_elsewhere = principal("a", 2, false, [10, 0, 0, 2]);
        let b = principal("b", 2, false, [10, 0, 0, 1]);
        assert!(limiter.run(&a).await.is_ok());
        assert!(limiter.run(&a_elsewhere).await.is_ok(), "one bucket per key");
        let refused = limiter.run(&a).await.err().map(|e| (e.code(), e.retry_after()));
        let Some(("RATE_LIMITED", Some(wait))) = refused else {
            panic!("{refused:?}")
        };
        assert!(
            wait > Duration::from_secs(20) && wait <= Duration::from_secs(30),
            "{wait:?}"
        );
        assert!(limiter.run(&b).await.is_ok(), "another key has its own bucket");
        for _ in 0..3 {
            assert!(limiter.request(&b, None).await.is_ok());
        }
        assert!(limiter.request(&b, None).await.is_err(), "requests have their own rate");
    }

    #[tokio::test]
    async fn anonymous_callers_are_told_apart_by_address() {
        let limiter = Limiter::new(rates(8));
        let here = principal("anonymous", 1, true, [10, 0, 0, 1]);
        let there = principal("anonymous", 1, true, [10, 0, 0, 2]);
        assert!(limiter.run(&here).await.is_ok());
        assert!(limiter.run(&here).await.is_err());
        assert!(limiter.run(&there).await.is_ok());
    }

    #[tokio::test]
    async fn one_ipv6_slash_64_is_one_anonymous_caller_and_mapped_ipv4_is_its_ipv4() {
        let limiter = Limiter::new(rates(8));
        let at = |address: &str| Principal {
            address: Some(address.parse().unwrap()),
            ..principal("anonymous", 1, true, [0, 0, 0, 0])
        };
        assert!(limiter.run(&at("2001:db8:1:2::1")).await.is_ok());
        for same in [
            "2001:db8:1:2::2",
            "2001:db8:1:2:ffff:ffff:ffff:ffff",
            "2001:db8:1:2:abcd::7",
        ] {
            assert!(limiter.run(&at(same)).await.is_err(), "{same} is in the same /64");
        }
        assert!(limiter.run(&at("2001:db8:1:3::1")).await.is_ok(), "the next /64");
        assert!(limiter.run(&at("192.0.2.7")).await.is_ok());
        assert!(
            limiter.run(&at("::ffff:192.0.2.7")).await.is_err(),
            "mapped IPv4 is the IPv4 address"
        );
        assert!(limiter.run(&at("192.0.2.8")).await.is_ok(), "IPv4 is per address");
        assert_eq!(at("2001:db8:1:2::9").share(), "anonymous:2001:db8:1:2::/64");
        assert_eq!(at("::ffff:10.1.2.3").share(), "anonymous:10.1.2.3");
        assert_eq!(principal("ci", 1, false, [10, 0, 0, 1]).share(), "key:ci");
    }

    #[test]
    fn networks_keep_ipv4_whole_and_ipv6_to_its_slash_64() {
        let net = |a: &str| network(a.parse().unwrap()).to_string();
        assert_eq!(net("203.0.113.9"), "203.0.113.9");
        assert_eq!(net("::ffff:203.0.113.9"), "203.0.113.9");
        assert_eq!(net("2001:db8:aaaa:bbbb:cccc:dddd:eeee:ffff"), "2001:db8:aaaa:bbbb::");
        assert_eq!(net("::1"), "::");
        assert_eq!(net("fe80::1:2:3:4"), "fe80::");
    }

    #[tokio::test]
    async fn runs_past_the_cap_wait_for_a_place_and_are_refused_after_the_wait() {
        let a = principal("a", 100, false, [10, 0, 0, 1]);
        let b = principal("b", 100, false, [10, 0, 0, 1]);
        let impatient = Limiter::new(Rates {
            queue_wait: Duration::from_millis(1),
            ..rates(1)
        });
        let held = impatient.run(&a).await.unwrap();
        assert!(impatient.run(&b).await.is_ok(), "another principal has its own places");
        let refused = impatient.run(&a).await.err().map(|e| e.to_string()).unwrap_or_default();
        assert!(refused.contains("1 run going"), "{refused}");
        drop(held);
        // Queued while the first holds the place, it runs as soon as that is given back.
        let limiter = Arc::new(Limiter::new(rates(1)));
        let first = limiter.run(&a).await.unwrap();
        let waiting = tokio::spawn({
            let (limiter, a) = (limiter.clone(), a.clone());
            async move { limiter.run(&a).await.is_ok() }
        });
        tokio::task::yield_now().await;
        assert!(!waiting.is_finished());
        drop(first);
        assert!(waiting.await.unwrap());
        limiter.prune();
        assert!(limiter.places.lock().unwrap().is_empty(), "idle places are forgotten");
    }
}
