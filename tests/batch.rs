//! The meta-tool's batch through the real server: validation of every item before any
//! runs, isolated failures, input order, the cap, and progress only when asked for.

use std::time::Duration;

use serde_json::{Value, json};

use crate::util::{Gate, expect_error, fixtures, raw_exchange, structured, text};

async fn gate() -> Gate {
    let dir = fixtures().display().to_string();
    Gate::start(&[("TOOLGATE_CATALOGUE", dir.as_str())]).await
}

fn echo(message: &str) -> Value {
    json!({"slug": "echo", "params": {"message": message}})
}

#[tokio::test]
async fn one_bad_item_rejects_the_whole_batch_and_runs_nothing() {
    let gate = gate().await;
    let runs = json!([echo("a"), {"slug": "echo", "params": {"message": 5}}, {"slug": "ecoh"}, {"params": {}}]);
    let r = gate.meta(json!({"command": "batch", "runs": runs})).await;
    let s = expect_error(&r, "BATCH_INVALID");
    let items = s["items"].as_array().unwrap();
    let summary: Vec<(u64, &str)> = items
        .iter()
        .map(|i| (i["index"].as_u64().unwrap(), i["code"].as_str().unwrap()))
        .collect();
    assert_eq!(
        summary,
        vec![(1, "INVALID_PARAMS"), (2, "TOOL_NOT_FOUND"), (3, "BAD_REQUEST")]
    );
    let history = gate.meta(json!({"command": "history"})).await;
    assert_eq!(structured(&history)["runs"], json!([]), "nothing ran");
    gate.stop().await;
}

#[tokio::test]
async fn a_failing_item_does_not_cost_the_others() {
    let gate = gate().await;
    let runs = json!([echo("first"), {"slug": "throws"}, {"slug": "echo-async", "params": {"message": "third"}}]);
    let r = gate.meta(json!({"command": "batch", "runs": runs})).await;
    assert_eq!(r.is_error, Some(false));
    let s = structured(&r);
    assert_eq!(
        (s["total"].as_u64(), s["succeeded"].as_u64(), s["failed"].as_u64()),
        (Some(3), Some(2), Some(1))
    );
    let results = s["results"].as_array().unwrap();
    let order: Vec<(u64, &str, bool)> = results
        .iter()
        .map(|x| {
            (
                x["index"].as_u64().unwrap(),
                x["slug"].as_str().unwrap(),
                x["success"].as_bool().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        order,
        vec![(0, "echo", true), (1, "throws", false), (2, "echo-async", true)]
    );
    assert_eq!(results[0]["result"]["message"], "first");
    assert_eq!(results[1]["code"], "EXECUTION_ERROR");
    assert_eq!(results[2]["result"]["message"], "THIRD");
    let t = text(&r);
    assert!(t.starts_with("Batch of 3: 2 succeeded, 1 failed."), "{t}");
    assert!(
        t.find("Failed:").unwrap() < t.find("Succeeded:").unwrap(),
        "failures first: {t}"
    );
    gate.stop().await;
}

#[tokio::test]
async fn more_than_ten_runs_is_refused() {
    let gate = gate().await;
    let runs: Vec<Value> = (0..11).map(|i| echo(&format!("m{i}"))).collect();
    expect_error(
        &gate.meta(json!({"command": "batch", "runs": runs})).await,
        "BATCH_TOO_LARGE",
    );
    expect_error(&gate.meta(json!({"command": "batch", "runs": []})).await, "BAD_REQUEST");
    expect_error(&gate.meta(json!({"command": "batch"})).await, "BAD_REQUEST");
    gate.stop().await;
}

#[tokio::test]
async fn progress_arrives_in_order_with_a_token_and_never_without() {
    // rmcp's client puts a token on every request, so the token-less case speaks raw JSON-RPC.
    let dir = fixtures().display().to_string();
    let batch = json!({"method": "tools/call", "params": {"name": "toolgate", "arguments": {"command": "batch", "runs": [echo("a"), echo("b")]}}});
    let (lines, _) = raw_exchange(&[("TOOLGATE_CATALOGUE", dir.as_str())], std::slice::from_ref(&batch)).await;
    assert_eq!(lines.last().unwrap()["result"]["structuredContent"]["succeeded"], 2);
    assert!(
        lines.iter().all(|l| l.get("method").is_none()),
        "no notification without a token: {lines:?}"
    );

    // With a token (raw): an opening tick, then one per finished run, strictly increasing.
    let mut with_token = batch;
    with_token["params"]["_meta"] = json!({"progressToken": "batch-1"});
    with_token["params"]["arguments"]["runs"] = json!([echo("a"), {"slug": "throws"}, echo("c")]);
    let (lines, _) = raw_exchange(&[("TOOLGATE_CATALOGUE", dir.as_str())], &[with_token]).await;
    let ticks: Vec<&Value> = lines
        .iter()
        .filter(|l| l["method"] == "notifications/progress")
        .collect();
    let seen: Vec<f64> = ticks
        .iter()
        .map(|t| t["params"]["progress"].as_f64().unwrap())
        .collect();
    assert_eq!(seen, vec![0.0, 1.0, 2.0, 3.0], "{lines:?}");
    assert!(
        ticks
            .iter()
            .all(|t| t["params"]["progressToken"] == "batch-1" && t["params"]["total"] == 3.0)
    );
    let answer = lines.last().unwrap();
    assert_eq!(
        answer["result"]["structuredContent"]["failed"], 1,
        "the answer comes after every tick"
    );

    // And through rmcp's client, whose own token is honoured the same way.
    let mut gate = gate().await;
    let r = gate
        .meta(json!({"command": "batch", "runs": [echo("x"), echo("y")]}))
        .await;
    assert_eq!(structured(&r)["succeeded"], 2);
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let tick = tokio::time::timeout(Duration::from_secs(30), gate.progress.recv())
            .await
            .expect("a tick")
            .unwrap();
        seen.push(tick.progress);
    }
    assert_eq!(seen, vec![0.0, 1.0, 2.0]);
    gate.stop().await;
}
