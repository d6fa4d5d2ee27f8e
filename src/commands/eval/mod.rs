//! `toolgate catalogue eval`: how findable a catalogue's tools are, measured with the
//! same rankers the server uses (a query cut as the server cuts it, embedded as the server
//! embeds it), one catalogue or several datasets side by side (`datasets.rs`).

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use crate::catalogue::Snapshot;
use crate::plural::count;
use crate::search::eval::{Accumulator, BadLine, Summary, parse};
use crate::search::{self, meaning::DIM};
use crate::search::{Meaning, Ranker};

pub mod datasets;

/// How one ranker placed a query's tools, for `--show-misses`.
#[derive(Debug, Clone)]
pub struct Placed {
    /// The ranker.
    pub ranker: Ranker,
    /// Its nDCG@10 for the query.
    pub ndcg: f64,
    /// What ranked above the first relevant tool (all of the top 10 when none made it).
    pub above: Vec<String>,
    /// The rank of the first relevant tool in the top 10, if any (1-based).
    pub rank: Option<usize>,
}

/// A query that some ranker ranked badly, for `--show-misses`.
#[derive(Debug, Clone)]
pub struct Miss {
    /// Its line in the query file.
    pub line: usize,
    /// The query.
    pub query: String,
    /// The relevant slugs.
    pub relevant: Vec<String>,
    /// How each ranker placed it, lexical first.
    pub placed: Vec<Placed>,
}

impl Miss {
    /// The nDCG@10 of the ranker the server serves (the last measured).
    pub fn ndcg(&self) -> f64 {
        self.placed.last().map_or(0.0, |p| p.ndcg)
    }
}

/// What an evaluation found.
#[derive(Debug, Clone)]
pub struct Report {
    /// Averages over the usable queries, per ranker: lexical, then hybrid when the
    /// model is in use.
    pub summaries: Vec<(Ranker, Summary)>,
    /// Lines that could not be used.
    pub bad_lines: Vec<BadLine>,
    /// Relevant slugs the catalogue does not have, with their line.
    pub unknown_slugs: Vec<(usize, String)>,
    /// The worst queries of the served ranker, worst first.
    pub misses: Vec<Miss>,
    /// Wall time spent ranking, per ranker.
    pub elapsed: Vec<Duration>,
}

/// Runs every `every`-th query of `text` (JSONL; 1: every query) against `snapshot`, with
/// the lexical ranker and, when `meaning` is given (the snapshot's vectors ready), the
/// hybrid one. `progress` is called after each query with (done, total).
pub fn run(
    snapshot: &Snapshot,
    meaning: Option<&Meaning>,
    text: &str,
    every: usize,
    show_misses: usize,
    mut progress: impl FnMut(usize, usize),
) -> Report {
    let (queries, bad_lines) = parse(text);
    let queries: Vec<_> = queries.into_iter().step_by(every.max(1)).collect();
    // Each query as the server searches it: its start, embedded once.
    let cut: Vec<&str> = queries.iter().map(|(_, q)| search::cut(&q.query).text).collect();
    let vectors: Option<Vec<[f32; DIM]>> = meaning.and_then(|m| m.queries(&cut));
    let mut unknown_slugs = Vec::new();
    for (line, q) in &queries {
        for slug in &q.relevant {
            if snapshot.get(slug).is_none() {
                unknown_slugs.push((*line, slug.clone()));
            }
        }
    }
    let rankers: Vec<Ranker> = match vectors {
        Some(_) => vec![Ranker::Lexical, Ranker::Hybrid],
        None => vec![Ranker::Lexical],
    };
    let mut acc: Vec<Accumulator> = rankers.iter().map(|_| Accumulator::default()).collect();
    let mut elapsed = vec![Duration::ZERO; rankers.len()];
    let mut misses = Vec::new();
    for (done, (line, q)) in queries.iter().enumerate() {
        let mut placed = Vec::with_capacity(rankers.len());
        for (i, ranker) in rankers.iter().enumerate() {
            let start = Instant::now();
            let hits = match (ranker, &vectors) {
                (Ranker::Hybrid, Some(v)) => snapshot.search_by_meaning(cut[done], &v[done], 10),
                _ => snapshot.search(cut[done], 10),
            };
            elapsed[i] += start.elapsed();
            let ranked: Vec<&str> = hits
                .map(|hits| hits.iter().map(|(t, _)| t.slug()).collect())
                .unwrap_or_default();
            let ndcg = acc[i].add(&ranked, &q.relevant);
            let rank = ranked.iter().position(|s| q.relevant.iter().any(|r| r == s));
            placed.push(Placed {
                ranker: *ranker,
                ndcg,
                above: ranked[..rank.unwrap_or(ranked.len())]
                    .iter()
                    .map(|s| (*s).to_owned())
                    .collect(),
                rank: rank.map(|r| r + 1),
            });
        }
        if show_misses > 0 && placed.iter().any(|p| p.ndcg < 1.0) {
            misses.push(Miss {
                line: *line,
                query: q.query.clone(),
                relevant: q.relevant.clone(),
                placed,
            });
        }
        progress(done + 1, queries.len());
    }
    misses.sort_by(|a, b| {
        a.ndcg()
            .total_cmp(&b.ndcg())
            .then_with(|| {
                let worst = |m: &Miss| m.placed.iter().map(|p| p.ndcg).fold(1.0, f64::min);
                worst(a).total_cmp(&worst(b))
            })
            .then(a.line.cmp(&b.line))
    });
    misses.truncate(show_misses);
    Report {
        summaries: rankers.into_iter().zip(acc.iter().map(Accumulator::summary)).collect(),
        bad_lines,
        unknown_slugs,
        misses,
        elapsed,
    }
}

