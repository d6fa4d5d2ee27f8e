//! A toolgate started as `--http 127.0.0.1:0`, and MCP sessions to it spoken as plain
//! JSON-RPC over HTTP (reqwest), one request at a time per session: what the load
//! benchmarks drive.

#![allow(dead_code)]

use std::process::Stdio;

use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};

/// The binary measured: `TOOLGATE_BENCH_BIN`, or this build's.
pub fn program() -> String {
    std::env::var("TOOLGATE_BENCH_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_toolgate").to_owned())
}

/// A numeric setting from the environment, or `default`.
pub fn setting(name: &str, default: u64) -> u64 {
    std::env::var(name).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

/// Starts the gateway over HTTP on a free port with a clean environment plus `env`;
/// the child and its MCP URL. See [`start_with`].
pub async fn start(env: &[(&str, String)]) -> Option<(Child, String)> {
    start_with(&["--http", "127.0.0.1:0"], env).await
}

/// Starts the binary with `args` (a server on port 0), a clean environment plus `env`,
/// and the per-principal limits lifted (one process is every caller here, so the figures
/// measure the server, not its rate limits); the child and the URL it announced on stderr.
pub async fn start_with(args: &[&str], env: &[(&str, String)]) -> Option<(Child, String)> {
    let mut command = Command::new(program());
    command
        .args(args)
        .env_clear()
        .env("TOOLGATE_HTTP_MAX_SESSIONS", "1024")
        .env("TOOLGATE_REQUESTS_PER_MINUTE", "1000000000")
        .env("TOOLGATE_ANONYMOUS_PER_MINUTE", "1000000000")
        .env("TOOLGATE_PRINCIPAL_CONCURRENT_RUNS", "100000");
    for (name, value) in env {
        command.env(name, value);
    }
    let mut child = command
        .stdin(Stdio::null())
        .stdout(Stdio::null())
        .stderr(Stdio::piped())
        .kill_on_drop(true)
        .spawn()
        .map_err(|e| eprintln!("cannot start {}: {e}", program()))
        .ok()?;
    let mut lines = BufReader::new(child.stderr.take()?).lines();
    while let Ok(Some(line)) = lines.next_line().await {
        if let Some(url) = line.split(" at ").nth(1).filter(|u| u.starts_with("http://")) {
            let url = url.trim().to_owned();
            tokio::spawn(async move { while let Ok(Some(_)) = lines.next_line().await {} });
            return Some((child, url));
        }
    }
    eprintln!("{} did not announce its address", program());
    None
}

/// The server's resident set, in MiB.
pub fn rss_mib(pid: u32) -> f64 {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap_or_default();
    let kib: f64 = status
        .lines()
        .find_map(|l| l.strip_prefix("VmRSS:"))
        .and_then(|v| v.split_whitespace().next()?.parse().ok())
        .unwrap_or(0.0);
    kib / 1024.0
}

/// One MCP session (initialized), sending one request at a time.
pub struct Session {
    http: reqwest::Client,
    url: String,
    id: String,
    next: u64,
}

impl Session {
    /// Opens a session: `initialize`, then `notifications/initialized`.
    pub async fn open(http: reqwest::Client, url: &str) -> Option<Session> {
        let mut session = Session {
            http,
            url: url.to_owned(),
            id: String::new(),
            next: 1,
        };
        let init = json!({"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "load", "version": "1"}});
        let response = session.send("initialize", init).await?;
        session.id = response.0?;
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        session.post(&note).await.ok()?;
        Some(session)
    }

    /// Its `Mcp-Session-Id`.
    pub fn id(&self) -> &str {
        &self.id
    }

    async fn post(&self, body: &Value) -> reqwest::Result<reqwest::Response> {
        let mut request = self
            .http
            .post(&self.url)
            .header("content-type", "application/json")
            .header("accept", "application/json, text/event-stream")
            .header("mcp-protocol-version", "2025-11-25")
            .json(body);
        if !self.id.is_empty() {
            request = request.header("mcp-session-id", &self.id);
        }
        request.send().await
    }

    /// Sends one request; the session id the server named, and whether an answer came
    /// that is not an error.
    pub async fn send(&mut self, method: &str, params: Value) -> Option<(Option<String>, bool)> {
        let (session, _, answered) = self.exchange(method, params).await?;
        Some((session, answered))
    }

    /// Sends one request; the session id the server named, the answer's body, and whether
    /// it is an answer that is not an error.
    pub async fn exchange(&mut self, method: &str, params: Value) -> Option<(Option<String>, String, bool)> {
        let id = self.next;
        self.next += 1;
        let response = self
            .post(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))
            .await
            .ok()?;
        let session = response
            .headers()
            .get("mcp-session-id")
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned);
        let body = response.text().await.ok()?;
        let answered = body.contains(&format!("\"id\":{id}")) && !body.contains("\"isError\":true");
        Some((session, body, answered))
    }
}
