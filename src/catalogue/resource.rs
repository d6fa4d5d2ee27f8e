//! A catalogue's own resources: fixed ones (`uri` and a text or base64 blob body) and
//! templates (`uriTemplate` with RFC 6570 simple `{var}` expressions and a text body the
//! variables are filled into). Plain data, checked when parsed; nothing here knows MCP.
//!
//! A template variable matches one path segment of URI-unreserved characters or
//! percent-escapes (`[A-Za-z0-9._~%-]+`), never decoded: the value filled into a body can
//! carry no quote, brace, slash or space, so it cannot break out of the JSON (or other
//! syntax) around its placeholder. Any other template syntax is refused at load.

use base64::Engine;
use regex::Regex;
use serde::{Deserialize, Serialize};

use super::fill::fill;
use crate::limits::{MANIFEST_DESCRIPTION_CHARS, MANIFEST_NAME_CHARS, RESOURCE_BODY_BYTES, RESOURCE_URI_BYTES};

/// The characters one template variable may match.
const VARIABLE: &str = "[A-Za-z0-9._~%-]+";

/// A resource's body: text, or binary data as base64.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Body {
    /// Text, served as `text`.
    Text(String),
    /// Base64 (standard alphabet, padded), checked to decode; served as `blob`.
    Blob(String),
}

impl Body {
    /// The body of an entry that carries `text` or `blob`: exactly one of them, the blob
    /// decoding as base64, within [`RESOURCE_BODY_BYTES`].
    pub(super) fn of(text: Option<String>, blob: Option<String>) -> Result<Body, String> {
        match (text, blob) {
            (Some(text), None) if text.len() > RESOURCE_BODY_BYTES => {
                Err(format!("its text is over {RESOURCE_BODY_BYTES} bytes"))
            }
            (Some(text), None) => Ok(Body::Text(text)),
            (None, Some(blob)) => {
                let bytes = base64::engine::general_purpose::STANDARD
                    .decode(blob.as_bytes())
                    .map_err(|e| format!("its blob is not base64: {e}"))?;
                if bytes.len() > RESOURCE_BODY_BYTES {
                    return Err(format!("its blob is over {RESOURCE_BODY_BYTES} bytes"));
                }
                Ok(Body::Blob(blob))
            }
            (Some(_), Some(_)) => Err("it has both \"text\" and \"blob\"; give exactly one".to_owned()),
            (None, None) => Err("it has neither \"text\" nor \"blob\"; give exactly one".to_owned()),
        }
    }
}

/// What every resource and template entry describes itself with.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct About {
    /// Its programmatic name (need not be unique).
    pub name: String,
    /// A human-readable title.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// What it holds.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    /// Its MIME type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub mime_type: Option<String>,
}

impl About {
    /// Checks the text caps: name and title within [`MANIFEST_NAME_CHARS`], description
    /// within [`MANIFEST_DESCRIPTION_CHARS`]; the name not empty.
    fn check(&self) -> Result<(), String> {
        if self.name.trim().is_empty() {
            return Err("its name is empty".to_owned());
        }
        for (label, text, max) in [
            ("name", Some(&self.name), MANIFEST_NAME_CHARS),
            ("title", self.title.as_ref(), MANIFEST_NAME_CHARS),
            ("description", self.description.as_ref(), MANIFEST_DESCRIPTION_CHARS),
        ] {
            if text.is_some_and(|t| t.chars().count() > max) {
                return Err(format!("its {label} is over {max} characters"));
            }
        }
        Ok(())
    }
}

/// A fixed resource of the catalogue.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "RawResource")]
pub struct Resource {
    /// Its URI, exactly as clients read it.
    pub uri: String,
    /// Name, title, description, MIME type.
    #[serde(flatten)]
    pub about: About,
    /// What a read answers.
    #[serde(flatten)]
    pub body: Body,
}

#[derive(Deserialize)]
struct RawResource {
    uri: String,
    #[serde(flatten)]
    about: About,
    text: Option<String>,
    blob: Option<String>,
}

impl TryFrom<RawResource> for Resource {
    type Error = String;

    fn try_from(raw: RawResource) -> Result<Resource, String> {
        check_uri(&raw.uri)?;
        raw.about.check()?;
        Ok(Resource {
            body: Body::of(raw.text, raw.blob)?,
            uri: raw.uri,
            about: raw.about,
        })
    }
}

