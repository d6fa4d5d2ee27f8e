//! Runtime tools chosen by `TOOLGATE_RUNTIMES`: `run_javascript` runs a snippet as the
//! body of an async function in a fresh QuickJS engine (`run_typescript` erases types
//! first, keeping every line and column), answering as the JS-VM seed does —
//! the text's first line is always `Code execution finished in #.### seconds.`, then the
//! stdout / stderr / result / note / error sections that apply.

use std::sync::Arc;

use super::convert::object;
use rmcp::model::{CallToolResult, ContentBlock, JsonObject, Tool as McpTool, ToolAnnotations};
use serde_json::{Value, json};

use crate::config::Runtimes;
use crate::error::Error;
use crate::gateway::Gateway;

/// The JavaScript runtime tool's name.
pub(crate) const RUN_JAVASCRIPT: &str = "run_javascript";

/// The TypeScript runtime tool's name.
pub(crate) const RUN_TYPESCRIPT: &str = "run_typescript";

/// The runtime tools to list.
pub(crate) fn tools(runtimes: Runtimes) -> Vec<McpTool> {
    if !runtimes.js {
        return Vec::new();
    }
    let input = |language: &str| {
        json!({
            "type": "object",
            "properties": {"code": {"type": "string", "description": format!("{language} run as the body of an async function: top-level await and return work; console output is captured.")}},
            "required": ["code"],
            "additionalProperties": false
        })
    };
    let output = json!({
        "type": "object",
        "properties": {
            "success": {"type": "boolean"},
            "stdout": {"type": "string"},
            "stderr": {"type": "string"},
            "result": {"description": "The returned value: JSON when it serialises, else its console.log text; null when nothing was returned."},
            "error": {"type": ["string", "null"]},
            "duration_ms": {"type": "integer", "minimum": 0},
            "truncated": {"type": "boolean"},
            "timed_out": {"type": "boolean"}
        },
        "required": ["success", "stdout", "stderr", "result", "error", "duration_ms", "truncated", "timed_out"]
    });
    let description = "Runs a JavaScript snippet in a fresh, isolated QuickJS engine and returns its stdout, stderr, return value and any error. The snippet is the body of an async function, so top-level await and return work; import/export are not supported. There is no require, process, file system or timers; fetch (http/https only, 15 s, 8 MiB bodies, no cookies) with Headers, Response, AbortController, TextEncoder and TextDecoder is available. Limits: 512 MB heap, 30 s, 262,144 characters per output stream.";
    let ts_description = "Runs a TypeScript snippet exactly like run_javascript after erasing its types. Line and column numbers of your code stay exact in errors and stack traces; enum, namespace and constructor parameter properties generate code and may shift later lines. Syntax errors are reported on the lines you wrote.";
    let tool = |name: &'static str, title: &str, description: &str, language: &str| {
        let mut annotations = ToolAnnotations::default();
        annotations.title = Some(title.to_owned());
        // A snippet can reach the network through fetch, and send as well as read.
        annotations.read_only_hint = Some(false);
        annotations.open_world_hint = Some(true);
        McpTool::new(name, description.to_owned(), object(input(language)))
            .with_title(title)
            .with_raw_output_schema(Arc::new(object(output.clone())))
            .with_annotations(annotations)
    };
    vec![
        tool(RUN_JAVASCRIPT, "Run JavaScript", description, "JavaScript"),
        tool(RUN_TYPESCRIPT, "Run TypeScript", ts_description, "TypeScript"),
    ]
}

/// Answers a call to a runtime tool, or `None` when `name` is not one that is enabled.
pub(crate) async fn call(
    gateway: &Gateway,
    runtimes: Runtimes,
    name: &str,
    args: &JsonObject,
) -> Option<CallToolResult> {
    let typescript = match name {
        RUN_JAVASCRIPT => false,
        RUN_TYPESCRIPT => true,
        _ => return None,
    };
    if !runtimes.js {
        return None;
    }
    let Some(Value::String(code)) = args.get("code") else {
        return Some(super::convert::failure(&Error::InvalidParams {
            slug: name.to_owned(),
            violations: vec!["(root): \"code\" is a required string property (rule: required)".to_owned()],
        }));
    };
    let (_id, took, out) = gateway.run_snippet(code.clone(), typescript).await;
    let stdout = out.captured.stdout.text().to_owned();
    let stderr = out.captured.stderr.text().to_owned();
    let truncated = out.captured.stdout.is_truncated() || out.captured.stderr.is_truncated();
    let (result, error, timed_out) = match &out.outcome {
        Ok(value) => (value.clone().unwrap_or(Value::Null), None, false),
        Err(e @ Error::Timeout { after, .. }) => {
            let _ = e;
            (
                Value::Null,
                Some(format!(
                    "Script execution timed out after {} seconds.",
                    after.as_secs_f64()
                )),
                true,
            )
        }
        Err(e) => (Value::Null, Some(e.to_string()), false),
    };
    let mut text = format!("Code execution finished in {:.3} seconds.\n", took.as_secs_f64());
    for (label, section) in [("stdout", &stdout), ("stderr", &stderr)] {
        if !section.is_empty() {
            text.push_str(&format!("{label}:\n{}\n", section.trim_end_matches('\n')));
        }
    }
    if !result.is_null() {
        let shown = match &result {
            Value::String(s) => s.clone(),
            other => serde_json::to_string_pretty(other).unwrap_or_default(),
        };
        text.push_str(&format!("result:\n{shown}\n"));
    }
    if truncated {
        text.push_str("note:\nOutput was truncated at 262,144 characters per stream.\n");
    }
    if let Some(error) = &error {
        text.push_str(&format!("error:\n{error}\n"));
    }
    let structured = json!({
        "success": error.is_none(),
        "stdout": stdout,
        "stderr": stderr,
        "result": result,
        "error": error,
        "duration_ms": took.as_millis() as u64,
        "truncated": truncated,
        "timed_out": timed_out,
    });
    let mut answer = if error.is_none() {
        CallToolResult::structured(structured)
    } else {
        CallToolResult::structured_error(structured)
    };
    answer.content = vec![ContentBlock::text(text)];
    Some(answer)
}
