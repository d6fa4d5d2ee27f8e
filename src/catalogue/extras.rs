//! The resources, resource templates and prompts a catalogue carries beside its tools,
//! held in its snapshot and swapped with it. Built from the entries a source yielded: each
//! bad entry is refused alone (one [`Problem::Refused`]), the others served. Refused too:
//! a URI under a scheme toolgate serves itself, a prompt named like one of its own or in
//! an upstream server's namespace ([`Reserved`]), and a second entry with a URI, template
//! or prompt name already taken.

use serde_json::Value;

use super::problem::Problem;
use super::prompt::Prompt;
use super::reserved::Reserved;
use super::resource::{Resource, Template, scheme};
use crate::limits::{CATALOGUE_PROMPTS, CATALOGUE_RESOURCES, MANIFEST_NAME_CHARS};

/// A catalogue's resources, templates and prompts, in source order.
#[derive(Debug, Default)]
pub struct Extras {
    resources: Vec<Resource>,
    templates: Vec<Template>,
    prompts: Vec<Prompt>,
}

/// What a URI reads as.
#[derive(Debug)]
pub enum Found<'a> {
    /// A fixed resource.
    Resource(&'a Resource),
    /// A template match: the template and the body, its variables filled.
    Template(&'a Template, String),
}

impl Extras {
    /// Builds the set from the entries of `resources` (each a resource, or a template when
    /// it has `uriTemplate`) and `prompts`, refusing each bad one with a [`Problem`].
    pub fn build(resources: Vec<Value>, prompts: Vec<Value>, reserved: &Reserved) -> (Extras, Vec<Problem>) {
        let mut extras = Extras::default();
        let mut problems = Vec::new();
        let mut refuse = |kind: &'static str, name: String, reason: String| {
            problems.push(Problem::Refused { kind, name, reason });
        };
        let total = resources.len();
        for (i, value) in resources.into_iter().enumerate() {
            if i == CATALOGUE_RESOURCES {
                refuse(
                    "resource",
                    format!("#{i}"),
                    format!(
                        "it and the {} after it pass the cap of {CATALOGUE_RESOURCES} resources and templates",
                        total - i - 1
                    ),
                );
                break;
            }
            if value.get("uriTemplate").is_some() {
                let label = label(&value, "uriTemplate", i);
                match serde_json::from_value::<Template>(value) {
                    Err(e) => refuse("resource template", label, e.to_string()),
                    Ok(t) => match extras.clash(&t.uri_template, reserved) {
                        Some(why) => refuse("resource template", label, why),
                        None => extras.templates.push(t),
                    },
                }
            } else {
                let label = label(&value, "uri", i);
                match serde_json::from_value::<Resource>(value) {
                    Err(e) => refuse("resource", label, e.to_string()),
                    Ok(r) => match extras.clash(&r.uri, reserved) {
                        Some(why) => refuse("resource", label, why),
                        None => extras.resources.push(r),
                    },
                }
            }
        }
        let total = prompts.len();
        for (i, value) in prompts.into_iter().enumerate() {
            if i == CATALOGUE_PROMPTS {
                refuse(
                    "prompt",
                    format!("#{i}"),
                    format!(
                        "it and the {} after it pass the cap of {CATALOGUE_PROMPTS} prompts",
                        total - i - 1
                    ),
                );
                break;
            }
            let label = label(&value, "name", i);
            match serde_json::from_value::<Prompt>(value) {
                Err(e) => refuse("prompt", label, e.to_string()),
                Ok(p) => match reserved.prompt_clash(&p.name) {
                    Some(why) => refuse("prompt", label, why),
                    None if extras.prompt(&p.name).is_some() => refuse(
                        "prompt",
                        label,
                        "another prompt has this name; the first is kept".to_owned(),
                    ),
                    None => extras.prompts.push(p),
                },
            }
        }
        (extras, problems)
    }

    /// Why a new URI or template cannot be taken, if it cannot.
    fn clash(&self, uri: &str, reserved: &Reserved) -> Option<String> {
        let scheme = scheme(uri).unwrap_or_default();
        if reserved.schemes.iter().any(|s| s.eq_ignore_ascii_case(scheme)) {
            return Some(format!("toolgate serves the {scheme}: scheme itself"));
        }
        let taken = self.resources.iter().any(|r| r.uri == uri) || self.templates.iter().any(|t| t.uri_template == uri);
        taken.then(|| "another entry has this URI; the first is kept".to_owned())
    }

    /// Its fixed resources.
    pub fn resources(&self) -> &[Resource] {
        &self.resources
    }

    /// Its templates.
    pub fn templates(&self) -> &[Template] {
        &self.templates
    }

    /// Its prompts.
    pub fn prompts(&self) -> &[Prompt] {
        &self.prompts
    }

    /// The prompt named `name`.
    pub fn prompt(&self, name: &str) -> Option<&Prompt> {
        self.prompts.iter().find(|p| p.name == name)
    }

    /// Returns true if and only if it holds nothing.
    pub fn is_empty(&self) -> bool {
        self.resources.is_empty() && self.templates.is_empty() && self.prompts.is_empty()
    }

    /// What `uri` reads as: a fixed resource of that URI, else the first template it
    /// matches, filled. `None` when nothing matches; `Some(Err)` when a template matches
    /// but its filled body would pass [`crate::limits::RESOURCE_BODY_BYTES`].
    pub fn read(&self, uri: &str) -> Option<Result<Found<'_>, TooLarge>> {
        if let Some(r) = self.resources.iter().find(|r| r.uri == uri) {
            return Some(Ok(Found::Resource(r)));
        }
        let t = self.templates.iter().find(|t| t.matches(uri))?;
        Some(
            t.read(uri)
                .map(|body| Found::Template(t, body))
                .map_err(|_| TooLarge { uri: uri.to_owned() }),
        )
    }
}

