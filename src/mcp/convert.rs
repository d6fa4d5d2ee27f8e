//! The one place toolgate results and errors become MCP results.
//!
//! Every answer carries human-readable text and `structuredContent` with the same facts.
//! Everything that happens while running a tool is an `isError` result carrying
//! `{success:false, error, code, retryable}`; only an unroutable call is a protocol error.

use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use serde_json::{Value, json};

use crate::error::Error;
use crate::gateway::Run;

/// A successful answer: `text` for people, `structured` for programs.
pub(crate) fn answer(text: String, structured: Value) -> CallToolResult {
    let mut result = CallToolResult::structured(structured);
    result.content = vec![ContentBlock::text(text)];
    result
}

/// A failure as an `isError` result.
pub(crate) fn failure(e: &Error) -> CallToolResult {
    let mut body = json!({
        "success": false,
        "error": e.to_string(),
        "code": e.code(),
        "retryable": e.retryable(),
    });
    if let Some(after) = e.retry_after() {
        body["retry_after_ms"] = json!(after.as_millis() as u64);
    }
    if let Error::ToolNotFound { candidates, .. } | Error::AmbiguousSlug { candidates, .. } = e {
        body["candidates"] = json!(candidates);
    }
    if let Error::BatchInvalid { problems } = e {
        body["items"] = problems
            .iter()
            .map(|p| json!({"index": p.index, "slug": p.slug, "code": p.code, "error": p.message}))
            .collect();
    }
    let retry = if e.retryable() { "retryable" } else { "not retryable" };
    let mut result = CallToolResult::structured_error(body);
    result.content = vec![ContentBlock::text(format!("Error {} ({retry}): {e}", e.code()))];
    result
}

/// A direct `tools/call` naming no tool this server has: a protocol error (−32602) whose
/// message still names the closest matches.
pub(crate) fn unknown_tool(e: &Error) -> McpError {
    let candidates = match e {
        Error::ToolNotFound { candidates, .. } | Error::AmbiguousSlug { candidates, .. } => candidates.clone(),
        _ => Vec::new(),
    };
    McpError::invalid_params(e.to_string(), Some(json!({"code": e.code(), "candidates": candidates})))
}

/// The structured block of a run (DESIGN §5).
pub(crate) fn run_structured(run: &Run) -> Value {
    let o = &run.outcome;
    let mut v = json!({
        "success": true,
        "result": o.result,
        "duration_ms": o.duration.as_millis() as u64,
        "run_id": run.id,
    });
    if !o.stdout.is_empty() {
        v["stdout"] = json!(o.stdout);
    }
    if !o.stderr.is_empty() {
        v["stderr"] = json!(o.stderr);
    }
    if o.truncated {
        v["truncated"] = json!(true);
    }
    v
}

/// A run as an MCP result.
pub(crate) fn run_result(run: &Run) -> CallToolResult {
    let o = &run.outcome;
    let pretty = pretty(&o.result);
    let mut text = format!(
        "{} finished in {} ms (run {}).\nResult:\n{pretty}",
        run.slug,
        o.duration.as_millis(),
        run.id
    );
    for (name, stream) in [("stdout", &o.stdout), ("stderr", &o.stderr)] {
        if !stream.is_empty() {
            text.push_str(&format!("\n{name}:\n{}", stream.trim_end()));
        }
    }
    if o.truncated {
        text.push_str("\nnote: output was truncated at its limit.");
    }
    answer(text, run_structured(run))
}

/// JSON for people: indented.
pub(crate) fn pretty(v: &Value) -> String {
    serde_json::to_string_pretty(v).unwrap_or_else(|_| v.to_string())
}

/// A JSON object as rmcp's map type (anything else becomes an empty object).
pub(crate) fn object(v: Value) -> JsonObject {
    match v {
        Value::Object(map) => map,
        _ => JsonObject::new(),
    }
}
