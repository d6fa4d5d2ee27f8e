//! A fleet's replica passes a session's notifications to the replica holding the
//! session's standalone SSE stream (its GET), and sends on that stream the ones passed
//! to it (`shared::notes` carries them in Redis).
//!
//! rmcp sends a notification that belongs to no request — a tool's log message, a
//! subscribed resource's update — on the session's standalone stream, which it holds in
//! memory: on a replica where the client has no GET open it would reach no one. Each
//! session's transport here ([`Relayed`]) looks at what rmcp's handler sends: such a
//! notification, while no standalone stream of the session is open on this replica,
//! goes to the replica that holds one, which sends it through the session's own rmcp
//! worker there, so it is kept in the event store (resumable) and ordered with that
//! replica's own messages. With no replica holding one, it is sent here as before.
//!
//! A request this replica sends the client (sampling, elicitation, roots) rides the
//! stream of the call that asked; the client may post its answer to any replica. Its id
//! names this replica (`<replica>.<n>`), so the replica receiving the answer passes it
//! here ([`Relay::sender_elsewhere`], [`Relay::answer_elsewhere`]), where it is read back
//! as rmcp numbered it and handed to the session's service.
//!
//! What stays where it is: progress (on the stream of the request that carried its
//! token, on the replica serving that request), answers, requests to the client, and
//! `list_changed` — each replica watches its catalogue and upstreams and tells the
//! sessions it holds on their standalone streams there, so passing it on would send it
//! twice. Without `TOOLGATE_REDIS` nothing here runs: [`Relayed`] is rmcp's transport.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, Weak};

use futures::future::Either;
use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, RequestId, ServerJsonRpcMessage, ServerNotification};
use rmcp::transport::streamable_http_server::session::SessionId;
use rmcp::transport::streamable_http_server::session::local::LocalSessionWorker;
use rmcp::transport::{Transport, WorkerTransport};
use tokio::sync::mpsc;

use crate::limits::REDIS_NOTES_QUEUE;
use crate::shared::Shared;
use crate::shared::notes::{Notes, Parcel};

/// The sessions of this replica, as notifications across the fleet reach them.
#[derive(Debug)]
pub(super) struct Relay {
    notes: Notes,
    sessions: Mutex<HashMap<SessionId, Local>>,
}

/// A session as this replica holds it.
#[derive(Debug)]
struct Local {
    /// Into its rmcp worker: messages to send to its client.
    inbox: mpsc::Sender<ServerJsonRpcMessage>,
    /// Into its rmcp service: the client's answers to requests this replica sent, which
    /// the client posted to another replica.
    answers: mpsc::Sender<ClientJsonRpcMessage>,
    /// Its standalone streams open here.
    streams: usize,
}

impl Relay {
    /// The relay of the replica whose fleet's Redis is `shared`, receiving what other
    /// replicas pass to it from now on.
    pub(super) fn start(shared: Shared) -> Arc<Relay> {
        let relay = Arc::new(Relay {
            notes: Notes::new(shared),
            sessions: Mutex::default(),
        });
        let weak: Weak<Relay> = Arc::downgrade(&relay);
        relay.notes.listen(Arc::new(move |kind, id, message| {
            if let Some(relay) = weak.upgrade() {
                match kind {
                    Parcel::Note => relay.deliver(id, message),
                    Parcel::Answer => relay.answered(id, message),
                }
            }
        }));
        relay
    }

    fn sessions(&self) -> std::sync::MutexGuard<'_, HashMap<SessionId, Local>> {
        self.sessions.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    /// `transport`, rmcp's for session `id` on this replica, passing notifications on as
    /// the module says.
    pub(super) fn attach(self: &Arc<Self>, id: &SessionId, transport: WorkerTransport<LocalSessionWorker>) -> Relayed {
        let (inbox, waiting) = mpsc::channel(REDIS_NOTES_QUEUE);
        let (answers, answered) = mpsc::channel(REDIS_NOTES_QUEUE);
        self.sessions().insert(
            id.clone(),
            Local {
                inbox: inbox.clone(),
                answers,
                streams: 0,
            },
        );
        Relayed {
            inner: transport,
            fleet: Some(Fleet {
                relay: self.clone(),
                session: id.clone(),
                inbox,
                waiting,
                answered,
                sending: None,
            }),
        }
    }

