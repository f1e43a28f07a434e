//! The credentials a manager answers servers' `401`s with. A manager given a credential store
//! ([`super::ClientManager::with_credentials`]) answers `401`s of every HTTP server with it
//! (stored tokens only, refreshed; nobody is asked to log in), except servers configured with an
//! `Authorization` header and no `oauth` settings (the header is their credential). A server
//! whose entry has `oauth` settings (see [`mcpd::client::config::ClientOAuthSettings`]) gets them —
//! its pre-registered client, its grant, its scope — with the manager's store, or one kept in
//! memory when the manager has none. Secrets named by the settings are read when the connection
//! is made, and never appear in a message.

use std::sync::Arc;

use mcpd::client::config::{ClientOAuthSettings, OAuthGrant, SecretSource, ServerConfig};

use super::error::ClientError;
use super::oauth::{CredentialStore, Grant, MemoryStore, OAuthConfig, Registration};

/// The credential stores of a manager.
#[derive(Debug, Clone)]
pub(super) struct CredentialStores {
    /// OAuth for every HTTP server (see the module docs).
    pub(super) store: Option<Arc<dyn CredentialStore>>,
    /// For servers with `oauth` settings when there is no `store`.
    pub(super) memory: Arc<MemoryStore>,
}

impl CredentialStores {
    /// The OAuth configuration of a server's link, if it gets one.
    pub(super) fn oauth_config(&self, config: &ServerConfig) -> Result<Option<OAuthConfig>, ClientError> {
        let store: Arc<dyn CredentialStore> = match (&self.store, &config.oauth) {
            (_, None) if config.auth_key().is_some() => return Ok(None),
            (Some(store), _) => store.clone(),
            (None, Some(_)) => self.memory.clone(),
            (None, None) => return Ok(None),
        };
        let settings = config.oauth.as_ref();
        let failed = |what: String| ClientError::Config(format!("server {}: {what}", config.name));
        let client_secret = match settings.and_then(|s| s.client_secret.as_ref()) {
            None => None,
            Some(SecretSource::Env(name)) => match std::env::var(name) {
                Ok(secret) if !secret.trim().is_empty() => Some(secret.trim().to_owned()),
                _ => return Err(failed(format!("oauth.clientSecretEnv: the environment variable {name} is not set"))),
            },
            Some(SecretSource::File(path)) => {
                let secret = read_secret_file(path).map_err(|e| failed(format!("oauth.clientSecretFile: {e}")))?;
                Some(secret)
            }
        };
        let grant = match settings {
            None => Grant::AuthorizationCode,
            Some(ClientOAuthSettings { grant: OAuthGrant::AuthorizationCode, .. }) => Grant::AuthorizationCode,
            Some(ClientOAuthSettings { private_key_file: Some(path), algorithm, .. }) => Grant::PrivateKeyJwt {
                private_key_pem: read_secret_file(path).map_err(|e| failed(format!("oauth.privateKeyFile: {e}")))?,
                algorithm: algorithm.clone().unwrap_or_else(|| mcpd::client::config::DEFAULT_OAUTH_ALGORITHM.into()),
            },
            Some(_) => Grant::ClientSecret,
        };
        Ok(Some(OAuthConfig {
            store,
            user_agent: None,
            registration: Registration {
                client_id: settings.and_then(|s| s.client_id.clone()),
                client_secret,
                client_metadata_url: None,
                client_name: "mcpd".into(),
            },
            grant,
            scope: settings.and_then(|s| s.scope.clone()),
        }))
    }
}

/// The largest secret or key file read, in bytes.
const MAX_SECRET_FILE_BYTES: u64 = 64 * 1024;

/// A secret or key file's content, trimmed; errors name the file, never its content.
fn read_secret_file(path: &str) -> Result<String, String> {
    use std::io::Read as _;
    let file = std::fs::File::open(path).map_err(|e| format!("cannot read {path}: {e}"))?;
    let mut text = String::new();
    file.take(MAX_SECRET_FILE_BYTES + 1).read_to_string(&mut text).map_err(|e| format!("cannot read {path}: {e}"))?;
    if text.len() as u64 > MAX_SECRET_FILE_BYTES {
        return Err(format!("{path} is larger than {MAX_SECRET_FILE_BYTES} bytes"));
    }
    let text = text.trim();
    if text.is_empty() {
        return Err(format!("{path} is empty"));
    }
    Ok(text.to_owned())
}

