//! What upstream servers send cannot cost another session or hold a call.
//!
//! Messages reach only the session they belong to: two principals (keys file) with a
//! session each over `--http`, one upstream (the Python server) they share. A log message
//! or progress the upstream sends after the call that caused it ended never reaches the
//! session that called next, whether that call is in flight or just ended; a log sent
//! while both sessions have calls in flight reaches neither; a late message with no other
//! session about still reaches its own.
//!
//! An answer over the limit of one message fails its call at once, naming the limit,
//! over stdio and Streamable HTTP (SSE and JSON), instead of hanging to the idle timeout.
//! A server that never answers `initialize` holds the lists only until one first wait
//! after the start has passed.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::sync::mpsc;

use crate::access::new_key;
use crate::http::{Session, post};
use crate::http_notifications::Listening;
use crate::upstream::{Federated, WAIT, py_server, python, servers_file};
use crate::util::{Gate, command, expect_error, structured, text};

/// A `toolgate --http 127.0.0.1:0` child whose stderr (debug lines on) the test reads.
struct Watched {
    _child: tokio::process::Child,
    url: String,
    lines: mpsc::UnboundedReceiver<String>,
    _dir: tempfile::TempDir,
}

impl Watched {
    async fn start(env: &[(&str, &str)]) -> Watched {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = command(dir.path(), env);
        cmd.env("TOOLGATE_DEBUG", "1")
            .args(["--http", "127.0.0.1:0"])
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .stdin(Stdio::null());
        let mut child = cmd.spawn().unwrap();
        let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
        let (tx, mut lines) = mpsc::unbounded_channel();
        tokio::spawn(async move {
            while let Ok(Some(line)) = stderr.next_line().await {
                let _ = tx.send(line);
            }
        });
        let url = tokio::time::timeout(WAIT, async {
            while let Some(line) = lines.recv().await {
                if let Some(rest) = line.split(" at ").nth(1)
                    && rest.starts_with("http://")
                {
                    return rest.trim().to_owned();
                }
            }
            panic!("toolgate --http exited without announcing its address");
        })
        .await
        .expect("toolgate --http starts");
        Watched {
            _child: child,
            url,
            lines,
            _dir: dir,
        }
    }

    /// Waits for the next stderr line containing `what`.
    async fn said(&mut self, what: &str) -> String {
        tokio::time::timeout(WAIT, async {
            while let Some(line) = self.lines.recv().await {
                if line.contains(what) {
                    return line;
                }
            }
            panic!("toolgate ended before saying {what:?}");
        })
        .await
        .unwrap_or_else(|_| panic!("toolgate never said {what:?}"))
    }
}

/// Two principals' sessions, each with its standalone stream open, on a gateway whose
/// upstream `py` both call, beside the conformance catalogue (for a tool that logs).
struct Two {
    gate: Watched,
    alice: Session,
    bob: Session,
    alice_listens: Listening,
    bob_listens: Listening,
    _dirs: [tempfile::TempDir; 2],
}

impl Two {
    async fn start() -> Two {
        let (state, dir) = (tempfile::tempdir().unwrap(), tempfile::tempdir().unwrap());
        let keys = dir.path().join("keys.json");
        let alice_key = new_key(&keys, "run,search", "alice").await;
        let bob_key = new_key(&keys, "run,search", "bob").await;
        let servers = servers_file(dir.path(), json!({"py": py_server(state.path())}));
        let catalogue = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/conformance");
        let gate = Watched::start(&[
            ("TOOLGATE_CATALOGUE", catalogue),
            ("TOOLGATE_UPSTREAMS", &servers),
            ("TOOLGATE_KEYS_FILE", keys.to_str().unwrap()),
        ])
        .await;
        let alice = Session::open_keyed(&gate.url, &alice_key).await;
        let bob = Session::open_keyed(&gate.url, &bob_key).await;
        let alice_listens = Listening::open(&alice).await;
        let bob_listens = Listening::open(&bob).await;
        Two {
            gate,
            alice,
            bob,
            alice_listens,
            bob_listens,
            _dirs: [state, dir],
        }
    }
}

