//! One trusted issuer's signing keys: found through its metadata (`jwks_uri`), fetched once and
//! cached as ready decoding keys, fetched again when a token names an unknown `kid` — at most once
//! per `jwks_refresh`, and by one request at a time (the others wait for that fetch and use its
//! keys). Only asymmetric keys (RSA, EC, OKP) meant for signatures are kept: a symmetric (`oct`)
//! key in a key set is never used.

use std::str::FromStr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use jsonwebtoken::errors::ErrorKind;
use jsonwebtoken::jwk::{AlgorithmParameters, Jwk, PublicKeyUse};
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use mcpd::auth::oauth::{AuthOutcome, Claims, TokenHeader};
use mcpd::client::oauth::discovery::authorization_server_metadata_urls;
use serde_json::Value;

use super::fetch::{self, FetchLimits};

/// Shortest wait before fetching again after a failed fetch (an issuer that is down is not
/// asked once per request).
const RETRY_AFTER_FAILURE: Duration = Duration::from_secs(1);

/// One usable key.
struct Key {
    kid: Option<String>,
    alg: Option<Algorithm>,
    key: DecodingKey,
}

/// What is known of an issuer's keys.
#[derive(Default)]
struct Known {
    jwks_uri: Option<String>,
    keys: Arc<Vec<Key>>,
    /// When keys were last fetched (successfully or not), and whether that failed.
    fetched: Option<(Instant, Option<String>)>,
}

/// An issuer's keys, shared by every HTTP worker.
pub(crate) struct IssuerKeys {
    issuer: String,
    known: RwLock<Known>,
    /// One fetch at a time; the others wait here and then read what it found.
    fetching: tokio::sync::Mutex<()>,
    /// Key-set fetches done (for the status and the tests of the rate limit).
    fetches: AtomicU64,
    /// Bumped whenever a new key set replaces the cached one (tokens verified with an older one
    /// are verified again).
    generation: AtomicU64,
}

impl std::fmt::Debug for IssuerKeys {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("IssuerKeys").field("issuer", &self.issuer).finish_non_exhaustive()
    }
}

/// Signature checks ready for every allowed algorithm: only the signature is checked by
/// jsonwebtoken; the claims are the core's ([`Claims::check`]).
pub(crate) fn validations() -> Vec<(Algorithm, Validation)> {
    mcpd::auth::oauth::ALLOWED_ALGORITHMS
        .iter()
        .filter_map(|name| Algorithm::from_str(name).ok())
        .map(|alg| {
            let mut validation = Validation::new(alg);
            validation.required_spec_claims.clear();
            validation.validate_exp = false;
            validation.validate_nbf = false;
            validation.validate_aud = false;
            (alg, validation)
        })
        .collect()
}

/// What checking a token against the cached keys found.
pub(crate) enum Cached {
    /// Verified (claims not checked yet), or refused.
    Done(Result<Claims, AuthOutcome>),
    /// No cached key has the token's `kid` (or nothing is cached): fetch, then try again.
    Fetch,
}

impl IssuerKeys {
    pub(crate) fn new(issuer: String) -> Self {
        IssuerKeys {
            issuer,
            known: RwLock::default(),
            fetching: tokio::sync::Mutex::new(()),
            fetches: AtomicU64::new(0),
            generation: AtomicU64::new(0),
        }
    }

    /// Key-set fetches so far.
    pub(crate) fn fetches(&self) -> u64 {
        self.fetches.load(Ordering::Relaxed)
    }

    /// The generation of the cached key set.
    pub(crate) fn generation(&self) -> u64 {
        self.generation.load(Ordering::Acquire)
    }

    /// The issuer.
    pub(crate) fn issuer(&self) -> &str {
        &self.issuer
    }

    fn keys(&self) -> Arc<Vec<Key>> {
        self.known.read().unwrap_or_else(PoisonError::into_inner).keys.clone()
    }

