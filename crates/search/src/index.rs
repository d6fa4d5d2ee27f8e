//! The inverted index of one catalogue snapshot and its BM25F ranking.
//!
//! Hand-written rather than a crate, for three measured reasons: tantivy answers in
//! 0.15 ms at 10k tools but 1.3 ms at 100k and adds 2.5 minutes of compile time; the `bm25`
//! crate takes 13 ms per query at 100k; neither does per-field weights *and*
//! prefix/typo expansion that can never outrank an exact match. The index below is a
//! sorted term dictionary (prefix ranges by binary search), posting lists with the
//! BM25F-normalised term frequency precomputed at build time, and a deletion
//! neighbourhood (SymSpell, distance 1, `typo.rs`) for typo candidates, so a query touches
//! only the postings of its terms and their expansions.
//!
//! Nothing a catalogue or a query holds can make it unbounded work: a build runs under a
//! [`Budget`] (time, entries), long words are kept out of the typo map, and only the first
//! [`crate::limits::QUERY_MAX_CHARS`] characters of a query are read ([`super::cut`]).

mod fused;
pub use fused::{FUSION, Fusion, Norm};
mod memory;
mod strings;
mod topk;

use super::budget::{Budget, OverBudget};
use super::build::Builder;
use super::document::{Document, Indexable};
use super::tokenize::{self, Analyzer};
use super::typo::Typos;
use strings::Strings;

/// The fields searched, in bit order.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Field {
    /// The slug.
    Slug,
    /// The title.
    Name,
    /// Tags and category.
    Tags,
    /// The description.
    Description,
    /// Parameter names.
    Params,
    /// Parameter descriptions.
    ParamDocs,
    /// Requests a user would type (the manifest's `phrasings`).
    Phrasings,
}

/// How many fields there are.
pub(super) const FIELDS: usize = Field::ALL.len();

impl Field {
    const ALL: [Field; 7] = [
        Field::Slug,
        Field::Name,
        Field::Tags,
        Field::Description,
        Field::Params,
        Field::ParamDocs,
        Field::Phrasings,
    ];

    /// The name shown in `matched`.
    pub fn label(self) -> &'static str {
        match self {
            Field::Slug => "slug",
            Field::Name => "name",
            Field::Tags => "tags",
            Field::Description => "description",
            Field::Params => "params",
            Field::ParamDocs => "param descriptions",
            Field::Phrasings => "phrasings",
        }
    }
}

/// Ranking constants. Tuned on eval/metatool with a held-out half (scores on the
/// held-out half were no worse than on the tuning half), and kept where the set had no
/// signal (tags, parameters) at priors; see README "Search quality".
#[derive(Debug, Clone)]
pub struct Tuning {
    /// BM25 saturation, per field.
    pub k1: f32,
    /// Weight of each field, in [`Field`] order.
    pub weight: [f32; FIELDS],
    /// Length normalisation of each field, in [`Field`] order.
    pub b: [f32; FIELDS],
    /// Share of an exact match's score a prefix expansion earns.
    pub prefix: f32,
    /// Share of an exact match's score a typo correction earns.
    pub typo: f32,
    /// Shortest query word expanded by prefix.
    pub prefix_min_len: usize,
    /// How many completions a query word's prefix keeps (the shortest ones).
    pub completions: usize,
    /// Shortest query word corrected for typos.
    pub typo_min_len: usize,
    /// From this length on, two edits count as one typo.
    pub typo_two_edits_len: usize,
}

impl Default for Tuning {
    fn default() -> Self {
        Tuning {
            k1: 1.0,
            // slug, name, tags+category, description, params, param descriptions,
            // phrasings. The slug only counts where there is no name (it is then indexed
            // as the name). Phrasings sit at the parameters' prior: no eval set has them.
            weight: [0.0, 1.0, 1.0, 1.0, 0.5, 0.5, 0.5],
            b: [0.3, 0.3, 0.3, 0.3, 0.5, 0.75, 0.5],
            prefix: 0.5,
            typo: 0.4,
            prefix_min_len: 3,
            completions: 3,
            typo_min_len: 5,
            typo_two_edits_len: 8,
        }
    }
}

