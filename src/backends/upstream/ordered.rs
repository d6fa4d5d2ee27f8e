//! An upstream connection's transport, wrapped so its progress and log notifications are
//! passed on in the order they were read: rmcp reads messages in order but handles each
//! notification on a task of its own and hands an answer over at once, so only here is
//! it known what came before what. Each such notification is queued, as it is read, for
//! one task (`relay::InFlight::pass_on`); the message still goes on to rmcp, whose
//! progress resets the call's idle timeout.

use std::borrow::Cow;
use std::future::Future;
use std::sync::Arc;

use rmcp::RoleClient;
use rmcp::model::{JsonRpcMessage, ServerNotification};
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::sync::mpsc;

use super::relay::{InFlight, Noted};
use crate::limits::UPSTREAM_NOTIFICATIONS_QUEUED;

/// `inner`, queueing every progress and log notification it reads for passing on.
pub(super) struct Ordered<T> {
    inner: T,
    in_flight: Arc<InFlight>,
    queue: mpsc::Sender<Noted>,
    server: String,
}

impl<T> Ordered<T> {
    /// Wraps `inner`, a new connection to upstream `server`, and starts the task that
    /// passes its notifications on (it ends once the connection has, and its queue is
    /// empty; what an earlier connection left queued is dropped from now on).
    pub(super) fn new(inner: T, in_flight: Arc<InFlight>, server: &str) -> Ordered<T> {
        let (queue, queued) = mpsc::channel(UPSTREAM_NOTIFICATIONS_QUEUED);
        let connection = in_flight.connected();
        tokio::spawn(in_flight.clone().pass_on(connection, server.to_owned(), queued));
        Ordered {
            inner,
            in_flight,
            queue,
            server: server.to_owned(),
        }
    }

    /// Queues what `message` asks to pass on. Never waits: `receive` must stay
    /// cancellation-safe, so a notification that finds the queue full is dropped.
    fn note(&self, message: &RxJsonRpcMessage<RoleClient>) {
        let JsonRpcMessage::Notification(n) = message else {
            return;
        };
        let noted = match &n.notification {
            ServerNotification::ProgressNotification(p) => Noted::Progress(p.params.clone()),
            // Attributed now, as it is read: by the time it is passed on, the calls in
            // flight may be others.
            ServerNotification::LoggingMessageNotification(l) => {
                Noted::Log(l.params.clone(), self.in_flight.audience())
            }
            _ => return,
        };
        let kind = noted.kind();
        match self.queue.try_send(noted) {
            Ok(()) => self.in_flight.arrived(),
            Err(e) => {
                tracing::debug!(
                    "upstream \"{}\": a notification was dropped ({e}: over {UPSTREAM_NOTIFICATIONS_QUEUED} waiting to be passed on)",
                    self.server
                );
                crate::metrics::get().upstream_dropped(kind, crate::metrics::Unpassed::QueueFull);
            }
        }
    }
}

impl<T: Transport<RoleClient>> Transport<RoleClient> for Ordered<T> {
    type Error = T::Error;

    fn name() -> Cow<'static, str> {
        T::name()
    }

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        self.inner.send(item)
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        let message = self.inner.receive().await?;
        self.note(&message);
        Some(message)
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.inner.close().await
    }
}
