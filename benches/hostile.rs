//! What one caller's worst inputs cost the others: the release binary as `toolgate --http
//! 127.0.0.1:0`, one session pinging back to back (its own key), first alone, then while
//! 20 anonymous attackers send the worst inputs found against it in a loop — a recursive
//! union failing 30 levels down (two shapes), 99,000 distinct secret-keyed strings to
//! record (past the run rate, so most are refused), lookahead patterns on 4,000-character
//! values, a body of 99,000 `{}`, a body past the value limit, and `initialize` with an
//! unreadable `Mcp-Session-Id`. Prints the pinger's p50/p99/max alone and under attack,
//! the attacks sent by kind, and the server's CPU seconds and peak RSS. Goal: p99 under
//! attack ≤ 5 ms.
//!
//! `cargo bench --bench hostile` (`TOOLGATE_HOSTILE_PINGS` pings per phase, default
//! 3,000; `TOOLGATE_HOSTILE_ATTACKERS`, default 20; `TOOLGATE_BENCH_BIN` the binary).

#[path = "common/http.rs"]
mod http;
#[path = "common/runtime.rs"]
mod runtime;

use std::path::Path;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use http::{Session, rss_mib, setting, start_with};
use serde_json::{Value, json};

/// A tool folder `slug` in `dir` with `schema`, whose code returns `{ok: true}`.
fn tool(dir: &Path, slug: &str, schema: Value) -> std::io::Result<()> {
    let folder = dir.join(slug);
    std::fs::create_dir_all(&folder)?;
    let manifest = json!({"slug": slug, "name": slug, "description": slug, "input_schema": schema, "runtime": "javascript", "source": "index.js"});
    std::fs::write(folder.join("tool.json"), manifest.to_string())?;
    std::fs::write(folder.join("index.js"), "function run(params) { return {ok: true}; }\n")
}

/// The catalogue the attacks aim at.
fn catalogue(dir: &Path) -> std::io::Result<()> {
    let branch =
        json!({"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/N"}}}});
    let mut strict = branch.clone();
    strict["required"] = json!(["x"]);
    tool(
        dir,
        "any-of",
        json!({"type": "object", "properties": {"tree": {"$ref": "#/$defs/N"}}, "$defs": {"N": {"anyOf": [branch, strict]}}}),
    )?;
    tool(
        dir,
        "union",
        json!({
            "type": "object",
            "properties": {"tree": {"$ref": "#/$defs/Node"}},
            "$defs": {
                "Node": {"anyOf": [{"$ref": "#/$defs/Item"}, {"$ref": "#/$defs/Group"}]},
                "Item": {"type": "object", "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}},
                "Group": {"type": "object", "properties": {"title": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}},
            },
        }),
    )?;
    tool(
        dir,
        "lookahead",
        json!({"type": "object", "properties": {"texts": {"type": "array", "items": {"type": "string", "pattern": "(?=.*[A-Z])(?=.*[0-9])(?=.*[!@#]).{12,}"}}}}),
    )?;
    tool(dir, "echo", json!({"type": "object"}))
}

/// The attack bodies, serialised once: `(kind, JSON-RPC request text)`.
fn attacks() -> Vec<(&'static str, String)> {
    let call = |name: &str, arguments: Value| {
        json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": name, "arguments": arguments}})
            .to_string()
    };
    let mut tree = json!(5);
    for _ in 0..30 {
        tree = json!({"children": [tree]});
    }
    let secrets: Vec<String> = (0..99_000).map(|i| format!("s{i:07}")).collect();
    let texts = vec!["a".repeat(4_000); 8];
    let empties = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"a":[{}{{}}]}}}}"#,
        "{},".repeat(99_000)
    );
    let past = format!(
        r#"{{"jsonrpc":"2.0","id":1,"method":"ping","params":{{"a":[{}{{}}]}}}}"#,
        "{},".repeat(1_000_000)
    );
    vec![
        ("any-of depth 30", call("any-of", json!({"tree": tree.clone()}))),
        ("union depth 30", call("union", json!({"tree": tree}))),
        ("99,000 secrets", call("echo", json!({"password": secrets}))),
        ("lookahead 8 × 4,000", call("lookahead", json!({"texts": texts}))),
        ("99,000 {}", empties),
        ("1,000,000 {}", past),
    ]
}

/// Sorted latencies' value at quantile `q`.
fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let i = ((sorted.len() as f64 - 1.0) * q).round() as usize;
    sorted.get(i).copied().unwrap_or_default()
}

/// `n` pings from `session`, one after another; their latencies, sorted.
async fn pings(session: &mut Session, n: u64) -> Vec<Duration> {
    let mut taken = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let clock = Instant::now();
        if session.send("ping", json!({})).await.is_none() {
            eprintln!("a ping failed");
        }
        taken.push(clock.elapsed());
    }
    taken.sort();
    taken
}

fn row(label: &str, taken: &[Duration]) {
    let ms = |d: Duration| d.as_secs_f64() * 1000.0;
    println!(
        "| {label} | {} | {:.2} | {:.2} | {:.2} |",
        taken.len(),
        ms(quantile(taken, 0.5)),
        ms(quantile(taken, 0.99)),
        ms(taken.last().copied().unwrap_or_default())
    );
}

