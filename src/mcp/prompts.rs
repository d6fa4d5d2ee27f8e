//! MCP prompts, filled from templates in `prompts/` against the live catalogue, so every
//! slug and call they carry exists and validates: `find-tool(goal)`, `use-tool(slug)`
//! (exact slugs only: naming a tool is a deliberate choice, never a prefix guess),
//! `plan-batch(task)` and `recover(error, slug)`.

use super::convert::pretty;
use rmcp::ErrorData as McpError;
use rmcp::model::{
    CompletionInfo, GetPromptResult, JsonObject, Prompt, PromptArgument, PromptMessage, Reference, Role,
};
use serde_json::{Value, json};

use super::meta::example_call;
use super::resources::tool_uri;
use super::tools::Listing;
use crate::catalogue::{Snapshot, Tool};
use crate::error::CODES;
use crate::error::Error;
use crate::gateway::{Caller, Gateway};
use crate::limits::BATCH_MAX;

const FIND_TOOL: &str = include_str!("../../prompts/find-tool.md");
const USE_TOOL: &str = include_str!("../../prompts/use-tool.md");
const PLAN_BATCH: &str = include_str!("../../prompts/plan-batch.md");
const RECOVER: &str = include_str!("../../prompts/recover.md");

/// The names of toolgate's own prompts, which no catalogue prompt may take.
pub(crate) const NAMES: [&str; 4] = ["find-tool", "use-tool", "plan-batch", "recover"];

/// How many candidates `find-tool` and `plan-batch` offer.
const CANDIDATES: usize = 5;

/// The prompts, for `prompts/list`.
pub(crate) fn list() -> Vec<Prompt> {
    let arg = |name: &str, description: &str| {
        PromptArgument::new(name)
            .with_description(description)
            .with_required(true)
    };
    vec![
        Prompt::new(
            "find-tool",
            Some("Tools matching a goal, ranked, with each one's parameter cost and manifest URI."),
            Some(vec![arg("goal", "What you want to do, in words.")]),
        )
        .with_title("Find a tool"),
        Prompt::new(
            "use-tool",
            Some("One tool's exact parameters, its output schema and a valid call to copy."),
            Some(vec![arg("slug", "The tool's exact slug.")]),
        )
        .with_title("Use a tool"),
        Prompt::new(
            "plan-batch",
            Some("Likely participants, the batch call shape, the cap and the whole-batch validation rule."),
            Some(vec![arg("task", "The task to split into runs.")]),
        )
        .with_title("Plan a batch"),
        Prompt::new(
            "recover",
            Some("What each error code means, whether to retry, and the failed tool's real call shape."),
            Some(vec![
                arg("error", "The error as it came back."),
                arg("slug", "The tool that failed."),
            ]),
        )
        .with_title("Recover from an error"),
    ]
}

/// Fills one prompt.
pub(crate) async fn get(
    gateway: &Gateway,
    caller: &Caller,
    listing: &Listing,
    name: &str,
    args: &JsonObject,
) -> Result<GetPromptResult, McpError> {
    let meta = listing.meta_name();
    let snapshot = gateway
        .snapshot_for(caller)
        .await
        .map_err(|e| McpError::internal_error(e.to_string(), Some(json!({"code": e.code()}))))?;
    // Ready-to-send calls name a tool directly only when tools/list lists it.
    let listed = listing.advertised(gateway, Some(&snapshot));
    let text = match name {
        "find-tool" => {
            let goal = required(args, "goal")?;
            fill(
                FIND_TOOL,
                &[
                    ("goal", goal),
                    ("candidates", &candidates(&snapshot, goal, meta)),
                    ("meta", meta),
                ],
            )
        }
        "use-tool" => {
            let slug = required(args, "slug")?;
            let tool = snapshot.get(slug).ok_or_else(|| {
                let e = Error::ToolNotFound {
                    slug: slug.to_owned(),
                    candidates: snapshot.close_matches(slug),
                };
                McpError::invalid_params(
                    format!("{e} use-tool takes an exact slug."),
                    Some(json!({"code": e.code()})),
                )
            })?;
            let m = &tool.manifest;
            fill(
                USE_TOOL,
                &[
                    ("slug", &m.slug),
                    ("name", &m.name),
                    ("description", &m.description),
                    ("required", &required_fields(tool)),
                    ("input_schema", &pretty(&m.input_schema.value())),
                    (
                        "output_schema",
                        &m.output_schema
                            .as_ref()
                            .map_or("(none declared)".to_owned(), |s| pretty(&s.value())),
                    ),
                    ("call", &pretty(&example_call(tool, meta, &listed))),
                ],
            )
        }
        "plan-batch" => {
            let task = required(args, "task")?;
            let hits = snapshot.search(task, CANDIDATES).unwrap_or_default();
            let runs: Vec<Value> = hits
                .iter()
                .map(|(tool, _)| {
                    let call = example_call(tool, meta, &listed);
                    let params = if call["name"] == meta {
                        call["arguments"]["params"].clone()
                    } else {
                        call["arguments"].clone()
                    };
                    json!({"slug": tool.slug(), "params": params})
                })
                .collect();
            let call = json!({"name": meta, "arguments": {"command": "batch", "runs": runs}});
            let max = BATCH_MAX.to_string();
            fill(
                PLAN_BATCH,
                &[
                    ("task", task),
                    ("candidates", &candidates(&snapshot, task, meta)),
                    ("call", &pretty(&call)),
                    ("max", &max),
                    ("meta", meta),
                ],
            )
        }
        "recover" => {
            let error = required(args, "error")?;
            let slug = required(args, "slug")?;
            let codes: String = CODES
                .iter()
                .map(|(c, r, what)| format!("- {c} (retryable: {r}): {what}\n"))
                .collect();
            let named: Vec<&str> = CODES.iter().map(|(c, _, _)| *c).filter(|c| error.contains(c)).collect();
            let (diagnosis, required, call) = match snapshot.resolve(slug) {
                Ok(tool) => (
                    diagnose(&named),
                    required_fields(tool),
                    pretty(&example_call(tool, meta, &listed)),
                ),
                Err(e) => (
                    format!("{} {e}", diagnose(&named)),
                    "unknown".to_owned(),
                    "(no such tool)".to_owned(),
                ),
            };
            fill(
                RECOVER,
                &[
                    ("slug", slug),
                    ("error", error),
                    ("diagnosis", &diagnosis),
                    ("codes", &codes),
                    ("required", &required),
                    ("call", &call),
                ],
            )
        }
        other => {
            return Err(McpError::invalid_params(
                format!(
                    "No prompt \"{other}\". Prompts: find-tool, use-tool, plan-batch, recover, and the catalogue's own (prompts/list)."
                ),
                None,
            ));
        }
    };
    Ok(GetPromptResult::new(vec![PromptMessage::new_text(Role::User, text)]))
}

