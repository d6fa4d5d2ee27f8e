//! Run history through the real server: what is recorded, in which order, redacted and
//! bounded, and how it is asked for.

use serde_json::json;

use crate::util::{Gate, expect_error, expect_ok, fixtures, structured, text};

async fn gate() -> Gate {
    let dir = fixtures().display().to_string();
    Gate::start(&[("TOOLGATE_CATALOGUE", dir.as_str())]).await
}

#[tokio::test]
async fn every_run_is_recorded_newest_first_with_its_scope() {
    let gate = gate().await;
    expect_ok(&gate.call("echo", json!({"message": "direct"})).await);
    expect_ok(
        &gate
            .meta(json!({"command": "run", "slug": "echo-a", "params": {"message": "meta"}}))
            .await,
    );
    expect_error(&gate.call("echo", json!({"message": 5})).await, "INVALID_PARAMS");
    let r = gate.meta(json!({"command": "history"})).await;
    let s = structured(&r).clone();
    assert!(s["scope"].as_str().unwrap().contains("this MCP session"));
    assert!(s["process_started_at"].as_str().unwrap().ends_with('Z'));
    assert!(s["session_started_at"].as_str().unwrap() >= s["process_started_at"].as_str().unwrap());
    let runs = s["runs"].as_array().unwrap();
    let summary: Vec<(&str, &str, &str)> = runs
        .iter()
        .map(|r| {
            (
                r["id"].as_str().unwrap(),
                r["slug"].as_str().unwrap(),
                r["status"].as_str().unwrap(),
            )
        })
        .collect();
    assert_eq!(
        summary,
        vec![
            ("r3", "echo", "INVALID_PARAMS"),
            ("r2", "echo-async", "ok"),
            ("r1", "echo", "ok")
        ]
    );
    assert!(text(&r).starts_with("This history covers only the runs of this MCP session"));

    let shown = gate.meta(json!({"command": "history", "show": "-2"})).await;
    let run = &structured(&shown)["run"];
    assert_eq!(run["id"], "r2");
    assert_eq!(run["input"], json!({"message": "meta"}));
    assert_eq!(run["result"], json!({"message": "META"}));
    assert_eq!(run["truncated"], false);
    assert!(structured(&shown)["scope"].is_string());
    gate.stop().await;
}

#[tokio::test]
async fn inputs_are_redacted_and_payloads_capped() {
    let gate = gate().await;
    let secret = "sk-live-0123456789";
    let deep = json!({"a": {"a": {"a": {"a": {"a": {"a": {"token": secret}}}}}}});
    let params = json!({"api_key": secret, "nested": {"Password": secret}, "deep": deep, "text": "x".repeat(9_000)});
    expect_ok(&gate.call("anything", params).await);
    let shown = gate.meta(json!({"command": "history", "show": "r1"})).await;
    assert!(!text(&shown).contains(secret) && !structured(&shown).to_string().contains(secret));
    let run = &structured(&shown)["run"];
    assert_eq!(run["truncated"], true, "the 9,000-character input was cut");
    assert!(run["input"].as_str().unwrap().contains("\"api_key\":\"******\""));
    gate.stop().await;
}

#[tokio::test]
async fn sixty_runs_leave_fifty_and_unknown_ids_are_clear_errors() {
    let gate = gate().await;
    for i in 0..60 {
        expect_ok(&gate.call("echo", json!({"message": format!("m{i}")})).await);
    }
    let r = gate.meta(json!({"command": "history"})).await;
    let runs = structured(&r)["runs"].as_array().unwrap().clone();
    assert_eq!(runs.len(), 50);
    assert_eq!(runs[0]["id"], "r60");
    assert_eq!(runs[49]["id"], "r11");
    expect_error(
        &gate.meta(json!({"command": "history", "show": "r10"})).await,
        "RUN_NOT_FOUND",
    );
    expect_error(
        &gate.meta(json!({"command": "history", "show": 3})).await,
        "BAD_REQUEST",
    );
    gate.stop().await;
}

#[tokio::test]
async fn diff_of_the_last_two_runs_leads_with_the_verdict() {
    let gate = gate().await;
    expect_ok(&gate.call("echo", json!({"message": "one"})).await);
    expect_ok(&gate.call("echo", json!({"message": "two"})).await);
    let r = gate.meta(json!({"command": "diff", "from": "-2", "to": "-1"})).await;
    let s = structured(&r).clone();
    assert_eq!(s["verdict"], "inputs_differ");
    assert_eq!(s["inputs_changed"], true);
    assert_eq!(
        s["changes"][0],
        json!({"path": "input.message", "from": "one", "to": "two"})
    );
    assert_eq!(s["changes"][1]["path"], "result.message");
    assert!(
        text(&r).starts_with("r1 (echo) vs r2 (echo): inputs differ"),
        "{}",
        text(&r)
    );

    expect_ok(&gate.call("echo", json!({"message": "two"})).await);
    let same = gate.meta(json!({"command": "diff"})).await;
    assert_eq!(
        structured(&same)["verdict"],
        "identical",
        "the defaults compare -2 with -1"
    );
    expect_error(
        &gate.meta(json!({"command": "diff", "from": "r99", "to": "-1"})).await,
        "RUN_NOT_FOUND",
    );
    gate.stop().await;
}

