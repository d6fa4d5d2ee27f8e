//! Code mode: what a snippet's `tools` global reaches. Every call its code makes is a
//! [`Gateway::call`] of the same caller — its scope and rate, validation, the families'
//! own limits, history (each call its own run, naming the snippet's run as its parent) —
//! so code can do nothing a client could not do with direct calls, only in fewer round
//! trips. What code mode adds is bounded here: at most `TOOLGATE_CODE_CALLS` calls and
//! searches per run and `TOOLGATE_CODE_PARALLEL` in flight; the snippet's deadline and
//! cancellation end them (the JavaScript pool cancels them with the run).
//!
//! An inner call does not take another of its principal's places among runs at once: it
//! runs inside its snippet's, which already holds one (taking another could leave every
//! place held by snippets waiting on their own calls until their deadlines).

use std::sync::atomic::{AtomicUsize, Ordering};

use futures::future::BoxFuture;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use super::{Caller, Gateway, Placing, Reach, Run, Ticket};
use crate::access::Scope;
use crate::backends::js::typings::function_name;
use crate::backends::{Form, Shape, Tools};
use crate::error::Error;
use crate::limits::{SEARCH_LIMIT_DEFAULT, SEARCH_LIMIT_RANGE};
use crate::registry::Entry;

/// The `tools` of one snippet run.
#[derive(Debug)]
pub(super) struct Inner<'g> {
    gateway: &'g Gateway,
    /// The snippet's caller, its calls naming the snippet's run as their parent.
    caller: Caller,
    /// Calls and searches made so far.
    made: AtomicUsize,
    /// Calls and searches in flight.
    in_flight: AtomicUsize,
}

impl<'g> Inner<'g> {
    /// The tools of the run `parent` of `caller`.
    pub(super) fn new(gateway: &'g Gateway, caller: &Caller, parent: &str) -> Inner<'g> {
        Inner {
            gateway,
            caller: caller.clone().with_parent(parent),
            made: AtomicUsize::new(0),
            in_flight: AtomicUsize::new(0),
        }
    }

    /// One more call or search, within the run's count and its calls in flight; the
    /// slot is given back when dropped.
    fn slot(&self) -> Result<Slot<'_>, Error> {
        let limits = self.gateway.limits();
        if self.made.fetch_add(1, Ordering::Relaxed) >= limits.code_calls {
            return Err(Error::ResourceLimit {
                what: "The snippet's tool calls".to_owned(),
                limit: format!("{} calls and searches per run (TOOLGATE_CODE_CALLS)", limits.code_calls),
            });
        }
        if self.in_flight.fetch_add(1, Ordering::AcqRel) >= limits.code_parallel {
            self.in_flight.fetch_sub(1, Ordering::AcqRel);
            return Err(Error::ResourceLimit {
                what: "The snippet's tool calls in flight".to_owned(),
                limit: format!(
                    "{} at once (TOOLGATE_CODE_PARALLEL); await some before starting more",
                    limits.code_parallel
                ),
            });
        }
        Ok(Slot(&self.in_flight))
    }

