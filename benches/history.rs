//! What recording a run in the history costs for the worst inputs a caller can send:
//! over a million distinct secret strings or numbers, deep nesting, hundreds of
//! thousands of secret keys, a 13 MB payload echoed back, long keys, texts full of
//! secrets — each recorded as it ran, and as a refused call. Every case should stay under
//! about a millisecond whatever the input (`docs/security/charged-work.md`).
//! `cargo bench --bench history`.

use std::hint::black_box;
use std::time::SystemTime;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use serde_json::{Map, Value, json};
use toolgate::history::{Ended, Finished, History, Sent, Size};

/// The worst inputs, each with the result its tool answers.
fn cases() -> Vec<(&'static str, Value, Value)> {
    let strings: Vec<String> = (0..1_200_000).map(|i| format!("s{i:07}")).collect();
    let numbers: Vec<u64> = (0..1_200_000).map(|i| 10_000_000 + i).collect();
    let mut deep = json!("x");
    for _ in 0..60 {
        deep = json!({"a": [deep]});
    }
    let keys: Map<String, Value> = (0..300_000).map(|i| (format!("key_{i}_password"), json!(i))).collect();
    let long_keys: Map<String, Value> = (0..50)
        .map(|i| (format!("{}{i}", "k".repeat(20_000)), json!(i)))
        .collect();
    let echoed = "hunter2-long ".repeat(1_000_000);
    let secrets: Vec<String> = (0..128).map(|i| format!("{}-{i}", "z".repeat(500))).collect();
    let full = secrets.join(" ").repeat(20);
    let none = json!({"code": "INVALID_PARAMS", "error": "refused"});
    vec![
        ("secret_strings", json!({"password": strings}), none.clone()),
        ("secret_numbers", json!({"pin_token": numbers}), none.clone()),
        ("deep", json!({"d": deep}), none.clone()),
        ("secret_keys", Value::Object(keys), none.clone()),
        ("long_keys", Value::Object(long_keys), none.clone()),
        (
            "echoed_13_mb",
            json!({"password": "hunter2-long", "text": echoed}),
            json!({"echo": echoed}),
        ),
        (
            "text_full_of_secrets",
            json!({"password": secrets, "text": full}),
            json!({"echo": full}),
        ),
        (
            "small",
            json!({"message": "hello", "api_key": "sk-live-123"}),
            json!({"message": "HELLO"}),
        ),
    ]
}

fn record(c: &mut Criterion) {
    let history = History::default();
    let mut group = c.benchmark_group("history/record");
    group.sample_size(20);
    for (name, input, result) in cases() {
        for refused in [false, true] {
            let id = BenchmarkId::new(name, if refused { "refused" } else { "ran" });
            group.bench_function(id, |b| {
                b.iter(|| {
                    let sent = if refused {
                        Sent::Refused(Size::Of(&input))
                    } else {
                        Sent::Checked(&input)
                    };
                    history.record(Finished {
                        id: "r1".to_owned(),
                        slug: "bench",
                        started: SystemTime::now(),
                        duration_ms: 0,
                        input: black_box(sent),
                        ended: Ended::Ok(&result),
                        principal: None,
                        request_id: None,
                        parent_run_id: None,
                        trace_id: None,
                    })
                })
            });
        }
    }
    group.finish();
}

criterion_group!(benches, record);
criterion_main!(benches);
