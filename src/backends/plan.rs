//! Choosing where a call runs, and running it there.
//!
//! The rule (DESIGN §2, the NexusBloom seed): code from the operator's own catalogue
//! (embedded, folder, file) always runs locally; code from an HTTP catalogue runs where
//! `TOOLGATE_EXECUTION` says — `remote` never fetches source, `local` requires it,
//! `auto` runs locally when source exists (and, for nyxilum code, NyxilumNode is found
//! here) and falls back to the API otherwise.

use std::path::PathBuf;
use std::sync::Arc;

use moka::future::Cache;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

use super::js::{FetchAllow, Js, JsLimits};
use super::nyxilum::Nyxilum;
use super::{Execution, Party};
use crate::api::{ApiClient, SourceAnswer};
use crate::catalogue::{Origin, Runtime, Tool};
use crate::error::Error;
use crate::limits::{Limits, SOURCE_CACHE_ENTRIES};

/// What a successful run produced.
#[derive(Debug, Clone)]
pub struct Outcome {
    /// The tool's result.
    pub result: Value,
    /// What the code printed on stdout (may be empty).
    pub stdout: String,
    /// What the code printed on stderr (may be empty).
    pub stderr: String,
    /// True if and only if captured output was cut at its cap.
    pub truncated: bool,
}

/// Runs validated calls.
#[derive(Debug)]
pub struct Executor {
    mode: Execution,
    js: Js,
    nyxilum: Nyxilum,
    /// Sources fetched from an API, kept as long as the catalogue is; `None` at TTL 0.
    sources: Option<Cache<String, Arc<SourceAnswer>>>,
    /// Characters of JSON a returned value may hold, and of each output stream: an API's
    /// answer is held to what a local run is.
    result_chars: usize,
    output_chars: usize,
}

impl Executor {
    /// An executor for `mode` within `limits`, running nyxilum code with `nyxilum` and
    /// JavaScript in workers started from `js_worker` (this binary, in worker mode).
    pub fn new(mode: Execution, limits: &Limits, nyxilum: Nyxilum, js_worker: PathBuf) -> Executor {
        let js = JsLimits {
            heap_bytes: limits.js_heap_bytes,
            wall_clock: limits.js_wall_clock,
            output_chars: limits.output_chars,
            result_chars: limits.result_chars,
            concurrent_runs: limits.js_concurrent_runs,
            total_heap_bytes: limits.js_total_heap_bytes,
            fetch_timeout: limits.fetch_timeout,
        };
        let sources = (!limits.cache_ttl.is_zero()).then(|| {
            Cache::builder()
                .max_capacity(SOURCE_CACHE_ENTRIES)
                .time_to_live(limits.cache_ttl)
                .build()
        });
        Executor {
            mode,
            js: Js::new(js, js_worker),
            nyxilum,
            sources,
            result_chars: limits.result_chars,
            output_chars: limits.output_chars,
        }
    }

    /// The same executor with `allow` as the exceptions to JavaScript `fetch`'s address
    /// policy (`TOOLGATE_FETCH_ALLOW`). By default, none.
    #[must_use]
    pub fn with_fetch_allow(mut self, allow: FetchAllow) -> Executor {
        self.js = self.js.with_fetch_allow(allow);
        self
    }

    /// Starts the idle JavaScript workers in the background, so the first call does not
    /// wait for one. Must be called inside a tokio runtime.
    pub fn prewarm(&self) {
        self.js.prewarm();
    }

    /// The NyxilumNode backend (its tools and REPL sessions).
    pub fn nyxilum(&self) -> &Nyxilum {
        &self.nyxilum
    }

    /// Returns true if and only if `runtime` can run here: always for JavaScript and
    /// TypeScript, for nyxilum when NyxilumNode is found.
    fn is_local_runtime(&self, runtime: Runtime) -> bool {
        match runtime {
            Runtime::Javascript | Runtime::Typescript => true,
            Runtime::Nyxilum => self.nyxilum.locator().locate().is_ok(),
        }
    }

