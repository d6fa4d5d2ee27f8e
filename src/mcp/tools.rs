//! The advertised tool list: the meta-tool first, then catalogue tools by slug.

use std::sync::Arc;

use super::convert::object;
use rmcp::model::{Tool as McpTool, ToolAnnotations};
use serde_json::{Value, json};

use crate::catalogue::{Snapshot, Tool};
use crate::config::Advertise;
use crate::limits::ADVERTISE_AUTO_MAX;

/// The commands the meta-tool answers today.
pub(crate) const COMMANDS: &[&str] = &["search", "list", "schema", "run", "batch", "history", "diff"];

/// The meta-tool's definition.
pub(crate) fn meta_tool(name: &str) -> McpTool {
    let schema = json!({
        "type": "object",
        "properties": {
            "command": {"type": "string", "description": format!("One of: {}.", COMMANDS.join(", "))},
            "query": {"type": "string", "description": "For search: what you want to do, in words."},
            "limit": {"type": "integer", "minimum": 1, "maximum": 50, "default": 10, "description": "For search: how many results (1-50)."},
            "slug": {"type": "string", "description": "The tool, for schema and run: its full slug or an unambiguous abbreviation."},
            "params": {"type": "object", "description": "For run: the tool's params, as its input schema says."},
            "runs": {
                "type": "array", "maxItems": 10,
                "items": {"type": "object", "properties": {"slug": {"type": "string"}, "params": {"type": "object"}}, "required": ["slug"]},
                "description": "For batch: up to 10 runs, all validated before any runs."
            },
            "show": {"type": "string", "description": "For history: one run in full, by id (r3) or from the newest (-1, -2)."},
            "from": {"type": "string", "description": "For diff: the first run (default -2, the one before the newest)."},
            "to": {"type": "string", "description": "For diff: the second run (default -1, the newest)."}
        },
        "required": ["command"]
    });
    let description = "Gateway to the tool catalogue. {\"command\":\"search\",\"query\":\"validate env file\"} ranks tools by what you want to do; {\"command\":\"list\"} lists every tool; {\"command\":\"schema\",\"slug\":\"...\"} gives a tool's exact input and output schema and a ready-to-send call; {\"command\":\"run\",\"slug\":\"...\",\"params\":{...}} runs it; {\"command\":\"batch\",\"runs\":[{\"slug\":\"...\",\"params\":{...}}]} runs up to 10 at once (all validated first; failures isolated); {\"command\":\"history\"} lists what this server has run ({\"show\":\"-1\"} gives the newest run whole); {\"command\":\"diff\",\"from\":\"-2\",\"to\":\"-1\"} compares two runs. Slugs resolve by exact match or unambiguous abbreviation, never by guess. Errors carry a stable code and a retryable flag.";
    McpTool::new(name.to_owned(), description, object(schema))
        .with_title("Tool catalogue gateway")
        .with_annotations(annotations(&json!({"readOnlyHint": false, "openWorldHint": true})))
}

/// The advertised list of the snapshot last listed, kept because describing every tool
/// (output schemas wrapped in the run envelope) was ~60% of answering `tools/list`, and
/// clients list often while the snapshot rarely changes.
#[derive(Debug, Default)]
pub(crate) struct Listing {
    last: std::sync::Mutex<Option<(Arc<Snapshot>, Vec<McpTool>)>>,
}

impl Listing {
    /// [`advertised`] for `snapshot`, described again only when the snapshot changed.
    pub(crate) fn advertised(
        &self,
        snapshot: Option<&Arc<Snapshot>>,
        name: &str,
        advertise: Advertise,
    ) -> Vec<McpTool> {
        let Some(snapshot) = snapshot else {
            return advertised(None, name, advertise);
        };
        let mut last = self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
        if let Some((held, list)) = last.as_ref()
            && Arc::ptr_eq(held, snapshot)
        {
            return list.clone();
        }
        let list = advertised(Some(snapshot), name, advertise);
        *last = Some((snapshot.clone(), list.clone()));
        list
    }
}

