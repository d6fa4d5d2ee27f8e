//! toolgate's own schema keywords, registered with jsonschema: the bounded `pattern`
//! that stands in for a pattern needing a backtracking engine, and the opaque check that
//! stands in, in the report schema, for an applicator checking several subschemas
//! against one value (`shape.rs` says where each goes).
//!
//! A backtracking pattern is matched only against a value of at most
//! [`PATTERN_SUBJECT_BYTES`], with fancy-regex's backtrack limit, within a per-call budget
//! of `bytes²` ([`PATTERN_WORK`]): a lookahead pattern is quadratic in its subject
//! (`(?=.*[A-Z])(?=.*[0-9]).{12,}` took 2.8 s at 40,000 characters). Once the budget is
//! spent or a limit is hit, the call's verdict is "too costly to check" whatever the
//! schema says (a `false` inside `not` would otherwise turn into a pass); [`metered`]
//! tells the caller.

use std::cell::Cell;
use std::sync::Arc;

use jsonschema::paths::Location;
use jsonschema::{Keyword, ValidationError, ValidatorMap};
use serde_json::{Map, Value};

use crate::limits::{PATTERN_BACKTRACK_LIMIT, PATTERN_SUBJECT_BYTES, PATTERN_WORK};

/// The keyword name of a bounded backtracking pattern.
pub(super) const PATTERN: &str = "x-toolgate-pattern";

/// The keyword name of an opaque multi-branch check (report schema only).
pub(super) const OPAQUE: &str = "x-toolgate-check";

/// Stands in a message for the offending value, which [`super::describe`] fills with a
/// short preview of it, or the mask when it is a secret.
pub(super) const VALUE: &str = "\u{1}value\u{1}";

/// Separates the rule from the text in a custom keyword's message.
pub(super) const RULE_END: char = '\u{1f}';

thread_local! {
    /// The pattern work left to the check running on this thread, and whether a limit
    /// was hit; `None` outside [`metered`].
    static METER: Cell<Option<(u64, bool)>> = const { Cell::new(None) };
}

/// Runs `check` with a fresh pattern budget; the flag is true if and only if a limit was
/// hit, so the result cannot be trusted.
pub(super) fn metered<T>(check: impl FnOnce() -> T) -> (T, bool) {
    let outer = METER.replace(Some((PATTERN_WORK, false)));
    let result = check();
    let spent = METER.replace(outer).is_some_and(|(_, hit)| hit);
    (result, spent)
}

/// Takes `work` from the running check's budget; false (and the limit marked hit) when
/// it is not there.
fn spend(work: u64) -> bool {
    METER.with(|m| match m.get() {
        Some((left, hit)) if left >= work => {
            m.set(Some((left - work, hit)));
            true
        }
        Some(_) => {
            m.set(Some((0, true)));
            false
        }
        None => true,
    })
}

/// Marks the running check's limit as hit.
fn hit() {
    METER.with(|m| {
        if let Some((left, _)) = m.get() {
            m.set(Some((left, true)));
        }
    });
}

/// A custom keyword's error: the rule it reports as, then the text.
fn error(rule: &str, text: String) -> ValidationError<'static> {
    ValidationError::custom(format!("{rule}{RULE_END}{text}"))
}

/// The outcome of matching one string.
enum Matched {
    Yes,
    No,
    /// Too long, over the budget or past the backtrack limit.
    TooCostly(String),
}

/// A `pattern` that needs backtracking, matched within bounds.
pub(super) struct BoundedPattern {
    regex: fancy_regex::Regex,
    pattern: String,
    /// The node's `maxLength`: a longer value fails that keyword, so it is not matched.
    max_chars: Option<u64>,
}

