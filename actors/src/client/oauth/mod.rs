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
//! - `headless`: [`HeadlessAgent`].
//!
//! The rules without I/O are the core's (`mcpd::client::oauth`).
//!
//! For people and the gateway: [`FileStore`] keeps credentials in a file (mode 0600, see
//! `file_store`), and [`LoopbackAgent`] is the user agent of `mcpd login` (a browser and a
//! loopback redirect listener, see `loopback`).

use std::collections::HashMap;
use std::fmt;
use std::sync::{Arc, Mutex};

use derive_more::{Display, Error};
use futures_util::future::LocalBoxFuture;
use serde::{Deserialize, Serialize};

pub(crate) mod authorizer;
mod discover;
mod grant;
mod headless;
mod http;

pub mod file_store;
pub mod loopback;

pub use file_store::{default_credentials_path, FileStore, MAX_CREDENTIALS_FILE_BYTES};
pub use headless::HeadlessAgent;
pub use loopback::LoopbackAgent;

/// What the client holds for one protected resource at one authorization server: its
/// registration there, and its tokens. Never logged (its `Debug` hides the secrets).
#[derive(Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Credentials {
    /// The protected resource (the `resource` of its RFC 9728 metadata, canonical).
    pub resource: String,
    /// The authorization server's `issuer`, exactly as its metadata says.
    pub issuer: String,
    /// The client id this issuer knows us by.
    pub client_id: String,
    /// The client secret, when the issuer gave one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub client_secret: Option<String>,
    /// The redirect URI registered with the issuer (authorization-code clients).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub redirect_uri: Option<String>,
    /// The token endpoint authentication method agreed at registration
    /// (`client_secret_basic`, `client_secret_post`, `none`, `private_key_jwt`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_endpoint_auth_method: Option<String>,
    /// The current access token.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub access_token: Option<String>,
    /// The refresh token, when one was issued.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub refresh_token: Option<String>,
    /// When the access token expires, in seconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<u64>,
    /// The scopes granted (space-separated), as the token response said or as asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
}

impl fmt::Debug for Credentials {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let hidden = |present: bool| if present { "<hidden>" } else { "<none>" };
        f.debug_struct("Credentials")
            .field("resource", &self.resource)
            .field("issuer", &self.issuer)
            .field("client_id", &self.client_id)
            .field("client_secret", &hidden(self.client_secret.is_some()))
            .field("redirect_uri", &self.redirect_uri)
            .field("token_endpoint_auth_method", &self.token_endpoint_auth_method)
            .field("access_token", &hidden(self.access_token.is_some()))
            .field("refresh_token", &hidden(self.refresh_token.is_some()))
            .field("expires_at", &self.expires_at)
            .field("scope", &self.scope)
            .finish()
    }
}

/// Where credentials live. Shared by every connection of a process (so `Send + Sync`); calls
/// are short and synchronous (a small file at most).
pub trait CredentialStore: Send + Sync + fmt::Debug {
    /// The credentials for `resource` at `issuer`, if any. Credentials are never shared across
    /// issuers.
    fn load(&self, resource: &str, issuer: &str) -> Option<Credentials>;
    /// Stores `credentials`, replacing those of the same (resource, issuer).
    fn save(&self, credentials: &Credentials) -> Result<(), String>;
    /// Forgets everything held for `resource` (every issuer); how many entries went.
    fn remove(&self, resource: &str) -> Result<usize, String>;
}

/// Credentials for the life of the process.
#[derive(Debug, Default)]
pub struct MemoryStore {
    entries: Mutex<HashMap<(String, String), Credentials>>,
}

impl CredentialStore for MemoryStore {
    fn load(&self, resource: &str, issuer: &str) -> Option<Credentials> {
        let entries = self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        entries.get(&(resource.to_owned(), issuer.to_owned())).cloned()
    }

    fn save(&self, credentials: &Credentials) -> Result<(), String> {
        let mut entries = self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        entries.insert((credentials.resource.clone(), credentials.issuer.clone()), credentials.clone());
        Ok(())
    }

    fn remove(&self, resource: &str) -> Result<usize, String> {
        let mut entries = self.entries.lock().unwrap_or_else(|poisoned| poisoned.into_inner());
        let before = entries.len();
        entries.retain(|(held, _), _| held != resource);
        Ok(before - entries.len())
    }
}

/// What came back to the redirect URI (RFC 6749 §4.1.2, RFC 9207): the query parameters that
/// matter, untrusted and unchecked.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Callback {
    /// `code`.
    pub code: Option<String>,
    /// `state`.
    pub state: Option<String>,
    /// `iss` (RFC 9207).
    pub iss: Option<String>,
    /// `error`.
    pub error: Option<String>,
    /// `error_description`.
    pub error_description: Option<String>,
}

