//! MetaTool nDCG@10 of cosine alone, of toolgate's lexical ranker alone and of their
//! fusion, with the fusion weight chosen on half A of the queries and reported on half
//! B (and the other way round, as a check), then on the full set.
//!
//! The lexical side is the real thing: the catalogue is loaded and indexed by toolgate's
//! own `catalogue::load::file` and `Snapshot::build`, scored by `Snapshot::search`, and
//! nDCG@10 / Recall are `toolgate::search::eval`'s functions.
//!
//! Query embeddings are cached in CACHE_DIR (one file per model and query file), so a
//! second run only ranks.
//!
//! Usage: eval MODEL_DIR CATALOGUE QUERIES CACHE_DIR
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context as _, bail};
use embed_spike::{DIM, Embedder, cosine, fnv1a, fuse, rank};
use toolgate::catalogue::{Origin, Snapshot, load};
use toolgate::search::eval::{Accumulator, ndcg_at, parse};

/// Fusion weights tried: the lexical share, 0.00 to 1.00 by 0.05.
const STEPS: usize = 21;

/// What the model reads for a tool. Tags and category are empty on MetaTool.
/// `EMBED_TEXT=desc` embeds the description alone, `EMBED_TEXT=dot` "name. description"
/// (variants compared on half A only).
fn tool_text(name: &str, description: &str, category: &str, tags: &[String]) -> String {
    let mut text = match std::env::var("EMBED_TEXT").as_deref() {
        Ok("desc") => description.to_owned(),
        Ok("dot") => format!("{name}. {description}"),
        _ => format!("{name}: {description}"),
    };
    if !category.is_empty() || !tags.is_empty() {
        let mut extra: Vec<&str> = tags.iter().map(String::as_str).collect();
        if !category.is_empty() {
            extra.insert(0, category);
        }
        text.push_str(&format!(" ({})", extra.join(", ")));
    }
    text
}

