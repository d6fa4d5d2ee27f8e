//! Text → search terms: split on case, digits and punctuation, lowercase, drop stop
//! words, Snowball-stem.
//!
//! `envValidator`, `env_validator`, `env-validator` and `ENV VALIDATOR` all become
//! `env`, `valid`. A split identifier also yields its joined form (`ABCmouse` → `abc`,
//! `mous`, `abcmous`), so a query that writes it as one word still meets it.

use rust_stemmers::{Algorithm, Stemmer};

/// English stop words: the Snowball project's list, plus the words any spoken request
/// carries that say nothing about the tool wanted ("can you please help me find..."). They
/// are generic to requests, not to one catalogue.
const STOP_WORDS: &[&str] = &[
    "a",
    "about",
    "above",
    "after",
    "again",
    "against",
    "all",
    "am",
    "an",
    "and",
    "any",
    "are",
    "as",
    "at",
    "be",
    "because",
    "been",
    "before",
    "being",
    "below",
    "between",
    "both",
    "but",
    "by",
    "can",
    "could",
    "did",
    "do",
    "does",
    "doing",
    "down",
    "during",
    "each",
    "few",
    "for",
    "from",
    "further",
    "had",
    "has",
    "have",
    "having",
    "he",
    "her",
    "here",
    "hers",
    "herself",
    "him",
    "himself",
    "his",
    "how",
    "i",
    "if",
    "in",
    "into",
    "is",
    "it",
    "its",
    "itself",
    "just",
    "me",
    "more",
    "most",
    "my",
    "myself",
    "no",
    "nor",
    "not",
    "now",
    "of",
    "off",
    "on",
    "once",
    "only",
    "or",
    "other",
    "ought",
    "our",
    "ours",
    "ourselves",
    "out",
    "over",
    "own",
    "same",
    "she",
    "should",
    "so",
    "some",
    "such",
    "than",
    "that",
    "the",
    "their",
    "theirs",
    "them",
    "themselves",
    "then",
    "there",
    "these",
    "they",
    "this",
    "those",
    "through",
    "to",
    "too",
    "under",
    "until",
    "up",
    "very",
    "was",
    "we",
    "were",
    "what",
    "when",
    "where",
    "which",
    "while",
    "who",
    "whom",
    "why",
    "will",
    "with",
    "would",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
    "please",
    "let",
    "lets",
    "want",
    "wants",
    "need",
    "needs",
    "like",
    "would",
    "also",
    "thanks",
];

/// Returns true if and only if `word` (lowercase) carries no meaning for search.
pub fn is_stop_word(word: &str) -> bool {
    STOP_WORDS.contains(&word)
}

/// Splits text into lowercase words: on every non-alphanumeric character, between a
/// lowercase letter and an uppercase one, before the last capital of a capital run
/// followed by lowercase (`XMLParser` → `xml`, `parser`), and between letters and digits.
/// Each split identifier is followed by its joined form.
pub fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    for_each_word(text, |w| out.push(w.to_owned()));
    out
}

/// [`words`] without collecting: calls `f` with each lowercase word, in order.
pub fn for_each_word(text: &str, mut f: impl FnMut(&str)) {
    let mut lower = String::new();
    let mut joined = String::new();
    for run in text.split(|c: char| !c.is_alphanumeric()).filter(|r| !r.is_empty()) {
        let parts = split_identifier(run);
        joined.clear();
        for part in &parts {
            lower.clear();
            lower.extend(part.chars().flat_map(char::to_lowercase));
            f(&lower);
            if !part.chars().all(|c| c.is_ascii_digit()) {
                joined.push_str(&lower);
            }
        }
        if parts.len() > 1 && joined.chars().count() > 1 && !parts.iter().any(|p| p.eq_ignore_ascii_case(&joined)) {
            f(&joined);
        }
    }
}

fn split_identifier(run: &str) -> Vec<&str> {
    let chars: Vec<(usize, char)> = run.char_indices().collect();
    let mut parts = Vec::new();
    let mut start = 0;
    for i in 1..chars.len() {
        let (at, c) = chars[i];
        let prev = chars[i - 1].1;
        let next = chars.get(i + 1).map(|&(_, n)| n);
        let boundary = (prev.is_lowercase() && c.is_uppercase())
            || (prev.is_uppercase() && c.is_uppercase() && next.is_some_and(char::is_lowercase))
            || (prev.is_alphabetic() && c.is_numeric())
            || (prev.is_numeric() && c.is_alphabetic());
        if boundary {
            parts.push(&run[start..at]);
            start = at;
        }
    }
    parts.push(&run[start..]);
    parts
}

/// Turns words into search terms: stop words dropped, the rest stemmed.
pub struct Analyzer {
    stemmer: Stemmer,
}

impl std::fmt::Debug for Analyzer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Analyzer(english)")
    }
}

impl Default for Analyzer {
    fn default() -> Self {
        Analyzer {
            stemmer: Stemmer::create(Algorithm::English),
        }
    }
}

impl Analyzer {
    /// The stem of one lowercase word.
    pub fn stem(&self, word: &str) -> String {
        self.stemmer.stem(word).into_owned()
    }

    /// `(surface word, stem)` for every non-stop word of `text`, in order.
    pub fn terms(&self, text: &str) -> Vec<(String, String)> {
        words(text)
            .into_iter()
            .filter(|w| !is_stop_word(w))
            .map(|w| {
                let stem = self.stem(&w);
                (w, stem)
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn check(text: &str, expected: &[&str]) {
        assert_eq!(words(text), expected, "{text}");
    }

    #[test]
    fn splits_case_digits_and_punctuation() {
        check("envValidator", &["env", "validator", "envvalidator"]);
        check("env_validator", &["env", "validator"]);
        check("env-validator", &["env", "validator"]);
        check("XMLParser", &["xml", "parser", "xmlparser"]);
        check("ABCmouse", &["ab", "cmouse", "abcmouse"]);
        check("AI2sql", &["ai", "2", "sql", "aisql"]);
        check("sha256", &["sha", "256"]);
        check("Hello, world!", &["hello", "world"]);
        check("", &[]);
    }

    #[test]
    fn stems_and_drops_stop_words() {
        let a = Analyzer::default();
        let stems: Vec<String> = a
            .terms("Can you please validate the environment files?")
            .into_iter()
            .map(|(_, s)| s)
            .collect();
        assert_eq!(stems, vec!["valid", "environ", "file"]);
    }

    #[test]
    fn same_stem_for_inflections() {
        let a = Analyzer::default();
        assert_eq!(a.stem("validates"), a.stem("validate"));
        assert_eq!(a.stem("generators"), a.stem("generator"));
    }
}
