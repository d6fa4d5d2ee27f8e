//! Upstream resources and prompts, read live: each list asks every connected server that
//! offers them (concurrently, each within [`UPSTREAM_LIST_TIMEOUT`]), so they are always
//! current and nothing is cached; a read or get goes to the one server named. Resource
//! templates and subscriptions are not passed through.

use std::time::Duration;

use rmcp::model::{
    GetPromptRequestParams, GetPromptResult, JsonObject, Prompt, ReadResourceRequestParams, ReadResourceResult,
    Resource,
};

use super::Upstreams;
use super::link::Link;
use crate::error::Error;
use crate::limits::UPSTREAM_LIST_TIMEOUT;

impl Upstreams {
    /// The link whose slug prefix is `prefix`.
    fn by_prefix(&self, prefix: &str) -> Option<&Link> {
        self.links.iter().find(|l| l.server.prefix == prefix).map(|l| &**l)
    }

    /// Every connected server's resources, each with its server's slug prefix. A server
    /// that is down, offers none or does not answer in time adds nothing.
    pub async fn resources(&self) -> Vec<(String, Resource)> {
        self.settled().await;
        let asks = self.links.iter().map(|link| async move {
            let Ok(peer) = link.status() else { return Vec::new() };
            if peer.peer_info().is_none_or(|i| i.capabilities.resources.is_none()) {
                return Vec::new();
            }
            let listed = within(UPSTREAM_LIST_TIMEOUT, peer.list_all_resources()).await;
            listed.into_iter().map(|r| (link.server.prefix.clone(), r)).collect()
        });
        futures::future::join_all(asks).await.into_iter().flatten().collect()
    }

    /// Reads `uri` (the server's own URI) from the server whose slug prefix is `prefix`.
    pub async fn read_resource(&self, prefix: &str, uri: &str) -> Result<ReadResourceResult, Error> {
        let link = self.known(prefix)?;
        let peer = link.status()?;
        peer.read_resource(ReadResourceRequestParams::new(uri))
            .await
            .map_err(|e| refused(link, e))
    }

    /// Every connected server's prompts, each with its server's slug prefix.
    pub async fn prompts(&self) -> Vec<(String, Prompt)> {
        self.settled().await;
        let asks = self.links.iter().map(|link| async move {
            let Ok(peer) = link.status() else { return Vec::new() };
            if peer.peer_info().is_none_or(|i| i.capabilities.prompts.is_none()) {
                return Vec::new();
            }
            let listed = within(UPSTREAM_LIST_TIMEOUT, peer.list_all_prompts()).await;
            listed.into_iter().map(|p| (link.server.prefix.clone(), p)).collect()
        });
        futures::future::join_all(asks).await.into_iter().flatten().collect()
    }

    /// Gets the prompt `name` (the server's own name) from the server whose slug prefix
    /// is `prefix`.
    pub async fn get_prompt(&self, prefix: &str, name: &str, arguments: JsonObject) -> Result<GetPromptResult, Error> {
        let link = self.known(prefix)?;
        let peer = link.status()?;
        let mut params = GetPromptRequestParams::new(name);
        if !arguments.is_empty() {
            params.arguments = Some(arguments);
        }
        peer.get_prompt(params).await.map_err(|e| refused(link, e))
    }

    /// Returns true if and only if some server's slug prefix is `prefix`.
    pub fn has_prefix(&self, prefix: &str) -> bool {
        self.by_prefix(prefix).is_some()
    }

    fn known(&self, prefix: &str) -> Result<&Link, Error> {
        self.by_prefix(prefix).ok_or_else(|| Error::UpstreamUnavailable {
            server: prefix.to_owned(),
            reason: "no upstream server has this name".to_owned(),
        })
    }
}

/// What a list gave within `limit`, else nothing (a warning says which).
async fn within<T>(limit: Duration, list: impl Future<Output = Result<Vec<T>, rmcp::ServiceError>>) -> Vec<T> {
    match tokio::time::timeout(limit, list).await {
        Ok(Ok(items)) => items,
        Ok(Err(e)) => {
            tracing::warn!("an upstream list failed: {e}");
            Vec::new()
        }
        Err(_) => {
            tracing::warn!("an upstream list took over {} s", limit.as_secs());
            Vec::new()
        }
    }
}

fn refused(link: &Link, e: rmcp::ServiceError) -> Error {
    match e {
        rmcp::ServiceError::McpError(e) => {
            Error::BadRequest(format!("upstream \"{}\" refused: {}", link.server.name, e.message))
        }
        other => Error::UpstreamUnavailable {
            server: link.server.name.clone(),
            reason: other.to_string(),
        },
    }
}
