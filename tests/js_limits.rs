//! The local JavaScript backend through the real server: errors with lines, deadlines,
//! heap caps, console capture, async run.

use serde_json::json;

use crate::util::{Gate, expect_error, expect_ok, fixtures, structured};

async fn gate(extra: &[(&str, &str)]) -> Gate {
    let dir = fixtures().display().to_string();
    let mut env = vec![("TOOLGATE_CATALOGUE", dir.as_str())];
    env.extend_from_slice(extra);
    Gate::start(&env).await
}

async fn run(gate: &Gate, slug: &str, params: serde_json::Value) -> rmcp::model::CallToolResult {
    gate.meta(json!({"command": "run", "slug": slug, "params": params}))
        .await
}

#[tokio::test]
async fn console_output_is_captured_beside_the_result() {
    let gate = gate(&[]).await;
    let r = run(&gate, "echo", json!({"message": "hi"})).await;
    assert_eq!(expect_ok(&r)["message"], "hi");
    let s = structured(&r);
    assert_eq!(s["stdout"], "echoing hi\n");
    assert_eq!(s["stderr"], "a warning\n");
    gate.stop().await;
}

#[tokio::test]
async fn async_run_is_awaited() {
    let gate = gate(&[]).await;
    let r = run(&gate, "echo-async", json!({"message": "quiet"})).await;
    assert_eq!(expect_ok(&r)["message"], "QUIET");
    gate.stop().await;
}

#[tokio::test]
async fn a_throw_reports_its_message_and_line() {
    let gate = gate(&[]).await;
    let r = run(&gate, "throws", json!({})).await;
    let s = expect_error(&r, "EXECUTION_ERROR");
    let msg = s["error"].as_str().unwrap();
    assert!(msg.contains("boom from the fixture"), "{msg}");
    let file = format!("{}/throws/index.js:4:", fixtures().display());
    assert!(
        msg.contains(&file),
        "the tool's own file and the line of the throw: {msg}"
    );
    assert_eq!(s["retryable"], false);
    let r = run(&gate, "no-run", json!({})).await;
    assert!(
        expect_error(&r, "EXECUTION_ERROR")["error"]
            .as_str()
            .unwrap()
            .contains("run(params)")
    );
    let r = run(&gate, "no-source", json!({})).await;
    expect_error(&r, "NO_SOURCE");
    gate.stop().await;
}

#[tokio::test]
async fn an_infinite_loop_is_stopped_at_its_deadline() {
    let gate = gate(&[("TOOLGATE_JS_TIMEOUT_MS", "300")]).await;
    let r = run(&gate, "spin", json!({})).await;
    let s = expect_error(&r, "TIMEOUT");
    assert_eq!(s["retryable"], true);
    assert!(s["error"].as_str().unwrap().contains("300 ms"));
    // The server is still serving afterwards.
    expect_ok(&run(&gate, "echo", json!({"message": "alive"})).await);
    gate.stop().await;
}

#[tokio::test]
async fn a_promise_that_never_settles_times_out() {
    let gate = gate(&[("TOOLGATE_JS_TIMEOUT_MS", "300")]).await;
    let r = run(&gate, "never-settles", json!({})).await;
    expect_error(&r, "TIMEOUT");
    gate.stop().await;
}

#[tokio::test]
async fn a_heap_bomb_is_contained_even_when_the_script_catches_it() {
    let gate = gate(&[("TOOLGATE_JS_HEAP_MB", "32")]).await;
    for slug in ["heap-bomb", "heap-bomb-caught"] {
        let r = run(&gate, slug, json!({})).await;
        let s = expect_error(&r, "RESOURCE_LIMIT");
        assert!(s["error"].as_str().unwrap().contains("32 MiB"), "{s}");
    }
    expect_ok(&run(&gate, "echo", json!({"message": "alive"})).await);
    gate.stop().await;
}

#[tokio::test]
async fn a_client_leaving_mid_run_does_not_hold_the_server_until_the_deadline() {
    use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};
    let dir = tempfile::tempdir().unwrap();
    let catalogue = fixtures().display().to_string();
    // A ten-minute deadline: the server must exit long before it.
    let mut cmd = crate::util::command(
        dir.path(),
        &[("TOOLGATE_CATALOGUE", &catalogue), ("TOOLGATE_JS_TIMEOUT_MS", "600000")],
    );
    cmd.stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let init = json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    stdin.write_all(format!("{init}\n").as_bytes()).await.unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    lines.next_line().await.unwrap().expect("initialize answered");
    let spin = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "spin", "arguments": {}}});
    stdin
        .write_all(format!("{{\"jsonrpc\":\"2.0\",\"method\":\"notifications/initialized\"}}\n{spin}\n").as_bytes())
        .await
        .unwrap();
    drop(stdin);
    let status = tokio::time::timeout(std::time::Duration::from_secs(120), child.wait()).await;
    assert!(
        status.is_ok(),
        "the server was still running two minutes after its client left"
    );
}