fn main() -> anyhow::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let [_, models, catalogue, queries, cache] = args.as_slice() else {
        bail!("usage: eval MODEL_DIR CATALOGUE QUERIES CACHE_DIR");
    };
    let models = Path::new(models);
    let model_path = models.join("model.onnx");
    let embedder = Embedder::from_files(&model_path, &models.join("tokenizer.json"))?;

    let loaded = load::file(Path::new(catalogue)).map_err(anyhow::Error::msg)?;
    let (snapshot, problems) = Snapshot::build(loaded.entries, Origin::Local);
    if !problems.is_empty() {
        bail!("catalogue problems: {problems:?}");
    }
    let tools = snapshot.tools();
    let n = tools.len();
    // Snapshots are sorted by slug: position is slug rank.
    let slug_rank: Vec<u32> = (0..n as u32).collect();
    let index_of = |slug: &str| tools.iter().position(|t| t.slug() == slug);

    let start = Instant::now();
    let mut tool_vecs = Vec::with_capacity(n);
    for t in tools {
        let m = &t.manifest;
        tool_vecs.push(embedder.embed(&tool_text(&m.name, &m.description, &m.category, &m.tags))?);
    }
    eprintln!("embedded {n} tools in {:.2} s", start.elapsed().as_secs_f64());

    let text = std::fs::read_to_string(queries).with_context(|| queries.clone())?;
    let (judged, bad) = parse(&text);
    if !bad.is_empty() {
        bail!("bad query lines: {bad:?}");
    }
    let strings: Vec<&str> = judged.iter().map(|(_, j)| j.query.as_str()).collect();
    let query_vecs = query_embeddings(&embedder, &model_path, &strings, Path::new(cache))?;

    // sums[half][step]: nDCG@10 sums; half 0 = A (even hash), 1 = B.
    let mut sums = [[0f64; STEPS]; 2];
    let mut counts = [0usize; 2];
    let mut full: Vec<Accumulator> = (0..STEPS).map(|_| Accumulator::default()).collect();
    let mut lexical_only = Accumulator::default();
    for ((_, q), qv) in judged.iter().zip(&query_vecs) {
        let half = (fnv1a(&q.query) % 2) as usize;
        counts[half] += 1;
        let mut lexical = vec![0f32; n];
        if let Ok(hits) = snapshot.search(&q.query, n) {
            for (tool, hit) in hits {
                if let Some(i) = index_of(tool.slug()) {
                    lexical[i] = hit.score;
                }
            }
        }
        // The ranker as served, for the check that w = 1 reproduces it.
        let served: Vec<&str> = snapshot
            .search(&q.query, 10)
            .map(|h| h.iter().map(|(t, _)| t.slug()).collect())
            .unwrap_or_default();
        lexical_only.add(&served, &q.relevant);
        let cos: Vec<f32> = tool_vecs.iter().map(|t| cosine(t, qv)).collect();
        for (step, acc) in full.iter_mut().enumerate() {
            let w = step as f32 / (STEPS - 1) as f32;
            let order = rank(&fuse(&lexical, &cos, w), &slug_rank);
            let ranked: Vec<&str> = order.iter().take(10).map(|&i| tools[i].slug()).collect();
            acc.add(&ranked, &q.relevant);
            sums[half][step] += ndcg_at(10, &ranked, &q.relevant);
        }
    }
    let mean = |half: usize, step: usize| sums[half][step] / counts[half].max(1) as f64;
    let best = |half: usize| (0..STEPS).max_by(|&a, &b| mean(half, a).total_cmp(&mean(half, b)).then(b.cmp(&a)));
    let w = |step: usize| step as f64 / (STEPS - 1) as f64;
    let mut out = std::io::stdout().lock();
    writeln!(out, "{} queries: half A {} (tune), half B {} (held out)", judged.len(), counts[0], counts[1])?;
    let s = lexical_only.summary();
    writeln!(out, "lexical as served: nDCG@10 {:.3} R@5 {:.3} R@10 {:.3}", s.ndcg10, s.recall5, s.recall10)?;
    writeln!(out, "w_lexical  nDCG@10 A  nDCG@10 B  full   R@5    R@10")?;
    for step in 0..STEPS {
        let s = full[step].summary();
        writeln!(
            out,
            "{:9.2}  {:9.4}  {:9.4}  {:.4} {:.4} {:.4}",
            w(step),
            mean(0, step),
            mean(1, step),
            s.ndcg10,
            s.recall5,
            s.recall10
        )?;
    }
    if let (Some(a), Some(b)) = (best(0), best(1)) {
        writeln!(
            out,
            "chosen on A: w = {:.2} -> B {:.4}, full {:.4}; chosen on B: w = {:.2} -> A {:.4}",
            w(a),
            mean(1, a),
            full[a].summary().ndcg10,
            w(b),
            mean(0, b)
        )?;
        writeln!(
            out,
            "cosine alone (w = 0): A {:.4} B {:.4} full {:.4}",
            mean(0, 0),
            mean(1, 0),
            full[0].summary().ndcg10
        )?;
    }
    Ok(())
}

/// The embeddings of `queries`, from the cache when it holds this model's vectors for
/// exactly these strings, else computed (and the cache written).
fn query_embeddings(e: &Embedder, model: &Path, queries: &[&str], dir: &Path) -> anyhow::Result<Vec<Vec<f32>>> {
    let model_bytes = std::fs::read(model)?;
    let key = fnv1a(&format!("{:x}/{}", fnv1a_bytes(&model_bytes), queries.join("\n")));
    let path: PathBuf = dir.join(format!("queries-{key:016x}.f32"));
    if let Ok(bytes) = std::fs::read(&path) {
        if bytes.len() == queries.len() * DIM * 4 {
            return Ok(bytes
                .chunks_exact(DIM * 4)
                .map(|c| c.chunks_exact(4).map(|b| f32::from_le_bytes([b[0], b[1], b[2], b[3]])).collect())
                .collect());
        }
    }
    let start = Instant::now();
    let mut out = Vec::with_capacity(queries.len());
    for (i, q) in queries.iter().enumerate() {
        out.push(e.embed(q)?);
        if (i + 1) % 2000 == 0 {
            eprintln!("embedded {} of {} queries", i + 1, queries.len());
        }
    }
    eprintln!(
        "embedded {} queries in {:.1} s ({:.2} ms each)",
        queries.len(),
        start.elapsed().as_secs_f64(),
        start.elapsed().as_secs_f64() * 1e3 / queries.len().max(1) as f64
    );
    std::fs::create_dir_all(dir)?;
    let bytes: Vec<u8> = out.iter().flatten().flat_map(|x| x.to_le_bytes()).collect();
    std::fs::write(&path, bytes)?;
    Ok(out)
}

fn fnv1a_bytes(bytes: &[u8]) -> u64 {
    bytes.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, &b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    })
}
