//! The meta-tool: `list`, `schema` and `run` over the whole catalogue, including tools
//! whose slugs cannot be advertised. Each command decodes its arguments, makes one core
//! call and converts the answer.

use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{CallToolResult, JsonObject};
use serde_json::{Value, json};

use tokio_util::sync::CancellationToken;

use super::batch::Progress;
use super::convert::{answer, failure, pretty, run_result};
use super::page;
use super::tools::{COMMANDS, Listed, Listing};
use crate::access::Scope;
use crate::catalogue::{Snapshot, Tool, example};
use crate::error::Error;
use crate::gateway::{Caller, Gateway, Reach};
use crate::limits::QUERY_MAX_CHARS;
use crate::limits::{LIST_LIMIT_DEFAULT, LIST_LIMIT_RANGE, SEARCH_LIMIT_DEFAULT, SEARCH_LIMIT_RANGE};
use crate::registry::Entry;
use crate::search::Ranker;

/// Answers one meta-tool call. Never a protocol error: misuse is an `isError` result.
pub(crate) async fn call(
    gateway: &Gateway,
    caller: &Caller,
    listing: &Listing,
    args: JsonObject,
    progress: Option<Progress>,
    first: &FirstPage,
    cancel: &CancellationToken,
) -> CallToolResult {
    match dispatch(gateway, caller, listing, args, progress, first, cancel).await {
        Ok(result) => result,
        Err(e) => failure(&e),
    }
}

async fn dispatch(
    gateway: &Gateway,
    caller: &Caller,
    listing: &Listing,
    mut args: JsonObject,
    progress: Option<Progress>,
    first: &FirstPage,
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
            let snapshot = gateway.snapshot_for(caller).await?;
            search(gateway, &snapshot, &args).await
        }
        "list" => list(gateway, &gateway.snapshot_for(caller).await?, &args, first),
        "schema" => {
            let entry = gateway.resolve(caller, slug_arg(&args)?, Reach::Meta).await?;
            Ok(schema(gateway, &entry, listing))
        }
        "run" => {
            let slug = slug_arg(&args)?.to_owned();
            // Taken, not copied: the params may be large, and nothing has checked the
            // caller's rate yet.
            let params = match args.remove("params") {
                None | Some(Value::Null) => json!({}),
                Some(p) => p,
            };
            Ok(run_result(&gateway.run(caller, &slug, params, cancel).await?))
        }
        "batch" => super::batch::batch(gateway, caller, args, progress, cancel).await,
        "history" => super::runs::history(caller.history(), &args),
        "diff" => super::runs::diff(caller.history(), &args),
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

async fn search(gateway: &Gateway, snapshot: &Snapshot, args: &JsonObject) -> Result<CallToolResult, Error> {
    let query = match args.get("query") {
        Some(Value::String(q)) => q.as_str(),
        _ => {
            return Err(Error::BadRequest(
                "search needs \"query\": what you want to do, in words".into(),
            ));
        }
    };
    let limit = int_arg(args, "limit", SEARCH_LIMIT_DEFAULT, &SEARCH_LIMIT_RANGE)?;
    let found = gateway.search(snapshot, query, limit).await?;
    let (searched, is_cut) = (found.cut.text, found.cut.is_cut);
    let shown = if is_cut {
        format!("{searched}…")
    } else {
        searched.to_owned()
    };
    let mut text = if found.hits.is_empty() {
        format!("No tool matches \"{shown}\". Try other words, or the list command.\n")
    } else {
        format!(
            "{} for \"{shown}\", best first (ranked by {}):\n",
            crate::plural::count(found.hits.len(), "tool", "tools"),
            match found.ranker {
                Ranker::Hybrid => "words and meaning",
                Ranker::Lexical => "words",
            }
        )
    };
    let cut_note = is_cut.then(|| {
        let total = query.chars().count();
        let kept = searched.chars().count();
        text.insert_str(
            0,
            &format!(
                "The query is longer than {QUERY_MAX_CHARS} characters: its first {kept} of {total} were searched.\n"
            ),
        );
        json!({"searched_chars": kept, "query_chars": total})
    });
    // A score alone, or level with every other, says nothing: the text then leaves it out.
    let is_ranked = found.is_ranked();
    for (tool, hit) in &found.hits {
        let m = &tool.manifest;
        let score = if is_ranked {
            format!(" ({:.2})", hit.score)
        } else {
            String::new()
        };
        text.push_str(&format!(
            "{}{score} — {} [matched: {}]\n",
            m.slug,
            m.summary(),
            hit.matched.join("; ")
        ));
    }
    let mut structured = json!({ "results": found.results(), "ranker": found.ranker.label() });
    if let Some(note) = cut_note {
        structured["cut"] = note;
    }
    Ok(answer(true, text, structured))
}

