//! What a valid token grants ([`Granted`]): its scopes, and its subject and issuer. The token
//! checks ([`super::oauth`]) make it; the per-tool scopes ([`super::scopes`]) and the access
//! file's OAuth matches ([`super::access`]) read it. It has a file of its own so that these three
//! read it without importing one another: the OAuth settings carry the per-tool scopes, and a
//! caller's [`super::scopes::Access`] carries its access-file client.

/// What a valid token grants: its scopes (and who, for the log's sake).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Granted {
    /// The scopes.
    pub scopes: Vec<String>,
    /// The subject, when the token names one.
    pub subject: Option<String>,
    /// The issuer that vouched for it.
    pub issuer: Option<String>,
}

impl Granted {
    /// Whether every scope of `needed` is granted; the first missing one otherwise.
    pub fn missing<'a>(&self, needed: impl IntoIterator<Item = &'a str>) -> Option<&'a str> {
        needed.into_iter().find(|scope| !self.scopes.iter().any(|s| s == scope))
    }
}
