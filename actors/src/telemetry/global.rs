//! The process's telemetry, installed once at start (`init`) and reached by the free functions
//! the transports and the client call. With nothing installed each of them is one atomic load
//! and returns an inert span: no allocation, no clock read.

use std::sync::OnceLock;
use std::time::Duration;

use mcpd::telemetry::semconv::Failure;
use mcpd::telemetry::TelemetryConfig;

use super::counts::SpanCounts;
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

/// The CLIENT span of a request mcpd sends (inert when telemetry is off); its parent is the
/// current context.
pub fn client_span(op: &Operation<'_>, peer: Option<&Peer<'_>>) -> OperationSpan {
    match INSTALLED.get() {
        Some(telemetry) => telemetry.client_span(op, peer),
        None => OperationSpan::disabled(),
    }
}

/// Records `mcp.{server,client}.operation.duration`.
pub fn record_operation_duration(side: Side, op: &Operation<'_>, failure: Option<Failure>, seconds: f64) {
    if let Some(telemetry) = INSTALLED.get() {
        telemetry.record_operation_duration(side, op, failure, seconds);
    }
}

/// Records `mcp.{server,client}.session.duration`.
pub fn record_session_duration(
    side: Side,
    protocol_version: Option<&str>,
    transport: Transport,
    failure: Option<Failure>,
    seconds: f64,
) {
    if let Some(telemetry) = INSTALLED.get() {
        telemetry.record_session_duration(side, protocol_version, transport, failure, seconds);
    }
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
