//! The body of an OTLP/HTTP trace export (`ExportTraceServiceRequest`, protobuf),
//! written straight from the SDK's span data into one buffer.
//!
//! Why by hand: `opentelemetry-otlp` first turns each span into owned protobuf structs
//! (a `String` per attribute key and value, a `Vec` per id) and then encodes those, and
//! that copy was half of what exporting every trace cost the server: 36,000 of the
//! 71,500 more instructions a catalogue-tool call took with traces on, measured with
//! callgrind (docs/performance.md#traces). Written here, a span costs its bytes. The
//! field numbers are those of `opentelemetry/proto/trace/v1/trace.proto`,
//! `common/v1/common.proto` and `resource/v1/resource.proto`; the tests decode the
//! output with `opentelemetry-proto`'s generated types, and the integration tests with
//! the official Python definitions.

use std::time::{SystemTime, UNIX_EPOCH};

use opentelemetry::trace::{SpanId, SpanKind, Status};
use opentelemetry::{Array, InstrumentationScope, KeyValue, Value};
use opentelemetry_sdk::trace::SpanData;

/// Wire types of protobuf field keys.
const VARINT: u32 = 0;
const FIXED64: u32 = 1;
const BYTES: u32 = 2;
const FIXED32: u32 = 5;

/// Span flags (`SpanFlags`): whether the parent's remoteness is known, and is remote.
const HAS_IS_REMOTE: u32 = 0x100;
const IS_REMOTE: u32 = 0x200;

fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push((value as u8) | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

fn key(out: &mut Vec<u8>, field: u32, wire: u32) {
    varint(out, u64::from(field << 3 | wire));
}

/// A length-delimited field (`string`, `bytes`), left out when empty (proto3's default).
fn bytes(out: &mut Vec<u8>, field: u32, value: &[u8]) {
    if value.is_empty() {
        return;
    }
    key(out, field, BYTES);
    varint(out, value.len() as u64);
    out.extend_from_slice(value);
}

/// `AnyValue.string_value` (field 1), written even when empty: an empty string is still
/// a string value.
fn string_value(out: &mut Vec<u8>, text: &str) {
    key(out, 1, BYTES);
    varint(out, text.len() as u64);
    out.extend_from_slice(text.as_bytes());
}

fn uint(out: &mut Vec<u8>, field: u32, value: u64) {
    if value != 0 {
        key(out, field, VARINT);
        varint(out, value);
    }
}

fn fixed64(out: &mut Vec<u8>, field: u32, value: u64) {
    key(out, field, FIXED64);
    out.extend_from_slice(&value.to_le_bytes());
}

/// A nested message as field `field`, its contents written by `body`: the length is
/// written after them, moving them only when it takes more than one byte.
fn message(out: &mut Vec<u8>, field: u32, body: impl FnOnce(&mut Vec<u8>)) {
    key(out, field, BYTES);
    let at = out.len();
    out.push(0);
    body(out);
    let len = out.len() - at - 1;
    if len < 0x80 {
        out[at] = len as u8;
        return;
    }
    let mut prefix = Vec::with_capacity(10);
    varint(&mut prefix, len as u64);
    out.splice(at..=at, prefix);
}

fn nanos(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH)
        .map_or(0, |d| u64::try_from(d.as_nanos()).unwrap_or(u64::MAX))
}

/// An `AnyValue`'s contents.
fn any_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::String(s) => string_value(out, s.as_str()),
        Value::Bool(b) => {
            key(out, 2, VARINT);
            varint(out, u64::from(*b));
        }
        Value::I64(i) => {
            key(out, 3, VARINT);
            varint(out, *i as u64);
        }
        Value::F64(f) => fixed64(out, 4, f.to_bits()),
        Value::Array(array) => message(out, 5, |out| array_value(out, array)),
        other => string_value(out, &other.as_str()),
    }
}

/// An `ArrayValue`'s contents: each element an `AnyValue` (field 1).
fn array_value(out: &mut Vec<u8>, array: &Array) {
    match array {
        Array::Bool(v) => v
            .iter()
            .for_each(|b| message(out, 1, |o| any_value(o, &Value::Bool(*b)))),
        Array::I64(v) => v
            .iter()
            .for_each(|i| message(out, 1, |o| any_value(o, &Value::I64(*i)))),
        Array::F64(v) => v
            .iter()
            .for_each(|f| message(out, 1, |o| any_value(o, &Value::F64(*f)))),
        Array::String(v) => v.iter().for_each(|s| message(out, 1, |o| string_value(o, s.as_str()))),
        other => {
            let text = other.to_string();
            message(out, 1, |o| string_value(o, &text));
        }
    }
}

/// Repeated `KeyValue`s as field `field`.
fn attributes<'a>(out: &mut Vec<u8>, field: u32, pairs: impl IntoIterator<Item = (&'a str, &'a Value)>) {
    for (k, v) in pairs {
        message(out, field, |out| {
            bytes(out, 1, k.as_bytes());
            message(out, 2, |out| any_value(out, v));
        });
    }
}

