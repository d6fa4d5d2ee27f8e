//! Typo candidates: a deletion neighbourhood (SymSpell, distance 1) over the distinct
//! words of a snapshot. Each word is stored with every one of its characters deleted, so
//! the map grows with the square of a word's length; only words up to
//! [`TYPO_WORD_MAX_CHARS`] are held, and only query words up to it are corrected.

use rustc_hash::FxHashMap as HashMap;

use super::budget::{Budget, OverBudget};
use crate::limits::TYPO_WORD_MAX_CHARS;

/// How many words between two checks of the time budget.
const CHECK_EVERY: usize = 1024;

/// The typo map of one index.
#[derive(Debug, Default)]
pub(super) struct Typos {
    /// Distinct words as written (lowercase), with their term, sorted.
    words: Vec<(String, u32)>,
    /// A word of `words` with one character deleted (or none) → word ids.
    deletes: HashMap<String, Vec<u32>>,
}

impl Typos {
    /// Builds the map over `words` (word, term id) at least `min_len` characters long, no
    /// longer than [`TYPO_WORD_MAX_CHARS`], without digits; each key is charged to
    /// `budget`.
    pub(super) fn build(
        words: impl Iterator<Item = (String, u32)>,
        min_len: usize,
        budget: &Budget,
    ) -> Result<Typos, OverBudget> {
        let mut words: Vec<(String, u32)> = words
            .filter(|(word, _)| {
                let len = word.chars().count();
                len >= min_len && len <= TYPO_WORD_MAX_CHARS && !word.chars().any(char::is_numeric)
            })
            .collect();
        words.sort_unstable();
        let mut deletes: HashMap<String, Vec<u32>> = HashMap::default();
        for (id, (word, _)) in words.iter().enumerate() {
            let before = deletes.len();
            for variant in std::iter::once(word.clone()).chain(deletions(word)) {
                deletes.entry(variant).or_default().push(id as u32);
            }
            if id % CHECK_EVERY == 0 {
                budget.check_time()?;
            }
            budget.charge(deletes.len() - before)?;
        }
        Ok(Typos { words, deletes })
    }

    /// About how many bytes of heap the map holds.
    pub(super) fn heap_bytes(&self) -> usize {
        let words: usize = self
            .words
            .iter()
            .map(|(w, _)| w.capacity() + size_of::<(String, u32)>())
            .sum();
        let deletes: usize = self
            .deletes
            .iter()
            .map(|(k, v)| k.capacity() + v.capacity() * size_of::<u32>() + size_of::<(String, Vec<u32>)>() + 1)
            .sum();
        words + deletes
    }

    /// Words within `max` edits (optimal string alignment) of `raw`, `raw` itself
    /// excluded, as `(word, term)`. Nothing for a word longer than
    /// [`TYPO_WORD_MAX_CHARS`]: it cannot be in the map, and its deletions alone would
    /// cost the square of its length.
    pub(super) fn near(&self, raw: &str, max: usize) -> Vec<u32> {
        let len = raw.chars().count();
        if len > TYPO_WORD_MAX_CHARS + 1 {
            return Vec::new();
        }
        let mut candidates: Vec<u32> = std::iter::once(raw.to_owned())
            .chain(deletions(raw))
            .filter_map(|v| self.deletes.get(&v))
            .flatten()
            .copied()
            .collect();
        candidates.sort_unstable();
        candidates.dedup();
        candidates
            .into_iter()
            .filter_map(|w| {
                let (word, term) = &self.words[w as usize];
                (word != raw && word.chars().count().abs_diff(len) <= max && strsim::osa_distance(raw, word) <= max)
                    .then_some(*term)
            })
            .collect()
    }
}

/// Every string `word` becomes with one character removed.
fn deletions(word: &str) -> impl Iterator<Item = String> + '_ {
    word.char_indices().map(move |(i, c)| {
        let mut s = String::with_capacity(word.len());
        s.push_str(&word[..i]);
        s.push_str(&word[i + c.len_utf8()..]);
        s
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_words_stay_out_of_the_map_and_are_not_corrected() {
        let long = "a".repeat(TYPO_WORD_MAX_CHARS + 1);
        let fits = "b".repeat(TYPO_WORD_MAX_CHARS);
        let words = vec![(long.clone(), 0), (fits.clone(), 1), ("formatter".to_owned(), 2)];
        let budget = Budget::unlimited();
        let typos = Typos::build(words.into_iter(), 4, &budget).unwrap();
        // The fitting word and its deletions (all alike); "formatter" and its 8 distinct ones.
        assert_eq!(budget.used(), 2 + 9);
        assert_eq!(typos.near("formater", 1), vec![2]);
        assert_eq!(typos.near(&format!("{fits}b"), 1), vec![1]);
        assert!(typos.near(&format!("{long}a"), 2).is_empty());
        assert!(typos.near(&"x".repeat(300_000), 2).is_empty());
    }

    #[test]
    fn the_entry_budget_stops_the_build() {
        let words = (0..100).map(|i| (format!("word{}", "x".repeat(i % 20 + 5)), i as u32));
        let budget = Budget::new(std::time::Duration::from_secs(60), 10);
        assert_eq!(
            Typos::build(words, 4, &budget).err(),
            Some(OverBudget::Entries { limit: 10 })
        );
    }
}
