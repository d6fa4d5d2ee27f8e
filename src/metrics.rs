//! The process's Prometheus metrics (prometheus-client): HTTP requests and their latency
//! by route and status, runs by tool family and outcome code, rate-limit refusals, live
//! MCP sessions over HTTP, the JavaScript worker pool's use, catalogue builds, and
//! upstream messages dropped. One registry per process, reached through [`get`], so
//! the places that count (the edge, the gateway, the access layer) need no handle
//! passed down to them.
//!
//! A leaf: it knows no HTTP, MCP or gateway type. Label values are bounded sets (route
//! patterns, never raw paths; error codes; family names), so a caller cannot grow the
//! series without limit.

use std::fmt::Write as _;
use std::sync::OnceLock;

use prometheus_client::encoding::{EncodeLabelSet, EncodeLabelValue, LabelValueEncoder};
use prometheus_client::metrics::counter::Counter;
use prometheus_client::metrics::exemplar::HistogramWithExemplars;
use prometheus_client::metrics::family::Family;
use prometheus_client::metrics::gauge::Gauge;
use prometheus_client::metrics::histogram::exponential_buckets;
use prometheus_client::registry::Registry;

/// The `Content-Type` of [`Metrics::render`]'s text.
pub const CONTENT_TYPE: &str = "application/openmetrics-text; version=1.0.0; charset=utf-8";

/// Labels of an HTTP request.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RequestLabels {
    /// The route's pattern (`/api/tools/{slug}/run`, `/mcp`), or `other` for no route.
    pub route: String,
    /// The method, one of [`METHODS`] or `other` ([`method_label`]).
    pub method: &'static str,
    /// The answer's status code.
    pub status: u16,
}

/// The exemplar of a latency bucket: the trace of a request that fell in it (when
/// traces are exported), so a slow bucket leads to a trace that shows why.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct TraceLabel {
    /// The trace's id, 32 hex digits.
    pub trace_id: String,
}

/// Labels of a run.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RunLabels {
    /// `catalogue`, `javascript`, `nyxilum` or `upstream`.
    pub family: String,
    /// `ok`, or the failure's stable code.
    pub code: String,
}

/// Labels of a rate-limit refusal.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RefusalLabels {
    /// `requests` or `runs`.
    pub limit: String,
}

/// Labels of a request refused at the HTTP edge before any route ran.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct EdgeLabels {
    /// One of [`EDGE_REASONS`].
    pub reason: &'static str,
}

/// Why the edge refuses a request: a body too slow, too large, or past the shared body
/// budget; a session beyond the global or the principal's cap; a request naming a
/// session of another principal; a session request a fleet's replica cannot serve while
/// its Redis is unreachable.
pub const EDGE_REASONS: &[&str] = &[
    "body_slow",
    "body_large",
    "body_budget",
    "sessions_global",
    "sessions_principal",
    "session_owner",
    "sessions_shared",
];

/// HTTP methods counted by name; any other is counted as `other`, so a caller inventing
/// methods cannot add series (150,000 made-up methods once grew `/metrics` to 61 MB).
pub const METHODS: &[&str] = &["GET", "POST", "PUT", "DELETE", "PATCH", "HEAD", "OPTIONS"];

/// `method` as a request's label: its name when it is one of [`METHODS`], else `other`.
pub fn method_label(method: &str) -> &'static str {
    METHODS.iter().find(|m| **m == method).copied().unwrap_or("other")
}

/// Labels of a catalogue refresh.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct RefreshLabels {
    /// `built` (a new snapshot), `unchanged` (the API answered 304, or the same list
    /// that failed before) or `failed` (the last good snapshot, if any, still serves).
    pub outcome: String,
}

/// What an upstream server sent that was dropped instead of passed on to a client.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum UpstreamMessage {
    /// A log message.
    Log,
    /// A progress notification.
    Progress,
    /// A request of the client (sampling, elicitation, roots), refused.
    Request,
}

/// Why an upstream's message was dropped.
#[derive(Clone, Copy, Debug, Hash, PartialEq, Eq)]
pub enum Unpassed {
    /// It could not be attributed to the calls of one session (none in flight or just
    /// ended, or several sessions'), or its progress token is no call's.
    Unattributed,
    /// Too many were waiting to be passed on.
    QueueFull,
    /// It came on a connection a newer one has replaced.
    Stale,
}

impl EncodeLabelValue for UpstreamMessage {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> std::fmt::Result {
        encoder.write_str(match self {
            UpstreamMessage::Log => "log",
            UpstreamMessage::Progress => "progress",
            UpstreamMessage::Request => "request",
        })
    }
}