/// Calls `name` in `session` with a progress token and returns the whole answer stream:
/// progress for that token would arrive on it.
async fn call_raw(session: &Session, name: &str, arguments: Value, token: &str) -> String {
    let call = json!({"jsonrpc": "2.0", "id": 77, "method": "tools/call", "params": {
        "name": name, "arguments": arguments, "_meta": {"progressToken": token}
    }});
    let response = post(&session.http, &session.url, Some(&session.id), &call).await;
    assert_eq!(response.status(), 200, "{name}: {response:?}");
    let body = response.text().await.unwrap();
    assert!(body.contains("\"id\":77"), "{name}: {body}");
    body
}

/// The messages on `listening` up to the end of a conformance tool's own logs, sent by
/// a call of `session` now: whatever went astray to this stream before is among them.
async fn drained(session: &mut Session, listening: &mut Listening) -> Vec<Value> {
    let answer = session
        .request("tools/call", json!({"name": "test_tool_with_logging", "arguments": {}}))
        .await;
    assert_ne!(answer["result"]["isError"], json!(true), "{answer}");
    listening
        .until(|m| m["params"]["data"] == "Tool execution completed")
        .await
}

#[tokio::test]
async fn a_late_upstream_message_never_reaches_the_session_that_calls_next() {
    // Bob's call either stays in flight until Alice's late message is sent (`hold`) or
    // has just ended when it is (`poke`).
    for next in ["py__hold", "py__poke"] {
        let mut two = Two::start().await;
        let note = format!("alice's late note before {next}");
        let answer = two
            .alice
            .request(
                "tools/call",
                json!({"name": "py__late_log", "arguments": {"message": note},
                       "_meta": {"progressToken": "alice-late"}}),
            )
            .await;
        assert!(answer.to_string().contains("answered"), "{answer}");
        let bobs = call_raw(&two.bob, next, json!({}), "bob-1").await;
        assert!(
            !bobs.contains(&note),
            "{next}: Bob's call got Alice's late message: {bobs}"
        );
        // The upstream sent both; toolgate dropped both.
        two.gate.said("a log message was dropped").await;
        two.gate.said("a progress notification was dropped").await;
        let seen = drained(&mut two.bob, &mut two.bob_listens).await;
        assert!(
            !format!("{seen:?}").contains(&note),
            "{next}: Bob's stream got Alice's late message: {seen:?}"
        );
    }
}

#[tokio::test]
async fn a_late_upstream_log_reaches_its_own_session_when_no_other_has_called() {
    let mut two = Two::start().await;
    let note = "alice's own late note";
    let answer = two
        .alice
        .request(
            "tools/call",
            json!({"name": "py__late_log", "arguments": {"message": note}}),
        )
        .await;
    assert!(answer.to_string().contains("answered"), "{answer}");
    call_raw(&two.alice, "py__poke", json!({}), "alice-2").await;
    let seen = two.alice_listens.until(|m| m["params"]["data"] == note).await;
    assert_eq!(seen.last().unwrap()["params"]["logger"], "late", "{seen:?}");
    let seen = drained(&mut two.bob, &mut two.bob_listens).await;
    assert!(!format!("{seen:?}").contains(note), "{seen:?}");
}

