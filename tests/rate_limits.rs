//! Rate limits and fairness on both HTTP faces: a principal past its run rate is answered
//! 429 with `Retry-After` by `catalogue serve` and `RATE_LIMITED` with `retry_after_ms`
//! by an MCP tool call; past its request rate, any route but the probes is 429. Limits
//! are lowered for the test (2 a minute), so the third call is refused without waiting.

use std::path::Path;

use serde_json::{Value, json};

use crate::access::new_key;
use crate::http::{HttpGate, Session, post};
use crate::util::{CatalogueServer, fixtures};

/// Sets `per_minute` of every key in the keys file at `file`.
fn set_rate(file: &Path, per_minute: u32) {
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    for key in doc["keys"].as_array_mut().unwrap() {
        key["per_minute"] = json!(per_minute);
    }
    std::fs::write(file, doc.to_string()).unwrap();
}

/// The `Retry-After` of `response` in seconds, asserted to be there.
fn retry_after(response: &reqwest::Response) -> u64 {
    let value = response.headers().get("retry-after").expect("Retry-After");
    value.to_str().unwrap().parse().unwrap()
}

#[tokio::test]
async fn catalogue_serve_refuses_the_third_anonymous_run_a_minute_with_retry_after() {
    let server = CatalogueServer::launch(&[fixtures().as_os_str()], &[("TOOLGATE_ANONYMOUS_PER_MINUTE", "2")]).await;
    let http = reqwest::Client::new();
    let url = format!("{}/api/tools/echo/run", server.host);
    let body = json!({"params": {"message": "m"}});
    for _ in 0..2 {
        assert_eq!(http.post(&url).json(&body).send().await.unwrap().status(), 200);
    }
    let refused = http.post(&url).json(&body).send().await.unwrap();
    assert_eq!(refused.status(), 429);
    let wait = retry_after(&refused);
    assert!((1..=60).contains(&wait), "{wait}");
    let answer: Value = refused.json().await.unwrap();
    assert_eq!(answer["code"], "RATE_LIMITED", "{answer}");
    assert_eq!(answer["retryable"], true, "{answer}");
    // The body says the header's number of seconds (both rounded up from the wait).
    let said = answer["error"].as_str().unwrap();
    assert!(
        said.contains(&format!("Retry after {wait} s.")),
        "{said} (retry-after: {wait})"
    );
    // Runs are what is limited: the list and health still answer.
    let list = http.get(format!("{}/api/tools", server.host)).send().await.unwrap();
    assert_eq!(list.status(), 200);
    let health = http.get(format!("{}/api/health", server.host)).send().await.unwrap();
    assert_eq!(health.status(), 200);
}

#[tokio::test]
async fn each_key_has_its_own_run_bucket() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("keys.json");
    let greedy = new_key(&file, "run,search", "greedy").await;
    let patient = new_key(&file, "run,search", "patient").await;
    set_rate(&file, 2);
    let server = CatalogueServer::launch(
        &[fixtures().as_os_str()],
        &[("TOOLGATE_KEYS_FILE", file.to_str().unwrap())],
    )
    .await;
    let http = reqwest::Client::new();
    let url = format!("{}/api/tools/echo/run", server.host);
    let run = |key: &str| {
        http.post(&url)
            .bearer_auth(key)
            .json(&json!({"params": {"message": "m"}}))
            .send()
    };
    assert_eq!(run(&greedy).await.unwrap().status(), 200);
    assert_eq!(run(&greedy).await.unwrap().status(), 200);
    let refused = run(&greedy).await.unwrap();
    assert_eq!(refused.status(), 429);
    assert!(retry_after(&refused) >= 1);
    let answer: Value = refused.json().await.unwrap();
    assert!(answer["error"].as_str().unwrap().contains("greedy"), "{answer}");
    assert!(!answer.to_string().contains(&greedy), "the key is never echoed");
    assert_eq!(
        run(&patient).await.unwrap().status(),
        200,
        "another key is not held back"
    );
}

#[tokio::test]
async fn an_mcp_tool_call_past_the_run_rate_answers_rate_limited_with_retry_after_ms() {
    let catalogue = fixtures().display().to_string();
    let gate = HttpGate::start(&[
        ("TOOLGATE_CATALOGUE", &catalogue),
        ("TOOLGATE_ANONYMOUS_PER_MINUTE", "2"),
    ])
    .await;
    let mut session = Session::open(&gate.url).await;
    let run = json!({"command": "run", "slug": "echo", "params": {"message": "m"}});
    assert_eq!(session.call("toolgate", run.clone()).await["success"], true);
    assert_eq!(session.call("echo", json!({"message": "m"})).await["success"], true);
    let refused = session.call("echo", json!({"message": "m"})).await;
    assert_eq!(refused["code"], "RATE_LIMITED", "{refused}");
    assert_eq!(refused["retryable"], true, "{refused}");
    let wait = refused["retry_after_ms"].as_u64().unwrap_or_default();
    assert!(wait > 0 && wait <= 60_000, "{refused}");
    // The refusal is a run of the session's history, like any other failure.
    let history = session.call("toolgate", json!({"command": "history"})).await;
    assert_eq!(history["runs"].as_array().map(Vec::len), Some(3), "{history}");
}

#[tokio::test]
async fn mcp_over_http_answers_429_past_the_request_rate_and_probes_stay_open() {
    let gate = HttpGate::start(&[("TOOLGATE_REQUESTS_PER_MINUTE", "3")]).await;
    let http = reqwest::Client::new();
    let ping = json!({"jsonrpc": "2.0", "id": 1, "method": "ping"});
    let mut statuses = Vec::new();
    for _ in 0..4 {
        statuses.push(post(&http, &gate.url, None, &ping).await);
    }
    let refused = statuses.pop().unwrap();
    assert!(statuses.iter().all(|r| r.status() != 429), "{statuses:?}");
    assert_eq!(refused.status(), 429);
    assert!(retry_after(&refused) >= 1);
    let base = gate.url.trim_end_matches("/mcp");
    assert_eq!(http.get(format!("{base}/healthz")).send().await.unwrap().status(), 200);
}
