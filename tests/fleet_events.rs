//! A fleet's SSE events in Redis (rmcp's `EventStore`): a client whose POST stream broke
//! mid-call resumes it with `Last-Event-ID` on another replica — one that never saw the
//! session — and receives the answer the first replica sent after the break. An id made
//! up for a stream replays nothing. Real `toolgate --http` replicas, real Redis.

use std::time::Duration;

use serde_json::{Value, json};

use crate::fleet_sessions::gates;
use crate::http::{Session, post};
use crate::redis_server::{MACHINE, prefix};

/// The `(id, data)` of each SSE event in `body` that has an id.
fn events(body: &str) -> Vec<(String, String)> {
    let mut out = Vec::new();
    for block in body.split("\n\n") {
        let mut id = None;
        let mut data = String::new();
        for line in block.lines() {
            if let Some(v) = line.strip_prefix("id:") {
                id = Some(v.trim().to_owned());
            } else if let Some(v) = line.strip_prefix("data:") {
                data.push_str(v.trim());
            }
        }
        if let Some(id) = id {
            out.push((id, data));
        }
    }
    out
}

/// A GET on `url` resuming session `session`'s stream after `last`: its body, read to its
/// end (bounded).
async fn resume(http: &reqwest::Client, url: &str, session: &str, last: &str) -> (u16, String) {
    let answer = http
        .get(url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", session)
        .header("mcp-protocol-version", "2025-11-25")
        .header("last-event-id", last)
        .send()
        .await
        .unwrap();
    let status = answer.status().as_u16();
    let body = tokio::time::timeout(Duration::from_secs(60), answer.text())
        .await
        .expect("a resumed stream ends once it has sent the answer")
        .unwrap();
    (status, body)
}

#[tokio::test]
async fn a_stream_broken_mid_call_resumes_on_another_replica_with_the_answer() {
    let prefix = prefix("events");
    let fleet = gates(2, MACHINE, &prefix, &[("TOOLGATE_RUNTIMES", "js")]).await;
    let session = Session::open(&fleet[0].url).await;
    let call = json!({"jsonrpc": "2.0", "id": 41, "method": "tools/call", "params": {
        "name": "run_javascript",
        "arguments": {"code": "const t = Date.now(); while (Date.now() - t < 1500) {} return 'finished';"}
    }});
    let mut answer = post(&session.http, &fleet[0].url, Some(&session.id), &call).await;
    assert_eq!(answer.status(), 200);
    // Read the stream until its first event with an id (the priming event), then break it.
    let mut seen = String::new();
    let first = loop {
        let chunk = tokio::time::timeout(Duration::from_secs(10), answer.chunk())
            .await
            .expect("the priming event comes at once")
            .unwrap()
            .expect("the stream is open");
        seen.push_str(&String::from_utf8_lossy(&chunk));
        if let Some((id, _)) = events(&seen).into_iter().next() {
            break id;
        }
    };
    assert!(!seen.contains("finished"), "broken before the answer: {seen}");
    drop(answer);

    // The other replica has never seen the session: it restores it, and replays from Redis
    // what the first replica sends after the break, up to the answer.
    let (status, body) = resume(&session.http, &fleet[1].url, &session.id, &first).await;
    assert_eq!(status, 200, "{body}");
    let replayed = events(&body);
    let answer: Value = replayed
        .iter()
        .filter_map(|(_, data)| serde_json::from_str::<Value>(data).ok())
        .find(|m| m["id"] == 41)
        .unwrap_or_else(|| panic!("no answer in the resumed stream: {body}"));
    assert!(answer["result"].to_string().contains("finished"), "{answer}");
    // Its id resumes after it: nothing more (on either replica).
    let (last, _) = replayed.last().unwrap().clone();
    for gate in &fleet {
        let (status, body) = resume(&session.http, &gate.url, &session.id, &last).await;
        assert_eq!(status, 200);
        assert!(!body.contains("finished"), "{body}");
    }
    // An id made up for a stream names nothing (its follow ends within seconds).
    let token = first.split('.').next().unwrap();
    let forged = format!("r{}.0-0", "0".repeat(token.len() - 1));
    let (_, body) = resume(&session.http, &fleet[1].url, &session.id, &forged).await;
    assert!(!body.contains("finished"), "{body}");
    // The events live in Redis with a bound and a life.
    let mut redis = redis::Client::open(MACHINE)
        .unwrap()
        .get_multiplexed_async_connection()
        .await
        .unwrap();
    let key = format!("{prefix}events:{token}");
    let life: i64 = redis::cmd("PTTL").arg(&key).query_async(&mut redis).await.unwrap();
    assert!((1..=600_000).contains(&life), "{life}");
    let _: i64 = redis::cmd("DEL").arg(&key).query_async(&mut redis).await.unwrap();
}
