//! An upstream server's stdio as an rmcp client transport: newline-delimited JSON-RPC on
//! the child's stdin and stdout, as rmcp's `TokioChildProcess`, except that a line over
//! [`UPSTREAM_MESSAGE_BYTES`] is never held and never dropped in silence
//! (`oversize.rs`): rmcp's transport discarded it and the call it answered hung to its
//! idle timeout.
//!
//! The reader is cancellation-safe (rmcp polls `receive` inside a `select!`): a partial
//! line stays in the buffer for the next call. The child is killed when the transport is
//! dropped (`kill_on_drop`, set by whoever built the command); `close` first closes its
//! stdin and gives it [`UPSTREAM_EXIT_GRACE`] to exit.
//!
//! The child's stderr is passed on to toolgate's, each line prefixed with the server's
//! name (`[files] ...`) and cut at [`UPSTREAM_STDERR_LINE_BYTES`] ([`pass_stderr`]).

use std::sync::Arc;

use rmcp::RoleClient;
use rmcp::model::ServerJsonRpcMessage;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
use tokio::process::{Child, ChildStderr, ChildStdin, ChildStdout};
use tokio::sync::Mutex;

use super::oversize::{Overlong, Oversize, Seen, answer, over_limit, seen};
use crate::limits::{STDIO_ID_SEARCH_BYTES, UPSTREAM_EXIT_GRACE, UPSTREAM_MESSAGE_BYTES, UPSTREAM_STDERR_LINE_BYTES};
use crate::message::{LineReader, Read};

/// The stdio of one upstream child.
pub(super) struct ChildLines {
    child: Child,
    /// Its stdout, in lines of at most [`UPSTREAM_MESSAGE_BYTES`].
    read: LineReader<ChildStdout>,
    write: Arc<Mutex<Option<ChildStdin>>>,
    server: String,
    oversize: Arc<Oversize>,
}

impl ChildLines {
    /// Takes over `child`'s stdin and stdout (both piped) as upstream `server`'s
    /// connection; what it cannot read whole is told through `oversize`.
    pub(super) fn new(mut child: Child, server: &str, oversize: Arc<Oversize>) -> std::io::Result<ChildLines> {
        let missing = |what: &str| std::io::Error::other(format!("the child's {what} is not piped"));
        let stdout = child.stdout.take().ok_or_else(|| missing("stdout"))?;
        let stdin = child.stdin.take().ok_or_else(|| missing("stdin"))?;
        Ok(ChildLines {
            child,
            read: LineReader::new(stdout, UPSTREAM_MESSAGE_BYTES, STDIO_ID_SEARCH_BYTES),
            write: Arc::new(Mutex::new(Some(stdin))),
            server: server.to_owned(),
            oversize,
        })
    }

    /// The next whole line (newline and carriage return removed), or an over-long one as
    /// it streamed past; `None` at the end of the child's output.
    async fn next(&mut self) -> Option<Result<Vec<u8>, Overlong>> {
        match self.read.next().await {
            Read::Line(line) => Some(Ok(line)),
            Read::Overlong(over) => Some(Err(over)),
            Read::End(None) => None,
            Read::End(Some(e)) => {
                tracing::debug!("upstream \"{}\": cannot read its output: {e}", self.server);
                None
            }
        }
    }
}

impl Transport<RoleClient> for ChildLines {
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleClient>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let write = self.write.clone();
        async move {
            let mut line = serde_json::to_vec(&item)?;
            line.push(b'\n');
            match write.lock().await.as_mut() {
                Some(stdin) => {
                    stdin.write_all(&line).await?;
                    stdin.flush().await
                }
                None => Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "the upstream's stdin is closed",
                )),
            }
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleClient>> {
        loop {
            match self.next().await? {
                Ok(line) => match serde_json::from_slice::<ServerJsonRpcMessage>(&line) {
                    Ok(message) => return Some(message),
                    // As rmcp does: a line that is not a message is ignored.
                    Err(e) => tracing::debug!("upstream \"{}\": ignored a line: {e}", self.server),
                },
                Err(over) => match seen(&over) {
                    Seen::Answer(id) => {
                        self.oversize.note_call(&id, over_limit(over.len));
                        tracing::warn!(
                            "upstream \"{}\": an answer of {} bytes is over the limit of {UPSTREAM_MESSAGE_BYTES} bytes; its call fails",
                            self.server,
                            over.len
                        );
                        return Some(ServerJsonRpcMessage::error(answer(&over), Some(id)));
                    }
                    Seen::Message => tracing::warn!(
                        "upstream \"{}\": a message of {} bytes is over the limit of {UPSTREAM_MESSAGE_BYTES} bytes; it was dropped",
                        self.server,
                        over.len
                    ),
                    Seen::Unknown => {
                        let why = format!(
                            "it sent a message whose request id does not show ({})",
                            over_limit(over.len)
                        );
                        tracing::warn!("upstream \"{}\": {why}; the connection is ended", self.server);
                        self.oversize.note_connection(why);
                        return None;
                    }
                },
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        // Its stdin closed, a server ends by itself; one that does not is killed.
        drop(self.write.lock().await.take());
        if tokio::time::timeout(UPSTREAM_EXIT_GRACE, self.child.wait())
            .await
            .is_err()
        {
            self.child.kill().await?;
        }
        Ok(())
    }
}

/// Copies upstream `server`'s `stderr` to toolgate's stderr until the child closes it:
/// each line as `[server] line`, at most [`UPSTREAM_STDERR_LINE_BYTES`] of it (a longer
/// line is cut, ending ` …`, and the rest skipped unread into memory).
pub(super) async fn pass_stderr(stderr: ChildStderr, server: String) {
    let mut read = BufReader::new(stderr);
    let mut line = Vec::new();
    let mut cut = false;
    loop {
        let available = match read.fill_buf().await {
            Ok([]) | Err(_) => break,
            Ok(available) => available,
        };
        let newline = available.iter().position(|b| *b == b'\n');
        let content = &available[..newline.unwrap_or(available.len())];
        let room = UPSTREAM_STDERR_LINE_BYTES.saturating_sub(line.len());
        if content.len() > room {
            line.extend_from_slice(&content[..room]);
            cut = true;
        } else {
            line.extend_from_slice(content);
        }
        let taken = newline.map_or(available.len(), |i| i + 1);
        read.consume(taken);
        if newline.is_some() {
            write_line(&server, &line, cut);
            line.clear();
            cut = false;
        }
    }
    if !line.is_empty() {
        write_line(&server, &line, cut);
    }
}

/// One line of an upstream's stderr on toolgate's, prefixed with the server's name.
fn write_line(server: &str, line: &[u8], cut: bool) {
    use std::io::Write as _;
    let text = String::from_utf8_lossy(line);
    let text = text.strip_suffix('\r').unwrap_or(&text);
    let more = if cut { " …" } else { "" };
    let _ = writeln!(std::io::stderr().lock(), "[{server}] {text}{more}");
}
