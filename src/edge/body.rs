//! Request bodies of both HTTP servers, read here before any route sees them: at most a
//! cap of bytes, within a time that grows with what arrives (a rate floor), from a byte
//! budget shared by every request in flight, and — for JSON — checked for nesting and
//! size before anything parses it ([`crate::message`]).
//!
//! hyper's header timeout does not cover bodies: a body dripped one byte every 3 s was
//! never timed out, so 8 addresses × 128 connections held every place. Here a body must
//! arrive within [`Bodies::grace`] plus one second per [`HTTP_BODY_MIN_RATE`] bytes
//! received (the rule of Apache's `mod_reqtimeout`), else 408 and the connection closes.
//! Four 15.7 MiB bodies of `{}` once peaked at 2.4 GB parsed; here each held body and its
//! parsed form (estimated from its values) draws from [`HTTP_BODIES_BYTES`], so what
//! requests in flight hold together is bounded whatever they send.

use std::sync::Arc;
use std::time::Duration;

use axum::body::{Body, Bytes};
use axum::extract::{Request, State};
use axum::http::{HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use tokio::sync::{OwnedSemaphorePermit, Semaphore};
use tokio::time::Instant;

use crate::limits::{
    HTTP_BODIES_BYTES, HTTP_BODY_MIN_RATE, HTTP_BODY_TIMEOUT, HTTP_HEAVY_BODIES, HTTP_HEAVY_BODY_BYTES,
    PARSED_VALUE_BYTES,
};
use crate::message;

/// How one server reads bodies. Cheap to clone; clones share the budget.
#[derive(Debug, Clone)]
pub struct Bodies {
    /// Bytes one body may hold.
    pub cap: usize,
    /// Time a body may take before the rate floor applies. By default,
    /// [`HTTP_BODY_TIMEOUT`].
    pub grace: Duration,
    /// Answer refusals as JSON-RPC errors (MCP) rather than the API's error body.
    pub jsonrpc: bool,
    budget: Arc<Semaphore>,
    /// Places for heavy bodies ([`HTTP_HEAVY_BODY_BYTES`]) being scanned and parsed.
    heavy: Arc<Semaphore>,
}

impl Bodies {
    /// Bodies of at most `cap` bytes, with the default grace and a budget of
    /// [`HTTP_BODIES_BYTES`].
    pub fn new(cap: usize, jsonrpc: bool) -> Bodies {
        Bodies {
            cap,
            grace: HTTP_BODY_TIMEOUT,
            jsonrpc,
            budget: Arc::new(Semaphore::new(HTTP_BODIES_BYTES)),
            heavy: Arc::new(Semaphore::new(HTTP_HEAVY_BODIES)),
        }
    }

    /// These rules with `grace` as the time before the rate floor applies.
    #[must_use]
    pub fn with_grace(mut self, grace: Duration) -> Bodies {
        self.grace = grace;
        self
    }

    /// A refusal as this server writes it.
    fn refuse(&self, status: StatusCode, code: &str, message: &str) -> Response {
        let body = if self.jsonrpc {
            serde_json::json!({"jsonrpc": "2.0", "id": null, "error": {"code": -32600, "message": format!("Invalid request: {message}")}})
        } else {
            serde_json::json!({"success": false, "error": message, "code": code, "retryable": status.is_server_error()})
        };
        let mut answer = (status, axum::Json(body)).into_response();
        // The rest of a refused body is not read: the connection cannot carry another request.
        answer
            .headers_mut()
            .insert(header::CONNECTION, HeaderValue::from_static("close"));
        if status == StatusCode::SERVICE_UNAVAILABLE {
            answer
                .headers_mut()
                .insert(header::RETRY_AFTER, HeaderValue::from(1u32));
        }
        answer
    }
}

/// The middleware: reads the body as the module says, then hands the request on with the
/// body in memory, holding its share of the budget until the answer's head is ready.
pub async fn limit(State(bodies): State<Bodies>, request: Request, next: Next) -> Response {
    let declared = request
        .headers()
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok());
    let chunked = request.headers().contains_key(header::TRANSFER_ENCODING);
    if declared.unwrap_or(0) == 0 && !chunked {
        return next.run(request).await;
    }
    if declared.is_some_and(|n| n > bodies.cap as u64) {
        let message = format!("the body is larger than the {} bytes this server reads", bodies.cap);
        return bodies.refuse(StatusCode::PAYLOAD_TOO_LARGE, "PAYLOAD_TOO_LARGE", &message);
    }
    let (parts, body) = request.into_parts();
    let (bytes, mut held) = match read(&bodies, body).await {
        Ok(read) => read,
        Err(answer) => return answer,
    };
    // A heavy body is scanned and parsed one at a time, on a heavy thread
    // ([`crate::heavy`]), so the others' requests always find a worker free: twenty
    // callers sending 100,000-value bodies once held both workers for a second at a time.
    let heavy = if bytes.len() > HTTP_HEAVY_BODY_BYTES {
        let wait = tokio::time::timeout(bodies.grace, bodies.heavy.clone().acquire_owned()).await;
        match wait {
            Ok(Ok(permit)) => Some(permit),
            _ => {
                crate::metrics::get().edge_refused("body_budget");
                return bodies.refuse(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "BUSY",
                    "this server is reading as many large request bodies as it reads at once; retry shortly",
                );
            }
        }
    } else {
        None
    };
    let json = parts
        .headers
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.to_ascii_lowercase().contains("json"));
    if json {
        // A heavy MCP body is also read for its method: only `tools/call` and responses to
        // the server's own requests carry large params, and anything else is refused here,
        // unparsed, rather than parsed and dropped on a request thread.
        let light_only = heavy.is_some() && bodies.jsonrpc;
        let checked = match heavy {
            Some(_) => {
                let text = bytes.clone();
                crate::heavy::blocking(move || check(&text, light_only))
                    .await
                    .unwrap_or_else(|_| check(&bytes, light_only))
            }
            None => check(&bytes, false),
        };
        let shape = match checked {
            Ok(shape) => shape,
            Err((status, message)) => {
                crate::metrics::get().edge_refused("body_large");
                return bodies.refuse(status, "PAYLOAD_TOO_LARGE", &message);
            }
        };
        // What parsing will hold beyond the text, reserved before it happens.
        let parsed = shape.values.saturating_mul(PARSED_VALUE_BYTES);
        match take(&bodies, parsed, Instant::now() + bodies.grace).await {
            Ok(permit) => held.push(permit),
            Err(answer) => return answer,
        }
    }
    let request = Request::from_parts(parts, Body::from(bytes));
    // A heavy body is parsed by the route on a heavy thread, which every other
    // request's thread outranks.
    let answer = match heavy {
        Some(_) => crate::heavy::run(next.run(request)).await.unwrap_or_else(|e| {
            tracing::warn!("a request with a large body stopped: {e}");
            StatusCode::INTERNAL_SERVER_ERROR.into_response()
        }),
        None => next.run(request).await,
    };
    drop(held);
    answer
}

