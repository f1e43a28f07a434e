//! OAuth 2.1 for the client: what a link does when a remote MCP server answers `401` or
//! `403 insufficient_scope` (the MCP authorization specification: RFC 9728 protected-resource
//! metadata, RFC 8414 / OpenID discovery, RFC 7591 dynamic registration or a Client ID Metadata
//! Document, PKCE S256, RFC 8707 resource indicators, RFC 9207 `iss`), and the
//! `client_credentials` grant for machine-to-machine remotes.
//!
//! # The pieces a caller plugs in
//!
//! - [`CredentialStore`]: where registrations and tokens live, per (resource, issuer);
//!   [`MemoryStore`] keeps them for the life of the process.
//! - [`UserAgent`]: who approves an authorization request. `None` in [`OAuthConfig`] means no
//!   person is present (the gateway, `mcpd call`): a `401` only a person can fix is
//!   [`AuthError::LoginRequired`], never a retry loop.
//! - [`OAuthConfig`]: the above, the client's registration and the grant.
//!
//! [`HeadlessAgent`] approves by fetching the authorization URL (servers that approve without a
//! person: tests, the conformance suite).
//!
//! # Layout
//!
//! - `authorizer`: a link's OAuth state and the one authorization under way (shared by
//!   concurrent requests);
//! - `discover`: protected-resource and authorization-server metadata;
//! - `grant`: registration and the token requests (the `oauth2` crate);
//! - `http`: HTTP to authorization servers (time limit, body cap; the `oauth2` HTTP client);
//! - `headless`: [`HeadlessAgent`];
//! - `credentials`, `user_agent`, `config`, `error`: the types above, each in a file of its own.
//!
//! The rules without I/O are the core's (`mcpd::client::oauth`).
//!
//! For people and the gateway: [`FileStore`] keeps credentials in a file (mode 0600, see
//! `file_store`), and [`LoopbackAgent`] is the user agent of `mcpd login` (a browser and a
//! loopback redirect listener, see `loopback`).

pub(crate) mod authorizer;
mod config;
mod credentials;
mod discover;
mod error;
mod grant;
mod headless;
mod http;
mod user_agent;

pub mod file_store;
pub mod loopback;

pub use config::{Grant, OAuthConfig, Registration};
pub use credentials::{CredentialStore, Credentials, MemoryStore};
pub use error::AuthError;
pub use file_store::{default_credentials_path, FileStore, MAX_CREDENTIALS_FILE_BYTES};
pub use headless::HeadlessAgent;
pub use loopback::LoopbackAgent;
pub use user_agent::{Callback, UserAgent};
