//! Upstream servers' resources and prompts on toolgate's surface, namespaced:
//! `NAME://upstream/SERVER/URI` (the server's own URI after the server's slug prefix) and
//! `SERVER__PROMPT`. Each list asks the upstreams live; a read or get is passed to the
//! server named, and its answer comes back as it was (a resource's contents renamed to
//! the namespaced URI they were asked by).

use rmcp::ErrorData as McpError;
use rmcp::model::{GetPromptResult, JsonObject, Prompt, ReadResourceResult, Resource, ResourceContents};
use serde_json::json;

use crate::backends::upstream::naming::SEPARATOR;
use crate::error::Error;
use crate::gateway::Gateway;

/// The namespace of upstream resources under the resource scheme `name`.
fn root(name: &str) -> String {
    format!("{name}://upstream/")
}

/// Every upstream resource, namespaced.
pub(crate) async fn resources(gateway: &Gateway, name: &str) -> Vec<Resource> {
    let Some(upstreams) = gateway.upstreams() else {
        return Vec::new();
    };
    upstreams
        .resources()
        .await
        .into_iter()
        .map(|(prefix, mut r)| {
            r.uri = format!("{}{prefix}/{}", root(name), r.uri);
            r.name = format!("{prefix}{SEPARATOR}{}", r.name);
            r
        })
        .collect()
}

/// Reads a namespaced upstream resource; `None` when `uri` is not one.
pub(crate) async fn read(gateway: &Gateway, name: &str, uri: &str) -> Option<Result<ReadResourceResult, McpError>> {
    let upstreams = gateway.upstreams()?;
    let (prefix, own) = uri.strip_prefix(&root(name))?.split_once('/')?;
    let read = upstreams.read_resource(prefix, own).await.map(|mut result| {
        for contents in &mut result.contents {
            if let ResourceContents::TextResourceContents { uri: at, .. }
            | ResourceContents::BlobResourceContents { uri: at, .. } = contents
                && at == own
            {
                *at = uri.to_owned();
            }
        }
        result
    });
    Some(read.map_err(protocol_error))
}

/// Every upstream prompt, named `SERVER__PROMPT`.
pub(crate) async fn prompts(gateway: &Gateway) -> Vec<Prompt> {
    let Some(upstreams) = gateway.upstreams() else {
        return Vec::new();
    };
    upstreams
        .prompts()
        .await
        .into_iter()
        .map(|(prefix, mut p)| {
            p.name = format!("{prefix}{SEPARATOR}{}", p.name);
            p
        })
        .collect()
}

/// Gets an upstream prompt; `None` when `name` names none (no upstream has its prefix).
pub(crate) async fn get_prompt(
    gateway: &Gateway,
    name: &str,
    arguments: JsonObject,
) -> Option<Result<GetPromptResult, McpError>> {
    let upstreams = gateway.upstreams()?;
    let (prefix, own) = name.split_once(SEPARATOR)?;
    if !upstreams.has_prefix(prefix) {
        return None;
    }
    Some(
        upstreams
            .get_prompt(prefix, own, arguments)
            .await
            .map_err(protocol_error),
    )
}

/// A failed read or get is a protocol error carrying toolgate's code and retry flag.
fn protocol_error(e: Error) -> McpError {
    let data = Some(json!({"code": e.code(), "retryable": e.retryable()}));
    match e {
        Error::BadRequest(_) => McpError::invalid_params(e.to_string(), data),
        _ => McpError::internal_error(e.to_string(), data),
    }
}
