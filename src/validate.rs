//! Input validation: each tool's input schema compiled on first use and kept in a
//! bounded cache ([`Validators`]).
//!
//! A call is checked before anything runs, so a malformed call costs no quota and no
//! execution. Schemas are compiled with jsonschema built without its HTTP resolver, so a
//! `$ref` to a remote URL is a compile error, never a fetch. A violation never quotes a
//! value that is, or holds, a secret (the rule of [`crate::secrets`]): the message
//! names the path and the rule and shows the mask in the value's place. This module
//! knows nothing of MCP or of execution.

use std::sync::Arc;

use serde_json::Value;

use crate::error::Error;
use crate::limits::VIOLATIONS_SHOWN;
use crate::secrets::{MASK, holds_secret, is_secret_name};

/// One tool's compiled input schema.
#[derive(Debug)]
pub struct Compiled(jsonschema::Validator);

/// Compiled input schemas, keyed by their JSON text, compiled on first use and kept up
/// to a count (`TOOLGATE_VALIDATORS`), least recently used out first. Compiling every
/// schema at load was most of a large catalogue's start and, held, most of its memory
/// (a 100,000-tool catalogue: ~850 MB); an agent calls a handful of tools. Keyed by
/// text, tools with the same schema share one validator, and a refresh that keeps a
/// schema keeps its validator. A schema that does not compile is kept as its reason, so
/// it is compiled (and reported) once, not on every call.
#[derive(Clone)]
pub struct Validators(moka::sync::Cache<Arc<str>, Result<Arc<Compiled>, Arc<str>>>);

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
    pub fn get(&self, text: &Arc<str>, report: impl FnOnce(&str)) -> Result<Arc<Compiled>, String> {
        self.0
            .get_with_by_ref(text, || {
                let schema: Value = serde_json::from_str(text).unwrap_or(Value::Null);
                compile(&schema).map(Arc::new).map_err(|e| {
                    report(&e);
                    Arc::from(e)
                })
            })
            .map_err(|e| e.to_string())
    }
}

/// Compiles a schema; the error says why the schema itself is unusable.
pub fn compile(schema: &Value) -> Result<Compiled, String> {
    if !schema.is_object() {
        return Err("input_schema must be a JSON object".to_owned());
    }
    jsonschema::validator_for(schema)
        .map(Compiled)
        .map_err(|e| format!("input_schema does not compile: {e}"))
}

impl Compiled {
    /// Checks `params`; the error names each broken field path and the rule it broke.
    pub fn check(&self, slug: &str, params: &Value) -> Result<(), Error> {
        let mut violations = Vec::new();
        let mut extra = 0usize;
        for error in self.0.iter_errors(params) {
            if violations.len() == VIOLATIONS_SHOWN {
                extra += 1;
                continue;
            }
            violations.push(describe(&error));
        }
        if violations.is_empty() {
            return Ok(());
        }
        if extra > 0 {
            violations.push(format!("and {extra} more"));
        }
        Err(Error::InvalidParams {
            slug: slug.to_owned(),
            violations,
        })
    }

    /// Returns true if and only if `params` satisfies the schema.
    pub fn is_valid(&self, params: &Value) -> bool {
        self.0.is_valid(params)
    }
}

/// `"/count: 5000 is greater than the maximum of 1000 (rule: maximum)"`; with the value
/// masked (`"/password: ****** is longer than 64 characters (rule: maxLength)"`) when
/// its path names a secret or the value holds a secret-keyed field.
fn describe(error: &jsonschema::ValidationError<'_>) -> String {
    let path = error.instance_path().as_str();
    let secret = path.split('/').any(is_secret_name) || holds_secret(error.instance());
    let path = if path.is_empty() { "(root)" } else { path };
    let schema_path = error.schema_path().as_str();
    let rule = schema_path
        .rsplit('/')
        .next()
        .filter(|r| !r.is_empty())
        .unwrap_or("schema");
    if secret {
        format!("{path}: {} (rule: {rule})", error.masked_with(MASK))
    } else {
        format!("{path}: {error} (rule: {rule})")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

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
                .contains("does not compile")
        );
        assert!(told.contains("does not compile"), "reported when compiled");
        assert!(cache.get(&broken, |_| panic!("compiled again")).is_err());
    }

    #[test]
    fn valid_params_pass() {
        assert!(check(json!({"type":"object"}), json!({"x": 1})).is_ok());
    }
}
