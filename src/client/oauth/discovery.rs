//! Where the client looks for metadata and what it accepts: the protected-resource metadata URLs
//! in RFC 9728 order, the authorization-server metadata URLs for an issuer in the MCP
//! specification's order (RFC 8414 path insertion, then OpenID Connect discovery with path
//! insertion and path appending), the `resource` check (RFC 9728 §3.3, §7.3), the `issuer`
//! check (RFC 8414 §3.3), and the canonical form of a resource (the key credentials are stored
//! under).

use url::Url;

const PRM_SUFFIX: &str = "/.well-known/oauth-protected-resource";
const OAUTH_SUFFIX: &str = "/.well-known/oauth-authorization-server";
const OIDC_SUFFIX: &str = "/.well-known/openid-configuration";

/// An `http(s)` URL, parsed; the error names what is wrong with it.
fn http_url(text: &str, what: &str) -> Result<Url, String> {
    let url = Url::parse(text).map_err(|e| format!("{what} {text:?} is not a URL: {e}"))?;
    if !matches!(url.scheme(), "http" | "https") || !url.has_host() {
        return Err(format!("{what} {text:?} is not an http(s) URL"));
    }
    Ok(url)
}

/// `scheme://host[:port]` (default port omitted, scheme and host lowercase).
fn origin(url: &Url) -> String {
    url.origin().ascii_serialization()
}

/// The path without its trailing `/` ("" for the root).
fn bare_path(url: &Url) -> &str {
    url.path().trim_end_matches('/')
}

/// The protected-resource metadata URLs to try, in order: the challenge's `resource_metadata`
/// when the server gave one (then nothing else), else the path-suffixed well-known URL (when the
/// endpoint has a path) and the root one.
pub fn protected_resource_metadata_urls(server_url: &str, from_challenge: Option<&str>) -> Result<Vec<String>, String> {
    if let Some(given) = from_challenge {
        return Ok(vec![http_url(given, "the resource_metadata URL")?.to_string()]);
    }
    let server = http_url(server_url, "the MCP server URL")?;
    let origin = origin(&server);
    let mut urls = Vec::with_capacity(2);
    let path = bare_path(&server);
    if !path.is_empty() {
        urls.push(format!("{origin}{PRM_SUFFIX}{path}"));
    }
    urls.push(format!("{origin}{PRM_SUFFIX}"));
    Ok(urls)
}

/// The authorization-server metadata URLs to try for `issuer`, in the specification's order.
pub fn authorization_server_metadata_urls(issuer: &str) -> Result<Vec<String>, String> {
    let url = http_url(issuer, "the authorization server")?;
    if url.query().is_some() || url.fragment().is_some() {
        return Err(format!("the issuer {issuer:?} has a query or fragment"));
    }
    let origin = origin(&url);
    let path = bare_path(&url);
    Ok(if path.is_empty() {
        vec![format!("{origin}{OAUTH_SUFFIX}"), format!("{origin}{OIDC_SUFFIX}")]
    } else {
        vec![
            format!("{origin}{OAUTH_SUFFIX}{path}"),
            format!("{origin}{OIDC_SUFFIX}{path}"),
            format!("{origin}{path}{OIDC_SUFFIX}"),
        ]
    })
}

/// Whether a protected-resource metadata `resource` may stand for the MCP endpoint at
/// `server_url`: the same origin (scheme and host compared without case, default ports
/// elided), no fragment, and a path that is the endpoint's path or one of its parents (metadata
/// at the root names the root).
pub fn resource_matches(server_url: &str, resource: &str) -> bool {
    let (Ok(server), Ok(resource)) = (Url::parse(server_url), Url::parse(resource)) else { return false };
    if resource.fragment().is_some() || origin(&server) != origin(&resource) || !resource.has_host() {
        return false;
    }
    let (wanted, given) = (bare_path(&server), bare_path(&resource));
    wanted == given || wanted.strip_prefix(given).is_some_and(|rest| rest.starts_with('/'))
}

/// Checks the resource a protected-resource metadata document names (`Err`: why it may not be
/// used).
pub fn check_resource(server_url: &str, resource: &str) -> Result<(), String> {
    if resource_matches(server_url, resource) {
        Ok(())
    } else {
        Err(format!("the protected resource metadata names resource {resource:?}, which is not {server_url:?}"))
    }
}

/// Checks the `issuer` of an authorization server's metadata against the issuer identifier its
/// URL was built from: identical, character for character (RFC 8414 §3.3).
pub fn check_issuer(expected: &str, document_issuer: Option<&str>) -> Result<(), String> {
    match document_issuer {
        Some(issuer) if issuer == expected => Ok(()),
        Some(issuer) => {
            Err(format!("the authorization server metadata names issuer {issuer:?}, expected {expected:?}"))
        }
        None => Err(format!("the authorization server metadata of {expected:?} has no issuer")),
    }
}

