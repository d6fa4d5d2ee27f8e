//! When search ranks by meaning: every tool's texts are embedded once, off the request
//! path, on a background thread; until a snapshot's tools all have vectors its searches
//! are lexical, then hybrid. Vectors come from the disk cache when it has them
//! ([`VectorCache`]), else from the model, within a time budget: a catalogue too big to
//! embed within it stays lexical, and stderr says so once.

use std::borrow::Cow;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use super::document::Indexable;
use super::meaning::{self, DIM, Embedder, Vector};
use super::vector_cache::{self, Key, VectorCache};

/// How search ranks (`TOOLGATE_SEARCH`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SearchMode {
    /// Lexical ranking fused with closeness in meaning (the default).
    Hybrid,
    /// The lexical ranker alone: the model is never loaded.
    Lexical,
}

impl SearchMode {
    /// Reads the setting; an error names what it accepts.
    pub fn parse(raw: &str) -> Result<SearchMode, String> {
        match raw.trim().to_ascii_lowercase().as_str() {
            "" | "hybrid" => Ok(SearchMode::Hybrid),
            "lexical" => Ok(SearchMode::Lexical),
            other => Err(format!(
                "TOOLGATE_SEARCH is \"{other}\": it takes hybrid (words and meaning) or lexical (words only)"
            )),
        }
    }
}

/// How search ranks and what embedding may cost: `TOOLGATE_SEARCH`,
/// `TOOLGATE_EMBED_CACHE`, `TOOLGATE_EMBED_BUDGET_MS`, checked.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Settings {
    /// Hybrid or lexical.
    pub mode: SearchMode,
    /// Where vectors are cached between runs; `None`: not cached.
    pub cache_dir: Option<PathBuf>,
    /// The longest a catalogue's embedding may be estimated to take.
    pub budget: Duration,
}

impl Settings {
    /// Reads the three settings. `cache` is a directory, `off`, or unset for the user's
    /// cache directory (`$XDG_CACHE_HOME/toolgate`, else `~/.cache/toolgate`).
    pub fn parse(mode: &str, cache: Option<&str>, budget_ms: u64) -> Result<Settings, String> {
        let cache_dir = match cache.map(str::trim) {
            Some("off") => None,
            Some(dir) if !dir.is_empty() => Some(PathBuf::from(dir)),
            _ => default_cache_dir(),
        };
        Ok(Settings {
            mode: SearchMode::parse(mode)?,
            cache_dir,
            budget: Duration::from_millis(budget_ms),
        })
    }
}

/// `$XDG_CACHE_HOME/toolgate`, else `$HOME/.cache/toolgate`; none without either.
fn default_cache_dir() -> Option<PathBuf> {
    let nonempty = |k: &str| std::env::var_os(k).filter(|v| !v.is_empty()).map(PathBuf::from);
    nonempty("XDG_CACHE_HOME")
        .or_else(|| nonempty("HOME").map(|h| h.join(".cache")))
        .map(|d| d.join("toolgate"))
}

/// Which ranker served a search, said in its answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ranker {
    /// Words only: the setting, or the vectors are not ready (or over budget).
    Lexical,
    /// Words and meaning.
    Hybrid,
}

impl Ranker {
    /// Its name in answers.
    pub fn label(self) -> &'static str {
        match self {
            Ranker::Lexical => "lexical",
            Ranker::Hybrid => "hybrid",
        }
    }
}

/// Where a corpus's vectors stand.
mod state {
    /// No job asked for yet.
    pub(super) const NEW: u8 = 0;
    /// A job is estimating, or embedding what it estimated to take a moment: searches
    /// wait for it.
    pub(super) const EMBEDDING: u8 = 1;
    /// A job is embedding what it estimated to take longer than a search should wait:
    /// searches are lexical until it ends.
    pub(super) const EMBEDDING_LONG: u8 = 4;
    /// Every tool has its vectors: searches are hybrid.
    pub(super) const READY: u8 = 2;
    /// Over budget, or the model cannot be used: searches stay lexical.
    pub(super) const LEXICAL: u8 = 3;
}

/// Where one corpus's vectors stand: kept with the corpus (a catalogue snapshot), so a
/// new snapshot starts over and an old one's state goes with it.
#[derive(Debug, Default)]
pub struct State(AtomicU8);

/// A tool as the embedding job sees it: its texts (what [`Indexable`] gives) and where its
/// vectors are kept.
pub trait Embeddable: Indexable + Send + Sync {
    /// Its texts' vectors, once embedded.
    fn vectors(&self) -> Option<&[Vector]>;
    /// Keeps its vectors (the first set stays: they depend on its texts alone).
    fn set_vectors(&self, vectors: Box<[Vector]>);
}

