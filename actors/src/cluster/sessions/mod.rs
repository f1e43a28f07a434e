//! Sessions any instance can serve (cluster mode), and the notification bus.
//!
//! A streamable-HTTP session (2025-03-26 … 2025-11-25) is created on the instance that got its
//! `initialize`, but its later requests may land on any instance behind the balancer. What they
//! need is in Redis, in three parts, one file each:
//!
//! - **The record** ([`record`]): the session's handshake, owner, log level and subscriptions.
//!   An instance that gets a request for a session it does not hold reads the record (one round
//!   trip, once per instance and session) and *adopts* the session: a local `Session` actor with
//!   the same id whose work runs where its requests land. Only DELETE (or the record's expiry)
//!   ends a session everywhere; a local copy that idles ends alone.
//! - **The event log** ([`events`]): every SSE event a session's streams send, so that a stream
//!   another instance sends can be resumed here.
//! - **The bus** ([`bus`]): what an instance tells the others — answers, cancellations, DELETEs,
//!   level and subscription changes, task and catalog changes.
//!
//! [`SharedSessions`] puts the three together. The session side knows it only as a
//! [`SessionStore`] (the interface is the session's, `crate::session::store`): a `Session` copy
//! numbers its streams from the store's base, writes its events to the store's log and keeps its
//! record fresh through it, and the bus reaches the copies through the registry as
//! `LocalSessions` (the session side's interface too), never through a session actor. The HTTP
//! edge, which creates, adopts, deletes and resumes sessions, uses [`SharedSessions`] itself,
//! from its application state: its records ([`SharedSessions::records`]), its event streams
//! ([`SharedSessions::events`]) and the bus. The parts share one [`link::RedisLink`] (the
//! connection, the cluster's health, the instance's id and tag) and none holds another.
//!
//! Without `--redis` none of this exists. The 2024-11-05 HTTP+SSE transport, whose stream is its
//! session, stays on the instance that opened it.

mod bus;
mod events;
mod link;
mod record;

use std::sync::{Arc, Weak};
use std::time::Duration;

use actix::Recipient;
use mcpd::catalog::LiveCatalog;
use mcpd::jsonrpc::{ErrorObject, RequestId};
use redis::aio::ConnectionManager;
use serde_json::Value;

use crate::cluster::health::ClusterHealth;
use crate::session::store::LocalSessions;
use crate::session::store::{EventLog, RecordCopy, RecordNews, SessionStore};
use crate::tasks::Tasks;
use bus::{Bus, BusMessage};
use events::Events;
pub(crate) use events::ResumeRemote;
use link::RedisLink;
pub(crate) use link::Unreachable;
use record::Records;

/// Sessions shared through Redis, and the bus. Made by `Cluster::start`; the session registry
/// holds it as its [`SessionStore`], the HTTP edge as itself.
#[derive(Debug)]
pub(crate) struct SharedSessions {
    link: RedisLink,
    records: Records,
    events: Events,
    bus: Arc<Bus>,
}

impl SharedSessions {
    /// The shared sessions of instance `instance`, over `connection`, reporting to `health`;
    /// the bus re-announces to `catalog`, the sessions of `registry` and the `tasks`. The bus
    /// runs from [`SharedSessions::start_bus`].
    pub(super) fn new(
        connection: ConnectionManager,
        instance: &str,
        health: Arc<ClusterHealth>,
        catalog: Arc<LiveCatalog>,
        registry: Weak<dyn LocalSessions>,
        tasks: Option<Tasks>,
    ) -> Self {
        let link = RedisLink::new(connection, instance, health);
        SharedSessions {
            records: Records::new(link.clone()),
            events: Events::new(link.clone()),
            bus: Arc::new(Bus::new(link.clone(), catalog, registry, tasks)),
            link,
        }
    }

    /// Starts the bus: publishes this instance's catalog and task changes and listens for the
    /// others' messages, subscribing again by itself.
    pub(super) fn start_bus(&self, client: redis::Client) {
        self.bus.start(client);
    }

    /// The first number of this instance's streams and server-to-client requests.
    pub(crate) fn number_base(&self) -> u64 {
        self.link.number_base()
    }

    /// The session records: create, load (to adopt), `logging/setLevel`, subscriptions and
    /// DELETE, each also told to every instance's copy where it changes one.
    pub(crate) fn records(&self) -> &Records {
        &self.records
    }

    /// The event streams: resuming a stream another instance sent.
    pub(crate) fn events(&self) -> &Events {
        &self.events
    }

    /// The client's answer to a request this instance does not wait for: the instance that
    /// does resolves it (not awaited).
    pub(crate) fn forward_answer(&self, session: &str, id: &RequestId, outcome: &Result<Value, ErrorObject>) {
        let session = session.to_owned();
        self.bus.publish(BusMessage::Answer { session, id: id.clone(), outcome: outcome.clone() });
    }

    /// The client cancelled a request of the session: every other instance holding the session
    /// cancels it if it runs there (not awaited).
    pub(crate) fn forward_cancel(&self, session: &str, id: &RequestId) {
        self.bus.publish(BusMessage::Cancel { session: session.to_owned(), id: id.clone() });
    }
}

impl SessionStore for SharedSessions {
    fn number_base(&self) -> u64 {
        self.link.number_base()
    }

    fn keep_alive(&self, id: &str, idle: Duration, copy: RecordCopy, news: Recipient<RecordNews>, reconcile: bool) {
        self.records.keep_alive(id, idle, copy, news, reconcile);
    }

    fn writer(&self, session: &str, idle: Duration) -> Box<dyn EventLog> {
        Box::new(self.events.writer(session, idle))
    }
}
