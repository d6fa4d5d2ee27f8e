//! tools/list, direct calls and the meta-tool over stdio, against the embedded catalogue
//! and the fixture folder.

use serde_json::json;

use crate::util::{Gate, expect_error, expect_ok, fixtures, structured, text};

fn fixture_env() -> Vec<(&'static str, String)> {
    vec![("TOOLGATE_CATALOGUE", fixtures().display().to_string())]
}

async fn fixture_gate() -> Gate {
    let env = fixture_env();
    let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
    Gate::start(&env).await
}

#[tokio::test]
async fn embedded_tools_are_listed_with_real_schemas_in_stable_order() {
    let gate = Gate::start(&[("TOOLGATE_ADVERTISE", "all")]).await;
    let tools = gate.client.list_all_tools().await.unwrap();
    let names: Vec<&str> = tools.iter().map(|t| t.name.as_ref()).collect();
    assert_eq!(names[0], "toolgate", "the meta-tool comes first");
    let mut sorted = names[1..].to_vec();
    sorted.sort();
    assert_eq!(names[1..], sorted[..], "catalogue tools are sorted by slug");
    assert!(names.len() >= 7, "{names:?}");
    for slug in ["env-validator", "data-generator"] {
        let tool = tools
            .iter()
            .find(|t| t.name == slug)
            .unwrap_or_else(|| panic!("{slug} listed"));
        assert!(tool.title.as_deref().is_some_and(|t| !t.is_empty()));
        assert!(
            tool.input_schema.get("properties").is_some(),
            "{slug} has its input schema"
        );
        let out = tool.output_schema.as_ref().expect("outputSchema");
        assert_eq!(
            out["properties"]["result"]["type"], "object",
            "the tool's own output schema sits under result"
        );
        assert!(tool.annotations.as_ref().and_then(|a| a.read_only_hint).is_some());
    }
    let env = tools.iter().find(|t| t.name == "env-validator").unwrap();
    assert_eq!(env.input_schema["required"], json!(["env_content"]));
    let again: Vec<String> = gate.names().await;
    assert_eq!(again, names, "order is stable across calls");
    gate.stop().await;
}

#[tokio::test]
async fn direct_call_runs_the_tool_and_answers_text_and_structured() {
    let gate = Gate::start(&[]).await;
    let r = gate
        .call(
            "env-validator",
            json!({"env_content": "DEBUG=true\nPORT=8080\nDEBUG=false"}),
        )
        .await;
    let result = expect_ok(&r);
    assert!(result["keys"].as_array().unwrap().contains(&json!("PORT")), "{result}");
    assert!(
        result["warnings"].to_string().contains("DEBUG"),
        "the duplicate key is reported: {result}"
    );
    let s = structured(&r);
    assert!(s["run_id"].as_str().unwrap().starts_with('r'));
    assert!(s["duration_ms"].is_u64());
    assert!(text(&r).contains("env-validator finished"), "{}", text(&r));
    gate.stop().await;
}

#[tokio::test]
async fn meta_run_list_and_schema() {
    let gate = Gate::start(&[]).await;
    let r = gate
        .meta(json!({"command": "run", "slug": "data-generator", "params": {"count": 3, "seed": 42}}))
        .await;
    let first = expect_ok(&r).clone();
    assert_eq!(first["records"].as_array().unwrap().len(), 3);
    let again = gate
        .meta(json!({"command": "run", "slug": "data-generator", "params": {"count": 3, "seed": 42}}))
        .await;
    assert_eq!(expect_ok(&again), &first, "seeded output is deterministic");

    let list = gate.meta(json!({"command": "list"})).await;
    let tools = structured(&list)["tools"].as_array().unwrap().clone();
    assert!(
        tools
            .iter()
            .any(|t| t["slug"] == "env-validator" && t["category"].is_string() && t["tags"].is_array())
    );
    assert!(text(&list).lines().any(|l| l.starts_with("env-validator")));

    let listed = gate.names().await;
    for slug in ["env-validator", "data-generator", "jwt-decoder", "url-parser"] {
        let schema = gate.meta(json!({"command": "schema", "slug": slug})).await;
        let s = structured(&schema).clone();
        assert_eq!(s["slug"], slug);
        assert!(s["input_schema"].is_object() && s["output_schema"].is_object());
        // Direct when tools/list lists the tool, else through the meta-tool's run.
        let call = &s["example"];
        let direct = listed.iter().any(|n| n == slug);
        assert_eq!(call["name"], if direct { slug } else { "toolgate" }, "{call}");
        let sent = gate
            .call(call["name"].as_str().unwrap(), call["arguments"].clone())
            .await;
        expect_ok(&sent);
    }
    gate.stop().await;
}

