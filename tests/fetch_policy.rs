//! The address policy of JavaScript `fetch`, through the real binary.
//!
//! Every refusal is tried with the server inside a fresh user, network and PID namespace
//! (`unshare -rn --pid --fork`) whose only interface is its own loopback, so even a broken
//! policy sends no packet off this machine. A small HTTP server runs inside the same
//! namespace on 127.0.0.1:8080, bound before the gateway starts: it answers `inside` on
//! `/` and a 302 to whatever follows `/to/`, so a loopback spelling the policy failed to
//! refuse would be answered (and the test would fail), not merely unreachable. Allowing
//! an address and the `manual` and `error` redirect modes are tried outside, against a
//! server on 127.0.0.1 only.

use axum::Router;
use axum::response::Redirect;
use axum::routing::get;
use serde_json::{Value, json};

use crate::util::{Gate, command_of, structured, text};

/// The port of the server inside the namespace (the namespace is fresh, so it is free).
const INSIDE: u16 = 8080;

/// Binds 127.0.0.1:8080, forks a server that answers `/` with `inside` and `/to/URL`
/// with a 302 to URL, then becomes the gateway (argv[1:]).
const SERVER: &str = r#"
import os, socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
s.bind(("127.0.0.1", 8080))
s.listen(64)
if os.fork() == 0:
    while True:
        c, _ = s.accept()
        head = b""
        while b"\r\n\r\n" not in head:
            more = c.recv(4096)
            if not more:
                break
            head += more
        parts = head.split(b" ")
        path = parts[1] if len(parts) > 1 else b"/"
        if path.startswith(b"/to/"):
            answer = b"HTTP/1.1 302 Found\r\nLocation: " + path[4:] + b"\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        else:
            answer = b"HTTP/1.1 200 OK\r\nContent-Length: 6\r\nConnection: close\r\n\r\ninside"
        c.sendall(answer)
        c.close()
s.close()
os.execvp(sys.argv[1], sys.argv[1:])
"#;

/// Panics, saying why, unless unprivileged namespaces work here: the refusal tests must
/// never run outside one.
fn require_namespaces() {
    let ok = std::process::Command::new("unshare")
        .args(["-rn", "--pid", "--fork", "sh", "-c", "ip link set lo up"])
        .status()
        .is_ok_and(|s| s.success());
    assert!(
        ok,
        "`unshare -rn --pid --fork sh -c 'ip link set lo up'` failed: the fetch policy tests need unprivileged user, network and PID namespaces and `ip`, and will not aim at internal addresses without them"
    );
}

/// The gateway (with the JS runtime tools and `env`) inside a fresh namespace, beside the
/// server on 127.0.0.1:8080.
async fn gate_inside(env: &[(&str, &str)]) -> Gate {
    require_namespaces();
    let dir = tempfile::tempdir().unwrap();
    let mut all = vec![("TOOLGATE_RUNTIMES", "js")];
    all.extend_from_slice(env);
    let mut cmd = command_of("unshare", dir.path(), &all);
    cmd.args([
        "-rn",
        "--pid",
        "--fork",
        "--kill-child",
        "sh",
        "-c",
        "ip link set lo up || exit 97; exec \"$@\"",
        "sh",
        "python3",
        "-c",
        SERVER,
        crate::util::bin(),
    ]);
    Gate::spawn(cmd, dir).await
}

/// What each URL gave: the body text, or the error's name and message.
async fn outcomes(gate: &Gate, urls: &[String]) -> Value {
    let code = format!(
        r#"const out = {{}};
for (const url of {urls}) {{
  try {{ const r = await fetch(url); out[url] = r.status + " " + await r.text(); }}
  catch (e) {{ out[url] = e.name + ": " + e.message; }}
}}
return out;"#,
        urls = serde_json::to_string(urls).unwrap()
    );
    let r = gate.call("run_javascript", json!({ "code": code })).await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    structured(&r)["result"].clone()
}

