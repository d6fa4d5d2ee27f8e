//! `toolgate demo`: the path an agent takes through a real toolgate, with no model —
//! discover, search, schema, run, batch, recover from an error, read the history — each
//! step printed as a numbered line with ✓ or ✗. The server is reached first (see
//! [`super::client`]), so an absent one is one sentence, not a ✗ per step. Any step that
//! misbehaves ends the walk and fails the command. The tool it walks with is chosen from
//! the catalogue it finds, so the demo works on any catalogue with a runnable tool.

use rmcp::model::JsonObject;
use serde_json::{Value, json};

use super::client::{Connection, Outcome, Target};
use super::shell::say;
use crate::plural::count;

/// Widest excerpt of JSON (a call, a result) printed on a step's line, in characters.
const EXCERPT_CHARS: usize = 120;

/// The steps, in the order an agent takes them.
const STEPS: [&str; 7] = ["discover", "search", "schema", "run", "batch", "recover", "history"];

/// Search results asked for; the first runnable one is taken.
const SEARCH_LIMIT: u64 = 5;

/// What the walk learnt so far, handed from step to step.
#[derive(Debug, Default)]
struct Found {
    /// Catalogue rows of tools that can run here.
    runnable: Vec<Value>,
    /// The tool chosen by search.
    slug: String,
    /// Its input schema.
    input_schema: Value,
    /// The ready-to-send call's tool name (the slug, or the meta-tool).
    call_name: String,
    /// The ready-to-send call's arguments.
    call_args: JsonObject,
    /// The example's params (the arguments themselves, or `params` inside a meta `run`).
    params: JsonObject,
}

/// Connects to `target` and walks it; `Err` names the first step that misbehaved (or
/// why the server could not be reached, before any step).
pub async fn run(target: Target, meta_name: &str) -> Result<(), String> {
    let described = target.describe();
    let conn = Connection::open(target, meta_name).await?;
    let walked = walk(&conn, &described).await;
    conn.close().await;
    walked
}

/// Takes every step in turn, printing each; stops at the first that misbehaves.
async fn walk(conn: &Connection, described: &str) -> Result<(), String> {
    say(&format!("toolgate demo: the path an agent takes, against {described}"))?;
    let mut found = Found::default();
    for (number, name) in STEPS.iter().enumerate() {
        let done = match *name {
            "discover" => discover(conn, &mut found).await,
            "search" => search(conn, &mut found).await,
            "schema" => schema(conn, &mut found).await,
            "run" => run_example(conn, &mut found).await,
            "batch" => batch(conn, &mut found).await,
            "recover" => recover(conn, &mut found).await,
            _ => history(conn, &mut found).await,
        };
        match done {
            Ok(detail) => say(&format!("{:>2} ✓ {name:<9} {detail}", number + 1))?,
            Err(why) => {
                say(&format!("{:>2} ✗ {name:<9} {why}", number + 1))?;
                return Err(format!(
                    "the demo failed at step {} ({name}), as shown above",
                    number + 1
                ));
            }
        }
    }
    say(&format!("all {} steps passed", STEPS.len()))
}

/// initialize (done by connecting) and tools/list, then the catalogue through the
/// meta-tool: the runnable tools.
async fn discover(conn: &Connection, found: &mut Found) -> Result<String, String> {
    let meta = conn.meta_name().ok_or_else(|| {
        format!(
            "{} lists {} but no toolgate meta-tool: is it a toolgate, named as --name says?",
            conn.server(),
            count(conn.tools().len(), "tool", "tools")
        )
    })?;
    let rows = conn.catalogue().await?;
    let total = rows.len();
    found.runnable = rows
        .into_iter()
        .filter(|r| r.get("category").and_then(Value::as_str) != Some("runtime"))
        .filter(|r| r.get("available") != Some(&Value::Bool(false)))
        .collect();
    if found.runnable.is_empty() {
        return Err(format!(
            "the catalogue lists {} and none can run here: nothing to walk with",
            count(total, "tool", "tools")
        ));
    }
    Ok(format!(
        "initialize: {}; tools/list: {}, meta-tool \"{meta}\"; the catalogue: {}, {} runnable here",
        conn.server(),
        count(conn.tools().len(), "tool", "tools"),
        count(total, "tool", "tools"),
        found.runnable.len()
    ))
}

