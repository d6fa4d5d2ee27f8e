//! Load on `toolgate catalogue serve`: the release binary serving the embedded catalogue
//! on 127.0.0.1:0, 64 keep-alive HTTP/1.1 connections from this process, each sending
//! its next request as the last one is answered, for `GET /api/health` (the floor),
//! `GET /api/tools` (200, with `Accept-Encoding: gzip, br` as clients send it, and
//! uncompressed), the same with `If-None-Match` (304) and `POST
//! /api/tools/base64-codec/run`. Prints answers/s, p50/p99 and the server's CPU use
//! (cores busy) as table rows for docs/performance.md.
//!
//! The client is a minimal HTTP/1.1 reader over tokio's `TcpStream` rather than reqwest,
//! so the load tool takes as little of the shared cores as it can: on a 2-core machine
//! it still competes with the server for them, and what it takes is not the server's.
//!
//! `cargo bench --bench api_load` (20 s per request kind; `TOOLGATE_LOAD_SECONDS`
//! changes it, `TOOLGATE_LOAD_CONNECTIONS` the connection count, `TOOLGATE_BENCH_BIN`
//! the binary, so an older build can be measured the same way).

#[path = "common/http.rs"]
mod http;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;

use http::{program, setting};

/// `catalogue serve` on a free port; the child and the address (`host:port`) it serves.
async fn start() -> Option<(tokio::process::Child, String)> {
    let (child, url) = http::start_with(&["catalogue", "serve", "--listen", "127.0.0.1:0"], &[]).await?;
    let addr = url.trim_start_matches("http://").trim_end_matches("/api").to_owned();
    Some((child, addr))
}

/// CPU seconds the process has used (user + system).
fn cpu_seconds(pid: u32) -> f64 {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).unwrap_or_default();
    // Fields after the command name, which is in parentheses and may hold spaces.
    let after = stat.rsplit_once(')').map_or("", |(_, rest)| rest);
    let fields: Vec<&str> = after.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    // utime and stime are fields 14 and 15 of stat(5); here 11 and 12 after the name.
    // SAFETY: sysconf has no preconditions.
    let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    (ticks(11) + ticks(12)) / hz.max(1.0)
}

/// One keep-alive connection.
struct Connection {
    stream: BufReader<TcpStream>,
    line: String,
    body: Vec<u8>,
}

impl Connection {
    async fn open(addr: &str) -> Option<Connection> {
        let stream = TcpStream::connect(addr).await.ok()?;
        stream.set_nodelay(true).ok()?;
        Some(Connection {
            stream: BufReader::new(stream),
            line: String::new(),
            body: Vec::new(),
        })
    }

    /// Sends `request` (whole, headers and body) and reads the answer: its status and
    /// the value of `header` when asked for one.
    async fn exchange(&mut self, request: &[u8], header: Option<&str>) -> Option<(u16, Option<String>)> {
        self.stream.get_mut().write_all(request).await.ok()?;
        self.line.clear();
        self.stream.read_line(&mut self.line).await.ok()?;
        let status: u16 = self.line.split_whitespace().nth(1)?.parse().ok()?;
        let (mut length, mut found) = (0usize, None);
        loop {
            self.line.clear();
            if self.stream.read_line(&mut self.line).await.ok()? == 0 {
                return None;
            }
            let line = self.line.trim_end();
            if line.is_empty() {
                break;
            }
            let (name, value) = line.split_once(':')?;
            if name.eq_ignore_ascii_case("content-length") {
                length = value.trim().parse().ok()?;
            } else if name.eq_ignore_ascii_case("transfer-encoding") {
                eprintln!("chunked answers are not read by this client");
                return None;
            } else if header.is_some_and(|h| name.eq_ignore_ascii_case(h)) {
                found = Some(value.trim().to_owned());
            }
        }
        self.body.resize(length, 0);
        self.stream.read_exact(&mut self.body).await.ok()?;
        Some((status, found))
    }
}

