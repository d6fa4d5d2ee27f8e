//! The TypeScript resources of code mode: `NAME://types/{slug}`, one tool's method of
//! `interface Tools`, and `NAME://types/tools.d.ts`, every tool code may call, in pages of
//! at most [`crate::limits::PAGE_BYTES`] (each page a valid declaration on its own —
//! TypeScript merges the `interface Tools` of every page — ending with the URI of the
//! next). The declarations themselves are made by the JavaScript family
//! (`backends::js::typings`) from each entry's schemas.

use std::sync::Arc;

use rmcp::ErrorData as McpError;
use rmcp::model::{Resource, ResourceTemplate};
use serde_json::json;

use super::page;
use crate::backends::js::typings::API;
use crate::catalogue::Snapshot;
use crate::gateway::Gateway;
use crate::registry::Entry;

/// The MIME type the declarations are served as.
pub(crate) const MIME: &str = "application/typescript";

/// The name of the whole set's resource, under `NAME://types/`.
const ALL: &str = "tools.d.ts";

/// The whole set's resource, for `resources/list`.
pub(crate) fn resource(name: &str) -> Resource {
    Resource::new(format!("{name}://types/{ALL}"), "tools.d.ts")
        .with_title("Every tool as a TypeScript function, for code mode")
        .with_description("Declarations of run_javascript's `tools` global: each callable tool as a typed method, in pages, each ending with the URI of the next.")
        .with_mime_type(MIME)
}

/// One tool's declaration, for `resources/templates/list`.
pub(crate) fn template(name: &str) -> ResourceTemplate {
    ResourceTemplate::new(format!("{name}://types/{{slug}}"), "types")
        .with_title("One tool as a TypeScript function, for code mode")
        .with_description("Its method of run_javascript's `tools`, typed from its input and output schemas.")
        .with_mime_type(MIME)
}

/// The text of `NAME://types/{rest}`: one tool's declaration (`rest` its slug, exact or
/// an unambiguous abbreviation) or a page of the whole set (`tools.d.ts`, then
/// `tools.d.ts?cursor=...`).
pub(crate) async fn read(
    gateway: &Gateway,
    caller: &crate::gateway::Caller,
    snapshot: &Arc<Snapshot>,
    name: &str,
    rest: &str,
) -> Result<String, McpError> {
    if rest == ALL {
        return all(gateway, snapshot, name, None);
    }
    if let Some(cursor) = rest.strip_prefix(ALL).and_then(|r| r.strip_prefix("?cursor=")) {
        return all(gateway, snapshot, name, Some(cursor));
    }
    let entry = gateway
        .resolve_holding(caller, rest, crate::gateway::Reach::Meta, &mut Some(snapshot.clone()))
        .await
        .map_err(|e| McpError::resource_not_found(e.to_string(), Some(json!({"code": e.code()}))))?;
    let Some(method) = entry.typescript() else {
        let why = format!(
            "{} is not a tool code can call: snippets call tools, not other snippets",
            entry.name()
        );
        return Err(McpError::resource_not_found(why, Some(json!({"code": "BAD_REQUEST"}))));
    };
    Ok(format!(
        "// {} as a method of run_javascript's `tools` ({name}://types/{ALL} declares `tools` itself).\ninterface Tools {{\n{method}}}\n",
        entry.name()
    ))
}

/// One page of every tool code may call: the built-in tools it may call, then the
/// catalogue's (those that can run here), from `cursor`.
fn all(gateway: &Gateway, snapshot: &Arc<Snapshot>, name: &str, cursor: Option<&str>) -> Result<String, McpError> {
    let mut entries: Vec<Entry> = gateway
        .builtins()
        .all()
        .iter()
        .filter(|b| snapshot.admits(&b.definition.name))
        .map(|b| Entry::Builtin(b.clone()))
        .filter(|e| e.typescript().is_some())
        .collect();
    let mut check = gateway.availability(snapshot);
    entries.extend(
        snapshot
            .tools()
            .iter()
            .filter(|t| check(t).is_ok())
            .map(|t| gateway.entry_of(t.clone(), snapshot.clone())),
    );
    // The list changes with the snapshot and with the built-ins (fixed for the process).
    let fingerprint = snapshot.fingerprint();
    let start = match cursor {
        None => 0,
        Some(raw) => page::start(page::List::Types, raw, fingerprint, entries.len())
            .map_err(|e| McpError::invalid_params(e, None))?,
    };
    let methods = entries[start..].iter().filter_map(|e| {
        let method = e.typescript()?;
        let bytes = method.len();
        Some((method, bytes))
    });
    let room = if start == 0 { page::ROOM - API.len() } else { page::ROOM };
    let methods = page::take(methods, room, usize::MAX);
    let end = start + methods.len();
    let mut text = String::new();
    if start == 0 {
        text.push_str(API);
        text.push('\n');
    }
    text.push_str("interface Tools {\n");
    for method in &methods {
        text.push_str(method);
    }
    text.push_str("}\n");
    if end < entries.len() {
        let next = page::cursor(page::List::Types, end, fingerprint);
        text.push_str(&format!("// Continued in {name}://types/{ALL}?cursor={next}\n"));
    }
    Ok(text)
}
