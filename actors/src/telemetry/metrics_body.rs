//! The OTLP body of a metrics export (`ExportMetricsServiceRequest`): the duration histograms
//! of [`super::durations`] as cumulative OTLP histograms, one data point per series, in
//! protobuf (written with the span encoder's helpers) or in the OTLP JSON mapping.

use std::time::SystemTime;

use mcpd::telemetry::semconv::{DURATION_BUCKETS, SCOPE_NAME};
use opentelemetry_sdk::Resource;
use serde_json::{json, Map, Value};

use super::durations::{Durations, Histogram, Labels, Reading};
use super::encode::{
    fixed64, key, nanos, nested, resource_message, string, string_attribute, uint, varint, FIXED64, LEN,
};

/// `AggregationTemporality.AGGREGATION_TEMPORALITY_CUMULATIVE`.
const CUMULATIVE: u64 = 2;

/// Writes metrics export bodies for one resource.
#[derive(Debug)]
pub(crate) struct MetricsEncoder {
    /// The `Resource` message as field 1, written once.
    resource: Vec<u8>,
    /// The resource in the JSON mapping.
    resource_json: Value,
}

impl MetricsEncoder {
    pub(crate) fn new(resource: &Resource) -> MetricsEncoder {
        let attributes: Vec<Value> = resource
            .iter()
            .map(|(key, value)| {
                let value = match value {
                    opentelemetry::Value::Bool(b) => json!({"boolValue": b}),
                    opentelemetry::Value::I64(i) => json!({"intValue": i.to_string()}),
                    opentelemetry::Value::F64(f) => json!({"doubleValue": f}),
                    other => json!({"stringValue": other.as_str()}),
                };
                json!({"key": key.as_str(), "value": value})
            })
            .collect();
        MetricsEncoder { resource: resource_message(resource), resource_json: json!({ "attributes": attributes }) }
    }

    /// The protobuf body of every series in `store` at `now`; `None` when there is none.
    pub(crate) fn protobuf(&self, store: &Durations, now: SystemTime) -> Option<Vec<u8>> {
        let (start, now) = (nanos(store.started), nanos(now));
        let mut out = Vec::with_capacity(1024);
        let mut any = false;
        nested(&mut out, 1, |out| {
            out.extend_from_slice(&self.resource);
            nested(out, 2, |out| {
                nested(out, 1, |out| {
                    string(out, 1, SCOPE_NAME);
                    string(out, 2, env!("CARGO_PKG_VERSION"));
                });
                for histogram in Histogram::ALL {
                    let mut points = Vec::new();
                    store.each(histogram, |labels, reading| point(&mut points, labels, reading, start, now));
                    if points.is_empty() {
                        continue;
                    }
                    any = true;
                    nested(out, 2, |out| {
                        string(out, 1, histogram.name());
                        string(out, 2, histogram.description());
                        string(out, 3, "s");
                        nested(out, 9, |out| {
                            out.extend_from_slice(&points);
                            uint(out, 2, CUMULATIVE);
                        });
                    });
                }
            });
        });
        any.then_some(out)
    }

    /// The JSON body of every series in `store` at `now`; `None` when there is none.
    pub(crate) fn json(&self, store: &Durations, now: SystemTime) -> Option<Vec<u8>> {
        let (start, now) = (nanos(store.started).to_string(), nanos(now).to_string());
        let mut metrics = Vec::new();
        for histogram in Histogram::ALL {
            let mut points = Vec::new();
            store.each(histogram, |labels, reading| {
                let mut attributes = Vec::new();
                labels.pairs(|k, v| attributes.push(json!({"key": k, "value": {"stringValue": v}})));
                let mut point = Map::new();
                point.insert("attributes".into(), Value::Array(attributes));
                point.insert("startTimeUnixNano".into(), json!(start));
                point.insert("timeUnixNano".into(), json!(now));
                point.insert("count".into(), json!(reading.count().to_string()));
                point.insert("sum".into(), json!(reading.sum));
                let counts: Vec<String> = reading.buckets.iter().map(u64::to_string).collect();
                point.insert("bucketCounts".into(), json!(counts));
                point.insert("explicitBounds".into(), json!(DURATION_BUCKETS));
                points.push(Value::Object(point));
            });
            if points.is_empty() {
                continue;
            }
            metrics.push(json!({
                "name": histogram.name(),
                "description": histogram.description(),
                "unit": "s",
                "histogram": {"aggregationTemporality": CUMULATIVE, "dataPoints": points},
            }));
        }
        if metrics.is_empty() {
            return None;
        }
        let body = json!({"resourceMetrics": [{
            "resource": self.resource_json,
            "scopeMetrics": [{
                "scope": {"name": SCOPE_NAME, "version": env!("CARGO_PKG_VERSION")},
                "metrics": metrics,
            }],
        }]});
        serde_json::to_vec(&body).ok()
    }
}

