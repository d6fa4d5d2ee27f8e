//! Where the current snapshot lives and how it is refreshed.
//!
//! Local sources are read once, when the store opens (so a missing folder stops the
//! server before it starts), and built into a snapshot on first use — building
//! (parsing manifests, search index) is most of a cold start, and a client's `initialize` does
//! not need it. An HTTP catalogue is cached with moka for the configured
//! lifetime (zero fetches on every request); concurrent refreshes coalesce into one fetch,
//! a 304 re-arms the snapshot held, and a failed refresh keeps serving the last good
//! snapshot. With no good snapshot yet, each request gets the fetch error
//! (`API_UNREACHABLE`, retryable), so the server keeps running and explains itself.
//!
//! Every build (parsing a fetched list included) runs on a blocking thread, never on the
//! async workers, within [`SNAPSHOT_BUILD_TIME`] and [`INDEX_ENTRIES`]. A build over
//! budget fails like a fetch: the last good snapshot stays in service and stderr says
//! why; the same list is not built again until the API serves another one.

use std::collections::HashSet;
use std::hash::{Hash, Hasher};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::FutureExt;
use futures::future::{BoxFuture, Shared};
use moka::future::Cache;

use super::SourceSpec;
use super::extras::Extras;
use super::load::{self, Loaded};
use super::reserved::Reserved;
use super::snapshot::{Origin, Snapshot};
use crate::api::{ApiClient, ListAnswer};
use crate::error::Error;
use crate::limits::{INDEX_ENTRIES, SNAPSHOT_BUILD_TIME};
use crate::search::Budget;
use crate::validate::Validators;

/// Problems already reported on stderr, shared with the build threads.
type Reported = Arc<Mutex<HashSet<String>>>;

/// A build running (or done) on a blocking thread, awaited by any number of requests.
type Building = Shared<BoxFuture<'static, Result<Arc<Snapshot>, Error>>>;

/// The catalogue of one server.
#[derive(Debug)]
pub struct Store {
    inner: Inner,
    reported: Reported,
    /// What no resource or prompt of the catalogue may take.
    reserved: Arc<Reserved>,
    /// What one build may spend: time and index entries.
    budget: (Duration, usize),
    /// Compiled input schemas, shared by every snapshot this store builds.
    validators: Validators,
}

#[derive(Debug)]
enum Inner {
    Static(Box<Local>),
    Http(Box<Http>),
}

/// A local source, built once on first use.
#[derive(Debug)]
struct Local {
    /// What the build starts from: `None` for the embedded catalogue (compiled in, it
    /// cannot be missing, so even reading it waits), else what was read at open. Taken
    /// by the build.
    read: Mutex<Option<Read>>,
    /// The one build, started by the first request. It runs to its end on its own
    /// thread even when every request waiting for it is dropped, and keeps its outcome.
    built: std::sync::OnceLock<Building>,
}

/// What a local source's build starts from: a source is checked at open (a missing file
/// or folder stops the server with its reason) but read by the build, off the async
/// workers. Reading a 100,000-tool file (65 MB) at open held `initialize` 38 ms; parsing
/// it there, seconds.
#[derive(Debug)]
enum Read {
    /// A folder, read file by file by the build.
    Dir(std::path::PathBuf),
    /// A catalogue file opened at open (its path names it), read and parsed by the build.
    File(String, std::fs::File),
}

#[derive(Debug)]
struct Http {
    client: ApiClient,
    /// `None` when the lifetime is zero: every request fetches.
    cache: Option<Cache<(), Arc<Snapshot>>>,
    last_good: Mutex<Option<(Arc<Snapshot>, Option<String>)>>,
    /// The last list that could not be built (a hash of its body) and why, so a list
    /// over budget costs one build, not one per refresh.
    failed: Mutex<Option<(u64, Error)>>,
}