    /// The client's answer (JSON) in session `id` to a request this replica sent, posted
    /// to another replica: handed to the session's rmcp service, if it lives here.
    fn answered(&self, id: &str, message: &str) {
        let Ok(message) = serde_json::from_str::<ClientJsonRpcMessage>(message) else {
            tracing::debug!("an answer passed from another replica is not one");
            return;
        };
        let answers = self.sessions().get(id).map(|local| local.answers.clone());
        if let Some(answers) = answers
            && answers.try_send(message).is_err()
        {
            tracing::debug!("an answer from another replica was dropped: session {id} has too many waiting");
        }
    }

    /// The replica that sent the request `message` answers, when it is a client's answer
    /// to another replica's request (its id names that replica, as [`Relayed`] wrote it).
    pub(super) fn sender_elsewhere(&self, message: &ClientJsonRpcMessage) -> Option<String> {
        let (replica, _) = answered_id(message).and_then(split_id)?;
        (replica != self.notes.replica()).then(|| replica.to_owned())
    }

    /// Passes the client's `message`, answering a request `replica` sent in session `id`,
    /// to that replica; dropped (said at debug level) when it cannot be.
    pub(super) async fn answer_elsewhere(&self, replica: &str, id: &str, message: &ClientJsonRpcMessage) {
        let passed = match serde_json::to_string(message) {
            Ok(text) => self.notes.answer(replica, id, &text).await.unwrap_or(false),
            Err(_) => false,
        };
        if !passed {
            tracing::debug!("session {id}: an answer for replica {replica}, which no longer listens, was dropped");
        }
    }

    /// A message another replica passed for session `id`: queued for its worker, if the
    /// session lives here (dropped when its queue is full).
    fn deliver(&self, id: &str, message: &str) {
        let message: ServerJsonRpcMessage = match serde_json::from_str(message) {
            Ok(message) => message,
            Err(e) => {
                tracing::debug!("a notification passed from another replica is not one: {e}");
                return;
            }
        };
        let inbox = self.sessions().get(id).map(|local| local.inbox.clone());
        match inbox {
            Some(inbox) => {
                if inbox.try_send(message).is_err() {
                    tracing::debug!("a notification from another replica was dropped: session {id} reads too slowly");
                }
            }
            None => tracing::debug!("a notification from another replica for session {id}, which is not here"),
        }
    }

    /// Returns true if and only if a standalone stream of session `id` is open here.
    fn holds(&self, id: &str) -> bool {
        self.sessions().get(id).is_some_and(|local| local.streams > 0)
    }

    /// A standalone stream of session `id` opened here: this replica is recorded as its
    /// holder (before the client sees the stream) until the returned guard, kept with the
    /// stream, is dropped.
    pub(super) async fn opened(self: &Arc<Self>, id: &SessionId) -> Holding {
        if let Some(local) = self.sessions().get_mut(id) {
            local.streams += 1;
        }
        if let Err(e) = self.notes.claim(id).await {
            tracing::warn!("session {id}: notifications from other replicas will not reach its stream here: {e}");
        }
        Holding {
            relay: self.clone(),
            session: id.clone(),
        }
    }
}

/// A standalone stream of a session held open on this replica.
#[derive(Debug)]
pub(super) struct Holding {
    relay: Arc<Relay>,
    session: SessionId,
}

