//! The advertised tool list: the meta-tool first, then the built-in runtime tools, then
//! catalogue tools by slug — as many as the advertising policy and its byte budget allow.
//!
//! Why a byte budget: every listed tool's schemas sit in the agent's context before it
//! has done anything. The embedded catalogue listed whole was ~116 KB (~30,000 tokens);
//! peers list 3–8 KB. Under `auto`, toolgate lists what fits in
//! `TOOLGATE_ADVERTISE_BYTES` and the meta-tool's description says how to reach the rest.
//! Under `all`, the list is answered in pages of at most `PAGE_BYTES`, each described when
//! it is asked for.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::model::{Tool as McpTool, ToolAnnotations};
use serde_json::{Value, json};

use super::Advertise;
use super::convert::object;
use super::page;
use crate::catalogue::{Snapshot, Tool};
use crate::gateway::Gateway;
use crate::limits::{
    ADVERTISE_SCAN_TOOLS, BATCH_MAX, LIST_LIMIT_DEFAULT, LIST_LIMIT_RANGE, SEARCH_LIMIT_DEFAULT, SEARCH_LIMIT_RANGE,
};
use crate::registry::{self, Definition};

/// The commands the meta-tool answers today.
pub(crate) const COMMANDS: &[&str] = &["search", "list", "schema", "run", "batch", "history", "diff"];

/// What to list: the meta-tool's name, the policy and its byte budget.
#[derive(Debug, Clone)]
pub(crate) struct Policy {
    /// The meta-tool's name.
    pub(crate) name: String,
    /// `all`, `meta` or `auto`.
    pub(crate) advertise: Advertise,
    /// Under `auto`, the most bytes the listed tools may take, serialised.
    pub(crate) budget: usize,
}

/// The meta-tool's definition; `hidden` catalogue tools are not listed beside it.
pub(crate) fn meta_tool(name: &str, hidden: usize) -> McpTool {
    let schema = json!({
        "type": "object",
        "properties": {
            "command": {"type": "string", "enum": COMMANDS},
            "query": {"type": "string", "description": "search: what you want to do, in words."},
            "limit": {"type": "integer", "minimum": 1, "maximum": LIST_LIMIT_RANGE.end(), "description": format!("search: results, {} to {} (default {SEARCH_LIMIT_DEFAULT}); list: tools per page, up to {} (default {LIST_LIMIT_DEFAULT}).", SEARCH_LIMIT_RANGE.start(), SEARCH_LIMIT_RANGE.end(), LIST_LIMIT_RANGE.end())},
            "cursor": {"type": "string", "description": "list: the next_cursor of the page before."},
            "slug": {"type": "string", "description": "schema, run: a tool's slug or unambiguous abbreviation."},
            "params": {"type": "object", "description": "run: the tool's params."},
            "runs": {
                "type": "array", "maxItems": BATCH_MAX,
                "items": {"type": "object", "properties": {"slug": {"type": "string"}, "params": {"type": "object"}}, "required": ["slug"]},
                "description": "batch: runs, all validated before any runs."
            },
            "show": {"type": "string", "description": "history: one run by id (r3) or from the newest (-1)."},
            "from": {"type": "string", "description": "diff: the first run; with to, or neither for the last two runs of one tool."},
            "to": {"type": "string", "description": "diff: the second run; with from, or neither for the last two runs of one tool."}
        },
        "required": ["command"]
    });
    let mut description = format!(
        "Gateway to the tool catalogue. {{\"command\":\"search\",\"query\":\"validate env file\"}} ranks tools by what you want to do; {{\"command\":\"list\"}} lists every tool; {{\"command\":\"schema\",\"slug\":\"...\"}} gives exact schemas and a ready-to-send call; {{\"command\":\"run\",\"slug\":\"...\",\"params\":{{...}}}} runs any tool; {{\"command\":\"batch\",\"runs\":[...]}} runs up to {BATCH_MAX} at once, all validated first; {{\"command\":\"history\"}} and {{\"command\":\"diff\",\"from\":\"-2\",\"to\":\"-1\"}} show past runs. Slugs resolve by exact match or unambiguous abbreviation. Errors carry a stable code and a retryable flag."
    );
    if hidden > 0 {
        let more = crate::plural::count(hidden, "more catalogue tool is", "more catalogue tools are");
        description.push_str(&format!(
            " {more} not listed as tools, to save context: find them with search, then run them with run."
        ));
    }
    McpTool::new(name.to_owned(), description, object(schema))
        .with_title("Tool catalogue gateway")
        .with_annotations(annotations(&json!({"readOnlyHint": false, "openWorldHint": true})))
}