/// Most dictionary entries a forward-prefix lookup scans for its shortest completions,
/// so a two- or three-letter word costs the same at 100k tools as at 100.
const PREFIX_SCAN: usize = 4096;

#[derive(Debug, Clone, Copy)]
struct Posting {
    doc: u32,
    /// The term's BM25 impact on the document, summed over fields:
    /// Σ_f w_f · x(k1+1)/(x+k1), x = tf_f / (1 − b_f + b_f · len_f/avglen_f).
    impact: f32,
    /// Bit i set when field i contains the term.
    fields: u8,
}

/// How a query word met an index term.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Exact,
    Prefix,
    Typo,
}

/// One index term a query word reaches, with the weight and idf it scores with.
#[derive(Debug, Clone, Copy)]
struct Variant {
    term: u32,
    kind: Kind,
    /// weight · idf′, idf′ capped at the exact term's idf for expansions.
    factor: f32,
}

/// A query word and the terms it reaches.
/// A query's lexical scores over every document.
#[derive(Debug)]
struct Scored {
    words: Vec<QueryWord>,
    /// Per document, its score (zero where nothing matched).
    total: Vec<f32>,
}

#[derive(Debug)]
struct QueryWord {
    raw: String,
    variants: Vec<Variant>,
}

/// A ranked result.
#[derive(Debug, Clone, PartialEq)]
pub struct Hit {
    /// Position of the tool in the documents the index was built from.
    pub doc: usize,
    /// Its score (higher is better).
    pub score: f32,
    /// What matched: `"word (fields)"` for an exact match, `"word→term (fields)"` for an
    /// abbreviation or typo.
    pub matched: Vec<String>,
}

/// Why a query cannot be run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum QueryError {
    /// Nothing but spaces and punctuation.
    Empty,
    /// Only stop words ("the", "can you", ...), which carry no meaning.
    OnlyStopWords,
}

/// The index of one snapshot (by default, of nothing).
#[derive(Debug, Default)]
pub struct Index {
    analyzer: Analyzer,
    tuning: Tuning,
    /// Per document, the position of its slug in slug order: ties compare these numbers
    /// instead of strings.
    slug_rank: Vec<u32>,
    /// Sorted stems.
    terms: Strings,
    /// A surface word for each term, for `matched`.
    surface: Strings,
    /// Every term's postings, sorted by document, one term after another in term order:
    /// one allocation of exactly the postings, not a `Vec` per term (24 bytes of header
    /// each, and each list's growth slack). Term `t`'s are `postings[starts[t]..starts[t + 1]]`.
    postings: Vec<Posting>,
    /// Where each term's postings start, and one past the last term's end.
    starts: Vec<u32>,
    /// Per term, its idf.
    idf: Vec<f32>,
    /// Per term, its largest impact on one document: with the idf, the most the term can
    /// add to a score, which lets a search skip documents that cannot reach the answer.
    peak: Vec<f32>,
    /// Typo candidates over the distinct words.
    typos: Typos,
}

impl Index {
    /// Builds the index of `docs` with the default tuning.
    pub fn build(docs: &[Document]) -> Index {
        Index::with_tuning(docs, Tuning::default())
    }

    /// Builds the index of `docs`, with no budget: for the operator's own tools
    /// (benchmarks, `catalogue eval`).
    pub fn with_tuning(docs: &[Document], tuning: Tuning) -> Index {
        // An unlimited budget cannot run out; an empty index is the safe answer anyway.
        Index::within(docs, tuning, &Budget::unlimited()).unwrap_or_default()
    }

