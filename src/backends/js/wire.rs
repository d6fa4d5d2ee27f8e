//! The pipe between the server and a JavaScript worker process: what each side says, and
//! how a message is framed.
//!
//! A frame is two little-endian `u32` lengths — a JSON header, then raw bytes (a `fetch`
//! body, so bodies are never base64'd) — followed by both. Each side refuses a frame whose
//! lengths pass [`WORKER_HEADER_BYTES`] or the body cap before reading it, so a worker
//! that went wrong cannot make the server allocate without bound (nor the reverse).

use std::io::{self, Write};
use std::time::Duration;

use serde::{Deserialize, Serialize};
use tokio::io::{AsyncRead, AsyncReadExt};

use super::output::Captured;
use crate::backchannel::{Ask, Note};
use crate::error::Error;
use crate::limits::WORKER_HEADER_BYTES;
use std::os::fd::RawFd;

/// What a worker is asked to run.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(super) enum Job {
    /// A catalogue tool: a script defining `run(params)`.
    Tool {
        /// The script's name in stack traces.
        filename: String,
        /// Its source.
        code: String,
        /// The validated params, as JSON text.
        params: String,
        /// Types are erased first.
        typescript: bool,
    },
    /// A snippet run as the body of an async function.
    Snippet {
        /// Its source.
        code: String,
        /// Types are erased first.
        typescript: bool,
    },
}

/// Why the server stopped a run before it answered (sent on the control pipe, not as a
/// frame: see `worker.rs`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub(super) enum Stop {
    /// Its deadline passed.
    Deadline,
    /// Its caller cancelled it.
    Cancelled,
}

/// The server's side of the conversation.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub(super) enum ToWorker {
    /// The first frame: the limits every run of this worker has.
    Setup {
        /// The limits.
        limits: JsLimits,
        /// Bytes a `fetch` body may hold (request or response).
        body_limit: usize,
    },
    /// Run `job`, numbered `run`, within `deadline` from now.
    Run {
        /// The run's number (unique per worker), repeated in every frame about it.
        run: u64,
        /// What to run.
        job: Job,
        /// Time left before its deadline.
        deadline: Duration,
    },
    /// The answer to an `Ask`: the client's result, or why there is none.
    Answered {
        /// The run that asked.
        run: u64,
        /// The request's id within the run.
        id: u32,
        /// The result (the MCP result as JSON), or the failure the script sees.
        reply: Result<serde_json::Value, Failure>,
    },
    /// The answer to a `tools` request: `Ok` with the value's JSON text as the frame's
    /// body (so it is held to the body cap, and lands in the run's heap), or why not.
    Called {
        /// The run that asked.
        run: u64,
        /// The request's id within the run.
        id: u32,
        /// Success (the body is the value), or the failure the script sees.
        reply: Result<(), Failure>,
    },
    /// The answer to a `fetch`; the response body is the frame's body.
    Fetched {
        /// The run that asked.
        run: u64,
        /// The request's id within the run.
        id: u32,
        /// The response head, or why there is none.
        reply: Result<Head, Failure>,
    },
}

/// The worker's side of the conversation.
#[derive(Debug, Serialize, Deserialize)]
#[serde(tag = "t", rename_all = "snake_case")]
pub(super) enum FromWorker {
    /// A `fetch` the script made; the request body (if any) is the frame's body.
    Fetch {
        /// The run making it.
        run: u64,
        /// Its id within the run (the one `abort` names).
        id: u32,
        /// The request.
        request: Request,
    },
    /// A note to the MCP client of the run's call (no answer).
    Note {
        /// The run.
        run: u64,
        /// The note.
        note: Note,
    },
    /// A request of the MCP client of the run's call, answered by `Answered`.
    Ask {
        /// The run asking.
        run: u64,
        /// Its id within the run.
        id: u32,
        /// What is asked.
        ask: Ask,
        /// The MCP request's params.
        params: serde_json::Value,
    },
    /// A request of the snippet's `tools` global, answered by `Called`.
    Tools {
        /// The run asking.
        run: u64,
        /// Its id within the run.
        id: u32,
        /// What is asked.
        ask: ToolsAsk,
    },
    /// The script aborted request `id`.
    Abort {
        /// The run.
        run: u64,
        /// The request.
        id: u32,
    },
    /// Run `run` ended.
    Done {
        /// The run.
        run: u64,
        /// Its value (`None` for undefined) or the error that ended it.
        outcome: Result<Option<serde_json::Value>, Failed>,
        /// Its console output.
        captured: Captured,
    },
}

