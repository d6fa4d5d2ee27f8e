//! The manifest of one tool (DESIGN §3), as it is read from a catalogue and served again.

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

/// The language a tool's source is written in. A wire type of the catalogue API (the
/// source answer names it too), so it is defined in [`crate::api`]: the catalogue depends
/// on the API module, never the reverse.
pub use crate::api::Runtime;

/// What a tool's `run` returns.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Returns {
    /// A JSON value: the run envelope's `result`, shown as JSON.
    #[default]
    Value,
    /// MCP content, `{"content": [block, ...]}` (text, image, audio, resource, resource
    /// link): a direct call answers these blocks as they are — an image stays an image —
    /// while `structuredContent` still carries the run envelope with them as `result`.
    Content,
}

impl Returns {
    fn is_value(&self) -> bool {
        *self == Returns::Value
    }
}

/// One example call of a tool.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Example {
    /// What the example shows, when the author said.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub name: Option<String>,
    /// The params object to send.
    pub params: Value,
}

/// A tool's manifest. Unknown fields are kept so a served catalogue loses nothing.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Manifest {
    /// The tool's identity and MCP name (when it fits the grammar).
    pub slug: String,
    /// A human-readable title.
    #[serde(default)]
    pub name: String,
    /// What the tool does; the first sentence stands alone.
    #[serde(default)]
    pub description: String,
    /// One word grouping related tools.
    #[serde(default)]
    pub category: String,
    /// Search terms.
    #[serde(default)]
    pub tags: Vec<String>,
    /// JSON Schema of the params object.
    #[serde(default = "empty_object_schema")]
    pub input_schema: Value,
    /// JSON Schema of the result.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// MCP tool annotations (readOnlyHint, ...).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Map<String, Value>>,
    /// Example calls.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub examples: Vec<Example>,
    /// The runtime of its source; absent means the tool runs only through an API.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runtime: Option<Runtime>,
    /// What `run` returns: a value (the default), or MCP content (`"content"`).
    #[serde(default, skip_serializing_if = "Returns::is_value")]
    pub returns: Returns,
    /// In a folder, the source file's name; in a `.json` catalogue, the code inline.
    /// Loaded catalogues move the code out of here, so a served manifest never carries it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source: Option<String>,
    /// Fields this version does not know, kept as they came.
    #[serde(flatten)]
    pub extra: Map<String, Value>,
}

fn empty_object_schema() -> Value {
    serde_json::json!({"type": "object", "properties": {}})
}

impl Manifest {
    /// The first sentence of the description, for one-line listings.
    pub fn summary(&self) -> &str {
        first_sentence(&self.description)
    }
}

/// The text up to and including the first sentence end (". ", "! ", "? " or a newline).
pub fn first_sentence(text: &str) -> &str {
    let text = text.trim();
    let bytes = text.as_bytes();
    for (i, b) in bytes.iter().enumerate() {
        if *b == b'\n' {
            return text[..i].trim_end();
        }
        if matches!(b, b'.' | b'!' | b'?') && bytes.get(i + 1).is_none_or(|n| n.is_ascii_whitespace()) {
            return &text[..=i];
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn first_sentence_stops_at_the_first_end() {
        assert_eq!(first_sentence("Checks a file. Then more."), "Checks a file.");
        assert_eq!(first_sentence("Version 1.2 works. Yes."), "Version 1.2 works.");
        assert_eq!(first_sentence("No end"), "No end");
        assert_eq!(first_sentence("Line one\nline two"), "Line one");
    }

    #[test]
    fn unknown_fields_survive_a_round_trip() {
        let raw = serde_json::json!({"slug": "a", "x_custom": 1});
        let m: Manifest = serde_json::from_value(raw).unwrap();
        assert_eq!(serde_json::to_value(&m).unwrap()["x_custom"], 1);
    }
}
