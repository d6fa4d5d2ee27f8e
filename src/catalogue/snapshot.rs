//! One immutable view of a catalogue: its tools sorted by slug, each with its compiled
//! validator. A refresh builds a whole new snapshot and swaps it in; nothing mutates one.

use std::collections::HashSet;
use std::sync::Arc;

use super::load::Entry;
use super::manifest::{Manifest, Runtime};
use super::slug;
use crate::error::Error;
use crate::validate::{self, Compiled};

/// One tool, ready to validate and run.
#[derive(Debug)]
pub struct Tool {
    /// Its manifest, without code.
    pub manifest: Manifest,
    /// Its code, when the catalogue carried it (local sources do; an API's list does not).
    pub code: Option<Arc<str>>,
    /// Its compiled input schema.
    pub validator: Compiled,
    /// True if and only if its slug fits MCP's tool-name grammar.
    pub is_advertisable: bool,
}

impl Tool {
    /// The slug.
    pub fn slug(&self) -> &str {
        &self.manifest.slug
    }

    /// The runtime its source needs, if it has one.
    pub fn runtime(&self) -> Option<Runtime> {
        self.manifest.runtime
    }
}

/// Whose code the catalogue holds, which decides where it runs.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Origin {
    /// The operator's own (embedded, folder, file): runs locally.
    Local,
    /// Arrived over HTTP: runs where `TOOLGATE_EXECUTION` says.
    Remote,
}

/// An immutable catalogue view.
#[derive(Debug)]
pub struct Snapshot {
    tools: Vec<Arc<Tool>>,
    slugs: Vec<String>,
    origin: Origin,
}

impl Snapshot {
    /// Builds a snapshot. Returns it with one sentence per tool that was set aside or is
    /// withheld from `tools/list`, for the caller to report (once per process).
    pub fn build(entries: Vec<Entry>, origin: Origin) -> (Snapshot, Vec<String>) {
        let mut problems = Vec::new();
        let mut seen = HashSet::new();
        let mut tools = Vec::with_capacity(entries.len());
        for entry in entries {
            let slug = entry.manifest.slug.clone();
            if !seen.insert(slug.clone()) {
                problems.push(format!(
                    "tool \"{slug}\" appears twice; the first one is kept"
                ));
                continue;
            }
            let validator = match validate::compile(&entry.manifest.input_schema) {
                Ok(v) => v,
                Err(e) => {
                    problems.push(format!("tool \"{slug}\" is set aside: {e}"));
                    continue;
                }
            };
            let is_advertisable = slug::is_advertisable(&slug);
            if !is_advertisable {
                problems.push(format!(
                    "tool \"{slug}\" is withheld from tools/list: its slug does not match [A-Za-z0-9_-]{{1,64}}; it stays reachable through the meta-tool"
                ));
            }
            tools.push(Arc::new(Tool {
                manifest: entry.manifest,
                code: entry.code,
                validator,
                is_advertisable,
            }));
        }
        tools.sort_by(|a, b| a.slug().cmp(b.slug()));
        let slugs = tools.iter().map(|t| t.slug().to_owned()).collect();
        (
            Snapshot {
                tools,
                slugs,
                origin,
            },
            problems,
        )
    }

    /// Every tool, sorted by slug.
    pub fn tools(&self) -> &[Arc<Tool>] {
        &self.tools
    }

    /// Whose code this catalogue holds.
    pub fn origin(&self) -> Origin {
        self.origin
    }

    /// Resolves an exact slug or an unambiguous abbreviation.
    pub fn resolve(&self, wanted: &str) -> Result<&Arc<Tool>, Error> {
        slug::resolve(&self.slugs, wanted).map(|i| &self.tools[i])
    }

    /// The tool with exactly this slug.
    pub fn get(&self, exact: &str) -> Option<&Arc<Tool>> {
        self.slugs
            .binary_search_by(|s| s.as_str().cmp(exact))
            .ok()
            .map(|i| &self.tools[i])
    }

    /// Resolves among advertisable tools only, as a direct `tools/call` must.
    pub fn resolve_advertisable(&self, wanted: &str) -> Result<&Arc<Tool>, Error> {
        let tool = self.resolve(wanted)?;
        if tool.is_advertisable {
            Ok(tool)
        } else {
            Err(Error::ToolNotFound {
                slug: wanted.to_owned(),
                candidates: self.close_matches(wanted),
            })
        }
    }

    /// Slugs that look like `wanted`, best first.
    pub fn close_matches(&self, wanted: &str) -> Vec<String> {
        slug::close_matches(&self.slugs, wanted)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn entry(manifest: serde_json::Value) -> Entry {
        Entry {
            manifest: serde_json::from_value(manifest).unwrap(),
            code: None,
        }
    }

    #[test]
    fn sorts_withholds_bad_slugs_and_sets_aside_bad_schemas() {
        let (snap, problems) = Snapshot::build(
            vec![
                entry(json!({"slug": "zeta"})),
                entry(json!({"slug": "has space"})),
                entry(json!({"slug": "alpha"})),
                entry(json!({"slug": "broken", "input_schema": 5})),
                entry(json!({"slug": "alpha"})),
            ],
            Origin::Local,
        );
        let slugs: Vec<_> = snap.tools().iter().map(|t| t.slug()).collect();
        assert_eq!(slugs, vec!["alpha", "has space", "zeta"]);
        assert!(!snap.get("has space").unwrap().is_advertisable);
        assert!(snap.resolve("has space").is_ok());
        assert!(snap.resolve_advertisable("has space").is_err());
        assert_eq!(problems.len(), 3, "{problems:?}");
    }
}