#[tokio::test]
async fn diff_by_default_compares_the_last_two_runs_of_one_tool() {
    let gate = gate().await;
    expect_ok(&gate.call("echo", json!({"message": "one"})).await);
    expect_ok(&gate.call("echo", json!({"message": "two"})).await);
    expect_ok(&gate.call("anything", json!({"n": 1})).await);
    // The newest run is the only one of its tool: no pair to compare, and it says so.
    let r = gate.meta(json!({"command": "diff"})).await;
    let said = expect_error(&r, "BAD_REQUEST")["error"].as_str().unwrap().to_owned();
    assert!(
        said.contains("compares the last two runs of one tool") && said.contains("r3 is the only run of anything"),
        "{said}"
    );
    // Once it has two, those two are compared, not runs of another tool in between.
    expect_ok(&gate.call("anything", json!({"n": 2})).await);
    let r = gate.meta(json!({"command": "diff"})).await;
    let s = structured(&r);
    assert_eq!((&s["from"], &s["to"]), (&json!("r3"), &json!("r4")), "{s}");
    assert_eq!(s["verdict"], "inputs_differ", "{s}");
    assert!(
        text(&r).starts_with("r3 (anything) vs r4 (anything): inputs differ"),
        "{}",
        text(&r)
    );
    // Runs of two tools named outright are compared, but not blamed on their input.
    let r = gate.meta(json!({"command": "diff", "from": "r2", "to": "r4"})).await;
    assert_eq!(structured(&r)["verdict"], "tools_differ", "{}", text(&r));
    gate.stop().await;
}

#[tokio::test]
async fn diff_with_one_run_named_is_a_bad_request_not_a_run_compared_with_itself() {
    let gate = gate().await;
    expect_ok(&gate.call("echo", json!({"message": "one"})).await);
    expect_ok(&gate.call("echo", json!({"message": "two"})).await);
    for args in [
        json!({"command": "diff", "from": "-1"}),
        json!({"command": "diff", "from": "r2"}),
        json!({"command": "diff", "to": "-2"}),
    ] {
        let r = gate.meta(args.clone()).await;
        let s = expect_error(&r, "BAD_REQUEST");
        assert!(s["error"].as_str().unwrap().contains("name both runs"), "{args}: {s}");
    }
    let r = gate.meta(json!({"command": "diff", "from": "r1", "to": "r2"})).await;
    assert_eq!(structured(&r)["verdict"], "inputs_differ");
    gate.stop().await;
}

#[tokio::test]
async fn a_truncated_diff_never_claims_no_differences() {
    let gate = gate().await;
    let long = json!({"text": "x".repeat(9_000)});
    expect_ok(&gate.call("anything", long.clone()).await);
    expect_ok(&gate.call("anything", long).await);
    let r = gate.meta(json!({"command": "diff"})).await;
    let s = structured(&r);
    assert_eq!(s["verdict"], "inconclusive");
    assert_eq!(s["truncated"], true);
    assert!(text(&r).contains("truncated"));
    gate.stop().await;
}

/// A catalogue folder with one tool, `login`, whose secret-keyed fields have rules a
/// call can break, and whose code echoes them back in its result and in a throw.
fn login_catalogue() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let tool = dir.path().join("login");
    std::fs::create_dir(&tool).unwrap();
    let secret_string = json!({"type": "string", "maxLength": 8});
    std::fs::write(
        tool.join("tool.json"),
        json!({"slug": "login", "name": "Login", "description": "Echoes credentials. A test fixture.",
               "input_schema": {"type": "object", "properties": {
                   "password": secret_string, "pwd": secret_string, "pass": secret_string,
                   "bearer": secret_string, "private_key": secret_string, "passage": {"type": "string"},
                   "throw": {"type": "boolean"}}},
               "runtime": "javascript", "source": "index.js"})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        tool.join("index.js"),
        "function run(p) { if (p.throw) throw new Error('bad login ' + p.pwd); return { said: 'you sent ' + p.pass, passage: p.passage }; }",
    )
    .unwrap();
    dir
}

#[tokio::test]
async fn secrets_never_reach_the_history_through_errors_or_results() {
    let dir = login_catalogue();
    let gate = Gate::start(&[("TOOLGATE_CATALOGUE", dir.path().to_str().unwrap())]).await;
    // Each is over its maxLength: the violation would quote it.
    let too_long = json!({"password": "hunter2-password", "pwd": "hunter2-pwd-value", "pass": "hunter2-pass-value",
                          "bearer": "hunter2-bearer-token", "private_key": "hunter2-private-key"});
    let r = gate.call("login", too_long).await;
    let body = expect_error(&r, "INVALID_PARAMS");
    assert!(
        !body.to_string().contains("hunter2"),
        "the answer quotes a secret: {body}"
    );
    assert!(
        body["error"]
            .as_str()
            .unwrap()
            .contains("/password: ****** is longer than 8 characters"),
        "{body}"
    );
    // Short enough to pass validation, then echoed by the tool's result and its throw.
    expect_ok(
        &gate
            .call("login", json!({"pass": "s3cr3t!", "passage": "a public passage"}))
            .await,
    );
    expect_error(
        &gate.call("login", json!({"pwd": "s3cr3t?", "throw": true})).await,
        "EXECUTION_ERROR",
    );
    for id in ["r1", "r2", "r3"] {
        let shown = gate.meta(json!({"command": "history", "show": id})).await;
        let stored = format!("{}{}", text(&shown), structured(&shown));
        for secret in ["hunter2", "s3cr3t"] {
            assert!(!stored.contains(secret), "{id} keeps {secret}: {stored}");
        }
    }
    let shown = gate.meta(json!({"command": "history", "show": "r2"})).await;
    let run = &structured(&shown)["run"];
    assert_eq!(
        run["input"]["passage"], "a public passage",
        "passage is not a secret key"
    );
    assert_eq!(run["result"]["said"], "you sent ******");
    gate.stop().await;
}
