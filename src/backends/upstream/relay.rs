//! What an upstream sends toolgate as its client, passed on to the client whose call
//! caused it: progress, log messages, and the requests a server may make of its client
//! (sampling, elicitation, roots). A request is refused with an error naming the missing
//! capability when that client did not declare it, or when it cannot be attributed.
//!
//! Progress names its call (the token rmcp gave the call's request), so it goes to the
//! call holding that token, or nowhere. A log message or a request names no call, so it
//! is attributed only when that is unambiguous: when every call of that upstream in
//! flight, and every call that ended within [`UPSTREAM_MESSAGE_LINGER`] before, belongs
//! to one MCP session. A message an upstream sends after its call ended (a background
//! task's late log) is then still its session's, and never the next caller's: with
//! calls of another session in flight or just ended, or with none at all, it is
//! nobody's, and it is dropped (a debug line, and `upstream_messages_dropped` in the
//! metrics) rather than shown to a session it may not belong to. A log message is
//! attributed when the connection reads it, not when it is passed on.
//!
//! The calling client is the call's back channel (`crate::backchannel`), which the MCP
//! layer sets around each call; the upstream call registers it here for as long as it
//! runs, and everything is passed on through it, under the same rules as what code
//! running in a call sends.
//!
//! rmcp marks sampling, roots and logging deprecated (SEP-2577 replaces them in protocol
//! 2026-07-28), but the servers and clients of every earlier version use them, so they
//! are relayed while they exist.
#![allow(deprecated)]

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Instant;

use rmcp::model::{
    CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult, ErrorCode, ListRootsResult,
    LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData as McpError, RoleClient};
use serde::de::DeserializeOwned;
use serde_json::Value;
use tokio::sync::{Notify, mpsc};

use crate::backchannel::{Ask, BackChannel, Note, Unanswered};
use crate::limits::{UPSTREAM_MESSAGE_LINGER, UPSTREAM_PROGRESS_SETTLE};
use crate::metrics::{Unpassed, UpstreamMessage};

/// The client of a call, as its back channel reaches it.
type Caller = Arc<dyn BackChannel>;

/// What the calls of one upstream in flight need routed: each call's caller, by the
/// order calls began, with the progress token rmcp gave its request once it is known;
/// and, per session, the caller of its call that ended last and when, for as long as a
/// message read now may still be that call's ([`UPSTREAM_MESSAGE_LINGER`]).
#[derive(Debug, Default)]
struct Routes {
    calls: BTreeMap<u64, (Option<ProgressToken>, Caller)>,
    ended: Vec<(Caller, Instant)>,
}

impl Routes {
    /// Forgets the calls that ended longer ago than a message of theirs may come.
    fn forget_old(&mut self) {
        self.ended.retain(|(_, at)| at.elapsed() < UPSTREAM_MESSAGE_LINGER);
    }

    /// The caller a message that names no call is attributed to: the latest call in
    /// flight (else the latest that just ended) when every call in flight or just ended
    /// belongs to its session; `None` when they are of several sessions, or there are none.
    /// With `in_flight`, only while some call is in flight (a request needs one to answer).
    fn attributed(&mut self, in_flight: bool) -> Option<Caller> {
        self.forget_old();
        let latest = match self.calls.values().next_back() {
            Some((_, c)) => c,
            None if in_flight => return None,
            None => self.ended.iter().max_by_key(|(_, at)| *at).map(|(c, _)| c)?,
        };
        let session = latest.session();
        let one = self.calls.values().all(|(_, c)| c.session() == session)
            && self.ended.iter().all(|(c, _)| c.session() == session);
        one.then(|| Arc::clone(latest))
    }

    /// Ends the call `order`: its caller is kept as its session's last ended call.
    fn end(&mut self, order: u64) {
        if let Some((_, caller)) = self.calls.remove(&order) {
            self.forget_old();
            self.ended.retain(|(c, _)| c.session() != caller.session());
            self.ended.push((caller, Instant::now()));
        }
    }
}

