//! MCP over this process's stdin/stdout. stdout carries frames and nothing else.

use rmcp::ServiceExt;

use crate::mcp::Handler;

/// Serves `handler` until the client closes stdin. The catalogue is built while the
/// client's `initialize` is answered, not before.
pub async fn serve(handler: Handler) -> Result<(), String> {
    let gateway = handler.gateway();
    tokio::spawn(async move { gateway.prepare().await });
    let service = handler
        .serve(rmcp::transport::io::stdio_pipes())
        .await
        .map_err(|e| format!("MCP session failed to start: {e}"))?;
    service
        .waiting()
        .await
        .map_err(|e| format!("MCP session ended with an error: {e}"))?;
    Ok(())
}
