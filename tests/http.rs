//! MCP over Streamable HTTP (`--http`), spoken to with plain HTTP requests: sessions are
//! isolated from each other (history, REPL sessions), Host and Origin are checked, the
//! session cap answers 503 with Retry-After, idle sessions expire, and SIGTERM lets a
//! running call finish. The official SDKs' agent paths over HTTP are in `interop.rs`.

use std::process::Stdio;
use std::time::{Duration, Instant};

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::Child;

use crate::js_workers::{descendants, stat};
use crate::util::{command, fixtures};

/// A `toolgate --http 127.0.0.1:0` child, once it has announced its address.
pub struct HttpGate {
    child: Child,
    /// `http://127.0.0.1:PORT/mcp`.
    pub url: String,
    /// What it has written on stderr since it announced its address.
    said: std::sync::Arc<std::sync::Mutex<String>>,
    _dir: tempfile::TempDir,
}

impl HttpGate {
    /// Starts the gateway with `env` on top of a scrubbed environment.
    pub async fn start(env: &[(&str, &str)]) -> HttpGate {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = command(dir.path(), env);
        cmd.args(["--http", "127.0.0.1:0"])
            .stderr(Stdio::piped())
            .stdout(Stdio::null())
            .stdin(Stdio::null());
        let mut child = cmd.spawn().unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let announce = async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(rest) = line.split(" at ").nth(1)
                    && rest.starts_with("http://")
                {
                    return rest.trim().to_owned();
                }
            }
            panic!("toolgate --http exited without announcing its address");
        };
        let url = tokio::time::timeout(Duration::from_secs(30), announce)
            .await
            .expect("toolgate --http starts");
        let said = std::sync::Arc::new(std::sync::Mutex::new(String::new()));
        let keep = said.clone();
        tokio::spawn(async move {
            while let Ok(Some(line)) = lines.next_line().await {
                let mut said = keep.lock().unwrap();
                said.push_str(&line);
                said.push('\n');
            }
        });
        HttpGate {
            child,
            url,
            said,
            _dir: dir,
        }
    }

    /// What it has written on stderr since it announced its address, so far.
    pub fn stderr(&self) -> String {
        self.said.lock().unwrap().clone()
    }

    /// The child's pid.
    pub fn pid(&self) -> u32 {
        self.child.id().unwrap()
    }

    /// Waits for the child to exit (bounded) and returns whether it exited cleanly.
    pub async fn exited(&mut self, within: Duration) -> bool {
        let status = tokio::time::timeout(within, self.child.wait())
            .await
            .expect("the gateway exits")
            .unwrap();
        status.success()
    }
}

/// One MCP session over HTTP, spoken to request by request.
pub struct Session {
    /// Its HTTP client.
    pub http: reqwest::Client,
    /// The gateway's `/mcp` URL.
    pub url: String,
    /// Its `Mcp-Session-Id`.
    pub id: String,
    next: u64,
}

/// The JSON-RPC message answering request `id` in a POST's answer, whether the server
/// sent it as JSON or as an SSE stream.
pub fn answer_of(body: &str, id: u64) -> Value {
    let candidates: Vec<Value> = match serde_json::from_str::<Value>(body) {
        Ok(v) => vec![v],
        Err(_) => body
            .lines()
            .filter_map(|l| l.strip_prefix("data:"))
            .filter_map(|d| serde_json::from_str(d.trim()).ok())
            .collect(),
    };
    candidates
        .into_iter()
        .find(|m: &Value| m["id"] == json!(id))
        .unwrap_or_else(|| panic!("no answer to request {id} in {body}"))
}

impl Session {
    /// Initializes a session against `url` (answer asserted), with `host`/`origin`
    /// headers left to reqwest.
    pub async fn open(url: &str) -> Session {
        Session::open_with(url, json!({})).await
    }

    /// [`Session::open`] declaring `capabilities`.
    pub async fn open_with(url: &str, capabilities: Value) -> Session {
        Session::open_by(reqwest::Client::new(), url, capabilities).await
    }

    /// [`Session::open`] sending `Authorization: Bearer KEY` on every request.
    pub async fn open_keyed(url: &str, key: &str) -> Session {
        let mut headers = reqwest::header::HeaderMap::new();
        let value = reqwest::header::HeaderValue::from_str(&format!("Bearer {key}")).unwrap();
        headers.insert(reqwest::header::AUTHORIZATION, value);
        let http = reqwest::Client::builder().default_headers(headers).build().unwrap();
        Session::open_by(http, url, json!({})).await
    }

