//! OpenTelemetry export, seen by an independent collector: `otlp_receiver.py` decodes what the
//! runtime's telemetry API exports with the official OTLP protobuf definitions (protobuf and
//! JSON bodies), and the tests check the spans' names, kinds, parent links and attributes and
//! the duration histogram, as the MCP semantic conventions describe them. A collector that
//! answers 500, is slow or is down costs spans that are counted, while spans end at once.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use mcpd::jsonrpc::RequestId;
use mcpd::telemetry::config::{ENDPOINT, METRIC_EXPORT_INTERVAL, PROTOCOL, SCHEDULE_DELAY};
use mcpd::telemetry::semconv::{Failure, DURATION_BUCKETS};
use mcpd::telemetry::TelemetryConfig;
use mcpd_actors::telemetry::{Incoming, Operation, Peer, Side, SpanCounts, Telemetry, TraceHeaders, Transport};
use serde_json::Value;

use crate::support::eventually::eventually_blocking;
use crate::support::otlp::{attributes, Receiver};

const PARENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT_SPAN: &str = "00f067aa0ba902b7";
const HTTP_SPAN: &str = "b7ad6b7169203331";

fn start(endpoint: &str, vars: &[(&str, &str)]) -> Telemetry {
    let mut map: HashMap<String, String> = vars.iter().map(|(k, v)| ((*k).into(), (*v).into())).collect();
    map.insert(ENDPOINT.into(), endpoint.into());
    let config = TelemetryConfig::read(|k| map.get(k).cloned(), None).unwrap().unwrap();
    Telemetry::start(&config).unwrap()
}

fn named<'a>(spans: &'a [Value], name: &str) -> &'a Value {
    spans.iter().find(|s| s["name"] == name).unwrap_or_else(|| panic!("no span {name} in {spans:#?}"))
}

/// A served `tools/call` whose tool calls a remote server (a gateway's call), one failing
/// `prompts/get`, and the operation duration of the served call.
fn exchange(telemetry: &Telemetry, tool: &str) {
    let id = RequestId::Number(7);
    let served = Operation {
        method: "tools/call",
        target: Some(tool),
        target_listed: true,
        request_id: Some(&id),
        protocol_version: Some("2026-07-28"),
        session_id: Some("s-1"),
        transport: Transport::Tcp,
        ..Operation::default()
    };
    let meta_parent = format!("00-{PARENT_TRACE}-{PARENT_SPAN}-01");
    let http_parent = format!("00-{PARENT_TRACE}-{HTTP_SPAN}-01");
    let incoming = Incoming {
        meta: TraceHeaders { traceparent: Some(&meta_parent), tracestate: Some("rojo=1"), baggage: None },
        http: TraceHeaders { traceparent: Some(&http_parent), ..TraceHeaders::default() },
    };
    let server = telemetry.server_span(&served, &incoming);
    let remote_id = RequestId::String("r-1".into());
    let forwarded = Operation {
        method: "tools/call",
        target: Some("forecast"),
        target_listed: true,
        request_id: Some(&remote_id),
        protocol_version: Some("2025-11-25"),
        ..Operation::default()
    };
    let client = {
        let _current = server.enter();
        telemetry.client_span(&forwarded, Some(&Peer { address: "remote.example", port: 8443 }))
    };
    client.fail(Failure::Code(-32602), "Invalid params");
    client.end();
    server.fail(Failure::ToolError, "the tool failed");
    server.end();
    let prompt = Operation {
        method: "prompts/get",
        target: Some("review"),
        target_listed: true,
        transport: Transport::Pipe,
        ..Operation::default()
    };
    telemetry.server_span(&prompt, &Incoming::default()).end();
    mcpd_actors::telemetry::record_operation_duration(Side::Server, &served, Some(Failure::ToolError), 0.042);
}

