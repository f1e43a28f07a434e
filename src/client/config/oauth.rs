//! An entry's `oauth` object: the OAuth client settings of a remote that needs them (a
//! machine-to-machine remote with `client_credentials`, or a pre-registered client for the
//! authorization-code flow), read and checked here, plain data. Secrets are never in the
//! document: it names where they are (an environment variable or a file), and the runtime
//! reads them when it connects.
//!
//! ```json
//! "oauth": {
//!   "clientId": "gateway",
//!   "clientSecretEnv": "GATEWAY_SECRET",      // or "clientSecretFile": "/run/secrets/gw"
//!   "grant": "client_credentials",             // default: "authorization_code"
//!   "privateKeyFile": "/etc/mcpd/gw-key.pem",  // instead of a secret: private_key_jwt
//!   "algorithm": "ES256",                      // with privateKeyFile (default ES256)
//!   "scope": "tools.read tools.call"
//! }
//! ```
//!
//! Every field is optional and text (missing, `null` or blank counts as absent); unknown fields
//! are refused (a misspelt secret setting must not pass silently).

use serde_json::{json, Map, Value};

use super::error::ConfigError;
use super::fields::text_field;

/// The fields an `oauth` object may hold, in the order the messages list them.
const FIELDS: [&str; 7] =
    ["clientId", "clientSecretEnv", "clientSecretFile", "grant", "privateKeyFile", "algorithm", "scope"];

/// The JWS algorithms a `privateKeyFile` may sign with (asymmetric only).
pub const OAUTH_ALGORITHMS: [&str; 9] =
    ["ES256", "ES384", "RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "EdDSA"];

/// The algorithm of a `privateKeyFile` without an `algorithm`.
pub const DEFAULT_OAUTH_ALGORITHM: &str = "ES256";

/// How the client gets tokens from the remote's authorization server.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OAuthGrant {
    /// `authorization_code`: a person approves (`mcpd login`); without one, stored tokens only.
    AuthorizationCode,
    /// `client_credentials`: no person, the client authenticates itself.
    ClientCredentials,
}

impl OAuthGrant {
    /// The grant's name as written in the document.
    pub fn as_str(self) -> &'static str {
        match self {
            OAuthGrant::AuthorizationCode => "authorization_code",
            OAuthGrant::ClientCredentials => "client_credentials",
        }
    }
}

/// Where a client secret is read from (never the secret itself).
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum SecretSource {
    /// An environment variable of the runtime (`clientSecretEnv`).
    Env(String),
    /// A file (`clientSecretFile`; a relative path is relative to the runtime's working
    /// directory); surrounding white space is not part of the secret.
    File(String),
}

/// An entry's checked `oauth` settings.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClientOAuthSettings {
    /// The pre-registered client id.
    pub client_id: Option<String>,
    /// Where its secret is.
    pub client_secret: Option<SecretSource>,
    /// The grant.
    pub grant: OAuthGrant,
    /// A PEM private key for `private_key_jwt` (client_credentials only).
    pub private_key_file: Option<String>,
    /// The JWS algorithm of `private_key_file` (one of [`OAUTH_ALGORITHMS`]); `None` without a key.
    pub algorithm: Option<String>,
    /// The scopes to ask for (space-separated) instead of the ones the server suggests.
    pub scope: Option<String>,
}

impl ClientOAuthSettings {
    /// The files these settings read a secret from: `clientSecretFile` and `privateKeyFile`.
    pub fn secret_files(&self) -> impl Iterator<Item = &str> {
        let secret = match &self.client_secret {
            Some(SecretSource::File(path)) => Some(path.as_str()),
            _ => None,
        };
        secret.into_iter().chain(self.private_key_file.as_deref())
    }

