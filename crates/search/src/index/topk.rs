//! The lexical ranking's best `limit` documents without adding up every posting: the
//! MaxScore idea (Turtle & Flood, 1995) in term-at-a-time form, written here because it
//! works on this index's own postings and bounds (no search crate ranks BM25F impacts held
//! this way). Measured at 100,000 synthetic tools: a query holding a word every tool has
//! ("files") scored 100,000 postings for a word that cannot change the top ten; such
//! queries set the p99 (1.31 ms in `cargo bench --bench search_latency`, p50 0.17 ms).
//!
//! Each query list (a query word's variant term) can add at most `factor · peak` to any
//! document. Lists are read from the largest bound down; once the `limit`-th best partial
//! score exceeds what the lists left could add, no document not met yet can enter the
//! answer, and a document met can only if its partial score plus that rest reaches it.
//! The few left are then scored exactly, adding their lists in the query's order as the
//! full pass does: the answer — documents, scores to the bit, order — is the full pass's.

use super::{Index, Posting, QueryWord};

/// Postings a query's lists must hold before pruning pays for its bookkeeping (sorting
/// lists, finding thresholds, looking candidates up); below it every posting is added.
const PRUNE_MIN_POSTINGS: usize = 16_384;

/// Relative slack on every comparison with a bound: partial sums are added in another
/// order than the final scores, so they may differ by rounding (about n·2⁻²⁴ for n
/// lists); 10⁻³ dwarfs that and costs little pruning.
const SLACK: f32 = 1e-3;

/// What looking one document up in a list costs, in postings read: a binary search
/// (about log₂ of 100,000).
const LOOKUP_COST: usize = 16;

/// One query list: a variant term's postings and its weight.
struct List<'a> {
    factor: f32,
    postings: &'a [Posting],
    /// The most it adds to any document.
    bound: f32,
}

impl Index {
    /// Each document that can be among the best `limit` for `words`, with its exact score
    /// (a superset of that best `limit`, ties included), or `None` when pruning would not
    /// pay and every posting should be added instead.
    pub(super) fn candidates(&self, words: &[QueryWord], limit: usize) -> Option<Vec<(f32, u32)>> {
        self.candidates_from(words, limit, PRUNE_MIN_POSTINGS)
    }

    /// [`Index::candidates`] with the size from which to prune (tests prune small indexes).
    pub(super) fn candidates_from(&self, words: &[QueryWord], limit: usize, min: usize) -> Option<Vec<(f32, u32)>> {
        let lists: Vec<List<'_>> = words
            .iter()
            .flat_map(|w| &w.variants)
            .map(|v| List {
                factor: v.factor,
                postings: self.postings_of(v.term),
                bound: v.factor * self.peak.get(v.term as usize).copied().unwrap_or(f32::INFINITY),
            })
            .collect();
        let total: usize = lists.iter().map(|l| l.postings.len()).sum();
        if limit == 0 || total < min {
            return None;
        }
        let mut order: Vec<usize> = (0..lists.len()).collect();
        order.sort_by(|&a, &b| lists[b].bound.total_cmp(&lists[a].bound));
        // rest[j]: the most the lists from order[j] on can add to one document.
        let mut rest = vec![0f32; order.len() + 1];
        for j in (0..order.len()).rev() {
            rest[j] = rest[j + 1] + lists[order[j]].bound;
        }
        let mut partial = vec![0f32; self.len()];
        let mut touched: Vec<u32> = Vec::new();
        let mut threshold = 0f32;
        let mut read = 0;
        while read < order.len() {
            if touched.len() >= limit {
                threshold = kth_best(&partial, &touched, limit);
                if rest[read] * (1.0 + SLACK) < threshold {
                    break;
                }
            }
            let list = &lists[order[read]];
            for p in list.postings.iter().filter(|p| p.impact > 0.0) {
                let s = &mut partial[p.doc as usize];
                if *s == 0.0 {
                    touched.push(p.doc);
                }
                *s += list.factor * p.impact;
            }
            read += 1;
        }
        // The rest: only documents met so far can still enter, and only while their
        // partial score plus what the lists left can add reaches the threshold. Each list
        // read narrows them: the threshold only rises, what is left only falls.
        let mut alive = touched;
        let mut left = rest[read];
        loop {
            if alive.len() >= limit {
                threshold = kth_best(&partial, &alive, limit);
            }
            alive.retain(|&d| {
                let s = &mut partial[d as usize];
                let keep = (*s + left) * (1.0 + SLACK) >= threshold;
                if !keep {
                    // Out for good: later lists skip it.
                    *s = f32::NEG_INFINITY;
                }
                keep
            });
            let Some(&next) = order.get(read) else { break };
            let list = &lists[next];
            if list.postings.len() <= alive.len().saturating_mul(LOOKUP_COST) {
                for p in list.postings.iter().filter(|p| p.impact > 0.0) {
                    // Zero: never met; minus infinity: out. Neither can enter now.
                    let s = &mut partial[p.doc as usize];
                    if *s > 0.0 {
                        *s += list.factor * p.impact;
                    }
                }
            } else {
                for &d in &alive {
                    if let Ok(i) = list.postings.binary_search_by_key(&d, |p| p.doc) {
                        partial[d as usize] += list.factor * list.postings[i].impact;
                    }
                }
            }
            read += 1;
            left = rest[read];
        }
        if alive.len().saturating_mul(lists.len()).saturating_mul(LOOKUP_COST) > total {
            return None;
        }
        Some(alive.into_iter().map(|d| (exact(&lists, d), d)).collect())
    }
}

