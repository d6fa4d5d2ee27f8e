//! Upstream MCP servers' tools joined to the catalogue: the snapshot the gateway serves
//! is the store's with the federated tools added (`Snapshot::with_federated`), built
//! again only when either changes, on a blocking thread within the snapshot budget. And
//! the call of an upstream tool, whose answer is kept whole for a direct call.

use std::collections::HashSet;
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::{Value, json};

use super::run::{Output, Produced};
use crate::backends::upstream::Upstreams;
use crate::catalogue::{Federated, Snapshot};
use crate::error::Error;
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
        let extra = self.upstreams.manifests();
        let (from, reported) = (base.clone(), self.reported.clone());
        let built = tokio::task::spawn_blocking(move || {
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

    /// Calls an upstream tool: the server's answer whole, and as a run's result its
    /// `structuredContent` (else `{content}`), or an `EXECUTION_ERROR` carrying its text
    /// when it says `isError`.
    pub(super) async fn call(&self, tool: &Federated, params: &Value) -> Produced {
        let raw = match self.upstreams.call(tool, params).await {
            Ok(raw) => raw,
            Err(e) => return Produced::refused(e),
        };
        let result = raw
            .get("structuredContent")
            .cloned()
            .unwrap_or_else(|| json!({"content": raw.get("content").cloned().unwrap_or_else(|| json!([]))}));
        let ended = if raw.get("isError").and_then(Value::as_bool) == Some(true) {
            Err(Error::Execution {
                message: text_of(&raw).unwrap_or_else(|| format!("{} answered with isError", tool.server)),
            })
        } else {
            Ok(result)
        };
        Produced {
            passthrough: Some(raw),
            ..Produced::reached(ended, Output::default())
        }
    }
}

/// The text blocks of an answer's content, joined.
fn text_of(raw: &Value) -> Option<String> {
    let texts: Vec<&str> = raw
        .get("content")?
        .as_array()?
        .iter()
        .filter_map(|c| c.get("text").and_then(Value::as_str))
        .collect();
    (!texts.is_empty()).then(|| texts.join("\n"))
}