/// A request as the script made it, checked by the server.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Request {
    /// The URL, as written.
    pub url: String,
    /// The method.
    pub method: String,
    /// `[[name, value], …]` as JSON text.
    pub headers: String,
    /// `follow`, `manual` or `error`.
    pub redirect: String,
    /// Whether the frame's body is the request's body (an empty body is still a body).
    pub has_body: bool,
}

/// A response head; its body travels beside it.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Head {
    /// The status code.
    pub status: u16,
    /// Its reason phrase.
    pub status_text: String,
    /// The final URL.
    pub url: String,
    /// Whether a redirect was followed.
    pub redirected: bool,
    /// `[name, value]` pairs in order.
    pub headers: Vec<Vec<String>>,
}

/// Why a request of the script failed, as the script sees it: the error's name and
/// message, and for a tool called from code (`tools`), toolgate's error code and whether
/// a retry may succeed.
#[derive(Debug, Clone, Serialize, Deserialize)]
pub(super) struct Failure {
    /// `TypeError`, `TimeoutError`, `AbortError`, `McpError` or `ToolError`.
    pub name: String,
    /// What went wrong.
    pub message: String,
    /// toolgate's error code (`INVALID_PARAMS`, `RATE_LIMITED`, ...), for a tool call.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub code: Option<String>,
    /// Whether the same call may succeed later, for a tool call.
    #[serde(default)]
    pub retryable: bool,
}

/// What a snippet's `tools` global asks of the server.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub(super) enum ToolsAsk {
    /// `tools.call(name, params)`, or `tools.<function>(params)` when `function`.
    Call {
        /// The slug, or the function name.
        name: String,
        /// Whether `name` is a function name (the slug with `-` as `_`).
        function: bool,
        /// The params, as given.
        params: serde_json::Value,
    },
    /// `tools.search(query, {limit})`.
    Search {
        /// What to look for.
        query: String,
        /// How many results at most (the meta-tool's default when absent).
        limit: Option<usize>,
    },
}

/// The errors a run can end with, as they cross the pipe.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(tag = "code", rename_all = "snake_case")]
pub(super) enum Failed {
    /// The script threw, or did not compile.
    Execution {
        /// The message.
        message: String,
    },
    /// A deadline passed.
    Timeout {
        /// What timed out.
        what: String,
        /// After how long.
        after: Duration,
    },
    /// A resource cap was reached.
    ResourceLimit {
        /// What reached it.
        what: String,
        /// The cap, in words.
        limit: String,
    },
    /// The caller cancelled the run.
    Cancelled,
    /// Anything else.
    Internal {
        /// What happened.
        message: String,
    },
}

impl From<Error> for Failed {
    fn from(e: Error) -> Failed {
        match e {
            Error::Execution { message } => Failed::Execution { message },
            Error::Timeout { what, after } => Failed::Timeout { what, after },
            Error::ResourceLimit { what, limit } => Failed::ResourceLimit { what, limit },
            Error::Cancelled => Failed::Cancelled,
            other => Failed::Internal {
                message: other.to_string(),
            },
        }
    }
}

impl From<Failed> for Error {
    fn from(f: Failed) -> Error {
        match f {
            Failed::Execution { message } => Error::Execution { message },
            Failed::Timeout { what, after } => Error::Timeout { what, after },
            Failed::ResourceLimit { what, limit } => Error::ResourceLimit { what, limit },
            Failed::Cancelled => Error::Cancelled,
            Failed::Internal { message } => Error::Internal(message),
        }
    }
}

