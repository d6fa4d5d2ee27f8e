//! The `nyxilum_*` tools' calls: one call on the NyxilumNode backend each, producing
//! flat bodies — `{exitCode, timedOut, stdout, stderr, truncated,
//! durationMs}` for a process, `{sessionId}` / `{output, truncated}` / `{sessionKilled}`
//! for REPL sessions — and the headline of their text.

use std::time::Duration;

use serde_json::{Map, Value, json};

use super::limits;
use super::tools::NyxTool;
use super::{Command, Dev, Evaluated, Nyxilum, verdict};
use crate::backends::Party;
use crate::backends::process::Finished;
use crate::backends::seam::{Answer, Form, Output};
use crate::error::Error;

/// Runs `tool` with `args` (already validated) for the caller `owner` (whose REPL
/// sessions are its own), whose sessions count against `party`'s share of them.
pub(super) async fn call(nyx: &Nyxilum, (owner, party): (u64, &Party), tool: NyxTool, args: &Value) -> Answer {
    let answer = match tool {
        NyxTool::Run => code(nyx, "nyxilum_run", Command::Run, args).await,
        NyxTool::Check => code(nyx, "nyxilum_check", Command::Check, args).await,
        NyxTool::Lint => code(nyx, "nyxilum_lint", Command::Lint, args).await,
        NyxTool::Format => code(nyx, "nyxilum_format", Command::Format, args).await,
        NyxTool::Version => version(nyx).await,
        NyxTool::Docs => docs(nyx, args),
        NyxTool::ReplStart => repl_start(nyx, owner, party).await,
        NyxTool::ReplEval => repl_eval(nyx, owner, args).await,
        NyxTool::ReplStop => repl_stop(nyx, owner, args).await,
        NyxTool::DevBuild => dev(nyx, "nyxilum_dev_build", Dev::Build, args).await,
        NyxTool::DevTest => dev(nyx, "nyxilum_dev_test", Dev::Test, args).await,
    };
    answer.unwrap_or_else(Answer::refused)
}

fn text_arg<'a>(args: &'a Value, key: &str) -> &'a str {
    args.get(key).and_then(Value::as_str).unwrap_or_default()
}

fn timeout_arg(args: &Value, default_ms: u64) -> Duration {
    Duration::from_millis(args.get("timeout_ms").and_then(Value::as_u64).unwrap_or(default_ms))
}

/// A flat answer that reached the backend.
fn flat(ended: Result<Value, Error>, fields: Map<String, Value>, headline: String, output: Output) -> Answer {
    Answer::reached(ended, output).with_form(Form::Flat { fields, headline })
}

/// `nyxilum_run`, `_check`, `_lint`, `_format`: one process on the caller's code.
async fn code(nyx: &Nyxilum, name: &str, command: Command, args: &Value) -> Result<Answer, Error> {
    let timeout = timeout_arg(args, limits::NYX_TIMEOUT.as_millis() as u64);
    let gc = args.get("gc_max_objects").and_then(Value::as_u64);
    let out = nyx.code(command, text_arg(args, "code"), timeout, gc).await?;
    Ok(process(name, &out, timeout, Map::new(), None))
}

/// `nyxilum_version`.
async fn version(nyx: &Nyxilum) -> Result<Answer, Error> {
    let (out, nx) = nyx.version().await?;
    let mut extra = Map::new();
    extra.insert("version".into(), json!(out.stdout.text.trim()));
    extra.insert("path".into(), json!(nx.path.display().to_string()));
    Ok(process(
        "nyxilum_version",
        &out,
        limits::NYX_VERSION_TIMEOUT,
        extra,
        None,
    ))
}

/// `nyxilum_docs`: the whole guide, or one section.
fn docs(nyx: &Nyxilum, args: &Value) -> Result<Answer, Error> {
    let guide = nyx.guide()?;
    let path = guide.path.display().to_string();
    let headings: Vec<String> = guide.sections().into_iter().map(|s| s.heading).collect();
    let body = match args.get("section").and_then(Value::as_str) {
        None => json!({"path": path, "sections": headings, "content": guide.text}),
        Some(wanted) => match guide.section(wanted) {
            Some(section) => json!({"path": path, "section": section.heading, "content": section.body}),
            None => {
                return Err(Error::BadRequest(format!(
                    "No section of {path} has \"{wanted}\" in its heading. Sections: {}.",
                    headings.join(", ")
                )));
            }
        },
    };
    let text = body["content"].as_str().unwrap_or_default().to_owned();
    Ok(flat(Ok(body), Map::new(), text, Output::default()))
}

/// `nyxilum_repl_start`.
async fn repl_start(nyx: &Nyxilum, owner: u64, party: &Party) -> Result<Answer, Error> {
    let nx = nyx.locator().locate()?;
    let id = nyx.sessions().start(owner, party, &nx).await?;
    let text = format!(
        "Started REPL session {id}. Declarations persist between nyxilum_repl_eval calls until nyxilum_repl_stop (at most {} sessions, {} of them yours; closed after {} minutes idle).",
        limits::REPL_SESSIONS,
        limits::REPL_SESSIONS_PER_PRINCIPAL,
        limits::REPL_IDLE.as_secs() / 60
    );
    Ok(flat(Ok(json!({"sessionId": id})), Map::new(), text, Output::default()))
}

