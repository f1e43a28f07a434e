//! Getting a client id and tokens from an authorization server: registration (pre-registered
//! credentials, a Client ID Metadata Document URL when the server accepts them, else RFC 7591
//! dynamic registration with `application_type`), and the token requests through the `oauth2`
//! crate — authorization code with PKCE S256, `state` and the RFC 8707 `resource` (same value in
//! the authorization and token requests), refresh, and `client_credentials` with a secret or an
//! RFC 7523 `private_key_jwt` assertion — each authenticated at the token endpoint as the server
//! advertises.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use mcpd::client::oauth::metadata::{AuthorizationServerMetadata, RegistrationResponse};
use mcpd::client::oauth::rules::{self, TokenAuth};
use mcpd::telemetry::semconv;
use oauth2::basic::BasicClient;
use oauth2::{
    AuthType, AuthUrl, AuthorizationCode, ClientId, ClientSecret, CsrfToken, EndpointNotSet, EndpointSet,
    PkceCodeChallenge, RedirectUrl, RefreshToken, RequestTokenError, Scope, TokenResponse, TokenUrl,
};
use opentelemetry::trace::SpanKind;
use opentelemetry::KeyValue;
use serde_json::json;

use super::discover::Discovered;
use super::http::AsHttp;
use super::{AuthError, Credentials, Grant, OAuthConfig, UserAgent};
use crate::telemetry;

/// How long a `private_key_jwt` assertion is valid.
const ASSERTION_LIFETIME: Duration = Duration::from_secs(300);
const JWT_BEARER: &str = "urn:ietf:params:oauth:client-assertion-type:jwt-bearer";

/// The client as one authorization server knows it.
#[derive(Debug, Clone)]
pub(crate) struct Client {
    pub(crate) id: String,
    pub(crate) secret: Option<String>,
    pub(crate) auth: TokenAuth,
    pub(crate) redirect_uri: Option<String>,
}

/// Tokens from a token response.
pub(crate) struct Tokens {
    pub(crate) access_token: String,
    pub(crate) refresh_token: Option<String>,
    pub(crate) expires_at: Option<u64>,
    pub(crate) scope: Option<String>,
}

/// Seconds since the Unix epoch.
pub(crate) fn now() -> u64 {
    SystemTime::now().duration_since(UNIX_EPOCH).map_or(0, |d| d.as_secs())
}

/// The client registered at the discovered server: what is stored for it, else pre-registered,
/// else a Client ID Metadata Document URL (when the server accepts them), else dynamic
/// registration.
pub(crate) async fn register(
    http: &AsHttp,
    cfg: &OAuthConfig,
    found: &Discovered,
    stored: Option<&Credentials>,
    redirect_uri: Option<&str>,
) -> Result<Client, AuthError> {
    let server = &found.server;
    let supported = server.token_endpoint_auth_methods_supported.as_deref();
    let registration = &cfg.registration;
    if let Some(stored) = stored.filter(|c| !c.client_id.is_empty()) {
        let mut client = client_of(cfg, stored, server);
        client.redirect_uri = client.redirect_uri.or_else(|| redirect_uri.map(str::to_owned));
        return Ok(client);
    }
    if let Some(id) = &registration.client_id {
        let secret = registration.client_secret.clone();
        let auth = match cfg.grant {
            Grant::PrivateKeyJwt { .. } => TokenAuth::PrivateKeyJwt,
            _ => rules::token_auth(None, secret.is_some(), supported),
        };
        return Ok(Client { id: id.clone(), secret, auth, redirect_uri: redirect_uri.map(str::to_owned) });
    }
    if let (Some(true), Some(url)) = (server.client_id_metadata_document_supported, &registration.client_metadata_url) {
        return Ok(Client {
            id: url.clone(),
            secret: None,
            auth: TokenAuth::None,
            redirect_uri: redirect_uri.map(str::to_owned),
        });
    }
    let Some(endpoint) = &server.registration_endpoint else {
        return Err(AuthError::Flow(format!(
            "{} offers no dynamic registration and no client id is configured for it",
            found.issuer
        )));
    };
    let redirect_uri = redirect_uri
        .ok_or_else(|| AuthError::Flow("dynamic registration needs a redirect URI (a user agent)".into()))?;
    let method = rules::registration_auth(supported);
    let mut grant_types = vec!["authorization_code"];
    if server.supports_refresh() {
        grant_types.push("refresh_token");
    }
    let body = json!({
        "client_name": registration.client_name,
        "redirect_uris": [redirect_uri],
        "grant_types": grant_types,
        "response_types": ["code"],
        "token_endpoint_auth_method": method.as_str(),
        "application_type": rules::application_type(redirect_uri),
    });
    let answer: RegistrationResponse = http.post_json(endpoint, &body, "dynamic client registration").await?;
    let auth = rules::token_auth(
        answer.token_endpoint_auth_method.as_deref().or(Some(method.as_str())),
        answer.client_secret.is_some(),
        supported,
    );
    Ok(Client { id: answer.client_id, secret: answer.client_secret, auth, redirect_uri: Some(redirect_uri.to_owned()) })
}

