//! The hybrid ranking: each document's lexical score fused with how close it is in meaning
//! to the query (the cosine of sentence embeddings, which the caller computes: the index
//! holds words, not vectors). [`FUSION`] is what the server ranks by; [`Fusion`] names the
//! others a bench compares it with.

use super::{Hit, Index, QueryError};

/// How scores are put on one scale before they are added.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Norm {
    /// Standardised over the catalogue: how many standard deviations above the mean.
    ZScore,
    /// Scaled to 0–1 between the catalogue's lowest and highest score.
    MinMax,
    /// Reciprocal rank, `1 / (60 + rank)`; a tool no word matched has no lexical rank (0).
    Rank,
}

impl Norm {
    /// Every normalisation, for the bench that chooses among them.
    pub const ALL: [Norm; 3] = [Norm::ZScore, Norm::MinMax, Norm::Rank];

    /// Its name in reports.
    pub fn label(self) -> &'static str {
        match self {
            Norm::ZScore => "z-score",
            Norm::MinMax => "min-max",
            Norm::Rank => "reciprocal rank",
        }
    }
}

/// How the hybrid ranker fuses a tool's lexical score with its closeness in meaning.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Fusion {
    /// How both scores are normalised.
    pub norm: Norm,
    /// Share of the fused score the lexical ranker earns; the rest is meaning.
    pub w_lexical: f32,
    /// Least cosine at which closeness in meaning alone puts a tool in the answer (and in
    /// its `matched`); `None`: every tool may enter. Below it a tool no word matched is
    /// noise, not a result (MiniLM's cosine of unrelated short texts sits around 0–0.15).
    pub floor: Option<f32>,
}

/// The fusion the server ranks by. Chosen on several datasets of different styles by a
/// rule fixed before measuring (docs/decisions/search-ranking.md; `cargo bench --bench
/// ranking` reproduces the tables and checks that this is the rule's choice).
pub const FUSION: Fusion = Fusion {
    norm: Norm::ZScore,
    w_lexical: 0.25,
    floor: Some(0.15),
};

impl Index {
    /// The best `limit` documents for `query` by [`FUSION`]: see [`Index::search_fused_by`].
    pub fn search_fused(&self, query: &str, cosine: &[f32], limit: usize) -> Result<Vec<Hit>, QueryError> {
        self.search_fused_by(query, cosine, limit, &FUSION)
    }