    /// Initializes a session through `http`.
    async fn open_by(http: reqwest::Client, url: &str, capabilities: Value) -> Session {
        let mut init = initialize(1);
        init["params"]["capabilities"] = capabilities;
        let response = post(&http, url, None, &init).await;
        assert_eq!(response.status(), 200, "initialize: {response:?}");
        let id = response
            .headers()
            .get("mcp-session-id")
            .expect("a session id")
            .to_str()
            .unwrap()
            .to_owned();
        let body = response.text().await.unwrap();
        assert_eq!(answer_of(&body, 1)["result"]["serverInfo"]["name"], "toolgate");
        let session = Session {
            http,
            url: url.to_owned(),
            id,
            next: 2,
        };
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        let r = post(&session.http, url, Some(&session.id), &note).await;
        assert!(r.status().is_success(), "{r:?}");
        session
    }

    /// Sends request `method` with `params` and returns its JSON-RPC answer.
    pub async fn request(&mut self, method: &str, params: Value) -> Value {
        let id = self.next;
        self.next += 1;
        let message = json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params});
        let response = post(&self.http, &self.url, Some(&self.id), &message).await;
        assert_eq!(response.status(), 200, "{method}: {response:?}");
        answer_of(&response.text().await.unwrap(), id)
    }

    /// Calls tool `name` and returns its `structuredContent`.
    pub async fn call(&mut self, name: &str, arguments: Value) -> Value {
        let answer = self
            .request("tools/call", json!({"name": name, "arguments": arguments}))
            .await;
        answer["result"]["structuredContent"].clone()
    }
}

fn initialize(id: u64) -> Value {
    json!({"jsonrpc": "2.0", "id": id, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25",
        "capabilities": {},
        "clientInfo": {"name": "toolgate-tests", "version": "1"}
    }})
}

pub async fn post(http: &reqwest::Client, url: &str, session: Option<&str>, body: &Value) -> reqwest::Response {
    let mut request = http
        .post(url)
        .header("content-type", "application/json")
        .header("accept", "application/json, text/event-stream")
        .header("mcp-protocol-version", "2025-11-25")
        .json(body);
    if let Some(id) = session {
        request = request.header("mcp-session-id", id);
    }
    request.send().await.unwrap()
}

fn catalogue_env() -> String {
    fixtures().display().to_string()
}

#[tokio::test]
async fn two_sessions_cannot_see_each_others_runs() {
    let catalogue = catalogue_env();
    let gate = HttpGate::start(&[("TOOLGATE_CATALOGUE", &catalogue)]).await;
    let mut alice = Session::open(&gate.url).await;
    let mut bob = Session::open(&gate.url).await;
    assert_ne!(alice.id, bob.id);
    let ran = alice
        .call(
            "toolgate",
            json!({"command": "run", "slug": "echo", "params": {"message": "alice's secret"}}),
        )
        .await;
    assert_eq!(ran["success"], true, "{ran}");
    // Bob's history is empty, and Alice's run id means nothing to him.
    let bobs = bob.call("toolgate", json!({"command": "history"})).await;
    assert_eq!(bobs["runs"], json!([]), "{bobs}");
    let peek = bob.call("toolgate", json!({"command": "history", "show": "r1"})).await;
    assert_eq!(peek["code"], "RUN_NOT_FOUND", "{peek}");
    let resource = bob
        .request("resources/read", json!({"uri": "toolgate://history"}))
        .await;
    let text = resource["result"]["contents"][0]["text"].as_str().unwrap();
    assert!(!text.contains("alice"), "{text}");
    // Alice sees her own run.
    let hers = alice
        .call("toolgate", json!({"command": "history", "show": "r1"}))
        .await;
    assert_eq!(hers["run"]["slug"], "echo", "{hers}");
}

