//! What toolgate adds to a call of an upstream MCP server, over real stdio, in one
//! sitting: the same trivial call sent to the upstream directly and through a toolgate
//! that federates it (`SERVER__TOOL`). `cargo bench --bench upstream`.
//!
//! The upstream is another toolgate (a Rust server answering its meta-tool's `schema`
//! command: no engine, no I/O), so the difference is toolgate's own cost: one more stdio
//! hop, validation, the snapshot lookup, the history record. With
//! `TOOLGATE_TEST_NODE_MODULES` set (as `scripts/test` sets it), server-everything's
//! `echo` over Node is measured the same way.
//!
//! Criterion gives means and medians per case; the interleaved pass at the end (direct,
//! through, direct, ...) prints p50 and p90 of each and the p50 added, since the
//! machine's load shifts during a run and interleaving shares it out evenly.

#[path = "common/runtime.rs"]
mod runtime;

use std::hint::black_box;
use std::path::PathBuf;
use std::process::Stdio;
use std::time::{Duration, Instant};

use criterion::{Criterion, criterion_group, criterion_main};
use rmcp::model::CallToolRequestParams;
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::process::Command;

/// Calls per case in the interleaved pass.
const SAMPLES: usize = 2_000;

fn program() -> String {
    std::env::var("TOOLGATE_BENCH_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_toolgate").to_owned())
}

/// One trivial upstream: how to start it, and the call to send it.
struct Upstream {
    label: &'static str,
    entry: Value,
    tool: &'static str,
    args: Value,
}

fn upstreams() -> Vec<Upstream> {
    let mut all = vec![Upstream {
        label: "toolgate_schema",
        entry: json!({"command": program()}),
        tool: "toolgate",
        args: json!({"command": "schema", "slug": "base64-codec"}),
    }];
    if let Some(modules) = std::env::var_os("TOOLGATE_TEST_NODE_MODULES") {
        let script = PathBuf::from(modules).join("@modelcontextprotocol/server-everything/dist/index.js");
        all.push(Upstream {
            label: "everything_echo",
            entry: json!({"command": "node", "args": [script, "stdio"]}),
            tool: "echo",
            args: json!({"message": "hi"}),
        });
    }
    all
}

async fn connect(cmd: Command) -> Option<RunningService<RoleClient, ()>> {
    let transport = TokioChildProcess::builder(cmd).stderr(Stdio::null()).spawn().ok()?.0;
    ().serve(transport).await.ok()
}

fn command(program: &str, args: &[String]) -> Command {
    let mut cmd = Command::new(program);
    cmd.args(args)
        .env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .kill_on_drop(true);
    cmd
}

fn call(name: &str, args: &Value) -> CallToolRequestParams {
    let params = CallToolRequestParams::new(name.to_owned());
    match args {
        Value::Object(map) => params.with_arguments(map.clone()),
        _ => params,
    }
}

/// The upstream started on its own, and a toolgate federating it as `up`.
async fn pair(
    up: &Upstream,
    dir: &std::path::Path,
) -> Option<(RunningService<RoleClient, ()>, RunningService<RoleClient, ()>)> {
    let program_of = |entry: &Value| entry["command"].as_str().map(str::to_owned);
    let args: Vec<String> = up.entry["args"]
        .as_array()
        .map(|a| a.iter().filter_map(|s| s.as_str().map(str::to_owned)).collect())
        .unwrap_or_default();
    let direct = connect(command(&program_of(&up.entry)?, &args)).await?;
    let file = dir.join(format!("{}.json", up.label));
    std::fs::write(&file, json!({"mcpServers": {"up": up.entry}}).to_string()).ok()?;
    let mut gate = command(&program(), &[]);
    gate.env("TOOLGATE_UPSTREAMS", &file);
    let through = connect(gate).await?;
    Some((direct, through))
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn overhead(c: &mut Criterion) {
    let Some(runtime) = runtime::two_workers() else {
        return;
    };
    let Ok(dir) = tempfile::tempdir() else { return };
    let mut report = Vec::new();
    for up in upstreams() {
        let Some((direct, through)) = runtime.block_on(pair(&up, dir.path())) else {
            eprintln!("cannot start the {} pair", up.label);
            continue;
        };
        let slug = format!("up__{}", up.tool);
        let (to_direct, to_through) = (call(up.tool, &up.args), call(&slug, &up.args));
        // A first call through proves the federation is up before anything is timed.
        if runtime
            .block_on(through.call_tool(to_through.clone()))
            .map_or(true, |r| r.is_error == Some(true))
        {
            eprintln!("{slug} does not answer through toolgate");
            continue;
        }
        let mut group = c.benchmark_group(format!("upstream/{}", up.label));
        group.bench_function("direct", |b| {
            b.to_async(&runtime)
                .iter(|| async { black_box(direct.call_tool(to_direct.clone()).await.ok()) })
        });
        group.bench_function("through_toolgate", |b| {
            b.to_async(&runtime)
                .iter(|| async { black_box(through.call_tool(to_through.clone()).await.ok()) })
        });
        group.finish();
        let (mut a, mut b) = (Vec::with_capacity(SAMPLES), Vec::with_capacity(SAMPLES));
        runtime.block_on(async {
            for _ in 0..SAMPLES {
                let start = Instant::now();
                black_box(direct.call_tool(to_direct.clone()).await.ok());
                a.push(start.elapsed());
                let start = Instant::now();
                black_box(through.call_tool(to_through.clone()).await.ok());
                b.push(start.elapsed());
            }
        });
        a.sort();
        b.sort();
        let p = |s: &[Duration], q: f64| s[((s.len() as f64 - 1.0) * q) as usize];
        report.push(format!(
            "| {} | {:.3} ms | {:.3} ms | {:.3} ms | {:.3} ms | {:+.3} ms |",
            up.label,
            ms(p(&a, 0.5)),
            ms(p(&a, 0.9)),
            ms(p(&b, 0.5)),
            ms(p(&b, 0.9)),
            ms(p(&b, 0.5)) - ms(p(&a, 0.5)),
        ));
        let _ = runtime.block_on(direct.cancel());
        let _ = runtime.block_on(through.cancel());
    }
    println!("\ninterleaved, {SAMPLES} calls each:");
    println!("| upstream | direct p50 | direct p90 | through p50 | through p90 | added at p50 |");
    println!("|---|---|---|---|---|---|");
    for line in report {
        println!("{line}");
    }
}

criterion_group!(benches, overhead);
criterion_main!(benches);
