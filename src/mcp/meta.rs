//! The meta-tool: `list`, `schema` and `run` over the whole catalogue, including tools
//! whose slugs cannot be advertised. Each command decodes its arguments, makes one core
//! call and converts the answer.

use rmcp::model::{CallToolResult, JsonObject};
use serde_json::{Value, json};

use tokio_util::sync::CancellationToken;

use super::batch::Progress;
use super::convert::{answer, failure, pretty, run_result};
use super::tools::COMMANDS;
use crate::access::Scope;
use crate::catalogue::{Snapshot, Tool, example};
use crate::error::Error;
use crate::gateway::{Caller, Gateway, Reach};
use crate::limits::{SEARCH_LIMIT_DEFAULT, SEARCH_LIMIT_RANGE};
use crate::registry::Entry;
use crate::search::QueryError;

/// Answers one meta-tool call. Never a protocol error: misuse is an `isError` result.
pub(crate) async fn call(
    gateway: &Gateway,
    caller: &Caller,
    meta_name: &str,
    args: &JsonObject,
    progress: Option<Progress>,
    cancel: &CancellationToken,
) -> CallToolResult {
    match dispatch(gateway, caller, meta_name, args, progress, cancel).await {
        Ok(result) => result,
        Err(e) => failure(&e),
    }
}

async fn dispatch(
    gateway: &Gateway,
    caller: &Caller,
    meta_name: &str,
    args: &JsonObject,
    progress: Option<Progress>,
    cancel: &CancellationToken,
) -> Result<CallToolResult, Error> {
    let command = match args.get("command") {
        Some(Value::String(c)) => c.as_str(),
        Some(_) => return Err(Error::BadRequest("\"command\" must be a string".into())),
        None => {
            return Err(Error::BadRequest(format!(
                "the meta-tool needs a \"command\": one of {}",
                COMMANDS.join(", ")
            )));
        }
    };
    if matches!(command, "search" | "list" | "schema") {
        caller.may(Scope::Search)?;
    }
    match command {
        "search" => {
            let snapshot = gateway.snapshot().await?;
            Ok(search(&snapshot, args)?)
        }
        "list" => Ok(list(gateway, &*gateway.snapshot().await?)),
        "schema" => {
            let entry = gateway.resolve(slug_arg(args)?, Reach::Meta).await?;
            Ok(schema(&entry, meta_name))
        }
        "run" => {
            let slug = slug_arg(args)?;
            let params = match args.get("params") {
                None | Some(Value::Null) => json!({}),
                Some(p) => p.clone(),
            };
            Ok(run_result(&gateway.run(caller, slug, params, cancel).await?))
        }
        "batch" => super::batch::batch(gateway, caller, args, progress, cancel).await,
        "history" => super::runs::history(caller.history(), args),
        "diff" => super::runs::diff(caller.history(), args),
        other => Err(Error::UnknownCommand {
            command: other.to_owned(),
            known: COMMANDS.iter().map(|c| (*c).to_owned()).collect(),
        }),
    }
}

fn slug_arg(args: &JsonObject) -> Result<&str, Error> {
    match args.get("slug") {
        Some(Value::String(s)) if !s.is_empty() => Ok(s),
        _ => Err(Error::BadRequest(
            "this command needs \"slug\": a tool's slug (see the list command)".into(),
        )),
    }
}

fn search(snapshot: &Snapshot, args: &JsonObject) -> Result<CallToolResult, Error> {
    let query = match args.get("query") {
        Some(Value::String(q)) => q.as_str(),
        _ => {
            return Err(Error::BadRequest(
                "search needs \"query\": what you want to do, in words".into(),
            ));
        }
    };
    let limit = match args.get("limit") {
        None | Some(Value::Null) => SEARCH_LIMIT_DEFAULT,
        Some(v) => match v.as_u64() {
            Some(n) if SEARCH_LIMIT_RANGE.contains(&n) => n as usize,
            _ => {
                return Err(Error::BadRequest(format!(
                    "\"limit\" must be an integer from {} to {}, not {v}",
                    SEARCH_LIMIT_RANGE.start(),
                    SEARCH_LIMIT_RANGE.end()
                )));
            }
        },
    };
    let hits = snapshot.search(query, limit).map_err(|e| {
        Error::BadRequest(match e {
            QueryError::Empty => "the query is empty: say in words what the tool should do".to_owned(),
            QueryError::OnlyStopWords => {
                format!("the query \"{query}\" has only words too common to search by; name the task or the data, e.g. \"validate env file\"")
            }
            QueryError::TooLong { max } => {
                format!("the query is longer than {max} characters, the limit: say in a few words what the tool should do")
            }
        })
    })?;
    let mut text = if hits.is_empty() {
        format!("No tool matches \"{query}\". Try other words, or the list command.\n")
    } else {
        format!(
            "{} {} for \"{query}\", best first:\n",
            hits.len(),
            if hits.len() == 1 { "tool" } else { "tools" }
        )
    };
    let results: Vec<Value> = hits
        .iter()
        .map(|(tool, hit)| {
            let m = &tool.manifest;
            text.push_str(&format!(
                "{} ({:.2}) — {} [matched: {}]\n",
                m.slug,
                hit.score,
                m.summary(),
                hit.matched.join("; ")
            ));
            json!({
                "slug": m.slug,
                "name": m.name,
                "score": (hit.score as f64 * 1000.0).round() / 1000.0,
                "description": m.summary(),
                "matched": hit.matched,
            })
        })
        .collect();
    Ok(answer(true, text, json!({ "results": results })))
}