    /// Verifies `token` with the cached keys, without waiting.
    pub(crate) fn verify_cached(
        &self,
        token: &str,
        header: &TokenHeader,
        checks: &[(Algorithm, Validation)],
    ) -> Cached {
        let keys = self.keys();
        match verify(token, header, &keys, checks) {
            Some(done) => Cached::Done(done),
            None => Cached::Fetch,
        }
    }

    /// Fetches the key set again when the rate limit allows (one fetch at a time), then verifies.
    pub(crate) async fn verify_fresh(
        &self,
        token: &str,
        header: &TokenHeader,
        checks: &[(Algorithm, Validation)],
        refresh: Duration,
        limits: FetchLimits,
    ) -> Result<Claims, AuthOutcome> {
        let _turn = self.fetching.lock().await;
        // Whoever held the turn before may have fetched what this token needs.
        if let Some(done) = verify(token, header, &self.keys(), checks) {
            return done;
        }
        let (recent, failed) = {
            let known = self.known.read().unwrap_or_else(PoisonError::into_inner);
            match &known.fetched {
                Some((at, error)) => {
                    let wait = if error.is_some() { RETRY_AFTER_FAILURE } else { refresh };
                    (at.elapsed() < wait, error.is_some())
                }
                None => (false, false),
            }
        };
        if recent {
            return Err(if failed { AuthOutcome::IssuerUnavailable } else { AuthOutcome::UnknownKid });
        }
        let fetched = self.fetch(limits).await;
        let mut known = self.known.write().unwrap_or_else(PoisonError::into_inner);
        match fetched {
            Ok((jwks_uri, keys)) => {
                log::debug!("{}: {} signing keys from {jwks_uri}", self.issuer, keys.len());
                known.jwks_uri = Some(jwks_uri);
                known.keys = Arc::new(keys);
                known.fetched = Some((Instant::now(), None));
                self.generation.fetch_add(1, Ordering::Release);
            }
            Err(error) => {
                log::warn!("issuer {}: {error}", self.issuer);
                known.fetched = Some((Instant::now(), Some(error)));
                return Err(AuthOutcome::IssuerUnavailable);
            }
        }
        let keys = known.keys.clone();
        drop(known);
        verify(token, header, &keys, checks).unwrap_or(Err(AuthOutcome::UnknownKid))
    }

    /// The key set's URL (discovered once) and its usable keys.
    async fn fetch(&self, limits: FetchLimits) -> Result<(String, Vec<Key>), String> {
        let known_uri = self.known.read().unwrap_or_else(PoisonError::into_inner).jwks_uri.clone();
        let jwks_uri = match known_uri {
            Some(uri) => uri,
            None => self.discover(limits).await?,
        };
        self.fetches.fetch_add(1, Ordering::Relaxed);
        let set = fetch::json(&jwks_uri, None, None, limits).await?;
        let keys = usable_keys(&set);
        if keys.is_empty() {
            return Err(format!("{jwks_uri}: no usable signing key (RSA, EC or OKP) in the key set"));
        }
        Ok((jwks_uri, keys))
    }

    /// The issuer's `jwks_uri`, from the first metadata document (in the order the client's
    /// discovery uses) that answers and names this issuer exactly.
    async fn discover(&self, limits: FetchLimits) -> Result<String, String> {
        let mut errors = Vec::new();
        for url in authorization_server_metadata_urls(&self.issuer)? {
            match fetch::json(&url, None, None, limits).await {
                Ok(metadata) => {
                    let issuer = metadata.get("issuer").and_then(Value::as_str);
                    if issuer != Some(self.issuer.as_str()) {
                        return Err(format!("{url}: metadata names issuer {issuer:?}, not {:?}", self.issuer));
                    }
                    return match metadata.get("jwks_uri").and_then(Value::as_str) {
                        Some(uri) => Ok(uri.to_owned()),
                        None => Err(format!("{url}: metadata has no jwks_uri")),
                    };
                }
                Err(e) => errors.push(e),
            }
        }
        Err(format!("no authorization server metadata: {}", errors.join("; ")))
    }
}