/// A resource template of the catalogue: a family of text resources.
#[derive(Debug, Clone, Serialize, Deserialize)]
#[serde(try_from = "RawTemplate")]
#[serde(rename_all = "camelCase")]
pub struct Template {
    /// Its RFC 6570 template, simple `{var}` expressions only.
    pub uri_template: String,
    /// Name, title, description, MIME type.
    #[serde(flatten)]
    pub about: About,
    /// The body of a read, `{var}` placeholders filled with the URI's values.
    pub text: String,
    /// The template as an anchored pattern, one capture group per variable.
    #[serde(skip)]
    pattern: Regex,
    /// The variable names, in capture order.
    #[serde(skip)]
    variables: Vec<String>,
}

impl PartialEq for Template {
    fn eq(&self, other: &Template) -> bool {
        (&self.uri_template, &self.about, &self.text) == (&other.uri_template, &other.about, &other.text)
    }
}

#[derive(Deserialize)]
#[serde(rename_all = "camelCase")]
struct RawTemplate {
    uri_template: String,
    #[serde(flatten)]
    about: About,
    text: Option<String>,
    blob: Option<String>,
}

impl TryFrom<RawTemplate> for Template {
    type Error = String;

    fn try_from(raw: RawTemplate) -> Result<Template, String> {
        check_uri(&raw.uri_template)?;
        raw.about.check()?;
        let text = match Body::of(raw.text, raw.blob)? {
            Body::Text(text) => text,
            Body::Blob(_) => return Err("a template's body is \"text\"; a blob cannot be filled".to_owned()),
        };
        let (pattern, variables) = compile(&raw.uri_template)?;
        Ok(Template {
            uri_template: raw.uri_template,
            about: raw.about,
            text,
            pattern,
            variables,
        })
    }
}

/// Why a URI that matches a template cannot be read.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Unreadable {
    /// The URI does not match the template (or a value holds a character outside
    /// `[A-Za-z0-9._~%-]`).
    NoMatch,
    /// The filled body would pass [`RESOURCE_BODY_BYTES`].
    TooLong,
}

impl Template {
    /// The body of `uri` when it matches this template, its variables filled in.
    pub fn read(&self, uri: &str) -> Result<String, Unreadable> {
        let captures = self.pattern.captures(uri).ok_or(Unreadable::NoMatch)?;
        let value = |name: &str| {
            let i = self.variables.iter().position(|v| v == name)?;
            captures.get(i + 1).map(|m| m.as_str())
        };
        fill(&self.text, value, RESOURCE_BODY_BYTES).map_err(|_| Unreadable::TooLong)
    }

    /// Returns true if and only if `uri` matches this template.
    pub fn matches(&self, uri: &str) -> bool {
        self.pattern.is_match(uri)
    }

    /// Its variable names, in order.
    pub fn variables(&self) -> &[String] {
        &self.variables
    }
}

/// A URI (or template) must have a scheme, fit [`RESOURCE_URI_BYTES`] and hold no space
/// or control character.
fn check_uri(uri: &str) -> Result<(), String> {
    if uri.len() > RESOURCE_URI_BYTES {
        return Err(format!("its URI is over {RESOURCE_URI_BYTES} bytes"));
    }
    if uri.chars().any(|c| c.is_whitespace() || c.is_control()) {
        return Err("its URI holds a space or control character".to_owned());
    }
    if scheme(uri).is_none() {
        return Err("its URI has no scheme (such as \"test:\" or \"file:\")".to_owned());
    }
    Ok(())
}

/// The scheme of `uri` (RFC 3986: a letter, then letters, digits, `+`, `-`, `.`), if any.
pub fn scheme(uri: &str) -> Option<&str> {
    let (scheme, _) = uri.split_once(':')?;
    let mut chars = scheme.chars();
    let first = chars.next()?;
    (first.is_ascii_alphabetic() && chars.all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c))).then_some(scheme)
}