impl Store {
    /// Opens a source. Local sources are checked now (a missing file or folder is an
    /// error), then read and built off the async workers on first use (`prepare` starts
    /// it); an HTTP catalogue is fetched on first use, so a server starts even while its
    /// API is down. No tool, resource or prompt of the catalogue may take what `reserved`
    /// names.
    /// `ttl` is the lifetime of an HTTP catalogue, `validators` how many compiled input
    /// schemas are kept.
    pub fn open(
        source: &SourceSpec,
        client: Option<ApiClient>,
        (ttl, validators): (Duration, usize),
        reserved: Reserved,
    ) -> Result<Store, String> {
        let reserved = Arc::new(reserved);
        let validators = Validators::new(validators as u64);
        let loaded = match source {
            SourceSpec::Embedded => None,
            SourceSpec::Dir(path) => Some(Read::Dir(load::check_dir(path).map_err(|e| e.to_string())?)),
            SourceSpec::File(path) => Some(Read::File(
                path.display().to_string(),
                load::open_file(path).map_err(|e| e.to_string())?,
            )),
            SourceSpec::Http(base) => {
                let client = client.ok_or_else(|| format!("no API client for {base}"))?;
                let cache = (!ttl.is_zero()).then(|| Cache::builder().max_capacity(1).time_to_live(ttl).build());
                let http = Http {
                    client,
                    cache,
                    last_good: Mutex::new(None),
                    failed: Mutex::new(None),
                };
                return Ok(Store {
                    inner: Inner::Http(Box::new(http)),
                    reported: Reported::default(),
                    reserved,
                    budget: (SNAPSHOT_BUILD_TIME, INDEX_ENTRIES),
                    validators,
                });
            }
        };
        let local = Local {
            read: Mutex::new(loaded),
            built: std::sync::OnceLock::new(),
        };
        Ok(Store {
            inner: Inner::Static(Box::new(local)),
            reported: Reported::default(),
            reserved,
            budget: (SNAPSHOT_BUILD_TIME, INDEX_ENTRIES),
            validators,
        })
    }

    /// The current snapshot, refreshing it first when it has expired.
    pub async fn snapshot(&self) -> Result<Arc<Snapshot>, Error> {
        match &self.inner {
            // The build runs on a blocking thread; the shared future holds its outcome, so
            // a caller dropped while it runs neither loses the source nor the snapshot.
            Inner::Static(local) => {
                let building = local.built.get_or_init(|| {
                    let loaded = lock(&local.read).take();
                    let reported = self.reported.clone();
                    let reserved = self.reserved.clone();
                    let budget = self.budget;
                    let validators = self.validators.clone();
                    off_workers(move || {
                        let loaded = match loaded {
                            None => Ok(load::embedded()),
                            Some(Read::Dir(path)) => load::dir(&path),
                            Some(Read::File(origin, file)) => load::read_opened(&origin, file)
                                .and_then(|bytes| load::from_file_bytes(&origin, &bytes)),
                        };
                        let built = loaded.map_err(|e| e.to_string()).and_then(|loaded| {
                            build(&reported, &reserved, loaded, Origin::Local, (budget, &validators))
                        });
                        counted(&built);
                        built.map_err(|reason| {
                            tracing::warn!("the catalogue was not built: {reason}");
                            Error::Internal(format!("the catalogue was not built: {reason}"))
                        })
                    })
                });
                building.clone().await
            }
            Inner::Http(http) => match &http.cache {
                Some(cache) => cache
                    .try_get_with((), self.refresh(http))
                    .await
                    .map_err(|e| (*e).clone()),
                None => self.refresh(http).await,
            },
        }
    }

    /// The latest snapshot built or fetched, without waiting or refreshing; `None` while
    /// there is none yet.
    pub fn latest(&self) -> Option<Arc<Snapshot>> {
        match &self.inner {
            Inner::Static(local) => local.built.get()?.peek()?.as_ref().ok().cloned(),
            Inner::Http(http) => lock(&http.last_good).as_ref().map(|(snapshot, _)| snapshot.clone()),
        }
    }

