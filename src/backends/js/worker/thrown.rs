//! How a script's failure reads: a thrown value becomes `EXECUTION_ERROR` with its
//! message and where it was thrown, taken from QuickJS's stack.

use rquickjs::{CaughtError, Value};

use crate::error::Error;

/// An engine failure that is toolgate's fault, not the script's.
pub(super) fn internal(what: &str, e: CaughtError<'_>) -> Error {
    Error::Internal(format!("{what}: {e}"))
}

/// The error a script threw, as `EXECUTION_ERROR` with its message and where it was
/// thrown (`file:line:column` from QuickJS's stack).
pub(super) fn thrown(e: CaughtError<'_>, during: &str) -> Error {
    let message = match &e {
        CaughtError::Exception(ex) => {
            let text = ex.message().unwrap_or_default();
            let name: Option<String> = ex.get("name").ok();
            let head = match name {
                Some(n) if !n.is_empty() => format!("{n}: {text}"),
                _ => text,
            };
            match ex.stack().as_deref().and_then(first_frame) {
                Some(at) => format!("{head} (at {at})"),
                None => head,
            }
        }
        CaughtError::Value(v) => format!("Uncaught {}", describe_value(v)),
        CaughtError::Error(err) => format!("{err}"),
    };
    Error::Execution {
        message: format!("{message} [while {during}]"),
    }
}

/// `"index.js:12:11"` from a QuickJS stack line `"    at run (index.js:12:11)"`.
fn first_frame(stack: &str) -> Option<String> {
    stack.lines().find_map(|line| {
        let line = line.trim();
        let inner = line
            .rsplit_once('(')
            .map(|(_, r)| r.trim_end_matches(')'))
            .unwrap_or(line.trim_start_matches("at "));
        (inner.contains(':') && !inner.starts_with("native")).then(|| inner.to_owned())
    })
}

fn describe_value(v: &Value<'_>) -> String {
    if let Some(s) = v.as_string().and_then(|s| s.to_string().ok()) {
        return format!("\"{s}\"");
    }
    v.ctx()
        .json_stringify(v.clone())
        .ok()
        .flatten()
        .and_then(|s| s.to_string().ok())
        .unwrap_or_else(|| format!("{:?}", v.type_of()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_frame_reads_quickjs_stacks() {
        assert_eq!(
            first_frame("    at run (t/index.js:12:11)\n    at <eval>"),
            Some("t/index.js:12:11".into())
        );
        assert_eq!(first_frame("    at t/index.js:3:1\n"), Some("t/index.js:3:1".into()));
        assert_eq!(first_frame("    at <anonymous> (native)\n"), None);
    }
}
