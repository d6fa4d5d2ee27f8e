//! A ready-to-send params object for a tool: the author's first example that validates,
//! else one synthesised from the input schema and checked against it.

use serde_json::{Map, Value, json};

use super::snapshot::Tool;
use crate::validate::Compiled;

/// Params that pass the tool's own validator, or `None` when neither the examples nor
/// the synthesis produce any.
pub fn params_for(tool: &Tool) -> Option<Value> {
    params_from(
        tool.manifest.examples.iter().map(|e| e.params.clone()),
        &tool.manifest.input_schema.value(),
        &*tool.validator().ok()?,
    )
}

/// The first of `examples` that `validator` accepts, else params synthesised from
/// `schema` when they pass; `None` when nothing does. Serves every kind of tool.
pub fn params_from(examples: impl IntoIterator<Item = Value>, schema: &Value, validator: &Compiled) -> Option<Value> {
    examples
        .into_iter()
        .chain(std::iter::once(synthesise(schema, 0)))
        .find(|p| validator.is_valid(p))
}

/// Deepest nesting the synthesis follows; deeper required objects get `{}`.
const MAX_DEPTH: usize = 8;

/// A value for `schema`: its default, first example, const or first enum value, else the
/// smallest value of its type that meets its bounds, filling only required properties.
fn synthesise(schema: &Value, depth: usize) -> Value {
    let Some(s) = schema.as_object() else {
        return Value::Null;
    };
    for key in ["default", "const"] {
        if let Some(v) = s.get(key) {
            return v.clone();
        }
    }
    for key in ["examples", "enum"] {
        if let Some(v) = s.get(key).and_then(Value::as_array).and_then(|a| a.first()) {
            return v.clone();
        }
    }
    if let Some(first) = ["anyOf", "oneOf"]
        .iter()
        .find_map(|k| s.get(*k).and_then(Value::as_array).and_then(|a| a.first()))
    {
        return synthesise(first, depth + 1);
    }
    let ty = match s.get("type") {
        Some(Value::String(t)) => t.as_str(),
        Some(Value::Array(ts)) => ts
            .iter()
            .filter_map(Value::as_str)
            .find(|t| *t != "null")
            .unwrap_or("null"),
        _ if s.contains_key("properties") => "object",
        _ => "string",
    };
    let num = |k: &str| s.get(k).and_then(Value::as_f64);
    match ty {
        "object" => {
            let mut out = Map::new();
            if depth < MAX_DEPTH {
                let props = s.get("properties").and_then(Value::as_object);
                for name in s
                    .get("required")
                    .and_then(Value::as_array)
                    .into_iter()
                    .flatten()
                    .filter_map(Value::as_str)
                {
                    let sub = props.and_then(|p| p.get(name)).cloned().unwrap_or(json!({}));
                    out.insert(name.to_owned(), synthesise(&sub, depth + 1));
                }
            }
            Value::Object(out)
        }
        "array" => {
            let n = s.get("minItems").and_then(Value::as_u64).unwrap_or(0).min(16) as usize;
            let item = s.get("items").map(|i| synthesise(i, depth + 1)).unwrap_or(Value::Null);
            Value::Array(vec![item; n])
        }
        "integer" => {
            let low = num("minimum")
                .or(num("exclusiveMinimum").map(|x| x.floor() + 1.0))
                .unwrap_or(0.0);
            json!(low.ceil() as i64)
        }
        "number" => json!(
            num("minimum")
                .or(num("exclusiveMinimum").map(|x| x + 1.0))
                .unwrap_or(0.0)
        ),
        "boolean" => json!(false),
        "null" => Value::Null,
        _ => {
            let min = s.get("minLength").and_then(Value::as_u64).unwrap_or(0) as usize;
            let mut text = "example".to_owned();
            while text.chars().count() < min {
                text.push('x');
            }
            json!(text)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fills_required_fields_within_bounds() {
        let schema = json!({
            "type": "object",
            "properties": {
                "name": {"type": "string", "minLength": 10},
                "count": {"type": "integer", "minimum": 3},
                "mode": {"enum": ["a", "b"]},
                "optional": {"type": "string"}
            },
            "required": ["name", "count", "mode"]
        });
        assert_eq!(
            synthesise(&schema, 0),
            json!({"name": "examplexxx", "count": 3, "mode": "a"})
        );
    }
}