impl Drop for Holding {
    fn drop(&mut self) {
        let last = match self.relay.sessions().get_mut(&self.session) {
            Some(local) => {
                local.streams = local.streams.saturating_sub(1);
                local.streams == 0
            }
            None => true,
        };
        if last && let Ok(runtime) = tokio::runtime::Handle::try_current() {
            let relay = self.relay.clone();
            let session = self.session.clone();
            runtime.spawn(async move {
                if let Err(e) = relay.notes.release(&session).await {
                    tracing::debug!("session {session}: its stream here closed, not recorded: {e}");
                }
            });
        }
    }
}

/// rmcp's transport of one session, passing its notifications across the fleet.
pub(super) struct Relayed {
    inner: WorkerTransport<LocalSessionWorker>,
    fleet: Option<Fleet>,
}

/// What a session's transport needs in a fleet.
struct Fleet {
    relay: Arc<Relay>,
    session: SessionId,
    inbox: mpsc::Sender<ServerJsonRpcMessage>,
    /// Messages for the worker: passed from other replicas, or not passed on after all.
    waiting: mpsc::Receiver<ServerJsonRpcMessage>,
    /// The client's answers to this replica's requests, posted to other replicas.
    answered: mpsc::Receiver<ClientJsonRpcMessage>,
    /// The one of those being handed to the worker; the next waits for it (in order, and
    /// a client reading slowly fills `waiting`, never this replica's memory).
    sending: Option<tokio::task::JoinHandle<()>>,
}

impl Drop for Fleet {
    fn drop(&mut self) {
        let mut sessions = self.relay.sessions();
        // A session restored here again since has another inbox: left alone.
        if sessions
            .get(&self.session)
            .is_some_and(|local| local.inbox.same_channel(&self.inbox))
        {
            sessions.remove(&self.session);
        }
    }
}

impl Relayed {
    /// rmcp's `transport`, passing nothing on (one process).
    pub(super) fn alone(transport: WorkerTransport<LocalSessionWorker>) -> Relayed {
        Relayed {
            inner: transport,
            fleet: None,
        }
    }
}

/// Returns true if and only if rmcp sends `message` on the standalone stream and only
/// the replica holding that stream can deliver it.
fn is_for_listener(message: &ServerJsonRpcMessage) -> bool {
    #[allow(deprecated)] // rmcp marks logging deprecated (SEP-2577); clients still use it.
    let listened = matches!(
        message,
        ServerJsonRpcMessage::Notification(n) if matches!(
            n.notification,
            ServerNotification::LoggingMessageNotification(_) | ServerNotification::ResourceUpdatedNotification(_)
        )
    );
    listened
}

/// The id of a client's answer, when `message` is one.
fn answered_id(message: &ClientJsonRpcMessage) -> Option<&RequestId> {
    match message {
        ClientJsonRpcMessage::Response(r) => Some(&r.id),
        ClientJsonRpcMessage::Error(e) => e.id.as_ref(),
        _ => None,
    }
}

/// A request id as [`Relayed`] writes it: the replica that sent it and its number there.
fn split_id(id: &RequestId) -> Option<(&str, i64)> {
    let RequestId::String(text) = id else { return None };
    let (replica, number) = text.split_once('.')?;
    let number = number.parse().ok()?;
    crate::shared::notes::is_replica(replica).then_some((replica, number))
}

/// `message` with the id of a client's answer to this replica's request (`replica`) read
/// back as rmcp numbered it.
fn renumbered(mut message: ClientJsonRpcMessage, replica: &str) -> ClientJsonRpcMessage {
    let id = match &mut message {
        ClientJsonRpcMessage::Response(r) => Some(&mut r.id),
        ClientJsonRpcMessage::Error(e) => e.id.as_mut(),
        _ => None,
    };
    if let Some(id) = id
        && let Some((from, number)) = split_id(id)
        && from == replica
    {
        *id = RequestId::Number(number);
    }
    message
}

/// What woke a session's transport: a client's message, one for the worker, or the
/// worker having taken the one before.
enum Woken {
    Client(Option<ClientJsonRpcMessage>),
    Waiting(ServerJsonRpcMessage),
    Sent,
}

