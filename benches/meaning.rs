//! Search by meaning, the figures docs/performance.md quotes: search latency on
//! the embedded catalogue including the query's embedding (p50, p99 over distinct
//! MetaTool queries, so no query vector is reused), and how long a synthetic catalogue
//! (10,000 tools by default, with their parameters) takes to embed on two threads, then
//! again from the disk cache as after a restart. The ranking quality per dataset is
//! `cargo bench --bench ranking` and `toolgate catalogue eval --dataset ...`.
//!
//! `cargo bench --bench meaning`; `TOOLGATE_MEANING_TOOLS=N` sets the synthetic size,
//! `TOOLGATE_MEANING_QUERIES=N` the number of queries (1,000).

#[path = "common/synthetic.rs"]
mod synthetic;

use std::sync::Arc;
use std::time::{Duration, Instant};

use serde_json::json;
use toolgate::catalogue::load::{self, Entry};
use toolgate::catalogue::{Origin, Snapshot};
use toolgate::search::embedding::Settings;
use toolgate::search::{Meaning, Ranker, SearchMode};

fn main() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let n_queries = env_usize("TOOLGATE_MEANING_QUERIES", 1_000);
    let n_tools = env_usize("TOOLGATE_MEANING_TOOLS", 10_000);
    let cache = tempfile::tempdir().unwrap();

    // Latency on the embedded catalogue.
    let (snapshot, _) = Snapshot::build(load::embedded().entries, Origin::Local);
    let snapshot = Arc::new(snapshot);
    let meaning = Arc::new(Meaning::new(settings(cache.path())));
    meaning.prepare(&snapshot);
    assert_eq!(runtime.block_on(meaning.settled(&*snapshot)), Ranker::Hybrid);
    let queries = metatool_queries(n_queries);
    let mut samples = Vec::with_capacity(queries.len());
    for q in &queries {
        let start = Instant::now();
        if let Some(v) = meaning.query(q) {
            std::hint::black_box(snapshot.search_by_meaning(q, &v, 10).ok());
        }
        samples.push(start.elapsed());
    }
    samples.sort();
    let p = |q: f64| ms(samples[((samples.len() as f64 - 1.0) * q) as usize]);
    println!(
        "embedded catalogue ({} tools), {} distinct queries: search with the query's embedding p50 {:.2} ms, p99 {:.2} ms",
        snapshot.tools().len(),
        samples.len(),
        p(0.5),
        p(0.99)
    );

    // Embedding a synthetic catalogue, then again from the cache.
    for pass in ["cold (nothing cached)", "restart (all cached)"] {
        let (snapshot, _) = Snapshot::build(synthetic_entries(n_tools), Origin::Local);
        let snapshot = Arc::new(snapshot);
        let words = toolgate_minilm::WordPiece::get();
        // The texts the server embeds (by its recipe: a richer text costs more tokens).
        let tokens: usize = snapshot
            .tools()
            .iter()
            .flat_map(|t| toolgate::search::meaning::texts(&**t))
            .map(|text| words.count(&text, toolgate::search::meaning::MAX_TOKENS))
            .sum();
        let meaning = Arc::new(Meaning::new(settings(cache.path())));
        let start = Instant::now();
        meaning.prepare(&snapshot);
        let ranker = runtime.block_on(meaning.settled(&*snapshot));
        println!(
            "{n_tools} synthetic tools ({:.1} tokens a text), {pass}: {} in {:.2} s",
            tokens as f64 / n_tools.max(1) as f64,
            ranker.label(),
            start.elapsed().as_secs_f64()
        );
    }
}

fn settings(cache: &std::path::Path) -> Settings {
    Settings {
        mode: SearchMode::Hybrid,
        cache_dir: Some(cache.to_owned()),
        budget: Duration::from_secs(3_600),
    }
}

fn synthetic_entries(n: usize) -> Vec<Entry> {
    synthetic::catalogue(n)
        .into_iter()
        .map(|d| {
            let properties: serde_json::Map<String, serde_json::Value> = d
                .params
                .iter()
                .map(|(name, doc)| (name.clone(), json!({"type": "string", "description": doc})))
                .collect();
            Entry {
                manifest: serde_json::from_value(json!({
                    "slug": d.slug, "name": d.name, "description": d.description,
                    "category": d.category, "tags": d.tags,
                    "input_schema": {"type": "object", "properties": properties},
                }))
                .unwrap(),
                code: None,
                file: None,
            }
        })
        .collect()
}

/// The first `n` distinct queries of eval/metatool.
fn metatool_queries(n: usize) -> Vec<String> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/eval/metatool/queries.jsonl");
    let text = std::fs::read_to_string(path).unwrap();
    let mut seen = std::collections::HashSet::new();
    text.lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["query"].as_str().map(str::to_owned))
        .filter(|q| seen.insert(q.clone()))
        .take(n)
        .collect()
}

fn env_usize(key: &str, default: usize) -> usize {
    std::env::var(key).ok().and_then(|v| v.parse().ok()).unwrap_or(default)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
