//! Traces over OpenTelemetry: when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set and `OTEL_SDK_DISABLED` is not `true`,
//! toolgate's spans (`tracing`, target `toolgate…`) are exported over OTLP — HTTP with
//! protobuf ([`otlp`], written by [`proto`]), or gRPC (`opentelemetry-otlp`) when
//! `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` (or `OTEL_EXPORTER_OTLP_PROTOCOL`) says `grpc`
//! — by the official SDK's batch processor,
//! configured by the standard variables (`OTEL_EXPORTER_OTLP_HEADERS`,
//! `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`, `OTEL_TRACES_SAMPLER` and its
//! argument, `OTEL_BSP_*`). Unset, there is no exporter and no OpenTelemetry layer: spans
//! cost what they cost before.
//!
//! A client's trace context (`traceparent`/`tracestate`, W3C Trace Context) becomes the
//! parent of the span of its request ([`root`]). Which spans are exported, and that
//! nothing under a root the sampler dropped is built, is [`exported`].

pub mod exported;
mod otlp;
mod proto;
mod queue;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::{SpanContext, TraceContextExt as _, TracerProvider as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_opentelemetry::OpenTelemetrySpanExt;
use tracing_subscriber::registry::LookupSpan as _;

/// The service name spans carry when `OTEL_SERVICE_NAME` does not say one.
const SERVICE: &str = "toolgate";

/// Set once an exporter runs: the helpers below then read and pass on trace contexts;
/// unset they return at once, so a process without traces pays one atomic load.
static ON: AtomicBool = AtomicBool::new(false);

/// The W3C Trace Context headers a context travels in.
pub const HEADERS: [&str; 2] = ["traceparent", "tracestate"];

/// An exporter running: flushes what it holds when shut down.
#[derive(Debug)]
pub struct Exporting {
    provider: SdkTracerProvider,
}

impl Exporting {
    /// Exports what the batch holds and stops the exporter (at exit).
    pub fn shutdown(self) {
        if let Err(e) = self.provider.shutdown() {
            tracing::warn!("the trace exporter did not stop cleanly: {e}");
        }
    }
}

/// The layer that turns toolgate's spans into OpenTelemetry spans, behind the filter that
/// says which ([`exported::Exported`]).
pub type Layer<S> = tracing_subscriber::filter::Filtered<
    tracing_opentelemetry::OpenTelemetryLayer<S, opentelemetry_sdk::trace::Tracer>,
    exported::Exported,
    S,
>;

/// Whether the environment asks for traces: an OTLP endpoint, and the SDK not disabled.
pub fn wanted() -> bool {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    let disabled = std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"));
    !disabled && (set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
}

/// How spans travel to the collector.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// OTLP/HTTP with protobuf bodies (`http/protobuf`, the default).
    HttpProtobuf,
    /// OTLP/gRPC (`grpc`).
    Grpc,
}

impl Protocol {
    /// The protocol `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL` (else `OTEL_EXPORTER_OTLP_PROTOCOL`)
    /// names: `raw`, if given. `http/json` and unknown names are refused, saying which
    /// are served.
    pub fn parse(raw: Option<&str>) -> Result<Protocol, String> {
        match raw.map(str::trim).filter(|v| !v.is_empty()) {
            None | Some("http/protobuf") => Ok(Protocol::HttpProtobuf),
            Some("grpc") => Ok(Protocol::Grpc),
            Some(other) => Err(format!(
                "the OTLP protocol \"{other}\" is not served: use http/protobuf (the default) or grpc"
            )),
        }
    }

