//! Where the current snapshot lives and how it is refreshed.
//!
//! Local sources are read once, when the store opens (so a missing folder stops the
//! server before it starts), and built into a snapshot on first use — building
//! (validators, search index) is most of a cold start, and a client's `initialize` does
//! not need it. An HTTP catalogue is cached with moka for the configured
//! lifetime (zero fetches on every request); concurrent refreshes coalesce into one fetch,
//! a 304 re-arms the snapshot held, and a failed refresh keeps serving the last good
//! snapshot. With no good snapshot yet, each request gets the fetch error
//! (`API_UNREACHABLE`, retryable), so the server keeps running and explains itself.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use moka::future::Cache;

use super::SourceSpec;
use super::load::{self, Loaded};
use super::snapshot::{Origin, Snapshot};
use crate::api::{ApiClient, ListAnswer};
use crate::error::Error;

/// The catalogue of one server.
#[derive(Debug)]
pub struct Store {
    inner: Inner,
    reported: Mutex<HashSet<String>>,
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
    read: Mutex<Option<Loaded>>,
    built: tokio::sync::OnceCell<Arc<Snapshot>>,
}

#[derive(Debug)]
struct Http {
    client: ApiClient,
    /// `None` when the lifetime is zero: every request fetches.
    cache: Option<Cache<(), Arc<Snapshot>>>,
    last_good: Mutex<Option<(Arc<Snapshot>, Option<String>)>>,
}

impl Store {
    /// Opens a source. Local sources are read now (a missing folder is an error) and built
    /// on first use; an HTTP catalogue is fetched on first use, so a server starts even
    /// while its API is down.
    pub fn open(source: &SourceSpec, client: Option<ApiClient>, ttl: Duration) -> Result<Store, String> {
        let loaded = match source {
            SourceSpec::Embedded => None,
            SourceSpec::Dir(path) => Some(load::dir(path)?),
            SourceSpec::File(path) => Some(load::file(path)?),
            SourceSpec::Http(base) => {
                let client = client.ok_or_else(|| format!("no API client for {base}"))?;
                let cache = (!ttl.is_zero()).then(|| Cache::builder().max_capacity(1).time_to_live(ttl).build());
                let http = Http {
                    client,
                    cache,
                    last_good: Mutex::new(None),
                };
                return Ok(Store {
                    inner: Inner::Http(Box::new(http)),
                    reported: Mutex::default(),
                });
            }
        };
        let local = Local {
            read: Mutex::new(loaded),
            built: tokio::sync::OnceCell::new(),
        };
        Ok(Store {
            inner: Inner::Static(Box::new(local)),
            reported: Mutex::default(),
        })
    }

    /// The current snapshot, refreshing it first when it has expired.
    pub async fn snapshot(&self) -> Result<Arc<Snapshot>, Error> {
        match &self.inner {
            // The build has no await point, so a caller dropping this future cannot leave
            // the source taken and the cell empty. A large catalogue takes a second to
            // build: on a multi-thread runtime the worker hands its other tasks on first.
            Inner::Static(local) => Ok(local
                .built
                .get_or_init(async || {
                    let build = || {
                        let loaded = lock(&local.read).take().unwrap_or_else(load::embedded);
                        build(&self.reported, loaded, Origin::Local)
                    };
                    match tokio::runtime::Handle::try_current().map(|h| h.runtime_flavor()) {
                        Ok(tokio::runtime::RuntimeFlavor::MultiThread) => tokio::task::block_in_place(build),
                        _ => build(),
                    }
                })
                .await
                .clone()),
            Inner::Http(http) => match &http.cache {
                Some(cache) => cache
                    .try_get_with((), self.refresh(http))
                    .await
                    .map_err(|e| (*e).clone()),
                None => self.refresh(http).await,
            },
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
            Ok(ListAnswer::Fresh { body, etag }) => match load::parse_list(&body) {
                Ok(values) => {
                    let snapshot = build(
                        &self.reported,
                        load::from_values(http.client.base(), values, false),
                        Origin::Remote,
                    );
                    *lock(&http.last_good) = Some((snapshot.clone(), etag));
                    Ok(snapshot)
                }
                Err(e) => Err(Error::Api {
                    status: 502,
                    message: format!("the tool list from {} is unusable: {e}", http.client.base()),
                }),
            },
            Err(e) => Err(e),
        };
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

/// Builds a snapshot and reports each problem on stderr the first time this process
/// sees it, not once per refresh.
fn build(reported: &Mutex<HashSet<String>>, loaded: Loaded, origin: Origin) -> Arc<Snapshot> {
    let (snapshot, problems) = Snapshot::build(loaded.entries, origin);
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
    Arc::new(snapshot)
}

/// Locks a mutex, recovering the data if a panicking thread poisoned it: every value
/// kept behind these locks is replaced whole, so it is never half-written.
fn lock<T>(m: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    m.lock().unwrap_or_else(std::sync::PoisonError::into_inner)
}
