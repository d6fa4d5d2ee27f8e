//! The state the replicas of one fleet share, in Redis (`TOOLGATE_REDIS`), so that any
//! replica can serve any request: the per-principal rate limits and runs at once
//! (`rate.rs`), the MCP sessions — their owners, `initialize` and count per holder
//! (`sessions.rs`) — and their SSE events, for a resume anywhere (`events.rs`).
//!
//! Without the setting nothing here is built and no Redis code runs: one process keeps
//! its state in memory, as it always has. With it, [`Shared`] is one multiplexed
//! connection (commands pipelined on it, at most [`REDIS_IN_FLIGHT`] in flight) that
//! reconnects by itself: made lazily, so a replica starts while Redis is down; each
//! connection attempt bounded by [`REDIS_CONNECT_TIMEOUT`], each command by
//! [`REDIS_RESPONSE_TIMEOUT`].
//!
//! Redis trouble is never hidden and never a panic. A step that needs Redis and cannot
//! reach it fails with `SHARED_STATE_UNAVAILABLE` (retryable); nothing falls back to
//! per-replica state. `/readyz` answers 503 naming the reason while Redis is down, the
//! gauge `toolgate_redis_up` says 0, each failed command counts in
//! `toolgate_redis_errors`, and stderr says once when Redis is lost and once when it is
//! back. A watcher pings Redis every [`REDIS_WATCH_EVERY`], so a replica recovers by
//! itself, without a request having to fail first.
//!
//! A leaf over the ground floor: it knows no principal, session or HTTP type; callers
//! name their keys and it prefixes them ([`Shared::key`]).

pub mod events;
pub mod notes;
pub mod rate;
pub mod sessions;
pub mod settings;

use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};

use crate::error::Error;
use crate::limits::{REDIS_CONNECT_TIMEOUT, REDIS_IN_FLIGHT, REDIS_RESPONSE_TIMEOUT, REDIS_WATCH_EVERY};
pub use settings::Settings;

/// A handle on the fleet's Redis. Cheap to clone.
#[derive(Clone)]
pub struct Shared {
    inner: Arc<Inner>,
}

struct Inner {
    /// Opens the connections a subscription needs (`notes.rs`); commands share
    /// `connection`.
    client: redis::Client,
    connection: ConnectionManager,
    settings: Settings,
    /// How the last exchange with Redis went: [`UNKNOWN`], [`UP`] or [`DOWN`].
    state: AtomicU8,
    /// Why the last exchange failed, while it is down.
    reason: Mutex<String>,
}

/// No exchange with Redis has ended yet.
const UNKNOWN: u8 = 0;
/// The last exchange went through.
const UP: u8 = 1;
/// The last exchange failed.
const DOWN: u8 = 2;

impl std::fmt::Debug for Shared {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Shared")
            .field("redis", &self.inner.settings.shown())
            .field("state", &self.inner.state.load(Ordering::Relaxed))
            .finish()
    }
}

impl Shared {
    /// A handle on the Redis `settings` name. No connection is made yet: the first
    /// command (or the watcher, [`Shared::watch`]) makes it, so a replica starts, and
    /// says it is not ready, while Redis is down. Fails only for settings the client
    /// cannot use (a `rediss://` URL on a build without TLS) and a password file that
    /// cannot be read.
    pub fn open(settings: &Settings) -> Result<Shared, String> {
        let mut info = settings.info.clone();
        if let Some(file) = &settings.password_file {
            let password = settings::read_password(file)?;
            let redis = info.redis_settings().clone().set_password(password);
            info = info.set_redis_settings(redis);
        }
        let client = redis::Client::open(info).map_err(|e| format!("TOOLGATE_REDIS {}: {e}", settings.shown()))?;
        let config = ConnectionManagerConfig::new()
            .set_connection_timeout(Some(REDIS_CONNECT_TIMEOUT))
            .set_response_timeout(Some(REDIS_RESPONSE_TIMEOUT))
            .set_number_of_retries(0)
            .set_concurrency_limit(REDIS_IN_FLIGHT);
        let connection = ConnectionManager::new_lazy_with_config(client.clone(), config)
            .map_err(|e| format!("TOOLGATE_REDIS {}: {e}", settings.shown()))?;
        Ok(Shared {
            inner: Arc::new(Inner {
                client,
                connection,
                settings: settings.clone(),
                state: AtomicU8::new(UNKNOWN),
                reason: Mutex::new("not connected yet".to_owned()),
            }),
        })
    }

    /// The Redis as it may be shown (no credentials).
    pub fn shown(&self) -> &str {
        self.inner.settings.shown()
    }

    /// `name` under the fleet's key prefix.
    pub fn key(&self, name: &str) -> String {
        format!("{}{name}", self.inner.settings.prefix)
    }

