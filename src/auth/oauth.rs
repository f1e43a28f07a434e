//! OAuth 2.1 resource-server rules: the configuration ([`OAuthSettings`]), what a JWT's header
//! may say ([`TokenHeader`], the algorithm allow-list), the checks of a *verified* token's claims
//! ([`Claims::check`]: issuer, audience, lifetime with leeway, scopes) and the outcome reasons the
//! metrics count ([`AuthOutcome`]). Signatures, key sets and fetches are the runtime's.

use std::fmt;
use std::time::Duration;

use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use base64::Engine as _;
use serde::{Deserialize, Serialize};

pub use super::granted::Granted;
use super::scopes::ToolScopes;

/// Default clock leeway for `exp` and `nbf`.
pub const DEFAULT_LEEWAY: Duration = Duration::from_secs(60);
/// Default shortest time between two JWKS fetches of one issuer caused by an unknown `kid`.
pub const DEFAULT_JWKS_REFRESH: Duration = Duration::from_secs(30);
/// Default time limit of one fetch (metadata, key set, introspection).
pub const DEFAULT_FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// Default cap on the body of one fetch.
pub const DEFAULT_MAX_FETCH_BYTES: usize = 256 * 1024;
/// Default time an introspection answer is reused (never past the token's `exp`).
pub const DEFAULT_INTROSPECTION_CACHE: Duration = Duration::from_secs(60);
/// Longest access token read at all (a longer `Authorization` value is malformed).
pub const MAX_TOKEN_BYTES: usize = 16 * 1024;

/// The asymmetric JWS algorithms a token may be signed with. `none` and every HMAC (`HS*`) are
/// refused before any key is looked at, so a token "signed" with a public key as an HMAC secret
/// can never verify.
pub const ALLOWED_ALGORITHMS: [&str; 9] =
    ["RS256", "RS384", "RS512", "PS256", "PS384", "PS512", "ES256", "ES384", "EdDSA"];

/// A secret that never shows in `Debug` output or logs.
#[derive(Clone, Default, PartialEq, Eq)]
pub struct Secret(String);

impl Secret {
    /// Wraps a secret.
    pub fn new(secret: impl Into<String>) -> Self {
        Secret(secret.into())
    }

    /// The secret itself, for the one place that sends it.
    pub fn expose(&self) -> &str {
        &self.0
    }
}

impl fmt::Debug for Secret {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("<hidden>")
    }
}

/// RFC 7662 token introspection, for opaque (non-JWT) access tokens.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IntrospectionSettings {
    /// The introspection endpoint.
    pub url: String,
    /// The client id mcpd authenticates with (HTTP Basic).
    pub client_id: String,
    /// Its secret (from a file or the environment, never the command line).
    pub client_secret: Secret,
    /// How long an answer is reused for the same token (never past its `exp`).
    pub cache: Duration,
}

/// What turns mcpd into an OAuth 2.1 protected resource.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct OAuthSettings {
    /// The authorization servers whose tokens are accepted (their `issuer`, exactly).
    pub issuers: Vec<String>,
    /// This server's resource URL (the `aud` tokens must carry); `None`: the bound endpoint URL.
    pub resource: Option<String>,
    /// Scopes every request needs.
    pub scopes: Vec<String>,
    /// Scopes particular tools need besides.
    pub tool_scopes: ToolScopes,
    /// Introspection for tokens that are not JWTs.
    pub introspection: Option<IntrospectionSettings>,
    /// Clock leeway for `exp` / `nbf`.
    pub leeway: Duration,
    /// Shortest time between key-set fetches of one issuer caused by an unknown `kid`.
    pub jwks_refresh: Duration,
    /// Time limit of one fetch.
    pub fetch_timeout: Duration,
    /// Largest body of one fetch.
    pub max_fetch_bytes: usize,
    /// The scope that makes a token's caller an operator (it may read `/status` and
    /// `/metrics`).
    pub operator_scope: String,
}

/// The default [`OAuthSettings::operator_scope`].
pub const DEFAULT_OPERATOR_SCOPE: &str = "mcp:admin";

impl Default for OAuthSettings {
    fn default() -> Self {
        OAuthSettings {
            issuers: Vec::new(),
            resource: None,
            scopes: Vec::new(),
            tool_scopes: ToolScopes::default(),
            introspection: None,
            leeway: DEFAULT_LEEWAY,
            jwks_refresh: DEFAULT_JWKS_REFRESH,
            fetch_timeout: DEFAULT_FETCH_TIMEOUT,
            max_fetch_bytes: DEFAULT_MAX_FETCH_BYTES,
            operator_scope: DEFAULT_OPERATOR_SCOPE.to_owned(),
        }
    }
}

