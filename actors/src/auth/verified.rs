//! Tokens already verified, so that a client reusing its token (the usual case) costs a hash and
//! a map lookup per request instead of a signature check (ring's RSA-2048 verification is ~400k
//! instructions, eight times the rest of a request). Keyed by the token itself in the process's
//! memory (never logged, no `Debug`): std's keyed SipHash over ~600 bytes is ~1k instructions,
//! where a SHA-256 of it measured 34k under callgrind. Each entry holds what the token grants,
//! its lifetime and the generation of its issuer's key set, so that a new key set (rotation,
//! revocation) retires every entry verified with the old one. Bounded: past [`MAX_ENTRIES`] the
//! map is emptied.

use std::collections::HashMap;
use std::sync::{Arc, PoisonError, RwLock};

use mcpd::auth::scopes::Access;

/// Most tokens remembered.
const MAX_ENTRIES: usize = 4096;

/// One verified token.
struct Entry {
    access: Arc<Access>,
    /// `exp` plus leeway: past it the token is no longer taken from here.
    until: i64,
    /// Its issuer (index) and that issuer's key-set generation when it was verified.
    issuer: usize,
    generation: u64,
}

/// The verified tokens.
#[derive(Default)]
pub(crate) struct Verified {
    entries: RwLock<HashMap<Box<str>, Entry>>,
}

impl Verified {
    /// What `token` grants, if it was verified, is still within its lifetime at `now`, and its
    /// issuer's key set is still generation `current(issuer)`.
    pub(crate) fn get(&self, token: &str, now: i64, current: impl Fn(usize) -> u64) -> Option<Arc<Access>> {
        let entries = self.entries.read().unwrap_or_else(PoisonError::into_inner);
        let entry = entries.get(token)?;
        (now <= entry.until && current(entry.issuer) == entry.generation).then(|| entry.access.clone())
    }

    /// Remembers a verified token.
    pub(crate) fn put(&self, token: &str, access: Arc<Access>, until: i64, issuer: usize, generation: u64) {
        let mut entries = self.entries.write().unwrap_or_else(PoisonError::into_inner);
        if entries.len() >= MAX_ENTRIES {
            entries.clear();
        }
        entries.insert(token.into(), Entry { access, until, issuer, generation });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mcpd::auth::oauth::Granted;
    use mcpd::auth::scopes::ToolScopes;

    #[test]
    fn entries_expire_and_retire_with_their_key_set() {
        let verified = Verified::default();
        let access = Arc::new(Access {
            granted: Granted::default(),
            rules: Arc::new(ToolScopes::default()),
            client: None,
            view: None,
        });
        verified.put("token", access, 100, 0, 7);
        assert!(verified.get("token", 100, |_| 7).is_some());
        assert!(verified.get("token", 101, |_| 7).is_none(), "past its lifetime");
        assert!(verified.get("token", 50, |_| 8).is_none(), "a new key set");
        assert!(verified.get("other", 50, |_| 7).is_none());
    }
}
