//! Code mode against direct calls, over real stdio, with the release binary
//! (`TOOLGATE_RUNTIMES=js`): `cargo bench --bench code_mode`.
//!
//! 1. A five-step task (base64 → hex → case → slug → stats, each step fed by the last) as
//!    five direct `tools/call`s and as one `run_javascript` whose code makes the five
//!    calls: round trips, bytes the client receives (what lands in a model's context) and
//!    wall time, p50 over interleaved repetitions.
//! 2. The cost an inner call adds over the same call made directly: the direct call's
//!    round trip (p50) against the per-call time of 50 calls in one snippet: the p50 of
//!    such snippets less the p50 of an empty one, divided by 50.
//! 3. Inner calls per second from one snippet, 8 in flight at once.
//!
//! `TOOLGATE_CODE_BENCH_ROUNDS` repetitions (default 30); `TOOLGATE_BENCH_BIN` the binary.

#[path = "common/runtime.rs"]
mod runtime;

use std::process::Stdio;
use std::time::{Duration, Instant};

use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::transport::TokioChildProcess;
use rmcp::{RoleClient, ServiceExt};
use serde_json::{Value, json};
use tokio::process::Command;

fn program() -> String {
    std::env::var("TOOLGATE_BENCH_BIN").unwrap_or_else(|_| env!("CARGO_BIN_EXE_toolgate").to_owned())
}

