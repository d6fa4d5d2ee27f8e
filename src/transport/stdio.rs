//! MCP over this process's stdin/stdout. stdout carries frames and nothing else.
//!
//! The frames go through [`Lines`] (toolgate's own line transport over rmcp's
//! non-blocking stdio pipes): it answers what rmcp's would drop or misnumber, and says
//! when stdin has ended. stdin ending is the client's way to end the session (MCP's
//! stdio shutdown), so calls still in flight get [`SHUTDOWN_GRACE`] to answer and are
//! then cancelled; rmcp alone would wait five seconds for them, and a JavaScript run
//! waiting on a promise that never settles would hold the process all that time.

use rmcp::ServiceExt;
use tokio_util::sync::CancellationToken;

use super::lines::Lines;
use crate::limits::{SHUTDOWN_GRACE, STDIO_ID_SEARCH_BYTES, STDIO_LINE_BYTES};
use crate::mcp::Handler;

/// Why the stdio session ended other than by the client closing stdin.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Ended {
    /// The MCP session could not start (the client's first messages were not MCP).
    #[error("MCP session failed to start: {0}")]
    NotStarted(String),
    /// The session ended with an error.
    #[error("MCP session ended with an error: {0}")]
    Failed(String),
}

/// Serves `handler` until the client closes stdin. The catalogue is built while the
/// client's `initialize` is answered, not before; the idle JavaScript workers start once
/// it is answered.
pub async fn serve(handler: Handler) -> Result<(), Ended> {
    let gateway = handler.gateway();
    let workers = gateway.clone();
    tokio::spawn(async move { gateway.prepare().await });
    let (read, write) = rmcp::transport::io::stdio_pipes();
    let ended = CancellationToken::new();
    let transport = Lines::new(read, write, STDIO_LINE_BYTES, STDIO_ID_SEARCH_BYTES, ended.clone());
    let session = CancellationToken::new();
    let service = handler
        .serve_with_ct(transport, session.clone())
        .await
        .map_err(|e| Ended::NotStarted(e.to_string()))?;
    workers.prewarm();
    let waiting = service.waiting();
    tokio::pin!(waiting);
    let finished = tokio::select! {
        finished = &mut waiting => finished,
        () = async {
            ended.cancelled().await;
            tokio::time::sleep(SHUTDOWN_GRACE).await;
        } => {
            tracing::debug!("stdin closed: cancelling the calls still in flight");
            session.cancel();
            waiting.await
        }
    };
    finished.map_err(|e| Ended::Failed(e.to_string()))?;
    Ok(())
}
