//! mcpd as an OAuth 2.1 protected resource: the [`Authenticator`] the HTTP guard asks about every
//! bearer token. JWT access tokens are verified against their issuer's key set ([`keys`]: found
//! through its metadata, cached, refreshed on an unknown `kid` under a rate limit, one fetch at a
//! time), opaque ones through RFC 7662 introspection ([`introspect`]); the claims are checked by
//! the core's rules (`mcpd::auth::oauth`). It counts every outcome by reason for `/metrics`.
//!
//! With a cached key, a token is decided without waiting ([`Authenticator::decide_now`]); only a
//! fetch makes the guard wait ([`Authenticator::decide`]). A JWT once verified is remembered
//! until it expires or its issuer's key set changes ([`verified`]), so a reused token
//! costs a hash and a lookup, not a signature check.

mod fetch;
mod introspect;
mod keys;
mod verified;

use std::sync::atomic::Ordering;
use std::sync::Arc;

use jsonwebtoken::{Algorithm, Validation};
use mcpd::auth::challenge::{metadata_document, metadata_url, www_authenticate, ChallengeError};
use mcpd::auth::oauth::{read_jwt, AuthOutcome, Claims, OAuthSettings, TokenHeader};
use mcpd::auth::scopes::{Access, ToolScopes};
use serde_json::{json, Value};

use fetch::FetchLimits;
use introspect::Introspector;
use keys::{Cached, IssuerKeys};
use verified::Verified;

use crate::counts::EdgeCounters;

/// The resource server's state, shared by every HTTP worker of a listener.
pub(crate) struct Authenticator {
    settings: OAuthSettings,
    /// The resource URL tokens must be issued for.
    resource: String,
    /// Where its RFC 9728 metadata is served.
    metadata_url: String,
    /// The metadata document (built once).
    metadata: Value,
    /// The scopes every request needs, for challenges.
    required: Vec<String>,
    issuers: Vec<IssuerKeys>,
    introspection: Option<Introspector>,
    rules: Arc<ToolScopes>,
    checks: Vec<(Algorithm, Validation)>,
    /// Where the outcomes are counted (read by `/metrics`).
    edge: Arc<EdgeCounters>,
    /// JWTs already verified, reused until they expire or their key set changes.
    verified: Verified,
}

impl std::fmt::Debug for Authenticator {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Authenticator").field("resource", &self.resource).finish_non_exhaustive()
    }
}

/// A token the guard must wait for (a fetch), or its outcome now.
pub(crate) enum Decision {
    /// Decided.
    Now(Result<Arc<Access>, AuthOutcome>),
    /// A key-set fetch or an introspection is needed.
    Later,
}

impl Authenticator {
    /// The authenticator for `settings`; `resource` is the URL tokens must carry as `aud`.
    pub(crate) fn new(settings: OAuthSettings, resource: String, server_name: &str, edge: Arc<EdgeCounters>) -> Self {
        edge.auth_on.store(true, Ordering::Relaxed);
        let metadata = metadata_document(&settings, &resource, server_name);
        let issuers = settings.issuers.iter().map(|i| IssuerKeys::new(i.clone())).collect();
        let introspection = settings.introspection.clone().map(Introspector::new);
        Authenticator {
            metadata_url: metadata_url(&resource),
            metadata,
            required: settings.scopes.clone(),
            issuers,
            introspection,
            rules: Arc::new(settings.tool_scopes.clone()),
            checks: keys::validations(),
            edge,
            verified: Verified::default(),
            resource,
            settings,
        }
    }

    /// Whether a verified token makes its caller an operator: it grants the operator scope.
    pub(crate) fn grants_operator(&self, access: &Access) -> bool {
        access.granted.scopes.contains(&self.settings.operator_scope)
    }

    /// The RFC 9728 document.
    pub(crate) fn metadata(&self) -> &Value {
        &self.metadata
    }

