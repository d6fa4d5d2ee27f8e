//! Hostile inputs against the run history: what a caller sends is recorded at a bounded
//! cost whatever it is. A call refused before it ran (rate, scope) keeps its code and
//! size only; an input with more secret values (or values) than history checks keeps no
//! text, with a note saying why; an echoed payload is stored cut at the cap with every
//! secret masked; and the principal's rate is checked before anything of the call is
//! read (a batch item, the catalogue API's body). Another session's `ping` answers
//! meanwhile. Speed itself is measured by the benches, not here.

use std::path::Path;

use serde_json::{Value, json};

use crate::access::new_key;
use crate::http::{HttpGate, Session};
use crate::util::{CatalogueServer, Gate, expect_ok, structured};

/// A catalogue with `mirror` (returns its params), `strict` (one string field, nothing
/// else allowed, as `base64-codec`) and `plain` (any params; returns a constant).
fn catalogue() -> tempfile::TempDir {
    let dir = tempfile::tempdir().unwrap();
    let tools = [
        ("mirror", json!({"type": "object"}), "function run(p) { return p; }"),
        (
            "strict",
            json!({"type": "object", "properties": {"input": {"type": "string"}}, "required": ["input"], "additionalProperties": false}),
            "function run(p) { return { n: p.input.length }; }",
        ),
        (
            "plain",
            json!({"type": "object"}),
            "function run(p) { return { ok: true }; }",
        ),
    ];
    for (slug, schema, code) in tools {
        let folder = dir.path().join(slug);
        std::fs::create_dir(&folder).unwrap();
        let manifest = json!({"slug": slug, "name": slug, "description": "A test fixture.",
                              "input_schema": schema, "runtime": "javascript", "source": "index.js"});
        std::fs::write(folder.join("tool.json"), manifest.to_string()).unwrap();
        std::fs::write(folder.join("index.js"), code).unwrap();
    }
    dir
}

/// `count` distinct short strings, each one a secret under a secret-named key.
fn distinct(count: usize) -> Vec<String> {
    (0..count).map(|i| format!("s{i:07}")).collect()
}

/// The newest run of `session`'s history, shown whole.
async fn newest(session: &mut Session) -> Value {
    let shown = session
        .call("toolgate", json!({"command": "history", "show": "-1"}))
        .await;
    shown["run"].clone()
}

/// Sets `per_minute` of every key in the keys file at `file`.
fn set_rate(file: &Path, per_minute: u32) {
    let mut doc: Value = serde_json::from_str(&std::fs::read_to_string(file).unwrap()).unwrap();
    for key in doc["keys"].as_array_mut().unwrap() {
        key["per_minute"] = json!(per_minute);
    }
    std::fs::write(file, doc.to_string()).unwrap();
}

#[tokio::test]
async fn a_call_of_distinct_secret_strings_keeps_a_note_not_its_text_while_another_session_pings() {
    let dir = catalogue();
    let gate = HttpGate::start(&[("TOOLGATE_CATALOGUE", dir.path().to_str().unwrap())]).await;
    let mut hostile = Session::open(&gate.url).await;
    let mut other = Session::open(&gate.url).await;
    // Refused by the schema (`password` is not allowed), as the base64-codec attack was.
    let args = json!({"input": "aGk=", "password": distinct(99_000)});
    let (answer, pings) = tokio::join!(hostile.call("strict", args), async {
        let mut answered = 0;
        for _ in 0..3 {
            answered += usize::from(other.request("ping", json!({})).await.get("result").is_some());
        }
        answered
    });
    assert_eq!(answer["code"], "INVALID_PARAMS", "{answer}");
    assert_eq!(pings, 3);
    let run = newest(&mut hostile).await;
    assert_eq!(run["status"], "INVALID_PARAMS", "{run}");
    let note = run["input"]["not_kept"].as_str().unwrap_or_default();
    assert!(note.contains("distinct secret values"), "{run}");
    assert_eq!(run["input"]["input_bytes_over"], 65_536, "{run}");
    assert_eq!(run["truncated"], true);
    assert!(!run.to_string().contains("s0000001"), "{run}");
    assert_eq!(other.request("ping", json!({})).await["result"], json!({}));
    // A small invalid call keeps its input, redacted: what was sent is worth seeing.
    let answer = hostile
        .call("strict", json!({"input": 5, "api_key": "sk-live-0123456789"}))
        .await;
    assert_eq!(answer["code"], "INVALID_PARAMS", "{answer}");
    let run = newest(&mut hostile).await;
    assert_eq!(run["input"], json!({"input": 5, "api_key": "******"}), "{run}");
    assert_eq!(run["truncated"], false);
}

