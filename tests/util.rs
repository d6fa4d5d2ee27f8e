//! Shared test harness: the real binary over real stdio through rmcp's client, a real
//! `toolgate catalogue serve` child, and a scripted catalogue API on 127.0.0.1 for the
//! cases a static folder cannot produce (a list that changes, 429s, slow answers).

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::extract::{Path as UrlPath, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use axum::{Json, Router};
use rmcp::model::{CallToolRequestParams, CallToolResult, ProgressNotificationParam};
use rmcp::service::NotificationContext;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, BufReader};
use tokio::process::{Child, Command};

/// The binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_toolgate")
}

/// The fixture catalogue folder.
pub fn fixtures() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/catalogue")
}

/// A command for the binary with a scrubbed environment and its own temp folder.
pub fn command(dir: &Path, env: &[(&str, &str)]) -> Command {
    command_of(bin(), dir, env)
}

/// A command for `program` (the binary, or a wrapper that runs it) with a scrubbed
/// environment in `dir`.
pub fn command_of(program: &str, dir: &Path, env: &[(&str, &str)]) -> Command {
    let mut cmd = Command::new(program);
    // Tool vectors are shared by every server the tests start: the embedded catalogue is
    // embedded once per test run, not once per test (a test of the cache sets its own).
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("HOME", dir)
        .env("TOOLGATE_EMBED_CACHE", concat!(env!("CARGO_TARGET_TMPDIR"), "/vectors"))
        .current_dir(dir);
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.kill_on_drop(true);
    cmd
}

/// The test client: forwards progress, tools/list_changed and resources/updated
/// notifications to the test.
pub struct Recorder {
    progress: tokio::sync::mpsc::UnboundedSender<ProgressNotificationParam>,
    changes: tokio::sync::mpsc::UnboundedSender<()>,
    updates: tokio::sync::mpsc::UnboundedSender<String>,
}

impl ClientHandler for Recorder {
    async fn on_progress(&self, params: ProgressNotificationParam, _context: NotificationContext<RoleClient>) {
        let _ = self.progress.send(params);
    }

    async fn on_tool_list_changed(&self, _context: NotificationContext<RoleClient>) {
        let _ = self.changes.send(());
    }

    async fn on_resource_updated(
        &self,
        params: rmcp::model::ResourceUpdatedNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        let _ = self.updates.send(params.uri);
    }
}

/// A toolgate MCP server child, connected.
pub struct Gate {
    pub client: RunningService<RoleClient, Recorder>,
    /// Progress notifications, in the order they arrived.
    pub progress: tokio::sync::mpsc::UnboundedReceiver<ProgressNotificationParam>,
    /// One item per tools/list_changed notification.
    pub changes: tokio::sync::mpsc::UnboundedReceiver<()>,
    /// The URI of each resources/updated notification, in the order they arrived.
    pub updates: tokio::sync::mpsc::UnboundedReceiver<String>,
    /// The server's process id.
    pub pid: Option<u32>,
    stderr: tokio::task::JoinHandle<String>,
    _dir: tempfile::TempDir,
}

impl Gate {
    /// Starts the server with `env` on top of a scrubbed environment.
    pub async fn start(env: &[(&str, &str)]) -> Gate {
        let dir = tempfile::tempdir().unwrap();
        let cmd = command(dir.path(), env);
        Gate::spawn(cmd, dir).await
    }

    /// Starts `cmd` (which runs the server, perhaps through a wrapper) in `dir`.
    pub async fn spawn(cmd: Command, dir: tempfile::TempDir) -> Gate {
        let (transport, stderr) = TokioChildProcess::builder(cmd).stderr(Stdio::piped()).spawn().unwrap();
        let pid = transport.id();
        let mut stderr = stderr.unwrap();
        let stderr = tokio::spawn(async move {
            let mut text = String::new();
            let _ = stderr.read_to_string(&mut text).await;
            text
        });
        let (progress_tx, progress) = tokio::sync::mpsc::unbounded_channel();
        let (changes_tx, changes) = tokio::sync::mpsc::unbounded_channel();
        let (updates_tx, updates) = tokio::sync::mpsc::unbounded_channel();
        let recorder = Recorder {
            progress: progress_tx,
            changes: changes_tx,
            updates: updates_tx,
        };
        let client = recorder.serve(transport).await.expect("MCP initialize");
        Gate {
            client,
            progress,
            changes,
            updates,
            pid,
            stderr,
            _dir: dir,
        }
    }