/// Document `d`'s score, added in the query's list order as the full pass adds it, so
/// the two give the same bits.
fn exact(lists: &[List<'_>], d: u32) -> f32 {
    let mut score = 0f32;
    for list in lists {
        if let Ok(i) = list.postings.binary_search_by_key(&d, |p| p.doc)
            && list.postings[i].impact > 0.0
        {
            score += list.factor * list.postings[i].impact;
        }
    }
    score
}

/// The `k`-th best partial score among `touched` (k ≥ 1, at most `touched.len()`).
fn kth_best(partial: &[f32], touched: &[u32], k: usize) -> f32 {
    let mut scores: Vec<f32> = touched.iter().map(|&d| partial[d as usize]).collect();
    let (_, kth, _) = scores.select_nth_unstable_by(k - 1, |a, b| b.total_cmp(a));
    *kth
}

#[cfg(test)]
mod tests {
    use super::super::Index;
    use crate::Document;
    use crate::testutil::doc;

    /// Tools drawn from a few words, some in every tool, so lists are long and uneven.
    fn docs(n: usize) -> Vec<Document> {
        let words = [
            "convert", "json", "csv", "files", "image", "resize", "parse", "date", "email", "invoice", "token",
            "report", "chart", "weather",
        ];
        let mut x: u64 = 0x5EED;
        let mut next = move || {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x
        };
        (0..n)
            .map(|i| {
                let mut pick = |k: usize| (0..k).map(|_| words[next() as usize % words.len()]).collect::<Vec<_>>();
                let (name, description, tags) = (pick(2), pick(6), pick(2));
                doc(
                    &format!("tool-{i:05}"),
                    &name.join(" "),
                    &format!("{} works with files.", description.join(" ")),
                    &tags,
                )
            })
            .collect()
    }

    /// The pruned answer is the full pass's, to the bit, for every query and limit: it is
    /// an optimisation, not a ranking.
    #[test]
    fn pruning_keeps_the_full_answer_to_the_bit() {
        let docs = docs(3000);
        let index = Index::build(&docs);
        let queries = [
            "convert json files",
            "files",
            "resize image files quickly",
            "parse date from email invoice",
            "csv",
            "jso",
            "weathr report chart",
            "token files files",
        ];
        let mut pruned_somewhere = false;
        for query in queries {
            let words = index.query_words(query).unwrap();
            for limit in [1, 3, 10, 50] {
                let (total, touched) = index.add_up(&words);
                let mut full: Vec<(f32, u32)> = touched.iter().map(|&d| (total[d as usize], d)).collect();
                index.top(&mut full, limit);
                let Some(mut pruned) = index.candidates_from(&words, limit, 0) else {
                    continue;
                };
                let touched = touched.len();
                pruned_somewhere |= pruned.len() < touched;
                index.top(&mut pruned, limit);
                let bits = |r: &[(f32, u32)]| r.iter().map(|(s, d)| (s.to_bits(), *d)).collect::<Vec<_>>();
                assert_eq!(bits(&pruned), bits(&full), "{query:?} limit {limit}");
            }
        }
        assert!(
            pruned_somewhere,
            "some query must have been answered from fewer documents"
        );
    }
}
