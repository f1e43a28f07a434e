//! OpenTelemetry traces and metrics by the MCP semantic conventions, exported over OTLP/HTTP.
//!
//! The configuration (`mcpd::telemetry::TelemetryConfig`, read from the standard `OTEL_*`
//! variables and `--otlp-endpoint`) starts a [`Telemetry`] pipeline: the SDK's tracer with the
//! configured sampler and resource, whose finished spans go into a bounded queue (`queue`) that
//! one thread of its own (`thread`) drains, writing protobuf bodies itself (`encode`) and posting
//! them with awc (`transport`); the SDK's meters with the conventions' histograms (`meters`),
//! exported by the OTLP crate through the same thread. The request path only
//! builds spans and pushes them: a dead or slow collector costs dropped spans, counted in
//! [`SpanCounts`], never memory or latency. [`shutdown`] exports what is left within
//! [`SHUTDOWN_LIMIT`].
//!
//! The runtime calls the free functions ([`server_span`], [`client_span`],
//! [`record_operation_duration`], [`record_session_duration`]), which are one atomic load when
//! telemetry is off.

mod counts;
mod encode;
mod global;
mod meters;
mod operation;
mod pipeline;
mod queue;
mod span;
mod thread;
mod transport;

pub use counts::SpanCounts;
pub use global::{
    client_span, enabled, init, install, installed, record_operation_duration, record_session_duration, server_span,
    shutdown, span_counts, SHUTDOWN_LIMIT,
};
pub use operation::{Incoming, Operation, Peer, Side, TraceHeaders, Transport};
pub use pipeline::{Telemetry, TelemetryError};
pub use span::{OperationSpan, Propagation};
