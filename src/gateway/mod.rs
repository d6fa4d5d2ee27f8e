//! The one path every call takes, whatever the tool's family: resolve → validate → run
//! under the limits in force (and the caller's cancellation) → record → answer.
//!
//! The MCP handler (direct calls, the meta-tool's `run` and `batch`) and the catalogue
//! HTTP server all run tools through [`Gateway::call`], so resolution, validation,
//! history and the answer's body cannot drift between them or between families. It
//! speaks toolgate types only; protocol mapping stays in `mcp` and `operator`.

mod caller;
mod code;
mod federation;
mod record;
mod run;
mod search;
mod views;

use std::sync::Arc;
use std::time::{Instant, SystemTime};

use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

pub use caller::Caller;
pub use run::{Run, failure_body, failure_fields, snippet_error};
pub use search::Found;

use crate::access::rate::Place;
use crate::access::{Limiter, Scope};
use crate::backends::upstream::Upstreams;
use crate::backends::{Answer, Backend, Call, Families, Shape, Tools};
use crate::catalogue::{Snapshot, Store};
use crate::error::Error;
use crate::history::{Sent, Size};
use crate::limits::{LARGE_PARAMS_VALUES, Limits};
use crate::registry::{Builtins, Entry};
use crate::search::Meaning;
use crate::telemetry::exported::STEP;
use record::{keep, record};

/// Who is asking for a tool by name, which decides what the name may reach.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Reach {
    /// A direct `tools/call`: only names MCP can carry (advertisable tools).
    Direct,
    /// The meta-tool: every tool, including slugs outside the tool-name grammar.
    Meta,
}

/// Where a call's place among its principal's runs at once comes from.
#[derive(Debug, Clone, Copy)]
enum Placing {
    /// It takes one of its own.
    Own,
    /// It runs in its parent snippet's (code mode).
    Parent,
}

/// A call let in by its principal's scope and run rate ([`Gateway::admit`]). A fleet's
/// replica may have numbered it and found its place in the same round trip
/// (`Gateway::begin`); otherwise both are taken when it runs.
#[derive(Debug, Default)]
pub struct Ticket {
    /// Its run's id, when numbered as it was let in.
    number: Option<String>,
    /// Its place among its principal's runs at once, when taken as it was let in.
    place: Option<Place>,
}

/// The catalogue, the built-in tools and the tool families of one server.
#[derive(Debug)]
pub struct Gateway {
    store: Store,
    families: Families,
    builtins: Builtins,
    limits: Limits,
    /// The upstream MCP servers whose tools join the catalogue, when configured, and
    /// their family.
    federation: Option<(federation::Federation, Arc<dyn Backend>)>,
    /// The per-principal run limits of an HTTP server; none over stdio.
    limiter: Option<Arc<Limiter>>,
    /// How searches rank, and the background embedding of each snapshot's tools.
    meaning: Arc<Meaning>,
    /// The catalogue as each tool policy in use sees it.
    views: views::Views,
}

impl Gateway {
    /// A gateway over `store`, running calls with `families` within `limits` (whose
    /// runtime families' built-in tools it offers).
    pub fn new(store: Store, families: Families, limits: Limits) -> Gateway {
        let builtins = Builtins::new(&families.runtimes, &limits);
        Gateway {
            store,
            families,
            builtins,
            limits,
            federation: None,
            limiter: None,
            meaning: Arc::new(Meaning::lexical()),
            views: views::Views::default(),
        }
    }

    /// This gateway ranking searches as `meaning` says (lexical by default), embedding
    /// each snapshot's tools as it comes into use.
    pub fn with_meaning(mut self, meaning: Arc<Meaning>) -> Gateway {
        self.meaning = meaning;
        self
    }

    /// How searches rank.
    pub fn meaning(&self) -> &Arc<Meaning> {
        &self.meaning
    }

    /// This gateway admitting each run of a caller that acts as a principal through
    /// `limiter` (its run rate and its runs at once).
    pub fn with_limiter(mut self, limiter: Arc<Limiter>) -> Gateway {
        self.limiter = Some(limiter);
        self
    }