#[tokio::test]
async fn distinct_secret_numbers_and_deep_nesting_are_recorded_bounded_and_masked() {
    let dir = catalogue();
    let gate = Gate::start(&[("TOOLGATE_CATALOGUE", dir.path().to_str().unwrap())]).await;
    let numbers: Vec<u64> = (0..99_000).map(|i| 90_000_000 + i).collect();
    expect_ok(&gate.call("plain", json!({"pin_token": numbers})).await);
    let shown = gate.meta(json!({"command": "history", "show": "-1"})).await;
    let run = &structured(&shown)["run"];
    assert!(
        run["input"]["not_kept"]
            .as_str()
            .unwrap_or_default()
            .contains("secret values"),
        "{run}"
    );
    assert!(!run.to_string().contains("90000001"), "{run}");

    // Fifty-six levels (under the message limit of 64), a secret near the top and one
    // far below the walk.
    let mut deep = json!({"session_token": "deep-secret-0123456789", "x": 1});
    for _ in 0..28 {
        deep = json!({"a": [deep]});
    }
    let args = json!({"auth": "top-secret-0123456789", "note": "top-secret-0123456789 again", "tree": deep});
    expect_ok(&gate.call("mirror", args).await);
    let shown = gate.meta(json!({"command": "history", "show": "-1"})).await;
    let run = &structured(&shown)["run"];
    let stored = run.to_string();
    assert!(
        !stored.contains("top-secret") && !stored.contains("deep-secret"),
        "{stored}"
    );
    assert_eq!(run["input"]["auth"], "******", "{run}");
    assert_eq!(run["input"]["note"], "****** again", "{run}");
    assert!(stored.contains("[deep]"), "{stored}");
    gate.stop().await;
}

#[tokio::test]
async fn a_huge_echoed_result_is_stored_cut_and_masked_or_not_at_all() {
    let dir = catalogue();
    let gate = Gate::start(&[("TOOLGATE_CATALOGUE", dir.path().to_str().unwrap())]).await;
    let secret = "sk-live-0123456789abcdef";
    let text = format!("{secret} said ").repeat(6_000);
    expect_ok(&gate.call("mirror", json!({"api_key": secret, "text": text})).await);
    let shown = gate.meta(json!({"command": "history", "show": "-1"})).await;
    let run = &structured(&shown)["run"];
    assert_eq!(run["truncated"], true);
    for payload in ["input", "result"] {
        let stored = run[payload].as_str().expect("a cut payload is its text");
        assert!(stored.chars().count() <= 8_000, "{payload}");
        assert!(!stored.contains("sk-live"), "{payload}: {stored}");
        assert!(stored.contains("****** said"), "{payload}");
    }
    // Echoing more secret values than history checks for: no text of the run is kept.
    let tokens = distinct(5_000);
    expect_ok(&gate.call("mirror", json!({"tokens": tokens, "text": text})).await);
    let shown = gate.meta(json!({"command": "history", "show": "-1"})).await;
    let run = &structured(&shown)["run"];
    assert!(run["result"]["not_kept"].is_string(), "{run}");
    assert!(!run.to_string().contains("s0000001") && !run.to_string().contains("sk-live"));
    gate.stop().await;
}

