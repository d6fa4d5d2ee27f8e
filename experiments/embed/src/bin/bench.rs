//! Latency and throughput of the prototype on this machine: model load, query
//! embedding p50/p99 (one thread), tool embedding throughput (one and two threads) with
//! its extrapolation to 10,000 tools, cost by text length, a brute-force cosine scan
//! over 10,000 vectors, and a determinism check (same vector bit for bit across runs and
//! threads).
//!
//! Wall times on a shared 2-core machine include other processes' turns; thread CPU
//! times do not, and are what an idle machine would show.
//!
//! Usage: bench MODEL_DIR CATALOGUE QUERIES
use std::path::Path;
use std::time::{Duration, Instant};

use anyhow::{Context as _, bail};
use embed_spike::{DIM, Embedder, cosine};

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, models, catalogue, queries] = args.as_slice() else {
        bail!("usage: bench MODEL_DIR CATALOGUE QUERIES");
    };
    let models = Path::new(models);
    let start = Instant::now();
    let onnx = std::fs::read(models.join("model.onnx"))?;
    let tok = std::fs::read(models.join("tokenizer.json"))?;
    let e = Embedder::from_bytes(&onnx, &tok)?;
    println!("load (read + parse + optimise): {:.0} ms", ms(start.elapsed()));

    let cat: serde_json::Value = serde_json::from_str(&std::fs::read_to_string(catalogue)?)?;
    let tools: Vec<String> = cat["tools"]
        .as_array()
        .context("no tools array")?
        .iter()
        .map(|t| format!("{}: {}", t["name"].as_str().unwrap_or(""), t["description"].as_str().unwrap_or("")))
        .collect();
    let text = std::fs::read_to_string(queries)?;
    let qs: Vec<String> = text
        .lines()
        .step_by(20)
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .filter_map(|v| v["query"].as_str().map(str::to_owned))
        .collect();

    // Query latency, one thread: tokenise + run + pool.
    for q in qs.iter().take(20) {
        e.embed(q)?;
    }
    let mut lat = Vec::with_capacity(qs.len());
    let mut cpu = Vec::with_capacity(qs.len());
    let mut tokens = 0;
    for q in &qs {
        let (t, c) = (Instant::now(), thread_cpu());
        let v = e.embed(q)?;
        cpu.push(thread_cpu().saturating_sub(c));
        lat.push(t.elapsed());
        std::hint::black_box(v);
        tokens += e.tokenize(q)?.len();
    }
    lat.sort();
    cpu.sort();
    println!(
        "query embedding over {} queries (mean {:.1} tokens): wall p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms; \
         thread CPU p50 {:.2} ms, p99 {:.2} ms",
        lat.len(),
        tokens as f64 / qs.len().max(1) as f64,
        ms(pct(&lat, 0.50)),
        ms(pct(&lat, 0.99)),
        ms(pct(&lat, 1.0)),
        ms(pct(&cpu, 0.50)),
        ms(pct(&cpu, 0.99))
    );

    // Tool embedding throughput.
    let tool_tokens: usize = tools.iter().map(|t| e.tokenize(t).map(|v| v.len())).sum::<Result<_, _>>()?;
    let (t, c) = (Instant::now(), thread_cpu());
    for text in &tools {
        std::hint::black_box(e.embed(text)?);
    }
    let one = t.elapsed();
    let one_cpu = thread_cpu().saturating_sub(c);
    let t = Instant::now();
    let halves = tools.split_at(tools.len() / 2);
    std::thread::scope(|s| -> anyhow::Result<()> {
        let a = s.spawn(|| halves.0.iter().try_for_each(|x| e.embed(x).map(drop)));
        let b = s.spawn(|| halves.1.iter().try_for_each(|x| e.embed(x).map(drop)));
        a.join().map_err(|_| anyhow::anyhow!("thread panicked"))??;
        b.join().map_err(|_| anyhow::anyhow!("thread panicked"))??;
        Ok(())
    })?;
    let two = t.elapsed();
    let per10k = |d: Duration| d.as_secs_f64() * 10_000.0 / tools.len().max(1) as f64;
    println!(
        "{} MetaTool tools (mean {:.1} tokens): 1 thread {:.2} s, 2 threads {:.2} s -> 10,000 tools: {:.0} s / {:.0} s",
        tools.len(),
        tool_tokens as f64 / tools.len().max(1) as f64,
        one.as_secs_f64(),
        two.as_secs_f64(),
        per10k(one),
        per10k(two)
    );
    println!(
        "  thread CPU for the 199: {:.2} s -> 10,000 tools: {:.0} s of CPU ({:.0} s on 2 idle cores)",
        one_cpu.as_secs_f64(),
        per10k(one_cpu),
        per10k(one_cpu) / 2.0
    );

    // Cost by length: a longer manifest (description + tags + parameters) costs more.
    for words in [8usize, 24, 56, 120, 250] {
        let text = "search the catalogue for a tool ".repeat(words / 6 + 1);
        let ids = e.tokenize(&text)?;
        let ids = &ids[..ids.len().min(words + 2)];
        let c = thread_cpu();
        let reps = 20;
        for _ in 0..reps {
            std::hint::black_box(e.embed_ids(ids)?);
        }
        let each = thread_cpu().saturating_sub(c) / reps;
        println!(
            "{:3} tokens: {:6.2} ms thread CPU per text -> 10,000 tools: {:4.0} s on 1 thread, {:4.0} s on 2",
            ids.len(),
            ms(each),
            each.as_secs_f64() * 10_000.0,
            each.as_secs_f64() * 5_000.0
        );
    }

    // Brute-force cosine over 10,000 unit vectors (a deterministic LCG fills them).
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = || {
        state = state.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1_442_695_040_888_963_407);
        ((state >> 40) as f32 / (1u64 << 24) as f32) - 0.5
    };
    let table: Vec<Vec<f32>> = (0..10_000).map(|_| (0..DIM).map(|_| next()).collect()).collect();
    let q = e.embed("check my dotenv file")?;
    let t = Instant::now();
    let reps = 50;
    for _ in 0..reps {
        let best = table.iter().map(|v| cosine(v, &q)).fold(f32::MIN, f32::max);
        std::hint::black_box(best);
    }
    println!("cosine scan over 10,000 tools: {:.2} ms", ms(t.elapsed() / reps));

    // Determinism: bit-identical vectors across calls and threads.
    let probe = "convert this currency to euros";
    let a = e.embed(probe)?;
    let b = std::thread::scope(|s| s.spawn(|| e.embed(probe)).join())
        .map_err(|_| anyhow::anyhow!("thread panicked"))??;
    let c = e.embed(probe)?;
    let same = a.iter().zip(&b).zip(&c).all(|((x, y), z)| x.to_bits() == y.to_bits() && y.to_bits() == z.to_bits());
    println!("same vector bit for bit across calls and threads: {same}");
    Ok(())
}

/// CPU time this thread has used: unlike wall time, it does not count the time other
/// processes on a shared machine took the core.
fn thread_cpu() -> Duration {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: `ts` is a valid timespec to write to; the clock id is a constant.
    let rc = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    if rc != 0 {
        return Duration::ZERO;
    }
    Duration::new(ts.tv_sec as u64, ts.tv_nsec as u32)
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

fn pct(sorted: &[Duration], p: f64) -> Duration {
    if sorted.is_empty() {
        return Duration::ZERO;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}
