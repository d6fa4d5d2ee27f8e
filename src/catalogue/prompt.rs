//! A catalogue's own prompts: declared arguments and fixed messages whose strings carry
//! `{arg}` placeholders, filled by [`Prompt::fill`]. Plain data in MCP's shape (content
//! blocks: text, image, audio, embedded resource), checked when parsed; nothing here knows
//! MCP.

use std::collections::BTreeMap;

use base64::Engine;
use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use super::fill::fill;
use super::resource::Body;
use crate::limits::{
    MANIFEST_DESCRIPTION_CHARS, MANIFEST_NAME_CHARS, PROMPT_ARGUMENTS, PROMPT_BYTES, PROMPT_COMPLETIONS,
    PROMPT_MESSAGES, RESOURCE_URI_BYTES,
};

/// A prompt of the catalogue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawPrompt")]
pub struct Prompt {
    /// Its name, unique in the catalogue and apart from toolgate's own prompts.
    pub name: String,
    /// A human-readable title.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it is for.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// The arguments it takes.
    pub arguments: Vec<Argument>,
    /// Its messages, placeholders unfilled.
    pub messages: Vec<Message>,
    /// Values offered for arguments by `completion/complete`, per argument name.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub completions: BTreeMap<String, Vec<String>>,
}

/// One declared argument.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Argument {
    /// Its name, and the placeholder `{name}` its value fills.
    pub name: String,
    /// What it means.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// True if and only if a get without it is refused.
    #[serde(default)]
    pub required: bool,
}

/// Who speaks a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// The user.
    User,
    /// The assistant.
    Assistant,
}

/// One message of a prompt.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Message {
    /// Who speaks it.
    pub role: Role,
    /// What it says.
    pub content: Content,
}

/// A message's content block, in MCP's shape.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum Content {
    /// Text; placeholders are filled.
    Text {
        /// The text.
        text: String,
    },
    /// An image as base64.
    Image {
        /// Base64 data, checked to decode.
        data: String,
        /// Its MIME type.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// Audio as base64.
    Audio {
        /// Base64 data, checked to decode.
        data: String,
        /// Its MIME type.
        #[serde(rename = "mimeType")]
        mime_type: String,
    },
    /// An embedded resource; placeholders in its URI and text are filled.
    Resource {
        /// The resource.
        resource: Embedded,
    },
}

/// A resource embedded in a message.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawEmbedded")]
pub struct Embedded {
    /// Its URI.
    pub uri: String,
    /// Its MIME type.
    #[serde(rename = "mimeType", skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
    /// Its body.
    #[serde(flatten)]
    pub body: Body,
}

#[derive(Deserialize)]
struct RawEmbedded {
    uri: String,
    #[serde(rename = "mimeType")]
    mime_type: Option<String>,
    text: Option<String>,
    blob: Option<String>,
}

impl TryFrom<RawEmbedded> for Embedded {
    type Error = String;

    fn try_from(raw: RawEmbedded) -> Result<Embedded, String> {
        Ok(Embedded {
            body: Body::of(raw.text, raw.blob)?,
            uri: raw.uri,
            mime_type: raw.mime_type,
        })
    }
}

#[derive(Deserialize)]
struct RawPrompt {
    name: String,
    title: Option<String>,
    description: Option<String>,
    #[serde(default)]
    arguments: Vec<Argument>,
    messages: Vec<Message>,
    #[serde(default)]
    completions: BTreeMap<String, Vec<String>>,
}

impl TryFrom<RawPrompt> for Prompt {
    type Error = String;

    fn try_from(raw: RawPrompt) -> Result<Prompt, String> {
        if raw.name.trim().is_empty() {
            return Err("its name is empty".to_owned());
        }
        for (label, text, max) in [
            ("name", Some(&raw.name), MANIFEST_NAME_CHARS),
            ("title", raw.title.as_ref(), MANIFEST_NAME_CHARS),
            ("description", raw.description.as_ref(), MANIFEST_DESCRIPTION_CHARS),
        ] {
            if text.is_some_and(|t| t.chars().count() > max) {
                return Err(format!("its {label} is over {max} characters"));
            }
        }
        if raw.arguments.len() > PROMPT_ARGUMENTS {
            return Err(format!("it declares more than {PROMPT_ARGUMENTS} arguments"));
        }
        for (i, a) in raw.arguments.iter().enumerate() {
            if a.name.is_empty() || a.name.chars().count() > MANIFEST_NAME_CHARS {
                return Err(format!("argument #{i} has an empty or over-long name"));
            }
            if raw.arguments[..i].iter().any(|b| b.name == a.name) {
                return Err(format!("it declares the argument \"{}\" twice", a.name));
            }
        }
        if raw.messages.is_empty() || raw.messages.len() > PROMPT_MESSAGES {
            return Err(format!("it needs 1 to {PROMPT_MESSAGES} messages"));
        }
        let mut bytes = 0;
        for m in &raw.messages {
            m.content.check()?;
            bytes += m.content.strings().iter().map(|s| s.len()).sum::<usize>();
        }
        if bytes > PROMPT_BYTES {
            return Err(format!("its messages are over {PROMPT_BYTES} bytes"));
        }
        for (name, values) in &raw.completions {
            if !raw.arguments.iter().any(|a| &a.name == name) {
                return Err(format!(
                    "it offers completions for \"{name}\", which it does not declare"
                ));
            }
            if values.len() > PROMPT_COMPLETIONS {
                return Err(format!(
                    "it offers more than {PROMPT_COMPLETIONS} completions for \"{name}\""
                ));
            }
        }
        Ok(Prompt {
            name: raw.name,
            title: raw.title,
            description: raw.description,
            arguments: raw.arguments,
            messages: raw.messages,
            completions: raw.completions,
        })
    }
}

