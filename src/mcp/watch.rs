//! `notifications/tools/list_changed` (and resources list_changed) when a catalogue
//! refresh or an upstream server changes the advertised set of tools (or the meta-tool's
//! count of tools not listed) — and only then; and, for each new snapshot,
//! `notifications/resources/updated` for the subscribed resources it changed.
//!
//! Every snapshot the handler sees passes through [`Watch::observe`], which compares the
//! advertised names with the last ones; an HTTP catalogue is also polled in the
//! background at its cache lifetime (at least once a second), so a change is announced
//! even when the client sends nothing.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::{Peer, RoleServer};

use super::subscriptions::Subscriptions;
use super::tools::Listing;
use crate::catalogue::Snapshot;
use crate::gateway::{Caller, Gateway};

/// Shortest interval between background refreshes, whatever the cache lifetime.
const MIN_POLL: Duration = Duration::from_secs(1);

/// What a client was shown: the listed tool names and the meta-tool's count of unlisted
/// tools (as the listing's fingerprint of them: a 100,000-tool list is not copied per
/// session); the catalogue's resource URIs and templates; its prompt names.
#[derive(Debug, PartialEq, Eq)]
struct Seen {
    tools: u64,
    resources: Vec<String>,
    prompts: Vec<String>,
}

impl Seen {
    fn of(gateway: &Gateway, listing: &Listing, snapshot: &Arc<Snapshot>) -> Seen {
        let listed = listing.advertised(gateway, Some(snapshot));
        let extras = snapshot.extras();
        Seen {
            tools: listed.fingerprint,
            resources: (extras.resources().iter().map(|r| r.uri.clone()))
                .chain(extras.templates().iter().map(|t| t.uri_template.clone()))
                .collect(),
            prompts: extras.prompts().iter().map(|p| p.name.clone()).collect(),
        }
    }
}

/// The advertised set last announced to one client, with the snapshot it came from (held,
/// not just its address: a freed snapshot's address can be reused by a new one, and then
/// a change would never be announced), and the client's resource subscriptions, checked
/// against each new snapshot.
#[derive(Debug)]
pub(crate) struct Watch {
    last: Mutex<Option<(Arc<Snapshot>, Seen)>>,
    subscriptions: Subscriptions,
    /// The session's caller: the poll watches the catalogue as it sees it (the view of
    /// its owner's tool policy), so it announces only what the client can see change.
    caller: Caller,
}

impl Watch {
    /// Nothing seen yet by the session of `caller`, under the resource scheme of
    /// `listing`'s meta-tool.
    pub(crate) fn new(listing: Arc<Listing>, caller: Caller) -> Watch {
        Watch {
            last: Mutex::default(),
            subscriptions: Subscriptions::new(listing, caller.clone()),
            caller,
        }
    }

    /// The session's resource subscriptions.
    pub(crate) fn subscriptions(&self) -> &Subscriptions {
        &self.subscriptions
    }

    /// Notes the advertised set of `snapshot`; tells the client which lists differ from
    /// the last ones seen (a change of tools changes the resources too, whose catalogue
    /// overview lists them), and which subscribed resources read differently. A failed
    /// notification is logged, never raised.
    pub(crate) async fn observe(
        &self,
        gateway: &Gateway,
        listing: &Listing,
        snapshot: &Arc<Snapshot>,
        peer: &Peer<RoleServer>,
    ) {
        let (tools, resources, prompts) = {
            let mut last = self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if last.as_ref().is_some_and(|(seen, _)| Arc::ptr_eq(seen, snapshot)) {
                return;
            }
            let seen = Seen::of(gateway, listing, snapshot);
            let changed = match last.as_ref() {
                Some((_, before)) => (
                    before.tools != seen.tools,
                    before.resources != seen.resources,
                    before.prompts != seen.prompts,
                ),
                None => (false, false, false),
            };
            *last = Some((snapshot.clone(), seen));
            changed
        };
        self.subscriptions.refreshed(gateway, snapshot, peer).await;
        if tools {
            tracing::debug!("advertised tools changed; notifying the client");
            if let Err(e) = peer.notify_tool_list_changed().await {
                tracing::debug!("list_changed not delivered: {e}");
            }
        }
        if (tools || resources)
            && let Err(e) = peer.notify_resource_list_changed().await
        {
            tracing::debug!("list_changed not delivered: {e}");
        }
        if prompts && let Err(e) = peer.notify_prompt_list_changed().await {
            tracing::debug!("list_changed not delivered: {e}");
        }
    }

    /// Polls an HTTP catalogue for this client, and follows the upstream servers'
    /// changes as they happen, until its transport closes.
    pub(crate) fn spawn_poll(self: Arc<Self>, gateway: Arc<Gateway>, listing: Arc<Listing>, peer: Peer<RoleServer>) {
        let every = gateway.refresh_interval().map(|ttl| ttl.max(MIN_POLL));
        let mut upstream = gateway.upstream_changes();
        if every.is_none() && upstream.is_none() {
            return;
        }
        tokio::spawn(async move {
            // The advertised set a client sees first is its baseline.
            if let Ok(snapshot) = gateway.snapshot_for(&self.caller).await {
                self.observe(&gateway, &listing, &snapshot, &peer).await;
            }
            while !peer.is_transport_closed() {
                let poll = async {
                    match every {
                        Some(every) => tokio::time::sleep(every).await,
                        None => std::future::pending().await,
                    }
                };
                let changed = async {
                    let open = match upstream.as_mut() {
                        Some(rx) => rx.changed().await.is_ok(),
                        None => false,
                    };
                    if !open {
                        std::future::pending::<()>().await;
                    }
                };
                tokio::select! {
                    () = poll => {}
                    () = changed => {}
                }
                if let Ok(snapshot) = gateway.snapshot_for(&self.caller).await {
                    self.observe(&gateway, &listing, &snapshot, &peer).await;
                }
            }
        });
    }
}