/// A definition as MCP describes a tool (no output schema when it has none).
pub(crate) fn to_mcp(d: &Definition) -> McpTool {
    let tool = McpTool::new(d.name.clone(), d.description.clone(), object(d.input_schema.clone()))
        .with_title(d.title.clone())
        .with_annotations(annotations(&d.annotations));
    if d.output_schema.is_null() {
        tool
    } else {
        tool.with_raw_output_schema(Arc::new(object(d.output_schema.clone())))
    }
}

fn annotations(v: &Value) -> ToolAnnotations {
    serde_json::from_value(v.clone()).unwrap_or_default()
}

/// Serialised size of a listed tool, as it costs a client's context.
fn size(tool: &McpTool) -> usize {
    serde_json::to_vec(tool).map_or(0, |b| b.len())
}

/// The catalogue tools of one advertised list after the fixed ones.
#[derive(Debug)]
enum Rest {
    /// Described once (`auto`: the few dozen that fit its budget).
    Described(Vec<McpTool>),
    /// Described page by page (`all`): a 100,000-tool catalogue described whole was a
    /// 76 MB answer and 2.2 GB of memory.
    Tools(Vec<Arc<Tool>>),
}

/// One advertised list.
#[derive(Debug)]
pub(crate) struct Listed {
    /// The meta-tool and the built-in tools, described.
    head: Vec<McpTool>,
    /// The catalogue tools listed after them.
    rest: Rest,
    /// A hash of the listed names, in order, and of `hidden`: what list_changed compares
    /// and what a cursor is checked against.
    pub(crate) fingerprint: u64,
}

impl Listed {
    /// How many tools it lists.
    pub(crate) fn len(&self) -> usize {
        self.head.len()
            + match &self.rest {
                Rest::Described(tools) => tools.len(),
                Rest::Tools(tools) => tools.len(),
            }
    }

    /// Returns true if and only if `name` is one of the tools it lists: a client that
    /// calls only listed tools can call it directly.
    pub(crate) fn lists(&self, name: &str) -> bool {
        self.head.iter().any(|t| t.name == name)
            || match &self.rest {
                Rest::Described(tools) => tools.iter().any(|t| t.name == name),
                // In slug order, as the snapshot holds them.
                Rest::Tools(tools) => tools.binary_search_by(|t| t.slug().cmp(name)).is_ok(),
            }
    }

    /// The listed tool at `i`, described.
    fn describe(&self, i: usize) -> Option<McpTool> {
        if let Some(t) = self.head.get(i) {
            return Some(t.clone());
        }
        let i = i - self.head.len();
        match &self.rest {
            Rest::Described(tools) => tools.get(i).cloned(),
            Rest::Tools(tools) => tools.get(i).map(|t| to_mcp(&registry::describe(t))),
        }
    }

    /// The page that starts at item `start`: as many tools as fit in one page
    /// ([`crate::limits::PAGE_BYTES`]), and where the next page starts, if any is left.
    pub(crate) fn page(&self, start: usize) -> (Vec<McpTool>, Option<usize>) {
        let items = (start..self.len()).filter_map(|i| self.describe(i)).map(|t| {
            let bytes = size(&t);
            (t, bytes)
        });
        let tools = page::take(items, page::ROOM, usize::MAX);
        let next = start + tools.len();
        (tools, (next < self.len()).then_some(next))
    }
}

/// The advertised list of the snapshot last listed, kept because describing every tool
/// was ~60% of answering `tools/list`, and clients list often while the snapshot rarely
/// changes.
#[derive(Debug)]
pub(crate) struct Listing {
    policy: Policy,
    last: Mutex<Option<(Arc<Snapshot>, Arc<Listed>)>>,
}

impl Listing {
    /// A listing under `policy`.
    pub(crate) fn new(policy: Policy) -> Listing {
        Listing {
            policy,
            last: Mutex::new(None),
        }
    }

    /// The meta-tool's name.
    pub(crate) fn meta_name(&self) -> &str {
        &self.policy.name
    }

    /// The advertised list for `snapshot` (`None`: the catalogue is unreachable),
    /// described again only when the snapshot changed.
    pub(crate) fn advertised(&self, gateway: &Gateway, snapshot: Option<&Arc<Snapshot>>) -> Arc<Listed> {
        let Some(snapshot) = snapshot else {
            return Arc::new(self.build(gateway, None));
        };
        let mut last = self.last.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((held, listed)) = last.as_ref()
            && Arc::ptr_eq(held, snapshot)
        {
            return listed.clone();
        }
        let listed = Arc::new(self.build(gateway, Some(snapshot)));
        *last = Some((snapshot.clone(), listed.clone()));
        listed
    }

