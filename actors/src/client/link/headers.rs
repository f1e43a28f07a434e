//! The headers a link adds to a request, beside the configured ones (the HTTP client's
//! defaults): typed names made once, so that no request parses a header name, and values moved
//! into place without a copy.

use awc::http::header::{HeaderName, HeaderValue};
use mcpd::client::request::RoutingHeader;
use mcpd::version::ProtocolVersion;

use crate::client::error::ClientError;

/// Headers for one request.
pub(super) type Headers = Vec<(HeaderName, HeaderValue)>;

static PROTOCOL_VERSION: HeaderName = HeaderName::from_static(mcpd::headers::PROTOCOL_VERSION);
static SESSION_ID: HeaderName = HeaderName::from_static(mcpd::headers::SESSION_ID);
static METHOD: HeaderName = HeaderName::from_static(mcpd::headers::METHOD);
static NAME: HeaderName = HeaderName::from_static(mcpd::headers::NAME);
static TRACEPARENT: HeaderName = HeaderName::from_static("traceparent");
static TRACESTATE: HeaderName = HeaderName::from_static("tracestate");
static BAGGAGE: HeaderName = HeaderName::from_static("baggage");

/// `MCP-Protocol-Version: <version>`.
pub(super) fn version(version: ProtocolVersion) -> (HeaderName, HeaderValue) {
    (PROTOCOL_VERSION.clone(), HeaderValue::from_static(version.as_str()))
}

/// `Mcp-Session-Id: <id>`; `None` for an id that cannot be a header value (the server gave it
/// as one, so it can).
pub(super) fn session(id: &str) -> Option<(HeaderName, HeaderValue)> {
    HeaderValue::from_str(id).ok().map(|value| (SESSION_ID.clone(), value))
}

/// The W3C trace context headers a request's `_meta` carries (`traceparent`, `tracestate`),
/// added to `headers` so that an HTTP server sees them where tracing middleware looks; values
/// that cannot be header values are left out (they still travel in `_meta`).
pub(super) fn trace_of(meta: Option<&serde_json::Map<String, serde_json::Value>>, headers: &mut Headers) {
    let Some(meta) = meta else { return };
    for name in [&TRACEPARENT, &TRACESTATE] {
        if let Some(value) = meta.get(name.as_str()).and_then(serde_json::Value::as_str) {
            if let Ok(value) = HeaderValue::from_str(value) {
                headers.push((name.clone(), value));
            }
        }
    }
}

/// The trace context of a request's span as HTTP headers (replacing the caller's), else the
/// caller's own from `meta` ([`trace_of`]).
pub(super) fn trace_or(
    trace: Option<&crate::telemetry::Propagation>,
    meta: Option<&serde_json::Map<String, serde_json::Value>>,
    headers: &mut Headers,
) {
    let Some(trace) = trace else { return trace_of(meta, headers) };
    let members = [
        (&TRACEPARENT, Some(&trace.traceparent)),
        (&TRACESTATE, trace.tracestate.as_ref()),
        (&BAGGAGE, trace.baggage.as_ref()),
    ];
    for (name, value) in members {
        if let Some(value) = value.and_then(|v| HeaderValue::from_str(v).ok()) {
            headers.push((name.clone(), value));
        }
    }
}

/// A tool's name with its `Mcp-Name` value, made once for the many calls of a gateway's lane.
#[derive(Debug, Clone)]
pub(crate) struct ToolName {
    name: std::sync::Arc<str>,
    header: HeaderValue,
}

impl ToolName {
    /// `name` with its header value (`None` if it could not be one: an encoded value always
    /// can).
    pub(crate) fn new(name: &str) -> Option<ToolName> {
        let header = HeaderValue::try_from(mcpd::headers::encode_value(name)).ok()?;
        Some(ToolName { name: name.into(), header })
    }

    /// The name.
    pub(crate) fn as_str(&self) -> &str {
        &self.name
    }
}

/// The routing headers of a `tools/call` of `tool`: `Mcp-Method`, `Mcp-Name`, then `params`
/// (its arguments' `Mcp-Param-*`, as the core computes them).
pub(super) fn call_routing(tool: &ToolName, params: Vec<(RoutingHeader, String)>) -> Result<Headers, ClientError> {
    // Room for the version and the trace context the request adds.
    let mut headers = Vec::with_capacity(params.len() + 5);
    headers.push((METHOD.clone(), HeaderValue::from_static("tools/call")));
    headers.push((NAME.clone(), tool.header.clone()));
    if !params.is_empty() {
        headers.extend(routing(params)?);
    }
    Ok(headers)
}

/// A stateless request's routing headers as the core computes them, typed.
pub(super) fn routing(headers: Vec<(RoutingHeader, String)>) -> Result<Headers, ClientError> {
    headers
        .into_iter()
        .map(|(header, value)| {
            let name = match &header {
                RoutingHeader::Method => METHOD.clone(),
                RoutingHeader::Name => NAME.clone(),
                RoutingHeader::Param(_) => HeaderName::try_from(header.name().as_ref())
                    .map_err(|_| ClientError::Protocol(format!("{} is not a valid header name", header.name())))?,
            };
            let value = HeaderValue::try_from(value).map_err(|_| {
                ClientError::Protocol(format!("the value of {} is not a valid header value", header.name()))
            })?;
            Ok((name, value))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn routing_headers_keep_their_names_and_values() {
        let typed = routing(vec![
            (RoutingHeader::Method, "tools/call".into()),
            (RoutingHeader::Name, "echo".into()),
            (RoutingHeader::Param("Tenant".into()), "=?base64?5Lit5paH?=".into()),
        ])
        .unwrap();
        let text: Vec<String> = typed.iter().map(|(n, v)| format!("{n}: {}", v.to_str().unwrap())).collect();
        assert_eq!(text, ["mcp-method: tools/call", "mcp-name: echo", "mcp-param-tenant: =?base64?5Lit5paH?="]);
        assert!(matches!(
            routing(vec![(RoutingHeader::Param("bad name".into()), "v".into())]),
            Err(ClientError::Protocol(message)) if message == "Mcp-Param-bad name is not a valid header name"
        ));
        assert_eq!(version(ProtocolVersion::STATELESS).1, "2026-07-28");
        assert!(session("s\n1").is_none());
    }
}
