//! Upstream MCP servers' tools joined to the catalogue: the snapshot the gateway serves
//! is the store's with the federated tools added (`Snapshot::with_federated`), built
//! again only when either changes, on a blocking thread within the snapshot budget. (The
//! call of an upstream tool is the upstream family's: `backends::upstream::Family`.)

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use crate::backends::upstream::Upstreams;
use crate::catalogue::Snapshot;
use crate::limits::{INDEX_ENTRIES, SNAPSHOT_BUILD_TIME};
use crate::search::Budget;

/// The merged snapshot last built: from which store snapshot and which generation.
type Merged = (Arc<Snapshot>, u64, Arc<Snapshot>);

/// The upstreams of one gateway and the snapshot last merged with them.
#[derive(Debug)]
pub(super) struct Federation {
    pub(super) upstreams: Arc<Upstreams>,
    last: Mutex<Option<Merged>>,
    reported: Arc<Mutex<HashSet<String>>>,
}

impl Federation {
    pub(super) fn new(upstreams: Arc<Upstreams>) -> Federation {
        Federation {
            upstreams,
            last: Mutex::new(None),
            reported: Arc::default(),
        }
    }

    /// `base` with the federated tools of now; the first call waits (bounded) for every
    /// upstream's first connection attempt. A merge over budget serves `base` alone.
    pub(super) async fn merge(&self, base: Arc<Snapshot>) -> Arc<Snapshot> {
        self.upstreams.settled().await;
        let generation = self.upstreams.generation();
        if let Some((held, g, merged)) = self.last.lock().unwrap_or_else(PoisonError::into_inner).as_ref()
            && Arc::ptr_eq(held, &base)
            && *g == generation
        {
            return merged.clone();
        }
        let (from, reported, upstreams) = (base.clone(), self.reported.clone(), self.upstreams.clone());
        let built = tokio::task::spawn_blocking(move || {
            // Judging definitions against their pins may write the pins file.
            let extra = upstreams.manifests();
            let budget = Budget::new(SNAPSHOT_BUILD_TIME, INDEX_ENTRIES);
            let (merged, problems) = from.with_federated(extra, &budget).ok()?;
            let mut reported = reported.lock().unwrap_or_else(PoisonError::into_inner);
            for p in problems {
                if reported.insert(p.to_string()) {
                    tracing::warn!("upstream {p}");
                }
            }
            Some(Arc::new(merged))
        })
        .await;
        let merged = match built {
            Ok(Some(merged)) => merged,
            _ => {
                tracing::warn!(
                    "the upstream tools could not be indexed within the snapshot budget; serving the catalogue without them"
                );
                base.clone()
            }
        };
        *self.last.lock().unwrap_or_else(PoisonError::into_inner) = Some((base, generation, merged.clone()));
        merged
    }
}
