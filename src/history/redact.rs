//! Redaction of run inputs before they are stored: credential-like keys are masked at any
//! depth, and nothing deeper than the walk goes is kept at all.

use serde_json::{Map, Value};

/// Key substrings (matched case-insensitively) whose values are masked.
const SECRET_KEYS: &[&str] = &[
    "key",
    "secret",
    "token",
    "password",
    "passwd",
    "passphrase",
    "auth",
    "cookie",
    "session",
    "credential",
];

/// What a masked value becomes: the same for every secret, so its length leaks nothing.
pub const MASK: &str = "******";

/// What a value nested deeper than [`MAX_DEPTH`] becomes.
pub const DEEP: &str = "[deep]";

/// Levels of nesting the walk inspects; values below are replaced, not inspected, so a
/// deeply nested payload cannot smuggle a credential past it.
pub const MAX_DEPTH: usize = 6;

/// Returns true if and only if a key names something secret.
pub fn is_secret_key(key: &str) -> bool {
    let key = key.to_ascii_lowercase();
    SECRET_KEYS.iter().any(|s| key.contains(s))
}

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
                    let v = if is_secret_key(k) {
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
            assert!(is_secret_key(k), "{k}");
        }
        assert!(!is_secret_key("message"));
    }

    #[test]
    fn secrets_inside_arrays_are_masked() {
        let r = redact(&json!({"items": [{"token": "t"}]}));
        assert_eq!(r["items"][0]["token"], MASK);
    }
}
