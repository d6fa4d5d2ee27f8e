//! MCP resources: the guide, the catalogue overview, one manifest per tool (a template),
//! the TypeScript declarations of code mode (`types.rs`) and the run history; a URI outside the `NAME:` scheme is read from the catalogue's own
//! resources (`extras.rs`). A tool URI resolves its slug exactly or by unambiguous
//! abbreviation; an unknown one is a protocol error naming the close matches. The
//! catalogue overview comes in pages (`NAME://catalogue`, then each page's `next` URI).

use std::sync::Arc;

use super::convert::pretty;
use rmcp::ErrorData as McpError;
use rmcp::model::{Resource, ResourceContents, ResourceTemplate};
use serde_json::{Value, json};

use super::meta::example_call;
use super::page;
use super::tools::Listing;
use crate::catalogue::Snapshot;
use crate::error::Error;
use crate::gateway::{Caller, Gateway};
use crate::history::{SCOPE, process_started_at};

/// The usage guide (resources/guide.md).
const GUIDE: &str = include_str!("../../resources/guide.md");

/// The fixed resources, for `resources/list`.
pub(crate) fn list(name: &str) -> Vec<Resource> {
    vec![
        Resource::new(format!("{name}://guide"), "guide")
            .with_title("How to use this gateway")
            .with_description("Meta-tool commands, recovery from each error code, limits.")
            .with_mime_type("text/markdown"),
        Resource::new(format!("{name}://catalogue"), "catalogue")
            .with_title("Every tool, without full schemas")
            .with_description("Slug, description, category, tags, parameter counts and the URI of each full manifest; in pages, each naming the next.")
            .with_mime_type("application/json"),
        super::types::resource(name),
        Resource::new(format!("{name}://history"), "history")
            .with_title("What this MCP session has run")
            .with_description("The run index of this MCP session, newest first (the last 50).")
            .with_mime_type("application/json"),
    ]
}

/// The tool manifest template, for `resources/templates/list`.
pub(crate) fn templates(name: &str) -> Vec<ResourceTemplate> {
    vec![
        ResourceTemplate::new(format!("{name}://tools/{{slug}}"), "tool")
            .with_title("One tool's full manifest")
            .with_description("Input and output JSON Schema, examples, and a ready-to-send call.")
            .with_mime_type("application/json"),
        super::types::template(name),
    ]
}

/// Reads one resource of toolgate's own or of the catalogue (not an upstream's), from
/// `snapshot` when given, else from the gateway's current one; its scheme is the
/// meta-tool's name, and a tool's ready-to-send call is as `listing` advertises it.
pub(crate) async fn read(
    gateway: &Gateway,
    caller: &Caller,
    listing: &Listing,
    uri: &str,
    snapshot: Option<&Arc<Snapshot>>,
) -> Result<ResourceContents, McpError> {
    let name = listing.meta_name();
    let not_found = || super::extras::not_found(uri, name);
    let current = || async {
        match snapshot {
            Some(s) => Ok(s.clone()),
            None => gateway.snapshot_for(caller).await.map_err(|e| unavailable(&e)),
        }
    };
    let Some(path) = uri.strip_prefix(name).and_then(|rest| rest.strip_prefix("://")) else {
        let snapshot = current().await?;
        return match super::extras::read(&snapshot, uri) {
            Some(read) => read,
            None => Err(not_found()),
        };
    };
    let text = |t: String| ResourceContents::text(t, uri).with_mime_type("application/json");
    match path {
        "guide" => Ok(ResourceContents::text(guide(gateway, name), uri).with_mime_type("text/markdown")),
        "catalogue" => {
            let snapshot = current().await?;
            Ok(text(pretty(&catalogue(gateway, &snapshot, listing, None)?)))
        }
        _ if path.starts_with("catalogue?cursor=") => {
            let snapshot = current().await?;
            let cursor = &path["catalogue?cursor=".len()..];
            Ok(text(pretty(&catalogue(gateway, &snapshot, listing, Some(cursor))?)))
        }
        "history" => {
            let h = caller.history();
            let runs: Vec<Value> = h.newest_first().iter().map(|r| r.summary()).collect();
            Ok(text(pretty(
                &json!({"scope": SCOPE, "process_started_at": process_started_at(), "session_started_at": h.session_started_at(), "runs": runs}),
            )))
        }
        _ if path.starts_with("types/") => {
            let snapshot = current().await?;
            let rest = percent_decode(&path["types/".len()..]);
            let declared = super::types::read(gateway, caller, &snapshot, name, &rest).await?;
            Ok(ResourceContents::text(declared, uri).with_mime_type(super::types::MIME))
        }
        _ => {
            let Some(raw) = path.strip_prefix("tools/") else {
                return Err(not_found());
            };
            let slug = percent_decode(raw);
            let snapshot = current().await?;
            let tool = snapshot
                .resolve(&slug)
                .map_err(|e| McpError::resource_not_found(e.to_string(), Some(json!({"code": e.code()}))))?;
            let mut manifest = serde_json::to_value(&tool.manifest).unwrap_or(Value::Null);
            // Direct only when tools/list lists the tool: a client that calls only
            // listed tools could not send it otherwise.
            manifest["example"] = example_call(tool, name, &listing.advertised(gateway, Some(&snapshot)));
            manifest["uri"] = json!(tool_uri(name, tool.slug()));
            Ok(text(pretty(&manifest)))
        }
    }
}