/// The calls of one upstream in flight, and how far the notifications it sent have been
/// passed on.
///
/// rmcp handles each notification on a task of its own and hands an answer to its caller
/// at once, so progress sent before an answer could reach the client after it (against
/// the spec: "progress notifications MUST stop after completion"), out of order, or —
/// once the call had ended — not at all (on a loaded machine, every tick of a call came
/// after its answer in 4 runs of 8 beside two busy loops). So progress and log messages
/// are taken as the connection reads them (`super::ordered`) and passed on by one task
/// in that order, and a call's answer waits until everything read before it has been
/// ([`Entered::settle`]).
#[derive(Debug, Default)]
pub(super) struct InFlight {
    routes: Mutex<Routes>,
    next: AtomicU64,
    /// Notifications queued for passing on, since the link was made.
    arrived: AtomicU64,
    /// Of those, how many were passed on or dropped; they are taken in order.
    handled: AtomicU64,
    /// Woken when a call learns its token or ends, and when a notification is handled.
    changed: Notify,
    /// Bumped by each new connection: tokens start over with it, so what an earlier
    /// connection sent must not reach a call of this one.
    connection: AtomicU64,
}

impl InFlight {
    /// Registers `caller` for a call about to be sent, until the guard drops.
    pub(super) fn enter(self: &Arc<Self>, caller: Caller) -> Entered {
        let order = self.next.fetch_add(1, Ordering::Relaxed);
        self.lock().calls.insert(order, (None, caller));
        Entered {
            in_flight: self.clone(),
            order,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The caller a request of the upstream acts for: the latest call in flight, when
    /// every call in flight or just ended belongs to its session (an upstream request
    /// carries no reference to the call that caused it, so otherwise it is nobody's).
    fn latest(&self) -> Option<Caller> {
        self.lock().attributed(true)
    }

    /// Where a log message read now goes: see [`Routes::attributed`].
    pub(super) fn audience(&self) -> Option<Caller> {
        self.lock().attributed(false)
    }

    /// The caller of the call in flight whose request carried `token`; while some call
    /// does not know its token yet (rmcp tells it once the request is sent, and a quick
    /// upstream's progress can come first), waits for it, at most
    /// [`UPSTREAM_PROGRESS_SETTLE`]. `None`: no call in flight has that token.
    async fn claimant(&self, token: &ProgressToken) -> Option<Caller> {
        let claimed = self.until(|| {
            let routes = self.lock();
            let mut calls = routes.calls.values();
            if let Some((_, caller)) = calls.clone().find(|(t, _)| t.as_ref() == Some(token)) {
                return Some(Some(caller.clone()));
            }
            // No call is still learning its token: nobody's.
            (!calls.any(|(t, _)| t.is_none())).then_some(None)
        });
        tokio::time::timeout(UPSTREAM_PROGRESS_SETTLE, claimed)
            .await
            .ok()
            .flatten()
    }

    /// Waits until `check` gives an answer, checking again whenever a call learns its
    /// token or ends and whenever a notification is handled.
    async fn until<T>(&self, mut check: impl FnMut() -> Option<T>) -> T {
        loop {
            let changed = self.changed.notified();
            tokio::pin!(changed);
            // Registered before checking, so a change between the check and the wait
            // still wakes it.
            changed.as_mut().enable();
            if let Some(answer) = check() {
                return answer;
            }
            changed.await;
        }
    }

    /// A new connection: returns its number, for [`InFlight::pass_on`].
    pub(super) fn connected(&self) -> u64 {
        self.connection.fetch_add(1, Ordering::AcqRel) + 1
    }

    /// A notification was queued for passing on.
    pub(super) fn arrived(&self) {
        self.arrived.fetch_add(1, Ordering::AcqRel);
    }

    /// The oldest queued notification has been passed on or dropped.
    fn handled(&self) {
        self.handled.fetch_add(1, Ordering::AcqRel);
        self.changed.notify_waiters();
    }

    /// Passes on, in the order they were queued, the notifications of connection
    /// `connection` until it ends: progress to the call that claimed its token, log
    /// messages to their audience; once a newer connection is made, they are dropped.
    /// Runs as a task of its own.
    pub(super) async fn pass_on(self: Arc<Self>, connection: u64, server: String, mut queue: mpsc::Receiver<Noted>) {
        while let Some(noted) = queue.recv().await {
            match noted {
                _ if self.connection.load(Ordering::Acquire) != connection => {
                    crate::metrics::get().upstream_dropped(noted.kind(), Unpassed::Stale);
                }
                Noted::Progress(params) => match self.claimant(&params.progress_token).await {
                    Some(caller) => forward(&caller, params).await,
                    None => dropped(
                        &server,
                        UpstreamMessage::Progress,
                        "its progress token is no call's in flight",
                    ),
                },
                Noted::Log(params, audience) => log(&server, params, audience).await,
            }
            self.handled();
        }
    }
}

/// Passes a log message of upstream `server` on to the audience it was attributed to
/// when it was read (which drops it below the level its session asked for).
async fn log(server: &str, params: LoggingMessageNotificationParam, audience: Option<Caller>) {
    match audience {
        Some(caller) => {
            let level = match serde_json::to_value(params.level) {
                Ok(Value::String(level)) => level,
                _ => return,
            };
            caller
                .note(Note::Log {
                    level,
                    logger: params.logger,
                    data: params.data,
                })
                .await;
        }
        None => dropped(
            server,
            UpstreamMessage::Log,
            "no call of one session alone was in flight or had just ended",
        ),
    }
}

/// Notes a message of upstream `server` that could not be attributed.
fn dropped(server: &str, kind: UpstreamMessage, why: &str) {
    let what = match kind {
        UpstreamMessage::Log => "log message",
        UpstreamMessage::Progress => "progress notification",
        UpstreamMessage::Request => "request",
    };
    tracing::debug!("upstream \"{server}\": a {what} was dropped: {why}");
    crate::metrics::get().upstream_dropped(kind, Unpassed::Unattributed);
}

/// A notification of an upstream to pass on.
#[derive(Debug)]
pub(super) enum Noted {
    /// Progress of a call.
    Progress(ProgressNotificationParam),
    /// A log message, with the caller it was attributed to when it was read.
    Log(LoggingMessageNotificationParam, Option<Caller>),
}

impl Noted {
    /// What it is, for the metrics.
    pub(super) fn kind(&self) -> UpstreamMessage {
        match self {
            Noted::Progress(_) => UpstreamMessage::Progress,
            Noted::Log(..) => UpstreamMessage::Log,
        }
    }
}

/// A call's registration; dropping it ends the call's routing.
#[derive(Debug)]
pub(super) struct Entered {
    in_flight: Arc<InFlight>,
    order: u64,
}

impl Entered {
    /// Notes the progress token rmcp gave the call's request.
    pub(super) fn sent(&self, token: ProgressToken) {
        if let Some(call) = self.in_flight.lock().calls.get_mut(&self.order) {
            call.0 = Some(token);
        }
        self.in_flight.changed.notify_waiters();
    }

    /// Once the call's answer has come: waits, at most [`UPSTREAM_PROGRESS_SETTLE`], until
    /// every notification read before it has been passed on, so the client gets the
    /// call's progress and logs before its answer.
    pub(super) async fn settle(&self) {
        let in_flight = &self.in_flight;
        let mark = in_flight.arrived.load(Ordering::Acquire);
        let settled = in_flight.until(|| (in_flight.handled.load(Ordering::Acquire) >= mark).then_some(()));
        if tokio::time::timeout(UPSTREAM_PROGRESS_SETTLE, settled).await.is_err() {
            tracing::debug!("an upstream call answered while its notifications were still being passed on");
        }
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        self.in_flight.lock().end(self.order);
        self.in_flight.changed.notify_waiters();
    }
}

/// Passes progress on to `caller` under its own token, when it sent one.
async fn forward(caller: &Caller, params: ProgressNotificationParam) {
    caller
        .note(Note::Progress {
            progress: params.progress,
            total: params.total,
            message: params.message,
        })
        .await;
}

/// The client handler of one upstream connection.
#[derive(Debug, Clone)]
pub(super) struct Relay {
    /// The server's name, for messages.
    pub(super) server: String,
    /// Calls in flight.
    pub(super) in_flight: Arc<InFlight>,
    /// Woken when the upstream says its tool list changed.
    pub(super) relist: Arc<Notify>,
}

impl Relay {
    fn refuse(&self, ask: Ask) -> McpError {
        McpError::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!(
                "toolgate cannot pass this {} request from upstream \"{}\" on: the client whose call caused it did not declare the {} capability, no call is in flight, or calls of several sessions are in flight or just ended (the request does not say which it belongs to)",
                ask.capability(),
                self.server,
                ask.capability()
            ),
            None,
        )
    }

    /// Asks the client of the call this request belongs to, and reads its answer.
    async fn ask<T: DeserializeOwned>(&self, ask: Ask, params: Value) -> Result<T, McpError> {
        let caller = match self.in_flight.latest() {
            Some(c) if c.declares(ask) => c,
            Some(_) => return Err(self.refuse(ask)),
            None => {
                dropped(
                    &self.server,
                    UpstreamMessage::Request,
                    "no call of one session alone was in flight",
                );
                return Err(self.refuse(ask));
            }
        };
        let answer = caller.ask(ask, params).await.map_err(|e| match e {
            Unanswered::Refused {
                code, message, data, ..
            } => McpError::new(ErrorCode(code), message, data),
            Unanswered::Undeclared(ask) => self.refuse(ask),
            other => McpError::internal_error(
                format!("relaying to the client for \"{}\" failed: {other}", self.server),
                None,
            ),
        })?;
        serde_json::from_value(answer).map_err(|e| {
            McpError::internal_error(
                format!("relaying to the client for \"{}\" failed: its answer: {e}", self.server),
                None,
            )
        })
    }
}

/// A request's params as JSON, for the back channel.
fn params(params: impl serde::Serialize) -> Value {
    serde_json::to_value(params).unwrap_or(Value::Null)
}

impl ClientHandler for Relay {
    fn get_info(&self) -> rmcp::model::ClientInfo {
        // Declared so upstreams may ask; each request is refused at run time when the
        // calling client lacks the capability.
        let capabilities = serde_json::from_value(serde_json::json!({"roots": {}, "sampling": {}, "elicitation": {}}))
            .unwrap_or_default();
        rmcp::model::ClientInfo::new(
            capabilities,
            rmcp::model::Implementation::new("toolgate", env!("CARGO_PKG_VERSION")),
        )
    }

