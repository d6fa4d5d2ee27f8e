//! The bounded export queue, with its drops counted. The SDK's batch processor holds at
//! most `OTEL_BSP_MAX_QUEUE_SIZE` spans and drops the rest without telling how many
//! (its count is private); in front of it [`Bounded`] keeps its own count of the spans
//! handed over and not yet taken by the exporter ([`Counted`] gives them back as each
//! batch leaves). A span past the bound is dropped here, counted in
//! `toolgate_trace_spans_dropped_total`, and the first drop is logged, so the batch
//! processor itself never fills. A receiver that is down or slow therefore costs the
//! gateway a bounded queue and counted drops, never a waiting call.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::Duration;

use opentelemetry::Context;
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::error::OTelSdkResult;
use opentelemetry_sdk::trace::{Span, SpanData, SpanExporter, SpanProcessor};

/// Spans handed to the batch processor and not yet taken by its exporter.
#[derive(Debug, Default)]
pub(super) struct Held {
    count: AtomicUsize,
    dropped: AtomicUsize,
    warned: AtomicBool,
}

/// The exporter, giving back each batch's spans to the count as it takes them.
#[derive(Debug)]
pub(super) struct Counted<E> {
    pub(super) inner: E,
    pub(super) held: Arc<Held>,
}

impl<E: SpanExporter> SpanExporter for Counted<E> {
    fn export(&self, batch: Vec<SpanData>) -> impl std::future::Future<Output = OTelSdkResult> + Send {
        self.held.count.fetch_sub(batch.len(), Ordering::Relaxed);
        self.inner.export(batch)
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        self.inner.shutdown_with_timeout(timeout)
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}

/// The batch processor `inner`, handed at most `bound` spans at once.
#[derive(Debug)]
pub(super) struct Bounded<P> {
    pub(super) inner: P,
    pub(super) held: Arc<Held>,
    pub(super) bound: usize,
}

impl<P: SpanProcessor> SpanProcessor for Bounded<P> {
    fn on_start(&self, span: &mut Span, cx: &Context) {
        self.inner.on_start(span, cx);
    }

    fn on_end(&self, span: SpanData) {
        if self.held.count.fetch_add(1, Ordering::Relaxed) >= self.bound {
            self.held.count.fetch_sub(1, Ordering::Relaxed);
            self.held.dropped.fetch_add(1, Ordering::Relaxed);
            crate::metrics::get().trace_span_dropped();
            if !self.held.warned.swap(true, Ordering::Relaxed) {
                tracing::warn!(
                    "traces: {} spans wait for the collector (OTEL_BSP_MAX_QUEUE_SIZE); further spans are dropped until it takes them, counted in toolgate_trace_spans_dropped_total",
                    self.bound
                );
            }
            return;
        }
        self.inner.on_end(span);
    }

    fn force_flush(&self) -> OTelSdkResult {
        self.inner.force_flush()
    }

    fn shutdown_with_timeout(&self, timeout: Duration) -> OTelSdkResult {
        let dropped = self.held.dropped.load(Ordering::Relaxed);
        if dropped > 0 {
            tracing::warn!("traces: {dropped} spans were dropped, the export queue being full");
        }
        self.inner.shutdown_with_timeout(timeout)
    }

    fn set_resource(&mut self, resource: &Resource) {
        self.inner.set_resource(resource);
    }
}
