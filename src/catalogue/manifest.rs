//! The manifest of one tool (`docs/guides/catalogues.md`), as it is read from a catalogue and served again.

use std::sync::Arc;

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
    /// Requests a user would type when they need this tool ("check my dotenv"), indexed
    /// by search beside the description.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub phrasings: Vec<String>,
    /// JSON Schema of the params object, kept as text until it is asked for.
    #[serde(default = "empty_object_schema")]
    pub input_schema: Json,
    /// JSON Schema of the result, kept as text until it is asked for.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Json>,
    /// MCP tool annotations (readOnlyHint, ...): a JSON object, held as its text like the
    /// schemas (as a map, one `{"readOnlyHint": true}` took 312 bytes of heap per tool).
    #[serde(default, deserialize_with = "object_json", skip_serializing_if = "Option::is_none")]
    pub annotations: Option<Json>,
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

/// An optional JSON object (`null` or absent is `None`; any other value is refused), as
/// its compact text.
pub(super) fn object_json<'de, D: serde::Deserializer<'de>>(deserializer: D) -> Result<Option<Json>, D::Error> {
    let map = Option::<Map<String, Value>>::deserialize(deserializer)?;
    Ok(map.map(object_text))
}

/// A JSON object as the compact text a manifest holds it in (both manifest readers).
pub(super) fn object_text(map: Map<String, Value>) -> Json {
    Json::from(&Value::Object(map))
}

/// The input schema of a manifest that gives none: an object with no properties.
pub(super) fn empty_object_schema() -> Json {
    Json::from(&serde_json::json!({"type": "object", "properties": {}}))
}

/// A JSON value held as its compact text, parsed when it is asked for. A manifest's
/// schemas are read on few paths (a call's first validation, a listing page, a
/// `schema` answer) but held for every tool: as text a 100,000-tool catalogue's
/// schemas take a tenth of the memory they take as `Value` trees. Clones share the text.
///
/// The text never holds an object with a key twice: it is written from a `Value` (which
/// keeps one of them) or by `parse.rs`, which refuses such an object. So a reader of the
/// text need not decide which of two keys counts (`trim::Params` relies on it).
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Json(Arc<str>);

impl Json {
    /// A value's compact text, as `Value::to_string` writes it, without a key twice in
    /// any object (see the type's documentation).
    pub(super) fn from_compact(text: &str) -> Json {
        Json(Arc::from(text))
    }

    /// The value. The text was written from a value, so it always parses; `null` if it
    /// ever did not.
    pub fn value(&self) -> Value {
        serde_json::from_str(&self.0).unwrap_or(Value::Null)
    }

    /// The compact JSON text.
    pub fn text(&self) -> &str {
        &self.0
    }

    /// The compact JSON text, shared (what the validator cache is keyed by).
    pub fn shared(&self) -> &Arc<str> {
        &self.0
    }

    /// Returns true if and only if the value is a JSON object.
    pub fn is_object(&self) -> bool {
        self.0.starts_with('{')
    }
}

impl From<&Value> for Json {
    fn from(value: &Value) -> Json {
        Json(Arc::from(value.to_string()))
    }
}

impl std::fmt::Debug for Json {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl Serialize for Json {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        self.value().serialize(serializer)
    }
}

impl<'de> Deserialize<'de> for Json {
    fn deserialize<D: serde::Deserializer<'de>>(deserializer: D) -> Result<Json, D::Error> {
        Value::deserialize(deserializer).map(|v| Json::from(&v))
    }
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
    fn schemas_held_as_text_round_trip_in_order() {
        let raw =
            serde_json::json!({"slug": "a", "input_schema": {"type": "object", "properties": {"z": {}, "a": {}}}});
        let m: Manifest = serde_json::from_value(raw.clone()).unwrap();
        assert!(m.input_schema.is_object());
        assert_eq!(
            m.input_schema.text(),
            r#"{"type":"object","properties":{"z":{},"a":{}}}"#
        );
        assert_eq!(serde_json::to_value(&m).unwrap()["input_schema"], raw["input_schema"]);
        let bare: Manifest = serde_json::from_value(serde_json::json!({"slug": "b", "input_schema": 5})).unwrap();
        assert!(!bare.input_schema.is_object());
    }

    #[test]
    fn unknown_fields_survive_a_round_trip() {
        let raw = serde_json::json!({"slug": "a", "x_custom": 1});
        let m: Manifest = serde_json::from_value(raw).unwrap();
        assert_eq!(serde_json::to_value(&m).unwrap()["x_custom"], 1);
    }
}
