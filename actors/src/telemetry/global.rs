//! The process's telemetry, installed once at start (`init`) and reached by the free functions
//! the transports and the client call. With nothing installed each of them is one atomic load
//! and returns an inert span: no allocation, no clock read.

use std::sync::OnceLock;
use std::time::Duration;

use mcpd::telemetry::semconv::{self, Failure};
use mcpd::telemetry::TelemetryConfig;
use opentelemetry::trace::SpanKind;
use opentelemetry::KeyValue;

use super::counts::SpanCounts;
use super::durations::{durations, version_label, Histogram, Labels};
use super::operation::{Incoming, Operation, Peer, Side, Transport};
use super::pipeline::{Telemetry, TelemetryError};
use super::span::OperationSpan;

static INSTALLED: OnceLock<Telemetry> = OnceLock::new();

/// The longest [`shutdown`] waits for the last export, whatever the collector does.
pub const SHUTDOWN_LIMIT: Duration = Duration::from_secs(3);

/// Starts telemetry from `config` and installs it for the process (once).
pub fn init(config: &TelemetryConfig) -> Result<(), TelemetryError> {
    install(Telemetry::start(config)?)
}

/// Installs a started pipeline for the process; `Err` if one is already installed (the new one
/// is shut down).
pub fn install(telemetry: Telemetry) -> Result<(), TelemetryError> {
    INSTALLED.set(telemetry).map_err(|spare| {
        spare.shutdown(Duration::ZERO);
        TelemetryError::AlreadyStarted
    })
}

/// The installed pipeline.
pub fn installed() -> Option<&'static Telemetry> {
    INSTALLED.get()
}

/// Whether telemetry is on.
pub fn enabled() -> bool {
    INSTALLED.get().is_some()
}

/// The SERVER span of a request mcpd serves (inert when telemetry is off).
pub fn server_span(op: &Operation<'_>, incoming: &Incoming<'_>) -> OperationSpan {
    match INSTALLED.get() {
        Some(telemetry) => telemetry.server_span(op, incoming),
        None => OperationSpan::disabled(),
    }
}

/// As [`server_span`], the operation's attributes read (`describe`) only when the span is
/// recorded: an unsampled request does not pay for them.
pub fn server_span_with<'a>(
    method: &str,
    describe: impl FnOnce() -> Operation<'a>,
    incoming: &Incoming<'_>,
) -> OperationSpan {
    match INSTALLED.get() {
        Some(telemetry) => telemetry.server_span_with(method, describe, incoming),
        None => OperationSpan::disabled(),
    }
}

/// The CLIENT span of a request mcpd sends (inert when telemetry is off); its parent is the
/// current context.
pub fn client_span(op: &Operation<'_>, peer: Option<&Peer<'_>>) -> OperationSpan {
    match INSTALLED.get() {
        Some(telemetry) => telemetry.client_span(op, peer),
        None => OperationSpan::disabled(),
    }
}

/// The current context, to carry to another thread or task ([`super::Scoped`]), when telemetry
/// is on.
pub fn current() -> Option<opentelemetry::Context> {
    enabled().then(opentelemetry::Context::current)
}

/// The trace and span ids of the current context (the operation being served), as hex, when
/// telemetry is on and there is one: for log lines.
pub fn current_ids() -> Option<(opentelemetry::trace::TraceId, opentelemetry::trace::SpanId)> {
    use opentelemetry::trace::TraceContextExt as _;
    if !enabled() {
        return None;
    }
    let cx = opentelemetry::Context::current();
    let span = cx.span();
    let context = span.span_context();
    context.is_valid().then(|| (context.trace_id(), context.span_id()))
}

/// A context whose span is the remote parent `traceparent` names (a `TRACEPARENT` environment
/// variable), when telemetry is on and it is valid.
pub fn remote_parent(traceparent: Option<&str>, tracestate: Option<&str>) -> Option<opentelemetry::Context> {
    use opentelemetry::trace::TraceContextExt as _;
    let headers = super::operation::TraceHeaders { traceparent, tracestate, baggage: None };
    let remote = super::span::remote_context(&headers).filter(|_| enabled())?;
    Some(opentelemetry::Context::new().with_remote_span_context(remote))
}

/// A span of work inside the current operation (a command's process, a task, a token request):
/// `kind` INTERNAL or CLIENT, a child of the current context (inert when telemetry is off).
pub fn child_span(kind: SpanKind, name: &'static str, attributes: impl FnOnce() -> Vec<KeyValue>) -> OperationSpan {
    match INSTALLED.get() {
        Some(telemetry) => telemetry.child_span(kind, name, attributes()),
        None => OperationSpan::disabled(),
    }
}

/// Records `mcp.{server,client}.operation.duration` (on `/metrics` whether or not telemetry is
/// on; exported over OTLP when it is). `op.target` must be a tool or prompt the catalog has (or
/// the remote's, on the client side), or `None`: a client's made-up name must not become a
/// label.
pub fn record_operation_duration(side: Side, op: &Operation<'_>, failure: Option<Failure>, seconds: f64) {
    let method = semconv::method_label(op.method);
    let labels = Labels {
        histogram: Histogram::Operation(side),
        method: Some(method),
        target: op.target.filter(|_| semconv::target_kind(method).is_some()),
        version: version_label(op.protocol_version),
        transport: op.transport,
        failure,
    };
    durations().record(&labels, seconds);
}

/// Records `mcp.{server,client}.session.duration`.
pub fn record_session_duration(
    side: Side,
    protocol_version: Option<&str>,
    transport: Transport,
    failure: Option<Failure>,
    seconds: f64,
) {
    let labels = Labels {
        histogram: Histogram::Session(side),
        method: None,
        target: None,
        version: version_label(protocol_version),
        transport,
        failure,
    };
    durations().record(&labels, seconds);
}

/// Records the end of a server's HTTP session (`mcp.server.session.duration`) opened at
/// `opened`, at `version` (none: never initialized).
pub fn session_ended(version: Option<mcpd::version::ProtocolVersion>, opened: std::time::Instant) {
    let version = version.map(mcpd::version::ProtocolVersion::as_str);
    record_session_duration(Side::Server, version, Transport::Tcp, None, opened.elapsed().as_secs_f64());
}

/// What became of the spans so far (`None`: telemetry off).
pub fn span_counts() -> Option<SpanCounts> {
    INSTALLED.get().map(Telemetry::span_counts)
}

/// Exports what is queued and the last metrics, waiting at most [`SHUTDOWN_LIMIT`]; called when
/// mcpd stops (SIGTERM, Ctrl-C, stdin closed). `true` when everything was handed over in time
/// (or telemetry is off).
pub fn shutdown() -> bool {
    INSTALLED.get().is_none_or(|telemetry| telemetry.shutdown(SHUTDOWN_LIMIT))
}
