//! Input schemas are compiled when a call first needs them, into a bounded cache: a
//! tool whose schema does not compile is still served by the server — listed,
//! searchable — and every call of it fails naming the compiler's complaint, reported on
//! stderr when first compiled (`catalogue check` fails on it: `catalogue_check.rs`).

use serde_json::{Value, json};

use crate::util::{Gate, expect_error, expect_ok, structured};

fn tool(slug: &str, schema: Value) -> Value {
    json!({
        "slug": slug,
        "name": slug,
        "description": format!("Echoes {slug}."),
        "input_schema": schema,
        "runtime": "javascript",
        "source": "function run(params) { return params; }",
    })
}

fn write(dir: &std::path::Path, tools: Vec<Value>) -> String {
    let path = dir.join("catalogue.json");
    std::fs::write(&path, json!({ "tools": tools }).to_string()).unwrap();
    path.display().to_string()
}

#[tokio::test]
async fn a_schema_that_does_not_compile_fails_each_call_and_is_reported_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = write(
        dir.path(),
        vec![
            tool("good", json!({"type": "object", "required": ["n"]})),
            tool("broken", json!({"type": "object", "properties": {"n": {"type": 5}}})),
        ],
    );
    let gate = Gate::start(&[("TOOLGATE_CATALOGUE", &path)]).await;
    let listed = gate.meta(json!({"command": "list"})).await;
    let slugs: Vec<&str> = structured(&listed)["tools"]
        .as_array()
        .unwrap()
        .iter()
        .filter_map(|r| r["slug"].as_str())
        .collect();
    assert_eq!(slugs, ["broken", "good"], "served, though not callable");
    for _ in 0..2 {
        let r = gate.call("broken", json!({"n": 1})).await;
        let body = expect_error(&r, "INTERNAL_ERROR");
        let error = body["error"].as_str().unwrap();
        assert!(
            error.contains("tool \"broken\" cannot be called: input_schema does not compile"),
            "{error}"
        );
    }
    expect_error(&gate.call("good", json!({})).await, "INVALID_PARAMS");
    expect_ok(&gate.call("good", json!({"n": 1})).await);
    let stderr = gate.stop().await;
    assert_eq!(
        stderr.matches("tool \"broken\" cannot be called").count(),
        1,
        "reported when compiled, not on every call: {stderr}"
    );
}

#[tokio::test]
async fn more_schemas_than_the_cache_holds_still_validate_every_call() {
    let dir = tempfile::tempdir().unwrap();
    let tools = (0..40)
        .map(|i| {
            let field = format!("f{i}");
            tool(
                &format!("t{i:02}"),
                json!({"type": "object", "properties": {&field: {"type": "integer"}}, "required": [field]}),
            )
        })
        .collect();
    let path = write(dir.path(), tools);
    let gate = Gate::start(&[("TOOLGATE_CATALOGUE", &path), ("TOOLGATE_VALIDATORS", "16")]).await;
    for round in 0..2 {
        for i in 0..40 {
            let slug = format!("t{i:02}");
            let r = gate.call(&slug, json!({})).await;
            let body = expect_error(&r, "INVALID_PARAMS");
            assert!(
                body["error"].as_str().unwrap().contains(&format!("\"f{i}\"")),
                "round {round}, {slug}: {body}"
            );
            expect_ok(&gate.call(&slug, json!({ format!("f{i}"): i })).await);
        }
    }
}