/// The usage guide, its placeholders filled: the resource scheme, the error codes with
/// their advice (the one table in `error.rs`) and the limits in force.
fn guide(gateway: &Gateway, name: &str) -> String {
    let mut codes = "| code | retry? | what to do |\n|---|---|---|\n".to_owned();
    for (code, retry, advice) in crate::error::CODES {
        codes.push_str(&format!("| `{code}` | {retry} | {advice} |\n"));
    }
    let limits = gateway.limits();
    let js = format!(
        "{} MiB heap, {} s, {} characters per output stream",
        limits.js_heap_bytes / (1024 * 1024),
        limits.js_wall_clock.as_secs_f64(),
        crate::limits::grouped(limits.output_chars as u64)
    );
    let fetch = format!(
        "{} s per request, bodies up to {} MiB",
        limits.fetch_timeout.as_secs_f64(),
        crate::limits::FETCH_BODY_BYTES / (1024 * 1024)
    );
    GUIDE
        .replace("toolgate://", &format!("{name}://"))
        .replace("{{codes}}", codes.trim_end())
        .replace("{{js_limits}}", &js)
        .replace("{{fetch_limits}}", &fetch)
}

/// One page of the catalogue overview: every tool, no full schemas, a page of at most
/// [`crate::limits::PAGE_BYTES`] at a time from `cursor`; `next` is the URI of the page
/// after, when there is one. A tool that cannot run here says why; `advertised` says
/// whether `tools/list` lists it.
fn catalogue(
    gateway: &Gateway,
    snapshot: &Arc<Snapshot>,
    listing: &Listing,
    cursor: Option<&str>,
) -> Result<Value, McpError> {
    let name = listing.meta_name();
    let listed = listing.advertised(gateway, Some(snapshot));
    let tools = snapshot.tools();
    let fingerprint = snapshot.fingerprint();
    let start = match cursor {
        None => 0,
        Some(raw) => page::start(page::List::Catalogue, raw, fingerprint, tools.len())
            .map_err(|e| McpError::invalid_params(e, None))?,
    };
    let mut check = gateway.availability(snapshot);
    let rows = tools[start..].iter().map(|t| {
        let m = &t.manifest;
        let (props, required) = t.parameter_counts();
        let available = check(t);
        let mut row = json!({
            "slug": m.slug,
            "description": m.description,
            "category": m.category,
            "tags": m.tags,
            "parameters": props,
            "required_parameters": required,
            "has_schema": props > 0 || m.output_schema.is_some(),
            "advertised": listed.lists(&m.slug),
            "manifest": tool_uri(name, &m.slug),
            "available": available.is_ok(),
        });
        if let Err(e) = available {
            row["unavailable"] = json!({"code": e.code(), "reason": e.to_string()});
        }
        // An upstream's description that addresses the model is flagged, never rewritten.
        if let Some(flags) = m.extra.get("flags").filter(|f| f.is_array()) {
            row["flags"] = flags.clone();
        }
        // As the page prints it: pretty, two levels in (four more spaces a line).
        let printed = pretty(&row);
        let bytes = printed.len() + 4 * (printed.lines().count()) + 2;
        (row, bytes)
    });
    let rows = page::take(rows, page::ROOM, usize::MAX);
    let end = start + rows.len();
    let mut answer = json!({ "tools": rows, "total": tools.len() });
    if end < tools.len() {
        let next = page::cursor(page::List::Catalogue, end, fingerprint);
        answer["next"] = json!(format!("{name}://catalogue?cursor={next}"));
    }
    Ok(answer)
}

/// The manifest URI of a tool; slugs outside the URI-safe set are percent-encoded.
pub fn tool_uri(name: &str, slug: &str) -> String {
    let mut out = format!("{name}://tools/");
    for b in slug.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

fn percent_decode(raw: &str) -> String {
    let bytes = raw.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let hex = |b: u8| (b as char).to_digit(16);
        if bytes[i] == b'%'
            && let (Some(h), Some(l)) = (
                bytes.get(i + 1).and_then(|b| hex(*b)),
                bytes.get(i + 2).and_then(|b| hex(*b)),
            )
        {
            out.push((h * 16 + l) as u8);
            i += 3;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

fn unavailable(e: &Error) -> McpError {
    McpError::internal_error(
        e.to_string(),
        Some(json!({"code": e.code(), "retryable": e.retryable()})),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tool_uris_round_trip() {
        let uri = tool_uri("tg", "bad slug/with space");
        assert_eq!(uri, "tg://tools/bad%20slug%2Fwith%20space");
        assert_eq!(
            percent_decode(uri.strip_prefix("tg://tools/").unwrap()),
            "bad slug/with space"
        );
        assert_eq!(percent_decode("100%"), "100%");
    }
}
