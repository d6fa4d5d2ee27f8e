//! Notifications over `--http` reach the right listeners: `tools/list_changed` every
//! session's GET stream, progress only the stream of the request that carried its token,
//! a session's log messages only that session's GET stream. Read from the raw SSE
//! streams with reqwest, so nothing between the gateway and the test reorders them.

use std::time::Duration;

use serde_json::{Value, json};

use crate::http::{HttpGate, Session, post};
use crate::util::{ScriptedApi, manifest};

const WAIT: Duration = Duration::from_secs(60);

/// A session's standalone SSE stream (its GET), read message by message.
pub struct Listening {
    response: reqwest::Response,
    buffered: String,
    /// The id of the last event read that had one.
    pub last_id: Option<String>,
}

impl Listening {
    pub async fn open(session: &Session) -> Listening {
        Listening::open_at(session, &session.url).await
    }

    /// The session's standalone stream opened at `url` (another replica of a fleet).
    pub async fn open_at(session: &Session, url: &str) -> Listening {
        Listening::get(session, url, None).await
    }

    /// The session's standalone stream resumed at `url` after event `last`.
    pub async fn resume_at(session: &Session, url: &str, last: &str) -> Listening {
        Listening::get(session, url, Some(last)).await
    }

    async fn get(session: &Session, url: &str, last: Option<&str>) -> Listening {
        let mut request = session
            .http
            .get(url)
            .header("accept", "text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .header("mcp-session-id", &session.id);
        if let Some(last) = last {
            request = request.header("last-event-id", last);
        }
        let response = request.send().await.unwrap();
        assert_eq!(response.status(), 200, "GET stream: {response:?}");
        Listening {
            response,
            buffered: String::new(),
            last_id: None,
        }
    }

    /// Every JSON-RPC message on the stream up to and including the first for which
    /// `done` holds.
    pub async fn until(&mut self, done: impl Fn(&Value) -> bool) -> Vec<Value> {
        let mut seen = Vec::new();
        loop {
            while let Some(end) = self.buffered.find("\n\n") {
                let event: String = self.buffered.drain(..end + 2).collect();
                if let Some(id) = event.lines().find_map(|l| l.strip_prefix("id:")) {
                    self.last_id = Some(id.trim().to_owned());
                }
                for data in event.lines().filter_map(|l| l.strip_prefix("data:")) {
                    if let Ok(message) = serde_json::from_str::<Value>(data.trim()) {
                        let stop = done(&message);
                        seen.push(message);
                        if stop {
                            return seen;
                        }
                    }
                }
            }
            let chunk = tokio::time::timeout(WAIT, self.response.chunk())
                .await
                .unwrap_or_else(|_| panic!("nothing more on the stream after {seen:?}"))
                .unwrap()
                .unwrap_or_else(|| panic!("the stream ended after {seen:?}"));
            self.buffered
                .push_str(&String::from_utf8_lossy(&chunk).replace("\r\n", "\n"));
        }
    }
}

pub fn method(m: &Value) -> &str {
    m["method"].as_str().unwrap_or_default()
}

#[tokio::test]
async fn list_changed_reaches_every_listening_session() {
    let api = ScriptedApi::start(vec![manifest("alpha", false)]).await;
    let gate = HttpGate::start(&[("TOOLGATE_API_URL", api.host.as_str()), ("TOOLGATE_CACHE_TTL_MS", "0")]).await;
    let mut sessions = Vec::new();
    for _ in 0..2 {
        let mut session = Session::open(&gate.url).await;
        let listed = session.request("tools/list", json!({})).await;
        assert!(listed.to_string().contains("\"alpha\""), "{listed}");
        let listening = Listening::open(&session).await;
        sessions.push((session, listening));
    }
    api.tools.lock().unwrap().push(manifest("beta", false));
    for (session, listening) in &mut sessions {
        listening
            .until(|m| method(m) == "notifications/tools/list_changed")
            .await;
        let listed = session.request("tools/list", json!({})).await;
        assert!(listed.to_string().contains("\"beta\""), "{listed}");
    }
}

#[tokio::test]
async fn progress_reaches_only_the_stream_of_the_request_that_asked_for_it() {
    let catalogue = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/conformance");
    let gate = HttpGate::start(&[("TOOLGATE_CATALOGUE", catalogue), ("TOOLGATE_RUNTIMES", "js")]).await;
    let mut alice = Session::open(&gate.url).await;
    let mut bob = Session::open(&gate.url).await;
    let mut alice_listens = Listening::open(&alice).await;
    let mut bob_listens = Listening::open(&bob).await;

    // Alice's call with a token: its progress, in order, then its answer, on its own stream.
    let call = json!({"jsonrpc": "2.0", "id": 99, "method": "tools/call", "params": {
        "name": "test_tool_with_progress", "arguments": {}, "_meta": {"progressToken": "alice-1"}
    }});
    let response = post(&alice.http, &alice.url, Some(&alice.id), &call).await;
    assert_eq!(response.status(), 200);
    let body = response.text().await.unwrap();
    let messages: Vec<Value> = body
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .filter_map(|d| serde_json::from_str(d.trim()).ok())
        .collect();
    let progress: Vec<&Value> = messages
        .iter()
        .filter(|m| method(m) == "notifications/progress")
        .collect();
    assert_eq!(progress.len(), 3, "{body}");
    assert!(
        progress.iter().all(|p| p["params"]["progressToken"] == "alice-1"),
        "{body}"
    );
    assert_eq!(messages.last().unwrap()["id"], 99, "the answer comes last: {body}");

    // Then each session's tool logs; on each GET stream those logs are the first thing
    // after the progress above would have been, had it gone astray.
    for (session, listening) in [(&mut alice, &mut alice_listens), (&mut bob, &mut bob_listens)] {
        let answer = session
            .request("tools/call", json!({"name": "test_tool_with_logging", "arguments": {}}))
            .await;
        assert!(answer["result"]["isError"] != json!(true), "{answer}");
        let seen = listening
            .until(|m| m["params"]["data"] == "Tool execution completed")
            .await;
        assert!(
            seen.iter().all(|m| method(m) == "notifications/message"),
            "only this session's logs: {seen:?}"
        );
        assert_eq!(seen.len(), 3, "{seen:?}");
    }
}
