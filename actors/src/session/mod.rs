//! Sessions: one `Session` actor per streamable-HTTP session (or legacy HTTP+SSE connection),
//! the state request handlers share with it, and the registry of live sessions.
//!
//! | file | holds |
//! |---|---|
//! | `actor` | the [`Session`] actor: its streams, subscriptions and life |
//! | `messages` | what the actor handles ([`Emit`], [`OpenStream`], [`Resume`], [`StopSession`], …) |
//! | `shared` | [`SessionShared`]: what handlers read and write without a mailbox hop |
//! | `peer` | [`RequestPeer`]: the way back to the client for one request |
//! | `id` | [`SessionId`] |
//! | `registry` | [`SessionRegistry`]: live sessions by id, with a cap and the identities' shares |
//! | `roster` | [`Roster`](roster::Roster): the registry as a session actor sees it |
//! | `store` | the session store interface of cluster mode, and [`LocalSessions`](store::LocalSessions): the registry as a store sees it |
//! | `stream` | one SSE stream and its replay buffer |
//! | `end` | [`EndReason`] |
//! | `expiry` | the table of deadlines one sweeper takes due checks from |
//! | `clock` | the sessions' monotonic clock |
//! | `executor` | a session's `ToolExecutor`, started by its first request |
//!
//! The registry holds sessions' addresses; the actor reaches it through `Roster` and the
//! cluster's store through `LocalSessions`, so neither imports the registry.

mod actor;
mod clock;
pub(crate) mod end;
mod executor;
mod expiry;
mod id;
mod messages;
mod peer;
mod registry;
mod roster;
mod shared;
pub(crate) mod store;
pub(crate) mod stream;

pub(crate) use actor::Session;
pub(crate) use end::EndReason;
pub(crate) use expiry::SLOT_MS as SWEEP_SLOT_MS;
pub(crate) use id::SessionId;
pub(crate) use messages::{
    CatalogChanged, ChangeSubscription, DetachStream, Emit, OpenStream, Resume, ResumeError, StopSession,
};
pub(crate) use peer::{PeerSink, RequestPeer};
pub(crate) use registry::{SessionHandle, SessionRegistry};
pub(crate) use shared::{BusyGuard, Negotiated, SessionShared};