    /// The protocol the environment asks for.
    fn from_env() -> Result<Protocol, String> {
        let named = ["OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", "OTEL_EXPORTER_OTLP_PROTOCOL"]
            .into_iter()
            .find_map(|name| std::env::var(name).ok().filter(|v| !v.trim().is_empty()));
        Protocol::parse(named.as_deref())
    }
}

/// The OpenTelemetry layer for the process's subscriber and the exporter behind it, when
/// [`wanted`]; `Err` says why the exporter could not be built (the server runs without).
/// `steps`: the steps of a call are exported too (`TOOLGATE_TRACE_STEPS`). A gRPC
/// exporter's connection lives on `runtime`, which must outlive the exporter's shutdown.
pub fn start<S>(runtime: &tokio::runtime::Handle, steps: bool) -> Result<Option<(Layer<S>, Exporting)>, String>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    if !wanted() {
        return Ok(None);
    }
    match Protocol::from_env()? {
        Protocol::HttpProtobuf => provide(otlp::HttpExporter::from_env()?, steps),
        Protocol::Grpc => {
            // tonic's channel is made on the runtime (its connection is a task there);
            // the batch processor's thread hands it each export.
            let built = {
                let _inside = runtime.enter();
                opentelemetry_otlp::SpanExporter::builder().with_tonic().build()
            };
            provide(
                built.map_err(|e| format!("cannot build the OTLP trace exporter: {e}"))?,
                steps,
            )
        }
    }
}

/// The layer and exporter of [`start`], exporting with `exporter`.
fn provide<S, E>(exporter: E, steps: bool) -> Result<Option<(Layer<S>, Exporting)>, String>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
    E: opentelemetry_sdk::trace::SpanExporter + 'static,
{
    let mut resource = opentelemetry_sdk::Resource::builder();
    if std::env::var("OTEL_SERVICE_NAME").is_err() {
        resource = resource.with_service_name(SERVICE);
    }
    // The batch processor's queue, bounded in front of it so drops are counted (`queue`).
    let bound = std::env::var(opentelemetry_sdk::trace::OTEL_BSP_MAX_QUEUE_SIZE)
        .ok()
        .and_then(|v| v.trim().parse::<usize>().ok())
        .filter(|n| *n > 0)
        .unwrap_or(opentelemetry_sdk::trace::OTEL_BSP_MAX_QUEUE_SIZE_DEFAULT);
    let held = std::sync::Arc::new(queue::Held::default());
    let exporter = queue::Counted {
        inner: exporter,
        held: held.clone(),
    };
    let config = opentelemetry_sdk::trace::BatchConfigBuilder::default()
        .with_max_queue_size(bound)
        .build();
    let batch = opentelemetry_sdk::trace::BatchSpanProcessor::builder(exporter)
        .with_batch_config(config)
        .build();
    let provider = SdkTracerProvider::builder()
        .with_span_processor(queue::Bounded {
            inner: batch,
            held,
            bound,
        })
        .with_resource(resource.build())
        .build();
    let tracer = provider.tracer("toolgate");
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    // Left out: what tracing-opentelemetry adds by default that the MCP and GenAI
    // conventions do not ask for — an OTel context made current at each enter (toolgate
    // passes contexts on explicitly, `carrier_of`), busy/idle time taken at each enter
    // and exit, and thread, source-location and target attributes (five more per span).
    // Measured: no change in throughput beyond the noise (docs/performance.md#traces);
    // the spans are smaller.
    let layer = tracing_opentelemetry::layer()
        .with_tracer(tracer)
        .with_context_activation(false)
        .with_tracked_inactivity(false)
        .with_threads(false)
        .with_location(false)
        .with_target(false);
    let layer = tracing_subscriber::Layer::with_filter(layer, exported::Exported { steps });
    ON.store(true, Ordering::Relaxed);
    Ok(Some((layer, Exporting { provider })))
}

/// The trace context in `carrier` (`traceparent`, `tracestate`), when it holds a valid one.
pub fn extract(carrier: &HashMap<String, String>) -> Option<opentelemetry::Context> {
    if !on() || !carrier.contains_key("traceparent") {
        return None;
    }
    let context = TraceContextPropagator::new().extract(carrier);
    context.span().span_context().is_valid().then_some(context)
}

