//! Which spans become OpenTelemetry spans, decided before any OpenTelemetry data is built
//! for them: the [`Exported`] filter of the OpenTelemetry layer.
//!
//! - toolgate's own spans at info level (`toolgate…` targets); never the spans that only
//!   give log lines their context (target [`LOG_ONLY`]);
//! - the steps of a call (target [`STEP`]: admission, the run's log span, the wait for a
//!   place, validation, the family's execution) only when the operator asks
//!   (`TOOLGATE_TRACE_STEPS`), since each costs a span per call;
//! - nothing under a root the sampler dropped: a root span ([`ROOTS`], the HTTP request
//!   and the MCP request) is decided when it opens ([`super::root`] marks it [`Root`]),
//!   and a span whose nearest exported parent is an unsampled root is not built at all —
//!   at 10 % sampling, nine calls in ten cost their root spans only.

use opentelemetry::trace::SpanContext;
use tracing::level_filters::LevelFilter;
use tracing::subscriber::Interest;
use tracing::{Level, Metadata, Subscriber};
use tracing_subscriber::layer::{Context, Filter};
use tracing_subscriber::registry::LookupSpan;

/// The target of the spans of a call's steps (`admit`, `run`, `queue`, `validate`,
/// `execute …`): exported only with `TOOLGATE_TRACE_STEPS`.
pub const STEP: &str = "toolgate::step";

/// The target of spans kept only as context for log lines (the access layer's
/// `request`): never exported.
pub const LOG_ONLY: &str = "toolgate::log";

/// The targets of root spans, which the sampler decides when they open: an HTTP
/// request's server span and an MCP request's.
pub const ROOTS: [&str; 2] = ["toolgate::http", "toolgate::mcp"];

/// What a root span's sampler decided, kept in the span's registry data: the span's
/// context (its trace id, and the parent that non-exported hops under it pass on).
#[derive(Debug, Clone)]
pub(super) struct Root {
    pub(super) context: SpanContext,
}

/// The OpenTelemetry layer's filter (see the module's documentation).
#[derive(Debug, Clone, Copy)]
pub struct Exported {
    /// Whether the steps of a call are exported too (`TOOLGATE_TRACE_STEPS`).
    pub steps: bool,
}

impl Exported {
    /// Whether spans of this callsite are exported when their trace is sampled.
    fn kept(&self, meta: &Metadata<'_>) -> bool {
        let target = meta.target();
        meta.is_span()
            && *meta.level() <= Level::INFO
            && target.starts_with("toolgate")
            && target != LOG_ONLY
            && (self.steps || target != STEP)
    }
}

impl<S> Filter<S> for Exported
where
    S: Subscriber + for<'span> LookupSpan<'span>,
{
    fn enabled(&self, meta: &Metadata<'_>, cx: &Context<'_, S>) -> bool {
        if !self.kept(meta) {
            return false;
        }
        if ROOTS.contains(&meta.target()) {
            return true;
        }
        // The nearest exported span this one would be a child of: under an unsampled
        // root, nothing is built (every exported span under a root is sampled, so only
        // a root can say it was dropped).
        cx.lookup_current().is_none_or(|parent| {
            parent
                .extensions()
                .get::<Root>()
                .is_none_or(|root| root.context.is_sampled())
        })
    }

    fn callsite_enabled(&self, meta: &'static Metadata<'static>) -> Interest {
        // "Sometimes": asked at each span, for the sampling of its trace.
        if self.kept(meta) {
            Interest::sometimes()
        } else {
            Interest::never()
        }
    }

    fn max_level_hint(&self) -> Option<LevelFilter> {
        Some(LevelFilter::INFO)
    }
}