impl Content {
    /// Checks base64 data, MIME types and URI length.
    fn check(&self) -> Result<(), String> {
        match self {
            Content::Text { .. } => Ok(()),
            Content::Image { data, mime_type } | Content::Audio { data, mime_type } => {
                if mime_type.trim().is_empty() {
                    return Err("an image or audio message has no mimeType".to_owned());
                }
                base64::engine::general_purpose::STANDARD
                    .decode(data.as_bytes())
                    .map(|_| ())
                    .map_err(|e| format!("an image or audio message's data is not base64: {e}"))
            }
            Content::Resource { resource } if resource.uri.len() > RESOURCE_URI_BYTES => {
                Err(format!("an embedded resource's URI is over {RESOURCE_URI_BYTES} bytes"))
            }
            Content::Resource { .. } => Ok(()),
        }
    }

    /// Every string it holds, for its size.
    fn strings(&self) -> Vec<&str> {
        match self {
            Content::Text { text } => vec![text],
            Content::Image { data, mime_type } | Content::Audio { data, mime_type } => vec![data, mime_type],
            Content::Resource { resource } => {
                let body = match &resource.body {
                    Body::Text(t) | Body::Blob(t) => t,
                };
                vec![&resource.uri, body]
            }
        }
    }
}

/// Why a prompt could not be filled: each is the client's mistake (invalid params).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum FillError {
    /// A required argument is missing.
    #[error("the prompt \"{prompt}\" needs the argument \"{argument}\"")]
    Missing {
        /// The prompt.
        prompt: String,
        /// The argument.
        argument: String,
    },
    /// An argument the prompt does not declare.
    #[error("the prompt \"{prompt}\" has no argument \"{argument}\"; it takes: {declared}")]
    Unknown {
        /// The prompt.
        prompt: String,
        /// The argument given.
        argument: String,
        /// The arguments it declares, comma-separated, or "none".
        declared: String,
    },
    /// An argument value that is not a string.
    #[error("the argument \"{argument}\" of the prompt \"{prompt}\" must be a string")]
    NotText {
        /// The prompt.
        prompt: String,
        /// The argument.
        argument: String,
    },
    /// The filled prompt would pass [`PROMPT_BYTES`].
    #[error("the prompt \"{prompt}\" filled with these arguments would be over {max} bytes")]
    TooLong {
        /// The prompt.
        prompt: String,
        /// The bound, in bytes.
        max: usize,
    },
}

impl Prompt {
    /// Its messages with every `{arg}` placeholder of a declared argument filled (in text,
    /// and an embedded resource's URI and text); an optional argument not given fills as
    /// empty text. Refuses an undeclared argument, a missing required one, a value that is
    /// not a string, and a result over [`PROMPT_BYTES`].
    pub fn fill(&self, args: &Map<String, Value>) -> Result<Vec<Message>, FillError> {
        let mut values: Vec<(&str, &str)> = Vec::with_capacity(self.arguments.len());
        for (name, value) in args {
            if !self.arguments.iter().any(|a| &a.name == name) {
                let declared: Vec<&str> = self.arguments.iter().map(|a| a.name.as_str()).collect();
                return Err(FillError::Unknown {
                    prompt: self.name.clone(),
                    argument: name.clone(),
                    declared: if declared.is_empty() {
                        "none".to_owned()
                    } else {
                        declared.join(", ")
                    },
                });
            }
            let Value::String(text) = value else {
                return Err(FillError::NotText {
                    prompt: self.name.clone(),
                    argument: name.clone(),
                });
            };
            values.push((name, text));
        }
        for a in &self.arguments {
            if !values.iter().any(|(n, _)| *n == a.name) {
                if a.required {
                    return Err(FillError::Missing {
                        prompt: self.name.clone(),
                        argument: a.name.clone(),
                    });
                }
                values.push((&a.name, ""));
            }
        }
        let lookup = |name: &str| values.iter().find(|(n, _)| *n == name).map(|(_, v)| *v);
        let mut budget = PROMPT_BYTES;
        let mut text = |s: &str| {
            let filled = fill(s, lookup, budget).map_err(|e| FillError::TooLong {
                prompt: self.name.clone(),
                max: e.max,
            })?;
            budget -= filled.len();
            Ok(filled)
        };
        let mut out = Vec::with_capacity(self.messages.len());
        for m in &self.messages {
            let content = match &m.content {
                Content::Text { text: t } => Content::Text { text: text(t)? },
                Content::Resource { resource } => Content::Resource {
                    resource: Embedded {
                        uri: text(&resource.uri)?,
                        mime_type: resource.mime_type.clone(),
                        body: match &resource.body {
                            Body::Text(t) => Body::Text(text(t)?),
                            Body::Blob(b) => Body::Blob(b.clone()),
                        },
                    },
                },
                other => other.clone(),
            };
            out.push(Message { role: m.role, content });
        }
        Ok(out)
    }