    /// Builds the index of `docs` within `budget`: every posting and typo-map key is
    /// charged to it, and the time is checked between documents and between words.
    pub fn within<D: Indexable>(docs: &[D], tuning: Tuning, budget: &Budget) -> Result<Index, OverBudget> {
        let (mut builder, lengths) = Builder::parallel(docs, budget)?;
        let n = docs.len().max(1) as f32;
        let mut avg = [0f32; FIELDS];
        for len in &lengths {
            for (a, l) in avg.iter_mut().zip(len) {
                *a += *l as f32;
            }
        }
        for a in &mut avg {
            *a = (*a / n).max(1.0);
        }
        // Term ids in sorted order, so prefix ranges are contiguous.
        let mut order: Vec<u32> = (0..builder.terms.len() as u32).collect();
        order.sort_unstable_by(|&a, &b| builder.terms[a as usize].cmp(&builder.terms[b as usize]));
        let mut new_id = vec![0u32; order.len()];
        for (new, &old) in order.iter().enumerate() {
            new_id[old as usize] = new as u32;
        }
        let k1 = tuning.k1;
        let bytes = |words: &[String]| words.iter().map(String::len).sum::<usize>();
        let mut terms = Strings::with_capacity(order.len(), bytes(&builder.terms));
        let mut surface = Strings::with_capacity(order.len(), bytes(&builder.surface));
        let total: usize = builder.lists.iter().map(Vec::len).sum();
        // The entry budget (at most 16 million) holds every posting, so offsets fit u32.
        if u32::try_from(total).is_err() {
            return Err(OverBudget::Entries {
                limit: u32::MAX as usize,
            });
        }
        let mut postings: Vec<Posting> = Vec::with_capacity(total);
        let mut starts: Vec<u32> = Vec::with_capacity(order.len() + 1);
        starts.push(0);
        let mut idf = Vec::with_capacity(order.len());
        let mut peak = Vec::with_capacity(order.len());
        for &old in &order {
            let old = old as usize;
            terms.push(&std::mem::take(&mut builder.terms[old]));
            surface.push(&std::mem::take(&mut builder.surface[old]));
            let counted = std::mem::take(&mut builder.lists[old]);
            let count = counted.len();
            postings.extend(counted.into_iter().map(|(doc, counts)| {
                let len = &lengths[doc as usize];
                let mut impact = 0f32;
                let mut fields = 0u8;
                for i in 0..FIELDS {
                    if counts[i] > 0 {
                        fields |= 1 << i;
                        let x = counts[i] as f32 / (1.0 - tuning.b[i] + tuning.b[i] * len[i] as f32 / avg[i]);
                        impact += tuning.weight[i] * x * (k1 + 1.0) / (x + k1);
                    }
                }
                Posting { doc, impact, fields }
            }));
            idf.push(bm25_idf(n, count as f32));
            let added = &postings[postings.len() - count..];
            peak.push(added.iter().map(|p| p.impact).fold(0f32, f32::max));
            // Fits: `total` does (checked above).
            starts.push(postings.len() as u32);
        }
        budget.check_time()?;
        let words = builder
            .words
            .into_iter()
            .filter_map(|(word, id)| id.map(|id| (word, new_id[id as usize])));
        let typos = Typos::build(words, tuning.typo_min_len.saturating_sub(1), budget)?;
        let mut by_slug: Vec<u32> = (0..docs.len() as u32).collect();
        // Snapshots come sorted by slug already; only other callers pay for the sort.
        if !docs.is_sorted_by(|a, b| a.slug() <= b.slug()) {
            by_slug.sort_by(|&a, &b| docs[a as usize].slug().cmp(docs[b as usize].slug()).then(a.cmp(&b)));
        }
        let mut slug_rank = vec![0u32; docs.len()];
        for (rank, &doc) in by_slug.iter().enumerate() {
            slug_rank[doc as usize] = rank as u32;
        }
        Ok(Index {
            analyzer: builder.analyzer,
            tuning,
            slug_rank,
            terms,
            surface,
            postings,
            starts,
            idf,
            peak,
            typos,
        })
    }

    /// How many documents are indexed.
    pub fn len(&self) -> usize {
        self.slug_rank.len()
    }

    /// Returns true if and only if nothing is indexed.
    pub fn is_empty(&self) -> bool {
        self.slug_rank.is_empty()
    }