/// Searches in words taken from the first runnable tool (its name, else its slug) and
/// takes the best runnable hit.
async fn search(conn: &Connection, found: &mut Found) -> Result<String, String> {
    let first = &found.runnable[0];
    let field = |key: &str| first.get(key).and_then(Value::as_str).unwrap_or_default().to_owned();
    let queries = [field("name"), field("slug").replace(['-', '_'], " ")];
    let mut tried = Vec::new();
    for query in queries.iter().filter(|q| !q.trim().is_empty()) {
        let answer = conn
            .meta(json!({"command": "search", "query": query, "limit": SEARCH_LIMIT}))
            .await?;
        if answer.is_error {
            tried.push(format!("\"{query}\": {}", answer.text));
            continue;
        }
        let hits = answer
            .structured
            .get("results")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let runnable = |slug: &str| {
            found
                .runnable
                .iter()
                .any(|r| r.get("slug").and_then(Value::as_str) == Some(slug))
        };
        let best = hits.iter().find_map(|hit| {
            let slug = hit.get("slug").and_then(Value::as_str)?;
            runnable(slug).then(|| (slug.to_owned(), hit.get("score").cloned().unwrap_or(Value::Null)))
        });
        match best {
            Some((slug, score)) => {
                let others: Vec<&str> = hits
                    .iter()
                    .filter_map(|h| h.get("slug").and_then(Value::as_str))
                    .filter(|s| *s != slug)
                    .take(2)
                    .collect();
                let then = if others.is_empty() {
                    String::new()
                } else {
                    format!(", then {}", others.join(", "))
                };
                found.slug = slug.clone();
                return Ok(format!("\"{query}\" → {slug} (score {score}){then}"));
            }
            None => tried.push(format!(
                "\"{query}\": {}, none runnable here",
                count(hits.len(), "result", "results")
            )),
        }
    }
    Err(format!("no search found a runnable tool: {}", tried.join("; ")))
}

/// The chosen tool's schemas and ready-to-send call.
async fn schema(conn: &Connection, found: &mut Found) -> Result<String, String> {
    let answer = ok(conn.meta(json!({"command": "schema", "slug": found.slug})).await?)?;
    let s = &answer.structured;
    if s.get("input_schema")
        .and_then(|i| i.get("type"))
        .and_then(Value::as_str)
        != Some("object")
    {
        return Err(format!(
            "input_schema is not an object schema: {}",
            excerpt(&s["input_schema"])
        ));
    }
    found.input_schema = s["input_schema"].clone();
    let example = &s["example"];
    let (Some(name), Some(args)) = (
        example.get("name").and_then(Value::as_str),
        example.get("arguments").and_then(Value::as_object),
    ) else {
        return Err(format!(
            "no ready-to-send call (example.name, example.arguments): {}",
            excerpt(example)
        ));
    };
    found.call_name = name.to_owned();
    found.call_args = args.clone();
    found.params = if name == found.slug {
        args.clone()
    } else {
        args.get("params")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default()
    };
    let required = found
        .input_schema
        .get("required")
        .and_then(Value::as_array)
        .map_or(0, Vec::len);
    let properties = found
        .input_schema
        .get("properties")
        .and_then(Value::as_object)
        .map_or(0, |p| p.len());
    Ok(format!(
        "{}: {properties} parameters, {required} required; ready-to-send call {}",
        found.slug,
        excerpt(example)
    ))
}

