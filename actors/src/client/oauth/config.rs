//! OAuth for one link ([`OAuthConfig`]): where credentials live, who approves, how the client
//! is known when nothing is stored ([`Registration`]) and how it gets tokens ([`Grant`]).

use std::fmt;
use std::sync::Arc;

use super::credentials::CredentialStore;
use super::user_agent::UserAgent;

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

/// OAuth for one link: set [`LinkConfig::oauth`](crate::client::LinkConfig::oauth) to answer `401`s.
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