/// What one job embeds: a catalogue snapshot's tools, and where it says how far it got.
/// Search knows no catalogue: the catalogue implements this for its snapshots.
pub trait Corpus: Send + Sync + 'static {
    /// Its tools, in order.
    fn members(&self) -> Vec<&dyn Embeddable>;
    /// Where its vectors stand.
    fn state(&self) -> &State;
}

/// CPU time one token costs to embed, for the budget's estimate (measured on the 2-core
/// machine with the int8 forward pass; batched tool texts).
const CPU_PER_TOKEN: Duration = Duration::from_micros(250);

/// A job estimated to take at most this long is waited for by searches, so a small
/// catalogue's first search already ranks by meaning (the embedded one's 182 texts
/// take about a second with no cache, milliseconds with one).
const WAIT_FOR_JOB: Duration = Duration::from_secs(3);

/// The longest a search waits for a job it was told is short.
const WAIT_MAX: Duration = Duration::from_secs(10);

/// How many query vectors are kept: agents repeat their searches.
const QUERIES_KEPT: u64 = 1024;

/// Embeds snapshots' tools in the background and queries on demand: one per server.
#[derive(Debug)]
pub struct Meaning {
    mode: SearchMode,
    cache_dir: Option<PathBuf>,
    budget: Duration,
    /// Held by the job running, so jobs run one at a time and a later one finds the
    /// earlier one's vectors.
    job: Mutex<()>,
    /// Bumped whenever a snapshot's state changes, for searches waiting on it.
    changes: tokio::sync::watch::Sender<u64>,
    queries: moka::sync::Cache<String, Arc<[f32; DIM]>>,
}

impl Meaning {
    /// Ranks as `settings` say: caching vectors in their directory (none: computed every
    /// run), embedding a catalogue only when its estimate fits in their budget.
    pub fn new(settings: Settings) -> Meaning {
        Meaning {
            mode: settings.mode,
            cache_dir: settings.cache_dir,
            budget: settings.budget,
            job: Mutex::new(()),
            changes: tokio::sync::watch::Sender::new(0),
            queries: moka::sync::Cache::new(QUERIES_KEPT),
        }
    }

    /// Lexical search only, with no model: for tests and commands that do not rank.
    pub fn lexical() -> Meaning {
        Meaning::new(Settings {
            mode: SearchMode::Lexical,
            cache_dir: None,
            budget: Duration::ZERO,
        })
    }

    /// How search ranks.
    pub fn mode(&self) -> SearchMode {
        self.mode
    }

    /// Starts embedding `snapshot`'s tools on a background thread, once per snapshot.
    pub fn prepare<C: Corpus>(self: &Arc<Self>, snapshot: &Arc<C>) {
        if self.mode == SearchMode::Lexical {
            return;
        }
        let cell = &snapshot.state().0;
        if cell
            .compare_exchange(state::NEW, state::EMBEDDING, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return;
        }
        let (me, snapshot) = (self.clone(), snapshot.clone());
        let spawned = std::thread::Builder::new()
            .name("toolgate-embed".into())
            .spawn(move || {
                let outcome = me.embed_snapshot(&*snapshot);
                me.set(&*snapshot, outcome);
                // The batches' activations and the cache's table are freed by now.
                let before = crate::memory::resident_mb();
                crate::memory::give_back_free_memory();
                tracing::debug!(
                    "catalogue embedded; resident {before} MB, {} MB after freeing the job's scratch",
                    crate::memory::resident_mb()
                );
            });
        if let Err(e) = spawned {
            tracing::warn!("search by meaning is off: no thread to embed the catalogue ({e})");
            cell.store(state::LEXICAL, Ordering::Release);
        }
    }

    /// Moves `snapshot` to `state` and wakes the searches waiting on it.
    fn set(&self, snapshot: &dyn Corpus, state: u8) {
        snapshot.state().0.store(state, Ordering::Release);
        self.changes.send_modify(|n| *n += 1);
    }

