//! What search reads of a query: its start. Agents paste whole task descriptions (some
//! with an image in base64 after the words); the model reads its first 128 tokens anyway,
//! so a long query is searched by its first [`QUERY_MAX_CHARS`] characters rather than
//! refused, and the answer says so. Cutting first bounds every later step: nothing past
//! the cut is tokenised, looked up or embedded.

use crate::limits::QUERY_MAX_CHARS;

/// A query as search reads it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Cut<'a> {
    /// The part searched: all of it, or its first [`QUERY_MAX_CHARS`] characters less a
    /// word the cut split.
    pub text: &'a str,
    /// Returns true if and only if the query was longer than [`QUERY_MAX_CHARS`]
    /// characters and `text` is its start.
    pub is_cut: bool,
}

/// `query` cut to its first [`QUERY_MAX_CHARS`] characters, back to the last whitespace
/// before the cut when there is one (a word cut in half would match by prefix). Reads at
/// most [`QUERY_MAX_CHARS`] characters of it, whatever its length.
pub fn cut(query: &str) -> Cut<'_> {
    // Bytes first: a query of at most QUERY_MAX_CHARS bytes has at most as many characters.
    if query.len() <= QUERY_MAX_CHARS {
        return Cut {
            text: query,
            is_cut: false,
        };
    }
    let Some((end, _)) = query.char_indices().nth(QUERY_MAX_CHARS) else {
        return Cut {
            text: query,
            is_cut: false,
        };
    };
    let start = &query[..end];
    let text = match start.rfind(char::is_whitespace) {
        Some(space) if !query[end..].starts_with(char::is_whitespace) => start[..space].trim_end(),
        _ => start,
    };
    Cut { text, is_cut: true }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_query_within_the_limit_is_read_whole() {
        let q = "é".repeat(QUERY_MAX_CHARS);
        assert_eq!(
            cut(&q),
            Cut {
                text: &q,
                is_cut: false
            }
        );
        assert_eq!(cut("").text, "");
    }

    #[test]
    fn a_long_query_is_cut_at_the_limit_back_to_a_word_boundary() {
        // 999 characters and a space, then a word that the limit splits.
        let q = format!("{} tail-word and more", "a".repeat(QUERY_MAX_CHARS - 5));
        let c = cut(&q);
        assert!(c.is_cut);
        assert_eq!(c.text, "a".repeat(QUERY_MAX_CHARS - 5));
        // The limit falls on a space: every word before it is kept.
        let q = format!("{} {}", "b".repeat(QUERY_MAX_CHARS), "c".repeat(10));
        assert_eq!(cut(&q).text, "b".repeat(QUERY_MAX_CHARS));
        // One word longer than the limit: cut at the limit, in characters, not bytes.
        let q = "ü".repeat(300_000);
        let c = cut(&q);
        assert!(c.is_cut);
        assert_eq!(c.text.chars().count(), QUERY_MAX_CHARS);
    }
}
