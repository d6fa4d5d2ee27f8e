//! The client of one MCP call as the work running inside it reaches it: the back channel
//! (`crate::backchannel`) over rmcp's handle on that client. The handler makes one per
//! tool call and sets it around the call; a JavaScript run and an upstream connection
//! both reach the client through it, under one set of rules — the session's log level,
//! progress only under the call's own token, requests only of a client that declared the
//! capability.
//!
//! rmcp marks sampling, roots and logging deprecated (SEP-2577 replaces them in protocol
//! 2026-07-28), but the servers and clients of every earlier version use them, so they
//! are passed on while they exist.
#![allow(deprecated)]

use std::future::Future;
use std::sync::Arc;
use std::sync::atomic::{AtomicU8, Ordering};

use futures::future::BoxFuture;
use rmcp::model::{
    ClientCapabilities, CreateMessageRequest, CreateMessageRequestParams, ElicitRequest, ElicitRequestParams,
    LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam, ProgressToken, ServerRequest,
};
use rmcp::{Peer, RoleServer};
use serde_json::Value;

use crate::backchannel::{self, Ask, BackChannel, Note, Unanswered};

/// The client on whose behalf a call runs, its session, and its progress token when it
/// sent one.
#[derive(Debug, Clone)]
pub(super) struct Client {
    peer: Peer<RoleServer>,
    /// The MCP session (`gateway::Caller::owner`).
    session: u64,
    /// The least severe log rank the session wants (`gateway::Caller::log_level`).
    log_level: Arc<AtomicU8>,
    progress: Option<ProgressToken>,
}

impl Client {
    /// The client behind `peer` in MCP session `session`, which wants log messages of
    /// rank `log_level` and above; `progress` is the token its request carried, when
    /// progress of the work inside should reach it (a direct call: not a batch, which
    /// reports its own progress).
    pub(super) fn new(
        peer: Peer<RoleServer>,
        session: u64,
        log_level: Arc<AtomicU8>,
        progress: Option<ProgressToken>,
    ) -> Client {
        Client {
            peer,
            session,
            log_level,
            progress,
        }
    }

    /// Runs `fut` with this client as the back channel of the work inside it.
    pub(super) async fn scope<F: Future>(self, fut: F) -> F::Output {
        backchannel::scope(Arc::new(self), fut).await
    }

    fn capabilities(&self) -> ClientCapabilities {
        self.peer
            .peer_info()
            .map(|i| i.capabilities.clone())
            .unwrap_or_default()
    }
}

impl BackChannel for Client {
    fn session(&self) -> u64 {
        self.session
    }

    fn declares(&self, ask: Ask) -> bool {
        let capabilities = self.capabilities();
        match ask {
            Ask::Sample => capabilities.sampling.is_some(),
            Ask::Elicit => capabilities.elicitation.is_some(),
            Ask::Roots => capabilities.roots.is_some(),
        }
    }

    fn note(&self, note: Note) -> BoxFuture<'static, ()> {
        let client = self.clone();
        Box::pin(async move {
            let sent = match note {
                Note::Log { level, logger, data } => {
                    let Ok(level) = serde_json::from_value::<LoggingLevel>(Value::String(level)) else {
                        return;
                    };
                    // Below the level the session asked for with logging/setLevel: not sent.
                    if rank(level) < client.log_level.load(Ordering::Relaxed) {
                        return;
                    }
                    let mut params = LoggingMessageNotificationParam::new(level, data);
                    params.logger = logger;
                    client.peer.notify_logging_message(params).await
                }
                Note::Progress {
                    progress,
                    total,
                    message,
                } => {
                    let Some(token) = client.progress.clone() else { return };
                    let mut params = ProgressNotificationParam::new(token, progress);
                    params.total = total;
                    params.message = message;
                    client.peer.notify_progress(params).await
                }
            };
            if let Err(e) = sent {
                tracing::debug!("a note to the client was not delivered: {e}");
            }
        })
    }

    fn ask(&self, ask: Ask, params: Value) -> BoxFuture<'static, Result<Value, Unanswered>> {
        let client = self.clone();
        Box::pin(async move {
            if !client.declares(ask) {
                return Err(Unanswered::Undeclared(ask));
            }
            let invalid = |e: serde_json::Error| Unanswered::Invalid {
                ask,
                reason: e.to_string(),
            };
            let answered = match ask {
                Ask::Sample => {
                    let params = serde_json::from_value::<CreateMessageRequestParams>(params).map_err(invalid)?;
                    client
                        .peer
                        .send_request(ServerRequest::CreateMessageRequest(CreateMessageRequest::new(params)))
                        .await
                        .map(serde_json::to_value)
                }
                Ask::Elicit => {
                    let params = serde_json::from_value::<ElicitRequestParams>(params).map_err(invalid)?;
                    client
                        .peer
                        .send_request(ServerRequest::ElicitRequest(ElicitRequest::new(params)))
                        .await
                        .map(serde_json::to_value)
                }
                Ask::Roots => client.peer.list_roots().await.map(serde_json::to_value),
            };
            match answered {
                Ok(Ok(result)) => Ok(result),
                Ok(Err(e)) => Err(Unanswered::Lost {
                    ask,
                    reason: format!("the client's answer: {e}"),
                }),
                Err(rmcp::ServiceError::McpError(e)) => Err(Unanswered::Refused {
                    ask,
                    code: e.code.0,
                    message: e.message.into_owned(),
                    data: e.data,
                }),
                Err(other) => Err(Unanswered::Lost {
                    ask,
                    reason: other.to_string(),
                }),
            }
        })
    }
}

/// A log level's rank in syslog order: 0 for debug up to 7 for emergency.
pub(super) fn rank(level: LoggingLevel) -> u8 {
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