    /// Calls a tool by name.
    pub async fn call(&self, name: &str, args: Value) -> CallToolResult {
        let Value::Object(args) = args else {
            panic!("arguments must be an object")
        };
        self.client
            .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args))
            .await
            .expect("tools/call")
    }

    /// Calls a tool and expects a protocol error; returns its message and data.
    pub async fn call_err(&self, name: &str, args: Value) -> (String, Value) {
        let Value::Object(args) = args else {
            panic!("arguments must be an object")
        };
        match self
            .client
            .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args))
            .await
        {
            Err(rmcp::ServiceError::McpError(e)) => (e.message.to_string(), e.data.unwrap_or(Value::Null)),
            other => panic!("expected a protocol error, got {other:?}"),
        }
    }

    /// Calls the meta-tool.
    pub async fn meta(&self, args: Value) -> CallToolResult {
        self.call("toolgate", args).await
    }

    /// The names `tools/list` shows, in order.
    pub async fn names(&self) -> Vec<String> {
        self.client
            .list_all_tools()
            .await
            .unwrap()
            .into_iter()
            .map(|t| t.name.to_string())
            .collect()
    }

    /// Closes stdin, waits for the server to exit, and returns what it wrote on stderr.
    pub async fn stop(self) -> String {
        let _ = self.client.cancel().await;
        tokio::time::timeout(Duration::from_secs(30), self.stderr)
            .await
            .expect("server exits")
            .unwrap()
    }
}

/// The structured block of a result, asserting it has one.
pub fn structured(r: &CallToolResult) -> &Value {
    r.structured_content.as_ref().expect("structuredContent")
}

/// The slugs of a meta-tool `search` answer's results, best first.
pub fn result_slugs(answer: &Value) -> Vec<String> {
    answer["results"]
        .as_array()
        .expect("results")
        .iter()
        .map(|h| h["slug"].as_str().expect("slug").to_owned())
        .collect()
}

/// The text of a result's first content block.
pub fn text(r: &CallToolResult) -> String {
    r.content
        .first()
        .and_then(|c| c.as_text())
        .map(|t| t.text.clone())
        .unwrap_or_default()
}

/// Asserts `r` is an `isError` result with `code`, and returns its structured block.
pub fn expect_error<'a>(r: &'a CallToolResult, code: &str) -> &'a Value {
    assert_eq!(r.is_error, Some(true), "expected an error, got {r:?}");
    let s = structured(r);
    assert_eq!(s["success"], false, "{s}");
    assert_eq!(s["code"], code, "{s}");
    assert!(s["retryable"].is_boolean(), "{s}");
    assert!(!text(r).is_empty());
    s
}

/// Asserts `r` is a successful run and returns its `result`.
pub fn expect_ok(r: &CallToolResult) -> &Value {
    assert_eq!(r.is_error, Some(false), "expected success, got {r:?}");
    let s = structured(r);
    assert_eq!(s["success"], true, "{s}");
    &s["result"]
}

/// A real `toolgate catalogue serve` child on 127.0.0.1, port 0.
pub struct CatalogueServer {
    child: Child,
    /// Its bare base URL (no `/api`).
    pub host: String,
    _dir: tempfile::TempDir,
}

impl CatalogueServer {
    /// Serves `catalogue` (a folder), named as the positional SOURCE.
    pub async fn start(catalogue: &Path) -> CatalogueServer {
        Self::launch(&[catalogue.as_os_str()], &[]).await
    }

