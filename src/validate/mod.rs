//! Input validation: each tool's input schema compiled on first use and kept in a
//! bounded cache ([`Validators`]).
//!
//! A call is checked before anything runs, so a malformed call costs no quota and no
//! execution. Schemas are compiled with jsonschema built without its HTTP resolver, so a
//! `$ref` to a remote URL is a compile error, never a fetch. A violation never quotes a
//! value that is, or holds, a secret (the rule of [`crate::secrets`]): the message
//! names the path and the rule and shows the mask in the value's place. This module
//! knows nothing of MCP or of execution.
//!
//! **Bounded by construction** (`shape.rs`): a schema whose checks unfold without bound
//! is refused when compiled; the verdict is one `is_valid` pass (jsonschema memoises
//! recursive references); patterns needing backtracking are matched within a length and
//! work budget (`keywords.rs`); and a failing call's errors are collected from a second
//! schema in which multi-branch applicators are opaque, so a recursive union failing deep
//! down yields one error per place, not one per combination of branches. At most
//! [`VIOLATIONS_SHOWN`] are described, each quoting at most [`VIOLATION_VALUE_CHARS`]
//! of its value.

mod describe;
mod keywords;
mod shape;

use std::sync::{Arc, OnceLock};

use serde_json::Value;

use crate::error::Error;
use crate::limits::{INLINE_UNION_DEPTH, INLINE_VALIDATION_VALUES, VIOLATIONS_SHOWN};

/// One tool's compiled input schema: the validator that decides, and the one that
/// explains a failure, compiled when the first call fails.
pub struct Compiled {
    verdict: jsonschema::Validator,
    /// The verdict schema, kept to compile the report from.
    schema: Value,
    report: OnceLock<Option<jsonschema::Validator>>,
    /// Where the schema has patterns that need backtracking (checked on bounded values).
    backtracking: Vec<String>,
    /// Whether the schema is a recursive union (`anyOf`/`oneOf` and a reference).
    branching: bool,
}

impl std::fmt::Debug for Compiled {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Compiled")
            .field("backtracking", &self.backtracking)
            .finish_non_exhaustive()
    }
}

/// Compiled input schemas, keyed by their JSON text, compiled on first use and kept up
/// to a count (`TOOLGATE_VALIDATORS`), least recently used out first. Compiling every
/// schema at load was most of a large catalogue's start and, held, most of its memory
/// (a 100,000-tool catalogue: ~850 MB); an agent calls a handful of tools. Keyed by
/// text, tools with the same schema share one validator, and a refresh that keeps a
/// schema keeps its validator. A schema that does not compile is kept as its reason, so
/// it is compiled (and reported) once, not on every call.
#[derive(Clone)]
pub struct Validators(moka::sync::Cache<Arc<str>, Result<Arc<Compiled>, SchemaError>>);

impl std::fmt::Debug for Validators {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Validators({} held)", self.0.entry_count())
    }
}

impl Validators {
    /// An empty cache holding at most `capacity` compiled schemas.
    pub fn new(capacity: u64) -> Validators {
        Validators(moka::sync::Cache::new(capacity))
    }

    /// The compiled form of the schema whose JSON text is `text`, compiled now unless it
    /// is held; the error says why the schema itself is unusable. Two threads asking for
    /// the same schema at once compile it once.
    /// `report` is told why when the schema is compiled now and does not compile.
    pub fn get(&self, text: &Arc<str>, report: impl FnOnce(&str)) -> Result<Arc<Compiled>, SchemaError> {
        self.0.get_with_by_ref(text, || {
            let schema: Value = serde_json::from_str(text).unwrap_or(Value::Null);
            compile(&schema).map(Arc::new).inspect_err(|e| report(&e.to_string()))
        })
    }
}

impl Validators {
    /// The compiled form of the schema whose JSON text is `text`, kept as
    /// [`Validators::get`] keeps it, when it compiles; `None` when it does not, and then
    /// nothing is kept or reported, so the first call of its tool still reports why.
    pub fn compiled(&self, text: &Arc<str>) -> Option<Arc<Compiled>> {
        self.0
            .try_get_with_by_ref(text, || {
                let schema: Value = serde_json::from_str(text).unwrap_or(Value::Null);
                compile(&schema).map(|c| Ok(Arc::new(c)))
            })
            .ok()?
            .ok()
    }
}