    /// Counts one outcome.
    pub(crate) fn count(&self, outcome: AuthOutcome) {
        self.edge.auth_outcomes[outcome.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// The `WWW-Authenticate` value for a refusal: `scopes` named when there are any.
    pub(crate) fn challenge(&self, outcome: AuthOutcome, scopes: &[&str]) -> String {
        let error = match outcome {
            AuthOutcome::Missing => ChallengeError::None,
            AuthOutcome::InsufficientScope => ChallengeError::InsufficientScope,
            _ => ChallengeError::InvalidToken,
        };
        www_authenticate(&self.metadata_url, scopes, error, outcome.description())
    }

    /// The scopes every request needs.
    pub(crate) fn required(&self) -> Vec<&str> {
        self.required.iter().map(String::as_str).collect()
    }

    /// The scopes a call of `tool` needs that `access` lacks (empty: allowed), and the scopes to
    /// ask for (the required ones and the tool's).
    pub(crate) fn tool_refusal<'a>(&'a self, tool: &'a str, access: &Access) -> Option<Vec<&'a str>> {
        let missing = self.rules.missing(tool, &access.granted);
        if missing.is_empty() {
            return None;
        }
        let mut ask = self.required();
        for scope in self.rules.needed(tool) {
            if !ask.contains(&scope) {
                ask.push(scope);
            }
        }
        Some(ask)
    }

    /// The configuration shown in the status JSON (never a secret).
    pub(crate) fn status(&self) -> Value {
        let tool_scopes: serde_json::Map<String, Value> =
            self.rules.rules().map(|(pattern, scopes)| (pattern.to_owned(), json!(scopes))).collect();
        json!({
            "issuers": self.settings.issuers,
            "resource": self.resource,
            "resourceMetadata": self.metadata_url,
            "scopes": self.settings.scopes,
            "toolScopes": tool_scopes,
            "introspection": self.settings.introspection.as_ref().map(|i| json!({"url": i.url, "clientId": i.client_id})),
            "jwksRefreshSeconds": self.settings.jwks_refresh.as_secs(),
            "jwksFetches": self.issuers.iter().map(|i| (i.issuer().to_owned(), json!(i.fetches()))).collect::<serde_json::Map<_, _>>(),
        })
    }

    fn limits(&self) -> FetchLimits {
        FetchLimits { timeout: self.settings.fetch_timeout, max_bytes: self.settings.max_fetch_bytes }
    }

    /// The token's verdict when no fetch is needed.
    pub(crate) fn decide_now(&self, token: &str) -> Decision {
        // A token verified before is taken as it is (only JWTs that verified are there).
        let generation = |i: usize| self.issuers.get(i).map_or(u64::MAX, IssuerKeys::generation);
        if let Some(access) = self.verified.get(token, now(), generation) {
            return Decision::Now(Ok(access));
        }
        if !mcpd::auth::oauth::looks_like_jwt(token) {
            return match &self.introspection {
                Some(_) => Decision::Later,
                None => Decision::Now(Err(AuthOutcome::Malformed)),
            };
        }
        let (header, index) = match self.jwt_issuer(token) {
            Ok(found) => found,
            Err(outcome) => return Decision::Now(Err(outcome)),
        };
        let issuer = &self.issuers[index];
        let generation = issuer.generation();
        match issuer.verify_cached(token, &header, &self.checks) {
            Cached::Done(claims) => Decision::Now(self.grant_verified(token, claims, index, generation)),
            Cached::Fetch => Decision::Later,
        }
    }

    /// The token's verdict, fetching keys or introspecting as needed.
    pub(crate) async fn decide(&self, token: &str) -> Result<Arc<Access>, AuthOutcome> {
        if !mcpd::auth::oauth::looks_like_jwt(token) {
            let Some(introspection) = &self.introspection else { return Err(AuthOutcome::Malformed) };
            let default_issuer = self.settings.issuers.first().map(String::as_str);
            return self.grant(introspection.claims(token, default_issuer, self.limits()).await);
        }
        let (header, index) = self.jwt_issuer(token)?;
        let issuer = &self.issuers[index];
        let generation = issuer.generation();
        let claims = issuer.verify_fresh(token, &header, &self.checks, self.settings.jwks_refresh, self.limits()).await;
        // A fetch bumped the generation: remember the token under the one it was verified with.
        let generation = if claims.is_ok() { issuer.generation() } else { generation };
        self.grant_verified(token, claims, index, generation)
    }

    /// The header of a JWT and the index of the configured issuer it claims (read before
    /// verifying, only to choose the keys; an issuer not configured is refused without any fetch).
    fn jwt_issuer(&self, token: &str) -> Result<(TokenHeader, usize), AuthOutcome> {
        let (header, iss) = read_jwt(token)?;
        let index = iss.as_deref().and_then(|iss| self.issuers.iter().position(|i| i.issuer() == iss));
        index.map(|index| (header, index)).ok_or(AuthOutcome::WrongIssuer)
    }

    /// [`Self::grant`] for a verified JWT, remembered when it is granted.
    fn grant_verified(
        &self,
        token: &str,
        claims: Result<Claims, AuthOutcome>,
        issuer: usize,
        generation: u64,
    ) -> Result<Arc<Access>, AuthOutcome> {
        let exp = claims.as_ref().ok().and_then(|c| c.exp);
        let access = self.grant(claims)?;
        if let Some(exp) = exp {
            let leeway = i64::try_from(self.settings.leeway.as_secs()).unwrap_or(0);
            self.verified.put(token, access.clone(), exp.saturating_add(leeway), issuer, generation);
        }
        Ok(access)
    }

    fn grant(&self, claims: Result<Claims, AuthOutcome>) -> Result<Arc<Access>, AuthOutcome> {
        let granted = claims?.check(&self.settings, &self.resource, now())?;
        Ok(Arc::new(Access { granted, rules: self.rules.clone(), client: None, view: None }))
    }
}

/// Seconds since the epoch.
fn now() -> i64 {
    let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
    i64::try_from(now.as_secs()).unwrap_or(i64::MAX)
}
