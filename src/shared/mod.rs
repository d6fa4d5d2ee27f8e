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
//! Writes whose answers nobody reads (a run's record, a place given back) wait a moment
//! for the replica's next exchange and travel with it ([`Shared::later`]): a tool call's
//! record and place ride with the SSE event of its answer. Every exchange is counted
//! (`toolgate_redis_exchanges_total`).
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
use std::sync::{Arc, Mutex, OnceLock};

use redis::aio::{ConnectionManager, ConnectionManagerConfig};
use tokio::sync::Notify;

use crate::error::Error;
use crate::limits::{
    REDIS_CONNECT_TIMEOUT, REDIS_IN_FLIGHT, REDIS_LATER_MAX, REDIS_LATER_WAIT, REDIS_RESPONSE_TIMEOUT,
    REDIS_WATCH_EVERY,
};
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
    /// Writes waiting for the next exchange ([`Shared::later`]).
    later: Mutex<Later>,
    /// Woken when the first write starts waiting.
    waiting: Notify,
    /// The task that sends waiting writes no exchange carried, started on first use.
    flusher: OnceLock<()>,
    /// How the last exchange with Redis went: [`UNKNOWN`], [`UP`] or [`DOWN`].
    state: AtomicU8,
    /// Why the last exchange failed, while it is down.
    reason: Mutex<String>,
}

