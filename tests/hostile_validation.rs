//! Arguments no caller can turn into an outage, through the real binary over stdio:
//! validation of every schema shape is one bounded pass (a recursive union failing deep
//! down once aborted the process at 345 bytes), backtracking patterns run only on bounded
//! values, and a message too deep or too full is refused before it is parsed.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::util::{Gate, command, expect_error, expect_ok};

/// A tool folder `slug` in `dir` whose code echoes its params, with `schema`.
pub fn echo_tool(dir: &Path, slug: &str, schema: Value) {
    let folder = dir.join(slug);
    std::fs::create_dir_all(&folder).unwrap();
    let manifest = json!({
        "slug": slug, "name": slug, "description": format!("Echoes its params ({slug})."),
        "input_schema": schema, "runtime": "javascript", "source": "index.js",
    });
    std::fs::write(folder.join("tool.json"), manifest.to_string()).unwrap();
    std::fs::write(folder.join("index.js"), "function run(params) { return {ok: true}; }\n").unwrap();
}

/// `{"tree": {"children": [{"children": [ ... leaf ... ]}]}}`, `depth` levels deep.
fn tree(depth: usize, leaf: Value) -> Value {
    let mut v = leaf;
    for _ in 0..depth {
        v = json!({"children": [v]});
    }
    json!({"tree": v})
}

/// Schemas whose failing deep arguments collected 2^depth errors in jsonschema's own
/// reporter: pydantic's recursive union, a two-branch `anyOf`, `oneOf` and `allOf`, and
/// two `patternProperties` that both match.
fn recursive_schemas() -> Vec<(&'static str, Value)> {
    let node = |kind: &str| {
        let branch =
            json!({"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/N"}}}});
        let mut strict = branch.clone();
        strict["required"] = json!(["x"]);
        json!({"type": "object", "properties": {"tree": {"$ref": "#/$defs/N"}}, "$defs": {"N": {kind: [branch, strict]}}})
    };
    vec![
        (
            "pydantic-union",
            json!({
                "type": "object",
                "properties": {"tree": {"$ref": "#/$defs/Node"}},
                "required": ["tree"],
                "$defs": {
                    "Node": {"anyOf": [{"$ref": "#/$defs/Item"}, {"$ref": "#/$defs/Group"}]},
                    "Item": {"type": "object", "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}},
                    "Group": {"type": "object", "properties": {"title": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}},
                },
            }),
        ),
        ("any-of", node("anyOf")),
        ("one-of", node("oneOf")),
        ("all-of", node("allOf")),
        (
            "overlapping-names",
            json!({"type": "object", "properties": {"tree": {"$ref": "#/$defs/N"}}, "$defs": {"N": {"type": "object", "patternProperties": {
                "^c": {"type": "array", "items": {"$ref": "#/$defs/N"}},
                "n$": {"type": "array", "items": {"$ref": "#/$defs/N"}},
            }}}}),
        ),
    ]
}

#[tokio::test]
async fn a_deep_argument_under_any_recursive_schema_fails_with_a_short_error_and_the_server_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    for (slug, schema) in recursive_schemas() {
        echo_tool(dir.path(), slug, schema);
    }
    let catalogue = dir.path().display().to_string();
    let gate = Gate::start(&[("TOOLGATE_CATALOGUE", &catalogue), ("TOOLGATE_ADVERTISE", "all")]).await;
    for (slug, _) in recursive_schemas() {
        // Depth 20 held 2.3 GB after 7 s and depth 20 ended the server; 30 JSON levels
        // below the message's nesting limit.
        for depth in [5, 20, 30] {
            let call = tokio::time::timeout(Duration::from_secs(60), gate.call(slug, tree(depth, json!(5))));
            let answer = call
                .await
                .unwrap_or_else(|_| panic!("{slug} at depth {depth} did not answer"));
            let body = expect_error(&answer, "INVALID_PARAMS");
            let error = body["error"].as_str().unwrap_or_default();
            assert!(error.len() < 4_000, "{slug} at depth {depth}: {} bytes", error.len());
            assert!(error.contains("(rule: "), "{slug}: {error}");
        }
        // A valid deep argument still passes (except where the schema requires what the
        // leaf lacks).
        if slug != "all-of" {
            expect_ok(&gate.call(slug, tree(30, json!({}))).await);
        }
    }
    gate.stop().await;
}