    /// Reads a node's `oauth` (absent or `null`: none).
    ///
    /// # Errors
    /// One of the `OAuth*` [`ConfigError`]s.
    pub(super) fn from_node(node: &Map<String, Value>) -> Result<Option<ClientOAuthSettings>, ConfigError> {
        let object = match node.get("oauth") {
            None | Some(Value::Null) => return Ok(None),
            Some(Value::Object(object)) => object,
            Some(_) => return Err(ConfigError::OAuthNotObject),
        };
        if let Some(unknown) = object.keys().find(|k| !FIELDS.contains(&k.as_str())) {
            return Err(ConfigError::OAuthUnknownField(unknown.clone()));
        }
        let field =
            |name: &'static str| text_field(object, name).map_err(|_| ConfigError::OAuthFieldNotString { field: name });
        let client_id = field("clientId")?.map(str::to_owned);
        let client_secret = match (field("clientSecretEnv")?, field("clientSecretFile")?) {
            (Some(_), Some(_)) => return Err(invalid("give clientSecretEnv or clientSecretFile, not both")),
            (Some(name), None) if !is_env_name(name) => {
                return Err(invalid(
                    "clientSecretEnv must be an environment variable name (letters, digits and _, not starting with a digit)",
                ))
            }
            (Some(name), None) => Some(SecretSource::Env(name.to_owned())),
            (None, Some(path)) => Some(SecretSource::File(path.to_owned())),
            (None, None) => None,
        };
        let grant = match field("grant")? {
            None | Some("authorization_code") => OAuthGrant::AuthorizationCode,
            Some("client_credentials") => OAuthGrant::ClientCredentials,
            Some(other) => return Err(ConfigError::OAuthUnknownGrant(other.to_owned())),
        };
        let private_key_file = field("privateKeyFile")?.map(str::to_owned);
        let algorithm = match (field("algorithm")?, &private_key_file) {
            (Some(_), None) => return Err(invalid("algorithm goes with privateKeyFile")),
            (Some(alg), Some(_)) if !OAUTH_ALGORITHMS.contains(&alg) => {
                return Err(ConfigError::OAuthUnknownAlgorithm(alg.to_owned()))
            }
            (Some(alg), Some(_)) => Some(alg.to_owned()),
            (None, Some(_)) => Some(DEFAULT_OAUTH_ALGORITHM.to_owned()),
            (None, None) => None,
        };
        let scope = field("scope")?.map(str::to_owned);
        if client_secret.is_some() && private_key_file.is_some() {
            return Err(invalid("give a client secret or privateKeyFile, not both"));
        }
        if client_secret.is_some() && client_id.is_none() {
            return Err(invalid("a client secret needs clientId"));
        }
        match grant {
            OAuthGrant::ClientCredentials if client_id.is_none() => {
                return Err(invalid("the client_credentials grant needs clientId"))
            }
            OAuthGrant::ClientCredentials if client_secret.is_none() && private_key_file.is_none() => {
                return Err(invalid(
                    "the client_credentials grant needs clientSecretEnv, clientSecretFile or privateKeyFile",
                ))
            }
            OAuthGrant::AuthorizationCode if private_key_file.is_some() => {
                return Err(invalid("privateKeyFile is for the client_credentials grant"))
            }
            _ => {}
        }
        Ok(Some(ClientOAuthSettings { client_id, client_secret, grant, private_key_file, algorithm, scope }))
    }

    /// What the connection fingerprint hashes of these settings: every field (names of
    /// variables and files, never a secret).
    pub(super) fn canonical(&self) -> Value {
        let (env, file) = match &self.client_secret {
            Some(SecretSource::Env(name)) => (Some(name.as_str()), None),
            Some(SecretSource::File(path)) => (None, Some(path.as_str())),
            None => (None, None),
        };
        json!([self.client_id, env, file, self.grant.as_str(), self.private_key_file, self.algorithm, self.scope])
    }
}

fn invalid(reason: &'static str) -> ConfigError {
    ConfigError::OAuthInvalid { reason }
}

