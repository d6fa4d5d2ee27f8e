//! One immutable view of a catalogue: its tools sorted by slug, each compiling its input
//! schema when a call first needs it (into a bounded cache shared across snapshots). A
//! refresh builds a whole new snapshot and swaps it in; nothing mutates one, except that
//! its tools' vectors for search by meaning arrive once, later ([`crate::search::embedding`]).
//! A build cuts each manifest's text to its caps (`trim.rs`) and runs within a
//! [`Budget`]; one over it is abandoned whole.

use std::collections::HashSet;
use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::{Arc, OnceLock};

use super::extras::Extras;
use super::load::Entry;
use super::manifest::{Manifest, Runtime};
pub use super::problem::Problem;
use super::{slug, trim};
use crate::error::Error;
use crate::limits::CLOSE_MATCHES;
use crate::limits::VALIDATORS;
use crate::patterns::ToolPatterns;
use crate::search::embedding::{self as meaning, Corpus, Embeddable};
use crate::search::meaning::{DIM, Vector};
use crate::search::{self, Budget, Hit, OverBudget, QueryError};
use crate::validate::{self, Compiled, Validators};

/// Why a tool whose input schema is not a JSON object is set aside.
const NOT_AN_OBJECT: &str = "input_schema must be a JSON object";

/// One tool, ready to validate and run.
#[derive(Debug)]
pub struct Tool {
    /// Its manifest, without code.
    pub manifest: Manifest,
    /// Its code, when the catalogue carried it (local sources do; an API's list does not).
    pub code: Option<Arc<str>>,
    /// The file its code was read from, when it was read from one (a folder's tool, or
    /// the embedded catalogue's): what its stack traces name.
    pub file: Option<Arc<str>>,
    /// Where its compiled input schema is kept once a call needs it.
    validators: Validators,
    /// True if and only if its slug fits MCP's tool-name grammar.
    pub is_advertisable: bool,
    /// Where it is served from when it is an upstream MCP server's tool; `None` for a
    /// tool of the catalogue itself.
    pub federated: Option<Federated>,
    /// Its texts' vectors for search by meaning, once embedded (shared by every snapshot
    /// that holds the tool).
    vectors: OnceLock<Box<[Vector]>>,
}

/// An upstream MCP server's tool, named as that server knows it. Plain data: the
/// catalogue neither connects to upstreams nor knows MCP.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Federated {
    /// The server's name in the `mcpServers` file.
    pub server: String,
    /// The tool's own name on that server.
    pub tool: String,
}

impl Tool {
    /// Its texts' vectors, once embedded.
    pub fn vectors(&self) -> Option<&[Vector]> {
        self.vectors.get().map(|v| &**v)
    }

    /// Keeps its vectors; the first set stays (they depend on its text alone).
    pub(super) fn set_vectors(&self, vectors: Box<[Vector]>) {
        let _ = self.vectors.set(vectors);
    }

    /// The slug.
    pub fn slug(&self) -> &str {
        &self.manifest.slug
    }

    /// Its compiled input schema, compiled now if no call has needed it lately. A schema
    /// that does not compile makes every call of the tool fail (`INTERNAL_ERROR`, naming
    /// the tool and the compiler's complaint), reported on stderr when it is compiled;
    /// `catalogue check` compiles every schema and fails on it.
    pub fn validator(&self) -> Result<Arc<Compiled>, Error> {
        let slug = self.slug();
        self.validators
            .get(self.manifest.input_schema.shared(), |reason| {
                tracing::warn!("tool \"{slug}\" cannot be called: {reason}");
            })
            .map_err(|reason| Error::Internal(format!("tool \"{slug}\" cannot be called: {reason}")))
    }