fn assert_refused(out: &Value, url: &str, address: &str, reason: &str) {
    let said = out[url].as_str().unwrap_or_else(|| panic!("{url}: {out}"));
    assert!(
        said.starts_with("TypeError: fetch: refused by the address policy")
            && said.contains(address)
            && said.contains(reason)
            && said.contains("TOOLGATE_FETCH_ALLOW"),
        "{url}: {said}"
    );
}

#[tokio::test]
async fn internal_addresses_in_every_spelling_are_refused() {
    let gate = gate_inside(&[]).await;
    let cases = [
        (
            "http://169.254.169.254/latest/meta-data/",
            "169.254.169.254",
            "metadata",
        ),
        ("http://[fd00:ec2::254]/latest/meta-data/", "fd00:ec2::254", "metadata"),
        ("http://10.0.0.1/", "10.0.0.1", "private"),
        ("http://100.64.0.1/", "100.64.0.1", "shared"),
        ("http://0.0.0.0:8080/", "0.0.0.0", "unspecified"),
        ("http://[::1]:8080/", "::1", "loopback"),
        ("http://[::ffff:127.0.0.1]:8080/", "127.0.0.1", "loopback"),
        ("http://127.0.0.1:8080/", "127.0.0.1", "loopback"),
        ("http://2130706433:8080/", "127.0.0.1", "loopback"),
        ("http://0x7f.1:8080/", "127.0.0.1", "loopback"),
        ("http://017700000001:8080/", "127.0.0.1", "loopback"),
        ("http://localhost:8080/", "localhost resolves to", "loopback"),
    ];
    let urls: Vec<String> = cases.iter().map(|c| c.0.to_owned()).collect();
    let out = outcomes(&gate, &urls).await;
    for (url, address, reason) in cases {
        assert_refused(&out, url, address, reason);
    }
    gate.stop().await;
}

#[tokio::test]
async fn a_redirect_from_an_allowed_server_to_an_internal_address_is_refused() {
    let gate = gate_inside(&[("TOOLGATE_FETCH_ALLOW", "127.0.0.1:8080")]).await;
    let base = format!("http://127.0.0.1:{INSIDE}");
    let urls = vec![
        format!("{base}/"),
        format!("http://2130706433:{INSIDE}/"),
        format!("{base}/to/http://127.0.0.1:{INSIDE}/"),
        format!("{base}/to/http://169.254.169.254/latest/meta-data/"),
        format!("{base}/to/http://[fd00:ec2::254]/"),
        format!("{base}/to/http://127.0.0.2:{INSIDE}/"),
        format!("{base}/to/http://0x7f.1:9/"),
    ];
    let out = outcomes(&gate, &urls).await;
    assert_eq!(out[&urls[0]], "200 inside", "the allowed server is reached: {out}");
    assert_eq!(out[&urls[1]], "200 inside", "in any spelling of its address: {out}");
    assert_eq!(out[&urls[2]], "200 inside", "an allowed hop is followed: {out}");
    assert_refused(&out, &urls[3], "169.254.169.254", "metadata");
    assert_refused(&out, &urls[4], "fd00:ec2::254", "metadata");
    assert_refused(&out, &urls[5], "127.0.0.2", "loopback");
    assert_refused(&out, &urls[6], "127.0.0.1:9", "loopback");
    gate.stop().await;
}

#[tokio::test]
async fn a_host_name_entry_allows_that_name_on_that_port_only() {
    let gate = gate_inside(&[("TOOLGATE_FETCH_ALLOW", "localhost:8080")]).await;
    let urls = vec![
        format!("http://localhost:{INSIDE}/"),
        format!("http://127.0.0.1:{INSIDE}/"),
        "http://localhost:9/".to_owned(),
    ];
    let out = outcomes(&gate, &urls).await;
    assert_eq!(out[&urls[0]], "200 inside", "{out}");
    assert_refused(&out, &urls[1], "127.0.0.1", "loopback");
    assert_refused(&out, &urls[2], "localhost resolves to", "loopback");
    gate.stop().await;
}

