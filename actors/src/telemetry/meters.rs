//! The MCP duration histograms (`mcp.{server,client}.{operation,session}.duration`, seconds,
//! the conventions' bucket boundaries) and the attributes each recording carries.

use mcpd::telemetry::semconv::{self, Failure, DURATION_BUCKETS};
use opentelemetry::metrics::{Histogram, Meter};
use opentelemetry::KeyValue;

use super::operation::{Operation, Side, Transport};

/// The four histograms.
#[derive(Debug)]
pub(crate) struct Meters {
    server_operation: Histogram<f64>,
    client_operation: Histogram<f64>,
    server_session: Histogram<f64>,
    client_session: Histogram<f64>,
}

fn histogram(meter: &Meter, name: &'static str, description: &'static str) -> Histogram<f64> {
    meter
        .f64_histogram(name)
        .with_unit("s")
        .with_description(description)
        .with_boundaries(DURATION_BUCKETS.to_vec())
        .build()
}

impl Meters {
    pub(crate) fn new(meter: &Meter) -> Meters {
        Meters {
            server_operation: histogram(
                meter,
                semconv::SERVER_OPERATION_DURATION,
                "MCP request or notification duration as observed on the receiver",
            ),
            client_operation: histogram(
                meter,
                semconv::CLIENT_OPERATION_DURATION,
                "MCP request or notification duration as observed on the sender",
            ),
            server_session: histogram(
                meter,
                semconv::SERVER_SESSION_DURATION,
                "The duration of the MCP session as observed on the MCP server",
            ),
            client_session: histogram(
                meter,
                semconv::CLIENT_SESSION_DURATION,
                "The duration of the MCP session as observed on the MCP client",
            ),
        }
    }

    /// Records one operation: method, target, operation name, version, transport, and the
    /// failure's `error.type` (never ids: they would make a series per request).
    pub(crate) fn operation(&self, side: Side, op: &Operation<'_>, failure: Option<Failure>, seconds: f64) {
        let mut attributes = Vec::with_capacity(7);
        attributes.push(KeyValue::new(semconv::MCP_METHOD_NAME, op.method.to_owned()));
        if let (Some(kind), Some(target)) = (semconv::target_kind(op.method), op.target) {
            attributes.push(KeyValue::new(kind, target.to_owned()));
            if kind == semconv::GEN_AI_TOOL_NAME {
                attributes.push(KeyValue::new(semconv::GEN_AI_OPERATION_NAME, semconv::EXECUTE_TOOL));
            }
        }
        common(&mut attributes, op.protocol_version, op.transport, failure);
        let histogram = match side {
            Side::Server => &self.server_operation,
            Side::Client => &self.client_operation,
        };
        histogram.record(seconds, &attributes);
    }

    /// Records one session's length.
    pub(crate) fn session(
        &self,
        side: Side,
        protocol_version: Option<&str>,
        transport: Transport,
        failure: Option<Failure>,
        seconds: f64,
    ) {
        let mut attributes = Vec::with_capacity(4);
        common(&mut attributes, protocol_version, transport, failure);
        let histogram = match side {
            Side::Server => &self.server_session,
            Side::Client => &self.client_session,
        };
        histogram.record(seconds, &attributes);
    }
}

fn common(attributes: &mut Vec<KeyValue>, version: Option<&str>, transport: Transport, failure: Option<Failure>) {
    if let Some(version) = version {
        attributes.push(KeyValue::new(semconv::MCP_PROTOCOL_VERSION, version.to_owned()));
    }
    attributes.push(KeyValue::new(semconv::NETWORK_TRANSPORT, transport.as_str()));
    if let Some(failure) = failure {
        attributes.push(KeyValue::new(semconv::ERROR_TYPE, failure.error_type()));
        if let Some(code) = failure.code() {
            attributes.push(KeyValue::new(semconv::RPC_RESPONSE_STATUS_CODE, code.to_string()));
        }
    }
}
