//! Who a request comes from, decided once at the edge and carried with the request as one value:
//! what a caller opens (a session, a task, a sealed `requestState`, a listen stream) records it
//! and is served only to the same identity.
//!
//! An identity is a short text, the same on every instance of a cluster (it is stored in the
//! shared records): `anonymous` when no authentication is configured; `client:NAME` for an
//! access-file client recognised by its key (a key rotated under the same name keeps the
//! identity); `oauth:ISSUER SUBJECT` for a verified token (a refreshed token of the same subject
//! is the same caller); `key:HEX` for a `--key` key, by a SHA-256 digest of the key (never the
//! key itself). Identities are compared in constant time ([`Identity::same`]).

use std::sync::Arc;

use sha2::{Digest as _, Sha256};
use subtle::ConstantTimeEq as _;

/// Who a request comes from.
#[derive(Clone, PartialEq, Eq, Hash)]
pub struct Identity(Arc<str>);

impl std::fmt::Debug for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Identity").field(&self.0).finish()
    }
}

impl std::fmt::Display for Identity {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

/// The text of the shared anonymous identity.
const ANONYMOUS: &str = "anonymous";

impl Identity {
    /// Every caller when no authentication is configured.
    pub fn anonymous() -> Identity {
        Identity(Arc::from(ANONYMOUS))
    }

    /// An access-file client, by name.
    pub fn client(name: &str) -> Identity {
        Identity(Arc::from(format!("client:{name}")))
    }

    /// A verified OAuth token's subject, at its issuer (a token without a subject is its
    /// issuer's anonymous caller).
    pub fn subject(issuer: Option<&str>, subject: Option<&str>) -> Identity {
        Identity(Arc::from(format!("oauth:{} {}", issuer.unwrap_or("-"), subject.unwrap_or("-"))))
    }

    /// A `--key` key, by its digest.
    pub fn key(key: &[u8]) -> Identity {
        let mut hash = Sha256::new();
        hash.update(b"mcpd key\0");
        hash.update(key);
        let digest = hash.finalize();
        let hex: String = digest.iter().map(|b| format!("{b:02x}")).collect();
        Identity(Arc::from(format!("key:{hex}")))
    }

    /// An identity read back from where it was stored (its [`Identity::as_str`]).
    pub fn from_stored(text: &str) -> Identity {
        Identity(Arc::from(text))
    }

    /// Its text, as stored.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// Its text, shared.
    pub fn as_arc(&self) -> Arc<str> {
        self.0.clone()
    }

    /// Whether this is the anonymous identity.
    pub fn is_anonymous(&self) -> bool {
        &*self.0 == ANONYMOUS
    }

    /// Whether `other` is the same identity, compared in constant time (for the length of the
    /// shorter).
    pub fn same(&self, other: &Identity) -> bool {
        self.0.as_bytes().ct_eq(other.0.as_bytes()).into()
    }

    /// What logs may show of it: the kind, and the client's name (never a key's digest or a
    /// subject).
    pub fn shown(&self) -> &str {
        match self.0.split_once(':') {
            Some(("client", _)) => &self.0,
            Some(("oauth", _)) => "an OAuth subject",
            Some(("key", _)) => "a --key key",
            _ => &self.0,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn identities_are_told_apart_and_keys_are_never_kept_in_clear() {
        let key = Identity::key(b"secret-key-123");
        assert!(key.as_str().starts_with("key:") && !key.as_str().contains("secret"));
        assert_eq!(key.as_str().len(), 4 + 64);
        assert!(key.same(&Identity::key(b"secret-key-123")));
        assert!(!key.same(&Identity::key(b"secret-key-124")));
        assert!(Identity::client("ci").same(&Identity::from_stored("client:ci")));
        assert!(!Identity::client("ci").same(&Identity::client("dev")));
        let alice = Identity::subject(Some("https://idp"), Some("alice"));
        assert!(alice.same(&Identity::subject(Some("https://idp"), Some("alice"))));
        assert!(!alice.same(&Identity::subject(Some("https://other"), Some("alice"))));
        assert!(Identity::anonymous().is_anonymous() && !alice.is_anonymous());
        assert_eq!(
            (key.shown(), alice.shown(), Identity::client("ci").shown()),
            ("a --key key", "an OAuth subject", "client:ci")
        );
    }
}