/// The shape of a JSON body within the message limits; with `light_only`, also that it is
/// one JSON-RPC message that may be heavy: a `tools/call` request or a response.
fn check(bytes: &[u8], light_only: bool) -> Result<message::Shape, (StatusCode, String)> {
    let shape = message::scan(bytes).map_err(|e| (StatusCode::PAYLOAD_TOO_LARGE, e.to_string()))?;
    if light_only {
        heavy_allowed(bytes)?;
    }
    Ok(shape)
}

/// Whether a body past [`HTTP_HEAVY_BODY_BYTES`] is a message allowed to be that large.
/// Read with nothing kept but the method's name: unknown members are skipped unparsed.
fn heavy_allowed(bytes: &[u8]) -> Result<(), (StatusCode, String)> {
    #[derive(serde::Deserialize)]
    struct Probe<'a> {
        #[serde(borrow, default)]
        method: Option<std::borrow::Cow<'a, str>>,
        #[serde(default)]
        result: Option<serde::de::IgnoredAny>,
        #[serde(default)]
        error: Option<serde::de::IgnoredAny>,
    }
    let probe: Probe = serde_json::from_slice(bytes).map_err(|e| {
        let message = format!("the body is not one JSON-RPC message: {e}");
        (StatusCode::BAD_REQUEST, message)
    })?;
    match probe.method.as_deref() {
        Some("tools/call") => Ok(()),
        None if probe.result.is_some() || probe.error.is_some() => Ok(()),
        method => {
            let what = method.map_or_else(|| "this".to_owned(), |m| format!("a `{m}`"));
            let message = format!(
                "{what} message may be at most {} bytes: only `tools/call` requests and responses carry more",
                crate::limits::grouped(HTTP_HEAVY_BODY_BYTES as u64)
            );
            Err((StatusCode::PAYLOAD_TOO_LARGE, message))
        }
    }
}

