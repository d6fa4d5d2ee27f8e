//! Catalogue tools that talk to the MCP client of their call (`mcp.log`, `mcp.progress`,
//! `mcp.sample`, `mcp.elicit`), return MCP content (`"returns": "content"`), and wait on
//! timers — through the real binary over stdio, spoken to by rmcp's client acting as a
//! host that can sample and elicit. The fixture tools are the conformance suite's
//! (`tests/fixtures/conformance`); the rest are written here.
#![allow(deprecated)] // rmcp marks sampling and logging deprecated (SEP-2577); clients still use them.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::model::{
    CallToolRequestParams, CallToolResult, ClientInfo, CreateMessageRequestParams, CreateMessageResult,
    ElicitRequestParams, ElicitResult, LoggingLevel, LoggingMessageNotificationParam, ProgressNotificationParam,
    SetLevelRequestParams,
};
use rmcp::service::{NotificationContext, RequestContext, RunningService};
use rmcp::{ClientHandler, ErrorData, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::sync::mpsc::{UnboundedReceiver, UnboundedSender, unbounded_channel};

use crate::util::{command, expect_error, structured, text};

const WAIT: Duration = Duration::from_secs(60);

/// A host: declares `capabilities`, answers sampling and elicitation with fixed replies
/// (keeping what it was asked), and passes log messages and progress to the test.
struct Host {
    capabilities: Value,
    asked: Arc<Mutex<Vec<Value>>>,
    logs: UnboundedSender<LoggingMessageNotificationParam>,
    progress: UnboundedSender<ProgressNotificationParam>,
}

#[allow(deprecated)] // rmcp marks sampling and logging deprecated (SEP-2577); clients still use them.
impl ClientHandler for Host {
    fn get_info(&self) -> ClientInfo {
        let capabilities = serde_json::from_value(self.capabilities.clone()).unwrap();
        ClientInfo::new(capabilities, rmcp::model::Implementation::new("host", "1"))
    }

    async fn create_message(
        &self,
        params: CreateMessageRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<CreateMessageResult, ErrorData> {
        self.asked.lock().unwrap().push(serde_json::to_value(&params).unwrap());
        let reply = json!({"model": "test-model", "role": "assistant", "content": {"type": "text", "text": "sampled by the test host"}});
        Ok(serde_json::from_value(reply).unwrap())
    }

    async fn create_elicitation(
        &self,
        params: ElicitRequestParams,
        _context: RequestContext<RoleClient>,
    ) -> Result<ElicitResult, ErrorData> {
        self.asked.lock().unwrap().push(serde_json::to_value(&params).unwrap());
        let reply = json!({"action": "accept", "content": {"username": "ada", "email": "ada@example.org"}});
        Ok(serde_json::from_value(reply).unwrap())
    }

    async fn on_logging_message(
        &self,
        params: LoggingMessageNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.logs.send(params);
    }

    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        let _ = self.progress.send(params);
    }
}

/// A server on `catalogue`, connected to a [`Host`] declaring `capabilities`.
struct Session {
    client: RunningService<RoleClient, Host>,
    asked: Arc<Mutex<Vec<Value>>>,
    logs: UnboundedReceiver<LoggingMessageNotificationParam>,
    progress: UnboundedReceiver<ProgressNotificationParam>,
    _dir: tempfile::TempDir,
}

impl Session {
    async fn open(catalogue: &str, capabilities: Value) -> Session {
        let dir = tempfile::tempdir().unwrap();
        let cmd = command(
            dir.path(),
            &[("TOOLGATE_CATALOGUE", catalogue), ("TOOLGATE_RUNTIMES", "js")],
        );
        let transport = rmcp::transport::TokioChildProcess::new(cmd).unwrap();
        let (logs_tx, logs) = unbounded_channel();
        let (progress_tx, progress) = unbounded_channel();
        let asked = Arc::default();
        let host = Host {
            capabilities,
            asked: Arc::clone(&asked),
            logs: logs_tx,
            progress: progress_tx,
        };
        let client = host.serve(transport).await.expect("MCP initialize");
        Session {
            client,
            asked,
            logs,
            progress,
            _dir: dir,
        }
    }

    /// Calls a tool (rmcp's client puts a progress token on every request).
    async fn call(&self, name: &str, args: Value) -> CallToolResult {
        let params = CallToolRequestParams::new(name.to_owned()).with_arguments(args.as_object().unwrap().clone());
        self.client.call_tool(params).await.expect("tools/call")
    }

    async fn next_log(&mut self) -> LoggingMessageNotificationParam {
        tokio::time::timeout(WAIT, self.logs.recv())
            .await
            .expect("a log message")
            .unwrap()
    }
}

fn fixtures() -> String {
    concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/conformance").to_owned()
}

/// A catalogue file of JavaScript tools `(slug, returns, source)` in `dir`.
fn catalogue(dir: &tempfile::TempDir, tools: &[(&str, &str, &str)]) -> String {
    let tools: Vec<Value> = tools
        .iter()
        .map(|(slug, returns, source)| {
            json!({"slug": slug, "name": slug, "description": format!("{slug}, written by a test."),
                   "input_schema": {"type": "object"}, "runtime": "javascript", "returns": returns, "source": source})
        })
        .collect();
    let path = dir.path().join("catalogue.json");
    std::fs::write(&path, json!({ "tools": tools }).to_string()).unwrap();
    path.display().to_string()
}

#[tokio::test]
async fn a_tool_that_returns_content_answers_its_blocks_beside_the_run_envelope() {
    let s = Session::open(&fixtures(), json!({})).await;
    let r = s.call("test_multiple_content_types", json!({})).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let blocks = serde_json::to_value(&r.content).unwrap();
    let kinds: Vec<&str> = blocks
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b["type"].as_str().unwrap())
        .collect();
    assert_eq!(kinds, ["text", "image", "resource"], "{blocks}");
    // The PNG signature, base64'd.
    assert!(
        blocks[1]["data"].as_str().unwrap().starts_with("iVBORw0KGgo"),
        "{blocks}"
    );
    assert_eq!(
        blocks[2]["resource"]["uri"], "test://mixed-content-resource",
        "{blocks}"
    );
    let body = structured(&r);
    assert_eq!(body["success"], true, "{body}");
    assert!(body["run_id"].is_string(), "{body}");
    assert_eq!(body["result"]["content"][1]["mimeType"], "image/png", "{body}");
    // Through the meta-tool the same run keeps the envelope's text.
    let r = s
        .call(
            "toolgate",
            json!({"command": "run", "slug": "test_image_content", "params": {}}),
        )
        .await;
    assert!(text(&r).contains("\"image/png\""), "{r:?}");
    assert_eq!(structured(&r)["result"]["content"][0]["type"], "image", "{r:?}");
}