/// The answer to `{"command":"list"}` with no other argument, kept per snapshot: the
/// embedded catalogue's list is one 13 KB page, built on every call it took ~0.5 ms.
/// Not kept when upstream servers are configured: their tools' availability, and the
/// servers named as down, change with the servers rather than with the snapshot.
#[derive(Debug, Default)]
pub(crate) struct FirstPage(Mutex<Option<(Arc<Snapshot>, CallToolResult)>>);

/// One page of every tool: the built-in runtime tools first, then the catalogue by slug,
/// from `cursor` (the `next_cursor` of the page before), at most `limit` tools and
/// [`crate::limits::PAGE_BYTES`]. A tool that cannot run here says why (`available:
/// false`, `unavailable`); so does an upstream server that is down (`unavailable_servers`).
fn list(
    gateway: &Gateway,
    snapshot: &Arc<Snapshot>,
    args: &JsonObject,
    first: &FirstPage,
) -> Result<CallToolResult, Error> {
    let is_first = ["cursor", "limit"]
        .iter()
        .all(|k| args.get(*k).is_none_or(Value::is_null));
    if is_first {
        let held = first.0.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((s, answer)) = held.as_ref()
            && Arc::ptr_eq(s, snapshot)
        {
            return Ok(answer.clone());
        }
    }
    let limit = int_arg(args, "limit", LIST_LIMIT_DEFAULT, &LIST_LIMIT_RANGE)?;
    // The built-ins the snapshot's tool policy admits (a view's), then its tools.
    let builtins: Vec<_> = gateway
        .builtins()
        .all()
        .iter()
        .filter(|b| snapshot.admits(&b.definition.name))
        .collect();
    let tools = snapshot.tools();
    let total = builtins.len() + tools.len();
    let fingerprint = snapshot.fingerprint();
    let start = match args.get("cursor") {
        None | Some(Value::Null) => 0,
        Some(Value::String(raw)) => {
            page::start(page::List::Meta, raw, fingerprint, total).map_err(Error::BadRequest)?
        }
        Some(_) => {
            return Err(Error::BadRequest(
                "\"cursor\" must be a string: the next_cursor of the page before".into(),
            ));
        }
    };
    let mut available = gateway.availability(snapshot);
    let rows = (start..total).map(|i| {
        let (row, line) = match i.checked_sub(builtins.len()) {
            None => {
                let d = &builtins[i].definition;
                let summary = crate::catalogue::manifest::first_sentence(&d.description);
                (
                    json!({"slug": d.name, "name": d.title, "description": summary, "category": "runtime", "tags": []}),
                    format!("{} — {summary} (runtime tool)\n", d.name),
                )
            }
            Some(t) => tool_row(gateway, &tools[t], &mut available),
        };
        let bytes =
            serde_json::to_string(&row).map_or(0, |r| r.len()) + serde_json::to_string(&line).map_or(0, |l| l.len());
        ((row, line), bytes)
    });
    let rows = page::take(rows, page::ROOM, limit);
    let end = start + rows.len();
    let mut text = if start == 0 && end == total {
        format!("{}:\n", crate::plural::count(total, "tool", "tools"))
    } else {
        format!(
            "{}; {} to {end}:\n",
            crate::plural::count(total, "tool", "tools"),
            start + 1
        )
    };
    let mut listed = Vec::with_capacity(rows.len());
    for (row, line) in rows {
        text.push_str(&line);
        listed.push(row);
    }
    let mut structured = json!({ "tools": listed, "total": total });
    // A server that is down lists no tools of its own (one that never started has none
    // to keep): it is named here with why, so its absence is not a mystery.
    let down = gateway.upstreams().map(|u| u.down()).unwrap_or_default();
    if !down.is_empty() {
        for (server, reason) in &down {
            text.push_str(&format!("Upstream server \"{server}\" is unavailable: {reason}.\n"));
        }
        structured["unavailable_servers"] = down
            .iter()
            .map(|(server, reason)| json!({"server": server, "code": "UPSTREAM_UNAVAILABLE", "reason": reason}))
            .collect();
    }
    // A tool held by its pin is not listed either: named here, with what changed.
    let mut held = gateway.upstreams().map(|u| u.held_all()).unwrap_or_default();
    held.retain(|(slug, _)| snapshot.admits(slug));
    if !held.is_empty() {
        for (slug, e) in &held {
            text.push_str(&format!("{slug} is held: {e}\n"));
        }
        structured["held_tools"] = held
            .iter()
            .map(|(slug, e)| json!({"slug": slug, "code": e.code(), "reason": e.to_string()}))
            .collect();
    }
    if end < total {
        let next = page::cursor(page::List::Meta, end, fingerprint);
        text.push_str(&format!("More: {{\"command\":\"list\",\"cursor\":\"{next}\"}}\n"));
        structured["next_cursor"] = json!(next);
    }
    let answer = answer(true, text, structured);
    if is_first && gateway.upstreams().is_none() {
        *first.0.lock().unwrap_or_else(PoisonError::into_inner) = Some((snapshot.clone(), answer.clone()));
    }
    Ok(answer)
}

