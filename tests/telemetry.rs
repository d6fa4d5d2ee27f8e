//! Traces over OpenTelemetry, received by a real OTLP/HTTP receiver that decodes them
//! with the official protobuf definitions (`tests/telemetry/otlp_receiver.py`, on
//! `opentelemetry-proto`): a tool call's span continues the client's trace, named and
//! attributed per the MCP and GenAI conventions, with the run as its child and, by
//! default, none of the steps that `TOOLGATE_TRACE_STEPS` adds; nothing is
//! exported with `OTEL_SDK_DISABLED=true`; over HTTP each request is a server span whose
//! MCP requests are its children, and the access log line, the history entry and the
//! latency histogram's exemplar name the trace; a collector that never answers or is gone
//! costs no call its answer, its queue bounded and its drops said. The hops of a call are
//! in `telemetry_flow.rs`.

use std::process::Stdio;
use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc;

use crate::upstream::python;
use crate::util::raw_exchange;

/// A bound against a hang while waiting for spans, never a speed assertion.
pub const WAIT: Duration = Duration::from_secs(60);

/// The receiver, running: its port, each span it decoded as it comes, and those read.
pub struct Receiver {
    _child: Child,
    pub port: u16,
    spans: mpsc::UnboundedReceiver<Value>,
    got: Vec<Value>,
}

/// A receiver (OTLP/HTTP) started for one test.
pub async fn receiver() -> Receiver {
    receiver_of(&[]).await
}

/// A receiver started with `args` (`--grpc`: OTLP/gRPC).
async fn receiver_of(args: &[&str]) -> Receiver {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/telemetry/otlp_receiver.py");
    let mut child = Command::new(python())
        .arg(script)
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .expect("the OTLP receiver starts");
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let first = tokio::time::timeout(WAIT, lines.next_line())
        .await
        .unwrap()
        .unwrap()
        .unwrap();
    let port = first.strip_prefix("listening ").unwrap().parse().unwrap();
    let (tx, spans) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Ok(Some(line)) = lines.next_line().await {
            let _ = tx.send(serde_json::from_str::<Value>(&line).unwrap());
        }
    });
    Receiver {
        _child: child,
        port,
        spans,
        got: Vec::new(),
    }
}

impl Receiver {
    /// Every span received so far, once they satisfy `done` (bounded).
    pub async fn until(&mut self, done: impl Fn(&[Value]) -> bool) -> Vec<Value> {
        while !done(&self.got) {
            match tokio::time::timeout(WAIT, self.spans.recv()).await {
                Ok(Some(span)) => self.got.push(span),
                _ => panic!("the spans did not arrive: {:#?}", self.got),
            }
        }
        self.got.clone()
    }
}

pub const TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
pub const PARENT: &str = "00f067aa0ba902b7";

/// The names of the spans of a call's steps, exported only with `TOOLGATE_TRACE_STEPS`,
/// and of the access layer's log span, never exported.
pub fn is_step(span: &Value) -> bool {
    let name = span["name"].as_str().unwrap_or("");
    ["admit", "run", "queue", "validate", "request"].contains(&name) || name.starts_with("execute ")
}