impl BoundedPattern {
    /// The keyword for `value` (the pattern) in `parent` (its node).
    pub(super) fn compile<'a>(
        parent: &'a Map<String, Value>,
        value: &'a Value,
        _at: Location,
    ) -> Result<Box<dyn for<'i> Keyword<'i>>, ValidationError<'a>> {
        let pattern = value
            .as_str()
            .ok_or_else(|| ValidationError::custom("pattern must be a string"))?;
        let translated = jsonschema_regex::to_rust_regex(pattern)
            .map_err(|()| ValidationError::custom(format!("{pattern:?} is not a regular expression")))?;
        let regex = fancy_regex::RegexBuilder::new(&translated)
            .backtrack_limit(PATTERN_BACKTRACK_LIMIT)
            .build()
            .map_err(|e| ValidationError::custom(format!("{pattern:?} does not compile: {e}")))?;
        Ok(Box::new(BoundedPattern {
            regex,
            pattern: pattern.to_owned(),
            max_chars: parent.get("maxLength").and_then(Value::as_u64),
        }))
    }

    fn matches(&self, text: &str) -> Matched {
        if let Some(max) = self.max_chars
            && (text.len() as u64 > max.saturating_mul(4) || text.chars().count() as u64 > max)
        {
            // `maxLength` fails it (and runs first in a verdict).
            return Matched::Yes;
        }
        if text.len() > PATTERN_SUBJECT_BYTES {
            hit();
            return Matched::TooCostly(format!(
                "is longer than the {PATTERN_SUBJECT_BYTES} bytes toolgate checks against a pattern that needs backtracking ({:?}); send a shorter value",
                self.pattern
            ));
        }
        let bytes = text.len() as u64;
        if !spend(bytes.saturating_mul(bytes).max(1)) {
            return Matched::TooCostly(format!(
                "was not checked against {:?}: the call's values already took the time toolgate gives patterns that need backtracking; send fewer or shorter values",
                self.pattern
            ));
        }
        match self.regex.is_match(text) {
            Ok(true) => Matched::Yes,
            Ok(false) => Matched::No,
            Err(_) => {
                hit();
                Matched::TooCostly(format!(
                    "takes more than {PATTERN_BACKTRACK_LIMIT} backtracking steps to check against {:?}",
                    self.pattern
                ))
            }
        }
    }
}

