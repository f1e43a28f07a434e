//! What a protected resource says about itself: the `WWW-Authenticate: Bearer` challenge of a
//! `401` / `403` (RFC 6750 §3, with RFC 9728's `resource_metadata`), and the RFC 9728
//! protected-resource metadata document with the URL it is served at.

use serde_json::{json, Value};

use super::oauth::OAuthSettings;

/// The well-known path prefix of protected-resource metadata (RFC 9728 §3).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// Which error a challenge reports.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ChallengeError {
    /// No credential: the challenge names no error.
    None,
    /// A token that is not valid.
    InvalidToken,
    /// A valid token without a needed scope (`403`).
    InsufficientScope,
}

/// Appends `value` as an RFC 9110 quoted-string: `"` and `\` escaped, control characters
/// (which a header cannot carry) left out.
fn push_quoted(out: &mut String, value: &str) {
    out.push('"');
    for c in value.chars() {
        match c {
            '"' | '\\' => {
                out.push('\\');
                out.push(c);
            }
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
    out.push('"');
}

/// The `WWW-Authenticate` value: `Bearer resource_metadata="…"`, then `scope="…"` when scopes
/// are named, then `error="…"` and `error_description="…"` for an error.
pub fn www_authenticate(metadata_url: &str, scopes: &[&str], error: ChallengeError, description: &str) -> String {
    let mut out = String::with_capacity(96 + metadata_url.len());
    out.push_str("Bearer resource_metadata=");
    push_quoted(&mut out, metadata_url);
    if !scopes.is_empty() {
        out.push_str(", scope=");
        push_quoted(&mut out, &scopes.join(" "));
    }
    let code = match error {
        ChallengeError::None => return out,
        ChallengeError::InvalidToken => "invalid_token",
        ChallengeError::InsufficientScope => "insufficient_scope",
    };
    out.push_str(", error=\"");
    out.push_str(code);
    out.push('"');
    if !description.is_empty() {
        out.push_str(", error_description=");
        push_quoted(&mut out, description);
    }
    out
}

/// Where the metadata of `resource` is served: the well-known prefix inserted between its
/// authority and its path (`http://h/mcp` → `http://h/.well-known/oauth-protected-resource/mcp`).
pub fn metadata_url(resource: &str) -> String {
    let (scheme, rest) = resource.split_once("://").unwrap_or(("http", resource));
    let (authority, path) = match rest.find('/') {
        Some(i) => (&rest[..i], &rest[i..]),
        None => (rest, ""),
    };
    let path = path.split(['?', '#']).next().unwrap_or("").trim_end_matches('/');
    format!("{scheme}://{authority}{METADATA_PATH}{path}")
}

/// The RFC 9728 document: `resource`, `authorization_servers`, `scopes_supported`,
/// `bearer_methods_supported` (the `Authorization` header only).
pub fn metadata_document(settings: &OAuthSettings, resource: &str, name: &str) -> Value {
    let mut doc = json!({
        "resource": resource,
        "authorization_servers": settings.issuers,
        "bearer_methods_supported": ["header"],
        "resource_name": name,
    });
    let scopes = settings.scopes_supported();
    if !scopes.is_empty() {
        doc["scopes_supported"] = json!(scopes);
    }
    doc
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn challenges_carry_metadata_scope_and_error_quoted() {
        let url = "http://127.0.0.1:1/.well-known/oauth-protected-resource/mcp";
        assert_eq!(
            www_authenticate(url, &[], ChallengeError::None, "x"),
            format!("Bearer resource_metadata=\"{url}\"")
        );
        assert_eq!(
            www_authenticate(url, &["mcp", "files:write"], ChallengeError::InsufficientScope, "needs \"files:write\""),
            format!(
                "Bearer resource_metadata=\"{url}\", scope=\"mcp files:write\", error=\"insufficient_scope\", \
                 error_description=\"needs \\\"files:write\\\"\""
            )
        );
        let odd = www_authenticate("http://h/a\"b\\c\n", &[], ChallengeError::InvalidToken, "");
        assert_eq!(odd, "Bearer resource_metadata=\"http://h/a\\\"b\\\\c\", error=\"invalid_token\"");
    }

    #[test]
    fn the_metadata_url_inserts_the_well_known_prefix() {
        assert_eq!(
            metadata_url("http://127.0.0.1:8791/mcp"),
            "http://127.0.0.1:8791/.well-known/oauth-protected-resource/mcp"
        );
        assert_eq!(metadata_url("https://ex.com"), "https://ex.com/.well-known/oauth-protected-resource");
        assert_eq!(
            metadata_url("https://ex.com/t/mcp/?x=1"),
            "https://ex.com/.well-known/oauth-protected-resource/t/mcp"
        );
    }

    #[test]
    fn the_document_lists_issuers_and_every_scope() {
        let settings = OAuthSettings {
            issuers: vec!["https://as".into()],
            scopes: vec!["mcp".into()],
            ..OAuthSettings::default()
        };
        let doc = metadata_document(&settings, "http://h/mcp", "mcpd");
        assert_eq!(doc["resource"], "http://h/mcp");
        assert_eq!(doc["authorization_servers"], json!(["https://as"]));
        assert_eq!(doc["scopes_supported"], json!(["mcp"]));
        assert_eq!(doc["bearer_methods_supported"], json!(["header"]));
        let none = metadata_document(&OAuthSettings::default(), "http://h/mcp", "mcpd");
        assert!(none.get("scopes_supported").is_none());
    }
}
