//! Search speed over deterministic synthetic catalogues of 1k, 10k and 100k tools:
//! index build time and query latency. `cargo bench --bench search`.

#[path = "common/synthetic.rs"]
mod synthetic;

use std::hint::black_box;

use criterion::{BenchmarkId, Criterion, criterion_group, criterion_main};
use toolgate::search::Index;

fn build(c: &mut Criterion) {
    let mut group = c.benchmark_group("search/build");
    group.sample_size(10);
    for n in [1_000, 10_000, 100_000] {
        let docs = synthetic::catalogue(n);
        group.bench_with_input(BenchmarkId::from_parameter(n), &docs, |b, docs| {
            b.iter(|| Index::build(black_box(docs)))
        });
    }
    group.finish();
}

fn query(c: &mut Criterion) {
    let queries = synthetic::queries();
    let mut group = c.benchmark_group("search/query");
    for n in [1_000, 10_000, 100_000] {
        let index = Index::build(&synthetic::catalogue(n));
        let mut i = 0;
        group.bench_function(BenchmarkId::from_parameter(n), |b| {
            b.iter(|| {
                i = (i + 1) % queries.len();
                black_box(index.search(&queries[i], 10).ok())
            })
        });
    }
    group.finish();
}

criterion_group!(benches, build, query);
criterion_main!(benches);