impl Callback {
    /// The callback parameters among a redirect's decoded query `pairs` (others ignored).
    ///
    /// # Errors
    /// A parameter given twice (RFC 6749 §3.1: parameters are not repeated): which one.
    pub fn from_pairs<K: AsRef<str>>(pairs: impl IntoIterator<Item = (K, String)>) -> Result<Callback, String> {
        let mut callback = Callback::default();
        for (name, value) in pairs {
            let name = name.as_ref();
            let slot = match name {
                "code" => &mut callback.code,
                "state" => &mut callback.state,
                "iss" => &mut callback.iss,
                "error" => &mut callback.error,
                "error_description" => &mut callback.error_description,
                _ => continue,
            };
            if slot.replace(value).is_some() {
                return Err(format!("the redirect repeated the parameter {name}"));
            }
        }
        Ok(callback)
    }
}

/// Who approves an authorization request: a browser and a person, or something standing in
/// for them. Runs on the connection's thread (the future need not be `Send`).
pub trait UserAgent: Send + Sync + fmt::Debug {
    /// The redirect URI to register and to send (for a person: a loopback listener bound
    /// already, RFC 8252 `http://127.0.0.1:<port>/callback`).
    fn redirect_uri(&self) -> String;
    /// Has the authorization request at `url` approved and returns what reached the redirect
    /// URI (or an error saying why nothing did, e.g. a time limit).
    fn authorize(&self, url: String) -> LocalBoxFuture<'static, Result<Callback, AuthError>>;
}

/// How the client is known to authorization servers when it has no stored registration.
/// Its `Debug` hides the secret.
#[derive(Clone, Default)]
pub struct Registration {
    /// Pre-registered credentials (configuration): used as they are, no registration.
    pub client_id: Option<String>,
    /// The secret of the pre-registered client.
    pub client_secret: Option<String>,
    /// A Client ID Metadata Document URL, used when the server advertises
    /// `client_id_metadata_document_supported`.
    pub client_metadata_url: Option<String>,
    /// The name sent in dynamic registration (RFC 7591 `client_name`).
    pub client_name: String,
}

impl fmt::Debug for Registration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("client_id", &self.client_id)
            .field("client_secret", &if self.client_secret.is_some() { "<hidden>" } else { "<none>" })
            .field("client_metadata_url", &self.client_metadata_url)
            .field("client_name", &self.client_name)
            .finish()
    }
}

/// The grant used to get tokens.
#[derive(Clone, Default)]
pub enum Grant {
    /// Authorization code with PKCE, approved by the [`UserAgent`] (or stored tokens only, when
    /// there is none).
    #[default]
    AuthorizationCode,
    /// `client_credentials` with the pre-registered client id and secret
    /// ([`Registration::client_id`], [`Registration::client_secret`]).
    ClientSecret,
    /// `client_credentials` authenticated with a signed JWT (RFC 7523 `private_key_jwt`).
    PrivateKeyJwt {
        /// The private key, PEM.
        private_key_pem: String,
        /// The JWS algorithm (`ES256`, `RS256`, …).
        algorithm: String,
    },
}

impl fmt::Debug for Grant {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Grant::AuthorizationCode => f.write_str("AuthorizationCode"),
            Grant::ClientSecret => f.write_str("ClientSecret"),
            Grant::PrivateKeyJwt { algorithm, .. } => f
                .debug_struct("PrivateKeyJwt")
                .field("private_key_pem", &"<hidden>")
                .field("algorithm", algorithm)
                .finish(),
        }
    }
}

/// OAuth for one link: set [`LinkConfig::oauth`](super::LinkConfig::oauth) to answer `401`s.
#[derive(Debug, Clone)]
pub struct OAuthConfig {
    /// Where registrations and tokens live.
    pub store: Arc<dyn CredentialStore>,
    /// Who approves authorization requests; `None`: nobody (stored credentials only).
    pub user_agent: Option<Arc<dyn UserAgent>>,
    /// How the client is known when nothing is stored.
    pub registration: Registration,
    /// How tokens are obtained.
    pub grant: Grant,
    /// The scopes to ask for (space-separated), configured (`mcpd login --scope`, a servers
    /// file's `oauth.scope`); `None`: as the specification says (the challenge's `scope`, else
    /// the metadata's `scopes_supported`, else none).
    pub scope: Option<String>,
}

/// Why the client could not get (or keep) authorization.
#[derive(Debug, Clone, PartialEq, Eq, Display, Error)]
#[non_exhaustive]
pub enum AuthError {
    /// Only a person can fix this: no usable credentials and no [`UserAgent`].
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

#[cfg(test)]
mod tests {
    use super::Callback;

    #[test]
    fn callback_parameters_are_taken_once_and_others_ignored() {
        let pairs = [("code", "c"), ("state", "s"), ("iss", "https://as"), ("extra", "x")];
        let callback = Callback::from_pairs(pairs.map(|(k, v)| (k, v.to_owned()))).unwrap();
        assert_eq!(
            callback,
            Callback {
                code: Some("c".into()),
                state: Some("s".into()),
                iss: Some("https://as".into()),
                ..Callback::default()
            }
        );
        let repeated = Callback::from_pairs([("state", "a".to_owned()), ("state", "b".to_owned())]);
        assert_eq!(repeated, Err("the redirect repeated the parameter state".to_owned()));
    }
}