fn exports_by_the_conventions(protocol: &str) {
    let Some(receiver) = Receiver::start(&[]) else { return };
    let telemetry = start(
        &receiver.endpoint(),
        &[
            (PROTOCOL, protocol),
            (SCHEDULE_DELAY, "50"),
            (METRIC_EXPORT_INTERVAL, "100"),
            ("OTEL_SERVICE_NAME", "gateway-eu"),
            ("OTEL_RESOURCE_ATTRIBUTES", "deployment.environment=test"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20t"),
        ],
    );
    // The histograms are the process's: each test records under a tool name of its own.
    let tool = format!("weather-{}", protocol.replace('/', "-"));
    exchange(&telemetry, &tool);
    assert!(telemetry.shutdown(Duration::from_secs(3)), "everything exported within the limit");
    assert_eq!(telemetry.span_counts(), SpanCounts { exported: 3, queue_full: 0, export_failed: 0 });

    let received = receiver.received();
    let format = if protocol == "http/json" { "json" } else { "protobuf" };
    assert!(received.iter().all(|r| r["format"] == format && r["status"] == 200), "{received:#?}");
    assert!(received.iter().all(|r| r["headers"]["authorization"] == "Bearer t"));
    let traces = received.iter().find(|r| r["path"] == "/v1/traces").unwrap();
    let resource = attributes(&traces["request"]["resource_spans"][0]["resource"]);
    assert_eq!(resource["service.name"], "gateway-eu");
    assert_eq!(resource["deployment.environment"], "test");
    assert_eq!(traces["request"]["resource_spans"][0]["scope_spans"][0]["scope"]["name"], "mcpd");

    let spans = receiver.spans();
    assert_eq!(spans.len(), 3, "{spans:#?}");
    let server = named(&spans, &format!("tools/call {tool}"));
    assert_eq!(server["kind"], "SPAN_KIND_SERVER");
    assert_eq!(server["trace_id"], PARENT_TRACE);
    assert_eq!(server["parent_span_id"], PARENT_SPAN, "the _meta context is the parent");
    assert_eq!(server["trace_state"], "rojo=1");
    assert_eq!(server["links"][0]["span_id"], HTTP_SPAN, "the HTTP context is linked");
    assert_eq!(server["status"]["code"], "STATUS_CODE_ERROR");
    assert_eq!(server["status"]["message"], "the tool failed");
    let a = attributes(server);
    assert_eq!(a["mcp.method.name"], "tools/call");
    assert_eq!(a["gen_ai.tool.name"], tool);
    assert_eq!(a["gen_ai.operation.name"], "execute_tool");
    assert_eq!(a["jsonrpc.request.id"], "7");
    assert_eq!(a["mcp.protocol.version"], "2026-07-28");
    assert_eq!(a["mcp.session.id"], "s-1");
    assert_eq!(a["network.transport"], "tcp");
    assert_eq!(a["error.type"], "tool_error");

    let client = named(&spans, "tools/call forecast");
    assert_eq!(client["kind"], "SPAN_KIND_CLIENT");
    assert_eq!(client["trace_id"], PARENT_TRACE);
    assert_eq!(client["parent_span_id"], server["span_id"], "the served call is the parent");
    assert_eq!(client["status"]["code"], "STATUS_CODE_ERROR");
    assert_eq!(client["status"]["message"], "Invalid params");
    let a = attributes(client);
    assert_eq!(a["error.type"], "-32602");
    assert_eq!(a["rpc.response.status_code"], "-32602");
    assert_eq!(a["jsonrpc.request.id"], "r-1");
    assert_eq!(a["server.address"], "remote.example");
    assert_eq!(a["server.port"], "8443");

    let prompt = named(&spans, "prompts/get review");
    assert_eq!(prompt["kind"], "SPAN_KIND_SERVER");
    assert_eq!(prompt.get("parent_span_id"), None, "a request without context starts a trace");
    assert_eq!(attributes(prompt)["gen_ai.prompt.name"], "review");
    assert_eq!(attributes(prompt)["network.transport"], "pipe");
    assert_eq!(attributes(prompt).get("gen_ai.operation.name"), None);

    let histogram = received
        .iter()
        .filter(|r| r["path"] == "/v1/metrics")
        .flat_map(|r| r["request"]["resource_metrics"].as_array().cloned().unwrap_or_default())
        .flat_map(|r| r["scope_metrics"].as_array().cloned().unwrap_or_default())
        .flat_map(|s| s["metrics"].as_array().cloned().unwrap_or_default())
        .find(|m| m["name"] == "mcp.server.operation.duration")
        .expect("the operation histogram");
    assert_eq!(histogram["unit"], "s");
    assert_eq!(histogram["histogram"]["aggregation_temporality"], "AGGREGATION_TEMPORALITY_CUMULATIVE");
    let point = histogram["histogram"]["data_points"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| attributes(p).get("gen_ai.tool.name") == Some(&tool))
        .expect("the call's series");
    assert_eq!(point["count"], "1");
    assert_eq!(point["sum"], 0.042);
    let bounds: Vec<f64> = point["explicit_bounds"].as_array().unwrap().iter().map(|b| b.as_f64().unwrap()).collect();
    assert_eq!(bounds, DURATION_BUCKETS);
    let a = attributes(point);
    assert_eq!(a["mcp.method.name"], "tools/call");
    assert_eq!(a["error.type"], "tool_error");
    assert_eq!(a.get("jsonrpc.request.id"), None, "no per-request series");
}

#[test]
fn telemetry_exports_spans_and_histograms_in_protobuf() {
    exports_by_the_conventions("http/protobuf");
}

#[test]
fn telemetry_exports_spans_and_histograms_in_json() {
    exports_by_the_conventions("http/json");
}

/// Ends `n` spans and says how long that took.
fn end_spans(telemetry: &Telemetry, n: usize) -> Duration {
    let started = Instant::now();
    for _ in 0..n {
        let op = Operation { method: "tools/call", target: Some("echo"), ..Operation::default() };
        telemetry.server_span(&op, &Incoming::default()).end();
    }
    started.elapsed()
}

#[test]
fn telemetry_collector_answering_500_loses_counted_spans() {
    let Some(receiver) = Receiver::start(&["--status", "500"]) else { return };
    let telemetry = start(&receiver.endpoint(), &[(SCHEDULE_DELAY, "20"), ("OTEL_METRICS_EXPORTER", "none")]);
    end_spans(&telemetry, 20);
    eventually_blocking("the refused spans are counted", Duration::from_secs(10), || {
        telemetry.span_counts().export_failed == 20
    });
    assert_eq!(telemetry.span_counts().exported, 0);
    assert!(telemetry.shutdown(Duration::from_secs(3)));
    assert!(receiver.spans().len() == 20, "the receiver saw the spans it refused");
}

#[test]
fn telemetry_slow_collector_costs_dropped_spans_not_time() {
    let Some(receiver) = Receiver::start(&["--delay", "5"]) else { return };
    let telemetry = start(
        &receiver.endpoint(),
        &[
            (SCHEDULE_DELAY, "1"),
            ("OTEL_BSP_MAX_QUEUE_SIZE", "8"),
            ("OTEL_BSP_MAX_EXPORT_BATCH_SIZE", "4"),
            ("OTEL_METRICS_EXPORTER", "none"),
        ],
    );
    end_spans(&telemetry, 4);
    eventually_blocking("the first batch is at the collector", Duration::from_secs(10), || {
        !receiver.received().is_empty()
    });
    // The thread now waits for the collector's answer: 100 spans end while it waits.
    let took = end_spans(&telemetry, 100);
    assert!(took < Duration::from_secs(2), "ending spans waited for the collector: {took:?}");
    let counts = telemetry.span_counts();
    assert!(counts.queue_full >= 92, "{counts:?}");
    let started = Instant::now();
    telemetry.shutdown(Duration::from_secs(3));
    let waited = started.elapsed();
    assert!(waited < Duration::from_millis(4500), "shutdown waited {waited:?}");
}

#[test]
fn telemetry_collector_down_counts_failed_spans() {
    let port = std::net::TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port();
    let telemetry = start(&format!("http://127.0.0.1:{port}"), &[(SCHEDULE_DELAY, "20")]);
    let took = end_spans(&telemetry, 10);
    assert!(took < Duration::from_secs(2), "{took:?}");
    mcpd_actors::telemetry::record_operation_duration(
        Side::Client,
        &Operation { method: "ping", ..Operation::default() },
        None,
        0.5,
    );
    eventually_blocking("the lost spans are counted", Duration::from_secs(10), || {
        telemetry.span_counts().export_failed == 10
    });
    let started = Instant::now();
    telemetry.shutdown(Duration::from_secs(3));
    assert!(started.elapsed() < Duration::from_millis(4500));
}