    /// A check of whether tools from a catalogue of `origin` can run under this
    /// executor's rule: `Ok`, else the error a call would meet now (NyxilumNode missing,
    /// no source). NyxilumNode is looked for once per checker, however many tools ask,
    /// so checking a whole catalogue costs a few file lookups, not one per tool. Used to
    /// keep tools that cannot run here out of `tools/list` and to mark them in listings.
    pub fn availability(&self, origin: Origin) -> impl FnMut(&Tool) -> Result<(), Error> + '_ {
        let mut found: Option<Result<(), Error>> = None;
        move |tool| {
            let mut nyxilum = || {
                found
                    .get_or_insert_with(|| self.nyxilum.locator().locate().map(|_| ()))
                    .clone()
            };
            self.rule(origin, tool, &mut nyxilum)
        }
    }

    fn rule(&self, origin: Origin, tool: &Tool, nyxilum: &mut dyn FnMut() -> Result<(), Error>) -> Result<(), Error> {
        match (origin, self.mode) {
            (Origin::Local, _) => match (&tool.code, tool.runtime()) {
                (Some(_), Some(Runtime::Nyxilum)) => nyxilum(),
                (Some(_), Some(_)) => Ok(()),
                _ => Err(Error::NoSource {
                    slug: tool.slug().to_owned(),
                    remote_possible: false,
                }),
            },
            (Origin::Remote, Execution::Local) if tool.runtime() == Some(Runtime::Nyxilum) => nyxilum(),
            (Origin::Remote, _) => Ok(()),
        }
    }

    /// The local JavaScript backend (also used by the runtime tools).
    pub fn js(&self) -> &Js {
        &self.js
    }

    /// Runs `tool` with `params` (already validated) where the rule says, for `party`
    /// (whose share of the local places it takes).
    pub async fn run(
        &self,
        origin: Origin,
        api: Option<&ApiClient>,
        tool: &Tool,
        params: Value,
        (party, cancel): (&Party, &CancellationToken),
    ) -> Result<Outcome, Error> {
        let cancel = (party, cancel);
        let slug = tool.slug();
        match (origin, api, self.mode) {
            (Origin::Local, _, _) => match (&tool.code, tool.runtime()) {
                (Some(code), Some(runtime)) => self.local(slug, runtime, code.clone(), params, cancel).await,
                _ => Err(Error::NoSource {
                    slug: slug.to_owned(),
                    remote_possible: false,
                }),
            },
            (Origin::Remote, None, _) => Err(Error::Internal("an HTTP catalogue without an API client".into())),
            (Origin::Remote, Some(api), Execution::Remote) => self.remote(api, slug, &params).await,
            (Origin::Remote, Some(api), Execution::Local) => match self.source(api, slug).await? {
                Some(src) => {
                    self.local(slug, src.runtime, Arc::from(src.source.as_str()), params, cancel)
                        .await
                }
                None => Err(Error::NoSource {
                    slug: slug.to_owned(),
                    remote_possible: true,
                }),
            },
            (Origin::Remote, Some(api), Execution::Auto) => match self.source(api, slug).await {
                Ok(Some(src)) if self.is_local_runtime(src.runtime) => {
                    self.local(slug, src.runtime, Arc::from(src.source.as_str()), params, cancel)
                        .await
                }
                Ok(_) => self.remote(api, slug, &params).await,
                Err(e) => {
                    tracing::debug!("auto: no source for {slug} ({e}); running it through the API");
                    self.remote(api, slug, &params).await
                }
            },
        }
    }

    async fn source(&self, api: &ApiClient, slug: &str) -> Result<Option<Arc<SourceAnswer>>, Error> {
        if let Some(cache) = &self.sources
            && let Some(hit) = cache.get(slug).await
        {
            return Ok(Some(hit));
        }
        let Some(found) = api.source(slug).await? else {
            return Ok(None);
        };
        let found = Arc::new(found);
        if let Some(cache) = &self.sources {
            cache.insert(slug.to_owned(), found.clone()).await;
        }
        Ok(Some(found))
    }

    async fn local(
        &self,
        slug: &str,
        runtime: Runtime,
        code: Arc<str>,
        params: Value,
        (party, cancel): (&Party, &CancellationToken),
    ) -> Result<Outcome, Error> {
        let out = match runtime {
            Runtime::Javascript => {
                self.js
                    .run_tool(code, format!("{slug}.js"), params, party, cancel)
                    .await?
            }
            Runtime::Typescript => {
                self.js
                    .run_typescript_tool(&code, format!("{slug}.ts"), params, party, cancel)
                    .await?
            }
            Runtime::Nyxilum => {
                let (result, out) = self.nyxilum.tool(slug, &code, &params).await?;
                return Ok(Outcome {
                    result,
                    truncated: out.is_truncated(),
                    stdout: String::new(),
                    stderr: out.stderr.text,
                });
            }
        };
        let truncated = out.captured.stdout.is_truncated() || out.captured.stderr.is_truncated();
        Ok(Outcome {
            result: out.result,
            stdout: out.captured.stdout.into_text(),
            stderr: out.captured.stderr.into_text(),
            truncated,
        })
    }
}

impl Executor {
    /// Runs `slug` through the API, its answer held to the limits of a local run: a value
    /// whose JSON passes `result_chars` is a `RESOURCE_LIMIT` failure (a cut value would
    /// break the tool's output schema), and each output stream is cut at `output_chars`
    /// with the cut said.
    async fn remote(&self, api: &ApiClient, slug: &str, params: &Value) -> Result<Outcome, Error> {
        let answer = api.run(slug, params).await.map_err(|e| match e {
            Error::InvalidParams { violations, .. } => Error::InvalidParams {
                slug: slug.to_owned(),
                violations,
            },
            Error::ToolNotFound { candidates, .. } => Error::ToolNotFound {
                slug: slug.to_owned(),
                candidates,
            },
            Error::AmbiguousSlug { candidates, .. } => Error::AmbiguousSlug {
                slug: slug.to_owned(),
                candidates,
            },
            other => other,
        })?;
        let json = answer.result.to_string();
        if json.len() > self.result_chars && json.chars().nth(self.result_chars).is_some() {
            return Err(Error::ResourceLimit {
                what: "The value the catalogue API returned".to_owned(),
                limit: format!("{} characters of JSON", self.result_chars),
            });
        }
        let (stdout, cut_out) = cut(answer.stdout, self.output_chars);
        let (stderr, cut_err) = cut(answer.stderr, self.output_chars);
        Ok(Outcome {
            result: answer.result,
            stdout,
            stderr,
            truncated: cut_out || cut_err,
        })
    }
}

/// `text` held to `cap` characters, and whether it was cut.
fn cut(mut text: String, cap: usize) -> (String, bool) {
    match text.char_indices().nth(cap) {
        Some((at, _)) => {
            text.truncate(at);
            (text, true)
        }
        None => (text, false),
    }
}