    /// Builds a local source's snapshot now; nothing for an HTTP catalogue, which is
    /// fetched on first use.
    pub async fn prepare(&self) {
        if let Inner::Static(_) = &self.inner {
            let _ = self.snapshot().await;
        }
    }

    /// How long a fetched catalogue is kept (zero for local sources and for TTL 0).
    pub fn ttl(&self) -> Duration {
        match &self.inner {
            Inner::Http(http) => http
                .cache
                .as_ref()
                .and_then(|c| c.policy().time_to_live())
                .unwrap_or_default(),
            Inner::Static(_) => Duration::ZERO,
        }
    }

    /// The API client, when the catalogue is served over HTTP.
    pub fn api(&self) -> Option<&ApiClient> {
        match &self.inner {
            Inner::Http(http) => Some(&http.client),
            Inner::Static(_) => None,
        }
    }

    async fn refresh(&self, http: &Http) -> Result<Arc<Snapshot>, Error> {
        let (held, etag) = match lock(&http.last_good).as_ref() {
            Some((s, e)) => (Some(s.clone()), e.clone()),
            None => (None, None),
        };
        let outcome = match http.client.list(etag.as_deref()).await {
            Ok(ListAnswer::NotModified) => match &held {
                Some(s) => Ok(s.clone()),
                // A 304 to a request without an ETag is the API's bug; fetch in full.
                None => Err(Error::Api {
                    status: 304,
                    message: "304 Not Modified without a cached list".into(),
                }),
            },
            Ok(ListAnswer::Fresh { body, etag }) => {
                let hash = {
                    let mut h = std::hash::DefaultHasher::new();
                    body.hash(&mut h);
                    h.finish()
                };
                let known = lock(&http.failed)
                    .as_ref()
                    .filter(|(failed, _)| *failed == hash)
                    .map(|(_, e)| e.clone());
                let built = match (known, &held) {
                    // Said once already, when that list failed: keep serving quietly.
                    (Some(_), Some(held)) => {
                        crate::metrics::get().refresh("failed", None);
                        return Ok(held.clone());
                    }
                    (Some(e), None) => Err(e),
                    (None, _) => {
                        let base = http.client.base().to_owned();
                        let reported = self.reported.clone();
                        let reserved = self.reserved.clone();
                        let budget = self.budget;
                        let validators = self.validators.clone();
                        let built = off_workers(move || {
                            let doc = load::parse_list(&body).map_err(|e| Error::Api {
                                status: 502,
                                message: format!("the tool list from {base} is unusable: {e}"),
                            })?;
                            // The list's text is read by now: freed before the build gives the
                            // scratch back, it goes back too (at 100,000 tools a 60 MB list
                            // freed after the trim left 236 MB resident instead of 191 in
                            // two runs of seven).
                            drop(body);
                            build(
                                &reported,
                                &reserved,
                                load::from_document(&base, doc, false),
                                Origin::Remote,
                                (budget, &validators),
                            )
                            .map_err(|reason| Error::Api {
                                status: 502,
                                message: format!("the tool list from {base} was not built: {reason}"),
                            })
                        })
                        .await;
                        // With a snapshot held, the fall-back below says why.
                        if let (Err(e), None) = (&built, &held) {
                            tracing::warn!("{e}");
                        }
                        *lock(&http.failed) = built.as_ref().err().map(|e| (hash, e.clone()));
                        built
                    }
                };
                built.inspect(|snapshot| *lock(&http.last_good) = Some((snapshot.clone(), etag)))
            }
            Err(e) => Err(e),
        };
        match &outcome {
            Ok(snapshot) if !held.as_ref().is_some_and(|h| Arc::ptr_eq(h, snapshot)) => {
                crate::metrics::get().refresh("built", Some(snapshot.tools().len()));
            }
            Ok(_) => crate::metrics::get().refresh("unchanged", None),
            Err(_) => crate::metrics::get().refresh("failed", None),
        }
        match (outcome, held) {
            (Ok(snapshot), _) => Ok(snapshot),
            (Err(e), Some(held)) => {
                tracing::warn!("catalogue refresh failed, serving the last good catalogue: {e}");
                Ok(held)
            }
            (Err(e), None) => Err(e),
        }
    }
}