    /// The completion values it offers for `argument` that start with `typed`
    /// (case-insensitive), in its own order.
    pub fn complete(&self, argument: &str, typed: &str) -> Vec<String> {
        let typed = typed.to_lowercase();
        self.completions
            .get(argument)
            .map(|values| {
                values
                    .iter()
                    .filter(|v| v.to_lowercase().starts_with(&typed))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn prompt() -> Prompt {
        serde_json::from_value(json!({
            "name": "p",
            "description": "d",
            "arguments": [{"name": "arg1", "required": true}, {"name": "arg2"}],
            "messages": [
                {"role": "user", "content": {"type": "text", "text": "a='{arg1}', b='{arg2}', {other}"}},
                {"role": "assistant", "content": {"type": "resource", "resource": {"uri": "{arg1}", "mimeType": "text/plain", "text": "about {arg1}"}}},
                {"role": "user", "content": {"type": "image", "data": "aGk=", "mimeType": "image/png"}}
            ],
            "completions": {"arg1": ["Paris", "parma", "Rome"]}
        }))
        .unwrap()
    }

    fn args(v: Value) -> Map<String, Value> {
        v.as_object().unwrap().clone()
    }

    #[test]
    fn fill_replaces_declared_placeholders_everywhere_once() {
        let filled = prompt().fill(&args(json!({"arg1": "{arg2}", "arg2": "two"}))).unwrap();
        assert_eq!(
            serde_json::to_value(&filled).unwrap(),
            json!([
                {"role": "user", "content": {"type": "text", "text": "a='{arg2}', b='two', {other}"}},
                {"role": "assistant", "content": {"type": "resource", "resource": {"uri": "{arg2}", "mimeType": "text/plain", "text": "about {arg2}"}}},
                {"role": "user", "content": {"type": "image", "data": "aGk=", "mimeType": "image/png"}}
            ])
        );
        let filled = prompt().fill(&args(json!({"arg1": "x"}))).unwrap();
        assert_eq!(
            filled[0].content,
            Content::Text {
                text: "a='x', b='', {other}".into()
            }
        );
    }

    #[test]
    fn fill_refuses_missing_unknown_and_non_string_arguments() {
        let p = prompt();
        let e = p.fill(&args(json!({"arg2": "y"}))).unwrap_err();
        assert!(e.to_string().contains("needs the argument \"arg1\""), "{e}");
        let e = p.fill(&args(json!({"arg1": "x", "arg3": "z"}))).unwrap_err();
        assert!(
            e.to_string().contains("no argument \"arg3\"; it takes: arg1, arg2"),
            "{e}"
        );
        let e = p.fill(&args(json!({"arg1": 5}))).unwrap_err();
        assert!(matches!(e, FillError::NotText { .. }), "{e}");
        let long = "x".repeat(PROMPT_BYTES / 2);
        let e = p.fill(&args(json!({"arg1": long}))).unwrap_err();
        assert!(matches!(e, FillError::TooLong { .. }), "{e}");
    }

    #[test]
    fn bad_prompts_are_refused_with_a_reason() {
        let parse = |v: Value| serde_json::from_value::<Prompt>(v).map_err(|e| e.to_string());
        let text = json!({"role": "user", "content": {"type": "text", "text": "t"}});
        for (bad, why) in [
            (json!({"name": "p", "messages": []}), "messages"),
            (
                json!({"name": "p", "messages": [{"role": "system", "content": {"type": "text", "text": "t"}}]}),
                "system",
            ),
            (
                json!({"name": "p", "messages": [{"role": "user", "content": {"type": "image", "data": "@@", "mimeType": "image/png"}}]}),
                "base64",
            ),
            (
                json!({"name": "p", "messages": [{"role": "user", "content": {"type": "video"}}]}),
                "video",
            ),
            (
                json!({"name": "p", "arguments": [{"name": "a"}, {"name": "a"}], "messages": [text]}),
                "twice",
            ),
            (
                json!({"name": "p", "completions": {"b": []}, "messages": [text]}),
                "does not declare",
            ),
            (json!({"messages": [text]}), "name"),
        ] {
            let e = parse(bad).unwrap_err();
            assert!(e.contains(why), "{why}: {e}");
        }
    }

    #[test]
    fn completions_are_filtered_by_prefix() {
        assert_eq!(prompt().complete("arg1", "PAR"), ["Paris", "parma"]);
        assert!(prompt().complete("arg2", "").is_empty());
    }
}
