//! Three `toolgate --http` replicas sharing Redis behind a real nginx in round-robin with
//! no stickiness: every request of a session may land on another replica. The official
//! Python and TypeScript SDKs run whole sessions through it (initialize, search, schema,
//! runs, a batch with progress, history, isolation); a session goes on when the replica
//! that made it is killed, with a plain client and with the Python SDK (whose tool logs
//! reach it before and after, wherever its GET stream is open); a session's owner is held on every replica behind the
//! balancer; and the official conformance suite (`--suite all`) passes through it, but
//! for the scenarios `tests/conformance/expected-failures-fleet.yaml` lists with reasons
//! — `server-sse-polling` among the passing ones, its stream closed mid-call
//! (`TOOLGATE_HTTP_SSE_POLL_MS`) and resumed on whichever replica the balancer picks.

use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader};

use crate::access::new_key;
use crate::fleet_sessions::gates;
use crate::http::{HttpGate, Session, post};
use crate::interop::{assert_all_checks_passed, node_modules, run, scrubbed};
use crate::nginx::Nginx;
use crate::redis_server::{MACHINE, prefix};
use crate::upstream::python;

/// nginx round-robin over `fleet`: its `/mcp` URL.
async fn balance(fleet: &[HttpGate]) -> (Nginx, String) {
    let upstreams: Vec<String> = fleet
        .iter()
        .map(|g| g.url.trim_start_matches("http://").trim_end_matches("/mcp").to_owned())
        .collect();
    let nginx = Nginx::start(&upstreams).await;
    let url = format!("{}/mcp", nginx.url);
    (nginx, url)
}

/// `/metrics` of `gate`: how many MCP requests it answered.
async fn answered(http: &reqwest::Client, gate: &HttpGate) -> u64 {
    crate::fleet_balanced::answered_on(http, gate.url.trim_end_matches("/mcp"), "/mcp").await
}

#[tokio::test]
async fn the_official_sdks_run_whole_sessions_through_round_robin_nginx_over_three_replicas() {
    let prefix = prefix("lb-sdks");
    let fleet = gates(3, MACHINE, &prefix, &[]).await;
    let (_nginx, url) = balance(&fleet).await;
    let python = python();
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = scrubbed(&python, dir.path());
    cmd.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/python_http.py"))
        .arg(&url);
    let (status, stdout, stderr) = run(cmd, "the Python SDK HTTP script through nginx").await;
    assert_all_checks_passed("the Python SDK through nginx", status, &stdout, &stderr);
    let mut cmd = scrubbed("node", dir.path());
    cmd.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/ts_http.mjs"))
        .arg(node_modules())
        .arg(&url);
    let (status, stdout, stderr) = run(cmd, "the TypeScript SDK HTTP script through nginx").await;
    assert_all_checks_passed("the TypeScript SDK through nginx", status, &stdout, &stderr);
    // Round-robin spread the sessions' requests over all three.
    let http = reqwest::Client::new();
    for gate in &fleet {
        assert!(answered(&http, gate).await >= 3, "{} answered almost nothing", gate.url);
    }
}

#[tokio::test]
async fn a_session_goes_on_when_a_replica_dies_and_its_owner_holds_behind_the_balancer() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("keys.json");
    let alice = new_key(&file, "run,search", "alice").await;
    let bob = new_key(&file, "run,search", "bob").await;
    let prefix = prefix("lb-kill");
    let mut fleet = gates(3, MACHINE, &prefix, &[("TOOLGATE_KEYS_FILE", file.to_str().unwrap())]).await;
    let (_nginx, url) = balance(&fleet).await;
    let mut hers = Session::open_keyed(&url, &alice).await;
    let encode =
        |input: &str| json!({"command": "run", "slug": "base64-codec", "params": {"mode": "encode", "input": input}});
    for i in 0..3 {
        let run = hers.call("toolgate", encode(&format!("before-{i}"))).await;
        assert_eq!(run["success"], true, "{run}");
    }
    // Bob presents her session id: refused whichever replica nginx picks.
    let mut headers = reqwest::header::HeaderMap::new();
    headers.insert("authorization", format!("Bearer {bob}").parse().unwrap());
    let bobs = reqwest::Client::builder().default_headers(headers).build().unwrap();
    let history = json!({"jsonrpc": "2.0", "id": 9, "method": "tools/call",
        "params": {"name": "toolgate", "arguments": {"command": "history"}}});
    for _ in 0..3 {
        let stolen = post(&bobs, &url, Some(&hers.id), &history).await;
        assert_eq!(stolen.status(), 403);
    }
    // The replica that made the session dies (killed, no goodbye); her session goes on.
    drop(fleet.remove(0));
    for i in 0..4 {
        let run = hers.call("toolgate", encode(&format!("after-{i}"))).await;
        assert_eq!(run["success"], true, "{run}");
    }
    let index = hers.call("toolgate", json!({"command": "history"})).await;
    let ids: Vec<&str> = index["runs"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| r["id"].as_str().unwrap())
        .collect();
    assert_eq!(ids, ["r7", "r6", "r5", "r4", "r3", "r2", "r1"], "{index}");
    for _ in 0..2 {
        assert_eq!(post(&bobs, &url, Some(&hers.id), &history).await.status(), 403);
    }
}

