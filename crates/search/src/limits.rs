//! The bounds search holds a caller's input to, before any work: the query's length and
//! the length of a word typo correction looks at. The server's other limits are in the
//! toolgate crate's `limits`, which re-exports these.

/// How much of a search query is read, in characters: a longer one (an agent pastes a
/// whole task, sometimes with an image in base64) is searched by its start, and the
/// meta-tool's answer says so. The model reads 128 tokens (about 500–700 characters of
/// prose) anyway. The cut comes first, in the index itself, so nothing past it is
/// tokenised, looked up or embedded by any caller (the meta-tool's search, the prompts,
/// close-match advice).
pub const QUERY_MAX_CHARS: usize = 1_000;

/// Longest word, in characters, that the typo index holds and that a query corrects for
/// typos. The typo index keeps each word with every one of its characters deleted, so its
/// size grows with the square of a word's length: one 60,000-letter word held 3.3 GB.
/// English words and joined identifiers stay under this; a longer word is still found
/// exactly and by prefix.
pub const TYPO_WORD_MAX_CHARS: usize = 32;
