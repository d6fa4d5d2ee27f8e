//! stdout is the protocol: with debug logging on, every byte the server writes to stdout
//! is a JSON-RPC message.

use std::process::Stdio;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::util::{command, fixtures};

#[tokio::test]
async fn every_stdout_line_is_a_json_rpc_message_even_in_debug() {
    let dir = tempfile::tempdir().unwrap();
    let catalogue = fixtures().display().to_string();
    let mut cmd = command(
        dir.path(),
        &[
            ("TOOLGATE_DEBUG", "1"),
            ("TOOLGATE_CATALOGUE", &catalogue),
            ("TOOLGATE_JS_TIMEOUT_MS", "200"),
        ],
    );
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let calls = [
        json!({"name": "echo", "arguments": {"message": "printed by console.log"}}),
        json!({"name": "throws", "arguments": {}}),
        json!({"name": "spin", "arguments": {}}),
        json!({"name": "toolgate", "arguments": {"command": "list"}}),
        json!({"name": "nope", "arguments": {}}),
    ];
    let mut frames = vec![
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "purity", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/list"}),
    ];
    frames.extend(
        calls
            .iter()
            .enumerate()
            .map(|(i, p)| json!({"jsonrpc": "2.0", "id": i + 2, "method": "tools/call", "params": p})),
    );
    for frame in &frames {
        stdin.write_all(format!("{frame}\n").as_bytes()).await.unwrap();
    }
    // Read until every request has its answer, then close stdin so the server exits.
    let mut stdout = child.stdout.take().unwrap();
    let mut out = Vec::new();
    let mut buf = [0u8; 8192];
    let wanted = frames.iter().filter(|f| f.get("id").is_some()).count();
    while String::from_utf8_lossy(&out)
        .lines()
        .filter(|l| l.contains("\"id\""))
        .count()
        < wanted
    {
        let n = stdout.read(&mut buf).await.unwrap();
        assert!(n > 0, "server closed stdout early: {}", String::from_utf8_lossy(&out));
        out.extend_from_slice(&buf[..n]);
    }
    drop(stdin);
    stdout.read_to_end(&mut out).await.unwrap();
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).await.unwrap();
    child.wait().await.unwrap();

    let text = String::from_utf8(out).expect("stdout is UTF-8");
    for line in text.lines() {
        let msg: Value = serde_json::from_str(line).unwrap_or_else(|e| panic!("not JSON ({e}): {line:?}"));
        assert_eq!(msg["jsonrpc"], "2.0", "{line}");
    }
    assert!(!text.contains("\n\n") && text.ends_with('\n'));
    assert!(stderr.contains("DEBUG"), "debug diagnostics went to stderr: {stderr}");
    assert!(!text.contains("DEBUG "), "no log line on stdout");
}
