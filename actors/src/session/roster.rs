//! [`Roster`]: what a session actor needs of the registry that holds it — the store sessions are
//! shared through (cluster mode), its next check filed with the process's one sweeper
//! ([`super::expiry`]), and its own removal when it ends. The registry holds sessions' addresses
//! and implements it; the actor knows only this trait.

use std::fmt;
use std::sync::Arc;

use super::id::SessionId;
use super::store::SessionStore;

/// The registry as a session actor sees it.
pub(crate) trait Roster: Send + Sync + fmt::Debug {
    /// The store sessions are shared through, in cluster mode.
    fn store(&self) -> Option<&Arc<dyn SessionStore>>;

    /// Files a check of session `id` at `due_ms` (the sessions' clock): the sweeper sends it
    /// [`super::messages::Sweep`] with the answered slot once it is due.
    fn file_check(&self, id: &SessionId, due_ms: u64) -> u64;

    /// Forgets an ended session.
    fn remove(&self, id: &SessionId);
}
