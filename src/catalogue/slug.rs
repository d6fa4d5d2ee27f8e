//! Slug grammar and resolution: exact match or unambiguous abbreviation, never a guess.
//!
//! Executing the wrong tool successfully is worse than failing clearly, so a typo is an
//! error with suggestions (`env-validatr` suggests `env-validator` and runs nothing).

use crate::error::Error;
use crate::limits::{CLOSE_MATCH_MAX_CHARS, CLOSE_MATCHES, SLUG_MAX_LEN};

/// Returns true if and only if `slug` fits MCP's tool-name grammar `[A-Za-z0-9_-]{1,64}`,
/// so a strict host will accept it in `tools/list`.
pub fn is_advertisable(slug: &str) -> bool {
    !slug.is_empty()
        && slug.len() <= SLUG_MAX_LEN
        && slug
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || b == b'_' || b == b'-')
}

/// Resolves `wanted` among `slugs` (sorted, unique): exact match first, else the one slug
/// it is a prefix of. Returns the index of the slug in `slugs`.
pub fn resolve<S: AsRef<str>>(slugs: &[S], wanted: &str) -> Result<usize, Error> {
    if let Ok(i) = slugs.binary_search_by(|s| s.as_ref().cmp(wanted)) {
        return Ok(i);
    }
    if wanted.is_empty() {
        return Err(Error::ToolNotFound {
            slug: String::new(),
            candidates: Vec::new(),
        });
    }
    // Sorted input: every slug with this prefix sits in one run from the insertion point.
    let start = slugs.partition_point(|s| s.as_ref() < wanted);
    let run: Vec<usize> = (start..slugs.len())
        .take_while(|&i| slugs[i].as_ref().starts_with(wanted))
        .collect();
    match run.as_slice() {
        [one] => Ok(*one),
        [] => Err(Error::ToolNotFound {
            slug: wanted.to_owned(),
            candidates: close_matches(slugs, wanted),
        }),
        many => Err(Error::AmbiguousSlug {
            slug: wanted.to_owned(),
            candidates: many.iter().map(|&i| slugs[i].as_ref().to_owned()).collect(),
        }),
    }
}

/// Up to [`CLOSE_MATCHES`] slugs that look like `wanted`, best first, ties by slug.
///
/// The score is the better of normalised Damerau-Levenshtein similarity (typos) and
/// Jaro-Winkler (shared beginnings); 0.7 is the floor under which suggestions were noise
/// on the embedded catalogue. Names longer than [`CLOSE_MATCH_MAX_CHARS`], asked for or in
/// the catalogue, are not compared: each comparison costs the product of both lengths.
pub fn close_matches<S: AsRef<str>>(slugs: &[S], wanted: &str) -> Vec<String> {
    const FLOOR: f64 = 0.7;
    let is_short = |s: &str| s.chars().nth(CLOSE_MATCH_MAX_CHARS).is_none();
    if !is_short(wanted) {
        return Vec::new();
    }
    let wanted_lower = wanted.to_ascii_lowercase();
    let mut scored: Vec<(f64, &str)> = slugs
        .iter()
        .filter(|s| is_short(s.as_ref()))
        .map(|s| {
            let s = s.as_ref();
            let lower = s.to_ascii_lowercase();
            let score = strsim::normalized_damerau_levenshtein(&wanted_lower, &lower)
                .max(strsim::jaro_winkler(&wanted_lower, &lower));
            (score, s)
        })
        .filter(|(score, _)| *score >= FLOOR)
        .collect();
    scored.sort_by(|a, b| b.0.total_cmp(&a.0).then_with(|| a.1.cmp(b.1)));
    scored
        .into_iter()
        .take(CLOSE_MATCHES)
        .map(|(_, s)| s.to_owned())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    const SLUGS: &[&str] = &[
        "base64-codec",
        "data-generator",
        "env-validator",
        "json-formatter",
        "jwt-decoder",
    ];

    fn check(wanted: &str, expected: Result<&str, &str>) {
        let got = resolve(SLUGS, wanted).map(|i| SLUGS[i]).map_err(|e| e.code());
        assert_eq!(got, expected, "{wanted}");
    }

    #[test]
    fn grammar() {
        assert!(is_advertisable("env-validator_2"));
        assert!(!is_advertisable(""));
        assert!(!is_advertisable("has space"));
        assert!(!is_advertisable("a/b"));
        assert!(!is_advertisable("café"));
        assert!(!is_advertisable(&"a".repeat(65)));
        assert!(is_advertisable(&"a".repeat(64)));
    }

    #[test]
    fn exact_prefix_ambiguous_unknown() {
        check("env-validator", Ok("env-validator"));
        check("env", Ok("env-validator"));
        check("j", Err("AMBIGUOUS_SLUG"));
        check("js", Ok("json-formatter"));
        check("env-validatr", Err("TOOL_NOT_FOUND"));
        check("", Err("TOOL_NOT_FOUND"));
        check("zzz", Err("TOOL_NOT_FOUND"));
    }

    #[test]
    fn typo_suggests_the_right_slug() {
        let Err(Error::ToolNotFound { candidates, .. }) = resolve(SLUGS, "env-validatr") else {
            panic!("expected not found");
        };
        assert_eq!(candidates.first().map(String::as_str), Some("env-validator"));
    }

    #[test]
    fn ambiguous_lists_every_candidate() {
        let Err(Error::AmbiguousSlug { candidates, .. }) = resolve(SLUGS, "j") else {
            panic!("expected ambiguous");
        };
        assert_eq!(candidates, vec!["json-formatter", "jwt-decoder"]);
    }

    #[test]
    fn long_names_are_not_compared() {
        let long_slug = format!("env-validator{}", "x".repeat(CLOSE_MATCH_MAX_CHARS));
        let slugs = ["env-validator", long_slug.as_str()];
        assert_eq!(close_matches(&slugs, "env-validatr"), vec!["env-validator"]);
        let long_wanted = format!("env-validatr{}", "x".repeat(CLOSE_MATCH_MAX_CHARS));
        assert!(close_matches(&slugs, &long_wanted).is_empty());
    }
}