/// jsonschema's options with toolgate's bounded pattern keyword.
fn options() -> jsonschema::ValidationOptions<'static> {
    jsonschema::options().with_keyword(keywords::PATTERN, keywords::BoundedPattern::compile)
}

/// Why a tool's input schema is unusable: the tool cannot be called until it is fixed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SchemaError {
    /// The schema is not a JSON object.
    #[error("input_schema must be a JSON object")]
    NotAnObject,
    /// Checking it could cost without bound (too deep, too many branches, ...).
    #[error("input_schema is refused: {0}")]
    Refused(String),
    /// The validator library does not accept it.
    #[error("input_schema does not compile: {0}")]
    DoesNotCompile(String),
}

/// Compiles a schema; the error says why the schema itself is unusable (it does not
/// compile, or checking it could cost without bound).
pub fn compile(schema: &Value) -> Result<Compiled, SchemaError> {
    if !schema.is_object() {
        return Err(SchemaError::NotAnObject);
    }
    let facts = shape::inspect(schema).map_err(|e| SchemaError::Refused(e.to_string()))?;
    let verdict_schema = shape::verdict(schema);
    let verdict = options()
        .build(&verdict_schema)
        .map_err(|e| SchemaError::DoesNotCompile(e.to_string()))?;
    Ok(Compiled {
        verdict,
        schema: verdict_schema,
        report: OnceLock::new(),
        backtracking: facts.backtracking,
        branching: facts.branching,
    })
}

/// The report validator of a verdict schema: its subschemas compiled one by one for the
/// opaque checks, then the report schema with them. `None` when it does not compile (a
/// failure is then described by one generic line).
fn compile_report(verdict: &Value) -> Option<jsonschema::Validator> {
    let map = Arc::new(options().build_map(verdict).ok()?);
    let shared = Arc::new(verdict.clone());
    let report = shape::report(verdict);
    options()
        .with_keyword(keywords::OPAQUE, move |_, value, _| {
            keywords::Opaque::compile(value, &shared, &map)
        })
        .build(&report)
        .inspect_err(|e| tracing::debug!("the report schema does not compile: {e}"))
        .ok()
}

impl Compiled {
    /// Checks `params`; the error names each broken field path and the rule it broke.
    pub fn check(&self, slug: &str, params: &Value) -> Result<(), Error> {
        let (valid, costly) = keywords::metered(|| self.verdict.is_valid(params));
        if valid && !costly {
            return Ok(());
        }
        let violations = if costly {
            // Which value cost too much is what the report says, within the same bounds.
            self.violations(params)
                .into_iter()
                .filter(|v| v.ends_with("(rule: pattern)"))
                .collect()
        } else {
            self.violations(params)
        };
        Err(Error::InvalidParams {
            slug: slug.to_owned(),
            violations: if violations.is_empty() {
                vec![describe::generic(costly)]
            } else {
                violations
            },
        })
    }

    /// At most [`VIOLATIONS_SHOWN`] lines describing why `params` fails, and how many
    /// more there are.
    fn violations(&self, params: &Value) -> Vec<String> {
        let Some(report) = self.report.get_or_init(|| compile_report(&self.schema)) else {
            return Vec::new();
        };
        if self.is_heavy(params) {
            // Thousands of values may each break a rule: name the first, not all of them.
            let first = keywords::metered(|| report.validate(params).err().map(|e| describe::describe(&e))).0;
            return first.into_iter().collect();
        }
        let (mut lines, _) = keywords::metered(|| {
            let mut lines = Vec::new();
            let mut extra = 0usize;
            for error in report.iter_errors(params) {
                if lines.len() == VIOLATIONS_SHOWN {
                    extra += 1;
                } else {
                    lines.push(describe::describe(&error));
                }
            }
            if extra > 0 {
                lines.push(format!("and {extra} more"));
            }
            lines
        });
        lines.dedup();
        lines
    }

    /// Returns true if and only if `params` satisfies the schema (and could be checked
    /// within the bounds).
    pub fn is_valid(&self, params: &Value) -> bool {
        let (valid, costly) = keywords::metered(|| self.verdict.is_valid(params));
        valid && !costly
    }

    /// Where the schema has patterns that need a backtracking engine, as
    /// `"/path: pattern"`: values checked against them are bounded in length
    /// (`catalogue check` reports these).
    pub fn backtracking(&self) -> &[String] {
        &self.backtracking
    }

