//! Why a session ends: a vocabulary of its own, so that what counts endings (the metrics) need
//! not know the session actor.

/// Why a session ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EndReason {
    /// The client sent DELETE.
    Deleted,
    /// Idle longer than the configured time.
    Expired,
    /// The server is shutting down.
    Shutdown,
}