impl OAuthSettings {
    /// Every scope this server knows of (required ones, then per-tool ones), each once: the
    /// metadata's `scopes_supported`.
    pub fn scopes_supported(&self) -> Vec<&str> {
        let mut all: Vec<&str> = Vec::new();
        for scope in self.scopes.iter().map(String::as_str).chain(self.tool_scopes.all_scopes()) {
            if !all.contains(&scope) {
                all.push(scope);
            }
        }
        all
    }

    /// Whether `issuer` is one of the configured ones (exact comparison, as RFC 8414 says).
    pub fn trusts(&self, issuer: &str) -> bool {
        self.issuers.iter().any(|i| i == issuer)
    }
}

/// How one request's authentication ended: the reason label `/metrics` counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum AuthOutcome {
    /// A valid token.
    Ok,
    /// Admitted by an API key (with OAuth on as well).
    ApiKey,
    /// No credential at all.
    Missing,
    /// Not a bearer token, or not a readable JWT.
    Malformed,
    /// Its header names an algorithm outside the allow-list (`none`, `HS256`, …).
    DisallowedAlgorithm,
    /// The signature does not verify.
    BadSignature,
    /// Its `kid` is in no key set of its issuer, even after a refresh.
    UnknownKid,
    /// Past `exp` (plus leeway), or no `exp`.
    Expired,
    /// Before `nbf` (minus leeway).
    NotYetValid,
    /// Its `iss` is not a configured issuer.
    WrongIssuer,
    /// Its `aud` does not name this resource.
    WrongAudience,
    /// Valid, but without a scope the request needs.
    InsufficientScope,
    /// The introspection endpoint says the token is not active.
    IntrospectionInactive,
    /// The issuer (metadata, keys) or the introspection endpoint could not be reached or read.
    IssuerUnavailable,
}

impl AuthOutcome {
    /// Every outcome, in the order of [`AuthOutcome::index`].
    pub const ALL: [AuthOutcome; 14] = [
        AuthOutcome::Ok,
        AuthOutcome::ApiKey,
        AuthOutcome::Missing,
        AuthOutcome::Malformed,
        AuthOutcome::DisallowedAlgorithm,
        AuthOutcome::BadSignature,
        AuthOutcome::UnknownKid,
        AuthOutcome::Expired,
        AuthOutcome::NotYetValid,
        AuthOutcome::WrongIssuer,
        AuthOutcome::WrongAudience,
        AuthOutcome::InsufficientScope,
        AuthOutcome::IntrospectionInactive,
        AuthOutcome::IssuerUnavailable,
    ];

    /// Its position in [`AuthOutcome::ALL`] (a counter array's index).
    pub const fn index(self) -> usize {
        self as usize
    }

    /// The metric label.
    pub const fn label(self) -> &'static str {
        match self {
            AuthOutcome::Ok => "ok",
            AuthOutcome::ApiKey => "api_key",
            AuthOutcome::Missing => "missing",
            AuthOutcome::Malformed => "malformed",
            AuthOutcome::DisallowedAlgorithm => "disallowed_alg",
            AuthOutcome::BadSignature => "bad_signature",
            AuthOutcome::UnknownKid => "unknown_kid",
            AuthOutcome::Expired => "expired",
            AuthOutcome::NotYetValid => "not_yet_valid",
            AuthOutcome::WrongIssuer => "wrong_issuer",
            AuthOutcome::WrongAudience => "wrong_audience",
            AuthOutcome::InsufficientScope => "insufficient_scope",
            AuthOutcome::IntrospectionInactive => "introspection_inactive",
            AuthOutcome::IssuerUnavailable => "issuer_unavailable",
        }
    }

    /// The text of the `error_description` (never the token itself).
    pub const fn description(self) -> &'static str {
        match self {
            AuthOutcome::Ok | AuthOutcome::ApiKey => "authorized",
            AuthOutcome::Missing => "an access token is required",
            AuthOutcome::Malformed => "the access token is not a well-formed JWT",
            AuthOutcome::DisallowedAlgorithm => "the token's signing algorithm is not allowed",
            AuthOutcome::BadSignature => "the token's signature does not verify",
            AuthOutcome::UnknownKid => "the token's key id is not in its issuer's key set",
            AuthOutcome::Expired => "the token has expired",
            AuthOutcome::NotYetValid => "the token is not valid yet",
            AuthOutcome::WrongIssuer => "the token's issuer is not trusted here",
            AuthOutcome::WrongAudience => "the token was not issued for this resource",
            AuthOutcome::InsufficientScope => "the token lacks a required scope",
            AuthOutcome::IntrospectionInactive => "the token is not active",
            AuthOutcome::IssuerUnavailable => "the authorization server could not be reached",
        }
    }
}

