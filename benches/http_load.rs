//! Load over Streamable HTTP: the release binary as `toolgate --http 127.0.0.1:0`, 64
//! concurrent MCP sessions from this process, each sending its next call as the last one
//! is answered, for a protocol-only call (`ping`), an embedded catalogue tool
//! (`base64-codec`) and `run_javascript`. Prints calls/s, p50/p99 and the server's RSS
//! before, during (at 20 s and at the end) and after each run, as a table row for docs/performance.md.
//!
//! `cargo bench --bench http_load` (60 s per call kind; `TOOLGATE_LOAD_SECONDS` changes
//! it, `TOOLGATE_LOAD_SESSIONS` the session count, `TOOLGATE_LOAD_CALLS` which kinds —
//! any of `ping,tool,js` — and `TOOLGATE_BENCH_BIN` the binary; `OTEL_*` variables and
//! `TOOLGATE_TRACE_STEPS` are passed on to the server, to measure it with traces
//! exported). The
//! load runs on the same cores as the server: on a 2-core machine it takes about half.

#[path = "common/http.rs"]
mod http;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use http::{Session, program, rss_mib, setting, start};
use serde_json::{Value, json};

/// CPU seconds used so far by the server itself, and by its children (reaped ones, as
/// the kernel adds them to the server, plus live descendants: the JavaScript workers).
fn cpu_seconds(pid: u32) -> (f64, f64) {
    // SAFETY: sysconf reads a constant of the running system.
    let tick = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as f64;
    let fields = |p: u32| -> Vec<f64> {
        let stat = std::fs::read_to_string(format!("/proc/{p}/stat")).unwrap_or_default();
        // After the command name (which may hold spaces) come the fields from `state` on.
        let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
        rest.split_whitespace().map(|f| f.parse().unwrap_or(0.0)).collect()
    };
    let own = fields(pid);
    let get = |v: &Vec<f64>, i: usize| v.get(i).copied().unwrap_or(0.0) / tick;
    // Indexes from `state` (field 3): utime 14, stime 15, cutime 16, cstime 17.
    let (server, mut children) = (get(&own, 11) + get(&own, 12), get(&own, 13) + get(&own, 14));
    let mut stack = vec![pid];
    while let Some(p) = stack.pop() {
        // Each thread lists the children it started.
        let threads = std::fs::read_dir(format!("/proc/{p}/task"))
            .into_iter()
            .flatten()
            .flatten();
        let kids: String = threads
            .map(|t| std::fs::read_to_string(t.path().join("children")).unwrap_or_default())
            .collect::<Vec<_>>()
            .join(" ");
        for kid in kids.split_whitespace().filter_map(|k| k.parse::<u32>().ok()) {
            let f = fields(kid);
            children += get(&f, 11) + get(&f, 12);
            stack.push(kid);
        }
    }
    (server, children)
}

