//! Redaction of runs before they are stored: values under credential-like keys (the one
//! rule of [`crate::secrets`]) are masked at any depth, nothing deeper than the walk goes
//! is kept at all, and a secret value found in the input is masked wherever else it
//! shows up in the stored run (a validation message, an echoed result, a thrown error).
//!
//! **Bounded whatever the input.** Finding an input's secret values walks the input, so
//! it stops at a budget of values, key bytes and secret values
//! ([`crate::limits::HISTORY_SCAN_ITEMS`] and the rest); an input past it is
//! [`Unscanned`] and the history keeps none of its text (nor the result's, which could
//! echo a secret not found). The stored text is written straight from the run with the
//! masks applied (`render.rs`), and the writing stops at the payload cap, so the work is
//! that of the stored text, not of the run: one 14 MB input of 1.2 million secret strings
//! once cost 22 s of CPU here, on the async runtime.

use std::collections::HashSet;

use aho_corasick::{AhoCorasick, MatchKind};
use serde_json::{Map, Value};

use crate::limits::{
    HISTORY_SCAN_ITEMS, HISTORY_SCAN_KEY_BYTES, HISTORY_SCRUB_MIN_CHARS, HISTORY_SECRET_BYTES, HISTORY_SECRET_VALUES,
};
use crate::secrets::is_secret_name;

pub use crate::secrets::MASK;

pub use super::render::{Mode, measure, store};

/// What a value nested deeper than [`MAX_DEPTH`] becomes.
pub const DEEP: &str = "[deep]";

/// Levels of nesting the walk inspects; values below are replaced, not inspected, so a
/// deeply nested payload cannot smuggle a credential past it.
pub const MAX_DEPTH: usize = 6;

/// A copy of `value` with secret-keyed values masked down to depth [`MAX_DEPTH`] and
/// anything deeper replaced by [`DEEP`]. The top-level object is depth 1. Its work is
/// that of its answer: masked and deep values are not walked.
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

/// Why the secret values of an input could not all be found within the scan budget.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unscanned {
    /// It holds more values and keys than the walk visits.
    Items(usize),
    /// Its keys hold more bytes than the walk reads.
    KeyBytes(usize),
    /// It holds more distinct secret values than are hunted for.
    Values(usize),
    /// Its secret values hold more bytes than are hunted for.
    Bytes(usize),
}

impl Unscanned {
    /// Why, in words, for the history entry that keeps no text of the run.
    pub fn describe(self) -> String {
        let grouped = |n: usize| crate::limits::grouped(n as u64);
        let why = match self {
            Unscanned::Items(n) => format!("the input holds more than {} values and keys", grouped(n)),
            Unscanned::KeyBytes(n) => format!("the input's keys hold more than {} bytes", grouped(n)),
            Unscanned::Values(n) => format!("the input holds more than {} distinct secret values", grouped(n)),
            Unscanned::Bytes(n) => format!("the input's secret values hold more than {} bytes", grouped(n)),
        };
        format!("{why}, more than history checks for secrets, so no text of this run is kept")
    }
}

/// How much of an input the hunt for secret values reads. By default, the `HISTORY_*`
/// limits of [`crate::limits`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScanBudget {
    /// Values and keys visited.
    pub items: usize,
    /// Bytes of keys read (each key's name is checked against the secret rule).
    pub key_bytes: usize,
    /// Distinct secret texts kept (a value and its escaped form count apart).
    pub values: usize,
    /// Bytes of those texts.
    pub bytes: usize,
}

impl Default for ScanBudget {
    fn default() -> Self {
        ScanBudget {
            items: HISTORY_SCAN_ITEMS,
            key_bytes: HISTORY_SCAN_KEY_BYTES,
            values: HISTORY_SECRET_VALUES,
            bytes: HISTORY_SECRET_BYTES,
        }
    }
}

/// The secret values of one input, ready to be hunted for in the text history stores:
/// found within a [`ScanBudget`], or why not.
#[derive(Debug)]
pub struct Secrets {
    scanned: Result<Patterns, Unscanned>,
}

/// The texts to mask and the matcher over them.
#[derive(Debug)]
pub(super) struct Patterns {
    /// One pass over a text whatever the number of secrets (leftmost-longest); `None`
    /// when there are none.
    pub(super) matcher: Option<AhoCorasick>,
    /// Characters of the longest pattern: how far past a cut a secret that begins before
    /// it can reach.
    pub(super) longest: usize,
}

impl Patterns {
    fn none() -> Patterns {
        Patterns {
            matcher: None,
            longest: 0,
        }
    }
}