#[tokio::test]
async fn a_wrong_host_or_origin_is_refused_and_an_allowed_one_is_not() {
    let gate = HttpGate::start(&[
        ("TOOLGATE_HTTP_ALLOWED_HOSTS", "gw.example.com"),
        ("TOOLGATE_HTTP_ALLOWED_ORIGINS", "https://app.example.com:443"),
    ])
    .await;
    let http = reqwest::Client::new();
    let send = |host: Option<&'static str>, origin: Option<&'static str>| {
        let mut request = http
            .post(&gate.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .json(&initialize(1));
        if let Some(h) = host {
            request = request.header("host", h);
        }
        if let Some(o) = origin {
            request = request.header("origin", o);
        }
        request.send()
    };
    // DNS rebinding: a page at evil.example.com resolved to 127.0.0.1.
    assert_eq!(send(Some("evil.example.com"), None).await.unwrap().status(), 403);
    assert_eq!(
        send(None, Some("https://evil.example.com")).await.unwrap().status(),
        403
    );
    assert_eq!(send(Some("gw.example.com"), None).await.unwrap().status(), 200);
    assert_eq!(send(None, Some("https://app.example.com")).await.unwrap().status(), 200);
    assert_eq!(send(None, Some("http://localhost:3000")).await.unwrap().status(), 200);
}

#[tokio::test]
async fn sessions_beyond_the_cap_are_told_to_retry_and_idle_ones_expire() {
    let gate = HttpGate::start(&[
        ("TOOLGATE_HTTP_MAX_SESSIONS", "1"),
        ("TOOLGATE_HTTP_SESSION_IDLE_MS", "1000"),
    ])
    .await;
    let first = Session::open(&gate.url).await;
    let http = reqwest::Client::new();
    let refused = post(&http, &gate.url, None, &initialize(1)).await;
    assert_eq!(refused.status(), 503);
    assert_eq!(refused.headers()["retry-after"], "5");
    // The first session goes idle and expires: a new session is then accepted. Each try
    // is a request (the expiry is what is awaited, not a clock), bounded far above the
    // idle time.
    let started = Instant::now();
    loop {
        let r = post(&http, &gate.url, None, &initialize(1)).await;
        if r.status() == 200 {
            break;
        }
        assert_eq!(r.status(), 503);
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the idle session never expired"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // The expired session is gone.
    let note = json!({"jsonrpc": "2.0", "id": 9, "method": "ping"});
    let gone = post(&http, &gate.url, Some(&first.id), &note).await;
    assert_eq!(gone.status(), 404, "{gone:?}");
}

#[tokio::test]
async fn repl_sessions_belong_to_the_mcp_session_that_started_them() {
    let standin = crate::nyxilum::standin().display().to_string();
    let gate = HttpGate::start(&[("TOOLGATE_RUNTIMES", "nyxilum"), ("NX_NODE_PATH", &standin)]).await;
    let mut alice = Session::open(&gate.url).await;
    let mut bob = Session::open(&gate.url).await;
    let started = alice.call("nyxilum_repl_start", json!({})).await;
    let id = started["sessionId"]
        .as_str()
        .unwrap_or_else(|| panic!("{started}"))
        .to_owned();
    let stolen = bob
        .call("nyxilum_repl_eval", json!({"session_id": id, "code": "print(1)"}))
        .await;
    assert_eq!(stolen["code"], "SESSION_NOT_FOUND", "{stolen}");
    let stopped = bob.call("nyxilum_repl_stop", json!({"session_id": id})).await;
    assert_eq!(stopped["alreadyGone"], true, "{stopped}");
    let own = alice
        .call("nyxilum_repl_eval", json!({"session_id": id, "code": "print(1)"}))
        .await;
    assert_eq!(own["output"], "1\n", "{own}");
    alice.call("nyxilum_repl_stop", json!({"session_id": id})).await;
}

#[tokio::test]
async fn sigterm_lets_a_running_call_answer_then_exits() {
    let mut gate = HttpGate::start(&[("TOOLGATE_RUNTIMES", "js")]).await;
    let mut session = Session::open(&gate.url).await;
    let call = tokio::spawn(async move {
        session
            .call(
                "run_javascript",
                json!({"code": "const t = Date.now(); while (Date.now() - t < 2500) {} return 'finished';"}),
            )
            .await
    });
    // Signal once the run is under way: its worker has used half a second of CPU, which
    // only the run's loop does (a /proc read per look).
    let server = gate.pid();
    let started = Instant::now();
    while !busy_below(server) {
        assert!(started.elapsed() < Duration::from_secs(30), "the run never started");
        tokio::task::yield_now().await;
    }
    // SAFETY: kill(2) on our own child's pid.
    unsafe { libc::kill(server as i32, libc::SIGTERM) };
    let answered = call.await.unwrap();
    assert_eq!(answered["result"], "finished", "{answered}");
    assert!(gate.exited(Duration::from_secs(30)).await, "the gateway exits cleanly");
}

/// Returns true if and only if some process below `pid` has used half a second of CPU.
fn busy_below(pid: u32) -> bool {
    descendants(pid)
        .into_iter()
        .any(|p| stat(p).is_some_and(|(_, used)| used >= Duration::from_millis(500)))
}

#[tokio::test]
async fn an_upstream_request_is_not_routed_to_a_guess_when_two_sessions_call_that_upstream() {
    let dir = tempfile::tempdir().unwrap();
    let everything = crate::upstream::everything_js();
    let file = crate::upstream::servers_file(
        dir.path(),
        json!({"everything": {"command": "node", "args": [everything, "stdio"]}}),
    );
    let gate = HttpGate::start(&[("TOOLGATE_UPSTREAMS", &file)]).await;
    // Alice starts a long operation on the upstream and reports progress: once the first
    // progress arrives, her call is in flight there.
    let alice = Session::open(&gate.url).await;
    let long = json!({"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {
        "name": "everything__trigger-long-running-operation",
        "arguments": {"duration": 60, "steps": 60},
        "_meta": {"progressToken": "alice"}
    }});
    let mut stream = post(&alice.http, &alice.url, Some(&alice.id), &long).await;
    let mut seen = String::new();
    while !seen.contains("notifications/progress") {
        let chunk = tokio::time::timeout(Duration::from_secs(60), stream.chunk())
            .await
            .expect("progress from the long operation")
            .unwrap()
            .expect("the stream stays open while the operation runs");
        seen.push_str(&String::from_utf8_lossy(&chunk));
    }
    // Bob, who declared sampling, triggers a sampling request from the same upstream. It
    // names no call, and two sessions have calls in flight there: refused, not guessed
    // (the latest call is Bob's, but it could as well have been Alice's).
    let mut bob = Session::open_with(&gate.url, json!({"sampling": {}})).await;
    let answer = tokio::time::timeout(
        Duration::from_secs(60),
        bob.request(
            "tools/call",
            json!({"name": "everything__trigger-sampling-request", "arguments": {"prompt": "hi"}}),
        ),
    )
    .await
    .expect("the sampling request is refused, not left waiting on a client");
    assert!(answer.to_string().contains("calls of several sessions"), "{answer}");
}

#[tokio::test]
async fn a_session_that_ends_takes_its_repl_sessions_with_it() {
    let standin = crate::nyxilum::standin().display().to_string();
    let gate = HttpGate::start(&[
        ("TOOLGATE_RUNTIMES", "nyxilum"),
        ("NX_NODE_PATH", &standin),
        ("TOOLGATE_HTTP_MAX_SESSIONS", "1"),
        ("TOOLGATE_HTTP_SESSION_IDLE_MS", "1000"),
    ])
    .await;
    let mut alice = Session::open(&gate.url).await;
    let started = alice.call("nyxilum_repl_start", json!({})).await;
    assert!(started["sessionId"].is_string(), "{started}");
    let repl_alive = |server: u32| descendants_running(server, "standin/nx");
    assert!(repl_alive(gate.pid()), "the REPL process runs while its session lives");
    // Alice goes idle and her session expires (seen when a new one is accepted: each try is
    // a request, bounded far above the idle time); her REPL process goes with it.
    let http = reqwest::Client::new();
    let started = Instant::now();
    while post(&http, &gate.url, None, &initialize(1)).await.status() != 200 {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the idle session never expired"
        );
    }
    while repl_alive(gate.pid()) {
        assert!(
            started.elapsed() < Duration::from_secs(30),
            "the REPL outlived its session"
        );
        tokio::task::yield_now().await;
    }
}

/// Returns true if and only if a live (not zombie) process below `pid` has `needle` in its
/// command line.
fn descendants_running(pid: u32, needle: &str) -> bool {
    descendants(pid).into_iter().any(|p| {
        let cmdline = std::fs::read(format!("/proc/{p}/cmdline")).unwrap_or_default();
        stat(p).is_some_and(|(state, _)| state != 'Z') && String::from_utf8_lossy(&cmdline).contains(needle)
    })
}
