//! What [`super::request`] writes, decoded with `opentelemetry-proto`'s generated types.

use std::borrow::Cow;
use std::time::{Duration, UNIX_EPOCH};

use opentelemetry::trace::{Event, Link, SpanContext, SpanId, SpanKind, Status, TraceFlags, TraceId, TraceState};
use opentelemetry::{Array, InstrumentationScope, KeyValue, StringValue, Value};
use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as Any;
use opentelemetry_sdk::trace::{SpanData, SpanEvents, SpanLinks};
use prost::Message as _;

fn context(trace: u128, span: u64, remote: bool) -> SpanContext {
    SpanContext::new(
        TraceId::from(trace),
        SpanId::from(span),
        TraceFlags::SAMPLED,
        remote,
        TraceState::from_key_value([("vendor", "v1")]).unwrap(),
    )
}

fn span(name: &'static str, scope: &InstrumentationScope, attributes: Vec<KeyValue>) -> SpanData {
    SpanData {
        span_context: context(0x0102_0304_0506_0708_090a_0b0c_0d0e_0f10, 0x1112_1314_1516_1718, false),
        parent_span_id: SpanId::from(0x2122_2324_2526_2728),
        parent_span_is_remote: true,
        span_kind: SpanKind::Server,
        name: Cow::Borrowed(name),
        start_time: UNIX_EPOCH + Duration::from_nanos(1_700_000_000_123_456_789),
        end_time: UNIX_EPOCH + Duration::from_nanos(1_700_000_000_223_456_789),
        attributes,
        dropped_attributes_count: 2,
        events: SpanEvents::default(),
        links: SpanLinks::default(),
        status: Status::error("it broke"),
        instrumentation_scope: scope.clone(),
    }
}