    fn build(&self, gateway: &Gateway, snapshot: Option<&Arc<Snapshot>>) -> Listed {
        // The built-ins a view's tool policy admits (all of them when the catalogue
        // cannot be read: a call is still refused, `Gateway::admit`).
        let fixed: Vec<McpTool> = gateway
            .builtins()
            .all()
            .iter()
            .filter(|b| snapshot.is_none_or(|s| s.admits(&b.definition.name)))
            .map(|b| to_mcp(&b.definition))
            .collect();
        // Catalogue tools a direct call can name and that can run here.
        let runnable: Vec<Arc<Tool>> = match (snapshot, self.policy.advertise) {
            (None, _) | (_, Advertise::Meta) => Vec::new(),
            (Some(s), _) => {
                let mut available = gateway.availability(s);
                s.tools()
                    .iter()
                    .filter(|t| t.is_advertisable && available(t).is_ok())
                    .cloned()
                    .collect()
            }
        };
        let offered = runnable.len();
        let rest = match self.policy.advertise {
            Advertise::All => Rest::Tools(runnable),
            Advertise::Meta => Rest::Described(Vec::new()),
            // Only the first ADVERTISE_SCAN_TOOLS are described and weighed.
            Advertise::Auto => {
                let candidates: Vec<McpTool> = runnable
                    .iter()
                    .take(ADVERTISE_SCAN_TOOLS)
                    .map(|t| to_mcp(&registry::describe(t)))
                    .collect();
                let spent =
                    size(&meta_tool(&self.policy.name, candidates.len())) + fixed.iter().map(size).sum::<usize>();
                Rest::Described(within(candidates, self.policy.budget.saturating_sub(spent)))
            }
        };
        let (listed_rest, names): (usize, Vec<&str>) = match &rest {
            Rest::Described(tools) => (tools.len(), tools.iter().map(|t| &*t.name).collect()),
            Rest::Tools(tools) => (tools.len(), tools.iter().map(|t| t.slug()).collect()),
        };
        // Only tools left out to save context: those that cannot run here, or whose
        // slug MCP cannot carry, are not "more to find" in the same sense.
        let hidden = offered - listed_rest;
        let mut head = vec![meta_tool(&self.policy.name, hidden)];
        head.extend(fixed);
        let mut hasher = DefaultHasher::new();
        for name in head.iter().map(|t| &*t.name).chain(names) {
            name.hash(&mut hasher);
        }
        hidden.hash(&mut hasher);
        let fingerprint = hasher.finish();
        Listed {
            head,
            rest,
            fingerprint,
        }
    }
}

/// The candidates that fit in `room` bytes: all of them when they do, else the smallest
/// first — with no usage signal to rank by, that lists the most tools the budget allows —
/// returned in slug order.
fn within(candidates: Vec<McpTool>, room: usize) -> Vec<McpTool> {
    let sizes: Vec<usize> = candidates.iter().map(size).collect();
    if sizes.iter().sum::<usize>() <= room {
        return candidates;
    }
    let mut order: Vec<usize> = (0..candidates.len()).collect();
    order.sort_by(|&a, &b| {
        sizes[a]
            .cmp(&sizes[b])
            .then_with(|| candidates[a].name.cmp(&candidates[b].name))
    });
    let mut keep = vec![false; candidates.len()];
    let mut spent = 0;
    for i in order {
        if spent + sizes[i] > room {
            break;
        }
        spent += sizes[i];
        keep[i] = true;
    }
    candidates
        .into_iter()
        .zip(keep)
        .filter_map(|(t, k)| k.then_some(t))
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tool(name: &str, description_len: usize) -> McpTool {
        McpTool::new(
            name.to_owned(),
            "d".repeat(description_len),
            object(json!({"type": "object"})),
        )
    }

    #[test]
    fn everything_fits_or_the_smallest_first_in_slug_order() {
        let all = vec![tool("a", 500), tool("b", 10), tool("c", 10), tool("d", 300)];
        let names = |v: Vec<McpTool>| v.into_iter().map(|t| t.name.to_string()).collect::<Vec<_>>();
        assert_eq!(names(within(all.clone(), 100_000)), ["a", "b", "c", "d"]);
        let room = size(&all[1]) + size(&all[2]) + size(&all[3]);
        assert_eq!(names(within(all.clone(), room)), ["b", "c", "d"]);
        assert!(within(all, 10).is_empty());
    }
}