#[tokio::test]
async fn a_tool_that_says_it_returns_content_but_does_not_fails_saying_why() {
    let dir = tempfile::tempdir().unwrap();
    let file = catalogue(
        &dir,
        &[
            ("plain", "content", "function run() { return 'just text'; }"),
            (
                "bad-block",
                "content",
                "function run() { return {content: [{type: 'image', data: 'x'}]}; }",
            ),
        ],
    );
    let s = Session::open(&file, json!({})).await;
    let r = s.call("plain", json!({})).await;
    let body = expect_error(&r, "EXECUTION_ERROR");
    assert!(
        body["error"].as_str().unwrap().contains("it returned a string"),
        "{body}"
    );
    let r = s.call("bad-block", json!({})).await;
    let body = expect_error(&r, "EXECUTION_ERROR");
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("block 0 is not an MCP content block"),
        "{body}"
    );
}

#[tokio::test]
async fn log_messages_from_a_tool_reach_its_client_in_order_and_honour_set_level() {
    let dir = tempfile::tempdir().unwrap();
    let chatty = "function run() { mcp.log('info', 'below the level'); mcp.log('error', {at: 'the level'}, 'chatty'); return 1; }";
    let file = catalogue(&dir, &[("chatty", "value", chatty)]);
    let mut s = Session::open(&file, json!({})).await;
    let r = s.call("chatty", json!({})).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let first = s.next_log().await;
    assert_eq!(
        (first.level, &first.data),
        (LoggingLevel::Info, &json!("below the level"))
    );
    let second = s.next_log().await;
    assert_eq!(second.level, LoggingLevel::Error);
    assert_eq!(second.logger.as_deref(), Some("chatty"));
    assert_eq!(second.data, json!({"at": "the level"}));
    #[allow(deprecated)] // rmcp marks logging deprecated (SEP-2577); clients still use it.
    s.client
        .set_level(SetLevelRequestParams::new(LoggingLevel::Warning))
        .await
        .unwrap();
    let r = s.call("chatty", json!({})).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let next = s.next_log().await;
    assert_eq!(next.data, json!({"at": "the level"}), "the info message was held back");

    let mut f = Session::open(&fixtures(), json!({})).await;
    let r = f.call("test_tool_with_logging", json!({})).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let mut said = Vec::new();
    for _ in 0..3 {
        said.push(f.next_log().await.data);
    }
    assert_eq!(
        said,
        [
            json!("Tool execution started"),
            json!("Tool processing data"),
            json!("Tool execution completed")
        ]
    );
}

#[tokio::test]
async fn progress_from_a_tool_reaches_the_call_that_carried_a_token() {
    let mut s = Session::open(&fixtures(), json!({})).await;
    let r = s.call("test_tool_with_progress", json!({})).await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let (mut seen, mut tokens) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let p = tokio::time::timeout(WAIT, s.progress.recv())
            .await
            .expect("progress")
            .unwrap();
        assert_eq!(p.total, Some(100.0));
        seen.push(p.progress);
        tokens.push(p.progress_token);
    }
    assert_eq!(seen, [0.0, 50.0, 100.0]);
    // rmcp's client puts its own token on the request; every note carries that one.
    assert!(tokens.iter().all(|t| *t == tokens[0]), "{tokens:?}");
}

