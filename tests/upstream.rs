//! Upstream MCP servers federated as catalogue tools, with real servers: the reference
//! `@modelcontextprotocol/server-everything` (Node), `tests/upstream/py_server.py` on the
//! official Python SDK, and another toolgate. Lifecycle (crashes, restarts, children
//! dying with toolgate, Streamable HTTP) is in `upstream_lifecycle.rs`.

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::interop::{installed, node_modules};
use crate::util::{Gate, bin, expect_error, expect_ok, fixtures, structured, text};

/// A bound against a hang while waiting for a notification, never a speed assertion.
pub const WAIT: Duration = Duration::from_secs(60);

/// The Python of `scripts/test`'s virtual environment (the official MCP SDK in it).
pub fn python() -> PathBuf {
    installed(
        "TOOLGATE_TEST_PYTHON",
        "a Python virtual environment with tests/requirements.txt",
    )
}

/// The `mcpServers` entry of the Python test server, steered through `state`.
pub fn py_server(state: &Path) -> Value {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/upstream/py_server.py");
    json!({"command": python(), "args": [script, state]})
}

/// The entry point of server-everything, installed by `scripts/test`.
pub fn everything_js() -> PathBuf {
    node_modules().join("@modelcontextprotocol/server-everything/dist/index.js")
}

/// `servers` written as the `mcpServers` file `servers.json` in `dir`; its path.
pub fn servers_file(dir: &Path, servers: Value) -> String {
    let file = dir.join("servers.json");
    std::fs::write(&file, json!({ "mcpServers": servers }).to_string()).unwrap();
    file.display().to_string()
}

/// Upstreams written as an `mcpServers` file, and toolgate started on them (with every
/// tool listed, so list changes show in `tools/list`).
pub struct Federated {
    pub gate: Gate,
    /// Holds the `mcpServers` file.
    _dir: tempfile::TempDir,
}

impl Federated {
    /// toolgate with `servers` as its `mcpServers`, `env` on top.
    pub async fn start(servers: Value, env: &[(&str, &str)]) -> Federated {
        let dir = tempfile::tempdir().unwrap();
        let file = servers_file(dir.path(), servers);
        let mut all = vec![("TOOLGATE_UPSTREAMS", file.as_str()), ("TOOLGATE_ADVERTISE", "all")];
        all.extend_from_slice(env);
        let gate = Gate::start(&all).await;
        Federated { gate, _dir: dir }
    }
}

/// The structured content of a meta-tool answer that succeeded.
fn meta_ok(r: &rmcp::model::CallToolResult) -> &Value {
    assert_ne!(r.is_error, Some(true), "{r:?}");
    structured(r)
}

