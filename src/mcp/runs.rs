//! The meta-tool's `history` command: the run index, newest first, or one run whole.
//! Every answer states that history is scoped to this server process and when it started.

use rmcp::model::{CallToolResult, JsonObject};
use serde_json::{Value, json};

use super::convert::answer;
use crate::error::Error;
use crate::history::{History, SCOPE};

/// Answers `{"command":"history"}` and `{"command":"history","show":"r3"}`.
pub(crate) fn history(history: &History, args: &JsonObject) -> Result<CallToolResult, Error> {
    let started = history.process_started_at();
    let head = format!("{SCOPE} Process started at {started}.");
    match args.get("show") {
        None | Some(Value::Null) => {
            let runs = history.newest_first();
            let mut text = format!("{head}\n{} runs, newest first:\n", runs.len());
            let index: Vec<Value> = runs
                .iter()
                .map(|r| {
                    text.push_str(&format!("{} {} {} {} ms at {}\n", r.id, r.slug, r.status.label(), r.duration_ms, r.started_at));
                    json!({"id": r.id, "slug": r.slug, "status": r.status.label(), "duration_ms": r.duration_ms, "started_at": r.started_at})
                })
                .collect();
            Ok(answer(
                text,
                json!({"scope": SCOPE, "process_started_at": started, "runs": index}),
            ))
        }
        Some(Value::String(id)) => {
            let run = history.get(id).ok_or_else(|| Error::RunNotFound { id: id.clone() })?;
            let pretty = |v: &Value| serde_json::to_string_pretty(v).unwrap_or_default();
            let cut = if run.truncated {
                "\n(payloads were truncated for storage)"
            } else {
                ""
            };
            let text = format!(
                "{head}\nRun {} of {}: {} in {} ms, started {}.\nInput (redacted):\n{}\nResult:\n{}{cut}",
                run.id,
                run.slug,
                run.status.label(),
                run.duration_ms,
                run.started_at,
                pretty(&run.input),
                pretty(&run.result)
            );
            let structured = json!({
                "scope": SCOPE,
                "process_started_at": started,
                "run": {
                    "id": run.id, "slug": run.slug, "status": run.status.label(), "input": run.input,
                    "result": run.result, "truncated": run.truncated, "duration_ms": run.duration_ms,
                    "started_at": run.started_at,
                },
            });
            Ok(answer(text, structured))
        }
        Some(other) => Err(Error::BadRequest(format!(
            "\"show\" must be a run id such as \"r3\" or \"-1\", not {other}"
        ))),
    }
}
