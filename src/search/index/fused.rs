//! The hybrid ranking: each document's lexical score fused with how close it is in meaning
//! to the query (the cosine of sentence embeddings, which the caller computes: the index
//! holds words, not vectors).

use super::{Hit, Index, QueryError};

/// Share of the fused score the lexical ranker earns; the rest is meaning. Both scores are
/// standardised over the catalogue first (z-scores). Chosen on half A of eval/metatool and
/// checked on the held-out half B (README "Search quality"): B 0.718 against 0.717 for the
/// same weight search over min-max normalised scores (whose best weight was 0.20) and 0.587
/// for the lexical ranker alone; z-scores let one outlier (a tool whose name is the query)
/// stretch the scale less than min-max does.
pub const W_LEXICAL: f32 = 0.18;

/// Least cosine at which closeness in meaning alone puts a document in the answer (and in
/// its `matched`): below it a tool no word matched is noise, not a result (MiniLM's
/// cosine of unrelated short texts sits around 0 to 0.15). On eval/metatool it costs
/// nDCG@10 0.0004 against no floor; 0.20 would cost 0.0016.
pub const MEANING_FLOOR: f32 = 0.15;

impl Index {
    /// The best `limit` documents for `query` by `W_LEXICAL · z(lexical) + (1 − W_LEXICAL)
    /// · z(cosine)`, each standardised over every document, best first, ties by slug.
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
        let lexical = Spread::of(&scored.total);
        let meaning = Spread::of(cosine);
        let mut ranked: Vec<(f32, u32)> = scored
            .total
            .iter()
            .zip(cosine)
            .zip(0u32..)
            .filter(|((l, c), _)| **l > 0.0 || **c >= MEANING_FLOOR)
            .map(|((l, c), d)| (W_LEXICAL * lexical.z(*l) + (1.0 - W_LEXICAL) * meaning.z(*c), d))
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

/// The mean and standard deviation of a list of scores, for standardising them.
#[derive(Debug, Clone, Copy)]
struct Spread {
    mean: f64,
    sd: f64,
}

impl Spread {
    /// Summed in f64 in document order: the same scores give the same bits everywhere.
    fn of(scores: &[f32]) -> Spread {
        let n = scores.len().max(1) as f64;
        let mean = scores.iter().map(|&s| f64::from(s)).sum::<f64>() / n;
        let var = scores.iter().map(|&s| (f64::from(s) - mean).powi(2)).sum::<f64>() / n;
        Spread { mean, sd: var.sqrt() }
    }

    /// How many standard deviations `score` lies above the mean; 0 for every score of a
    /// flat list (no signal).
    fn z(self, score: f32) -> f32 {
        if self.sd > 0.0 {
            ((f64::from(score) - self.mean) / self.sd) as f32
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
    fn standardising_centres_and_scales_and_maps_a_flat_list_to_zero() {
        let s = Spread::of(&[2.0, 4.0, 3.0]);
        // Mean 3, population standard deviation √(2/3).
        let z = [s.z(2.0), s.z(4.0), s.z(3.0)];
        let want = [-(1.5f32.sqrt()), 1.5f32.sqrt(), 0.0];
        assert!(z.iter().zip(want).all(|(a, b)| (a - b).abs() < 1e-6), "{z:?}");
        assert_eq!(Spread::of(&[5.0, 5.0]).z(5.0), 0.0);
        assert_eq!(Spread::of(&[]).z(1.0), 0.0);
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
        // Lexical [0, x, 0] standardises to [−1/√2, √2, −1/√2] whatever x is; cosine
        // [0.9, 0.5, 0.1] to [√1.5, 0, −√1.5]. env: 0.18·(−1/√2) + 0.82·√1.5; hash:
        // 0.18·√2 + 0.82·0; uuid: below the floor and no word matched: out.
        let env = -W_LEXICAL / 2f32.sqrt() + (1.0 - W_LEXICAL) * 1.5f32.sqrt();
        assert!((score("env-validator").unwrap() - env).abs() < 1e-5);
        assert!((score("hash-digest").unwrap() - W_LEXICAL * 2f32.sqrt()).abs() < 1e-5);
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
