//! HTTP state no caller can exhaust, through the real `--http` server and `catalogue
//! serve`: sessions counted where they are made whatever header they carry, capped per
//! principal, owned from `initialize` for every method; bodies read within a time rule
//! and checked before parsing; metric labels from a fixed set; `/metrics` behind a
//! loopback Host; reserved key ids refused.

use std::time::Duration;

use serde_json::{Value, json};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::access::new_key;
use crate::http::{HttpGate, Session, post};
use crate::util::{CatalogueServer, fixtures};

/// An `initialize` request.
fn initialize() -> Value {
    json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "hostile", "version": "1"}
    }})
}

/// POSTs `body` to `url` with `Mcp-Session-Id` set to the raw bytes `session`.
async fn post_raw_session(http: &reqwest::Client, url: &str, session: &[u8], body: &Value) -> reqwest::Response {
    http.post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .header(
            "mcp-session-id",
            reqwest::header::HeaderValue::from_bytes(session).unwrap(),
        )
        .json(body)
        .send()
        .await
        .unwrap()
}

#[tokio::test]
async fn a_session_id_that_is_not_visible_ascii_makes_no_session_and_the_cap_holds() {
    let gate = HttpGate::start(&[
        ("TOOLGATE_HTTP_MAX_SESSIONS", "3"),
        ("TOOLGATE_HTTP_MAX_SESSIONS_PER_PRINCIPAL", "3"),
    ])
    .await;
    let http = reqwest::Client::new();
    // rmcp read such values as absent and made a session for each: 10,000 took 734 MB.
    for value in [&b"\xc3\xa9"[..], b"\xff\xfe", b"id\x80with", b"caf\xc3\xa9-1"] {
        for _ in 0..5 {
            let answer = post_raw_session(&http, &gate.url, value, &initialize()).await;
            assert_eq!(answer.status(), 400, "{value:?}: {answer:?}");
        }
    }
    // A readable id the server never gave names no session, and makes none.
    for _ in 0..5 {
        let answer = post_raw_session(&http, &gate.url, b"a\tb", &initialize()).await;
        assert_eq!(answer.status(), 404, "{answer:?}");
    }
    let mut open = Vec::new();
    for _ in 0..3 {
        open.push(Session::open(&gate.url).await);
    }
    let over = post(&http, &gate.url, None, &initialize()).await;
    assert_eq!(over.status(), 503, "{over:?}");
    assert!(over.headers().contains_key("retry-after"));
}

#[tokio::test]
async fn one_principal_cannot_fill_the_sessions_and_stateless_requests_are_not_sessions() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("keys.json");
    let greedy = new_key(&file, "run,search", "greedy").await;
    let other = new_key(&file, "run,search", "other").await;
    let gate = HttpGate::start(&[
        ("TOOLGATE_KEYS_FILE", file.to_str().unwrap()),
        ("TOOLGATE_HTTP_MAX_SESSIONS", "4"),
        ("TOOLGATE_HTTP_MAX_SESSIONS_PER_PRINCIPAL", "2"),
    ])
    .await;
    let keyed = |key: &str| {
        let mut headers = reqwest::header::HeaderMap::new();
        headers.insert("authorization", format!("Bearer {key}").parse().unwrap());
        reqwest::Client::builder().default_headers(headers).build().unwrap()
    };
    let greedy_http = keyed(&greedy);
    let _first = Session::open_keyed(&gate.url, &greedy).await;
    let _second = Session::open_keyed(&gate.url, &greedy).await;
    let third = post(&greedy_http, &gate.url, None, &initialize()).await;
    assert_eq!(third.status(), 503, "{third:?}");
    assert!(third.text().await.unwrap().contains("of one caller"));
    // Another principal still gets one.
    let mut theirs = Session::open_keyed(&gate.url, &other).await;
    assert!(theirs.request("ping", json!({})).await["result"].is_object());
    // A stateless request holds no session, so the greedy caller is still served.
    let stateless = greedy_http
        .post(&gate.url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2026-07-28")
        .header("mcp-method", "tools/list")
        .json(&json!({"jsonrpc": "2.0", "id": 9, "method": "tools/list", "params": {
            "_meta": {
                "io.modelcontextprotocol/protocolVersion": "2026-07-28",
                "io.modelcontextprotocol/clientCapabilities": {},
                "io.modelcontextprotocol/clientInfo": {"name": "hostile", "version": "1"}
            }
        }}))
        .send()
        .await
        .unwrap();
    let status = stateless.status();
    let text = stateless.text().await.unwrap();
    assert_eq!(status, 200, "{text}");
    assert!(text.contains("toolgate"), "{text}");
}