impl EncodeLabelValue for Unpassed {
    fn encode(&self, encoder: &mut LabelValueEncoder<'_>) -> std::fmt::Result {
        encoder.write_str(match self {
            Unpassed::Unattributed => "unattributed",
            Unpassed::QueueFull => "queue_full",
            Unpassed::Stale => "stale",
        })
    }
}

/// Labels of a dropped upstream message: both from fixed sets.
#[derive(Clone, Debug, Hash, PartialEq, Eq, EncodeLabelSet)]
pub struct DroppedLabels {
    /// What it was.
    pub kind: UpstreamMessage,
    /// Why it was dropped.
    pub reason: Unpassed,
}

/// How the JavaScript worker pool is used at one moment, read when metrics are rendered.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PoolUse {
    /// Runs that may go at once.
    pub places: i64,
    /// Runs holding a place now.
    pub running: i64,
    /// Runs waiting for a place.
    pub waiting: i64,
    /// Started workers waiting for a run.
    pub idle: i64,
}

/// Reads the worker pool's use; set by the pool, called on each render.
type PoolProbe = Box<dyn Fn() -> PoolUse + Send + Sync>;

type Histogram = HistogramWithExemplars<TraceLabel>;
type Histograms = Family<RequestLabels, Histogram, fn() -> Histogram>;

/// Every metric of the process.
pub struct Metrics {
    registry: Registry,
    requests: Family<RequestLabels, Counter>,
    latency: Histograms,
    runs: Family<RunLabels, Counter>,
    refusals: Family<RefusalLabels, Counter>,
    edge: Family<EdgeLabels, Counter>,
    sessions: Gauge,
    refreshes: Family<RefreshLabels, Counter>,
    tools: Gauge,
    pool: PoolGauges,
    workers_started: Counter,
    probe: std::sync::RwLock<Option<PoolProbe>>,
    upstream_dropped: Family<DroppedLabels, Counter>,
    redis_up: Gauge,
    definitions_held: Gauge,
    redis_errors: Counter,
    redis_exchanges: Counter,
    trace_dropped: Counter,
}

impl std::fmt::Debug for Metrics {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Metrics").finish_non_exhaustive()
    }
}

/// The gauges [`PoolUse`] is copied into before each render.
#[derive(Default)]
struct PoolGauges {
    places: Gauge,
    running: Gauge,
    waiting: Gauge,
    idle: Gauge,
}

/// Request latency buckets: 0.5 ms doubling to about 16 s.
fn latency_histogram() -> Histogram {
    HistogramWithExemplars::new(exponential_buckets(0.000_5, 2.0, 16))
}

