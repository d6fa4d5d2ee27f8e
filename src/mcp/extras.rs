//! The catalogue's own resources, resource templates and prompts (`catalogue::Extras`)
//! on the MCP surface, after toolgate's built-ins: listed, read (a template match filled),
//! got (arguments filled) and completed from the live snapshot. Also what they may not
//! take: the `NAME:` scheme and the built-in prompt names.

use rmcp::ErrorData as McpError;
use rmcp::model::{
    AudioContent, ContentBlock, EmbeddedResource, GetPromptResult, ImageContent, JsonObject, Prompt, PromptArgument,
    PromptMessage, Resource, ResourceContents, ResourceTemplate, Role,
};
use serde_json::json;

use crate::catalogue::prompt::{self, Content, Embedded};
use crate::catalogue::resource::{About, Body};
use crate::catalogue::{Found, Reserved, Snapshot};

/// What no catalogue tool, resource or prompt may take under the meta-tool name `name`
/// beside `builtins`: the `name:` URI scheme (built-in and upstream resources live
/// there), the built-in prompt names, and the built-in tools' names (resolved before any
/// catalogue tool) — with `meta_tool` (an MCP server, which serves the meta-tool under
/// `name`), that name too. The upstream servers' namespaces are added by whoever knows
/// them (`Reserved::with_namespaces`).
pub fn reserved(name: &str, builtins: &[String], meta_tool: bool) -> Reserved {
    Reserved {
        schemes: vec![name.to_owned()],
        prompts: super::prompts::NAMES.iter().map(|n| (*n).to_owned()).collect(),
        tools: meta_tool
            .then(|| name.to_owned())
            .into_iter()
            .chain(builtins.iter().cloned())
            .collect(),
        namespaces: Vec::new(),
    }
}

/// The catalogue's fixed resources, for `resources/list`.
pub(crate) fn resources(snapshot: &Snapshot) -> Vec<Resource> {
    snapshot
        .extras()
        .resources()
        .iter()
        .map(|r| {
            let mut out = Resource::new(&r.uri, &r.about.name);
            describe(&r.about, &mut out.title, &mut out.description, &mut out.mime_type);
            out
        })
        .collect()
}

/// The catalogue's templates, for `resources/templates/list`.
pub(crate) fn templates(snapshot: &Snapshot) -> Vec<ResourceTemplate> {
    snapshot
        .extras()
        .templates()
        .iter()
        .map(|t| {
            let mut out = ResourceTemplate::new(&t.uri_template, &t.about.name);
            describe(&t.about, &mut out.title, &mut out.description, &mut out.mime_type);
            out
        })
        .collect()
}

fn describe(about: &About, title: &mut Option<String>, description: &mut Option<String>, mime: &mut Option<String>) {
    title.clone_from(&about.title);
    description.clone_from(&about.description);
    mime.clone_from(&about.mime_type);
}

/// Reads `uri` from the catalogue: `None` when no resource or template of it has it.
pub(crate) fn read(snapshot: &Snapshot, uri: &str) -> Option<Result<ResourceContents, McpError>> {
    let found = match snapshot.extras().read(uri)? {
        Ok(found) => found,
        Err(why) => return Some(Err(McpError::invalid_params(why.to_string(), None))),
    };
    Some(Ok(match found {
        Found::Resource(r) => contents(uri, r.about.mime_type.as_deref(), &r.body),
        Found::Template(t, text) => contents(uri, t.about.mime_type.as_deref(), &Body::Text(text)),
    }))
}

fn contents(uri: &str, mime: Option<&str>, body: &Body) -> ResourceContents {
    match body {
        Body::Text(text) => ResourceContents::text(text, uri).with_mime_type(mime.unwrap_or("text/plain")),
        Body::Blob(blob) => {
            ResourceContents::blob(blob, uri).with_mime_type(mime.unwrap_or("application/octet-stream"))
        }
    }
}

/// The catalogue's prompts, for `prompts/list`.
pub(crate) fn prompts(snapshot: &Snapshot) -> Vec<Prompt> {
    snapshot
        .extras()
        .prompts()
        .iter()
        .map(|p| {
            let arguments = p
                .arguments
                .iter()
                .map(|a| {
                    let mut arg = PromptArgument::new(&a.name).with_required(a.required);
                    arg.description.clone_from(&a.description);
                    arg
                })
                .collect();
            let mut out = Prompt::new(&p.name, p.description.as_deref(), Some(arguments));
            out.title.clone_from(&p.title);
            out
        })
        .collect()
}

/// Gets a catalogue prompt, its arguments filled: `None` when the catalogue has no prompt
/// of that name; a bad argument is invalid params naming it.
pub(crate) fn get(snapshot: &Snapshot, name: &str, args: &JsonObject) -> Option<Result<GetPromptResult, McpError>> {
    let prompt = snapshot.extras().prompt(name)?;
    let messages = match prompt.fill(args) {
        Ok(messages) => messages,
        Err(e) => return Some(Err(McpError::invalid_params(e.to_string(), None))),
    };
    let messages = messages
        .into_iter()
        .map(|m| {
            let role = match m.role {
                prompt::Role::User => Role::User,
                prompt::Role::Assistant => Role::Assistant,
            };
            PromptMessage::new(role, block(m.content))
        })
        .collect();
    let mut result = GetPromptResult::new(messages);
    result.description.clone_from(&prompt.description);
    Some(Ok(result))
}

/// A message's content as MCP's content block.
fn block(content: Content) -> ContentBlock {
    match content {
        Content::Text { text } => ContentBlock::text(text),
        Content::Image { data, mime_type } => ContentBlock::Image(ImageContent::new(data, mime_type)),
        Content::Audio { data, mime_type } => ContentBlock::Audio(AudioContent::new(data, mime_type)),
        Content::Resource {
            resource: Embedded { uri, mime_type, body },
        } => {
            let contents = match body {
                Body::Text(text) => ResourceContents::text(text, uri),
                Body::Blob(blob) => ResourceContents::blob(blob, uri),
            };
            let contents = match mime_type {
                Some(mime) => contents.with_mime_type(mime),
                None => contents,
            };
            ContentBlock::Resource(EmbeddedResource::new(contents))
        }
    }
}

/// Completion values a catalogue prompt offers for `argument`: `None` when the catalogue
/// has no prompt of that name.
pub(crate) fn complete(snapshot: &Snapshot, prompt: &str, argument: &str, typed: &str) -> Option<Vec<String>> {
    snapshot.extras().prompt(prompt).map(|p| p.complete(argument, typed))
}

/// The answer to a read or subscription of a URI nothing serves: resource not found,
/// naming what is served.
pub(crate) fn not_found(uri: &str, name: &str) -> McpError {
    McpError::resource_not_found(
        format!(
            "No resource {uri}. Resources: {name}://guide, {name}://catalogue, {name}://history, {name}://tools/{{slug}}, and the catalogue's own (resources/list, resources/templates/list)."
        ),
        Some(json!({"uri": uri})),
    )
}