/// The client of stored credentials; a pre-registered client's secret comes from the
/// configuration (it is never stored).
pub(crate) fn client_of(cfg: &OAuthConfig, credentials: &Credentials, server: &AuthorizationServerMetadata) -> Client {
    let registration = &cfg.registration;
    let configured = registration.client_id.as_deref() == Some(credentials.client_id.as_str());
    let secret =
        credentials.client_secret.clone().or_else(|| registration.client_secret.clone().filter(|_| configured));
    let auth = match (&cfg.grant, configured) {
        (Grant::PrivateKeyJwt { .. }, true) => TokenAuth::PrivateKeyJwt,
        _ => rules::token_auth(
            credentials.token_endpoint_auth_method.as_deref(),
            secret.is_some(),
            server.token_endpoint_auth_methods_supported.as_deref(),
        ),
    };
    Client { id: credentials.client_id.clone(), secret, auth, redirect_uri: credentials.redirect_uri.clone() }
}

type TokenClient = BasicClient<EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointNotSet, EndpointSet>;

fn token_client(client: &Client, server: &AuthorizationServerMetadata) -> Result<TokenClient, AuthError> {
    let endpoint = server
        .token_endpoint
        .clone()
        .ok_or_else(|| AuthError::Discovery("the authorization server metadata has no token_endpoint".into()))?;
    let token_url = TokenUrl::new(endpoint).map_err(|e| AuthError::Discovery(format!("bad token_endpoint: {e}")))?;
    let mut oauth = BasicClient::new(ClientId::new(client.id.clone())).set_token_uri(token_url);
    oauth = match (client.auth, &client.secret) {
        (TokenAuth::ClientSecretBasic, Some(secret)) => {
            oauth.set_client_secret(ClientSecret::new(secret.clone())).set_auth_type(AuthType::BasicAuth)
        }
        (TokenAuth::ClientSecretPost, Some(secret)) => {
            oauth.set_client_secret(ClientSecret::new(secret.clone())).set_auth_type(AuthType::RequestBody)
        }
        _ => oauth.set_auth_type(AuthType::RequestBody),
    };
    if let Some(redirect) = &client.redirect_uri {
        let redirect =
            RedirectUrl::new(redirect.clone()).map_err(|e| AuthError::Flow(format!("bad redirect URI: {e}")))?;
        oauth = oauth.set_redirect_uri(redirect);
    }
    Ok(oauth)
}

fn tokens<R: TokenResponse>(response: &R, asked: &[String]) -> Tokens {
    let scope = match response.scopes() {
        Some(scopes) => Some(scopes.iter().map(|s| s.as_str()).collect::<Vec<_>>().join(" ")),
        None if asked.is_empty() => None,
        None => Some(asked.join(" ")),
    };
    Tokens {
        access_token: response.access_token().secret().clone(),
        refresh_token: response.refresh_token().map(|t| t.secret().clone()),
        expires_at: response.expires_in().map(|d| now().saturating_add(d.as_secs())),
        scope,
    }
}

fn token_error<E: std::error::Error, T: oauth2::ErrorResponse>(
    what: &str,
    error: RequestTokenError<E, T>,
) -> AuthError {
    AuthError::Flow(match error {
        RequestTokenError::ServerResponse(response) => format!("{what} refused: {response}"),
        RequestTokenError::Request(e) => format!("{what} failed: {e}"),
        RequestTokenError::Parse(e, _) => format!("{what}: the answer is not a token response: {e}"),
        RequestTokenError::Other(e) => format!("{what} failed: {e}"),
    })
}