impl Metrics {
    fn new() -> Metrics {
        let mut registry = Registry::with_prefix("toolgate");
        let requests = Family::<RequestLabels, Counter>::default();
        let latency: Histograms = Family::new_with_constructor(latency_histogram);
        let runs = Family::<RunLabels, Counter>::default();
        let refusals = Family::<RefusalLabels, Counter>::default();
        let sessions = Gauge::default();
        let edge = Family::<EdgeLabels, Counter>::default();
        registry.register(
            "http_refused",
            "Requests refused at the HTTP edge, by reason (slow, large or over-budget bodies; session caps; another principal's session; a fleet's sessions unreadable)",
            edge.clone(),
        );
        registry.register(
            "http_requests",
            "HTTP requests answered, by route, method and status",
            requests.clone(),
        );
        registry.register(
            "http_request_duration_seconds",
            "Time to answer an HTTP request (to its head; a stream's body is not timed), by route, method and status",
            latency.clone(),
        );
        registry.register("runs", "Runs, by tool family and outcome code", runs.clone());
        registry.register(
            "rate_limited",
            "Requests and runs refused by a principal's rate limit",
            refusals.clone(),
        );
        registry.register("mcp_sessions", "MCP sessions alive over HTTP", sessions.clone());
        let refreshes = Family::<RefreshLabels, Counter>::default();
        registry.register(
            "catalogue_refreshes",
            "Catalogue builds and refreshes, by outcome (built, unchanged, failed)",
            refreshes.clone(),
        );
        let tools = Gauge::default();
        registry.register(
            "catalogue_tools",
            "Tools in the catalogue snapshot built last",
            tools.clone(),
        );
        let pool = PoolGauges::default();
        registry.register("js_places", "JavaScript runs that may go at once", pool.places.clone());
        registry.register("js_running", "JavaScript runs holding a place", pool.running.clone());
        registry.register(
            "js_waiting",
            "JavaScript runs waiting for a place",
            pool.waiting.clone(),
        );
        registry.register(
            "js_workers_idle",
            "Started JavaScript workers waiting for a run",
            pool.idle.clone(),
        );
        let workers_started = Counter::default();
        registry.register(
            "js_workers_started",
            "JavaScript worker processes started (each serves many runs, then is replaced)",
            workers_started.clone(),
        );
        let upstream_dropped = Family::<DroppedLabels, Counter>::default();
        registry.register(
            "upstream_messages_dropped",
            "Messages of upstream servers dropped instead of passed on to a client, by kind and reason",
            upstream_dropped.clone(),
        );
        let redis_up = Gauge::default();
        registry.register(
            "redis_up",
            "With TOOLGATE_REDIS: 1 while the fleet's Redis answers; 0 while it does not, before the first exchange, and always without TOOLGATE_REDIS",
            redis_up.clone(),
        );
        let definitions_held = Gauge::default();
        registry.register(
            "upstream_definitions_held",
            "With TOOLGATE_PINS: upstream tools held because their definition changed since it was approved (or, with TOOLGATE_PINS_HOLD_NEW, because they are new)",
            definitions_held.clone(),
        );
        let redis_errors = Counter::default();
        registry.register(
            "redis_errors",
            "With TOOLGATE_REDIS: exchanges with the fleet's Redis that failed (unreachable, too slow, or an error answer)",
            redis_errors.clone(),
        );
        let redis_exchanges = Counter::default();
        registry.register(
            "redis_exchanges",
            "With TOOLGATE_REDIS: round trips to the fleet's Redis (a command, a script or a pipeline, with the writes it carries), failed ones included",
            redis_exchanges.clone(),
        );
        let trace_dropped = Counter::default();
        registry.register(
            "trace_spans_dropped",
            "Spans not exported because the export queue was full (OTEL_BSP_MAX_QUEUE_SIZE): the collector down or slower than the spans come",
            trace_dropped.clone(),
        );
        Metrics {
            trace_dropped,
            registry,
            requests,
            latency,
            runs,
            refusals,
            edge,
            sessions,
            refreshes,
            tools,
            pool,
            workers_started,
            probe: std::sync::RwLock::new(None),
            upstream_dropped,
            redis_up,
            definitions_held,
            redis_errors,
            redis_exchanges,
        }
    }

    /// Counts one answered request and its latency in seconds; `trace_id`, the trace of
    /// the request when it is exported (sampled), becomes its bucket's exemplar.
    pub fn request(&self, labels: &RequestLabels, seconds: f64, trace_id: Option<&str>) {
        self.requests.get_or_create(labels).inc();
        let exemplar = trace_id.map(|t| TraceLabel { trace_id: t.to_owned() });
        self.latency.get_or_create(labels).observe(seconds, exemplar, None);
    }

    /// Counts one span dropped at the full export queue (`crate::telemetry`).
    pub fn trace_span_dropped(&self) {
        self.trace_dropped.inc();
    }

    /// Counts one run of `family` that ended with `code` (`ok` on success).
    pub fn run(&self, family: &str, code: &str) {
        let labels = RunLabels {
            family: family.to_owned(),
            code: code.to_owned(),
        };
        self.runs.get_or_create(&labels).inc();
    }

    /// Counts one refusal by the `limit` (`requests` or `runs`) of a principal.
    pub fn rate_limited(&self, limit: &str) {
        let labels = RefusalLabels {
            limit: limit.to_owned(),
        };
        self.refusals.get_or_create(&labels).inc();
    }

    /// Counts one request refused at the edge for `reason` (one of [`EDGE_REASONS`];
    /// anything else is not counted).
    pub fn edge_refused(&self, reason: &str) {
        if let Some(reason) = EDGE_REASONS.iter().find(|r| **r == reason) {
            self.edge.get_or_create(&EdgeLabels { reason }).inc();
        }
    }

    /// One more (`+1`) or one fewer (`-1`) live MCP session over HTTP.
    pub fn sessions(&self, change: i64) {
        self.sessions.inc_by(change);
    }

    /// Counts one catalogue build or refresh that ended as `outcome` (`built`,
    /// `unchanged` or `failed`); a build also sets the tool count.
    pub fn refresh(&self, outcome: &str, tools: Option<usize>) {
        let labels = RefreshLabels {
            outcome: outcome.to_owned(),
        };
        self.refreshes.get_or_create(&labels).inc();
        if let Some(tools) = tools {
            self.tools.set(i64::try_from(tools).unwrap_or(i64::MAX));
        }
    }

