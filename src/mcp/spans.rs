//! One span for each MCP request the handler serves, named and attributed as
//! OpenTelemetry's MCP and GenAI semantic conventions have it (`mcp.method.name`,
//! `mcp.session.id`, `jsonrpc.request.id`, `gen_ai.*`, `error.type`), whose parent is the
//! trace context the request carries: `traceparent`/`tracestate` in its `_meta` (MCP's
//! convention), else the HTTP request's server span (`edge::observe`, which continued
//! the request's own `traceparent` header). Names and ids only: never an argument, a
//! result or a secret.

use std::collections::HashMap;
use std::future::Future;

use rmcp::model::{CallToolResponse, RequestMetaObject};
use rmcp::service::RequestContext;
use rmcp::{ErrorData as McpError, RoleServer};
use serde_json::Value;
use tracing::{Instrument, Span};

use crate::limits::SPAN_NAME_CHARS;

/// What a request is about, besides its method, for its span's name and attributes.
#[derive(Debug, Clone, Copy)]
pub(super) enum About<'a> {
    /// Nothing named (a list, a level, a completion).
    Nothing,
    /// A tool called (`tools/call`): `gen_ai.tool.name`, an `execute_tool` operation.
    Tool(&'a str),
    /// A prompt got (`prompts/get`): `gen_ai.prompt.name`.
    Prompt(&'a str),
    /// A resource read or subscribed to: `mcp.resource.uri`.
    Resource(&'a str),
}

/// `text` cut at [`SPAN_NAME_CHARS`] characters.
fn bounded(text: &str) -> &str {
    text.char_indices()
        .nth(SPAN_NAME_CHARS)
        .map_or(text, |(at, _)| &text[..at])
}

/// A span's name, `METHOD` or `METHOD TARGET`, written only when the span is on.
struct Named<'a>(&'static str, About<'a>);

impl std::fmt::Display for Named<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self.1 {
            About::Nothing => f.write_str(self.0),
            About::Tool(name) | About::Prompt(name) | About::Resource(name) => {
                write!(f, "{} {}", self.0, bounded(name))
            }
        }
    }
}

/// The span of request `method` (about `about`), its parent the context the request
/// carries (`meta`, the request's own `_meta` when rmcp leaves it in the params).
pub(super) fn request(
    method: &'static str,
    about: About<'_>,
    context: &RequestContext<RoleServer>,
    meta: Option<&RequestMetaObject>,
) -> Span {
    let span = tracing::info_span!(
        target: "toolgate::mcp",
        "mcp",
        otel.name = %Named(method, about),
        otel.kind = "server",
        mcp.method.name = method,
        mcp.session.id = tracing::field::Empty,
        jsonrpc.request.id = %context.id,
        gen_ai.operation.name = tracing::field::Empty,
        gen_ai.tool.name = tracing::field::Empty,
        gen_ai.prompt.name = tracing::field::Empty,
        mcp.resource.uri = tracing::field::Empty,
        error.type = tracing::field::Empty,
    );
    match about {
        About::Nothing => {}
        About::Tool(name) => {
            span.record("gen_ai.operation.name", "execute_tool");
            span.record("gen_ai.tool.name", bounded(name));
        }
        About::Prompt(name) => {
            span.record("gen_ai.prompt.name", bounded(name));
        }
        About::Resource(uri) => {
            span.record("mcp.resource.uri", bounded(uri));
        }
    }
    if !crate::telemetry::on() {
        return span;
    }
    let (parent, session) = trace_context(context, meta);
    crate::telemetry::root(&span, parent);
    if let Some(session) = session {
        span.record("mcp.session.id", session);
    }
    span
}

/// Runs `answer` inside `span`, recording a protocol error's code as `error.type`.
pub(super) async fn traced<T>(span: Span, answer: impl Future<Output = Result<T, McpError>>) -> Result<T, McpError> {
    let answer = answer.instrument(span.clone()).await;
    if let Err(e) = &answer {
        span.record("error.type", e.code.0);
    }
    answer
}

/// Records on `span` the error a tool call's answer carries: a protocol error's code, or
/// toolgate's stable code of a failed call (`tool_error` for a tool's own error).
pub(super) fn record_call(span: &Span, answer: &Result<CallToolResponse, McpError>) {
    let code = match answer {
        Ok(CallToolResponse::Complete(r)) if r.is_error == Some(true) => r
            .structured_content
            .as_ref()
            .and_then(|s| s.get("code"))
            .and_then(Value::as_str)
            .map(str::to_owned)
            .or_else(|| Some("tool_error".to_owned())),
        Ok(_) => None,
        Err(e) => Some(e.code.0.to_string()),
    };
    if let Some(code) = code {
        span.record("error.type", code);
    }
}

/// The W3C trace context a request carries — `traceparent` and `tracestate` in its
/// `_meta` or, over HTTP, the server span of its HTTP request (`_meta` first) — and its
/// HTTP session id.
fn trace_context(
    context: &RequestContext<RoleServer>,
    meta: Option<&RequestMetaObject>,
) -> (Option<opentelemetry::Context>, Option<String>) {
    let parts = context.extensions.get::<axum::http::request::Parts>();
    let mut carrier = HashMap::new();
    for key in crate::telemetry::HEADERS {
        let from_meta = [Some(&context.meta), meta]
            .into_iter()
            .flatten()
            .find_map(|m| m.get(key).and_then(Value::as_str));
        if let Some(value) = from_meta {
            carrier.insert(key.to_owned(), value.to_owned());
        }
    }
    let parent = crate::telemetry::extract(&carrier).or_else(|| {
        parts
            .and_then(|p| p.extensions.get::<crate::telemetry::Incoming>())
            .map(|incoming| incoming.0.clone())
    });
    let session = parts
        .and_then(|p| p.headers.get("mcp-session-id"))
        .and_then(|v| v.to_str().ok())
        .map(str::to_owned);
    (parent, session)
}

#[cfg(test)]
mod tests {
    #[test]
    fn a_name_a_client_sent_is_cut_to_a_bounded_start_on_a_character() {
        assert_eq!(super::bounded("echo"), "echo");
        let long = "é".repeat(1000);
        assert_eq!(super::bounded(&long).chars().count(), super::SPAN_NAME_CHARS);
    }
}