/// Runs `sessions` sessions calling `method`/`params` back to back for `seconds`.
async fn load(url: &str, pid: u32, label: &str, method: &str, params: Value, sessions: usize, seconds: u64) {
    let http = reqwest::Client::builder().pool_max_idle_per_host(sessions).build();
    let Ok(http) = http else { return };
    let mut opened = Vec::new();
    for _ in 0..sessions {
        match Session::open(http.clone(), url).await {
            Some(s) => opened.push(s),
            None => {
                eprintln!("cannot open a session");
                return;
            }
        }
    }
    let before = rss_mib(pid);
    let cpu_before = cpu_seconds(pid);
    let stop = Arc::new(AtomicBool::new(false));
    let mut tasks = Vec::new();
    for mut session in opened {
        let (stop, method, params) = (stop.clone(), method.to_owned(), params.clone());
        tasks.push(tokio::spawn(async move {
            let (mut latencies, mut failed) = (Vec::new(), 0u64);
            while !stop.load(Ordering::Relaxed) {
                let started = Instant::now();
                match session.send(&method, params.clone()).await {
                    Some((_, true)) => latencies.push(started.elapsed()),
                    _ => failed += 1,
                }
            }
            (latencies, failed)
        }));
    }
    let started = Instant::now();
    let at = |s: u64| tokio::time::sleep_until((started + Duration::from_secs(s)).into());
    at(seconds.min(20)).await;
    let at20 = rss_mib(pid);
    at(seconds).await;
    let at_end = rss_mib(pid);
    let cpu_after = cpu_seconds(pid);
    stop.store(true, Ordering::Relaxed);
    let (mut all, mut failed) = (Vec::new(), 0);
    for task in tasks {
        if let Ok((latencies, f)) = task.await {
            all.extend(latencies);
            failed += f;
        }
    }
    let elapsed = started.elapsed().as_secs_f64();
    tokio::time::sleep(Duration::from_secs(2)).await;
    let after = rss_mib(pid);
    all.sort();
    let pick = |q: f64| {
        all.get(((all.len() as f64 * q) as usize).min(all.len().saturating_sub(1)))
            .copied()
    };
    let ms = |d: Option<Duration>| d.map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0);
    // CPU per answered call (calls answered up to the second reading, near enough).
    let per_call = |used: f64| used * 1000.0 / (all.len().max(1) as f64);
    println!(
        "| {label} | {:.0} | {:.2} ms | {:.2} ms | {failed} | {before:.0} / {at20:.0} / {at_end:.0} / {after:.0} MiB | {:.3} / {:.3} ms |",
        all.len() as f64 / elapsed,
        ms(pick(0.5)),
        ms(pick(0.99)),
        per_call(cpu_after.0 - cpu_before.0),
        per_call(cpu_after.1 - cpu_before.1),
    );
}

fn main() {
    let Ok(runtime) = tokio::runtime::Builder::new_multi_thread().enable_all().build() else {
        eprintln!("cannot start a tokio runtime");
        return;
    };
    let seconds = setting("TOOLGATE_LOAD_SECONDS", 60);
    let sessions = usize::try_from(setting("TOOLGATE_LOAD_SESSIONS", 64)).unwrap_or(64);
    runtime.block_on(async {
        // The OpenTelemetry settings of this run reach the server, so one bench measures
        // it with tracing off, sampled, or exporting every span.
        let mut env = vec![("TOOLGATE_RUNTIMES", "js".to_owned())];
        let otel: Vec<(String, String)> = std::env::vars()
            .filter(|(k, _)| k.starts_with("OTEL_") || k == "TOOLGATE_TRACE_STEPS")
            .collect();
        env.extend(otel.iter().map(|(k, v)| (k.as_str(), v.clone())));
        if !otel.is_empty() {
            println!("with {}", otel.iter().map(|(k, v)| format!("{k}={v}")).collect::<Vec<_>>().join(" "));
        }
        let Some((child, url)) = start(&env).await else {
            return;
        };
        let Some(pid) = child.id() else { return };
        println!("{sessions} sessions, {seconds} s per call, {}", program());
        println!(
            "| call | calls/s | p50 | p99 | failed | RSS before / at 20 s / at end / after | CPU per call: server / workers |"
        );
        println!("|---|---|---|---|---|---|---|");
        let calls = std::env::var("TOOLGATE_LOAD_CALLS").unwrap_or_else(|_| "ping,tool,js".to_owned());
        let wanted = |kind: &str| calls.split(',').any(|c| c.trim() == kind);
        if wanted("ping") {
            load(&url, pid, "ping", "ping", json!({}), sessions, seconds).await;
        }
        if wanted("tool") {
            let tool = json!({"name": "base64-codec", "arguments": {"mode": "encode", "input": "hello"}});
            load(&url, pid, "catalogue tool", "tools/call", tool, sessions, seconds).await;
        }
        if wanted("js") {
            let js = json!({"name": "run_javascript", "arguments": {"code": "return 1 + 1"}});
            load(&url, pid, "run_javascript", "tools/call", js, sessions, seconds).await;
        }
        drop(child);
    });
}
