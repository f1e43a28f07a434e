//! [`SessionId`]: a session's id, 128 random bits as hex, or one another instance made.

use std::sync::Arc;

/// A session id: 128 random bits as hex (visible ASCII, unguessable).
#[derive(Debug, Clone, PartialEq, Eq, Hash, derive_more::Display)]
pub(crate) struct SessionId(Arc<str>);

impl SessionId {
    /// A session id another instance made (cluster mode; checked by the caller).
    pub(crate) fn adopted(id: &str) -> SessionId {
        SessionId(Arc::from(id))
    }

    /// A fresh random id.
    ///
    /// # Errors
    /// When the operating system has no randomness to give.
    pub(crate) fn random() -> Result<SessionId, getrandom::Error> {
        let mut bytes = [0u8; 16];
        getrandom::fill(&mut bytes)?;
        let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
        Ok(SessionId(Arc::from(hex)))
    }

    /// The id as text.
    pub(crate) fn as_str(&self) -> &str {
        &self.0
    }

    /// The shared text.
    pub(crate) fn as_arc(&self) -> Arc<str> {
        self.0.clone()
    }
}

impl std::borrow::Borrow<str> for SessionId {
    fn borrow(&self) -> &str {
        &self.0
    }
}
