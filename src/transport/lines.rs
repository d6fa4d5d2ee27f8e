//! `Lines`: newline-delimited JSON-RPC over a reader and a writer, as rmcp's own
//! `AsyncRwTransport`, with three differences: a line over the cap is answered rather
//! than dropped in silence, each line is triaged (`triage.rs`) so malformed requests are
//! answered with their `id` and the right code, and the end of input is announced on a
//! token, so the session can give calls in flight a grace and then cancel them instead
//! of waiting rmcp's fixed five seconds.
//!
//! Both halves are cancellation-safe, because rmcp polls `receive` inside a `select!`
//! and runs `send` futures concurrently: a partial line stays in the reader's buffer
//! for the next call, and every outgoing line is appended whole to one shared buffer
//! that whoever writes next drains in order, so two lines never interleave and an
//! interrupted write resumes where it stopped.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::service::{RxJsonRpcMessage, TxJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncRead, AsyncWrite, AsyncWriteExt};
use tokio::sync::Mutex;
use tokio_util::sync::CancellationToken;

use super::triage::{Triage, overlong_reply, triage};
use crate::message::{LineReader, Read};

/// The server side of MCP over a byte stream pair (stdin/stdout in production).
pub(super) struct Lines<R, W> {
    reader: LineReader<R>,
    out: Arc<Mutex<Out<W>>>,
    /// Replies written by `receive` itself, not yet handed to `out`.
    replies: Vec<u8>,
    ended: CancellationToken,
}

impl<R: AsyncRead + Unpin, W: AsyncWrite + Unpin> Lines<R, W> {
    /// Reads lines of at most `cap` bytes from `read` and writes to `write`; `ended` is
    /// cancelled when the input ends (end of file or a read error). `keep` bytes of each
    /// end of an over-long line are searched for its `id`.
    pub(super) fn new(read: R, write: W, cap: usize, keep: usize, ended: CancellationToken) -> Lines<R, W> {
        Lines {
            reader: LineReader::new(read, cap, keep),
            out: Arc::new(Mutex::new(Out {
                write: Some(write),
                buf: Vec::new(),
                at: 0,
            })),
            replies: Vec::new(),
            ended,
        }
    }

    /// Hands the pending replies to the writer and writes everything it holds.
    async fn flush_replies(&mut self) -> std::io::Result<()> {
        let mut out = self.out.lock().await;
        out.buf.append(&mut self.replies);
        out.drain().await
    }

    fn reply(&mut self, reply: &serde_json::Value) {
        self.replies.extend_from_slice(reply.to_string().as_bytes());
        self.replies.push(b'\n');
    }
}

impl<R, W> Transport<RoleServer> for Lines<R, W>
where
    R: AsyncRead + Unpin + Send,
    W: AsyncWrite + Unpin + Send + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: TxJsonRpcMessage<RoleServer>,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let out = self.out.clone();
        async move {
            let mut line = serde_json::to_vec(&item)?;
            line.push(b'\n');
            let mut out = out.lock().await;
            if out.write.is_none() {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "the transport is closed",
                ));
            }
            out.buf.extend_from_slice(&line);
            out.drain().await
        }
    }

    async fn receive(&mut self) -> Option<RxJsonRpcMessage<RoleServer>> {
        loop {
            if !self.replies.is_empty()
                && let Err(e) = self.flush_replies().await
            {
                tracing::error!("cannot write to stdout: {e}");
                self.ended.cancel();
                return None;
            }
            match self.reader.next().await {
                Read::Line(line) => match triage(&line) {
                    Triage::Message(message) => return Some(*message),
                    Triage::Reply(reply) => {
                        tracing::debug!("answered a malformed request itself: {reply}");
                        self.reply(&reply);
                    }
                    Triage::Ignore(why) => tracing::debug!("ignored an incoming line: {why}"),
                },
                Read::Overlong(over) => {
                    let reply = overlong_reply(&over, self.reader.cap());
                    tracing::warn!(
                        "discarded an incoming message of {} bytes, over the {}-byte limit of one line; answered {}",
                        over.len,
                        self.reader.cap(),
                        reply["error"]["code"]
                    );
                    self.reply(&reply);
                }
                Read::End(error) => {
                    if let Some(e) = error {
                        tracing::error!("cannot read stdin: {e}");
                    }
                    self.ended.cancel();
                    return None;
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        self.flush_replies().await?;
        let mut out = self.out.lock().await;
        if let Some(mut write) = out.write.take() {
            write.shutdown().await?;
        }
        Ok(())
    }
}

/// The outgoing side: whole lines waiting in `buf`, written from `at` on.
struct Out<W> {
    write: Option<W>,
    buf: Vec<u8>,
    at: usize,
}

impl<W: AsyncWrite + Unpin> Out<W> {
    /// Writes what `buf` holds past `at`. Each completed write moves `at`, so a drain
    /// dropped midway loses nothing and repeats nothing.
    async fn drain(&mut self) -> std::io::Result<()> {
        let Some(write) = self.write.as_mut() else {
            return Ok(());
        };
        while self.at < self.buf.len() {
            let n = write.write(&self.buf[self.at..]).await?;
            if n == 0 {
                return Err(std::io::ErrorKind::WriteZero.into());
            }
            self.at += n;
        }
        self.buf.clear();
        self.at = 0;
        write.flush().await
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

    /// A transport over in-memory pipes with a 64-byte cap; returns it, the client's
    /// writer and the client's line reader.
    type Reader = tokio::io::ReadHalf<tokio::io::DuplexStream>;
    type Writer = tokio::io::WriteHalf<tokio::io::DuplexStream>;
    type Answers = tokio::io::Lines<BufReader<Reader>>;

    fn pair() -> (Lines<Reader, Writer>, Writer, Answers, CancellationToken) {
        let (server, client) = tokio::io::duplex(1 << 16);
        let (sr, sw) = tokio::io::split(server);
        let (cr, cw) = tokio::io::split(client);
        let ended = CancellationToken::new();
        (
            Lines::new(sr, sw, 64, 32, ended.clone()),
            cw,
            BufReader::new(cr).lines(),
            ended,
        )
    }

    #[tokio::test]
    async fn an_overlong_line_is_answered_and_the_next_one_still_read() {
        let (mut t, mut client, mut answers, ended) = pair();
        let long = format!(
            r#"{{"jsonrpc":"2.0","id":3,"method":"ping","params":{{"s":"{}"}}}}"#,
            "a".repeat(200)
        );
        client
            .write_all(format!("{long}\n{{\"jsonrpc\":\"2.0\",\"id\":4,\"method\":\"ping\"}}\r\n").as_bytes())
            .await
            .unwrap();
        let next = t.receive().await.expect("the line after the long one");
        assert_eq!(serde_json::to_value(next).unwrap()["id"], 4);
        let reply: serde_json::Value = serde_json::from_str(&answers.next_line().await.unwrap().unwrap()).unwrap();
        assert_eq!(reply["id"], 3);
        assert_eq!(reply["error"]["code"], -32600);
        client.shutdown().await.unwrap();
        assert!(t.receive().await.is_none());
        assert!(ended.is_cancelled(), "the end of input is announced");
    }

    #[tokio::test]
    async fn a_line_exactly_at_the_cap_is_read() {
        let (mut t, mut client, _answers, _) = pair();
        let line = r#"{"jsonrpc":"2.0","id":1,"method":"ping"}"#;
        let padded = format!("{line}{}", " ".repeat(64 - line.len()));
        client.write_all(format!("{padded}\n").as_bytes()).await.unwrap();
        assert!(t.receive().await.is_some());
    }
}
