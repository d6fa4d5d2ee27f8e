//! The MCP Inspector's CLI (`mcp-inspector --cli`, installed by `scripts/test` from
//! `tests/interop/package-lock.json`) against the real binary: it lists tools, calls one,
//! reads a resource and gets a prompt, each a separate run that must exit 0 and print the
//! JSON answer. The Inspector checks a call's structuredContent against the tool's
//! outputSchema and exits non-zero when it does not match.

use std::path::PathBuf;

use serde_json::Value;

use crate::interop::{node_modules, run, scrubbed};

/// The Inspector's launcher script, found through its package's `bin` field.
fn launcher() -> PathBuf {
    let package = node_modules().join("@modelcontextprotocol/inspector");
    let manifest = std::fs::read_to_string(package.join("package.json")).unwrap();
    let manifest: Value = serde_json::from_str(&manifest).unwrap();
    let bin = match &manifest["bin"] {
        Value::String(path) => path.clone(),
        other => other["mcp-inspector"].as_str().expect("a mcp-inspector bin").to_owned(),
    };
    package.join(bin)
}

/// Runs `mcp-inspector --cli <toolgate> <args>` (every tool listed, so the Inspector
/// holds every output schema) and returns its exit code, its stdout parsed as JSON and its
/// stderr.
async fn inspect_any(args: &[&str]) -> (Option<i32>, Value, String) {
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = scrubbed("node", dir.path());
    cmd.arg(launcher())
        .arg("--cli")
        .arg(crate::util::bin())
        .args(["-e", "TOOLGATE_CATALOGUE=embedded", "-e", "TOOLGATE_ADVERTISE=all"])
        .args(args);
    let what = format!("mcp-inspector --cli toolgate {}", args.join(" "));
    let (status, stdout, stderr) = run(cmd, &what).await;
    let json = serde_json::from_str(&stdout)
        .unwrap_or_else(|e| panic!("{what} printed no JSON ({e})\nstdout:\n{stdout}\nstderr:\n{stderr}"));
    (status.code(), json, stderr)
}

/// [`inspect_any`], asserting the Inspector exited 0.
async fn inspect(args: &[&str]) -> Value {
    let (code, json, stderr) = inspect_any(args).await;
    assert_eq!(code, Some(0), "{args:?}\n{json}\nstderr:\n{stderr}");
    json
}

#[tokio::test]
async fn the_inspector_cli_lists_the_tools() {
    let answer = inspect(&["--method", "tools/list"]).await;
    let tools = answer["tools"].as_array().expect("tools");
    assert_eq!(tools[0]["name"], "toolgate", "the meta-tool first");
    let env = tools
        .iter()
        .find(|t| t["name"] == "env-validator")
        .expect("env-validator listed");
    assert_eq!(env["outputSchema"]["type"], "object", "{env}");
}

#[tokio::test]
async fn the_inspector_cli_calls_a_catalogue_tool() {
    let answer = inspect(&[
        "--method",
        "tools/call",
        "--tool-name",
        "slugify",
        "--tool-arg",
        "text=Hello World",
    ])
    .await;
    assert_eq!(answer["isError"], false, "{answer}");
    assert_eq!(answer["structuredContent"]["success"], true, "{answer}");
    assert_eq!(answer["structuredContent"]["result"]["slug"], "hello-world", "{answer}");
}

#[tokio::test]
async fn the_inspector_cli_sees_a_catalogue_tools_failure_code() {
    // The Inspector exits 5 ("tool_is_error") for an isError answer it accepted; an
    // answer breaking the output schema would be another error.
    let (code, answer, stderr) = inspect_any(&["--method", "tools/call", "--tool-name", "env-validator"]).await;
    assert_eq!(code, Some(5), "{answer}\n{stderr}");
    assert!(stderr.contains("tool_is_error"), "{stderr}");
    assert_eq!(answer["isError"], true, "{answer}");
    assert_eq!(answer["structuredContent"]["code"], "INVALID_PARAMS", "{answer}");
}

#[tokio::test]
async fn the_inspector_cli_reads_the_guide() {
    let answer = inspect(&["--method", "resources/read", "--uri", "toolgate://guide"]).await;
    let first = &answer["contents"][0];
    assert_eq!(first["uri"], "toolgate://guide", "{answer}");
    assert!(
        first["text"]
            .as_str()
            .is_some_and(|t| t.starts_with("# ") && t.contains("meta-tool")),
        "{answer}"
    );
}

#[tokio::test]
async fn the_inspector_cli_gets_the_find_tool_prompt() {
    let answer = inspect(&[
        "--method",
        "prompts/get",
        "--prompt-name",
        "find-tool",
        "--prompt-args",
        "goal=validate an env file",
    ])
    .await;
    let text: String = answer["messages"]
        .as_array()
        .expect("messages")
        .iter()
        .filter_map(|m| m["content"]["text"].as_str())
        .collect();
    assert!(
        text.contains("validate an env file") && text.contains("env-validator"),
        "{answer}"
    );
}
