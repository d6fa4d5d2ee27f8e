//! stdout is the protocol: with debug logging on, every line the server writes to stdout
//! is a JSON-RPC message (raw_exchange fails on any line that is not JSON); every request
//! gets an answer carrying its id, even one rmcp cannot decode or one over the line cap;
//! and closing stdin ends the session promptly and cleanly.

use std::time::Duration;

use serde_json::{Value, json};

use crate::util::{fixtures, raw_exchange};

#[tokio::test]
async fn every_stdout_line_is_a_json_rpc_message_even_in_debug() {
    let catalogue = fixtures().display().to_string();
    let env = [
        ("TOOLGATE_DEBUG", "1"),
        ("TOOLGATE_CATALOGUE", catalogue.as_str()),
        ("TOOLGATE_JS_TIMEOUT_MS", "200"),
    ];
    let call = |name: &str, arguments: serde_json::Value| json!({"method": "tools/call", "params": {"name": name, "arguments": arguments}});
    let requests = [
        json!({"method": "tools/list"}),
        call("echo", json!({"message": "printed by console.log"})),
        call("throws", json!({})),
        call("spin", json!({})),
        call("toolgate", json!({"command": "list"})),
        call(
            "toolgate",
            json!({"command": "batch", "runs": [{"slug": "echo", "params": {"message": "b"}}]}),
        ),
        call("nope", json!({})),
    ];
    let (lines, stderr) = raw_exchange(&env, &requests).await;
    assert!(lines.len() > requests.len());
    for msg in &lines {
        assert_eq!(msg["jsonrpc"], "2.0", "{msg}");
    }
    assert!(stderr.contains("DEBUG"), "debug diagnostics went to stderr: {stderr}");
}

/// Sends `initialize`, `initialized` and `lines` (raw bytes, one message each) to a fresh
/// server and returns the server's child with stdin still open, plus a reader of stdout.
async fn start_raw(
    env: &[(&str, &str)],
    lines: &[Vec<u8>],
) -> (
    tokio::process::Child,
    tokio::process::ChildStdin,
    tokio::io::Lines<tokio::io::BufReader<tokio::process::ChildStdout>>,
    tempfile::TempDir,
) {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt};
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = crate::util::command(dir.path(), env);
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut out = tokio::io::BufReader::new(child.stdout.take().unwrap()).lines();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}});
    stdin.write_all(format!("{init}\n").as_bytes()).await.unwrap();
    out.next_line().await.unwrap().expect("initialize is answered");
    stdin
        .write_all(b"{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}\n")
        .await
        .unwrap();
    for line in lines {
        stdin.write_all(line).await.unwrap();
        stdin.write_all(b"\n").await.unwrap();
    }
    stdin.flush().await.unwrap();
    (child, stdin, out, dir)
}

#[tokio::test]
async fn a_line_over_the_cap_is_answered_with_its_id_and_the_session_goes_on() {
    // Over toolgate's line cap; the id is the last member, as TypeScript's SDK
    // writes it. rmcp alone dropped the line with a log line and the client waited.
    let big = "a".repeat(toolgate::limits::STDIO_LINE_BYTES + 1);
    let line = format!(
        r#"{{"method":"tools/call","params":{{"name":"echo","arguments":{{"message":"{big}"}}}},"jsonrpc":"2.0","id":41}}"#
    );
    let fixtures = fixtures().display().to_string();
    let (mut child, stdin, mut out, _dir) = start_raw(
        &[("TOOLGATE_CATALOGUE", fixtures.as_str())],
        &[
            line.into_bytes(),
            br#"{"jsonrpc":"2.0","id":42,"method":"ping"}"#.to_vec(),
        ],
    )
    .await;
    let first: Value = serde_json::from_str(&out.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(first["id"], 41, "{first}");
    assert_eq!(first["error"]["code"], -32600, "{first}");
    assert!(
        first["error"]["message"].as_str().unwrap().contains("over the limit"),
        "{first}"
    );
    let second: Value = serde_json::from_str(&out.next_line().await.unwrap().unwrap()).unwrap();
    assert_eq!(second, json!({"jsonrpc": "2.0", "id": 42, "result": {}}));
    drop(stdin);
    child.wait().await.unwrap();
}

#[tokio::test]
async fn malformed_requests_are_answered_with_their_id_and_the_right_code() {
    let requests = [
        json!({"method": "tools/call", "params": {"name": 5, "arguments": {}}}),
        json!({"method": 5}),
        json!({"method": "tools/list", "params": "x"}),
        json!({"method": "ping"}),
    ];
    // rmcp alone answered 2 and 3 without an id, so the exchange would never end.
    let (lines, _) = tokio::time::timeout(Duration::from_secs(60), raw_exchange(&[], &requests))
        .await
        .expect("every request is answered with its id");
    let answer = |id: i64| {
        lines
            .iter()
            .find(|l| l["id"] == id)
            .unwrap_or_else(|| panic!("no answer with id {id}: {lines:?}"))
            .clone()
    };
    assert_eq!(answer(1)["error"]["code"], -32602, "a wrongly typed tool name");
    assert_eq!(answer(2)["error"]["code"], -32600);
    assert_eq!(answer(3)["error"]["code"], -32600);
    assert_eq!(answer(4)["result"], json!({}));
    assert!(
        lines.iter().all(|l| l.get("id").is_some()),
        "every answer carries an id: {lines:?}"
    );
}

#[tokio::test]
async fn closing_stdin_during_a_never_settling_promise_exits_within_the_grace_without_a_panic() {
    // A 10-minute JavaScript deadline: only the shutdown can end this run. rmcp alone
    // waited five seconds for it; toolgate gives calls in flight SHUTDOWN_GRACE (200 ms),
    // then cancels them. Three seconds leaves room for a loaded machine.
    let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": {"name": "run_javascript", "arguments": {"code": "await new Promise(() => {})"}}});
    let (mut child, stdin, mut out, _dir) = start_raw(
        &[("TOOLGATE_RUNTIMES", "js"), ("TOOLGATE_JS_TIMEOUT_MS", "600000")],
        &[
            call.to_string().into_bytes(),
            br#"{"jsonrpc":"2.0","id":2,"method":"ping"}"#.to_vec(),
        ],
    )
    .await;
    // The ping's answer shows the call has been received and is running.
    loop {
        let line: Value = serde_json::from_str(&out.next_line().await.unwrap().unwrap()).unwrap();
        if line["id"] == 2 {
            break;
        }
    }
    drop(stdin);
    let status = tokio::time::timeout(Duration::from_secs(3), child.wait())
        .await
        .expect("the server exits within the grace once stdin closes, not at the JS deadline")
        .unwrap();
    let mut stderr = String::new();
    tokio::io::AsyncReadExt::read_to_string(&mut child.stderr.take().unwrap(), &mut stderr)
        .await
        .unwrap();
    assert!(status.success(), "{status:?}: {stderr}");
    assert!(!stderr.contains("panicked"), "{stderr}");
}