/// One catalogue tool's row of `list`, and its line of text.
fn tool_row(gateway: &Gateway, t: &Tool, available: &mut impl FnMut(&Tool) -> Result<(), Error>) -> (Value, String) {
    let m = &t.manifest;
    let mut row =
        json!({"slug": m.slug, "name": m.name, "description": m.summary(), "category": m.category, "tags": m.tags});
    let mut notes = Vec::new();
    if !t.is_advertisable {
        notes.push("meta-tool only: slug cannot be an MCP tool name".to_owned());
    }
    // An upstream's description that addresses the model is flagged, never rewritten.
    if let Some(flags) = m.extra.get("flags").filter(|f| f.is_array()) {
        let names: Vec<&str> = flags
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(Value::as_str)
            .collect();
        notes.push(format!("flagged: {}", names.join(", ")));
        row["flags"] = flags.clone();
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
    (row, format!("{} — {}{notes}\n", m.slug, m.summary()))
}

/// An integer argument `key` within `range`, `default` when absent.
fn int_arg(
    args: &JsonObject,
    key: &str,
    default: usize,
    range: &std::ops::RangeInclusive<u64>,
) -> Result<usize, Error> {
    match args.get(key) {
        None | Some(Value::Null) => Ok(default),
        Some(v) => match v.as_u64() {
            Some(n) if range.contains(&n) => Ok(n as usize),
            _ => Err(Error::BadRequest(format!(
                "\"{key}\" must be an integer from {} to {}, not {v}",
                range.start(),
                range.end()
            ))),
        },
    }
}

/// A ready-to-send call of the tool `name` with `params`: the tool itself when it is
/// `listed` (in the advertised `tools/list`, so a client that calls only listed tools
/// can call it), else the meta-tool's `run`, which works for every client.
fn call_for(name: &str, listed: bool, params: Value, meta_name: &str) -> Value {
    if listed {
        json!({"name": name, "arguments": params})
    } else {
        json!({"name": meta_name, "arguments": {"command": "run", "slug": name, "params": params}})
    }
}

/// The ready-to-send call of a catalogue tool, direct when `listed` (the advertised list
/// of its snapshot) lists it.
pub(crate) fn example_call(tool: &Tool, meta_name: &str, listed: &Listed) -> Value {
    let params = example::params_for(tool).unwrap_or_else(|| json!({}));
    call_for(tool.slug(), listed.lists(tool.slug()), params, meta_name)
}

/// The ready-to-send call of any tool: direct when the advertised list names it.
fn entry_call(gateway: &Gateway, entry: &Entry, listing: &Listing) -> Value {
    let listed = match entry {
        Entry::Builtin(_) => true,
        Entry::Catalogue { snapshot, .. } | Entry::Upstream { snapshot, .. } => {
            listing.advertised(gateway, Some(snapshot)).lists(entry.name())
        }
    };
    call_for(entry.name(), listed, entry.example_params(), listing.meta_name())
}

fn schema(gateway: &Gateway, entry: &Entry, listing: &Listing) -> CallToolResult {
    let call = entry_call(gateway, entry, listing);
    let (input, output) = (entry.input_schema(), entry.output_schema());
    let typescript = entry.typescript();
    let mut text = format!(
        "{} — {}\n\nInput schema:\n{}\n\nOutput schema:\n{}\n\nReady-to-send call:\n{}",
        entry.name(),
        entry.description(),
        pretty(&input),
        output.as_ref().map(pretty).unwrap_or_else(|| "(none declared)".into()),
        pretty(&call)
    );
    if let Some(ts) = &typescript {
        text.push_str(&format!(
            "\n\nIn code (run_javascript's `tools`), a method of `interface Tools`:\n{ts}"
        ));
    }
    let structured = json!({
        "slug": entry.name(),
        "input_schema": input,
        "output_schema": output,
        "example": call,
        "typescript": typescript,
    });
    answer(true, text, structured)
}
