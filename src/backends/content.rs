//! The check of what a tool that returns MCP content (`"returns": "content"` in its
//! manifest) gave back: `{"content": [block, ...]}`, each block one MCP content block
//! (text, image, audio, resource, resource link), so a direct call can answer them as
//! they are and no client meets a block it cannot read.

use rmcp::model::ContentBlock;
use serde_json::Value;

use crate::error::Error;

/// The blocks of `value`, checked, or why `slug`'s answer is not MCP content.
pub(super) fn blocks(slug: &str, value: &Value) -> Result<Vec<Value>, Error> {
    let refuse = |why: String| Error::Execution {
        message: format!(
            "{slug} says it returns MCP content (\"returns\": \"content\"), so run must return {{\"content\": [blocks]}}, but {why}"
        ),
    };
    let Some(object) = value.as_object() else {
        return Err(refuse(format!("it returned {}", kind(value))));
    };
    if let Some(other) = object.keys().find(|k| k.as_str() != "content") {
        return Err(refuse(format!("the object has a field \"{other}\" besides content")));
    }
    let Some(Value::Array(blocks)) = object.get("content") else {
        return Err(refuse("its content is not an array".to_owned()));
    };
    if blocks.is_empty() {
        return Err(refuse("its content is empty".to_owned()));
    }
    for (i, block) in blocks.iter().enumerate() {
        if let Err(e) = serde_json::from_value::<ContentBlock>(block.clone()) {
            return Err(refuse(format!("block {i} is not an MCP content block: {e}")));
        }
    }
    Ok(blocks.clone())
}

/// What kind of JSON value `v` is, for a message.
fn kind(v: &Value) -> &'static str {
    match v {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn every_kind_of_block_passes_and_anything_else_is_refused_saying_why() {
        let good = json!({"content": [
            {"type": "text", "text": "hi"},
            {"type": "image", "data": "iVBORw0KGgo=", "mimeType": "image/png"},
            {"type": "audio", "data": "UklGRg==", "mimeType": "audio/wav"},
            {"type": "resource", "resource": {"uri": "test://x", "mimeType": "text/plain", "text": "t"}},
        ]});
        assert_eq!(blocks("t", &good).unwrap().len(), 4);
        for (bad, said) in [
            (json!("text"), "it returned a string"),
            (json!({"content": "x"}), "not an array"),
            (json!({"content": []}), "empty"),
            (
                json!({"content": [{"type": "text"}], "extra": 1}),
                "\"extra\" besides content",
            ),
            (
                json!({"content": [{"type": "image", "data": "x"}]}),
                "block 0 is not an MCP content block",
            ),
            (json!({"content": [{"type": "video", "data": "x"}]}), "block 0"),
        ] {
            let e = blocks("t", &bad).unwrap_err();
            assert_eq!(e.code(), "EXECUTION_ERROR");
            assert!(e.to_string().contains(said), "{bad}: {e}");
        }
    }
}