fn rounds() -> usize {
    std::env::var("TOOLGATE_CODE_BENCH_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(30)
}

type Client = RunningService<RoleClient, ()>;

async fn connect() -> Option<Client> {
    let mut cmd = Command::new(program());
    cmd.env_clear()
        .env("PATH", std::env::var("PATH").unwrap_or_default())
        .env("TOOLGATE_RUNTIMES", "js")
        .env("TOOLGATE_CODE_CALLS", "10000")
        .kill_on_drop(true);
    let transport = TokioChildProcess::builder(cmd).stderr(Stdio::null()).spawn().ok()?.0;
    ().serve(transport).await.ok()
}

/// Calls `name` with `args`; the result and the bytes of its JSON (what the client
/// receives, less the JSON-RPC envelope).
async fn call(client: &Client, name: &str, args: Value) -> Option<(CallToolResult, usize)> {
    let Value::Object(args) = args else { return None };
    let result = client
        .call_tool(CallToolRequestParams::new(name.to_owned()).with_arguments(args))
        .await
        .ok()?;
    let bytes = serde_json::to_vec(&result).map(|v| v.len()).unwrap_or(0);
    Some((result, bytes))
}

/// The five steps as direct calls: bytes received.
async fn direct_task(client: &Client) -> Option<usize> {
    let structured = |r: &CallToolResult| r.structured_content.clone().unwrap_or(Value::Null);
    let (a, n1) = call(client, "base64-codec", json!({"input": "code mode in toolgate"})).await?;
    let encoded = structured(&a)["result"]["output"].as_str()?.to_owned();
    let (b, n2) = call(client, "hex-codec", json!({"input": encoded})).await?;
    let hex = structured(&b)["result"]["output"].as_str()?.to_owned();
    let (_, n3) = call(client, "case-converter", json!({"text": hex, "to": "snake"})).await?;
    let (_, n4) = call(client, "slugify", json!({"text": "Code Mode In Toolgate"})).await?;
    let (_, n5) = call(client, "text-stats", json!({"text": "code mode in toolgate"})).await?;
    Some(n1 + n2 + n3 + n4 + n5)
}

/// The same five steps in one snippet, answering a one-line summary.
const TASK: &str = r#"
const a = await tools.base64_codec({input: "code mode in toolgate"});
const b = await tools.hex_codec({input: a.result.output});
const c = await tools.case_converter({text: b.result.output, to: "snake"});
const d = await tools.slugify({text: "Code Mode In Toolgate"});
const e = await tools.text_stats({text: "code mode in toolgate"});
return [a, b, c, d, e].every((r) => r.success);
"#;

fn p50(samples: &mut [Duration]) -> f64 {
    samples.sort();
    samples[samples.len() / 2].as_secs_f64() * 1e3
}

fn main() {
    let Some(runtime) = runtime::two_workers() else { return };
    runtime.block_on(async {
        let Some(client) = connect().await else {
            eprintln!("cannot start {}", program());
            return;
        };
        let rounds = rounds();
        // Warm: workers started, the catalogue built, every tool's schema compiled.
        for _ in 0..3 {
            let _ = direct_task(&client).await;
            let _ = call(&client, "run_javascript", json!({"code": TASK})).await;
        }

        // 1. The task both ways, interleaved.
        let (mut direct, mut code) = (Vec::new(), Vec::new());
        let (mut direct_bytes, mut code_bytes) = (0, 0);
        for _ in 0..rounds {
            let start = Instant::now();
            direct_bytes = direct_task(&client).await.unwrap_or(0);
            direct.push(start.elapsed());
            let start = Instant::now();
            code_bytes = call(&client, "run_javascript", json!({"code": TASK}))
                .await
                .map_or(0, |(_, n)| n);
            code.push(start.elapsed());
        }
        println!("\nA five-step task, {rounds} rounds each, interleaved:");
        println!("| way | round trips | bytes received | wall time p50 |");
        println!("|---|---|---|---|");
        println!("| five direct calls | 5 | {direct_bytes} | {:.2} ms |", p50(&mut direct));
        println!("| one code call | 1 | {code_bytes} | {:.2} ms |", p50(&mut code));

        // 2. One call directly against one call from code.
        const CALLS: usize = 50;
        let many = format!(
            "for (let i = 0; i < {CALLS}; i++) await tools.base64_codec({{input: \"x\" + i}}); return 1;"
        );
        let (mut one_direct, mut empty, mut full) = (Vec::new(), Vec::new(), Vec::new());
        for _ in 0..rounds {
            for i in 0..CALLS {
                let start = Instant::now();
                let _ = call(&client, "base64-codec", json!({"input": format!("x{i}")})).await;
                one_direct.push(start.elapsed());
            }
            let start = Instant::now();
            let _ = call(&client, "run_javascript", json!({"code": "return 1;"})).await;
            empty.push(start.elapsed());
            let start = Instant::now();
            let _ = call(&client, "run_javascript", json!({ "code": many })).await;
            full.push(start.elapsed());
        }
        let direct_p50 = p50(&mut one_direct);
        let inner_p50 = (p50(&mut full) - p50(&mut empty)) / CALLS as f64;
        println!("\nbase64-codec, one call ({} direct, {rounds} snippets of {CALLS}):", one_direct.len());
        println!("| way | p50 per call |");
        println!("|---|---|");
        println!("| direct (a client round trip over stdio) | {direct_p50:.3} ms |");
        println!("| from code (in a snippet, less an empty snippet) | {inner_p50:.3} ms |");
        println!("| added by code mode | {:+.3} ms |", inner_p50 - direct_p50);

        // 3. Calls per second, 8 in flight.
        const BURST: usize = 400;
        let burst = format!(
            "const all = []; for (let i = 0; i < {BURST}; i += 8) {{ const wave = []; for (let j = 0; j < 8; j++) wave.push(tools.base64_codec({{input: \"y\" + (i + j)}})); all.push(...await Promise.all(wave)); }} return all.length;"
        );
        let start = Instant::now();
        let ran = call(&client, "run_javascript", json!({ "code": burst })).await;
        let took = start.elapsed();
        let done = ran
            .and_then(|(r, _)| r.structured_content)
            .and_then(|s| s["result"].as_u64())
            .unwrap_or(0);
        println!(
            "\nfrom one snippet, 8 in flight: {done} calls in {:.2} s = {:.0} calls a second",
            took.as_secs_f64(),
            done as f64 / took.as_secs_f64()
        );
        let _ = client.cancel().await;
    });
}
