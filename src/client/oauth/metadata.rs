//! The documents of OAuth discovery and registration, as the client reads them: RFC 9728
//! protected-resource metadata, RFC 8414 / OpenID authorization-server metadata and the RFC 7591
//! registration response. Lenient to unknown fields; bounded (a document above
//! [`MAX_DOCUMENT_BYTES`] is refused before parsing, lists are cut at [`MAX_LIST_ENTRIES`]).

use serde::{Deserialize, Deserializer};

/// Largest metadata, registration or token document read from a server.
pub const MAX_DOCUMENT_BYTES: usize = 256 * 1024;
/// Most entries kept of any list in a document.
pub const MAX_LIST_ENTRIES: usize = 64;

/// A list of strings, cut at [`MAX_LIST_ENTRIES`]; entries that are not strings are skipped.
fn bounded_list<'de, D: Deserializer<'de>>(deserializer: D) -> Result<Option<Vec<String>>, D::Error> {
    let values: Option<Vec<serde_json::Value>> = Option::deserialize(deserializer)?;
    Ok(values.map(|values| {
        values.into_iter().filter_map(|v| v.as_str().map(str::to_owned)).take(MAX_LIST_ENTRIES).collect()
    }))
}

/// RFC 9728 protected-resource metadata.
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct ProtectedResourceMetadata {
    /// The resource identifier.
    pub resource: String,
    /// Its authorization servers (issuer identifiers).
    #[serde(default, deserialize_with = "bounded_list")]
    pub authorization_servers: Option<Vec<String>>,
    /// The scopes the resource uses.
    #[serde(default, deserialize_with = "bounded_list")]
    pub scopes_supported: Option<Vec<String>>,
}

/// RFC 8414 authorization-server metadata (OpenID provider metadata has the same members).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct AuthorizationServerMetadata {
    /// The issuer identifier.
    pub issuer: Option<String>,
    /// Where authorization requests go.
    pub authorization_endpoint: Option<String>,
    /// Where token requests go.
    pub token_endpoint: Option<String>,
    /// RFC 7591 dynamic registration.
    pub registration_endpoint: Option<String>,
    /// Scopes the server knows.
    #[serde(default, deserialize_with = "bounded_list")]
    pub scopes_supported: Option<Vec<String>>,
    /// Grants the server supports (absent: `authorization_code` and `implicit`).
    #[serde(default, deserialize_with = "bounded_list")]
    pub grant_types_supported: Option<Vec<String>>,
    /// Client authentication methods at the token endpoint (absent: `client_secret_basic`).
    #[serde(default, deserialize_with = "bounded_list")]
    pub token_endpoint_auth_methods_supported: Option<Vec<String>>,
    /// PKCE methods.
    #[serde(default, deserialize_with = "bounded_list")]
    pub code_challenge_methods_supported: Option<Vec<String>>,
    /// RFC 9207: authorization responses carry `iss`.
    #[serde(default)]
    pub authorization_response_iss_parameter_supported: Option<bool>,
    /// Client ID Metadata Documents are accepted as client ids.
    #[serde(default)]
    pub client_id_metadata_document_supported: Option<bool>,
}

impl AuthorizationServerMetadata {
    /// Whether the server lists `scope` in `scopes_supported`.
    pub fn supports_scope(&self, scope: &str) -> bool {
        self.scopes_supported.as_deref().is_some_and(|s| s.iter().any(|s| s == scope))
    }

    /// Whether the server supports the grant (`grant_types_supported`, or the RFC 8414
    /// default when absent).
    pub fn supports_grant(&self, grant: &str) -> bool {
        match &self.grant_types_supported {
            Some(grants) => grants.iter().any(|g| g == grant),
            None => matches!(grant, "authorization_code" | "implicit"),
        }
    }

    /// Whether the refresh-token grant can be used with this server: listed, or the list absent
    /// (servers that omit it commonly issue refresh tokens; a refresh that fails costs nothing).
    pub fn supports_refresh(&self) -> bool {
        self.grant_types_supported.as_deref().is_none_or(|g| g.iter().any(|g| g == "refresh_token"))
    }
}

/// The RFC 7591 registration response (what the client keeps of it).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct RegistrationResponse {
    /// The client id.
    pub client_id: String,
    /// The secret, for confidential clients.
    pub client_secret: Option<String>,
    /// The token endpoint authentication method the server registered.
    pub token_endpoint_auth_method: Option<String>,
}

/// Parses a document of at most [`MAX_DOCUMENT_BYTES`].
pub fn parse_document<'a, T: Deserialize<'a>>(bytes: &'a [u8], what: &str) -> Result<T, String> {
    if bytes.len() > MAX_DOCUMENT_BYTES {
        return Err(format!("the {what} is larger than {MAX_DOCUMENT_BYTES} bytes"));
    }
    serde_json::from_slice(bytes).map_err(|e| format!("the {what} is not valid: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn documents_are_read_leniently_and_bounded() {
        let prm: ProtectedResourceMetadata = parse_document(
            br#"{"resource":"http://h/mcp","authorization_servers":["http://a",7],"x":{"y":1},"scopes_supported":["s"]}"#,
            "protected resource metadata",
        )
        .unwrap();
        assert_eq!(prm.authorization_servers.unwrap(), ["http://a"]);
        assert_eq!(prm.scopes_supported.unwrap(), ["s"]);
        let many = format!(r#"{{"resource":"r","authorization_servers":[{}]}}"#, vec![r#""a""#; 1000].join(","));
        let prm: ProtectedResourceMetadata = parse_document(many.as_bytes(), "metadata").unwrap();
        assert_eq!(prm.authorization_servers.unwrap().len(), MAX_LIST_ENTRIES);
        assert!(parse_document::<ProtectedResourceMetadata>(b"{}", "protected resource metadata")
            .unwrap_err()
            .starts_with("the protected resource metadata is not valid"));
        let huge = vec![b' '; MAX_DOCUMENT_BYTES + 1];
        assert!(parse_document::<AuthorizationServerMetadata>(&huge, "metadata").unwrap_err().contains("larger"));
    }

    #[test]
    fn grants_and_scopes_follow_the_metadata_or_its_defaults() {
        let meta: AuthorizationServerMetadata = parse_document(
            br#"{"issuer":"http://a","grant_types_supported":["client_credentials"],"scopes_supported":["offline_access"]}"#,
            "metadata",
        )
        .unwrap();
        assert!(meta.supports_grant("client_credentials"));
        assert!(!meta.supports_refresh());
        assert!(meta.supports_scope("offline_access"));
        let bare = AuthorizationServerMetadata::default();
        assert!(bare.supports_grant("authorization_code") && !bare.supports_grant("client_credentials"));
        assert!(bare.supports_refresh());
        assert!(!bare.supports_scope("offline_access"));
    }
}