    /// Upstream tools held by their pins now.
    pub fn upstream_definitions_held(&self, held: usize) {
        self.definitions_held.set(i64::try_from(held).unwrap_or(i64::MAX));
    }

    /// Whether the fleet's Redis answered the last exchange.
    pub fn redis_up(&self, up: bool) {
        self.redis_up.set(i64::from(up));
    }

    /// Counts one failed exchange with the fleet's Redis.
    pub fn redis_error(&self) {
        self.redis_errors.inc();
    }

    /// Counts one round trip to the fleet's Redis.
    pub fn redis_exchange(&self) {
        self.redis_exchanges.inc();
    }

    /// Counts one JavaScript worker process started.
    pub fn worker_started(&self) {
        self.workers_started.inc();
    }

    /// Has `probe` read the worker pool's use at each render (the last pool to ask wins:
    /// a process has one).
    pub fn watch_pool(&self, probe: impl Fn() -> PoolUse + Send + Sync + 'static) {
        let mut held = self.probe.write().unwrap_or_else(std::sync::PoisonError::into_inner);
        *held = Some(Box::new(probe));
    }

    /// Counts one message of an upstream server dropped for `reason`.
    pub fn upstream_dropped(&self, kind: UpstreamMessage, reason: Unpassed) {
        self.upstream_dropped
            .get_or_create(&DroppedLabels { kind, reason })
            .inc();
    }

    /// Every metric in the OpenMetrics text format, which Prometheus reads.
    pub fn render(&self) -> String {
        let probe = self.probe.read().unwrap_or_else(std::sync::PoisonError::into_inner);
        let now = probe.as_ref().map(|p| p()).unwrap_or_default();
        drop(probe);
        self.pool.places.set(now.places);
        self.pool.running.set(now.running);
        self.pool.waiting.set(now.waiting);
        self.pool.idle.set(now.idle);
        let mut text = String::new();
        if let Err(e) = prometheus_client::encoding::text::encode(&mut text, &self.registry) {
            tracing::warn!("cannot encode the metrics: {e}");
        }
        text
    }
}

/// The process's metrics.
pub fn get() -> &'static Metrics {
    static METRICS: OnceLock<Metrics> = OnceLock::new();
    METRICS.get_or_init(Metrics::new)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn counted_requests_and_runs_render_as_openmetrics_text() {
        let metrics = Metrics::new();
        let labels = RequestLabels {
            route: "/api/tools".into(),
            method: "GET",
            status: 200,
        };
        metrics.request(&labels, 0.002, None);
        metrics.run("catalogue", "RATE_LIMITED");
        metrics.rate_limited("runs");
        metrics.refresh("built", Some(34));
        metrics.refresh("failed", None);
        metrics.upstream_dropped(UpstreamMessage::Log, Unpassed::Unattributed);
        metrics.watch_pool(|| PoolUse {
            places: 8,
            running: 3,
            waiting: 1,
            idle: 2,
        });
        let text = metrics.render();
        assert!(
            text.contains(r#"toolgate_catalogue_refreshes_total{outcome="built"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"toolgate_catalogue_refreshes_total{outcome="failed"} 1"#),
            "{text}"
        );
        assert!(text.contains("toolgate_catalogue_tools 34\n"), "{text}");
        assert!(text.contains("toolgate_js_places 8\n"), "{text}");
        assert!(text.contains("toolgate_js_running 3\n"), "{text}");
        assert!(text.contains("toolgate_js_waiting 1\n"), "{text}");
        assert!(text.contains("toolgate_js_workers_idle 2\n"), "{text}");
        assert!(
            text.contains(r#"toolgate_http_requests_total{route="/api/tools",method="GET",status="200"} 1"#),
            "{text}"
        );
        assert!(text.contains("toolgate_http_request_duration_seconds_bucket"), "{text}");
        assert!(
            text.contains(r#"toolgate_runs_total{family="catalogue",code="RATE_LIMITED"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"toolgate_rate_limited_total{limit="runs"} 1"#),
            "{text}"
        );
        assert!(
            text.contains(r#"toolgate_upstream_messages_dropped_total{kind="log",reason="unattributed"} 1"#),
            "{text}"
        );
        assert!(text.ends_with("# EOF\n"), "{text}");
    }
}