/// Counts a local source's build in `/metrics`.
fn counted<E>(built: &Result<Arc<Snapshot>, E>) {
    match built {
        Ok(snapshot) => crate::metrics::get().refresh("built", Some(snapshot.tools().len())),
        Err(_) => crate::metrics::get().refresh("failed", None),
    }
}

/// Runs `work` on a blocking thread, away from the async workers, as a future any number
/// of requests can await; a panic in it is an internal error, not a crash.
fn off_workers(work: impl FnOnce() -> Result<Arc<Snapshot>, Error> + Send + 'static) -> Building {
    tokio::task::spawn_blocking(work)
        .map(|joined| joined.unwrap_or_else(|e| Err(Error::Internal(format!("the catalogue build failed: {e}")))))
        .boxed()
        .shared()
}

/// Builds a snapshot within `(time, entries)`, with the source's resources and prompts
/// (less the tools, resources and prompts that take a `reserved` name), and reports each problem on stderr the first time this process sees it, not once per
/// refresh. Over budget, says why.
fn build(
    reported: &Mutex<HashSet<String>>,
    reserved: &Reserved,
    loaded: Loaded,
    origin: Origin,
    ((time, entries), validators): ((Duration, usize), &Validators),
) -> Result<Arc<Snapshot>, String> {
    let budget = Budget::new(time, entries);
    let (admitted, mut problems) = reserved.admit(loaded.entries);
    let (snapshot, built) = Snapshot::within(admitted, origin, &budget, validators).map_err(|e| e.to_string())?;
    problems.extend(built);
    let (extras, refused) = Extras::build(loaded.resources, loaded.prompts, reserved);
    problems.extend(refused);
    let snapshot = snapshot.with_extras(Arc::new(extras));
    let resident = crate::memory::resident_mb();
    // The build's scratch (parsed documents, the index builders' parts) is freed by now.
    crate::memory::give_back_free_memory();
    tracing::debug!(
        "catalogue built: {} in {} ms, search index ~{} MB; resident {} MB, {} MB after freeing the build's scratch",
        crate::plural::count(snapshot.tools().len(), "tool", "tools"),
        budget.elapsed().as_millis(),
        snapshot.index_bytes() / (1024 * 1024),
        resident,
        crate::memory::resident_mb()
    );
    let mut reported = lock(reported);
    for problem in loaded
        .problems
        .into_iter()
        .chain(problems.iter().map(ToString::to_string))
    {
        if reported.insert(problem.clone()) {
            tracing::warn!("{problem}");
        }
    }
    Ok(Arc::new(snapshot))
}

