//! What an upstream sends toolgate as its client, passed on to the client whose call
//! caused it: progress, log messages, and the requests a server may make of its client
//! (sampling, elicitation, roots). A request is refused with an error naming the missing
//! capability when that client did not declare it, or when no call of that client is in
//! flight. A log message goes to the client of the latest call, in flight or just ended.
//!
//! An upstream's request or log message names no call, so it is routed only when that is
//! unambiguous: when the calls in flight to that upstream all belong to one MCP session.
//! With calls of several sessions in flight (over HTTP), a request is refused and a log
//! message dropped — guessing could show one session's data to another.
//!
//! The calling client is known through [`Caller`], a task-local the MCP handler sets
//! around each call; the upstream call registers it here for as long as it runs.
//!
//! rmcp marks sampling, roots and logging deprecated (SEP-2577 replaces them in protocol
//! 2026-07-28), but the servers and clients of every earlier version use them, so they
//! are relayed while they exist.
#![allow(deprecated)]

use std::collections::{BTreeMap, VecDeque};
use std::sync::atomic::AtomicU8;
use std::sync::{Arc, Mutex, PoisonError};

use futures::future::BoxFuture;
use rmcp::model::{
    ClientCapabilities, CreateMessageRequestParams, CreateMessageResult, ElicitRequestParams, ElicitResult, ErrorCode,
    ListRootsResult, LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken,
};
use rmcp::service::{NotificationContext, RequestContext};
use rmcp::{ClientHandler, ErrorData as McpError, Peer, RoleClient, RoleServer};
use tokio::sync::Notify;

use crate::backchannel::{self, Ask, BackChannel, Note};
use crate::limits::{UPSTREAM_EARLY_PROGRESS, UPSTREAM_ENDED_ROUTES};

tokio::task_local! {
    static CALLER: Caller;
}

/// The client on whose behalf a call runs, its session, and its progress token when it
/// sent one.
#[derive(Debug, Clone)]
pub struct Caller {
    peer: Peer<RoleServer>,
    /// The MCP session (`gateway::Caller::owner`): calls of one session may share routes.
    session: u64,
    /// The least severe log rank the session wants (`gateway::Caller::log_level`).
    log_level: Arc<AtomicU8>,
    progress: Option<ProgressToken>,
}

impl Caller {
    /// The client behind `peer` in MCP session `session`, which wants log messages of
    /// rank `log_level` and above; `progress` is the token its request carried, when
    /// upstream progress should reach it (a direct call: not a batch, which reports its
    /// own progress).
    pub fn new(
        peer: Peer<RoleServer>,
        session: u64,
        log_level: Arc<AtomicU8>,
        progress: Option<ProgressToken>,
    ) -> Caller {
        Caller {
            peer,
            session,
            log_level,
            progress,
        }
    }

    /// Returns true if and only if this caller wants a log message of `level`.
    fn wants(&self, level: LoggingLevel) -> bool {
        rank(level) >= self.log_level.load(std::sync::atomic::Ordering::Relaxed)
    }

    /// Runs `fut` with this caller as the one upstream calls made inside it act for, and
    /// as the back channel of code running inside it (`crate::backchannel`).
    pub async fn scope<F: Future>(self, fut: F) -> F::Output {
        let channel: Arc<dyn BackChannel> = Arc::new(self.clone());
        CALLER.scope(self, backchannel::scope(channel, fut)).await
    }

    /// The caller of the task running now, when the handler set one.
    pub(super) fn current() -> Option<Caller> {
        CALLER.try_with(Clone::clone).ok()
    }

    fn capabilities(&self) -> ClientCapabilities {
        self.peer
            .peer_info()
            .map(|i| i.capabilities.clone())
            .unwrap_or_default()
    }
}

/// What the calls of one upstream in flight need routed: each call's caller, by the
/// order calls began, with the progress token rmcp gave its request once it is known;
/// and progress that arrived before its call's token was known (bounded).
#[derive(Debug, Default)]
struct Routes {
    calls: BTreeMap<u64, (Option<ProgressToken>, Caller)>,
    early: VecDeque<ProgressNotificationParam>,
    /// The caller of the latest call, kept after it ends: rmcp handles notifications on
    /// their own tasks, so a log message sent just before an answer can be handled after
    /// the call is over.
    last: Option<Caller>,
    /// The tokens and callers of the latest calls that ended (bounded), for the same
    /// reason: progress sent before an answer can be handled after it. On a loaded
    /// machine every tick of a call came after its answer and was dropped (the upstream
    /// progress test failed in 4 runs of 8 beside two busy loops).
    ended: VecDeque<(ProgressToken, Caller)>,
}

