//! OpenTelemetry for MCP, the pure part: the configuration read from the standard `OTEL_*`
//! environment variables and mcpd's own endpoint setting ([`config`]), the W3C trace context
//! (`traceparent`, [`w3c`]) and the names the MCP semantic conventions give spans, attributes and
//! metrics, with the rules that derive a span's name and its `error.type` ([`semconv`]).
//!
//! The runtime (`mcpd_actors::telemetry`) makes spans and metrics out of these and exports them;
//! nothing here does I/O or reads the process environment.

pub mod config;
pub mod semconv;
pub mod w3c;

pub use config::{ConfigError, EndpointSetting, Protocol, SamplerConfig, TelemetryConfig};
pub use w3c::TraceParent;
