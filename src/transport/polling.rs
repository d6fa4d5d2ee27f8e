//! SSE polling (SEP-1699): a request's SSE stream whose call has not answered within
//! `TOOLGATE_HTTP_SSE_POLL_MS` is closed by the server, after an event telling the client
//! to come back in [`HTTP_SSE_POLL_RETRY`]; the client resumes it with `Last-Event-ID`
//! (on any replica of a fleet, from Redis) and receives what the call sent meanwhile and
//! its answer. A long call then holds no connection open (through balancers that cut
//! idle or long ones), and a resume is exercised by every long call, not only by a
//! broken connection. Off unless set: a stream then stays open until its answer.
//!
//! rmcp's session manager hides which of a session's streams a request's is; this opens
//! it through rmcp's public session handle as the manager does, keeping that number, so
//! the stream can be closed by rmcp's own `close_sse_stream` (which keeps its events for
//! the resume).

use std::time::Duration;

use futures::{Stream, StreamExt};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_server::session::local::{LocalSessionManager, LocalSessionManagerError};
use rmcp::transport::streamable_http_server::session::{ServerSseMessage, SessionId};
use tokio_util::sync::CancellationToken;

use crate::limits::HTTP_SSE_POLL_RETRY;

/// Request `message`'s stream in session `id` of `manager`, closed after `poll` unless
/// the call answered first.
pub(super) async fn polled(
    manager: &LocalSessionManager,
    id: &SessionId,
    message: ClientJsonRpcMessage,
    poll: Duration,
) -> Result<impl Stream<Item = ServerSseMessage> + Send + Sync + 'static, LocalSessionManagerError> {
    let handle = manager
        .sessions
        .read()
        .await
        .get(id)
        .cloned()
        .ok_or_else(|| LocalSessionManagerError::SessionNotFound(id.clone()))?;
    let mut receiver = handle.establish_request_wise_channel().await?;
    let stream = receiver.http_request_id;
    handle.push_message(message, stream).await?;
    // Ends when the stream does (answered, or the client went): the timer with it.
    let answered = CancellationToken::new();
    if let Some(stream) = stream {
        let answered = answered.clone();
        tokio::spawn(async move {
            tokio::select! {
                () = answered.cancelled() => {}
                () = tokio::time::sleep(poll) => {
                    // Already answered (the stream is gone) is no failure.
                    if let Err(e) = handle.close_sse_stream(stream, Some(HTTP_SSE_POLL_RETRY)).await {
                        tracing::trace!("SSE polling: stream {stream} not closed: {e}");
                    }
                }
            }
        });
    }
    let ending = answered.drop_guard();
    Ok(
        futures::stream::poll_fn(move |cx| receiver.inner.poll_recv(cx)).map(move |event| {
            let _ending = &ending;
            event
        }),
    )
}