/// Every tool `tools/list` shows, in stable order.
pub(crate) fn advertised(snapshot: Option<&Snapshot>, name: &str, advertise: Advertise) -> Vec<McpTool> {
    let mut list = vec![meta_tool(name)];
    list.extend(listed(snapshot, advertise).map(|t| describe(t)));
    list
}

/// The names `tools/list` shows, in the same order as [`advertised`].
pub(crate) fn advertised_names(snapshot: Option<&Snapshot>, name: &str, advertise: Advertise) -> Vec<String> {
    std::iter::once(name.to_owned())
        .chain(listed(snapshot, advertise).map(|t| t.slug().to_owned()))
        .collect()
}

/// The catalogue tools listed under `advertise`.
fn listed(snapshot: Option<&Snapshot>, advertise: Advertise) -> impl Iterator<Item = &Arc<Tool>> {
    let tools = snapshot.map_or(&[][..], |s| s.tools());
    let count = tools.iter().filter(|t| t.is_advertisable).count();
    let show = match advertise {
        Advertise::All => true,
        Advertise::Meta => false,
        Advertise::Auto => count <= ADVERTISE_AUTO_MAX,
    };
    tools.iter().filter(move |t| show && t.is_advertisable)
}

/// One catalogue tool as MCP describes it. The output schema describes the whole
/// `structuredContent` of a run, with the tool's own output schema under `result`, so a
/// client that checks results against it (as MCP asks) accepts them.
pub(crate) fn describe(tool: &Tool) -> McpTool {
    let m = &tool.manifest;
    let title = if m.name.is_empty() {
        m.slug.clone()
    } else {
        m.name.clone()
    };
    let mut mcp =
        McpTool::new(m.slug.clone(), m.description.clone(), object(m.input_schema.clone())).with_title(title.clone());
    mcp = mcp.with_raw_output_schema(Arc::new(object(run_output_schema(m.output_schema.as_ref()))));
    let mut hints = m.annotations.clone().map(Value::Object).unwrap_or_else(|| json!({}));
    if hints.get("title").is_none() {
        hints["title"] = json!(title);
    }
    mcp.with_annotations(annotations(&hints))
}

/// The schema of a run's `structuredContent` (DESIGN §5), wrapping the tool's own.
///
/// The tool's `$defs`/`definitions` are hoisted to the wrapper's root, so its local
/// references (`#/$defs/...`) still resolve once it sits under `result`.
pub fn run_output_schema(result: Option<&Value>) -> Value {
    let mut result = result.cloned().unwrap_or_else(|| json!({}));
    let mut wrapper = json!({
        "type": "object",
        "properties": {
            "success": {"type": "boolean"},
            "duration_ms": {"type": "integer", "minimum": 0},
            "run_id": {"type": "string"},
            "stdout": {"type": "string"},
            "stderr": {"type": "string"},
            "truncated": {"type": "boolean"}
        },
        "required": ["success", "result", "duration_ms", "run_id"]
    });
    if let Some(own) = result.as_object_mut() {
        for key in ["$defs", "definitions"] {
            if let Some(defs) = own.remove(key) {
                wrapper[key] = defs;
            }
        }
        if let Some(dialect) = own.remove("$schema") {
            wrapper["$schema"] = dialect;
        }
    }
    wrapper["properties"]["result"] = result;
    wrapper
}

fn annotations(v: &Value) -> ToolAnnotations {
    serde_json::from_value(v.clone()).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn local_refs_still_resolve_inside_the_run_envelope() {
        let own = json!({
            "type": "object",
            "properties": {"score": {"$ref": "#/$defs/score"}},
            "required": ["score"],
            "$defs": {"score": {"type": "integer", "maximum": 4}}
        });
        let wrapper = run_output_schema(Some(&own));
        let validator = jsonschema::validator_for(&wrapper).unwrap();
        let good = json!({"success": true, "result": {"score": 3}, "duration_ms": 1, "run_id": "r1"});
        let bad = json!({"success": true, "result": {"score": 9}, "duration_ms": 1, "run_id": "r1"});
        assert!(validator.is_valid(&good));
        assert!(!validator.is_valid(&bad));
    }
}