/// The authorization-code flow: PKCE S256, `state`, `resource`, approval by `agent`, the
/// callback checked (`iss` as RFC 9207 says, then `state`, then `error`), the code exchanged.
pub(crate) async fn authorization_code(
    http: &AsHttp,
    agent: &dyn UserAgent,
    client: &Client,
    found: &Discovered,
    scopes: &[String],
) -> Result<Tokens, AuthError> {
    let server = &found.server;
    let endpoint = server.authorization_endpoint.clone().ok_or_else(|| {
        AuthError::Discovery("the authorization server metadata has no authorization_endpoint".into())
    })?;
    let auth_url =
        AuthUrl::new(endpoint).map_err(|e| AuthError::Discovery(format!("bad authorization_endpoint: {e}")))?;
    let oauth = token_client(client, server)?.set_auth_uri(auth_url);
    let resource = found.resource.resource.as_str();
    let (challenge, verifier) = PkceCodeChallenge::new_random_sha256();
    let (url, state) = oauth
        .authorize_url(CsrfToken::new_random)
        .add_scopes(scopes.iter().cloned().map(Scope::new))
        .add_extra_param("resource", resource)
        .set_pkce_challenge(challenge)
        .url();
    let callback = agent.authorize(url.to_string()).await?;
    // The issuer is checked first: a response from the wrong server is not acted on at all.
    rules::check_iss(server.authorization_response_iss_parameter_supported, callback.iss.as_deref(), &found.issuer)
        .map_err(AuthError::Flow)?;
    if callback.state.as_deref() != Some(state.secret().as_str()) {
        return Err(AuthError::Flow("the authorization response's state does not match the request".into()));
    }
    if let Some(error) = &callback.error {
        let detail = callback.error_description.as_deref().map(|d| format!(": {d}")).unwrap_or_default();
        return Err(AuthError::Flow(format!("the authorization server refused: {error}{detail}")));
    }
    let code = callback.code.clone().ok_or_else(|| AuthError::Flow("the authorization response has no code".into()))?;
    let request = oauth
        .exchange_code(AuthorizationCode::new(code))
        .set_pkce_verifier(verifier)
        .add_extra_param("resource", resource)
        .request_async(http);
    let response = token_span("authorization_code", server, async {
        request.await.map_err(|e| token_error("the token request", e))
    })
    .await?;
    Ok(tokens(&response, scopes))
}

/// A refresh-token grant (same `resource`).
pub(crate) async fn refresh(
    http: &AsHttp,
    client: &Client,
    server: &AuthorizationServerMetadata,
    resource: &str,
    refresh_token: &str,
    scopes: &[String],
) -> Result<Tokens, AuthError> {
    let oauth = token_client(client, server)?;
    let refresh_token = RefreshToken::new(refresh_token.to_owned());
    let request =
        oauth.exchange_refresh_token(&refresh_token).add_extra_param("resource", resource).request_async(http);
    let response = token_span("refresh_token", server, async {
        request.await.map_err(|e| token_error("refreshing the token", e))
    })
    .await?;
    Ok(tokens(&response, scopes))
}

/// A `client_credentials` grant, authenticated with the secret or a signed assertion.
pub(crate) async fn client_credentials(
    http: &AsHttp,
    cfg: &OAuthConfig,
    client: &Client,
    found: &Discovered,
    scopes: &[String],
) -> Result<Tokens, AuthError> {
    let oauth = token_client(client, &found.server)?;
    let mut request = oauth
        .exchange_client_credentials()
        .add_scopes(scopes.iter().cloned().map(Scope::new))
        .add_extra_param("resource", found.resource.resource.clone());
    if let Grant::PrivateKeyJwt { private_key_pem, algorithm } = &cfg.grant {
        let assertion = assertion(&client.id, &found.issuer, private_key_pem, algorithm)?;
        request =
            request.add_extra_param("client_assertion_type", JWT_BEARER).add_extra_param("client_assertion", assertion);
    }
    let request = request.request_async(http);
    let response = token_span("client_credentials", &found.server, async {
        request.await.map_err(|e| token_error("the client_credentials request", e))
    })
    .await?;
    Ok(tokens(&response, scopes))
}

/// A token request under its span (CLIENT, `oauth token`, a child of the request that needed
/// the token): the grant type and the token endpoint's host and port, never a token, a code, a
/// secret or an assertion; a refusal's message (the server's error code and description).
async fn token_span<T>(
    grant: &'static str,
    server: &AuthorizationServerMetadata,
    request: impl std::future::Future<Output = Result<T, AuthError>>,
) -> Result<T, AuthError> {
    let span = telemetry::child_span(SpanKind::Client, "oauth token", || {
        let mut attributes = vec![KeyValue::new("oauth.grant_type", grant)];
        let endpoint = server.token_endpoint.as_deref().and_then(|url| url::Url::parse(url).ok());
        if let Some(endpoint) = endpoint {
            if let Some(host) = endpoint.host_str() {
                attributes.push(KeyValue::new(semconv::SERVER_ADDRESS, host.to_owned()));
            }
            if let Some(port) = endpoint.port_or_known_default() {
                attributes.push(KeyValue::new(semconv::SERVER_PORT, i64::from(port)));
            }
        }
        attributes
    });
    let outcome = span.scope(request).await;
    if let Err(error) = &outcome {
        span.fail(semconv::Failure::Other, &error.to_string());
    }
    span.end();
    outcome
}