/// Completions for a prompt argument or the `tools/{slug}` template: slugs starting with
/// what was typed (case-insensitive), sorted, at most 100. Arguments that are free text get
/// none.
pub(crate) async fn complete(
    gateway: &Gateway,
    caller: &Caller,
    reference: &Reference,
    argument: &str,
    typed: &str,
) -> Vec<String> {
    let takes_slug = match reference {
        Reference::Prompt(p) => argument == "slug" && matches!(p.name.as_str(), "use-tool" | "recover"),
        Reference::Resource(r) => argument == "slug" && r.uri.ends_with("://tools/{slug}"),
        _ => false,
    };
    if !takes_slug {
        return Vec::new();
    }
    let Ok(snapshot) = gateway.snapshot_for(caller).await else {
        return Vec::new();
    };
    let typed = typed.to_lowercase();
    snapshot
        .tools()
        .iter()
        .map(|t| t.slug())
        .filter(|s| s.to_lowercase().starts_with(&typed))
        .take(CompletionInfo::MAX_VALUES)
        .map(str::to_owned)
        .collect()
}

/// Search results as a list: slug, first sentence, parameter cost, manifest URI.
fn candidates(snapshot: &Snapshot, query: &str, meta: &str) -> String {
    match snapshot.search(query, CANDIDATES) {
        Ok(hits) if !hits.is_empty() => hits
            .iter()
            .map(|(tool, hit)| {
                let (props, required) = tool.parameter_counts();
                format!(
                    "- {} — {} [{}] (parameters: {required} required of {props}; manifest: {})\n",
                    tool.slug(),
                    tool.manifest.summary(),
                    hit.matched.join("; "),
                    tool_uri(meta, tool.slug())
                )
            })
            .collect(),
        _ => "(no tool matches these words; try {\"command\":\"list\"} to see them all)\n".to_owned(),
    }
}

fn diagnose(codes: &[&str]) -> String {
    match codes.first() {
        Some(code) => {
            let (_, retry, what) = CODES
                .iter()
                .find(|(c, _, _)| c == code)
                .copied()
                .unwrap_or(("", "no", ""));
            format!("This is {code} (retryable: {retry}): {what}.")
        }
        None => "The message names no error code; read it for the field or reason it gives.".to_owned(),
    }
}

fn required_fields(tool: &Tool) -> String {
    let schema = tool.manifest.input_schema.value();
    let fields: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    if fields.is_empty() {
        "none".to_owned()
    } else {
        fields.join(", ")
    }
}

fn required<'a>(args: &'a JsonObject, name: &str) -> Result<&'a str, McpError> {
    match args.get(name) {
        Some(Value::String(s)) if !s.trim().is_empty() => Ok(s),
        _ => Err(McpError::invalid_params(
            format!("this prompt needs the argument \"{name}\""),
            None,
        )),
    }
}

/// Replaces each `{{key}}` of `template`.
fn fill(template: &str, values: &[(&str, &str)]) -> String {
    let mut out = template.to_owned();
    for (key, value) in values {
        out = out.replace(&format!("{{{{{key}}}}}"), value);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserved_names_are_the_listed_prompts() {
        let listed: Vec<String> = list().into_iter().map(|p| p.name).collect();
        assert_eq!(listed, NAMES);
    }

    #[test]
    fn fill_replaces_every_placeholder() {
        assert_eq!(fill("a {{x}} b {{y}} {{x}}", &[("x", "1"), ("y", "2")]), "a 1 b 2 1");
    }
}
