//! The OTLP/protobuf body of a span export (`ExportTraceServiceRequest`), written straight from
//! the SDK's `SpanData` into one buffer. The OTLP crate's way (converting each span into the
//! generated message types, then `prost` encoding them) allocates a vector per id, a string per
//! name and attribute key and value, and costs several times more per span; this writer
//! allocates nothing per span. A nested message is written in place and its length inserted in
//! front of it afterwards, so no size pass is needed.
//!
//! The property test below decodes generated batches with the official message types and
//! compares them with the OTLP crate's own conversion of the same spans.

use std::time::{SystemTime, UNIX_EPOCH};

use opentelemetry::trace::{SpanKind, Status};
use opentelemetry::{Array, InstrumentationScope, KeyValue, Value};
use opentelemetry_sdk::trace::SpanData;
use opentelemetry_sdk::Resource;

const VARINT: u32 = 0;
pub(super) const FIXED64: u32 = 1;
pub(super) const LEN: u32 = 2;
const FIXED32: u32 = 5;

/// Span flags: the parent's remoteness is known (`SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK`).
const HAS_IS_REMOTE: u32 = 0x100;
/// Span flags: the parent is remote (`SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK`).
const IS_REMOTE: u32 = 0x200;

/// Writes export bodies for one resource.
#[derive(Debug)]
pub(crate) struct SpanEncoder {
    /// The `Resource` message, its key and length included, written once.
    resource: Vec<u8>,
    schema_url: String,
}

impl SpanEncoder {
    pub(crate) fn new(resource: &Resource) -> SpanEncoder {
        SpanEncoder {
            resource: resource_message(resource),
            schema_url: resource.schema_url().unwrap_or_default().to_owned(),
        }
    }

    /// Appends the `ExportTraceServiceRequest` for `spans` to `out`: one `ResourceSpans`, one
    /// `ScopeSpans` per instrumentation scope in the order scopes first appear.
    pub(crate) fn encode(&self, spans: &[SpanData], out: &mut Vec<u8>) {
        nested(out, 1, |out| {
            out.extend_from_slice(&self.resource);
            let mut seen: Vec<&InstrumentationScope> = Vec::new();
            for span in spans {
                let scope = &span.instrumentation_scope;
                if seen.contains(&scope) {
                    continue;
                }
                seen.push(scope);
                nested(out, 2, |out| {
                    nested(out, 1, |out| {
                        string(out, 1, scope.name());
                        string(out, 2, scope.version().unwrap_or_default());
                        attributes(out, 3, scope.attributes());
                    });
                    for span in spans.iter().filter(|s| s.instrumentation_scope == *scope) {
                        nested(out, 2, |out| write_span(out, span));
                    }
                    string(out, 3, scope.schema_url().unwrap_or_default());
                });
            }
            string(out, 3, &self.schema_url);
        });
    }
}

/// The `Resource` message as field 1 (of `ResourceSpans` and `ResourceMetrics` alike), its key
/// and length included.
pub(super) fn resource_message(resource: &Resource) -> Vec<u8> {
    let mut bytes = Vec::new();
    nested(&mut bytes, 1, |out| {
        for (key, value) in resource.iter() {
            nested(out, 1, |out| {
                string(out, 1, key.as_str());
                nested(out, 2, |out| any_value(out, value));
            });
        }
    });
    bytes
}

