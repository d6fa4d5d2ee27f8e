//! The scale table of docs/performance.md: the release binary started over stdio on the
//! embedded catalogue and on 1k / 10k / 100k synthetic tools (a `.json` catalogue file
//! written to a temp folder), speaking raw JSON-RPC lines. For each it reports:
//! `initialize` answered (from spawn), the first search answered (from spawn, sent right
//! after `initialize`, so it waits for the catalogue build), RSS after that search
//! (`VmRSS`), the first `tools/list` page (cold: the first listing of the snapshot), the
//! meta `list` first page (warm, median of 21), and search p50/p99 over the synthetic
//! query set (600 searches), and the exit (from closing stdin). Times are measured by the
//! client, stdio round trip included.
//!
//! `cargo bench --bench scale`; `TOOLGATE_BENCH_BIN` measures another build,
//! `TOOLGATE_SCALE_SIZES=1000,10000` other sizes (0 is the embedded catalogue),
//! `TOOLGATE_SCALE_DIR` keeps the catalogue files there. `TOOLGATE_SEARCH` and
//! `TOOLGATE_EMBED_CACHE` are passed on (everything else is cleared): the default hybrid
//! search embeds a catalogue's tools on a thread of its own once the first search has
//! come, which costs the model's pages and a core while it runs; `TOOLGATE_SEARCH=lexical`
//! measures the catalogue alone.

#[path = "common/synthetic.rs"]
mod synthetic;

use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Child, ChildStdin, ChildStdout, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

/// How many times the query set runs per size (200 queries each).
const ROUNDS: usize = 3;

fn main() {
    let program = std::env::var("TOOLGATE_BENCH_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_toolgate").to_owned());
    let (_temp, catalogues) = match synthetic::scale_files(&[0, 1_000, 10_000, 100_000]) {
        Ok(files) => files,
        Err(e) => {
            eprintln!("{e}");
            return;
        }
    };
    println!(
        "| tools | initialize | first search | RSS after it | tools/list page | meta list page | search p50 / p99 | exit |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for (n, catalogue) in catalogues {
        match measure(&program, catalogue.as_deref()) {
            Ok(row) => println!(
                "| {} | {:.1} ms | {:.0} ms | {:.0} MB | {:.1} ms ({} KB) | {:.2} ms ({} KB) | {:.3} / {:.3} ms | {:.0} ms |",
                if n == 0 { "embedded".to_owned() } else { n.to_string() },
                ms(row.initialize),
                ms(row.first_search),
                row.rss_kb as f64 / 1024.0,
                ms(row.list_page),
                row.list_bytes / 1024,
                ms(row.meta_list),
                row.meta_list_bytes / 1024,
                ms(row.p50),
                ms(row.p99),
                ms(row.exit),
            ),
            Err(e) => eprintln!("{n} tools: {e}"),
        }
    }
}

/// One row of the table.
struct Row {
    initialize: Duration,
    first_search: Duration,
    rss_kb: u64,
    list_page: Duration,
    list_bytes: usize,
    meta_list: Duration,
    meta_list_bytes: usize,
    p50: Duration,
    p99: Duration,
    /// From closing the server's stdin to its exit.
    exit: Duration,
}

/// The server as a child, spoken to in JSON-RPC lines.
struct Server {
    child: Child,
    /// `None` once closed.
    stdin: Option<ChildStdin>,
    stdout: BufReader<ChildStdout>,
    next_id: u64,
}