impl Secrets {
    /// No secret to hunt for: a run refused before its input was read.
    pub fn none() -> Secrets {
        Secrets {
            scanned: Ok(Patterns::none()),
        }
    }

    /// Why the input's secrets could not all be found, if they could not.
    pub fn unscanned(&self) -> Option<Unscanned> {
        self.scanned.as_ref().err().copied()
    }

    /// The patterns, when the scan finished.
    pub(super) fn patterns(&self) -> Option<&Patterns> {
        self.scanned.as_ref().ok()
    }
}

/// Every value of `input` held under a secret key, at any depth (a secret object or
/// array gives all its strings and numbers), as text: strings as they are and as they
/// read inside JSON text (escaped), numbers as written. Values shorter than
/// [`HISTORY_SCRUB_MIN_CHARS`] are left out. Within the default [`ScanBudget`].
pub fn secret_values(input: &Value) -> Secrets {
    secret_values_within(input, ScanBudget::default())
}

/// [`secret_values`] within `budget`.
pub fn secret_values_within(input: &Value, budget: ScanBudget) -> Secrets {
    let mut scan = Scan {
        left: budget,
        budget,
        found: Vec::new(),
        seen: HashSet::new(),
    };
    let scanned = scan.visit(input, false).and_then(|()| {
        if scan.found.is_empty() {
            return Ok(Patterns::none());
        }
        let longest = scan.found.iter().map(|s| s.chars().count()).max().unwrap_or(0);
        // The patterns are within the byte budget, so this fails only on a limit of the
        // matcher itself: keep nothing rather than risk keeping a secret.
        let matcher = AhoCorasick::builder()
            .match_kind(MatchKind::LeftmostLongest)
            .build(&scan.found)
            .map_err(|_| Unscanned::Bytes(budget.bytes))?;
        Ok(Patterns {
            matcher: Some(matcher),
            longest,
        })
    });
    Secrets { scanned }
}

/// The walk of [`secret_values_within`]: what is left of its budget and what it found.
struct Scan {
    left: ScanBudget,
    budget: ScanBudget,
    found: Vec<String>,
    seen: HashSet<String>,
}

impl Scan {
    fn visit(&mut self, value: &Value, secret: bool) -> Result<(), Unscanned> {
        self.item()?;
        match value {
            Value::Object(map) => {
                for (k, v) in map {
                    self.item()?;
                    self.left.key_bytes = self
                        .left
                        .key_bytes
                        .checked_sub(k.len())
                        .ok_or(Unscanned::KeyBytes(self.budget.key_bytes))?;
                    self.visit(v, secret || is_secret_name(k))?;
                }
            }
            Value::Array(items) => {
                for v in items {
                    self.visit(v, secret)?;
                }
            }
            Value::String(s) if secret => self.keep(s)?,
            Value::Number(n) if secret => self.keep(&n.to_string())?,
            _ => {}
        }
        Ok(())
    }

    fn item(&mut self) -> Result<(), Unscanned> {
        self.left.items = self
            .left
            .items
            .checked_sub(1)
            .ok_or(Unscanned::Items(self.budget.items))?;
        Ok(())
    }

    /// Keeps one secret text, and its escaped form when that differs.
    fn keep(&mut self, text: &str) -> Result<(), Unscanned> {
        // Its length in bytes first: a text past the budget is never read further.
        if text.len() > self.left.bytes {
            return Err(Unscanned::Bytes(self.budget.bytes));
        }
        if text.chars().count() < HISTORY_SCRUB_MIN_CHARS || self.seen.contains(text) {
            return Ok(());
        }
        let quoted = Value::String(text.to_owned()).to_string();
        let escaped = &quoted[1..quoted.len() - 1];
        let forms: &[&str] = if escaped == text { &[text] } else { &[text, escaped] };
        for form in forms {
            self.left.values = self
                .left
                .values
                .checked_sub(1)
                .ok_or(Unscanned::Values(self.budget.values))?;
            self.left.bytes = self
                .left
                .bytes
                .checked_sub(form.len())
                .ok_or(Unscanned::Bytes(self.budget.bytes))?;
            self.found.push((*form).to_owned());
        }
        self.seen.insert(text.to_owned());
        Ok(())
    }
}