/// CPU seconds the server process has used.
fn cpu_seconds(pid: u32) -> f64 {
    // SAFETY: sysconf reads a constant of the running system.
    let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let fields: Vec<f64> = rest.split_whitespace().map(|f| f.parse().unwrap_or(0.0)).collect();
    (fields.get(11).copied().unwrap_or(0.0) + fields.get(12).copied().unwrap_or(0.0)) / tick
}

async fn bench() -> Result<(), String> {
    let dir = tempfile::tempdir().map_err(|e| e.to_string())?;
    let tools = dir.path().join("tools");
    catalogue(&tools).map_err(|e| e.to_string())?;
    let keys = dir.path().join("keys.json");
    let out = std::process::Command::new(http::program())
        .args(["keys", "new", "--scopes", "run,search", "--id", "pinger", "--file"])
        .arg(&keys)
        .output()
        .map_err(|e| e.to_string())?;
    let key = String::from_utf8_lossy(&out.stdout).trim().to_owned();
    let env = [
        ("TOOLGATE_CATALOGUE", tools.display().to_string()),
        ("TOOLGATE_ADVERTISE", "all".to_owned()),
        ("TOOLGATE_KEYS_FILE", keys.display().to_string()),
        ("TOOLGATE_ANONYMOUS_PER_MINUTE", "30".to_owned()),
        ("TOOLGATE_HTTP_MAX_SESSIONS_PER_PRINCIPAL", "1024".to_owned()),
    ];
    let (child, url) = start_with(&["--http", "127.0.0.1:0", "--allow-anonymous"], &env)
        .await
        .ok_or("the server did not start")?;
    let pid = child.id().ok_or("no pid")?;
    let mut headers = reqwest::header::HeaderMap::new();
    let bearer = format!("Bearer {key}").parse().map_err(|_| "bad key")?;
    headers.insert(reqwest::header::AUTHORIZATION, bearer);
    let keyed = reqwest::Client::builder()
        .default_headers(headers)
        .build()
        .map_err(|e| e.to_string())?;
    let mut pinger = Session::open(keyed, &url).await.ok_or("the pinger's session")?;
    let n = setting("TOOLGATE_HOSTILE_PINGS", 3_000);
    pings(&mut pinger, 200).await;
    let alone = pings(&mut pinger, n).await;
    let attackers = setting("TOOLGATE_HOSTILE_ATTACKERS", 20) as usize;
    let attacks = Arc::new(attacks());
    let sent: Arc<Vec<AtomicU64>> = Arc::new(attacks.iter().map(|_| AtomicU64::new(0)).collect());
    let stop = Arc::new(AtomicBool::new(false));
    let cpu_before = cpu_seconds(pid);
    let mut peak_rss = rss_mib(pid);
    let mut handles = Vec::new();
    for a in 0..attackers {
        let (attacks, sent, stop, url) = (attacks.clone(), sent.clone(), stop.clone(), url.clone());
        handles.push(tokio::spawn(async move {
            let http = reqwest::Client::new();
            let mut session = Session::open(http.clone(), &url).await;
            let mut i = a;
            while !stop.load(Ordering::Relaxed) {
                let kind = i % (attacks.len() + 1);
                i += 1;
                let mut request = http
                    .post(&url)
                    .header("content-type", "application/json")
                    .header("accept", "application/json, text/event-stream")
                    .header("mcp-protocol-version", "2025-11-25");
                if kind == attacks.len() {
                    // `initialize` with an unreadable session id.
                    let init = json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "x", "version": "1"}}});
                    let value = reqwest::header::HeaderValue::from_bytes(b"\xc3\xa9").ok();
                    if let Some(value) = value {
                        request = request.header("mcp-session-id", value);
                    }
                    let _ = request.json(&init).send().await.map(|r| r.bytes());
                    continue;
                }
                if let Some(s) = &session {
                    request = request.header("mcp-session-id", s.id());
                }
                match request.body(attacks[kind].1.clone()).send().await {
                    Ok(answer) => {
                        let _ = answer.bytes().await;
                        sent[kind].fetch_add(1, Ordering::Relaxed);
                    }
                    Err(_) => session = Session::open(http.clone(), &url).await,
                }
            }
        }));
    }
    let sampler = {
        let stop = stop.clone();
        tokio::spawn(async move {
            let mut peak = 0f64;
            while !stop.load(Ordering::Relaxed) {
                peak = peak.max(rss_mib(pid));
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
            peak
        })
    };
    let attacked = pings(&mut pinger, n).await;
    stop.store(true, Ordering::Relaxed);
    for h in handles {
        let _ = h.await;
    }
    peak_rss = peak_rss.max(sampler.await.unwrap_or(0.0));
    let cpu = cpu_seconds(pid) - cpu_before;
    println!("\n| pinger (own key) | pings | p50 ms | p99 ms | max ms |\n|---|---|---|---|---|");
    row("alone", &alone);
    row(&format!("under {attackers} attackers"), &attacked);
    println!("\n| attack | sent |\n|---|---|");
    for ((kind, _), count) in attacks.iter().zip(sent.iter()) {
        println!("| {kind} | {} |", count.load(Ordering::Relaxed));
    }
    println!("\nserver CPU under attack: {cpu:.1} s; peak RSS {peak_rss:.0} MiB; goal: p99 under attack ≤ 5 ms");
    drop(child);
    Ok(())
}

fn main() {
    let Some(runtime) = runtime::two_workers() else { return };
    if let Err(e) = runtime.block_on(bench()) {
        eprintln!("hostile bench: {e}");
    }
}