    /// This gateway with the tools of `upstreams` joined to its catalogue (started
    /// separately, with [`Upstreams::start`]).
    pub fn with_upstreams(mut self, upstreams: Arc<Upstreams>) -> Gateway {
        let family: Arc<dyn Backend> = Arc::new(crate::backends::upstream::Family::new(upstreams.clone()));
        self.federation = Some((federation::Federation::new(upstreams), family));
        self
    }

    /// The upstream MCP servers, when configured.
    pub fn upstreams(&self) -> Option<&Arc<Upstreams>> {
        self.federation.as_ref().map(|(f, _)| &f.upstreams)
    }

    /// The current catalogue snapshot (refreshed when it has expired), with the
    /// upstream servers' tools when there are any.
    pub async fn snapshot(&self) -> Result<Arc<Snapshot>, Error> {
        let base = self.store.snapshot().await?;
        let snapshot = match &self.federation {
            Some((f, _)) => f.merge(base).await,
            None => base,
        };
        self.meaning.prepare(&snapshot);
        Ok(snapshot)
    }

    /// The catalogue as `caller` may see it: the current snapshot, or for a principal
    /// with a tool policy the view of it holding only the tools the policy admits. Every
    /// answer that names, finds or resolves tools for a caller starts here.
    pub async fn snapshot_for(&self, caller: &Caller) -> Result<Arc<Snapshot>, Error> {
        let base = self.snapshot().await?;
        Ok(self.view_of(&base, caller.tools()).await)
    }

    /// `base` as the tool policy `patterns` sees it (`base` itself for no policy).
    pub async fn view_of(
        &self,
        base: &Arc<Snapshot>,
        patterns: Option<&Arc<crate::patterns::ToolPatterns>>,
    ) -> Arc<Snapshot> {
        let Some(patterns) = patterns else {
            return base.clone();
        };
        let view = self.views.view(base, patterns, &self.builtins).await;
        self.meaning.prepare(&view);
        view
    }

    /// For a process about to exit: the catalogue's latest snapshot is never freed, and
    /// the system takes its memory back at once. Freeing 100,000 tools one by one took
    /// 225 ms of a server's exit after its stdin closed (11–16 ms without).
    pub fn keep_catalogue_at_exit(&self) {
        if let Some(snapshot) = self.store.latest() {
            std::mem::forget(snapshot);
        }
    }

    /// Builds a local catalogue's snapshot now rather than on first use; an HTTP
    /// catalogue is left to its first request.
    pub async fn prepare(&self) {
        self.store.prepare().await;
    }

    /// Readies what the families' first calls would wait for (the idle JavaScript
    /// workers), in the background. Must be called inside a tokio runtime.
    pub fn prewarm(&self) {
        self.families.catalogue.prewarm();
        for family in &self.families.runtimes {
            family.prewarm();
        }
    }