fn write_span(out: &mut Vec<u8>, span: &SpanData) {
    let context = &span.span_context;
    bytes(out, 1, &context.trace_id().to_bytes());
    bytes(out, 2, &context.span_id().to_bytes());
    let state = context.trace_state().header();
    string(out, 3, &state);
    if span.parent_span_id != opentelemetry::trace::SpanId::INVALID {
        bytes(out, 4, &span.parent_span_id.to_bytes());
    }
    string(out, 5, &span.name);
    uint(out, 6, kind(&span.span_kind));
    fixed64(out, 7, nanos(span.start_time));
    fixed64(out, 8, nanos(span.end_time));
    attributes(out, 9, span.attributes.iter());
    uint(out, 10, u64::from(span.dropped_attributes_count));
    for event in span.events.iter() {
        nested(out, 11, |out| {
            fixed64(out, 1, nanos(event.timestamp));
            string(out, 2, &event.name);
            attributes(out, 3, event.attributes.iter());
            uint(out, 4, u64::from(event.dropped_attributes_count));
        });
    }
    uint(out, 12, u64::from(span.events.dropped_count));
    for link in span.links.iter() {
        let linked = &link.span_context;
        nested(out, 13, |out| {
            bytes(out, 1, &linked.trace_id().to_bytes());
            bytes(out, 2, &linked.span_id().to_bytes());
            string(out, 3, &linked.trace_state().header());
            attributes(out, 4, link.attributes.iter());
            uint(out, 5, u64::from(link.dropped_attributes_count));
            fixed32(out, 6, flags(linked.is_remote(), linked.trace_flags().to_u8()));
        });
    }
    uint(out, 14, u64::from(span.links.dropped_count));
    nested(out, 15, |out| match &span.status {
        Status::Unset => {}
        Status::Ok => uint(out, 3, 1),
        Status::Error { description } => {
            string(out, 2, description);
            uint(out, 3, 2);
        }
    });
    fixed32(out, 16, flags(span.parent_span_is_remote, span.span_context.trace_flags().to_u8()));
}

fn flags(remote: bool, trace_flags: u8) -> u32 {
    u32::from(trace_flags) | HAS_IS_REMOTE | if remote { IS_REMOTE } else { 0 }
}

fn kind(kind: &SpanKind) -> u64 {
    match kind {
        SpanKind::Internal => 1,
        SpanKind::Server => 2,
        SpanKind::Client => 3,
        SpanKind::Producer => 4,
        SpanKind::Consumer => 5,
    }
}

pub(super) fn nanos(time: SystemTime) -> u64 {
    time.duration_since(UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64)
}

pub(super) fn attributes<'a>(out: &mut Vec<u8>, field: u32, list: impl Iterator<Item = &'a KeyValue>) {
    for kv in list {
        nested(out, field, |out| {
            string(out, 1, kv.key.as_str());
            nested(out, 2, |out| any_value(out, &kv.value));
        });
    }
}

/// The members of an `AnyValue` (its one-of is written even when it holds a default).
pub(super) fn any_value(out: &mut Vec<u8>, value: &Value) {
    match value {
        Value::Bool(b) => any_bool(out, *b),
        Value::I64(i) => any_i64(out, *i),
        Value::F64(f) => any_f64(out, *f),
        Value::String(s) => any_str(out, s.as_str()),
        Value::Array(array) => nested(out, 5, |out| match array {
            Array::Bool(values) => values.iter().for_each(|v| nested(out, 1, |o| any_bool(o, *v))),
            Array::I64(values) => values.iter().for_each(|v| nested(out, 1, |o| any_i64(o, *v))),
            Array::F64(values) => values.iter().for_each(|v| nested(out, 1, |o| any_f64(o, *v))),
            Array::String(values) => values.iter().for_each(|v| nested(out, 1, |o| any_str(o, v.as_str()))),
            _ => {}
        }),
        _ => {}
    }
}

/// A `KeyValue` whose value is a string, as field `field`.
pub(super) fn string_attribute(out: &mut Vec<u8>, field: u32, name: &str, value: &str) {
    nested(out, field, |out| {
        string(out, 1, name);
        nested(out, 2, |out| any_str(out, value));
    });
}

fn any_str(out: &mut Vec<u8>, value: &str) {
    key(out, 1, LEN);
    varint(out, value.len() as u64);
    out.extend_from_slice(value.as_bytes());
}

fn any_bool(out: &mut Vec<u8>, value: bool) {
    key(out, 2, VARINT);
    out.push(u8::from(value));
}

fn any_i64(out: &mut Vec<u8>, value: i64) {
    key(out, 3, VARINT);
    varint(out, value as u64);
}

fn any_f64(out: &mut Vec<u8>, value: f64) {
    key(out, 4, FIXED64);
    out.extend_from_slice(&value.to_bits().to_le_bytes());
}

pub(super) fn key(out: &mut Vec<u8>, field: u32, wire: u32) {
    varint(out, u64::from(field << 3 | wire));
}

pub(super) fn varint(out: &mut Vec<u8>, mut value: u64) {
    while value >= 0x80 {
        out.push(value as u8 | 0x80);
        value >>= 7;
    }
    out.push(value as u8);
}

