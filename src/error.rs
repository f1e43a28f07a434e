//! One error enum for protocol failures. Each variant knows its JSON-RPC code, its message,
//! its `data`, and the HTTP status it is answered with in each era.

use derive_more::{Display, Error};
use serde_json::{json, Value};

use crate::jsonrpc::{ErrorCode, ErrorObject};
use crate::version::{Era, ProtocolVersion};

/// A failure to serve a request that is the client's or the protocol's business (never a tool's
/// own failure: that is a `CallToolResult` with `isError: true`).
#[derive(Debug, Clone, PartialEq, Display, Error)]
#[non_exhaustive]
pub enum ProtocolError {
    /// `-32700`: the body is not JSON.
    #[display("Parse error: {_0}")]
    Parse(#[error(not(source))] String),
    /// `-32600`: the JSON is not a valid request.
    #[display("Invalid request: {_0}")]
    InvalidRequest(#[error(not(source))] String),
    /// `-32601`: unknown method, or one removed from / not offered in this era.
    #[display("Method not found: {method}")]
    MethodNotFound {
        /// The method asked for.
        method: String,
    },
    /// `-32602`: the params are wrong (unknown tool or prompt, bad arguments, bad cursor, …).
    #[display("{_0}")]
    InvalidParams(#[error(not(source))] String),
    /// `-32602`, HTTP 400: a stateless request lacks a required `_meta` key.
    #[display("Missing required _meta key {_0}")]
    MissingMeta(#[error(not(source))] &'static str),
    /// `-32020`, HTTP 400: a routing header is missing or disagrees with the body.
    #[display("Header mismatch: {_0}")]
    HeaderMismatch(#[error(not(source))] String),
    /// `-32021`, HTTP 400: the request needs client capabilities it did not declare.
    #[display("Missing required client capability")]
    MissingCapability {
        /// A ClientCapabilities object naming what is needed.
        required: Value,
    },
    /// `-32022`, HTTP 400: the protocol version is not one we implement (for this era).
    #[display("Unsupported protocol version: {requested}")]
    UnsupportedVersion {
        /// The version asked for.
        requested: String,
    },
    /// Resource not found: `-32002` up to 2025-11-25, `-32602` from 2026-07-28; `data.uri`.
    #[display("Resource not found: {uri}")]
    ResourceNotFound {
        /// The URI asked for.
        uri: String,
    },
    /// `-32600`, HTTP 400: a JSON-RPC batch under a revision without batches.
    #[display("Invalid request: JSON-RPC batches are not supported in protocol version {_0}")]
    BatchNotAllowed(#[error(not(source))] &'static str),
    /// `-32603`: the server failed.
    #[display("Internal error: {_0}")]
    Internal(#[error(not(source))] String),
}

impl ProtocolError {
    /// The JSON-RPC code for this error in `era`.
    pub fn code(&self, era: Era) -> ErrorCode {
        match self {
            ProtocolError::Parse(_) => ErrorCode::PARSE_ERROR,
            ProtocolError::InvalidRequest(_) | ProtocolError::BatchNotAllowed(_) => ErrorCode::INVALID_REQUEST,
            ProtocolError::MethodNotFound { .. } => ErrorCode::METHOD_NOT_FOUND,
            ProtocolError::InvalidParams(_) | ProtocolError::MissingMeta(_) => ErrorCode::INVALID_PARAMS,
            ProtocolError::HeaderMismatch(_) => ErrorCode::HEADER_MISMATCH,
            ProtocolError::MissingCapability { .. } => ErrorCode::MISSING_CLIENT_CAPABILITY,
            ProtocolError::UnsupportedVersion { .. } => ErrorCode::UNSUPPORTED_PROTOCOL_VERSION,
            ProtocolError::ResourceNotFound { .. } => match era {
                Era::Stateful => ErrorCode::RESOURCE_NOT_FOUND,
                Era::Stateless => ErrorCode::INVALID_PARAMS,
            },
            ProtocolError::Internal(_) => ErrorCode::INTERNAL_ERROR,
        }
    }

    /// The HTTP status this error is answered with in `era`. Errors of the transport contract
    /// (malformed bodies, metadata and header checks) are 400; an unknown method is 404 on the
    /// stateless wire; everything else is an ordinary JSON-RPC answer with 200.
    pub fn http_status(&self, era: Era) -> u16 {
        match self {
            ProtocolError::Parse(_)
            | ProtocolError::InvalidRequest(_)
            | ProtocolError::BatchNotAllowed(_)
            | ProtocolError::MissingMeta(_)
            | ProtocolError::HeaderMismatch(_)
            | ProtocolError::MissingCapability { .. }
            | ProtocolError::UnsupportedVersion { .. } => 400,
            ProtocolError::MethodNotFound { .. } if era == Era::Stateless => 404,
            _ => 200,
        }
    }

    /// The `data` member.
    pub fn data(&self) -> Option<Value> {
        match self {
            ProtocolError::MissingCapability { required } => Some(json!({ "requiredCapabilities": required })),
            ProtocolError::UnsupportedVersion { requested } => Some(json!({
                "supported": ProtocolVersion::all_strings(),
                "requested": requested,
            })),
            ProtocolError::ResourceNotFound { uri } => Some(json!({ "uri": uri })),
            _ => None,
        }
    }

    /// The JSON-RPC error object for `era`.
    pub fn to_error_object(&self, era: Era) -> ErrorObject {
        ErrorObject { code: self.code(era), message: self.to_string(), data: self.data() }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resource_not_found_code_depends_on_era() {
        let e = ProtocolError::ResourceNotFound { uri: "test://x".into() };
        assert_eq!(e.code(Era::Stateful), ErrorCode::RESOURCE_NOT_FOUND);
        assert_eq!(e.code(Era::Stateless), ErrorCode::INVALID_PARAMS);
        assert_eq!(e.data(), Some(json!({"uri": "test://x"})));
    }

    #[test]
    fn unknown_method_is_404_only_when_stateless() {
        let e = ProtocolError::MethodNotFound { method: "ping".into() };
        assert_eq!(e.http_status(Era::Stateless), 404);
        assert_eq!(e.http_status(Era::Stateful), 200);
    }

    #[test]
    fn unsupported_version_lists_what_is_supported() {
        let e = ProtocolError::UnsupportedVersion { requested: "v999.0.0".into() };
        let data = e.data().unwrap();
        assert_eq!(data["requested"], "v999.0.0");
        assert_eq!(data["supported"][0], "2026-07-28");
    }
}
