//! What names a secret: the one word list behind every place toolgate hides credentials —
//! history redaction (`history::redact`), validation messages that would quote a value
//! (`validate`) and the child-process environment scrub (`backends::process::env`).
//!
//! **The rule.** A name (a JSON key, an environment variable) is split into words at
//! every character that is not a letter or digit, between a lower-case letter and an
//! upper-case one (`apiKey`), before the last capital of a capital run that a lower-case
//! letter follows (`DBPass` → `db`, `pass`) and between letters and digits (`key2`).
//! The name is secret if and only if one of its words, lower-cased,
//!
//! - *contains* a long marker ([`WITHIN`]: `password`, `secret`, `token`, `auth`, ...):
//!   these do not occur inside ordinary words, so `PGPASSWORD`, `clientsecret` and
//!   `xauthtoken` are caught however they are joined;
//! - *ends with* `key` or `keys` ([`ENDING`]): `api_key`, `apiKey`, `privatekey`,
//!   `AWS_SECRET_ACCESS_KEY`, but not `keyboard` or `keyword`;
//! - *is* a short marker ([`WHOLE`]: `pass`, `pw`): as a substring these would mask
//!   `passage`, `compass`, `bypass` or `pwm`, so `db_pass` and `userPass` are secret but
//!   `passage` is not.
//!
//! Known false positives, accepted because a masked value costs less than a leaked one:
//! `author` and `authority` (they contain `auth`), `monkey`/`hockey` (end with `key`),
//! `sort_key`. Deliberately left out: `signature` (a webhook HMAC is bound to its one
//! payload, and the word names function signatures in code tools), `pin`, `private`
//! alone (`"private": true` is a repository flag far more often than a secret). A word
//! run together with no boundary (`userpass`) is found only through a long marker.

/// What a masked value becomes: the same for every secret, so its length leaks nothing.
pub const MASK: &str = "******";

/// Markers that make a name secret wherever they occur inside one of its words.
pub const WITHIN: &[&str] = &[
    "password",
    "passwd",
    "passphrase",
    "pwd",
    "secret",
    "token",
    "credential",
    "cookie",
    "session",
    "auth",
    "bearer",
    "jwt",
];

/// Endings that make a name secret when one of its words ends with them.
pub const ENDING: &[&str] = &["key", "keys"];

/// Markers that make a name secret only when one of its words is exactly the marker.
pub const WHOLE: &[&str] = &["pass", "pw"];

/// Returns true if and only if `name` names a secret by the rule of this module.
pub fn is_secret_name(name: &str) -> bool {
    words(name).any(|word| {
        WITHIN.iter().any(|m| word.contains(m))
            || ENDING.iter().any(|m| word.ends_with(m))
            || WHOLE.iter().any(|m| word == *m)
    })
}

/// Returns true if and only if `value` holds an object key that names a secret, at any
/// depth.
pub fn holds_secret(value: &serde_json::Value) -> bool {
    match value {
        serde_json::Value::Object(map) => map.iter().any(|(k, v)| is_secret_name(k) || holds_secret(v)),
        serde_json::Value::Array(items) => items.iter().any(holds_secret),
        _ => false,
    }
}

/// The words of `name`, lower-cased (see the module's rule).
fn words(name: &str) -> impl Iterator<Item = String> + '_ {
    name.split(|c: char| !c.is_alphanumeric())
        .filter(|piece| !piece.is_empty())
        .flat_map(split_piece)
}

/// Splits one run of letters and digits at case and digit boundaries.
fn split_piece(piece: &str) -> Vec<String> {
    let chars: Vec<char> = piece.chars().collect();
    let mut words = Vec::new();
    let mut start = 0;
    for i in 1..chars.len() {
        let (before, here) = (chars[i - 1], chars[i]);
        let after = chars.get(i + 1).copied();
        let camel = before.is_lowercase() && here.is_uppercase();
        let acronym_end = before.is_uppercase() && here.is_uppercase() && after.is_some_and(|a| a.is_lowercase());
        let digits = before.is_numeric() != here.is_numeric();
        if camel || acronym_end || digits {
            words.push(chars[start..i].iter().collect::<String>().to_lowercase());
            start = i;
        }
    }
    words.push(chars[start..].iter().collect::<String>().to_lowercase());
    words
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn names_split_into_words_at_case_digits_and_punctuation() {
        let split = |n: &str| words(n).collect::<Vec<_>>();
        assert_eq!(split("apiKey"), ["api", "key"]);
        assert_eq!(split("DBPass"), ["db", "pass"]);
        assert_eq!(split("AWS_SECRET_ACCESS_KEY"), ["aws", "secret", "access", "key"]);
        assert_eq!(split("x-api-key2"), ["x", "api", "key", "2"]);
        assert_eq!(split("XAuthToken"), ["x", "auth", "token"]);
    }

    #[test]
    fn credential_names_are_secret_in_any_spelling() {
        for name in [
            "password",
            "Password",
            "PGPASSWORD",
            "passwd",
            "pwd",
            "MYSQL_PWD",
            "pass",
            "db_pass",
            "userPass",
            "DBPass",
            "pw",
            "bearer",
            "bearer_token",
            "Authorization",
            "x-auth",
            "XAUTHORITY",
            "api_key",
            "apiKey",
            "x-api-key",
            "APIKEY",
            "apikey",
            "private_key",
            "privateKey",
            "privatekey",
            "AWS_SECRET_ACCESS_KEY",
            "client_secret",
            "clientSecret",
            "accessToken",
            "GITHUB_TOKEN",
            "refresh_tokens",
            "Cookie",
            "SESSION_ID",
            "credentials",
            "Passphrase",
            "jwt",
            "key",
            "keys",
        ] {
            assert!(is_secret_name(name), "{name} should be secret");
        }
    }

    #[test]
    fn ordinary_words_that_contain_a_short_marker_are_not_secret() {
        for name in [
            "passage",
            "compass",
            "bypass",
            "passenger",
            "keyboard",
            "keyword",
            "keywords",
            "message",
            "signature",
            "pwm",
            "LANG",
            "PATH",
            "description",
        ] {
            assert!(!is_secret_name(name), "{name} should not be secret");
        }
    }

    #[test]
    fn a_secret_key_anywhere_in_a_value_is_found() {
        assert!(holds_secret(&json!({"a": [{"b": {"token": 1}}]})));
        assert!(!holds_secret(&json!({"a": [{"b": {"text": "token"}}]})));
        assert!(!holds_secret(&json!("password")));
    }
}
