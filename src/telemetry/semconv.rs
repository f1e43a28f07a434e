//! The names of the OpenTelemetry semantic conventions for MCP (`gen-ai/mcp.md`, status
//! Development) that mcpd writes, and the rules that derive values from a request: a span's name
//! (`{mcp.method.name} {target}`), its target, and `error.type`.

/// The instrumentation scope of every span and metric mcpd makes.
pub const SCOPE_NAME: &str = "mcpd";

/// `mcp.method.name`: the request's or notification's method (required).
pub const MCP_METHOD_NAME: &str = "mcp.method.name";
/// `mcp.protocol.version`: the MCP revision in use.
pub const MCP_PROTOCOL_VERSION: &str = "mcp.protocol.version";
/// `mcp.session.id`: the session a request belongs to.
pub const MCP_SESSION_ID: &str = "mcp.session.id";
/// `mcp.resource.uri`: the resource of `resources/read`, `resources/(un)subscribe` and
/// `notifications/resources/updated` (an attribute, never part of the span name).
pub const MCP_RESOURCE_URI: &str = "mcp.resource.uri";
/// `gen_ai.tool.name`: the tool of `tools/call`.
pub const GEN_AI_TOOL_NAME: &str = "gen_ai.tool.name";
/// `gen_ai.prompt.name`: the prompt of `prompts/get`.
pub const GEN_AI_PROMPT_NAME: &str = "gen_ai.prompt.name";
/// `gen_ai.operation.name`: `execute_tool` on a tool call, absent otherwise.
pub const GEN_AI_OPERATION_NAME: &str = "gen_ai.operation.name";
/// The value of [`GEN_AI_OPERATION_NAME`] on `tools/call`.
pub const EXECUTE_TOOL: &str = "execute_tool";
/// `jsonrpc.request.id`: the request's id as a string (absent on notifications and null ids).
pub const JSONRPC_REQUEST_ID: &str = "jsonrpc.request.id";
/// `rpc.response.status_code`: the JSON-RPC error code of an error answer, as a string.
pub const RPC_RESPONSE_STATUS_CODE: &str = "rpc.response.status_code";
/// `network.transport`: [`TRANSPORT_TCP`] for HTTP, [`TRANSPORT_PIPE`] for stdio.
pub const NETWORK_TRANSPORT: &str = "network.transport";
/// `network.transport` over HTTP.
pub const TRANSPORT_TCP: &str = "tcp";
/// `network.transport` over stdio.
pub const TRANSPORT_PIPE: &str = "pipe";
/// `network.protocol.name`: `http` over HTTP.
pub const NETWORK_PROTOCOL_NAME: &str = "network.protocol.name";
/// `server.address`: the remote server's host, on client spans.
pub const SERVER_ADDRESS: &str = "server.address";
/// `server.port`: the remote server's port, on client spans.
pub const SERVER_PORT: &str = "server.port";
/// `error.type`: the JSON-RPC error code as a string, or [`TOOL_ERROR`]; the span's status is
/// then ERROR.
pub const ERROR_TYPE: &str = "error.type";
/// `error.type` of a `tools/call` whose result has `isError: true`.
pub const TOOL_ERROR: &str = "tool_error";
/// `error.type` of a failure that has no JSON-RPC code (the conventions' fallback).
pub const OTHER_ERROR: &str = "_OTHER";
/// `service.name`, the resource attribute naming the service.
pub const SERVICE_NAME: &str = "service.name";
/// The default [`SERVICE_NAME`].
pub const DEFAULT_SERVICE_NAME: &str = "mcpd";

/// `mcp.server.operation.duration` (histogram, seconds).
pub const SERVER_OPERATION_DURATION: &str = "mcp.server.operation.duration";
/// `mcp.client.operation.duration` (histogram, seconds).
pub const CLIENT_OPERATION_DURATION: &str = "mcp.client.operation.duration";
/// `mcp.server.session.duration` (histogram, seconds).
pub const SERVER_SESSION_DURATION: &str = "mcp.server.session.duration";
/// `mcp.client.session.duration` (histogram, seconds).
pub const CLIENT_SESSION_DURATION: &str = "mcp.client.session.duration";
/// The explicit bucket boundaries the conventions give every MCP duration histogram.
pub const DURATION_BUCKETS: [f64; 14] =
    [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1.0, 2.0, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0];

/// The methods named as they are in spans' names and metrics' labels: the conventions'
/// well-known values, then the methods of the 2026-07-28 wire and the tasks extension. Any other
/// method is the peer's to choose: its metrics label is [`OTHER_ERROR`]'s `_OTHER`.
pub const KNOWN_METHODS: [&str; 33] = [
    "completion/complete",
    "elicitation/create",
    "initialize",
    "logging/setLevel",
    "notifications/cancelled",
    "notifications/initialized",
    "notifications/message",
    "notifications/progress",
    "notifications/prompts/list_changed",
    "notifications/resources/list_changed",
    "notifications/resources/updated",
    "notifications/roots/list_changed",
    "notifications/tools/list_changed",
    "ping",
    "prompts/get",
    "prompts/list",
    "resources/list",
    "resources/read",
    "resources/subscribe",
    "resources/templates/list",
    "resources/unsubscribe",
    "roots/list",
    "sampling/createMessage",
    "tools/call",
    "tools/list",
    "server/discover",
    "subscriptions/listen",
    "notifications/subscriptions/acknowledged",
    "notifications/elicitation/complete",
    "tasks/get",
    "tasks/update",
    "tasks/cancel",
    "notifications/tasks",
];

