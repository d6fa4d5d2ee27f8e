//! Comparing two recorded runs: a verdict first, then field-by-field changes.
//!
//! A changed input is reported as the likely cause, because a result that moved because
//! its input moved is not a regression. A truncated payload can never yield "identical":
//! what was cut might differ.

use serde::Serialize;
use serde_json::Value;

use super::Record;

/// Most changes listed; the rest are counted.
pub const MAX_CHANGES: usize = 50;

/// The overall answer of a comparison.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum Verdict {
    /// Same tool, input, status and result.
    Identical,
    /// Same tool and input; the result or status differs.
    ResultsDiffer,
    /// Runs of two different tools: their fields are listed as they differ, but no
    /// difference has a likely cause (neither run is the other's input changed).
    ToolsDiffer,
    /// Same tool, different input (the likely cause of any result change).
    InputsDiffer,
    /// No difference in what was stored, but a payload was truncated, so equality cannot
    /// be claimed.
    Inconclusive,
}

impl Verdict {
    /// The verdict in words.
    pub fn sentence(self) -> &'static str {
        match self {
            Verdict::Identical => "identical: same tool, input and result",
            Verdict::ResultsDiffer => "results differ: same tool and input, different outcome",
            Verdict::ToolsDiffer => "different tools: the runs are of two tools, so their fields differ by nature",
            Verdict::InputsDiffer => "inputs differ: the changed input is the likely cause of any change in the result",
            Verdict::Inconclusive => {
                "inconclusive: no difference in the stored data, but a payload was truncated, so the runs may still differ"
            }
        }
    }
}

/// One changed field.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Change {
    /// Where: `slug`, `status`, `input.count`, `result.items[2].name`.
    pub path: String,
    /// The value in the first run (`null` when absent).
    pub from: Value,
    /// The value in the second run (`null` when absent).
    pub to: Value,
}

/// A comparison of two runs.
#[derive(Debug, Clone, Serialize)]
pub struct Diff {
    /// The overall answer.
    pub verdict: Verdict,
    /// True if and only if the tool or the input differs.
    pub inputs_changed: bool,
    /// True if and only if either run had a payload truncated.
    pub truncated: bool,
    /// The changes, inputs first, at most [`MAX_CHANGES`].
    pub changes: Vec<Change>,
    /// Changes beyond [`MAX_CHANGES`], counted.
    pub more: usize,
}

/// Compares `a` (from) with `b` (to).
pub fn diff(a: &Record, b: &Record) -> Diff {
    let mut changes = Vec::new();
    if a.slug != b.slug {
        changes.push(Change {
            path: "slug".into(),
            from: Value::from(a.slug.clone()),
            to: Value::from(b.slug.clone()),
        });
    }
    walk("input", &a.input, &b.input, &mut changes);
    let inputs_changed = !changes.is_empty();
    if a.status != b.status {
        changes.push(Change {
            path: "status".into(),
            from: Value::from(a.status.label()),
            to: Value::from(b.status.label()),
        });
    }
    walk("result", &a.result, &b.result, &mut changes);
    let truncated = a.truncated || b.truncated;
    let verdict = match (inputs_changed, changes.is_empty(), truncated) {
        _ if a.slug != b.slug => Verdict::ToolsDiffer,
        (true, _, _) => Verdict::InputsDiffer,
        (false, false, _) => Verdict::ResultsDiffer,
        (false, true, true) => Verdict::Inconclusive,
        (false, true, false) => Verdict::Identical,
    };
    let more = changes.len().saturating_sub(MAX_CHANGES);
    changes.truncate(MAX_CHANGES);
    Diff {
        verdict,
        inputs_changed,
        truncated,
        changes,
        more,
    }
}

/// Every leaf in which `b` differs from `a`, named from `root` (`root.key[2].key`): the
/// same walk a run comparison makes, for any two JSON values (an upstream tool's approved
/// and offered definitions, `toolgate upstream approve`).
pub fn value_changes(root: &str, a: &Value, b: &Value) -> Vec<Change> {
    let mut out = Vec::new();
    walk(root, a, b, &mut out);
    out
}

fn walk(path: &str, a: &Value, b: &Value, out: &mut Vec<Change>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            for (k, va) in x {
                walk(&format!("{path}.{k}"), va, y.get(k).unwrap_or(&Value::Null), out);
            }
            for (k, vb) in y.iter().filter(|(k, _)| !x.contains_key(*k)) {
                walk(&format!("{path}.{k}"), &Value::Null, vb, out);
            }
        }
        (Value::Array(x), Value::Array(y)) => {
            for i in 0..x.len().max(y.len()) {
                walk(
                    &format!("{path}[{i}]"),
                    x.get(i).unwrap_or(&Value::Null),
                    y.get(i).unwrap_or(&Value::Null),
                    out,
                );
            }
        }
        _ if a != b => out.push(Change {
            path: path.to_owned(),
            from: a.clone(),
            to: b.clone(),
        }),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::history::Status;
    use serde_json::json;

    fn run(input: Value, result: Value, truncated: bool) -> Record {
        Record {
            id: "r1".into(),
            slug: "echo".into(),
            status: Status::Ok,
            duration_ms: 1,
            started_at: String::new(),
            input,
            result,
            truncated,
            principal: None,
            request_id: None,
            parent_run_id: None,
            trace_id: None,
        }
    }

    #[test]
    fn identical_runs() {
        let a = run(json!({"n": 1}), json!({"x": [1, 2]}), false);
        let d = diff(&a, &a.clone());
        assert_eq!(d.verdict, Verdict::Identical);
        assert!(d.changes.is_empty());
    }

    #[test]
    fn a_changed_input_is_flagged_first() {
        let d = diff(
            &run(json!({"n": 1}), json!({"x": 1}), false),
            &run(json!({"n": 2}), json!({"x": 2}), false),
        );
        assert_eq!(d.verdict, Verdict::InputsDiffer);
        assert!(d.inputs_changed);
        assert_eq!(
            d.changes[0],
            Change {
                path: "input.n".into(),
                from: json!(1),
                to: json!(2)
            }
        );
        assert_eq!(d.changes[1].path, "result.x");
    }

    #[test]
    fn runs_of_two_tools_are_not_blamed_on_their_input() {
        let a = run(json!({"n": 1}), json!({"x": 1}), false);
        let mut b = run(json!({"n": 2}), json!({"x": 2}), false);
        b.slug = "other".into();
        let d = diff(&a, &b);
        assert_eq!(d.verdict, Verdict::ToolsDiffer);
        assert_eq!(d.changes[0].path, "slug");
    }

    #[test]
    fn results_differ_field_by_field() {
        let d = diff(
            &run(json!({}), json!({"a": [1, 2], "b": 1}), false),
            &run(json!({}), json!({"a": [1, 3]}), false),
        );
        assert_eq!(d.verdict, Verdict::ResultsDiffer);
        let paths: Vec<&str> = d.changes.iter().map(|c| c.path.as_str()).collect();
        assert_eq!(paths, vec!["result.a[1]", "result.b"]);
    }

    #[test]
    fn truncation_never_yields_identical() {
        let a = run(json!("{\"text\": \"xxx"), json!({}), true);
        let d = diff(&a, &a.clone());
        assert_eq!(d.verdict, Verdict::Inconclusive);
        assert!(d.truncated);
    }
}
