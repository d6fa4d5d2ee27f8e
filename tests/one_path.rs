//! One path for every tool: the meta-tool, batch, history and diff reach the runtime tools
//! as they reach catalogue tools; a client that cancels a call stops its run; the list
//! stays within its byte budget and leaves out tools that cannot run here; `initialize`
//! declares what the server sends.

use rmcp::model::{CallToolRequestParams, ClientRequest, ReadResourceRequestParams};
use rmcp::service::PeerRequestOptions;
use serde_json::{Value, json};

use rmcp::model::CallToolResult;

use crate::util::{Gate, expect_error, expect_ok, structured};

/// Asserts `r` is not an error and returns its structured block (meta-tool answers carry
/// no `success` field).
fn answered(r: &CallToolResult) -> Value {
    assert_ne!(r.is_error, Some(true), "{r:?}");
    structured(r).clone()
}

#[tokio::test]
async fn the_meta_tool_schema_run_and_batch_reach_runtime_tools() {
    let gate = Gate::start(&[("TOOLGATE_RUNTIMES", "js")]).await;
    let schema = answered(&gate.meta(json!({"command": "schema", "slug": "run_javascript"})).await);
    assert_eq!(schema["example"]["name"], "run_javascript", "{schema}");
    assert!(schema["output_schema"]["anyOf"].is_array(), "{schema}");
    let example = schema["example"]["arguments"].clone();
    let ran = gate
        .meta(json!({"command": "run", "slug": "run_javascript", "params": example}))
        .await;
    assert_eq!(expect_ok(&ran), &json!([2, 4, 6]));

    let batch = gate
        .meta(json!({"command": "batch", "runs": [
            {"slug": "run_javascript", "params": {"code": "return 40 + 2"}},
            {"slug": "env-validator", "params": {"env_content": "A=1"}},
            {"slug": "run_typescript", "params": {"code": "throw new Error('no')"}}
        ]}))
        .await;
    let b = answered(&batch);
    assert_eq!(
        (b["succeeded"].as_u64(), b["failed"].as_u64()),
        (Some(2), Some(1)),
        "{b}"
    );
    assert_eq!(b["results"][0]["result"], 42);
    assert_eq!(
        b["results"][0]["timed_out"], false,
        "a snippet keeps its own fields: {b}"
    );
    assert_eq!(b["results"][1]["result"]["valid"], true);
    assert_eq!(b["results"][2]["code"], "EXECUTION_ERROR", "{b}");

    // A snippet refused before it runs is a batch refusal like any other tool's.
    let refused = gate
        .meta(json!({"command": "batch", "runs": [{"slug": "run_javascript", "params": {}}]}))
        .await;
    expect_error(&refused, "BATCH_INVALID");

    let history = answered(&gate.meta(json!({"command": "history"})).await);
    let mut slugs: Vec<&str> = history["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["slug"].as_str().unwrap())
        .collect();
    assert_eq!(
        slugs.pop(),
        Some("run_javascript"),
        "the meta run is the oldest: {history}"
    );
    slugs.sort_unstable();
    assert_eq!(
        slugs,
        ["env-validator", "run_javascript", "run_typescript"],
        "every family in one history (batch runs finish in any order): {history}"
    );
    gate.stop().await;
}

#[tokio::test]
async fn diff_compares_runtime_runs_like_any_other() {
    let gate = Gate::start(&[("TOOLGATE_RUNTIMES", "js")]).await;
    for code in ["return {n: 1}", "return {n: 1}", "return {n: 2}"] {
        expect_ok(&gate.call("run_javascript", json!({"code": code})).await);
    }
    let same = answered(&gate.meta(json!({"command": "diff", "from": "r1", "to": "r2"})).await);
    assert_eq!(
        same["verdict"], "identical",
        "timings are not part of a run's record: {same}"
    );
    let changed = answered(&gate.meta(json!({"command": "diff", "from": "r2", "to": "r3"})).await);
    assert_eq!(changed["verdict"], "inputs_differ", "{changed}");
    gate.stop().await;
}

#[tokio::test]
async fn a_cancelled_call_stops_its_run() {
    let gate = Gate::start(&[("TOOLGATE_RUNTIMES", "js"), ("TOOLGATE_JS_TIMEOUT_MS", "120000")]).await;
    let request = ClientRequest::CallToolRequest(rmcp::model::Request::new(
        CallToolRequestParams::new("run_javascript")
            .with_arguments(json!({"code": "while (true) {}"}).as_object().cloned().unwrap()),
    ));
    let handle = gate
        .client
        .peer()
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .unwrap();
    handle.cancel(Some("the test changed its mind".into())).await.unwrap();
    // The run is recorded when it ends; without cancellation that is two minutes away.
    // Each look is one round trip, so this waits for the record, not for a clock.
    let mut record = Value::Null;
    for _ in 0..10_000 {
        let r = gate.meta(json!({"command": "history", "show": "r1"})).await;
        if r.is_error != Some(true) {
            record = structured(&r)["run"].clone();
            break;
        }
    }
    assert_eq!(record["status"], "CANCELLED", "{record}");
    // The engine was stopped too: the next run is served at once, as normal.
    let next = gate.call("run_javascript", json!({"code": "return 'after'"})).await;
    assert_eq!(expect_ok(&next), "after");
    gate.stop().await;
}

#[tokio::test]
async fn initialize_declares_the_notifications_it_sends() {
    let gate = Gate::start(&[]).await;
    let info = gate.client.peer_info().unwrap();
    let caps = &info.capabilities;
    assert_eq!(caps.tools.as_ref().and_then(|t| t.list_changed), Some(true));
    assert_eq!(caps.resources.as_ref().and_then(|r| r.list_changed), Some(true));
    assert!(caps.prompts.is_some() && caps.completions.is_some());
    // Logging: upstream servers' log messages are passed on, filtered by logging/setLevel.
    #[allow(deprecated)] // rmcp marks logging deprecated (SEP-2577); clients still use it.
    let logging = caps.logging.is_some();
    assert!(logging);
    #[allow(deprecated)]
    let set = gate
        .client
        .set_level(rmcp::model::SetLevelRequestParams::new(
            rmcp::model::LoggingLevel::Error,
        ))
        .await;
    assert!(set.is_ok(), "{set:?}");
    gate.stop().await;
}

/// `tools/list` as its serialised size and the tools it names.
async fn listed(gate: &Gate) -> (usize, Vec<rmcp::model::Tool>) {
    let tools = gate.client.list_all_tools().await.unwrap();
    (serde_json::to_vec(&tools).unwrap().len(), tools)
}

#[tokio::test]
async fn auto_lists_within_its_byte_budget_and_says_how_to_find_the_rest() {
    let gate = Gate::start(&[]).await;
    let (bytes, tools) = listed(&gate).await;
    assert!(bytes <= 24 * 1024, "{bytes} bytes listed");
    assert!(
        tools.len() > 3,
        "the budget holds more than the meta-tool: {}",
        tools.len()
    );
    let meta = tools[0].description.as_deref().unwrap_or_default().to_owned();
    // 34 embedded tools, 3 of them NyxilumLang, which cannot run here.
    let hidden = 31 - (tools.len() - 1);
    assert!(
        meta.contains(&format!("{hidden} more catalogue tools are not listed")),
        "{meta}"
    );
    gate.stop().await;

    let gate = Gate::start(&[("TOOLGATE_ADVERTISE_BYTES", "2000000")]).await;
    let (_, all) = listed(&gate).await;
    assert!(all.len() > tools.len(), "a larger budget lists more");
    assert!(!all[0].description.as_deref().unwrap_or_default().contains("not listed"));
    gate.stop().await;

    let gate = Gate::start(&[("TOOLGATE_ADVERTISE", "meta")]).await;
    assert_eq!(gate.names().await, ["toolgate"]);
    gate.stop().await;
}

/// The row of `slug` in a `{"tools": [...]}` answer.
fn tool_row(answer: &Value, slug: &str) -> Value {
    let rows = answer["tools"].as_array().expect("a tools array");
    rows.iter()
        .find(|t| t["slug"] == slug)
        .cloned()
        .expect("the tool's row")
}

#[tokio::test]
async fn a_tool_that_cannot_run_here_is_not_advertised_but_stays_findable() {
    let gate = Gate::start(&[
        ("TOOLGATE_ADVERTISE", "all"),
        ("NX_ECOSYSTEM_ROOT", "/nonexistent/NyxilumLang"),
    ])
    .await;
    let names = gate.names().await;
    assert!(names.iter().any(|n| n == "env-validator"));
    assert!(!names.iter().any(|n| n == "nyxilum-caesar"), "{names:?}");
    let list = answered(&gate.meta(json!({"command": "list"})).await);
    let row = tool_row(&list, "nyxilum-caesar");
    assert_eq!(row["available"], false, "{row}");
    assert_eq!(row["unavailable"]["code"], "RUNTIME_UNAVAILABLE", "{row}");
    let read = gate
        .client
        .read_resource(ReadResourceRequestParams::new("toolgate://catalogue"))
        .await
        .unwrap();
    let rmcp::model::ResourceContents::TextResourceContents { text, .. } = &read.contents[0] else {
        panic!("text");
    };
    let catalogue: Value = serde_json::from_str(text).unwrap();
    let entry = tool_row(&catalogue, "nyxilum-caesar");
    assert_eq!(entry["available"], false, "{entry}");
    let env = tool_row(&catalogue, "env-validator");
    assert_eq!(env["available"], true, "{env}");
    gate.stop().await;
}

#[tokio::test]
async fn runtime_tool_descriptions_state_the_limits_in_force() {
    let gate = Gate::start(&[
        ("TOOLGATE_RUNTIMES", "js"),
        ("TOOLGATE_JS_TIMEOUT_MS", "1500"),
        ("TOOLGATE_JS_HEAP_MB", "64"),
    ])
    .await;
    let tools = gate.client.list_all_tools().await.unwrap();
    let js = tools.iter().find(|t| t.name == "run_javascript").unwrap();
    let text = js.description.as_deref().unwrap_or_default();
    assert!(text.contains("64 MiB heap, 1.5 s"), "{text}");
    assert!(!text.contains("512"), "{text}");
    // The guide states them too, and its error table is the one the recover prompt reads.
    let read = gate
        .client
        .read_resource(ReadResourceRequestParams::new("toolgate://guide"))
        .await
        .unwrap();
    let rmcp::model::ResourceContents::TextResourceContents { text: guide, .. } = &read.contents[0] else {
        panic!("text");
    };
    assert!(guide.contains("64 MiB heap, 1.5 s, 262,144 characters"), "{guide}");
    assert!(guide.contains("| `CANCELLED` | no |"), "{guide}");
    assert!(!guide.contains("{{"), "every placeholder filled: {guide}");
    gate.stop().await;
}
