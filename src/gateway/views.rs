//! Per-tool policy: the catalogue as a principal with a tool policy sees it. A view
//! ([`Snapshot::restricted`]) holds only the tools the policy admits, with its own slug
//! list and search index, so listing, search, resolution, abbreviations, close matches
//! and `AMBIGUOUS_SLUG` candidates all know nothing of the tools hidden from the caller
//! — a hidden tool is `TOOL_NOT_FOUND`, and no answer names it.
//!
//! A view costs an index build over its tools, so the gateway keeps the
//! [`POLICY_VIEWS`] most recently used, each tied to the snapshot it was cut from (a
//! refresh makes new ones as they are asked for). Each glob that matches no tool of the
//! catalogue (nor a built-in) is said once on stderr: most likely a typo.

use std::collections::{HashSet, VecDeque};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use crate::catalogue::Snapshot;
use crate::limits::POLICY_VIEWS;
use crate::patterns::ToolPatterns;
use crate::registry::Builtins;

/// Globs already said to match no tool, so each is said once; past this many, no more
/// are remembered (or said).
const WARNED_MAX: usize = 1_024;

/// One view and what it was cut from.
#[derive(Debug)]
struct Kept {
    /// The snapshot it was cut from; held weakly (a refresh frees it), which also keeps
    /// its address from being reused while this entry lives.
    base: Weak<Snapshot>,
    view: Arc<Snapshot>,
}

/// The views in use, most recent last.
#[derive(Debug, Default)]
pub(super) struct Views {
    kept: Mutex<VecDeque<Kept>>,
    warned: Mutex<HashSet<String>>,
}

impl Views {
    /// The view of `base` for `patterns`, built (off the async workers) when none is
    /// kept. A glob may match one of `builtins` too.
    pub(super) async fn view(
        &self,
        base: &Arc<Snapshot>,
        patterns: &Arc<ToolPatterns>,
        builtins: &Builtins,
    ) -> Arc<Snapshot> {
        if let Some(view) = self.find(base, patterns) {
            return view;
        }
        self.warn_unmatched(base, patterns, builtins);
        let (from, with) = (base.clone(), patterns.clone());
        let view = match tokio::task::spawn_blocking(move || from.restricted(with)).await {
            Ok(view) => Arc::new(view),
            // The build panicked (it should not): a caller sees the same view built here.
            Err(_) => Arc::new(base.restricted(patterns.clone())),
        };
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        kept.retain(|k| k.base.strong_count() > 0);
        if let Some(again) = position(&kept, base, patterns) {
            // Another request built it meanwhile: one view per policy, so both agree.
            return kept[again].view.clone();
        }
        if kept.len() >= POLICY_VIEWS {
            kept.pop_front();
        }
        kept.push_back(Kept {
            base: Arc::downgrade(base),
            view: view.clone(),
        });
        view
    }

    fn find(&self, base: &Arc<Snapshot>, patterns: &ToolPatterns) -> Option<Arc<Snapshot>> {
        let mut kept = self.kept.lock().unwrap_or_else(PoisonError::into_inner);
        let at = position(&kept, base, patterns)?;
        let hit = kept.remove(at)?;
        let view = hit.view.clone();
        kept.push_back(hit);
        Some(view)
    }

    fn warn_unmatched(&self, base: &Snapshot, patterns: &ToolPatterns, builtins: &Builtins) {
        let builtins = builtins.all().iter().map(|b| b.definition.name.as_str());
        let names: Vec<&str> = base.tools().iter().map(|t| t.slug()).chain(builtins).collect();
        let unmatched = patterns.unmatched(&names);
        if unmatched.is_empty() {
            return;
        }
        let mut warned = self.warned.lock().unwrap_or_else(PoisonError::into_inner);
        for glob in unmatched {
            if warned.len() < WARNED_MAX && warned.insert(glob.clone()) {
                tracing::warn!(
                    "the tool pattern \"{glob}\" (of the policy \"{patterns}\") matches no tool: check it for a typo"
                );
            }
        }
    }
}

/// Where the view of `base` for `patterns` is kept, if it is.
fn position(kept: &VecDeque<Kept>, base: &Arc<Snapshot>, patterns: &ToolPatterns) -> Option<usize> {
    kept.iter().position(|k| {
        std::ptr::eq(k.base.as_ptr(), Arc::as_ptr(base)) && k.view.patterns().is_some_and(|p| **p == *patterns)
    })
}
