//! The requests the bench sends: the handshake revision, the bodies, and the request bytes.

#[path = "../support/http1.rs"]
mod http1;

pub(crate) use http1::http_request;

/// The handshake revision the sessions speak.
pub(crate) const PROTOCOL_VERSION: &str = "2025-11-25";
pub(crate) const INITIALIZE_BODY: &str = r#"{"jsonrpc":"2.0","id":0,"method":"initialize","params":{"protocolVersion":"2025-11-25","capabilities":{},"clientInfo":{"name":"bench","version":"1"}}}"#;
pub(crate) const INITIALIZED_BODY: &str = r#"{"jsonrpc":"2.0","method":"notifications/initialized"}"#;
/// A call in a live session.
pub(crate) const CALL_BODY: &str =
    r#"{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"hello"}}}"#;
