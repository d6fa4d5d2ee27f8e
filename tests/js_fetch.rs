//! `fetch` from JavaScript, bridged to the host: the real server, a real HTTP server on
//! 127.0.0.1 (axum, in this process), and the limits the host enforces whatever the
//! script does. The address policy refuses loopback by default, so these gateways allow
//! 127.0.0.1 (`TOOLGATE_FETCH_ALLOW`); the policy itself is tried in `fetch_policy.rs`.

use std::future::pending;
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};

use axum::Router;
use axum::body::{Body, Bytes};
use axum::http::{HeaderMap, Method, StatusCode};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::{any, get};
use serde_json::{Value, json};

use crate::util::{Gate, structured, text};

/// Bytes in the largest body fetch accepts (`docs/reference/limits.md`).
const CAP: usize = 8_388_608;

/// Requests one run may have on the network at once (toolgate's `FETCH_IN_FLIGHT`).
const IN_FLIGHT: usize = 16;

/// Counts `/hold` requests, which are never answered.
#[derive(Clone, Default)]
struct Hold {
    arrived: Arc<AtomicUsize>,
}

async fn hold(axum::extract::State(h): axum::extract::State<Hold>) -> &'static str {
    h.arrived.fetch_add(1, Ordering::SeqCst);
    pending::<&'static str>().await
}

/// Starts the test site and returns its base URL.
async fn site() -> String {
    site_with(Hold::default()).await
}