/// The canonical form of a resource URI: scheme and host lowercase, default port elided, no
/// fragment, no trailing `/` on an empty path. Credentials are stored under it. A value that is
/// not a URL is returned as it is.
pub fn canonical_resource(resource: &str) -> String {
    let Ok(mut url) = Url::parse(resource) else { return resource.to_owned() };
    url.set_fragment(None);
    let text = url.to_string();
    if url.path() == "/" && url.query().is_none() {
        text.trim_end_matches('/').to_owned()
    } else {
        text
    }
}

/// Whether `url` is on the origin of `base` (where a bearer token may go).
pub fn same_origin(base: &str, url: &str) -> bool {
    match (Url::parse(base), Url::parse(url)) {
        (Ok(base), Ok(url)) => origin(&base) == origin(&url),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn protected_resource_metadata_is_looked_for_in_rfc_9728_order() {
        assert_eq!(
            protected_resource_metadata_urls("https://Example.com:443/public/mcp", None).unwrap(),
            [
                "https://example.com/.well-known/oauth-protected-resource/public/mcp",
                "https://example.com/.well-known/oauth-protected-resource"
            ]
        );
        assert_eq!(
            protected_resource_metadata_urls("http://127.0.0.1:9/", None).unwrap(),
            ["http://127.0.0.1:9/.well-known/oauth-protected-resource"]
        );
        assert_eq!(
            protected_resource_metadata_urls("http://h/mcp", Some("http://h/custom/metadata/location.json")).unwrap(),
            ["http://h/custom/metadata/location.json"],
            "the challenge's URL, and only it"
        );
        assert!(protected_resource_metadata_urls("http://h/mcp", Some("file:///etc/passwd")).is_err());
        assert!(protected_resource_metadata_urls("mcp.example.com", None).is_err());
    }

    #[test]
    fn authorization_server_metadata_is_looked_for_in_the_specifications_order() {
        assert_eq!(
            authorization_server_metadata_urls("https://auth.example.com/tenant1").unwrap(),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server/tenant1",
                "https://auth.example.com/.well-known/openid-configuration/tenant1",
                "https://auth.example.com/tenant1/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            authorization_server_metadata_urls("https://auth.example.com").unwrap(),
            [
                "https://auth.example.com/.well-known/oauth-authorization-server",
                "https://auth.example.com/.well-known/openid-configuration"
            ]
        );
        assert_eq!(authorization_server_metadata_urls("https://a/").unwrap().len(), 2);
        assert!(authorization_server_metadata_urls("https://a/?x=1").is_err());
        assert!(authorization_server_metadata_urls("ftp://a").is_err());
    }

    #[test]
    fn the_resource_must_be_the_endpoint_or_a_parent_on_the_same_origin() {
        let server = "http://localhost:3000/mcp";
        assert!(resource_matches(server, "http://localhost:3000/mcp"));
        assert!(resource_matches(server, "http://localhost:3000"));
        assert!(resource_matches(server, "HTTP://LOCALHOST:3000/mcp/"));
        assert!(resource_matches("https://h:443/a/mcp", "https://h/a"));
        assert!(!resource_matches(server, "https://evil.example.com/mcp"));
        assert!(!resource_matches(server, "http://localhost:3001/mcp"));
        assert!(!resource_matches(server, "http://localhost:3000/mc"));
        assert!(!resource_matches(server, "http://localhost:3000/mcp/deeper"));
        assert!(!resource_matches(server, "http://localhost:3000/mcp#f"));
        assert!(!resource_matches(server, "not a url"));
        assert!(check_resource(server, "https://evil.example.com/mcp").unwrap_err().contains("evil.example.com"));
    }

    #[test]
    fn the_issuer_is_compared_exactly() {
        assert!(check_issuer("http://a:1", Some("http://a:1")).is_ok());
        assert!(check_issuer("http://a:1", Some("http://a:1/")).is_err());
        assert!(check_issuer("http://a:1", Some("https://attacker.example.com")).is_err());
        assert!(check_issuer("http://a:1", None).is_err());
    }

    #[test]
    fn canonical_resources_and_origins() {
        assert_eq!(canonical_resource("HTTPS://Mcp.Example.com:443/"), "https://mcp.example.com");
        assert_eq!(canonical_resource("https://mcp.example.com/mcp#x"), "https://mcp.example.com/mcp");
        assert_eq!(canonical_resource("http://h:8080/server/mcp"), "http://h:8080/server/mcp");
        assert_eq!(canonical_resource("nonsense"), "nonsense");
        assert!(same_origin("http://h:1/mcp", "http://H:1/messages?s=1"));
        assert!(!same_origin("http://h:1/mcp", "http://h:2/mcp"));
        assert!(!same_origin("http://h:1/mcp", "garbage"));
    }
}
