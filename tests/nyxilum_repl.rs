//! `nyxilum_repl_*` through the real server over the stand-in NyxilumNode: state kept,
//! multi-line code flattened, `> ` in output intact, errors keep a session, sessions are
//! isolated, a deadline kills, a session past its share (two of the five) is refused,
//! folders go at stop and exit.

use std::path::Path;

use serde_json::{Value, json};

use crate::nyxilum::gate;
use crate::util::{Gate, expect_error, structured};

async fn start(gate: &Gate) -> String {
    let r = gate.call("nyxilum_repl_start", json!({})).await;
    let s = structured(&r);
    assert_eq!(r.is_error, Some(false), "{s}");
    assert_eq!(s["success"], true);
    s["sessionId"].as_str().unwrap().to_owned()
}

async fn eval(gate: &Gate, id: &str, code: &str) -> Value {
    let r = gate
        .call("nyxilum_repl_eval", json!({"session_id": id, "code": code}))
        .await;
    crate::util::without_run_id(structured(&r))
}

fn folders(dir: &Path) -> usize {
    std::fs::read_dir(dir).unwrap().count()
}

#[tokio::test]
async fn a_session_keeps_state_flattens_lines_and_keeps_prompts_in_output() {
    let gate = gate(&[]).await;
    let id = start(&gate).await;
    assert_eq!(
        eval(&gate, &id, "var x = 41").await,
        json!({"success": true, "output": "", "truncated": false})
    );
    assert_eq!(eval(&gate, &id, "print(x + 1)").await["output"], "42\n");
    let s = eval(&gate, &id, "func add(a, b) {\n    return a + b\n}").await;
    assert_eq!(s["success"], true, "{s}");
    assert_eq!(eval(&gate, &id, "print(add(2, 3))").await["output"], "5\n");
    assert_eq!(eval(&gate, &id, "print(\"a > b\")").await["output"], "a > b\n");
    assert_eq!(eval(&gate, &id, "print(\"> \")").await["output"], "> \n");
    gate.stop().await;
}

#[tokio::test]
async fn an_error_keeps_the_session_and_sessions_are_isolated() {
    let gate = gate(&[]).await;
    let one = start(&gate).await;
    let two = start(&gate).await;
    assert_ne!(one, two);
    eval(&gate, &one, "var secret = 7").await;
    let s = eval(&gate, &one, "undefinedFn()").await;
    assert!(s["output"].as_str().unwrap().starts_with("Error: "), "{s}");
    assert_eq!(
        eval(&gate, &one, "print(secret)").await["output"],
        "7\n",
        "the session survived its error"
    );
    let s = eval(&gate, &two, "print(secret)").await;
    assert!(s["output"].as_str().unwrap().starts_with("Error: "), "{s}");
    gate.stop().await;
}

#[tokio::test]
async fn a_timeout_kills_the_session() {
    let tmp = tempfile::tempdir().unwrap();
    let tmp_text = tmp.path().display().to_string();
    let gate = gate(&[("TMPDIR", &tmp_text)]).await;
    let id = start(&gate).await;
    assert_eq!(folders(tmp.path()), 1);
    let r = gate
        .call(
            "nyxilum_repl_eval",
            json!({"session_id": id, "code": "while true { }", "timeout_ms": 500}),
        )
        .await;
    let s = structured(&r);
    assert_eq!(r.is_error, Some(true));
    assert_eq!(
        (s["success"].as_bool(), s["sessionKilled"].as_bool()),
        (Some(false), Some(true)),
        "{s}"
    );
    assert!(s["error"].as_str().unwrap().contains("500 ms"), "{s}");
    assert_eq!(folders(tmp.path()), 0, "the killed session's folder is gone");
    let r = gate
        .call("nyxilum_repl_eval", json!({"session_id": id, "code": "print(1)"}))
        .await;
    expect_error(&r, "SESSION_NOT_FOUND");
    gate.stop().await;
}

#[tokio::test]
async fn a_session_past_its_share_is_refused_and_unknown_ids_are_named() {
    let gate = gate(&[]).await;
    let mut ids = Vec::new();
    for _ in 0..2 {
        ids.push(start(&gate).await);
    }
    let r = gate.call("nyxilum_repl_start", json!({})).await;
    let s = expect_error(&r, "SESSION_LIMIT");
    assert!(s["error"].as_str().unwrap().contains("at most 2 of the 5"), "{s}");
    let r = gate.call("nyxilum_repl_stop", json!({"session_id": ids[0]})).await;
    assert_eq!(crate::util::without_run_id(structured(&r)), json!({"success": true}));
    let r = gate.call("nyxilum_repl_stop", json!({"session_id": ids[0]})).await;
    assert_eq!(
        crate::util::without_run_id(structured(&r)),
        json!({"success": true, "alreadyGone": true})
    );
    start(&gate).await;
    let r = gate
        .call(
            "nyxilum_repl_eval",
            json!({"session_id": "nx-unknown", "code": "print(1)"}),
        )
        .await;
    let s = expect_error(&r, "SESSION_NOT_FOUND");
    assert!(s["error"].as_str().unwrap().contains("nx-unknown"), "{s}");
    gate.stop().await;
}

#[tokio::test]
async fn session_folders_are_removed_at_stop_and_at_exit() {
    let tmp = tempfile::tempdir().unwrap();
    let tmp_text = tmp.path().display().to_string();
    let gate = gate(&[("TMPDIR", &tmp_text)]).await;
    let one = start(&gate).await;
    start(&gate).await;
    assert_eq!(folders(tmp.path()), 2);
    gate.call("nyxilum_repl_stop", json!({"session_id": one})).await;
    assert_eq!(folders(tmp.path()), 1);
    gate.stop().await;
    assert_eq!(
        folders(tmp.path()),
        0,
        "the server's exit removed the last session's folder"
    );
}

#[tokio::test]
async fn sigterm_ends_every_session_and_removes_its_folder() {
    let tmp = tempfile::tempdir().unwrap();
    let tmp_text = tmp.path().display().to_string();
    let gate = gate(&[("TMPDIR", &tmp_text)]).await;
    start(&gate).await;
    assert_eq!(folders(tmp.path()), 1);
    let pid = gate.pid.expect("server pid") as i32;
    // SAFETY: signalling the server child this test started.
    assert_eq!(unsafe { libc::kill(pid, libc::SIGTERM) }, 0);
    gate.stop().await;
    assert_eq!(folders(tmp.path()), 0, "SIGTERM cleaned up like a closed stdin");
}
