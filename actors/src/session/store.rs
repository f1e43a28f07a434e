//! The session store: what a `Session` and the `SessionRegistry` need of a place that shares
//! sessions between instances (cluster mode: Redis), and the words the two sides exchange.
//!
//! The interface lives on the session side so that sessions depend on what they need rather
//! than on a store's engine: a store ([`SessionStore`]) numbers this instance's streams and
//! server-to-client requests apart from every other instance's, keeps a used session's record
//! fresh from the copy held here ([`RecordCopy`]), and writes every event a session's streams
//! send ([`EventLog`]) so that another instance can replay them. A store answers a copy through
//! its mailbox ([`RecordNews`]: the session was deleted elsewhere, or its record's level and
//! subscriptions), and tells this instance's copies what other instances did through the
//! registry ([`CopyNews`], [`LocalSessions`]). Without a store, none of this runs.

use std::fmt;
use std::time::Duration;

use actix::{Message, Recipient};
use mcpd::auth::identity::Identity;
use mcpd::context::LogLevel;
use mcpd::jsonrpc::{ErrorObject, RequestId};
use mcpd::server::Subscription;
use serde_json::Value;

use super::shared::Negotiated;
use crate::shares::Shares;

/// Sessions shared with other instances: what a session copy and the registry ask of them.
pub(crate) trait SessionStore: Send + Sync + fmt::Debug {
    /// The first number of this instance's streams and server-to-client requests (its range is
    /// disjoint from every other instance's).
    fn number_base(&self) -> u64;

    /// Refreshes a used session's record to live `idle` more (not awaited; a failure is counted
    /// by the store). A record that is gone although the session is in use is written again
    /// from `copy`, unless the session was deleted (then `news` hears [`RecordNews::Deleted`]).
    /// When `reconcile` (the store's news of other instances may have been lost), a record that
    /// is there is read and `news` hears its level and subscriptions ([`RecordNews::Reconciled`]).
    fn keep_alive(&self, session: &str, idle: Duration, copy: RecordCopy, news: Recipient<RecordNews>, reconcile: bool);

    /// A session's event log (events are written in the order given, expiring after `idle`).
    fn writer(&self, session: &str, idle: Duration) -> Box<dyn EventLog>;
}

/// Where a session's streams and their events are written for other instances to replay.
pub(crate) trait EventLog: fmt::Debug {
    /// A stream opened here, answering `request` (the standalone stream answers none).
    fn open_stream(&self, stream: u64, request: Option<&RequestId>);

    /// One event of `stream` (its sequence number `seq` and JSON-RPC `message`); `last` is the
    /// stream's final event. Not awaited: a store that falls behind drops it and counts it.
    fn event(&self, stream: u64, seq: u64, message: &[u8], last: bool);
}

/// What a session's copy knows of its record, to write it again when the store lost it.
#[derive(Debug)]
pub(crate) struct RecordCopy {
    /// The handshake.
    pub negotiated: Negotiated,
    /// The log level set.
    pub log_level: Option<LogLevel>,
    /// The subscribed URIs.
    pub subscriptions: Vec<String>,
    /// The identity that opened it.
    pub owner: Option<Identity>,
    /// The virtual server it was opened on (`None`: the whole server).
    pub endpoint: Option<String>,
}

/// What a store found refreshing a session's record ([`SessionStore::keep_alive`]).
#[derive(Debug, Message)]
#[rtype(result = "()")]
pub(crate) enum RecordNews {
    /// The session was deleted on another instance (a DELETE whose news this copy missed): the
    /// copy ends.
    Deleted,
    /// What the record says after a reconcile; the copy takes its log level and subscriptions
    /// (changes made elsewhere while the store's news were lost).
    Reconciled {
        /// The level `logging/setLevel` set (a level is never unset: none leaves the copy's).
        log_level: Option<LogLevel>,
        /// The subscribed resource URIs.
        subscriptions: Vec<String>,
    },
}

/// What another instance did to a session this instance may hold a copy of.
#[derive(Debug)]
pub(crate) enum CopyNews {
    /// The client answered a server-to-client request there that a request here awaits.
    Answer {
        /// The request's id.
        id: RequestId,
        /// The client's answer.
        outcome: Result<Value, ErrorObject>,
    },
    /// The client cancelled a request (it runs here, or nowhere here).
    Cancel(RequestId),
    /// The client deleted the session: the copy ends.
    End,
    /// The client set the session's log level.
    Level(LogLevel),
    /// The client (un)subscribed a resource.
    Subscription(Subscription),
}

/// This instance's sessions as a store reaches them (the registry implements it): what another
/// instance did to a session goes to the copy held here, every copy checks its record after lost
/// news, and each identity's share of the capacity is counted across instances.
pub(crate) trait LocalSessions: Send + Sync + fmt::Debug {
    /// What another instance did to session `id`, applied to the copy held here (nothing when
    /// none is).
    fn tell(&self, id: &str, news: CopyNews);

    /// Every copy held here checks its record now (the store's news were lost meanwhile).
    fn reconcile_all(&self);

    /// Each identity's share of sessions, streams and requests in flight.
    fn shares(&self) -> &Shares;
}
