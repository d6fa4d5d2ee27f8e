//! The advertised output schemas: each admits both the tool's success body and the one
//! failure body every tool answers with, so a client that checks `structuredContent`
//! against `outputSchema` even when `isError` is set (the TypeScript SDK does) accepts
//! every answer.
//!
//! Why failures keep their `structuredContent` rather than dropping it: DESIGN §5 gives
//! programs `{success:false, error, code, retryable}` to branch on, and the spec lets an
//! error result carry structured content; the schema is what has to say so. A top-level
//! `anyOf` keyed on `success` does, while keeping `"type": "object"` at the root as MCP
//! requires of an output schema.

use serde_json::{Map, Value, json};

/// The branch every failure body satisfies.
fn failure_branch() -> Value {
    json!({"properties": {"success": {"const": false}}, "required": ["success", "error", "code", "retryable"]})
}

/// The failure fields, merged into a schema's properties where it does not define them.
fn failure_properties() -> [(&'static str, Value); 4] {
    [
        ("error", json!({"type": "string"})),
        ("code", json!({"type": "string"})),
        ("retryable", json!({"type": "boolean"})),
        ("run_id", json!({"type": "string"})),
    ]
}

/// `schema` (an object schema describing a family's success body) widened to admit the
/// failure body: its `required` list becomes the success branch of a top-level `anyOf`.
pub fn admit_failures(schema: Value) -> Value {
    let Value::Object(mut schema) = schema else {
        return schema;
    };
    let required = schema.remove("required").unwrap_or_else(|| json!([]));
    let props = schema.entry("properties").or_insert_with(|| Value::Object(Map::new()));
    if let Value::Object(props) = props {
        for (name, rule) in failure_properties() {
            props.entry(name).or_insert(rule);
        }
    }
    schema.insert("type".to_owned(), json!("object"));
    schema.insert("anyOf".to_owned(), json!([{"required": required}, failure_branch()]));
    Value::Object(schema)
}

/// The schema of a catalogue tool's `structuredContent` (DESIGN §5): the run envelope
/// with the tool's own output schema under `result`, failures admitted.
///
/// The tool's `$defs`/`definitions` are hoisted to the root, so its local references
/// (`#/$defs/...`) still resolve once it sits under `result`.
pub fn run_output_schema(result: Option<&Value>) -> Value {
    let mut result = result.cloned().unwrap_or_else(|| json!({}));
    let mut wrapper = json!({
        "type": "object",
        "properties": {
            "success": {"type": "boolean"},
            "duration_ms": {"type": "integer", "minimum": 0},
            "run_id": {"type": "string"},
            "stdout": {"type": "string"},
            "stderr": {"type": "string"},
            "truncated": {"type": "boolean"},
            "error": {"type": "string"},
            "code": {"type": "string"},
            "retryable": {"type": "boolean"}
        },
        "anyOf": [
            {"properties": {"success": {"const": true}}, "required": ["success", "result", "duration_ms", "run_id"]},
            failure_branch()
        ]
    });
    if let Some(own) = result.as_object_mut() {
        for key in ["$defs", "definitions"] {
            if let Some(defs) = own.remove(key) {
                wrapper[key] = defs;
            }
        }
        if let Some(dialect) = own.remove("$schema") {
            wrapper["$schema"] = dialect;
        }
    }
    wrapper["properties"]["result"] = result;
    wrapper
}

#[cfg(test)]
mod tests {
    use super::*;

    fn validator(schema: &Value) -> jsonschema::Validator {
        jsonschema::validator_for(schema).unwrap()
    }

    #[test]
    fn local_refs_still_resolve_inside_the_run_envelope() {
        let own = json!({
            "type": "object",
            "properties": {"score": {"$ref": "#/$defs/score"}},
            "required": ["score"],
            "$defs": {"score": {"type": "integer", "maximum": 4}}
        });
        let v = validator(&run_output_schema(Some(&own)));
        let good = json!({"success": true, "result": {"score": 3}, "duration_ms": 1, "run_id": "r1"});
        let bad = json!({"success": true, "result": {"score": 9}, "duration_ms": 1, "run_id": "r1"});
        assert!(v.is_valid(&good));
        assert!(!v.is_valid(&bad));
    }

    #[test]
    fn the_envelope_admits_failures_but_not_half_answers() {
        let own = json!({"type": "object", "required": ["n"]});
        let v = validator(&run_output_schema(Some(&own)));
        let failure =
            json!({"success": false, "error": "bad", "code": "INVALID_PARAMS", "retryable": false, "run_id": "r2"});
        assert!(v.is_valid(&failure));
        assert!(!v.is_valid(&json!({"success": true, "duration_ms": 1, "run_id": "r1"})));
        assert!(!v.is_valid(&json!({"success": false, "error": "bad"})));
        assert!(!v.is_valid(&json!({"success": true, "error": "x", "code": "C", "retryable": false})));
    }

    #[test]
    fn a_family_schema_admits_failures_and_keeps_its_own_rules() {
        let own = json!({
            "type": "object",
            "properties": {"success": {"type": "boolean"}, "output": {"type": "string"}},
            "required": ["success", "output"]
        });
        let v = validator(&admit_failures(own));
        assert!(v.is_valid(&json!({"success": true, "output": "x"})));
        assert!(v.is_valid(&json!({"success": false, "error": "e", "code": "TIMEOUT", "retryable": true})));
        assert!(!v.is_valid(&json!({"success": true})));
        assert!(!v.is_valid(&json!({"success": true, "output": 5})));
    }
}
