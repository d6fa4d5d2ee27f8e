//! Reading documents into postings: tokenise, stem each distinct word once, count per
//! field; on every core for large catalogues, merged in document order so the result does
//! not depend on the thread count. `index` turns the counts into scores.

use rustc_hash::FxHashMap as HashMap;

use super::budget::{Budget, OverBudget};
use super::document::Indexable;
use super::index::{FIELDS, Field};
use super::tokenize::{self, Analyzer};

/// Accumulates postings while documents are read. Each distinct word is looked up (stop
/// word? stem?) once, however often it occurs: stemming is the costly step of a build.
#[derive(Default)]
pub(super) struct Builder {
    pub(super) analyzer: Analyzer,
    /// Lowercase word → its term id.
    pub(super) words: HashMap<String, Option<u32>>,
    /// Stem → term id.
    pub(super) ids: HashMap<String, u32>,
    /// Term id → stem, surface word, postings `(doc, count per field)`.
    pub(super) terms: Vec<String>,
    pub(super) surface: Vec<String>,
    pub(super) lists: Vec<Vec<(u32, [u16; FIELDS])>>,
    /// Postings and words added since the budget was last charged.
    added: usize,
    /// The tokenizer's buffers, reused for every field of every document.
    scratch: tokenize::Scratch,
    /// Texts of shared fields read before (tags, categories, parameter names and
    /// descriptions), each with the terms of its words in order: a text read again is
    /// counted from here instead of tokenised again, with the same terms in the same
    /// order. Tools of one catalogue repeat these texts (the scale bench's synthetic
    /// tools draw their parameters from twelve); a real catalogue repeats fewer, and the
    /// map is bounded either way.
    memo: HashMap<Box<str>, Box<[u32]>>,
}

/// Most texts one build thread remembers (see `Builder::memo`), and the longest one, in
/// bytes: at most about 1 MB of keys per thread, freed when the build ends.
const MEMO_TEXTS: usize = 4096;
const MEMO_TEXT_BYTES: usize = 256;

/// What reading documents yields: the builder and each document's field lengths.
type Read = (Builder, Vec<[u32; FIELDS]>);

/// Catalogues smaller than this are indexed on one thread; spawning costs more than it
/// saves below it.
const PARALLEL_MIN_DOCS: usize = 4096;