/// A method's name as a static string when it is one of [`KNOWN_METHODS`] (a `match`: the
/// length first, then one comparison, on every request's way).
pub fn known_method(method: &str) -> Option<&'static str> {
    Some(match method {
        "completion/complete" => "completion/complete",
        "elicitation/create" => "elicitation/create",
        "initialize" => "initialize",
        "logging/setLevel" => "logging/setLevel",
        "notifications/cancelled" => "notifications/cancelled",
        "notifications/initialized" => "notifications/initialized",
        "notifications/message" => "notifications/message",
        "notifications/progress" => "notifications/progress",
        "notifications/prompts/list_changed" => "notifications/prompts/list_changed",
        "notifications/resources/list_changed" => "notifications/resources/list_changed",
        "notifications/resources/updated" => "notifications/resources/updated",
        "notifications/roots/list_changed" => "notifications/roots/list_changed",
        "notifications/tools/list_changed" => "notifications/tools/list_changed",
        "ping" => "ping",
        "prompts/get" => "prompts/get",
        "prompts/list" => "prompts/list",
        "resources/list" => "resources/list",
        "resources/read" => "resources/read",
        "resources/subscribe" => "resources/subscribe",
        "resources/templates/list" => "resources/templates/list",
        "resources/unsubscribe" => "resources/unsubscribe",
        "roots/list" => "roots/list",
        "sampling/createMessage" => "sampling/createMessage",
        "tools/call" => "tools/call",
        "tools/list" => "tools/list",
        "server/discover" => "server/discover",
        "subscriptions/listen" => "subscriptions/listen",
        "notifications/subscriptions/acknowledged" => "notifications/subscriptions/acknowledged",
        "notifications/elicitation/complete" => "notifications/elicitation/complete",
        "tasks/get" => "tasks/get",
        "tasks/update" => "tasks/update",
        "tasks/cancel" => "tasks/cancel",
        "notifications/tasks" => "notifications/tasks",
        _ => return None,
    })
}

/// The `mcp.method.name` label of a metric: the method when known, else `_OTHER` (a metric has a
/// series per label value, so a peer's made-up method must not become one).
pub fn method_label(method: &str) -> &'static str {
    known_method(method).unwrap_or(OTHER_ERROR)
}

/// The low-cardinality target a method's span is named after: the tool of `tools/call`, the
/// prompt of `prompts/get`; `None` for every other method (resource URIs are high-cardinality
/// and stay an attribute).
pub fn target_kind(method: &str) -> Option<&'static str> {
    match method {
        "tools/call" => Some(GEN_AI_TOOL_NAME),
        "prompts/get" => Some(GEN_AI_PROMPT_NAME),
        _ => None,
    }
}

/// The span name: `{method} {target}`, or `{method}` without a target.
pub fn span_name(method: &str, target: Option<&str>) -> String {
    match target {
        Some(target) if !target.is_empty() => {
            let mut name = String::with_capacity(method.len() + 1 + target.len());
            name.push_str(method);
            name.push(' ');
            name.push_str(target);
            name
        }
        _ => method.to_owned(),
    }
}

/// Why an operation failed, as `error.type` names it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Failure {
    /// A JSON-RPC error answer with this code.
    Code(i64),
    /// A `CallToolResult` with `isError: true`.
    ToolError,
    /// A failure without a JSON-RPC code (a transport error, a time-out seen by a client).
    Other,
}

impl Failure {
    /// The `error.type` value: the code as a decimal string, `tool_error`, or `_OTHER`.
    pub fn error_type(self) -> std::borrow::Cow<'static, str> {
        match self {
            Failure::Code(code) => std::borrow::Cow::Owned(code.to_string()),
            Failure::ToolError => std::borrow::Cow::Borrowed(TOOL_ERROR),
            Failure::Other => std::borrow::Cow::Borrowed(OTHER_ERROR),
        }
    }

    /// The JSON-RPC code, written as `rpc.response.status_code`; only an error answer has one.
    pub fn code(self) -> Option<i64> {
        match self {
            Failure::Code(code) => Some(code),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spans_are_named_after_the_tool_or_prompt_only() {
        assert_eq!(span_name("tools/call", Some("get-weather")), "tools/call get-weather");
        assert_eq!(span_name("prompts/get", Some("review")), "prompts/get review");
        assert_eq!(span_name("tools/list", None), "tools/list");
        assert_eq!(span_name("tools/call", Some("")), "tools/call");
        assert_eq!(target_kind("tools/call"), Some(GEN_AI_TOOL_NAME));
        assert_eq!(target_kind("prompts/get"), Some(GEN_AI_PROMPT_NAME));
        assert_eq!(target_kind("resources/read"), None);
    }

    #[test]
    fn error_type_is_the_code_as_a_string_or_tool_error() {
        assert_eq!(Failure::Code(-32602).error_type(), "-32602");
        assert_eq!(Failure::Code(-32602).code(), Some(-32602));
        assert_eq!(Failure::ToolError.error_type(), "tool_error");
        assert_eq!(Failure::ToolError.code(), None);
        assert_eq!(Failure::Other.error_type(), "_OTHER");
    }

    #[test]
    fn methods_are_labelled_only_when_known() {
        assert_eq!(method_label("tools/call"), "tools/call");
        assert_eq!(method_label("notifications/initialized"), "notifications/initialized");
        assert_eq!(method_label("made/up"), "_OTHER");
        assert_eq!(known_method("elicitation/create"), Some("elicitation/create"));
        assert!(KNOWN_METHODS.iter().all(|m| known_method(m) == Some(*m)), "the match names each");
        let mut sorted = KNOWN_METHODS.to_vec();
        sorted.sort_unstable();
        sorted.dedup();
        assert_eq!(sorted.len(), KNOWN_METHODS.len(), "each method once");
    }

    #[test]
    fn the_buckets_are_increasing() {
        assert!(DURATION_BUCKETS.windows(2).all(|w| w[0] < w[1]));
    }
}