    /// Embeds what `snapshot`'s tools lack and says how it ended ([`state`]).
    fn embed_snapshot(&self, snapshot: &dyn Corpus) -> u8 {
        let _one_at_a_time = self.job.lock().unwrap_or_else(PoisonError::into_inner);
        let started = Instant::now();
        let embedder = match Embedder::get() {
            Ok(e) => e,
            Err(e) => {
                tracing::warn!("search by meaning is off: the model cannot be used ({e}); search is lexical");
                return state::LEXICAL;
            }
        };
        let members = snapshot.members();
        let lacking: Vec<&dyn Embeddable> = members.iter().copied().filter(|t| t.vectors().is_none()).collect();
        if lacking.is_empty() {
            return state::READY;
        }
        let cache = self
            .cache_dir
            .as_ref()
            .map(|d| VectorCache::new(d, embedder.model_id()));
        let mut known = cache.as_ref().map(VectorCache::load).unwrap_or_default();
        let held = known.len();
        let compiled = vector_cache::compiled_in();
        // Per tool, its texts' keys; the texts no cache holds, once each: those compiled
        // in are taken from there (and added to the cache), the rest embedded.
        let mut wanted: Vec<(&dyn Embeddable, Vec<Key>)> = Vec::with_capacity(lacking.len());
        let mut missing: Vec<(Key, Cow<'_, str>)> = Vec::new();
        let mut from_binary: Vec<(Key, Vector)> = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for tool in lacking {
            let texts = meaning::texts(tool);
            let keys: Vec<Key> = texts
                .iter()
                .map(|t| vector_cache::key(embedder.model_id(), t))
                .collect();
            for (key, text) in keys.iter().zip(texts) {
                if known.contains_key(key) || !seen.insert(*key) {
                    continue;
                }
                match compiled.get(key) {
                    Some(vector) => from_binary.push((*key, vector.clone())),
                    None => missing.push((*key, text)),
                }
            }
            wanted.push((tool, keys));
        }
        drop(compiled);
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(2));
        let tokens: usize = missing.iter().map(|(_, t)| embedder.tokens(t)).sum();
        let estimate = CPU_PER_TOKEN * u32::try_from(tokens).unwrap_or(u32::MAX) / threads as u32;
        if estimate > self.budget {
            tracing::warn!(
                "search by meaning is off for this catalogue: embedding {} texts ({tokens} tokens) would take about {} s, over the budget of {} s (TOOLGATE_EMBED_BUDGET_MS); search is lexical",
                missing.len(),
                estimate.as_secs(),
                self.budget.as_secs()
            );
            return state::LEXICAL;
        }
        if estimate > WAIT_FOR_JOB {
            self.set(snapshot, state::EMBEDDING_LONG);
        }
        let Some(computed) = embed_all(embedder, &missing, threads, started + self.budget * 2) else {
            tracing::warn!(
                "search by meaning is off for this catalogue: embedding failed or ran past twice its budget of {} s; search is lexical",
                self.budget.as_secs()
            );
            return state::LEXICAL;
        };
        let embedded = computed.len();
        let mut new: Vec<(Key, Vector)> = missing.iter().map(|(k, _)| *k).zip(computed).collect();
        new.extend(from_binary);
        known.extend(new.iter().cloned());
        for (tool, keys) in &wanted {
            let vectors: Vec<Vector> = keys.iter().filter_map(|k| known.get(k).cloned()).collect();
            tool.set_vectors(vectors.into_boxed_slice());
        }
        if let Some(cache) = &cache {
            let keep: Vec<(Key, Vector)> = wanted
                .iter()
                .flat_map(|(_, keys)| keys.iter().filter_map(|k| Some((*k, known.get(k)?.clone()))))
                .collect();
            if let Err(e) = cache.store(&new, &keep, held) {
                tracing::warn!("the vectors could not be cached in {}: {e}", cache.path().display());
            }
        }
        tracing::info!(
            "search by meaning ready: {} tools, {embedded} texts embedded in {:.1} s, {} from the cache, {} compiled in",
            members.len(),
            started.elapsed().as_secs_f64(),
            wanted.iter().map(|(_, k)| k.len()).sum::<usize>() - new.len(),
            new.len() - embedded,
        );
        state::READY
    }

    /// Which ranker `snapshot`'s searches get: hybrid once its tools have vectors;
    /// while a job it estimated to be short runs, after waiting for it; else lexical.
    pub async fn ranker(&self, snapshot: &dyn Corpus) -> Ranker {
        if self.mode == SearchMode::Lexical {
            return Ranker::Lexical;
        }
        let mut changes = self.changes.subscribe();
        let deadline = tokio::time::Instant::now() + WAIT_MAX;
        loop {
            match snapshot.state().0.load(Ordering::Acquire) {
                state::READY => return Ranker::Hybrid,
                state::EMBEDDING => {
                    if tokio::time::timeout_at(deadline, changes.changed()).await.is_err() {
                        return Ranker::Lexical;
                    }
                }
                _ => return Ranker::Lexical,
            }
        }
    }

