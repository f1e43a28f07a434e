//! The decisions of the flow that need no I/O: which scopes to ask for (the MCP specification's
//! scope selection and step-up union), how to authenticate at the token endpoint, which
//! `application_type` to register, and whether an authorization response's `iss` may be
//! accepted (RFC 9207 §2.4 as the MCP specification applies it).

use super::metadata::AuthorizationServerMetadata;

/// The `offline_access` scope (asked for only when the authorization server lists it).
pub const OFFLINE_ACCESS: &str = "offline_access";

/// Scopes, space-separated, as a list without repeats (order kept).
pub fn split_scopes(scopes: &str) -> Vec<String> {
    let mut list: Vec<String> = Vec::new();
    for scope in scopes.split_ascii_whitespace() {
        if !list.iter().any(|s| s == scope) {
            list.push(scope.to_owned());
        }
    }
    list
}

/// The scopes of a first authorization: configured ones, else the challenge's `scope`, else the
/// resource's `scopes_supported`, else none.
pub fn initial_scopes(
    configured: Option<&str>,
    challenge: Option<&str>,
    scopes_supported: Option<&[String]>,
) -> Vec<String> {
    if let Some(scopes) = configured.or(challenge).filter(|s| !s.trim().is_empty()) {
        return split_scopes(scopes);
    }
    scopes_supported.map(|s| split_scopes(&s.join(" "))).unwrap_or_default()
}

/// The scopes of a step-up authorization: those asked for before, with the challenge's added.
pub fn step_up_scopes(previous: &[String], challenge: Option<&str>) -> Vec<String> {
    let mut scopes = previous.to_vec();
    for scope in split_scopes(challenge.unwrap_or_default()) {
        if !scopes.contains(&scope) {
            scopes.push(scope);
        }
    }
    scopes
}

/// Adds `offline_access` when the authorization server lists it (and nothing else does).
pub fn with_offline_access(mut scopes: Vec<String>, server: &AuthorizationServerMetadata) -> Vec<String> {
    if server.supports_scope(OFFLINE_ACCESS) && !scopes.iter().any(|s| s == OFFLINE_ACCESS) {
        scopes.push(OFFLINE_ACCESS.to_owned());
    }
    scopes
}

/// How the client authenticates at the token endpoint.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum TokenAuth {
    /// HTTP Basic with the client id and secret.
    ClientSecretBasic,
    /// The client id and secret in the form body.
    ClientSecretPost,
    /// The client id only (a public client).
    None,
    /// A signed JWT assertion (RFC 7523).
    PrivateKeyJwt,
}

impl TokenAuth {
    /// The RFC 7591 name.
    pub fn as_str(self) -> &'static str {
        match self {
            TokenAuth::ClientSecretBasic => "client_secret_basic",
            TokenAuth::ClientSecretPost => "client_secret_post",
            TokenAuth::None => "none",
            TokenAuth::PrivateKeyJwt => "private_key_jwt",
        }
    }

    fn parse(name: &str) -> Option<TokenAuth> {
        Some(match name {
            "client_secret_basic" => TokenAuth::ClientSecretBasic,
            "client_secret_post" => TokenAuth::ClientSecretPost,
            "none" => TokenAuth::None,
            "private_key_jwt" => TokenAuth::PrivateKeyJwt,
            _ => return None,
        })
    }
}

/// The token endpoint authentication: the method agreed at registration when there is one;
/// else, with a secret, `client_secret_basic` or `client_secret_post` as the server advertises
/// (absent list: `client_secret_basic`, RFC 8414's default; a list with neither: `none`); without
/// a secret, `none`.
pub fn token_auth(registered: Option<&str>, has_secret: bool, supported: Option<&[String]>) -> TokenAuth {
    if let Some(method) = registered.and_then(TokenAuth::parse) {
        if has_secret || matches!(method, TokenAuth::None | TokenAuth::PrivateKeyJwt) {
            return method;
        }
    }
    if !has_secret {
        return TokenAuth::None;
    }
    let Some(supported) = supported else { return TokenAuth::ClientSecretBasic };
    let listed = |name: &str| supported.iter().any(|s| s == name);
    if listed("client_secret_basic") {
        TokenAuth::ClientSecretBasic
    } else if listed("client_secret_post") {
        TokenAuth::ClientSecretPost
    } else {
        TokenAuth::None
    }
}

/// The method a public client asks for in dynamic registration: `none` when the server lists it
/// (or lists nothing), else the first secret-based one it lists.
pub fn registration_auth(supported: Option<&[String]>) -> TokenAuth {
    let Some(supported) = supported else { return TokenAuth::None };
    [TokenAuth::None, TokenAuth::ClientSecretBasic, TokenAuth::ClientSecretPost]
        .into_iter()
        .find(|m| supported.iter().any(|s| s == m.as_str()))
        .unwrap_or(TokenAuth::None)
}

