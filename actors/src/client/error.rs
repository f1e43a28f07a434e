//! What can go wrong talking to a remote MCP server. Everything here is a transport or protocol
//! failure; a tool's own failure is a successful call whose result has `is_error: true`.

use derive_more::{Display, Error};
use serde_json::Value;

/// A failure of a client request.
#[derive(Debug, Clone, PartialEq, Display, Error)]
#[non_exhaustive]
pub enum ClientError {
    /// The configuration cannot be used.
    #[display("{_0}")]
    Config(#[error(not(source))] String),
    /// The server could not be reached or the connection broke.
    #[display("transport error: {_0}")]
    Transport(#[error(not(source))] String),
    /// The server answered with an HTTP error status and a body that holds no JSON-RPC error
    /// (a proxy's error page, a bare `404`). The message reads like the transport error it
    /// is, naming the status.
    #[display("transport error: HTTP {status}: {body}")]
    Http {
        /// The HTTP status.
        status: u16,
        /// The start of the body (at most 1000 characters), as text.
        body: String,
    },
    /// The server answered with a JSON-RPC error.
    #[display("{message} ({code}, HTTP {http_status})")]
    Rpc {
        /// The JSON-RPC code.
        code: i32,
        /// The message.
        message: String,
        /// Structured detail.
        data: Option<Value>,
        /// The HTTP status it came with.
        http_status: u16,
    },
    /// The server answered something that is not valid MCP.
    #[display("protocol error: {_0}")]
    Protocol(#[error(not(source))] String),
    /// No answer within the time limit.
    #[display("timed out after {_0} s")]
    Timeout(#[error(not(source))] u64),
    /// The stored configuration changed while the request ran.
    #[display("MCP configuration changed while fetching tools. Fetch again using the saved configuration.")]
    ConfigChanged,
    /// No such server is configured.
    #[display("unknown MCP server {_0}")]
    UnknownServer(#[error(not(source))] String),
    /// The connection was invalidated while the request was waiting.
    #[display("the connection was closed")]
    Closed,
    /// The caller cancelled the request.
    #[display("the request was cancelled")]
    Cancelled,
}

impl ClientError {
    /// A JSON-RPC error object as a client error.
    pub fn from_error_object(error: &Value, http_status: u16) -> ClientError {
        ClientError::Rpc {
            code: error.get("code").and_then(Value::as_i64).unwrap_or(0) as i32,
            message: error.get("message").and_then(Value::as_str).unwrap_or("error without a message").to_owned(),
            data: error.get("data").cloned(),
            http_status,
        }
    }
}