#[tokio::test]
async fn an_upstream_log_while_two_sessions_calls_are_in_flight_reaches_neither() {
    let mut two = Two::start().await;
    // Alice's call stays in flight until a late_log's message has been sent; the log it
    // sends first (hers alone) says it is in flight.
    let (http, url, id) = (two.alice.http.clone(), two.alice.url.clone(), two.alice.id.clone());
    let held = tokio::spawn(async move {
        let call = json!({"jsonrpc": "2.0", "id": 5, "method": "tools/call",
                          "params": {"name": "py__hold", "arguments": {"announce": true}}});
        post(&http, &url, Some(&id), &call).await.text().await.unwrap()
    });
    two.alice_listens.until(|m| m["params"]["data"] == "holding").await;
    let note = "bob's note while alice's call runs";
    let answer = two
        .bob
        .request(
            "tools/call",
            json!({"name": "py__chatty", "arguments": {"message": note}}),
        )
        .await;
    assert!(answer.to_string().contains("done"), "{answer}");
    two.gate.said("a log message was dropped").await;
    // Let Alice's call end.
    two.bob
        .request(
            "tools/call",
            json!({"name": "py__late_log", "arguments": {"message": "release"}}),
        )
        .await;
    let alices = tokio::time::timeout(WAIT, held)
        .await
        .expect("Alice's call ends")
        .unwrap();
    assert!(!alices.contains(note), "{alices}");
    for (session, listening) in [
        (&mut two.alice, &mut two.alice_listens),
        (&mut two.bob, &mut two.bob_listens),
    ] {
        let seen = drained(session, listening).await;
        assert!(!format!("{seen:?}").contains(note), "{seen:?}");
    }
}

/// Characters in an answer over the limit of one upstream message (16 MiB).
const OVER_LIMIT: usize = 17 * 1024 * 1024 + 1;

/// Calls `name` with `args` through `gate`, bounded: a call that hangs fails the test.
async fn bounded_call(gate: &Gate, name: &str, args: Value) -> rmcp::model::CallToolResult {
    tokio::time::timeout(WAIT, gate.call(name, args))
        .await
        .unwrap_or_else(|_| panic!("{name} hung: an answer over the limit must fail its call at once"))
}

/// The Python server serving Streamable HTTP on a free loopback port (plain JSON answers
/// with `json`, else SSE), once it listens; its `mcpServers` entry.
pub async fn py_http(state: &std::path::Path, json: bool) -> (tokio::process::Child, Value) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/upstream/py_server.py");
    let mut cmd = tokio::process::Command::new(python());
    cmd.arg(script)
        .arg(state)
        .args(["--http", &port.to_string()])
        .args(json.then_some("--json"))
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true);
    let mut child = cmd.spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    tokio::time::timeout(WAIT, async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains("Uvicorn running on") {
                return;
            }
        }
        panic!("the Python server ended before listening");
    })
    .await
    .expect("the Python server listens");
    tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
    (child, json!({"url": format!("http://127.0.0.1:{port}/mcp")}))
}

/// Asserts `r` failed naming the limit of one message, and that `py`'s connection still
/// answers.
async fn failed_at_the_limit(gate: &Gate, r: &rmcp::model::CallToolResult, how: &str) {
    let failed = expect_error(r, "EXECUTION_ERROR");
    let said = failed["error"].as_str().unwrap();
    assert!(said.contains("16777216 bytes"), "{how}: {said}");
    assert!(said.contains("\"py\""), "{how}: {said}");
    let r = bounded_call(gate, "py__echo", json!({"text": "still here"})).await;
    assert_eq!(text(&r), "still here", "{how}: {r:?}");
}

#[tokio::test]
async fn an_upstream_answer_over_the_message_limit_fails_its_call_at_once() {
    // Over stdio: the line is streamed past and its id read at its start.
    let state = tempfile::tempdir().unwrap();
    let up = Federated::start(json!({"py": py_server(state.path())}), &[]).await;
    let r = bounded_call(&up.gate, "py__big", json!({"size": OVER_LIMIT})).await;
    failed_at_the_limit(&up.gate, &r, "stdio").await;
    assert_eq!(
        std::fs::read_to_string(state.path().join("starts")).unwrap(),
        "1",
        "the connection was kept"
    );
    up.gate.stop().await;
    // Over Streamable HTTP, as an SSE event and as a JSON body.
    for json in [false, true] {
        let state = tempfile::tempdir().unwrap();
        let (_server, entry) = py_http(state.path(), json).await;
        let up = Federated::start(json!({"py": entry}), &[]).await;
        let r = bounded_call(&up.gate, "py__big", json!({"size": OVER_LIMIT})).await;
        failed_at_the_limit(&up.gate, &r, if json { "HTTP, JSON" } else { "HTTP, SSE" }).await;
        up.gate.stop().await;
    }
}