/// Sends the ready-to-send call as it is.
async fn run_example(conn: &Connection, found: &mut Found) -> Result<String, String> {
    let answer = ok(conn.call(&found.call_name, found.call_args.clone()).await?)?;
    Ok(format!("{} answered: {}", found.call_name, run_summary(&answer)))
}

/// Two runs of the example params as one batch.
async fn batch(conn: &Connection, found: &mut Found) -> Result<String, String> {
    let run = json!({"slug": found.slug, "params": found.params});
    let answer = ok(conn
        .meta(json!({"command": "batch", "runs": [run.clone(), run]}))
        .await?)?;
    let s = &answer.structured;
    let (total, succeeded) = (s["total"].as_u64(), s["succeeded"].as_u64());
    if total != Some(2) || succeeded != Some(2) {
        return Err(format!("expected 2 of 2 runs to succeed: {}", excerpt(s)));
    }
    Ok("2 runs sent as one batch: 2 succeeded, 0 failed".to_owned())
}

/// An agent's mistake — arguments the schema refuses, or, when the schema refuses none,
/// a misspelt slug — answered with a stable code and a message that says what to fix;
/// then the corrected call succeeds.
async fn recover(conn: &Connection, found: &mut Found) -> Result<String, String> {
    let (refused, what, expected, hint, fix) = match mistake(&found.input_schema, &found.params) {
        Some((bad, what, field)) => {
            let args = if found.call_name == found.slug {
                bad
            } else {
                let mut args = found.call_args.clone();
                args.insert("params".into(), Value::Object(bad));
                args
            };
            let fix = "sent again as the schema says";
            (
                conn.call(&found.call_name, args).await?,
                what,
                "INVALID_PARAMS",
                field,
                fix,
            )
        }
        None => {
            let typo = format!("{}x", found.slug);
            let answer = conn
                .meta(json!({"command": "run", "slug": typo, "params": found.params}))
                .await?;
            let what = format!("misspelt the slug as \"{typo}\"");
            let fix = "sent again with the slug the error suggests";
            (answer, what, "TOOL_NOT_FOUND", found.slug.clone(), fix)
        }
    };
    if !refused.is_error {
        return Err(format!(
            "{what}, yet the call succeeded: {}",
            excerpt(&refused.structured)
        ));
    }
    let code = refused.code().unwrap_or("(none)");
    let message = refused
        .structured
        .get("error")
        .and_then(Value::as_str)
        .unwrap_or_default();
    if code != expected {
        return Err(format!("{what}: expected {expected}, got {code}: {message}"));
    }
    if !message.contains(&hint) {
        return Err(format!(
            "{what}: the {code} message does not name \"{hint}\": {message}"
        ));
    }
    if refused.structured.get("retryable") != Some(&Value::Bool(false)) {
        return Err(format!("{what}: {code} must say retryable: false"));
    }
    let fixed = ok(conn.call(&found.call_name, found.call_args.clone()).await?)?;
    Ok(format!(
        "{what}: refused as {code} (\"{}\"); {fix}: {}",
        clip(message),
        run_summary(&fixed)
    ))
}

/// The session's history holds the runs, newest first, and the last two compare.
async fn history(conn: &Connection, found: &mut Found) -> Result<String, String> {
    let answer = ok(conn.meta(json!({"command": "history"})).await?)?;
    let runs = answer
        .structured
        .get("runs")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    let newest = runs.first().ok_or("the history is empty after four runs")?;
    if newest.get("slug").and_then(Value::as_str) != Some(found.slug.as_str()) {
        return Err(format!("the newest run is not {}: {}", found.slug, excerpt(newest)));
    }
    let diff = ok(conn.meta(json!({"command": "diff"})).await?)?;
    let verdict = diff
        .structured
        .get("verdict")
        .and_then(Value::as_str)
        .unwrap_or("(no verdict)");
    Ok(format!(
        "{} recorded in this session, newest {} {}; the last two compared: {verdict}",
        count(runs.len(), "run", "runs"),
        newest.get("id").and_then(Value::as_str).unwrap_or("?"),
        newest.get("status").and_then(Value::as_str).unwrap_or("?")
    ))
}