/// Heap-filling loops whose time goes to large native calls, which QuickJS's interrupt
/// poll (every 10,000 branches or calls) barely sees: each once overran a 1.5 s deadline
/// by seconds and was reported as the heap limit. With a heap cap no run can fill in
/// 300 ms, the deadline comes first, and the answer must say so.
#[tokio::test]
async fn a_heap_filling_loop_ends_at_its_deadline_and_says_it_was_the_deadline() {
    let gate = Gate::start(&[
        ("TOOLGATE_RUNTIMES", "js"),
        ("TOOLGATE_JS_TIMEOUT_MS", "300"),
        ("TOOLGATE_JS_HEAP_MB", "8192"),
    ])
    .await;
    for code in [
        "const a = []; while (true) a.push(new Array(1e5).fill(1));",
        "while (true) new Array(1e5).fill(1);",
        "const a = []; while (true) { try { a.push(new Array(1e5).fill(1)); } catch (e) {} }",
        "while (true) { try { while (true) new Array(1e5).fill(1); } catch (e) {} }",
    ] {
        let r = gate.call("run_javascript", json!({ "code": code })).await;
        let s = structured(&r);
        assert_eq!(r.is_error, Some(true), "{code}: {s}");
        assert_eq!(s["timed_out"], true, "{code}: {s}");
        assert!(
            s["error"].as_str().unwrap().contains("timed out after 0.3 seconds"),
            "{code}: {s}"
        );
    }
    let r = gate.call("run_javascript", json!({ "code": "return 'alive';" })).await;
    assert_eq!(structured(&r)["result"], "alive", "the server still runs scripts");
    gate.stop().await;
}

/// The heap cap reached long before the deadline decides the answer even when the
/// script catches the out-of-memory error and would spin on until the deadline.
#[tokio::test]
async fn a_heap_cap_reached_first_is_the_limit_reported_even_when_caught() {
    let gate = Gate::start(&[
        ("TOOLGATE_RUNTIMES", "js"),
        ("TOOLGATE_JS_TIMEOUT_MS", "20000"),
        ("TOOLGATE_JS_HEAP_MB", "16"),
    ])
    .await;
    for code in [
        "const a = []; while (true) a.push(new Array(1e5).fill(1));",
        "const a = []; while (true) { try { a.push(new Array(1e5).fill(1)); } catch (e) {} }",
    ] {
        let r = gate.call("run_javascript", json!({ "code": code })).await;
        let s = structured(&r);
        assert_eq!(
            (r.is_error, &s["timed_out"]),
            (Some(true), &json!(false)),
            "{code}: {s}"
        );
        let error = s["error"].as_str().unwrap();
        assert!(error.contains("heap") && error.contains("16 MiB"), "{code}: {s}");
    }
    gate.stop().await;
}

#[tokio::test]
async fn a_huge_returned_value_is_cut_for_a_snippet_and_refused_for_a_tool() {
    // The attack: a 100,000,000-character string returned whole was a 200 MB answer line.
    let gate = gate(&[("TOOLGATE_RUNTIMES", "js")]).await;
    let r = gate
        .call("run_javascript", json!({"code": "return 'r'.repeat(100e6)"}))
        .await;
    let s = expect_ok(&r).clone();
    let kept = s.as_str().unwrap();
    assert_eq!(kept.chars().count(), 262_144, "the default cap");
    assert!(kept.starts_with("\"rrr"), "the start of its JSON text");
    assert_eq!(structured(&r)["truncated"], true);
    let text = crate::util::text(&r);
    assert!(
        text.contains("The returned value was cut at 262,144 characters of JSON"),
        "{}",
        &text[text.len().saturating_sub(300)..]
    );
    gate.stop().await;

    let gate = self::gate(&[("TOOLGATE_RESULT_CHARS", "1024")]).await;
    let long = "m".repeat(2_000);
    let r = run(&gate, "echo", json!({"message": long})).await;
    let e = expect_error(&r, "RESOURCE_LIMIT");
    assert!(e["error"].as_str().unwrap().contains("1024 characters of JSON"), "{e}");
    let r = run(&gate, "echo", json!({"message": "short"})).await;
    assert_eq!(expect_ok(&r)["message"], "short", "a value under the cap is whole");
    gate.stop().await;
}

#[tokio::test]
async fn a_syntax_error_names_the_tools_own_file_and_line() {
    let dir = tempfile::tempdir().unwrap();
    let tool = dir.path().join("syntax");
    std::fs::create_dir(&tool).unwrap();
    std::fs::write(
        tool.join("tool.json"),
        json!({"slug": "syntax", "runtime": "javascript", "source": "main.js"}).to_string(),
    )
    .unwrap();
    std::fs::write(
        tool.join("main.js"),
        "function run(p) {\n  const a = 1;\n  return a +* 2;\n}\n",
    )
    .unwrap();
    let catalogue = dir.path().display().to_string();
    let gate = Gate::start(&[("TOOLGATE_CATALOGUE", catalogue.as_str())]).await;
    let r = gate.call("syntax", json!({})).await;
    let msg = expect_error(&r, "EXECUTION_ERROR")["error"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(msg.starts_with("SyntaxError"), "{msg}");
    assert!(msg.contains(&format!("{catalogue}/syntax/main.js:3:")), "{msg}");
    gate.stop().await;
}