/// Runs `connections` connections sending `request` back to back for `seconds`, each
/// answer expected to have status `expect`; prints one table row.
async fn load(addr: &str, pid: u32, label: &str, request: Vec<u8>, expect: u16, connections: usize, seconds: u64) {
    let mut opened = Vec::new();
    for _ in 0..connections {
        match Connection::open(addr).await {
            Some(c) => opened.push(c),
            None => {
                eprintln!("cannot connect to {addr}");
                return;
            }
        }
    }
    let request: Arc<[u8]> = request.into();
    let stop = Arc::new(AtomicBool::new(false));
    let cpu_before = cpu_seconds(pid);
    let started = Instant::now();
    let mut tasks = Vec::new();
    for mut connection in opened {
        let (stop, request) = (stop.clone(), request.clone());
        tasks.push(tokio::spawn(async move {
            let (mut latencies, mut failed) = (Vec::new(), 0u64);
            while !stop.load(Ordering::Relaxed) {
                let sent = Instant::now();
                match connection.exchange(&request, None).await {
                    Some((status, _)) if status == expect => latencies.push(sent.elapsed()),
                    Some(_) => failed += 1,
                    None => {
                        failed += 1;
                        break;
                    }
                }
            }
            (latencies, failed)
        }));
    }
    tokio::time::sleep(Duration::from_secs(seconds)).await;
    stop.store(true, Ordering::Relaxed);
    let (mut all, mut failed) = (Vec::new(), 0);
    for task in tasks {
        if let Ok((latencies, f)) = task.await {
            all.extend(latencies);
            failed += f;
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    let cores = (cpu_seconds(pid) - cpu_before) / elapsed;
    all.sort();
    let pick = |q: f64| {
        all.get(((all.len() as f64 * q) as usize).min(all.len().saturating_sub(1)))
            .copied()
    };
    let ms = |d: Option<Duration>| d.map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0);
    println!(
        "| {label} | {:.0} | {:.2} ms | {:.2} ms | {failed} | {cores:.2} |",
        all.len() as f64 / elapsed,
        ms(pick(0.5)),
        ms(pick(0.99)),
    );
}

fn get(path: &str, extra: &str) -> Vec<u8> {
    format!("GET {path} HTTP/1.1\r\nhost: 127.0.0.1\r\n{extra}\r\n").into_bytes()
}

fn main() {
    let Ok(runtime) = tokio::runtime::Builder::new_multi_thread().enable_all().build() else {
        eprintln!("cannot start a tokio runtime");
        return;
    };
    let seconds = setting("TOOLGATE_LOAD_SECONDS", 20);
    let connections = usize::try_from(setting("TOOLGATE_LOAD_CONNECTIONS", 64)).unwrap_or(64);
    runtime.block_on(async {
        let Some((child, addr)) = start().await else { return };
        let Some(pid) = child.id() else { return };
        let compressed = "accept-encoding: gzip, br\r\n";
        // The ETag a client holds after its first list request.
        let Some(mut first) = Connection::open(&addr).await else { return };
        let Some((200, Some(etag))) = first.exchange(&get("/api/tools", compressed), Some("etag")).await else {
            eprintln!("GET /api/tools did not answer 200 with an ETag");
            return;
        };
        drop(first);
        let body = r#"{"params":{"mode":"encode","input":"hello"}}"#;
        let run = format!(
            "POST /api/tools/base64-codec/run HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: {}\r\n\r\n{body}",
            body.len()
        )
        .into_bytes();
        println!("{connections} connections, {seconds} s per request, {}", program());
        println!("| request | answers/s | p50 | p99 | failed | server cores busy |");
        println!("|---|---|---|---|---|---|");
        load(&addr, pid, "GET /api/health", get("/api/health", ""), 200, connections, seconds).await;
        let list = get("/api/tools", compressed);
        load(&addr, pid, "GET /api/tools (gzip, br)", list, 200, connections, seconds).await;
        load(&addr, pid, "GET /api/tools (identity)", get("/api/tools", ""), 200, connections, seconds).await;
        let held = get("/api/tools", &format!("{compressed}if-none-match: {etag}\r\n"));
        load(&addr, pid, "GET /api/tools, If-None-Match (304)", held, 304, connections, seconds).await;
        load(&addr, pid, "POST /api/tools/base64-codec/run", run, 200, connections, seconds).await;
        drop(child);
    });
}