#[cfg(test)]
mod tests {
    use mcpd::client::config::ConfigDocument;
    use serde_json::json;

    use super::*;

    fn config(node: serde_json::Value) -> ServerConfig {
        ConfigDocument::from_value(node).unwrap().resolve().unwrap()
    }

    fn credentials(store: bool) -> CredentialStores {
        let shared: Arc<dyn CredentialStore> = Arc::new(MemoryStore::default());
        CredentialStores { store: store.then_some(shared), memory: Arc::new(MemoryStore::default()) }
    }

    #[test]
    fn oauth_is_on_with_a_store_or_settings_and_off_for_a_configured_authorization_header() {
        let plain = config(json!({"url": "https://a.example/mcp"}));
        assert!(credentials(false).oauth_config(&plain).unwrap().is_none(), "no store, no settings: 401 is an error");
        let on = credentials(true).oauth_config(&plain).unwrap().unwrap();
        assert!(matches!(on.grant, Grant::AuthorizationCode) && on.user_agent.is_none());
        assert_eq!((on.registration.client_id, on.scope), (None, None));
        let keyed = config(json!({"url": "https://a.example/mcp", "headers": {"Authorization": "Bearer k"}}));
        assert!(credentials(true).oauth_config(&keyed).unwrap().is_none(), "the header is the credential");
        let keyed_with_settings = config(json!({
            "url": "https://a.example/mcp", "headers": {"Authorization": "Bearer k"}, "oauth": {"clientId": "c"}
        }));
        assert!(credentials(false).oauth_config(&keyed_with_settings).unwrap().is_some());
    }

    #[test]
    fn settings_become_the_registration_grant_and_scope_with_secrets_read_from_their_files() {
        let dir = tempfile::tempdir().unwrap();
        let secret = dir.path().join("secret");
        std::fs::write(&secret, "  s3cret \n").unwrap();
        let key = dir.path().join("key.pem");
        std::fs::write(&key, "-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n").unwrap();
        let cases = credentials(false);
        let secret_config = config(json!({"url": "https://a.example/mcp", "oauth": {
            "clientId": "gw", "clientSecretFile": secret, "grant": "client_credentials", "scope": "a b"
        }}));
        let secret_oauth = cases.oauth_config(&secret_config).unwrap().unwrap();
        assert!(matches!(secret_oauth.grant, Grant::ClientSecret));
        assert_eq!(secret_oauth.registration.client_id.as_deref(), Some("gw"));
        assert_eq!(secret_oauth.registration.client_secret.as_deref(), Some("s3cret"));
        assert_eq!(secret_oauth.scope.as_deref(), Some("a b"));
        assert!(!format!("{secret_oauth:?}").contains("s3cret"));

        let key_config = config(json!({"url": "https://a.example/mcp", "oauth": {
            "clientId": "gw", "privateKeyFile": key, "grant": "client_credentials", "algorithm": "RS256"
        }}));
        match cases.oauth_config(&key_config).unwrap().unwrap().grant {
            Grant::PrivateKeyJwt { private_key_pem, algorithm } => {
                assert!(
                    private_key_pem.starts_with("-----BEGIN PRIVATE KEY-----") && private_key_pem.ends_with("-----")
                );
                assert_eq!(algorithm, "RS256");
            }
            other => panic!("{other:?}"),
        }

        let preregistered = config(json!({"url": "https://a.example/mcp", "oauth": {
            "clientId": "app", "clientSecretFile": secret
        }}));
        let oauth = cases.oauth_config(&preregistered).unwrap().unwrap();
        assert!(matches!(oauth.grant, Grant::AuthorizationCode));
        assert_eq!(oauth.registration.client_secret.as_deref(), Some("s3cret"));
    }
}
