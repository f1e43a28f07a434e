//! Live actor gauges and message counters per actor kind, kept in atomics so that the status and
//! metrics endpoints read them without a mailbox hop. Every actor increments its gauge in
//! `started()` and decrements it in `stopped()`; tests assert the gauges drain to zero.

use std::fmt;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering};

/// The kinds of actor in the runtime.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ActorKind {
    /// One per process.
    Supervisor,
    /// One per bound HTTP endpoint.
    Listener,
    /// One per streamable-HTTP session or stdio connection.
    Session,
    /// One per connection or session: runs its tool calls concurrently.
    ToolExecutor,
    /// One per remote server.
    ClientConnection,
    /// One per mcpd: owns the running tasks (the tasks extension).
    TaskRunner,
}

impl ActorKind {
    /// Every kind, in a fixed order.
    pub const ALL: [ActorKind; 6] = [
        ActorKind::Supervisor,
        ActorKind::Listener,
        ActorKind::Session,
        ActorKind::ToolExecutor,
        ActorKind::ClientConnection,
        ActorKind::TaskRunner,
    ];

    /// The metric label.
    pub const fn label(self) -> &'static str {
        match self {
            ActorKind::Supervisor => "supervisor",
            ActorKind::Listener => "listener",
            ActorKind::Session => "session",
            ActorKind::ToolExecutor => "tool_executor",
            ActorKind::ClientConnection => "client_connection",
            ActorKind::TaskRunner => "task_runner",
        }
    }

    const fn index(self) -> usize {
        self as usize
    }
}

impl fmt::Display for ActorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.label())
    }
}

/// Live actors and handled messages per kind.
#[derive(Debug, Default)]
pub struct ActorCounts {
    live: [AtomicI64; 6],
    messages: [AtomicU64; 6],
}

impl ActorCounts {
    /// New zeroed counts.
    pub fn new() -> Self {
        ActorCounts::default()
    }

    /// Called from an actor's `started()`.
    pub fn started(&self, kind: ActorKind) {
        self.live[kind.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// Called from an actor's `stopped()`.
    pub fn stopped(&self, kind: ActorKind) {
        self.live[kind.index()].fetch_sub(1, Ordering::Relaxed);
    }

    /// Called once per handled message.
    pub fn handled(&self, kind: ActorKind) {
        self.messages[kind.index()].fetch_add(1, Ordering::Relaxed);
    }

    /// Live actors of a kind.
    pub fn live(&self, kind: ActorKind) -> i64 {
        self.live[kind.index()].load(Ordering::Relaxed)
    }

    /// Messages handled by actors of a kind.
    pub fn messages(&self, kind: ActorKind) -> u64 {
        self.messages[kind.index()].load(Ordering::Relaxed)
    }

    /// Live actors of every kind.
    pub fn snapshot(&self) -> Vec<(ActorKind, i64)> {
        ActorKind::ALL.iter().map(|k| (*k, self.live(*k))).collect()
    }
}

/// What the edge did to peers that push too much or read too little: the open connections and
/// what was refused, cut off or dropped. Shared by every worker; read by `/metrics`.
#[derive(Debug, Default)]
pub(crate) struct EdgeCounters {
    /// Open HTTP connections.
    pub(crate) connections: AtomicI64,
    /// Whether the open connections are at the limit (for one log line per episode).
    pub(crate) at_connection_limit: std::sync::atomic::AtomicBool,
    /// Requests answered 408 because their body did not arrive in time.
    pub(crate) body_timeouts: AtomicU64,
    /// Requests answered 408 at once because too many others were waiting for their bodies.
    pub(crate) slow_bodies_refused: AtomicU64,
    /// SSE streams cut off because their reader did not keep up.
    pub(crate) streams_cut: AtomicU64,
    /// Notifications dropped because their reader did not keep up.
    pub(crate) notifications_dropped: AtomicU64,
    /// Requests refused because their session (or stdio connection) had too many running.
    pub(crate) requests_over_limit: AtomicU64,
    /// Uses of a session by another identity than the one that opened it (answered as an
    /// unknown session).
    pub(crate) sessions_refused: AtomicU64,
    /// Whether OAuth is on (then `mcpd_auth_outcomes_total` is exposed).
    pub(crate) auth_on: std::sync::atomic::AtomicBool,
    /// Authentication outcomes, indexed by `AuthOutcome::index`.
    pub(crate) auth_outcomes: [AtomicU64; mcpd::auth::oauth::AuthOutcome::ALL.len()],
}

impl EdgeCounters {
    /// Adds one to a counter.
    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
}
