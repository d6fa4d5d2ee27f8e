//! The sessions of `--http`: rmcp's in-memory session manager behind toolgate's caps and
//! owners, counted where sessions are created.
//!
//! A cap checked in front of rmcp (a POST without `Mcp-Session-Id`) was bypassed by an
//! `initialize` whose header value was not visible ASCII: rmcp read it as absent and made
//! a session (10,000 of them: 734 MB). Here [`Sessions::create_session`] is the only way a
//! session comes to be, and it admits one only within the global cap and the cap of the
//! principal asking (a key, or an anonymous client address, an IPv6 /64 as one), so one
//! client cannot fill the server. Stateless (2026-07-28) requests make no session and are
//! not counted.
//!
//! Each session belongs to the principal of its `initialize` ([`Sessions::owner`]); the
//! HTTP layer refuses any request naming it (POST, GET stream, DELETE) from anyone else.
//! The principal of the request being served reaches this manager as a task-local
//! ([`admit`]), set around each request by the HTTP layer.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};

use futures::Stream;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, LocalSessionManagerError};
use rmcp::transport::streamable_http_server::session::{RestoreOutcome, ServerSseMessage, SessionId, SessionManager};

use crate::access::Principal;

tokio::task_local! {
    static ADMISSION: Admission;
}

/// Who is asking, for the request being served, and what the manager refused it.
#[derive(Debug, Clone)]
pub(super) struct Admission {
    principal: Option<Principal>,
    refused: Arc<Mutex<Option<Refusal>>>,
}

/// Why a session was not made.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Refusal {
    /// The server holds this many sessions.
    Global(usize),
    /// The principal holds this many sessions.
    Principal(usize),
}

impl Admission {
    /// The admission of a request acting as `principal` (none over stdio).
    pub(super) fn new(principal: Option<Principal>) -> Admission {
        Admission {
            principal,
            refused: Arc::default(),
        }
    }

    /// What the manager refused while the request was served, if anything.
    pub(super) fn refused(&self) -> Option<Refusal> {
        *self.refused.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// Runs `serve` with `admission` as the request's, for the manager and the handler
/// factory to read.
pub(super) async fn admit<F: Future>(admission: Admission, serve: F) -> F::Output {
    ADMISSION.scope(admission, serve).await
}

/// The principal of the request being served, if it came through [`admit`].
pub(super) fn principal() -> Option<Principal> {
    ADMISSION.try_with(|a| a.principal.clone()).ok().flatten()
}

/// The owners and counts of live sessions.
#[derive(Debug, Default)]
struct Held {
    /// Each session's owner: its principal's id and the holder its cap counts against.
    owners: HashMap<SessionId, (Arc<str>, Arc<str>)>,
    /// Sessions per holder, and those being made (counted before rmcp names them).
    by_holder: HashMap<Arc<str>, usize>,
    making: usize,
}

/// rmcp's [`LocalSessionManager`] with a global cap, a cap per principal, and owners.
#[derive(Debug)]
pub(super) struct Sessions {
    inner: LocalSessionManager,
    max: usize,
    per_principal: usize,
    held: Mutex<Held>,
}

/// Why the manager failed: rmcp's own error, or a refusal by cap.
#[derive(Debug, thiserror::Error)]
pub(super) enum SessionsError {
    /// The in-memory manager's own failure.
    #[error(transparent)]
    Local(#[from] LocalSessionManagerError),
    /// Over a cap (the HTTP layer answers 503 from [`Admission::refused`]).
    #[error("toolgate serves no more sessions for this caller now")]
    Refused,
}

impl Sessions {
    /// `inner` admitting at most `max` sessions, and `per_principal` of one principal.
    pub(super) fn new(inner: LocalSessionManager, max: usize, per_principal: usize) -> Sessions {
        Sessions {
            inner,
            max,
            per_principal: per_principal.max(1),
            held: Mutex::default(),
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The id of the principal that owns session `id`, while it lives.
    pub(super) fn owner(&self, id: &str) -> Option<Arc<str>> {
        self.held().owners.get(id).map(|(principal, _)| principal.clone())
    }

    /// Forgets session `id` (closed, expired or failed to start).
    fn forget(&self, id: &SessionId) {
        let mut held = self.held();
        if let Some((_, holder)) = held.owners.remove(id) {
            release(&mut held, &holder);
        }
    }
}

/// One session fewer for `holder`.
fn release(held: &mut Held, holder: &Arc<str>) {
    if let Some(n) = held.by_holder.get_mut(holder) {
        *n -= 1;
        if *n == 0 {
            held.by_holder.remove(holder);
        }
    }
}

impl SessionManager for Sessions {
    type Error = SessionsError;
    type Transport = <LocalSessionManager as SessionManager>::Transport;

    async fn create_session(&self) -> Result<(SessionId, Self::Transport), Self::Error> {
        let admission = ADMISSION.try_with(Clone::clone).ok();
        let principal = admission.as_ref().and_then(|a| a.principal.as_ref());
        let id: Arc<str> = principal.map_or_else(|| Arc::from("anonymous"), |p| p.id.clone());
        let holder: Arc<str> = Arc::from(principal.map_or_else(|| "anonymous".to_owned(), Principal::share));
        let refusal = {
            let mut held = self.held();
            let of_holder = held.by_holder.get(&holder).copied().unwrap_or(0);
            if held.owners.len() + held.making >= self.max {
                Some(Refusal::Global(self.max))
            } else if of_holder >= self.per_principal {
                Some(Refusal::Principal(self.per_principal))
            } else {
                held.making += 1;
                *held.by_holder.entry(holder.clone()).or_default() += 1;
                None
            }
        };
        if let Some(refusal) = refusal {
            if let Some(admission) = &admission {
                *admission
                    .refused
                    .lock()
                    .unwrap_or_else(std::sync::PoisonError::into_inner) = Some(refusal);
            }
            return Err(SessionsError::Refused);
        }
        let made = self.inner.create_session().await;
        let mut held = self.held();
        held.making -= 1;
        match made {
            Ok((session, transport)) => {
                held.owners.insert(session.clone(), (id, holder));
                Ok((session, transport))
            }
            Err(e) => {
                release(&mut held, &holder);
                Err(e.into())
            }
        }
    }

    async fn initialize_session(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<ServerJsonRpcMessage, Self::Error> {
        Ok(self.inner.initialize_session(id, message).await?)
    }

    async fn has_session(&self, id: &SessionId) -> Result<bool, Self::Error> {
        Ok(self.inner.has_session(id).await?)
    }

    async fn close_session(&self, id: &SessionId) -> Result<(), Self::Error> {
        let closed = self.inner.close_session(id).await;
        self.forget(id);
        Ok(closed?)
    }

    async fn create_stream(
        &self,
        id: &SessionId,
        message: ClientJsonRpcMessage,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_stream(id, message).await?)
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.create_standalone_stream(id).await?)
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        Ok(self.inner.resume(id, last_event_id).await?)
    }

    async fn restore_session(&self, id: SessionId) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        Ok(self.inner.restore_session(id).await?)
    }
}
