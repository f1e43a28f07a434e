//! Which era a message belongs to, and what a POSTed message is: the routing decision of the
//! HTTP endpoint as one pure function ([`route_post`]) of the message, its routing headers,
//! whether it names a session, and whether the endpoint keeps sessions.

use super::meta::ServingMeta;
use super::method::Method;
use super::stateless::RoutingHeaders;
use crate::error::ProtocolError;
use crate::jsonrpc::{Incoming, Message, Notification, Rejection, Request};
use crate::version::{Era, ProtocolVersion};

/// Chooses the era of an HTTP request that carries no session id: stateless when its `_meta`
/// carries the 2026-07-28 request metadata or its `MCP-Protocol-Version` header names
/// 2026-07-28; otherwise the handshake era.
///
/// Transport-facing: public because the runtime (`mcpd-actors`, another crate) applies it; see
/// [the crate docs](crate#transport-facing-rules).
pub fn http_era(request: &Request, header_version: Option<&str>) -> Era {
    era_over_http(ServingMeta::of_request(request.meta()), header_version)
}

/// [`http_era`] of a request's or a notification's `_meta`.
fn era_over_http(meta: Option<ServingMeta<'_>>, header_version: Option<&str>) -> Era {
    let has_modern_meta = meta.is_some_and(|m| m.protocol_version.is_some() || m.has_client_capabilities);
    let header_is_stateless = header_version.map(str::trim) == Some(ProtocolVersion::STATELESS.as_str());
    if has_modern_meta || header_is_stateless {
        Era::Stateless
    } else {
        Era::Stateful
    }
}

/// Chooses the era of a stdio request: stateless when its `_meta` names a protocol version.
///
/// Transport-facing: public because the runtime (`mcpd-actors`, another crate) applies it; see
/// [the crate docs](crate#transport-facing-rules).
pub fn stdio_era(request: &Request) -> Era {
    if ServingMeta::of_request(request.meta()).is_some_and(|m| m.protocol_version.is_some()) {
        Era::Stateless
    } else {
        Era::Stateful
    }
}

/// The revision of a handshake-era HTTP request from its `MCP-Protocol-Version` header:
/// absent means 2025-03-26.
///
/// Transport-facing: public because the runtime (`mcpd-actors`, another crate) applies it; see
/// [the crate docs](crate#transport-facing-rules).
///
/// # Errors
/// [`ProtocolError::UnsupportedVersion`] (HTTP 400) when the header names no handshake revision.
pub fn legacy_http_version(header_version: Option<&str>) -> Result<ProtocolVersion, ProtocolError> {
    match header_version.map(str::trim) {
        None => Ok(ProtocolVersion::HTTP_DEFAULT),
        Some(v) => match ProtocolVersion::parse(v) {
            Some(version) if version.era() == Era::Stateful => Ok(version),
            _ => Err(ProtocolError::UnsupportedVersion { requested: v.to_owned() }),
        },
    }
}

/// Whether an HTTP endpoint keeps sessions (`mcpd serve -s`): then a handshake-era message
/// must name its session, or be the `initialize` that starts one.
///
/// Transport-facing: public because the runtime (`mcpd-actors`, another crate) applies it; see
/// [the crate docs](crate#transport-facing-rules).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum SessionSupport {
    /// Stateless requests and session-less handshake-era requests only.
    Disabled,
    /// Streamable-HTTP sessions too.
    Enabled,
}

/// What a POSTed message is, and so which part of the endpoint answers it.
///
/// Transport-facing: public because the runtime (`mcpd-actors`, another crate) applies it; see
/// [the crate docs](crate#transport-facing-rules).
#[derive(Debug)]
pub enum Posted<'s> {
    /// A handshake-era message for the session its `Mcp-Session-Id` names.
    InSession(&'s str, Message),
    /// `initialize` without a session id, on an endpoint with sessions: start one.
    CreateSession(Request),
    /// Another handshake-era request without a session id, on an endpoint with sessions
    /// (`-32600`: initialize first).
    MissingSession(Request),
    /// A 2026-07-28 stateless request.
    Stateless(Request),
    /// A handshake-era request on an endpoint without sessions: answered on its own.
    Handshake(Request),
    /// A handshake-era notification or response without a session id, on an endpoint with
    /// sessions: nothing could receive it (400).
    Unaddressed,
    /// A notification (`Some`) or response (`None`) that nothing awaits (202).
    Accepted(Option<Notification>),
    /// A JSON-RPC batch (2025-03-26 only; the header decides).
    Batch(Vec<Result<Message, Rejection>>),
}

