//! The client's server configuration: which MCP server to talk to, and how.
//!
//! A server is described by a small JSON document, stored exactly as the user (or an agent)
//! wrote it. [`ConfigDocument`] keeps that document, checks it, and turns it into the resolved
//! [`ServerConfig`] the client actors connect with. Edits go through [`ConfigDocument::patch`],
//! which changes one field of the stored JSON in place, so unknown fields, vendor extensions and
//! key order survive a round trip. [`ServersFile`] reads the multi-server `mcpServers` file that
//! desktop MCP hosts use, resolving every entry with the same rules, and says of each entry
//! whether it is an HTTP server or a stdio one ([`ServerEntry`]).
//!
//! Nothing here does I/O; reading files, starting processes and connecting are the runtime's
//! business, and so are per-record settings such as `enabled` (only the timeout clamp lives
//! here, see [`timeout_seconds`]).
//!
//! # Layout
//!
//! - `document`: [`ConfigDocument`], the stored single-server document;
//! - `patch`: [`Field`] and [`ConfigDocument::patch`], the edits in place;
//! - `resolve`: [`ServerConfig`], the rules that read and check one entry, and the one rule
//!   that says which entries are stdio servers;
//! - `servers`: [`ServersFile`], [`ServerEntry`] and [`StdioCommand`], the multi-server file;
//! - `transport`: [`Transport`], the two HTTP transports;
//! - `oauth`: [`ClientOAuthSettings`], an entry's OAuth client settings (`oauth`);
//! - `error`: [`ConfigError`], one fixed message per failure.
//!
//! # The two shapes of a document
//!
//! Both hold exactly one server:
//!
//! - **Flat**: the fields sit at the root.
//!   `{"url":"https://h/mcp","type":"streamableHttp","headers":{"Authorization":"Bearer k"}}`
//! - **Nested** (the desktop-host style): `{"mcpServers":{"myserver":{…same fields…}}}`. The
//!   single key is the *server key*, its value the *node*. In the flat shape the node is the root.
//!
//! # Which entries are stdio servers
//!
//! One rule, used by the client, the command line and the gateway alike: an explicit `type`
//! (else `transport`) decides — `stdio` (any case, white space ignored) is a stdio server, any
//! other value is an HTTP one (and must be a transport [`Transport::parse`] knows); without one,
//! an entry with a `command` or `args` key is a stdio server, any other an HTTP server. A stdio
//! server has no HTTP endpoint, so resolving it is [`ConfigError::Stdio`]; the runtime starts it
//! as a child process from its [`StdioCommand`] (`command`, `args`, `env`, `cwd`).
//!
//! # How each field is resolved
//!
//! | field | read from | notes |
//! |---|---|---|
//! | name | `node.name`, else the server key, else `MCP Server` | display only |
//! | endpoint | `node.url`, else `root.url`; likewise `baseUrl` | both set → they must be equal; `url` wins |
//! | transport | `node.type`, else `node.transport` | see [`Transport::parse`]; `stdio` has no endpoint |
//! | headers | `node.headers`, else (nested, node has no `headers` key) `root.headers` | all or nothing, never merged |
//! | pin | `node.protocolVersion`, else `root.protocolVersion`, else an `MCP-Protocol-Version` header | must agree with that header |
//! | oauth | `node.oauth` | see [`ClientOAuthSettings`]; never inherited from the root |
//!
//! String fields that are missing, `null` or blank count as absent; any other non-string value
//! is refused ([`ConfigError::FieldNotString`]). `mcpServers` and `headers`, when present, must
//! be objects (`null` included).
//!
//! # Headers
//!
//! Configured headers are sent verbatim, never encoded: names must be HTTP tokens and values
//! visible ASCII, spaces or tabs. This means non-ASCII values cannot be configured (only the
//! generated `Mcp-*` routing headers are Base64-encoded); a value that needs them must be
//! encoded by the user in whatever way the server expects. Names are compared
//! case-insensitively: when a name repeats, the later entry wins and the earlier is dropped. The
//! `Authorization` value is taken verbatim (no `Bearer ` is added).
//!
//! # Checks, in order
//!
//! 1. the document is a JSON object; `mcpServers`, if present, an object with exactly one
//!    server whose value is an object; text fields are strings (checked as each is read);
//! 2. the transport is known (and not stdio);
//! 3. `url` and `baseUrl` agree;
//! 4. `headers` is an object of strings;
//! 5. `protocolVersion` agrees with a configured `MCP-Protocol-Version` header;
//! 6. the endpoint is an `http://` or `https://` URL with a host (and a port from 1 to 65535);
//! 7. every header name and value is legal HTTP;
//! 8. the pin is one of the five revisions;
//! 9. a `2026-07-28` pin uses Streamable HTTP;
//! 10. `oauth`, when present, is a valid [`ClientOAuthSettings`] (see the `oauth` module: its shape,
//!     and every rule it is checked against).
//!
//! Each failure is one [`ConfigError`] variant with a fixed, user-facing message.

