//! Traces over OpenTelemetry: when `OTEL_EXPORTER_OTLP_ENDPOINT` (or
//! `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`) is set and `OTEL_SDK_DISABLED` is not `true`,
//! toolgate's spans (`tracing`, target `toolgate…`) are exported over OTLP/HTTP with
//! protobuf by the official SDK's batch processor, configured by the standard variables
//! (`OTEL_EXPORTER_OTLP_HEADERS`, `OTEL_SERVICE_NAME`, `OTEL_RESOURCE_ATTRIBUTES`,
//! `OTEL_TRACES_SAMPLER` and its argument, `OTEL_BSP_*`). Unset, there is no exporter and
//! no OpenTelemetry layer: spans cost what they cost before.
//!
//! A client's trace context (`traceparent`/`tracestate`, W3C Trace Context) becomes the
//! parent of the span of its request ([`parent`]).

use std::collections::HashMap;

use opentelemetry::propagation::TextMapPropagator;
use opentelemetry::trace::TracerProvider as _;
use opentelemetry_sdk::propagation::TraceContextPropagator;
use opentelemetry_sdk::trace::SdkTracerProvider;
use tracing_opentelemetry::OpenTelemetrySpanExt;

/// The service name spans carry when `OTEL_SERVICE_NAME` does not say one.
const SERVICE: &str = "toolgate";

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

/// The layer that turns toolgate's spans into OpenTelemetry spans.
pub type Layer<S> = tracing_opentelemetry::OpenTelemetryLayer<S, opentelemetry_sdk::trace::Tracer>;

/// Whether the environment asks for traces: an OTLP endpoint, and the SDK not disabled.
pub fn wanted() -> bool {
    let set = |name: &str| std::env::var(name).is_ok_and(|v| !v.trim().is_empty());
    let disabled = std::env::var("OTEL_SDK_DISABLED").is_ok_and(|v| v.trim().eq_ignore_ascii_case("true"));
    !disabled && (set("OTEL_EXPORTER_OTLP_ENDPOINT") || set("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"))
}

/// The OpenTelemetry layer for the process's subscriber and the exporter behind it, when
/// [`wanted`]; `Err` says why the exporter could not be built (the server runs without).
pub fn start<S>() -> Result<Option<(Layer<S>, Exporting)>, String>
where
    S: tracing::Subscriber + for<'span> tracing_subscriber::registry::LookupSpan<'span>,
{
    if !wanted() {
        return Ok(None);
    }
    let exporter = opentelemetry_otlp::SpanExporter::builder()
        .with_http()
        .build()
        .map_err(|e| format!("cannot build the OTLP trace exporter: {e}"))?;
    let mut resource = opentelemetry_sdk::Resource::builder();
    if std::env::var("OTEL_SERVICE_NAME").is_err() {
        resource = resource.with_service_name(SERVICE);
    }
    let provider = SdkTracerProvider::builder()
        .with_batch_exporter(exporter)
        .with_resource(resource.build())
        .build();
    let tracer = provider.tracer("toolgate");
    opentelemetry::global::set_text_map_propagator(TraceContextPropagator::new());
    let layer = tracing_opentelemetry::layer().with_tracer(tracer);
    Ok(Some((layer, Exporting { provider })))
}

/// Makes the trace context in `carrier` (`traceparent`, `tracestate`) the parent of
/// `span`; a carrier without a valid `traceparent` leaves it a root.
pub fn parent(span: &tracing::Span, carrier: &HashMap<String, String>) {
    if !carrier.contains_key("traceparent") {
        return;
    }
    let context = TraceContextPropagator::new().extract(carrier);
    let _ = span.set_parent(context);
}