/// A length-delimited field whose content `write` appends; its length is inserted in front
/// of the content once known.
pub(super) fn nested(out: &mut Vec<u8>, field: u32, write: impl FnOnce(&mut Vec<u8>)) {
    key(out, field, LEN);
    let start = out.len();
    write(out);
    let len = out.len() - start;
    if len < 0x80 {
        out.insert(start, len as u8);
        return;
    }
    let before = out.len();
    varint(out, len as u64);
    let prefix = out.len() - before;
    out[start..].rotate_right(prefix);
}

pub(super) fn bytes(out: &mut Vec<u8>, field: u32, value: &[u8]) {
    if value.is_empty() {
        return;
    }
    key(out, field, LEN);
    varint(out, value.len() as u64);
    out.extend_from_slice(value);
}

pub(super) fn string(out: &mut Vec<u8>, field: u32, value: &str) {
    bytes(out, field, value.as_bytes());
}

pub(super) fn uint(out: &mut Vec<u8>, field: u32, value: u64) {
    if value != 0 {
        key(out, field, VARINT);
        varint(out, value);
    }
}

pub(super) fn fixed64(out: &mut Vec<u8>, field: u32, value: u64) {
    if value != 0 {
        key(out, field, FIXED64);
        out.extend_from_slice(&value.to_le_bytes());
    }
}

pub(super) fn fixed32(out: &mut Vec<u8>, field: u32, value: u32) {
    if value != 0 {
        key(out, field, FIXED32);
        out.extend_from_slice(&value.to_le_bytes());
    }
}

#[cfg(test)]
mod tests {
    use std::borrow::Cow;
    use std::time::Duration;

    use opentelemetry::trace::{Event, Link, SpanContext, SpanId, TraceFlags, TraceId, TraceState};
    use opentelemetry::StringValue;
    use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
    use opentelemetry_proto::transform::common::tonic::ResourceAttributesWithSchema;
    use opentelemetry_proto::transform::trace::tonic::group_spans_by_resource_and_scope;
    use opentelemetry_sdk::trace::{SpanEvents, SpanLinks};
    use proptest::prelude::*;
    use prost::Message;

    use super::*;

    fn text() -> impl Strategy<Value = String> {
        prop_oneof![Just(String::new()), "[a-z/._ -]{1,12}", "\\PC{0,200}"]
    }

    fn value() -> impl Strategy<Value = Value> {
        prop_oneof![
            any::<bool>().prop_map(Value::Bool),
            any::<i64>().prop_map(Value::I64),
            (-1e300f64..1e300).prop_map(Value::F64),
            text().prop_map(|s| Value::String(s.into())),
            proptest::collection::vec(any::<bool>(), 0..3).prop_map(|v| Value::Array(Array::Bool(v))),
            proptest::collection::vec(any::<i64>(), 0..3).prop_map(|v| Value::Array(Array::I64(v))),
            proptest::collection::vec(-1e9f64..1e9, 0..3).prop_map(|v| Value::Array(Array::F64(v))),
            proptest::collection::vec(text(), 0..3)
                .prop_map(|v| Value::Array(Array::String(v.into_iter().map(StringValue::from).collect()))),
        ]
    }

    fn attrs(max: usize) -> impl Strategy<Value = Vec<KeyValue>> {
        proptest::collection::vec((text(), value()).prop_map(|(k, v)| KeyValue::new(k, v)), 0..max)
    }

    fn context() -> impl Strategy<Value = SpanContext> {
        (any::<u128>(), any::<u64>(), any::<u8>(), any::<bool>(), any::<bool>()).prop_map(
            |(trace, span, flags, remote, state)| {
                let state = if state {
                    TraceState::from_key_value([("rojo", "00f067aa0ba902b7"), ("congo", "t61rcWkgMzE")])
                        .unwrap_or_default()
                } else {
                    TraceState::NONE
                };
                SpanContext::new(TraceId::from(trace), SpanId::from(span), TraceFlags::new(flags), remote, state)
            },
        )
    }

    fn time() -> impl Strategy<Value = SystemTime> {
        prop_oneof![
            Just(UNIX_EPOCH),
            (0u64..4_000_000_000_000_000_000).prop_map(|n| UNIX_EPOCH + Duration::from_nanos(n))
        ]
    }

