//! Text → words for search: chunks of letters and digits, split on case and digits,
//! lowercased, with stop words known; plus the stemmer.
//!
//! `envValidator`, `env_validator`, `env-validator` and `ENV VALIDATOR` all give `env` and
//! `validator`. A capital run followed by lowercase is ambiguous (`XMLParser` is xml +
//! parser, `ABCmouse` is abc + mouse), so both readings are kept. The index also keeps the
//! joined form of a split identifier (`AbleStyle` → able, style, ablestyle); the query side
//! instead tries adjacent words joined (`able style` → ablestyle).

use std::sync::LazyLock;

use rust_stemmers::{Algorithm, Stemmer};
use rustc_hash::FxHashSet;

/// English stop words: the Snowball project's list (174 words, with its contractions),
/// then the modal, politeness and request words every request to an assistant carries
/// ("can you please help me find…"). Both are generic English, written without looking at
/// any evaluation set.
const STOP_WORDS: &[&str] = &[
    "i",
    "me",
    "my",
    "myself",
    "we",
    "our",
    "ours",
    "ourselves",
    "you",
    "your",
    "yours",
    "yourself",
    "yourselves",
    "he",
    "him",
    "his",
    "himself",
    "she",
    "her",
    "hers",
    "herself",
    "it",
    "its",
    "itself",
    "they",
    "them",
    "their",
    "theirs",
    "themselves",
    "what",
    "which",
    "who",
    "whom",
    "this",
    "that",
    "these",
    "those",
    "am",
    "is",
    "are",
    "was",
    "were",
    "be",
    "been",
    "being",
    "have",
    "has",
    "had",
    "having",
    "do",
    "does",
    "did",
    "doing",
    "would",
    "should",
    "could",
    "ought",
    "i'm",
    "you're",
    "he's",
    "she's",
    "it's",
    "we're",
    "they're",
    "i've",
    "you've",
    "we've",
    "they've",
    "i'd",
    "you'd",
    "he'd",
    "she'd",
    "we'd",
    "they'd",
    "i'll",
    "you'll",
    "he'll",
    "she'll",
    "we'll",
    "they'll",
    "isn't",
    "aren't",
    "wasn't",
    "weren't",
    "hasn't",
    "haven't",
    "hadn't",
    "doesn't",
    "don't",
    "didn't",
    "won't",
    "wouldn't",
    "shan't",
    "shouldn't",
    "can't",
    "cannot",
    "couldn't",
    "mustn't",
    "let's",
    "that's",
    "who's",
    "what's",
    "here's",
    "there's",
    "when's",
    "where's",
    "why's",
    "how's",
    "a",
    "an",
    "the",
    "and",
    "but",
    "if",
    "or",
    "because",
    "as",
    "until",
    "while",
    "of",
    "at",
    "by",
    "for",
    "with",
    "about",
    "against",
    "between",
    "into",
    "through",
    "during",
    "before",
    "after",
    "above",
    "below",
    "to",
    "from",
    "up",
    "down",
    "in",
    "out",
    "on",
    "off",
    "over",
    "under",
    "again",
    "further",
    "then",
    "once",
    "here",
    "there",
    "when",
    "where",
    "why",
    "how",
    "all",
    "any",
    "both",
    "each",
    "few",
    "more",
    "most",
    "other",
    "some",
    "such",
    "no",
    "nor",
    "not",
    "only",
    "own",
    "same",
    "so",
    "than",
    "too",
    "very",
    // Request words.
    "can",
    "will",
    "shall",
    "may",
    "might",
    "must",
    "please",
    "help",
    "find",
    "show",
    "tell",
    "want",
    "need",
    "like",
    "give",
    "get",
    "let",
    "know",
    "looking",
    "look",
    "hi",
    "hello",
    "hey",
    "thanks",
    "thank",
];

/// [`STOP_WORDS`] as a set: every word of every indexed text is checked against it.
static STOP_SET: LazyLock<FxHashSet<&'static str>> = LazyLock::new(|| STOP_WORDS.iter().copied().collect());

/// The length in bytes of the longest stop word: a longer word is not looked up.
const STOP_WORD_MAX_BYTES: usize = {
    let mut max = 0;
    let mut i = 0;
    while i < STOP_WORDS.len() {
        if STOP_WORDS[i].len() > max {
            max = STOP_WORDS[i].len();
        }
        i += 1;
    }
    max
};

/// Returns true if and only if `word` (lowercase) carries no meaning for search.
pub fn is_stop_word(word: &str) -> bool {
    word.len() <= STOP_WORD_MAX_BYTES && STOP_SET.contains(word)
}