#[tokio::test]
async fn upstream_tools_are_listed_described_validated_and_answered_as_their_servers_answer() {
    let state = tempfile::tempdir().unwrap();
    let servers = json!({
        "py": py_server(state.path()),
        "everything": {
            "command": "node", "args": [everything_js(), "stdio"],
            "tools": {"allow": ["echo", "get-*", "trigger-*"], "deny": ["get-env"]},
            "autoApprove": ["echo"]
        }
    });
    let mut up = Federated::start(servers, &[]).await;
    let gate = &up.gate;
    let tools = gate.client.list_all_tools().await.unwrap();
    let find = |name: &str| tools.iter().find(|t| t.name == name);
    for name in ["py__echo", "py__shout", "everything__echo", "everything__get-sum"] {
        assert!(find(name).is_some(), "{name} not listed");
    }
    // The per-server filter: allow globs, then deny globs.
    assert!(find("everything__get-env").is_none() && find("everything__toggle-simulated-logging").is_none());
    // Title, annotations and schemas as the server declared them.
    let sum = find("everything__get-sum").unwrap();
    assert_eq!(sum.title.as_deref(), Some("Get Sum Tool"));
    assert_eq!(sum.annotations.as_ref().and_then(|a| a.read_only_hint), Some(true));
    assert!(
        sum.input_schema["properties"]["a"]["type"] == "number",
        "{:?}",
        sum.input_schema
    );
    let shout = find("py__shout").unwrap();
    assert_eq!(shout.title.as_deref(), Some("Shout"));
    let out = shout.output_schema.as_ref().expect("the server's output schema");
    assert_eq!(out["title"], "shoutDictOutput", "{out:?}");
    assert!(
        out["anyOf"][1]["required"] == json!(["error", "code", "retryable"]),
        "failures admitted: {out:?}"
    );

    // Answers pass through as the server gave them: content, structuredContent, isError.
    let r = gate.call("everything__get-sum", json!({"a": 2, "b": 3})).await;
    assert_eq!((r.is_error, &r.structured_content), (None, &None), "as sent: {r:?}");
    assert!(text(&r).contains('5'), "{r:?}");
    let r = gate.call("py__shout", json!({"words": "hello big world"})).await;
    assert_eq!(r.is_error, Some(false), "{r:?}");
    assert_eq!(structured(&r), &json!({"loud": "HELLO BIG WORLD", "count": 3}));
    let r = gate.call("py__fail", json!({"message": "boom"})).await;
    assert_eq!(r.is_error, Some(true), "{r:?}");
    assert!(text(&r).contains("boom"), "{r:?}");
    assert!(
        r.structured_content.as_ref().is_none_or(|s| s.get("code").is_none()),
        "{r:?}"
    );

    // Arguments are checked against the upstream's schema before anything is sent.
    let r = gate.call("py__shout", json!({"words": 7})).await;
    let refused = expect_error(&r, "INVALID_PARAMS");
    assert!(refused["error"].as_str().unwrap().contains("words"), "{refused}");

    // The child's environment: the allowlisted base and its configured env, no inherited
    // credential (checked in `upstream_lifecycle.rs` too for the configured ones).
    let r = gate
        .call("py__env", json!({"names": ["PATH", "TOOLGATE_UPSTREAMS"]}))
        .await;
    let env = structured(&r);
    assert!(env["PATH"].is_string() && env["TOOLGATE_UPSTREAMS"].is_null(), "{env}");

    // An upstream asking the client for sampling it did not declare is refused, clearly.
    let r = gate
        .call("everything__trigger-sampling-request", json!({"prompt": "hi"}))
        .await;
    assert!(
        format!("{r:?}").contains("did not declare the sampling capability"),
        "{r:?}"
    );

    // Progress from the upstream reaches the calling client, under its own token.
    while up.gate.progress.try_recv().is_ok() {}
    let r = up
        .gate
        .call(
            "everything__trigger-long-running-operation",
            json!({"duration": 0.3, "steps": 3}),
        )
        .await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let mut seen = Vec::new();
    while seen.len() < 3 {
        let tick = tokio::time::timeout(WAIT, up.gate.progress.recv())
            .await
            .expect("progress")
            .unwrap();
        seen.push((tick.progress, tick.total));
    }
    assert_eq!(seen, [(1.0, Some(3.0)), (2.0, Some(3.0)), (3.0, Some(3.0))]);
    up.gate.stop().await;
}