/// The bearer token of an `Authorization` header value (`Bearer <token>`, any case of the
/// scheme). `None`: not a bearer credential.
pub fn bearer_token(authorization: &str) -> Option<&str> {
    let (scheme, token) = authorization.trim().split_once(' ')?;
    let token = token.trim();
    (scheme.eq_ignore_ascii_case("bearer") && !token.is_empty()).then_some(token)
}

/// Whether a token has the shape of a JWS compact serialization (three Base64url parts); other
/// tokens are opaque (introspection).
pub fn looks_like_jwt(token: &str) -> bool {
    // One pass over the bytes (this runs on every request with OAuth on): two dots, non-empty
    // header and payload, Base64url characters only.
    let (mut dots, mut run) = (0, 0);
    for &b in token.as_bytes() {
        if b == b'.' {
            if run == 0 || dots == 2 {
                return false;
            }
            dots += 1;
            run = 0;
        } else if b.is_ascii_alphanumeric() || b == b'-' || b == b'_' {
            run += 1;
        } else {
            return false;
        }
    }
    dots == 2
}

/// What a JWT's protected header says, read before any key is chosen.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
pub struct TokenHeader {
    /// The algorithm.
    pub alg: String,
    /// The key id.
    #[serde(default)]
    pub kid: Option<String>,
}

/// The unverified `iss` of a JWT, read only to pick whose keys verify it.
#[derive(Debug, Deserialize)]
struct Unverified {
    #[serde(default)]
    iss: Option<String>,
}

fn segment<T: for<'de> Deserialize<'de>>(part: &str) -> Result<T, AuthOutcome> {
    let bytes = URL_SAFE_NO_PAD.decode(part.trim_end_matches('=')).map_err(|_| AuthOutcome::Malformed)?;
    serde_json::from_slice(&bytes).map_err(|_| AuthOutcome::Malformed)
}

/// A JWT's header and its unverified issuer, with the algorithm checked against
/// [`ALLOWED_ALGORITHMS`].
///
/// # Errors
/// [`AuthOutcome::Malformed`] for anything unreadable, [`AuthOutcome::DisallowedAlgorithm`]
/// for `none`, `HS*` or an unknown algorithm.
pub fn read_jwt(token: &str) -> Result<(TokenHeader, Option<String>), AuthOutcome> {
    if token.len() > MAX_TOKEN_BYTES || !looks_like_jwt(token) {
        return Err(AuthOutcome::Malformed);
    }
    let mut parts = token.split('.');
    let header: TokenHeader = segment(parts.next().unwrap_or_default())?;
    if !ALLOWED_ALGORITHMS.contains(&header.alg.as_str()) {
        return Err(AuthOutcome::DisallowedAlgorithm);
    }
    let claims: Unverified = segment(parts.next().unwrap_or_default())?;
    Ok((header, claims.iss))
}

/// `aud`: one string or an array of them.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize, Serialize)]
#[serde(untagged)]
pub enum Audience {
    /// One audience.
    One(String),
    /// Several.
    Many(Vec<String>),
}

impl Audience {
    fn contains(&self, resource: &str) -> bool {
        let same = |a: &String| a == resource || a.trim_end_matches('/') == resource.trim_end_matches('/');
        match self {
            Audience::One(a) => same(a),
            Audience::Many(all) => all.iter().any(same),
        }
    }
}

/// The claims of an access token mcpd reads (JWT claims, or an introspection answer's members).
#[derive(Debug, Clone, Default, PartialEq, Eq, Deserialize)]
pub struct Claims {
    /// Issuer.
    #[serde(default)]
    pub iss: Option<String>,
    /// Audience.
    #[serde(default)]
    pub aud: Option<Audience>,
    /// Expiry, seconds since the epoch.
    #[serde(default)]
    pub exp: Option<i64>,
    /// Not before, seconds since the epoch.
    #[serde(default)]
    pub nbf: Option<i64>,
    /// Space-separated scopes (RFC 9068, RFC 7662).
    #[serde(default)]
    pub scope: Option<String>,
    /// Scopes as an array (some issuers).
    #[serde(default)]
    pub scp: Option<ScopeList>,
    /// Subject.
    #[serde(default)]
    pub sub: Option<String>,
    /// The client the token was issued to.
    #[serde(default)]
    pub client_id: Option<String>,
}

