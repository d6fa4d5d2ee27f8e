//! End to end over real stdio: the release binary as a child, rmcp's client on this side.
//! Round trips of a trivial `run_javascript`, `run_typescript` and catalogue tool call,
//! each measured two ways — back to back (the next call leaves as the answer arrives, so
//! the server builds engines as fast as it uses them) and spaced (2 ms between calls, as
//! any agent's calls are, so a built engine is waiting) — plus cold start (spawn →
//! `initialize` answered). `cargo bench --bench stdio`.

#[path = "common/runtime.rs"]
mod runtime;

use std::hint::black_box;
use std::process::Stdio;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::process::Command;

/// Pause between spaced calls: longer than building a spare engine takes.
const SPACING: Duration = Duration::from_millis(2);

/// The binary measured: `TOOLGATE_BENCH_BIN` when set (to compare two builds in one
/// sitting), else the one this bench was built with.
fn program() -> String {
    std::env::var("TOOLGATE_BENCH_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_toolgate").to_owned())
}

fn command() -> Command {
    let mut cmd = Command::new(program());
    cmd.env_clear()
        .env("TOOLGATE_RUNTIMES", "js")
        .stderr(Stdio::null())
        .kill_on_drop(true);
    cmd
}

async fn connect() -> Option<RunningService<RoleClient, ()>> {
    let transport = TokioChildProcess::new(command()).ok()?;
    ().serve(transport).await.ok()
}

fn call(name: &str, args: Value) -> CallToolRequestParams {
    let Value::Object(args) = args else {
        return CallToolRequestParams::new(name.to_owned());
    };
    CallToolRequestParams::new(name.to_owned()).with_arguments(args)
}

fn round_trips(c: &mut Criterion) {
    let Some(runtime) = runtime::two_workers() else {
        return;
    };
    let Some(client) = runtime.block_on(connect()) else {
        eprintln!("cannot start {}", program());
        return;
    };
    let mut group = c.benchmark_group("stdio");
    let cases = [
        (
            "run_javascript",
            call("run_javascript", json!({"code": "return 1 + 1"})),
        ),
        (
            "run_typescript",
            call("run_typescript", json!({"code": "const n: number = 1 + 1; return n;"})),
        ),
        (
            "catalogue_tool",
            call("base64-codec", json!({"mode": "encode", "input": "hello"})),
        ),
        // The floor: a call refused by validation, before any engine is involved.
        ("invalid_call", call("base64-codec", json!({"mode": "nonsense"}))),
    ];
    for (label, params) in cases {
        group.bench_function(format!("{label}/back_to_back"), |b| {
            b.to_async(&runtime)
                .iter(|| async { black_box(client.call_tool(params.clone()).await.ok()) })
        });
        group.bench_function(format!("{label}/spaced"), |b| {
            b.to_async(&runtime).iter_custom(|iters| {
                let (client, params) = (&client, &params);
                async move {
                    let mut total = Duration::ZERO;
                    for _ in 0..iters {
                        tokio::time::sleep(SPACING).await;
                        let start = Instant::now();
                        black_box(client.call_tool(params.clone()).await.ok());
                        total += start.elapsed();
                    }
                    total
                }
            })
        });
    }
    group.finish();
    let _ = runtime.block_on(client.cancel());
}

fn cold_start(c: &mut Criterion) {
    let Some(runtime) = runtime::two_workers() else {
        return;
    };
    let mut group = c.benchmark_group("stdio");
    group.sample_size(20);
    group.bench_function("cold_start", |b| {
        b.to_async(&runtime).iter_custom(|iters| async move {
            let mut total = Duration::ZERO;
            for _ in 0..iters {
                let start = Instant::now();
                let client = connect().await;
                total += start.elapsed();
                if let Some(client) = client {
                    let _ = client.cancel().await;
                }
            }
            total
        })
    });
    group.finish();
}

criterion_group!(benches, round_trips, cold_start);
criterion_main!(benches);
