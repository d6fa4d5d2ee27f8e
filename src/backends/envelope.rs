//! The advertised output schemas: each admits both the tool's success body and the one
//! failure body every tool answers with, so a client that checks `structuredContent`
//! against `outputSchema` even when `isError` is set (the TypeScript SDK does) accepts
//! every answer.
//!
//! Why failures keep their `structuredContent` rather than dropping it: the MCP surface (`docs/reference/mcp.md`) gives
//! programs `{success:false, error, code, retryable}` to branch on, and the spec lets an
//! error result carry structured content; the schema is what has to say so. A top-level
//! `anyOf` keyed on `success` does, while keeping `"type": "object"` at the root as MCP
//! requires of an output schema.

use serde_json::{Map, Value, json};

/// The fields every failure body carries (besides `success`).
const FAILURE_REQUIRED: [&str; 3] = ["error", "code", "retryable"];

/// `schema` (an object schema describing a family's success body) widened to admit the
/// failure body: its `required` list becomes one branch of a top-level `anyOf`, the
/// failure fields the other.
pub fn admit_failures(schema: Value) -> Value {
    let Value::Object(mut schema) = schema else {
        return schema;
    };
    let required = schema.remove("required").unwrap_or_else(|| json!([]));
    schema.insert("type".to_owned(), json!("object"));
    schema.insert(
        "anyOf".to_owned(),
        json!([{"required": required}, {"required": FAILURE_REQUIRED}]),
    );
    Value::Object(schema)
}

/// The schema of a catalogue tool's `structuredContent` (`docs/reference/mcp.md`): the run envelope
/// with the tool's own output schema under `result`, failures admitted.
///
/// It is kept lean because it is repeated for every listed tool: the envelope adds
/// ~190 bytes, and the tool's own schema loses its prose (`description`, `title`,
/// `examples`), which validation never reads and which the meta-tool's `schema` command
/// and the `tools/{slug}` resource still give whole. The tool's `$defs`/`definitions`
/// are hoisted to the root, so its local references (`#/$defs/...`) still resolve under
/// `result`.
pub fn run_output_schema(result: Option<&Value>) -> Value {
    let mut result = result.map(without_prose).unwrap_or_else(|| json!({}));
    let mut wrapper = json!({
        "type": "object",
        "properties": {"success": {"type": "boolean"}},
        "required": ["success"],
        "anyOf": [{"required": ["result", "duration_ms", "run_id"]}, {"required": FAILURE_REQUIRED}]
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

/// `schema` without the annotations validation ignores. A property *named* like one of
/// them holds a schema (an object), so only non-object values are dropped.
fn without_prose(schema: &Value) -> Value {
    match schema {
        Value::Object(map) => Value::Object(
            map.iter()
                .filter(|(k, v)| {
                    !matches!(k.as_str(), "description" | "title" | "examples" | "$comment") || v.is_object()
                })
                .map(|(k, v)| (k.clone(), without_prose(v)))
                .collect::<Map<String, Value>>(),
        ),
        Value::Array(items) => Value::Array(items.iter().map(without_prose).collect()),
        other => other.clone(),
    }
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
        assert!(!v.is_valid(&json!({"result": {"n": 1}, "duration_ms": 1, "run_id": "r1"})));
    }

    #[test]
    fn prose_goes_but_properties_named_like_it_stay() {
        let own = json!({
            "type": "object",
            "description": "What it returns.",
            "properties": {
                "title": {"type": "string", "description": "The title."},
                "n": {"type": "integer", "examples": [1]}
            },
            "required": ["title"]
        });
        let lean = run_output_schema(Some(&own));
        assert_eq!(
            lean["properties"]["result"],
            json!({"type": "object", "properties": {"title": {"type": "string"}, "n": {"type": "integer"}}, "required": ["title"]})
        );
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
