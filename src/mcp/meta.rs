//! The meta-tool: `list`, `schema` and `run` over the whole catalogue, including tools
//! whose slugs cannot be advertised. Each command decodes its arguments, makes one core
//! call and converts the answer.

use rmcp::model::{CallToolResult, JsonObject};
use serde_json::{Value, json};

use super::batch::Progress;
use super::convert::{answer, failure, pretty, run_result};
use super::tools::COMMANDS;
use crate::catalogue::{Snapshot, Tool, example};
use crate::error::Error;
use crate::gateway::Gateway;
use crate::limits::{SEARCH_LIMIT_DEFAULT, SEARCH_LIMIT_RANGE};
use crate::search::QueryError;

/// Answers one meta-tool call. Never a protocol error: misuse is an `isError` result.
pub(crate) async fn call(
    gateway: &Gateway,
    meta_name: &str,
    args: &JsonObject,
    progress: Option<Progress>,
) -> CallToolResult {
    match dispatch(gateway, meta_name, args, progress).await {
        Ok(result) => result,
        Err(e) => failure(&e),
    }
}

async fn dispatch(
    gateway: &Gateway,
    meta_name: &str,
    args: &JsonObject,
    progress: Option<Progress>,
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
    match command {
        "search" => {
            let snapshot = gateway.snapshot().await?;
            Ok(search(&snapshot, args)?)
        }
        "list" => Ok(list(&*gateway.snapshot().await?)),
        "schema" => {
            let snapshot = gateway.snapshot().await?;
            let tool = snapshot.resolve(slug_arg(args)?)?;
            Ok(schema(tool, meta_name))
        }
        "run" => {
            let slug = slug_arg(args)?;
            let params = match args.get("params") {
                None | Some(Value::Null) => json!({}),
                Some(p) => p.clone(),
            };
            Ok(run_result(&gateway.run(slug, params).await?))
        }
        "batch" => super::batch::batch(gateway, args, progress).await,
        "history" => super::runs::history(gateway.history(), args),
        "diff" => super::runs::diff(gateway.history(), args),
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
    Ok(answer(text, json!({ "results": results })))
}

fn list(snapshot: &Snapshot) -> CallToolResult {
    let mut text = format!("{} tools:\n", snapshot.tools().len());
    let tools: Vec<Value> = snapshot
        .tools()
        .iter()
        .map(|t| {
            let m = &t.manifest;
            let reach = if t.is_advertisable {
                ""
            } else {
                " (meta-tool only: slug cannot be an MCP tool name)"
            };
            text.push_str(&format!("{} — {}{reach}\n", m.slug, m.summary()));
            json!({"slug": m.slug, "name": m.name, "description": m.summary(), "category": m.category, "tags": m.tags})
        })
        .collect();
    answer(text, json!({ "tools": tools }))
}

/// The ready-to-send call: the tool itself when it is advertised, else the meta-tool.
pub(crate) fn example_call(tool: &Tool, meta_name: &str) -> Value {
    let params = example::params_for(tool).unwrap_or_else(|| json!({}));
    if tool.is_advertisable {
        json!({"name": tool.slug(), "arguments": params})
    } else {
        json!({"name": meta_name, "arguments": {"command": "run", "slug": tool.slug(), "params": params}})
    }
}

fn schema(tool: &Tool, meta_name: &str) -> CallToolResult {
    let m = &tool.manifest;
    let call = example_call(tool, meta_name);
    let structured = json!({
        "slug": m.slug,
        "input_schema": m.input_schema,
        "output_schema": m.output_schema,
        "example": call,
    });
    let text = format!(
        "{} — {}\n\nInput schema:\n{}\n\nOutput schema:\n{}\n\nReady-to-send call:\n{}",
        m.slug,
        m.description,
        pretty(&m.input_schema),
        m.output_schema
            .as_ref()
            .map(pretty)
            .unwrap_or_else(|| "(none declared)".into()),
        pretty(&call)
    );
    answer(text, structured)
}
