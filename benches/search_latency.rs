//! Query latency percentiles (p50, p99) and build time at 1k, 10k and 100k synthetic
//! tools: the figures docs/performance.md quotes. `cargo bench --bench
//! search_latency`. Criterion reports means and medians; tail latency needs every sample.

#[path = "common/synthetic.rs"]
mod synthetic;

use std::hint::black_box;
use std::time::{Duration, Instant};

use toolgate::search::Index;

fn main() {
    let queries = synthetic::queries();
    println!("| tools | build | query p50 | query p99 |");
    println!("|---|---|---|---|");
    for n in [1_000, 10_000, 100_000] {
        let docs = synthetic::catalogue(n);
        let start = Instant::now();
        let index = Index::build(&docs);
        let build = start.elapsed();
        let mut samples: Vec<Duration> = Vec::new();
        let mut slowest: Vec<(Duration, &str)> = Vec::new();
        for _ in 0..10 {
            for q in &queries {
                let start = Instant::now();
                black_box(index.search(q, 10).ok());
                let took = start.elapsed();
                samples.push(took);
                slowest.push((took, q));
            }
        }
        samples.sort();
        slowest.sort_by_key(|s| std::cmp::Reverse(s.0));
        if std::env::var_os("SLOWEST").is_some() {
            for (took, q) in slowest.iter().take(5) {
                eprintln!("{n}: {:.3} ms {q:?}", ms(*took));
            }
        }
        let p = |q: f64| samples[((samples.len() as f64 - 1.0) * q) as usize];
        println!(
            "| {n} | {:.0} ms | {:.3} ms | {:.3} ms |",
            build.as_secs_f64() * 1e3,
            ms(p(0.5)),
            ms(p(0.99))
        );
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}
