//! Why the client could not get or keep authorization ([`AuthError`]): what every part of the
//! flow answers with.

use derive_more::{Display, Error};

/// Why the client could not get (or keep) authorization.
#[derive(Debug, Clone, PartialEq, Eq, Display, Error)]
#[non_exhaustive]
pub enum AuthError {
    /// Only a person can fix this: no usable credentials and no [`UserAgent`](super::UserAgent).
    #[display("{url} needs authorization: run: mcpd login {url}")]
    LoginRequired {
        /// The server's MCP endpoint.
        url: String,
    },
    /// Discovery failed or a document was unacceptable (a `resource` or `issuer` mismatch, a
    /// missing endpoint, a malformed document).
    #[display("authorization discovery failed: {_0}")]
    Discovery(#[error(not(source))] String),
    /// Registration, authorization or the token request failed.
    #[display("authorization failed: {_0}")]
    Flow(#[error(not(source))] String),
    /// The server kept refusing (`403 insufficient_scope`) after the allowed attempts.
    #[display("authorization failed: still {_0} after re-authorizing")]
    Refused(#[error(not(source))] String),
}