/// A portable environment variable name: `[A-Za-z_][A-Za-z0-9_]*`.
fn is_env_name(name: &str) -> bool {
    let mut bytes = name.bytes();
    matches!(bytes.next(), Some(b) if b.is_ascii_alphabetic() || b == b'_')
        && bytes.all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::client::config::{ConfigDocument, ServersFile};

    fn settings(oauth: Value) -> Result<Option<ClientOAuthSettings>, ConfigError> {
        let text = json!({"url": "https://a.example/mcp", "oauth": oauth}).to_string();
        ConfigDocument::parse(&text)?.resolve().map(|config| config.oauth)
    }

    #[test]
    fn valid_shapes_are_read_with_their_defaults() {
        assert_eq!(settings(Value::Null), Ok(None));
        assert_eq!(
            settings(json!({})),
            Ok(Some(ClientOAuthSettings {
                client_id: None,
                client_secret: None,
                grant: OAuthGrant::AuthorizationCode,
                private_key_file: None,
                algorithm: None,
                scope: None,
            }))
        );
        let secret = settings(json!({
            "clientId": " gw ", "clientSecretEnv": "GW_SECRET", "grant": "client_credentials", "scope": "a b"
        }));
        assert_eq!(
            secret,
            Ok(Some(ClientOAuthSettings {
                client_id: Some("gw".into()),
                client_secret: Some(SecretSource::Env("GW_SECRET".into())),
                grant: OAuthGrant::ClientCredentials,
                private_key_file: None,
                algorithm: None,
                scope: Some("a b".into()),
            }))
        );
        let file = settings(json!({"clientId": "gw", "clientSecretFile": "/run/s", "grant": "client_credentials"}));
        assert_eq!(file.unwrap().unwrap().client_secret, Some(SecretSource::File("/run/s".into())));
        let key = settings(json!({"clientId": "gw", "grant": "client_credentials", "privateKeyFile": "k.pem"}));
        let key = key.unwrap().unwrap();
        assert_eq!((key.private_key_file.as_deref(), key.algorithm.as_deref()), (Some("k.pem"), Some("ES256")));
        let rs = settings(
            json!({"clientId": "gw", "grant": "client_credentials", "privateKeyFile": "k", "algorithm": "RS256"}),
        );
        assert_eq!(rs.unwrap().unwrap().algorithm.as_deref(), Some("RS256"));
        // A pre-registered client for mcpd login's flow; blank fields count as absent.
        let pre =
            settings(json!({"clientId": "app", "clientSecretFile": "s", "grant": "authorization_code", "scope": " "}));
        let pre = pre.unwrap().unwrap();
        assert_eq!((pre.grant, pre.scope), (OAuthGrant::AuthorizationCode, None));
        // A servers file entry carries it too.
        let file = ServersFile::from_value(json!({"mcpServers": {"m2m": {
            "url": "https://a.example/mcp",
            "oauth": {"clientId": "gw", "clientSecretEnv": "S", "grant": "client_credentials"}
        }}}))
        .unwrap();
        let (_, config) = file.servers().remove(0);
        assert_eq!(config.unwrap().oauth.unwrap().grant, OAuthGrant::ClientCredentials);
    }

    #[test]
    fn every_invalid_shape_has_its_exact_message() {
        let cases: Vec<(Value, &str)> = vec![
            (json!("gw"), "oauth must be a JSON object."),
            (json!([]), "oauth must be a JSON object."),
            (
                json!({"clientSecret": "plain"}),
                "oauth has no field \"clientSecret\": it takes clientId, clientSecretEnv, clientSecretFile, grant, privateKeyFile, algorithm and scope.",
            ),
            (json!({"clientId": 7}), "oauth.clientId must be a string."),
            (json!({"scope": ["a"]}), "oauth.scope must be a string."),
            (
                json!({"grant": "password"}),
                "oauth.grant \"password\" is not supported: use client_credentials or authorization_code.",
            ),
            (
                json!({"clientId": "c", "grant": "client_credentials", "privateKeyFile": "k", "algorithm": "HS256"}),
                "oauth.algorithm \"HS256\" is not supported: use ES256, ES384, RS256, RS384, RS512, PS256, PS384, PS512 or EdDSA.",
            ),
            (
                json!({"clientId": "c", "clientSecretEnv": "A", "clientSecretFile": "f"}),
                "oauth: give clientSecretEnv or clientSecretFile, not both.",
            ),
            (
                json!({"clientId": "c", "clientSecretEnv": "1BAD"}),
                "oauth: clientSecretEnv must be an environment variable name (letters, digits and _, not starting with a digit).",
            ),
            (json!({"algorithm": "ES256"}), "oauth: algorithm goes with privateKeyFile."),
            (
                json!({"clientId": "c", "clientSecretEnv": "S", "privateKeyFile": "k", "grant": "client_credentials"}),
                "oauth: give a client secret or privateKeyFile, not both.",
            ),
            (json!({"clientSecretEnv": "S"}), "oauth: a client secret needs clientId."),
            (
                json!({"grant": "client_credentials", "privateKeyFile": "k"}),
                "oauth: the client_credentials grant needs clientId.",
            ),
            (
                json!({"clientId": "c", "grant": "client_credentials"}),
                "oauth: the client_credentials grant needs clientSecretEnv, clientSecretFile or privateKeyFile.",
            ),
            (json!({"clientId": "c", "privateKeyFile": "k"}), "oauth: privateKeyFile is for the client_credentials grant."),
        ];
        for (oauth, expected) in cases {
            let message = settings(oauth.clone()).expect_err("must be rejected").to_string();
            assert_eq!(message, expected, "for {oauth}");
        }
    }

    #[test]
    fn the_fingerprint_changes_with_the_oauth_settings_and_only_then() {
        let fingerprint = |oauth: Option<Value>| {
            let mut doc = json!({"url": "https://a.example/mcp"});
            if let Some(oauth) = oauth {
                doc["oauth"] = oauth;
            }
            ConfigDocument::from_value(doc).unwrap().fingerprint()
        };
        let plain = fingerprint(None);
        assert_eq!(plain, fingerprint(Some(Value::Null)), "null is no settings");
        let base = json!({"clientId": "gw", "clientSecretEnv": "S", "grant": "client_credentials"});
        let with = fingerprint(Some(base.clone()));
        assert_ne!(plain, with);
        assert_eq!(with, fingerprint(Some(base.clone())));
        for (key, value) in [("clientId", "gw2"), ("clientSecretEnv", "T"), ("scope", "x")] {
            let mut changed = base.clone();
            changed[key] = json!(value);
            assert_ne!(with, fingerprint(Some(changed)), "{key}");
        }
        let mut file = base.clone();
        file.as_object_mut().unwrap().remove("clientSecretEnv");
        file["clientSecretFile"] = json!("S");
        assert_ne!(with, fingerprint(Some(file)), "an env name and a file path never hash alike");
    }
}