/// A template's filled body would pass [`crate::limits::RESOURCE_BODY_BYTES`].
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{uri} would be over {} bytes", crate::limits::RESOURCE_BODY_BYTES)]
pub struct TooLarge {
    /// The URI asked for.
    pub uri: String,
}

/// How a problem names an entry: its `key` when it is a string (its first
/// [`MANIFEST_NAME_CHARS`] characters), else its position.
fn label(value: &Value, key: &str, i: usize) -> String {
    match value.get(key).and_then(Value::as_str) {
        Some(s) => s.chars().take(MANIFEST_NAME_CHARS).collect(),
        None => format!("#{i}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn reserved() -> Reserved {
        Reserved {
            schemes: vec!["toolgate".into()],
            prompts: vec!["find-tool".into()],
            ..Reserved::default()
        }
    }

    #[test]
    fn bad_and_clashing_entries_cost_only_themselves() {
        let text = json!({"role": "user", "content": {"type": "text", "text": "t"}});
        let (extras, problems) = Extras::build(
            vec![
                json!({"uri": "test://a", "name": "a", "text": "A"}),
                json!({"uri": "TOOLGATE://guide", "name": "g", "text": "x"}),
                json!({"uri": "test://a", "name": "again", "text": "B"}),
                json!({"uri": "test://b", "name": "b"}),
                json!({"uriTemplate": "test://t/{id}", "name": "t", "text": "id={id}"}),
                json!({"uriTemplate": "test://t/{+id}", "name": "bad", "text": "x"}),
            ],
            vec![
                json!({"name": "find-tool", "messages": [text]}),
                json!({"name": "mine", "messages": [text]}),
                json!({"name": "mine", "messages": [text]}),
                json!({"name": "broken"}),
            ],
            &reserved(),
        );
        assert_eq!(extras.resources().len(), 1);
        assert_eq!(extras.templates().len(), 1);
        assert_eq!(extras.prompts().len(), 1);
        let lines: Vec<String> = problems.iter().map(ToString::to_string).collect();
        assert_eq!(lines.len(), 7, "{lines:#?}");
        assert!(
            lines[0].contains("\"TOOLGATE://guide\"") && lines[0].contains("toolgate serves"),
            "{lines:#?}"
        );
        assert!(lines[1].contains("first is kept"), "{lines:#?}");
        assert!(lines[2].contains("exactly one"), "{lines:#?}");
        assert!(
            lines[3].starts_with("resource template \"test://t/{+id}\""),
            "{lines:#?}"
        );
        assert!(lines[4].contains("toolgate has a prompt"), "{lines:#?}");
        assert!(matches!(extras.read("test://a"), Some(Ok(Found::Resource(_)))));
        match extras.read("test://t/7") {
            Some(Ok(Found::Template(_, body))) => assert_eq!(body, "id=7"),
            other => panic!("{other:?}"),
        }
        assert!(extras.read("test://t/7/8").is_none());
    }
}