mod document;
mod error;
mod fields;
#[cfg(test)]
mod fixtures;
mod oauth;
mod patch;
mod resolve;
mod servers;
mod transport;

pub use document::ConfigDocument;
pub use error::ConfigError;
pub use oauth::{ClientOAuthSettings, OAuthGrant, SecretSource, DEFAULT_OAUTH_ALGORITHM, OAUTH_ALGORITHMS};
pub use patch::Field;
pub use resolve::{ServerConfig, DEFAULT_SERVER_NAME};
pub use servers::{Prefixing, ServerEntry, ServersFile, StdioCommand};
pub use transport::Transport;

/// The per-server timeout when none (or a non-number) is given, in seconds.
pub const DEFAULT_TIMEOUT_SECONDS: u64 = 30;

/// The shortest per-server timeout, in seconds.
pub const MIN_TIMEOUT_SECONDS: u64 = 5;

/// The longest per-server timeout, in seconds.
pub const MAX_TIMEOUT_SECONDS: u64 = 300;
/// The per-server timeout in seconds: [`DEFAULT_TIMEOUT_SECONDS`] when absent, else clamped to
/// [`MIN_TIMEOUT_SECONDS`]`..=`[`MAX_TIMEOUT_SECONDS`].
pub fn timeout_seconds(value: Option<i64>) -> u64 {
    match value {
        None => DEFAULT_TIMEOUT_SECONDS,
        Some(v) => v.clamp(MIN_TIMEOUT_SECONDS as i64, MAX_TIMEOUT_SECONDS as i64) as u64,
    }
}

/// The per-server timeout typed into a form: a whole number (surrounding white space ignored)
/// is clamped like [`timeout_seconds`]; anything else gives [`DEFAULT_TIMEOUT_SECONDS`].
pub fn parse_timeout_seconds(text: &str) -> u64 {
    let text = text.trim();
    match text.parse::<i64>() {
        Ok(v) => timeout_seconds(Some(v)),
        // Digits too large for an i64 are still "a very long timeout", not "no timeout given".
        Err(_) => {
            let (negative, digits) = match text.strip_prefix('-') {
                Some(rest) => (true, rest),
                None => (false, text.strip_prefix('+').unwrap_or(text)),
            };
            if digits.is_empty() || !digits.bytes().all(|b| b.is_ascii_digit()) {
                DEFAULT_TIMEOUT_SECONDS
            } else if negative {
                MIN_TIMEOUT_SECONDS
            } else {
                MAX_TIMEOUT_SECONDS
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn timeout_defaults_to_30_and_clamps_to_5_through_300() {
        assert_eq!(timeout_seconds(None), 30);
        assert_eq!(timeout_seconds(Some(60)), 60);
        assert_eq!(timeout_seconds(Some(1)), 5);
        assert_eq!(timeout_seconds(Some(-7)), 5);
        assert_eq!(timeout_seconds(Some(5)), 5);
        assert_eq!(timeout_seconds(Some(300)), 300);
        assert_eq!(timeout_seconds(Some(i64::MAX)), 300);
        assert_eq!(parse_timeout_seconds(" 45 "), 45);
        assert_eq!(parse_timeout_seconds("2"), 5);
        assert_eq!(parse_timeout_seconds("abc"), 30);
        assert_eq!(parse_timeout_seconds(""), 30);
        assert_eq!(parse_timeout_seconds("12.5"), 30);
        assert_eq!(parse_timeout_seconds("99999999999999999999999"), 300);
        assert_eq!(parse_timeout_seconds("-99999999999999999999999"), 5);
        assert_eq!(parse_timeout_seconds("+-1"), 30);
        assert_eq!(parse_timeout_seconds("+45"), 45);
        assert_eq!(parse_timeout_seconds("-"), 30);
    }
}