#[tokio::test]
async fn progress_from_a_tool_run_through_the_meta_tool_reaches_its_call() {
    let mut s = Session::open(&fixtures(), json!({})).await;
    let r = s
        .call(
            "toolgate",
            json!({"command": "run", "slug": "test_tool_with_progress", "params": {}}),
        )
        .await;
    assert_ne!(r.is_error, Some(true), "{r:?}");
    let mut seen = Vec::new();
    for _ in 0..3 {
        let p = tokio::time::timeout(WAIT, s.progress.recv())
            .await
            .expect("progress")
            .unwrap();
        seen.push(p.progress);
    }
    assert_eq!(seen, [0.0, 50.0, 100.0]);
}

#[tokio::test]
async fn sampling_and_elicitation_from_a_tool_reach_a_client_that_declared_them() {
    let s = Session::open(&fixtures(), json!({"sampling": {}, "elicitation": {}})).await;
    let r = s.call("test_sampling", json!({"prompt": "name a colour"})).await;
    assert_eq!(text(&r), "LLM response: sampled by the test host", "{r:?}");
    let r = s.call("test_elicitation", json!({"message": "who are you?"})).await;
    let said = text(&r);
    assert!(
        said.starts_with("User response: action=accept") && said.contains("ada@example.org"),
        "{said}"
    );
    let asked = s.asked.lock().unwrap().clone();
    assert_eq!(asked.len(), 2, "{asked:?}");
    assert_eq!(asked[0]["messages"][0]["content"]["text"], "name a colour", "{asked:?}");
    assert_eq!(asked[0]["maxTokens"], 100, "{asked:?}");
    assert_eq!(asked[1]["message"], "who are you?", "{asked:?}");
    assert_eq!(asked[1]["requestedSchema"]["required"], json!(["username", "email"]));
}

#[tokio::test]
async fn a_client_that_declared_neither_gets_a_failure_naming_the_capability() {
    let s = Session::open(&fixtures(), json!({})).await;
    for (tool, args, capability) in [
        ("test_sampling", json!({"prompt": "hi"}), "sampling"),
        ("test_elicitation", json!({"message": "hi"}), "elicitation"),
    ] {
        let r = s.call(tool, args).await;
        let body = expect_error(&r, "EXECUTION_ERROR");
        assert!(
            body["error"]
                .as_str()
                .unwrap()
                .contains(&format!("did not declare the {capability} capability")),
            "{body}"
        );
    }
    assert!(s.asked.lock().unwrap().is_empty());
}

#[tokio::test]
async fn a_run_sends_at_most_its_share_of_notes() {
    let dir = tempfile::tempdir().unwrap();
    let flood = "function run() { let n = 0; try { for (;;) { mcp.log('debug', n); n++; } } catch (e) { return {sent: n, error: String(e)}; } }";
    let file = catalogue(&dir, &[("flood", "value", flood)]);
    let s = Session::open(&file, json!({})).await;
    let r = s.call("flood", json!({})).await;
    let result = &structured(&r)["result"];
    assert_eq!(result["sent"], 1000, "{result}");
    assert!(result["error"].as_str().unwrap().contains("at most 1000"), "{result}");
}

#[tokio::test]
async fn timers_fire_in_order_and_cleared_ones_never_do() {
    let s = Session::open(&fixtures(), json!({})).await;
    let code = r#"
        const order = [];
        setTimeout(() => order.push("late"), 30);
        setTimeout((what) => order.push(what), 5, "early");
        clearTimeout(setTimeout(() => order.push("cleared"), 1));
        let ticks = 0;
        await new Promise((resolve) => {
          const every = setInterval(() => { if (++ticks === 3) { clearInterval(every); resolve(); } }, 1);
        });
        await new Promise((resolve) => setTimeout(resolve, 60));
        return { order, ticks };
    "#;
    let r = s.call("run_javascript", json!({ "code": code })).await;
    assert_eq!(
        structured(&r)["result"],
        json!({"order": ["early", "late"], "ticks": 3}),
        "{r:?}"
    );
}

#[tokio::test]
async fn a_run_outside_an_mcp_call_is_told_it_has_no_client_to_ask() {
    let catalogue = std::path::PathBuf::from(fixtures());
    let server = crate::util::CatalogueServer::start(&catalogue).await;
    let answer: Value = reqwest::Client::new()
        .post(format!("{}/api/tools/test_sampling/run", server.host))
        .json(&json!({"params": {"prompt": "hi"}}))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(answer["success"], false, "{answer}");
    assert_eq!(answer["code"], "EXECUTION_ERROR", "{answer}");
    assert!(
        answer["error"].as_str().unwrap().contains("no MCP client to ask"),
        "{answer}"
    );
}