/// Locks a mutex, recovering the data if a panicking thread poisoned it: every value
/// kept behind these locks is replaced whole, so it is never half-written.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{Value, json};

    fn tool(slug: &str, words: usize) -> Value {
        let description: Vec<String> = (0..words).map(|i| format!("{slug}word{}", "x".repeat(i % 7))).collect();
        json!({"slug": slug, "description": description.join(" ")})
    }

    #[tokio::test]
    async fn a_list_over_budget_keeps_the_last_good_snapshot_until_a_good_one_comes() {
        let list = Arc::new(Mutex::new(json!({"tools": [tool("alpha", 3)]})));
        let served = list.clone();
        let app = axum::Router::new().route(
            "/api/tools",
            axum::routing::get(move || {
                let body = lock(&served).clone();
                async move { axum::Json(body) }
            }),
        );
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let base = format!("http://{}/api", listener.local_addr().unwrap());
        tokio::spawn(async move { axum::serve(listener, app).await });
        let client = ApiClient::new(&base, None, Duration::from_secs(30)).unwrap();
        let mut store = Store::open(
            &SourceSpec::Http(base),
            Some(client),
            (Duration::ZERO, crate::limits::VALIDATORS),
            Reserved::default(),
        )
        .unwrap();
        store.budget = (Duration::from_secs(60), 500);
        let slugs = |s: &Snapshot| s.tools().iter().map(|t| t.slug().to_owned()).collect::<Vec<_>>();

        assert_eq!(slugs(&store.snapshot().await.unwrap()), ["alpha"]);
        // Forty tools of forty distinct words each: far more than 500 entries.
        let big: Vec<Value> = (0..40).map(|i| tool(&format!("t{i}"), 40)).collect();
        *lock(&list) = json!({ "tools": big });
        assert_eq!(
            slugs(&store.snapshot().await.unwrap()),
            ["alpha"],
            "the last good snapshot"
        );
        let Inner::Http(http) = &store.inner else {
            unreachable!()
        };
        let failed = lock(&http.failed).clone();
        assert!(
            failed.is_some_and(|(_, e)| e.to_string().contains("more than 500 entries")),
            "the reason is kept"
        );
        assert_eq!(slugs(&store.snapshot().await.unwrap()), ["alpha"], "not built again");
        *lock(&list) = json!({"tools": [tool("alpha", 3), tool("beta", 3)]});
        assert_eq!(slugs(&store.snapshot().await.unwrap()), ["alpha", "beta"], "recovered");
        assert!(lock(&http.failed).is_none());
    }

    #[tokio::test]
    async fn a_first_build_over_budget_is_an_error_that_says_why() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("catalogue.json");
        let big: Vec<Value> = (0..40).map(|i| tool(&format!("t{i}"), 40)).collect();
        std::fs::write(&path, json!({ "tools": big }).to_string()).unwrap();
        let mut store = Store::open(
            &SourceSpec::File(path),
            None,
            (Duration::ZERO, crate::limits::VALIDATORS),
            Reserved::default(),
        )
        .unwrap();
        store.budget = (Duration::from_secs(60), 500);
        let err = store.snapshot().await.unwrap_err();
        assert!(err.to_string().contains("more than 500 entries"), "{err}");
    }

    /// `initialize` must not wait for a local catalogue to be read: open only checks the
    /// file or folder, the build reads it. Proven by changing each after open.
    #[tokio::test]
    async fn a_local_source_is_checked_at_open_and_read_by_the_build() {
        let open = |spec: &SourceSpec| {
            Store::open(
                spec,
                None,
                (Duration::ZERO, crate::limits::VALIDATORS),
                Reserved::default(),
            )
        };
        let slugs = |s: &Snapshot| s.tools().iter().map(|t| t.slug().to_owned()).collect::<Vec<_>>();
        let dir = tempfile::tempdir().unwrap();

        let file = dir.path().join("catalogue.json");
        let missing = open(&SourceSpec::File(file.clone())).unwrap_err();
        assert!(missing.starts_with("cannot read catalogue file"), "{missing}");
        let folder = open(&SourceSpec::File(dir.path().to_owned())).unwrap_err();
        assert!(folder.contains("it is a folder"), "{folder}");
        std::fs::write(&file, json!({"tools": [tool("alpha", 3)]}).to_string()).unwrap();
        let store = open(&SourceSpec::File(file.clone())).unwrap();
        std::fs::write(&file, json!({"tools": [tool("beta", 3)]}).to_string()).unwrap();
        assert_eq!(slugs(&store.snapshot().await.unwrap()), ["beta"]);

        let tools = dir.path().join("tools");
        let missing = open(&SourceSpec::Dir(tools.clone())).unwrap_err();
        assert!(missing.starts_with("cannot read catalogue folder"), "{missing}");
        std::fs::create_dir(&tools).unwrap();
        let store = open(&SourceSpec::Dir(tools.clone())).unwrap();
        std::fs::create_dir(tools.join("gamma")).unwrap();
        std::fs::write(tools.join("gamma/tool.json"), tool("gamma", 3).to_string()).unwrap();
        assert_eq!(slugs(&store.snapshot().await.unwrap()), ["gamma"]);
    }
}