#[tokio::test]
async fn an_agent_searches_the_catalogue_and_two_upstreams_and_runs_one_batch_across_them() {
    let state = tempfile::tempdir().unwrap();
    let servers = json!({
        "py": py_server(state.path()),
        "everything": {"command": "node", "args": [everything_js(), "stdio"]}
    });
    let up = Federated::start(servers, &[]).await;
    let gate = &up.gate;

    // Search ranks upstream tools beside the embedded catalogue's.
    let hits = |r: &rmcp::model::CallToolResult| -> Vec<String> {
        meta_ok(r)["results"]
            .as_array()
            .unwrap()
            .iter()
            .map(|h| h["slug"].as_str().unwrap().to_owned())
            .collect()
    };
    let found = hits(
        &gate
            .meta(json!({"command": "search", "query": "sum of two numbers"}))
            .await,
    );
    assert_eq!(found[0], "everything__get-sum", "{found:?}");
    let found = hits(
        &gate
            .meta(json!({"command": "search", "query": "turn words into capitals"}))
            .await,
    );
    // The catalogue's case-converter answers this too; the upstream tool stands beside it.
    assert!(found[..2].contains(&"py__shout".to_owned()), "{found:?}");
    let found = hits(&gate.meta(json!({"command": "search", "query": "encode base64"})).await);
    assert_eq!(found[0], "base64-codec", "{found:?}");

    // schema gives the upstream's own input schema and a ready-to-send call.
    let schema = gate.meta(json!({"command": "schema", "slug": "py__shout"})).await;
    let schema = meta_ok(&schema);
    assert_eq!(schema["input_schema"]["required"], json!(["words"]), "{schema}");
    assert_eq!(schema["example"]["name"], "py__shout");

    // list shows every family; each upstream tool with its server.
    let list = gate.meta(json!({"command": "list"})).await;
    let rows = meta_ok(&list)["tools"].as_array().unwrap().clone();
    let row = rows.iter().find(|r| r["slug"] == "py__echo").expect("py__echo listed");
    assert_eq!(row["category"], "py");
    assert!(row.get("available").is_none(), "{row}");

    // One batch mixing the catalogue and both upstreams, one item invalid: nothing runs.
    let runs = json!([
        {"slug": "py__echo", "params": {"text": "hi"}},
        {"slug": "everything__get-sum", "params": {"a": 1, "b": 2}},
        {"slug": "base64-codec", "params": {"mode": "encode", "input": "hi"}},
    ]);
    let mut bad = runs.clone();
    bad[0]["params"] = json!({"text": 1});
    let refused = gate.meta(json!({"command": "batch", "runs": bad})).await;
    let refused = expect_error(&refused, "BATCH_INVALID");
    assert_eq!(refused["items"][0]["slug"], "py__echo", "{refused}");
    let batch = gate.meta(json!({"command": "batch", "runs": runs})).await;
    let batch = meta_ok(&batch);
    assert_eq!(batch["succeeded"], 3, "{batch}");
    let results = batch["results"].as_array().unwrap();
    assert_eq!(
        results[0]["result"],
        json!({"result": "hi"}),
        "its structuredContent: {batch}"
    );
    let sum = results[1]["result"]["content"][0]["text"].as_str().unwrap();
    assert!(
        sum.contains("is 3"),
        "a tool with no structured answer keeps its content: {batch}"
    );
    assert_eq!(results[2]["result"]["output"], "aGk=", "{batch}");

    // History records the upstream runs; diff compares two of them.
    let r = gate
        .meta(json!({"command": "run", "slug": "py__echo", "params": {"text": "again"}}))
        .await;
    expect_ok(&r);
    let history = gate.meta(json!({"command": "history"})).await;
    let slugs: Vec<&str> = meta_ok(&history)["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["slug"].as_str().unwrap())
        .collect();
    assert!(
        slugs.contains(&"py__echo") && slugs.contains(&"everything__get-sum"),
        "{slugs:?}"
    );
    let first_echo = meta_ok(&history)["runs"]
        .as_array()
        .unwrap()
        .iter()
        .rev()
        .find(|r| r["slug"] == "py__echo")
        .unwrap()["id"]
        .clone();
    let diff = gate
        .meta(json!({"command": "diff", "from": first_echo, "to": "-1"}))
        .await;
    let diff = meta_ok(&diff);
    assert_eq!(diff["inputs_changed"], true, "{diff}");
    assert!(
        diff["changes"].to_string().contains("again"),
        "the diff shows the changed answer: {diff}"
    );
    up.gate.stop().await;
}

#[tokio::test]
async fn upstream_progress_reaches_the_client_whole_in_order_and_before_the_answer() {
    // The upstream reports 50 ticks back to back and answers at once: its last ticks and
    // its answer reach toolgate together, which is when one could overtake the other
    // (rmcp handles each notification on a task of its own). Progress after the answer
    // breaks the spec ("MUST stop after completion"); progress dropped is lost.
    const TICKS: usize = 50;
    let state = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = servers_file(dir.path(), json!({"py": py_server(state.path())}));
    let call = json!({"method": "tools/call", "params": {
        "name": "py__ticks", "arguments": {"count": TICKS}, "_meta": {"progressToken": "mine"}
    }});
    let (lines, stderr) = crate::util::raw_exchange(&[("TOOLGATE_UPSTREAMS", file.as_str())], &[call]).await;
    let answer = lines
        .iter()
        .position(|l| l["id"] == 1)
        .unwrap_or_else(|| panic!("{lines:?}\n{stderr}"));
    assert!(text_of(&lines[answer]).contains("done"), "{}", lines[answer]);
    let ticks = |range: &[Value]| -> Vec<f64> {
        range
            .iter()
            .filter(|l| l["method"] == "notifications/progress")
            .map(|l| {
                assert_eq!(l["params"]["progressToken"], "mine", "{l}");
                l["params"]["progress"].as_f64().unwrap()
            })
            .collect()
    };
    let before = ticks(&lines[..answer]);
    let expected: Vec<f64> = (1..=TICKS).map(|i| i as f64).collect();
    assert_eq!(before, expected, "every tick, in order, before the answer");
    assert_eq!(ticks(&lines[answer..]), Vec::<f64>::new(), "none after the answer");
}

/// The text of a raw `tools/call` answer's content.
fn text_of(answer: &Value) -> String {
    answer["result"]["content"].to_string()
}

/// A client that declares sampling and answers every sampling request with one reply,
/// keeping what it was asked.
struct Sampler {
    asked: std::sync::Arc<std::sync::Mutex<Vec<String>>>,
}

#[allow(deprecated)] // rmcp marks sampling deprecated (SEP-2577); clients still use it.
impl rmcp::ClientHandler for Sampler {
    fn get_info(&self) -> rmcp::model::ClientInfo {
        let capabilities = serde_json::from_value(json!({"sampling": {}})).unwrap();
        rmcp::model::ClientInfo::new(capabilities, rmcp::model::Implementation::new("sampler", "1"))
    }

    async fn create_message(
        &self,
        params: rmcp::model::CreateMessageRequestParams,
        _context: rmcp::service::RequestContext<rmcp::RoleClient>,
    ) -> Result<rmcp::model::CreateMessageResult, rmcp::ErrorData> {
        self.asked.lock().unwrap().push(serde_json::to_string(&params).unwrap());
        let reply = json!({"model": "test-model", "role": "assistant", "content": {"type": "text", "text": "sampled by the test client"}});
        Ok(serde_json::from_value(reply).unwrap())
    }
}

#[tokio::test]
async fn an_upstream_sampling_request_reaches_the_calling_client_that_declared_sampling() {
    use rmcp::ServiceExt;
    let dir = tempfile::tempdir().unwrap();
    let file = servers_file(
        dir.path(),
        json!({"everything": {"command": "node", "args": [everything_js(), "stdio"]}}),
    );
    let cmd = crate::util::command(dir.path(), &[("TOOLGATE_UPSTREAMS", file.as_str())]);
    let transport = rmcp::transport::TokioChildProcess::new(cmd).unwrap();
    let asked = std::sync::Arc::default();
    let client = Sampler {
        asked: std::sync::Arc::clone(&asked),
    }
    .serve(transport)
    .await
    .unwrap();
    let params = rmcp::model::CallToolRequestParams::new("everything__trigger-sampling-request")
        .with_arguments(json!({"prompt": "name a colour"}).as_object().unwrap().clone());
    let r = client.call_tool(params).await.unwrap();
    assert_ne!(r.is_error, Some(true), "{r:?}");
    assert!(text(&r).contains("sampled by the test client"), "{r:?}");
    let asked = asked.lock().unwrap().clone();
    assert!(asked.len() == 1 && asked[0].contains("name a colour"), "{asked:?}");
    let _ = client.cancel().await;
}

/// A client that passes every log message it receives to the test.
struct Listener {
    logs: tokio::sync::mpsc::UnboundedSender<Value>,
}

#[allow(deprecated)] // rmcp marks logging deprecated (SEP-2577); servers still send it.
impl rmcp::ClientHandler for Listener {
    async fn on_logging_message(
        &self,
        params: rmcp::model::LoggingMessageNotificationParam,
        _context: rmcp::service::NotificationContext<rmcp::RoleClient>,
    ) {
        let _ = self.logs.send(serde_json::to_value(params).unwrap());
    }
}

#[tokio::test]
async fn an_upstream_log_message_reaches_the_calling_client() {
    use rmcp::ServiceExt;
    let state = tempfile::tempdir().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let file = servers_file(dir.path(), json!({"py": py_server(state.path())}));
    let cmd = crate::util::command(dir.path(), &[("TOOLGATE_UPSTREAMS", file.as_str())]);
    let transport = rmcp::transport::TokioChildProcess::new(cmd).unwrap();
    let (tx, mut logs) = tokio::sync::mpsc::unbounded_channel();
    let client = Listener { logs: tx }.serve(transport).await.unwrap();
    let params = rmcp::model::CallToolRequestParams::new("py__chatty")
        .with_arguments(json!({"message": "a word from upstream"}).as_object().unwrap().clone());
    let r = client.call_tool(params).await.unwrap();
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let log = tokio::time::timeout(WAIT, logs.recv())
        .await
        .expect("a log message")
        .unwrap();
    assert_eq!(log["data"], "a word from upstream", "{log}");
    assert_eq!(log["level"], "info", "{log}");
    // After logging/setLevel warning, an info message is not passed on; an error is.
    #[allow(deprecated)] // rmcp marks logging deprecated (SEP-2577); clients still use it.
    client
        .set_level(rmcp::model::SetLevelRequestParams::new(
            rmcp::model::LoggingLevel::Warning,
        ))
        .await
        .unwrap();
    for (message, level) in [("below the level", "info"), ("at the level", "error")] {
        let params = rmcp::model::CallToolRequestParams::new("py__chatty")
            .with_arguments(json!({"message": message, "level": level}).as_object().unwrap().clone());
        let r = client.call_tool(params).await.unwrap();
        assert_ne!(r.is_error, Some(true), "{r:?}");
    }
    let log = tokio::time::timeout(WAIT, logs.recv())
        .await
        .expect("a log message")
        .unwrap();
    assert_eq!(log["data"], "at the level", "the info message was held back: {log}");
    let _ = client.cancel().await;
}

#[tokio::test]
async fn a_cancelled_call_is_cancelled_upstream_too() {
    let state = tempfile::tempdir().unwrap();
    let mut up = Federated::start(json!({"py": py_server(state.path())}), &[]).await;
    while up.gate.progress.try_recv().is_ok() {}
    let call = up
        .gate
        .client
        .call_tool(rmcp::model::CallToolRequestParams::new("py__wait_for_cancel"));
    // The upstream's first progress says the call is running there; dropping the call
    // then makes rmcp's client send notifications/cancelled to toolgate.
    tokio::select! {
        r = call => panic!("the call ended by itself: {r:?}"),
        tick = tokio::time::timeout(WAIT, up.gate.progress.recv()) => {
            assert_eq!(tick.expect("progress").unwrap().progress, 0.0);
        }
    }
    let r = up.gate.call("py__was_cancelled", json!({})).await;
    assert_eq!(structured(&r), &json!({"result": true}), "{r:?}");
    let history = up.gate.meta(json!({"command": "history"})).await;
    let runs = meta_ok(&history)["runs"].as_array().unwrap().clone();
    let waited = runs.iter().find(|r| r["slug"] == "py__wait_for_cancel").unwrap();
    assert_eq!(waited["status"], "CANCELLED", "{runs:?}");
    up.gate.stop().await;
}

#[tokio::test]
async fn upstream_resources_and_prompts_are_reachable_under_their_namespaces() {
    let servers = json!({"everything": {"command": "node", "args": [everything_js(), "stdio"]}});
    let up = Federated::start(servers, &[]).await;
    let client = &up.gate.client;
    let resources = client.list_all_resources().await.unwrap();
    let uris: Vec<&str> = resources.iter().map(|r| r.uri.as_str()).collect();
    assert!(uris.contains(&"toolgate://guide"), "toolgate's own stay: {uris:?}");
    let doc = resources
        .iter()
        .find(|r| {
            r.uri
                .starts_with("toolgate://upstream/everything/demo://resource/static/document/")
        })
        .unwrap_or_else(|| panic!("an upstream document: {uris:?}"));
    assert!(doc.name.starts_with("everything__"), "{doc:?}");
    let read = client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(doc.uri.clone()))
        .await
        .unwrap();
    let contents = serde_json::to_value(&read.contents).unwrap();
    assert_eq!(contents[0]["uri"], json!(doc.uri), "{contents}");
    assert!(
        contents[0]["text"].as_str().is_some_and(|t| !t.is_empty()),
        "{contents}"
    );
    let missing = client
        .read_resource(rmcp::model::ReadResourceRequestParams::new(
            "toolgate://upstream/nobody/demo://x",
        ))
        .await;
    assert!(format!("{missing:?}").contains("UPSTREAM_UNAVAILABLE"), "{missing:?}");

    let prompts = client.list_all_prompts().await.unwrap();
    let names: Vec<&str> = prompts.iter().map(|p| p.name.as_str()).collect();
    assert!(
        names.contains(&"find-tool") && names.contains(&"everything__simple-prompt"),
        "{names:?}"
    );
    let got = client
        .get_prompt(rmcp::model::GetPromptRequestParams::new("everything__simple-prompt"))
        .await
        .unwrap();
    assert!(!got.messages.is_empty(), "{got:?}");
    up.gate.stop().await;
}

