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
//!
//! A fleet's replica ([`Sessions::in_fleet`]) keeps each session's owner and `initialize`
//! in Redis too (`shared::sessions`): a request naming a session this replica has not seen
//! restores it here (rmcp's `SessionStore`), owned by its original owner; the cap per
//! principal counts the principal's sessions across the fleet; the global cap stays this
//! replica's (it bounds this process's memory), restored sessions included.

use std::collections::HashMap;
use std::future::Future;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::future::Either;
use futures::{Stream, StreamExt};
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, LocalSessionManagerError};
use rmcp::transport::streamable_http_server::session::{RestoreOutcome, ServerSseMessage, SessionId, SessionManager};

use super::relay::{Relay, Relayed};
use crate::access::Principal;
use crate::error::Error;
use crate::shared::sessions::{Ledger, Seen};

tokio::task_local! {
    static ADMISSION: Admission;
}

/// Who is asking, for the request being served, and what the manager refused it.
#[derive(Debug, Clone)]
pub(super) struct Admission {
    principal: Option<Principal>,
    refused: Arc<Mutex<Option<Refusal>>>,
}

/// Why a session was not made (or restored).
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Refusal {
    /// The server holds this many sessions.
    Global(usize),
    /// The principal holds this many sessions.
    Principal(usize),
    /// The fleet's Redis cannot say (`SHARED_STATE_UNAVAILABLE`): why.
    Shared(String),
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
        self.refused
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .clone()
    }

    /// Records that the manager refused the request `refusal`.
    fn refuse(&self, refusal: Refusal) {
        *self.refused.lock().unwrap_or_else(std::sync::PoisonError::into_inner) = Some(refusal);
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
    /// A fleet's sessions in Redis, for a replica.
    fleet: Option<Arc<Ledger>>,
    /// A fleet's notifications passed between replicas (`relay.rs`), for a replica.
    relay: Option<Arc<Relay>>,
    /// How long a request's stream stays open while its call runs (`polling.rs`).
    poll: Option<Duration>,
}

