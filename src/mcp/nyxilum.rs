//! Answers to the `nyxilum_*` tools: each call is validated against its input schema,
//! makes one call on the NyxilumNode backend (`exec::nyxilum`) and is converted to the
//! seed's answers — `{success, exitCode, timedOut, stdout, stderr, truncated,
//! durationMs}` for a process, `{success, sessionId}` / `{success, output, truncated}` /
//! `{success:false, error, sessionKilled}` / `{success}` for REPL sessions — as
//! `structuredContent` and as text.

use std::time::{Duration, Instant, SystemTime};

use rmcp::model::{CallToolResult, ContentBlock, JsonObject};
use serde_json::{Value, json};

use super::convert::failure;
use super::nyxilum_tools::{
    self as defs, CHECK, DEV_BUILD, DEV_TEST, DOCS, FORMAT, LINT, REPL_EVAL, REPL_START, REPL_STOP, RUN, VERSION,
};
use crate::error::Error;
use crate::exec::nyxilum::{Command, Dev, Evaluated, verdict};
use crate::exec::process::Finished;
use crate::gateway::Gateway;
use crate::limits;

/// Answers a call to a `nyxilum_*` tool, or `None` when `name` is not one.
pub(crate) async fn call(gateway: &Gateway, name: &str, args: &JsonObject) -> Option<CallToolResult> {
    let validator = defs::validator(name)?;
    let input = Value::Object(args.clone());
    if let Err(e) = validator.check(name, &input) {
        return Some(failure(&e));
    }
    let answer = match name {
        RUN | CHECK | LINT | FORMAT => code(gateway, name, args).await,
        VERSION => version(gateway).await,
        DOCS => docs(gateway, args),
        REPL_START => repl_start(gateway).await,
        REPL_EVAL => repl_eval(gateway, args).await,
        REPL_STOP => repl_stop(gateway, args).await,
        DEV_BUILD | DEV_TEST => dev(gateway, name, args).await,
        _ => return None,
    };
    Some(answer.unwrap_or_else(|e| failure(&e)))
}

fn text_arg<'a>(args: &'a JsonObject, key: &str) -> &'a str {
    args.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn timeout_arg(args: &JsonObject, default_ms: u64) -> Duration {
    Duration::from_millis(args.get("timeout_ms").and_then(Value::as_u64).unwrap_or(default_ms))
}

/// `nyxilum_run`, `_check`, `_lint`, `_format`: one process on the caller's code.
async fn code(gateway: &Gateway, name: &str, args: &JsonObject) -> Result<CallToolResult, Error> {
    let command = match name {
        RUN => Command::Run,
        CHECK => Command::Check,
        LINT => Command::Lint,
        _ => Command::Format,
    };
    let timeout = timeout_arg(args, limits::NYX_TIMEOUT.as_millis() as u64);
    let gc = args.get("gc_max_objects").and_then(Value::as_u64);
    let (started, clock) = (SystemTime::now(), Instant::now());
    let out = gateway
        .nyxilum()
        .code(command, text_arg(args, "code"), timeout, gc)
        .await?;
    let answer = process_answer(name, &out, timeout, json!({}));
    let structured = answer.structured_content.clone().unwrap_or(Value::Null);
    let ended = match structured["error"].as_str() {
        _ if out.timed_out => Err(Error::Timeout {
            what: format!("{name}'s NyxilumNode process"),
            after: timeout,
        }),
        Some(message) => Err(Error::Execution {
            message: message.to_owned(),
        }),
        None => Ok(structured.clone()),
    };
    let input = Value::Object(args.clone());
    let id = gateway.record_call(name, &input, started, clock, ended.as_ref());
    tracing::debug!(run = %id, tool = name, "recorded");
    Ok(answer)
}

/// `nyxilum_version`.
async fn version(gateway: &Gateway) -> Result<CallToolResult, Error> {
    let (out, nx) = gateway.nyxilum().version().await?;
    let version = out.stdout.text.trim().to_owned();
    let extra = json!({"version": version, "path": nx.path.display().to_string()});
    Ok(process_answer(VERSION, &out, limits::NYX_VERSION_TIMEOUT, extra))
}

/// `nyxilum_docs`: the whole guide, or one section.
fn docs(gateway: &Gateway, args: &JsonObject) -> Result<CallToolResult, Error> {
    let guide = gateway.nyxilum().guide()?;
    let path = guide.path.display().to_string();
    let headings: Vec<String> = guide.sections().into_iter().map(|s| s.heading).collect();
    let structured = match args.get("section").and_then(Value::as_str) {
        None => json!({"success": true, "path": path, "sections": headings, "content": guide.text}),
        Some(wanted) => match guide.section(wanted) {
            Some(section) => {
                json!({"success": true, "path": path, "section": section.heading, "content": section.body})
            }
            None => {
                return Err(Error::BadRequest(format!(
                    "No section of {path} has \"{wanted}\" in its heading. Sections: {}.",
                    headings.join(", ")
                )));
            }
        },
    };
    let text = structured["content"].as_str().unwrap_or_default().to_owned();
    Ok(answer(true, text, structured))
}