    /// The best `limit` documents for `query` by `w · norm(lexical) + (1 − w) ·
    /// norm(cosine)`, each normalised over every document, best first, ties by slug.
    /// `cosine[d]` is document `d`'s closeness in meaning to the query. A document is in
    /// the answer when a word matched it or its cosine reaches the floor. A query the
    /// lexical ranker refuses (empty, only stop words) is refused alike: a vector of "can
    /// you do it" ranks noise. With `cosine` of the wrong length (no vectors), this is
    /// [`Index::search`].
    pub fn search_fused_by(
        &self,
        query: &str,
        cosine: &[f32],
        limit: usize,
        fusion: &Fusion,
    ) -> Result<Vec<Hit>, QueryError> {
        if cosine.len() != self.len() {
            return self.search(query, limit);
        }
        let scored = self.score(query)?;
        let ranked = self.rank_fused(&scored.total, cosine, fusion, limit);
        let shown = fusion.floor.unwrap_or(MEANING_SHOWN);
        Ok(ranked
            .into_iter()
            .map(|(score, doc)| {
                let mut matched = self.explain(doc, &scored.words);
                let c = cosine[doc as usize];
                if c >= shown {
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

    /// The best `limit` of (fused score, document) for every document's `lexical` score
    /// and `cosine`, by `fusion`, best first, ties by slug: the ranking
    /// [`Index::search_fused_by`] explains, for benches that weigh fusions over scores
    /// computed once. Both slices hold one score per document.
    pub fn rank_fused(&self, lexical: &[f32], cosine: &[f32], fusion: &Fusion, limit: usize) -> Vec<(f32, u32)> {
        let floor = fusion.floor.unwrap_or(f32::NEG_INFINITY);
        let w = fusion.w_lexical;
        let (l, c) = (
            normalise(lexical, fusion.norm, true),
            normalise(cosine, fusion.norm, false),
        );
        let mut ranked: Vec<(f32, u32)> = lexical
            .iter()
            .zip(cosine)
            .zip(l.iter().zip(&c))
            .zip(0u32..)
            .filter(|((raw, _), _)| *raw.0 > 0.0 || *raw.1 >= floor)
            .map(|((_, (l, c)), d)| (w * l + (1.0 - w) * c, d))
            .collect();
        self.top(&mut ranked, limit);
        ranked
    }
}

/// Least cosine `matched` shows as `meaning (0.48)` when the fusion has no floor (with one,
/// the floor): below it closeness is no reason to name.
const MEANING_SHOWN: f32 = 0.15;

/// `scores` on the scale `norm` puts them. `sparse`: a zero is no match (lexical scores),
/// which a rank never goes to.
fn normalise(scores: &[f32], norm: Norm, sparse: bool) -> Vec<f32> {
    match norm {
        Norm::ZScore => {
            let spread = Spread::of(scores);
            scores.iter().map(|&s| spread.z(s)).collect()
        }
        Norm::MinMax => {
            let (lo, hi) = scores.iter().fold((f32::INFINITY, f32::NEG_INFINITY), |(lo, hi), &s| {
                (lo.min(s), hi.max(s))
            });
            let range = hi - lo;
            scores
                .iter()
                .map(|&s| if range > 0.0 { (s - lo) / range } else { 0.0 })
                .collect()
        }
        Norm::Rank => {
            /// The constant of reciprocal rank fusion.
            const K: f32 = 60.0;
            let mut order: Vec<u32> = (0..scores.len() as u32)
                .filter(|&d| !sparse || scores[d as usize] > 0.0)
                .collect();
            // Ties by position: the same scores give the same ranks everywhere.
            order.sort_by(|&a, &b| scores[b as usize].total_cmp(&scores[a as usize]).then(a.cmp(&b)));
            let mut out = vec![0f32; scores.len()];
            for (rank, d) in order.into_iter().enumerate() {
                out[d as usize] = 1.0 / (K + 1.0 + rank as f32);
            }
            out
        }
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
    use crate::testutil::doc;

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

    /// The fusion these tests pin: z-scores, lexical weight 0.18, floor 0.15.
    const Z: Fusion = Fusion {
        norm: Norm::ZScore,
        w_lexical: 0.18,
        floor: Some(0.15),
    };
    const W_LEXICAL: f32 = Z.w_lexical;

    #[test]
    fn fusion_weights_the_normalised_scores() {
        let index = index();
        // "digest" matches hash-digest only: lexical 1 there, 0 elsewhere.
        let hits = index.search_fused_by("digest", &[0.9, 0.5, 0.1], 3, &Z).unwrap();
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
        let hits = index.search_fused_by("zebra", &[0.3, 0.7, 0.7], 3, &Z).unwrap();
        let order: Vec<usize> = hits.iter().map(|h| h.doc).collect();
        assert_eq!(order, vec![1, 2, 0]);
        assert_eq!(hits[0].score, hits[1].score);
        assert_eq!(
            index.search_fused("can you please", &[0.3, 0.7, 0.7], 3),
            Err(QueryError::OnlyStopWords)
        );
    }

    #[test]
    fn min_max_and_rank_normalise_as_documented_and_no_floor_admits_every_tool() {
        let minmax = normalise(&[2.0, 4.0, 3.0], Norm::MinMax, false);
        assert_eq!(minmax, vec![0.0, 1.0, 0.5]);
        assert_eq!(normalise(&[5.0, 5.0], Norm::MinMax, false), vec![0.0, 0.0]);
        // Ranks 1, 2, 3 → 1/61, 1/62, 1/63; a lexical zero has no rank; ties by position.
        let rank = normalise(&[0.2, 0.9, 0.0], Norm::Rank, true);
        assert_eq!(rank, vec![1.0 / 62.0, 1.0 / 61.0, 0.0]);
        let rank = normalise(&[0.5, 0.5, 0.1], Norm::Rank, false);
        assert_eq!(rank, vec![1.0 / 61.0, 1.0 / 62.0, 1.0 / 63.0]);

        let index = index();
        let open = Fusion {
            norm: Norm::MinMax,
            w_lexical: 0.25,
            floor: None,
        };
        // Lexical [0, x, 0] → [0, 1, 0]; cosine [0.9, 0.5, 0.1] → [1, 0.5, 0]: env 0.75,
        // hash 0.25 + 0.375 = 0.625, uuid 0 — in the answer: no floor.
        let hits = index.search_fused_by("digest", &[0.9, 0.5, 0.1], 3, &open).unwrap();
        let got: Vec<usize> = hits.iter().map(|h| h.doc).collect();
        assert_eq!(got, vec![0, 1, 2]);
        for (hit, want) in hits.iter().zip([0.75, 0.625, 0.0]) {
            assert!((hit.score - want).abs() < 1e-6, "{hit:?}");
        }
        // Without a floor, `matched` names meaning from MEANING_SHOWN up.
        assert_eq!(hits[0].matched, vec!["meaning (0.90)".to_owned()]);
        assert!(hits[2].matched.is_empty(), "{:?}", hits[2]);
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
