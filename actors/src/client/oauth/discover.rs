//! Discovery: the protected-resource metadata of the MCP server (the challenge's
//! `resource_metadata`, else the well-known URLs in RFC 9728 order), checked against the server
//! URL, then the metadata of its first authorization server (RFC 8414 and OpenID discovery in the
//! specification's order), whose `issuer` must be the identifier the URL was built from. The
//! rules are the core's (`mcpd::client::oauth::discovery`); this module fetches.

use mcpd::client::oauth::discovery::{
    authorization_server_metadata_urls, check_issuer, check_resource, protected_resource_metadata_urls,
};
use mcpd::client::oauth::metadata::{AuthorizationServerMetadata, ProtectedResourceMetadata};

use super::http::AsHttp;
use super::AuthError;

/// What discovery found.
#[derive(Debug, Clone)]
pub(crate) struct Discovered {
    /// The protected-resource metadata (its `resource` checked against the server URL).
    pub(crate) resource: ProtectedResourceMetadata,
    /// The issuer identifier, as the resource metadata names it.
    pub(crate) issuer: String,
    /// The authorization server's metadata (its `issuer` checked).
    pub(crate) server: AuthorizationServerMetadata,
}

/// Runs discovery for the MCP endpoint `server_url`, which refused a request with HTTP `status`.
pub(crate) async fn discover(
    http: &AsHttp,
    server_url: &str,
    status: u16,
    resource_metadata: Option<&str>,
) -> Result<Discovered, AuthError> {
    let resource = protected_resource(http, server_url, status, resource_metadata).await?;
    let issuer =
        resource.authorization_servers.as_ref().and_then(|servers| servers.first()).cloned().ok_or_else(|| {
            AuthError::Discovery(format!(
                "the protected resource metadata of {server_url} names no authorization server"
            ))
        })?;
    let server = authorization_server(http, &issuer).await?;
    Ok(Discovered { resource, issuer, server })
}

async fn protected_resource(
    http: &AsHttp,
    server_url: &str,
    status: u16,
    from_challenge: Option<&str>,
) -> Result<ProtectedResourceMetadata, AuthError> {
    let urls = protected_resource_metadata_urls(server_url, from_challenge).map_err(AuthError::Discovery)?;
    for url in &urls {
        let Some(metadata) = http.get_json::<ProtectedResourceMetadata>(url, "protected resource metadata").await?
        else {
            continue;
        };
        check_resource(server_url, &metadata.resource).map_err(AuthError::Discovery)?;
        return Ok(metadata);
    }
    // No metadata anywhere: the server refused us but does not use OAuth — an API key or another
    // credential of its own is wanted, which only configuration can give.
    Err(AuthError::Discovery(format!(
        "{server_url} answered HTTP {status} and publishes no OAuth protected resource metadata (tried {}): \
         it wants a credential of its own (e.g. --header 'Authorization: Bearer KEY')",
        urls.join(", ")
    )))
}

async fn authorization_server(http: &AsHttp, issuer: &str) -> Result<AuthorizationServerMetadata, AuthError> {
    let urls = authorization_server_metadata_urls(issuer).map_err(AuthError::Discovery)?;
    for url in &urls {
        let Some(metadata) = http.get_json::<AuthorizationServerMetadata>(url, "authorization server metadata").await?
        else {
            continue;
        };
        // A document whose issuer differs is never used (nor is another URL tried for it).
        check_issuer(issuer, metadata.issuer.as_deref()).map_err(AuthError::Discovery)?;
        return Ok(metadata);
    }
    Err(AuthError::Discovery(format!("no authorization server metadata for {issuer} (tried {})", urls.join(", "))))
}
