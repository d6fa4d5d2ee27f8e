//! What a fleet's shared state costs (`TOOLGATE_REDIS`), on the release binary and the
//! machine's Redis:
//!
//! 1. Latency of one catalogue tool call (`base64-codec`) over Streamable HTTP, one
//!    session calling back to back, by one process alone and by one replica with Redis,
//!    alternated three times; p50 and p99 of each, and the difference of the p50s.
//! 2. Redis round trips per call, as the replica counts them
//!    (`toolgate_redis_exchanges_total`, the watcher's once-a-second `PING` included), and
//!    commands per call, from Redis's own `INFO commandstats` around the replica's calls
//!    (the `PING`s left out; a script's own commands count among the commands).
//! 3. Throughput of one replica and of three sharing Redis, with 48 sessions spread over
//!    them calling back to back: on a 2-core machine three replicas share the same two
//!    cores, so the figure says what the shared state costs, not what more machines give.
//!
//! `cargo bench --bench fleet` (`TOOLGATE_FLEET_CALLS` calls per latency run, 2,000;
//! `TOOLGATE_LOAD_SECONDS` per throughput run, 20; `TOOLGATE_BENCH_REDIS`, the machine's
//! Redis; `TOOLGATE_BENCH_BIN` the binary). Keys go under a prefix of this run's own.

#[path = "common/http.rs"]
mod http;

use std::collections::HashMap;
use std::time::{Duration, Instant};

use http::{Session, program, setting, start};
use serde_json::json;
use tokio::process::Child;

/// The call measured.
fn tool() -> serde_json::Value {
    json!({"name": "base64-codec", "arguments": {"mode": "encode", "input": "hello"}})
}

/// Starts a server, alone (`redis` none) or as a replica of the fleet in `redis`.
async fn server(redis: Option<(&str, &str)>) -> Option<(Child, String)> {
    let mut env = vec![("TOOLGATE_SEARCH", "lexical".to_owned())];
    if let Some((url, prefix)) = redis {
        env.push(("TOOLGATE_REDIS", url.to_owned()));
        env.push(("TOOLGATE_REDIS_PREFIX", prefix.to_owned()));
    }
    start(&env).await
}

/// `calls` calls back to back in one session; their latencies, sorted.
async fn latencies(url: &str, calls: usize) -> Vec<Duration> {
    let http = reqwest::Client::new();
    let Some(mut session) = Session::open(http, url).await else {
        eprintln!("cannot open a session");
        return Vec::new();
    };
    // Warm: the first calls compile the validator and fill the connections.
    for _ in 0..50 {
        let _ = session.send("tools/call", tool()).await;
    }
    let mut all = Vec::with_capacity(calls);
    for _ in 0..calls {
        let started = Instant::now();
        if let Some((_, true)) = session.send("tools/call", tool()).await {
            all.push(started.elapsed());
        }
    }
    all.sort();
    all
}

/// The `q` quantile of sorted `all`, in ms.
fn ms(all: &[Duration], q: f64) -> f64 {
    let i = ((all.len() as f64 * q) as usize).min(all.len().saturating_sub(1));
    all.get(i).map_or(f64::NAN, |d| d.as_secs_f64() * 1000.0)
}

/// Calls per command, from `INFO commandstats`.
async fn commands(redis: &mut redis::aio::MultiplexedConnection) -> HashMap<String, u64> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query_async(redis)
        .await
        .unwrap_or_default();
    info.lines()
        .filter_map(|line| {
            let (name, rest) = line.strip_prefix("cmdstat_")?.split_once(':')?;
            let calls = rest.split(',').find_map(|f| f.strip_prefix("calls="))?.parse().ok()?;
            Some((name.to_owned(), calls))
        })
        .collect()
}

/// The round trips to Redis the server at `mcp_url` has made
/// (`toolgate_redis_exchanges_total` on its `/metrics`).
async fn exchanges(mcp_url: &str) -> u64 {
    let Ok(answer) = reqwest::get(mcp_url.replace("/mcp", "/metrics")).await else {
        return 0;
    };
    let text = answer.text().await.unwrap_or_default();
    text.lines()
        .find_map(|l| l.strip_prefix("toolgate_redis_exchanges_total "))
        .and_then(|n| n.trim().parse().ok())
        .unwrap_or(0)
}

/// `sessions` sessions spread over `urls`, calling back to back for `seconds`: calls/s
/// and the p50 in ms.
async fn throughput(urls: &[String], sessions: usize, seconds: u64) -> (f64, f64) {
    let http = reqwest::Client::builder().pool_max_idle_per_host(sessions).build();
    let Ok(http) = http else { return (0.0, f64::NAN) };
    let mut opened = Vec::new();
    for i in 0..sessions {
        if let Some(s) = Session::open(http.clone(), &urls[i % urls.len()]).await {
            opened.push(s);
        }
    }
    let deadline = Instant::now() + Duration::from_secs(seconds);
    let tasks: Vec<_> = opened
        .into_iter()
        .map(|mut session| {
            tokio::spawn(async move {
                let mut latencies = Vec::new();
                while Instant::now() < deadline {
                    let started = Instant::now();
                    if let Some((_, true)) = session.send("tools/call", tool()).await {
                        latencies.push(started.elapsed());
                    }
                }
                latencies
            })
        })
        .collect();
    let mut all = Vec::new();
    for task in tasks {
        all.extend(task.await.unwrap_or_default());
    }
    all.sort();
    (all.len() as f64 / seconds as f64, ms(&all, 0.5))
}

