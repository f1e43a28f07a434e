//! Which era a request belongs to, and the checks of the 2026-07-28 stateless wire, in the order
//! the specification and the conformance suite expect them.

use std::sync::Arc;

use serde_json::{Map, Value};

use crate::context::LogLevel;
use crate::error::ProtocolError;
use crate::headers;
use crate::jsonrpc::Request;
use crate::model::meta_keys;
use crate::version::{Era, ProtocolVersion};

/// The routing headers of one HTTP request, already extracted by the transport (names are
/// case-insensitive on the wire; values are raw, not yet trimmed or decoded).
#[derive(Debug, Clone, Copy, Default)]
pub struct RoutingHeaders<'a> {
    /// `MCP-Protocol-Version`.
    pub protocol_version: Option<&'a str>,
    /// `Mcp-Method`.
    pub method: Option<&'a str>,
    /// `Mcp-Name`.
    pub name: Option<&'a str>,
}

/// Methods of the stateless wire (client to server).
pub const STATELESS_METHODS: &[&str] = &[
    "server/discover",
    "subscriptions/listen",
    "tools/list",
    "tools/call",
    "prompts/list",
    "prompts/get",
    "resources/list",
    "resources/templates/list",
    "resources/read",
    "completion/complete",
];

fn meta_of(params: Option<&Map<String, Value>>) -> Option<&Map<String, Value>> {
    params.and_then(|p| p.get("_meta")).and_then(Value::as_object)
}

/// Chooses the era of an HTTP message that carries no session id: stateless when its `_meta`
/// carries the 2026-07-28 request metadata or its `MCP-Protocol-Version` header names
/// 2026-07-28; otherwise the handshake era.
pub fn http_era(params: Option<&Map<String, Value>>, header_version: Option<&str>) -> Era {
    let has_modern_meta = meta_of(params)
        .is_some_and(|m| m.contains_key(meta_keys::PROTOCOL_VERSION) || m.contains_key(meta_keys::CLIENT_CAPABILITIES));
    let header_is_stateless = header_version.map(str::trim) == Some(ProtocolVersion::STATELESS.as_str());
    if has_modern_meta || header_is_stateless {
        Era::Stateless
    } else {
        Era::Stateful
    }
}

/// Chooses the era of a stdio message: stateless when its `_meta` names a protocol version.
pub fn stdio_era(params: Option<&Map<String, Value>>) -> Era {
    if meta_of(params).is_some_and(|m| m.contains_key(meta_keys::PROTOCOL_VERSION)) {
        Era::Stateless
    } else {
        Era::Stateful
    }
}

/// The revision of a handshake-era HTTP request from its `MCP-Protocol-Version` header:
/// absent means 2025-03-26.
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

/// What a valid stateless request declared about itself.
#[derive(Debug, Clone)]
pub struct StatelessRequest {
    /// Its declared client capabilities.
    pub client_capabilities: Arc<Value>,
    /// The log level it asked for, if any.
    pub log_level: Option<LogLevel>,
}

/// Validates a stateless request. Order: required `_meta` keys (`-32602`); then, over HTTP,
/// `MCP-Protocol-Version` vs `_meta`, `Mcp-Method` vs `method`, `Mcp-Name` vs `params.name` /
/// `params.uri` (`-32020`); then the version itself (`-32022`); then the method (`-32601`).
///
/// # Errors
/// The first failing check, as a [`ProtocolError`].
pub fn validate_stateless(
    request: &Request,
    headers: Option<&RoutingHeaders<'_>>,
) -> Result<StatelessRequest, ProtocolError> {
    let params = request.params.as_ref();
    let meta = meta_of(params).ok_or(ProtocolError::MissingMeta("_meta"))?;
    let version = meta
        .get(meta_keys::PROTOCOL_VERSION)
        .and_then(Value::as_str)
        .ok_or(ProtocolError::MissingMeta(meta_keys::PROTOCOL_VERSION))?;
    let capabilities = match meta.get(meta_keys::CLIENT_CAPABILITIES) {
        Some(c @ Value::Object(_)) => c.clone(),
        _ => return Err(ProtocolError::MissingMeta(meta_keys::CLIENT_CAPABILITIES)),
    };
    if let Some(headers) = headers {
        check_headers(request, version, headers)?;
    }
    if ProtocolVersion::parse(version) != Some(ProtocolVersion::STATELESS) {
        return Err(ProtocolError::UnsupportedVersion { requested: version.to_owned() });
    }
    if !STATELESS_METHODS.contains(&request.method.as_str()) {
        return Err(ProtocolError::MethodNotFound { method: request.method.clone() });
    }
    let log_level = match meta.get(meta_keys::LOG_LEVEL) {
        None | Some(Value::Null) => None,
        Some(Value::String(s)) => {
            Some(LogLevel::parse(s).ok_or_else(|| ProtocolError::InvalidParams(format!("unknown log level {s:?}")))?)
        }
        Some(other) => return Err(ProtocolError::InvalidParams(format!("log level must be a string, got {other}"))),
    };
    Ok(StatelessRequest { client_capabilities: Arc::new(capabilities), log_level })
}