/// An RFC 7523 client assertion: `iss` = `sub` = the client id, `aud` = the issuer identifier
/// (RFC 7523bis), a random `jti`, `iat` and `exp`.
fn assertion(client_id: &str, issuer: &str, pem: &str, algorithm: &str) -> Result<String, AuthError> {
    use jsonwebtoken::{Algorithm, EncodingKey, Header};
    let bad = |what: String| AuthError::Flow(format!("private_key_jwt: {what}"));
    let algorithm: Algorithm = algorithm.parse().map_err(|_| bad(format!("unknown algorithm {algorithm}")))?;
    let key = match algorithm {
        Algorithm::ES256 | Algorithm::ES384 => EncodingKey::from_ec_pem(pem.as_bytes()),
        Algorithm::EdDSA => EncodingKey::from_ed_pem(pem.as_bytes()),
        Algorithm::HS256 | Algorithm::HS384 | Algorithm::HS512 => {
            return Err(bad("an HMAC algorithm is not a private key algorithm".into()))
        }
        _ => EncodingKey::from_rsa_pem(pem.as_bytes()),
    }
    .map_err(|e| bad(format!("the private key cannot be read: {e}")))?;
    let mut jti = [0u8; 16];
    getrandom::fill(&mut jti).map_err(|e| bad(format!("no randomness: {e}")))?;
    let issued = now();
    let claims = json!({
        "iss": client_id,
        "sub": client_id,
        "aud": issuer,
        "jti": jti.iter().map(|b| format!("{b:02x}")).collect::<String>(),
        "iat": issued,
        "exp": issued + ASSERTION_LIFETIME.as_secs(),
    });
    jsonwebtoken::encode(&Header::new(algorithm), &claims, &key).map_err(|e| bad(format!("signing failed: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    // A P-256 key pair, the private key in PKCS#8 as the conformance suite hands one out
    // (generated for this test with openssl).
    const EC_KEY: &str = "-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgFfN+kb9AdicwK3cJ
BgWcTlya5HgsI5ODHFJLpY+eW1mhRANCAARH1VZTYZmaNKwP7ect+VZJiV8e9Q8W
NgdPe3TlkDQX/ueYJ0rZ7PdPwxAw7a4sQaTHXLWis9Aht337ABaDq6m1
-----END PRIVATE KEY-----";
    const EC_PUBLIC_KEY: &str = "-----BEGIN PUBLIC KEY-----
MFkwEwYHKoZIzj0CAQYIKoZIzj0DAQcDQgAER9VWU2GZmjSsD+3nLflWSYlfHvUP
FjYHT3t05ZA0F/7nmCdK2ez3T8MQMO2uLEGkx1y1orPQIbd9+wAWg6uptQ==
-----END PUBLIC KEY-----";

    #[test]
    fn a_client_assertion_names_the_client_and_the_issuer() {
        let jwt = assertion("client-1", "http://as.example", EC_KEY, "ES256").unwrap();
        let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::ES256);
        validation.set_audience(&["http://as.example"]);
        let key = jsonwebtoken::DecodingKey::from_ec_pem(EC_PUBLIC_KEY.as_bytes()).unwrap();
        let claims = jsonwebtoken::decode::<serde_json::Value>(&jwt, &key, &validation).unwrap().claims;
        assert_eq!((claims["iss"].as_str(), claims["sub"].as_str()), (Some("client-1"), Some("client-1")));
        assert_eq!(claims["jti"].as_str().unwrap().len(), 32);
        assert!(claims["exp"].as_u64().unwrap() > claims["iat"].as_u64().unwrap());
        assert!(matches!(assertion("c", "i", EC_KEY, "HS256"), Err(AuthError::Flow(m)) if m.contains("HMAC")));
        assert!(
            matches!(assertion("c", "i", "not a key", "ES256"), Err(AuthError::Flow(m)) if m.contains("cannot be read"))
        );
        assert!(
            matches!(assertion("c", "i", EC_KEY, "XX1"), Err(AuthError::Flow(m)) if m.contains("unknown algorithm"))
        );
    }
}
