//! The meta-tool's `history` and `diff` commands: the run index, newest first, one run
//! whole, or two runs compared. Every answer states that history is scoped to this session
//! and when it began.

use rmcp::model::{CallToolResult, JsonObject};
use serde_json::{Value, json};

use super::convert::{answer, pretty};
use crate::error::Error;
use crate::history::diff::diff as compare;
use crate::history::{History, SCOPE, process_started_at};
use crate::plural::count;

/// Answers `{"command":"history"}` and `{"command":"history","show":"r3"}`.
pub(crate) fn history(history: &History, args: &JsonObject) -> Result<CallToolResult, Error> {
    let started = history.session_started_at();
    let process = process_started_at();
    let head = format!("{SCOPE} Session began at {started}.");
    match args.get("show") {
        None | Some(Value::Null) => {
            let runs = history.newest_first();
            let mut text = format!("{head}\n{}, newest first:\n", count(runs.len(), "run", "runs"));
            let index: Vec<Value> = runs
                .iter()
                .map(|r| {
                    let parent = r
                        .parent_run_id
                        .as_deref()
                        .map(|p| format!(" (called by {p}'s code)"))
                        .unwrap_or_default();
                    text.push_str(&format!(
                        "{} {} {} {} ms at {}{parent}\n",
                        r.id,
                        r.slug,
                        r.status.label(),
                        r.duration_ms,
                        r.started_at
                    ));
                    r.summary()
                })
                .collect();
            Ok(answer(
                true,
                text,
                json!({"scope": SCOPE, "process_started_at": process, "session_started_at": started, "runs": index}),
            ))
        }
        Some(Value::String(id)) => {
            let run = history.get(id).ok_or_else(|| Error::RunNotFound { id: id.clone() })?;
            let cut = if run.truncated {
                "\n(payloads were truncated for storage)"
            } else {
                ""
            };
            let text = format!(
                "{head}\nRun {} of {}: {} in {} ms, started {}{}{}.\nInput (redacted):\n{}\nResult:\n{}{cut}",
                run.id,
                run.slug,
                run.status.label(),
                run.duration_ms,
                run.started_at,
                run.principal
                    .as_deref()
                    .map(|p| format!(", for {p}"))
                    .unwrap_or_default(),
                run.parent_run_id
                    .as_deref()
                    .map(|p| format!(", called by {p}'s code"))
                    .unwrap_or_default(),
                pretty(&run.input),
                pretty(&run.result)
            );
            let mut shown = json!({
                "id": run.id, "slug": run.slug, "status": run.status.label(), "input": run.input,
                "result": run.result, "truncated": run.truncated, "duration_ms": run.duration_ms,
                "started_at": run.started_at,
            });
            run.name_principal(&mut shown);
            let structured = json!({
                "scope": SCOPE,
                "process_started_at": process,
                "session_started_at": started,
                "run": shown,
            });
            Ok(answer(true, text, structured))
        }
        Some(other) => Err(Error::BadRequest(format!(
            "\"show\" must be a run id such as \"r3\" or \"-1\", not {other}"
        ))),
    }
}

/// Answers `{"command":"diff","from":"-2","to":"-1"}`: both runs named, or neither (then
/// the newest run and the run of the same tool before it: two runs of different tools
/// differ by nature, which says nothing). One alone is a `BAD_REQUEST`: the other's
/// default could be the same run, and a run compared with itself is always "identical".
pub(crate) fn diff(history: &History, args: &JsonObject) -> Result<CallToolResult, Error> {
    let id = |key: &str| match args.get(key) {
        None | Some(Value::Null) => Ok(None),
        Some(Value::String(s)) => Ok(Some(s.clone())),
        Some(Value::Number(n)) => Ok(Some(n.to_string())),
        Some(other) => Err(Error::BadRequest(format!(
            "\"{key}\" must be a run id such as \"r3\" or \"-1\", not {other}"
        ))),
    };
    let (from_id, to_id) = match (id("from")?, id("to")?) {
        (Some(from), Some(to)) => (from, to),
        (None, None) => last_two_of_one_tool(history)?,
        (from, _) => {
            let (given, missing) = if from.is_some() { ("from", "to") } else { ("to", "from") };
            return Err(Error::BadRequest(format!(
                "diff got \"{given}\" without \"{missing}\": name both runs (for example \"from\":\"r3\",\"to\":\"-1\"), or neither to compare the last two"
            )));
        }
    };
    let from = history.get(&from_id).ok_or(Error::RunNotFound { id: from_id })?;
    let to = history.get(&to_id).ok_or(Error::RunNotFound { id: to_id })?;
    let d = compare(&from, &to);
    let started = history.session_started_at();
    let process = process_started_at();
    let mut text = format!(
        "{} ({}) vs {} ({}): {}.\n",
        from.id,
        from.slug,
        to.id,
        to.slug,
        d.verdict.sentence()
    );
    for c in &d.changes {
        text.push_str(&format!("{}: {} → {}\n", c.path, c.from, c.to));
    }
    if d.more > 0 {
        text.push_str(&format!("… and {} more.\n", count(d.more, "change", "changes")));
    }
    if d.truncated {
        text.push_str(
            "Note: at least one payload was truncated for storage; differences beyond the cut are unknown.\n",
        );
    }
    text.push_str(&format!("{SCOPE} Session began at {started}."));
    let structured = json!({
        "verdict": d.verdict,
        "inputs_changed": d.inputs_changed,
        "truncated": d.truncated,
        "changes": d.changes,
        "more_changes": d.more,
        "from": from.id,
        "to": to.id,
        "scope": SCOPE,
        "process_started_at": process,
        "session_started_at": started,
    });
    Ok(answer(true, text, structured))
}

/// The ids of the newest run and of the newest run of the same tool before it; a
/// `BAD_REQUEST` saying what to do when there are no two such runs.
fn last_two_of_one_tool(history: &History) -> Result<(String, String), Error> {
    let runs = history.newest_first();
    let Some((newest, earlier)) = runs.split_first() else {
        return Err(Error::BadRequest(
            "diff compares two runs of one tool, and this session has no runs yet: run a tool twice, then diff".into(),
        ));
    };
    match earlier.iter().find(|r| r.slug == newest.slug) {
        Some(before) => Ok((before.id.clone(), newest.id.clone())),
        None => Err(Error::BadRequest(format!(
            "diff with no runs named compares the last two runs of one tool, and {} is the only run of {} in this session: run it again, or name two runs (for example \"from\":\"r1\",\"to\":\"{}\")",
            newest.id, newest.slug, newest.id
        ))),
    }
}