    /// How many parameters its input schema declares, and how many of them are required.
    pub fn parameter_counts(&self) -> (usize, usize) {
        let schema = &self.manifest.input_schema.value();
        let props = schema
            .get("properties")
            .and_then(|p| p.as_object())
            .map_or(0, |p| p.len());
        let required = schema.get("required").and_then(|r| r.as_array()).map_or(0, |r| r.len());
        (props, required)
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

/// Removes from `manifest` each example whose params its input schema refuses, with a
/// [`Problem::BadExample`] for each. Only a tool with examples has its schema compiled
/// here (into `validators`, where its first call finds it); one whose schema does not
/// compile keeps its examples, since no call of it can run anyway.
fn drop_bad_examples(manifest: &mut Manifest, validators: &Validators, problems: &mut Vec<Problem>) {
    if manifest.examples.is_empty() {
        return;
    }
    let Some(validator) = validators.compiled(manifest.input_schema.shared()) else {
        return;
    };
    let mut index = 0;
    manifest.examples.retain(|example| {
        let kept = match validator.check(&manifest.slug, &example.params) {
            Ok(()) => true,
            Err(e) => {
                let violation = match e {
                    Error::InvalidParams { violations, .. } => violations.join("; "),
                    other => other.to_string(),
                };
                problems.push(Problem::BadExample {
                    slug: manifest.slug.clone(),
                    index,
                    violation,
                });
                false
            }
        };
        index += 1;
        kept
    });
}

/// An immutable catalogue view.
#[derive(Debug)]
pub struct Snapshot {
    tools: Vec<Arc<Tool>>,
    slugs: Vec<String>,
    origin: Origin,
    index: search::Index,
    /// A hash of the slugs in order: equal for two snapshots whose tools sit at the same
    /// places, so a page cursor given for one is good for the other.
    fingerprint: u64,
    /// Where its tools' compiled input schemas are kept (shared with the snapshots
    /// derived from it, and across refreshes).
    validators: Validators,
    /// The catalogue's resources, templates and prompts.
    extras: Arc<Extras>,
    /// Where its tools' vectors stand ([`crate::search::embedding`]).
    meaning: meaning::State,
    /// For a view of a snapshot ([`Snapshot::restricted`]), the tools it keeps; `None`
    /// for a whole catalogue.
    patterns: Option<Arc<ToolPatterns>>,
}

impl Snapshot {
    /// Builds a snapshot. Returns it with one [`Problem`] per tool that was set aside,
    /// dropped as a duplicate or withheld from `tools/list`, for the caller to report
    /// (once per process) or, in `catalogue check`, to fail on. No budget: for the
    /// operator's own commands (`catalogue check`, `catalogue eval`); a server builds
    /// [`Snapshot::within`] its budget.
    ///
    /// Unlike a server's build, it compiles every input schema now, so each one that does
    /// not compile is a [`Problem::SetAside`] the check fails on.
    pub fn build(entries: Vec<Entry>, origin: Origin) -> (Snapshot, Vec<Problem>) {
        let validators = Validators::new(VALIDATORS as u64);
        match Snapshot::within(entries, origin, &Budget::unlimited(), &validators) {
            Ok((snapshot, mut problems)) => {
                for tool in &snapshot.tools {
                    if let Err(reason) = validate::compile(&tool.manifest.input_schema.value()) {
                        problems.push(Problem::SetAside {
                            slug: tool.slug().to_owned(),
                            reason: reason.to_string(),
                        });
                    }
                }
                (snapshot, problems)
            }
            // An unlimited budget cannot run out; an empty snapshot is the safe answer anyway.
            Err(_) => (
                Snapshot {
                    tools: Vec::new(),
                    slugs: Vec::new(),
                    origin,
                    index: search::Index::default(),
                    fingerprint: 0,
                    validators,
                    extras: Arc::default(),
                    meaning: meaning::State::default(),
                    patterns: None,
                },
                Vec::new(),
            ),
        }
    }

    /// Builds a snapshot as [`Snapshot::build`] does, within `budget`: time is checked
    /// between tools, and the search index charges its entries to it. Input schemas are
    /// compiled on first use, into `validators`; only one that is not a JSON object is
    /// set aside now.
    pub fn within(
        entries: Vec<Entry>,
        origin: Origin,
        budget: &Budget,
        validators: &Validators,
    ) -> Result<(Snapshot, Vec<Problem>), OverBudget> {
        let mut problems = Vec::new();
        // Which entries repeat an earlier slug, found before the entries are consumed so
        // the set borrows the slugs instead of copying them.
        let repeats: Vec<bool> = {
            let mut seen = rustc_hash::FxHashSet::default();
            entries.iter().map(|e| !seen.insert(e.manifest.slug.as_str())).collect()
        };
        let mut tools = Vec::with_capacity(entries.len());
        for (mut entry, repeat) in entries.into_iter().zip(repeats) {
            budget.check_time()?;
            let slug = &entry.manifest.slug;
            if repeat {
                problems.push(Problem::Duplicate { slug: slug.clone() });
                continue;
            }
            if !entry.manifest.input_schema.is_object() {
                problems.push(Problem::SetAside {
                    slug: slug.clone(),
                    reason: NOT_AN_OBJECT.to_owned(),
                });
                continue;
            }
            let is_advertisable = slug::is_advertisable(slug);
            if !is_advertisable {
                problems.push(Problem::Withheld { slug: slug.clone() });
            }
            let cuts = trim::trim(&mut entry.manifest);
            if !cuts.is_empty() {
                problems.push(Problem::Trimmed {
                    slug: entry.manifest.slug.clone(),
                    cuts,
                });
            }
            drop_bad_examples(&mut entry.manifest, validators, &mut problems);
            tools.push(Arc::new(Tool {
                manifest: entry.manifest,
                code: entry.code,
                file: entry.file,
                validators: validators.clone(),
                is_advertisable,
                federated: None,
                vectors: OnceLock::new(),
            }));
        }
        Snapshot::index(tools, origin, budget, validators.clone()).map(|s| (s, problems))
    }

    /// This snapshot with the tools of upstream MCP servers added (each manifest with
    /// where it is served from), built within `budget`. This snapshot's own tools are
    /// shared, not built again. A `SERVER__TOOL` slug belongs to its upstream: a tool of
    /// this snapshot with the slug of an upstream tool is left out (a [`Problem::Refused`];
    /// the store refuses such a tool already when it knows the upstreams' namespaces),
    /// never served in its place; a second upstream tool with a slug is a duplicate.
    pub fn with_federated(
        &self,
        extra: Vec<(Manifest, Federated)>,
        budget: &Budget,
    ) -> Result<(Snapshot, Vec<Problem>), OverBudget> {
        let mut problems = Vec::new();
        let upstream: HashSet<&str> = extra.iter().map(|(m, _)| m.slug.as_str()).collect();
        let mut tools: Vec<Arc<Tool>> = Vec::with_capacity(self.tools.len() + extra.len());
        for tool in self.tools.iter().filter(|t| t.federated.is_none()) {
            if upstream.contains(tool.slug()) {
                problems.push(Problem::Refused {
                    kind: "tool",
                    name: tool.slug().to_owned(),
                    reason: "an upstream server's tool has this name, and it is served instead".to_owned(),
                });
            } else {
                tools.push(tool.clone());
            }
        }
        drop(upstream);
        let mut seen: HashSet<String> = tools.iter().map(|t| t.slug().to_owned()).collect();
        for (mut manifest, federated) in extra {
            budget.check_time()?;
            let slug = manifest.slug.clone();
            if !seen.insert(slug.clone()) {
                problems.push(Problem::Duplicate { slug });
                continue;
            }
            if !manifest.input_schema.is_object() {
                problems.push(Problem::SetAside {
                    slug,
                    reason: NOT_AN_OBJECT.to_owned(),
                });
                continue;
            }
            let cuts = trim::trim(&mut manifest);
            if !cuts.is_empty() {
                problems.push(Problem::Trimmed { slug, cuts });
            }
            tools.push(Arc::new(Tool {
                is_advertisable: slug::is_advertisable(&manifest.slug),
                manifest,
                code: None,
                file: None,
                validators: self.validators.clone(),
                federated: Some(federated),
                vectors: OnceLock::new(),
            }));
        }
        Snapshot::index(tools, self.origin, budget, self.validators.clone())
            .map(|s| (s.with_extras(self.extras.clone()), problems))
    }

    /// This snapshot carrying `extras` (the catalogue's resources, templates and prompts)
    /// in place of its own.
    #[must_use]
    pub fn with_extras(self, extras: Arc<Extras>) -> Snapshot {
        Snapshot { extras, ..self }
    }

    /// The catalogue's resources, templates and prompts.
    pub fn extras(&self) -> &Arc<Extras> {
        &self.extras
    }

    /// Sorts `tools` by slug and indexes them.
    fn index(
        mut tools: Vec<Arc<Tool>>,
        origin: Origin,
        budget: &Budget,
        validators: Validators,
    ) -> Result<Snapshot, OverBudget> {
        // Slugs are unique here, so an unstable sort gives the one order; it sorts the
        // slugs beside their positions, not the tools, so a comparison reads the two slugs
        // and nothing else.
        if !tools.is_sorted_by(|a, b| a.slug() <= b.slug()) {
            let mut order: Vec<(&str, usize)> = tools.iter().map(|t| t.slug()).zip(0..).collect();
            order.sort_unstable();
            let order: Vec<usize> = order.into_iter().map(|(_, i)| i).collect();
            let mut slots: Vec<Option<Arc<Tool>>> = tools.into_iter().map(Some).collect();
            tools = order.into_iter().filter_map(|i| slots[i].take()).collect();
        }
        let slugs: Vec<String> = tools.iter().map(|t| t.slug().to_owned()).collect();
        let index = search::Index::within(&tools, search::Tuning::default(), budget)?;
        let mut hasher = DefaultHasher::new();
        for slug in &slugs {
            slug.hash(&mut hasher);
        }
        Ok(Snapshot {
            tools,
            slugs,
            origin,
            index,
            fingerprint: hasher.finish(),
            validators,
            extras: Arc::default(),
            meaning: meaning::State::default(),
            patterns: None,
        })
    }

    /// A view of this snapshot holding only the tools `patterns` admits, for a principal
    /// whose tool policy they are: its own slug list and search index (so resolution,
    /// close matches, abbreviations and search know nothing of the other tools), the
    /// same tools (their compiled schemas and vectors shared) and the same extras. Costs
    /// one index build over the kept tools; the gateway keeps the views it builds.
    pub fn restricted(&self, patterns: Arc<ToolPatterns>) -> Snapshot {
        let kept: Vec<Arc<Tool>> = self
            .tools
            .iter()
            .filter(|t| patterns.admits(t.slug()))
            .cloned()
            .collect();
        let view = Snapshot::index(kept, self.origin, &Budget::unlimited(), self.validators.clone());
        // An unlimited budget cannot run out; an empty view is the safe answer anyway.
        let view = view.unwrap_or_else(|_| Snapshot {
            tools: Vec::new(),
            slugs: Vec::new(),
            origin: self.origin,
            index: search::Index::default(),
            fingerprint: 0,
            validators: self.validators.clone(),
            extras: Arc::default(),
            meaning: meaning::State::default(),
            patterns: None,
        });
        Snapshot {
            extras: self.extras.clone(),
            patterns: Some(patterns),
            ..view
        }
    }

    /// For a view ([`Snapshot::restricted`]), the patterns of the tools it keeps.
    pub fn patterns(&self) -> Option<&Arc<ToolPatterns>> {
        self.patterns.as_ref()
    }

    /// Returns true if and only if a tool named `name` belongs in this view (always, for
    /// a whole catalogue): how lists of built-in tools, which no snapshot holds, are
    /// held to a view's policy.
    pub fn admits(&self, name: &str) -> bool {
        self.patterns.as_ref().is_none_or(|p| p.admits(name))
    }

    /// A hash of the slugs in order, which page cursors carry: a cursor of another
    /// snapshot with the same slugs still points at the same tool.
    pub fn fingerprint(&self) -> u64 {
        self.fingerprint
    }

    /// About how many bytes of heap its search index holds.
    pub fn index_bytes(&self) -> usize {
        self.index.heap_bytes()
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
        match slug::resolve(&self.slugs, wanted) {
            Ok(i) => Ok(&self.tools[i]),
            Err(Error::ToolNotFound { slug, .. }) => Err(Error::ToolNotFound {
                candidates: self.close_matches(&slug),
                slug,
            }),
            Err(e) => Err(e),
        }
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

    /// Slugs that look like `wanted`, best first: slug distance first (typos), then the
    /// search ranker (a vague slug such as `validate-env` still finds `env-validator`).
    /// Both are bounded: long names are not compared, long queries not run.
    pub fn close_matches(&self, wanted: &str) -> Vec<String> {
        let mut found = slug::close_matches(&self.slugs, wanted);
        if found.len() < CLOSE_MATCHES
            && let Ok(hits) = self.index.search(wanted, CLOSE_MATCHES)
        {
            // Only hits close to the best one: a weak partial match is noise, not advice.
            let floor = hits.first().map_or(0.0, |h| h.score * 0.5);
            for hit in hits.into_iter().filter(|h| h.score >= floor) {
                let slug = &self.slugs[hit.doc];
                if found.len() < CLOSE_MATCHES && !found.contains(slug) {
                    found.push(slug.clone());
                }
            }
        }
        found
    }

    /// Where its tools' vectors stand.
    fn meaning_state(&self) -> &meaning::State {
        &self.meaning
    }

    /// The tools best matching `query` by words and by closeness to `query_vector` (its
    /// embedding), best first, each with its hit; lexical where a tool lacks vectors.
    pub fn search_by_meaning(
        &self,
        query: &str,
        query_vector: &[f32; DIM],
        limit: usize,
    ) -> Result<Vec<(&Arc<Tool>, Hit)>, QueryError> {
        let cosine: Option<Vec<f32>> = self
            .tools
            .iter()
            .map(|t| Some(search::meaning::closeness(t.vectors()?, query_vector)))
            .collect();
        Ok(self
            .index
            .search_fused(query, cosine.as_deref().unwrap_or_default(), limit)?
            .into_iter()
            .map(|h| (&self.tools[h.doc], h))
            .collect())
    }

    /// Why `query` cannot be searched, if it cannot (empty, only stop words): cheap, so a
    /// query is refused before its embedding is computed.
    pub fn check_query(&self, query: &str) -> Result<(), QueryError> {
        self.index.check(query)
    }

    /// The tools best matching `query`, best first, each with its hit.
    pub fn search(&self, query: &str, limit: usize) -> Result<Vec<(&Arc<Tool>, Hit)>, QueryError> {
        Ok(self
            .index
            .search(query, limit)?
            .into_iter()
            .map(|h| (&self.tools[h.doc], h))
            .collect())
    }
}

/// The embedding job fills a snapshot's tools' vectors and keeps its state on it.
impl Corpus for Snapshot {
    fn members(&self) -> Vec<&dyn Embeddable> {
        self.tools().iter().map(|t| &**t as &dyn Embeddable).collect()
    }

    fn state(&self) -> &meaning::State {
        self.meaning_state()
    }
}

impl Embeddable for Tool {
    fn vectors(&self) -> Option<&[Vector]> {
        Tool::vectors(self)
    }

    fn set_vectors(&self, vectors: Box<[Vector]>) {
        Tool::set_vectors(self, vectors);
    }
}

#[cfg(test)]
#[path = "snapshot_tests.rs"]
mod tests;