fn key_values(out: &mut Vec<u8>, field: u32, pairs: &[KeyValue]) {
    attributes(out, field, pairs.iter().map(|kv| (kv.key.as_str(), &kv.value)));
}

fn flags(base: u8, remote: bool) -> u32 {
    u32::from(base) | HAS_IS_REMOTE | if remote { IS_REMOTE } else { 0 }
}

/// A `Span`'s contents.
fn span(out: &mut Vec<u8>, span: &SpanData) {
    let context = &span.span_context;
    bytes(out, 1, &context.trace_id().to_bytes());
    bytes(out, 2, &context.span_id().to_bytes());
    let state = context.trace_state().header();
    bytes(out, 3, state.as_bytes());
    if span.parent_span_id != SpanId::INVALID {
        bytes(out, 4, &span.parent_span_id.to_bytes());
    }
    bytes(out, 5, span.name.as_bytes());
    // SpanKind: 1 internal, 2 server, 3 client, 4 producer, 5 consumer.
    let kind = match span.span_kind {
        SpanKind::Internal => 1,
        SpanKind::Server => 2,
        SpanKind::Client => 3,
        SpanKind::Producer => 4,
        SpanKind::Consumer => 5,
    };
    uint(out, 6, kind);
    fixed64(out, 7, nanos(span.start_time));
    fixed64(out, 8, nanos(span.end_time));
    key_values(out, 9, &span.attributes);
    uint(out, 10, u64::from(span.dropped_attributes_count));
    for event in &span.events.events {
        message(out, 11, |out| {
            fixed64(out, 1, nanos(event.timestamp));
            bytes(out, 2, event.name.as_bytes());
            key_values(out, 3, &event.attributes);
            uint(out, 4, u64::from(event.dropped_attributes_count));
        });
    }
    uint(out, 12, u64::from(span.events.dropped_count));
    for link in &span.links.links {
        message(out, 13, |out| {
            let linked = &link.span_context;
            bytes(out, 1, &linked.trace_id().to_bytes());
            bytes(out, 2, &linked.span_id().to_bytes());
            bytes(out, 3, linked.trace_state().header().as_bytes());
            key_values(out, 4, &link.attributes);
            uint(out, 5, u64::from(link.dropped_attributes_count));
            key(out, 6, FIXED32);
            out.extend_from_slice(&flags(linked.trace_flags().to_u8(), linked.is_remote()).to_le_bytes());
        });
    }
    uint(out, 14, u64::from(span.links.dropped_count));
    // Status: message (2), code (3: 0 unset, 1 ok, 2 error).
    message(out, 15, |out| match &span.status {
        Status::Error { description } => {
            bytes(out, 2, description.as_bytes());
            uint(out, 3, 2);
        }
        Status::Ok => uint(out, 3, 1),
        Status::Unset => {}
    });
    key(out, 16, FIXED32);
    out.extend_from_slice(&flags(context.trace_flags().to_u8(), span.parent_span_is_remote).to_le_bytes());
}

/// An `InstrumentationScope`'s contents.
fn scope(out: &mut Vec<u8>, scope: &InstrumentationScope) {
    bytes(out, 1, scope.name().as_bytes());
    bytes(out, 2, scope.version().unwrap_or_default().as_bytes());
    attributes(out, 3, scope.attributes().map(|kv| (kv.key.as_str(), &kv.value)));
}

/// The process's resource, written once per exporter: its `Resource` message's contents
/// and its schema URL.
#[derive(Debug, Clone, Default)]
pub(super) struct Encoded {
    resource: Vec<u8>,
    schema_url: String,
}

impl Encoded {
    /// `resource` as OTLP writes it.
    pub(super) fn new(resource: &opentelemetry_sdk::Resource) -> Encoded {
        let mut bytes = Vec::new();
        attributes(&mut bytes, 1, resource.iter().map(|(k, v)| (k.as_str(), v)));
        Encoded {
            resource: bytes,
            schema_url: resource.schema_url().unwrap_or_default().to_owned(),
        }
    }
}

/// The `ExportTraceServiceRequest` for `spans`, from `resource`: one `ResourceSpans`,
/// one `ScopeSpans` per instrumentation scope, in the order they first appear.
pub(super) fn request(spans: &[SpanData], resource: &Encoded) -> Vec<u8> {
    let mut out = Vec::with_capacity(256 + spans.len() * 320);
    message(&mut out, 1, |out| {
        message(out, 1, |out| out.extend_from_slice(&resource.resource));
        let mut done = vec![false; spans.len()];
        for first in 0..spans.len() {
            if done[first] {
                continue;
            }
            let wanted = &spans[first].instrumentation_scope;
            message(out, 2, |out| {
                message(out, 1, |out| scope(out, wanted));
                for (at, s) in spans.iter().enumerate().skip(first) {
                    if !done[at] && &s.instrumentation_scope == wanted {
                        done[at] = true;
                        message(out, 2, |out| span(out, s));
                    }
                }
                bytes(out, 3, wanted.schema_url().unwrap_or_default().as_bytes());
            });
        }
        bytes(out, 3, resource.schema_url.as_bytes());
    });
    out
}

#[cfg(test)]
#[path = "proto_tests.rs"]
mod tests;