    async fn create_message(
        &self,
        request: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, McpError> {
        self.ask(Ask::Sample, params(request)).await
    }

    async fn create_elicitation(
        &self,
        request: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        let asked = params(request);
        let mut answer: ElicitResult = self.ask(Ask::Elicit, asked.clone()).await?;
        if answer.action == rmcp::model::ElicitationAction::Accept {
            answer.content = Some(with_defaults(&asked, answer.content.take()));
        }
        Ok(answer)
    }

    async fn list_roots(&self, _context: RequestContext<RoleClient>) -> Result<ListRootsResult, McpError> {
        self.ask(Ask::Roots, Value::Null).await
    }

    // Progress and log messages are passed on by `InFlight::pass_on`, in the order the
    // connection read them (`super::ordered`), not here on a task each.

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.relist.notify_one();
    }
}

/// An accepted form's `content` with each field the person left out that the requested
/// schema gives a `default` for set to that default, as a client must (SEP-1034): the
/// server asked with defaults, and a form shown to a person starts from them, so an
/// answer relayed from a client that did not fill them in is completed here.
fn with_defaults(asked: &Value, content: Option<Value>) -> Value {
    let mut content = match content {
        Some(Value::Object(map)) => map,
        Some(other) => return other,
        None => serde_json::Map::new(),
    };
    if let Some(properties) = asked["requestedSchema"]["properties"].as_object() {
        for (name, property) in properties {
            if let Some(default) = property.get("default")
                && !content.contains_key(name)
            {
                content.insert(name.clone(), default.clone());
            }
        }
    }
    Value::Object(content)
}