#[tokio::test]
async fn invalid_params_name_the_field_and_run_nothing() {
    let gate = Gate::start(&[]).await;
    let r = gate.call("data-generator", json!({"count": 5000})).await;
    let s = expect_error(&r, "INVALID_PARAMS");
    assert_eq!(s["retryable"], false);
    let msg = s["error"].as_str().unwrap();
    assert!(msg.contains("/count") && msg.contains("maximum"), "{msg}");
    let r = gate
        .meta(json!({"command": "run", "slug": "env-validator", "params": {}}))
        .await;
    let msg = expect_error(&r, "INVALID_PARAMS")["error"].as_str().unwrap().to_owned();
    assert!(msg.contains("env_content"), "{msg}");
    gate.stop().await;
}

#[tokio::test]
async fn a_typo_suggests_the_right_slug_and_runs_nothing() {
    let gate = Gate::start(&[]).await;
    let r = gate
        .meta(json!({"command": "run", "slug": "env-validatr", "params": {"env_content": "A=1"}}))
        .await;
    let s = expect_error(&r, "TOOL_NOT_FOUND");
    assert_eq!(s["candidates"][0], "env-validator");
    assert!(s["error"].as_str().unwrap().contains("env-validator"));
    assert!(s.get("result").is_none());
    // A direct call naming no tool is a protocol error that still names close matches.
    let (message, data) = gate.call_err("env-validatr", json!({"env_content": "A=1"})).await;
    assert!(message.contains("env-validator"), "{message}");
    assert_eq!(data["code"], "TOOL_NOT_FOUND");
    gate.stop().await;
}

#[tokio::test]
async fn abbreviations_resolve_only_when_unambiguous() {
    let gate = fixture_gate().await;
    let r = gate
        .meta(json!({"command": "run", "slug": "echo-a", "params": {"message": "x"}}))
        .await;
    assert_eq!(expect_ok(&r)["message"], "X", "echo-a abbreviates echo-async");
    let r = gate.meta(json!({"command": "run", "slug": "heap", "params": {}})).await;
    let s = expect_error(&r, "AMBIGUOUS_SLUG");
    assert_eq!(s["candidates"], json!(["heap-bomb", "heap-bomb-caught"]));
    let r = gate.meta(json!({"command": "schema", "slug": "ech"})).await;
    expect_error(&r, "AMBIGUOUS_SLUG");
    gate.stop().await;
}

#[tokio::test]
async fn a_bad_slug_is_withheld_reported_once_and_still_runnable() {
    let gate = fixture_gate().await;
    let names = gate.names().await;
    assert!(!names.iter().any(|n| n.contains(' ')), "{names:?}");
    assert!(names.contains(&"echo".to_owned()));
    let _ = gate.names().await;
    let r = gate
        .meta(json!({"command": "run", "slug": "bad slug/with space"}))
        .await;
    assert_eq!(expect_ok(&r)["reached"], true);
    let schema = gate
        .meta(json!({"command": "schema", "slug": "bad slug/with space"}))
        .await;
    let call = &structured(&schema)["example"];
    assert_eq!(
        call["name"], "toolgate",
        "its ready-to-send call goes through the meta-tool"
    );
    expect_ok(&gate.meta(call["arguments"].clone()).await);
    let list = gate.meta(json!({"command": "list"})).await;
    assert!(text(&list).contains("bad slug/with space"));
    let stderr = gate.stop().await;
    assert_eq!(
        stderr.matches("bad slug/with space").count(),
        1,
        "reported once: {stderr}"
    );
}

#[tokio::test]
async fn meta_misuse_is_a_clear_error() {
    let gate = Gate::start(&[]).await;
    let r = gate.meta(json!({"command": "resources"})).await;
    let s = expect_error(&r, "UNKNOWN_COMMAND");
    for c in ["search", "list", "schema", "run", "batch", "history", "diff"] {
        assert!(s["error"].as_str().unwrap().contains(c));
    }
    expect_error(&gate.meta(json!({})).await, "BAD_REQUEST");
    expect_error(&gate.meta(json!({"command": "run"})).await, "BAD_REQUEST");
    expect_error(&gate.meta(json!({"command": 7})).await, "BAD_REQUEST");
    gate.stop().await;
}

#[tokio::test]
async fn advertise_meta_lists_only_the_meta_tool_but_calls_still_work() {
    let gate = Gate::start(&[("TOOLGATE_ADVERTISE", "meta"), ("TOOLGATE_NAME", "gw")]).await;
    assert_eq!(gate.names().await, vec!["gw"]);
    let r = gate
        .call(
            "gw",
            json!({"command": "run", "slug": "slugify", "params": {"text": "Hello World"}}),
        )
        .await;
    assert_eq!(expect_ok(&r)["slug"], "hello-world");
    gate.stop().await;
}