    /// Frees what MCP session `session` held in every family (its REPL sessions).
    pub fn end_session(&self, session: u64) -> impl std::future::Future<Output = ()> + Send + 'static {
        let ends: Vec<_> = self.families.runtimes.iter().map(|f| f.end_session(session)).collect();
        async move {
            for end in ends {
                end.await;
            }
        }
    }

    /// Frees what every session held in every family (the server is ending).
    pub async fn end_all(&self) {
        for family in &self.families.runtimes {
            family.end_all().await;
        }
    }

    /// The limits in force, for descriptions that state them.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// The built-in tools this server offers.
    pub fn builtins(&self) -> &Builtins {
        &self.builtins
    }

    /// The entry of `tool`, a tool of the catalogue `snapshot` (not an upstream's).
    pub fn catalogue_entry(&self, tool: Arc<crate::catalogue::Tool>, snapshot: Arc<Snapshot>) -> Entry {
        Entry::Catalogue {
            tool,
            snapshot,
            backend: self.families.catalogue.clone(),
        }
    }

    /// Resolves `wanted` for `caller`: a built-in by exact name first, then a catalogue
    /// tool by exact slug or unambiguous abbreviation (among advertisable tools for a
    /// direct call), among the tools the caller may see ([`Gateway::snapshot_for`]). A
    /// name no tool has in the namespace of an upstream server that is down is
    /// `UPSTREAM_UNAVAILABLE` with the server's last error, not `TOOL_NOT_FOUND`.
    pub async fn resolve(&self, caller: &Caller, wanted: &str, reach: Reach) -> Result<Entry, Error> {
        self.resolve_holding(caller, wanted, reach, &mut None).await
    }

    /// [`Gateway::resolve`] for several names in a row (a batch): the catalogue snapshot
    /// is taken at the first name that needs it and kept in `held` for the rest, so the
    /// items resolve against one catalogue and an HTTP catalogue with no cache lifetime
    /// is fetched once, not once per item.
    pub async fn resolve_holding(
        &self,
        caller: &Caller,
        wanted: &str,
        reach: Reach,
        held: &mut Option<Arc<Snapshot>>,
    ) -> Result<Entry, Error> {
        if let Some(builtin) = self.builtins.get(wanted)
            && caller.sees(wanted)
        {
            return Ok(Entry::Builtin(builtin.clone()));
        }
        let snapshot = match held {
            Some(s) => s.clone(),
            None => held.insert(self.snapshot_for(caller).await?).clone(),
        };
        let found = match reach {
            Reach::Direct => snapshot.resolve_advertisable(wanted),
            Reach::Meta => snapshot.resolve(wanted),
        };
        let tool = match found {
            Ok(tool) => tool.clone(),
            // A server that never started (or is down) lists no tools, and a tool held by
            // its pin is not listed: a name in its namespace is answered with why (held,
            // or the server down), not as an unknown tool.
            Err(e @ Error::ToolNotFound { .. }) => {
                let upstream = self
                    .upstreams()
                    .filter(|_| caller.sees(wanted))
                    .and_then(|u| u.held(wanted).or_else(|| u.unavailable(wanted)));
                return Err(upstream.unwrap_or(e));
            }
            Err(e) => return Err(e),
        };
        Ok(self.entry_of(tool, snapshot))
    }

    /// The entry of `tool` of `snapshot`: an upstream's tool runs on its server, any other
    /// in the catalogue's family.
    pub fn entry_of(&self, tool: Arc<crate::catalogue::Tool>, snapshot: Arc<Snapshot>) -> Entry {
        match (&tool.federated, &self.federation) {
            (Some(_), Some((_, backend))) => Entry::Upstream {
                tool,
                snapshot,
                backend: backend.clone(),
            },
            _ => Entry::Catalogue {
                tool,
                snapshot,
                backend: self.families.catalogue.clone(),
            },
        }
    }

    /// Resolves `wanted` (as the meta-tool does), validates, runs: [`Gateway::call`].
    pub async fn run(
        &self,
        caller: &Caller,
        wanted: &str,
        params: Value,
        cancel: &CancellationToken,
    ) -> Result<Run, Error> {
        let entry = self.resolve(caller, wanted, Reach::Meta).await?;
        Ok(self.call(caller, &entry, params, cancel).await)
    }

    /// Admits the call under its principal's limits (when it has one), validates
    /// `params` against `entry`, runs it for `caller` unless `cancel` fires first, and
    /// records the run (whatever its end, a refusal or a validation failure included) in
    /// the caller's history.
    pub async fn call(&self, caller: &Caller, entry: &Entry, params: Value, cancel: &CancellationToken) -> Run {
        let ticket = self.begin(caller, entry, Placing::Own).await;
        self.call_admitted(caller, entry, params, ticket, cancel).await
    }

    /// The first step of a call, made before anything of it is read or checked: the
    /// scope its family needs (`runtimes` for code, `run` for tools), then one run from
    /// its principal's bucket. Cheap whatever the call carries, so a caller past its
    /// rate or scope costs the server next to nothing. The place among the principal's
    /// runs at once is waited for later, in [`Gateway::call_admitted`].
    pub async fn admit(&self, caller: &Caller, entry: &Entry) -> Result<Ticket, Error> {
        self.let_in(caller, entry, None).await
    }

    /// [`Gateway::admit`], and for a fleet's replica, in the same round trip, the run's
    /// number in its session and (for a run `placing` its own) its place if one is free
    /// now: a tool call's one exchange with Redis before it runs.
    async fn begin(&self, caller: &Caller, entry: &Entry, placing: Placing) -> Result<Ticket, Error> {
        self.let_in(caller, entry, Some(placing)).await
    }

    /// [`Gateway::admit`] or, when `placing` is given, [`Gateway::begin`].
    async fn let_in(&self, caller: &Caller, entry: &Entry, placing: Option<Placing>) -> Result<Ticket, Error> {
        let scope = match entry {
            Entry::Builtin(_) => Scope::Runtimes,
            Entry::Catalogue { .. } | Entry::Upstream { .. } => Scope::Run,
        };
        let span = tracing::info_span!(target: STEP, "admit", error.type = tracing::field::Empty);
        let admitted = async {
            // Every path resolves among the caller's tools already; this holds it for
            // an entry resolved any other way.
            if !caller.sees(entry.name()) {
                return Err(Error::ToolNotFound {
                    slug: entry.name().to_owned(),
                    candidates: Vec::new(),
                });
            }
            caller.may(scope)?;
            let (Some(limiter), Some(principal)) = (&self.limiter, caller.principal()) else {
                return Ok(Ticket::default());
            };
            let counter = placing.and_then(|_| caller.history().counter());
            let place = matches!(placing, Some(Placing::Own));
            let started = limiter
                .begin(principal, counter.as_ref(), place)
                .await
                .inspect_err(|e| {
                    if e.code() == "RATE_LIMITED" {
                        crate::metrics::get().rate_limited("runs");
                    }
                })?;
            Ok(Ticket {
                number: started.number.map(|n| format!("r{n}")),
                place: started.place,
            })
        }
        .instrument(span.clone())
        .await;
        failed(&span, admitted.as_ref().err());
        admitted
    }

    /// [`Gateway::call`] after [`Gateway::admit`]: a refused `ticket` is recorded as a
    /// refusal (its size only), else the call waits for its principal's place, is
    /// validated and runs.
    pub async fn call_admitted(
        &self,
        caller: &Caller,
        entry: &Entry,
        params: Value,
        ticket: Result<Ticket, Error>,
        cancel: &CancellationToken,
    ) -> Run {
        self.call_placed(caller, entry, params, (ticket, Placing::Own), cancel)
            .await
    }

    /// A call, numbered and run inside its span, its place among its principal's runs at
    /// once taken as `placing` says (a call a snippet's code makes runs in the snippet's,
    /// `code.rs`).
    async fn call_placed(
        &self,
        caller: &Caller,
        entry: &Entry,
        params: Value,
        (ticket, placing): (Result<Ticket, Error>, Placing),
        cancel: &CancellationToken,
    ) -> Run {
        // A fleet's session numbers its runs in Redis (as it let the call in, usually);
        // when it cannot, the run is refused (and recorded here under a number of this
        // replica's).
        let (id, ticket) = match ticket {
            Ok(Ticket {
                number: Some(id),
                place,
            }) => (id, Ok(Ticket { number: None, place })),
            ticket => match caller.history().number().await {
                Ok(id) => (id, ticket),
                Err(e) => (caller.history().next_id(), ticket.and(Err(e))),
            },
        };
        // Every line logged while the run goes names it, its tool and its principal (the
        // key's id, never the key; none over stdio). At warn level, so the default filter
        // (warnings) keeps the span on the lines it lets through. Exported as a step of
        // the call (`TOOLGATE_TRACE_STEPS`), like the admission, queue, validation and
        // execution spans around and under it.
        let span = tracing::warn_span!(target: STEP, "run", run = %id, tool = %entry.name(), principal = tracing::field::Empty, request = tracing::field::Empty, parent = tracing::field::Empty);
        if let Some(principal) = caller.principal() {
            span.record("principal", tracing::field::display(&principal.id));
        }
        if let Some(request) = caller.request() {
            span.record("request", tracing::field::display(request));
        }
        if let Some(parent) = caller.parent() {
            span.record("parent", tracing::field::display(parent));
        }
        self.call_as(caller, entry, params, (ticket, placing), cancel, id)
            .instrument(span)
            .await
    }

    /// Records a call refused before its body was read (the catalogue API's run route
    /// refuses before it parses) with the body's size, and returns it as a run.
    pub fn refuse(&self, caller: &Caller, entry: &Entry, error: Error, body_bytes: usize) -> Run {
        let run = Run {
            id: caller.history().next_id(),
            name: entry.name().to_owned(),
            shape: entry.shape(),
            duration: std::time::Duration::ZERO,
            answer: Answer::refused(error),
        };
        let input = Sent::Refused(Size::Bytes(body_bytes));
        record(caller, entry, &run, SystemTime::now(), input);
        run
    }

    /// [`Gateway::call_admitted`] inside the run's span.
    async fn call_as(
        &self,
        caller: &Caller,
        entry: &Entry,
        params: Value,
        (ticket, placing): (Result<Ticket, Error>, Placing),
        cancel: &CancellationToken,
        id: String,
    ) -> Run {
        let (started, clock) = (SystemTime::now(), Instant::now());
        tracing::debug!("running");
        let placed = match (ticket, placing) {
            (Ok(_), _) if cancel.is_cancelled() => Err(Error::Cancelled),
            (Ok(Ticket { place: Some(place), .. }), Placing::Own) => Ok(Some(place)),
            (Ok(_), Placing::Own) => self.place(caller, cancel).await,
            (Ok(_), Placing::Parent) => Ok(None),
            (Err(e), _) => Err(e),
        };
        // Whether the params were read (validated), which decides what history keeps.
        let (answer, read, params) = match placed {
            Err(e) => (Answer::refused(e), false, params),
            Ok(_place) => match validate(entry, params)
                .instrument(tracing::info_span!(target: STEP, "validate"))
                .await
            {
                (Err(e), params) => (Answer::refused(e), true, params),
                (Ok(()), params) => {
                    let answer = tokio::select! {
                        answer = self.dispatch(caller, entry, &params, cancel, &id) => answer,
                        () = cancel.cancelled() => Answer::refused(Error::Cancelled),
                    };
                    (answer, true, params)
                }
            },
        };
        let run = Run {
            id,
            name: entry.name().to_owned(),
            shape: entry.shape(),
            duration: clock.elapsed(),
            answer,
        };
        let input = if read {
            Sent::Checked(&params)
        } else {
            Sent::Refused(Size::Of(&params))
        };
        keep(caller, entry, &run, started, input).await;
        release(params);
        run
    }

    /// The caller's place among its principal's runs at once (none to take over stdio),
    /// unless `cancel` fires first.
    async fn place(&self, caller: &Caller, cancel: &CancellationToken) -> Result<Option<Place>, Error> {
        if cancel.is_cancelled() {
            return Err(Error::Cancelled);
        }
        let (Some(limiter), Some(principal)) = (&self.limiter, caller.principal()) else {
            return Ok(None);
        };
        let span = tracing::info_span!(target: STEP, "queue", toolgate.queue = "runs at once", error.type = tracing::field::Empty);
        let placed = async {
            tokio::select! {
                placed = limiter.place(principal) => placed.map(Some).inspect_err(|e| {
                    if e.code() == "RATE_LIMITED" {
                        crate::metrics::get().rate_limited("runs");
                    }
                }),
                () = cancel.cancelled() => Err(Error::Cancelled),
            }
        }
        .instrument(span.clone())
        .await;
        failed(&span, placed.as_ref().err());
        placed
    }

    /// The call, made by the entry's family; a snippet (run `id`) gets the tools its
    /// code may call.
    async fn dispatch(
        &self,
        caller: &Caller,
        entry: &Entry,
        params: &Value,
        cancel: &CancellationToken,
        id: &str,
    ) -> Answer {
        let party = caller.party();
        let inner = (entry.shape() == Shape::Snippet).then(|| code::Inner::new(self, caller, id));
        let call = Call {
            target: entry.target(),
            params,
            session: caller.owner(),
            party: &party,
            cancel,
            tools: inner.as_ref().map(|i| i as &dyn Tools),
        };
        let family = entry.backend().family();
        let span = tracing::info_span!(
            target: STEP,
            "execute",
            otel.name = %format_args!("execute {family}"),
            toolgate.family = family,
            error.type = tracing::field::Empty,
        );
        let answer = entry.backend().call(call).instrument(span.clone()).await;
        failed(&span, answer.ended.as_ref().err());
        answer
    }

    /// A check of whether a tool of `snapshot` can run here: `Ok`, else why not (a
    /// runtime that is missing). Reuse one checker for a whole listing. An upstream
    /// tool can always run here; whether its server is up now is [`Gateway::reachable`].
    pub fn availability(&self, snapshot: &Snapshot) -> impl FnMut(&crate::catalogue::Tool) -> Result<(), Error> + '_ {
        let mut local = self.families.catalogue.availability(snapshot.origin());
        move |tool| match tool.federated {
            Some(_) => Ok(()),
            None => local(tool),
        }
    }

    /// `Ok` unless `tool` is an upstream tool whose server is down now
    /// (`UPSTREAM_UNAVAILABLE`, naming it and its last error).
    pub fn reachable(&self, tool: &crate::catalogue::Tool) -> Result<(), Error> {
        match (&self.federation, &tool.federated) {
            (Some((f, _)), Some(federated)) => f.upstreams.status(federated),
            _ => Ok(()),
        }
    }

    /// A receiver that wakes whenever the upstream servers' tools may have changed, when
    /// there are upstreams.
    pub fn upstream_changes(&self) -> Option<tokio::sync::watch::Receiver<u64>> {
        self.upstreams().map(|u| u.changes())
    }

    /// How often the catalogue can change under this gateway: the cache lifetime of an
    /// HTTP catalogue, `None` for local catalogues, which never change.
    pub fn refresh_interval(&self) -> Option<std::time::Duration> {
        self.store.api().map(|_| self.store.ttl())
    }
}