/// Opens `span`, a root span ([`exported::ROOTS`]: an HTTP or MCP request's), as the child
/// of `parent` (a client's context; none: a trace of its own), lets the sampler decide
/// it now, and keeps the decision where the spans under it look ([`exported`]: under a
/// dropped root nothing more is built). Its context, sampled or not, when traces are
/// exported.
pub fn root(span: &tracing::Span, parent: Option<opentelemetry::Context>) -> Option<opentelemetry::Context> {
    if !on() {
        return None;
    }
    if let Some(parent) = parent {
        let _ = span.set_parent(parent);
    }
    let context = span.context();
    let span_context = context.span().span_context().clone();
    if !span_context.is_valid() {
        return None;
    }
    let root = exported::Root { context: span_context };
    span.with_subscriber(|(id, dispatch)| {
        let registry = dispatch.downcast_ref::<tracing_subscriber::Registry>()?;
        registry.span(id)?.extensions_mut().replace(root);
        Some(())
    });
    Some(context)
}

/// The root ([`root`]) `span` is under, or is; for a span no layer keeps (one under a root
/// the sampler dropped, with the log filter at its default), the current span's.
fn root_of(span: &tracing::Span) -> Option<SpanContext> {
    let current;
    let span = if span.is_disabled() {
        current = tracing::Span::current();
        &current
    } else {
        span
    };
    span.with_subscriber(|(id, dispatch)| {
        let registry = dispatch.downcast_ref::<tracing_subscriber::Registry>()?;
        registry
            .span(id)?
            .scope()
            .find_map(|s| s.extensions().get::<exported::Root>().map(|r| r.context.clone()))
    })
    .flatten()
}

/// Whether this process exports spans ([`start`] built an exporter).
pub fn on() -> bool {
    ON.load(Ordering::Relaxed)
}

/// The trace context of `span` as W3C Trace Context fields (`traceparent`, and
/// `tracestate` when there is one), to pass on to the next hop; empty when no trace is
/// exported. A span that is not exported (its trace was not sampled) passes on its
/// root's context, marked unsampled, so the next hop keeps the trace and the decision.
pub fn carrier_of(span: &tracing::Span) -> HashMap<String, String> {
    let mut carrier = HashMap::new();
    if !on() {
        return carrier;
    }
    let mut context = span.context();
    if !context.span().span_context().is_valid() {
        match root_of(span) {
            Some(root) => context = opentelemetry::Context::new().with_remote_span_context(root),
            None => return carrier,
        }
    }
    TraceContextPropagator::new().inject_context(&context, &mut carrier);
    carrier
}

/// [`carrier_of`] the current span.
pub fn carrier() -> HashMap<String, String> {
    carrier_of(&tracing::Span::current())
}

/// Adds the current span's trace context to the headers of an outgoing HTTP request
/// (nothing when no trace is exported).
pub fn inject(headers: &mut reqwest::header::HeaderMap) {
    for (key, value) in carrier() {
        if let (Ok(name), Ok(value)) = (
            reqwest::header::HeaderName::from_bytes(key.as_bytes()),
            reqwest::header::HeaderValue::from_str(&value),
        ) {
            headers.insert(name, value);
        }
    }
}

/// The trace context an incoming HTTP request carries in its headers, when it carries a
/// valid one and traces are exported.
pub fn from_headers(headers: &reqwest::header::HeaderMap) -> Option<opentelemetry::Context> {
    /// The headers as the propagator reads them.
    struct Headers<'a>(&'a reqwest::header::HeaderMap);
    impl opentelemetry::propagation::Extractor for Headers<'_> {
        fn get(&self, key: &str) -> Option<&str> {
            self.0.get(key).and_then(|v| v.to_str().ok())
        }
        fn keys(&self) -> Vec<&str> {
            self.0.keys().map(reqwest::header::HeaderName::as_str).collect()
        }
    }
    if !on() || !headers.contains_key("traceparent") {
        return None;
    }
    let context = TraceContextPropagator::new().extract(&Headers(headers));
    context.span().span_context().is_valid().then_some(context)
}

/// The id of the trace the current span belongs to (32 hex digits; its root's,
/// [`root`]), when traces are exported: for the history entry of a run. Sampled or not,
/// as the access log line's.
pub fn trace_id() -> Option<String> {
    if !on() {
        return None;
    }
    root_of(&tracing::Span::current()).map(|root| root.trace_id().to_string())
}

