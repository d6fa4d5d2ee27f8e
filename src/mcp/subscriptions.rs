//! `resources/subscribe` and `resources/unsubscribe` for one MCP session, and the
//! `notifications/resources/updated` they ask for.
//!
//! A subscription is to a URI the server reads itself (built-in, catalogue, template
//! match); upstream resources are refused, since their servers' own notifications are not
//! passed through. Each holds a fingerprint of what the URI read as when last told; when
//! something may have changed it (a new snapshot, a run of this session) every subscribed
//! URI is read again, and the client is told of exactly those that read differently. At
//! most [`RESOURCE_SUBSCRIPTIONS`] per session; all go when the session's handler does.

use std::collections::HashMap;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex, PoisonError};

use rmcp::ErrorData as McpError;
use rmcp::model::ResourceUpdatedNotificationParam;
use rmcp::{Peer, RoleServer};

use super::resources;
use super::tools::Listing;
use crate::catalogue::Snapshot;
use crate::gateway::{Caller, Gateway};
use crate::limits::RESOURCE_SUBSCRIPTIONS;

/// One session's subscriptions: URI → fingerprint of its last contents.
#[derive(Debug)]
pub(crate) struct Subscriptions {
    /// The resource scheme (the meta-tool's name).
    name: String,
    /// The session, whose history `NAME://history` shows.
    caller: Caller,
    /// What `tools/list` advertises, which a tool's ready-to-send call follows.
    listing: Arc<Listing>,
    uris: Mutex<HashMap<String, u64>>,
}

impl Subscriptions {
    /// No subscriptions yet, for the session of `caller` under the scheme of `listing`'s
    /// meta-tool.
    pub(crate) fn new(listing: Arc<Listing>, caller: Caller) -> Subscriptions {
        Subscriptions {
            name: listing.meta_name().to_owned(),
            caller,
            listing,
            uris: Mutex::default(),
        }
    }

    /// Subscribes to `uri` when the server can read it: an unknown URI is resource not
    /// found, an upstream's or one past the cap invalid params.
    pub(crate) async fn subscribe(&self, gateway: &Gateway, uri: &str) -> Result<(), McpError> {
        if uri.starts_with(&format!("{}://upstream/", self.name)) {
            return Err(McpError::invalid_params(
                format!(
                    "{uri} is an upstream server's resource; toolgate does not pass on subscriptions to upstream resources"
                ),
                None,
            ));
        }
        let fingerprint = self.fingerprint(gateway, uri, None).await?;
        let mut uris = self.uris.lock().unwrap_or_else(PoisonError::into_inner);
        if uris.len() >= RESOURCE_SUBSCRIPTIONS && !uris.contains_key(uri) {
            return Err(McpError::invalid_params(
                format!(
                    "this session already has {RESOURCE_SUBSCRIPTIONS} subscriptions, the most it may hold; unsubscribe from one first"
                ),
                None,
            ));
        }
        uris.insert(uri.to_owned(), fingerprint);
        Ok(())
    }

    /// Ends the subscription to `uri`; a URI not subscribed to is not an error.
    pub(crate) fn unsubscribe(&self, uri: &str) {
        self.uris.lock().unwrap_or_else(PoisonError::into_inner).remove(uri);
    }

    /// Reads every subscribed URI again from `snapshot` and tells the client of each that
    /// reads differently now: for a new snapshot. A URI that can no longer be read counts
    /// as changed once. A failed notification is logged, never raised.
    pub(crate) async fn refreshed(&self, gateway: &Gateway, snapshot: &Arc<Snapshot>, peer: &Peer<RoleServer>) {
        self.check(gateway, Some(snapshot), peer, |_| true).await;
    }

    /// Tells the client when `NAME://history` is subscribed to and reads differently: for
    /// after a call of this session.
    pub(crate) async fn ran(&self, gateway: &Gateway, peer: &Peer<RoleServer>) {
        let history = format!("{}://history", self.name);
        self.check(gateway, None, peer, |uri| uri == history).await;
    }

    async fn check(
        &self,
        gateway: &Gateway,
        snapshot: Option<&Arc<Snapshot>>,
        peer: &Peer<RoleServer>,
        which: impl Fn(&str) -> bool,
    ) {
        let subscribed: Vec<String> = {
            let uris = self.uris.lock().unwrap_or_else(PoisonError::into_inner);
            uris.keys().filter(|u| which(u)).cloned().collect()
        };
        for uri in subscribed {
            let now = self.fingerprint(gateway, &uri, snapshot).await.unwrap_or(0);
            let changed = {
                let mut uris = self.uris.lock().unwrap_or_else(PoisonError::into_inner);
                match uris.get_mut(&uri) {
                    Some(seen) if *seen != now => {
                        *seen = now;
                        true
                    }
                    _ => false,
                }
            };
            if changed
                && let Err(e) = peer
                    .notify_resource_updated(ResourceUpdatedNotificationParam::new(&uri))
                    .await
            {
                tracing::debug!("resources/updated for {uri} not delivered: {e}");
            }
        }
    }

    /// A hash of what `uri` reads as now.
    async fn fingerprint(
        &self,
        gateway: &Gateway,
        uri: &str,
        snapshot: Option<&Arc<Snapshot>>,
    ) -> Result<u64, McpError> {
        let contents = resources::read(gateway, &self.caller, &self.listing, uri, snapshot).await?;
        let mut h = std::hash::DefaultHasher::new();
        serde_json::to_string(&contents).unwrap_or_default().hash(&mut h);
        Ok(h.finish())
    }
}