/// A copy of `value` in which every occurrence of any of `secrets` inside a string or an
/// object key is replaced by [`MASK`], as history stores a result: cut at the payload
/// cap (then the start of its JSON text). Nothing is kept when the secrets were not all
/// found.
pub fn scrub(value: &Value, secrets: &Secrets) -> Value {
    store(value, Mode::Result, secrets).0
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

    /// The input as history stores it.
    fn stored_input(input: &Value) -> (Value, bool) {
        store(input, Mode::Input, &secret_values(input))
    }

    #[test]
    fn the_stored_input_is_the_redacted_value_at_every_depth() {
        for depth in [1, 6, 7] {
            let input = json!({"note": "my key is hunter2-long-secret", "n": nested(depth)});
            let (stored, cut) = stored_input(&input);
            assert!(!cut);
            let expected = scrub(&redact(&input), &secret_values(&input));
            assert_eq!(stored, expected, "depth {depth}");
            assert!(!stored.to_string().contains("hunter2"), "{stored}");
        }
    }

    #[test]
    fn more_secret_values_than_the_budget_are_unscanned_and_the_walk_stops() {
        let many: Vec<String> = (0..2_000).map(|i| format!("secret-{i:06}")).collect();
        let input = json!({"password": many});
        let budget = ScanBudget {
            values: 100,
            ..ScanBudget::default()
        };
        assert_eq!(
            secret_values_within(&input, budget).unscanned(),
            Some(Unscanned::Values(100))
        );
        let numbers: Vec<u64> = (0..2_000).map(|i| 1_000_000 + i).collect();
        let input = json!({"pins": {"token": numbers}});
        assert_eq!(
            secret_values_within(&input, budget).unscanned(),
            Some(Unscanned::Values(100))
        );
        // Repeats of one secret are one secret.
        let input = json!({"password": vec!["the-same-secret"; 2_000]});
        assert_eq!(secret_values_within(&input, budget).unscanned(), None);
    }

    #[test]
    fn the_other_budgets_stop_the_walk_too() {
        let budget = ScanBudget {
            items: 1_000,
            key_bytes: 4_096,
            values: 100,
            bytes: 1_024,
        };
        let wide = json!({"list": vec![1; 5_000]});
        assert_eq!(
            secret_values_within(&wide, budget).unscanned(),
            Some(Unscanned::Items(1_000))
        );
        let long_key = json!({"k".repeat(5_000): 1});
        assert_eq!(
            secret_values_within(&long_key, budget).unscanned(),
            Some(Unscanned::KeyBytes(4_096))
        );
        let long_secret = json!({"password": "s".repeat(2_000)});
        assert_eq!(
            secret_values_within(&long_secret, budget).unscanned(),
            Some(Unscanned::Bytes(1_024))
        );
        assert!(
            Unscanned::Values(256)
                .describe()
                .contains("more than 256 distinct secret values")
        );
    }

    #[test]
    fn a_cut_never_leaves_the_start_of_a_secret() {
        let secret = "hunter2-".repeat(50);
        let input = json!({"password": secret});
        let secrets = secret_values(&input);
        // The secret straddles the cap at every offset around it.
        for pad in (crate::limits::HISTORY_PAYLOAD_CHARS - 420)..(crate::limits::HISTORY_PAYLOAD_CHARS + 20) {
            let result = json!({"echo": format!("{}{secret}{}", "x".repeat(pad), "y".repeat(1_000))});
            let (stored, cut) = store(&result, Mode::Result, &secrets);
            assert!(cut);
            let text = stored.as_str().unwrap();
            assert!(!text.contains("hunter2"), "a piece of the secret at pad {pad}");
            assert!(!text.ends_with('h') && !text.ends_with("hu"), "pad {pad}");
        }
    }

    #[test]
    fn a_huge_payload_is_written_only_as_far_as_the_cap() {
        let input = json!({"password": "hunter2-long", "text": "hunter2-long ".repeat(1_000_000)});
        let (stored, cut) = stored_input(&input);
        assert!(cut);
        let text = stored.as_str().unwrap();
        assert_eq!(text.chars().count(), crate::limits::HISTORY_PAYLOAD_CHARS);
        assert!(!text.contains("hunter2"));
        assert!(
            text.starts_with("{\"password\":\"******\",\"text\":\"******"),
            "{}",
            &text[..80]
        );
        // Masks shorten the text: the scrub budget ends it, short of the cap, still cut.
        let all_secret = json!({"password": "hunter2-long", "text": "hunter2-long".repeat(1_000_000)});
        let (stored, cut) = stored_input(&all_secret);
        assert!(cut);
        assert!(!stored.as_str().unwrap().contains("hunter2"));
    }

    #[test]
    fn sizes_are_measured_up_to_the_limit() {
        let v = json!({"a": [1, "two", null]});
        assert_eq!(measure(&v, 1_000), Some(v.to_string().len()));
        assert_eq!(measure(&v, 5), None);
        assert_eq!(measure(&json!("x".repeat(10_000_000)), 100), None);
    }
}