#[tokio::test]
async fn an_upstream_tool_added_at_run_time_reaches_clients_as_one_list_changed() {
    let state = tempfile::tempdir().unwrap();
    let mut up = Federated::start(json!({"py": py_server(state.path())}), &[]).await;
    assert!(!up.gate.names().await.contains(&"py__greet".to_owned()));
    while up.gate.changes.try_recv().is_ok() {}
    let r = up
        .gate
        .call("py__add_tool", json!({"name": "greet", "word": "hello"}))
        .await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    tokio::time::timeout(WAIT, up.gate.changes.recv())
        .await
        .expect("tools/list_changed")
        .unwrap();
    assert!(up.gate.names().await.contains(&"py__greet".to_owned()));
    let r = up.gate.call("py__greet", json!({})).await;
    assert_eq!(text(&r), "hello", "{r:?}");
    up.gate.stop().await;

    // Under `auto` with no room for more tools, the new tool is not listed, but the
    // meta-tool's count of unlisted tools changes, and that is announced too.
    let state = tempfile::tempdir().unwrap();
    let budget = [("TOOLGATE_ADVERTISE", "auto"), ("TOOLGATE_ADVERTISE_BYTES", "1024")];
    let mut up = Federated::start(json!({"py": py_server(state.path())}), &budget).await;
    let count = |tools: &[rmcp::model::Tool]| tools[0].description.as_deref().unwrap_or_default().to_owned();
    let before = count(&up.gate.client.list_all_tools().await.unwrap());
    while up.gate.changes.try_recv().is_ok() {}
    let r = up
        .gate
        .call("py__add_tool", json!({"name": "greet", "word": "hello"}))
        .await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    tokio::time::timeout(WAIT, up.gate.changes.recv())
        .await
        .expect("tools/list_changed for an unlisted tool")
        .unwrap();
    let after = up.gate.client.list_all_tools().await.unwrap();
    assert_eq!(after.len(), 1, "only the meta-tool fits");
    assert_ne!(count(&after), before, "the count of unlisted tools moved");
    up.gate.stop().await;
}

