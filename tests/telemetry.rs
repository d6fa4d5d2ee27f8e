//! Traces over OpenTelemetry, received by a real OTLP/HTTP receiver that decodes them
//! with the official protobuf definitions (`tests/telemetry/otlp_receiver.py`, on
//! `opentelemetry-proto`): a tool call's span continues the client's trace, named and
//! attributed per the MCP and GenAI conventions, with the run as its child; nothing is
//! exported with `OTEL_SDK_DISABLED=true`.

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

/// A receiver started for one test.
pub async fn receiver() -> Receiver {
    let script = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/telemetry/otlp_receiver.py");
    let mut child = Command::new(python())
        .arg(script)
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

#[tokio::test]
async fn a_tool_call_continues_the_clients_trace_with_the_run_as_its_child() {
    let mut receiver = receiver().await;
    let endpoint = format!("http://127.0.0.1:{}", receiver.port);
    let traceparent = format!("00-{TRACE}-{PARENT}-01");
    let calls = [
        json!({"method": "tools/call", "params": {"name": "base64-codec", "arguments": {"input": "hi"}, "_meta": {"traceparent": traceparent}}}),
        json!({"method": "tools/call", "params": {"name": "base64-codec", "arguments": {"nope": 1}}}),
    ];
    let env = [
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.as_str()),
        ("OTEL_SERVICE_NAME", "toolgate-under-test"),
    ];
    // The server exits when the exchange ends, exporting what it holds.
    let (lines, stderr) = raw_exchange(&env, &calls).await;
    assert!(lines.iter().any(|l| l["id"] == 2), "{lines:?}\n{stderr}");
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
    // The run is its child, in the same trace.
    let call_id = call["span_id"].clone();
    let spans = receiver
        .until(|got| got.iter().any(|s| s["name"] == "run" && s["parent_span_id"] == call_id))
        .await;
    let run = spans
        .iter()
        .find(|s| s["name"] == "run" && s["parent_span_id"] == call_id)
        .unwrap();
    assert_eq!(run["trace_id"], TRACE, "{run:#}");
    assert_eq!(run["attributes"]["tool"], "base64-codec", "{run:#}");
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