    fn scope() -> impl Strategy<Value = InstrumentationScope> {
        prop_oneof![
            Just(InstrumentationScope::builder("mcpd").build()),
            Just(InstrumentationScope::builder("other").with_version("1.2").with_schema_url("https://s").build()),
            attrs(3).prop_map(|a| InstrumentationScope::builder("attrs").with_attributes(a).build()),
        ]
    }

    prop_compose! {
        fn span()(
            span_context in context(),
            parent in prop_oneof![Just(0u64), any::<u64>()],
            parent_span_is_remote in any::<bool>(),
            kind in 0..5u8,
            name in text(),
            start_time in time(),
            end_time in time(),
            attributes in attrs(12),
            dropped_attributes_count in prop_oneof![Just(0u32), any::<u32>()],
            events in proptest::collection::vec((text(), time(), attrs(3), any::<u32>()), 0..3),
            dropped_events in any::<u32>(),
            links in proptest::collection::vec((context(), attrs(3), any::<u32>()), 0..3),
            dropped_links in any::<u32>(),
            status in prop_oneof![Just(Status::Unset), Just(Status::Ok), text().prop_map(Status::error)],
            instrumentation_scope in scope(),
        ) -> SpanData {
            SpanData {
                span_context,
                parent_span_id: SpanId::from(parent),
                parent_span_is_remote,
                span_kind: [SpanKind::Internal, SpanKind::Server, SpanKind::Client, SpanKind::Producer, SpanKind::Consumer][usize::from(kind)].clone(),
                name: Cow::Owned(name),
                start_time,
                end_time,
                attributes,
                dropped_attributes_count,
                events: {
                    let mut list = SpanEvents::default();
                    list.events = events
                        .into_iter()
                        .map(|(name, timestamp, attributes, dropped)| Event::new(name, timestamp, attributes, dropped))
                        .collect();
                    list.dropped_count = dropped_events;
                    list
                },
                links: {
                    let mut list = SpanLinks::default();
                    list.links = links
                        .into_iter()
                        .map(|(span_context, attributes, dropped)| {
                            let mut link = Link::with_context(span_context);
                            link.attributes = attributes;
                            link.dropped_attributes_count = dropped;
                            link
                        })
                        .collect();
                    list.dropped_count = dropped_links;
                    list
                },
                status,
                instrumentation_scope,
            }
        }
    }

    fn resource() -> impl Strategy<Value = Resource> {
        (attrs(5), proptest::option::of("https://[a-z]{1,8}")).prop_map(|(attributes, schema)| {
            let builder = match schema {
                Some(url) => Resource::builder_empty().with_schema_url(attributes, url),
                None => Resource::builder_empty().with_attributes(attributes),
            };
            builder.with_service_name("mcpd").build()
        })
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        #[test]
        fn batches_decode_to_what_the_otlp_crate_converts(
            spans in proptest::collection::vec(span(), 0..6),
            resource in resource(),
        ) {
            let mut body = Vec::new();
            SpanEncoder::new(&resource).encode(&spans, &mut body);
            let decoded = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
            let expected = ExportTraceServiceRequest {
                resource_spans: group_spans_by_resource_and_scope(
                    spans,
                    &ResourceAttributesWithSchema::from(&resource),
                ),
            };
            prop_assert_eq!(decoded, expected);
        }
    }

    #[test]
    fn a_long_span_gets_a_multi_byte_length() {
        let resource = Resource::builder_empty().with_service_name("mcpd").build();
        let span = SpanData {
            span_context: SpanContext::new(
                TraceId::from(1),
                SpanId::from(2),
                TraceFlags::SAMPLED,
                false,
                TraceState::NONE,
            ),
            parent_span_id: SpanId::INVALID,
            parent_span_is_remote: false,
            span_kind: SpanKind::Server,
            name: Cow::Owned("x".repeat(70_000)),
            start_time: UNIX_EPOCH,
            end_time: UNIX_EPOCH,
            attributes: vec![],
            dropped_attributes_count: 0,
            events: SpanEvents::default(),
            links: SpanLinks::default(),
            status: Status::Unset,
            instrumentation_scope: InstrumentationScope::builder("mcpd").build(),
        };
        let mut body = Vec::new();
        SpanEncoder::new(&resource).encode(std::slice::from_ref(&span), &mut body);
        let decoded = ExportTraceServiceRequest::decode(body.as_slice()).unwrap();
        assert_eq!(decoded.resource_spans[0].scope_spans[0].spans[0].name.len(), 70_000);
    }
}
