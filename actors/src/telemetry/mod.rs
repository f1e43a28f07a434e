//! OpenTelemetry traces and metrics by the MCP semantic conventions, exported over OTLP/HTTP.
//!
//! The configuration (`mcpd::telemetry::TelemetryConfig`, read from the standard `OTEL_*`
//! variables and `--otlp-endpoint`) starts a [`Telemetry`] pipeline: the SDK's tracer with the
//! configured sampler and resource, whose finished spans go into a bounded queue (`queue`) that
//! one thread of its own (`thread`) drains, writing protobuf bodies itself (`encode`) and posting
//! them with awc (`transport`). The request path only builds spans and pushes them: a dead or
//! slow collector costs dropped spans, counted in [`SpanCounts`], never memory or latency.
//! [`shutdown`] exports what is left within [`SHUTDOWN_LIMIT`].
//!
//! - `span`: [`OperationSpan`], a SERVER or CLIENT span of one MCP operation (and the spans
//!   inside one, [`child_span`]); `ids`: the sampling decision taken first, so a dropped span
//!   is only its ids; `scoped`: a future polled in a span's context ([`Scoped`]);
//! - `links`: spans found together by what a later request names (a round's `requestState`, a
//!   task's id);
//! - `durations`: the conventions' four duration histograms, kept for the process whether or
//!   not telemetry is on; `exposition` shows them on `/metrics`, `metrics_body` writes their
//!   OTLP body for the thread's periodic export.
//!
//! The runtime calls the free functions ([`server_span_with`], [`client_span`],
//! [`record_operation_duration`], [`record_session_duration`]); with telemetry off a span is
//! one atomic load, and a duration one lookup and three atomic adds.

mod counts;
mod durations;
mod encode;
mod exposition;
mod global;
mod ids;
pub(crate) mod links;
mod metrics_body;
mod operation;
mod pipeline;
mod queue;
mod scoped;
mod span;
mod thread;
mod transport;

pub use counts::SpanCounts;
pub use exposition::DurationsCollector;
pub use global::{
    child_span, client_span, current, current_ids, enabled, init, install, installed, record_operation_duration,
    record_session_duration, remote_parent, server_span, server_span_with, session_ended, shutdown, span_counts,
    SHUTDOWN_LIMIT,
};
pub use operation::{Incoming, Operation, Peer, Side, TraceHeaders, Transport};
pub use pipeline::{Telemetry, TelemetryError};
pub use scoped::Scoped;
pub use span::{OperationSpan, Propagation};