/// `nyxilum_repl_eval`.
async fn repl_eval(nyx: &Nyxilum, owner: u64, args: &Value) -> Result<Answer, Error> {
    let id = text_arg(args, "session_id");
    let timeout = timeout_arg(args, limits::NYX_TIMEOUT.as_millis() as u64);
    let evaluated = nyx.sessions().eval(owner, id, text_arg(args, "code"), timeout).await?;
    Ok(match evaluated {
        Evaluated::Output { output, truncated } => {
            let text = if output.is_empty() {
                "(no output)".to_owned()
            } else {
                output.clone()
            };
            let out = Output {
                truncated,
                cap: format!("{} KiB", limits::NYX_OUTPUT_BYTES / 1024),
                ..Output::default()
            };
            flat(
                Ok(json!({"output": output, "truncated": truncated})),
                Map::new(),
                text,
                out,
            )
        }
        Evaluated::Killed(error) => {
            let mut fields = Map::new();
            fields.insert("sessionKilled".into(), json!(true));
            flat(
                Err(Error::Execution { message: error }),
                fields,
                String::new(),
                Output::default(),
            )
        }
    })
}

/// `nyxilum_repl_stop`.
async fn repl_stop(nyx: &Nyxilum, owner: u64, args: &Value) -> Result<Answer, Error> {
    let id = text_arg(args, "session_id");
    let (body, text) = if nyx.sessions().stop(owner, id).await {
        (json!({}), format!("Stopped REPL session {id}."))
    } else if super::repl::elsewhere(id) {
        return Err(Error::SessionElsewhere { id: id.to_owned() });
    } else {
        (
            json!({"alreadyGone": true}),
            format!("No live REPL session {id}: it was already stopped, killed or never existed."),
        )
    };
    Ok(flat(Ok(body), Map::new(), text, Output::default()))
}

/// `nyxilum_dev_build` and `nyxilum_dev_test`.
async fn dev(nyx: &Nyxilum, name: &str, which: Dev, args: &Value) -> Result<Answer, Error> {
    let configuration = match args.get("configuration").and_then(Value::as_str) {
        Some("Release") => "Release",
        _ => "Debug",
    };
    let timeout = timeout_arg(args, limits::DEV_TIMEOUT_MS_DEFAULT);
    let out = nyx.dev(which, configuration, timeout).await?;
    // A build that fails is a failed build, not a NyxilumNode error line: say it plainly.
    let plainly = format!(
        "{} exited with code {}; see stdout and stderr.",
        if which == Dev::Build {
            "dotnet build"
        } else {
            "tests/run_all.sh"
        },
        out.exit_code
            .map_or("none (killed by a signal)".to_owned(), |c| c.to_string())
    );
    Ok(process(name, &out, timeout, Map::new(), Some(plainly)))
}

/// A process's answer: its fields (plus `extra`) on both paths, the failure its
/// verdict names (or `failed_as`, when given, for a non-zero exit), and the headline.
fn process(
    name: &str,
    out: &Finished,
    timeout: Duration,
    extra: Map<String, Value>,
    failed_as: Option<String>,
) -> Answer {
    let v = verdict(out, timeout);
    let mut fields = Map::new();
    fields.insert("exitCode".into(), json!(out.exit_code));
    fields.insert("timedOut".into(), json!(out.timed_out));
    fields.insert("stdout".into(), json!(out.stdout.text));
    fields.insert("stderr".into(), json!(out.stderr.text));
    fields.insert("truncated".into(), json!(out.is_truncated()));
    fields.insert("durationMs".into(), json!(out.duration.as_millis() as u64));
    fields.extend(extra);
    let headline = format!(
        "{name} finished in {:.3} s: {}.",
        out.duration.as_secs_f64(),
        match (out.timed_out, out.exit_code) {
            (true, _) => "timed out and was killed".to_owned(),
            (false, Some(code)) => format!("exit code {code}"),
            (false, None) => format!("killed by signal {}", out.signal.unwrap_or_default()),
        }
    );
    let ended = match v.error {
        None => Ok(json!({})),
        Some(_) if out.timed_out => Err(Error::Timeout {
            what: format!("{name}'s NyxilumNode process"),
            after: timeout,
        }),
        Some(error) => Err(Error::Execution {
            message: failed_as.unwrap_or(error),
        }),
    };
    let output = Output {
        stdout: out.stdout.text.clone(),
        stderr: out.stderr.text.clone(),
        truncated: out.is_truncated(),
        cap: "its limit".to_owned(),
        result_cut: None,
    };
    flat(ended, fields, headline, output)
}