/// `nyxilum_repl_start`.
async fn repl_start(gateway: &Gateway) -> Result<CallToolResult, Error> {
    let nyx = gateway.nyxilum();
    let nx = nyx.locator().locate()?;
    let id = nyx.sessions().start(&nx).await?;
    let text = format!(
        "Started REPL session {id}. Declarations persist between nyxilum_repl_eval calls until nyxilum_repl_stop (at most {} sessions; closed after {} minutes idle).",
        limits::REPL_SESSIONS,
        limits::REPL_IDLE.as_secs() / 60
    );
    Ok(answer(true, text, json!({"success": true, "sessionId": id})))
}

/// `nyxilum_repl_eval`.
async fn repl_eval(gateway: &Gateway, args: &JsonObject) -> Result<CallToolResult, Error> {
    let id = text_arg(args, "session_id");
    let timeout = timeout_arg(args, limits::NYX_TIMEOUT.as_millis() as u64);
    let evaluated = gateway
        .nyxilum()
        .sessions()
        .eval(id, text_arg(args, "code"), timeout)
        .await?;
    Ok(match evaluated {
        Evaluated::Output { output, truncated } => {
            let mut text = if output.is_empty() {
                "(no output)".to_owned()
            } else {
                output.clone()
            };
            if truncated {
                text.push_str("\nnote: output was truncated at 32 KB.");
            }
            answer(
                true,
                text,
                json!({"success": true, "output": output, "truncated": truncated}),
            )
        }
        Evaluated::Killed(error) => answer(
            false,
            format!("error: {error}"),
            json!({"success": false, "error": error, "sessionKilled": true}),
        ),
    })
}

/// `nyxilum_repl_stop`.
async fn repl_stop(gateway: &Gateway, args: &JsonObject) -> Result<CallToolResult, Error> {
    let id = text_arg(args, "session_id");
    Ok(if gateway.nyxilum().sessions().stop(id).await {
        answer(true, format!("Stopped REPL session {id}."), json!({"success": true}))
    } else {
        answer(
            true,
            format!("No live REPL session {id}: it was already stopped, killed or never existed."),
            json!({"success": true, "alreadyGone": true}),
        )
    })
}

/// `nyxilum_dev_build` and `nyxilum_dev_test`.
async fn dev(gateway: &Gateway, name: &str, args: &JsonObject) -> Result<CallToolResult, Error> {
    let which = if name == DEV_BUILD { Dev::Build } else { Dev::Test };
    let configuration = match args.get("configuration").and_then(Value::as_str) {
        Some("Release") => "Release",
        _ => "Debug",
    };
    let timeout = timeout_arg(args, limits::DEV_TIMEOUT_MS_DEFAULT);
    let out = gateway.nyxilum().dev(which, configuration, timeout).await?;
    let mut answer = process_answer(name, &out, timeout, json!({}));
    // A build that fails is a failed build, not a NyxilumNode error line: say it plainly.
    if let Some(s) = answer.structured_content.as_mut()
        && s["success"] == false
        && !out.timed_out
    {
        s["error"] = json!(format!(
            "{} exited with code {}; see stdout and stderr.",
            if which == Dev::Build {
                "dotnet build"
            } else {
                "tests/run_all.sh"
            },
            out.exit_code
                .map_or("none (killed by a signal)".to_owned(), |c| c.to_string())
        ));
    }
    Ok(answer)
}

/// A process's answer: the seed's fields (plus `extra`), `error`/`code`/`retryable` when
/// it failed, and the same facts as text.
fn process_answer(name: &str, out: &Finished, timeout: Duration, extra: Value) -> CallToolResult {
    let v = verdict(out, timeout);
    let mut structured = json!({
        "success": v.success,
        "exitCode": out.exit_code,
        "timedOut": out.timed_out,
        "stdout": out.stdout.text,
        "stderr": out.stderr.text,
        "truncated": out.is_truncated(),
        "durationMs": out.duration.as_millis() as u64,
    });
    if let (Value::Object(map), Value::Object(more)) = (&mut structured, extra) {
        map.extend(more);
    }
    let mut text = format!(
        "{name} finished in {:.3} s: {}.\n",
        out.duration.as_secs_f64(),
        match (out.timed_out, out.exit_code) {
            (true, _) => "timed out and was killed".to_owned(),
            (false, Some(code)) => format!("exit code {code}"),
            (false, None) => format!("killed by signal {}", out.signal.unwrap_or_default()),
        }
    );
    for (label, stream) in [("stdout", &out.stdout.text), ("stderr", &out.stderr.text)] {
        if !stream.is_empty() {
            text.push_str(&format!("{label}:\n{}\n", stream.trim_end_matches('\n')));
        }
    }
    if out.is_truncated() {
        text.push_str("note: output was truncated at its limit per stream.\n");
    }
    if let Some(error) = &v.error {
        let code = if out.timed_out { "TIMEOUT" } else { "EXECUTION_ERROR" };
        structured["error"] = json!(error);
        structured["code"] = json!(code);
        structured["retryable"] = json!(out.timed_out);
        text.push_str(&format!("error:\n{error}\n"));
    }
    answer(v.success, text, structured)
}

/// An answer with `text` and `structured`; `isError` when not `ok`.
fn answer(ok: bool, text: String, structured: Value) -> CallToolResult {
    let mut result = if ok {
        CallToolResult::structured(structured)
    } else {
        CallToolResult::structured_error(structured)
    };
    result.content = vec![ContentBlock::text(text)];
    result
}