/// A server on 127.0.0.1 whose `/moved` answers 307 to `/json`; returns its base URL.
async fn site() -> String {
    let app = Router::new()
        .route("/json", get(|| async { axum::Json(json!({"hello": "world"})) }))
        .route("/moved", get(|| async { Redirect::temporary("/json") }))
        .route("/loop", get(|| async { Redirect::to("/loop") }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let base = format!("http://{}", listener.local_addr().unwrap());
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    base
}

#[tokio::test]
async fn an_allowed_address_is_reached_and_redirect_modes_are_honoured() {
    let base = site().await;
    let port = base.rsplit(':').next().unwrap().to_owned();
    let allow = format!("127.0.0.1:{port}");
    let gate = Gate::start(&[("TOOLGATE_RUNTIMES", "js"), ("TOOLGATE_FETCH_ALLOW", &allow)]).await;
    let code = format!(
        r#"const follow = await fetch("{base}/moved");
const manual = await fetch("{base}/moved", {{ redirect: "manual" }});
let error, bad, looped;
try {{ await fetch("{base}/moved", {{ redirect: "error" }}); }} catch (e) {{ error = e.name + ": " + e.message; }}
try {{ await fetch("{base}/json", {{ redirect: "sideways" }}); }} catch (e) {{ bad = e.name; }}
try {{ await fetch("{base}/loop"); }} catch (e) {{ looped = e.name + ": " + e.message; }}
return {{ follow: [follow.status, follow.redirected, follow.url, await follow.json()],
  manual: [manual.status, manual.redirected, manual.url, manual.headers.get("location"), manual.type],
  error, bad, looped }};"#
    );
    let r = gate.call("run_javascript", json!({ "code": code })).await;
    assert_ne!(r.is_error, Some(true), "{}", text(&r));
    let s = &structured(&r)["result"];
    assert_eq!(
        s["follow"],
        json!([200, true, format!("{base}/json"), {"hello": "world"}])
    );
    assert_eq!(
        s["manual"],
        json!([307, false, format!("{base}/moved"), "/json", "basic"])
    );
    assert_eq!(
        s["error"],
        format!(
            "TypeError: fetch: {base}/moved answered 307 with a redirect to {base}/json, and redirect is \"error\""
        )
    );
    assert_eq!(s["bad"], "TypeError");
    assert_eq!(
        s["looped"],
        format!("TypeError: fetch: more than 20 redirects, the last to {base}/loop")
    );
    gate.stop().await;
}

#[tokio::test]
async fn another_port_of_an_allowed_address_stays_refused() {
    let base = site().await;
    let port: u16 = base.rsplit(':').next().unwrap().parse().unwrap();
    let allow = format!("127.0.0.1:{}", port.wrapping_add(1).max(1));
    let gate = Gate::start(&[("TOOLGATE_RUNTIMES", "js"), ("TOOLGATE_FETCH_ALLOW", &allow)]).await;
    let url = format!("{base}/json");
    let out = outcomes(&gate, std::slice::from_ref(&url)).await;
    assert_refused(&out, &url, &format!("127.0.0.1:{port}"), "loopback");
    gate.stop().await;
}

#[tokio::test]
async fn a_malformed_allow_list_stops_the_server_naming_the_entry() {
    let dir = tempfile::tempdir().unwrap();
    let out = crate::util::command(dir.path(), &[("TOOLGATE_FETCH_ALLOW", "127.0.0.1:8080,10.1.2.3/24")])
        .output()
        .await
        .unwrap();
    assert!(!out.status.success());
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        stderr.contains("TOOLGATE_FETCH_ALLOW entry \"10.1.2.3/24\"") && stderr.contains("10.1.2.0/24"),
        "{stderr}"
    );
    assert!(out.stdout.is_empty(), "stdout carries MCP frames only");
}