/// Every tool: the built-in runtime tools first, then the catalogue by slug. A tool
/// that cannot run here says why (`available: false`, `unavailable`).
fn list(gateway: &Gateway, snapshot: &Snapshot) -> CallToolResult {
    let builtins = gateway.builtins().all();
    let mut text = format!("{} tools:\n", builtins.len() + snapshot.tools().len());
    let mut tools: Vec<Value> = builtins
        .iter()
        .map(|b| {
            let d = &b.definition;
            let summary = crate::catalogue::manifest::first_sentence(&d.description);
            text.push_str(&format!("{} — {summary} (runtime tool)\n", d.name));
            json!({"slug": d.name, "name": d.title, "description": summary, "category": "runtime", "tags": []})
        })
        .collect();
    let mut available = gateway.availability(snapshot);
    tools.extend(snapshot.tools().iter().map(|t| {
        let m = &t.manifest;
        let mut row =
            json!({"slug": m.slug, "name": m.name, "description": m.summary(), "category": m.category, "tags": m.tags});
        let mut notes = Vec::new();
        if !t.is_advertisable {
            notes.push("meta-tool only: slug cannot be an MCP tool name".to_owned());
        }
        if let Err(e) = available(t).and_then(|()| gateway.reachable(t)) {
            notes.push(format!("unavailable here: {}", e.code()));
            row["available"] = json!(false);
            row["unavailable"] = json!({"code": e.code(), "reason": e.to_string()});
        }
        let notes = if notes.is_empty() {
            String::new()
        } else {
            format!(" ({})", notes.join("; "))
        };
        text.push_str(&format!("{} — {}{notes}\n", m.slug, m.summary()));
        row
    }));
    answer(true, text, json!({ "tools": tools }))
}

/// A ready-to-send call of the tool `name` with `params`: the tool itself when a direct
/// call can name it, else the meta-tool's `run`.
fn call_for(name: &str, advertisable: bool, params: Value, meta_name: &str) -> Value {
    if advertisable {
        json!({"name": name, "arguments": params})
    } else {
        json!({"name": meta_name, "arguments": {"command": "run", "slug": name, "params": params}})
    }
}

/// The ready-to-send call of a catalogue tool.
pub(crate) fn example_call(tool: &Tool, meta_name: &str) -> Value {
    let params = example::params_for(tool).unwrap_or_else(|| json!({}));
    call_for(tool.slug(), tool.is_advertisable, params, meta_name)
}

/// The ready-to-send call of any tool.
fn entry_call(entry: &Entry, meta_name: &str) -> Value {
    call_for(entry.name(), entry.is_advertisable(), entry.example_params(), meta_name)
}

fn schema(entry: &Entry, meta_name: &str) -> CallToolResult {
    let call = entry_call(entry, meta_name);
    let structured = json!({
        "slug": entry.name(),
        "input_schema": entry.input_schema(),
        "output_schema": entry.output_schema(),
        "example": call,
    });
    let text = format!(
        "{} — {}\n\nInput schema:\n{}\n\nOutput schema:\n{}\n\nReady-to-send call:\n{}",
        entry.name(),
        entry.description(),
        pretty(entry.input_schema()),
        entry
            .output_schema()
            .map(pretty)
            .unwrap_or_else(|| "(none declared)".into()),
        pretty(&call)
    );
    answer(true, text, structured)
}