/// One chunk of text: a run of letters and digits, perhaps with an apostrophe suffix.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Chunk {
    /// The whole chunk, lowercase, apostrophe suffix included (`don't`).
    pub whole: String,
    /// Its parts, lowercase: split on case and digits, both readings of an ambiguous
    /// capital run; for an apostrophe chunk, the parts before the apostrophe only.
    pub parts: Vec<String>,
    /// True if and only if the chunk had an apostrophe suffix (`father's`).
    pub has_apostrophe: bool,
}

/// The chunks of `text`, in order.
pub fn chunks(text: &str) -> Vec<Chunk> {
    let mut out = Vec::new();
    for_each_chunk(text, |c| out.push(c.clone()));
    out
}

/// The buffers reading text reuses: one [`Chunk`] and its class runs. A build keeps one
/// per thread, so indexing a large catalogue allocates neither per word nor per field.
#[derive(Debug, Default)]
pub struct Scratch {
    chunk: Chunk,
    runs: Vec<(usize, usize, Class)>,
}

/// Calls `f` with each chunk of `text`, in order. One `Chunk` is reused throughout, so
/// reading a text does not allocate per word.
pub fn for_each_chunk(text: &str, f: impl FnMut(&Chunk)) {
    for_each_chunk_in(&mut Scratch::default(), text, f);
}

/// [`for_each_chunk`] with the buffers of `scratch`.
pub fn for_each_chunk_in(scratch: &mut Scratch, text: &str, mut f: impl FnMut(&Chunk)) {
    let Scratch { chunk, runs } = scratch;
    let bytes = text.as_bytes();
    let mut i = 0;
    while i < text.len() {
        let c = next_char(text, i);
        if !c.is_alphanumeric() {
            i += c.len_utf8();
            continue;
        }
        // The alphanumeric run, as class runs.
        runs.clear();
        let start = i;
        while i < text.len() {
            let c = next_char(text, i);
            if !c.is_alphanumeric() {
                break;
            }
            let class = class(c);
            match runs.last_mut() {
                Some((_, end, k)) if *k == class => *end = i + c.len_utf8(),
                _ => runs.push((i, i + c.len_utf8(), class)),
            }
            i += c.len_utf8();
        }
        let base_end = i;
        // An apostrophe (' or ’) followed by letters belongs to the chunk.
        chunk.has_apostrophe = false;
        let apostrophe = if bytes.get(i) == Some(&b'\'') {
            1
        } else if text[i..].starts_with('\u{2019}') {
            3
        } else {
            0
        };
        if apostrophe > 0 && text[i + apostrophe..].chars().next().is_some_and(char::is_alphabetic) {
            chunk.has_apostrophe = true;
            i += apostrophe;
            while i < text.len() && next_char(text, i).is_alphabetic() {
                i += next_char(text, i).len_utf8();
            }
        }
        chunk.whole.clear();
        push_lower(&mut chunk.whole, &text[start..base_end]);
        if chunk.has_apostrophe {
            chunk.whole.push('\'');
            let suffix = &text[base_end + apostrophe..i];
            push_lower(&mut chunk.whole, suffix);
        }
        split_runs(text, runs, &mut chunk.parts);
        f(chunk);
    }
}

/// The character at byte `at` (< `text.len()`), without decoding when it is ASCII.
fn next_char(text: &str, at: usize) -> char {
    match text.as_bytes().get(at) {
        Some(&b) if b.is_ascii() => b as char,
        _ => text[at..].chars().next().unwrap_or(' '),
    }
}