/// Decides what a POSTed message is. A session id counts only on an endpoint with sessions, and
/// only for handshake-era messages: a stateless request is stateless wherever it goes.
///
/// Transport-facing: public because the runtime (`mcpd-actors`, another crate) applies it; see
/// [the crate docs](crate#transport-facing-rules).
pub fn route_post<'s>(
    incoming: Incoming,
    headers: &RoutingHeaders<'_>,
    session_id: Option<&'s str>,
    sessions: SessionSupport,
) -> Posted<'s> {
    let message = match incoming {
        Incoming::Single(message) => message,
        Incoming::Batch(items) => return Posted::Batch(items),
    };
    let stateless = match &message {
        Message::Request(request) => http_era(request, headers.protocol_version) == Era::Stateless,
        Message::Notification(n) => {
            era_over_http(ServingMeta::of_params(n.params.as_ref()), headers.protocol_version) == Era::Stateless
        }
        Message::Response(_) => false,
    };
    let with_sessions = sessions == SessionSupport::Enabled;
    match (session_id.filter(|_| with_sessions && !stateless), message) {
        (Some(id), message) => Posted::InSession(id, message),
        (None, Message::Request(request)) if stateless => Posted::Stateless(request),
        (None, Message::Request(request)) if with_sessions => match Method::parse(&request.method) {
            Method::Initialize => Posted::CreateSession(request),
            _ => Posted::MissingSession(request),
        },
        (None, Message::Request(request)) => Posted::Handshake(request),
        (None, Message::Notification(_) | Message::Response(_)) if with_sessions && !stateless => Posted::Unaddressed,
        (None, Message::Notification(notification)) => Posted::Accepted(Some(notification)),
        (None, Message::Response(_)) => Posted::Accepted(None),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::{self, RequestId};
    use serde_json::{json, Value};

    fn meta(version: &str) -> Value {
        json!({"io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientCapabilities": {}})
    }

    fn posted<'s>(
        body: Value,
        version: Option<&str>,
        session: Option<&'s str>,
        sessions: SessionSupport,
    ) -> Posted<'s> {
        let incoming = jsonrpc::parse(body.to_string().as_bytes()).expect("valid JSON-RPC");
        route_post(incoming, &RoutingHeaders { protocol_version: version, ..Default::default() }, session, sessions)
    }

    #[test]
    fn era_selection_follows_meta_and_header() {
        let request = |params: Value| Request::new(RequestId::Number(1), "ping", params.as_object().cloned());
        let modern = request(json!({"_meta": meta("2026-07-28")}));
        let bare = request(json!({}));
        assert_eq!(http_era(&modern, None), Era::Stateless);
        assert_eq!(http_era(&bare, Some("2026-07-28")), Era::Stateless);
        assert_eq!(http_era(&bare, Some("2025-11-25")), Era::Stateful);
        let progress_only = request(json!({"_meta": {"progressToken": 1}}));
        assert_eq!(http_era(&progress_only, None), Era::Stateful);
        let capabilities_only = request(json!({"_meta": {"io.modelcontextprotocol/clientCapabilities": {}}}));
        assert_eq!(http_era(&capabilities_only, None), Era::Stateless);
        assert_eq!(stdio_era(&capabilities_only), Era::Stateful);
        assert_eq!(stdio_era(&modern), Era::Stateless);
        // The same, read from the wire.
        let Posted::Stateless(parsed) = posted(
            json!({"jsonrpc": "2.0", "id": 1, "method": "ping", "params": {"_meta": meta("2026-07-28")}}),
            None,
            None,
            SessionSupport::Enabled,
        ) else {
            panic!("stateless")
        };
        assert_eq!(parsed, modern);
        assert_eq!(stdio_era(&parsed), Era::Stateless);
        // A notification's `_meta` stays in its params and counts the same.
        let note = json!({"jsonrpc": "2.0", "method": "notifications/x", "params": {"_meta": meta("2026-07-28")}});
        assert!(matches!(posted(note, None, Some("s1"), SessionSupport::Enabled), Posted::Accepted(_)));
    }

    #[test]
    fn a_session_id_routes_handshake_messages_to_their_session_only_with_sessions() {
        use SessionSupport::{Disabled, Enabled};
        let call = json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "echo"}});
        assert!(matches!(posted(call.clone(), None, Some("s1"), Enabled), Posted::InSession("s1", _)));
        assert!(matches!(posted(call.clone(), None, Some("s1"), Disabled), Posted::Handshake(_)));
        assert!(matches!(posted(call.clone(), None, None, Enabled), Posted::MissingSession(_)));
        let modern =
            json!({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"_meta": meta("2026-07-28")}});
        assert!(matches!(posted(modern, None, Some("s1"), Enabled), Posted::Stateless(_)));
        assert!(matches!(posted(call, Some("2026-07-28"), None, Enabled), Posted::Stateless(_)));
    }

    #[test]
    fn initialize_without_a_session_starts_one_only_with_sessions() {
        let init =
            json!({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {"protocolVersion": "2025-11-25"}});
        assert!(matches!(posted(init.clone(), None, None, SessionSupport::Enabled), Posted::CreateSession(_)));
        let Posted::Handshake(request) = posted(init, None, None, SessionSupport::Disabled) else { panic!() };
        assert_eq!(request.id, RequestId::Number(1));
    }

    #[test]
    fn notifications_without_a_session_are_unaddressed_only_with_sessions() {
        let note = json!({"jsonrpc": "2.0", "method": "notifications/initialized"});
        assert!(matches!(posted(note.clone(), None, None, SessionSupport::Enabled), Posted::Unaddressed));
        assert!(matches!(posted(note.clone(), None, None, SessionSupport::Disabled), Posted::Accepted(_)));
        assert!(matches!(posted(note, Some("2026-07-28"), None, SessionSupport::Enabled), Posted::Accepted(_)));
        let batch = json!([{"jsonrpc": "2.0", "id": 1, "method": "ping"}]);
        assert!(matches!(posted(batch, None, Some("s1"), SessionSupport::Enabled), Posted::Batch(_)));
    }

    #[test]
    fn legacy_header_defaults_to_2025_03_26_and_rejects_unknown() {
        assert_eq!(legacy_http_version(None).unwrap(), ProtocolVersion::V2025_03_26);
        assert_eq!(legacy_http_version(Some("2025-06-18")).unwrap(), ProtocolVersion::V2025_06_18);
        assert!(legacy_http_version(Some("2099-01-01")).is_err());
    }
}