async fn site_with(held: Hold) -> String {
    let app = Router::new()
        .route("/hold", get(hold).with_state(held))
        .route(
            "/json",
            get(|| async { axum::Json(json!({"hello": "world", "n": [1, 2, 3]})) }),
        )
        .route(
            "/text",
            get(|| async {
                (
                    StatusCode::IM_A_TEAPOT,
                    [("x-custom", "yes"), ("content-type", "text/plain; charset=utf-8")],
                    "short and stout: ünïcödé",
                )
            }),
        )
        .route("/echo", any(echo))
        .route("/redirect", get(|| async { Redirect::temporary("/json") }))
        .route("/big", get(|| async { vec![b'x'; CAP + 1] }))
        .route("/exact", get(|| async { vec![b'y'; CAP] }))
        .route("/big-chunked", get(big_chunked))
        .route("/never", get(|| async { pending::<&'static str>().await }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    base
}

/// Answers with what it received: method, the `x-test` header, content type and body.
async fn echo(method: Method, headers: HeaderMap, body: Bytes) -> axum::Json<Value> {
    let header = |name: &str| headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned);
    axum::Json(json!({
        "method": method.as_str(),
        "x_test": header("x-test"),
        "content_type": header("content-type"),
        "cookie": header("cookie"),
        "body": String::from_utf8_lossy(&body),
    }))
}

/// Over the cap, without a Content-Length: 9 chunks of 1 MiB.
async fn big_chunked() -> Response {
    let chunks = (0..9).map(|_| Ok::<_, std::io::Error>(Bytes::from(vec![b'z'; 1024 * 1024])));
    Body::from_stream(futures::stream::iter(chunks)).into_response()
}

async fn js(gate: &Gate, code: &str) -> (Value, bool) {
    let r = gate.call("run_javascript", json!({ "code": code })).await;
    let failed = r.is_error == Some(true);
    let s = structured(&r).clone();
    assert!(s.get("success").is_some(), "every answer is structured: {}", text(&r));
    (s, failed)
}

async fn gate(extra: &[(&str, &str)]) -> Gate {
    let mut env = vec![("TOOLGATE_RUNTIMES", "js"), ("TOOLGATE_FETCH_ALLOW", "127.0.0.1")];
    env.extend_from_slice(extra);
    Gate::start(&env).await
}

#[tokio::test]
async fn json_text_status_headers_and_bodies() {
    let base = site().await;
    let gate = gate(&[]).await;
    let code = format!(
        r#"const r = await fetch("{base}/json");
const t = await fetch("{base}/text");
const body = await t.clone().text();
return {{ status: r.status, ok: r.ok, type: r.headers.get("Content-Type"), json: await r.json(),
  tStatus: t.status, tOk: t.ok, tText: await t.text(), custom: t.headers.get("X-CUSTOM"), has: t.headers.has("x-custom"),
  cloneText: body, used: t.bodyUsed, nullBody: t.body === null, statusText: t.statusText }};"#
    );
    let (s, failed) = js(&gate, &code).await;
    assert!(!failed, "{s}");
    assert_eq!(
        s["result"],
        json!({"status": 200, "ok": true, "type": "application/json", "json": {"hello": "world", "n": [1, 2, 3]},
               "tStatus": 418, "tOk": false, "tText": "short and stout: ünïcödé", "custom": "yes", "has": true,
               "cloneText": "short and stout: ünïcödé", "used": true, "nullBody": true, "statusText": "I'm a teapot"})
    );

    let code = format!(
        r#"const r = await fetch("{base}/echo", {{ method: "post", headers: {{ "X-Test": "sent" }}, body: "ping ✓" }});
const bytes = new Uint8Array(await (await fetch("{base}/text")).arrayBuffer());
const again = await fetch("{base}/json"); await again.text();
let second; try {{ await again.text(); }} catch (e) {{ second = e.name; }}
const moved = await fetch("{base}/redirect");
return {{ echo: await r.json(), bytes: bytes.length, second, redirected: moved.redirected, url: moved.url, movedJson: await moved.json() }};"#
    );
    let (s, failed) = js(&gate, &code).await;
    assert!(!failed, "{s}");
    assert_eq!(
        s["result"]["echo"],
        json!({"method": "POST", "x_test": "sent", "content_type": "text/plain;charset=UTF-8", "cookie": null, "body": "ping ✓"})
    );
    assert_eq!(
        s["result"]["bytes"],
        "short and stout: ünïcödé".len(),
        "arrayBuffer is the raw UTF-8 bytes"
    );
    assert_eq!(s["result"]["second"], "TypeError", "a body is read once");
    assert_eq!(s["result"]["redirected"], true);
    assert_eq!(s["result"]["url"], format!("{base}/json"));
    assert_eq!(s["result"]["movedJson"]["hello"], "world");
    gate.stop().await;
}

#[tokio::test]
async fn bodies_over_the_cap_are_refused_and_the_cap_itself_is_not() {
    let base = site().await;
    let gate = gate(&[]).await;
    let code = format!(
        r#"const out = {{}};
for (const path of ["/big", "/big-chunked"]) {{
  try {{ await fetch("{base}" + path); out[path] = "fetched"; }} catch (e) {{ out[path] = e.name + ": " + e.message; }}
}}
out.exact = (await (await fetch("{base}/exact")).arrayBuffer()).byteLength;
try {{ await fetch("{base}/echo", {{ method: "POST", body: "a".repeat({CAP} + 1) }}); out.upload = "sent"; }}
catch (e) {{ out.upload = e.name + ": " + e.message; }}
return out;"#
    );
    let (s, failed) = js(&gate, &code).await;
    assert!(!failed, "{s}");
    let r = &s["result"];
    assert_eq!(
        r["/big"],
        format!(
            "TypeError: fetch: the response body is {} bytes, over the limit of {CAP} bytes; none of it was kept",
            CAP + 1
        )
    );
    assert_eq!(
        r["/big-chunked"],
        format!("TypeError: fetch: the response body is over the limit of {CAP} bytes; none of it was kept")
    );
    assert_eq!(r["exact"], CAP, "a body of exactly the cap is allowed");
    assert_eq!(
        r["upload"],
        format!(
            "TypeError: fetch: the request body is {} bytes, over the limit of {CAP}",
            CAP + 1
        )
    );
    gate.stop().await;
}

#[tokio::test]
async fn a_slow_answer_times_out_and_abort_ends_a_request() {
    let base = site().await;
    let gate = gate(&[("TOOLGATE_FETCH_TIMEOUT_MS", "300")]).await;
    let code = format!(
        r#"let timeout, aborted, early;
try {{ await fetch("{base}/never"); }} catch (e) {{ timeout = e.name + ": " + e.message; }}
const c = new AbortController();
const pending = fetch("{base}/never", {{ signal: c.signal }});
c.abort();
try {{ await pending; }} catch (e) {{ aborted = e.name; }}
try {{ await fetch("{base}/json", {{ signal: AbortSignal.abort() }}); }} catch (e) {{ early = e.name; }}
return {{ timeout, aborted, early, signalAborted: c.signal.aborted }};"#
    );
    let (s, failed) = js(&gate, &code).await;
    assert!(!failed, "{s}");
    assert_eq!(
        s["result"],
        json!({"timeout": format!("TimeoutError: fetch: no complete answer from {base}/never within 0.3 s"),
               "aborted": "AbortError", "early": "AbortError", "signalAborted": true})
    );
    gate.stop().await;
}

#[tokio::test]
async fn only_http_and_https_and_clear_network_errors() {
    let gate = gate(&[]).await;
    // A port that was just free: nothing listens there.
    let closed = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        l.local_addr().unwrap().port()
    };
    let code = format!(
        r#"const out = {{}};
for (const url of ["file:///etc/passwd", "ftp://127.0.0.1/x", "data:text/plain,hi", "not a url", "http://127.0.0.1:{closed}/"]) {{
  try {{ await fetch(url); out[url] = "fetched"; }} catch (e) {{ out[url] = e.name + ": " + e.message; }}
}}
return out;"#
    );
    let (s, failed) = js(&gate, &code).await;
    assert!(!failed, "{s}");
    let r = &s["result"];
    assert_eq!(
        r["file:///etc/passwd"],
        "TypeError: fetch: only http: and https: URLs are allowed, not file:"
    );
    assert_eq!(
        r["ftp://127.0.0.1/x"],
        "TypeError: fetch: only http: and https: URLs are allowed, not ftp:"
    );
    assert_eq!(
        r["data:text/plain,hi"],
        "TypeError: fetch: only http: and https: URLs are allowed, not data:"
    );
    assert!(
        r["not a url"]
            .as_str()
            .unwrap()
            .starts_with("TypeError: fetch: invalid URL \"not a url\""),
        "{r}"
    );
    let refused = r[format!("http://127.0.0.1:{closed}/")].as_str().unwrap();
    assert!(refused.starts_with("TypeError: fetch failed: "), "{refused}");
    gate.stop().await;
}

#[tokio::test]
async fn headers_text_encoding_and_response_shims() {
    let gate = gate(&[]).await;
    let code = r#"const h = new Headers([["Accept", "a"], ["accept", "b"]]);
h.set("X-One", " 1 ");
const fromObject = new Headers({ "Content-Type": "text/plain" });
const bytes = new TextEncoder().encode("héllo ✓");
const text = new TextDecoder().decode(bytes);
const lossy = new TextDecoder().decode(new Uint8Array([0x68, 0xff, 0x69]));
let fatal; try { new TextDecoder("utf-8", { fatal: true }).decode(new Uint8Array([0xff])); } catch (e) { fatal = e.name; }
let latin; try { new TextDecoder("latin1"); } catch (e) { latin = e.name; }
const r = new Response('{"a":1}', { status: 201, headers: { "X-A": "b" } });
let badName; try { h.set("bad name", "x"); } catch (e) { badName = e.name; }
return { accept: h.get("ACCEPT"), one: h.get("x-one"), keys: [...h.keys()], ct: fromObject.get("content-type"), missing: h.get("nope"),
  len: bytes.length, isView: bytes instanceof Uint8Array, text, lossy, fatal, latin, badName,
  status: r.status, ok: r.ok, xa: r.headers.get("x-a"), json: await r.clone().json(), raw: await r.text() };"#;
    let (s, failed) = js(&gate, code).await;
    assert!(!failed, "{s}");
    assert_eq!(
        s["result"],
        json!({"accept": "a, b", "one": "1", "keys": ["accept", "x-one"], "ct": "text/plain", "missing": null,
               "len": "héllo ✓".len(), "isView": true, "text": "héllo ✓", "lossy": "h\u{fffd}i", "fatal": "TypeError",
               "latin": "RangeError", "badName": "TypeError",
               "status": 201, "ok": true, "xa": "b", "json": {"a": 1}, "raw": "{\"a\":1}"})
    );
    gate.stop().await;
}

#[tokio::test]
async fn catalogue_tools_fetch_through_the_same_bridge() {
    let base = site().await;
    let dir = tempfile::tempdir().unwrap();
    let tool = dir.path().join("fetch-json");
    std::fs::create_dir(&tool).unwrap();
    std::fs::write(
        tool.join("tool.json"),
        json!({"slug": "fetch-json", "name": "Fetch JSON", "description": "Fetches a URL and returns its JSON.",
               "input_schema": {"type": "object", "properties": {"url": {"type": "string"}}, "required": ["url"]},
               "runtime": "javascript", "source": "index.js"})
        .to_string(),
    )
    .unwrap();
    std::fs::write(
        tool.join("index.js"),
        "async function run(p) { const r = await fetch(p.url); return { status: r.status, body: await r.json() }; }",
    )
    .unwrap();
    let gate = Gate::start(&[
        ("TOOLGATE_CATALOGUE", dir.path().to_str().unwrap()),
        ("TOOLGATE_FETCH_ALLOW", "127.0.0.1"),
    ])
    .await;
    let r = gate.call("fetch-json", json!({ "url": format!("{base}/json") })).await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    assert_eq!(
        structured(&r)["result"],
        json!({"status": 200, "body": {"hello": "world", "n": [1, 2, 3]}})
    );
    let r = gate.call("fetch-json", json!({ "url": "file:///etc/hostname" })).await;
    assert_eq!(r.is_error, Some(true));
    assert!(
        text(&r).contains("only http: and https: URLs are allowed"),
        "{}",
        text(&r)
    );
    gate.stop().await;
}

#[tokio::test]
async fn one_run_has_at_most_sixteen_requests_on_the_network() {
    let held = Hold::default();
    let base = site_with(held.clone()).await;
    // The run ends at its own deadline with every request still held (their own is 15 s),
    // so no slot ever frees: what reached the server is what the cap let out at once.
    let gate = gate(&[("TOOLGATE_JS_TIMEOUT_MS", "1500")]).await;
    let code = format!(r#"await Promise.all(Array.from({{ length: 40 }}, () => fetch("{base}/hold")));"#);
    let (s, failed) = js(&gate, &code).await;
    assert!(failed && s["timed_out"] == true, "{s}");
    assert_eq!(held.arrived.load(Ordering::SeqCst), IN_FLIGHT);
    gate.stop().await;
}