/// Who owns a session named in a request, as far as this replica can tell.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Owner {
    /// This principal (its id); in a fleet, with the rank of the least severe log
    /// message the session asked for, when it asked (`logging/setLevel` on any replica).
    Principal(Arc<str>, Option<u8>),
    /// Not recorded here: rmcp answers for the session (404 when it does not know it).
    Unrecorded,
    /// The fleet holds no such session (never made, deleted or expired).
    Gone,
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
            fleet: None,
            relay: None,
            poll: None,
        }
    }

    /// These sessions closing a request's stream after `poll` while its call runs, for
    /// the client to resume (`polling.rs`); `None`: streams stay open until the answer.
    pub(super) fn polling(self, poll: Option<Duration>) -> Sessions {
        Sessions { poll, ..self }
    }

    /// These sessions kept in the fleet's Redis too (`ledger`), as the module says, their
    /// notifications passed to the replica holding each one's standalone stream (`relay`).
    pub(super) fn in_fleet(self, ledger: Arc<Ledger>, relay: Arc<Relay>) -> Sessions {
        Sessions {
            fleet: Some(ledger),
            relay: Some(relay),
            ..self
        }
    }

    /// rmcp's `transport` of session `id`, as this process relays it.
    fn relayed(&self, id: &SessionId, transport: <LocalSessionManager as SessionManager>::Transport) -> Relayed {
        match &self.relay {
            Some(relay) => relay.attach(id, transport),
            None => Relayed::alone(transport),
        }
    }

    fn held(&self) -> std::sync::MutexGuard<'_, Held> {
        self.held.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// The id of the principal that owns session `id`, while it lives here.
    fn local_owner(&self, id: &str) -> Option<Arc<str>> {
        self.held().owners.get(id).map(|(principal, _)| principal.clone())
    }

    /// Who owns session `id`, which a request names. A replica asks the fleet, which
    /// renews the session (it is being used) — unless the access layer did as it admitted
    /// the request (`seen`); a session the fleet no longer holds is ended here too, if
    /// this replica still has it. `SHARED_STATE_UNAVAILABLE` when the fleet's Redis
    /// cannot say.
    pub(super) async fn owner(&self, id: &str, seen: Option<&Seen>) -> Result<Owner, Error> {
        let Some(ledger) = &self.fleet else {
            return Ok(self
                .local_owner(id)
                .map_or(Owner::Unrecorded, |owner| Owner::Principal(owner, None)));
        };
        let touched = match seen {
            Some(seen) if seen.id == id => seen.touched.clone(),
            _ => ledger.touch(id).await?,
        };
        match touched {
            Some(found) => Ok(Owner::Principal(Arc::from(found.owner), found.level)),
            None => {
                let id: SessionId = Arc::from(id);
                if self.inner.has_session(&id).await.unwrap_or(false) {
                    tracing::debug!("session {id} ended elsewhere in the fleet; ended here too");
                    let _ = self.close_session(&id).await;
                }
                Ok(Owner::Gone)
            }
        }
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
    type Transport = Relayed;

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
            } else if self.fleet.is_none() && of_holder >= self.per_principal {
                Some(Refusal::Principal(self.per_principal))
            } else {
                held.making += 1;
                *held.by_holder.entry(holder.clone()).or_default() += 1;
                None
            }
        };
        if let Some(refusal) = refusal {
            if let Some(admission) = &admission {
                admission.refuse(refusal);
            }
            return Err(SessionsError::Refused);
        }
        let made = self.inner.create_session().await;
        // A replica counts the holder's sessions across the fleet, once rmcp has named
        // this one.
        let refusal = match (&made, &self.fleet) {
            (Ok((session, _)), Some(ledger)) => match ledger.admit(session, &id, &holder, self.per_principal).await {
                Ok(true) => None,
                Ok(false) => Some(Refusal::Principal(self.per_principal)),
                Err(e) => Some(Refusal::Shared(e.to_string())),
            },
            _ => None,
        };
        if let (Some(refusal), Ok((session, _))) = (refusal, &made) {
            let _ = self.inner.close_session(session).await;
            let mut held = self.held();
            held.making -= 1;
            release(&mut held, &holder);
            drop(held);
            if let Some(admission) = &admission {
                admission.refuse(refusal);
            }
            return Err(SessionsError::Refused);
        }
        let mut held = self.held();
        held.making -= 1;
        match made {
            Ok((session, transport)) => {
                held.owners.insert(session.clone(), (id, holder));
                drop(held);
                let transport = self.relayed(&session, transport);
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
        match self.poll {
            Some(poll) => Ok(Either::Left(
                super::polling::polled(&self.inner, id, message, poll).await?,
            )),
            None => Ok(Either::Right(self.inner.create_stream(id, message).await?)),
        }
    }

    async fn accept_message(&self, id: &SessionId, message: ClientJsonRpcMessage) -> Result<(), Self::Error> {
        // A fleet's client answering a request another replica sent: passed there.
        if let Some(relay) = &self.relay
            && let Some(replica) = relay.sender_elsewhere(&message)
        {
            relay.answer_elsewhere(&replica, id, &message).await;
            return Ok(());
        }
        Ok(self.inner.accept_message(id, message).await?)
    }

    async fn create_standalone_stream(
        &self,
        id: &SessionId,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        let stream = self.inner.create_standalone_stream(id).await?;
        // A fleet's replica holds the session's stream while it is open (`relay.rs`).
        let holding = match &self.relay {
            Some(relay) => Some(relay.opened(id).await),
            None => None,
        };
        Ok(stream.map(move |event| {
            let _held = &holding;
            event
        }))
    }

    async fn resume(
        &self,
        id: &SessionId,
        last_event_id: String,
    ) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, Self::Error> {
        // A fleet's standalone stream resumed (its GET broke, or its replica died): the
        // events kept after the id, then the stream live again, here.
        let standalone = self.relay.is_some() && crate::shared::events::is_standalone(&last_event_id);
        let replay = self.inner.resume(id, last_event_id).await?;
        if standalone {
            let live = self.create_standalone_stream(id).await?;
            return Ok(Either::Left(replay.chain(live)));
        }
        Ok(Either::Right(replay))
    }

    /// A fleet's session this replica has not seen, made here again for the request
    /// naming it (whose principal the HTTP layer checked is its owner), within this
    /// replica's global cap.
    async fn restore_session(&self, id: SessionId) -> Result<RestoreOutcome<Self::Transport>, Self::Error> {
        let admission = ADMISSION.try_with(Clone::clone).ok();
        let principal = admission.as_ref().and_then(|a| a.principal.as_ref());
        let owner: Arc<str> = principal.map_or_else(|| Arc::from("anonymous"), |p| p.id.clone());
        let holder: Arc<str> = Arc::from(principal.map_or_else(|| "anonymous".to_owned(), Principal::share));
        {
            let mut held = self.held();
            if held.owners.len() + held.making >= self.max {
                drop(held);
                if let Some(admission) = &admission {
                    admission.refuse(Refusal::Global(self.max));
                }
                return Err(SessionsError::Refused);
            }
            held.making += 1;
            *held.by_holder.entry(holder.clone()).or_default() += 1;
        }
        let restored = self.inner.restore_session(id.clone()).await;
        let mut held = self.held();
        held.making -= 1;
        match restored {
            Ok(RestoreOutcome::Restored(transport)) => {
                held.owners.insert(id.clone(), (owner, holder));
                drop(held);
                Ok(RestoreOutcome::Restored(self.relayed(&id, transport)))
            }
            Ok(other) => {
                release(&mut held, &holder);
                Ok(match other {
                    RestoreOutcome::AlreadyPresent => RestoreOutcome::AlreadyPresent,
                    // Not supported by the manager, as every outcome rmcp may add.
                    _ => RestoreOutcome::NotSupported,
                })
            }
            Err(e) => {
                release(&mut held, &holder);
                Err(e.into())
            }
        }
    }
}