/// The trace context of an HTTP request's server span, kept in the request's extensions
/// so the MCP request it carries (handled by rmcp apart from the HTTP layers) continues
/// that span.
#[derive(Debug, Clone)]
pub struct Incoming(pub opentelemetry::Context);

/// The hosts a JavaScript `fetch` passes the run's trace context to
/// (`TOOLGATE_FETCH_TRACE`): none by default, since a `traceparent` tells the server
/// fetched that a toolgate is calling and which trace the call belongs to.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FetchTrace {
    /// `*`: every host.
    any: bool,
    /// Host names (lower case) or IP literals, each with a port or for any port.
    hosts: Vec<(String, Option<u16>)>,
}

impl FetchTrace {
    /// Parses the setting: comma-separated `host` or `host:port` (`[v6]:port`), or `*`;
    /// empty: none. A malformed entry is an error naming it.
    pub fn parse(raw: &str) -> Result<FetchTrace, String> {
        let mut trace = FetchTrace::default();
        for entry in raw.split(',').map(str::trim).filter(|e| !e.is_empty()) {
            if entry == "*" {
                trace.any = true;
                continue;
            }
            let bad = |why: &str| format!("TOOLGATE_FETCH_TRACE: \"{entry}\" {why}; give host, host:port or *");
            let url = reqwest::Url::parse(&format!("http://{entry}/")).map_err(|_| bad("is not a host"))?;
            let host = url.host_str().ok_or_else(|| bad("names no host"))?;
            if url.path() != "/" || !url.username().is_empty() || url.query().is_some() {
                return Err(bad("is more than a host and port"));
            }
            trace.hosts.push((host.to_ascii_lowercase(), url.port()));
        }
        Ok(trace)
    }

    /// Whether a request to `url` carries the trace context.
    pub fn allows(&self, url: &reqwest::Url) -> bool {
        if self.any {
            return true;
        }
        let Some(host) = url.host_str() else { return false };
        let port = url.port_or_known_default();
        self.hosts
            .iter()
            .any(|(h, p)| h.eq_ignore_ascii_case(host) && p.is_none_or(|p| Some(p) == port))
    }
}

#[cfg(test)]
mod tests {
    use super::{FetchTrace, Protocol};

    #[test]
    fn the_protocol_is_http_protobuf_or_grpc_and_others_are_refused() {
        assert_eq!(Protocol::parse(None).unwrap(), Protocol::HttpProtobuf);
        assert_eq!(Protocol::parse(Some(" ")).unwrap(), Protocol::HttpProtobuf);
        assert_eq!(Protocol::parse(Some("http/protobuf")).unwrap(), Protocol::HttpProtobuf);
        assert_eq!(Protocol::parse(Some("grpc")).unwrap(), Protocol::Grpc);
        let refused = Protocol::parse(Some("http/json")).unwrap_err();
        assert!(
            refused.contains("http/protobuf") && refused.contains("grpc"),
            "{refused}"
        );
    }

    #[test]
    fn fetch_trace_names_hosts_with_or_without_a_port_or_every_host() {
        let url = |u: &str| reqwest::Url::parse(u).unwrap();
        let none = FetchTrace::parse(" ").unwrap();
        assert!(!none.allows(&url("http://127.0.0.1:8080/")));
        let some = FetchTrace::parse("api.example.com, 127.0.0.1:8080,[::1]:9000").unwrap();
        assert!(some.allows(&url("https://API.example.com/x?y")));
        assert!(some.allows(&url("http://127.0.0.1:8080/")));
        assert!(!some.allows(&url("http://127.0.0.1:8081/")));
        assert!(some.allows(&url("http://[::1]:9000/")));
        assert!(!some.allows(&url("https://example.com/")));
        assert!(FetchTrace::parse("*").unwrap().allows(&url("https://example.com/")));
        for bad in ["http://x/y", "a b", "host/path", "user@host"] {
            let e = FetchTrace::parse(bad).unwrap_err();
            assert!(e.contains("TOOLGATE_FETCH_TRACE") && e.contains(bad), "{bad}: {e}");
        }
    }
}