/// Writes waiting for the next exchange, each with what it is, and who hears when they
/// reached Redis.
#[derive(Default)]
struct Later {
    commands: Vec<(redis::Cmd, &'static str)>,
    done: Vec<tokio::sync::oneshot::Sender<()>>,
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
                later: Mutex::default(),
                waiting: Notify::new(),
                flusher: OnceLock::new(),
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
    /// Redis cannot be reached or answers with an error. Carries the writes waiting
    /// ([`Shared::later`]), as every exchange does.
    pub async fn query<T: redis::FromRedisValue>(&self, command: &redis::Cmd) -> Result<T, Error> {
        let mut answers = self.exchange(vec![command.clone()]).await?;
        self.read(answers.pop().unwrap_or(Ok(redis::Value::Nil)))
    }

    /// Sends the commands of `pipeline` in one round trip and reads their answers as `T`
    /// (every command's: none may be `ignore`d); `SHARED_STATE_UNAVAILABLE` as
    /// [`Shared::query`].
    pub async fn pipeline<T: redis::FromRedisValue>(&self, pipeline: &redis::Pipeline) -> Result<T, Error> {
        let answers = self.exchange(pipeline.cmd_iter().cloned().collect()).await?;
        let mut values = Vec::with_capacity(answers.len());
        for answer in answers {
            values.push(self.read::<redis::Value>(answer)?);
        }
        self.read(Ok(redis::Value::Array(values)))
    }

    /// Runs `script` (by its digest, loading it first when Redis does not know it yet)
    /// and reads its answer as `T`; `SHARED_STATE_UNAVAILABLE` as [`Shared::query`].
    pub async fn script<T: redis::FromRedisValue>(&self, script: &redis::ScriptInvocation<'_>) -> Result<T, Error> {
        let mut call = redis::pipe();
        call.invoke_script(script);
        let evalsha = call.cmd_iter().cloned().collect();
        let answer = self.exchange(evalsha).await?.pop().unwrap_or(Ok(redis::Value::Nil));
        if let Err(e) = &answer
            && e.kind() == redis::ErrorKind::Server(redis::ServerErrorKind::NoScript)
        {
            // Unknown to Redis (first use, or Redis restarted): loaded and run, two more
            // exchanges; the writes carried above went through already.
            let mut connection = self.inner.connection.clone();
            crate::metrics::get().redis_exchange();
            let loaded = tokio::time::timeout(
                REDIS_CONNECT_TIMEOUT + 2 * REDIS_RESPONSE_TIMEOUT,
                script.invoke_async(&mut connection),
            )
            .await;
            return self.settle(loaded);
        }
        self.read(answer)
    }

    /// Queues `commands`, writes whose answers nobody reads (`what` they are, for the
    /// line said if they fail), to travel with this replica's next exchange with Redis:
    /// a call's record and its place given back ride with the SSE event of its answer,
    /// in one round trip. Sent on their own after [`REDIS_LATER_WAIT`] if no exchange
    /// comes first. The answer hears when Redis has answered them (a write Redis
    /// refused is said on stderr and counted); it is dropped when the exchange carrying
    /// them failed. Every exchange sends the writes waiting first, so a read this replica
    /// makes later sees them. Past [`REDIS_LATER_MAX`] waiting, `commands` are dropped,
    /// said and counted as a failed write.
    pub fn later(
        &self,
        what: &'static str,
        commands: impl IntoIterator<Item = redis::Cmd>,
    ) -> tokio::sync::oneshot::Receiver<()> {
        let (done, heard) = tokio::sync::oneshot::channel();
        let first = {
            let mut later = self.inner.later.lock().unwrap_or_else(|p| p.into_inner());
            if later.commands.len() >= REDIS_LATER_MAX {
                drop(later);
                crate::metrics::get().redis_error();
                tracing::error!(
                    "shared state: {what} not written to Redis at {}: {REDIS_LATER_MAX} writes already wait for it",
                    self.shown()
                );
                return heard;
            }
            let first = later.commands.is_empty();
            later.commands.extend(commands.into_iter().map(|c| (c, what)));
            later.done.push(done);
            first
        };
        if first {
            self.inner.flusher.get_or_init(|| self.spawn_flusher());
            self.inner.waiting.notify_one();
        }
        heard
    }

    /// Sends the writes waiting [`REDIS_LATER_WAIT`] after the first of them, unless an
    /// exchange carried them meanwhile. Outside a tokio runtime (never in the server),
    /// none: the writes wait for the next exchange.
    fn spawn_flusher(&self) {
        let Ok(runtime) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let shared = self.clone();
        runtime.spawn(async move {
            loop {
                shared.inner.waiting.notified().await;
                tokio::time::sleep(REDIS_LATER_WAIT).await;
                let waiting = !shared
                    .inner
                    .later
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .commands
                    .is_empty();
                if waiting {
                    let _ = shared.exchange(Vec::new()).await;
                }
            }
        });
    }

    /// One round trip: the writes waiting ([`Shared::later`]), then `own`; the answers
    /// to `own`, each its own (an error answer is the caller's to read). Fails, with the
    /// state recorded, when Redis cannot be reached in time; the writes carried are then
    /// lost, said on stderr (a place given back then frees itself when its lease
    /// expires).
    async fn exchange(&self, own: Vec<redis::Cmd>) -> Result<Vec<redis::RedisResult<redis::Value>>, Error> {
        let Later { commands, done } = std::mem::take(&mut *self.inner.later.lock().unwrap_or_else(|p| p.into_inner()));
        if commands.is_empty() && own.is_empty() {
            return Ok(Vec::new());
        }
        let mut pipeline = redis::pipe();
        pipeline.ignore_errors();
        for (command, _) in &commands {
            pipeline.add_command(command.clone());
        }
        for command in own {
            pipeline.add_command(command);
        }
        let mut connection = self.inner.connection.clone();
        crate::metrics::get().redis_exchange();
        let answer = tokio::time::timeout(
            REDIS_CONNECT_TIMEOUT + REDIS_RESPONSE_TIMEOUT,
            pipeline.query_async::<Vec<redis::RedisResult<redis::Value>>>(&mut connection),
        )
        .await;
        let mut answers = match self.settle(answer) {
            Ok(answers) => answers,
            Err(e) => {
                if let Some((_, what)) = commands.first() {
                    tracing::error!("shared state: {what} (and what travelled with it) not written to Redis: {e}");
                }
                return Err(e);
            }
        };
        let own = answers.split_off(commands.len().min(answers.len()));
        for (answer, (_, what)) in answers.iter().zip(&commands) {
            if let Err(e) = answer {
                crate::metrics::get().redis_error();
                tracing::error!("shared state: {what} not written to Redis at {}: {e}", self.shown());
            }
        }
        for done in done {
            let _ = done.send(());
        }
        Ok(own)
    }

    /// One of an exchange's answers read as `T`: an error answer, or one that does not
    /// read as `T`, fails as an unreachable Redis does.
    fn read<T: redis::FromRedisValue>(&self, answer: redis::RedisResult<redis::Value>) -> Result<T, Error> {
        let read = answer.and_then(|value| T::from_redis_value(value).map_err(redis::RedisError::from));
        self.settle(Ok(read))
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
