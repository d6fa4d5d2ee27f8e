//! Redaction of runs before they are stored: values under credential-like keys (the one
//! rule of [`crate::secrets`]) are masked at any depth, nothing deeper than the walk goes
//! is kept at all, and a secret value found in the input is masked wherever else it
//! shows up in the stored run (a validation message, an echoed result, a thrown error).

use aho_corasick::AhoCorasick;
use serde_json::{Map, Value};

use crate::limits::HISTORY_SCRUB_MIN_CHARS;
use crate::secrets::is_secret_name;

pub use crate::secrets::MASK;

/// What a value nested deeper than [`MAX_DEPTH`] becomes.
pub const DEEP: &str = "[deep]";

/// Levels of nesting the walk inspects; values below are replaced, not inspected, so a
/// deeply nested payload cannot smuggle a credential past it.
pub const MAX_DEPTH: usize = 6;

/// A copy of `value` with secret-keyed values masked down to depth [`MAX_DEPTH`] and
/// anything deeper replaced by [`DEEP`]. The top-level object is depth 1.
pub fn redact(value: &Value) -> Value {
    walk(value, 1)
}

fn walk(value: &Value, depth: usize) -> Value {
    match value {
        Value::Object(map) if depth > MAX_DEPTH => {
            if map.is_empty() {
                Value::Object(Map::new())
            } else {
                Value::String(DEEP.to_owned())
            }
        }
        Value::Array(items) if depth > MAX_DEPTH => {
            if items.is_empty() {
                Value::Array(Vec::new())
            } else {
                Value::String(DEEP.to_owned())
            }
        }
        Value::Object(map) => Value::Object(
            map.iter()
                .map(|(k, v)| {
                    let v = if is_secret_name(k) {
                        Value::String(MASK.to_owned())
                    } else {
                        walk(v, depth + 1)
                    };
                    (k.clone(), v)
                })
                .collect(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(|v| walk(v, depth + 1)).collect()),
        other => other.clone(),
    }
}

/// Every value of `input` held under a secret key, at any depth (a secret object or
/// array gives all its strings and numbers), as text: strings as they are and as they
/// read inside JSON text (escaped), numbers as written. Values shorter than
/// [`HISTORY_SCRUB_MIN_CHARS`] are left out.
pub fn secret_values(input: &Value) -> Vec<String> {
    let mut found = Vec::new();
    collect(input, false, &mut found);
    found.retain(|s| s.chars().count() >= HISTORY_SCRUB_MIN_CHARS);
    found.sort_unstable_by_key(|s| std::cmp::Reverse(s.len()));
    found.dedup();
    found
}

fn collect(value: &Value, secret: bool, found: &mut Vec<String>) {
    match value {
        Value::Object(map) => {
            for (k, v) in map {
                collect(v, secret || is_secret_name(k), found);
            }
        }
        Value::Array(items) => items.iter().for_each(|v| collect(v, secret, found)),
        Value::String(s) if secret => {
            let quoted = Value::String(s.clone()).to_string();
            let escaped = &quoted[1..quoted.len() - 1];
            if escaped != s {
                found.push(escaped.to_owned());
            }
            found.push(s.clone());
        }
        Value::Number(n) if secret => found.push(n.to_string()),
        _ => {}
    }
}

/// A copy of `value` in which every occurrence of any of `secrets` inside a string or an
/// object key is replaced by [`MASK`]. One pass over the text whatever the number of
/// secrets (Aho-Corasick, longest match first).
pub fn scrub(value: &Value, secrets: &[String]) -> Value {
    if secrets.is_empty() {
        return value.clone();
    }
    let Ok(matcher) = AhoCorasick::builder()
        .match_kind(aho_corasick::MatchKind::LeftmostLongest)
        .build(secrets)
    else {
        // The patterns could not be compiled (they are bounded by the input, so this is
        // a size limit of the matcher): keep nothing rather than risk keeping a secret.
        return Value::String(MASK.to_owned());
    };
    let masks = vec![MASK; matcher.patterns_len()];
    scrub_with(value, &|s| matcher.replace_all(s, &masks))
}

fn scrub_with(value: &Value, clean: &dyn Fn(&str) -> String) -> Value {
    match value {
        Value::String(s) => Value::String(clean(s)),
        Value::Array(items) => Value::Array(items.iter().map(|v| scrub_with(v, clean)).collect()),
        Value::Object(map) => {
            let mut out = Map::new();
            for (k, v) in map {
                out.insert(clean(k), scrub_with(v, clean));
            }
            Value::Object(out)
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    /// `{"a": {"a": ... {"api_key": "s"}}}` with the secret at object depth `depth`.
    fn nested(depth: usize) -> Value {
        let mut v = json!({"api_key": "hunter2-long-secret", "plain": 1});
        for _ in 1..depth {
            v = json!({ "a": v });
        }
        v
    }

    fn find(v: &Value, depth: usize) -> &Value {
        let mut v = v;
        for _ in 1..depth {
            v = &v["a"];
        }
        v
    }

    #[test]
    fn masks_at_depth_one_and_six_without_keeping_length() {
        for depth in [1, 6] {
            let r = redact(&nested(depth));
            let inner = find(&r, depth);
            assert_eq!(inner["api_key"], MASK, "depth {depth}: {r}");
            assert_eq!(inner["plain"], 1);
        }
        assert_eq!(
            redact(&json!({"Password": "x"}))["Password"],
            MASK,
            "the mask is the same for a short secret"
        );
    }

    #[test]
    fn beyond_depth_six_nothing_is_kept() {
        let r = redact(&nested(7));
        assert_eq!(find(&r, 7), &json!(DEEP), "{r}");
        assert!(!r.to_string().contains("hunter2"));
    }

    #[test]
    fn every_listed_key_is_secret_case_insensitively() {
        let is_secret_key = is_secret_name;
        for k in [
            "API_KEY",
            "clientSecret",
            "x-auth",
            "Cookie",
            "SESSION_ID",
            "passwd",
            "Passphrase",
            "credentials",
            "accessToken",
        ] {
            assert!(is_secret_name(k), "{k}");
        }
        assert!(!is_secret_key("message"));
    }

    #[test]
    fn an_input_secret_is_masked_wherever_else_it_appears() {
        let input = json!({"password": "hunter2-long", "auth": {"pin": 123456, "x": "a\"quoted\"b"}, "n": "ab"});
        let secrets = secret_values(&input);
        let stored = json!({
            "error": "/password: \"hunter2-long\" is longer than 5 characters; 123456",
            "echo": {"hunter2-long": ["a\\\"quoted\\\"b", "a\"quoted\"b"]},
            "ab": "short values stay: ab",
        });
        let clean = scrub(&stored, &secrets).to_string();
        for leaked in ["hunter2", "123456", "quoted"] {
            assert!(!clean.contains(leaked), "{leaked} in {clean}");
        }
        assert!(clean.contains("short values stay: ab"), "{clean}");
    }

    #[test]
    fn secrets_inside_arrays_are_masked() {
        let r = redact(&json!({"items": [{"token": "t"}]}));
        assert_eq!(r["items"][0]["token"], MASK);
    }
}