fn main() {
    let Ok(runtime) = tokio::runtime::Builder::new_multi_thread().enable_all().build() else {
        eprintln!("cannot start a tokio runtime");
        return;
    };
    let calls = usize::try_from(setting("TOOLGATE_FLEET_CALLS", 2_000)).unwrap_or(2_000);
    let seconds = setting("TOOLGATE_LOAD_SECONDS", 20);
    let redis_url = std::env::var("TOOLGATE_BENCH_REDIS").unwrap_or_else(|_| "redis://127.0.0.1:6379/0".to_owned());
    let prefix = format!("toolgate-bench:{}:", std::process::id());
    runtime.block_on(async {
        let Ok(client) = redis::Client::open(redis_url.as_str()) else {
            eprintln!("TOOLGATE_BENCH_REDIS: not a Redis URL");
            return;
        };
        let Ok(mut redis) = client.get_multiplexed_async_connection().await else {
            eprintln!("no Redis at {redis_url}");
            return;
        };
        println!("{}; Redis {redis_url}; {calls} calls per latency run", program());
        println!("| run | alone p50 | alone p99 | replica p50 | replica p99 | added p50 | Redis round trips per call | Redis commands per call |");
        println!("|---|---|---|---|---|---|---|---|");
        let Some((alone, alone_url)) = server(None).await else {
            return;
        };
        let Some((replica, replica_url)) = server(Some((&redis_url, &prefix))).await else {
            return;
        };
        for run in 1..=3 {
            let one = latencies(&alone_url, calls).await;
            let before = commands(&mut redis).await;
            let trips_before = exchanges(&replica_url).await;
            let many = latencies(&replica_url, calls).await;
            let trips_after = exchanges(&replica_url).await;
            let after = commands(&mut redis).await;
            let grew = |name: &str| after.get(name).copied().unwrap_or(0) - before.get(name).copied().unwrap_or(0);
            let sent: u64 = after
                .keys()
                .filter(|name| !matches!(name.as_str(), "ping" | "info"))
                .map(|name| grew(name))
                .sum();
            // The replica counts its round trips itself (a script, a command or a pipeline,
            // with the writes it carries); the watcher's ping each second counts too.
            let trips = trips_after - trips_before;
            // The warm-up's calls count too (and the session's two opening requests, a
            // thousandth of the figure).
            let requests = (many.len() + 50) as f64;
            println!(
                "| {run} | {:.3} ms | {:.3} ms | {:.3} ms | {:.3} ms | {:+.3} ms | {:.2} | {:.2} |",
                ms(&one, 0.5),
                ms(&one, 0.99),
                ms(&many, 0.5),
                ms(&many, 0.99),
                ms(&many, 0.5) - ms(&one, 0.5),
                trips as f64 / requests,
                sent as f64 / requests,
            );
        }
        drop((alone, replica));
        println!();
        println!("| servers | sessions | calls/s | p50 |");
        println!("|---|---|---|---|");
        let Some((alone, alone_url)) = server(None).await else {
            return;
        };
        let (rate, p50) = throughput(std::slice::from_ref(&alone_url), 48, seconds).await;
        println!("| one process, no Redis | 48 | {rate:.0} | {p50:.2} ms |");
        drop(alone);
        let mut fleet = Vec::new();
        for _ in 0..3 {
            let Some(replica) = server(Some((&redis_url, &prefix))).await else {
                return;
            };
            fleet.push(replica);
        }
        let (rate, p50) = throughput(
            &fleet[..1].iter().map(|(_, u)| u.clone()).collect::<Vec<_>>(),
            48,
            seconds,
        )
        .await;
        println!("| one replica with Redis | 48 | {rate:.0} | {p50:.2} ms |");
        let urls: Vec<String> = fleet.iter().map(|(_, u)| u.clone()).collect();
        let (rate, p50) = throughput(&urls, 48, seconds).await;
        println!("| three replicas with Redis | 48 (16 each) | {rate:.0} | {p50:.2} ms |");
        drop(fleet);
        let keys: Vec<String> = redis::cmd("KEYS")
            .arg(format!("{prefix}*"))
            .query_async(&mut redis)
            .await
            .unwrap_or_default();
        if !keys.is_empty() {
            let _: Result<i64, _> = redis::cmd("DEL").arg(&keys).query_async(&mut redis).await;
        }
    });
}
