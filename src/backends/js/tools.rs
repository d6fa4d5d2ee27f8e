//! `run_javascript` and `run_typescript` (`TOOLGATE_RUNTIMES=js`): a snippet run as the
//! body of an async function in a fresh QuickJS engine, answered with its console,
//! value and error.
//! Their descriptions state the limits in force, not the defaults.

use serde_json::{Value, json};

use crate::backends::seam::{Declared, Definition, Shape};
use crate::limits::{FETCH_BODY_BYTES, Limits, grouped};

/// The JavaScript runtime tool's name.
pub(crate) const RUN_JAVASCRIPT: &str = "run_javascript";

/// The TypeScript runtime tool's name.
pub(crate) const RUN_TYPESCRIPT: &str = "run_typescript";

/// Seconds as the descriptions print them: `30 s`, `1.5 s`.
fn seconds(d: std::time::Duration) -> String {
    format!("{} s", d.as_secs_f64())
}

/// The success body of both tools (`docs/reference/mcp.md`).
fn output() -> Value {
    json!({
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
    })
}

fn input(language: &str) -> Value {
    json!({
        "type": "object",
        "properties": {"code": {"type": "string", "description": format!("{language} run as the body of an async function: top-level await and return work; console output is captured.")}},
        "required": ["code"],
        "additionalProperties": false
    })
}

/// Both tools, described with `limits`.
pub(crate) fn declare(limits: &Limits) -> Vec<Declared> {
    let js = format!(
        "Runs a JavaScript snippet in a fresh, isolated QuickJS engine and returns its stdout, stderr, return value and any error. The snippet is the body of an async function, so top-level await and return work; import/export are not supported. There is no require, process, file system or timers; fetch (http/https to public addresses only, {}, {} MiB bodies, no cookies) with Headers, Response, AbortController, TextEncoder and TextDecoder is available. Limits: {} MiB heap, {}, {} characters per output stream. Code calls tools: await tools.<slug with - as _>(params), tools.call(slug, params) and tools.search(query) run as you would run them directly (checked, recorded; at most {} calls a run); the meta-tool's schema command gives each tool's TypeScript, the types/tools.d.ts resource them all.",
        seconds(limits.fetch_timeout),
        FETCH_BODY_BYTES / (1024 * 1024),
        limits.js_heap_bytes / (1024 * 1024),
        seconds(limits.js_wall_clock),
        grouped(limits.output_chars as u64),
        limits.code_calls,
    );
    let ts = "Runs a TypeScript snippet exactly like run_javascript after erasing its types. Line and column numbers of your code stay exact in errors and stack traces; enum, namespace and constructor parameter properties generate code and may shift later lines. Syntax errors are reported on the lines you wrote.".to_owned();
    let tool = |name: &str, title: &str, description: String, language: &str, example: &str| {
        Declared {
            definition: Definition {
                name: name.to_owned(),
                title: title.to_owned(),
                description,
                input_schema: input(language),
                output_schema: output(),
                // A snippet can reach the network through fetch, and send as well as read.
                annotations: json!({"title": title, "readOnlyHint": false, "openWorldHint": true}),
            },
            shape: Shape::Snippet,
            examples: vec![json!({ "code": example })],
        }
    };
    vec![
        tool(
            RUN_JAVASCRIPT,
            "Run JavaScript",
            js,
            "JavaScript",
            "return [1, 2, 3].map(n => n * 2);",
        ),
        tool(
            RUN_TYPESCRIPT,
            "Run TypeScript",
            ts,
            "TypeScript",
            "const n: number = 21; return n * 2;",
        ),
    ]
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn descriptions_state_the_limits_in_force() {
        let limits = Limits {
            js_heap_bytes: 64 * 1024 * 1024,
            js_wall_clock: Duration::from_millis(1500),
            output_chars: 1000,
            ..Limits::default()
        };
        let text = &declare(&limits)[0].definition.description;
        assert!(text.contains("64 MiB heap, 1.5 s, 1,000 characters"), "{text}");
        assert!(!text.contains("512"), "{text}");
        assert_eq!(grouped(262_144), "262,144");
    }
}