#[tokio::test]
async fn a_session_answers_only_its_principal_for_every_method() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("keys.json");
    let alice = new_key(&file, "run,search", "alice").await;
    let bob = new_key(&file, "run,search", "bob").await;
    let gate = HttpGate::start(&[("TOOLGATE_KEYS_FILE", file.to_str().unwrap())]).await;
    let mut hers = Session::open_keyed(&gate.url, &alice).await;
    let mut his = Session::open_keyed(&gate.url, &bob).await;
    his.id = hers.id.clone();
    // Bob presents Alice's session id for methods the handler alone did not guard.
    for (method, params) in [
        ("tools/list", json!({})),
        ("logging/setLevel", json!({"level": "debug"})),
        ("resources/unsubscribe", json!({"uri": "toolgate://history"})),
        (
            "tools/call",
            json!({"name": "toolgate", "arguments": {"command": "history"}}),
        ),
    ] {
        let message = json!({"jsonrpc": "2.0", "id": 5, "method": method, "params": params});
        let answer = post(&his.http, &gate.url, Some(&hers.id), &message).await;
        assert_eq!(answer.status(), 403, "{method}: {answer:?}");
    }
    let stream = his
        .http
        .get(&gate.url)
        .header("accept", "text/event-stream")
        .header("mcp-session-id", &hers.id)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(stream.status(), 403, "GET: {stream:?}");
    let delete = his
        .http
        .delete(&gate.url)
        .header("mcp-session-id", &hers.id)
        .header("mcp-protocol-version", "2025-11-25")
        .send()
        .await
        .unwrap();
    assert_eq!(delete.status(), 403, "DELETE: {delete:?}");
    // Alice's session is untouched.
    assert!(hers.request("ping", json!({})).await["result"].is_object());
}

#[tokio::test]
async fn a_body_dripped_slowly_is_timed_out_on_both_servers() {
    let gate = HttpGate::start(&[("TOOLGATE_HTTP_BODY_TIMEOUT_MS", "300")]).await;
    let api = CatalogueServer::launch(&[fixtures().as_os_str()], &[("TOOLGATE_HTTP_BODY_TIMEOUT_MS", "300")]).await;
    for (url, path) in [(gate.url.clone(), "/mcp"), (api.host.clone(), "/api/tools/echo/run")] {
        let address = url.trim_start_matches("http://").split('/').next().unwrap().to_owned();
        let mut tcp = tokio::net::TcpStream::connect(&address).await.unwrap();
        let head = format!(
            "POST {path} HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\naccept: application/json, text/event-stream\r\ncontent-length: 100\r\n\r\n{{"
        );
        tcp.write_all(head.as_bytes()).await.unwrap();
        // One byte sent, 99 promised: the server answers once the grace has passed.
        let mut answer = vec![0u8; 512];
        let read = tokio::time::timeout(Duration::from_secs(20), tcp.read(&mut answer))
            .await
            .unwrap_or_else(|_| panic!("{path}: the server still waits for the body"))
            .unwrap();
        let answer = String::from_utf8_lossy(&answer[..read]);
        assert!(answer.starts_with("HTTP/1.1 408"), "{path}: {answer}");
    }
}

#[tokio::test]
async fn a_body_too_deep_or_too_full_is_refused_before_it_is_parsed() {
    let gate = HttpGate::start(&[]).await;
    let http = reqwest::Client::new();
    for body in [
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"a":{}{}}}}}"#,
            "[".repeat(100),
            "]".repeat(100)
        ),
        format!(
            r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"a":[{}{{}}]}}}}"#,
            "{},".repeat(1_000_000)
        ),
    ] {
        let answer = http
            .post(&gate.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 413, "{answer:?}");
        let text = answer.text().await.unwrap();
        assert!(text.contains("refused unparsed"), "{text}");
    }
    // Declared over the cap: answered at once, the body never read.
    let address = gate
        .url
        .trim_start_matches("http://")
        .split('/')
        .next()
        .unwrap()
        .to_owned();
    let mut tcp = tokio::net::TcpStream::connect(&address).await.unwrap();
    let head = format!(
        "POST /mcp HTTP/1.1\r\nhost: {address}\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n",
        toolgate::limits::HTTP_BODY_BYTES + 1
    );
    tcp.write_all(head.as_bytes()).await.unwrap();
    let mut answer = vec![0u8; 512];
    let read = tokio::time::timeout(Duration::from_secs(20), tcp.read(&mut answer))
        .await
        .unwrap()
        .unwrap();
    assert!(String::from_utf8_lossy(&answer[..read]).starts_with("HTTP/1.1 413"));
    // The server is still there.
    let mut session = Session::open(&gate.url).await;
    assert!(session.request("ping", json!({})).await["result"].is_object());
}