    /// Returns true if and only if checking `params` may take long enough that it should
    /// not run on an async worker: more than [`INLINE_VALIDATION_VALUES`] values, any
    /// long string against a schema with backtracking patterns, or values nested deeper
    /// than [`INLINE_UNION_DEPTH`] against a recursive union (whose branches are tried
    /// at every level, up to [`crate::limits::VALIDATION_UNFOLD`] checks).
    pub fn is_heavy(&self, params: &Value) -> bool {
        let mut budget = INLINE_VALIDATION_VALUES;
        let patterns = !self.backtracking.is_empty();
        heavy(params, &mut budget, patterns) || (self.branching && deeper_than(params, INLINE_UNION_DEPTH))
    }
}

/// Returns true if and only if `value` nests objects and arrays more than `levels` deep
/// (the walk stops there).
fn deeper_than(value: &Value, levels: usize) -> bool {
    let children: Box<dyn Iterator<Item = &Value>> = match value {
        Value::Array(items) => Box::new(items.iter()),
        Value::Object(map) => Box::new(map.values()),
        _ => return false,
    };
    levels == 0 || children.into_iter().any(|v| deeper_than(v, levels - 1))
}

/// Counts values (and long strings, where patterns backtrack: by the square of their
/// length in 64-byte units) down from `budget`; true once it runs out.
fn heavy(value: &Value, budget: &mut usize, patterns: bool) -> bool {
    let cost = match value {
        // A backtracking pattern (a lookahead, a backreference) may cost the square of
        // its subject's length: 4,000 characters under `(?=.*[A-Z])…` took ~28 ms.
        Value::String(s) if patterns => 1 + (s.len() / 64).saturating_pow(2),
        _ => 1,
    };
    if *budget < cost {
        return true;
    }
    *budget -= cost;
    match value {
        Value::Array(items) => items.iter().any(|v| heavy(v, budget, patterns)),
        Value::Object(map) => map.values().any(|v| heavy(v, budget, patterns)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn deep_values_under_a_recursive_union_are_heavy_and_elsewhere_are_not() {
        let union = json!({
            "properties": {"tree": {"$ref": "#/$defs/Node"}},
            "$defs": {
                "Node": {"anyOf": [{"$ref": "#/$defs/Item"}, {"$ref": "#/$defs/Group"}]},
                "Item": {"type": "integer"},
                "Group": {"properties": {"children": {"items": {"$ref": "#/$defs/Node"}}}}
            }
        });
        let tree = |depth: usize| {
            let mut t = json!(5);
            for _ in 0..depth {
                t = json!({"children": [t]});
            }
            json!({"tree": t})
        };
        let compiled = compile(&union).unwrap();
        assert!(!compiled.is_heavy(&tree(2)), "a shallow tree stays inline");
        assert!(compiled.is_heavy(&tree(30)), "a deep one goes to a heavy thread");
        let plain = compile(&json!({"type": "object"})).unwrap();
        assert!(!plain.is_heavy(&tree(30)), "depth alone is cheap without a union");
        assert!(deeper_than(&json!({"a": [1]}), 1) && !deeper_than(&json!({"a": [1]}), 2));
        assert!(!deeper_than(&json!(1), 0) && deeper_than(&json!([]), 0));
    }

    fn check(schema: Value, params: Value) -> Result<(), String> {
        compile(&schema).unwrap().check("t", &params).map_err(|e| e.to_string())
    }

    #[test]
    fn names_field_path_and_rule() {
        let schema = json!({"type":"object","properties":{"count":{"type":"integer","maximum":10}}});
        let err = check(schema, json!({"count": 50})).unwrap_err();
        assert!(err.contains("/count"), "{err}");
        assert!(err.contains("rule: maximum"), "{err}");
    }

    #[test]
    fn names_a_missing_required_field() {
        let schema = json!({"type":"object","properties":{"a":{"type":"string"}},"required":["a"]});
        let err = check(schema, json!({})).unwrap_err();
        assert!(err.contains("\"a\""), "{err}");
        assert!(err.contains("rule: required"), "{err}");
    }

    #[test]
    fn a_secret_value_is_never_quoted() {
        let schema = json!({
            "type": "object",
            "properties": {
                "password": {"type": "string", "maxLength": 5},
                "auth": {"type": "object", "properties": {"pwd": {"enum": ["a"]}}},
                "creds": {"type": "array", "maxItems": 0},
            },
        });
        let params = json!({
            "password": "hunter2-long",
            "auth": {"pwd": "hunter3-long"},
            "creds": [{"api_key": "hunter4-long"}],
        });
        let err = check(schema, params).unwrap_err();
        assert!(!err.contains("hunter"), "{err}");
        assert!(
            err.contains("/password: ****** is longer than 5 characters (rule: maxLength)"),
            "{err}"
        );
        assert!(err.contains("/auth/pwd"), "{err}");
        assert!(err.contains("/creds: ******"), "{err}");
    }

    #[test]
    fn an_ordinary_value_is_still_quoted() {
        let schema = json!({"type":"object","properties":{"passage":{"type":"string","maxLength":2}}});
        let err = check(schema, json!({"passage": "long text"})).unwrap_err();
        assert!(err.contains("\"long text\" is longer"), "{err}");
    }

    #[test]
    fn remote_refs_are_never_fetched() {
        let schema = json!({"$ref": "https://example.com/schema.json"});
        assert!(compile(&schema).is_err());
    }

    #[test]
    fn the_cache_compiles_once_per_schema_text_and_keeps_failures() {
        let cache = Validators::new(16);
        let text: Arc<str> = Arc::from(r#"{"type":"object","required":["a"]}"#);
        let first = cache.get(&text, |_| {}).unwrap();
        let again = cache.get(&Arc::from(&*text), |_| panic!("compiled again")).unwrap();
        assert!(Arc::ptr_eq(&first, &again), "the same text is compiled once");
        assert!(!first.is_valid(&json!({})));
        let broken: Arc<str> = Arc::from(r#"{"type":5}"#);
        let mut told = String::new();
        assert!(
            cache
                .get(&broken, |e| told = e.to_owned())
                .unwrap_err()
                .to_string()
                .contains("does not compile")
        );
        assert!(told.contains("does not compile"), "reported when compiled");
        assert!(cache.get(&broken, |_| panic!("compiled again")).is_err());
    }

    /// `{"tree": {"children": [{"children": [ ... leaf ... ]}]}}`, `depth` levels deep.
    fn tree(depth: usize, leaf: Value) -> Value {
        let mut v = leaf;
        for _ in 0..depth {
            v = json!({"children": [v]});
        }
        json!({"tree": v})
    }

    /// A recursive union, as pydantic writes `Node = Union[Item, Group]` when both have
    /// `children: list[Node]`, and an inline two-branch `anyOf` and `oneOf` of the same.
    fn unions() -> Vec<Value> {
        let recursive = |kind: &str| {
            let branch = json!({"type": "object", "properties": {"children": {"type": "array", "items": {"$ref": "#/$defs/N"}}}});
            let mut strict = branch.clone();
            strict["required"] = json!(["x"]);
            json!({"type": "object", "properties": {"tree": {"$ref": "#/$defs/N"}}, "$defs": {"N": {kind: [branch, strict]}}})
        };
        vec![
            json!({
                "type": "object",
                "properties": {"tree": {"$ref": "#/$defs/Node"}},
                "$defs": {
                    "Node": {"anyOf": [{"$ref": "#/$defs/Item"}, {"$ref": "#/$defs/Group"}]},
                    "Item": {"type": "object", "properties": {"name": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}},
                    "Group": {"type": "object", "properties": {"title": {"type": "string"}, "children": {"type": "array", "items": {"$ref": "#/$defs/Node"}}}},
                },
            }),
            recursive("anyOf"),
            recursive("oneOf"),
            recursive("allOf"),
        ]
    }

    #[test]
    fn a_deep_failure_under_a_recursive_union_is_one_short_error() {
        for schema in unions() {
            let compiled = compile(&schema).unwrap();
            for depth in [3, 20, 60] {
                assert!(compiled.is_valid(&tree(depth, json!({}))) || schema.to_string().contains("allOf"));
                let clock = std::time::Instant::now();
                let err = compiled.check("t", &tree(depth, json!(5))).unwrap_err().to_string();
                // jsonschema's own reporter took 5 s and 1.8 GB at depth 18.
                assert!(clock.elapsed() < std::time::Duration::from_secs(5), "{schema}");
                assert!(err.len() < 2_000, "{} bytes: {err}", err.len());
                assert!(err.contains("(rule: "), "{err}");
            }
        }
    }

    #[test]
    fn an_exponential_schema_is_refused_when_compiled() {
        let mut defs = serde_json::Map::new();
        defs.insert("d0".into(), json!({"type": "string"}));
        for i in 1..=30 {
            let prev = format!("#/$defs/d{}", i - 1);
            defs.insert(format!("d{i}"), json!({"anyOf": [{"$ref": prev}, {"$ref": prev}]}));
        }
        let refused = compile(&json!({"$ref": "#/$defs/d30", "$defs": defs}))
            .unwrap_err()
            .to_string();
        assert!(refused.contains("unfold into more than"), "{refused}");
    }

    #[test]
    fn a_lookahead_pattern_is_matched_only_on_bounded_values() {
        let pattern = "(?=.*[A-Z])(?=.*[0-9])(?=.*[!@#]).{12,}";
        let open =
            compile(&json!({"type": "object", "properties": {"pw": {"type": "string", "pattern": pattern}}})).unwrap();
        assert_eq!(open.backtracking().len(), 1);
        assert!(open.check("t", &json!({"pw": "Abcdefghij1!x"})).is_ok());
        let wrong = open
            .check("t", &json!({"pw": "abcdefghijklmn"}))
            .unwrap_err()
            .to_string();
        assert!(
            wrong.contains("does not match") && wrong.contains("rule: pattern"),
            "{wrong}"
        );
        // 200,000 characters took 70 s against this pattern.
        let long = open
            .check("t", &json!({"pw": "a".repeat(200_000)}))
            .unwrap_err()
            .to_string();
        assert!(long.contains("longer than the 4096 bytes"), "{long}");
        let capped = compile(
            &json!({"type": "object", "properties": {"pw": {"type": "string", "pattern": pattern, "maxLength": 64}}}),
        )
        .unwrap();
        let long = capped
            .check("t", &json!({"pw": "a".repeat(200_000)}))
            .unwrap_err()
            .to_string();
        assert!(
            long.contains("rule: maxLength") && !long.contains("rule: pattern"),
            "{long}"
        );
        // Many values within the length bound still share one budget.
        let many = json!({"type": "array", "items": {"type": "string", "pattern": pattern}});
        let many = compile(&many).unwrap();
        let matching = format!("A1!{}", "a".repeat(4_000));
        let values: Vec<Value> = (0..200).map(|_| json!(matching)).collect();
        let spent = many.check("t", &Value::Array(values)).unwrap_err().to_string();
        assert!(spent.contains("backtracking"), "{spent}");
        // A limit hit under `not` does not pass for a match.
        let negated = compile(&json!({"not": {"type": "string", "pattern": pattern}})).unwrap();
        assert!(!negated.is_valid(&json!("a".repeat(10_000))));
    }

    #[test]
    fn backtracking_names_are_refused_and_every_multi_branch_failure_is_described() {
        let names = compile(&json!({"patternProperties": {"^(?=a)": {}}}))
            .unwrap_err()
            .to_string();
        assert!(names.contains("patternProperties"), "{names}");
        let schema = json!({
            "type": "object",
            "properties": {
                "when": {"if": {"type": "string"}, "then": {"minLength": 3}, "else": {"type": "integer"}},
                "one": {"oneOf": [{"type": "integer"}, {"type": "number"}]},
                "has": {"type": "array", "contains": {"const": 1}},
                "dep": {"type": "object", "dependentSchemas": {"a": {"required": ["b"]}}},
                "map": {"type": "object", "patternProperties": {"^a": {"type": "string"}, "^ab": {"type": "string"}}},
            },
        });
        let err = compile(&schema)
            .unwrap()
            .check(
                "t",
                &json!({"when": "x", "one": 5, "has": [2], "dep": {"a": 1}, "map": {"ab": 1}}),
            )
            .unwrap_err()
            .to_string();
        for expected in [
            "/when",
            "rule: then",
            "/one",
            "more than one",
            "/has",
            "rule: contains",
            "/dep",
            "\"a\"",
            "/map",
        ] {
            assert!(err.contains(expected), "{expected} in {err}");
        }
    }

    #[test]
    fn a_quoted_value_is_cut() {
        let schema = json!({"type": "object", "properties": {"text": {"type": "integer"}}});
        let err = check(schema, json!({"text": "y".repeat(50_000)})).unwrap_err();
        assert!(err.len() < 1_000, "{err}");
        assert!(err.contains('…'), "{err}");
    }

    #[test]
    fn valid_params_pass() {
        assert!(check(json!({"type":"object"}), json!({"x": 1})).is_ok());
    }
}
