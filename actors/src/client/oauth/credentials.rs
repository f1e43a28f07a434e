//! What the client holds for a protected resource at an authorization server ([`Credentials`]),
//! and where it is kept ([`CredentialStore`], [`MemoryStore`] for the life of the process).

use std::collections::HashMap;
use std::fmt;
use std::sync::Mutex;

use serde::{Deserialize, Serialize};

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