#[tokio::test]
async fn only_tool_calls_and_responses_may_carry_a_large_body() {
    let gate = HttpGate::start(&[]).await;
    let mut session = Session::open(&gate.url).await;
    // 30,000 empty objects (~90 KB): within the value limit, past the light size. Parsed,
    // a ping like this was dropped on a request thread; now it is refused unparsed.
    let many = format!("[{}{{}}]", "{},".repeat(30_000));
    for (method, id) in [
        ("ping", ",\"id\":1"),
        ("resources/list", ",\"id\":2"),
        ("notifications/roots/list_changed", ""),
    ] {
        let body = format!(r#"{{"jsonrpc":"2.0"{id},"method":"{method}","params":{{"pad":{many}}}}}"#);
        assert!(body.len() > toolgate::limits::HTTP_HEAVY_BODY_BYTES);
        let answer = session
            .http
            .post(&gate.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .header("mcp-session-id", &session.id)
            .body(body)
            .send()
            .await
            .unwrap();
        assert_eq!(answer.status(), 413, "{method}: {answer:?}");
        let text = answer.text().await.unwrap();
        assert!(
            text.contains(&format!("a `{method}` message may be at most 65,536 bytes")),
            "{text}"
        );
    }
    // A tool call as large passes, and so does the session.
    let input = "x".repeat(100_000);
    let answer = session
        .request(
            "tools/call",
            json!({"name": "base64-codec", "arguments": {"input": input, "mode": "encode"}}),
        )
        .await;
    assert_eq!(
        answer["result"]["isError"],
        false,
        "{}",
        &answer.to_string()[..300.min(answer.to_string().len())]
    );
    assert!(session.request("ping", json!({})).await["result"].is_object());
}

#[tokio::test]
async fn made_up_methods_and_paths_add_no_metric_series() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("keys.json");
    let admin = new_key(&file, "admin", "ops").await;
    let gate = HttpGate::start(&[("TOOLGATE_KEYS_FILE", file.to_str().unwrap())]).await;
    let api = CatalogueServer::launch(
        &[fixtures().as_os_str()],
        &[("TOOLGATE_KEYS_FILE", file.to_str().unwrap())],
    )
    .await;
    let http = reqwest::Client::new();
    for (base, metrics) in [
        (gate.url.clone(), gate.url.replace("/mcp", "/metrics")),
        (api.host.clone(), format!("{}/metrics", api.host)),
    ] {
        let mut rounds: Vec<std::collections::BTreeSet<String>> = Vec::new();
        for batch in 0..3 {
            for n in 0..100 {
                let method = format!("MADEUP{batch}X{n}");
                let method = reqwest::Method::from_bytes(method.as_bytes()).unwrap();
                let answer = http
                    .request(method, format!("{base}/x{batch}y{n}"))
                    .send()
                    .await
                    .unwrap();
                assert!(answer.status().is_client_error(), "{answer:?}");
            }
            let text = http
                .get(&metrics)
                .bearer_auth(&admin)
                .send()
                .await
                .unwrap()
                .text()
                .await
                .unwrap();
            assert!(!text.contains("MADEUP") && !text.contains("/x1"), "{text}");
            assert!(text.contains(r#"method="other""#), "{text}");
            // Each series: its name and labels, without its value.
            let series = text
                .lines()
                .filter(|l| !l.starts_with('#'))
                .filter_map(|l| l.rsplit_once(' ').map(|(key, _)| key.to_owned()))
                .collect();
            rounds.push(series);
        }
        // 150,000 made-up methods grew /metrics to 61 MB: each hundred added a hundred
        // series. Here the third hundred adds none of its own; a series the server's own
        // work starts between two scrapes may appear (it is printed), a hundred may not.
        let new: Vec<&String> = rounds[2].difference(&rounds[1]).collect();
        assert!(new.len() < 10, "the third hundred added series: {new:#?}");
    }
}

#[tokio::test]
async fn metrics_without_keys_need_a_loopback_host_on_both_servers() {
    let gate = HttpGate::start(&[]).await;
    let api = CatalogueServer::launch(&[fixtures().as_os_str()], &[]).await;
    let http = reqwest::Client::new();
    for metrics in [gate.url.replace("/mcp", "/metrics"), format!("{}/metrics", api.host)] {
        let port = metrics.split(':').nth(2).unwrap().split('/').next().unwrap().to_owned();
        let own = http.get(&metrics).send().await.unwrap();
        assert_eq!(own.status(), 200, "{metrics}");
        // A page whose name resolves to 127.0.0.1 (DNS rebinding) sends its own name.
        for host in ["evil.example", "evil.example:80", "127.0.0.1.evil.example"] {
            let foreign = http
                .get(&metrics)
                .header("host", format!("{host}:{port}"))
                .send()
                .await
                .unwrap();
            assert_eq!(foreign.status(), 403, "{metrics} with Host {host}");
        }
        let localhost = http
            .get(&metrics)
            .header("host", format!("localhost:{port}"))
            .send()
            .await
            .unwrap();
        assert_eq!(localhost.status(), 200);
    }
}

#[tokio::test]
async fn a_keys_file_naming_anonymous_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let file = dir.path().join("keys.json");
    let sha = "a".repeat(64);
    for id in ["anonymous", "Anonymous", "anonymous@10.0.0.1", "oauth:someone"] {
        let doc = json!({"keys": [{"id": id, "sha256": sha, "scopes": ["run"]}]});
        std::fs::write(&file, doc.to_string()).unwrap();
        let out = crate::util::command(dir.path(), &[("TOOLGATE_KEYS_FILE", file.to_str().unwrap())])
            .args(["--http", "127.0.0.1:0"])
            .stdin(std::process::Stdio::null())
            .output()
            .await
            .unwrap();
        assert!(!out.status.success(), "{id}");
        let stderr = String::from_utf8_lossy(&out.stderr);
        assert!(stderr.contains("keys file"), "{id}: {stderr}");
    }
}