#[tokio::test]
async fn a_tool_call_continues_the_clients_trace_with_the_run_as_its_child() {
    let mut receiver = receiver().await;
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let traceparent = format!("00-{TRACE}-{PARENT}-01");
    let calls = [
        json!({"method": "tools/call", "params": {"name": "base64-codec", "arguments": {"input": "hi"}, "_meta": {"traceparent": traceparent}}}),
        json!({"method": "tools/call", "params": {"name": "base64-codec", "arguments": {"nope": 1}}}),
        json!({"method": "ping", "params": {"_meta": {"traceparent": traceparent}}}),
    ];
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_SERVICE_NAME", "toolgate-under-test"),
        // A collector's key, percent-encoded as the specification has it.
        ("OTEL_EXPORTER_OTLP_HEADERS", "x-api-key=k%20ey%3D1,other=2"),
    ];
    // The server exits when the exchange ends, exporting what it holds.
    let (lines, stderr) = raw_exchange(&env, &calls).await;
    assert!(lines.iter().any(|l| l["id"] == 3), "{lines:?}\n{stderr}");
    let spans = receiver
        .until(|got| {
            got.iter()
                .filter(|s| s["name"].as_str().is_some_and(|n| n.starts_with("tools/call")))
                .count()
                >= 2
        })
        .await;
    let call = spans
        .iter()
        .find(|s| s["trace_id"] == TRACE && s["name"] == "tools/call base64-codec")
        .unwrap_or_else(|| panic!("no span of the call in the client's trace: {spans:#?}"));
    assert_eq!(call["parent_span_id"], PARENT, "the client's span is its parent");
    assert_eq!(call["service"], "toolgate-under-test");
    assert_eq!(call["kind"], 2, "a server span");
    assert_eq!(call["path"], "/v1/traces", "the base endpoint's traces path");
    assert_eq!(call["api_key"], "k ey=1", "OTEL_EXPORTER_OTLP_HEADERS, decoded");
    let attributes = &call["attributes"];
    for (key, value) in [
        ("mcp.method.name", json!("tools/call")),
        ("gen_ai.operation.name", json!("execute_tool")),
        ("gen_ai.tool.name", json!("base64-codec")),
        ("jsonrpc.request.id", json!("1")),
    ] {
        assert_eq!(attributes[key], value, "{key}: {call:#}");
    }
    assert!(attributes.get("error.type").is_none(), "{call:#}");
    // The run (the tool's JavaScript) is its child, in the same trace.
    let call_id = call["span_id"].clone();
    let spans = receiver
        .until(|got| {
            got.iter()
                .any(|s| s["name"] == "javascript" && s["parent_span_id"] == call_id)
        })
        .await;
    let run = spans
        .iter()
        .find(|s| s["name"] == "javascript" && s["parent_span_id"] == call_id)
        .unwrap();
    assert_eq!(run["trace_id"], TRACE, "{run:#}");
    assert_eq!(run["attributes"]["toolgate.job"], "tool", "{run:#}");
    // The failed call is a trace of its own, its error typed by toolgate's code.
    let spans = receiver
        .until(|got| got.iter().any(|s| s["attributes"]["error.type"].is_string()))
        .await;
    let failed = spans
        .iter()
        .find(|s| s["attributes"]["error.type"].is_string())
        .unwrap();
    assert_eq!(failed["attributes"]["error.type"], "INVALID_PARAMS", "{failed:#}");
    assert_ne!(failed["trace_id"], TRACE, "{failed:#}");
    assert_eq!(failed["parent_span_id"], "", "a root: its client sent no context");
    // A ping is an MCP request too: a span of its own, in the client's trace.
    let spans = receiver.until(|got| got.iter().any(|s| s["name"] == "ping")).await;
    let ping = spans.iter().find(|s| s["name"] == "ping").unwrap();
    assert_eq!(ping["attributes"]["mcp.method.name"], "ping", "{ping:#}");
    assert_eq!(ping["trace_id"], TRACE, "{ping:#}");
    // The last to end: every span is in. By default, no step of a call is a span.
    let steps: Vec<&Value> = spans.iter().filter(|s| is_step(s)).collect();
    assert!(steps.is_empty(), "{steps:#?}");
}

#[tokio::test]
async fn spans_go_over_grpc_when_the_protocol_says_grpc_and_an_unserved_protocol_is_said() {
    let mut receiver = receiver_of(&["--grpc"]).await;
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let traceparent = format!("00-{TRACE}-{PARENT}-01");
    let call = json!({"method": "tools/call", "params": {"name": "base64-codec", "arguments": {"input": "hi"}, "_meta": {"traceparent": traceparent}}});
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
    ];
    // The server exits when the exchange ends: its spans leave over gRPC before it does.
    let (lines, stderr) = raw_exchange(&env, std::slice::from_ref(&call)).await;
    assert!(lines.iter().any(|l| l["id"] == 1), "{lines:?}\n{stderr}");
    let spans = receiver
        .until(|got| got.iter().any(|s| s["name"] == "tools/call base64-codec"))
        .await;
    let span = spans.iter().find(|s| s["name"] == "tools/call base64-codec").unwrap();
    assert_eq!(span["transport"], "grpc", "{span:#}");
    assert_eq!(span["trace_id"], TRACE, "{span:#}");
    assert!(spans.iter().any(|s| s["name"] == "javascript"), "{spans:#?}");
    // The traces-only variable wins; a protocol toolgate does not serve is said, and
    // the call is answered all the same.
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
        ("OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "http/json"),
    ];
    let (lines, stderr) = raw_exchange(&env, &[call]).await;
    assert!(lines.iter().any(|l| l["id"] == 1), "{lines:?}\n{stderr}");
    assert!(stderr.contains("\"http/json\" is not served"), "{stderr}");
}

