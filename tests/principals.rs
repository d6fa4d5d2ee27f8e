//! The principal a call acts as: an `--http` session belongs to the principal of its
//! `initialize`, so two principals' histories never mix, even when one presents the
//! other's session id; its runs in history and its log lines name it (never the key).

use std::process::Stdio;
use std::time::Duration;

use serde_json::json;
use tokio::io::{AsyncBufReadExt, BufReader};

use crate::access::new_key;
use crate::http::{HttpGate, Session, post};
use crate::util::{command, fixtures};

#[tokio::test]
async fn a_session_belongs_to_its_principal_and_another_cannot_use_it() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("keys.json");
    let alice_key = new_key(&file, "run,search", "alice").await;
    let bob_key = new_key(&file, "run,search", "bob").await;
    let catalogue = fixtures().display().to_string();
    let gate = HttpGate::start(&[
        ("TOOLGATE_CATALOGUE", &catalogue),
        ("TOOLGATE_KEYS_FILE", file.to_str().unwrap()),
    ])
    .await;
    let mut alice = Session::open_keyed(&gate.url, &alice_key).await;
    let ran = alice.call("echo", json!({"message": "alice's secret"})).await;
    assert_eq!(ran["success"], true, "{ran}");
    // Bob, with a key of his own, presents Alice's session id: refused before the
    // session sees the request, whatever he asks.
    let mut bob_in_alices = Session::open_keyed(&gate.url, &bob_key).await;
    bob_in_alices.id = alice.id.clone();
    for (method, params) in [
        (
            "tools/call",
            json!({"name": "toolgate", "arguments": {"command": "history"}}),
        ),
        ("tools/call", json!({"name": "echo", "arguments": {"message": "bob's"}})),
        ("resources/read", json!({"uri": "toolgate://history"})),
    ] {
        let message = json!({"jsonrpc": "2.0", "id": 7, "method": method, "params": params});
        let answer = post(&bob_in_alices.http, &gate.url, Some(&alice.id), &message).await;
        assert_eq!(answer.status(), 403, "{method}");
        assert!(!answer.text().await.unwrap().contains("alice's secret"));
    }
    // His own session works, and holds only his runs; Alice's holds only hers.
    let mut bob = Session::open_keyed(&gate.url, &bob_key).await;
    assert_eq!(bob.call("echo", json!({"message": "bob's"})).await["success"], true);
    let bobs = bob.call("toolgate", json!({"command": "history"})).await;
    assert_eq!(bobs["runs"].as_array().map(Vec::len), Some(1), "{bobs}");
    assert!(!bobs.to_string().contains("alice"), "{bobs}");
    let hers = alice.call("toolgate", json!({"command": "history"})).await;
    assert_eq!(hers["runs"].as_array().map(Vec::len), Some(1), "{hers}");
}

#[tokio::test]
async fn runs_in_history_and_log_lines_name_the_principal_never_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("keys.json");
    let key = new_key(&file, "run,search", "alice").await;
    let catalogue = fixtures().display().to_string();
    let mut cmd = command(
        dir.path(),
        &[
            ("TOOLGATE_CATALOGUE", &catalogue),
            ("TOOLGATE_KEYS_FILE", file.to_str().unwrap()),
            ("TOOLGATE_DEBUG", "1"),
        ],
    );
    cmd.args(["--http", "127.0.0.1:0"])
        .stderr(Stdio::piped())
        .stdout(Stdio::null())
        .stdin(Stdio::null());
    let mut child = cmd.spawn().unwrap();
    let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
    let url = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if let Some(rest) = line.split(" at ").nth(1)
                && rest.starts_with("http://")
            {
                return rest.trim().to_owned();
            }
        }
        panic!("toolgate --http exited without announcing its address")
    })
    .await
    .expect("toolgate --http starts");

    let mut alice = Session::open_keyed(&url, &key).await;
    assert_eq!(alice.call("echo", json!({"message": "m"})).await["success"], true);
    let history = alice.call("toolgate", json!({"command": "history"})).await;
    assert_eq!(history["runs"][0]["principal"], "alice", "{history}");
    let shown = alice
        .call("toolgate", json!({"command": "history", "show": "r1"}))
        .await;
    assert_eq!(shown["run"]["principal"], "alice", "{shown}");

    // The run's debug line carries its span: run id, tool and principal.
    let line = tokio::time::timeout(Duration::from_secs(30), async {
        while let Some(line) = lines.next_line().await.unwrap() {
            if line.contains("running") && line.contains("run=r1") {
                return line;
            }
        }
        panic!("no log line for the run")
    })
    .await
    .expect("the run is logged");
    assert!(line.contains("principal=alice"), "{line}");
    assert!(!line.contains(&key), "{line}");
    child.kill().await.unwrap();
}

#[tokio::test]
async fn over_http_each_tool_needs_its_scope() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("keys.json");
    let runner = new_key(&file, "run", "runner").await;
    let coder = new_key(&file, "runtimes,search", "coder").await;
    let catalogue = fixtures().display().to_string();
    let gate = HttpGate::start(&[
        ("TOOLGATE_CATALOGUE", &catalogue),
        ("TOOLGATE_RUNTIMES", "js"),
        ("TOOLGATE_KEYS_FILE", file.to_str().unwrap()),
    ])
    .await;
    let code = json!({"code": "return 1 + 1"});
    let mut runner = Session::open_keyed(&gate.url, &runner).await;
    assert_eq!(runner.call("echo", json!({"message": "m"})).await["success"], true);
    let refused = runner.call("run_javascript", code.clone()).await;
    assert_eq!(refused["code"], "FORBIDDEN", "{refused}");
    assert!(refused["error"].as_str().unwrap().contains("runtimes"), "{refused}");
    let search = runner
        .call("toolgate", json!({"command": "search", "query": "echo"}))
        .await;
    assert_eq!(search["code"], "FORBIDDEN", "{search}");
    let listed = runner.call("toolgate", json!({"command": "list"})).await;
    assert_eq!(listed["code"], "FORBIDDEN", "{listed}");

    let mut coder = Session::open_keyed(&gate.url, &coder).await;
    let ran = coder.call("run_javascript", code).await;
    assert_eq!(ran["result"], 2, "{ran}");
    let via_meta = coder
        .call(
            "toolgate",
            json!({"command": "run", "slug": "echo", "params": {"message": "m"}}),
        )
        .await;
    assert_eq!(via_meta["code"], "FORBIDDEN", "{via_meta}");
    let schema = coder
        .call("toolgate", json!({"command": "schema", "slug": "echo"}))
        .await;
    assert!(schema.get("code").is_none(), "{schema}");
}
