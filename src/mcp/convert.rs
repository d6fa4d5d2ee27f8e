//! The one place toolgate results and errors become MCP results.
//!
//! Every answer carries human-readable text and `structuredContent` with the same facts
//! ([`answer`] builds both); captured output is shown by one builder ([`sections`]).
//! Everything that happens while running a tool is an `isError` result whose
//! `structuredContent` carries `{success:false, error, code, retryable}` — which every
//! advertised output schema admits; only an unroutable call is a protocol error.

use rmcp::ErrorData as McpError;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use serde_json::{Value, json};

use crate::backends::{Form, Output};
use crate::error::Error;
use crate::gateway::{Run, failure_body, snippet_error};
use crate::registry::Shape;

/// An answer: `text` for people, `structured` for programs; `isError` unless `ok`.
pub(crate) fn answer(ok: bool, text: String, structured: Value) -> CallToolResult {
    let mut result = if ok {
        CallToolResult::structured(structured)
    } else {
        CallToolResult::structured_error(structured)
    };
    result.content = vec![ContentBlock::text(text)];
    result
}

/// A failure outside a run (meta-tool misuse, a refused batch) as an `isError` result.
pub(crate) fn failure(e: &Error) -> CallToolResult {
    answer(false, failure_line(e), failure_body(e))
}

/// `Error CODE (retryable): message`.
fn failure_line(e: &Error) -> String {
    let retry = if e.retryable() { "retryable" } else { "not retryable" };
    format!("Error {} ({retry}): {e}", e.code())
}

/// Appends captured output to `text`: a `stdout:` and a `stderr:` section when not
/// empty.
pub(crate) fn sections(text: &mut String, output: &Output) {
    for (name, stream) in [("stdout", &output.stdout), ("stderr", &output.stderr)] {
        if !stream.is_empty() {
            text.push_str(&format!("\n{name}:\n{}", stream.trim_end_matches('\n')));
        }
    }
}

/// Appends the note that output (or the returned value) was cut at its cap, when it was.
fn truncation_note(text: &mut String, output: &Output) {
    let mut said = Vec::new();
    if output.truncated {
        said.push(format!("Output was truncated at {} per stream.", output.cap));
    }
    if let Some(cap) = output.result_cut {
        said.push(format!(
            "The returned value was cut at {} characters of JSON; the result is the start of its JSON text.",
            crate::limits::grouped(cap as u64)
        ));
    }
    if !said.is_empty() {
        text.push_str(&format!("\nnote:\n{}", said.join("\n")));
    }
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

/// Any run as an MCP result: the body from the gateway, the text in the family's format.
pub(crate) fn run_result(run: &Run) -> CallToolResult {
    answer(run.is_ok(), run_text(run), run.body())
}

/// A direct call's run: an upstream server's answer as it came (content,
/// structuredContent, isError); a tool that returns MCP content, its blocks as they are
/// (plus its printed output as text) beside the run envelope; any other run as
/// [`run_result`]. The meta-tool's `run`
/// keeps the run envelope for every family, so its `run_id` is always there.
pub(crate) fn direct_result(run: &Run) -> CallToolResult {
    if let Form::Passthrough(raw) = &run.answer.form
        && let Ok(result) = serde_json::from_value::<CallToolResult>(raw.clone())
    {
        return result;
    }
    if let (Form::Content(blocks), true) = (&run.answer.form, run.is_ok())
        && let Ok(mut content) = serde_json::from_value::<Vec<ContentBlock>>(Value::Array(blocks.clone()))
    {
        let mut printed = String::new();
        sections(&mut printed, &run.answer.output);
        truncation_note(&mut printed, &run.answer.output);
        if !printed.is_empty() {
            content.push(ContentBlock::text(printed.trim_start_matches('\n').to_owned()));
        }
        let mut result = CallToolResult::structured(run.body());
        result.content = content;
        return result;
    }
    run_result(run)
}

/// A run's text. A call that never reached its backend reads as a failure line in every
/// family; otherwise each family keeps its own layout.
pub(crate) fn run_text(run: &Run) -> String {
    let p = &run.answer;
    let mut text = match (&p.ended, run.shape, p.reached) {
        (Err(e), _, false) | (Err(e), Shape::Envelope | Shape::Passthrough, true) => failure_line(e),
        (Ok(result), Shape::Envelope | Shape::Passthrough, true) => format!(
            "{} finished in {} ms (run {}).\nResult:\n{}",
            run.name,
            run.duration.as_millis(),
            run.id,
            pretty(result)
        ),
        (Ok(_), _, false) => format!("{} finished (run {}).", run.name, run.id),
        (_, Shape::Snippet, true) => format!("Code execution finished in {:.3} seconds.", run.duration.as_secs_f64()),
        (_, Shape::Flat, true) => match &p.form {
            Form::Flat { headline, .. } => headline.clone(),
            _ => String::new(),
        },
    };
    if p.reached {
        // A snippet's order: stdout, stderr, result, note, error.
        sections(&mut text, &p.output);
        if let (Ok(result), Shape::Snippet) = (&p.ended, run.shape)
            && !result.is_null()
        {
            let shown = match result {
                Value::String(s) => s.clone(),
                other => pretty(other),
            };
            text.push_str(&format!("\nresult:\n{shown}"));
        }
        truncation_note(&mut text, &p.output);
        if let (Err(e), Shape::Snippet | Shape::Flat) = (&p.ended, run.shape) {
            let said = if run.shape == Shape::Snippet {
                snippet_error(e)
            } else {
                e.to_string()
            };
            text.push_str(&format!("\nerror:\n{said}"));
        }
    }
    text.trim_start_matches('\n').to_owned()
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

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;
    use crate::backends::Answer;

    fn run(shape: Shape, ended: Result<Value, Error>) -> Run {
        let output = Output {
            stdout: "printed\n".into(),
            stderr: String::new(),
            truncated: true,
            cap: "10 characters".into(),
            result_cut: None,
        };
        Run {
            id: "r1".into(),
            name: "run_javascript".into(),
            shape,
            duration: Duration::from_millis(3),
            answer: Answer::reached(ended, output),
        }
    }

    #[test]
    fn a_snippet_reads_stdout_stderr_result_note_error_in_that_order() {
        let text = run_text(&run(Shape::Snippet, Ok(json!("value"))));
        let at = |s: &str| text.find(s).unwrap_or_else(|| panic!("{s} in {text}"));
        assert!(text.starts_with("Code execution finished in 0.003 seconds."), "{text}");
        assert!(at("stdout:\nprinted") < at("result:\nvalue"), "{text}");
        assert!(
            at("result:\nvalue") < at("note:\nOutput was truncated at 10 characters"),
            "{text}"
        );
        let failed = run_text(&run(Shape::Snippet, Err(Error::Execution { message: "boom".into() })));
        assert!(failed.ends_with("error:\nboom"), "{failed}");
    }

    #[test]
    fn a_failure_in_every_family_carries_code_and_retry_flag() {
        for shape in [Shape::Envelope, Shape::Snippet, Shape::Flat] {
            let r = run_result(&run(shape, Err(Error::Execution { message: "boom".into() })));
            assert_eq!(r.is_error, Some(true));
            let body = r.structured_content.unwrap();
            assert_eq!(
                (&body["success"], &body["code"], &body["retryable"], &body["run_id"]),
                (&json!(false), &json!("EXECUTION_ERROR"), &json!(false), &json!("r1")),
                "{shape:?}: {body}"
            );
        }
    }
}
