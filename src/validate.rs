//! Input validation: each tool's input schema compiled once per catalogue snapshot.
//!
//! A call is checked before anything runs, so a malformed call costs no quota and no
//! execution. Schemas are compiled with jsonschema built without its HTTP resolver, so a
//! `$ref` to a remote URL is a compile error, never a fetch. This module knows nothing of
//! MCP or of execution.

use serde_json::Value;

use crate::error::Error;
use crate::limits::VIOLATIONS_SHOWN;

/// One tool's compiled input schema.
#[derive(Debug)]
pub struct Compiled(jsonschema::Validator);

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

/// `"/count: 5000 is greater than the maximum of 1000 (rule: maximum)"`.
fn describe(error: &jsonschema::ValidationError<'_>) -> String {
    let path = error.instance_path().as_str();
    let path = if path.is_empty() { "(root)" } else { path };
    let schema_path = error.schema_path().as_str();
    let rule = schema_path
        .rsplit('/')
        .next()
        .filter(|r| !r.is_empty())
        .unwrap_or("schema");
    format!("{path}: {error} (rule: {rule})")
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
    fn remote_refs_are_never_fetched() {
        let schema = json!({"$ref": "https://example.com/schema.json"});
        assert!(compile(&schema).is_err());
    }

    #[test]
    fn valid_params_pass() {
        assert!(check(json!({"type":"object"}), json!({"x": 1})).is_ok());
    }
}
