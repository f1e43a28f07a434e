//! How a client chooses a protocol revision:
//! `server/discover` first unless a handshake revision is pinned; the stateless wire when the
//! server offers 2026-07-28; otherwise `initialize` with the newest handshake revision the server
//! named (or 2025-11-25 when it named none); errors that prove a modern server are never
//! "fallen back" from.

use serde_json::Value;

use crate::jsonrpc::ErrorCode;
use crate::version::{Era, ProtocolVersion};

/// What to do after `server/discover`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum AfterDiscover {
    /// Speak 2026-07-28 statelessly.
    Stateless,
    /// Retry `server/discover` once (the server asked for 2026-07-28 after all).
    RetryDiscover,
    /// Initialize with this handshake revision.
    Initialize(ProtocolVersion),
    /// Give up with this message.
    Fail(String),
}

/// The first revision, in client preference order (newest first), that `offered` lists.
pub fn pick_legacy(offered: &[Value]) -> Option<ProtocolVersion> {
    ProtocolVersion::LEGACY.into_iter().find(|v| offered.iter().any(|o| o.as_str() == Some(v.as_str())))
}

/// Decides from a successful `server/discover` result.
pub fn after_discover_result(result: &Value, pinned_modern: bool) -> AfterDiscover {
    let Some(versions) = result.get("supportedVersions").and_then(Value::as_array) else {
        return AfterDiscover::Fail("server/discover did not return supportedVersions.".into());
    };
    if versions.iter().any(|v| v.as_str() == Some(ProtocolVersion::STATELESS.as_str())) {
        return AfterDiscover::Stateless;
    }
    if pinned_modern {
        return AfterDiscover::Fail("The server does not support 2026-07-28.".into());
    }
    match pick_legacy(versions) {
        Some(version) => AfterDiscover::Initialize(version),
        None => AfterDiscover::Fail("No compatible MCP protocol version.".into()),
    }
}

/// Decides from a JSON-RPC error answering `server/discover`. `retried` says whether discover
/// was already retried once.
pub fn after_discover_error(
    code: ErrorCode,
    data: Option<&Value>,
    http_status: u16,
    pinned: bool,
    retried: bool,
) -> AfterDiscover {
    let fail = || AfterDiscover::Fail(format!("server/discover failed with {code} (HTTP {http_status})"));
    if code == ErrorCode::UNSUPPORTED_PROTOCOL_VERSION {
        let supported = data.and_then(|d| d.get("supported")).and_then(Value::as_array);
        let Some(supported) = supported else { return fail() };
        // The server says it speaks 2026-07-28 after all: ask once more (also when pinned).
        if !retried && supported.iter().any(|v| v.as_str() == Some(ProtocolVersion::STATELESS.as_str())) {
            return AfterDiscover::RetryDiscover;
        }
        if pinned {
            return fail();
        }
        return pick_legacy(supported).map_or_else(fail, AfterDiscover::Initialize);
    }
    if pinned {
        return fail();
    }
    let modern_error = (-32099..=-32020).contains(&code.0);
    let auth = matches!(http_status, 401 | 403);
    let legacy_like = matches!(code.0, -32601 | -32600 | -32000 | -32002) || matches!(http_status, 400 | 404 | 405);
    if auth || modern_error || !legacy_like {
        return fail();
    }
    AfterDiscover::Initialize(ProtocolVersion::LATEST_LEGACY)
}

/// Whether an `initialize` failure means "an old HTTP+SSE server": worth opening the legacy
/// transport on the same URL and retrying once.
pub fn initialize_error_means_http_sse(code: ErrorCode, http_status: u16, pinned: bool) -> bool {
    !pinned && matches!(http_status, 400 | 404 | 405) && !(-32099..=-32020).contains(&code.0)
}

/// Checks the revision an `initialize` result names.
///
/// # Errors
/// The message to fail with when it is not a handshake revision (or not the pinned one).
pub fn check_negotiated(answered: &str, pin: Option<ProtocolVersion>) -> Result<ProtocolVersion, String> {
    match ProtocolVersion::parse(answered) {
        Some(v) if v.era() == Era::Stateful && pin.is_none_or(|p| p == v) => Ok(v),
        _ => Err(format!("MCP server negotiated an unsupported protocol version: {answered}")),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn discover_results_choose_the_wire() {
        assert_eq!(
            after_discover_result(&json!({"supportedVersions":["2026-07-28","2025-11-25"]}), false),
            AfterDiscover::Stateless
        );
        assert_eq!(
            after_discover_result(&json!({"supportedVersions":["2025-03-26","2025-06-18"]}), false),
            AfterDiscover::Initialize(ProtocolVersion::V2025_06_18)
        );
        assert!(matches!(
            after_discover_result(&json!({"supportedVersions":["2025-06-18"]}), true),
            AfterDiscover::Fail(_)
        ));
        assert!(
            matches!(after_discover_result(&json!({}), false), AfterDiscover::Fail(m) if m.contains("supportedVersions"))
        );
    }

    #[test]
    fn discover_errors_fall_back_only_when_the_server_looks_old() {
        let legacy = after_discover_error(ErrorCode::METHOD_NOT_FOUND, None, 200, false, false);
        assert_eq!(legacy, AfterDiscover::Initialize(ProtocolVersion::V2025_11_25));
        assert_eq!(
            after_discover_error(ErrorCode(-32603), None, 404, false, false),
            AfterDiscover::Initialize(ProtocolVersion::V2025_11_25)
        );
        for (code, status) in [(-32601, 401), (-32001, 401), (-32020, 400), (-32021, 400), (-32603, 500)] {
            assert!(
                matches!(after_discover_error(ErrorCode(code), None, status, false, false), AfterDiscover::Fail(_)),
                "{code}/{status}"
            );
        }
        assert!(matches!(
            after_discover_error(ErrorCode::METHOD_NOT_FOUND, None, 200, true, false),
            AfterDiscover::Fail(_)
        ));
        let data = json!({"supported": ["2025-11-25"]});
        assert_eq!(
            after_discover_error(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, Some(&data), 400, false, false),
            AfterDiscover::Initialize(ProtocolVersion::V2025_11_25)
        );
        let modern = json!({"supported": ["2026-07-28"]});
        assert_eq!(
            after_discover_error(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, Some(&modern), 400, false, false),
            AfterDiscover::RetryDiscover
        );
        assert!(matches!(
            after_discover_error(ErrorCode::UNSUPPORTED_PROTOCOL_VERSION, Some(&modern), 400, false, true),
            AfterDiscover::Fail(_)
        ));
    }

    #[test]
    fn negotiated_versions_are_checked() {
        assert_eq!(check_negotiated("2025-03-26", None), Ok(ProtocolVersion::V2025_03_26));
        assert!(check_negotiated("2026-07-28", None).is_err());
        assert!(check_negotiated("2025-06-18", Some(ProtocolVersion::V2025_11_25)).is_err());
        assert!(initialize_error_means_http_sse(ErrorCode(-32601), 405, false));
        assert!(!initialize_error_means_http_sse(ErrorCode(-32020), 400, false));
    }
}
