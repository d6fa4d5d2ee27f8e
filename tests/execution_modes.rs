//! `TOOLGATE_EXECUTION`: where code from an HTTP catalogue runs. The scripted API's run
//! answers `{"ran":"remote"}` and its source answers `{"ran":"local"}`, so each answer
//! shows which path was taken.

use std::sync::atomic::Ordering;

use serde_json::json;

use crate::util::{Gate, ScriptedApi, expect_error, expect_ok, manifest};

const WARNING: &str = "local execution is ON";

async fn setup(mode: &str) -> (ScriptedApi, Gate) {
    let api = ScriptedApi::start(vec![manifest("with-source", true), manifest("remote-only", false)]).await;
    let gate = Gate::start(&[("TOOLGATE_API_URL", &api.host), ("TOOLGATE_EXECUTION", mode)]).await;
    (api, gate)
}

async fn ran(gate: &Gate, slug: &str) -> String {
    let r = gate.call(slug, json!({"n": 1})).await;
    expect_ok(&r)["ran"].as_str().unwrap().to_owned()
}

#[tokio::test]
async fn remote_never_fetches_source() {
    let (api, gate) = setup("remote").await;
    assert_eq!(ran(&gate, "with-source").await, "remote");
    assert_eq!(ran(&gate, "remote-only").await, "remote");
    assert_eq!(api.run_hits.load(Ordering::SeqCst), 2);
    assert!(!gate.stop().await.contains(WARNING));
}

#[tokio::test]
async fn local_runs_here_and_refuses_tools_without_source() {
    let (api, gate) = setup("local").await;
    assert_eq!(ran(&gate, "with-source").await, "local");
    let r = gate.call("remote-only", json!({})).await;
    expect_error(&r, "NO_SOURCE");
    assert_eq!(api.run_hits.load(Ordering::SeqCst), 0);
    let stderr = gate.stop().await;
    assert_eq!(stderr.matches(WARNING).count(), 1, "{stderr}");
}

#[tokio::test]
async fn auto_runs_here_when_it_can_and_falls_back_to_the_api() {
    let (api, gate) = setup("auto").await;
    assert_eq!(ran(&gate, "with-source").await, "local");
    assert_eq!(ran(&gate, "remote-only").await, "remote");
    assert_eq!(api.run_hits.load(Ordering::SeqCst), 1);
    let stderr = gate.stop().await;
    assert_eq!(stderr.matches(WARNING).count(), 1, "{stderr}");
}

#[tokio::test]
async fn a_typo_falls_back_to_remote_with_a_note() {
    let (_api, gate) = setup("lcoal").await;
    assert_eq!(ran(&gate, "with-source").await, "remote");
    let stderr = gate.stop().await;
    assert!(
        stderr.contains("\"lcoal\"") && stderr.contains("using remote"),
        "{stderr}"
    );
    assert!(!stderr.contains(WARNING));
}

#[tokio::test]
async fn the_embedded_catalogue_always_runs_locally() {
    let gate = Gate::start(&[("TOOLGATE_EXECUTION", "remote")]).await;
    let r = gate.call("slugify", json!({"text": "Déjà vu"})).await;
    assert_eq!(expect_ok(&r)["slug"], "deja-vu");
    assert!(!gate.stop().await.contains(WARNING));
}

#[tokio::test]
async fn an_api_answer_is_held_to_the_limits_of_a_local_run() {
    let api = ScriptedApi::start(vec![manifest("huge", false), manifest("chatty", false)]).await;
    let gate = Gate::start(&[("TOOLGATE_API_URL", &api.host), ("TOOLGATE_RESULT_CHARS", "2048")]).await;
    let r = gate.call("huge", json!({})).await;
    let s = expect_error(&r, "RESOURCE_LIMIT");
    assert!(s["error"].as_str().unwrap().contains("2048 characters"), "{s}");
    let r = gate.call("chatty", json!({})).await;
    assert_eq!(expect_ok(&r)["ran"], "remote");
    let s = crate::util::structured(&r);
    assert_eq!(
        s["stdout"].as_str().unwrap().chars().count(),
        262_144,
        "cut at the output cap"
    );
    assert_eq!(s["truncated"], true, "{}", s["truncated"]);
    assert_eq!(s["stderr"], "z");
    gate.stop().await;
}