#[tokio::test]
async fn nothing_is_exported_with_the_sdk_disabled() {
    let mut receiver = receiver().await;
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_SDK_DISABLED", "true"),
    ];
    let call = json!({"method": "tools/call", "params": {"name": "base64-codec", "arguments": {"input": "hi"}}});
    let (lines, stderr) = raw_exchange(&env, std::slice::from_ref(&call)).await;
    assert!(lines.iter().any(|l| l["id"] == 1), "{lines:?}\n{stderr}");
    // Then a server that exports, to the same receiver: whatever the first had sent
    // would have arrived before this one's spans.
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_SERVICE_NAME", "exporting"),
    ];
    raw_exchange(&env, &[call]).await;
    let spans = receiver
        .until(|got| got.iter().any(|s| s["service"] == "exporting"))
        .await;
    assert!(
        spans.iter().all(|s| s["service"] == "exporting"),
        "the disabled server exported: {spans:#?}"
    );
}

/// `toolgate --http 127.0.0.1:0` with `env`, its `/mcp` URL once announced, and each line
/// of its stderr as it comes.
async fn http_gate(env: &[(&str, &str)]) -> (Child, String, mpsc::UnboundedReceiver<String>) {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = crate::util::command(dir.path(), env);
    cmd.args(["--http", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .stdin(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let mut stderr = BufReader::new(child.stderr.take().unwrap()).lines();
    let (tx, mut lines) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        let _dir = dir;
        while let Ok(Some(line)) = stderr.next_line().await {
            let _ = tx.send(line);
        }
    });
    let url = tokio::time::timeout(WAIT, async {
        loop {
            let line = lines.recv().await.expect("toolgate --http announces its address");
            if let Some(rest) = line.split(" at ").nth(1)
                && rest.starts_with("http://")
            {
                return rest.trim().to_owned();
            }
        }
    })
    .await
    .unwrap();
    (child, url, lines)
}

#[tokio::test]
async fn http_requests_are_server_spans_and_their_log_line_history_and_latency_name_the_trace() {
    use crate::http::{answer_of, post};
    let mut receiver = receiver().await;
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_BSP_SCHEDULE_DELAY", "100"),
    ];
    let (_child, url, mut stderr) = http_gate(&env).await;
    let mut headers = reqwest::header::HeaderMap::new();
    let traceparent = format!("00-{TRACE}-{PARENT}-01");
    headers.insert("traceparent", traceparent.parse().unwrap());
    let http = reqwest::Client::builder().default_headers(headers).build().unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "traced", "version": "1"}}});
    let answer = post(&http, &url, None, &init).await;
    let session = answer.headers()["mcp-session-id"].to_str().unwrap().to_owned();
    answer.text().await.unwrap();
    let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
    post(&http, &url, Some(&session), &note).await;
    let ask = async |id: u64, method: &str, params: Value| {
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let answer = post(&http, &url, Some(&session), &message).await;
        answer_of(&answer.text().await.unwrap(), id)
    };
    ask(2, "tools/list", json!({})).await;
    ask(
        3,
        "tools/call",
        json!({"name": "base64-codec", "arguments": {"input": "hi"}}),
    )
    .await;
    let history = ask(
        4,
        "tools/call",
        json!({"name": "toolgate", "arguments": {"command": "history"}}),
    )
    .await;
    let runs = &history["result"]["structuredContent"]["runs"];
    assert_eq!(runs[0]["slug"], "base64-codec", "{history:#}");
    assert_eq!(
        runs[0]["trace_id"], TRACE,
        "the history entry names the trace: {history:#}"
    );
    // The latency histogram's buckets lead to the trace.
    let metrics = http.get(url.replace("/mcp", "/metrics")).send().await.unwrap();
    let metrics = metrics.text().await.unwrap();
    assert!(
        metrics.contains(&format!("# {{trace_id=\"{TRACE}\"}}")),
        "an exemplar: {metrics}"
    );
    // The access log line names it too.
    tokio::time::timeout(WAIT, async {
        loop {
            let line = stderr.recv().await.expect("the access log");
            if line.contains("request_id=") && line.contains(&format!("trace_id={TRACE}")) {
                return;
            }
        }
    })
    .await
    .expect("an access log line with the trace id");
    let spans = receiver
        .until(|got| {
            got.iter().any(|s| s["name"] == "tools/list")
                && got.iter().any(|s| s["name"] == "initialize")
                && got.iter().any(|s| s["name"] == "tools/call base64-codec")
                && got.iter().any(|s| s["name"] == "tools/call toolgate")
                && got.iter().filter(|s| s["name"] == "POST /mcp").count() >= 5
        })
        .await;
    let requests: Vec<&Value> = spans.iter().filter(|s| s["name"] == "POST /mcp").collect();
    for request in &requests {
        assert_eq!(request["kind"], 2, "a server span: {request:#}");
        assert_eq!(request["trace_id"], TRACE, "{request:#}");
        assert_eq!(request["parent_span_id"], PARENT, "{request:#}");
        assert_eq!(request["attributes"]["http.route"], "/mcp", "{request:#}");
        assert_eq!(request["attributes"]["http.request.method"], "POST", "{request:#}");
    }
    assert!(
        requests
            .iter()
            .any(|r| r["attributes"]["http.response.status_code"] == 200),
        "{requests:#?}"
    );
    // Each MCP request is a span of its HTTP request.
    for name in ["tools/list", "tools/call base64-codec", "tools/call toolgate"] {
        let mcp = spans.iter().find(|s| s["name"] == name).unwrap();
        assert!(
            requests.iter().any(|r| r["span_id"] == mcp["parent_span_id"]),
            "{name}: {mcp:#}\n{requests:#?}"
        );
        assert_eq!(mcp["attributes"]["mcp.session.id"], session.as_str(), "{mcp:#}");
    }
    let init = spans.iter().find(|s| s["name"] == "initialize").unwrap();
    assert!(
        requests.iter().any(|r| r["span_id"] == init["parent_span_id"]),
        "{init:#}"
    );
    assert_eq!(init["attributes"]["mcp.method.name"], "initialize", "{init:#}");
    let list = spans.iter().find(|s| s["name"] == "tools/list").unwrap();
    assert_eq!(list["attributes"]["mcp.method.name"], "tools/list", "{list:#}");
    assert_eq!(list["attributes"]["jsonrpc.request.id"], "2", "{list:#}");
}

