//! `toolgate demo`: the agent's path walked through the real binary over stdio and over
//! Streamable HTTP; an absent server is one message, and a step that misbehaves fails
//! the command.

use std::path::Path;

use crate::http::HttpGate;
use crate::util::command;

/// What `toolgate ARGS` printed, and whether it exited 0.
async fn toolgate(dir: &Path, args: &[&str]) -> (bool, String, String) {
    let mut cmd = command(dir, &[]);
    cmd.args(args).stdin(std::process::Stdio::null());
    let out = tokio::time::timeout(std::time::Duration::from_secs(60), cmd.output())
        .await
        .expect("the demo finishes")
        .unwrap();
    (
        out.status.success(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

/// Asserts every step passed, in order.
fn assert_walked(stdout: &str) {
    let steps = ["discover", "search", "schema", "run", "batch", "recover", "history"];
    for (i, step) in steps.iter().enumerate() {
        let line = format!("{:>2} ✓ {step:<9} ", i + 1);
        assert!(stdout.contains(&line), "no {line:?}: {stdout}");
    }
    assert!(!stdout.contains('✗'), "{stdout}");
    assert!(stdout.trim_end().ends_with("all 7 steps passed"), "{stdout}");
}

/// A catalogue folder of one JavaScript tool.
fn one_tool(dir: &Path, slug: &str, schema: &str, source: &str) {
    let folder = dir.join(slug);
    std::fs::create_dir(&folder).unwrap();
    let manifest = format!(
        r#"{{"slug": "{slug}", "name": "{slug}", "description": "A fixture.", "input_schema": {schema}, "runtime": "javascript", "source": "index.js"}}"#
    );
    std::fs::write(folder.join("tool.json"), manifest).unwrap();
    std::fs::write(folder.join("index.js"), source).unwrap();
}

#[tokio::test]
async fn the_demo_walks_every_step_against_a_stdio_child() {
    let dir = tempfile::tempdir().unwrap();
    let (ok, stdout, stderr) = toolgate(dir.path(), &["demo"]).await;
    assert!(ok, "{stdout}\n{stderr}");
    assert_walked(&stdout);
    assert!(stdout.contains("→ base64-codec"), "{stdout}");
    assert!(
        stdout.contains("left out the required \"input\": refused as INVALID_PARAMS"),
        "{stdout}"
    );
}

#[tokio::test]
async fn the_demo_walks_every_step_over_streamable_http() {
    let gate = HttpGate::start(&[]).await;
    let dir = tempfile::tempdir().unwrap();
    let (ok, stdout, stderr) = toolgate(dir.path(), &["demo", "--url", &gate.url]).await;
    assert!(ok, "{stdout}\n{stderr}");
    assert!(stdout.starts_with(&format!(
        "toolgate demo: the path an agent takes, against {}\n",
        gate.url
    )));
    assert_walked(&stdout);
}

#[tokio::test]
async fn a_closed_port_is_one_clear_message_and_a_failure() {
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let url = format!("http://{}/mcp", listener.local_addr().unwrap());
    drop(listener);
    let dir = tempfile::tempdir().unwrap();
    let (ok, stdout, stderr) = toolgate(dir.path(), &["demo", "--url", &url]).await;
    assert!(!ok, "{stdout}\n{stderr}");
    assert_eq!(stdout, "", "no step is tried");
    assert_eq!(
        stderr,
        format!("toolgate: cannot reach {url}: connection refused — is `toolgate --http` running there?\n")
    );
}

#[tokio::test]
async fn a_step_that_misbehaves_fails_the_demo_and_ends_the_walk() {
    let dir = tempfile::tempdir().unwrap();
    one_tool(
        dir.path(),
        "always-throws",
        r#"{"type": "object"}"#,
        "function run() { throw new Error('boom'); }",
    );
    let catalogue = dir.path().display().to_string();
    let (ok, stdout, stderr) = toolgate(dir.path(), &["--catalogue", &catalogue, "demo"]).await;
    assert!(!ok, "{stdout}\n{stderr}");
    assert!(stdout.contains(" 3 ✓ schema    always-throws"), "{stdout}");
    assert!(stdout.contains(" 4 ✗ run       Error EXECUTION_ERROR"), "{stdout}");
    assert!(!stdout.contains(" 5 "), "the walk ends there: {stdout}");
    assert!(
        stderr.contains("toolgate: the demo failed at step 4 (run), as shown above"),
        "{stderr}"
    );
}

#[tokio::test]
async fn a_schema_that_refuses_nothing_recovers_from_a_misspelt_slug() {
    let dir = tempfile::tempdir().unwrap();
    one_tool(
        dir.path(),
        "open-tool",
        r#"{"type": "object"}"#,
        "function run(p) { return { got: p }; }",
    );
    let catalogue = dir.path().display().to_string();
    let (ok, stdout, stderr) = toolgate(dir.path(), &["--catalogue", &catalogue, "demo"]).await;
    assert!(ok, "{stdout}\n{stderr}");
    assert_walked(&stdout);
    assert!(
        stdout.contains("misspelt the slug as \"open-toolx\": refused as TOOL_NOT_FOUND"),
        "{stdout}"
    );
}
