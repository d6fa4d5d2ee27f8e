//! The catalogue's tools as one family: choosing where a call runs, and running it there.
//!
//! The rule: code from the operator's own catalogue
//! (embedded, folder, file) always runs locally; code from an HTTP catalogue runs where
//! `TOOLGATE_EXECUTION` says — `remote` never fetches source, `local` requires it,
//! `auto` runs locally when source exists (and, for nyxilum code, NyxilumNode is found
//! here) and falls back to the API otherwise.

use std::sync::Arc;

use futures::future::BoxFuture;
use moka::future::Cache;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::content;
use super::js::{Js, tool_answer};
use super::nyxilum::Nyxilum;
use super::seam::{Answer, Backend, Call, Form, Output, Target};
use super::{Execution, Party};
use crate::api::{ApiClient, SourceAnswer};
use crate::catalogue::{Origin, Returns, Runtime, Tool};
use crate::error::Error;
use crate::limits::{Limits, SOURCE_CACHE_ENTRIES};

/// Runs the catalogue's tools where the rule says: here (JavaScript, TypeScript or
/// NyxilumLang) or through the catalogue API.
#[derive(Debug)]
pub struct Catalogue {
    mode: Execution,
    js: Arc<Js>,
    nyxilum: Arc<Nyxilum>,
    /// The catalogue API, when the catalogue comes from one.
    api: Option<ApiClient>,
    /// Sources fetched from an API, kept as long as the catalogue is; `None` at TTL 0.
    sources: Option<Cache<String, Arc<SourceAnswer>>>,
    /// Characters of JSON a returned value may hold, and of each output stream: an API's
    /// answer is held to what a local run is.
    result_chars: usize,
    output_chars: usize,
}