/// The latest call in flight, when every call in flight belongs to its session.
fn one_session(routes: &Routes) -> Option<Caller> {
    let latest = routes.calls.values().next_back().map(|(_, c)| c.clone())?;
    routes
        .calls
        .values()
        .all(|(_, c)| c.session == latest.session)
        .then_some(latest)
}

/// The calls of one upstream in flight.
#[derive(Debug, Default)]
pub(super) struct InFlight {
    routes: Mutex<Routes>,
    next: std::sync::atomic::AtomicU64,
}

impl InFlight {
    /// Registers `caller` for a call about to be sent, until the guard drops.
    pub(super) fn enter(self: &Arc<Self>, caller: Caller) -> Entered {
        let order = self.next.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        let mut routes = self.lock();
        routes.last = Some(caller.clone());
        routes.calls.insert(order, (None, caller));
        drop(routes);
        Entered {
            in_flight: self.clone(),
            order,
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The caller a request of the upstream acts for: the latest call in flight, when
    /// every call in flight belongs to one session (an upstream request carries no
    /// reference to the call that caused it, so with several sessions it is nobody's).
    fn latest(&self) -> Option<Caller> {
        let routes = self.lock();
        one_session(&routes)
    }

    /// Where a log message goes: the latest call in flight when every call in flight
    /// belongs to one session, else (none in flight) the latest that was.
    fn audience(&self) -> Option<Caller> {
        let routes = self.lock();
        if routes.calls.is_empty() {
            return routes.last.clone();
        }
        one_session(&routes)
    }

    /// Where progress with `token` goes; `None` (kept for a moment) when no call has
    /// claimed it yet.
    fn route(&self, params: ProgressNotificationParam) -> Option<(Caller, ProgressNotificationParam)> {
        let mut routes = self.lock();
        let found = routes
            .calls
            .values()
            .find(|(t, _)| t.as_ref() == Some(&params.progress_token))
            .map(|(_, c)| c.clone())
            .or_else(|| {
                // Tokens start over when the upstream restarts: while a call still waits
                // for its token, an unclaimed one may be that call's early progress.
                if routes.calls.values().any(|(t, _)| t.is_none()) {
                    return None;
                }
                routes
                    .ended
                    .iter()
                    .find(|(t, _)| *t == params.progress_token)
                    .map(|(_, c)| c.clone())
            });
        match found {
            Some(caller) => Some((caller, params)),
            None => {
                if routes.early.len() >= UPSTREAM_EARLY_PROGRESS {
                    routes.early.pop_front();
                }
                routes.early.push_back(params);
                None
            }
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
    /// Notes the progress token rmcp gave the call's request, and passes on whatever
    /// progress already came with it.
    pub(super) async fn sent(&self, token: ProgressToken) {
        let (caller, early) = {
            let mut routes = self.in_flight.lock();
            routes.ended.retain(|(t, _)| *t != token);
            let mut early = Vec::new();
            routes.early.retain(|p| {
                let mine = p.progress_token == token;
                if mine {
                    early.push(p.clone());
                }
                !mine
            });
            match routes.calls.get_mut(&self.order) {
                Some(call) => {
                    call.0 = Some(token);
                    (call.1.clone(), early)
                }
                None => return,
            }
        };
        for params in early {
            forward(&caller, params).await;
        }
    }
}

impl Drop for Entered {
    fn drop(&mut self) {
        let mut routes = self.in_flight.lock();
        if let Some((Some(token), caller)) = routes.calls.remove(&self.order) {
            if routes.ended.len() >= UPSTREAM_ENDED_ROUTES {
                routes.ended.pop_front();
            }
            routes.ended.push_back((token, caller));
        }
    }
}

/// Passes progress on to `caller` under its own token, when it sent one.
async fn forward(caller: &Caller, mut params: ProgressNotificationParam) {
    if let Some(token) = &caller.progress {
        params.progress_token = token.clone();
        if let Err(e) = caller.peer.notify_progress(params).await {
            tracing::debug!("progress not delivered: {e}");
        }
    }
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
    fn refuse(&self, what: &str) -> McpError {
        McpError::new(
            ErrorCode::METHOD_NOT_FOUND,
            format!(
                "toolgate cannot pass this {what} request from upstream \"{}\" on: the client whose call caused it did not declare the {what} capability, no call is in flight, or calls of several sessions are (the request does not say which it belongs to)",
                self.server
            ),
            None,
        )
    }

    fn caller_with(&self, what: &str, has: impl Fn(&ClientCapabilities) -> bool) -> Result<Caller, McpError> {
        match self.in_flight.latest() {
            Some(c) if has(&c.capabilities()) => Ok(c),
            _ => Err(self.refuse(what)),
        }
    }
}

fn relayed(server: &str, e: rmcp::ServiceError) -> McpError {
    match e {
        rmcp::ServiceError::McpError(e) => e,
        other => McpError::internal_error(format!("relaying to the client for \"{server}\" failed: {other}"), None),
    }
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
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, McpError> {
        let caller = self.caller_with("sampling", |c| c.sampling.is_some())?;
        caller
            .peer
            .create_message(params)
            .await
            .map_err(|e| relayed(&self.server, e))
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, McpError> {
        let caller = self.caller_with("elicitation", |c| c.elicitation.is_some())?;
        let request = rmcp::model::ServerRequest::ElicitRequest(rmcp::model::ElicitRequest::new(params));
        match caller.peer.send_request(request).await {
            Ok(rmcp::model::ClientResult::ElicitResult(result)) => Ok(result),
            Ok(_) => Err(relayed(&self.server, rmcp::ServiceError::UnexpectedResponse)),
            Err(e) => Err(relayed(&self.server, e)),
        }
    }

    async fn list_roots(&self, _context: RequestContext<RoleClient>) -> Result<ListRootsResult, McpError> {
        let caller = self.caller_with("roots", |c| c.roots.is_some())?;
        caller.peer.list_roots().await.map_err(|e| relayed(&self.server, e))
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        if let Some((caller, params)) = self.in_flight.route(params) {
            forward(&caller, params).await;
        }
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        match self.in_flight.audience() {
            // Below the level the session asked for with logging/setLevel: not sent.
            Some(caller) if !caller.wants(params.level) => {}
            Some(caller) => {
                if let Err(e) = caller.peer.notify_logging_message(params).await {
                    tracing::debug!("log message from \"{}\" not delivered: {e}", self.server);
                }
            }
            None => tracing::debug!("upstream \"{}\" logged outside a call: {:?}", self.server, params.data),
        }
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        self.relist.notify_one();
    }
}

/// The client of a call as code running inside it (a catalogue tool, a snippet) reaches
/// it: the same rules as for what upstreams send — the session's log level, progress only
/// with the call's token, requests only of a client that declared the capability.
impl BackChannel for Caller {
    fn note(&self, note: Note) -> BoxFuture<'static, ()> {
        let caller = self.clone();
        Box::pin(async move {
            let sent = match note {
                Note::Log { level, logger, data } => {
                    let Ok(level) = serde_json::from_value::<LoggingLevel>(serde_json::Value::String(level)) else {
                        return;
                    };
                    if !caller.wants(level) {
                        return;
                    }
                    let mut params = LoggingMessageNotificationParam::new(level, data);
                    params.logger = logger;
                    caller.peer.notify_logging_message(params).await
                }
                Note::Progress {
                    progress,
                    total,
                    message,
                } => {
                    let Some(token) = caller.progress.clone() else { return };
                    let mut params = ProgressNotificationParam::new(token, progress);
                    params.total = total;
                    params.message = message;
                    caller.peer.notify_progress(params).await
                }
            };
            if let Err(e) = sent {
                tracing::debug!("a note to the client was not delivered: {e}");
            }
        })
    }

    fn ask(&self, ask: Ask, params: serde_json::Value) -> BoxFuture<'static, Result<serde_json::Value, String>> {
        let caller = self.clone();
        Box::pin(async move {
            let capabilities = caller.capabilities();
            let (declared, what) = match ask {
                Ask::Sample => (capabilities.sampling.is_some(), "sampling"),
                Ask::Elicit => (capabilities.elicitation.is_some(), "elicitation"),
            };
            if !declared {
                return Err(format!(
                    "{}: the client did not declare the {what} capability, so it cannot be asked",
                    ask.method()
                ));
            }
            let invalid = |e: serde_json::Error| format!("{}: not a valid request: {e}", ask.method());
            let request = match ask {
                Ask::Sample => {
                    rmcp::model::ServerRequest::CreateMessageRequest(rmcp::model::CreateMessageRequest::new(
                        serde_json::from_value::<CreateMessageRequestParams>(params).map_err(invalid)?,
                    ))
                }
                Ask::Elicit => rmcp::model::ServerRequest::ElicitRequest(rmcp::model::ElicitRequest::new(
                    serde_json::from_value::<ElicitRequestParams>(params).map_err(invalid)?,
                )),
            };
            let result = caller
                .peer
                .send_request(request)
                .await
                .map_err(|e| format!("{}: {e}", ask.method()))?;
            serde_json::to_value(result).map_err(|e| format!("{}: the client's answer: {e}", ask.method()))
        })
    }
}

/// A log level's rank in syslog order: 0 for debug up to 7 for emergency.
pub fn rank(level: LoggingLevel) -> u8 {
    match level {
        LoggingLevel::Debug => 0,
        LoggingLevel::Info => 1,
        LoggingLevel::Notice => 2,
        LoggingLevel::Warning => 3,
        LoggingLevel::Error => 4,
        LoggingLevel::Critical => 5,
        LoggingLevel::Alert => 6,
        LoggingLevel::Emergency => 7,
    }
}
