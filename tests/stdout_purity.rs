//! stdout is the protocol: with debug logging on, every line the server writes to stdout
//! is a JSON-RPC message (raw_exchange fails on any line that is not JSON).

use serde_json::json;

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