#[tokio::test]
async fn another_toolgate_is_an_upstream_like_any_other() {
    let fixtures = fixtures().display().to_string();
    let servers = json!({
        "inner": {"command": bin(), "env": {"TOOLGATE_CATALOGUE": fixtures, "TOOLGATE_ADVERTISE": "all"}}
    });
    let up = Federated::start(servers, &[]).await;
    let names = up.gate.names().await;
    assert!(
        names.contains(&"inner__echo".to_owned()) && names.contains(&"inner__toolgate".to_owned()),
        "{names:?}"
    );
    // The inner toolgate's run envelope arrives as it sent it.
    let r = up.gate.call("inner__echo", json!({"message": "nested"})).await;
    let body = structured(&r);
    assert_eq!(body["success"], true, "{body}");
    assert_eq!(body["result"]["message"], "nested", "{body}");
    // Its own meta-tool is reachable through this one's, in this one's run envelope.
    let r = up
        .gate
        .meta(json!({"command": "run", "slug": "inner__toolgate", "params": {"command": "search", "query": "echo"}}))
        .await;
    let inner = &structured(&r)["result"];
    assert_eq!(inner["results"][0]["slug"], "echo", "{r:?}");
    assert!(structured(&r)["run_id"].is_string(), "{r:?}");
    up.gate.stop().await;
}