#[tokio::test]
async fn the_python_sdks_session_goes_on_through_the_balancer_when_a_replica_dies() {
    let prefix = prefix("lb-sdk-kill");
    let env = [("TOOLGATE_RUNTIMES", "js"), ("TOOLGATE_HTTP_SSE_POLL_MS", "1000")];
    let mut fleet = gates(3, MACHINE, &prefix, &env).await;
    let (_nginx, url) = balance(&fleet).await;
    let python = python();
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = scrubbed(&python, dir.path());
    cmd.arg(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/interop/python_fleet.py"))
        .arg(&url)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    let mut child = cmd.spawn().expect("the Python SDK fleet script starts");
    let mut stdin = child.stdin.take().unwrap();
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut stdout = String::new();
    // The script's session runs until it asks for the kill.
    let asked = tokio::time::timeout(Duration::from_secs(120), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            stdout.push_str(&line);
            stdout.push('\n');
            if line == "kill: now" {
                return true;
            }
        }
        false
    })
    .await
    .unwrap_or(false);
    assert!(asked, "the script did not reach the kill:\n{stdout}");
    // Every replica served some of the session's requests (round-robin); one dies, with
    // no goodbye, mid-session.
    drop(fleet.remove(0));
    stdin.write_all(b"killed\n").await.unwrap();
    drop(stdin);
    while let Ok(Ok(Some(line))) = tokio::time::timeout(Duration::from_secs(120), lines.next_line()).await {
        stdout.push_str(&line);
        stdout.push('\n');
    }
    let out = tokio::time::timeout(Duration::from_secs(30), child.wait_with_output())
        .await
        .expect("the script ends")
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_all_checks_passed("the Python SDK across a replica's death", out.status, &stdout, &stderr);
}

#[tokio::test]
async fn the_conformance_suite_passes_through_round_robin_nginx_over_three_replicas() {
    let suite = node_modules().join("@modelcontextprotocol/conformance/dist/index.js");
    // The scenarios that fail through the balancer, each with its reason.
    let listed = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/conformance/expected-failures-fleet.yaml"
    ))
    .unwrap();
    let mut expected: Vec<&str> = listed
        .lines()
        .filter_map(|l| l.trim().strip_prefix("- "))
        .map(str::trim)
        .collect();
    expected.sort_unstable();
    let catalogue = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/fixtures/conformance");
    let prefix = prefix("lb-conformance");
    let fleet = gates(
        3,
        MACHINE,
        &prefix,
        &[
            ("TOOLGATE_RUNTIMES", "js"),
            ("TOOLGATE_CATALOGUE", catalogue),
            // The fixture `test_reconnection` runs 2.5 s: its stream is closed mid-call
            // and resumed with Last-Event-ID, wherever the balancer sends the resume.
            ("TOOLGATE_HTTP_SSE_POLL_MS", "1500"),
        ],
    )
    .await;
    let (_nginx, url) = balance(&fleet).await;
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = scrubbed("node", dir.path());
    cmd.arg(&suite).args(["server", "--url", &url, "--suite", "all"]);
    let (_, stdout, stderr) = run(cmd, "the MCP conformance suite through nginx").await;
    let summary = stdout.rsplit("=== SUMMARY ===").next().unwrap_or_default();
    let mut failed: Vec<&str> = summary
        .lines()
        .filter_map(|l| l.strip_prefix("✗ "))
        .filter_map(|l| l.split(':').next())
        .collect();
    failed.sort_unstable();
    assert!(
        summary.lines().any(|l| l.starts_with("Total")),
        "no summary\nstdout:\n{stdout}\nstderr:\n{stderr}"
    );
    // A scenario that waits on a timer of its own (server-sse-multiple-streams gives each
    // of three concurrent streams 2 s, each restoring the session on a replica that has
    // not seen it) can miss it on a machine loaded by the other tests: any unlisted
    // failure is run again alone, and must pass then. A real fault fails both times.
    let unlisted: Vec<&str> = failed.iter().copied().filter(|f| !expected.contains(f)).collect();
    for scenario in &unlisted {
        eprintln!("conformance through nginx: {scenario} failed in the full run; running it again alone");
        let dir = tempfile::tempdir().unwrap();
        let mut again = scrubbed("node", dir.path());
        again
            .arg(&suite)
            .args(["server", "--url", &url, "--scenario", scenario]);
        let (status, out, err) = run(again, "one conformance scenario through nginx").await;
        assert!(
            status.success(),
            "{scenario} fails alone too\n{out}\n{err}\nfull run:\n{summary}"
        );
    }
    failed.retain(|f| expected.contains(f));
    assert_eq!(failed, expected, "{summary}");
    // Every check of it a success, none a warning: the stream closed mid-call resumed
    // with the answer.
    assert!(
        summary.contains("✓ server-sse-polling: 3 passed, 0 failed"),
        "{summary}"
    );
}
