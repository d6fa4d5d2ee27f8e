//! `toolgate catalogue eval`: how findable a catalogue's tools are, measured with the
//! same ranker the server uses.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use crate::catalogue::Snapshot;
use crate::search::eval::{Accumulator, BadLine, Summary, parse};

/// A query that ranked badly, for `--show-misses`.
#[derive(Debug, Clone)]
pub struct Miss {
    /// Its line in the query file.
    pub line: usize,
    /// The query.
    pub query: String,
    /// Its nDCG@10.
    pub ndcg: f64,
    /// The relevant slugs.
    pub relevant: Vec<String>,
    /// What ranked above the first relevant tool (all of the top 10 when none made it).
    pub above: Vec<String>,
    /// The rank of the first relevant tool in the top 10, if any (1-based).
    pub rank: Option<usize>,
}

/// What an evaluation found.
#[derive(Debug, Clone)]
pub struct Report {
    /// Averages over the usable queries.
    pub summary: Summary,
    /// Lines that could not be used.
    pub bad_lines: Vec<BadLine>,
    /// Relevant slugs the catalogue does not have, with their line.
    pub unknown_slugs: Vec<(usize, String)>,
    /// The worst queries, worst first.
    pub misses: Vec<Miss>,
    /// Wall time spent ranking.
    pub elapsed: Duration,
}

/// Runs every query of `text` (JSONL) against `snapshot`. `progress` is called after each
/// query with (done, total).
pub fn run(snapshot: &Snapshot, text: &str, show_misses: usize, mut progress: impl FnMut(usize, usize)) -> Report {
    let (queries, bad_lines) = parse(text);
    let mut unknown_slugs = Vec::new();
    for (line, q) in &queries {
        for slug in &q.relevant {
            if snapshot.get(slug).is_none() {
                unknown_slugs.push((*line, slug.clone()));
            }
        }
    }
    let start = Instant::now();
    let mut acc = Accumulator::default();
    let mut misses = Vec::new();
    for (done, (line, q)) in queries.iter().enumerate() {
        let ranked: Vec<&str> = snapshot
            .search(&q.query, 10)
            .map(|hits| hits.iter().map(|(t, _)| t.slug()).collect())
            .unwrap_or_default();
        let ndcg = acc.add(&ranked, &q.relevant);
        if show_misses > 0 && ndcg < 1.0 {
            let rank = ranked.iter().position(|s| q.relevant.iter().any(|r| r == s));
            let above = ranked[..rank.unwrap_or(ranked.len())]
                .iter()
                .map(|s| (*s).to_owned())
                .collect();
            misses.push(Miss {
                line: *line,
                query: q.query.clone(),
                ndcg,
                relevant: q.relevant.clone(),
                above,
                rank: rank.map(|r| r + 1),
            });
        }
        progress(done + 1, queries.len());
    }
    misses.sort_by(|a, b| a.ndcg.total_cmp(&b.ndcg).then(a.line.cmp(&b.line)));
    misses.truncate(show_misses);
    Report {
        summary: acc.summary(),
        bad_lines,
        unknown_slugs,
        misses,
        elapsed: start.elapsed(),
    }
}

impl Report {
    /// The report as people read it.
    pub fn render(&self, tools: usize) -> String {
        let s = &self.summary;
        let mut out = String::new();
        let per_query = if s.queries > 0 {
            self.elapsed.as_secs_f64() * 1e3 / s.queries as f64
        } else {
            0.0
        };
        let _ = writeln!(
            out,
            "{} queries over {tools} tools ({per_query:.3} ms per query)",
            s.queries
        );
        let _ = writeln!(out, "nDCG@10   {:.3}", s.ndcg10);
        let _ = writeln!(out, "Recall@5  {:.3}", s.recall5);
        let _ = writeln!(out, "Recall@10 {:.3}", s.recall10);
        if !self.misses.is_empty() {
            let _ = writeln!(out, "\nWorst {} queries:", self.misses.len());
            for m in &self.misses {
                let rank = m.rank.map_or("not in the top 10".to_owned(), |r| {
                    format!("first relevant at rank {r}")
                });
                let _ = writeln!(
                    out,
                    "line {}: {:?} — wanted {}; {rank}; nDCG {:.3}",
                    m.line,
                    m.query,
                    m.relevant.join(", "),
                    m.ndcg
                );
                if !m.above.is_empty() {
                    let _ = writeln!(out, "    ranked above: {}", m.above.join(", "));
                }
            }
        }
        out
    }
}
