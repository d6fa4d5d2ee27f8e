//! Notifications across a fleet: a session's GET stream open on one replica receives the
//! log messages of calls another replica serves (passed through Redis); resumed with
//! `Last-Event-ID` on another replica, it goes on live there; a `logging/setLevel` any
//! replica received holds on every replica; and a client's answer to a tool's sampling
//! request, posted to another replica, reaches the replica whose call asked. Real
//! `toolgate --http` replicas, real Redis, the raw SSE stream read with reqwest.

use serde_json::{Value, json};

use crate::fleet_sessions::gates;
use crate::http::Session;
use crate::http_notifications::{Listening, method};
use crate::redis_server::{MACHINE, prefix};

/// A `run_javascript` call logging `info` then `error` (logger `fleet`).
fn chatty(info: &str, error: &str) -> Value {
    let code = format!("mcp.log('info', {info:?}, 'fleet'); mcp.log('error', {error:?}, 'fleet'); return 1;");
    json!({"name": "run_javascript", "arguments": {"code": code}})
}

#[tokio::test]
async fn a_call_on_one_replica_logs_to_the_stream_open_on_another_at_the_level_asked_anywhere() {
    let prefix = prefix("notes");
    let catalogue = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/conformance");
    let fleet = gates(
        2,
        MACHINE,
        &prefix,
        &[("TOOLGATE_RUNTIMES", "js"), ("TOOLGATE_CATALOGUE", catalogue)],
    )
    .await;
    let (a, b) = (fleet[0].url.clone(), fleet[1].url.clone());
    let mut session = Session::open(&a).await;
    // The client listens on B; its calls go to A.
    let mut listening = Listening::open_at(&session, &b).await;
    let answer = session
        .request("tools/call", json!({"name": "test_tool_with_logging", "arguments": {}}))
        .await;
    assert_ne!(answer["result"]["isError"], json!(true), "{answer}");
    let seen = listening
        .until(|m| m["params"]["data"] == "Tool execution completed")
        .await;
    let data: Vec<&Value> = seen.iter().map(|m| &m["params"]["data"]).collect();
    assert_eq!(
        data,
        [
            "Tool execution started",
            "Tool processing data",
            "Tool execution completed"
        ],
        "{seen:?}"
    );
    assert!(seen.iter().all(|m| method(m) == "notifications/message"), "{seen:?}");

    // `logging/setLevel` received by B holds for A's calls: the info message is held back.
    session.url.clone_from(&b);
    let set = session.request("logging/setLevel", json!({"level": "warning"})).await;
    assert!(set.get("error").is_none(), "{set}");
    session.url.clone_from(&a);
    let answer = session
        .request("tools/call", chatty("held back on A", "passed from A"))
        .await;
    assert_ne!(answer["result"]["isError"], json!(true), "{answer}");
    let seen = listening.until(|m| m["params"]["data"] == "passed from A").await;
    assert_eq!(seen.len(), 1, "the info message was held back: {seen:?}");
    assert_eq!(seen[0]["params"]["level"], "error", "{seen:?}");

    // And one A received holds on B, which sends on its own stream.
    let set = session.request("logging/setLevel", json!({"level": "debug"})).await;
    assert!(set.get("error").is_none(), "{set}");
    session.url.clone_from(&b);
    let answer = session.request("tools/call", chatty("info on B", "error on B")).await;
    assert_ne!(answer["result"]["isError"], json!(true), "{answer}");
    let seen = listening.until(|m| m["params"]["data"] == "error on B").await;
    let data: Vec<&Value> = seen.iter().map(|m| &m["params"]["data"]).collect();
    assert_eq!(data, ["info on B", "error on B"], "{seen:?}");

    // The stream breaks; resumed on A, it goes on live there: A's calls log to it.
    let last = listening.last_id.clone().expect("the events carry ids");
    drop(listening);
    let mut listening = Listening::resume_at(&session, &a, &last).await;
    session.url.clone_from(&a);
    let answer = session.request("tools/call", chatty("info on A", "error on A")).await;
    assert_ne!(answer["result"]["isError"], json!(true), "{answer}");
    let seen = listening.until(|m| m["params"]["data"] == "error on A").await;
    let data: Vec<&Value> = seen.iter().map(|m| &m["params"]["data"]).collect();
    assert_eq!(data, ["info on A", "error on A"], "{seen:?}");

    // A recorded itself as the stream's holder in the session's hash, and the level.
    let mut redis = redis::Client::open(MACHINE)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let key = format!("{prefix}session:{}", session.id);
    let (listener, level): (Option<String>, Option<String>) = redis::cmd("HMGET")
        .arg(&key)
        .arg("listener")
        .arg("level")
        .query_async(&mut redis)
        .await
        .unwrap();
    assert!(listener.is_some_and(|l| l.len() == 24), "{key}");
    assert_eq!(level.as_deref(), Some("0"));
}

/// The JSON-RPC messages of the SSE events in `buffered` completed so far (removed from it).
fn drain_messages(buffered: &mut String) -> Vec<Value> {
    let mut out = Vec::new();
    while let Some(end) = buffered.find("\n\n") {
        let event: String = buffered.drain(..end + 2).collect();
        out.extend(
            event
                .lines()
                .filter_map(|l| l.strip_prefix("data:"))
                .filter_map(|d| serde_json::from_str::<Value>(d.trim()).ok()),
        );
    }
    out
}

#[tokio::test]
async fn a_clients_answer_posted_to_another_replica_reaches_the_replica_that_asked() {
    let prefix = prefix("answers");
    let catalogue = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/conformance");
    let fleet = gates(
        2,
        MACHINE,
        &prefix,
        &[("TOOLGATE_RUNTIMES", "js"), ("TOOLGATE_CATALOGUE", catalogue)],
    )
    .await;
    let (a, b) = (fleet[0].url.clone(), fleet[1].url.clone());
    let session = Session::open_with(&a, json!({"sampling": {}})).await;
    let call = json!({"jsonrpc": "2.0", "id": 2, "method": "tools/call",
        "params": {"name": "test_sampling", "arguments": {"prompt": "name a colour"}}});
    let mut stream = crate::http::post(&session.http, &a, Some(&session.id), &call).await;
    assert_eq!(stream.status(), 200);
    let mut buffered = String::new();
    let mut asked = None;
    let answer = loop {
        let chunk = tokio::time::timeout(std::time::Duration::from_secs(60), stream.chunk())
            .await
            .expect("the call's stream goes on")
            .unwrap()
            .expect("the stream ends with the call's answer");
        buffered.push_str(&String::from_utf8_lossy(&chunk).replace("\r\n", "\n"));
        let mut done = None;
        for message in drain_messages(&mut buffered) {
            if message["method"] == "sampling/createMessage" {
                // A's request names A; the client answers through B.
                let id = message["id"].clone();
                assert!(id.as_str().is_some_and(|i| i.contains('.')), "{message}");
                let reply = json!({"jsonrpc": "2.0", "id": id, "result": {
                    "role": "assistant", "content": {"type": "text", "text": "teal"}, "model": "test-model"}});
                let posted = crate::http::post(&session.http, &b, Some(&session.id), &reply).await;
                assert_eq!(posted.status(), 202);
                asked = Some(message);
            } else if message["id"] == 2 {
                done = Some(message);
            }
        }
        if let Some(done) = done {
            break done;
        }
    };
    assert!(asked.is_some(), "the tool asked the client to sample");
    assert!(answer["result"].to_string().contains("LLM response: teal"), "{answer}");
}
