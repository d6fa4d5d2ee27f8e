//! API keys and scopes on both HTTP faces: `toolgate keys new`, 401 without a known key,
//! 403 without the route's scope, and the refusal to serve a non-loopback address to
//! anonymous callers.

use std::path::Path;

use serde_json::{Value, json};

use crate::util::{CatalogueServer, command, fixtures};

/// Runs `toolgate keys new` for `scopes` into `file`; returns the printed key after
/// checking that stdout held it alone.
pub async fn new_key(file: &Path, scopes: &str, id: &str) -> String {
    let dir = tempfile::tempdir().unwrap();
    let out = command(dir.path(), &[])
        .args(["keys", "new", "--scopes", scopes, "--id", id, "--file"])
        .arg(file)
        .output()
        .await
        .unwrap();
    assert!(out.status.success(), "{}", String::from_utf8_lossy(&out.stderr));
    let stdout = String::from_utf8(out.stdout).unwrap();
    let lines: Vec<&str> = stdout.lines().collect();
    assert_eq!(lines.len(), 1, "the key alone: {stdout:?}");
    assert!(lines[0].starts_with("tg_") && lines[0].len() > 40, "{stdout}");
    lines[0].to_owned()
}

#[tokio::test]
async fn keys_new_appends_an_entry_holding_the_hash_and_never_the_key() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("keys.json");
    let first = new_key(&file, "run,search", "ci").await;
    let second = new_key(&file, "search", "reader").await;
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains(&first) && !text.contains(&second), "{text}");
    let doc: Value = serde_json::from_str(&text).unwrap();
    let ids: Vec<&Value> = doc["keys"].as_array().unwrap().iter().map(|k| &k["id"]).collect();
    assert_eq!(ids, [&json!("ci"), &json!("reader")]);
    assert_eq!(doc["keys"][0]["scopes"], json!(["run", "search"]));
    assert_eq!(doc["keys"][0]["sha256"].as_str().unwrap().len(), 64, "a SHA-256 in hex");
}

#[tokio::test]
async fn catalogue_serve_admits_keys_by_scope_and_refuses_the_rest() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("keys.json");
    let reader = new_key(&file, "search", "reader").await;
    let runner = new_key(&file, "run,search", "runner").await;
    let server = CatalogueServer::launch(
        &[fixtures().as_os_str()],
        &[("TOOLGATE_KEYS_FILE", file.to_str().unwrap())],
    )
    .await;
    let api = format!("{}/api", server.host);
    let http = reqwest::Client::new();
    let run = |key: Option<&str>| {
        let mut request = http
            .post(format!("{api}/tools/echo/run"))
            .json(&json!({"params": {"message": "m"}}));
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        request.send()
    };

    let anonymous = run(None).await.unwrap();
    assert_eq!(anonymous.status(), 401);
    assert!(
        anonymous.headers()["www-authenticate"]
            .to_str()
            .unwrap()
            .starts_with("Bearer")
    );
    let body: Value = anonymous.json().await.unwrap();
    assert_eq!(body["code"], "UNAUTHORIZED");
    assert_eq!(run(Some("tg_not-a-key")).await.unwrap().status(), 401);

    let listed = http
        .get(format!("{api}/tools"))
        .bearer_auth(&reader)
        .send()
        .await
        .unwrap();
    assert_eq!(listed.status(), 200);
    let forbidden = run(Some(&reader)).await.unwrap();
    assert_eq!(forbidden.status(), 403);
    let body: Value = forbidden.json().await.unwrap();
    assert_eq!(body["code"], "FORBIDDEN");
    assert!(body["error"].as_str().unwrap().contains("reader"), "{body}");
    assert!(!body.to_string().contains(&reader), "the key is never echoed");
    let source = http
        .get(format!("{api}/tools/echo/source"))
        .bearer_auth(&reader)
        .send()
        .await
        .unwrap();
    assert_eq!(source.status(), 403, "source is code to run: it needs run");

    let ran = run(Some(&runner)).await.unwrap();
    assert_eq!(ran.status(), 200);
    let body: Value = ran.json().await.unwrap();
    assert_eq!(body["success"], true);
    assert_eq!(http.get(format!("{api}/health")).send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn with_allow_anonymous_a_keyless_caller_runs_but_a_wrong_key_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("keys.json");
    new_key(&file, "search", "reader").await;
    let server = CatalogueServer::launch(
        &[fixtures().as_os_str(), "--allow-anonymous".as_ref()],
        &[("TOOLGATE_KEYS_FILE", file.to_str().unwrap())],
    )
    .await;
    let http = reqwest::Client::new();
    let url = format!("{}/api/tools/echo/run", server.host);
    let body = json!({"params": {"message": "m"}});
    assert_eq!(http.post(&url).json(&body).send().await.unwrap().status(), 200);
    let wrong = http
        .post(&url)
        .json(&body)
        .bearer_auth("tg_wrong")
        .send()
        .await
        .unwrap();
    assert_eq!(wrong.status(), 401);
}

#[tokio::test]
async fn mcp_over_http_needs_a_known_key_once_keys_are_configured() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("keys.json");
    let key = new_key(&file, "search", "agent").await;
    let gate = crate::http::HttpGate::start(&[("TOOLGATE_KEYS_FILE", file.to_str().unwrap())]).await;
    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}});
    let http = reqwest::Client::new();
    let send = |key: Option<&str>| {
        let mut request = http
            .post(&gate.url)
            .header("accept", "application/json, text/event-stream")
            .json(&init);
        if let Some(key) = key {
            request = request.bearer_auth(key);
        }
        request.send()
    };
    assert_eq!(send(None).await.unwrap().status(), 401);
    assert_eq!(send(Some("tg_wrong")).await.unwrap().status(), 401);
    assert_eq!(send(Some(&key)).await.unwrap().status(), 200);
    let base = gate.url.trim_end_matches("/mcp");
    assert_eq!(http.get(format!("{base}/healthz")).send().await.unwrap().status(), 200);
}

#[tokio::test]
async fn a_non_loopback_address_without_authentication_refuses_to_start() {
    let dir = tempfile::tempdir().unwrap();
    for args in [
        vec!["catalogue", "serve", "--listen", "0.0.0.0:0"],
        vec!["--http", "0.0.0.0:0"],
    ] {
        let out = command(dir.path(), &[]).args(&args).output().await.unwrap();
        assert_eq!(out.status.code(), Some(2), "{args:?}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(
            stderr.contains("without authentication") && stderr.contains("--allow-anonymous"),
            "{stderr}"
        );
    }
}