    /// The entry `name` names: a slug as the meta-tool resolves it, or a function name —
    /// the exact name first (built-in tools and upstream `SERVER__TOOL` names are
    /// functions as they are), then the slug with every `_` read as `-`, then the one
    /// slug whose `-` read as `_` gives the name (two such slugs: `AMBIGUOUS_SLUG`, call
    /// one with `tools.call`).
    async fn resolve(&self, name: &str, function: bool) -> Result<Entry, Error> {
        let gateway = self.gateway;
        if !function || gateway.builtins().get(name).is_some() {
            return gateway.resolve(&self.caller, name, Reach::Meta).await;
        }
        let snapshot = gateway.snapshot_for(&self.caller).await?;
        let dashed = name.replace('_', "-");
        let slug = if snapshot.get(name).is_some() {
            name.to_owned()
        } else if snapshot.get(&dashed).is_some() {
            dashed
        } else {
            let mut named = snapshot
                .tools()
                .iter()
                .map(|t| t.manifest.slug.as_str())
                .filter(|slug| function_name(slug) == name);
            match (named.next(), named.next()) {
                (Some(slug), None) => slug.to_owned(),
                (Some(first), Some(second)) => {
                    let mut candidates: Vec<String> =
                        [first, second].into_iter().chain(named).map(str::to_owned).collect();
                    candidates.sort();
                    return Err(Error::AmbiguousSlug {
                        slug: name.to_owned(),
                        candidates,
                    });
                }
                (None, _) => {
                    return Err(Error::ToolNotFound {
                        slug: name.to_owned(),
                        candidates: gateway
                            .resolve(&self.caller, name, Reach::Meta)
                            .await
                            .map(|e| vec![e.name().to_owned()])
                            .unwrap_or_else(|e| match e {
                                Error::ToolNotFound { candidates, .. } | Error::AmbiguousSlug { candidates, .. } => {
                                    candidates
                                }
                                _ => Vec::new(),
                            }),
                    });
                }
            }
        };
        gateway
            .resolve_holding(&self.caller, &slug, Reach::Meta, &mut Some(snapshot))
            .await
    }
}

/// A call or search in flight, counted while it lives.
struct Slot<'a>(&'a AtomicUsize);

impl Drop for Slot<'_> {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::AcqRel);
    }
}

impl Tools for Inner<'_> {
    fn call<'a>(
        &'a self,
        name: String,
        function: bool,
        params: Value,
        cancel: &'a CancellationToken,
    ) -> BoxFuture<'a, Result<Value, Error>> {
        // Counted as the request arrives, so which call finds the others in flight
        // follows the order the code made them.
        let slot = self.slot();
        Box::pin(async move {
            let _slot = slot?;
            let entry = self.resolve(&name, function).await?;
            if entry.shape() == Shape::Snippet {
                return Err(Error::BadRequest(format!(
                    "{} cannot be called from code: a snippet calls tools, not other snippets",
                    entry.name()
                )));
            }
            // The inner call's span (GenAI's `execute_tool`), under the snippet's run.
            let span = tracing::info_span!(
                "execute_tool",
                otel.name = %format_args!("execute_tool {}", entry.name()),
                gen_ai.operation.name = "execute_tool",
                gen_ai.tool.name = entry.name(),
                error.type = tracing::field::Empty,
            );
            let call = async {
                let ticket: Result<Ticket, Error> = self.gateway.begin(&self.caller, &entry, Placing::Parent).await;
                let run = self
                    .gateway
                    .call_placed(&self.caller, &entry, params, (ticket, Placing::Parent), cancel)
                    .await;
                answered(run)
            };
            let answer = call.instrument(span.clone()).await;
            if let Err(e) = &answer {
                span.record("error.type", e.code());
            }
            answer
        })
    }

    fn search<'a>(&'a self, query: String, limit: Option<usize>) -> BoxFuture<'a, Result<Value, Error>> {
        let slot = self.slot();
        Box::pin(async move {
            let _slot = slot?;
            self.caller.may(Scope::Search)?;
            let limit = limit.unwrap_or(SEARCH_LIMIT_DEFAULT);
            if !SEARCH_LIMIT_RANGE.contains(&(limit as u64)) {
                return Err(Error::BadRequest(format!(
                    "tools.search: limit must be {} to {}, not {limit}",
                    SEARCH_LIMIT_RANGE.start(),
                    SEARCH_LIMIT_RANGE.end()
                )));
            }
            let snapshot = self.gateway.snapshot_for(&self.caller).await?;
            let found = self.gateway.search(&snapshot, &query, limit).await?;
            Ok(Value::Array(found.results()))
        })
    }
}

/// What code receives of a finished run: the structured body a direct MCP call carries
/// (an upstream's own `structuredContent`, or its content), or the error that ended it.
fn answered(run: Run) -> Result<Value, Error> {
    let passthrough = matches!(run.answer.form, Form::Passthrough(_));
    if run.is_ok() && !passthrough {
        return Ok(run.body());
    }
    run.answer.ended
}
