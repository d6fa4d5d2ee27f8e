//! Search at scale while another client runs calls : the release
//! binary as `toolgate --http 127.0.0.1:0` on a synthetic catalogue (100,000 tools by
//! default, as `scale` writes it), one MCP session searching the synthetic query set
//! back to back — first alone, then while other sessions of the same server run
//! catalogue tools (real JavaScript, through the meta-tool's `run`) back to back. Prints
//! search p50/p99 alone and under load, and the calls/s the other sessions got, as a
//! table row for docs/performance.md. Times are the client's: HTTP round trip included.
//!
//! `cargo bench --bench scale_load`; `TOOLGATE_SCALE_SIZES` the catalogue sizes (0 is the
//! embedded one), `TOOLGATE_LOAD_SESSIONS` how many sessions run calls (1),
//! `TOOLGATE_SCALE_DIR` keeps the catalogue files, `TOOLGATE_BENCH_BIN` the binary;
//! `TOOLGATE_SEARCH` and `TOOLGATE_EMBED_CACHE` are passed on. Client and server share
//! the machine's cores, as they would on a small host.

#[path = "common/http.rs"]
mod http;
#[path = "common/runtime.rs"]
mod runtime;
#[path = "common/synthetic.rs"]
mod synthetic;

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use http::{Session, start};
use serde_json::{Value, json};

/// How many times the query set runs per measurement (200 queries each).
const ROUNDS: usize = 3;

fn main() {
    let Some(runtime) = runtime::two_workers() else { return };
    let callers = usize::try_from(http::setting("TOOLGATE_LOAD_SESSIONS", 1)).unwrap_or(1);
    let (_temp, catalogues) = match synthetic::scale_files(&[100_000]) {
        Ok(files) => files,
        Err(e) => {
            eprintln!("{e}");
            return;
        }
    };
    println!(
        "| tools | sessions running calls | their calls/s | search p50 / p99 alone | search p50 / p99 under load |"
    );
    println!("|---|---|---|---|---|");
    for (n, catalogue) in catalogues {
        match runtime.block_on(measure(n, catalogue.as_deref(), callers)) {
            Ok(row) => println!(
                "| {} | {callers} | {:.0} | {:.3} / {:.3} ms | {:.3} / {:.3} ms |",
                if n == 0 { "embedded".to_owned() } else { n.to_string() },
                row.calls_per_second,
                ms(row.alone.0),
                ms(row.alone.1),
                ms(row.loaded.0),
                ms(row.loaded.1),
            ),
            Err(e) => eprintln!("{n} tools: {e}"),
        }
    }
}

/// One row: search p50/p99 alone and under load, and the load's throughput.
struct Row {
    alone: (Duration, Duration),
    loaded: (Duration, Duration),
    calls_per_second: f64,
}

async fn measure(n: usize, catalogue: Option<&std::path::Path>, callers: usize) -> Result<Row, String> {
    let mut env = vec![("TOOLGATE_RUNTIMES", "js".to_owned())];
    if let Some(path) = catalogue {
        env.push(("TOOLGATE_CATALOGUE", path.display().to_string()));
    }
    for name in ["TOOLGATE_SEARCH", "TOOLGATE_EMBED_CACHE"] {
        if let Ok(value) = std::env::var(name) {
            env.push((name, value));
        }
    }
    let (child, url) = start(&env).await.ok_or("the server did not start")?;
    let http = reqwest::Client::builder()
        .pool_max_idle_per_host(callers + 1)
        .build()
        .map_err(|e| e.to_string())?;
    let mut searcher = Session::open(http.clone(), &url).await.ok_or("cannot open a session")?;
    // The first search waits for the catalogue's build.
    search(&mut searcher, "convert json").await?;
    let alone = percentiles(searches(&mut searcher).await?);

    let calls: Vec<Value> = match n {
        0 => vec![json!({"slug": "base64-codec", "params": {"mode": "encode", "input": "hello"}})],
        _ => synthetic::catalogue(n.min(64))
            .into_iter()
            .filter_map(|d| {
                let (first, _) = d.params.first()?.clone();
                Some(json!({"slug": d.slug, "params": {first: "hello"}}))
            })
            .collect(),
    };
    let stop = Arc::new(AtomicBool::new(false));
    let done = Arc::new(AtomicU64::new(0));
    let (running, mut started) = tokio::sync::mpsc::channel(callers.max(1));
    let mut loaders = Vec::new();
    for c in 0..callers {
        let mut session = Session::open(http.clone(), &url).await.ok_or("cannot open a session")?;
        let (stop, done, calls, running) = (stop.clone(), done.clone(), calls.clone(), running.clone());
        loaders.push(tokio::spawn(async move {
            let mut i = c;
            while !stop.load(Ordering::Relaxed) {
                let mut run = calls[i % calls.len()].clone();
                run["command"] = json!("run");
                match session
                    .exchange("tools/call", json!({"name": "toolgate", "arguments": run}))
                    .await
                {
                    Some((_, _, true)) => done.fetch_add(1, Ordering::Relaxed),
                    Some((_, body, false)) => return Err(format!("a call failed: {body}")),
                    None => return Err("a call got no answer".to_owned()),
                };
                if i == c {
                    let _ = running.send(()).await;
                }
                i += callers;
            }
            Ok(())
        }));
    }
    // Measured once every caller has had a call answered, so the load is running.
    drop(running);
    for _ in 0..callers {
        if started.recv().await.is_none() {
            break;
        }
    }
    let (started, before) = (Instant::now(), done.load(Ordering::Relaxed));
    let loaded = searches(&mut searcher).await;
    let calls_per_second = (done.load(Ordering::Relaxed) - before) as f64 / started.elapsed().as_secs_f64();
    stop.store(true, Ordering::Relaxed);
    for loader in loaders {
        loader.await.map_err(|e| e.to_string())??;
    }
    drop(child);
    Ok(Row {
        alone,
        loaded: percentiles(loaded?),
        calls_per_second,
    })
}

/// The query set `ROUNDS` times; each search's round trip.
async fn searches(session: &mut Session) -> Result<Vec<Duration>, String> {
    let mut samples = Vec::new();
    for _ in 0..ROUNDS {
        for q in synthetic::queries() {
            let sent = Instant::now();
            search(session, &q).await?;
            samples.push(sent.elapsed());
        }
    }
    Ok(samples)
}

/// One search; a refused query (a few of the set are only stop words) is an answer too.
async fn search(session: &mut Session, query: &str) -> Result<(), String> {
    let args = json!({"name": "toolgate", "arguments": {"command": "search", "query": query}});
    match session.exchange("tools/call", args).await {
        Some((_, body, _)) if body.contains("\"result\"") => Ok(()),
        Some((_, body, _)) => Err(format!("the search {query:?} failed: {body}")),
        None => Err(format!("the search {query:?} got no answer")),
    }
}

fn percentiles(mut samples: Vec<Duration>) -> (Duration, Duration) {
    samples.sort();
    let p = |q: f64| samples[((samples.len() as f64 - 1.0) * q) as usize];
    (p(0.5), p(0.99))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
