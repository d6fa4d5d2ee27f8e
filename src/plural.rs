//! Counts in words: `1 tool`, `2 tools`, `0 tools`. The one rule for every count toolgate
//! prints, so no message says "1 tools". A leaf: it knows no other toolgate type.

/// `n` and then `one` when `n` is 1, else `many`: `count(1, "tool", "tools")` is
/// `"1 tool"`.
pub fn count(n: usize, one: &str, many: &str) -> String {
    format!("{n} {}", if n == 1 { one } else { many })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(count(1, "tool", "tools"), "1 tool");
        assert_eq!(count(0, "tool", "tools"), "0 tools");
        assert_eq!(count(2, "query", "queries"), "2 queries");
    }
}