/// `header` and `body` as one frame.
pub(super) fn frame<T: Serialize>(header: &T, body: &[u8]) -> io::Result<Vec<u8>> {
    let json = serde_json::to_vec(header).map_err(io::Error::other)?;
    let lengths = |n: usize| u32::try_from(n).map_err(|_| io::Error::other("a frame part over 4 GiB"));
    let mut out = Vec::with_capacity(8 + json.len() + body.len());
    out.extend_from_slice(&lengths(json.len())?.to_le_bytes());
    out.extend_from_slice(&lengths(body.len())?.to_le_bytes());
    out.extend_from_slice(&json);
    out.extend_from_slice(body);
    Ok(out)
}

/// Writes one frame and flushes it.
pub(super) fn write<T: Serialize>(to: &mut impl Write, header: &T, body: &[u8]) -> io::Result<()> {
    to.write_all(&frame(header, body)?)?;
    to.flush()
}

/// The two lengths of a frame, checked against the caps.
fn lengths(prefix: [u8; 8], body_cap: usize) -> io::Result<(usize, usize)> {
    let [a, b, c, d, e, f, g, h] = prefix;
    let header = u32::from_le_bytes([a, b, c, d]) as usize;
    let body = u32::from_le_bytes([e, f, g, h]) as usize;
    if header > WORKER_HEADER_BYTES || body > body_cap {
        return Err(io::Error::new(
            io::ErrorKind::InvalidData,
            format!("a frame of {header} + {body} bytes is over the caps ({WORKER_HEADER_BYTES} + {body_cap})"),
        ));
    }
    Ok((header, body))
}

/// Frames read from a pipe. [`Frames::next`] is cancellation-safe — bytes read stay in
/// the buffer until a whole frame is there — so it can be a branch of `select!` without a
/// task of its own (a hop between threads costs more than the rest of a trivial run).
#[derive(Debug)]
pub(super) struct Frames<R> {
    from: R,
    buffer: Vec<u8>,
    body_cap: usize,
}

impl<R: AsyncRead + Unpin> Frames<R> {
    /// Frames from `from`, refusing bodies over `body_cap`.
    pub(super) fn new(from: R, body_cap: usize) -> Frames<R> {
        Frames {
            from,
            buffer: Vec::with_capacity(READ_CHUNK),
            body_cap,
        }
    }

    /// From now on, refuses bodies over `cap`.
    pub(super) fn set_body_cap(&mut self, cap: usize) {
        self.body_cap = cap;
    }

    /// The next frame, `None` at a clean end of input.
    pub(super) async fn next<T: for<'de> Deserialize<'de>>(&mut self) -> io::Result<Option<(T, Vec<u8>)>> {
        loop {
            if let Some(prefix) = self.buffer.first_chunk::<8>() {
                let (header, body) = lengths(*prefix, self.body_cap)?;
                let total = 8 + header + body;
                if self.buffer.len() >= total {
                    let message = serde_json::from_slice(&self.buffer[8..8 + header])
                        .map_err(|e| io::Error::new(io::ErrorKind::InvalidData, e))?;
                    let bytes = self.buffer[8 + header..total].to_vec();
                    self.buffer.drain(..total);
                    return Ok(Some((message, bytes)));
                }
                self.buffer.reserve(total - self.buffer.len());
            } else {
                self.buffer.reserve(READ_CHUNK);
            }
            if self.from.read_buf(&mut self.buffer).await? == 0 {
                return match self.buffer.is_empty() {
                    true => Ok(None),
                    false => Err(io::Error::new(io::ErrorKind::UnexpectedEof, "a frame was cut short")),
                };
            }
        }
    }
}

/// Bytes asked of a pipe at a time when no frame is under way.
const READ_CHUNK: usize = 16 * 1024;

impl From<&crate::limits::Limits> for JsLimits {
    fn from(limits: &crate::limits::Limits) -> JsLimits {
        JsLimits {
            heap_bytes: limits.js_heap_bytes,
            wall_clock: limits.js_wall_clock,
            output_chars: limits.output_chars,
            result_chars: limits.result_chars,
            concurrent_runs: limits.js_concurrent_runs,
            total_heap_bytes: limits.js_total_heap_bytes,
            fetch_timeout: limits.fetch_timeout,
        }
    }
}

