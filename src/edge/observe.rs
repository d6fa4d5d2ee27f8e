//! What both HTTP servers tell an operator about each request: a request id (answered
//! as `x-request-id`, kept in the request's extensions for the run it starts), one
//! access log line on stderr (target `toolgate_access`), request counts and latency in
//! [`crate::metrics`], and the `/metrics` route that renders them.
//!
//! The layer is the outermost of each server, so a request refused by the access layer
//! (401, 403, 429) is logged and counted too. With traces exported ([`crate::telemetry`])
//! each request is an HTTP server span (`http.request.method`, `http.route`,
//! `http.response.status_code`) continuing the client's `traceparent`, and its access
//! log line names the trace (`trace_id`).

use std::sync::Arc;
use std::time::Instant;

use axum::Router;
use axum::extract::{MatchedPath, Request};
use axum::http::{HeaderValue, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use opentelemetry::trace::TraceContextExt as _;
use tracing::Instrument;

use crate::access::Principal;
use crate::metrics::{self, RequestLabels};

/// The id of one HTTP request: in its extensions, its answer's `x-request-id`, its
/// access log line, and the history entry of the run it starts.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RequestId(pub Arc<str>);

impl RequestId {
    /// A fresh id: 16 random hex digits (a counter if the system has no randomness).
    fn new() -> RequestId {
        let mut bytes = [0u8; 8];
        if getrandom::fill(&mut bytes).is_err() {
            use std::sync::atomic::{AtomicU64, Ordering};
            static NEXT: AtomicU64 = AtomicU64::new(1);
            bytes = NEXT.fetch_add(1, Ordering::Relaxed).to_be_bytes();
        }
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        RequestId(Arc::from(hex))
    }
}

/// `/metrics`, to be merged into a server's router (the access layer decides who may
/// read it).
pub fn router() -> Router {
    Router::new().route("/metrics", get(render))
}

async fn render() -> Response {
    ([(header::CONTENT_TYPE, metrics::CONTENT_TYPE)], metrics::get().render()).into_response()
}

/// The middleware: numbers the request, answers it, then logs and counts it.
pub async fn observe(mut request: Request, next: Next) -> Response {
    let clock = Instant::now();
    let id = RequestId::new();
    let route = request
        .extensions()
        .get::<MatchedPath>()
        .map_or_else(|| "other".to_owned(), |p| p.as_str().to_owned());
    let method = metrics::method_label(request.method().as_str());
    let path = request.uri().path().to_owned();
    request.extensions_mut().insert(id.clone());
    let span = tracing::info_span!(
        target: "toolgate::http",
        "HTTP",
        otel.name = %format_args!("{method} {route}"),
        otel.kind = "server",
        http.request.method = method,
        http.route = route.as_str(),
        http.response.status_code = tracing::field::Empty,
        error.type = tracing::field::Empty,
    );
    // The trace id (sampled or not) for the log line; the latency bucket's exemplar only
    // for a trace that is exported.
    let (trace, sampled) = match crate::telemetry::root(&span, crate::telemetry::from_headers(request.headers())) {
        Some(context) => {
            let span_context = context.span().span_context().clone();
            request.extensions_mut().insert(crate::telemetry::Incoming(context));
            (Some(span_context.trace_id().to_string()), span_context.is_sampled())
        }
        None => (None, false),
    };
    let mut answer = next.run(request).instrument(span.clone()).await;
    let elapsed = clock.elapsed();
    let status = answer.status().as_u16();
    span.record("http.response.status_code", i64::from(status));
    if status >= 500 {
        span.record("error.type", status);
    }
    if let Ok(value) = HeaderValue::from_str(&id.0) {
        answer.headers_mut().insert("x-request-id", value);
    }
    let principal = answer.extensions().get::<Principal>().map(|p| p.id.clone());
    let principal = principal.as_deref().unwrap_or("-");
    // `trace_id` is written only while a trace is active (a `None` field is left out).
    tracing::info!(
        target: "toolgate_access",
        request_id = %id.0,
        method = %method,
        path = %path,
        status,
        ms = log_ms(elapsed),
        principal,
        trace_id = trace.as_deref().map(tracing::field::display),
        "request"
    );
    let labels = RequestLabels { route, method, status };
    metrics::get().request(&labels, elapsed.as_secs_f64(), trace.as_deref().filter(|_| sampled));
    answer
}
/// A duration as the access log writes it: milliseconds to the microsecond
/// (`ms=0.235`), not every digit a float holds (`ms=0.23466700000000001`).
fn log_ms(elapsed: std::time::Duration) -> f64 {
    (elapsed.as_secs_f64() * 1_000_000.0).round() / 1000.0
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_access_log_writes_milliseconds_to_the_microsecond() {
        let written = |nanos| format!("{:?}", log_ms(std::time::Duration::from_nanos(nanos)));
        assert_eq!(written(234_667), "0.235");
        assert_eq!(written(12_000_000), "12.0");
        assert_eq!(written(1_234_567_891), "1234.568");
    }
}