/// Records on `span` the stable code of the error a step ended with, if one did.
fn failed(span: &tracing::Span, error: Option<&Error>) {
    if let Some(e) = error {
        span.record("error.type", e.code());
    }
}

/// Checks `params` against `entry`'s input schema, on a heavy thread ([`crate::heavy`])
/// when they are heavy enough to hold an async worker ([`crate::validate::Compiled::is_heavy`]), and
/// hands them back. A check that could not finish (its thread panicked) is an internal
/// error, its params `null`.
pub async fn validate(entry: &Entry, params: Value) -> (Result<(), Error>, Value) {
    let validator = match entry.validator() {
        Ok(v) => v,
        Err(e) => return (Err(e), params),
    };
    if !validator.is_heavy(&params) {
        return (validator.check(entry.name(), &params), params);
    }
    let name = entry.name().to_owned();
    crate::heavy::blocking(move || (validator.check(&name, &params), params))
        .await
        .unwrap_or_else(|e| (Err(Error::Internal(format!("validation stopped: {e}"))), Value::Null))
}

/// Frees a call's params: a large value (more than [`LARGE_PARAMS_VALUES`] values, a
/// bounded count) on a heavy thread ([`crate::heavy`]), since freeing a million strings holds an async
/// worker for tens of milliseconds, in which no other caller's request is served there.
fn release(params: Value) {
    fn count(value: &Value, left: &mut usize) -> bool {
        if *left == 0 {
            return false;
        }
        *left -= 1;
        match value {
            Value::Array(items) => items.iter().all(|v| count(v, left)),
            Value::Object(map) => map.values().all(|v| count(v, left)),
            _ => true,
        }
    }
    let mut left = LARGE_PARAMS_VALUES;
    if !count(&params, &mut left) {
        crate::heavy::free(params);
    }
}