/// A raw stdio MCP server (no SDK) whose `tools/call` answer is over the limit with its
/// `id` in the middle, where neither end shows it.
const HIDDEN_ID: &str = r#"
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if "id" not in m:
        continue
    if m["method"] == "initialize":
        r = {"protocolVersion": m["params"]["protocolVersion"], "capabilities": {"tools": {}},
             "serverInfo": {"name": "raw", "version": "1"}}
    elif m["method"] == "tools/list":
        r = {"tools": [{"name": "big", "inputSchema": {"type": "object"}}]}
    elif m["method"] == "tools/call":
        pad = "x" * SIZE
        sys.stdout.write('{"result": {"content": [{"type": "text", "text": "%s"}]}, "id": %s, "jsonrpc": "2.0", "pad": "%s"}\n' % (pad, json.dumps(m["id"]), pad[:8192]))
        sys.stdout.flush()
        continue
    else:
        r = {}
    sys.stdout.write(json.dumps({"jsonrpc": "2.0", "id": m["id"], "result": r}) + "\n")
    sys.stdout.flush()
"#;

#[tokio::test]
async fn an_over_limit_answer_whose_id_does_not_show_ends_the_connection_and_fails_at_once() {
    let dir = tempfile::tempdir().unwrap();
    let script = dir.path().join("raw.py");
    std::fs::write(&script, HIDDEN_ID.replace("SIZE", &OVER_LIMIT.to_string())).unwrap();
    let up = Federated::start(json!({"raw": {"command": python(), "args": [script]}}), &[]).await;
    let r = bounded_call(&up.gate, "raw__big", json!({})).await;
    let failed = expect_error(&r, "UPSTREAM_UNAVAILABLE");
    let said = failed["error"].as_str().unwrap();
    assert!(said.contains("over the limit of 16777216 bytes"), "{said}");
    let stderr = up.gate.stop().await;
    assert!(stderr.contains("the connection is ended"), "{stderr}");
}

#[tokio::test]
async fn an_upstream_that_never_initializes_holds_the_lists_only_until_the_first_wait_ends() {
    // The Python server is held before it reads anything: it never answers initialize,
    // and its attempt ends only at the connect timeout (30 s). Another toolgate is a
    // server that starts at once.
    let state = tempfile::tempdir().unwrap();
    std::fs::write(state.path().join("hang_start"), "").unwrap();
    let fixtures = crate::util::fixtures().display().to_string();
    let servers = json!({
        "hung": py_server(state.path()),
        "inner": {"command": crate::util::bin(), "env": {"TOOLGATE_CATALOGUE": fixtures}},
    });
    let up = Federated::start(servers, &[("TOOLGATE_UPSTREAM_FIRST_WAIT_MS", "3000")]).await;
    // Each list waited its own first wait before (prompts 20 s, then tools 10 s more, up
    // to the hung server's connect timeout): one deadline now bounds them all. The bound
    // here only tells that from 30 s, with room for a slow machine.
    let lists = async {
        let prompts = up.gate.client.list_all_prompts().await.unwrap();
        let resources = up.gate.client.list_all_resources().await.unwrap();
        (prompts, resources, up.gate.names().await)
    };
    let (_, _, names) = tokio::time::timeout(Duration::from_secs(15), lists)
        .await
        .expect("the lists answer once the first wait is over, while a server still hangs");
    assert!(names.contains(&"inner__echo".to_owned()), "{names:?}");
    assert!(!names.iter().any(|n| n.starts_with("hung__")), "{names:?}");
    let r = up.gate.call("inner__echo", json!({"message": "served"})).await;
    assert_eq!(structured(&r)["result"]["message"], "served", "{r:?}");
    let stderr = up.gate.stop().await;
    assert!(
        !stderr.contains("did not initialize"),
        "the lists did not wait for the hung server: {stderr}"
    );
}