#[tokio::test]
async fn a_lookahead_pattern_is_checked_after_length_limits_and_only_on_bounded_values() {
    let dir = tempfile::tempdir().unwrap();
    let pattern = "(?=.*[A-Z])(?=.*[0-9])(?=.*[!@#]).{12,}";
    let password = |extra: Value| {
        let mut p = json!({"type": "string", "pattern": pattern});
        if let (Some(p), Some(extra)) = (p.as_object_mut(), extra.as_object()) {
            p.extend(extra.clone());
        }
        json!({"type": "object", "properties": {"text": p}, "required": ["text"]})
    };
    echo_tool(dir.path(), "capped", password(json!({"maxLength": 64})));
    echo_tool(dir.path(), "open", password(json!({})));
    echo_tool(
        dir.path(),
        "many",
        json!({"type": "object", "properties": {"texts": {"type": "array", "items": {"type": "string", "pattern": pattern}}}}),
    );
    let catalogue = dir.path().display().to_string();
    let gate = Gate::start(&[("TOOLGATE_CATALOGUE", &catalogue), ("TOOLGATE_ADVERTISE", "all")]).await;
    // 200,000 characters cost 70 s against this pattern, maxLength or not.
    let long = "a".repeat(200_000);
    let capped = gate.call("capped", json!({"text": long})).await;
    let error = expect_error(&capped, "INVALID_PARAMS")["error"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(
        error.contains("rule: maxLength") && !error.contains("rule: pattern"),
        "{error}"
    );
    let open = gate.call("open", json!({"text": long})).await;
    let error = expect_error(&open, "INVALID_PARAMS")["error"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(error.contains("longer than the 4096 bytes"), "{error}");
    // Many values each within the bound share one budget.
    let matching = format!("A1!{}", "a".repeat(4_000));
    let many = gate.call("many", json!({"texts": vec![matching; 100]})).await;
    let error = expect_error(&many, "INVALID_PARAMS")["error"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(error.contains("backtracking"), "{error}");
    expect_ok(&gate.call("capped", json!({"text": "Abcdefghij1!x"})).await);
    gate.stop().await;
}

#[tokio::test]
async fn a_schema_that_unfolds_without_bound_is_refused_and_check_names_backtracking_patterns() {
    let dir = tempfile::tempdir().unwrap();
    let mut defs = serde_json::Map::new();
    defs.insert("d0".into(), json!({"type": "string"}));
    for i in 1..=30 {
        let prev = format!("#/$defs/d{}", i - 1);
        defs.insert(format!("d{i}"), json!({"anyOf": [{"$ref": prev}, {"$ref": prev}]}));
    }
    echo_tool(
        dir.path(),
        "unfolding",
        json!({"type": "object", "properties": {"s": {"$ref": "#/$defs/d30"}}, "$defs": defs}),
    );
    echo_tool(
        dir.path(),
        "lookahead",
        json!({"type": "object", "properties": {"text": {"type": "string", "pattern": "(?=.*[0-9]).{8,}"}}}),
    );
    let catalogue = dir.path().display().to_string();
    let gate = Gate::start(&[("TOOLGATE_CATALOGUE", &catalogue), ("TOOLGATE_ADVERTISE", "all")]).await;
    // 2^30 checks of one string: the tool cannot be called, and says why.
    let answer = gate.call("unfolding", json!({"s": 5})).await;
    let error = expect_error(&answer, "INTERNAL_ERROR")["error"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(error.contains("unfold into more than"), "{error}");
    gate.stop().await;
    let out = command(dir.path(), &[])
        .args(["catalogue", "check", &catalogue])
        .stdin(Stdio::null())
        .output()
        .await
        .unwrap();
    let report = String::from_utf8_lossy(&out.stdout);
    assert!(!out.status.success(), "{report}");
    assert!(
        report.contains("FAILED  unfolding") && report.contains("unfold into more than"),
        "{report}"
    );
    assert!(
        report.contains("note    lookahead") && report.contains("backtracking"),
        "{report}"
    );
}

/// Writes `lines` to a fresh stdio server (after `initialize`), and returns the answers
/// to the requests whose ids are in `ids`, in order.
async fn raw_lines(lines: &[String], ids: &[i64]) -> Vec<Value> {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = command(dir.path(), &[]);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    let ready = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    stdin.write_all(format!("{init}\n{ready}\n").as_bytes()).await.unwrap();
    for line in lines {
        stdin.write_all(line.as_bytes()).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
    }
    let mut out = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut answers = vec![Value::Null; ids.len()];
    let read = async {
        while answers.iter().any(Value::is_null) {
            let line = out
                .next_line()
                .await
                .unwrap()
                .expect("the server answers every request");
            let message: Value = serde_json::from_str(&line).unwrap();
            if let Some(i) = ids.iter().position(|id| message["id"] == json!(id)) {
                answers[i] = message;
            }
        }
    };
    tokio::time::timeout(Duration::from_secs(30), read)
        .await
        .expect("answers arrive");
    drop(stdin);
    answers
}

#[tokio::test]
async fn a_message_too_deep_or_too_full_or_broken_inside_is_answered_with_its_id() {
    let deep = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{{"name":"echo","arguments":{{"a":{}1{}}}}}}}"#,
        "[".repeat(200),
        "]".repeat(200)
    );
    // 5.5 million `{}` peaked at 1.25 GB parsed.
    let full = format!(
        r#"{{"jsonrpc":"2.0","id":2,"method":"ping","params":{{"a":[{}{{}}]}}}}"#,
        "{},".repeat(2_000_000)
    );
    // A lone surrogate got no answer at all.
    let surrogate =
        r#"{"jsonrpc":"2.0","id":3,"method":"tools/call","params":{"name":"echo","arguments":{"message":"\ud800"}}}"#;
    let ping = r#"{"jsonrpc":"2.0","id":4,"method":"ping"}"#;
    let answers = raw_lines(&[deep, full, surrogate.to_owned(), ping.to_owned()], &[1, 2, 3, 4]).await;
    assert_eq!(answers[0]["error"]["code"], -32600, "{}", answers[0]);
    assert!(answers[0]["error"]["message"].as_str().unwrap().contains("deeper than"));
    assert_eq!(answers[1]["error"]["code"], -32600, "{}", answers[1]);
    assert!(answers[1]["error"]["message"].as_str().unwrap().contains("more than"));
    assert_eq!(answers[2]["error"]["code"], -32700, "{}", answers[2]);
    assert!(answers[3]["result"].is_object(), "the session goes on: {}", answers[3]);
}