    /// Sends `command` and reads its answer as `T`; `SHARED_STATE_UNAVAILABLE` when
    /// Redis cannot be reached or answers with an error.
    pub async fn query<T: redis::FromRedisValue>(&self, command: &redis::Cmd) -> Result<T, Error> {
        let mut connection = self.inner.connection.clone();
        let answer = tokio::time::timeout(
            REDIS_CONNECT_TIMEOUT + REDIS_RESPONSE_TIMEOUT,
            command.query_async(&mut connection),
        )
        .await;
        self.settle(answer)
    }

    /// Sends the commands of `pipeline` in one round trip and reads their answers (those
    /// not ignored) as `T`; `SHARED_STATE_UNAVAILABLE` as [`Shared::query`].
    pub async fn pipeline<T: redis::FromRedisValue>(&self, pipeline: &redis::Pipeline) -> Result<T, Error> {
        let mut connection = self.inner.connection.clone();
        let answer = tokio::time::timeout(
            REDIS_CONNECT_TIMEOUT + REDIS_RESPONSE_TIMEOUT,
            pipeline.query_async(&mut connection),
        )
        .await;
        self.settle(answer)
    }

    /// Runs `script` (by its digest, loading it first when Redis does not know it yet)
    /// and reads its answer as `T`; `SHARED_STATE_UNAVAILABLE` as [`Shared::query`].
    pub async fn script<T: redis::FromRedisValue>(&self, script: &redis::ScriptInvocation<'_>) -> Result<T, Error> {
        let mut connection = self.inner.connection.clone();
        // A script unknown to Redis costs a second exchange (SCRIPT LOAD) and a third.
        let answer = tokio::time::timeout(
            REDIS_CONNECT_TIMEOUT + 3 * REDIS_RESPONSE_TIMEOUT,
            script.invoke_async(&mut connection),
        )
        .await;
        self.settle(answer)
    }

    /// A connection of its own for a subscription (Redis gives a subscribing connection
    /// to nothing else), made within [`REDIS_CONNECT_TIMEOUT`];
    /// `SHARED_STATE_UNAVAILABLE` as [`Shared::query`].
    pub async fn subscriber(&self) -> Result<redis::aio::PubSub, Error> {
        let made = tokio::time::timeout(REDIS_CONNECT_TIMEOUT, self.inner.client.get_async_pubsub()).await;
        self.settle(made)
    }

    /// Whether Redis answers a `PING` now; the reason when it does not.
    pub async fn ping(&self) -> Result<(), String> {
        match self.query::<String>(&redis::cmd("PING")).await {
            Ok(_) => Ok(()),
            Err(_) => Err(self.reason()),
        }
    }

    /// Why Redis is unreachable, as the last failed exchange said.
    fn reason(&self) -> String {
        self.inner.reason.lock().unwrap_or_else(|p| p.into_inner()).clone()
    }

    /// Pings Redis every [`REDIS_WATCH_EVERY`] for as long as the process runs, keeping
    /// `toolgate_redis_up` current (and the connection made again once Redis is back).
    pub fn watch(&self) {
        let shared = self.clone();
        tokio::spawn(async move {
            let mut every = tokio::time::interval(REDIS_WATCH_EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                every.tick().await;
                let _ = shared.ping().await;
            }
        });
    }

    /// The answer of one exchange, with the state it shows recorded: Redis is up, or
    /// down for a reason (said on stderr when it changes).
    fn settle<T>(&self, answer: Result<redis::RedisResult<T>, tokio::time::error::Elapsed>) -> Result<T, Error> {
        let failure = match answer {
            Ok(Ok(value)) => {
                match self.inner.state.swap(UP, Ordering::Relaxed) {
                    DOWN => tracing::warn!(
                        "shared state: Redis at {} answers again; requests that need it are served",
                        self.shown()
                    ),
                    UNKNOWN => tracing::info!("shared state: Redis at {} answers", self.shown()),
                    _ => {}
                }
                crate::metrics::get().redis_up(true);
                return Ok(value);
            }
            Ok(Err(e)) => e.to_string(),
            Err(_) => format!(
                "no answer within {} ms",
                (REDIS_CONNECT_TIMEOUT + REDIS_RESPONSE_TIMEOUT).as_millis()
            ),
        };
        crate::metrics::get().redis_error();
        crate::metrics::get().redis_up(false);
        *self.inner.reason.lock().unwrap_or_else(|p| p.into_inner()) = failure.clone();
        if self.inner.state.swap(DOWN, Ordering::Relaxed) != DOWN {
            tracing::error!(
                "shared state: Redis at {} is unreachable ({failure}); requests that need the fleet's shared state are refused with SHARED_STATE_UNAVAILABLE (retryable) until it is back",
                self.shown()
            );
        }
        Err(Error::SharedUnavailable {
            redis: self.shown().to_owned(),
            reason: failure,
        })
    }
}