/// The bounds of one JavaScript run.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct JsLimits {
    /// Heap cap in bytes.
    pub heap_bytes: usize,
    /// Wall-clock deadline.
    pub wall_clock: Duration,
    /// Characters kept per output stream.
    pub output_chars: usize,
    /// Characters of JSON kept of the returned value.
    pub result_chars: usize,
    /// Runs at once, across the backend.
    pub concurrent_runs: usize,
    /// Heap of all running engines together, in bytes.
    pub total_heap_bytes: usize,
    /// Deadline of one `fetch`, body included.
    pub fetch_timeout: Duration,
}

/// The first argument that makes `toolgate` a worker.
pub const WORKER_ARG: &str = "__js-worker";

/// The descriptor the server's stops arrive on: one [`STOP_BYTES`]-byte message per stop,
/// the run's number (little-endian `u64`) then why (0: deadline, 1: cancelled).
pub(crate) const CONTROL_FD: RawFd = 3;

/// The length of one stop message.
pub(crate) const STOP_BYTES: usize = 9;

/// Encodes a stop message.
pub(crate) fn stop_message(run: u64, why: Stop) -> [u8; STOP_BYTES] {
    let mut message = [0u8; STOP_BYTES];
    message[..8].copy_from_slice(&run.to_le_bytes());
    message[8] = match why {
        Stop::Deadline => 0,
        Stop::Cancelled => 1,
    };
    message
}

/// One run's result and output.
pub(crate) type Ran = (Result<Option<serde_json::Value>, Error>, Captured);

/// A complete answer: its head and its body, read within the cap.
pub(crate) type Answer = (Head, Vec<u8>);

impl Failure {
    /// A tool call's failure: a `ToolError` carrying toolgate's code and retry flag.
    pub(crate) fn tool(e: &Error) -> Failure {
        Failure {
            name: "ToolError".to_owned(),
            message: e.to_string(),
            code: Some(e.code().to_owned()),
            retryable: e.retryable(),
        }
    }

    /// A failure the script sees as a `TypeError`.
    pub(crate) fn type_error(message: String) -> Failure {
        Failure::named("TypeError", message)
    }

    /// A failure the script sees as an error named `name`.
    pub(crate) fn named(name: &str, message: String) -> Failure {
        Failure {
            name: name.to_owned(),
            message,
            code: None,
            retryable: false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn frames_read_back_as_written_even_a_byte_at_a_time_and_oversized_ones_are_refused() {
        let first = FromWorker::Abort { run: 7, id: 1 };
        let mut bytes = frame(&first, b"body").unwrap_or_default();
        bytes.extend(frame(&FromWorker::Abort { run: 8, id: 2 }, &[]).unwrap_or_default());
        let (mut writer, reader) = tokio::io::duplex(1);
        tokio::spawn(async move {
            use tokio::io::AsyncWriteExt;
            let _ = writer.write_all(&bytes).await;
        });
        let mut frames = Frames::new(reader, 16);
        let got: Option<(FromWorker, Vec<u8>)> = frames.next().await.ok().flatten();
        let Some((FromWorker::Abort { run: 7, id: 1 }, body)) = got else {
            panic!("the first frame reads back: {got:?}");
        };
        assert_eq!(body, b"body");
        let got: Option<(FromWorker, Vec<u8>)> = frames.next().await.ok().flatten();
        assert!(matches!(got, Some((FromWorker::Abort { run: 8, id: 2 }, _))), "{got:?}");
        let end: io::Result<Option<(FromWorker, Vec<u8>)>> = frames.next().await;
        assert!(matches!(end, Ok(None)));
        let big = frame(&first, b"body").unwrap_or_default();
        let mut frames = Frames::new(big.as_slice(), 3);
        let refused: io::Result<Option<(FromWorker, Vec<u8>)>> = frames.next().await;
        assert!(refused.is_err(), "a body over the cap is refused before it is read");
    }
}