/// The whole body within the cap, the time rule and the budget, with the permits of its
/// bytes; or the refusal.
async fn read(bodies: &Bodies, body: Body) -> Result<(Bytes, Vec<OwnedSemaphorePermit>), Response> {
    let mut body = body;
    let mut deadline = Instant::now() + bodies.grace;
    let mut data = Vec::new();
    let mut held = Vec::new();
    loop {
        let frame = match tokio::time::timeout_at(deadline, body.frame()).await {
            Err(_) => {
                let message = format!(
                    "the body arrived slower than this server reads ({} bytes a second after the first {} ms)",
                    HTTP_BODY_MIN_RATE,
                    bodies.grace.as_millis()
                );
                crate::metrics::get().edge_refused("body_slow");
                return Err(bodies.refuse(StatusCode::REQUEST_TIMEOUT, "REQUEST_TIMEOUT", &message));
            }
            Ok(None) => break,
            Ok(Some(Err(e))) => {
                let message = format!("the body could not be read: {e}");
                return Err(bodies.refuse(StatusCode::BAD_REQUEST, "BAD_REQUEST", &message));
            }
            Ok(Some(Ok(frame))) => frame,
        };
        let Ok(chunk) = frame.into_data() else { continue };
        if data.len() + chunk.len() > bodies.cap {
            let message = format!("the body is larger than the {} bytes this server reads", bodies.cap);
            crate::metrics::get().edge_refused("body_large");
            return Err(bodies.refuse(StatusCode::PAYLOAD_TOO_LARGE, "PAYLOAD_TOO_LARGE", &message));
        }
        held.push(take(bodies, chunk.len(), deadline).await?);
        data.extend_from_slice(&chunk);
        deadline += Duration::from_secs_f64(chunk.len() as f64 / HTTP_BODY_MIN_RATE as f64);
    }
    Ok((Bytes::from(data), held))
}

/// `n` bytes of the shared budget, waited for until `deadline`; a 503 when they do not
/// come, a 413 when they never could.
async fn take(bodies: &Bodies, n: usize, deadline: Instant) -> Result<OwnedSemaphorePermit, Response> {
    let too_large = "the body would hold more than this server reads at once";
    let permits = u32::try_from(n).ok().filter(|p| *p as usize <= HTTP_BODIES_BYTES);
    let refusal = match permits {
        None => (StatusCode::PAYLOAD_TOO_LARGE, too_large),
        Some(permits) => {
            let wanted = bodies.budget.clone().acquire_many_owned(permits);
            match tokio::time::timeout_at(deadline, wanted).await {
                Ok(Ok(permit)) => return Ok(permit),
                _ => (
                    StatusCode::SERVICE_UNAVAILABLE,
                    "this server is reading as many request bodies as it holds at once; retry shortly",
                ),
            }
        }
    };
    crate::metrics::get().edge_refused("body_budget");
    Err(bodies.refuse(refusal.0, "BUSY", refusal.1))
}
