//! The catalogue HTTP API: `toolgate catalogue serve` spoken to directly, and a gateway
//! using it (or a scripted API) as its catalogue: caching, outages, error mapping.

use std::sync::atomic::Ordering;

use serde_json::{Value, json};

use crate::util::{CatalogueServer, Gate, ScriptedApi, expect_error, expect_ok, fixtures, manifest, structured};

#[tokio::test]
async fn catalogue_serve_answers_the_documented_api() {
    let server = CatalogueServer::start(&fixtures()).await;
    let http = reqwest::Client::new();
    let api = format!("{}/api", server.host);

    let health: Value = http
        .get(format!("{api}/health"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(health["ok"], true);
    assert!(health["tools"].as_u64().unwrap() >= 10);

    let list = http.get(format!("{api}/tools")).send().await.unwrap();
    let etag = list.headers()["etag"].to_str().unwrap().to_owned();
    let body: Value = list.json().await.unwrap();
    let tools = body["tools"].as_array().unwrap();
    assert!(tools.iter().any(|t| t["slug"] == "echo"));
    assert!(
        tools.iter().all(|t| t.get("source").is_none()),
        "the list never carries code"
    );
    let cached = http
        .get(format!("{api}/tools"))
        .header("if-none-match", &etag)
        .send()
        .await
        .unwrap();
    assert_eq!(cached.status(), 304);

    let one: Value = http
        .get(format!("{api}/tools/echo"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(one["slug"], "echo");
    let missing = http.get(format!("{api}/tools/ecoh")).send().await.unwrap();
    assert_eq!(missing.status(), 404);
    let missing: Value = missing.json().await.unwrap();
    assert_eq!(missing["code"], "TOOL_NOT_FOUND");
    assert!(missing["candidates"].as_array().unwrap().contains(&json!("echo")));

    let source: Value = http
        .get(format!("{api}/tools/echo/source"))
        .send()
        .await
        .unwrap()
        .json()
        .await
        .unwrap();
    assert_eq!(source["runtime"], "javascript");
    assert!(source["source"].as_str().unwrap().contains("function run"));
    assert_eq!(
        http.get(format!("{api}/tools/no-source/source"))
            .send()
            .await
            .unwrap()
            .status(),
        404
    );

    let ran = http
        .post(format!("{api}/tools/echo/run"))
        .json(&json!({"params": {"message": "m"}}))
        .send()
        .await
        .unwrap();
    assert_eq!(ran.status(), 200);
    let ran: Value = ran.json().await.unwrap();
    assert_eq!(ran["success"], true);
    assert_eq!(ran["result"]["message"], "m");
    assert!(ran["duration_ms"].is_u64());

    let bad = http
        .post(format!("{api}/tools/echo/run"))
        .json(&json!({"params": {"message": 5}}))
        .send()
        .await
        .unwrap();
    assert_eq!(bad.status(), 400);
    assert_eq!(bad.json::<Value>().await.unwrap()["code"], "INVALID_PARAMS");
    let junk = http
        .post(format!("{api}/tools/echo/run"))
        .body("{not json")
        .send()
        .await
        .unwrap();
    assert_eq!(junk.status(), 400);
    let thrown = http
        .post(format!("{api}/tools/throws/run"))
        .json(&json!({"params": {}}))
        .send()
        .await
        .unwrap();
    assert_eq!(thrown.status(), 422);
    assert_eq!(thrown.json::<Value>().await.unwrap()["code"], "EXECUTION_ERROR");
}

#[tokio::test]
async fn a_gateway_uses_a_served_catalogue() {
    let server = CatalogueServer::start(&fixtures()).await;
    let gate = Gate::start(&[("TOOLGATE_API_URL", &server.host)]).await;
    let names = gate.names().await;
    assert!(
        names.contains(&"echo".to_owned()) && !names.contains(&"env-validator".to_owned()),
        "{names:?}"
    );
    let r = gate.call("echo", json!({"message": "over http"})).await;
    assert_eq!(expect_ok(&r)["message"], "over http");
    assert_eq!(
        structured(&r)["stdout"],
        "echoing over http\n",
        "the API returns captured output too"
    );
    let r = gate.meta(json!({"command": "run", "slug": "throws"})).await;
    assert!(
        expect_error(&r, "EXECUTION_ERROR")["error"]
            .as_str()
            .unwrap()
            .contains("boom")
    );
    let r = gate.call("echo", json!({"message": ""})).await;
    expect_error(&r, "INVALID_PARAMS");
    gate.stop().await;
}

/// A port nothing listens on.
async fn closed_port() -> String {
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    drop(listener);
    format!("http://{addr}/api")
}

#[tokio::test]
async fn an_api_down_at_start_leaves_a_server_that_explains_itself() {
    let url = closed_port().await;
    let gate = Gate::start(&[("TOOLGATE_CATALOGUE", &url)]).await;
    assert_eq!(gate.names().await, vec!["toolgate"]);
    for r in [
        gate.meta(json!({"command": "list"})).await,
        gate.call("env-validator", json!({})).await,
    ] {
        let s = expect_error(&r, "API_UNREACHABLE");
        assert_eq!(s["retryable"], true);
        assert!(s["error"].as_str().unwrap().contains("127.0.0.1"));
    }
    gate.stop().await;
}

#[tokio::test]
async fn an_api_dying_mid_session_keeps_the_last_good_catalogue() {
    let mut server = CatalogueServer::start(&fixtures()).await;
    let gate = Gate::start(&[("TOOLGATE_API_URL", &server.host), ("TOOLGATE_CACHE_TTL_MS", "0")]).await;
    let before = gate.names().await;
    assert!(before.contains(&"echo".to_owned()));
    server.kill().await;
    assert_eq!(gate.names().await, before, "the last good list is kept");
    let r = gate.call("echo", json!({"message": "x"})).await;
    expect_error(&r, "API_UNREACHABLE");
    let stderr = gate.stop().await;
    assert!(stderr.contains("last good catalogue"), "{stderr}");
}

#[tokio::test]
async fn ttl_zero_fetches_every_time_and_a_ttl_caches() {
    // One API per gateway: the TTL-0 gateway also polls in the background, so its
    // fetches are counted apart from the cached gateway's.
    let fresh_api = ScriptedApi::start(vec![manifest("alpha", false)]).await;
    let cached_api = ScriptedApi::start(vec![manifest("alpha", false)]).await;
    let fresh = Gate::start(&[("TOOLGATE_API_URL", &fresh_api.host), ("TOOLGATE_CACHE_TTL_MS", "0")]).await;
    let cached = Gate::start(&[("TOOLGATE_API_URL", &format!("{}/api", cached_api.host))]).await;
    assert!(fresh.names().await.contains(&"alpha".to_owned()));
    assert!(cached.names().await.contains(&"alpha".to_owned()));
    assert_eq!(cached_api.list_hits.load(Ordering::SeqCst), 1);
    for api in [&fresh_api, &cached_api] {
        api.tools.lock().unwrap().push(manifest("beta", false));
    }
    assert!(
        fresh.names().await.contains(&"beta".to_owned()),
        "TTL 0 sees the change at once"
    );
    assert!(
        !cached.names().await.contains(&"beta".to_owned()),
        "a 60 s TTL keeps its copy"
    );
    assert_eq!(
        cached_api.list_hits.load(Ordering::SeqCst),
        1,
        "the cached gateway fetched once"
    );
    fresh.stop().await;
    cached.stop().await;
}

#[tokio::test]
async fn api_failures_map_to_stable_codes() {
    let tools = ["rate-limited", "server-error", "forbidden", "slow"]
        .map(|s| manifest(s, false))
        .to_vec();
    let api = ScriptedApi::start(tools).await;
    let gate = Gate::start(&[
        ("TOOLGATE_API_URL", &api.host),
        ("TOOLGATE_TIMEOUT_MS", "300"),
        ("TOOLGATE_API_KEY", "k-123"),
    ])
    .await;
    let s = expect_error(&gate.call("rate-limited", json!({})).await, "RATE_LIMITED").clone();
    assert_eq!(s["retryable"], true);
    assert_eq!(s["retry_after_ms"], 7000);
    assert_eq!(
        expect_error(&gate.call("server-error", json!({})).await, "API_ERROR")["retryable"],
        true
    );
    assert_eq!(
        expect_error(&gate.call("forbidden", json!({})).await, "UNAUTHORIZED")["retryable"],
        false
    );
    assert_eq!(
        expect_error(&gate.call("slow", json!({})).await, "TIMEOUT")["retryable"],
        true
    );
    assert!(api.auth.lock().unwrap().iter().all(|a| a == "Bearer k-123"));
    assert!(!api.auth.lock().unwrap().is_empty());
    let stderr = gate.stop().await;
    assert!(!stderr.contains("k-123"), "the key never reaches the logs");
}

#[tokio::test]
async fn a_changed_http_catalogue_is_announced_and_an_unchanged_one_never() {
    let api = ScriptedApi::start(vec![manifest("alpha", false)]).await;
    let env = [("TOOLGATE_API_URL", api.host.as_str()), ("TOOLGATE_CACHE_TTL_MS", "0")];
    // Unchanged: several lists and calls, and no list_changed anywhere on stdout.
    let list = json!({"method": "tools/list"});
    let call = json!({"method": "tools/call", "params": {"name": "alpha", "arguments": {"n": 1}}});
    let (lines, _) = crate::util::raw_exchange(&env, &[list.clone(), call, list.clone(), list]).await;
    assert!(
        !lines
            .iter()
            .any(|l| l["method"].as_str().is_some_and(|m| m.ends_with("list_changed"))),
        "{lines:?}"
    );

    // Changed: the client is told without asking, and the new list has the new tool.
    let mut gate = Gate::start(&env).await;
    assert!(gate.names().await.contains(&"alpha".to_owned()));
    api.tools.lock().unwrap().push(manifest("beta", false));
    tokio::time::timeout(std::time::Duration::from_secs(30), gate.changes.recv())
        .await
        .expect("list_changed arrives")
        .unwrap();
    assert!(gate.names().await.contains(&"beta".to_owned()));
    gate.stop().await;
}

#[tokio::test]
async fn a_missing_runtime_through_catalogue_serve_is_runtime_unavailable_and_names_no_server_path() {
    // The embedded catalogue's nyxilum tools, served where NyxilumNode is not installed.
    let root = tempfile::tempdir().unwrap();
    let root_text = root.path().join("NyxilumLang").display().to_string();
    let embedded = std::ffi::OsStr::new("embedded");
    let server = CatalogueServer::launch(&[embedded], &[("NX_ECOSYSTEM_ROOT", &root_text)]).await;

    let answer = reqwest::Client::new()
        .post(format!("{}/api/tools/nyxilum-fizzbuzz/run", server.host))
        .json(&json!({"params": {"n": 3}}))
        .send()
        .await
        .unwrap();
    let status = answer.status().as_u16();
    assert!(
        (400..500).contains(&status) && status != 429,
        "not a retryable status: {status}"
    );
    let body: Value = answer.json().await.unwrap();
    assert_eq!(body["code"], "RUNTIME_UNAVAILABLE", "{body}");
    assert_eq!(body["retryable"], false, "{body}");
    assert_eq!(body["runtime"], "nyxilum", "{body}");
    assert!(!body.to_string().contains(&root_text), "no server path: {body}");

    let gate = Gate::start(&[("TOOLGATE_API_URL", &server.host)]).await;
    let r = gate.call("nyxilum-fizzbuzz", json!({"n": 3})).await;
    let s = expect_error(&r, "RUNTIME_UNAVAILABLE");
    assert_eq!(s["retryable"], false, "{s}");
    let error = s["error"].as_str().unwrap();
    assert!(error.contains("The nyxilum runtime is not available"), "{error}");
    assert!(!error.contains(&root_text), "no server path: {error}");
    gate.stop().await;
}