    /// Runs `toolgate catalogue serve --listen 127.0.0.1:0 ARGS...` with `env` on top of a
    /// scrubbed environment, once it has announced its address.
    pub async fn launch(args: &[&std::ffi::OsStr], env: &[(&str, &str)]) -> CatalogueServer {
        let dir = tempfile::tempdir().unwrap();
        let mut cmd = command(dir.path(), env);
        cmd.args(["catalogue", "serve", "--listen", "127.0.0.1:0"]).args(args);
        cmd.stderr(Stdio::piped()).stdout(Stdio::null()).stdin(Stdio::null());
        let mut child = cmd.spawn().unwrap();
        let mut lines = BufReader::new(child.stderr.take().unwrap()).lines();
        let announce = async {
            while let Some(line) = lines.next_line().await.unwrap() {
                if let Some(rest) = line.split(" at http://").nth(1) {
                    return rest.trim_end_matches("/api").to_owned();
                }
            }
            panic!("catalogue serve exited without announcing its address");
        };
        let addr = tokio::time::timeout(Duration::from_secs(30), announce)
            .await
            .expect("catalogue serve starts");
        // Keep draining stderr so the child never blocks on a full pipe.
        tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
        CatalogueServer {
            child,
            host: format!("http://{addr}"),
            _dir: dir,
        }
    }

    /// Kills the server and waits until it is gone.
    pub async fn kill(&mut self) {
        self.child.kill().await.unwrap();
    }
}

/// A catalogue API scripted by the test, served in-process on 127.0.0.1.
#[derive(Clone)]
pub struct ScriptedApi {
    /// Its bare base URL.
    pub host: String,
    /// Requests to `GET /api/tools` so far.
    pub list_hits: Arc<AtomicUsize>,
    /// Requests to `.../run` so far.
    pub run_hits: Arc<AtomicUsize>,
    /// The manifests `GET /api/tools` returns.
    pub tools: Arc<Mutex<Vec<Value>>>,
    /// Keys `GET /api/tools` returns beside `tools` (`resources`, `prompts`). By default,
    /// none.
    pub beside: Arc<Mutex<serde_json::Map<String, Value>>>,
    /// Authorization headers seen.
    pub auth: Arc<Mutex<Vec<String>>>,
}

impl ScriptedApi {
    /// Serves `tools`. `/run` answers `{"ran": "remote", ...}`, except for the slugs
    /// `rate-limited` (429, Retry-After 7), `server-error` (503), `forbidden` (401),
    /// `slow` (answers after 5 s), `huge` (a 5,000-letter value) and `chatty` (300,000
    /// characters of stdout). `/source` serves JS answering `{"ran": "local"}` for
    /// every tool whose manifest has a `runtime`.
    pub async fn start(tools: Vec<Value>) -> ScriptedApi {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let api = ScriptedApi {
            host: format!("http://{}", listener.local_addr().unwrap()),
            list_hits: Arc::default(),
            run_hits: Arc::default(),
            tools: Arc::new(Mutex::new(tools)),
            beside: Arc::default(),
            auth: Arc::default(),
        };
        let app = Router::new()
            .route("/api/tools", get(scripted_list))
            .route("/api/tools/{slug}/source", get(scripted_source))
            .route("/api/tools/{slug}/run", post(scripted_run))
            .with_state(api.clone());
        tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
        api
    }
}

async fn scripted_list(State(api): State<ScriptedApi>, headers: axum::http::HeaderMap) -> Json<Value> {
    api.list_hits.fetch_add(1, Ordering::SeqCst);
    if let Some(auth) = headers.get("authorization").and_then(|v| v.to_str().ok()) {
        api.auth.lock().unwrap().push(auth.to_owned());
    }
    let mut doc = api.beside.lock().unwrap().clone();
    doc.insert("tools".into(), json!(api.tools.lock().unwrap().clone()));
    Json(Value::Object(doc))
}

async fn scripted_source(State(api): State<ScriptedApi>, UrlPath(slug): UrlPath<String>) -> Response {
    let has = api
        .tools
        .lock()
        .unwrap()
        .iter()
        .any(|t| t["slug"] == slug.as_str() && t.get("runtime").is_some());
    if !has {
        return (
            StatusCode::NOT_FOUND,
            Json(json!({"success": false, "error": "no source", "code": "NO_SOURCE", "retryable": false})),
        )
            .into_response();
    }
    Json(json!({"runtime": "javascript", "source": "function run(p) { return { ran: 'local', params: p }; }"}))
        .into_response()
}

