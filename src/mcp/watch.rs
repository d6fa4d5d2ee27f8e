//! `notifications/tools/list_changed` (and resources list_changed) when a catalogue
//! refresh or an upstream server changes the advertised set of tools (or the meta-tool's
//! count of tools not listed) — and only then.
//!
//! Every snapshot the handler sees passes through [`Watch::observe`], which compares the
//! advertised names with the last ones; an HTTP catalogue is also polled in the
//! background at its cache lifetime (at least once a second), so a change is announced
//! even when the client sends nothing.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use rmcp::{Peer, RoleServer};

use super::tools::Listing;
use crate::catalogue::Snapshot;
use crate::gateway::Gateway;

/// Shortest interval between background refreshes, whatever the cache lifetime.
const MIN_POLL: Duration = Duration::from_secs(1);

/// What a client was shown: the listed names and the meta-tool's count of unlisted tools.
type Seen = (Vec<String>, usize);

/// The advertised set last announced to one client, with the snapshot it came from (held,
/// not just its address: a freed snapshot's address can be reused by a new one, and then
/// a change would never be announced).
#[derive(Debug, Default)]
pub(crate) struct Watch {
    last: Mutex<Option<(Arc<Snapshot>, Seen)>>,
}

impl Watch {
    /// Notes the advertised set of `snapshot`; tells the client when it differs from the
    /// last one seen. A failed notification is logged, never raised.
    pub(crate) async fn observe(
        &self,
        gateway: &Gateway,
        listing: &Listing,
        snapshot: &Arc<Snapshot>,
        peer: &Peer<RoleServer>,
    ) {
        let changed = {
            let mut last = self.last.lock().unwrap_or_else(std::sync::PoisonError::into_inner);
            if last.as_ref().is_some_and(|(seen, _)| Arc::ptr_eq(seen, snapshot)) {
                return;
            }
            let listed = listing.advertised(gateway, Some(snapshot));
            let names = (listed.names.clone(), listed.hidden);
            let changed = last.as_ref().is_some_and(|(_, before)| *before != names);
            *last = Some((snapshot.clone(), names));
            changed
        };
        if changed {
            tracing::debug!("advertised tools changed; notifying the client");
            for result in [
                peer.notify_tool_list_changed().await,
                peer.notify_resource_list_changed().await,
            ] {
                if let Err(e) = result {
                    tracing::debug!("list_changed not delivered: {e}");
                }
            }
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
            if let Ok(snapshot) = gateway.snapshot().await {
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
                if let Ok(snapshot) = gateway.snapshot().await {
                    self.observe(&gateway, &listing, &snapshot, &peer).await;
                }
            }
        });
    }
}