/// `scp`: an array of scopes, or (some issuers) one space-separated string.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(untagged)]
pub enum ScopeList {
    /// An array.
    Many(Vec<String>),
    /// A string.
    One(String),
}

impl Claims {
    /// The checks of a token whose signature (or introspection) is already verified: `iss` a
    /// configured issuer, `aud` naming `resource`, `exp` present and not past, `nbf` not ahead
    /// (both with `settings.leeway`), then the scopes every request needs. `now` is seconds
    /// since the epoch.
    ///
    /// # Errors
    /// The outcome that refuses the token.
    pub fn check(self, settings: &OAuthSettings, resource: &str, now: i64) -> Result<Granted, AuthOutcome> {
        let leeway = i64::try_from(settings.leeway.as_secs()).unwrap_or(i64::MAX);
        if !self.iss.as_deref().is_some_and(|iss| settings.trusts(iss)) {
            return Err(AuthOutcome::WrongIssuer);
        }
        if !self.aud.as_ref().is_some_and(|aud| aud.contains(resource)) {
            return Err(AuthOutcome::WrongAudience);
        }
        match self.exp {
            Some(exp) if now <= exp.saturating_add(leeway) => {}
            _ => return Err(AuthOutcome::Expired),
        }
        if self.nbf.is_some_and(|nbf| now < nbf.saturating_sub(leeway)) {
            return Err(AuthOutcome::NotYetValid);
        }
        let mut scopes: Vec<String> =
            self.scope.as_deref().unwrap_or("").split_whitespace().map(str::to_owned).collect();
        match self.scp {
            Some(ScopeList::Many(list)) => scopes.extend(list),
            Some(ScopeList::One(text)) => scopes.extend(text.split_whitespace().map(str::to_owned)),
            None => {}
        }
        let granted = Granted { scopes, subject: self.sub, issuer: self.iss };
        match granted.missing(settings.scopes.iter().map(String::as_str)) {
            Some(_) => Err(AuthOutcome::InsufficientScope),
            None => Ok(granted),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    const RESOURCE: &str = "http://127.0.0.1:8791/mcp";

    fn settings() -> OAuthSettings {
        OAuthSettings {
            issuers: vec!["https://as.example".into()],
            scopes: vec!["mcp".into()],
            ..OAuthSettings::default()
        }
    }

    fn claims(value: serde_json::Value) -> Claims {
        serde_json::from_value(value).unwrap()
    }

    fn jwt(header: serde_json::Value, claims: serde_json::Value) -> String {
        let enc = |v: &serde_json::Value| URL_SAFE_NO_PAD.encode(v.to_string());
        format!("{}.{}.c2ln", enc(&header), enc(&claims))
    }

    #[test]
    fn a_good_token_grants_its_scopes_from_scope_and_scp() {
        let granted = claims(json!({"iss": "https://as.example", "aud": [RESOURCE, "x"], "exp": 1000,
            "scope": "mcp read", "scp": ["write"], "sub": "alice"}))
        .check(&settings(), RESOURCE, 1000)
        .unwrap();
        assert_eq!(granted.scopes, ["mcp", "read", "write"]);
        assert_eq!(granted.subject.as_deref(), Some("alice"));
        let one = claims(json!({"iss": "https://as.example", "aud": RESOURCE, "exp": 10, "scp": "mcp a"}));
        assert_eq!(one.check(&settings(), RESOURCE, 0).unwrap().scopes, ["mcp", "a"]);
    }

    #[test]
    fn each_bad_claim_has_its_reason() {
        let base = json!({"iss": "https://as.example", "aud": RESOURCE, "exp": 1000, "scope": "mcp"});
        let with = |key: &str, value: serde_json::Value| {
            let mut v = base.clone();
            v[key] = value;
            claims(v)
        };
        let s = settings();
        assert_eq!(with("iss", json!("https://as.example/")).check(&s, RESOURCE, 0), Err(AuthOutcome::WrongIssuer));
        assert_eq!(with("aud", json!("http://other/mcp")).check(&s, RESOURCE, 0), Err(AuthOutcome::WrongAudience));
        assert_eq!(with("aud", json!([])).check(&s, RESOURCE, 0), Err(AuthOutcome::WrongAudience));
        assert_eq!(with("scope", json!("read")).check(&s, RESOURCE, 0), Err(AuthOutcome::InsufficientScope));
        // Leeway of 60 s either side.
        assert!(claims(base.clone()).check(&s, RESOURCE, 1060).is_ok());
        assert_eq!(claims(base.clone()).check(&s, RESOURCE, 1061), Err(AuthOutcome::Expired));
        assert!(with("nbf", json!(60)).check(&s, RESOURCE, 0).is_ok());
        assert_eq!(with("nbf", json!(61)).check(&s, RESOURCE, 0), Err(AuthOutcome::NotYetValid));
        let mut no_exp = base.clone();
        no_exp.as_object_mut().unwrap().remove("exp");
        assert_eq!(claims(no_exp).check(&s, RESOURCE, 0), Err(AuthOutcome::Expired));
        // A trailing slash on either side names the same resource.
        assert!(with("aud", json!(format!("{RESOURCE}/"))).check(&s, RESOURCE, 0).is_ok());
    }

    #[test]
    fn headers_outside_the_allow_list_are_refused_before_any_key() {
        let claims = json!({"iss": "https://as.example"});
        for alg in ["none", "HS256", "HS512", "RSA-OAEP", "rs256"] {
            let token = jwt(json!({"alg": alg, "kid": "k"}), claims.clone());
            assert_eq!(read_jwt(&token), Err(AuthOutcome::DisallowedAlgorithm), "{alg}");
        }
        let ok = jwt(json!({"alg": "ES256", "kid": "k1"}), claims);
        let (header, iss) = read_jwt(&ok).unwrap();
        assert_eq!(
            (header.alg.as_str(), header.kid.as_deref(), iss.as_deref()),
            ("ES256", Some("k1"), Some("https://as.example"))
        );
        // `alg: none` tokens often have an empty signature: still refused for the algorithm.
        let signed = jwt(json!({"alg": "none"}), json!({}));
        let unsigned = signed.trim_end_matches("c2ln");
        assert_eq!(read_jwt(unsigned), Err(AuthOutcome::DisallowedAlgorithm));
        for garbage in ["", "abc", "a.b", "a.b.c.d", "!!.??.xx", "e30.e30.sig", &"a".repeat(MAX_TOKEN_BYTES + 1)] {
            assert_eq!(read_jwt(garbage), Err(AuthOutcome::Malformed), "{garbage}");
        }
    }

    #[test]
    fn discovery_tries_rfc8414_then_openid() {
        // The resource server finds key sets with the client's discovery order.
        use crate::client::oauth::discovery::authorization_server_metadata_urls as discovery_urls;
        assert_eq!(
            discovery_urls("http://127.0.0.1:9/").unwrap(),
            [
                "http://127.0.0.1:9/.well-known/oauth-authorization-server",
                "http://127.0.0.1:9/.well-known/openid-configuration"
            ]
        );
        assert_eq!(
            discovery_urls("https://as/t1").unwrap(),
            [
                "https://as/.well-known/oauth-authorization-server/t1",
                "https://as/.well-known/openid-configuration/t1",
                "https://as/t1/.well-known/openid-configuration"
            ]
        );
    }

    #[test]
    fn bearer_tokens_are_read_from_the_authorization_header() {
        assert_eq!(bearer_token("Bearer abc"), Some("abc"));
        assert_eq!(bearer_token("bearer   abc "), Some("abc"));
        assert_eq!(bearer_token("Basic abc"), None);
        assert_eq!(bearer_token("Bearer "), None);
        assert!(
            looks_like_jwt("a.b.c")
                && looks_like_jwt("a.b.")
                && !looks_like_jwt("opaque-token")
                && !looks_like_jwt("a..c")
        );
    }

    #[test]
    fn outcomes_are_indexed_in_order_and_secrets_hide() {
        for (i, outcome) in AuthOutcome::ALL.iter().enumerate() {
            assert_eq!(outcome.index(), i);
        }
        assert_eq!(format!("{:?}", Secret::new("s3cret")), "<hidden>");
        let mut s = settings();
        s.tool_scopes = ToolScopes::new(vec![("write_*".into(), vec!["files:write".into(), "mcp".into()])]);
        assert_eq!(s.scopes_supported(), ["mcp", "files:write"]);
    }
}