#[test]
fn a_batch_decodes_as_the_otlp_definitions_have_it() {
    let ours = InstrumentationScope::builder("toolgate").with_version("1.2").build();
    let other = InstrumentationScope::builder("other").build();
    // Long enough that its length takes two varint bytes.
    let long = "é".repeat(100);
    let mut first = span(
        "tools/call echo",
        &ours,
        vec![
            KeyValue::new("mcp.method.name", "tools/call"),
            KeyValue::new("http.response.status_code", 200_i64),
            KeyValue::new("negative", -5_i64),
            KeyValue::new("ok", true),
            KeyValue::new("ratio", 0.25),
            KeyValue::new("empty", ""),
            KeyValue::new("long", long.clone()),
            KeyValue::new(
                "list",
                Value::Array(Array::String(vec![StringValue::from("a"), StringValue::from("b")])),
            ),
            KeyValue::new("numbers", Value::Array(Array::I64(vec![1, 300]))),
        ],
    );
    first.events.events.push(Event::new(
        "note",
        UNIX_EPOCH + Duration::from_nanos(5),
        vec![KeyValue::new("k", "v")],
        1,
    ));
    first
        .links
        .links
        .push(Link::new(context(7, 8, true), vec![KeyValue::new("why", "batch")], 0));
    let mut second = span("javascript", &other, Vec::new());
    second.parent_span_id = SpanId::INVALID;
    second.parent_span_is_remote = false;
    second.span_kind = SpanKind::Internal;
    second.status = Status::Unset;
    let third = span("fetch GET", &ours, Vec::new());

    let resource = opentelemetry_sdk::Resource::builder_empty()
        .with_service_name("toolgate-test")
        .build();
    let body = super::request(&[first, second, third], &super::Encoded::new(&resource));
    let decoded = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();

    assert_eq!(decoded.resource_spans.len(), 1);
    let rs = &decoded.resource_spans[0];
    let service = &rs.resource.as_ref().unwrap().attributes[0];
    assert_eq!(service.key, "service.name");
    assert_eq!(
        service.value.as_ref().unwrap().value,
        Some(Any::StringValue("toolgate-test".into()))
    );
    // Grouped by scope, in the order scopes first appear.
    let names: Vec<(String, Vec<String>)> = rs
        .scope_spans
        .iter()
        .map(|s| {
            let scope = s.scope.as_ref().unwrap();
            (scope.name.clone(), s.spans.iter().map(|sp| sp.name.clone()).collect())
        })
        .collect();
    assert_eq!(
        names,
        vec![
            (
                "toolgate".to_owned(),
                vec!["tools/call echo".to_owned(), "fetch GET".to_owned()]
            ),
            ("other".to_owned(), vec!["javascript".to_owned()]),
        ]
    );
    assert_eq!(rs.scope_spans[0].scope.as_ref().unwrap().version, "1.2");

    let s = &rs.scope_spans[0].spans[0];
    assert_eq!(s.trace_id, (1..=16).collect::<Vec<u8>>());
    assert_eq!(s.span_id, (0x11..=0x18).collect::<Vec<u8>>());
    assert_eq!(s.parent_span_id, (0x21..=0x28).collect::<Vec<u8>>());
    assert_eq!(s.trace_state, "vendor=v1");
    assert_eq!(s.kind, 2);
    assert_eq!(s.start_time_unix_nano, 1_700_000_000_123_456_789);
    assert_eq!(s.end_time_unix_nano, 1_700_000_000_223_456_789);
    assert_eq!(s.dropped_attributes_count, 2);
    assert_eq!(s.flags, 0x301, "sampled, parent known to be remote");
    let status = s.status.as_ref().unwrap();
    assert_eq!((status.code, status.message.as_str()), (2, "it broke"));
    let value = |key: &str| {
        s.attributes
            .iter()
            .find(|kv| kv.key == key)
            .and_then(|kv| kv.value.as_ref())
            .and_then(|v| v.value.clone())
    };
    assert_eq!(value("mcp.method.name"), Some(Any::StringValue("tools/call".into())));
    assert_eq!(value("http.response.status_code"), Some(Any::IntValue(200)));
    assert_eq!(value("negative"), Some(Any::IntValue(-5)));
    assert_eq!(value("ok"), Some(Any::BoolValue(true)));
    assert_eq!(value("ratio"), Some(Any::DoubleValue(0.25)));
    assert_eq!(value("empty"), Some(Any::StringValue(String::new())));
    assert_eq!(value("long"), Some(Any::StringValue(long)));
    let Some(Any::ArrayValue(list)) = value("list") else {
        panic!("list")
    };
    let list: Vec<_> = list.values.into_iter().map(|v| v.value).collect();
    assert_eq!(
        list,
        vec![Some(Any::StringValue("a".into())), Some(Any::StringValue("b".into()))]
    );
    let Some(Any::ArrayValue(numbers)) = value("numbers") else {
        panic!("numbers")
    };
    let numbers: Vec<_> = numbers.values.into_iter().map(|v| v.value).collect();
    assert_eq!(numbers, vec![Some(Any::IntValue(1)), Some(Any::IntValue(300))]);
    assert_eq!(s.events.len(), 1);
    assert_eq!((s.events[0].name.as_str(), s.events[0].time_unix_nano), ("note", 5));
    assert_eq!(s.events[0].dropped_attributes_count, 1);
    assert_eq!(s.links.len(), 1);
    assert_eq!(s.links[0].span_id, 8u64.to_be_bytes().to_vec());
    assert_eq!(s.links[0].flags, 0x301);

    let js = &rs.scope_spans[1].spans[0];
    assert!(js.parent_span_id.is_empty());
    assert_eq!(js.kind, 1);
    assert_eq!(js.flags, 0x101, "sampled, parent known to be local");
    assert_eq!(js.status.as_ref().unwrap().code, 0);
}

#[test]
fn an_empty_batch_is_one_resource_with_no_spans() {
    let body = super::request(&[], &super::Encoded::default());
    let decoded = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
    assert_eq!(decoded.resource_spans.len(), 1);
    assert!(decoded.resource_spans[0].scope_spans.is_empty());
}