#[tokio::test]
async fn calls_answer_while_the_collector_never_answers_or_is_gone_and_drops_are_counted() {
    // A collector that takes connections and never answers, and a port nothing listens on.
    let silent = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let silent_port = silent.local_addr().unwrap().port();
    tokio::spawn(async move {
        let mut held = Vec::new();
        while let Ok((socket, _)) = silent.accept().await {
            held.push(socket);
        }
    });
    let closed_port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let calls: Vec<Value> = (0..40)
        .map(|_| json!({"method": "tools/call", "params": {"name": "base64-codec", "arguments": {"input": "hi"}}}))
        .collect();
    for port in [silent_port, closed_port] {
        let endpoint = format!("http://127.0.0.1:{port}");
        let env = [
            ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
            ("OTEL_BSP_MAX_QUEUE_SIZE", "16"),
            ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "8"),
            ("OTEL_BSP_SCHEDULE_DELAY", "50"),
            ("OTEL_EXPORTER_OTLP_TIMEOUT", "1000"),
        ];
        let (lines, stderr) = tokio::time::timeout(WAIT, raw_exchange(&env, &calls))
            .await
            .unwrap_or_else(|_| panic!("the gateway stalled with the collector at {endpoint}"));
        for id in 1..=calls.len() {
            let answer = lines.iter().find(|l| l["id"] == id).unwrap();
            assert_eq!(answer["result"]["isError"], false, "{answer:#}\n{stderr}");
        }
        // Each call makes several spans; 16 at most wait for a collector that holds the
        // export: the rest are dropped, and said. (Refused at once, exports may keep up.)
        if port == silent_port {
            assert!(
                stderr.contains("further spans are dropped") && stderr.contains("spans were dropped"),
                "{endpoint}: {stderr}"
            );
        }
    }
}

#[tokio::test]
async fn a_search_waits_for_its_index_in_a_span_of_its_call() {
    let mut receiver = receiver().await;
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let traceparent = format!("00-{TRACE}-{PARENT}-01");
    let search = json!({"method": "tools/call", "params": {"name": "toolgate", "arguments": {"command": "search", "query": "encode text as base64"}, "_meta": {"traceparent": traceparent}}});
    let env = [("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str())];
    let (lines, stderr) = raw_exchange(&env, &[search]).await;
    assert!(lines.iter().any(|l| l["id"] == 1), "{lines:?}\n{stderr}");
    let spans = receiver
        .until(|got| {
            got.iter().any(|s| s["name"] == "search index") && got.iter().any(|s| s["name"] == "tools/call toolgate")
        })
        .await;
    let call = spans.iter().find(|s| s["name"] == "tools/call toolgate").unwrap();
    assert_eq!(call["trace_id"], TRACE, "{call:#}");
    let index = spans.iter().find(|s| s["name"] == "search index").unwrap();
    assert_eq!(index["parent_span_id"], call["span_id"], "{index:#}");
    let ranker = index["attributes"]["toolgate.ranker"].as_str().unwrap();
    assert!(["hybrid", "lexical"].contains(&ranker), "{index:#}");
}