impl Server {
    fn spawn(program: &str, catalogue: Option<&Path>) -> Result<Server, String> {
        let mut cmd = Command::new(program);
        cmd.env_clear()
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::null());
        if let Some(path) = catalogue {
            cmd.env("TOOLGATE_CATALOGUE", path);
        }
        for name in ["TOOLGATE_SEARCH", "TOOLGATE_EMBED_CACHE"] {
            if let Some(value) = std::env::var_os(name) {
                cmd.env(name, value);
            }
        }
        let mut child = cmd.spawn().map_err(|e| format!("cannot start {program}: {e}"))?;
        let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
            return Err("no pipes".to_owned());
        };
        Ok(Server {
            child,
            stdin: Some(stdin),
            stdout: BufReader::new(stdout),
            next_id: 1,
        })
    }

    fn send(&mut self, message: &Value) -> Result<(), String> {
        let mut line = serde_json::to_vec(message).map_err(|e| e.to_string())?;
        line.push(b'\n');
        let stdin = self.stdin.as_mut().ok_or("stdin is closed")?;
        stdin.write_all(&line).map_err(|e| e.to_string())
    }

    /// Sends a request and reads lines until its answer; returns the answer, its size
    /// and the time until its line arrived (before it is parsed here, so the driver's
    /// own JSON work is not counted).
    fn request(&mut self, method: &str, params: Value) -> Result<(Value, usize, Duration), String> {
        let id = self.next_id;
        self.next_id += 1;
        let sent = Instant::now();
        self.send(&json!({"jsonrpc": "2.0", "id": id, "method": method, "params": params}))?;
        let mut line = String::new();
        let marks = [format!("\"id\":{id},"), format!("\"id\":{id}}}")];
        loop {
            line.clear();
            if self.stdout.read_line(&mut line).map_err(|e| e.to_string())? == 0 {
                return Err(format!("the server closed stdout before answering {method}"));
            }
            let took = sent.elapsed();
            // An answer's id is near the start of its line (rmcp writes `jsonrpc`, then `id`).
            let head = &line[..line.len().min(64)];
            if !marks.iter().any(|m| head.contains(m.as_str())) {
                continue;
            }
            let message: Value = serde_json::from_str(&line).map_err(|e| e.to_string())?;
            if let Some(error) = message.get("error") {
                return Err(format!("{method}: {error}"));
            }
            return Ok((message, line.len(), took));
        }
    }

    fn meta(&mut self, args: Value) -> Result<(Value, usize, Duration), String> {
        self.request("tools/call", json!({"name": "toolgate", "arguments": args}))
    }

    /// Closes stdin, as a client ending the session does, and waits for the exit.
    fn end(&mut self) -> Result<Duration, String> {
        drop(self.stdin.take());
        let closed = Instant::now();
        self.child.wait().map_err(|e| e.to_string())?;
        Ok(closed.elapsed())
    }

    fn rss_kb(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap_or_default();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap_or(0)
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn measure(program: &str, catalogue: Option<&Path>) -> Result<Row, String> {
    let spawned = Instant::now();
    let mut server = Server::spawn(program, catalogue)?;
    server.request(
        "initialize",
        json!({"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "scale-bench", "version": "0"}}),
    )?;
    let initialize = spawned.elapsed();
    server.send(&json!({"jsonrpc": "2.0", "method": "notifications/initialized"}))?;
    let (answer, _, _) = server.meta(json!({"command": "search", "query": "convert json"}))?;
    let first_search = spawned.elapsed();
    if answer["result"]["isError"] == json!(true) {
        return Err(format!("the first search failed: {answer}"));
    }
    let rss_kb = server.rss_kb();
    let (_, list_bytes, list_page) = server.request("tools/list", json!({}))?;
    // Meta list once the snapshot is warm, as a client pays for it: the median of 21.
    let mut lists = Vec::new();
    let mut meta_list_bytes = 0;
    for _ in 0..21 {
        let (_, bytes, took) = server.meta(json!({"command": "list"}))?;
        meta_list_bytes = bytes;
        lists.push(took);
    }
    lists.sort();
    let meta_list = lists[lists.len() / 2];
    let mut samples = Vec::new();
    for _ in 0..ROUNDS {
        for q in synthetic::queries() {
            let (_, _, took) = server.meta(json!({"command": "search", "query": q}))?;
            samples.push(took);
        }
    }
    samples.sort();
    let p = |q: f64| samples[((samples.len() as f64 - 1.0) * q) as usize];
    let exit = server.end()?;
    Ok(Row {
        initialize,
        first_search,
        rss_kb,
        list_page,
        list_bytes,
        meta_list,
        meta_list_bytes,
        p50: p(0.5),
        p99: p(0.99),
        exit,
    })
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