#[tokio::test]
async fn a_rate_limited_or_forbidden_call_keeps_its_code_and_size_only() {
    let dir = catalogue();
    let keys = tempfile::tempdir().unwrap();
    let file = keys.path().join("keys.json");
    let key = new_key(&file, "run,search", "limited").await;
    set_rate(&file, 1);
    let gate = HttpGate::start(&[
        ("TOOLGATE_CATALOGUE", dir.path().to_str().unwrap()),
        ("TOOLGATE_KEYS_FILE", file.to_str().unwrap()),
        ("TOOLGATE_RUNTIMES", "js"),
    ])
    .await;
    let mut session = Session::open_keyed(&gate.url, &key).await;
    assert_eq!(session.call("plain", json!({})).await["success"], true);
    let args = json!({"password": distinct(20_000), "text": "plain words"});
    let size = args.to_string().len();
    let refused = session.call("plain", args).await;
    assert_eq!(refused["code"], "RATE_LIMITED", "{refused}");
    let run = newest(&mut session).await;
    assert_eq!(run["status"], "RATE_LIMITED");
    let note = run["input"]["not_kept"].as_str().unwrap_or_default();
    assert!(note.contains("refused before it ran (RATE_LIMITED)"), "{run}");
    assert!(
        run["input"]["input_bytes_over"] == 65_536 || run["input"]["input_bytes"] == size,
        "{run}"
    );
    assert!(!run.to_string().contains("plain words") && !run.to_string().contains("s0000001"));

    // No `runtimes` scope: a JavaScript snippet is refused, and kept as its size.
    let code = format!("return '{}';", "x".repeat(500));
    let forbidden = session.call("run_javascript", json!({"code": code})).await;
    assert_eq!(forbidden["code"], "FORBIDDEN", "{forbidden}");
    let run = newest(&mut session).await;
    assert_eq!(run["status"], "FORBIDDEN");
    let expected = json!({"code": code}).to_string().len();
    assert_eq!(run["input"]["input_bytes"], expected, "{run}");
    assert!(!run.to_string().contains("xxxx"), "{run}");
}

#[tokio::test]
async fn a_batch_item_past_the_rate_fails_alone_without_being_validated() {
    let dir = catalogue();
    let keys = tempfile::tempdir().unwrap();
    let file = keys.path().join("keys.json");
    let key = new_key(&file, "run,search", "batcher").await;
    set_rate(&file, 1);
    let gate = HttpGate::start(&[
        ("TOOLGATE_CATALOGUE", dir.path().to_str().unwrap()),
        ("TOOLGATE_KEYS_FILE", file.to_str().unwrap()),
    ])
    .await;
    let mut session = Session::open_keyed(&gate.url, &key).await;
    // The second item breaks the schema, but the caller's one run a minute is spent by
    // the first: it is refused by the rate before its params are read.
    let runs = json!([
        {"slug": "strict", "params": {"input": "ok"}},
        {"slug": "strict", "params": {"input": "ok", "password": distinct(1_000)}},
    ]);
    let answer = session
        .call("toolgate", json!({"command": "batch", "runs": runs}))
        .await;
    assert_eq!(answer["failed"], 1, "{answer}");
    assert_eq!(answer["results"][0]["success"], true, "{answer}");
    assert_eq!(answer["results"][1]["code"], "RATE_LIMITED", "{answer}");
}

#[tokio::test]
async fn catalogue_serve_refuses_a_run_past_the_rate_before_it_reads_the_body() {
    let dir = catalogue();
    let server = CatalogueServer::launch(&[dir.path().as_os_str()], &[("TOOLGATE_ANONYMOUS_PER_MINUTE", "1")]).await;
    let http = reqwest::Client::new();
    let url = format!("{}/api/tools/plain/run", server.host);
    let ok = http.post(&url).json(&json!({"params": {}})).send().await.unwrap();
    assert_eq!(ok.status(), 200);
    // Not even JSON: past the rate, the answer is 429, not a complaint about the body.
    let garbage = format!("{{\"params\": {}", "[".repeat(100_000));
    let refused = http.post(&url).body(garbage).send().await.unwrap();
    assert_eq!(refused.status(), 429);
    let body: Value = refused.json().await.unwrap();
    assert_eq!(body["code"], "RATE_LIMITED", "{body}");
    let health = http.get(format!("{}/api/health", server.host)).send().await.unwrap();
    assert_eq!(health.status(), 200);
}
