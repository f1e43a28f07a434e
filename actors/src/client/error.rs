//! What can go wrong talking to a remote MCP server. Everything here is a transport or protocol
//! failure; a tool's own failure is a successful call whose result has `is_error: true`.

use derive_more::{Display, Error};
use mcpd::client::list::ListError;
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
    /// A tool call the server made a task of (the tasks extension) ended without a result:
    /// the task was cancelled, the server no longer knows it (expired, or unknown), or it did
    /// not finish within the task wait limit (then the client cancelled it). A task that
    /// failed is the [`ClientError::Rpc`] it failed with.
    #[display("task {task_id} {reason}")]
    Task {
        /// The task's id.
        task_id: String,
        /// What happened, as a phrase (`was cancelled`, …).
        reason: String,
    },
    /// A listing went past one of its bounds (pages or entries; see
    /// [`ListLimits`](mcpd::client::list::ListLimits)).
    #[display("listing stopped: {_0}")]
    Limit(#[error(not(source))] String),
    /// The server wants OAuth authorization the client could not get (see
    /// [`AuthError::LoginRequired`](super::oauth::AuthError::LoginRequired) for the case only a
    /// person can fix).
    #[display("{_0}")]
    Auth(super::oauth::AuthError),
    /// The client failed on a bug of its own (a panic, contained to this request and logged with
    /// its location).
    #[display("internal error (a bug in mcpd): {_0}")]
    Internal(#[error(not(source))] String),
}

/// How much of a server's error message is kept, in characters (a message is for people; a
/// server that sends megabytes of it does not get them printed).
const MESSAGE_CHARS: usize = 1000;

/// `message`, cut after [`MESSAGE_CHARS`] characters.
fn excerpt(message: &str) -> String {
    match message.char_indices().nth(MESSAGE_CHARS) {
        Some((cut, _)) => format!("{}…", message.get(..cut).unwrap_or_default()),
        None => message.to_owned(),
    }
}

impl From<ListError> for ClientError {
    fn from(error: ListError) -> Self {
        match error {
            ListError::TooManyPages { .. } | ListError::TooManyItems { .. } => ClientError::Limit(error.to_string()),
            _ => ClientError::Protocol(error.to_string()),
        }
    }
}

impl From<crate::panics::Panic> for ClientError {
    fn from(panic: crate::panics::Panic) -> Self {
        ClientError::Internal(panic.to_string())
    }
}

impl ClientError {
    /// Every [`ClientError::kind`], for metrics that list them all.
    pub const KINDS: [&'static str; 11] =
        ["timeout", "connect", "http", "auth", "rpc", "protocol", "cancelled", "closed", "config", "task", "internal"];

    /// The error's kind, a bounded metrics label: `timeout`, `connect` (the transport failed),
    /// `http` (an HTTP error status), `auth` (`401`/`403`, or the OAuth flow failed), `rpc` (the
    /// server's JSON-RPC error), `protocol` (an answer of the wrong shape, a listing past its
    /// bounds), `cancelled`, `closed`, `config`, `task`, `internal`.
    pub fn kind(&self) -> &'static str {
        match self {
            ClientError::Timeout(_) => "timeout",
            ClientError::Transport(_) => "connect",
            _ if self.is_unauthorized() => "auth",
            ClientError::Auth(_) => "auth",
            ClientError::Http { .. } => "http",
            ClientError::Rpc { .. } => "rpc",
            ClientError::Protocol(_) | ClientError::Limit(_) => "protocol",
            ClientError::Cancelled => "cancelled",
            ClientError::Closed => "closed",
            ClientError::Config(_) | ClientError::ConfigChanged | ClientError::UnknownServer(_) => "config",
            ClientError::Task { .. } => "task",
            ClientError::Internal(_) => "internal",
        }
    }

    /// Whether the server refused the request as unauthorized (`401`) or forbidden (`403`),
    /// whatever the body said: a JSON-RPC error, an OAuth error (`{"error": "invalid_token"}`),
    /// or nothing.
    pub fn is_unauthorized(&self) -> bool {
        matches!(self, ClientError::Http { status: 401 | 403, .. } | ClientError::Rpc { http_status: 401 | 403, .. })
    }

    /// A JSON-RPC error object as a client error (its message cut after 1000 characters).
    pub fn from_error_object(error: &Value, http_status: u16) -> ClientError {
        ClientError::Rpc {
            code: error.get("code").and_then(Value::as_i64).unwrap_or(0) as i32,
            message: excerpt(error.get("message").and_then(Value::as_str).unwrap_or("error without a message")),
            data: error.get("data").cloned(),
            http_status,
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn a_servers_error_message_is_kept_to_1000_characters() {
        let long = json!({"code": -32000, "message": "é".repeat(5000)});
        let ClientError::Rpc { code, message, .. } = ClientError::from_error_object(&long, 200) else { panic!() };
        assert_eq!(code, -32000);
        assert_eq!(message, format!("{}…", "é".repeat(1000)));
        let short = json!({"code": 1, "message": "short"});
        assert!(
            matches!(ClientError::from_error_object(&short, 400), ClientError::Rpc { message, .. } if message == "short")
        );
        let limit = ListError::TooManyPages { method: "tools/list", limit: 3 };
        assert_eq!(
            ClientError::from(limit).to_string(),
            "listing stopped: tools/list returned more than 3 pages; stopped there (the listing's page limit)"
        );
    }
}