fn check_headers(request: &Request, version: &str, headers: &RoutingHeaders<'_>) -> Result<(), ProtocolError> {
    match headers.protocol_version.map(str::trim) {
        Some(h) if h == version => {}
        Some(h) => {
            return Err(ProtocolError::HeaderMismatch(format!(
                "MCP-Protocol-Version header {h:?} does not match _meta protocolVersion {version:?}"
            )))
        }
        None => return Err(ProtocolError::HeaderMismatch("missing MCP-Protocol-Version header".into())),
    }
    match headers.method.map(str::trim) {
        Some(m) if m == request.method => {}
        Some(m) => {
            return Err(ProtocolError::HeaderMismatch(format!(
                "Mcp-Method header {m:?} does not match method {:?}",
                request.method
            )))
        }
        None => return Err(ProtocolError::HeaderMismatch("missing Mcp-Method header".into())),
    }
    let name_field = match request.method.as_str() {
        "tools/call" | "prompts/get" => "name",
        "resources/read" => "uri",
        _ => return Ok(()),
    };
    let expected = request.params.as_ref().and_then(|p| p.get(name_field)).and_then(Value::as_str);
    let Some(raw) = headers.name else {
        return Err(ProtocolError::HeaderMismatch("missing Mcp-Name header".into()));
    };
    let decoded = headers::decode_value(raw).map_err(|e| ProtocolError::HeaderMismatch(format!("Mcp-Name: {e}")))?;
    if Some(decoded.as_str()) != expected {
        return Err(ProtocolError::HeaderMismatch(format!(
            "Mcp-Name header {decoded:?} does not match params.{name_field}"
        )));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::jsonrpc::RequestId;
    use serde_json::json;

    fn request(method: &str, params: Value) -> Request {
        Request { id: RequestId::Number(1), method: method.into(), params: params.as_object().cloned() }
    }

    fn meta(version: &str) -> Value {
        json!({"io.modelcontextprotocol/protocolVersion": version, "io.modelcontextprotocol/clientCapabilities": {}})
    }

    fn headers<'a>(version: &'a str, method: &'a str, name: Option<&'a str>) -> RoutingHeaders<'a> {
        RoutingHeaders { protocol_version: Some(version), method: Some(method), name }
    }

    #[test]
    fn era_selection_follows_meta_and_header() {
        let modern = json!({"_meta": meta("2026-07-28")});
        assert_eq!(http_era(modern.as_object(), None), Era::Stateless);
        assert_eq!(http_era(None, Some("2026-07-28")), Era::Stateless);
        assert_eq!(http_era(None, Some("2025-11-25")), Era::Stateful);
        let progress_only = json!({"_meta": {"progressToken": 1}});
        assert_eq!(http_era(progress_only.as_object(), None), Era::Stateful);
    }

    #[test]
    fn missing_meta_beats_header_checks() {
        let r = request("server/discover", json!({}));
        let h = headers("2026-07-28", "wrong", None);
        assert_eq!(validate_stateless(&r, Some(&h)).unwrap_err(), ProtocolError::MissingMeta("_meta"));
        let r = request("server/discover", json!({"_meta": {"io.modelcontextprotocol/protocolVersion": "2026-07-28"}}));
        assert!(matches!(validate_stateless(&r, Some(&h)), Err(ProtocolError::MissingMeta(_))));
    }

    #[test]
    fn header_mismatch_beats_unsupported_version() {
        let r = request("server/discover", json!({"_meta": meta("v999.0.0")}));
        let err = validate_stateless(&r, Some(&headers("2026-07-28", "server/discover", None))).unwrap_err();
        assert!(matches!(err, ProtocolError::HeaderMismatch(_)));
        let err = validate_stateless(&r, Some(&headers("v999.0.0", "server/discover", None))).unwrap_err();
        assert_eq!(err, ProtocolError::UnsupportedVersion { requested: "v999.0.0".into() });
    }

    #[test]
    fn removed_methods_are_not_found_after_version_check() {
        let r = request("ping", json!({"_meta": meta("2026-07-28")}));
        let err = validate_stateless(&r, Some(&headers("2026-07-28", "ping", None))).unwrap_err();
        assert!(matches!(err, ProtocolError::MethodNotFound { .. }));
    }

    #[test]
    fn mcp_name_is_decoded_and_compared() {
        let r = request("tools/call", json!({"name": "Hello, 世界", "_meta": meta("2026-07-28")}));
        let ok = headers("2026-07-28", "tools/call", Some("=?base64?SGVsbG8sIOS4lueVjA==?="));
        assert!(validate_stateless(&r, Some(&ok)).is_ok());
        let bad = headers("2026-07-28", "tools/call", Some("other"));
        assert!(matches!(validate_stateless(&r, Some(&bad)), Err(ProtocolError::HeaderMismatch(_))));
        let missing = headers("2026-07-28", "tools/call", None);
        assert!(matches!(validate_stateless(&r, Some(&missing)), Err(ProtocolError::HeaderMismatch(_))));
        assert!(validate_stateless(&r, None).is_ok(), "stdio has no headers to check");
    }

    #[test]
    fn legacy_header_defaults_to_2025_03_26_and_rejects_unknown() {
        assert_eq!(legacy_http_version(None).unwrap(), ProtocolVersion::V2025_03_26);
        assert_eq!(legacy_http_version(Some("2025-06-18")).unwrap(), ProtocolVersion::V2025_06_18);
        assert!(legacy_http_version(Some("2099-01-01")).is_err());
    }
}