async fn scripted_run(
    State(api): State<ScriptedApi>,
    UrlPath(slug): UrlPath<String>,
    Json(body): Json<Value>,
) -> Response {
    api.run_hits.fetch_add(1, Ordering::SeqCst);
    let err = |status: u16, code: &str| {
        let body =
            json!({"success": false, "error": format!("scripted {code}"), "code": code, "retryable": status >= 500});
        (StatusCode::from_u16(status).unwrap(), Json(body)).into_response()
    };
    match slug.as_str() {
        "rate-limited" => {
            let mut r = err(429, "RATE_LIMITED");
            r.headers_mut().insert("retry-after", "7".parse().unwrap());
            r
        }
        "server-error" => err(503, "API_ERROR"),
        "huge" => Json(json!({"success": true, "result": {"text": "x".repeat(5_000)}, "duration_ms": 1})).into_response(),
        "chatty" => Json(json!({"success": true, "result": {"ran": "remote"}, "stdout": "y".repeat(300_000), "stderr": "z", "duration_ms": 1}))
            .into_response(),
        "forbidden" => err(401, "UNAUTHORIZED"),
        "slow" => {
            tokio::time::sleep(Duration::from_secs(5)).await;
            Json(json!({"success": true, "result": {"ran": "remote"}, "duration_ms": 5000})).into_response()
        }
        _ => Json(json!({"success": true, "result": {"ran": "remote", "slug": slug, "params": body["params"]}, "duration_ms": 1})).into_response(),
    }
}

/// A manifest for the scripted API: `{"type":"object"}` input, with or without runtime.
pub fn manifest(slug: &str, with_source: bool) -> Value {
    let mut m = json!({
        "slug": slug,
        "name": slug,
        "description": format!("Scripted tool {slug}."),
        "input_schema": {"type": "object", "properties": {"n": {"type": "integer"}}},
    });
    if with_source {
        m["runtime"] = json!("javascript");
    }
    m
}

/// Speaks raw JSON-RPC to a fresh server: sends `initialize`, `initialized`, then each of
/// `requests` (given ids 1, 2, ...), reads until every request has its answer, closes
/// stdin, and returns every line the server wrote on stdout, parsed, in order, plus its
/// stderr. For what rmcp's client cannot send (a request without a progress token) or
/// must not hide (the exact bytes on stdout).
pub async fn raw_exchange(env: &[(&str, &str)], requests: &[Value]) -> (Vec<Value>, String) {
    use tokio::io::AsyncWriteExt;
    let dir = tempfile::tempdir().unwrap();
    let mut cmd = command(dir.path(), env);
    cmd.stdin(Stdio::piped()).stdout(Stdio::piped()).stderr(Stdio::piped());
    let mut child = cmd.spawn().unwrap();
    let mut stdin = child.stdin.take().unwrap();
    let mut frames = vec![
        json!({"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "raw", "version": "1"}}}),
        json!({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ];
    frames.extend(requests.iter().enumerate().map(|(i, r)| {
        let mut r = r.clone();
        r["jsonrpc"] = json!("2.0");
        r["id"] = json!(i + 1);
        r
    }));
    for frame in &frames {
        stdin.write_all(format!("{frame}\n").as_bytes()).await.unwrap();
    }
    let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
    let mut out = Vec::new();
    let mut answered = 0;
    while answered < requests.len() + 1 {
        let line = lines
            .next_line()
            .await
            .unwrap()
            .expect("the server closed stdout before answering everything");
        let msg: Value =
            serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}"));
        if msg.get("id").is_some() && msg.get("method").is_none() {
            answered += 1;
        }
        out.push(msg);
    }
    drop(stdin);
    while let Some(line) = lines.next_line().await.unwrap() {
        out.push(serde_json::from_str(&line).unwrap_or_else(|e| panic!("stdout line is not JSON ({e}): {line:?}")));
    }
    let mut stderr = String::new();
    child.stderr.take().unwrap().read_to_string(&mut stderr).await.unwrap();
    child.wait().await.unwrap();
    (out, stderr)
}

/// A structured answer without its `run_id` (checked to be there): the bodies each family has always given
/// compared whole, with the one field toolgate adds to every run.
pub fn without_run_id(v: &Value) -> Value {
    assert!(
        v["run_id"].as_str().is_some_and(|id| id.starts_with('r')),
        "no run_id: {v}"
    );
    let mut v = v.clone();
    if let Some(map) = v.as_object_mut() {
        map.remove("run_id");
    }
    v
}