impl Report {
    /// The nDCG@10 `ranker` reached, if it was measured.
    pub fn ndcg(&self, ranker: Ranker) -> Option<f64> {
        self.summaries.iter().find(|(r, _)| *r == ranker).map(|(_, s)| s.ndcg10)
    }

    /// The report as people read it: one column per ranker.
    pub fn render(&self, tools: usize) -> String {
        let mut out = String::new();
        let queries = self.summaries.first().map_or(0, |(_, s)| s.queries);
        let per_query: Vec<String> = self
            .summaries
            .iter()
            .zip(&self.elapsed)
            .map(|((r, _), e)| {
                let ms = if queries > 0 {
                    e.as_secs_f64() * 1e3 / queries as f64
                } else {
                    0.0
                };
                format!("{} {ms:.3} ms", r.label())
            })
            .collect();
        let _ = writeln!(
            out,
            "{} over {} (ranking per query, the query's embedding not included: {})",
            count(queries, "query", "queries"),
            count(tools, "tool", "tools"),
            per_query.join(", ")
        );
        let _ = write!(out, "{:<10}", "");
        for (r, _) in &self.summaries {
            let _ = write!(out, "{:>8}", r.label());
        }
        out.push('\n');
        for (label, value) in [
            ("nDCG@10", (|s: &Summary| s.ndcg10) as fn(&Summary) -> f64),
            ("Recall@5", |s: &Summary| s.recall5),
            ("Recall@10", |s: &Summary| s.recall10),
        ] {
            let _ = write!(out, "{label:<10}");
            for (_, s) in &self.summaries {
                let _ = write!(out, "{:>8.3}", value(s));
            }
            out.push('\n');
        }
        if !self.misses.is_empty() {
            let _ = writeln!(out, "\nWorst {}:", count(self.misses.len(), "query", "queries"));
            for m in &self.misses {
                let missed: Vec<&str> = m
                    .placed
                    .iter()
                    .filter(|p| p.ndcg < 1.0)
                    .map(|p| p.ranker.label())
                    .collect();
                let _ = writeln!(
                    out,
                    "line {}: {:?} — wanted {}; missed by {}",
                    m.line,
                    m.query,
                    m.relevant.join(", "),
                    missed.join(" and ")
                );
                for p in &m.placed {
                    let rank = p.rank.map_or("not in the top 10".to_owned(), |r| {
                        format!("first relevant at rank {r}")
                    });
                    let _ = write!(
                        out,
                        "    {:<8} {rank}; nDCG {:.3}",
                        format!("{}:", p.ranker.label()),
                        p.ndcg
                    );
                    if !p.above.is_empty() {
                        let _ = write!(out, "; ranked above: {}", p.above.join(", "));
                    }
                    out.push('\n');
                }
            }
        }
        out
    }
}
