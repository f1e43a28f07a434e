//! What the runtime tells telemetry about one MCP operation: borrowed from the request, so a
//! caller builds it without allocating whether or not telemetry is on.

use mcpd::jsonrpc::RequestId;

/// The transport an operation came or went over (`network.transport`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
pub enum Transport {
    /// HTTP (`tcp`).
    #[default]
    Tcp,
    /// stdio (`pipe`).
    Pipe,
}

impl Transport {
    /// The `network.transport` value.
    pub fn as_str(self) -> &'static str {
        match self {
            Transport::Tcp => mcpd::telemetry::semconv::TRANSPORT_TCP,
            Transport::Pipe => mcpd::telemetry::semconv::TRANSPORT_PIPE,
        }
    }
}

/// Which side of an operation mcpd is on: it serves the request (SERVER spans,
/// `mcp.server.*` metrics) or sends it (CLIENT spans, `mcp.client.*` metrics).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Side {
    /// mcpd serves the request.
    Server,
    /// mcpd sends the request to a remote server.
    Client,
}

/// One MCP request or notification, as the conventions describe it.
#[derive(Debug, Clone, Copy, Default)]
pub struct Operation<'a> {
    /// `mcp.method.name`.
    pub method: &'a str,
    /// The tool of `tools/call` or the prompt of `prompts/get` (`gen_ai.tool.name`,
    /// `gen_ai.prompt.name`); ignored for other methods.
    pub target: Option<&'a str>,
    /// Whether `target` is one the server lists (a remote's listed tool, a test's): only such a
    /// target names the span at its start, since a client's made-up name must not make span
    /// names of unbounded variety. A server names its span once it knows the catalog has the
    /// target ([`super::OperationSpan::rename`]).
    pub target_listed: bool,
    /// `mcp.resource.uri`.
    pub resource_uri: Option<&'a str>,
    /// `jsonrpc.request.id` (`None` for notifications).
    pub request_id: Option<&'a RequestId>,
    /// `mcp.protocol.version`.
    pub protocol_version: Option<&'a str>,
    /// `mcp.session.id`.
    pub session_id: Option<&'a str>,
    /// `network.transport`.
    pub transport: Transport,
}

/// The server a CLIENT span's request goes to (`server.address`, `server.port`).
#[derive(Debug, Clone, Copy)]
pub struct Peer<'a> {
    /// The host as configured (no DNS lookup).
    pub address: &'a str,
    /// The port.
    pub port: u16,
}

/// The W3C trace context members of one carrier: a request's `params._meta` or its HTTP
/// headers.
#[derive(Debug, Clone, Copy, Default)]
pub struct TraceHeaders<'a> {
    /// `traceparent`.
    pub traceparent: Option<&'a str>,
    /// `tracestate`.
    pub tracestate: Option<&'a str>,
    /// `baggage` (kept as its text and passed on).
    pub baggage: Option<&'a str>,
}

/// Where a served request's trace context comes from: `params._meta` is the parent; the HTTP
/// headers are the parent only when `_meta` has none, and are otherwise linked.
#[derive(Debug, Clone, Copy, Default)]
pub struct Incoming<'a> {
    /// The members of `params._meta`.
    pub meta: TraceHeaders<'a>,
    /// The HTTP request's headers (empty over stdio).
    pub http: TraceHeaders<'a>,
}