/// The signing keys of a JWK set that can verify an allowed algorithm; others are skipped one by
/// one (an unknown key type does not spoil the set).
fn usable_keys(set: &Value) -> Vec<Key> {
    let entries = set.get("keys").and_then(Value::as_array).map(Vec::as_slice).unwrap_or_default();
    entries
        .iter()
        .filter_map(|entry| serde_json::from_value::<Jwk>(entry.clone()).ok())
        .filter(|jwk| !matches!(jwk.algorithm, AlgorithmParameters::OctetKey(_)))
        .filter(|jwk| jwk.common.public_key_use.as_ref().is_none_or(|u| *u == PublicKeyUse::Signature))
        .filter_map(|jwk| {
            let alg = jwk.common.key_algorithm.and_then(|a| Algorithm::from_str(&a.to_string()).ok());
            let key = DecodingKey::from_jwk(&jwk).ok()?;
            Some(Key { kid: jwk.common.key_id.clone(), alg, key })
        })
        .collect()
}

/// Verifies with the key the header names (or, without a `kid`, every key). `None`: no key
/// has that `kid`.
fn verify(
    token: &str,
    header: &TokenHeader,
    keys: &[Key],
    checks: &[(Algorithm, Validation)],
) -> Option<Result<Claims, AuthOutcome>> {
    let wanted = Algorithm::from_str(&header.alg).ok();
    let Some((alg, validation)) = checks.iter().find(|(alg, _)| Some(*alg) == wanted) else {
        return Some(Err(AuthOutcome::DisallowedAlgorithm));
    };
    let mut candidates = keys.iter().filter(|k| header.kid.is_none() || k.kid == header.kid).peekable();
    candidates.peek()?;
    for key in candidates {
        // A key published for one algorithm verifies only that one.
        if key.alg.is_some_and(|a| a != *alg) {
            continue;
        }
        match jsonwebtoken::decode::<Claims>(token, &key.key, validation) {
            Ok(data) => return Some(Ok(data.claims)),
            Err(e) if matches!(e.kind(), ErrorKind::Json(_) | ErrorKind::Base64(_) | ErrorKind::Utf8(_)) => {
                return Some(Err(AuthOutcome::Malformed));
            }
            Err(_) => {}
        }
    }
    Some(Err(AuthOutcome::BadSignature))
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn only_asymmetric_signing_keys_are_kept() {
        let set = json!({"keys": [
            {"kty": "oct", "k": "c2VjcmV0", "kid": "hmac", "alg": "HS256"},
            {"kty": "EC", "crv": "P-256", "x": "AQID", "y": "BAUG", "kid": "enc", "use": "enc"},
            {"kty": "weird", "kid": "unknown-type"},
            {"kty": "EC", "crv": "P-256", "x": "AQID", "y": "BAUG", "kid": "ec", "use": "sig", "alg": "ES256"},
            "not a key"
        ]});
        let keys = usable_keys(&set);
        assert_eq!(keys.len(), 1);
        assert_eq!(keys[0].kid.as_deref(), Some("ec"));
        assert_eq!(keys[0].alg, Some(Algorithm::ES256));
        assert!(usable_keys(&json!({"keys": "no"})).is_empty());
    }

    #[test]
    fn a_token_for_a_key_of_another_algorithm_does_not_verify() {
        let set =
            json!({"keys": [{"kty": "EC", "crv": "P-256", "x": "AQID", "y": "BAUG", "kid": "ec", "alg": "ES256"}]});
        let keys = usable_keys(&set);
        let header = TokenHeader { alg: "ES384".into(), kid: Some("ec".into()) };
        let outcome = verify("e30.e30.c2ln", &header, &keys, &validations());
        assert!(matches!(outcome, Some(Err(AuthOutcome::BadSignature))));
        let unknown = TokenHeader { alg: "ES256".into(), kid: Some("other".into()) };
        assert!(verify("e30.e30.c2ln", &unknown, &keys, &validations()).is_none(), "an unknown kid asks for a fetch");
    }
}