impl Catalogue {
    /// The catalogue's tools under `mode` within `limits`, run here on `js` and
    /// `nyxilum`, or through `api` when the catalogue comes from one.
    pub fn new(
        mode: Execution,
        limits: &Limits,
        js: Arc<Js>,
        nyxilum: Arc<Nyxilum>,
        api: Option<ApiClient>,
    ) -> Catalogue {
        let sources = (!limits.cache_ttl.is_zero()).then(|| {
            Cache::builder()
                .max_capacity(SOURCE_CACHE_ENTRIES)
                .time_to_live(limits.cache_ttl)
                .build()
        });
        Catalogue {
            mode,
            js,
            nyxilum,
            api,
            sources,
            result_chars: limits.result_chars,
            output_chars: limits.output_chars,
        }
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

    /// Runs `tool` with `params` (already validated) where the rule says, for `party`
    /// (whose share of the local places it takes), and checks what a tool that returns
    /// MCP content gave back.
    async fn run(
        &self,
        origin: Origin,
        tool: &Tool,
        params: &Value,
        party: &Party,
        cancel: &CancellationToken,
    ) -> Answer {
        let answer = self.route(origin, tool, params, (party, cancel)).await;
        if tool.manifest.returns != Returns::Content {
            return answer;
        }
        match &answer.ended {
            Ok(value) => match content::blocks(tool.slug(), value) {
                Ok(blocks) => answer.with_form(Form::Content(blocks)),
                Err(e) => Answer {
                    ended: Err(e),
                    ..answer
                },
            },
            Err(_) => answer,
        }
    }

    async fn route(&self, origin: Origin, tool: &Tool, params: &Value, cancel: (&Party, &CancellationToken)) -> Answer {
        let slug = tool.slug();
        let no_source = |remote_possible| {
            Answer::refused(Error::NoSource {
                slug: slug.to_owned(),
                remote_possible,
            })
        };
        match (origin, &self.api, self.mode) {
            (Origin::Local, _, _) => match (&tool.code, tool.runtime()) {
                (Some(code), Some(runtime)) => {
                    let file = tool.file.as_deref();
                    self.local((slug, file), runtime, code.clone(), params, cancel).await
                }
                _ => no_source(false),
            },
            (Origin::Remote, None, _) => {
                Answer::refused(Error::Internal("an HTTP catalogue without an API client".into()))
            }
            (Origin::Remote, Some(api), Execution::Remote) => self.remote(api, slug, params).await,
            (Origin::Remote, Some(api), Execution::Local) => match self.source(api, slug).await {
                Ok(Some(src)) => {
                    self.local(
                        (slug, None),
                        src.runtime,
                        Arc::from(src.source.as_str()),
                        params,
                        cancel,
                    )
                    .await
                }
                Ok(None) => no_source(true),
                Err(e) => Answer::refused(e),
            },
            (Origin::Remote, Some(api), Execution::Auto) => match self.source(api, slug).await {
                Ok(Some(src)) if self.is_local_runtime(src.runtime) => {
                    self.local(
                        (slug, None),
                        src.runtime,
                        Arc::from(src.source.as_str()),
                        params,
                        cancel,
                    )
                    .await
                }
                Ok(_) => self.remote(api, slug, params).await,
                Err(e) => {
                    tracing::debug!("auto: no source for {slug} ({e}); running it through the API");
                    self.remote(api, slug, params).await
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

    /// Runs `slug`'s `code` here; a JavaScript or TypeScript error names `file` (the
    /// tool's source file) when it came from one, else `SLUG.js` or `SLUG.ts`.
    async fn local(
        &self,
        (slug, file): (&str, Option<&str>),
        runtime: Runtime,
        code: Arc<str>,
        params: &Value,
        (party, cancel): (&Party, &CancellationToken),
    ) -> Answer {
        match runtime {
            Runtime::Javascript => tool_answer(
                self.js
                    .run_tool(code, file_name(slug, file, "js"), params.clone(), party, cancel)
                    .await,
            ),
            Runtime::Typescript => tool_answer(
                self.js
                    .run_typescript_tool(&code, file_name(slug, file, "ts"), params.clone(), party, cancel)
                    .await,
            ),
            Runtime::Nyxilum => match self
                .nyxilum
                .tool(slug, &code, params)
                .instrument(tracing::info_span!("nyxilum"))
                .await
            {
                Ok((result, out)) => {
                    let output = Output {
                        truncated: out.is_truncated(),
                        stderr: out.stderr.text,
                        cap: "its limit".to_owned(),
                        ..Output::default()
                    };
                    Answer::reached(Ok(result), output)
                }
                Err(e) => Answer::refused(e),
            },
        }
    }
}

/// The name a tool's code goes by in stack traces: its source file, else `SLUG.EXT`.
fn file_name(slug: &str, file: Option<&str>, ext: &str) -> String {
    file.map_or_else(|| format!("{slug}.{ext}"), str::to_owned)
}

impl Catalogue {
    /// Runs `slug` through the API, its answer held to the limits of a local run: a value
    /// whose JSON passes `result_chars` is a `RESOURCE_LIMIT` failure (a cut value would
    /// break the tool's output schema), and each output stream is cut at `output_chars`
    /// with the cut said.
    async fn remote(&self, api: &ApiClient, slug: &str, params: &Value) -> Answer {
        match self.remote_run(api, slug, params).await {
            Ok((result, output)) => Answer::reached(Ok(result), output),
            Err(e) => Answer::refused(e),
        }
    }

    async fn remote_run(&self, api: &ApiClient, slug: &str, params: &Value) -> Result<(Value, Output), Error> {
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
        let output = Output {
            stdout,
            stderr,
            truncated: cut_out || cut_err,
            cap: "its limit".to_owned(),
            result_cut: None,
        };
        Ok((answer.result, output))
    }
}

impl Backend for Catalogue {
    fn family(&self) -> &'static str {
        "catalogue"
    }

    fn prewarm(&self) {
        self.js.prewarm();
    }

    fn call<'a>(&'a self, call: Call<'a>) -> BoxFuture<'a, Answer> {
        Box::pin(async move {
            match call.target {
                Target::Tool { tool, origin } => self.run(origin, tool, call.params, call.party, call.cancel).await,
                Target::Builtin(name) => Answer::refused(Error::Internal(format!(
                    "the catalogue's tools were asked for the built-in tool {name}"
                ))),
            }
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