fn push_lower(out: &mut String, text: &str) {
    if text.is_ascii() {
        out.extend(text.bytes().map(|b| b.to_ascii_lowercase() as char));
    } else {
        out.extend(text.chars().flat_map(char::to_lowercase));
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Class {
    Upper,
    Lower,
    Digit,
}

fn class(c: char) -> Class {
    if c.is_numeric() {
        Class::Digit
    } else if c.is_uppercase() {
        Class::Upper
    } else {
        // Lowercase, and letters of scripts without case.
        Class::Lower
    }
}

/// Turns class runs into parts. A single capital joins the lowercase run after it
/// (`Mouse`); a longer capital run before a lowercase run is read both ways (`ABCmouse` →
/// ab, cmouse, abc, mouse). `parts` is refilled, reusing its strings.
fn split_runs(text: &str, runs: &[(usize, usize, Class)], parts: &mut Vec<String>) {
    let mut n = 0;
    let mut part = |pieces: &[&str]| {
        if n == parts.len() {
            parts.push(String::new());
        }
        let p = &mut parts[n];
        p.clear();
        for piece in pieces {
            push_lower(p, piece);
        }
        n += 1;
    };
    let mut i = 0;
    while i < runs.len() {
        let (start, end, kind) = runs[i];
        match runs.get(i + 1) {
            Some(&(_, next_end, Class::Lower)) if kind == Class::Upper => {
                let last = text[start..end]
                    .char_indices()
                    .last()
                    .map_or(start, |(at, _)| start + at);
                if last == start {
                    part(&[&text[start..next_end]]);
                } else {
                    part(&[&text[start..last]]);
                    part(&[&text[last..next_end]]);
                    part(&[&text[start..end]]);
                    part(&[&text[end..next_end]]);
                }
                i += 2;
            }
            _ => {
                part(&[&text[start..end]]);
                i += 1;
            }
        }
    }
    parts.truncate(n);
}

/// Calls `f` with every word the index keeps from `text`: each part that is not a stop
/// word, then, for a split identifier, the whole chunk.
pub fn for_each_index_word(text: &str, f: impl FnMut(&str)) {
    for_each_index_word_in(&mut Scratch::default(), text, f);
}

/// [`for_each_index_word`] with the buffers of `scratch`.
pub fn for_each_index_word_in(scratch: &mut Scratch, text: &str, mut f: impl FnMut(&str)) {
    for_each_chunk_in(scratch, text, |chunk| {
        if is_stop_word(&chunk.whole) {
            return;
        }
        // The commonest chunk, one part and no apostrophe: that part is the whole chunk,
        // already known not to be a stop word.
        if let [part] = chunk.parts.as_slice()
            && !chunk.has_apostrophe
        {
            f(part);
            return;
        }
        for part in chunk.parts.iter().filter(|p| !is_stop_word(p)) {
            f(part);
        }
        if chunk.parts.len() > 1 && !chunk.has_apostrophe {
            f(&chunk.whole);
        }
    });
}

/// The query's words in order, stop words included (they separate joins).
pub fn query_sequence(text: &str) -> Vec<String> {
    let mut seq = Vec::new();
    for chunk in chunks(text) {
        if is_stop_word(&chunk.whole) {
            seq.push(chunk.whole);
        } else {
            seq.extend(chunk.parts);
        }
    }
    seq
}

/// Returns true if and only if a query word carries meaning: not a stop word, and at
/// least two characters unless it is a number.
pub fn is_query_word(word: &str) -> bool {
    !is_stop_word(word) && (word.chars().count() >= 2 || word.chars().all(char::is_numeric))
}

/// The Snowball English stemmer.
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
}

#[cfg(test)]
mod tests {
    use super::*;

    fn index_words(text: &str) -> Vec<String> {
        let mut out = Vec::new();
        for_each_index_word(text, |w| out.push(w.to_owned()));
        out
    }

    fn check(text: &str, expected: &[&str]) {
        assert_eq!(index_words(text), expected, "{text}");
    }

    #[test]
    fn splits_case_digits_and_punctuation() {
        check("envValidator", &["env", "validator", "envvalidator"]);
        check("env_validator", &["env", "validator"]);
        check("env-validator", &["env", "validator"]);
        check("ENV VALIDATOR", &["env", "validator"]);
        check("XMLParser", &["xml", "parser", "xmlp", "arser", "xmlparser"]);
        check("ABCmouse", &["ab", "cmouse", "abc", "mouse", "abcmouse"]);
        check("AI2sql", &["ai", "2", "sql", "ai2sql"]);
        check("Quick, brown fox!", &["quick", "brown", "fox"]);
        check("Café crème", &["café", "crème"]);
        check("", &[]);
    }

    #[test]
    fn stop_words_go_whole_chunks_and_parts() {
        check("Can you please validate the files?", &["validate", "files"]);
        check("don't stop father's car", &["stop", "father", "car"]);
        check("I\u{2019}m here", &[]);
    }

    #[test]
    fn query_sequence_keeps_stop_words_as_separators() {
        assert_eq!(
            query_sequence("find the AbleStyle app"),
            vec!["find", "the", "able", "style", "app"]
        );
        assert!(is_query_word("env") && is_query_word("7") && !is_query_word("x") && !is_query_word("the"));
    }

    #[test]
    fn same_stem_for_inflections() {
        let a = Analyzer::default();
        assert_eq!(a.stem("validates"), a.stem("validate"));
        assert_eq!(a.stem("generators"), a.stem("generator"));
        assert_eq!(a.stem("environment"), "environ");
    }
}
