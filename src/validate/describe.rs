//! One line per violation: `"/count: 5000 is greater than the maximum of 1000 (rule:
//! maximum)"`. The value is quoted at most [`VIOLATION_VALUE_CHARS`] characters long (a
//! 14 MB argument would otherwise be copied into every line), and masked
//! (`"/password: ****** is longer than 64 characters (rule: maxLength)"`) when its path
//! names a secret or it holds a secret-keyed field.

use std::io::Write;

use jsonschema::error::ValidationErrorKind;
use serde_json::Value;

use super::keywords::{RULE_END, VALUE};
use crate::limits::{PATTERN_WORK, VIOLATION_VALUE_CHARS};
use crate::secrets::{MASK, holds_secret, is_secret_name};

/// The line for one error of jsonschema's or of toolgate's keywords.
pub(super) fn describe(error: &jsonschema::ValidationError<'_>) -> String {
    let path = error.instance_path().as_str();
    let secret = path.split('/').any(is_secret_name) || holds_secret(error.instance());
    let shown_path = if path.is_empty() { "(root)" } else { path };
    let (rule, text) = match error.kind() {
        ValidationErrorKind::Custom { message, .. } => match message.split_once(RULE_END) {
            Some((rule, text)) => (rule.to_owned(), text.to_owned()),
            None => ("schema".to_owned(), message.clone()),
        },
        _ => {
            let schema_path = error.schema_path().as_str();
            let rule = schema_path
                .rsplit('/')
                .next()
                .filter(|r| !r.is_empty())
                .unwrap_or("schema");
            (rule.to_owned(), error.masked_with(VALUE).to_string())
        }
    };
    let value = if secret {
        MASK.to_owned()
    } else {
        preview(error.instance())
    };
    format!("{shown_path}: {} (rule: {rule})", text.replace(VALUE, &value))
}

/// The line when no error can be named: the report schema found none the verdict did.
pub(super) fn generic(costly: bool) -> String {
    if costly {
        format!(
            "(root): the values are too costly to check against the schema's patterns that need backtracking (a budget of {PATTERN_WORK} byte² a call); send fewer or shorter values (rule: pattern)"
        )
    } else {
        "(root): the arguments do not match the input schema (rule: schema)".to_owned()
    }
}

/// `value`'s JSON text, cut after [`VIOLATION_VALUE_CHARS`] characters with `…`.
fn preview(value: &Value) -> String {
    let mut out = Capped {
        text: Vec::new(),
        cap: VIOLATION_VALUE_CHARS * 4,
    };
    let complete = serde_json::to_writer(&mut out, value).is_ok();
    let text = String::from_utf8_lossy(&out.text);
    let mut chars = text.char_indices();
    match chars.nth(VIOLATION_VALUE_CHARS) {
        Some((cut, _)) => format!("{}…", &text[..cut]),
        None if complete => text.into_owned(),
        None => format!("{text}…"),
    }
}

/// A writer that refuses past `cap` bytes, so serialising a huge value stops early.
struct Capped {
    text: Vec<u8>,
    cap: usize,
}

impl Write for Capped {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let room = self.cap.saturating_sub(self.text.len());
        if room == 0 {
            return Err(std::io::Error::other("preview is full"));
        }
        let n = room.min(buf.len());
        self.text.extend_from_slice(&buf[..n]);
        Ok(n)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn a_preview_is_cut_and_says_so() {
        assert_eq!(preview(&json!("short")), "\"short\"");
        let long = preview(&json!({"text": "x".repeat(100_000)}));
        assert!(long.ends_with('…'), "{long}");
        assert_eq!(long.chars().count(), VIOLATION_VALUE_CHARS + 1);
    }
}
