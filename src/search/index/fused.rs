//! The hybrid ranking: each document's lexical score fused with how close it is in meaning
//! to the query (the cosine of sentence embeddings, which the caller computes: the index
//! holds words, not vectors).

use super::{Hit, Index, QueryError};

/// Share of the fused score the lexical ranker earns; the rest is meaning. Chosen on half
/// A of eval/metatool, checked on half B (README "Search quality"): 0.20 gave 0.717 on the
/// held-out half against 0.587 for the lexical ranker alone.
pub const W_LEXICAL: f32 = 0.20;

/// Least cosine at which closeness in meaning alone puts a document in the answer (and in
/// its `matched`): below it a tool no word matched is noise, not a result (MiniLM's
/// cosine of unrelated short texts sits around 0 to 0.15). On eval/metatool, nDCG@10 is
/// 0.720 with no floor and with this one, 0.714 at 0.25.
pub const MEANING_FLOOR: f32 = 0.15;

impl Index {
    /// The best `limit` documents for `query` by `W_LEXICAL · minmax(lexical) + (1 −
    /// W_LEXICAL) · minmax(cosine)` over every document, best first, ties by slug.
    /// `cosine[d]` is document `d`'s closeness in meaning to the query. A document is in
    /// the answer when a word matched it or its cosine reaches [`MEANING_FLOOR`]. A query
    /// the lexical ranker refuses (empty, only stop words, too long) is refused alike: a
    /// vector of "can you do it" ranks noise. With `cosine` of the wrong length (no
    /// vectors), this is [`Index::search`].
    pub fn search_fused(&self, query: &str, cosine: &[f32], limit: usize) -> Result<Vec<Hit>, QueryError> {
        if cosine.len() != self.len() {
            return self.search(query, limit);
        }
        let scored = self.score(query)?;
        let lexical = Span::of(&scored.total);
        let meaning = Span::of(cosine);
        let mut ranked: Vec<(f32, u32)> = scored
            .total
            .iter()
            .zip(cosine)
            .zip(0u32..)
            .filter(|((l, c), _)| **l > 0.0 || **c >= MEANING_FLOOR)
            .map(|((l, c), d)| (W_LEXICAL * lexical.unit(*l) + (1.0 - W_LEXICAL) * meaning.unit(*c), d))
            .collect();
        self.top(&mut ranked, limit);
        Ok(ranked
            .into_iter()
            .map(|(score, doc)| {
                let mut matched = self.explain(doc, &scored.words);
                let c = cosine[doc as usize];
                if c >= MEANING_FLOOR {
                    matched.push(format!("meaning ({c:.2})"));
                }
                Hit {
                    doc: doc as usize,
                    score,
                    matched,
                }
            })
            .collect())
    }
}

/// The range of a list of scores, for min-max normalisation.
#[derive(Debug, Clone, Copy)]
struct Span {
    lo: f32,
    width: f32,
}

impl Span {
    fn of(scores: &[f32]) -> Span {
        let lo = scores.iter().copied().fold(f32::INFINITY, f32::min);
        let hi = scores.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        Span { lo, width: hi - lo }
    }

    /// `score` mapped into [0, 1]; 0 for every score of a flat list (no signal).
    fn unit(self, score: f32) -> f32 {
        if self.width > 0.0 {
            (score - self.lo) / self.width
        } else {
            0.0
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::search::testutil::doc;

    fn index() -> Index {
        Index::build(&[
            doc(
                "env-validator",
                "Env validator",
                "Checks a .env file against a schema.",
                &["dotenv"],
            ),
            doc(
                "hash-digest",
                "Hash digest",
                "Computes SHA-256 and MD5 digests of text.",
                &["sha256"],
            ),
            doc(
                "uuid-tool",
                "UUID generator",
                "Generates random identifiers.",
                &["uuid"],
            ),
        ])
    }

    #[test]
    fn normalisation_maps_to_the_unit_interval_and_a_flat_list_to_zero() {
        let s = Span::of(&[2.0, 4.0, 3.0]);
        assert_eq!([s.unit(2.0), s.unit(4.0), s.unit(3.0)], [0.0, 1.0, 0.5]);
        assert_eq!(Span::of(&[5.0, 5.0]).unit(5.0), 0.0);
    }

    #[test]
    fn fusion_weights_the_normalised_scores() {
        let index = index();
        // "digest" matches hash-digest only: lexical 1 there, 0 elsewhere.
        let hits = index.search_fused("digest", &[0.9, 0.5, 0.1], 3).unwrap();
        let score = |slug: &str| {
            let d = ["env-validator", "hash-digest", "uuid-tool"]
                .iter()
                .position(|s| *s == slug)
                .unwrap();
            hits.iter().find(|h| h.doc == d).map(|h| h.score)
        };
        // env: 0.2·0 + 0.8·1; hash: 0.2·1 + 0.8·0.5; uuid: below the floor, no word: out.
        assert!((score("env-validator").unwrap() - 0.8).abs() < 1e-6);
        assert!((score("hash-digest").unwrap() - 0.6).abs() < 1e-6);
        assert_eq!(score("uuid-tool"), None);
        assert_eq!(hits[0].doc, 0);
        assert_eq!(hits[0].matched, vec!["meaning (0.90)".to_owned()]);
        assert!(hits[1].matched[0].starts_with("digest ("), "{:?}", hits[1].matched);
    }

    #[test]
    fn equal_fused_scores_rank_by_slug() {
        let index = index();
        // No word matches anything: meaning alone, two tools tied.
        let hits = index.search_fused("zebra", &[0.3, 0.7, 0.7], 3).unwrap();
        let order: Vec<usize> = hits.iter().map(|h| h.doc).collect();
        assert_eq!(order, vec![1, 2, 0]);
        assert_eq!(hits[0].score, hits[1].score);
        assert_eq!(
            index.search_fused("can you please", &[0.3, 0.7, 0.7], 3),
            Err(QueryError::OnlyStopWords)
        );
    }

    #[test]
    fn without_vectors_it_is_the_lexical_ranker() {
        let index = index();
        assert_eq!(
            index.search_fused("sha256", &[], 3).unwrap(),
            index.search("sha256", 3).unwrap()
        );
        assert_eq!(index.search_fused("  ", &[0.5; 3], 3), Err(QueryError::Empty));
    }
}