    /// The ranker `snapshot`'s searches get once its job, however long, has ended: for
    /// `catalogue eval`, which measures both.
    pub async fn settled(&self, snapshot: &dyn Corpus) -> Ranker {
        if self.mode == SearchMode::Lexical {
            return Ranker::Lexical;
        }
        let mut changes = self.changes.subscribe();
        loop {
            match snapshot.state().0.load(Ordering::Acquire) {
                state::READY => return Ranker::Hybrid,
                state::EMBEDDING | state::EMBEDDING_LONG => {
                    if changes.changed().await.is_err() {
                        return Ranker::Lexical;
                    }
                }
                _ => return Ranker::Lexical,
            }
        }
    }

    /// `query`'s vector (kept for repeats); `None` when the model cannot be used. Costs
    /// milliseconds of CPU: call it off the async workers.
    pub fn query(&self, query: &str) -> Option<Arc<[f32; DIM]>> {
        if let Some(v) = self.queries.get(query) {
            return Some(v);
        }
        let v = Arc::new(Embedder::get().ok()?.embed(query).ok()?);
        self.queries.insert(query.to_owned(), v.clone());
        Some(v)
    }
}

impl Meaning {
    /// The vectors of many queries at once, in order, each bit for bit what
    /// [`Meaning::query`] gives it, computed on both cores and not kept: for `catalogue
    /// eval`, which embeds thousands. `None` when the model cannot be used.
    pub fn queries(&self, queries: &[&str]) -> Option<Vec<[f32; DIM]>> {
        /// Queries embedded together.
        const BATCH: usize = 64;
        let embedder = Embedder::get().ok()?;
        let threads = std::thread::available_parallelism().map_or(1, |n| n.get().min(2));
        let chunk = queries.len().div_ceil(threads).max(1);
        std::thread::scope(|scope| {
            let parts: Vec<_> = queries
                .chunks(chunk)
                .map(|part| {
                    scope.spawn(move || {
                        let mut out = Vec::with_capacity(part.len());
                        for batch in part.chunks(BATCH) {
                            out.extend(embedder.embed_all(batch).ok()?);
                        }
                        Some(out)
                    })
                })
                .collect();
            let mut all = Vec::with_capacity(queries.len());
            for part in parts {
                all.extend(part.join().ok()??);
            }
            Some(all)
        })
    }
}

/// The vectors of `texts`, in order, computed on `threads` threads; `None` past `deadline`.
fn embed_all(
    embedder: Embedder,
    texts: &[(Key, Cow<'_, str>)],
    threads: usize,
    deadline: Instant,
) -> Option<Vec<Vector>> {
    /// Texts embedded together: one batch amortises the model's weights over its tokens.
    const BATCH: usize = 16;
    let chunk = texts.len().div_ceil(threads.max(1)).max(1);
    std::thread::scope(|scope| {
        let parts: Vec<_> = texts
            .chunks(chunk)
            .map(|part| {
                scope.spawn(move || {
                    let mut out = Vec::with_capacity(part.len());
                    for batch in part.chunks(BATCH) {
                        if Instant::now() > deadline {
                            return None;
                        }
                        let batch: Vec<&str> = batch.iter().map(|(_, t)| t.as_ref()).collect();
                        out.extend(embedder.embed_all(&batch).ok()?.iter().map(Vector::quantise));
                    }
                    Some(out)
                })
            })
            .collect();
        let mut all = Vec::with_capacity(texts.len());
        for part in parts {
            all.extend(part.join().ok()??);
        }
        Some(all)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_setting_takes_hybrid_or_lexical() {
        assert_eq!(SearchMode::parse(""), Ok(SearchMode::Hybrid));
        assert_eq!(SearchMode::parse(" Lexical "), Ok(SearchMode::Lexical));
        let e = SearchMode::parse("semantic").unwrap_err();
        assert!(e.contains("TOOLGATE_SEARCH") && e.contains("lexical"), "{e}");
    }

    #[test]
    fn the_cache_is_a_directory_off_or_the_users_cache() {
        let s = Settings::parse("hybrid", Some("/tmp/v"), 5_000).unwrap();
        assert_eq!(s.cache_dir, Some(PathBuf::from("/tmp/v")));
        assert_eq!(s.budget, Duration::from_secs(5));
        assert_eq!(Settings::parse("lexical", Some("off"), 1).unwrap().cache_dir, None);
        assert_eq!(Settings::parse("", None, 1).unwrap().cache_dir, default_cache_dir());
    }
}
