//! How the client commands (`mcpd tools`, `call`, `task`) and `mcpd login`/`logout` fail: an
//! exit code and one line for stderr. A file of its own because every one of those commands
//! fails the same way, and none of them is the other's home.

use mcpd_actors::client::oauth::AuthError;
use mcpd_actors::client::ClientError;

/// A failed command: exit code and one line.
#[derive(Debug)]
pub(crate) struct Failure {
    /// The exit code.
    pub(crate) code: u8,
    /// What went wrong.
    pub(crate) message: String,
}

/// A failure with exit code 2.
pub(crate) fn failure(message: impl Into<String>) -> Failure {
    Failure { code: 2, message: message.into() }
}

/// A client error as a failure (exit code 2). An OAuth login only a person can give reads
/// `URL needs authorization: run: mcpd login URL`.
pub(crate) fn client_failure(error: ClientError) -> Failure {
    match error {
        ClientError::Auth(AuthError::LoginRequired { url }) => {
            failure(format!("{url} needs authorization: run: mcpd login {url}"))
        }
        other => failure(other.to_string()),
    }
}