impl Transport<RoleServer> for Relayed {
    type Error = <WorkerTransport<LocalSessionWorker> as Transport<RoleServer>>::Error;

    fn send(&mut self, item: ServerJsonRpcMessage) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let Some(fleet) = &self.fleet else {
            return Either::Left(self.inner.send(item));
        };
        // A request to the client names this replica in its id, so an answer posted to
        // another replica finds its way back here.
        let mut item = item;
        let named = |number: i64| RequestId::String(format!("{}.{number}", fleet.relay.notes.replica()).into());
        match &mut item {
            ServerJsonRpcMessage::Request(request) => {
                if let RequestId::Number(number) = request.id {
                    request.id = named(number);
                }
            }
            // Cancelling such a request names it as the client knows it.
            ServerJsonRpcMessage::Notification(note) => {
                if let ServerNotification::CancelledNotification(cancelled) = &mut note.notification
                    && let Some(RequestId::Number(number)) = cancelled.params.request_id
                {
                    cancelled.params.request_id = Some(named(number));
                }
            }
            _ => {}
        }
        if !is_for_listener(&item) || fleet.relay.holds(&fleet.session) {
            return Either::Left(self.inner.send(item));
        }
        let relay = fleet.relay.clone();
        let session = fleet.session.clone();
        let inbox = fleet.inbox.clone();
        Either::Right(async move {
            let passed = match serde_json::to_string(&item) {
                Ok(text) => relay.notes.pass(&session, &text).await.unwrap_or(false),
                Err(_) => false,
            };
            if !passed {
                // No other replica holds the stream: sent here (kept for a resume).
                let _ = inbox.send(item).await;
            }
            Ok(())
        })
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        let Some(fleet) = &mut self.fleet else {
            return self.inner.receive().await;
        };
        loop {
            // Every branch is cancel-safe: a message is taken only when returned, and a
            // send runs in its own task, polled here by reference.
            let woken = match &mut fleet.sending {
                Some(sending) => tokio::select! {
                    m = self.inner.receive() => Woken::Client(m),
                    Some(m) = fleet.answered.recv() => Woken::Client(Some(m)),
                    _ = sending => Woken::Sent,
                },
                None => tokio::select! {
                    m = self.inner.receive() => Woken::Client(m),
                    Some(m) = fleet.answered.recv() => Woken::Client(Some(m)),
                    Some(m) = fleet.waiting.recv() => Woken::Waiting(m),
                },
            };
            match woken {
                Woken::Client(m) => return m.map(|m| renumbered(m, fleet.relay.notes.replica())),
                Woken::Sent => fleet.sending = None,
                Woken::Waiting(message) => {
                    let send = self.inner.send(message);
                    fleet.sending = Some(tokio::spawn(async move {
                        if let Err(e) = send.await {
                            tracing::debug!("a notification passed from another replica was not sent: {e}");
                        }
                    }));
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn message(text: &str) -> ServerJsonRpcMessage {
        serde_json::from_str(text).unwrap()
    }

    #[test]
    fn only_logs_and_resource_updates_go_to_the_replica_holding_the_stream() {
        let passed = [
            r#"{"jsonrpc":"2.0","method":"notifications/message","params":{"level":"info","data":"x"}}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/resources/updated","params":{"uri":"toolgate://history"}}"#,
        ];
        for text in passed {
            assert!(is_for_listener(&message(text)), "{text}");
        }
        // Each replica sends its own list_changed (passing it on would send it twice);
        // progress rides its request's stream; answers and requests stay too.
        let kept = [
            r#"{"jsonrpc":"2.0","method":"notifications/tools/list_changed"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/resources/list_changed"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/prompts/list_changed"}"#,
            r#"{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":1,"progress":1}}"#,
            r#"{"jsonrpc":"2.0","id":4,"result":{}}"#,
            r#"{"jsonrpc":"2.0","id":5,"method":"roots/list"}"#,
        ];
        for text in kept {
            assert!(!is_for_listener(&message(text)), "{text}");
        }
    }
}