impl Builder {
    /// Reads every document, on as many threads as the machine has (up to 8), and merges
    /// the parts in document order, so the result is the same as a single thread's. Every
    /// thread charges what it adds to `budget` after each document.
    pub(super) fn parallel<D: Indexable>(docs: &[D], budget: &Budget) -> Result<Read, OverBudget> {
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get()).clamp(1, 8);
        if threads == 1 || docs.len() < PARALLEL_MIN_DOCS {
            return Builder::range(docs, 0, budget);
        }
        let size = docs.len().div_ceil(threads);
        let parts: Vec<Result<Read, OverBudget>> = std::thread::scope(|scope| {
            let handles: Vec<_> = docs
                .chunks(size)
                .enumerate()
                .map(|(i, slice)| (i, slice, scope.spawn(move || Builder::range(slice, i * size, budget))))
                .collect();
            handles
                .into_iter()
                // A part whose thread failed is read again here: same input, same output.
                .map(|(i, slice, h)| h.join().unwrap_or_else(|_| Builder::range(slice, i * size, budget)))
                .collect()
        });
        let parts = parts.into_iter().collect::<Result<Vec<Read>, OverBudget>>()?;
        let mut parts = parts.into_iter();
        let Some((mut merged, mut lengths)) = parts.next() else {
            return Builder::range(docs, 0, budget);
        };
        for (mut part, part_lengths) in parts {
            let mut global = Vec::with_capacity(part.terms.len());
            for (local, stem) in part.terms.iter_mut().enumerate() {
                let id = match merged.ids.get(stem.as_str()) {
                    Some(&id) => id,
                    None => {
                        let id = merged.terms.len() as u32;
                        merged.ids.insert(stem.clone(), id);
                        merged.terms.push(std::mem::take(stem));
                        merged.surface.push(std::mem::take(&mut part.surface[local]));
                        merged.lists.push(Vec::new());
                        id
                    }
                };
                merged.lists[id as usize].append(&mut part.lists[local]);
                global.push(id);
            }
            for (word, id) in part.words {
                merged
                    .words
                    .entry(word)
                    .or_insert_with(|| id.map(|local| global[local as usize]));
            }
            lengths.extend(part_lengths);
            budget.check_time()?;
        }
        Ok((merged, lengths))
    }

    /// Reads `docs`, numbering them from `first`, charging `budget` after each one.
    pub(super) fn range<D: Indexable>(docs: &[D], first: usize, budget: &Budget) -> Result<Read, OverBudget> {
        let mut builder = Builder::default();
        let mut lengths = Vec::with_capacity(docs.len());
        for (d, doc) in docs.iter().enumerate() {
            let d = (first + d) as u32;
            let mut len = [0u32; FIELDS];
            // The slug usually repeats the name; it stands in for a missing name.
            if doc.name().trim().is_empty() {
                builder.add(d, Field::Name, doc.slug(), &mut len);
            } else {
                builder.add(d, Field::Slug, doc.slug(), &mut len);
                builder.add(d, Field::Name, doc.name(), &mut len);
            }
            for tag in doc
                .tags()
                .iter()
                .map(String::as_str)
                .chain(std::iter::once(doc.category()))
            {
                builder.add(d, Field::Tags, tag, &mut len);
            }
            builder.add(d, Field::Description, doc.description(), &mut len);
            for phrasing in doc.phrasings() {
                builder.add(d, Field::Phrasings, phrasing, &mut len);
            }
            doc.params(&mut |name, text| {
                builder.add(d, Field::Params, name, &mut len);
                builder.add(d, Field::ParamDocs, text, &mut len);
            });
            lengths.push(len);
            budget.charge(std::mem::take(&mut builder.added))?;
        }
        Ok((builder, lengths))
    }

    fn add(&mut self, doc: u32, field: Field, text: &str, len: &mut [u32; FIELDS]) {
        let i = field as usize;
        let shared = matches!(field, Field::Tags | Field::Params | Field::ParamDocs) && text.len() <= MEMO_TEXT_BYTES;
        if shared && let Some(ids) = self.memo.get(text) {
            for &id in ids.iter() {
                count(&mut self.lists, &mut self.added, doc, i, id, len);
            }
            return;
        }
        let mut read: Vec<u32> = Vec::new();
        let mut scratch = std::mem::take(&mut self.scratch);
        tokenize::for_each_index_word_in(&mut scratch, text, |word| {
            let id = match self.words.get(word) {
                Some(id) => *id,
                None => {
                    let stem = self.analyzer.stem(word);
                    let id = match self.ids.get(&stem) {
                        Some(&id) => id,
                        None => {
                            let id = self.terms.len() as u32;
                            self.ids.insert(stem.clone(), id);
                            self.terms.push(stem);
                            self.surface.push(word.to_owned());
                            self.lists.push(Vec::new());
                            id
                        }
                    };
                    self.added += 1;
                    self.words.insert(word.to_owned(), Some(id));
                    Some(id)
                }
            };
            let Some(id) = id else { return };
            if shared {
                read.push(id);
            }
            count(&mut self.lists, &mut self.added, doc, i, id, len);
        });
        self.scratch = scratch;
        if shared && self.memo.len() < MEMO_TEXTS {
            self.memo.insert(text.into(), read.into_boxed_slice());
        }
    }
}

/// Counts one occurrence of term `id` in field `i` of `doc`.
fn count(
    lists: &mut [Vec<(u32, [u16; FIELDS])>],
    added: &mut usize,
    doc: u32,
    i: usize,
    id: u32,
    len: &mut [u32; FIELDS],
) {
    len[i] += 1;
    let Some(list) = lists.get_mut(id as usize) else {
        return;
    };
    match list.last_mut() {
        Some((last, counts)) if *last == doc => counts[i] = counts[i].saturating_add(1),
        _ => {
            let mut counts = [0u16; FIELDS];
            counts[i] = 1;
            list.push((doc, counts));
            *added += 1;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Document;
    use crate::testutil::doc;

    /// A term, its surface word and its postings, for comparing builds.
    type Row = (String, String, Vec<(u32, [u16; FIELDS])>);

    #[test]
    fn a_parallel_build_reads_like_a_single_thread() {
        let words = [
            "alpha", "Beta", "gammaRay", "delta-4", "epsilon", "Zeta", "etaTheta", "iota",
        ];
        let docs: Vec<Document> = (0..PARALLEL_MIN_DOCS * 2 + 7)
            .map(|i| {
                let w = |k: usize| words[(i * 7 + k * 3) % words.len()];
                doc(
                    &format!("tool-{i:05}"),
                    &format!("{} {}", w(0), w(1)),
                    &format!("{} {} {}.", w(2), w(3), w(4)),
                    &[w(5)],
                )
            })
            .collect();
        let (one, one_len) = Builder::range(&docs, 0, &Budget::unlimited()).unwrap();
        let (many, many_len) = Builder::parallel(&docs, &Budget::unlimited()).unwrap();
        assert_eq!(one_len, many_len);
        let table = |b: &Builder| {
            let mut t: Vec<Row> = (0..b.terms.len())
                .map(|i| (b.terms[i].clone(), b.surface[i].clone(), b.lists[i].clone()))
                .collect();
            t.sort();
            t
        };
        assert_eq!(table(&one), table(&many));
    }
}
