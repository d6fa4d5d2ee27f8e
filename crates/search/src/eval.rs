//! Search quality metrics for `toolgate catalogue eval`: nDCG@10 with binary relevance
//! and Recall@5/@10, over a JSONL file of `{"query": "...", "relevant": ["slug", ...]}`.

use serde::Deserialize;

/// One judged query.
#[derive(Debug, Clone, Deserialize)]
pub struct Judged {
    /// What the agent asked.
    pub query: String,
    /// The slugs that answer it.
    pub relevant: Vec<String>,
}

/// A line of the query file that could not be used.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct BadLine {
    /// 1-based line number.
    pub line: usize,
    /// Why.
    pub reason: String,
}

/// Parses a JSONL query file. Blank lines are skipped; every other unusable line is
/// returned with its number, never dropped silently.
pub fn parse(text: &str) -> (Vec<(usize, Judged)>, Vec<BadLine>) {
    let mut good = Vec::new();
    let mut bad = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line_no = i + 1;
        if line.trim().is_empty() {
            continue;
        }
        match serde_json::from_str::<Judged>(line) {
            Ok(j) if j.relevant.is_empty() => bad.push(BadLine {
                line: line_no,
                reason: "\"relevant\" is empty".into(),
            }),
            Ok(j) if j.query.trim().is_empty() => bad.push(BadLine {
                line: line_no,
                reason: "\"query\" is empty".into(),
            }),
            Ok(j) => good.push((line_no, j)),
            Err(e) => bad.push(BadLine {
                line: line_no,
                reason: e.to_string(),
            }),
        }
    }
    (good, bad)
}

/// nDCG@k with binary relevance: DCG of the ranking over the ideal DCG of the relevant
/// set.
pub fn ndcg_at(k: usize, ranked: &[&str], relevant: &[String]) -> f64 {
    let gain = |i: usize| 1.0 / ((i + 2) as f64).log2();
    let dcg: f64 = ranked
        .iter()
        .take(k)
        .enumerate()
        .filter(|(_, s)| relevant.iter().any(|r| r == *s))
        .map(|(i, _)| gain(i))
        .sum();
    let ideal: f64 = (0..relevant.len().min(k)).map(gain).sum();
    // Sums start at -0.0; report an empty ranking as 0.0.
    if ideal == 0.0 || dcg == 0.0 { 0.0 } else { dcg / ideal }
}

/// The share of `relevant` found in the first `k` of `ranked`.
pub fn recall_at(k: usize, ranked: &[&str], relevant: &[String]) -> f64 {
    if relevant.is_empty() {
        return 0.0;
    }
    let found = relevant
        .iter()
        .filter(|r| ranked.iter().take(k).any(|s| s == r))
        .count();
    found as f64 / relevant.len() as f64
}

/// Metrics averaged over queries.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Summary {
    /// Queries measured.
    pub queries: usize,
    /// Mean nDCG@10.
    pub ndcg10: f64,
    /// Mean Recall@5.
    pub recall5: f64,
    /// Mean Recall@10.
    pub recall10: f64,
}

/// Accumulates per-query metrics.
#[derive(Debug, Default)]
pub struct Accumulator {
    sum: Summary,
}

impl Accumulator {
    /// Adds one query's ranking; returns its nDCG@10.
    pub fn add(&mut self, ranked: &[&str], relevant: &[String]) -> f64 {
        let ndcg = ndcg_at(10, ranked, relevant);
        self.sum.queries += 1;
        self.sum.ndcg10 += ndcg;
        self.sum.recall5 += recall_at(5, ranked, relevant);
        self.sum.recall10 += recall_at(10, ranked, relevant);
        ndcg
    }

    /// The means.
    pub fn summary(&self) -> Summary {
        let n = self.sum.queries.max(1) as f64;
        Summary {
            queries: self.sum.queries,
            ndcg10: self.sum.ndcg10 / n,
            recall5: self.sum.recall5 / n,
            recall10: self.sum.recall10 / n,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn rel(s: &[&str]) -> Vec<String> {
        s.iter().map(|x| (*x).to_owned()).collect()
    }

    /// Hand-checked: relevant at rank 1 → 1; at rank 2 → 1/log2(3) = 0.6309; two relevant
    /// at ranks 1 and 3 → (1 + 0.5) / (1 + 0.6309) = 0.9197.
    #[test]
    fn ndcg_by_hand() {
        assert!((ndcg_at(10, &["a", "b"], &rel(&["a"])) - 1.0).abs() < 1e-9);
        assert!((ndcg_at(10, &["b", "a"], &rel(&["a"])) - 0.630_929_753_6).abs() < 1e-9);
        assert!((ndcg_at(10, &["a", "x", "b"], &rel(&["a", "b"])) - 1.5 / 1.630_929_753_6).abs() < 1e-9);
        assert_eq!(ndcg_at(10, &["x"], &rel(&["a"])), 0.0);
    }

    #[test]
    fn recall_by_hand() {
        let ranked = ["a", "b", "c", "d", "e", "f"];
        assert_eq!(recall_at(5, &ranked, &rel(&["f"])), 0.0);
        assert_eq!(recall_at(10, &ranked, &rel(&["f"])), 1.0);
        assert_eq!(recall_at(5, &ranked, &rel(&["a", "z"])), 0.5);
    }

    #[test]
    fn bad_lines_are_reported_with_their_numbers() {
        let text = "{\"query\":\"q\",\"relevant\":[\"a\"]}\n\nnot json\n{\"query\":\"q\",\"relevant\":[]}\n";
        let (good, bad) = parse(text);
        assert_eq!(good.len(), 1);
        assert_eq!(bad.iter().map(|b| b.line).collect::<Vec<_>>(), vec![3, 4]);
    }
}
