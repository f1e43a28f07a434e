//! RFC 7662 introspection of opaque access tokens: `POST token=…` to the configured endpoint
//! with HTTP Basic client authentication, `active: false` refused, the answer's members checked
//! like a JWT's claims. Answers are reused for a short while (never past the token's `exp`),
//! keyed by a SHA-256 of the token (the token itself is never kept), in a bounded map.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use mcpd::auth::oauth::{AuthOutcome, Claims, IntrospectionSettings};
use serde_json::Value;
use sha2::{Digest, Sha256};

use super::fetch::{self, FetchLimits};

/// Most answers kept; past it the map is emptied (a flood of distinct tokens costs fetches,
/// never memory).
const MAX_CACHED: usize = 4096;

/// A cached answer: until when it is reused, and what it said.
type CachedAnswer = (Instant, Result<Claims, AuthOutcome>);

/// The introspection endpoint and its recent answers.
pub(crate) struct Introspector {
    settings: IntrospectionSettings,
    cache: Mutex<HashMap<[u8; 32], CachedAnswer>>,
}

impl std::fmt::Debug for Introspector {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Introspector").field("url", &self.settings.url).finish_non_exhaustive()
    }
}

impl Introspector {
    pub(crate) fn new(settings: IntrospectionSettings) -> Self {
        Introspector { settings, cache: Mutex::default() }
    }

    /// The token's claims per the endpoint; `default_issuer` stands in for an answer without `iss`
    /// (the endpoint speaks for its own issuer).
    pub(crate) async fn claims(
        &self,
        token: &str,
        default_issuer: Option<&str>,
        limits: FetchLimits,
    ) -> Result<Claims, AuthOutcome> {
        let key: [u8; 32] = Sha256::digest(token.as_bytes()).into();
        if let Some((until, answer)) = self.cache.lock().unwrap_or_else(PoisonError::into_inner).get(&key) {
            if Instant::now() < *until {
                return answer.clone();
            }
        }
        let form = [("token", token), ("token_type_hint", "access_token")];
        let basic = Some((self.settings.client_id.as_str(), self.settings.client_secret.expose()));
        let answer = match fetch::json(&self.settings.url, Some(&form), basic, limits).await {
            Ok(body) => read(body, default_issuer),
            Err(e) => {
                log::warn!("introspection: {e}");
                return Err(AuthOutcome::IssuerUnavailable);
            }
        };
        let mut cache = self.cache.lock().unwrap_or_else(PoisonError::into_inner);
        if cache.len() >= MAX_CACHED {
            cache.clear();
        }
        let mut until = Instant::now() + self.settings.cache;
        if let Ok(Some(exp)) = answer.as_ref().map(|c| c.exp) {
            let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap_or_default();
            let left = u64::try_from(exp).unwrap_or(0).saturating_sub(now.as_secs());
            until = until.min(Instant::now() + std::time::Duration::from_secs(left));
        }
        cache.insert(key, (until, answer.clone()));
        answer
    }
}

/// An introspection answer as claims: inactive is refused.
fn read(body: Value, default_issuer: Option<&str>) -> Result<Claims, AuthOutcome> {
    if body.get("active") != Some(&Value::Bool(true)) {
        return Err(AuthOutcome::IntrospectionInactive);
    }
    let mut claims: Claims = serde_json::from_value(body).map_err(|_| AuthOutcome::Malformed)?;
    if claims.iss.is_none() {
        claims.iss = default_issuer.map(str::to_owned);
    }
    Ok(claims)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn inactive_answers_are_refused_and_active_ones_read_as_claims() {
        assert_eq!(read(json!({"active": false}), None), Err(AuthOutcome::IntrospectionInactive));
        assert_eq!(read(json!({"scope": "a"}), None), Err(AuthOutcome::IntrospectionInactive));
        let claims = read(json!({"active": true, "scope": "a b", "aud": "r", "exp": 5}), Some("https://as")).unwrap();
        assert_eq!(claims.iss.as_deref(), Some("https://as"));
        assert_eq!(claims.scope.as_deref(), Some("a b"));
        let own = read(json!({"active": true, "iss": "https://other"}), Some("https://as")).unwrap();
        assert_eq!(own.iss.as_deref(), Some("https://other"));
    }
}