impl<'i> Keyword<'i> for BoundedPattern {
    fn validate(&self, instance: &'i Value) -> Result<(), ValidationError<'i>> {
        let Some(text) = instance.as_str() else { return Ok(()) };
        match self.matches(text) {
            Matched::Yes => Ok(()),
            Matched::No => Err(error("pattern", format!("{VALUE} does not match {:?}", self.pattern))),
            Matched::TooCostly(why) => Err(error("pattern", format!("{VALUE} {why}"))),
        }
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        instance
            .as_str()
            .is_none_or(|text| matches!(self.matches(text), Matched::Yes))
    }
}

/// What an opaque check asks of the verdict's compiled subschemas.
#[derive(Debug)]
enum Check {
    /// At least one of the `anyOf` branches.
    AnyOf(Vec<String>),
    /// Exactly one of the `oneOf` branches.
    OneOf(Vec<String>),
    /// Every `allOf` branch.
    AllOf(Vec<String>),
    /// `then` when `if` passes, else `else` (either may be absent).
    If {
        when: String,
        then: Option<String>,
        otherwise: Option<String>,
    },
    /// The schema of each dependency whose property is present.
    Dependent(Vec<(String, String)>),
    /// Between `min` and `max` items pass `contains`.
    Contains { schema: String, min: u64, max: Option<u64> },
    /// The whole node at `at`.
    Whole { kind: String, at: String },
}

/// An applicator of the verdict schema, checked as one keyword.
pub(super) struct Opaque {
    check: Check,
    map: Arc<ValidatorMap>,
}

impl Opaque {
    /// The keyword for `value` (`{"kind", "at"}`), looking the applicator up in `verdict`
    /// and its compiled subschemas in `map`.
    pub(super) fn compile(
        value: &Value,
        verdict: &Value,
        map: &Arc<ValidatorMap>,
    ) -> Result<Box<dyn for<'i> Keyword<'i>>, ValidationError<'static>> {
        let missing = || ValidationError::custom("the report schema names a node the verdict does not have");
        let kind = value.get("kind").and_then(Value::as_str).ok_or_else(missing)?;
        let at = value.get("at").and_then(Value::as_str).ok_or_else(missing)?;
        let node = verdict
            .pointer(at.trim_start_matches('#'))
            .and_then(Value::as_object)
            .ok_or_else(missing)?;
        let child = |parts: &[&str]| {
            let mut pointer = at.to_owned();
            for part in parts {
                pointer.push('/');
                pointer.push_str(&part.replace('~', "~0").replace('/', "~1"));
            }
            if map.contains_key(&pointer) {
                Ok(pointer)
            } else {
                Err(missing())
            }
        };
        let branches = |key: &str| -> Result<Vec<String>, ValidationError<'static>> {
            let n = node.get(key).and_then(Value::as_array).map_or(0, Vec::len);
            (0..n).map(|i| child(&[key, &i.to_string()])).collect()
        };
        let check = match kind {
            "anyOf" => Check::AnyOf(branches("anyOf")?),
            "oneOf" => Check::OneOf(branches("oneOf")?),
            "allOf" => Check::AllOf(branches("allOf")?),
            "if" => Check::If {
                when: child(&["if"])?,
                then: node.contains_key("then").then(|| child(&["then"])).transpose()?,
                otherwise: node.contains_key("else").then(|| child(&["else"])).transpose()?,
            },
            "dependentSchemas" | "dependencies" => Check::Dependent(
                node.get(kind)
                    .and_then(Value::as_object)
                    .into_iter()
                    .flatten()
                    .filter(|(_, v)| v.is_object() || v.is_boolean())
                    .map(|(name, _)| Ok((name.clone(), child(&[kind, name])?)))
                    .collect::<Result<_, ValidationError<'static>>>()?,
            ),
            "contains" => Check::Contains {
                schema: child(&["contains"])?,
                min: node.get("minContains").and_then(Value::as_u64).unwrap_or(1),
                max: node.get("maxContains").and_then(Value::as_u64),
            },
            _ => {
                if !map.contains_key(at) {
                    return Err(missing());
                }
                Check::Whole {
                    kind: kind.to_owned(),
                    at: at.to_owned(),
                }
            }
        };
        Ok(Box::new(Opaque {
            check,
            map: map.clone(),
        }))
    }

    fn passes(&self, pointer: &str, instance: &Value) -> bool {
        self.map.get(pointer).is_none_or(|v| v.is_valid(instance))
    }

    /// Why `instance` fails the check, or `None` when it passes.
    fn failure(&self, instance: &Value) -> Option<(String, String)> {
        match &self.check {
            Check::AnyOf(all) => (!all.iter().any(|b| self.passes(b, instance))).then(|| {
                let text = format!("{VALUE} is not valid under any of the schemas listed in the 'anyOf' keyword");
                ("anyOf".to_owned(), text)
            }),
            Check::OneOf(all) => {
                let passing = all.iter().filter(|b| self.passes(b, instance)).take(2).count();
                let text = match passing {
                    1 => return None,
                    0 => format!("{VALUE} is not valid under any of the schemas listed in the 'oneOf' keyword"),
                    _ => format!("{VALUE} is valid under more than one of the schemas listed in the 'oneOf' keyword"),
                };
                Some(("oneOf".to_owned(), text))
            }
            Check::AllOf(all) => (!all.iter().all(|b| self.passes(b, instance))).then(|| {
                let text = format!("{VALUE} is not valid under all of the schemas listed in the 'allOf' keyword");
                ("allOf".to_owned(), text)
            }),
            Check::If { when, then, otherwise } => {
                let (branch, name) = if self.passes(when, instance) {
                    (then, "then")
                } else {
                    (otherwise, "else")
                };
                let branch = branch.as_deref()?;
                (!self.passes(branch, instance)).then(|| {
                    let text = format!("{VALUE} does not match the '{name}' schema its 'if' schema chooses");
                    (name.to_owned(), text)
                })
            }
            Check::Dependent(all) => {
                let object = instance.as_object()?;
                let (name, _) = all
                    .iter()
                    .find(|(name, schema)| object.contains_key(name) && !self.passes(schema, instance))?;
                let text = format!("{VALUE} does not match the schema its property {name:?} requires");
                Some(("dependentSchemas".to_owned(), text))
            }
            Check::Contains { schema, min, max } => {
                let items = instance.as_array()?;
                let limit = max.map_or(*min, |m| m.saturating_add(1).max(*min));
                let found = items
                    .iter()
                    .filter(|item| self.passes(schema, item))
                    .take(usize::try_from(limit).unwrap_or(usize::MAX))
                    .count() as u64;
                if found < *min {
                    let items = crate::plural::count(*min as usize, "item that matches", "items that match");
                    let text = format!("{VALUE} has fewer than {items} its 'contains' schema");
                    return Some(("contains".to_owned(), text));
                }
                max.filter(|m| found > *m).map(|m| {
                    let items = crate::plural::count(m as usize, "item that matches", "items that match");
                    let text = format!("{VALUE} has more than {items} its 'contains' schema");
                    ("maxContains".to_owned(), text)
                })
            }
            Check::Whole { kind, at } => (!self.passes(at, instance)).then(|| {
                let text = format!("{VALUE} does not match the schema at {at}");
                (kind.clone(), text)
            }),
        }
    }
}

impl<'i> Keyword<'i> for Opaque {
    fn validate(&self, instance: &'i Value) -> Result<(), ValidationError<'i>> {
        match self.failure(instance) {
            None => Ok(()),
            Some((rule, text)) => Err(error(&rule, text)),
        }
    }

    fn is_valid(&self, instance: &'i Value) -> bool {
        self.failure(instance).is_none()
    }
}