/// The OpenID `application_type` for a redirect URI: `native` for loopback and custom-scheme
/// redirects (a program on the user's machine), `web` for a remote `https` one.
pub fn application_type(redirect_uri: &str) -> &'static str {
    match url::Url::parse(redirect_uri) {
        Ok(url) if url.scheme() == "https" || url.scheme() == "http" => match url.host_str() {
            Some("localhost" | "127.0.0.1" | "[::1]") | None => "native",
            Some(_) => "web",
        },
        _ => "native",
    }
}

/// RFC 9207 §2.4 as the MCP specification tables it: a present `iss` must equal the recorded
/// issuer by simple string comparison whether or not the server advertises it; an absent one is
/// refused only when the server advertises `authorization_response_iss_parameter_supported`.
pub fn check_iss(advertised: Option<bool>, iss: Option<&str>, recorded_issuer: &str) -> Result<(), String> {
    match iss {
        Some(iss) if iss == recorded_issuer => Ok(()),
        Some(iss) => Err(format!("the authorization response came from issuer {iss:?}, expected {recorded_issuer:?}")),
        None if advertised == Some(true) => {
            Err(format!("the authorization response has no iss although {recorded_issuer:?} advertises it"))
        }
        None => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn list(items: &[&str]) -> Vec<String> {
        items.iter().map(|s| s.to_string()).collect()
    }

    #[test]
    fn scope_selection_follows_the_specification() {
        let supported = list(&["mcp:basic", "mcp:read"]);
        assert_eq!(initial_scopes(None, Some("mcp:basic"), Some(&supported)), ["mcp:basic"]);
        assert_eq!(initial_scopes(None, None, Some(&supported)), ["mcp:basic", "mcp:read"]);
        assert!(initial_scopes(None, None, None).is_empty());
        assert!(initial_scopes(None, Some("  "), None).is_empty());
        assert_eq!(initial_scopes(Some("x y x"), Some("mcp:basic"), None), ["x", "y"]);
        assert_eq!(step_up_scopes(&list(&["mcp:basic"]), Some("mcp:write mcp:basic")), ["mcp:basic", "mcp:write"]);
        assert_eq!(step_up_scopes(&[], None), Vec::<String>::new());
    }

    #[test]
    fn offline_access_only_when_the_server_lists_it() {
        let mut server = AuthorizationServerMetadata::default();
        assert_eq!(with_offline_access(list(&["a"]), &server), ["a"]);
        server.scopes_supported = Some(list(&["a", OFFLINE_ACCESS]));
        assert_eq!(with_offline_access(list(&["a"]), &server), ["a", OFFLINE_ACCESS]);
        assert_eq!(with_offline_access(list(&[OFFLINE_ACCESS]), &server), [OFFLINE_ACCESS]);
    }

    #[test]
    fn token_endpoint_authentication_is_what_the_server_advertises() {
        let basic = list(&["client_secret_basic"]);
        let post = list(&["client_secret_post"]);
        let none = list(&["none"]);
        assert_eq!(token_auth(None, true, Some(&basic)), TokenAuth::ClientSecretBasic);
        assert_eq!(token_auth(None, true, Some(&post)), TokenAuth::ClientSecretPost);
        assert_eq!(token_auth(None, true, Some(&none)), TokenAuth::None);
        assert_eq!(token_auth(None, true, None), TokenAuth::ClientSecretBasic);
        assert_eq!(token_auth(None, false, Some(&basic)), TokenAuth::None);
        assert_eq!(token_auth(Some("client_secret_post"), true, Some(&basic)), TokenAuth::ClientSecretPost);
        assert_eq!(token_auth(Some("client_secret_post"), false, None), TokenAuth::None, "no secret to post");
        assert_eq!(token_auth(Some("bogus"), true, Some(&post)), TokenAuth::ClientSecretPost);
        assert_eq!(registration_auth(Some(&list(&["client_secret_post", "none"]))), TokenAuth::None);
        assert_eq!(registration_auth(Some(&post)), TokenAuth::ClientSecretPost);
        assert_eq!(registration_auth(None), TokenAuth::None);
        assert_eq!(TokenAuth::PrivateKeyJwt.as_str(), "private_key_jwt");
    }

    #[test]
    fn application_type_follows_the_redirect() {
        assert_eq!(application_type("http://127.0.0.1:5000/callback"), "native");
        assert_eq!(application_type("http://localhost/cb"), "native");
        assert_eq!(application_type("com.example.app:/cb"), "native");
        assert_eq!(application_type("https://app.example.com/cb"), "web");
    }

    #[test]
    fn iss_is_checked_as_rfc_9207_and_the_mcp_table_say() {
        let issuer = "http://localhost:4000";
        assert!(check_iss(Some(true), Some(issuer), issuer).is_ok());
        assert!(check_iss(Some(true), None, issuer).is_err(), "advertised but missing");
        assert!(check_iss(Some(true), Some("https://evil.example.com"), issuer).is_err());
        assert!(check_iss(None, Some("https://evil.example.com"), issuer).is_err(), "present but not advertised");
        assert!(check_iss(Some(true), Some("http://localhost:4000/"), issuer).is_err(), "no normalization");
        assert!(check_iss(None, None, issuer).is_ok());
        assert!(check_iss(Some(false), None, issuer).is_ok());
    }
}