    /// The best `limit` documents for `query`, best first, ties by slug. Only the start of
    /// a long query is read ([`super::cut`]).
    /// Large lists are pruned (`topk.rs`): the answer is the same.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<Hit>, QueryError> {
        let words = self.checked_words(query)?;
        let mut ranked = match self.candidates(&words, limit) {
            Some(ranked) => ranked,
            None => {
                let (total, touched) = self.add_up(&words);
                touched.iter().map(|&d| (total[d as usize], d)).collect()
            }
        };
        ranked.retain(|(s, _)| *s > 0.0);
        self.top(&mut ranked, limit);
        Ok(ranked
            .into_iter()
            .map(|(score, doc)| Hit {
                doc: doc as usize,
                score,
                matched: self.explain(doc, &words),
            })
            .collect())
    }

    /// Every document's lexical score for `query` (zero where nothing matched), with the
    /// query's words.
    fn score(&self, query: &str) -> Result<Scored, QueryError> {
        let words = self.checked_words(query)?;
        let (total, _) = self.add_up(&words);
        Ok(Scored { words, total })
    }

    /// Every document's lexical score for `query` (zero where nothing matched): what
    /// [`Index::rank_fused`] fuses, for benches that weigh fusions over scores computed
    /// once.
    pub fn lexical_scores(&self, query: &str) -> Result<Vec<f32>, QueryError> {
        Ok(self.score(query)?.total)
    }

    /// Why `query` cannot be run, if it cannot: cheap (its words are read, no posting),
    /// so a query is refused before anything costly is done for it.
    pub fn check(&self, query: &str) -> Result<(), QueryError> {
        self.checked_words(query).map(drop)
    }

    /// The words of the query's start ([`super::cut`]), or why it cannot be run.
    fn checked_words(&self, query: &str) -> Result<Vec<QueryWord>, QueryError> {
        self.query_words(super::cut(query).text)
    }

    /// Every posting of `words` added up: each document's score, and the documents met
    /// in the order first met.
    fn add_up(&self, words: &[QueryWord]) -> (Vec<f32>, Vec<u32>) {
        let mut total = vec![0f32; self.len()];
        let mut touched: Vec<u32> = Vec::new();
        for word in words {
            for v in &word.variants {
                // A posting that adds nothing (a field of weight 0, such as the slug
                // beside a name) must not mark its document touched: a later word would
                // mark it again, and it would be answered twice.
                for p in self.postings_of(v.term).iter().filter(|p| p.impact > 0.0) {
                    let t = &mut total[p.doc as usize];
                    if *t == 0.0 {
                        touched.push(p.doc);
                    }
                    *t += v.factor * p.impact;
                }
            }
        }
        (total, touched)
    }

    /// Keeps the best `limit` of `ranked`, sorted best first, ties by slug.
    fn top(&self, ranked: &mut Vec<(f32, u32)>, limit: usize) {
        let order = |a: &(f32, u32), b: &(f32, u32)| {
            b.0.total_cmp(&a.0)
                .then_with(|| self.slug_rank[a.1 as usize].cmp(&self.slug_rank[b.1 as usize]))
        };
        if limit == 0 {
            ranked.clear();
            return;
        }
        if ranked.len() > limit {
            ranked.select_nth_unstable_by(limit - 1, order);
            ranked.truncate(limit);
        }
        ranked.sort_by(order);
    }

    /// The query's meaningful words, each with the index terms it reaches; adjacent words
    /// joined where the join is an index term; one entry per stem.
    fn query_words(&self, query: &str) -> Result<Vec<QueryWord>, QueryError> {
        let seq = tokenize::query_sequence(query);
        if seq.is_empty() {
            return Err(QueryError::Empty);
        }
        let mut raw: Vec<String> = seq.iter().filter(|w| tokenize::is_query_word(w)).cloned().collect();
        if raw.is_empty() {
            return Err(QueryError::OnlyStopWords);
        }
        for pair in seq.windows(2) {
            if pair
                .iter()
                .all(|w| tokenize::is_query_word(w) && w.chars().count() >= 2)
            {
                let joined = format!("{}{}", pair[0], pair[1]);
                if self.term_id(&self.analyzer.stem(&joined)).is_some() {
                    raw.push(joined);
                }
            }
        }
        let mut seen: Vec<String> = Vec::new();
        let mut out = Vec::new();
        for word in raw {
            let stem = self.analyzer.stem(&word);
            if seen.contains(&stem) {
                continue;
            }
            let variants = self.variants(&word, &stem);
            seen.push(stem);
            out.push(QueryWord { raw: word, variants });
        }
        Ok(out)
    }

    /// The index terms a query word reaches: its stem exactly (1); the shortest terms
    /// its stem begins, and the terms that begin its stem (abbreviations both ways); and —
    /// only when its stem is not in the index at all — words one typo away. An expansion
    /// never earns more idf than the exact term, so it cannot outrank an exact match.
    fn variants(&self, raw: &str, stem: &str) -> Vec<Variant> {
        let t = &self.tuning;
        let exact = self.term_id(stem);
        let cap = exact.map_or(f32::INFINITY, |id| self.idf[id as usize]);
        let mut out: Vec<Variant> = Vec::new();
        let push = |out: &mut Vec<Variant>, term: u32, kind: Kind| {
            if out.iter().any(|v| v.term == term) {
                return;
            }
            let (weight, idf) = match kind {
                Kind::Exact => (1.0, self.idf[term as usize]),
                Kind::Prefix => (t.prefix, self.idf[term as usize].min(cap)),
                Kind::Typo => (t.typo, self.idf[term as usize].min(cap)),
            };
            out.push(Variant {
                term,
                kind,
                factor: weight * idf,
            });
        };
        if let Some(id) = exact {
            push(&mut out, id, Kind::Exact);
        }
        if raw.chars().count() >= t.prefix_min_len {
            let key = if stem.chars().count() >= t.prefix_min_len {
                stem
            } else {
                raw
            };
            let start = self.terms.partition_point(|term| term < key);
            let mut completions: Vec<u32> = (start..self.terms.len().min(start + PREFIX_SCAN))
                .take_while(|&i| self.terms.get(i).starts_with(key))
                .filter(|&i| self.terms.get(i) != stem)
                .map(|i| i as u32)
                .collect();
            completions.sort_by_key(|&i| (self.terms.get(i as usize).len(), i));
            for id in completions.into_iter().take(t.completions) {
                push(&mut out, id, Kind::Prefix);
            }
            for (cut, _) in stem.char_indices().skip(t.prefix_min_len) {
                if let Some(id) = self.term_id(&stem[..cut]) {
                    push(&mut out, id, Kind::Prefix);
                }
            }
        }
        let len = raw.chars().count();
        if exact.is_none() && len >= t.typo_min_len {
            let max = if len >= t.typo_two_edits_len { 2 } else { 1 };
            for term in self.typos.near(raw, max) {
                push(&mut out, term, Kind::Typo);
            }
        }
        out
    }

    fn term_id(&self, term: &str) -> Option<u32> {
        let i = self.terms.partition_point(|t| t < term);
        (i < self.terms.len() && self.terms.get(i) == term).then_some(i as u32)
    }

    /// Term `term`'s postings, sorted by document.
    fn postings_of(&self, term: u32) -> &[Posting] {
        let t = term as usize;
        match (self.starts.get(t), self.starts.get(t + 1)) {
            (Some(&a), Some(&b)) => self.postings.get(a as usize..b as usize).unwrap_or_default(),
            _ => &[],
        }
    }

    /// What matched in `doc`: per query word, its first variant found there.
    fn explain(&self, doc: u32, words: &[QueryWord]) -> Vec<String> {
        let mut out = Vec::new();
        for word in words {
            for v in &word.variants {
                let list = self.postings_of(v.term);
                let Ok(i) = list.binary_search_by_key(&doc, |p| p.doc) else {
                    continue;
                };
                let fields: Vec<&str> = Field::ALL
                    .iter()
                    .filter(|f| list[i].fields & (1 << **f as usize) != 0)
                    .map(|f| f.label())
                    .collect();
                let what = match v.kind {
                    Kind::Exact => word.raw.clone(),
                    Kind::Prefix | Kind::Typo => format!("{}→{}", word.raw, self.surface.get(v.term as usize)),
                };
                out.push(format!("{what} ({})", fields.join(", ")));
                break;
            }
        }
        out
    }
}

/// BM25's idf, which stays positive however common the term.
fn bm25_idf(n: f32, df: f32) -> f32 {
    ((n - df + 0.5) / (df + 0.5) + 1.0).ln()
}

#[cfg(test)]
mod tests;