/// Params the schema refuses, a sentence saying how they are wrong, and the field a
/// useful error names: a required parameter left out, else one given the wrong type.
fn mistake(schema: &Value, good: &JsonObject) -> Option<(JsonObject, String, String)> {
    let required = schema.get("required").and_then(Value::as_array);
    if let Some(field) = required
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
        .find(|f| good.contains_key(*f))
    {
        let mut bad = good.clone();
        bad.remove(field);
        return Some((bad, format!("left out the required \"{field}\""), field.to_owned()));
    }
    let validator = jsonschema::validator_for(schema).ok()?;
    let properties = schema.get("properties")?.as_object()?;
    properties.iter().find_map(|(field, rule)| {
        let wrong = match rule.get("type")?.as_str()? {
            "string" => json!(12345),
            _ => json!("not the declared type"),
        };
        let mut bad = good.clone();
        bad.insert(field.clone(), wrong);
        (!validator.is_valid(&Value::Object(bad.clone())))
            .then(|| (bad, format!("gave \"{field}\" the wrong type"), field.clone()))
    })
}

/// `answer` when it succeeded, else its text as the step's failure.
fn ok(answer: Outcome) -> Result<Outcome, String> {
    if answer.is_error {
        Err(answer.text.lines().next().unwrap_or("an error without text").to_owned())
    } else if answer.structured.get("success") == Some(&Value::Bool(false)) {
        Err(format!(
            "success is false without isError: {}",
            excerpt(&answer.structured)
        ))
    } else {
        Ok(answer)
    }
}

/// A run's duration, id and result in a few words.
fn run_summary(answer: &Outcome) -> String {
    let s = &answer.structured;
    let result = s.get("result").unwrap_or(s);
    format!(
        "succeeded in {} ms (run {}): {}",
        s.get("duration_ms").and_then(Value::as_u64).unwrap_or(0),
        s.get("run_id").and_then(Value::as_str).unwrap_or("?"),
        excerpt(result)
    )
}

/// Compact JSON, cut to [`EXCERPT_CHARS`].
fn excerpt(value: &Value) -> String {
    clip(&value.to_string())
}

/// `text` cut to [`EXCERPT_CHARS`] characters, with `…` when cut.
fn clip(text: &str) -> String {
    if text.chars().count() <= EXCERPT_CHARS {
        text.to_owned()
    } else {
        format!("{}…", text.chars().take(EXCERPT_CHARS - 1).collect::<String>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object(v: Value) -> JsonObject {
        v.as_object().cloned().unwrap()
    }

    #[test]
    fn the_mistake_leaves_out_a_required_parameter_first() {
        let schema = json!({"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"]});
        let (bad, what, field) = mistake(&schema, &object(json!({"input": "hi", "mode": "encode"}))).unwrap();
        assert_eq!(bad, object(json!({"mode": "encode"})));
        assert_eq!(what, "left out the required \"input\"");
        assert_eq!(field, "input");
    }

    #[test]
    fn without_required_parameters_the_mistake_is_a_wrong_type() {
        let schema = json!({"type": "object", "properties": {"count": {"type": "integer"}}});
        let (bad, _, field) = mistake(&schema, &JsonObject::new()).unwrap();
        assert_eq!(bad, object(json!({"count": "not the declared type"})));
        assert_eq!(field, "count");
        assert!(mistake(&json!({"type": "object"}), &JsonObject::new()).is_none());
    }

    #[test]
    fn excerpts_are_cut_to_their_width() {
        assert_eq!(clip("short"), "short");
        let long = "x".repeat(500);
        assert_eq!(clip(&long).chars().count(), EXCERPT_CHARS);
    }
}
