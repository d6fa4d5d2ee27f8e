//! The JavaScript backend without MCP: a trivial `run_javascript` snippet, the same in
//! TypeScript, and a trivial catalogue tool — each in a fresh engine in a worker process
//! (this package's binary), as a call runs. `cargo bench --bench js`.

#[path = "common/runtime.rs"]
mod runtime;

use std::hint::black_box;
use std::sync::Arc;

use criterion::{Criterion, criterion_group, criterion_main};
use tokio_util::sync::CancellationToken;
use toolgate::backends::Party;
use toolgate::backends::js::{Js, JsLimits};
use toolgate::limits::{FETCH_TIMEOUT, JS_HEAP_BYTES, JS_WALL_CLOCK, OUTPUT_CHARS};

const LIMITS: JsLimits = JsLimits {
    heap_bytes: JS_HEAP_BYTES,
    wall_clock: JS_WALL_CLOCK,
    output_chars: OUTPUT_CHARS,
    result_chars: OUTPUT_CHARS,
    concurrent_runs: 8,
    total_heap_bytes: 4 * JS_HEAP_BYTES,
    fetch_timeout: FETCH_TIMEOUT,
};

fn paths(c: &mut Criterion) {
    let Some(runtime) = runtime::two_workers() else {
        return;
    };
    let engine = Js::new(LIMITS, env!("CARGO_BIN_EXE_toolgate").into());
    let cancel = CancellationToken::new();
    let alone = Party::alone();
    let mut group = c.benchmark_group("js");
    group.bench_function("run_javascript", |b| {
        b.to_async(&runtime).iter(|| {
            engine.run_snippet(
                black_box("console.log('hi'); return 1 + 1;"),
                false,
                (&alone, &cancel),
                None,
            )
        })
    });
    group.bench_function("run_typescript", |b| {
        b.to_async(&runtime).iter(|| {
            engine.run_snippet(
                black_box("const n: number = 1 + 1; console.log('hi'); return n;"),
                true,
                (&alone, &cancel),
                None,
            )
        })
    });
    let tool: Arc<str> = Arc::from("function run(params) { return { upper: params.text.toUpperCase() }; }");
    group.bench_function("catalogue_tool", |b| {
        b.to_async(&runtime).iter(|| {
            engine.run_tool(
                black_box(tool.clone()),
                "index.js".to_owned(),
                serde_json::json!({"text": "hello"}),
                &alone,
                &cancel,
            )
        })
    });
    group.finish();
}

criterion_group!(benches, paths);
criterion_main!(benches);
