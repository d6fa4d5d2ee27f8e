//! The embedding model's speed: one ~27-token query (the MetaTool mean),
//! single-threaded, and batches of tool-sized texts (25–60 tokens) for the CPU cost per
//! token. Token ids are synthetic (the model's cost depends on lengths, not on which
//! ids), drawn from a fixed LCG so every run embeds the same texts.
//!
//! `cargo bench --bench embed`; the per-token figures are printed to stderr before the
//! criterion groups run.

use std::hint::black_box;
use std::time::Instant;

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use toolgate_minilm::Model;

/// A [CLS] … [SEP] sequence of `len` tokens with pseudo-random word ids.
fn text(seed: &mut u64, len: usize) -> Vec<u32> {
    let mut ids = vec![101];
    for _ in 2..len {
        *seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ids.push(1_000 + (*seed >> 33) as u32 % 29_000);
    }
    ids.push(102);
    ids
}

fn tools(n: usize) -> Vec<Vec<u32>> {
    let mut seed = 7;
    (0..n)
        .map(|i| {
            let len = 25 + (i * 37) % 36; // 25..=60 tokens
            text(&mut seed, len)
        })
        .collect()
}

/// Wall-clock latency percentiles of single queries and the batched CPU per token,
/// printed once (criterion reports means; the brief's targets are p50/p99).
fn report(model: &Model) {
    let mut seed = 1;
    let query = text(&mut seed, 27);
    let mut times: Vec<f64> = (0..200)
        .map(|_| {
            let t = Instant::now();
            black_box(model.embed(black_box(&query)).ok());
            t.elapsed().as_secs_f64() * 1e3
        })
        .collect();
    times.sort_by(f64::total_cmp);
    eprintln!(
        "query 27 tokens: p50 {:.2} ms, p99 {:.2} ms ({} runs)",
        times[times.len() / 2],
        times[times.len() * 99 / 100],
        times.len()
    );
    let texts = tools(400);
    let seqs: Vec<&[u32]> = texts.iter().map(Vec::as_slice).collect();
    let tokens: usize = texts.iter().map(Vec::len).sum();
    let t = Instant::now();
    black_box(model.embed_batch(&seqs).ok());
    let batched = t.elapsed().as_secs_f64();
    let t = Instant::now();
    for s in &seqs {
        black_box(model.embed(s).ok());
    }
    let single = t.elapsed().as_secs_f64();
    eprintln!(
        "{} tool texts, {} tokens: batched {:.3} ms/token, one by one {:.3} ms/token; \
         10,000 such tools ≈ {:.0} s on one core, {:.0} s on two",
        texts.len(),
        tokens,
        batched * 1e3 / tokens as f64,
        single * 1e3 / tokens as f64,
        batched * 10_000.0 / texts.len() as f64,
        batched * 5_000.0 / texts.len() as f64,
    );
}

fn bench(c: &mut Criterion) {
    let model = Model::get().expect("the compiled-in weights parse");
    report(model);
    let mut seed = 1;
    let query = text(&mut seed, 27);
    let mut g = c.benchmark_group("embed");
    g.throughput(Throughput::Elements(query.len() as u64));
    g.bench_function("query_27_tokens", |b| b.iter(|| model.embed(black_box(&query))));
    let texts = tools(32);
    let seqs: Vec<&[u32]> = texts.iter().map(Vec::as_slice).collect();
    let tokens: usize = texts.iter().map(Vec::len).sum();
    g.throughput(Throughput::Elements(tokens as u64));
    g.bench_function("batch_32_tools", |b| b.iter(|| model.embed_batch(black_box(&seqs))));
    g.finish();
}

criterion_group! {
    name = benches;
    config = Criterion::default().sample_size(20);
    targets = bench
}
criterion_main!(benches);