/// Compiles a template of simple `{var}` expressions into an anchored pattern. Refuses
/// operators (`{+var}`, `{?q}`, ...), modifiers (`{var*}`, `{var:3}`), stray braces, two
/// variables with nothing between them (which could split a value anywhere) and a name
/// used twice.
fn compile(template: &str) -> Result<(Regex, Vec<String>), String> {
    let mut pattern = String::from("^");
    let mut variables: Vec<String> = Vec::new();
    let mut rest = template;
    let mut after_variable = false;
    while !rest.is_empty() {
        let next = rest.find(['{', '}']).unwrap_or(rest.len());
        let (literal, tail) = rest.split_at(next);
        if !literal.is_empty() {
            pattern.push_str(&regex::escape(literal));
            after_variable = false;
        }
        if tail.is_empty() {
            break;
        }
        if tail.starts_with('}') {
            return Err("its URI template has a \"}\" that closes nothing".to_owned());
        }
        let close = tail
            .find('}')
            .ok_or("its URI template has a \"{\" that is never closed")?;
        let name = &tail[1..close];
        if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
            return Err(format!(
                "its URI template expression {{{name}}} is not a simple {{var}} (letters, digits and _ only; RFC 6570 operators and modifiers are not supported)"
            ));
        }
        if after_variable {
            return Err(format!(
                "its URI template puts {{{name}}} right after another variable; separate them with a literal such as \"/\""
            ));
        }
        if variables.iter().any(|v| v == name) {
            return Err(format!("its URI template uses {{{name}}} twice"));
        }
        pattern.push('(');
        pattern.push_str(VARIABLE);
        pattern.push(')');
        variables.push(name.to_owned());
        after_variable = true;
        rest = &tail[close + 1..];
    }
    pattern.push('$');
    if variables.is_empty() {
        return Err("its URI template has no {var}; a fixed URI is a resource with \"uri\"".to_owned());
    }
    let pattern = Regex::new(&pattern).map_err(|e| format!("its URI template does not compile: {e}"))?;
    Ok((pattern, variables))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn template(uri_template: &str, text: &str) -> Result<Template, String> {
        serde_json::from_value(json!({"uriTemplate": uri_template, "name": "t", "text": text}))
            .map_err(|e| e.to_string())
    }

    #[test]
    fn a_template_fills_its_variables_and_refuses_values_that_could_break_out() {
        let t = template(
            "test://template/{id}/data",
            r#"{"id":"{id}","templateTest":true,"data":"Data for ID: {id}"}"#,
        )
        .unwrap();
        assert_eq!(
            t.read("test://template/123/data").unwrap(),
            r#"{"id":"123","templateTest":true,"data":"Data for ID: 123"}"#
        );
        assert_eq!(
            t.read("test://template/a%22b/data").unwrap().matches("a%22b").count(),
            2
        );
        for bad in [
            "test://template/a\"b/data",
            "test://template/a/b/data",
            "test://template//data",
            "test://template/{id}/data",
            "test://template/123/data/",
            "xtest://template/123/data",
            "test://template/a b/data",
        ] {
            assert_eq!(t.read(bad), Err(Unreadable::NoMatch), "{bad}");
        }
    }

    #[test]
    fn only_simple_expressions_are_accepted() {
        for bad in [
            "test://{+path}",
            "test://x{?q}",
            "test://{id*}",
            "test://{id:3}",
            "test://{a}{b}",
            "test://{a}/{a}",
            "test://{",
            "test://}",
            "test://fixed",
            "no-scheme/{id}",
        ] {
            assert!(template(bad, "x").is_err(), "{bad}");
        }
        let t = template("test://{a}.{b}/x", "{a}-{b}").unwrap();
        assert_eq!(t.read("test://one.two.three/x").unwrap(), "one.two-three");
        assert_eq!(t.variables(), ["a", "b"]);
    }

    #[test]
    fn a_resource_has_exactly_one_body_and_a_blob_must_decode() {
        let parse = |v: serde_json::Value| serde_json::from_value::<Resource>(v).map_err(|e| e.to_string());
        let ok = parse(json!({"uri": "test://a", "name": "a", "blob": "aGk=", "mimeType": "x/y"})).unwrap();
        assert_eq!(ok.body, Body::Blob("aGk=".into()));
        assert_eq!(
            serde_json::to_value(&ok).unwrap(),
            json!({"uri": "test://a", "name": "a", "blob": "aGk=", "mimeType": "x/y"})
        );
        let e = parse(json!({"uri": "test://a", "name": "a", "blob": "not base64!"})).unwrap_err();
        assert!(e.contains("not base64"), "{e}");
        let e = parse(json!({"uri": "test://a", "name": "a", "text": "t", "blob": "aGk="})).unwrap_err();
        assert!(e.contains("exactly one"), "{e}");
        let e = parse(json!({"uri": "test://a", "name": "a"})).unwrap_err();
        assert!(e.contains("exactly one"), "{e}");
        let e = parse(json!({"name": "a", "text": "t"})).unwrap_err();
        assert!(e.contains("uri"), "{e}");
    }
}
