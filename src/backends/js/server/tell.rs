//! One run's notes (log messages, progress) on their way to the MCP client of its call:
//! in the order the script sent them, without holding the run up, and at most
//! [`CLIENT_NOTES_PER_RUN`] of them whatever the worker claims.

use std::sync::Arc;

use tokio::sync::mpsc;
use tokio::task::JoinHandle;

use crate::backchannel::{BackChannel, Note};
use crate::limits::{CLIENT_NOTE_QUEUE, CLIENT_NOTES_DRAIN, CLIENT_NOTES_PER_RUN};

/// The notes of one run.
pub(super) struct Notes {
    channel: Option<Arc<dyn BackChannel>>,
    /// The queue to the task that sends them, once the run has sent one.
    queue: Option<(mpsc::Sender<Note>, JoinHandle<()>)>,
    sent: usize,
}

impl Notes {
    /// Notes to `channel` (none go anywhere without one: the run is not an MCP call).
    pub(super) fn new(channel: Option<Arc<dyn BackChannel>>) -> Notes {
        Notes {
            channel,
            queue: None,
            sent: 0,
        }
    }

    /// Queues `note`; dropped beyond the run's share or when the queue is full.
    pub(super) fn send(&mut self, note: Note) {
        let Some(channel) = &self.channel else { return };
        if self.sent >= CLIENT_NOTES_PER_RUN {
            return;
        }
        self.sent += 1;
        let (queue, _) = self.queue.get_or_insert_with(|| {
            let (tx, mut rx) = mpsc::channel::<Note>(CLIENT_NOTE_QUEUE);
            let channel = channel.clone();
            let task = tokio::spawn(async move {
                while let Some(note) = rx.recv().await {
                    channel.note(note).await;
                }
            });
            (tx, task)
        });
        if queue.try_send(note).is_err() {
            tracing::debug!("a note to the MCP client was dropped: the client reads slower than the run writes");
        }
    }

    /// Waits (at most [`CLIENT_NOTES_DRAIN`]) for the queued notes to be sent, so they
    /// reach the client before the run's answer.
    pub(super) async fn finish(self) {
        if let Some((queue, task)) = self.queue {
            drop(queue);
            let _ = tokio::time::timeout(CLIENT_NOTES_DRAIN, task).await;
        }
    }
}