/// Appends one `HistogramDataPoint` (field 1 of `Histogram`).
fn point(out: &mut Vec<u8>, labels: &Labels<'_>, reading: &Reading, start: u64, now: u64) {
    nested(out, 1, |out| {
        labels.pairs(|k, v| string_attribute(out, 9, k, v));
        fixed64(out, 2, start);
        fixed64(out, 3, now);
        fixed64(out, 4, reading.count());
        key(out, 5, FIXED64);
        out.extend_from_slice(&reading.sum.to_bits().to_le_bytes());
        key(out, 6, LEN);
        varint(out, 8 * reading.buckets.len() as u64);
        for count in reading.buckets {
            out.extend_from_slice(&count.to_le_bytes());
        }
        key(out, 7, LEN);
        varint(out, 8 * DURATION_BUCKETS.len() as u64);
        for bound in DURATION_BUCKETS {
            out.extend_from_slice(&bound.to_bits().to_le_bytes());
        }
    });
}

#[cfg(test)]
mod tests {
    use mcpd::telemetry::semconv::Failure;
    use opentelemetry::KeyValue;
    use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
    use opentelemetry_proto::tonic::metrics::v1::metric::Data;
    use prost::Message as _;

    use super::*;
    use crate::telemetry::operation::{Side, Transport};

    fn store() -> Durations {
        let store = Durations::new();
        let call = |failure| Labels {
            histogram: Histogram::Operation(Side::Server),
            method: Some("tools/call"),
            target: Some("echo"),
            version: Some("2026-07-28"),
            transport: Transport::Tcp,
            failure,
        };
        store.record(&call(None), 0.015);
        store.record(&call(None), 0.5);
        store.record(&call(Some(Failure::Code(-32602))), 0.001);
        let session = Labels { histogram: Histogram::Session(Side::Client), method: None, target: None, ..call(None) };
        store.record(&session, 42.0);
        store
    }

    #[test]
    fn the_protobuf_body_decodes_with_the_official_definitions() {
        let resource = Resource::builder_empty().with_attributes([KeyValue::new("service.name", "gw")]).build();
        let encoder = MetricsEncoder::new(&resource);
        assert_eq!(encoder.protobuf(&Durations::new(), SystemTime::now()), None, "nothing recorded, nothing sent");
        let body = encoder.protobuf(&store(), SystemTime::now()).unwrap();
        let decoded = ExportMetricsServiceRequest::decode(body.as_slice()).unwrap();
        let resource_metrics = &decoded.resource_metrics[0];
        let service = &resource_metrics.resource.as_ref().unwrap().attributes[0];
        assert_eq!(service.key, "service.name");
        let scope = &resource_metrics.scope_metrics[0];
        assert_eq!(scope.scope.as_ref().unwrap().name, "mcpd");
        let names: Vec<&str> = scope.metrics.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(names, ["mcp.server.operation.duration", "mcp.client.session.duration"]);
        let Some(Data::Histogram(histogram)) = &scope.metrics[0].data else { panic!("a histogram") };
        assert_eq!(histogram.aggregation_temporality, 2, "cumulative");
        assert_eq!(histogram.data_points.len(), 2);
        let ok = histogram.data_points.iter().find(|p| p.attributes.len() == 5).expect("the successful series");
        assert_eq!(ok.count, 2);
        assert_eq!(ok.sum, Some(0.515));
        assert_eq!(ok.explicit_bounds, DURATION_BUCKETS);
        assert_eq!(ok.bucket_counts.len(), DURATION_BUCKETS.len() + 1);
        assert_eq!((ok.bucket_counts[1], ok.bucket_counts[5]), (1, 1));
        assert!(ok.start_time_unix_nano > 0 && ok.time_unix_nano >= ok.start_time_unix_nano);
        let failed = histogram.data_points.iter().find(|p| p.attributes.len() == 7).expect("the failed series");
        let keys: Vec<&str> = failed.attributes.iter().map(|kv| kv.key.as_str()).collect();
        assert!(keys.contains(&"error.type") && keys.contains(&"rpc.response.status_code"), "{keys:?}");
    }

    #[test]
    fn the_json_body_follows_the_otlp_json_mapping() {
        let encoder = MetricsEncoder::new(&Resource::builder_empty().build());
        let body: Value = serde_json::from_slice(&encoder.json(&store(), SystemTime::now()).unwrap()).unwrap();
        let metric = &body["resourceMetrics"][0]["scopeMetrics"][0]["metrics"][1];
        assert_eq!(metric["name"], "mcp.client.session.duration");
        let point = &metric["histogram"]["dataPoints"][0];
        assert_eq!(point["count"], "1", "64-bit integers are strings");
        assert_eq!(point["sum"], 42.0);
        assert_eq!(point["bucketCounts"][11], "1", "42 s is in the bucket up to 60 s");
    }
}
